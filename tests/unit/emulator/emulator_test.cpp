#include "emulator/emulator.h"

#include <condition_variable>
#include <mutex>
#include <optional>

#include <gtest/gtest.h>

#include "tests/fakes/clock_fake.h"
#include "tests/fakes/gcs_fake_client.h"
#include "tests/support/wait.h"
#include "tests/unit/emulator/emulator_fixture.h"
#include "vertex/api_error.h"
#include "vertex/vertex_client.h"

namespace vto::emulator {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

json tuningJob() {
  auto job = json::parse(R"({
    "displayName": "hpt", "maxTrialCount": 5, "parallelTrialCount": 2,
    "studySpec": {
      "metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}],
      "parameters": [
        {"parameterId": "lr", "doubleValueSpec": {"minValue": 0.0, "maxValue": 1.0}},
        {"parameterId": "layers", "integerValueSpec": {"minValue": "1", "maxValue": "8"}},
        {"parameterId": "opt", "categoricalValueSpec": {"values": ["sgd", "adam"]}}]}})");
  job["trialJobSpec"] = customJob()["jobSpec"];
  return job;
}

// The emulator on a fake clock: 3 steps of 10 s, a creation quota of 5 a minute.
class EmulatorTest : public EmulatorFixture {
 protected:
  EmulatorTest() : EmulatorFixture(options()) {}

  static EmulatorOptions options() {
    EmulatorOptions options;
    options.simulation = {2s, 3, 10s, 1s};
    options.createQuotaPerMinute = 5;
    options.tokenLifetime = 600s;
    return options;
  }
};

TEST_F(EmulatorTest, RequiresATokenItIssued) {
  Request anonymous{"GET", kParent + "/customJobs", {}, {}, ""};
  EXPECT_EQ(emulator_.handle(anonymous).status, 401);
  EXPECT_EQ(emulator_.handle(anonymous).body["error"]["status"], "UNAUTHENTICATED");
  Request forged{"GET", kParent + "/customJobs", {}, {{"authorization", "Bearer ya29.forged"}}, ""};
  EXPECT_EQ(emulator_.handle(forged).status, 401);
  Request noFlavor{"GET", "/computeMetadata/v1/instance/service-accounts/default/token", {}, {}, ""};
  EXPECT_EQ(emulator_.handle(noFlavor).status, 403);
  EXPECT_EQ(call("GET", kParent + "/customJobs").status, 200);
}

TEST_F(EmulatorTest, TokensExpireAfterTheirLifetime) {
  EXPECT_EQ(call("GET", kParent + "/customJobs").status, 200);
  clock_.advance(601s);
  EXPECT_EQ(call("GET", kParent + "/customJobs").status, 401);
}

TEST_F(EmulatorTest, RunsTheLifecycleAndWritesACheckpointPerStep) {
  auto name = create(customJob());
  EXPECT_NE(name.find("projects/emu-project/locations/us-central1/customJobs/"), std::string::npos);
  auto job = get(name);
  EXPECT_EQ(job["state"], "JOB_STATE_QUEUED");
  EXPECT_TRUE(job.contains("createTime"));
  EXPECT_FALSE(job.contains("startTime"));

  advance(1s);
  EXPECT_EQ(get(name)["state"], "JOB_STATE_PENDING");
  advance(1s);
  job = get(name);
  EXPECT_EQ(job["state"], "JOB_STATE_RUNNING");
  EXPECT_TRUE(job.contains("startTime"));
  EXPECT_TRUE(gcs_.listObjects("bkt", "runs/a/checkpoints/").empty());

  advance(10s);
  EXPECT_TRUE(gcs_.getObject("bkt", "runs/a/checkpoints/ckpt-1").has_value());
  EXPECT_EQ(get(name)["state"], "JOB_STATE_RUNNING");

  advance(20s);
  job = get(name);
  EXPECT_EQ(job["state"], "JOB_STATE_SUCCEEDED");
  EXPECT_TRUE(job.contains("endTime"));
  EXPECT_FALSE(job.contains("error"));
  EXPECT_EQ(gcs_.listObjects("bkt", "runs/a/checkpoints/").size(), 3u);
  auto trace = emulator_.handle({"GET", "/emulator/v1/" + name + ":trace", {}, {}, ""}).body;
  EXPECT_EQ(trace["stepsRun"], json({1, 2, 3}));
  EXPECT_EQ(trace["resumedFrom"], "");
}

