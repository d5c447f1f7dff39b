#pragma once
// The core of `vto describe trun/NAME`, free of clients: which cluster identity the operator uses,
// which uids a run has had, and for each attempt's Vertex job who made it and whose it is, in words,
// kubectl-describe style. Tested on JSON and label maps (tests/unit/cmd/describe_test.cpp).
//
// Everything shown comes from someone else: the run's status and annotations (anyone who may edit
// the run), a job's labels (anyone who may create a Vertex job in the project), Events. Label values
// are shown only when they are valid Google Cloud label values; other text is escaped and cut.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "reconcilers/jobs/ownership.h"

namespace vto::cmd {

// At most this many attempts' jobs are read from Vertex (the newest), one GET each.
inline constexpr int kDescribeMaxJobReads = 10;
// At most this many Events are shown (the newest).
inline constexpr int kDescribeMaxEvents = 10;

// The Events `vto describe` shows: what the operator said about adopting, or ignoring, a job.
bool isOwnershipEventReason(const std::string& reason);

// What one attempt's Vertex job said, or why it could not be read.
struct JobRead {
  bool read = false;  // labels and state below are the job's
  std::map<std::string, std::string> labels;
  std::string state;  // JOB_STATE_*
  std::optional<Clock::time_point> createTime;
  std::string error;  // why it was not read, e.g. "Vertex AI says it does not exist (404)"; "" when read
};

// The run as the operator sees it: its own identity and namespace/name/uid, and the uids it had before.
struct RunIdentity {
  std::string ns, name, uid;
  std::vector<std::string> runUids;  // the vto.dev/run-uids annotation, valid uids only
  std::string adoptJob;              // spec.adoptJob when it is a Vertex job name, else ""
};

// Who made the job named `job` with `labels`, and whose it is, in words, e.g. "made by this cluster
// (dr-prod) for this run", "another cluster's (staging): not this run's", "started outside vto,
// adopted by this run (spec.adoptJob)". `clusterId` "" when unknown. With `ownership` (the operator's
// key), the job's vto-owner tag is checked too, and a tag that does not verify says "forged".
std::string whoseJob(const std::map<std::string, std::string>& labels, const RunIdentity& run,
                     const std::string& clusterId, const reconcilers::JobOwnership* ownership = nullptr,
                     std::optional<Clock::time_point> createTime = std::nullopt, const std::string& job = "");

struct DescribeInput {
  nlohmann::json run;  // the TrainingRun as the API server returned it
  std::string clusterId;        // "" when it could not be found out
  std::string clusterIdSource;  // "--cluster-id", "the kube-system namespace's uid", or why it is unknown
  const reconcilers::JobOwnership* ownership = nullptr;  // --ownership-key-file: tags are checked
  std::map<int, JobRead> jobs;  // by attempt number; an attempt with a job but no entry was not read
  std::string jobsNote;         // why no job was read at all (no Google credentials), or ""
  std::optional<nlohmann::json> events;  // core/v1 Events about the run (any reason); nullopt: not read
  std::string eventsNote;                // why not
  Clock::time_point now;
};

// The run's identity read from `run` (metadata, the run-uids annotation, spec.adoptJob).
RunIdentity runIdentityOf(const nlohmann::json& run);

// The attempts whose jobs are worth a GET: the newest kDescribeMaxJobReads of status.attempts with a
// job name that parses as a Vertex job name, as (attempt number, job name).
std::vector<std::pair<int, std::string>> jobsToRead(const nlohmann::json& run);

// The whole description, lines ending in '\n'.
std::string describeRun(const DescribeInput& input);

}  // namespace vto::cmd
