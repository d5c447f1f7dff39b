#include "reconcilers/tenancy/accelerator_ledger.h"

#include <algorithm>
#include <cctype>

#include "crd/accelerators.h"
#include "crd/placement.h"
#include "vertex/vertex_client.h"

namespace vto::reconcilers {

namespace {
// How many waiting runs one release wakes at most (the periodic recheck covers the rest).
constexpr size_t kMaxWokenPerRelease = 64;

bool listedOrAny(const std::vector<std::string>& allowed, const std::string& value, bool ignoreCase = false) {
  if (allowed.empty()) return true;
  return std::any_of(allowed.begin(), allowed.end(), [&](const std::string& a) {
    if (!ignoreCase) return a == value;
    return a.size() == value.size() && std::equal(a.begin(), a.end(), value.begin(), [](char x, char y) {
             return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
  });
}

}  // namespace

namespace {
// The run as the placement its current attempt went to makes it (with capacity failover; else the
// run itself): what it claims, and which rules may govern that claim.
crd::TrainingRun placed(const crd::TrainingRun& run) {
  const auto& attempts = run.status.history.attempts;
  crd::TrainingRun at = run;
  if (!attempts.empty() && attempts.back().placement && *attempts.back().placement > 0) {
    try {
      at.spec = crd::specAt(run.spec, static_cast<size_t>(*attempts.back().placement));
    } catch (const crd::DecodeError&) {
      // validation reports it; the spec's own claim stands in
    }
  }
  return at;
}

std::optional<governance::AcceleratorClaim> claimAt(const crd::TrainingRun& run, const crd::TrainingRun& at) {
  const auto& status = run.status;
  if (run.spec.suspend || crd::isFinished(status.phase) || status.phase == crd::Phase::Invalid) return std::nullopt;
  const auto& attempts = status.history.attempts;
  bool holding = !attempts.empty() && !attempts.back().jobName.empty();
  if (crd::acceleratorsOf(at.spec) == 0) return std::nullopt;
  return governance::claimOf(at, holding);
}
}  // namespace

std::optional<governance::AcceleratorClaim> acceleratorClaimOf(const crd::TrainingRun& run) { return claimAt(run, placed(run)); }

std::optional<int64_t> acceleratorsOfJob(const CachedJob& job) {
  auto text = labelOf(job.labels, crd::kAcceleratorsLabel);
  if (text.empty() || text.size() > 12 || !std::all_of(text.begin(), text.end(), ::isdigit)) return std::nullopt;
  return std::stoll(text);
}

std::vector<LedgerSource> ledgerSources(const governance::TenancyRules& rules, const Location& defaults) {
  std::vector<LedgerSource> sources;
  auto orDefault = [](const std::vector<std::string>& listed, const std::string& fallback) {
    if (!listed.empty()) return listed;
    return fallback.empty() ? std::vector<std::string>{} : std::vector<std::string>{fallback};
  };
  for (size_t i = 0; i < rules.size(); ++i) {
    if (!rules[i].maxAccelerators) continue;
    for (const auto& project : orDefault(rules[i].projects, defaults.project)) {
      // Names from the operator's own config, checked again: a list request is built from them.
      if (!isProjectId(project)) continue;
      for (const auto& location : orDefault(rules[i].locations, defaults.location)) {
        if (!isVertexRegion(location)) continue;
        for (auto kind : {vertex::JobKind::Custom, vertex::JobKind::HyperparameterTuning}) {
          sources.push_back(LedgerSource{i, PollTarget{Location{project, location}, kind}});
        }
      }
    }
  }
  return sources;
}

AcceleratorLedger::AcceleratorLedger(governance::TenancyRules rules, Location defaults, JobLiveness liveness)
    : rules_(std::move(rules)), defaults_(std::move(defaults)), liveness_(std::move(liveness)) {
  capped_ = std::any_of(rules_.begin(), rules_.end(), [](const auto& rule) { return rule.maxAccelerators.has_value(); });
  sources_ = ledgerSources(rules_, defaults_);
}

std::vector<controller::ObjectKey> AcceleratorLedger::waiting() const {
  std::lock_guard lock(mutex_);
  std::vector<controller::ObjectKey> keys;
  for (const auto& [uid, entry] : runs_) {
    if (!entry.claim.holding) keys.push_back(entry.key);
  }
  return keys;
}

bool AcceleratorLedger::mayShareACap(const Entry& a, const Entry& b) const {
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (rules_[i].maxAccelerators && a.allowedBy[i] && b.allowedBy[i]) return true;
  }
  return false;
}

bool AcceleratorLedger::countsItself(const Entry& entry) const {
  if (entry.jobName.empty()) return true;               // waiting: no job yet
  if (jobs_.count(entry.jobName)) return false;         // its job is counted
  auto live = liveness_ ? liveness_(entry.jobName) : std::nullopt;
  return !live.has_value();  // not read yet: its spec's claim stands in; ended: nothing is held
}

std::vector<controller::ObjectKey> AcceleratorLedger::wakeFor(const Entry& released, const std::string& except) const {
  std::vector<const Entry*> waiting;
  for (const auto& [uid, entry] : runs_) {
    if (uid != except && !entry.claim.holding && mayShareACap(released, entry)) waiting.push_back(&entry);
  }
  std::sort(waiting.begin(), waiting.end(), [](const Entry* a, const Entry* b) { return governance::olderThan(a->claim, b->claim); });
  std::vector<controller::ObjectKey> wake;
  int64_t wanted = 0;
  for (const auto* entry : waiting) {
    if (wanted >= released.claim.accelerators || wake.size() >= kMaxWokenPerRelease) break;
    wake.push_back(entry->key);
    wanted = crd::saturatingAdd(wanted, entry->claim.accelerators);
  }
  return wake;
}

std::vector<controller::ObjectKey> AcceleratorLedger::update(const std::string& uid, const crd::TrainingRun* run) {
  if (!capped_ || uid.empty()) return {};
  std::optional<Entry> now;
  if (run != nullptr) {
    auto at = placed(*run);
    if (auto claim = claimAt(*run, at)) {
      const auto& attempts = run->status.history.attempts;
      std::string job = claim->holding ? attempts.back().jobName : "";
      // Governed as the placement it claims on: a fallback on other accelerators (or in another
      // project or region) may fall under another rule's cap than the spec's own placement.
      Entry entry{{run->metadata.namespace_, run->metadata.name}, std::move(*claim),
                  governance::rulesAllowing(at.spec, defaults_, rules_), std::move(job)};
      if (mayShareACap(entry, entry)) now = std::move(entry);  // some capped rule could govern it
    }
  }
  std::lock_guard lock(mutex_);
  // It will create nothing any more: gone, finished, suspended or invalid. (An event of its status
  // before the create still shows the placement it leaves: that keeps the reservation.)
  if (createsNoJob(run)) reservations_.erase(uid);
  auto found = runs_.find(uid);
  std::optional<Entry> before;
  if (found != runs_.end()) before = std::move(found->second);
  if (now) {
    runs_.insert_or_assign(uid, *now);
  } else if (found != runs_.end()) {
    runs_.erase(found);
  }
  // Released: what it stood in line for (it left the line), or what it held itself while its job was
  // not read yet (the run ended). A job's own end is its job event's to release; a waiting run whose
  // job now runs frees nothing.
  bool released = before && countsItself(*before) &&
                  (!now || !countsItself(*now) || (before->claim.holding && !now->claim.holding)) &&
                  !(!before->claim.holding && now && now->claim.holding);
  if (!released) return {};
  return wakeFor(*before, uid);
}

std::vector<controller::ObjectKey> AcceleratorLedger::updateJob(const std::string& name, const CachedJob* job) {
  if (!capped_) return {};
  std::optional<Entry> now;
  if (job != nullptr && !vertex::isTerminal(job->state)) {
    auto ns = labelOf(job->labels, crd::kNamespaceLabel);
    auto accelerators = acceleratorsOfJob(*job);
    std::optional<Location> where;
    try {
      where = vertex::locationOf(name);
    } catch (const std::invalid_argument&) {
    }
    if (!ns.empty() && accelerators && *accelerators > 0 && where) {
      // A job counts under a rule that allows where it runs and on what (its namespace is checked
      // with the rule's selector when claims are read).
      auto type = labelOf(job->labels, crd::kAcceleratorTypeLabel);
      std::vector<bool> allowedBy;
      for (const auto& rule : rules_) {
        allowedBy.push_back(listedOrAny(rule.projects, where->project) && listedOrAny(rule.locations, where->location) &&
                            listedOrAny(rule.acceleratorTypes, type, true));
      }
      Entry entry{{ns, "job " + name}, governance::AcceleratorClaim{ns + "/job " + name, "", *accelerators, true}, allowedBy, ""};
      if (mayShareACap(entry, entry)) now = std::move(entry);
    }
  }
  std::lock_guard lock(mutex_);
  // The job a reservation stood for is known now (running, counted above, or already ended).
  if (job != nullptr) {
    auto reserved = reservations_.find(labelOf(job->labels, crd::kRunUidLabel));
    if (reserved != reservations_.end() && labelOf(job->labels, crd::kAttemptLabel) == std::to_string(reserved->second.attempt))
      reservations_.erase(reserved);
  }
  auto found = jobs_.find(name);
  std::optional<Entry> before;
  if (found != jobs_.end()) before = std::move(found->second);
  if (now) {
    jobs_.insert_or_assign(name, *now);
  } else if (found != jobs_.end()) {
    jobs_.erase(found);
  }
  if (!before || now) return {};
  return wakeFor(*before, "");  // Vertex says it ended: its accelerators are free
}

std::vector<std::pair<size_t, governance::AcceleratorClaim>> AcceleratorLedger::claimsOtherThan(
    const std::string& uid, const NamespaceLookup& namespaceInfo) const {
  std::vector<Entry> entries;
  {
    std::lock_guard lock(mutex_);
    entries.reserve(runs_.size() + jobs_.size());
    for (const auto& [otherUid, entry] : runs_) {
      // A run with a reservation counts as that reservation (the placement it is creating on).
      if (otherUid != uid && countsItself(entry) && !reservations_.count(otherUid)) entries.push_back(entry);
    }
    for (const auto& [name, entry] : jobs_) entries.push_back(entry);
    for (const auto& [otherUid, reserved] : reservations_) {
      if (otherUid != uid) entries.push_back(reserved.entry);
    }
  }
  std::map<std::string, governance::NamespaceInfo> namespaces;
  std::vector<std::pair<size_t, governance::AcceleratorClaim>> claims;
  for (auto& entry : entries) {
    auto ns = namespaces.find(entry.key.ns);
    if (ns == namespaces.end()) ns = namespaces.emplace(entry.key.ns, namespaceInfo(entry.key.ns)).first;
    // The governing rule is the first that selects the namespace and allows the rest (decideTenancy).
    for (size_t i = 0; i < rules_.size(); ++i) {
      if (!entry.allowedBy[i] || !governance::ruleSelects(rules_[i], ns->second)) continue;
      if (rules_[i].maxAccelerators) claims.emplace_back(i, std::move(entry.claim));
      break;
    }
  }
  return claims;
}

bool AcceleratorLedger::reserve(const std::string& uid, const controller::ObjectKey& key, int attempt, size_t rule,
                                const governance::AcceleratorClaim& claim, std::vector<bool> allowedBy,
                                const NamespaceLookup& namespaceInfo) {
  if (!capped_ || rule >= rules_.size() || !rules_[rule].maxAccelerators) return true;
  std::lock_guard admission(admission_);
  std::vector<governance::AcceleratorClaim> governed;
  for (auto& [index, other] : claimsOtherThan(uid, namespaceInfo)) {
    if (index == rule) governed.push_back(std::move(other));
  }
  if (!governance::admit(claim, governed, *rules_[rule].maxAccelerators, "").admitted) return false;
  auto held = claim;
  held.holding = true;
  std::lock_guard lock(mutex_);
  reservations_.insert_or_assign(uid, Reservation{Entry{key, std::move(held), std::move(allowedBy), ""}, attempt});
  return true;
}

void AcceleratorLedger::release(const std::string& uid) {
  std::lock_guard lock(mutex_);
  reservations_.erase(uid);
}

size_t AcceleratorLedger::size() const {
  std::lock_guard lock(mutex_);
  return runs_.size() + jobs_.size();
}

bool createsNoJob(const crd::TrainingRun* run) {
  return run == nullptr || run->spec.suspend || crd::isFinished(run->status.phase) || run->status.phase == crd::Phase::Invalid;
}

}  // namespace vto::reconcilers