// Cloud Storage without the bucket "bkt": uploads there answer 404 as the real service does.
class NoBucketGcs final : public UploadsChangedGcs {
 public:
  vertex::GcsObject upload(const std::string& bucket, const std::string& name, const std::string& content,
                           const std::string& type) override {
    if (bucket == "bkt" && !created) throw vertex::ApiError(404, "NOT_FOUND", "The specified bucket does not exist.");
    return objects.upload(bucket, name, content, type);
  }
  void ensureBucket(const std::string& bucket, const std::string&) override {
    if (!mayCreate) ADD_FAILURE() << "the emulator must not create buckets";
    created = created || bucket == "bkt";
  }
  bool mayCreate = false;
  bool created = false;
};

// An emulator over NoBucketGcs with one CustomJob created through the API (3 steps of 10 s).
struct OneJobWithoutBucket {
  explicit OneJobWithoutBucket(bool createMissingBuckets) {
    gcs.mayCreate = createMissingBuckets;
    EmulatorOptions options;
    options.simulation = {2s, 3, 10s, 1s};
    options.createMissingBuckets = createMissingBuckets;
    emulator.emplace(clock, options, &gcs);
    Request tokenRequest{"GET", "/computeMetadata/v1/instance/service-accounts/default/token", {}, {{"metadata-flavor", "Google"}}, ""};
    token = emulator->handle(tokenRequest).body["access_token"];
    name = call("POST", kParent + "/customJobs", customJob().dump()).body["name"];
  }
  Response call(const std::string& method, const std::string& path, const std::string& body) {
    return emulator->handle({method, path, {}, {{"authorization", "Bearer " + token}}, body});
  }
  json stepsRun() { return emulator->handle({"GET", "/emulator/v1/" + name + ":trace", {}, {}, ""}).body["stepsRun"]; }

  testing::FakeClock clock;
  NoBucketGcs gcs;
  std::optional<Emulator> emulator;
  std::string token;
  std::string name;
};

TEST(EmulatorCheckpoints, AJobWhoseCheckpointBucketIsMissingFailsNamingTheBucket) {
  OneJobWithoutBucket t(false);
  // Several steps in one tick: the job still fails at the first checkpoint, never succeeds.
  t.clock.advance(60s);
  t.emulator->tick();
  auto job = t.call("GET", "/v1/" + t.name, "").body;
  EXPECT_EQ(job["state"], "JOB_STATE_FAILED");
  EXPECT_EQ(job["error"]["code"], 3);
  std::string message = job["error"]["message"];
  EXPECT_NE(message.find("gs://bkt does not exist"), std::string::npos) << message;
  EXPECT_NE(message.find("gs://bkt/runs/a/checkpoints/ckpt-1"), std::string::npos) << message;
  EXPECT_EQ(t.stepsRun(), json({1}));
}

TEST(EmulatorCheckpoints, WithMissingBucketCreateTheBucketIsCreatedAndTheJobTrains) {
  OneJobWithoutBucket t(true);
  t.clock.advance(60s);
  t.emulator->tick();
  EXPECT_TRUE(t.gcs.created);
  EXPECT_TRUE(t.gcs.objects.getObject("bkt", "runs/a/checkpoints/ckpt-1").has_value());
  EXPECT_EQ(t.stepsRun(), json({1, 2, 3}));
}

TEST_F(EmulatorTest, ResumesAfterTheCheckpointNamedInTheEnvironment) {
  auto name = create(customJob("resumed", {{{"name", "VTO_RESUME_FROM"}, {"value", "gs://bkt/runs/a/checkpoints/ckpt-2"}}}));
  advance(2s);
  advance(10s);
  EXPECT_EQ(get(name)["state"], "JOB_STATE_SUCCEEDED");
  auto trace = emulator_.handle({"GET", "/emulator/v1/" + name + ":trace", {}, {}, ""}).body;
  EXPECT_EQ(trace["stepsRun"], json({3}));
  EXPECT_EQ(trace["resumedFrom"], "gs://bkt/runs/a/checkpoints/ckpt-2");
}

TEST_F(EmulatorTest, CancelGoesThroughCancellingToCancelledWithCode1) {
  auto name = create(customJob());
  advance(2s);
  EXPECT_EQ(call("POST", "/v1/" + name + ":cancel", json::object()).status, 200);
  EXPECT_EQ(get(name)["state"], "JOB_STATE_CANCELLING");
  advance(1s);
  auto job = get(name);
  EXPECT_EQ(job["state"], "JOB_STATE_CANCELLED");
  EXPECT_EQ(job["error"]["code"], 1);
  auto again = call("POST", "/v1/" + name + ":cancel", json::object());
  EXPECT_EQ(again.status, 400);
  EXPECT_EQ(again.body["error"]["status"], "FAILED_PRECONDITION");
}

