#include "reconcilers/tenancy/budget_ledger.h"

#include <algorithm>
#include <exception>

#include "base/json_fields.h"
#include "base/rfc3339.h"
#include "governance/budget.h"
#include "governance/cost.h"
#include "vertex/json_codec.h"

namespace vto::reconcilers {

BudgetLedger::BudgetLedger(vertex::VertexClient& vertex, const Clock& clock, const governance::TenancyRules& rules,
                           const governance::PriceCatalog& prices, std::vector<std::string> defaultLocations,
                           const JobOwnership* ownership, Observer observer)
    : vertex_(vertex),
      clock_(clock),
      rules_(rules),
      prices_(prices),
      defaultLocations_(std::move(defaultLocations)),
      ownership_(ownership),
      observer_(std::move(observer)) {}

void BudgetLedger::refresh() {
  auto now = clock_.now();
  auto month = governance::budgetMonth(now);
  // Which budget rules read each place: a place is listed once per refresh whatever number of rules
  // share it, and its jobs go to the rule their vto-team label names.
  std::map<std::pair<std::string, std::string>, std::map<std::string, size_t>> places;  // -> team -> rule
  std::map<size_t, RuleSpend> fresh;
  std::map<size_t, std::vector<std::string>> listed;
  std::map<size_t, std::string> failed;
  for (size_t i = 0; i < rules_.size(); ++i) {
    const auto& rule = rules_[i];
    if (!rule.budget || rule.name.empty()) continue;
    fresh[i].month = month;
    for (const auto& project : rule.projects)
      for (const auto& location : rule.locations.empty() ? defaultLocations_ : rule.locations)
        places[{project, location}][rule.name] = i;
  }
  for (const auto& [where, teams] : places) {
    Location place{where.first, where.second};
    // A job created in an earlier month can only end: once a month's first list finds none unfinished,
    // none will be until next month.
    auto& earlier = earlier_[where.first + "/" + where.second];
    bool listEarlier = earlier.month != month || earlier.unfinished;
    bool earlierUnfinished = false;
    auto team = teams.size() == 1 ? labelIs(kTeamLabel, teams.begin()->first) : hasLabel(kTeamLabel);
    std::map<size_t, RuleSpend> here;  // counted only if the whole place was read
    std::map<size_t, std::vector<std::string>> names;
    auto count = [&](const vertex::Job& job, const governance::JobPricing& pricing, bool thisMonth) {
      auto rule = teams.find(labelOf(job.labels, kTeamLabel));
      if (rule == teams.end()) return;  // a team without a budget here, or another cluster's
      // Vertex filters by creation and state already; each job is counted by one of the lists.
      bool createdThisMonth = !job.createTime || governance::budgetMonth(*job.createTime) == month;
      if (createdThisMonth != thisMonth) return;
      if (!thisMonth && vertex::isTerminal(job.state)) return;
      auto& spend = here[rule->second];
      names[rule->second].push_back(job.name);
      earlierUnfinished = earlierUnfinished || !thisMonth;
      if (!pricing.cost) {
        spend.unpriced.push_back(job.name);
        return;
      }
      if (thisMonth) spend.spent += pricing.cost->spent;
      if (!vertex::isTerminal(job.state)) {
        spend.committed += pricing.cost->worstRemaining;
        ++spend.unfinishedJobs;
      }
    };
    try {
      for (auto kind : {vertex::JobKind::Custom, vertex::JobKind::HyperparameterTuning}) {
        // This month's jobs, then the unfinished jobs of earlier months (what they may still spend).
        readJobSpend(vertex_, place, kind, team + " AND " + createdInMonth(month, false), ownership_, prices_, now,
                     [&](const vertex::Job& job, const governance::JobPricing& pricing) { count(job, pricing, true); });
        if (listEarlier)
          readJobSpend(vertex_, place, kind, team + " AND " + unfinished(), ownership_, prices_, now,
                       [&](const vertex::Job& job, const governance::JobPricing& pricing) { count(job, pricing, false); });
      }
    } catch (const std::exception& e) {
      for (const auto& [name, rule] : teams) failed.emplace(rule, e.what());
      continue;
    }
    if (listEarlier) earlier = Earlier{month, earlierUnfinished};
    for (auto& [rule, spend] : here) {
      auto& total = fresh[rule];
      total.spent += spend.spent;
      total.committed += spend.committed;
      total.unfinishedJobs += spend.unfinishedJobs;
      total.unpriced.insert(total.unpriced.end(), spend.unpriced.begin(), spend.unpriced.end());
      auto& all = listed[rule];
      all.insert(all.end(), names[rule].begin(), names[rule].end());
    }
  }
  for (auto& [i, spend] : fresh) {
    RuleSpend told;
    {
      std::lock_guard lock(mutex_);
      auto& held = spend_[i];
      if (auto error = failed.find(i); error != failed.end()) {
        held.error = error->second;  // the last known figures
        ++held.generation;
      } else {
        spend.generation = held.generation + 1;
        held = spend;
        auto& noted = noted_[i];
        for (const auto& name : listed[i]) noted.erase(name);
      }
      told = held;
    }
    if (observer_) observer_(rules_[i], told);
  }
}

std::unique_ptr<controller::PollingSource> budgetRefreshSource(BudgetLedger& ledger, const Clock& clock,
                                                               Clock::duration interval) {
  return std::make_unique<controller::PollingSource>(
      clock, [] { return std::vector<std::string>{"budgets"}; },
      [&ledger, interval](const std::string&) {
        ledger.refresh();  // never throws: a failed read keeps the last figures until the next
        return interval;
      });
}

std::optional<RuleSpend> BudgetLedger::spendOf(size_t ruleIndex, const std::string& exceptHoldOf) const {
  std::lock_guard lock(mutex_);
  auto found = spend_.find(ruleIndex);
  if (found == spend_.end()) return std::nullopt;
  RuleSpend spend = found->second;
  for (const auto* extra : {&noted_, &held_})
    if (auto found = extra->find(ruleIndex); found != extra->end())
      for (const auto& [key, reserved] : found->second) {
        if (extra == &held_ && !exceptHoldOf.empty() && key == exceptHoldOf) continue;
        spend.committed += reserved;
        ++spend.unfinishedJobs;
      }
  return spend;
}

bool BudgetLedger::reserve(size_t ruleIndex, uint64_t seenGeneration, const std::string& uid, Usd usd,
                           bool unconditionally) {
  std::lock_guard lock(mutex_);
  auto& spend = spend_[ruleIndex];
  if (!unconditionally && spend.generation != seenGeneration) return false;
  for (auto& [rule, holds] : held_) {
    if (rule != ruleIndex && holds.erase(uid) > 0) ++spend_[rule].generation;
  }
  held_[ruleIndex][uid] = usd;
  ++spend.generation;
  return true;
}

void BudgetLedger::release(size_t ruleIndex, const std::string& uid) {
  std::lock_guard lock(mutex_);
  if (held_[ruleIndex].erase(uid) > 0) ++spend_[ruleIndex].generation;
}

void BudgetLedger::noteCreated(size_t ruleIndex, const std::string& uid, const std::string& jobName, Usd reserved) {
  std::lock_guard lock(mutex_);
  held_[ruleIndex].erase(uid);
  noted_[ruleIndex][jobName] = reserved;
  ++spend_[ruleIndex].generation;
}

void BudgetLedger::jobSeen(const std::string& runUid, const std::string& jobName) {
  std::lock_guard lock(mutex_);
  for (auto& [rule, holds] : held_) {
    auto hold = holds.find(runUid);
    if (hold == holds.end()) continue;
    noted_[rule][jobName] = hold->second;
    holds.erase(hold);
    ++spend_[rule].generation;
  }
}

void BudgetLedger::forgetRun(const std::string& uid) {
  std::lock_guard lock(mutex_);
  for (auto& [rule, holds] : held_) {
    if (holds.erase(uid) > 0) ++spend_[rule].generation;
  }
}

}  // namespace vto::reconcilers
