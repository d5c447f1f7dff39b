#pragma once
// The newest lines of a failed attempt's log (status.attempts[].logTail and the Failed Event), read
// off the reconcile workers: a failure is written to status first, then its attempt becomes a target
// of a controller::PollingSource; one poll reads the failing replica's log from Cloud Logging once
// (ERROR and above first), keeps the text here and wakes the run, whose next pass records it
// (observe hands it to decide). Once status shows it, the target and the text go.
//
// Log lines are the tenant's data: they go to status and Events, never to vto's own log.
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "crd/training_run.h"
#include "reconcilers/jobs/job_cache.h"
#include "vertex/logging_client.h"

namespace vto::reconcilers {

// What an attempt's logTail says while its tail is still to be read and the Failed Event went out
// without it (DecideOptions::logTailWait): the read goes on, and its tail replaces this.
inline constexpr const char* kLogTailFollows = "(the log is still being read; it will follow here)";

struct LogTailLimits {
  int lines = 20;
  size_t maxBytes = crd::kMaxLogTailBytes;
};

// Whether an attempt's log tail is still to be read: it failed for a reason its own code may explain
// (not a preemption, not a capacity failure), it has a job, its tail is not recorded yet (empty, or
// kLogTailFollows), and it ended
// within `maxAge` of `now` (so that an upgrade does not read, and announce, every old failure again).
bool wantsLogTail(const crd::Attempt& attempt, Clock::time_point now,
                  Clock::duration maxAge = std::chrono::hours(24));

// The replica Vertex names in a failed job's error ("The replica workerpool0-0 exited with a non-zero
// status of 1."), or "" when it names none (the whole job's log is read then).
std::string failingReplicaOf(std::string_view vertexMessage);

// The tail as status shows it, from the newest ERROR-and-above entries and the newest others (each
// oldest first, as Cloud Logging orders them): one line per line of a message, oldest first (entries
// with one timestamp in the order given), each line through escapeControls (base/utf8.h: no C0, C1
// or bidi control reaches status or an Event). While over `limits`, the oldest line below ERROR goes
// first, then the oldest ERROR line; a single line still too long keeps its end. Linear in what it
// reads, and it reads at most `limits.lines` lines and `limits.maxBytes` bytes of each entry (the
// newest: an entry's older lines could never stay). Valid UTF-8 out, whatever comes in.
std::string formatLogTail(const std::vector<vertex::LogEntry>& errors, const std::vector<vertex::LogEntry>& others,
                          const LogTailLimits& limits = {});

// What status and the Event say when the log cannot be read (`error` is the client's answer).
std::string logUnreadableText(const std::exception& error);

// The end of `text` that fits in `maxBytes` (whole lines where it can, "…" where a line was cut),
// its lines joined by " | ": for an Event's message.
std::string shortTail(const std::string& text, size_t maxBytes);

struct LogTailOptions {
  LogTailLimits limits;
  // A read that fails with an error worth retrying is tried this many times in all (with the
  // PollingSource's backoff), then the attempt records why it has no tail.
  int maxTries = 5;
  // How soon a run that has not recorded its tail yet is woken again (its status write failed).
  Clock::duration rewake = std::chrono::seconds(30);
  // Which jobs are the run's (status is writable by others, and a log is read with vto's identity):
  // only a job this cache holds (so one this operator made: ownership.h) with this run's vto-run-uid.
  const JobCache* jobs = nullptr;
  // The read covers the attempt's startTime (its endTime less `lookBehind` without one) to its
  // endTime plus `margin` (Cloud Logging ingests the last lines a little late): a bounded search.
  Clock::duration margin = std::chrono::minutes(5);
  Clock::duration lookBehind = std::chrono::hours(24);
  // "Still searching" pages (no entries, a token) followed per query at most.
  int maxPages = 5;
};

// Why the log of `jobName`, named by run `run`'s status, must not be read ("" when it may): it is
// not a job where the run runs, or vto saw it labelled with another run's uid.
std::string logTailRefusal(const crd::TrainingRun& run, const std::string& jobName, const JobCache* jobs);

class LogTailPoller {
 public:
  using Wake = std::function<void(const std::string& runUid)>;
  // `logging` null: no tails (vto run without log access configured); nothing is ever a target.
  LogTailPoller(vertex::LoggingClient* logging, const Clock& clock, Wake wake, LogTailOptions options = {});

  bool enabled() const { return logging_ != nullptr; }
  // A run event (the informer's handler): its attempts that want a tail become targets; those whose
  // tail status now shows, and every attempt of a run that is gone (`run` null), are forgotten.
  void update(const std::string& uid, const crd::TrainingRun* run);
  // The PollingSource's targets ("<uid>/<attempt>") and one poll: the read, once; returns when to
  // look again (the run is woken again then if it has not recorded the tail). Throws an error worth
  // retrying, so that the source backs the target off, until maxTries; a quota refusal (vto's own
  // pacer, or Cloud Logging's 429) only defers the read and never counts as a try.
  std::vector<std::string> targets() const;
  Clock::duration poll(const std::string& target);
  // The namespace of a target's run ("" when it is gone): the PollingSource's group, so that one
  // namespace's reads hold at most its share of the threads.
  std::string namespaceOf(const std::string& target) const;
  // The tails read for a run and not yet in its status, by attempt number.
  std::map<int32_t, std::string> tailsOf(const std::string& uid) const;
  int reads() const;

 private:
  struct Wanted {
    std::string jobName;
    std::string replica;
    std::optional<std::string> tail;  // read
    int failures = 0;
    Clock::time_point since, until;  // the attempt's time window
  };
  std::string read(const Wanted& wanted);

  vertex::LoggingClient* logging_;
  const Clock& clock_;
  Wake wake_;
  LogTailOptions options_;
  mutable std::mutex mutex_;
  std::map<std::string, std::map<int32_t, Wanted>> byUid_;
  std::map<std::string, std::string> namespaceByUid_;  // of the runs in byUid_
  std::atomic<int> reads_{0};
};

}  // namespace vto::reconcilers