TEST_F(EmulatorTest, DeleteReturnsAnOperationThatCompletes) {
  auto name = create(customJob());
  EXPECT_EQ(call("DELETE", "/v1/" + name).body["error"]["status"], "FAILED_PRECONDITION");  // still queued
  advance(60s);
  auto operation = call("DELETE", "/v1/" + name).body;
  EXPECT_EQ(operation["done"], false);
  EXPECT_EQ(operation["metadata"]["@type"], "type.googleapis.com/google.cloud.aiplatform.v1.DeleteOperationMetadata");
  advance(1s);
  auto polled = call("GET", "/v1/" + operation["name"].get<std::string>()).body;
  EXPECT_EQ(polled["done"], true);
  // The official clients poll through their first HTTP rule, /ui/{name=...operations/*}.
  EXPECT_EQ(call("GET", "/ui/" + operation["name"].get<std::string>()).body, polled);
  EXPECT_EQ(call("GET", "/ui/" + name).status, 404);
  EXPECT_EQ(call("GET", "/v1/" + name).status, 404);
}

TEST_F(EmulatorTest, ControlApiFailsARunningJobTheWayVertexReportsIt) {
  auto name = create(customJob());
  advance(2s);
  auto failed = emulator_.handle({"POST", "/emulator/v1/" + name + ":fail", {}, {}, R"({"failureClass":"Stockout"})"});
  EXPECT_EQ(failed.status, 200);
  auto job = get(name);
  EXPECT_EQ(job["state"], "JOB_STATE_FAILED");
  EXPECT_EQ(job["error"]["code"], 8);
  EXPECT_TRUE(job.contains("endTime"));
  auto unknown = emulator_.handle({"POST", "/emulator/v1/" + name + ":fail", {}, {}, R"({"failureClass":"Meteor"})"});
  EXPECT_EQ(unknown.status, 400);
}

TEST_F(EmulatorTest, ListFiltersByLabelAndPages) {
  for (int i = 0; i < 5; ++i) create(customJob(i % 2 == 0 ? "even" : "odd"));
  auto page = call("GET", kParent + "/customJobs", nullptr, {{"filter", "labels.run=\"even\""}, {"pageSize", "2"}}).body;
  ASSERT_EQ(page["customJobs"].size(), 2u);
  ASSERT_TRUE(page.contains("nextPageToken"));
  auto rest = call("GET", kParent + "/customJobs", nullptr,
                   {{"filter", "labels.run=\"even\""}, {"pageSize", "2"}, {"pageToken", page["nextPageToken"]}})
                  .body;
  EXPECT_EQ(rest["customJobs"].size(), 1u);
  EXPECT_FALSE(rest.contains("nextPageToken"));
  EXPECT_EQ(call("GET", kParent + "/customJobs", nullptr, {{"filter", "colour=red"}}).status, 400);
  EXPECT_EQ(call("GET", kParent + "/customJobs", nullptr, {{"pageToken", "garbage"}}).status, 400);
}

