// The log tail of a failed attempt: which attempts want one, the text's bounds and order, and the
// poller that reads it once off the workers (on a fake Logging client and a fake clock).
#include "reconcilers/jobs/log_tail.h"

#include <gtest/gtest.h>

#include "base/rfc3339.h"
#include "crd/render.h"
#include "reconcilers/jobs/poll_targets.h"
#include "tests/fakes/clock_fake.h"
#include "tests/fakes/logging_fake_client.h"

namespace vto::reconcilers {
namespace {

using std::chrono::seconds;
using vertex::LogSeverity;

const Clock::time_point T0 = parseRfc3339("2026-03-01T12:00:00Z");
const std::string kJob = "projects/test-project/locations/us-central1/customJobs/7";

vertex::LogEntry entry(int second, LogSeverity severity, std::string message) {
  vertex::LogEntry e;
  e.timestamp = T0 + seconds(second);
  e.severity = severity;
  e.message = std::move(message);
  return e;
}

crd::Attempt failed(crd::FailureClass failure) {
  crd::Attempt a;
  a.attempt = 1;
  a.jobName = kJob;
  a.state = "JOB_STATE_FAILED";
  a.endTime = T0;
  a.failureClass = failure;
  a.message = "The replica workerpool0-0 exited with a non-zero status of 1.";
  return a;
}

TEST(LogTailTest, OnlyFailuresOfTheirOwnWantATailAndOnlyOnce) {
  EXPECT_TRUE(wantsLogTail(failed(crd::FailureClass::UserError), T0 + seconds(5)));
  EXPECT_TRUE(wantsLogTail(failed(crd::FailureClass::InternalError), T0 + seconds(5)));
  EXPECT_TRUE(wantsLogTail(failed(crd::FailureClass::Timeout), T0 + seconds(5)));
  EXPECT_FALSE(wantsLogTail(failed(crd::FailureClass::Preemption), T0 + seconds(5)));
  EXPECT_FALSE(wantsLogTail(failed(crd::FailureClass::Stockout), T0 + seconds(5)));
  auto recorded = failed(crd::FailureClass::UserError);
  recorded.logTail = "ValueError: x";
  EXPECT_FALSE(wantsLogTail(recorded, T0 + seconds(5)));
  EXPECT_FALSE(wantsLogTail(failed(crd::FailureClass::UserError), T0 + std::chrono::hours(25)))
      << "an old failure (an upgrade) is not read again";
  crd::Attempt running;
  running.jobName = kJob;
  EXPECT_FALSE(wantsLogTail(running, T0));
}

TEST(LogTailTest, TheFailingReplicaIsReadFromVertexsMessage) {
  EXPECT_EQ(failingReplicaOf("The replica workerpool0-0 exited with a non-zero status of 1."), "workerpool0-0");
  EXPECT_EQ(failingReplicaOf("The replica workerpool1-12 exited with a non-zero status of 137. Termination reason: OOM"),
            "workerpool1-12");
  EXPECT_EQ(failingReplicaOf("Internal error occurred."), "");
  EXPECT_EQ(failingReplicaOf("The replica workerpool0-0\" OR severity>=DEFAULT exited"), "workerpool0-0");
}

TEST(LogTailTest, ErrorLinesComeFirstAndTheTailReadsOldestFirst) {
  // A 3-line traceback at ERROR, then 30 INFO lines after it: 5 lines may stay.
  std::vector<vertex::LogEntry> errors = {entry(1, LogSeverity::Error, "Traceback (most recent call last):"),
                                          entry(2, LogSeverity::Error, "  File \"task.py\", line 3"),
                                          entry(3, LogSeverity::Error, "ValueError: NaN")};
  std::vector<vertex::LogEntry> others;
  for (int i = 0; i < 30; ++i) others.push_back(entry(10 + i, LogSeverity::Info, "shutdown " + std::to_string(i)));
  auto tail = formatLogTail(errors, others, {.lines = 5, .maxBytes = 4096});
  EXPECT_EQ(tail,
            "Traceback (most recent call last):\n  File \"task.py\", line 3\nValueError: NaN\nshutdown 28\nshutdown 29");
  // More ERROR lines than fit: the newest of them.
  auto only = formatLogTail(errors, {}, {.lines = 2, .maxBytes = 4096});
  EXPECT_EQ(only, "  File \"task.py\", line 3\nValueError: NaN");
}

TEST(LogTailTest, TheTailStaysWithinItsBytesAndItsCharactersAreSafe) {
  std::vector<vertex::LogEntry> errors;
  for (int i = 0; i < 20; ++i) errors.push_back(entry(i, LogSeverity::Error, std::string(500, 'a' + i % 26)));
  auto tail = formatLogTail(errors, {}, {});
  EXPECT_LE(tail.size(), crd::kMaxLogTailBytes);
  EXPECT_EQ(tail.substr(tail.size() - 500), std::string(500, 'a' + 19)) << "the newest line stays";
  // One line longer than the bound keeps its end, cut on a character boundary (é is two bytes).
  std::string huge;
  for (int i = 0; i < 3000; ++i) huge += "\xC3\xA9";
  auto cut = formatLogTail({entry(0, LogSeverity::Error, huge + "END")}, {}, {});
  EXPECT_LE(cut.size(), crd::kMaxLogTailBytes);
  EXPECT_EQ(cut.substr(cut.size() - 3), "END");
  EXPECT_NO_THROW((void)nlohmann::json(cut).dump()) << "valid UTF-8";
  // A message of several lines gives several lines; terminal control characters are not passed on.
  auto lines = formatLogTail({entry(0, LogSeverity::Error, "one\r\ntwo\x1b[2J\tend\n")}, {}, {});
  EXPECT_EQ(lines, "one\ntwo\\x1b[2J\tend");
}

TEST(LogTailTest, C1AndBidiControlsAreEscapedNotPassedOn) {
  // CSI as one C1 character (U+009B), a right-to-left override, an isolate, a bare mark and a byte
  // that is not UTF-8: each shown as an escape, so the line reads as it runs.
  auto tail = formatLogTail({entry(0, LogSeverity::Error,
                                   "a\xC2\x9B" "2Jb \xE2\x80\xAEtxt.exe\xE2\x81\xA6x\xE2\x81\xA9 "
                                   "\xE2\x80\x8F\xD8\x9C\xFF end")},
                            {}, {});
  EXPECT_EQ(tail, "a\\u009b2Jb \\u202etxt.exe\\u2066x\\u2069 \\u200f\\u061c\\xff end");
  EXPECT_NO_THROW((void)nlohmann::json(tail).dump()) << "valid UTF-8";
  // Characters beyond ASCII that steer nothing pass through.
  EXPECT_EQ(formatLogTail({entry(0, LogSeverity::Error, "caf\xC3\xA9 \xE2\x9C\x93")}, {}, {}),
            "caf\xC3\xA9 \xE2\x9C\x93");
}

// A log of a million lines: one entry of them, and as many entries of one line each. Trimming one
// line at a time from the front made this quadratic (hours); the test's ctest TIMEOUT catches that.
TEST(LogTailTest, AMillionNewlinesAreTrimmedInLinearTime) {
  std::string newlines;
  newlines.reserve(2'000'010);
  for (int i = 0; i < 1'000'000; ++i) newlines += "x\n";
  newlines += "the end";
  auto tail = formatLogTail({entry(0, LogSeverity::Error, newlines)}, {}, {.lines = 20, .maxBytes = 4096});
  std::string expected;
  for (int i = 0; i < 19; ++i) expected += "x\n";
  EXPECT_EQ(tail, expected + "the end");

  std::string empty(1'000'000, '\n');
  EXPECT_EQ(formatLogTail({entry(0, LogSeverity::Error, "\n" + empty + "only")}, {}, {.lines = 20, .maxBytes = 4096}),
            std::string(19, '\n') + "only")
      << "empty lines count as lines";

  std::vector<vertex::LogEntry> many;
  many.reserve(1'000'000);
  for (int i = 0; i < 1'000'000; ++i) many.push_back(entry(i, LogSeverity::Info, "line " + std::to_string(i)));
  many.push_back(entry(0, LogSeverity::Error, "the error"));
  auto last = formatLogTail({many.back()}, std::vector<vertex::LogEntry>(many.begin(), many.end() - 1),
                            {.lines = 3, .maxBytes = 4096});
  EXPECT_EQ(last, "the error\nline 999998\nline 999999");
}

TEST(LogTailTest, AnEntryIsReadOnlyUpToItsBounds) {
  // Only the newest maxBytes of an entry are read: the first line kept is marked as cut.
  auto tail = formatLogTail({entry(0, LogSeverity::Error, std::string(10000, 'a') + "\nlast")}, {},
                            {.lines = 20, .maxBytes = 100});
  EXPECT_LE(tail.size(), 100u);
  EXPECT_EQ(tail.substr(tail.size() - 4), "last");
}

TEST(LogTailTest, AnEventGetsTheEndOfTheTailOnOneLine) {
  EXPECT_EQ(shortTail("a\nb\nValueError: NaN", 100), "a | b | ValueError: NaN");
  auto shortened = shortTail("first line that is long\nsecond\nValueError: NaN", 30);
  EXPECT_EQ(shortened, "\xE2\x80\xA6 | second | ValueError: NaN");
  EXPECT_LE(shortTail(std::string(5000, 'x'), 256).size(), 256u);
}

TEST(LogTailTest, APermissionDeniedSaysWhichRoleToGrant) {
  vertex::ApiError forbidden(403, "PERMISSION_DENIED", "Permission 'logging.logEntries.list' denied");
  EXPECT_EQ(logUnreadableText(forbidden),
            "(could not read the log: " + std::string(forbidden.what()) +
                ", grant the operator's service account roles/logging.viewer on the job's project)");
}

struct PollerFixture {
  testing::FakeClock clock{T0 + seconds(5)};
  JobCache jobs;
  testing::FakeLoggingClient logging;
  std::vector<std::string> woken;
  LogTailPoller poller{&logging, clock, [this](const std::string& uid) { woken.push_back(uid); },
                       LogTailOptions{.limits = {.lines = 3, .maxBytes = 4096},
                                      .maxTries = 2,
                                      .jobs = &jobs}};

