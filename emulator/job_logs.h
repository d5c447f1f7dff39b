#pragma once
// Cloud Logging for the emulated jobs: what their training code writes, as Vertex training jobs log
// it, and entries:list to read it back (POST /v2/entries:list, served by the emulator's listener).
//
// Each entry is one line of one replica: logName projects/P/logs/workerpool0-0, resource
// {type: ml_job, labels: {job_id, project_id, task_name}}, labels {"ml.googleapis.com/task_name",
// and "ml.googleapis.com/trial_id" for tuning-job trials}, severity, textPayload, timestamp,
// receiveTimestamp, insertId. A job keeps its newest `entriesPerJob` entries; they are stored
// compactly and turned into JSON only when listed.
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "emulator/job_store.h"

namespace vto::emulator {

class JobLogs {
 public:
  // searchingPages: a query without a lower timestamp bound first gets an empty page with a token.
  JobLogs(const Clock& clock, std::size_t entriesPerJob, bool searchingPages = true);

  // Writes the lines the training code of event.job prints for this event: a start line per replica,
  // a line per step from workerpool0-0 ("step 3/10 loss=0.4123"), an end line per replica, and a
  // Python traceback at severity ERROR when the code fails (UserError, a crash).
  void record(const JobEvent& event);

  // entries:list. `request` is a ListLogEntriesRequest; throws vertex::ApiError(400) for anything it
  // cannot honour. Answers {"entries": [...], "nextPageToken": "..."}.
  nlohmann::json list(const nlohmann::json& request) const;

  std::size_t size() const;  // entries held, for stats

 private:
  struct Entry {
    Clock::time_point timestamp, received;
    std::uint64_t sequence = 0;  // insertId, and the order of entries with the same timestamp
    std::uint16_t pool = 0, replica = 0;
    std::uint32_t trial = 0;  // 0: not a tuning-job trial
    std::uint16_t severity = 200;
    std::uint32_t step = 0;  // a step line ("step K/N loss=X"), made from the step when read: no text kept
    std::string text;        // any other line
  };
  struct JobLog {
    std::string project;
    int steps = 0;              // N of its step lines
    std::deque<Entry> entries;  // at most entriesPerJob_, oldest first
  };
  class Fields;

  void append(JobLog& log, Clock::time_point at, int pool, int replica, int trial, int severity, std::string text,
              int step = 0);
  static std::string textOf(const std::string& jobId, const JobLog& log, const Entry& entry);
  nlohmann::json render(const std::string& jobId, const JobLog& log, const Entry& entry) const;

  const Clock& clock_;
  std::size_t entriesPerJob_;
  bool searchingPages_;
  mutable std::mutex mutex_;
  std::map<std::string, JobLog> jobs_;  // by job id (the last segment of the job's name)
  std::uint64_t nextSequence_ = 1;
  std::size_t size_ = 0;
};

}  // namespace vto::emulator
