#include "cmd/job_logs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <sstream>

#include "base/rfc3339.h"
#include "cmd/flags.h"
#include "tests/fakes/clock_fake.h"
#include "tests/fakes/logging_fake_client.h"
#include "tests/fakes/vertex_fake_client.h"

namespace vto::cmd {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using vertex::LogSeverity;

// A Sleeper that moves the fake clock and then runs the test's next step: what happens in the world
// while `vto logs -f` waits between two polls.
class ScriptedSleeper final : public vertex::Sleeper {
 public:
  explicit ScriptedSleeper(testing::FakeClock& clock) : clock_(clock) {}
  void sleepFor(std::chrono::milliseconds duration) override {
    pauses.push_back(duration);
    clock_.advance(duration);
    if (next_ < steps.size()) steps[next_++]();
    if (pauses.size() > 200) throw std::runtime_error("the follow loop did not end");
  }
  std::vector<std::function<void()>> steps;
  std::vector<std::chrono::milliseconds> pauses;

 private:
  testing::FakeClock& clock_;
  std::size_t next_ = 0;
};

json runWith(const std::string& phase, json attempts, const std::string& job = "", int attemptCount = -1) {
  json status = {{"phase", phase}, {"attempts", attempts}};
  if (!job.empty()) status["job"] = {{"name", job}};
  if (attemptCount >= 0) status["attemptCount"] = attemptCount;
  return {{"metadata", {{"name", "resnet"}}}, {"status", status}};
}

std::string usageErrorOf(const std::function<void()>& call) {
  try {
    call();
  } catch (const UsageError& error) {
    return error.what();
  }
  return "(no UsageError)";
}

TEST(JobOfAttempt, PicksTheNewestAttemptWithAJobOrTheOneAskedFor) {
  auto run = runJobsOf(runWith("Running", json::parse(R"([
      {"attempt": 1, "jobName": "projects/p/locations/us-central1/customJobs/1", "state": "JOB_STATE_FAILED"},
      {"attempt": 2, "jobName": "projects/p/locations/us-central1/customJobs/2", "state": "JOB_STATE_RUNNING"},
      {"attempt": 3, "jobName": ""}])")));
  EXPECT_EQ(jobOfAttempt(run, 0), "projects/p/locations/us-central1/customJobs/2");
  EXPECT_EQ(jobOfAttempt(run, 1), "projects/p/locations/us-central1/customJobs/1");
  EXPECT_EQ(usageErrorOf([&] { jobOfAttempt(run, 3); }), "attempt 3 has no job yet: the run is Running");
  EXPECT_EQ(usageErrorOf([&] { jobOfAttempt(run, 5); }), "attempt 5 does not exist: the run has 3 attempts");
  // Before any attempt is recorded, status.job names the job.
  EXPECT_EQ(jobOfAttempt(runJobsOf(runWith("Running", json::array(), "projects/p/locations/us-central1/customJobs/9")), 0),
            "projects/p/locations/us-central1/customJobs/9");
}

TEST(JobOfAttempt, SaysWhyThereIsNoJob) {
  EXPECT_EQ(usageErrorOf([] { jobOfAttempt(runJobsOf(runWith("Queued", json::array())), 0); }),
            "no job yet: the run is Queued (try again once Vertex AI runs its job)");
  EXPECT_EQ(usageErrorOf([] { jobOfAttempt(runJobsOf(json::object()), 0); }),
            "no job yet: the run is Pending (try again once Vertex AI runs its job)");
  auto two = runJobsOf(runWith("Failed", json::parse(R"([{"attempt": 1, "jobName": "j1"}, {"attempt": 2, "jobName": "j2"}])")));
  EXPECT_EQ(usageErrorOf([&] { jobOfAttempt(two, 3); }), "attempt 3 does not exist: the run has 2 attempts");
  // Status keeps the newest 20 attempts; attemptCount counts them all.
  auto trimmed = runJobsOf(runWith("Running", json::parse(R"([{"attempt": 22, "jobName": "j22"}])"), "", 22));
  EXPECT_NE(usageErrorOf([&] { jobOfAttempt(trimmed, 1); }).find("no longer in the run's status"), std::string::npos);
  // Odd types in status read as absent.
  auto odd = runJobsOf(json::parse(R"({"status": {"phase": 3, "attempts": [{"attempt": "1"}, 5, {"attempt": -2}],
                                                  "job": "x", "attemptCount": "many"}})"));
  EXPECT_TRUE(odd.attempts.empty());
  EXPECT_EQ(odd.phase, "");
  EXPECT_EQ(odd.currentJob, "");
}

TEST(FormatLogEntry, TimeReplicaSeverityMessageOneLineEach) {
  vertex::LogEntry entry;
  entry.timestamp = parseRfc3339("2026-12-05T10:00:03.75Z");
  entry.severity = LogSeverity::Error;
  entry.resourceLabels = {{"task_name", "workerpool0-0"}};
  entry.message = "Traceback (most recent call last):\n  File \"train.py\", line 3\n";
  EXPECT_EQ(formatLogEntry(entry),
            "2026-12-05T10:00:03Z workerpool0-0 ERROR  Traceback (most recent call last):\n"
            "2026-12-05T10:00:03Z workerpool0-0 ERROR    File \"train.py\", line 3\n");
  entry.resourceLabels.clear();
  entry.severity = LogSeverity::Warning;
  entry.message = "red \x1b[31mtext\x1b[0m\tand a bell\x07";
  EXPECT_EQ(formatLogEntry(entry), "2026-12-05T10:00:03Z - WARNING red \\x1b[31mtext\\x1b[0m\tand a bell\\x07\n");
  entry.message = "";
  EXPECT_EQ(formatLogEntry(entry), "2026-12-05T10:00:03Z - WARNING \n");
  // C1 controls (CSI as U+009B) and bidi overrides and isolates are escaped too; a replica name as well.
  entry.resourceLabels = {{"task_name", "w\xE2\x80\xAE" "0"}};
  entry.message = "\xC2\x9B" "31mred \xE2\x80\xAEgnp.exe \xE2\x81\xA7x\xE2\x81\xA9";
  EXPECT_EQ(formatLogEntry(entry),
            "2026-12-05T10:00:03Z w\\u202e0 WARNING \\u009b31mred \\u202egnp.exe \\u2067x\\u2069\n");
}

class JobLogsTest : public ::testing::Test {
 protected:
  JobLogsTest() {
    jobName_ = vertex_.createJob({"my-project", "us-central1"}, vertex::JobKind::Custom, json::object()).name;
    jobId_ = jobName_.substr(jobName_.rfind('/') + 1);
    vertex_.setState(jobName_, vertex::JobState::Running);
  }
  int print(const JobLogOptions& options) {
    return printJobLogs(jobName_, options, {logging_, vertex_, clock_, sleeper_, out_, err_});
  }
  void log(const std::string& time, const std::string& message, const std::string& replica = "workerpool0-0",
           LogSeverity severity = LogSeverity::Info) {
    logging_.add(jobId_, replica, "2026-12-05T10:00:" + time + "Z", severity, message);
  }
  // The messages printed, in order.
  std::vector<std::string> printed() const {
    std::vector<std::string> messages;
    std::istringstream lines(out_.str());
    for (std::string line; std::getline(lines, line);) {
      // "TIME REPLICA SEVERITY MESSAGE", the severity padded to 6.
      auto severity = line.find(' ', line.find(' ') + 1) + 1;
      auto width = std::max<std::size_t>(line.find(' ', severity) - severity, 6);
      messages.push_back(line.substr(severity + width + 1));
    }
    return messages;
  }