// vto lists with a readMask of the fields it decodes: the decoded jobs are the same as from the
// whole resources, without the specs.
TEST_F(EmulatorTest, AListWithTheDecodedFieldsAsReadMaskDecodesAsTheWholeJobs) {
  create(customJob("masked"));
  create(tuningJob(), "hyperparameterTuningJobs");
  advance(2s);
  advance(30s);  // the custom job failed or ran steps; the tuning job has finished trials
  auto same = [](const vertex::Job& masked, const vertex::Job& whole) {
    EXPECT_EQ(masked.name, whole.name);
    EXPECT_EQ(masked.displayName, whole.displayName);
    EXPECT_EQ(masked.state, whole.state);
    EXPECT_EQ(masked.labels, whole.labels);
    EXPECT_EQ(masked.createTime, whole.createTime);
    EXPECT_EQ(masked.startTime, whole.startTime);
    EXPECT_EQ(masked.endTime, whole.endTime);
    EXPECT_EQ(masked.updateTime, whole.updateTime);
    EXPECT_EQ(masked.error.has_value(), whole.error.has_value());
    EXPECT_EQ(masked.webAccessUris, whole.webAccessUris);
    ASSERT_EQ(masked.bestTrial.has_value(), whole.bestTrial.has_value());
    if (whole.bestTrial) {
      EXPECT_EQ(masked.bestTrial->id, whole.bestTrial->id);
      EXPECT_EQ(masked.bestTrial->metrics, whole.bestTrial->metrics);
      EXPECT_EQ(masked.bestTrial->parameters, whole.bestTrial->parameters);
    }
  };
  for (auto kind : {vertex::JobKind::Custom, vertex::JobKind::HyperparameterTuning}) {
    std::string collection(vertex::collectionName(kind));
    auto whole = call("GET", kParent + "/" + collection).body[collection];
    auto masked = call("GET", kParent + "/" + collection, nullptr,
                       {{"readMask", std::string(vertex::decodedJobFields(kind))}}).body[collection];
    ASSERT_EQ(masked.size(), 1u);
    EXPECT_FALSE(masked[0].contains("jobSpec") || masked[0].contains("trialJobSpec")) << masked[0].dump();
    auto wholeJob = vertex::decodeJob(kind, whole[0]);
    if (kind == vertex::JobKind::HyperparameterTuning) {
      ASSERT_TRUE(wholeJob.bestTrial) << "the comparison needs a finished trial";
      EXPECT_EQ(masked[0]["studySpec"].size(), 1u) << "studySpec.metrics only";
    }
    same(vertex::decodeJob(kind, masked[0]), wholeJob);
  }
  auto ids = call("GET", kParent + "/hyperparameterTuningJobs", nullptr, {{"readMask", "trials.id"}}).body;
  ASSERT_FALSE(ids["hyperparameterTuningJobs"][0]["trials"].empty());
  EXPECT_EQ(ids["hyperparameterTuningJobs"][0]["trials"][0], json({{"id", "1"}})) << "a path through a list";
  auto unknown = call("GET", kParent + "/customJobs", nullptr, {{"readMask", "name,colour"}});
  EXPECT_EQ(unknown.status, 400);
  EXPECT_NE(unknown.body.dump().find("colour"), std::string::npos) << unknown.body.dump();
}

TEST_F(EmulatorTest, ADeletedJobLeavesTheListsByItsLabel) {
  auto kept = create(customJob("twin"));
  auto deleted = create(customJob("twin"));
  advance(60s);  // both ended: deletable
  call("DELETE", "/v1/" + deleted);
  advance(1s);
  auto byLabel = [&](const std::string& filter) {
    return call("GET", kParent + "/customJobs", nullptr, {{"filter", filter}}).body.value("customJobs", json::array());
  };
  auto twins = byLabel(R"(labels.run="twin")");
  ASSERT_EQ(twins.size(), 1u);
  EXPECT_EQ(twins[0]["name"], kept);
  EXPECT_EQ(byLabel(R"(labels.run="twin" AND state="JOB_STATE_SUCCEEDED")").size(), 1u);
  EXPECT_TRUE(byLabel(R"(labels.run="nobody")").empty());
  EXPECT_EQ(byLabel(R"(NOT labels.run="nobody")").size(), 1u);
}

TEST_F(EmulatorTest, InvalidBodiesAreRejectedInGooglesErrorShape) {
  auto job = customJob();
  job["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorType"] = "NVIDIA_TESLA_T5";
  auto response = call("POST", kParent + "/customJobs", job);
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(response.body["error"]["code"], 400);
  EXPECT_EQ(response.body["error"]["status"], "INVALID_ARGUMENT");
  EXPECT_EQ(response.body["error"]["details"][0]["@type"], "type.googleapis.com/google.rpc.BadRequest");
  job = customJob();
  job["jobSpec"]["workerPoolSpecs"][0].erase("containerSpec");
  EXPECT_EQ(call("POST", kParent + "/customJobs", job).status, 400);
}

TEST_F(EmulatorTest, CreationsBeyondTheQuotaGet429UntilTheMinutePasses) {
  for (int i = 0; i < 5; ++i) create(customJob());
  auto rejected = call("POST", kParent + "/customJobs", customJob());
  EXPECT_EQ(rejected.status, 429);
  EXPECT_EQ(rejected.body["error"]["status"], "RESOURCE_EXHAUSTED");
  clock_.advance(61s);
  EXPECT_EQ(call("POST", kParent + "/customJobs", customJob()).status, 200);
}

