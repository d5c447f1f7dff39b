#pragma once
// What counts against a tenant's accelerator cap (tenancy `maxAccelerators`): what Vertex holds for
// the namespace, and who waits in line. Kept current by events, never by a scan per pass:
// - every unfinished job vto made (the JobCache's, fed by the poller) holds the accelerators its
//   labels say it asked for (`vto-accelerators`), for its `vto-namespace`, until Vertex says it ended:
//   whatever became of its run (deleted with deletionPolicy Orphan, edited into Invalid, suspended
//   while its job still cancels, its spec shrunk);
// - a run that wants accelerators and has no job running waits in line (first created, first served);
// - a run whose job is not in the JobCache yet (just after a start) holds what its spec asks for.
// Admitting a run reads only these claims: decoding every cached run on each pass made submitting a
// capped fleet cost O(runs²). Only what a capped rule could govern is kept.
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "controller/object_key.h"
#include "crd/render.h"
#include "crd/training_run.h"
#include "governance/tenancy.h"
#include "reconcilers/jobs/job_cache.h"
#include "reconcilers/jobs/poll_targets.h"

namespace vto::reconcilers {

// What a run claims when it has no job counted for it: what its spec (on the placement its attempt
// went to) asks for, waiting (no job recorded) or holding (a recorded job not known to Vertex yet).
// None when it wants no accelerators or is finished, suspended or invalid.
std::optional<governance::AcceleratorClaim> acceleratorClaimOf(const crd::TrainingRun& run);

// The accelerators a job holds, from the labels vto gave it at creation (crd::jobLabels); nullopt
// for a job without them (made by an older vto: its run's claim stands in).
std::optional<int64_t> acceleratorsOfJob(const CachedJob& job);

// Where vto lists its unfinished jobs once after a start, so that a capped rule's count includes jobs
// no live run follows any more (a run deleted with deletionPolicy Orphan, then a restart): the
// JobCache, and so the ledger, learns of a job only from a poll of its (project, location, kind),
// and a run polls only where its own job is. For each capped rule: its projects (open: the
// operator's default project) x its locations (open: the default location) x both job kinds. A rule
// left open where no default fills in names no place: its cap then counts the jobs live runs follow,
// and the jobs in the defaults' place.
struct LedgerSource {
  size_t rule = 0;  // the capped rule whose count needs this list
  PollTarget target;
  bool operator==(const LedgerSource&) const = default;
};
std::vector<LedgerSource> ledgerSources(const governance::TenancyRules& rules, const Location& defaults);

// Whether a run, as its latest event shows it (nullptr: gone), will create no job: gone, suspended,
// finished or invalid. What it reserved of a cap or a budget is then free.
bool createsNoJob(const crd::TrainingRun* run);

class AcceleratorLedger {
 public:
  // Whether Vertex says job `name` still runs: true, false (it ended), or nullopt when vto has not
  // read it yet. The JobCache answers.
  using JobLiveness = std::function<std::optional<bool>(const std::string& name)>;
  AcceleratorLedger(governance::TenancyRules rules, Location defaults, JobLiveness liveness = {});

  // Whether any rule caps accelerators; when none does, the ledger keeps nothing.
  bool capped() const { return capped_; }

  // A watch event for the run with `uid`: `run` is its decoded state, or null when it is gone (or
  // does not decode). A job event: `job` as the JobCache now holds it, or null when it is gone.
  // Each returns the runs to reconcile now because accelerators they wait for were released (a job
  // ended, a waiting run left the line): the oldest waiting runs that a rule of the released claim's
  // could also govern, until what they want covers what was freed. A younger run behind them could
  // not start anyway (first created, first served); the periodic recheck remains the safety net.
  std::vector<controller::ObjectKey> update(const std::string& uid, const crd::TrainingRun* run);
  std::vector<controller::ObjectKey> updateJob(const std::string& name, const CachedJob* job);

  // Every claim but run `uid`'s, each with the index of the capped rule that governs it. `namespaceInfo`
  // is asked once per namespace (for its labels, when a rule selects by them), outside the lock.
  using NamespaceLookup = std::function<governance::NamespaceInfo(const std::string& ns)>;
  std::vector<std::pair<size_t, governance::AcceleratorClaim>> claimsOtherThan(const std::string& uid,
                                                                      const NamespaceLookup& namespaceInfo) const;

  // Takes room for run `uid`'s job of `attempt`, on a placement governed by capped rule `rule`, if
  // `claim` is still admitted there with every other claim and reservation counted: admissions are
  // decided unlocked (two runs failing over at once both saw the same room), so act reserves under
  // one lock before it creates. The reservation counts as held until the job is in the JobCache
  // (updateJob sees a job of that run and attempt), `release(uid)`, or the run no longer claims.
  // A create whose answer was lost keeps it: the job may exist, and the next pass adopts it.
  bool reserve(const std::string& uid, const controller::ObjectKey& key, int attempt, size_t rule,
               const governance::AcceleratorClaim& claim, std::vector<bool> allowedBy, const NamespaceLookup& namespaceInfo);
  void release(const std::string& uid);

  size_t size() const;

  // Where the jobs must have been listed since the start before a capped rule's count holds them all
  // (ledgerSources of the ledger's rules and defaults).
  const std::vector<LedgerSource>& sources() const { return sources_; }
  // The runs waiting in line: when a source's first list completes, they look again.
  std::vector<controller::ObjectKey> waiting() const;

 private:
  struct Entry {
    controller::ObjectKey key;  // the run; for a job, its namespace and "job <name>"
    governance::AcceleratorClaim claim;
    std::vector<bool> allowedBy;  // which rules' fields other than the namespace allow it
    std::string jobName;          // a run's recorded job: while that job is counted, the run is not
  };
  // Whether some capped rule allows both entries (their namespaces aside).
  bool mayShareACap(const Entry& a, const Entry& b) const;
  // The oldest waiting runs that could use what `released` held (with mutex_ held).
  std::vector<controller::ObjectKey> wakeFor(const Entry& released, const std::string& except) const;
  // Whether run entry `entry` is counted itself (its job is not: not read yet).
  bool countsItself(const Entry& entry) const;

  governance::TenancyRules rules_;
  Location defaults_;
  JobLiveness liveness_;
  bool capped_ = false;
  std::vector<LedgerSource> sources_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> runs_;  // by run uid
  std::map<std::string, Entry> jobs_;  // by job name, while Vertex runs it
  struct Reservation {
    Entry entry;
    int attempt = 0;
  };
  std::map<std::string, Reservation> reservations_;  // by run uid, from reserve until its job is counted
  std::mutex admission_;  // serialises reserve(): each sees every reservation made before it
};

}  // namespace vto::reconcilers
