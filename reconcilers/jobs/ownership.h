#pragma once
// Which Vertex jobs are this operator's. Labels alone cannot say: anyone who may create a Vertex job
// in a project may copy vto's labels (a victim's vto-run-uid and next vto-attempt, a team's vto-team,
// a vto-accelerators of 1000), and two clusters sharing a project write the same labels. So every job
// vto creates carries two more labels:
// - `vto-cluster=<cluster id>`: which operator instance made it (default: the kube-system namespace's
//   uid); jobs of another cluster are never counted, adopted, read or cancelled;
// - `vto-owner=<tag>`: an HMAC-SHA256, under a key only the operator holds (a Secret the chart
//   creates), of the cluster and of every label that decides what the job counts for (run uid,
//   attempt, namespace, name, team, accelerators and their type). Copying a real job's labels
//   gives a job that claims exactly what that job claims: it cannot hold another run's next attempt,
//   another team's budget or more accelerators.
// Jobs with neither label were made by the release before: they are trusted only when created
// before the key was issued (`trustUntaggedJobsCreatedBefore`), so an upgrade loses none and nobody
// can make one later. With no key configured, the tag is neither written nor checked (the operator
// warns at start) and the cluster label alone scopes the jobs.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"

namespace vto::reconcilers {

inline constexpr const char* kClusterLabel = "vto-cluster";
inline constexpr const char* kOwnerTagLabel = "vto-owner";

enum class JobOwner {
  Ours,          // this cluster's, its tag verified (or no key configured)
  Legacy,        // no cluster label and no tag, created before the key was issued: the release before
  OtherCluster,  // another operator instance's (its vto-cluster names another id)
  Forged,        // claims to be ours (our cluster, or vto's labels without one) and is not
};

// What a job's owner check saw, for a Warning and a log line.
std::string_view describe(JobOwner owner);

struct OwnershipKeys {
  std::vector<std::string> keys;  // the first signs; every one verifies (rotation)
  std::optional<Clock::time_point> trustUntaggedJobsCreatedBefore;
};

// The ownership keys file (`vto run --ownership-key-file`):
//   keys: ["<secret>", "<previous secret>"]
//   trustUntaggedJobsCreatedBefore: "2026-12-07T01:00:00Z"
// Throws std::invalid_argument naming what is wrong (a key shorter than 32 bytes, no keys, a bad time).
OwnershipKeys parseOwnershipKeys(const std::string& yaml);

// A job's label `key`, or "" when it has none: the one way jobs/ and tenancy/ read a job's labels.
std::string labelOf(const std::map<std::string, std::string>& labels, const char* key);

// Whether a job this operator made is the run's (namespace, name, uid): made for it (its vto-run-uid),
// or for an earlier run of the same namespace and name, which this one took over (a re-apply into a
// rebuilt cluster, a restore without status; the run's status records the adopted job).
bool isTheRunsJob(const std::map<std::string, std::string>& labels, const std::string& ns, const std::string& name,
                  const std::string& uid);

class JobOwnership {
 public:
  // `clusterId` must be a valid Google Cloud label value (lowercase letters, digits, '_', '-').
  JobOwnership(std::string clusterId, OwnershipKeys keys);

  const std::string& clusterId() const { return clusterId_; }
  bool signs() const { return !keys_.keys.empty(); }

  // Adds vto-cluster and vto-owner to a job's labels, after every other label is set.
  void sign(std::map<std::string, std::string>& labels) const;
  // Who made a job with these labels (created at `createTime`, when known).
  JobOwner ownerOf(const std::map<std::string, std::string>& labels,
                   std::optional<Clock::time_point> createTime) const;
  bool trusts(const std::map<std::string, std::string>& labels, std::optional<Clock::time_point> createTime) const {
    auto owner = ownerOf(labels, createTime);
    return owner == JobOwner::Ours || owner == JobOwner::Legacy;
  }

 private:
  std::string tagOf(const std::string& key, const std::map<std::string, std::string>& labels) const;
  std::string clusterId_;
  OwnershipKeys keys_;
};

}  // namespace vto::reconcilers