TEST_F(EmulatorTest, QueuedFaultsAnswer503Then429ThenSucceed) {
  token_ = token();
  EXPECT_EQ(emulator_.handle({"POST", "/emulator/v1/faults", {}, {}, R"({"unavailable":1,"throttled":1})"}).status, 200);
  EXPECT_EQ(call("GET", kParent + "/customJobs").status, 503);
  EXPECT_EQ(call("GET", kParent + "/customJobs").status, 429);
  EXPECT_EQ(call("GET", kParent + "/customJobs").status, 200);
  auto stats = emulator_.handle({"GET", "/emulator/v1/stats", {}, {}, ""}).body;
  EXPECT_EQ(stats["unavailable"], 1);
  EXPECT_EQ(stats["throttled"], 1);
}

// Faults that wait for a create or a cancel: it is carried out and its answer lost, then the rest
// follow; what comes before passes.
TEST_F(EmulatorTest, FaultsAfterACreateOrCancelLoseItsAnswerOnceItWasCarriedOut) {
  token_ = token();
  auto control = [&](const std::string& body) {
    return emulator_.handle({"POST", "/emulator/v1/faults", {}, {}, body}).status;
  };
  EXPECT_EQ(control(R"({"unavailable": 2, "after": "delete"})"), 400);
  ASSERT_EQ(control(R"({"unavailable": 2, "after": "create"})"), 200);
  EXPECT_EQ(call("GET", kParent + "/customJobs").status, 200) << "nothing before the create fails";
  EXPECT_EQ(call("POST", kParent + "/customJobs", customJob()).status, 503);
  EXPECT_EQ(call("GET", kParent + "/customJobs").status, 503);
  auto listed = call("GET", kParent + "/customJobs");
  ASSERT_EQ(listed.status, 200);
  ASSERT_EQ(listed.body["customJobs"].size(), 1u) << "the create whose answer was lost was carried out";
  auto name = listed.body["customJobs"][0]["name"].get<std::string>();

  ASSERT_EQ(control(R"({"unavailable": 1000, "after": "cancel"})"), 200);
  EXPECT_EQ(call("POST", "/v1/" + name + ":cancel", json::object()).status, 503);
  EXPECT_EQ(call("GET", "/v1/" + name).status, 503) << "Vertex unreachable after it";
  ASSERT_EQ(control("{}"), 200);
  auto job = call("GET", "/v1/" + name);
  ASSERT_EQ(job.status, 200);
  EXPECT_NE(job.body["state"], "JOB_STATE_RUNNING");
  EXPECT_NE(job.body["state"], "JOB_STATE_QUEUED") << "the cancel whose answer was lost was carried out";
  EXPECT_EQ(emulator_.handle({"GET", "/emulator/v1/stats", {}, {}, ""}).body["answersLost"], 2);
}

TEST(EmulatorFaultRates, AnswerEveryRequestWithTheConfiguredFault) {
  testing::FakeClock clock;
  for (auto [failRate, throttleRate, status] : {std::tuple{1.0, 0.0, 503}, std::tuple{0.0, 1.0, 429}}) {
    EmulatorOptions options;
    options.failRate = failRate;
    options.throttleRate = throttleRate;
    Emulator emulator(clock, options, nullptr);
    Request tokenRequest{"GET", "/computeMetadata/v1/instance/service-accounts/default/token", {},
                         {{"metadata-flavor", "Google"}}, ""};
    auto token = emulator.handle(tokenRequest).body["access_token"].get<std::string>();
    Request list{"GET", kParent + "/customJobs", {}, {{"authorization", "Bearer " + token}}, ""};
    for (int i = 0; i < 5; ++i) EXPECT_EQ(emulator.handle(list).status, status);
  }
}