  testing::FakeClock clock_{parseRfc3339("2026-12-05T10:00:00Z")};
  ScriptedSleeper sleeper_{clock_};
  testing::FakeLoggingClient logging_;
  testing::FakeVertexClient vertex_;
  std::ostringstream out_, err_;
  std::string jobName_, jobId_;
};

TEST_F(JobLogsTest, PrintsTheWholeLogOldestFirstAndExitsWithoutFollow) {
  log("02", "step 2");
  log("01", "step 1");
  logging_.add("999", "workerpool0-0", "2026-12-05T10:00:01Z", LogSeverity::Info, "another job");
  EXPECT_EQ(print({}), 0);
  EXPECT_EQ(out_.str(), "2026-12-05T10:00:01Z workerpool0-0 INFO   step 1\n"
                        "2026-12-05T10:00:02Z workerpool0-0 INFO   step 2\n");
  auto request = logging_.requests().at(0);
  EXPECT_EQ(request.resourceNames, std::vector<std::string>{"projects/my-project"});
  // Without --since, from the job's creation (less a minute), never Cloud Logging's whole retention.
  EXPECT_EQ(request.filter, "resource.type=\"ml_job\" AND resource.labels.job_id=\"" + jobId_ +
                                "\" AND timestamp>=\"2025-12-31T23:59:00Z\"");
  EXPECT_TRUE(sleeper_.pauses.empty());
  EXPECT_EQ(err_.str(), "");
}

TEST_F(JobLogsTest, TailReplicaSeverityAndSinceNarrowTheLog) {
  for (int i = 1; i <= 5; ++i) log("0" + std::to_string(i), "step " + std::to_string(i));
  log("06", "worker line", "workerpool1-0");
  log("07", "Traceback", "workerpool0-0", LogSeverity::Error);
  print({.tail = 2});
  EXPECT_EQ(printed(), (std::vector<std::string>{"worker line", "Traceback"}));
  out_.str("");
  print({.replica = "workerpool0-0", .minSeverity = LogSeverity::Error});
  EXPECT_EQ(printed(), std::vector<std::string>{"Traceback"});
  out_.str("");
  print({.since = parseRfc3339("2026-12-05T10:00:05Z"), .tail = 100});
  EXPECT_EQ(printed(), (std::vector<std::string>{"step 5", "worker line", "Traceback"}));
  out_.str("");
  print({.tail = 0});
  EXPECT_EQ(out_.str(), "");
  EXPECT_THROW(print({.replica = "chief"}), std::invalid_argument);
}

TEST_F(JobLogsTest, FollowsUntilTheJobSucceedsThenDrainsTheLastLinesAndExitsZero) {
  log("01", "step 1");
  sleeper_.steps = {
      [&] { log("03", "step 2"); },
      // A line Cloud Logging ingested late, older than the newest one printed: still printed, once.
      [&] { log("04", "step 3"); log("02", "late line", "workerpool1-0"); },
      [&] {
        log("05", "saving the model");
        vertex_.setState(jobName_, vertex::JobState::Succeeded);
      },
      [&] { log("06", "written after the end"); },
  };
  EXPECT_EQ(print({.follow = true}), 0);
  EXPECT_EQ(printed(), (std::vector<std::string>{"step 1", "step 2", "late line", "step 3", "saving the model",
                                                 "written after the end"}));
  EXPECT_NE(err_.str().find("ended JOB_STATE_SUCCEEDED"), std::string::npos) << err_.str();
  // Every 10 s (Cloud Logging's 60 reads a minute are the whole project's); after the end, two polls
  // without news.
  EXPECT_EQ(sleeper_.pauses, std::vector<std::chrono::milliseconds>(6, 10000ms));
  // Polls look back from the newest entry, never from the start.
  auto last = logging_.requests().back();
  EXPECT_NE(last.filter.find("timestamp>=\"2026-12-05T10:00:01Z\""), std::string::npos) << last.filter;
}

TEST_F(JobLogsTest, AFailedOrCancelledJobExitsOneWithItsError) {
  log("01", "Traceback (most recent call last):", "workerpool0-0", LogSeverity::Error);
  sleeper_.steps = {[&] {
    vertex_.setState(jobName_, vertex::JobState::Failed, vertex::RpcStatus{13, "The replica workerpool0-0 exited with a non-zero status of 1."});
  }};
  EXPECT_EQ(print({.follow = true}), 1);
  EXPECT_EQ(printed(), std::vector<std::string>{"Traceback (most recent call last):"});
  EXPECT_NE(err_.str().find("ended JOB_STATE_FAILED: The replica workerpool0-0 exited"), std::string::npos) << err_.str();
}

TEST_F(JobLogsTest, FollowPrintsVertexsErrorMessageEscaped) {
  sleeper_.steps = {[&] {
    vertex_.setState(jobName_, vertex::JobState::Failed,
                     vertex::RpcStatus{13, "The replica workerpool0-0 exited: \x1b]0;owned\x07 \xC2\x9B" "2J \xE2\x80\xAEtxt"});
  }};
  EXPECT_EQ(print({.follow = true}), 1);
  EXPECT_NE(err_.str().find("exited: \\x1b]0;owned\\x07 \\u009b2J \\u202etxt\n"), std::string::npos) << err_.str();
  EXPECT_EQ(err_.str().find('\x1b'), std::string::npos);
  EXPECT_EQ(err_.str().find("\xE2\x80\xAE"), std::string::npos);
}

TEST_F(JobLogsTest, TailThenFollowDoesNotBringBackWhatTheTailLeftOut) {
  for (int i = 1; i <= 4; ++i) log("0" + std::to_string(i), "step " + std::to_string(i));
  sleeper_.steps = {[&] {
    log("05", "step 5");
    vertex_.setState(jobName_, vertex::JobState::Cancelled);
  }};
  EXPECT_EQ(print({.tail = 1, .follow = true}), 1);
  EXPECT_EQ(printed(), (std::vector<std::string>{"step 4", "step 5"}));
}

TEST_F(JobLogsTest, RetriesWhatIsWorthRetryingAndStopsOnWhatIsNot) {
  sleeper_.steps = {
      [&] { logging_.failNextCall(vertex::ApiError(503, "UNAVAILABLE", "try later")); },
      [&] {
        vertex_.failNextCall(vertex::ApiError(429, "RESOURCE_EXHAUSTED", "quota"));
      },
      [&] {
        log("05", "back");
        vertex_.setState(jobName_, vertex::JobState::Succeeded);
      },
  };
  EXPECT_EQ(print({.follow = true}), 0);
  EXPECT_EQ(printed(), std::vector<std::string>{"back"});
  EXPECT_NE(err_.str().find("try later; trying again"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("quota; trying again"), std::string::npos) << err_.str();

  testing::FakeLoggingClient denied;
  denied.failNextCall(vertex::ApiError(403, "PERMISSION_DENIED", "logging.logEntries.list denied"));
  EXPECT_THROW(printJobLogs(jobName_, {.follow = true}, {denied, vertex_, clock_, sleeper_, out_, err_}), vertex::ApiError);
}

TEST_F(JobLogsTest, BacksOffOnErrorsUpToItsBoundThenPollsEveryTenSecondsAgain) {
  for (int i = 0; i < 6; ++i) {
    sleeper_.steps.push_back([&] { logging_.failNextCall(vertex::ApiError(429, "RESOURCE_EXHAUSTED", "Quota exceeded for quota metric 'Read requests'")); });
  }
  sleeper_.steps.push_back([&] { vertex_.setState(jobName_, vertex::JobState::Succeeded); });
  EXPECT_EQ(print({.follow = true, .giveUpAfter = 30min}), 0);
  EXPECT_EQ(sleeper_.pauses, (std::vector<std::chrono::milliseconds>{10s, 20s, 40s, 80s, 120s, 120s, 120s, 10s}));
}

TEST_F(JobLogsTest, GivesUpWhenErrorsLastLongerThanAllowed) {
  ScriptedSleeper sleeper(clock_);
  for (int i = 0; i < 10; ++i) sleeper.steps.push_back([&] { logging_.failNextCall(vertex::ApiError(503, "UNAVAILABLE", "down")); });
  EXPECT_THROW(printJobLogs(jobName_, {.follow = true, .giveUpAfter = 5s}, {logging_, vertex_, clock_, sleeper, out_, err_}),
               vertex::ApiError);
  EXPECT_LE(sleeper.pauses.size(), 5u);
}

TEST_F(JobLogsTest, RefusesAJobNameFromStatusThatIsNotOne) {
  EXPECT_THROW(printJobLogs("projects/p/locations/localhost:1/customJobs/1", {}, {logging_, vertex_, clock_, sleeper_, out_, err_}),
               UsageError);
  EXPECT_TRUE(logging_.requests().empty());
}

}  // namespace
}  // namespace vto::cmd