  // Run u-1 with `attempt`, whose job vto saw (the poll that found it failed) unless `seen` is false.
  crd::TrainingRun runWith(crd::Attempt attempt, bool seen = true) {
    crd::TrainingRun run;
    run.metadata.uid = "u-1";
    if (seen && !attempt.jobName.empty()) {
      vertex::Job job;
      job.name = attempt.jobName;
      job.state = vertex::JobState::Failed;
      job.labels = {{crd::kRunUidLabel, "u-1"}};
      jobs.put(job, T0);
    }
    run.status.history.attempts = {std::move(attempt)};
    return run;
  }
};

TEST(LogTailPollerTest, ReadsTheFailingReplicaOnceAndForgetsItOnceStatusShowsIt) {
  PollerFixture f;
  f.logging.add("7", "workerpool0-0", "2026-03-01T11:59:00Z", LogSeverity::Info, "step 9/10");
  f.logging.add("7", "workerpool0-0", "2026-03-01T11:59:01Z", LogSeverity::Error, "Traceback (most recent call last):");
  f.logging.add("7", "workerpool0-0", "2026-03-01T11:59:02Z", LogSeverity::Error, "ValueError: NaN");
  f.logging.add("7", "workerpool0-1", "2026-03-01T11:59:03Z", LogSeverity::Error, "another replica");
  auto run = f.runWith(failed(crd::FailureClass::UserError));
  f.poller.update("u-1", &run);
  ASSERT_EQ(f.poller.targets(), std::vector<std::string>{"u-1/1"});
  f.poller.poll("u-1/1");
  EXPECT_EQ(f.poller.tailsOf("u-1").at(1), "step 9/10\nTraceback (most recent call last):\nValueError: NaN");
  EXPECT_EQ(f.woken, std::vector<std::string>{"u-1"});
  auto requests = f.logging.requests();
  ASSERT_EQ(requests.size(), 2u) << "ERROR and above, then the rest";
  EXPECT_NE(requests[0].filter.find("task_name=\"workerpool0-0\""), std::string::npos) << requests[0].filter;
  EXPECT_NE(requests[0].filter.find("severity>=ERROR"), std::string::npos) << requests[0].filter;
  EXPECT_EQ(requests[0].resourceNames, std::vector<std::string>{"projects/test-project"});
  // Polled again before status shows it: the run is woken again, the log is not read again.
  f.poller.poll("u-1/1");
  EXPECT_EQ(f.logging.requests().size(), 2u);
  EXPECT_EQ(f.woken.size(), 2u);
  // Status shows it: nothing is left.
  run.status.history.attempts[0].logTail = f.poller.tailsOf("u-1").at(1);
  f.poller.update("u-1", &run);
  EXPECT_TRUE(f.poller.targets().empty());
  EXPECT_TRUE(f.poller.tailsOf("u-1").empty());
}

TEST(LogTailPollerTest, PreemptedAndSucceededAttemptsReadNothing) {
  PollerFixture f;
  auto preempted = f.runWith(failed(crd::FailureClass::Preemption));
  f.poller.update("u-1", &preempted);
  crd::Attempt ok;
  ok.attempt = 1;
  ok.jobName = kJob;
  ok.state = "JOB_STATE_SUCCEEDED";
  ok.endTime = T0;
  auto succeeded = f.runWith(ok);
  f.poller.update("u-2", &succeeded);
  EXPECT_TRUE(f.poller.targets().empty());
  EXPECT_TRUE(f.logging.requests().empty());
}

TEST(LogTailPollerTest, APermissionDeniedIsToldAtOnceAndAnOutageAfterItsTries) {
  PollerFixture f;
  auto run = f.runWith(failed(crd::FailureClass::UserError));
  f.poller.update("u-1", &run);
  f.logging.failNextCall(vertex::ApiError(403, "PERMISSION_DENIED", "Permission 'logging.logEntries.list' denied"));
  f.poller.poll("u-1/1");
  auto tail = f.poller.tailsOf("u-1").at(1);
  EXPECT_NE(tail.find("could not read the log"), std::string::npos) << tail;
  EXPECT_NE(tail.find("roles/logging.viewer"), std::string::npos) << tail;

  PollerFixture g;
  auto again = g.runWith(failed(crd::FailureClass::UserError));  // its job seen by g's operator
  g.poller.update("u-2", &again);
  g.logging.failNextCall(vertex::ApiError(503, "UNAVAILABLE", "backend"));
  EXPECT_THROW(g.poller.poll("u-2/1"), RetryableError) << "retried with the source's backoff";
  EXPECT_TRUE(g.poller.tailsOf("u-2").empty());
  g.logging.failNextCall(vertex::ApiError(503, "UNAVAILABLE", "backend"));
  g.poller.poll("u-2/1");
  EXPECT_NE(g.poller.tailsOf("u-2").at(1).find("could not read the log"), std::string::npos);
}

// Cloud Logging's 429 (60 reads a minute per project, every reader together) says "later", not
// "broken": the read is deferred with the source's backoff as often as it comes, never recorded as a
// failure to read the log.
TEST(LogTailPollerTest, ALoggingQuotaRefusalDefersTheReadWithoutCountingATry) {
  PollerFixture f;  // maxTries 2
  f.logging.add("7", "workerpool0-0", "2026-03-01T11:59:02Z", LogSeverity::Error, "ValueError: NaN");
  auto run = f.runWith(failed(crd::FailureClass::UserError));
  f.poller.update("u-1", &run);
  for (int i = 0; i < 5; ++i) {
    f.logging.failNextCall(vertex::ApiError(429, "RESOURCE_EXHAUSTED", "Quota exceeded for quota metric 'Read requests'"));
    EXPECT_THROW(f.poller.poll("u-1/1"), RetryableError) << i;
    EXPECT_TRUE(f.poller.tailsOf("u-1").empty()) << i;
  }
  f.poller.poll("u-1/1");
  EXPECT_EQ(f.poller.tailsOf("u-1").at(1), "ValueError: NaN");
}

TEST(LogTailPollerTest, TheReadCoversTheAttemptsTimeWindowAndFollowsStillSearchingPages) {
  PollerFixture f;
  auto attempt = failed(crd::FailureClass::UserError);
  attempt.startTime = T0 - std::chrono::minutes(30);
  f.logging.add("7", "workerpool0-0", "2026-03-01T11:59:02Z", LogSeverity::Error, "ValueError: NaN");
  f.logging.add("7", "workerpool0-0", "2026-03-01T13:00:00Z", LogSeverity::Error, "long after the end");
  f.logging.searchFirst(2);
  auto run = f.runWith(attempt);
  f.poller.update("u-1", &run);
  f.poller.poll("u-1/1");
  EXPECT_EQ(f.poller.tailsOf("u-1").at(1), "ValueError: NaN") << "an empty page with a token is not an empty log";
  auto first = f.logging.requests().at(0);
  EXPECT_NE(first.filter.find("timestamp>=\"2026-03-01T11:30:00Z\""), std::string::npos) << first.filter;
  EXPECT_NE(first.filter.find("timestamp<=\"2026-03-01T12:05:00Z\""), std::string::npos) << "endTime plus the margin";
}

TEST(LogTailPollerTest, AnEmptyLogSaysSo) {
  PollerFixture f;
  auto run = f.runWith(failed(crd::FailureClass::UserError));
  f.poller.update("u-1", &run);
  f.poller.poll("u-1/1");
  EXPECT_EQ(f.poller.tailsOf("u-1").at(1), "(the log of workerpool0-0 has no entries)");
}

// Status is writable by others and the log is read with vto's identity: a job name from status is
// read only when vto saw it, made by this operator, with the run's vto-run-uid label.
TEST(LogTailPollerTest, AJobThatIsNotTheRunsIsNeverRead) {
  auto refusedFor = [](const std::string& jobName, const std::string& label = "") {
    PollerFixture f;
    if (!label.empty()) {
      vertex::Job seen;
      seen.name = jobName;
      seen.state = vertex::JobState::Failed;
      seen.labels = {{crd::kRunUidLabel, label}};
      f.jobs.put(seen, T0);
    }
    f.logging.add("7", "workerpool0-0", "2026-03-01T11:59:01Z", LogSeverity::Error, "another team's secret");
    auto attempt = failed(crd::FailureClass::UserError);
    attempt.jobName = jobName;
    auto run = f.runWith(attempt, false);
    f.poller.update("u-1", &run);
    for (const auto& target : f.poller.targets()) f.poller.poll(target);
    auto tails = f.poller.tailsOf("u-1");
    EXPECT_EQ(tails.size(), 1u) << jobName;
    bool read = !f.logging.requests().empty();
    EXPECT_EQ(read, tails.at(1).find("another team's secret") != std::string::npos) << jobName;
    return read ? std::string() : tails.at(1);
  };
  EXPECT_EQ(refusedFor(kJob, "u-1"), "") << "seen as the run's";
  // In a project several teams share, the run's own project and location say nothing about whose job it is.
  const std::string notSeen = "(not read: vto has not seen this job as one it made for this run)";
  EXPECT_EQ(refusedFor(kJob), notSeen);
  EXPECT_EQ(refusedFor("projects/other-project/locations/us-central1/customJobs/7"), notSeen);
  EXPECT_EQ(refusedFor("projects/test-project/locations/us-central1/hyperparameterTuningJobs/7"), notSeen);
  EXPECT_EQ(refusedFor(kJob, "another-run"), "(not read: status names a job whose vto-run-uid label is another run's)");
  EXPECT_EQ(refusedFor("projects/123456789/locations/us-central1/customJobs/7"), notSeen);
  EXPECT_EQ(refusedFor("projects/123456789/locations/us-central1/customJobs/7", "u-1"), "");
}

TEST(LogTailPollerTest, AFallbacksLocationIsTheRuns) {
  crd::TrainingRunSpec spec;
  spec.project = "test-project";
  spec.location = "us-central1";
  EXPECT_TRUE(isInTheRunsPlace(spec, {}, kJob));
  EXPECT_FALSE(isInTheRunsPlace(spec, {}, "projects/test-project/locations/europe-west4/customJobs/7"));
  spec.capacity = crd::Capacity{};
  spec.capacity->fallbacks = {crd::Fallback{.location = "europe-west4"}};
  EXPECT_TRUE(isInTheRunsPlace(spec, {}, "projects/test-project/locations/europe-west4/customJobs/7"));
  EXPECT_FALSE(isInTheRunsPlace(spec, {}, "projects/test-project/locations/asia-east1/customJobs/7"));
  crd::TrainingRunSpec other;
  EXPECT_FALSE(isInTheRunsPlace(other, {}, kJob)) << "no project: no job is the run's";
  EXPECT_TRUE(isInTheRunsPlace(other, {"test-project", "us-central1"}, kJob));
}

TEST(LogTailPollerTest, WithoutALoggingClientNothingIsWanted) {
  testing::FakeClock clock{T0};
  LogTailPoller poller(nullptr, clock, [](const std::string&) {});
  crd::TrainingRun run;
  run.status.history.attempts = {failed(crd::FailureClass::UserError)};
  poller.update("u-1", &run);
  EXPECT_FALSE(poller.enabled());
  EXPECT_TRUE(poller.targets().empty());
}

}  // namespace
}  // namespace vto::reconcilers
