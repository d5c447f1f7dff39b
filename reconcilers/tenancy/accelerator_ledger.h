#pragma once
// The runs that hold or wait for accelerators under a tenant's cap (tenancy `maxAccelerators`), kept
// current by the TrainingRun informer's events. Admitting a run reads only these claims, never the
// whole cache: decoding every cached run on each pass made submitting a capped fleet cost O(runs²).
// A run is kept only while it claims accelerators (not finished, suspended or invalid) and a capped
// rule could govern it, as a few dozen bytes beside its cached object.
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
#include "crd/tenancy.h"
#include "crd/training_run.h"

namespace vto::reconcilers {

// Whether a run counts against an accelerator cap: it holds accelerators (a job is recorded and the
// run is not finished), or waits for them (not finished, suspended or invalid).
std::optional<crd::AcceleratorClaim> acceleratorClaimOf(const crd::TrainingRun& run);

class AcceleratorLedger {
 public:
  AcceleratorLedger(crd::TenancyRules rules, Location defaults);

  // Whether any rule caps accelerators; when none does, the ledger keeps nothing.
  bool capped() const { return capped_; }

  // A watch event for the run with `uid`: `run` is its decoded state, or null when it is gone (or
  // does not decode: an Invalid run claims nothing). Returns the runs to reconcile now because
  // accelerators they wait for were released (a run finished, was suspended or deleted, or left the
  // line): the oldest waiting runs that a rule of the released run's could also govern, until what
  // they want covers what was freed. A younger run behind them could not start anyway (first created,
  // first served); the periodic recheck remains the safety net.
  std::vector<controller::ObjectKey> update(const std::string& uid, const crd::TrainingRun* run);

  // Every claim but `uid`'s, each with the index of the capped rule that governs it. `namespaceInfo`
  // is asked once per namespace (for its labels, when a rule selects by them), outside the lock.
  using NamespaceLookup = std::function<crd::NamespaceInfo(const std::string& ns)>;
  std::vector<std::pair<size_t, crd::AcceleratorClaim>> claimsOtherThan(const std::string& uid,
                                                                      const NamespaceLookup& namespaceInfo) const;

  size_t size() const;

 private:
  struct Entry {
    controller::ObjectKey key;
    crd::AcceleratorClaim claim;
    std::vector<bool> allowedBy;  // crd::rulesAllowing: which rules' fields allow the spec
  };
  // Whether some capped rule allows both entries' specs (their namespaces aside).
  bool mayShareACap(const Entry& a, const Entry& b) const;

  crd::TenancyRules rules_;
  Location defaults_;
  bool capped_ = false;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> byUid_;
};

}  // namespace vto::reconcilers
