// The jobs' Cloud Logging entries and entries:list, as Vertex training jobs log and Logging answers.
#include "emulator/job_logs.h"

#include <gtest/gtest.h>

#include "base/rfc3339.h"
#include "tests/unit/emulator/emulator_fixture.h"

namespace vto::emulator {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class JobLogsTest : public EmulatorFixture {
 protected:
  JobLogsTest() : EmulatorFixture(options()) {}
  explicit JobLogsTest(EmulatorOptions options) : EmulatorFixture(std::move(options)) {}
  static EmulatorOptions options() {
    EmulatorOptions options;
    options.simulation = {2s, 3, 10s, 1s};
    options.logEntriesPerJob = 30;
    // The tests below read the entries themselves; the quota and "still searching" pages have their own.
    options.loggingRequestsPerMinute = 0;
    options.loggingSearchingPages = false;
    return options;
  }
  Response list(json request) {
    if (!request.contains("resourceNames")) request["resourceNames"] = {"projects/emu-project"};
    return call("POST", "/v2/entries:list", request);
  }
  json entries(const std::string& filter, const std::string& orderBy = "") {
    json request = {{"filter", filter}};
    if (!orderBy.empty()) request["orderBy"] = orderBy;
    auto response = list(request);
    EXPECT_EQ(response.status, 200) << response.body.dump();
    return response.body.value("entries", json::array());
  }
  static std::string idOf(const std::string& name) { return name.substr(name.rfind('/') + 1); }
  static std::vector<std::string> texts(const json& entries) {
    std::vector<std::string> out;
    for (const auto& entry : entries) out.push_back(entry["textPayload"]);
    return out;
  }
};

TEST_F(JobLogsTest, AJobLogsAStartLineALinePerStepAndAnEndLine) {
  auto name = create(customJob());
  auto other = create(customJob("other"));
  advance(2s);
  advance(30s);
  ASSERT_EQ(get(name)["state"], "JOB_STATE_SUCCEEDED");
  auto id = idOf(name);
  auto logs = entries("resource.type=\"ml_job\" AND resource.labels.job_id=\"" + id + "\"");
  auto lines = texts(logs);
  ASSERT_EQ(lines.size(), 5u) << json(lines).dump();
  EXPECT_EQ(lines[0], "Training started on workerpool0-0: 3 steps");
  EXPECT_EQ(lines[1].rfind("step 1/3 loss=", 0), 0u) << lines[1];
  EXPECT_EQ(lines[3].rfind("step 3/3 loss=", 0), 0u) << lines[3];
  EXPECT_EQ(lines[4], "Training finished on workerpool0-0");

  const auto& step = logs[1];
  EXPECT_EQ(step["logName"], "projects/emu-project/logs/workerpool0-0");
  EXPECT_EQ(step["resource"], (json{{"type", "ml_job"},
                                    {"labels", {{"job_id", id}, {"project_id", "emu-project"}, {"task_name", "workerpool0-0"}}}}));
  EXPECT_EQ(step["labels"], (json{{"ml.googleapis.com/task_name", "workerpool0-0"}}));
  EXPECT_EQ(step["severity"], "ERROR") << "Python's logging writes to stderr, which Vertex logs as ERROR";
  EXPECT_EQ(logs[0]["severity"], "INFO") << "print() writes to stdout";
  auto startTime = get(name)["startTime"].get<std::string>();
  EXPECT_EQ(logs[0]["timestamp"], startTime);
  EXPECT_EQ(step["timestamp"], rfc3339Millis(parseRfc3339(startTime) + 10s)) << "when its step ended";
  EXPECT_TRUE(step.contains("receiveTimestamp") && step.contains("insertId"));
  EXPECT_EQ(logs[4]["timestamp"], get(name)["endTime"]);

  auto newestFirst = entries("resource.labels.job_id=\"" + id + "\"", "timestamp desc");
  EXPECT_EQ(texts(newestFirst).front(), "Training finished on workerpool0-0");
  EXPECT_EQ(entries("resource.labels.job_id=\"" + idOf(other) + "\"").size(), 5u);
  EXPECT_EQ(entries("").size(), 10u);
}

TEST_F(JobLogsTest, AUserErrorEndsWithAPythonTracebackAtSeverityError) {
  auto name = create(customJob());
  advance(2s);
  advance(10s);
  ASSERT_EQ(control("POST", name + ":fail", {{"failureClass", "UserError"}}).status, 200);
  auto errors = entries("resource.labels.job_id=\"" + idOf(name) + "\" severity>=ERROR");
  ASSERT_GE(errors.size(), 3u);
  // The step lines are ERROR too: the code's logging writes to stderr, which Vertex logs as ERROR.
  EXPECT_EQ(errors.front()["textPayload"].get<std::string>().rfind("step 1/3", 0), 0u) << errors.front().dump();
  EXPECT_EQ(errors[errors.size() - 10]["textPayload"], "Traceback (most recent call last):");
  EXPECT_EQ(errors.back()["textPayload"].get<std::string>().rfind("ValueError: ", 0), 0u) << errors.back().dump();
  for (const auto& entry : errors) {
    EXPECT_EQ(entry["severity"], "ERROR");
    EXPECT_EQ(entry["labels"]["ml.googleapis.com/task_name"], "workerpool0-0");
  }
  auto all = entries("resource.labels.job_id=\"" + idOf(name) + "\"");
  EXPECT_EQ(all.back(), errors.back()) << "the traceback is the last thing the job logs";
  EXPECT_EQ(entries("resource.labels.job_id=\"" + idOf(name) + "\" AND NOT severity>=ERROR").size(), all.size() - errors.size());
}

// A test's hostile log: :fail with "log" writes those entries instead of the traceback, each at most
// 256 KiB as Cloud Logging allows (https://cloud.google.com/logging/quotas).
TEST_F(JobLogsTest, AFailureCanEndWithTheEntriesATestChoosesWithinLoggingsEntryLimit) {
  auto name = create(customJob());
  advance(2s);
  advance(10s);
  std::string newlines(256 * 1024, '\n');
  EXPECT_EQ(control("POST", name + ":fail", {{"failureClass", "UserError"}, {"log", {newlines + "x"}}}).status, 400);
  EXPECT_EQ(control("POST", name + ":fail", {{"failureClass", "UserError"}, {"log", {1, 2}}}).status, 400);
  ASSERT_EQ(control("POST", name + ":fail", {{"failureClass", "UserError"}, {"log", {newlines, "the end"}}}).status, 200);
  auto errors = texts(entries("resource.labels.job_id=\"" + idOf(name) + "\" severity>=ERROR"));
  // Before them, the step lines the job's logging wrote to stderr (ERROR too); no traceback.
  ASSERT_GE(errors.size(), 2u);
  EXPECT_EQ(errors[errors.size() - 2], newlines);
  EXPECT_EQ(errors.back(), "the end");
  for (const auto& text : errors) EXPECT_NE(text, "Traceback (most recent call last):");
}

TEST_F(JobLogsTest, FiltersByTaskLabelTimeAndTextAndRefuseWhatTheyDoNotSupport) {
  auto job = customJob();
  job["jobSpec"]["workerPoolSpecs"].push_back(
      {{"machineSpec", {{"machineType", "n1-standard-4"}}}, {"replicaCount", "2"}, {"containerSpec", {{"imageUri", "img"}}}});
  auto name = create(job);
  advance(2s);
  auto started = clock_.now();
  advance(30s);
  auto id = "resource.labels.job_id=\"" + idOf(name) + "\"";
  EXPECT_EQ(entries(id + " AND labels.\"ml.googleapis.com/task_name\"=\"workerpool1-1\"").size(), 2u) << "start and end";
  EXPECT_EQ(entries(id + " AND resource.labels.task_name=workerpool0-0").size(), 5u);
  EXPECT_EQ(entries(id + " AND logName=\"projects/emu-project/logs/workerpool1-0\"").size(), 2u);
  EXPECT_EQ(entries(id + " AND textPayload:\"STEP 2/\"").size(), 1u) << ": is a case-insensitive substring";
  auto after = rfc3339Millis(started + 10s);
  auto later = texts(entries(id + " timestamp>\"" + after + "\" -labels.\"ml.googleapis.com/task_name\":\"workerpool1\""));
  ASSERT_EQ(later.size(), 3u) << json(later).dump();
  EXPECT_EQ(later[0].rfind("step 2/3", 0), 0u);
  EXPECT_EQ(later[1].rfind("step 3/3", 0), 0u);
  EXPECT_EQ(later[2], "Training finished on workerpool0-0");
  EXPECT_EQ(entries(id + " timestamp>=\"" + after + "\" severity=ERROR labels.\"ml.googleapis.com/task_name\"=\"workerpool0-0\"").size(), 3u);

  for (const auto& bad : {"resource.labels.job_id=\"1\" OR severity>=ERROR", "(severity>=ERROR)", "severity>=LOUD",
                          "jsonPayload.message=\"x\"", "timestamp>\"yesterday\"", "textPayload=~\"step\"", "\"step\"",
                          "labels.\"unterminated", "severity:ERROR", "resource.type>\"a\""}) {
    auto response = list({{"filter", bad}});
    EXPECT_EQ(response.status, 400) << bad;
    EXPECT_EQ(response.body["error"]["status"], "INVALID_ARGUMENT") << bad;
    EXPECT_NE(response.body["error"]["message"].get<std::string>().find("supported"), std::string::npos)
        << bad << ": " << response.body.dump();
  }
}

TEST_F(JobLogsTest, PagesFollowEachOtherWithoutGapsOrRepeats) {
  for (int i = 0; i < 3; ++i) create(customJob("job" + std::to_string(i)));
  advance(2s);
  advance(30s);
  auto all = entries("");
  ASSERT_EQ(all.size(), 15u);
  for (std::string order : {"timestamp asc", "timestamp desc"}) {
    json seen = json::array();
    std::string token;
    do {
      json request = {{"pageSize", 4}, {"orderBy", order}};
      if (!token.empty()) request["pageToken"] = token;
      auto page = list(request).body;
      ASSERT_LE(page["entries"].size(), 4u);
      for (const auto& entry : page["entries"]) seen.push_back(entry);
      token = page.value("nextPageToken", "");
    } while (!token.empty());
    ASSERT_EQ(seen.size(), 15u) << order;
    for (std::size_t i = 1; i < seen.size(); ++i) {
      auto a = std::make_pair(seen[i - 1]["timestamp"].get<std::string>(), seen[i - 1]["insertId"].get<std::string>());
      auto b = std::make_pair(seen[i]["timestamp"].get<std::string>(), seen[i]["insertId"].get<std::string>());
      EXPECT_TRUE(order == "timestamp asc" ? a < b : a > b) << order << " at " << i;
    }
  }
  EXPECT_EQ(list({{"pageToken", "garbage"}}).status, 400);
  EXPECT_EQ(list({{"pageSize", -1}}).status, 400);
  EXPECT_EQ(list({{"orderBy", "severity"}}).status, 400);
  EXPECT_EQ(list({{"pageSize", 100000}}).body["entries"].size(), 15u) << "capped, not refused";
}

TEST_F(JobLogsTest, EntriesAreReadByProjectAndTheRequestIsChecked) {
  create(customJob());
  call("POST", "/v1/projects/elsewhere/locations/us-central1/customJobs", customJob());
  advance(2s);
  EXPECT_EQ(entries("").size(), 1u) << "only projects/emu-project's start line";
  EXPECT_EQ(list({{"resourceNames", {"projects/emu-project", "projects/elsewhere"}}}).body["entries"].size(), 2u);
  EXPECT_EQ(list({{"resourceNames", json::array()}}).status, 400);
  EXPECT_EQ(list({{"resourceNames", {"organizations/1"}}}).status, 400);
  EXPECT_EQ(list({{"filter", "severity>=ERROR"}, {"colour", "red"}}).status, 400);
  auto anonymous = emulator_.handle({"POST", "/v2/entries:list", {}, {}, R"({"resourceNames": ["projects/emu-project"]})"});
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_EQ(call("GET", "/v2/entries:list").status, 404);
}

// The emulator takes any project in a request path ("p" is shorter than a GCP project ID may be):
// its jobs run, log, fail for capacity and are deleted like any other.
TEST_F(JobLogsTest, JobsOfAnyProjectTheEmulatorAcceptedRunLogAndAreDeleted) {
  ASSERT_EQ(control("POST", "capacity", {{"location", "l"}, {"acceleratorType", "NVIDIA_L4"}, {"available", false}}).status, 200);
  auto created = call("POST", "/v1/projects/p/locations/l/customJobs", customJob());
  ASSERT_EQ(created.status, 200) << created.body.dump();
  auto gpu = customJob();
  gpu["jobSpec"]["workerPoolSpecs"][0]["machineSpec"] = {{"machineType", "g2-standard-4"}, {"acceleratorType", "NVIDIA_L4"},
                                                         {"acceleratorCount", 1}};
  auto stockedOut = call("POST", "/v1/projects/p/locations/l/customJobs", gpu).body["name"].get<std::string>();
  advance(2s);
  advance(30s);
  std::string name = created.body["name"];
  ASSERT_EQ(get(name)["state"], "JOB_STATE_SUCCEEDED");
  EXPECT_EQ(get(stockedOut)["error"]["message"].get<std::string>().rfind("Resources are insufficient in region: l.", 0), 0u);
  EXPECT_EQ(list({{"resourceNames", {"projects/p"}}}).body["entries"].size(), 5u);
  auto deleted = call("DELETE", "/v1/" + name);
  EXPECT_EQ(deleted.status, 200) << deleted.body.dump();
}

class GoogleLoggingTest : public JobLogsTest {
 protected:
  GoogleLoggingTest() : JobLogsTest(google()) {}
  static EmulatorOptions google() {
    auto options = JobLogsTest::options();
    options.loggingRequestsPerMinute = 60;
    options.loggingSearchingPages = true;
    return options;
  }
};

TEST_F(GoogleLoggingTest, SixtyReadsAMinutePerProjectThenA429WithoutRetryAfter) {
  for (int i = 0; i < 60; ++i) ASSERT_EQ(list({{"filter", "timestamp>=\"2026-01-01T00:00:00Z\""}}).status, 200) << i;
  auto refused = list({{"filter", "timestamp>=\"2026-01-01T00:00:00Z\""}});
  EXPECT_EQ(refused.status, 429);
  EXPECT_EQ(refused.body["error"]["status"], "RESOURCE_EXHAUSTED");
  EXPECT_EQ(list({{"resourceNames", {"projects/elsewhere"}}, {"filter", "timestamp>=\"2026-01-01T00:00:00Z\""}}).status, 200)
      << "the quota is per project";
  advance(61s);
  EXPECT_EQ(list({{"filter", "timestamp>=\"2026-01-01T00:00:00Z\""}}).status, 200);
}

TEST_F(GoogleLoggingTest, AQueryWithoutALowerTimeBoundFirstGetsAnEmptyPageThatSaysStillSearching) {
  auto name = create(customJob());
  advance(2s);
  advance(30s);
  auto id = "resource.labels.job_id=\"" + idOf(name) + "\"";
  auto first = list({{"filter", id}});
  ASSERT_EQ(first.status, 200);
  EXPECT_TRUE(first.body.value("entries", json::array()).empty()) << first.body.dump();
  ASSERT_TRUE(first.body.contains("nextPageToken"));
  auto next = list({{"filter", id}, {"pageToken", first.body["nextPageToken"]}});
  EXPECT_EQ(next.body["entries"].size(), 5u) << next.body.dump();
  auto bounded = list({{"filter", id + " timestamp>=\"2000-01-01T00:00:00Z\""}});
  EXPECT_EQ(bounded.body["entries"].size(), 5u) << "a lower bound: the first page has the entries";
}

TEST(JobLogsBound, AJobKeepsItsNewestEntries) {
  testing::FakeClock clock;
  EmulatorOptions options;
  options.simulation = {2s, 50, 1s, 1s};
  options.logEntriesPerJob = 5;
  options.loggingSearchingPages = false;
  Emulator emulator(clock, options, nullptr);
  auto token = emulator.handle({"GET", "/computeMetadata/v1/instance/service-accounts/default/token", {},
                                {{"metadata-flavor", "Google"}}, ""}).body["access_token"].get<std::string>();
  auto call = [&](const std::string& path, const json& body) {
    return emulator.handle({"POST", path, {}, {{"authorization", "Bearer " + token}}, body.dump()}).body;
  };
  call(kParent + "/customJobs", customJob());
  for (int i = 0; i < 60; ++i) {
    clock.advance(1s);
    emulator.tick();
  }
  auto logs = call("/v2/entries:list", {{"resourceNames", {"projects/emu-project"}}})["entries"];
  ASSERT_EQ(logs.size(), 5u);
  EXPECT_EQ(logs[0]["textPayload"].get<std::string>().rfind("step 47/50", 0), 0u) << logs.dump();
  EXPECT_EQ(logs[4]["textPayload"], "Training finished on workerpool0-0");
  EXPECT_EQ(emulator.handle({"GET", "/emulator/v1/stats", {}, {}, ""}).body["logEntries"], 5);
}

TEST(JobLogsTuning, TrialsLogWithTheirTrialId) {
  testing::FakeClock clock;
  EmulatorOptions options;
  options.simulation = {2s, 2, 10s, 1s};
  options.loggingSearchingPages = false;
  Emulator emulator(clock, options, nullptr);
  auto token = emulator.handle({"GET", "/computeMetadata/v1/instance/service-accounts/default/token", {},
                                {{"metadata-flavor", "Google"}}, ""}).body["access_token"].get<std::string>();
  auto call = [&](const std::string& path, const json& body) {
    return emulator.handle({"POST", path, {}, {{"authorization", "Bearer " + token}}, body.dump()}).body;
  };
  auto tuning = json::parse(R"({"displayName": "hpt", "maxTrialCount": 3, "parallelTrialCount": 2,
      "studySpec": {"metrics": [{"metricId": "auc", "goal": "MAXIMIZE"}],
                    "parameters": [{"parameterId": "lr", "doubleValueSpec": {"minValue": 0.0, "maxValue": 1.0}}]}})");
  tuning["trialJobSpec"] = customJob()["jobSpec"];
  call(kParent + "/hyperparameterTuningJobs", tuning);
  for (int i = 0; i < 12; ++i) {  // ticks of 5 s: 2 s queued, then two rounds of 20 s trials
    clock.advance(5s);
    emulator.tick();
  }
  auto trial = [&](int id) {
    return call("/v2/entries:list", {{"resourceNames", {"projects/emu-project"}},
                                     {"filter", "labels.\"ml.googleapis.com/trial_id\"=\"" + std::to_string(id) + "\""}})["entries"];
  };
  for (int id : {1, 2, 3}) {
    auto logs = trial(id);
    ASSERT_EQ(logs.size(), 4u) << id << ": " << logs.dump();
    EXPECT_EQ(logs[0]["textPayload"], "Trial " + std::to_string(id) + " started: 2 steps");
    EXPECT_EQ(logs[1]["textPayload"].get<std::string>().rfind("step 1/2 loss=", 0), 0u);
    EXPECT_EQ(logs[3]["textPayload"], "Trial " + std::to_string(id) + " finished");
  }
  EXPECT_EQ(parseRfc3339(trial(3)[0]["timestamp"].get<std::string>()) - parseRfc3339(trial(1)[0]["timestamp"].get<std::string>()), 20s);
}

}  // namespace
}  // namespace vto::emulator
