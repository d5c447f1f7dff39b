#include "reconcilers/tenancy/accelerator_ledger.h"

#include <algorithm>

#include "crd/placement.h"


namespace vto::reconcilers {

namespace {
// How many waiting runs one release wakes at most (the periodic recheck covers the rest).
constexpr size_t kMaxWokenPerRelease = 64;
}  // namespace

std::optional<crd::AcceleratorClaim> acceleratorClaimOf(const crd::TrainingRun& run) {
  const auto& status = run.status;
  if (run.spec.suspend || crd::isFinished(status.phase) || status.phase == crd::Phase::Invalid) return std::nullopt;
  if (crd::acceleratorsOf(run.spec) == 0) return std::nullopt;
  const auto& attempts = status.history.attempts;
  bool holding = !attempts.empty() && !attempts.back().jobName.empty();
  // With capacity failover, what the placement the attempt went to asks for.
  if (!attempts.empty() && attempts.back().placement && *attempts.back().placement > 0) {
    crd::TrainingRun at = run;
    try {
      at.spec = crd::specAt(run.spec, static_cast<size_t>(*attempts.back().placement));
    } catch (const crd::DecodeError&) {
      return crd::claimOf(run, holding);  // validation reports it; the spec's own claim stands in
    }
    return crd::claimOf(at, holding);
  }
  return crd::claimOf(run, holding);
}

AcceleratorLedger::AcceleratorLedger(crd::TenancyRules rules, Location defaults)
    : rules_(std::move(rules)), defaults_(std::move(defaults)) {
  capped_ = std::any_of(rules_.begin(), rules_.end(), [](const auto& rule) { return rule.maxAccelerators.has_value(); });
}

bool AcceleratorLedger::mayShareACap(const Entry& a, const Entry& b) const {
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (rules_[i].maxAccelerators && a.allowedBy[i] && b.allowedBy[i]) return true;
  }
  return false;
}

std::vector<controller::ObjectKey> AcceleratorLedger::update(const std::string& uid, const crd::TrainingRun* run) {
  if (!capped_ || uid.empty()) return {};
  std::optional<Entry> now;
  if (run != nullptr) {
    if (auto claim = acceleratorClaimOf(*run)) {
      Entry entry{{run->metadata.namespace_, run->metadata.name}, std::move(*claim),
                  crd::rulesAllowing(run->spec, defaults_, rules_)};
      if (mayShareACap(entry, entry)) now = std::move(entry);  // some capped rule could govern it
    }
  }
  std::lock_guard lock(mutex_);
  auto found = byUid_.find(uid);
  std::optional<Entry> before;
  if (found != byUid_.end()) before = std::move(found->second);
  if (now) {
    byUid_.insert_or_assign(uid, *now);
  } else if (found != byUid_.end()) {
    byUid_.erase(found);
  }
  // Released: what it held (or, waiting, what it stood in line for) is free for the runs behind it.
  bool released = before && (!now || (before->claim.holding && !now->claim.holding));
  if (!released) return {};

  std::vector<const Entry*> waiting;
  for (const auto& [otherUid, entry] : byUid_) {
    if (otherUid != uid && !entry.claim.holding && mayShareACap(*before, entry)) waiting.push_back(&entry);
  }
  std::sort(waiting.begin(), waiting.end(),
            [](const Entry* a, const Entry* b) { return crd::olderThan(a->claim, b->claim); });
  std::vector<controller::ObjectKey> wake;
  int64_t wanted = 0;
  for (const auto* entry : waiting) {
    if (wanted >= before->claim.accelerators || wake.size() >= kMaxWokenPerRelease) break;
    wake.push_back(entry->key);
    wanted += entry->claim.accelerators;
  }
  return wake;
}

std::vector<std::pair<size_t, crd::AcceleratorClaim>> AcceleratorLedger::claimsOtherThan(
    const std::string& uid, const NamespaceLookup& namespaceInfo) const {
  std::vector<Entry> entries;
  {
    std::lock_guard lock(mutex_);
    entries.reserve(byUid_.size());
    for (const auto& [otherUid, entry] : byUid_) {
      if (otherUid != uid) entries.push_back(entry);
    }
  }
  std::map<std::string, crd::NamespaceInfo> namespaces;
  std::vector<std::pair<size_t, crd::AcceleratorClaim>> claims;
  for (auto& entry : entries) {
    auto ns = namespaces.find(entry.key.ns);
    if (ns == namespaces.end()) ns = namespaces.emplace(entry.key.ns, namespaceInfo(entry.key.ns)).first;
    // The governing rule is the first that selects the namespace and allows the spec (decideTenancy).
    for (size_t i = 0; i < rules_.size(); ++i) {
      if (!entry.allowedBy[i] || !crd::ruleSelects(rules_[i], ns->second)) continue;
      if (rules_[i].maxAccelerators) claims.emplace_back(i, std::move(entry.claim));
      break;
    }
  }
  return claims;
}

size_t AcceleratorLedger::size() const {
  std::lock_guard lock(mutex_);
  return byUid_.size();
}

}  // namespace vto::reconcilers