TEST_F(EmulatorTest, TuningJobRunsTrialsInParallelBatchesWithACheckableBestTrial) {
  auto name = create(tuningJob(), "hyperparameterTuningJobs");
  advance(2s);                 // running
  advance(30s);                // first batch of 2 done, second batch started
  auto job = get(name);
  ASSERT_EQ(job["trials"].size(), 4u);
  EXPECT_EQ(job["trials"][0]["state"], "SUCCEEDED");
  EXPECT_EQ(job["trials"][2]["state"], "ACTIVE");
  advance(60s);
  job = get(name);
  EXPECT_EQ(job["state"], "JOB_STATE_SUCCEEDED");
  ASSERT_EQ(job["trials"].size(), 5u);
  // The metric is the mean position of each parameter in its range: recompute it independently.
  for (const auto& trial : job["trials"]) {
    double lr = 0, layers = 0, opt = 0;
    for (const auto& parameter : trial["parameters"]) {
      if (parameter["parameterId"] == "lr") lr = parameter["value"].get<double>();
      if (parameter["parameterId"] == "layers") layers = (parameter["value"].get<double>() - 1) / 7;
      if (parameter["parameterId"] == "opt") opt = parameter["value"] == "adam" ? 1 : 0;
    }
    EXPECT_NEAR(trial["finalMeasurement"]["metrics"][0]["value"].get<double>(), (lr + layers + opt) / 3, 1e-9);
  }
  // Different trials explore different points, so one is strictly best.
  EXPECT_NE(job["trials"][0]["parameters"], job["trials"][1]["parameters"]);
}

TEST_F(EmulatorTest, AcceptsTheOfficialClientsIntegerEncoding) {
  auto job = customJob();
  job["jobSpec"]["workerPoolSpecs"][0]["replicaCount"] = 1;
  job["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorType"] = 5;
  job["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorCount"] = 1;
  auto name = create(job);
  auto stored = get(name);
  EXPECT_EQ(stored["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorType"], "NVIDIA_TESLA_T4");
  EXPECT_EQ(stored["jobSpec"]["workerPoolSpecs"][0]["replicaCount"], "1");
}

TEST_F(EmulatorTest, StatsCountTheJobsInEachState) {
  auto cancelled = create(customJob());
  advance(2s);
  EXPECT_EQ(call("POST", "/v1/" + cancelled + ":cancel", json::object()).status, 200);
  create(customJob());
  auto stats = emulator_.handle({"GET", "/emulator/v1/stats", {}, {}, ""}).body;
  EXPECT_EQ(stats["jobsByState"], (json{{"JOB_STATE_CANCELLING", 1}, {"JOB_STATE_QUEUED", 1}}));
}

TEST(EmulatorCheckpointWriters, ASlowGcsDelaysCheckpointsButNoJobsState) {
  testing::FakeClock clock;
  GatedGcs gcs;
  EmulatorOptions options;
  options.simulation = {2s, 3, 10s, 1s};
  Emulator emulator(clock, options, &gcs);
  emulator.startCheckpointWriters(1);
  auto token = emulator.handle({"GET", "/computeMetadata/v1/instance/service-accounts/default/token", {},
                                {{"metadata-flavor", "Google"}}, ""}).body["access_token"].get<std::string>();
  auto call = [&](const std::string& method, const std::string& path, const std::string& body = "") {
    return emulator.handle({method, path, {}, {{"authorization", "Bearer " + token}}, body}).body;
  };
  std::string first = call("POST", kParent + "/customJobs", customJob("first").dump())["name"];
  clock.advance(12s);  // running, and its first step done: its checkpoint goes to the (closed) gate
  emulator.tick();
  ASSERT_TRUE(testing::waitFor([&] { return gcs.waiting() == 1; }, 10s, 1ms));

  std::string second = call("POST", kParent + "/customJobs", customJob("second").dump())["name"];
  clock.advance(2s);
  emulator.tick();  // returns although the first checkpoint is still being written
  EXPECT_EQ(call("GET", "/v1/" + second)["state"], "JOB_STATE_RUNNING");
  EXPECT_EQ(emulator.handle({"GET", "/emulator/v1/stats", {}, {}, ""}).body["checkpointsQueued"], 0);

  gcs.open();
  EXPECT_TRUE(testing::waitFor([&] { return gcs.objects.getObject("bkt", "runs/a/checkpoints/ckpt-1").has_value(); },
                               10s, 1ms));
}

TEST(EmulatorCheckpointWriters, AJobWhoseBucketIsMissingStillFailsThere) {
  OneJobWithoutBucket t(false);
  t.emulator->startCheckpointWriters(2);
  t.clock.advance(60s);
  t.emulator->tick();
  EXPECT_TRUE(testing::waitFor([&] { return t.call("GET", "/v1/" + t.name, "").body["state"] == "JOB_STATE_FAILED"; },
                               10s, 1ms));
  auto job = t.call("GET", "/v1/" + t.name, "").body;
  EXPECT_NE(job["error"]["message"].get<std::string>().find("gs://bkt does not exist"), std::string::npos);
  EXPECT_EQ(t.stepsRun(), json({1}));
}

}  // namespace
}  // namespace vto::emulator
