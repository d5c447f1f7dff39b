#pragma once
// The core of `vto logs`, free of flags and of any client it is not handed: which Vertex job an
// attempt of a TrainingRun ran, and printing that job's Cloud Logging entries, following them while
// the job runs. Tested on fakes with a fake clock and sleeper (tests/unit/cmd/job_logs_test.cpp).
// Log lines are the tenant's data: they go to `out` (the user's stdout) and nowhere else.
#include <chrono>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "vertex/logging_client.h"
#include "vertex/sleeper.h"
#include "vertex/vertex_client.h"

namespace vto::cmd {

// What `vto logs` reads from a TrainingRun's status.
struct RunAttempt {
  int number = 0;
  std::string jobName;  // status.attempts[].jobName; "" before its job exists
  std::string state;
};
struct RunJobs {
  std::string phase;                // status.phase ("" before the operator saw the run)
  std::vector<RunAttempt> attempts;  // status.attempts, oldest first (the newest 20)
  std::string currentJob;            // status.job.name
  int attemptCount = 0;              // status.attemptCount: all attempts so far
};
// Reads status.phase, status.attempts[], status.attemptCount and status.job.name; fields of the wrong
// type read as absent.
RunJobs runJobsOf(const nlohmann::json& run);

// The job of `attempt` (0: the newest attempt that has a job, else status.job.name). Throws
// UsageError: "no job yet: the run is Queued", "attempt 3 does not exist: the run has 2 attempts",
// "attempt 2 has no job yet".
std::string jobOfAttempt(const RunJobs& run, int attempt);

struct JobLogOptions {
  std::string replica;  // "" or workerpoolN-M
  std::optional<vertex::LogSeverity> minSeverity;
  // Without it, from the job's creation (less `margin`): never Cloud Logging's whole retention.
  std::optional<Clock::time_point> since;
  int tail = -1;  // print only the newest N entries first; -1: all
  bool follow = false;
  // -f: Cloud Logging allows 60 reads a minute per project for every reader together (the operator's
  // log tails, the console, other terminals): a poll every 10 s, backing off to maxBackoff on errors
  // (a 429 from Logging says nothing of when to come back).
  std::chrono::milliseconds pollInterval{10000};
  std::chrono::milliseconds maxBackoff{120000};
  // The job's time window widened by this much each side (clocks, late ingestion).
  std::chrono::milliseconds margin{60000};
  // -f: each poll looks this far behind the newest entry again, for entries Cloud Logging ingested
  // late (several replicas, several writers); entries already printed are recognised by insertId.
  std::chrono::milliseconds lookback{5000};
  // -f: once the job has ended, polls that must bring nothing new before the command stops (the
  // last lines of a job reach Cloud Logging a little after the job's end).
  int quietPollsAfterEnd = 2;
  // -f: how long errors that are worth retrying may go on before the command gives up.
  std::chrono::milliseconds giveUpAfter = std::chrono::minutes(5);
  // The first look reads at most this many pages of 1,000 entries (use --since or --tail for more).
  int maxPages = 1000;
};

struct JobLogIo {
  vertex::LoggingClient& logging;
  vertex::VertexClient& vertex;
  const Clock& clock;
  vertex::Sleeper& sleeper;
  std::ostream& out;  // the log lines
  std::ostream& err;  // vto's own notes (the job's end, retries)
};

// "2026-12-05T10:00:03Z workerpool0-0 ERROR  Traceback (most recent call last):\n": the time in UTC to
// the second, the replica ("-" when unknown), the severity, the message; a message of several lines
// gives one such line each. Control characters other than tab are written as \xNN, so a log line
// cannot drive the terminal.
std::string formatLogEntry(const vertex::LogEntry& entry);

// Prints the log of `jobName` (a job name from status: checked strictly before use). Without
// follow, returns 0 once printed. With follow, polls Cloud Logging and the job every pollInterval
// until the job ends and its last entries are in, then returns 0 when it succeeded and 1 when it
// failed, was cancelled or expired. Errors worth retrying are noted on `err` and retried; others
// (and retryable ones beyond giveUpAfter) are thrown.
int printJobLogs(const std::string& jobName, const JobLogOptions& options, JobLogIo io);

}  // namespace vto::cmd
