#include "reconcilers/tenancy/budget_ledger.h"

#include <algorithm>
#include <exception>

#include "base/json_fields.h"
#include "base/rfc3339.h"
#include "crd/budget.h"
#include "crd/cost.h"
#include "reconcilers/jobs/job_cache.h"
#include "vertex/json_codec.h"
#include "crd/render.h"

namespace vto::reconcilers {
namespace {

// "2026-12" -> 2026-12-01T00:00:00Z, for the list's create_time filter.
std::string monthStart(const std::string& month) { return month + "-01T00:00:00Z"; }

// The jobs of a rule's name whatever their month that have not ended (terminal states excluded).
std::string unfinishedFilter(const std::string& team) {
  std::string filter = std::string("labels.") + kTeamLabel + "=\"" + team + "\"";
  for (const char* state : {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED",
                            "JOB_STATE_PARTIALLY_SUCCEEDED"})
    filter += std::string(" AND state!=\"") + state + "\"";
  return filter;
}

}  // namespace

crd::JobPricing costOfJob(const vertex::Job& job, const crd::PriceCatalog& prices, Clock::time_point now) {
  std::string location;
  try {
    location = vertex::locationOf(job.name).location;
  } catch (const std::exception& e) {
    return {std::nullopt, std::string("a location (") + e.what() + ")"};
  }
  return crd::priceJob(prices, crd::shapeOfJob(job.raw, location), timesOf(cachedJobOf(job, now)), now);
}

BudgetLedger::BudgetLedger(vertex::VertexClient& vertex, const Clock& clock, const crd::TenancyRules& rules,
                           const crd::PriceCatalog& prices, std::vector<std::string> defaultLocations,
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
  auto month = crd::budgetMonth(now);
  for (size_t i = 0; i < rules_.size(); ++i) {
    const auto& rule = rules_[i];
    if (!rule.budget || rule.name.empty()) continue;
    RuleSpend spend;
    spend.month = month;
    std::vector<std::string> listed;
    const auto& locations = rule.locations.empty() ? defaultLocations_ : rule.locations;
    // A job created in an earlier month can only end: once a month's first list finds none unfinished,
    // none will be until next month.
    auto& earlier = earlier_[i];
    bool listEarlier = earlier.month != month || earlier.unfinished;
    bool earlierUnfinished = false;
    auto count = [&](const vertex::Job& job, bool thisMonth) {
      listed.push_back(job.name);
      earlierUnfinished = earlierUnfinished || !thisMonth;
      auto cost = costOfJob(job, prices_, now).cost;
      if (!cost) {
        spend.unpriced.push_back(job.name);
        return;
      }
      if (thisMonth) spend.spent += cost->spent;
      if (!vertex::isTerminal(job.state)) {
        spend.committed += cost->worstRemaining;
        ++spend.unfinishedJobs;
      }
    };
    try {
      for (const auto& project : rule.projects) {
        for (const auto& location : locations) {
          for (auto kind : {vertex::JobKind::Custom, vertex::JobKind::HyperparameterTuning}) {
            // This month's jobs, then the unfinished jobs of earlier months (what they may still spend).
            for (bool thisMonth : {true, false}) {
              if (!thisMonth && !listEarlier) continue;
              vertex::ListOptions options;
              options.filter = thisMonth ? std::string("labels.") + kTeamLabel + "=\"" + rule.name +
                                               "\" AND create_time>=\"" + monthStart(month) + "\""
                                         : unfinishedFilter(rule.name);
              options.pageSize = 100;
              do {
                auto page = vertex_.listJobs(Location{project, location}, kind, options);
                for (const auto& job : page.jobs) {
                  // Vertex filters by creation and state already; each job is counted by one of the lists.
                  bool createdThisMonth = !job.createTime || crd::budgetMonth(*job.createTime) == month;
                  if (createdThisMonth != thisMonth) continue;
                  if (!thisMonth && vertex::isTerminal(job.state)) continue;
                  // Anyone can label a job vto-team; another cluster's jobs are its own budget's.
                  if (ownership_ != nullptr && !ownership_->trusts(job.labels, job.createTime)) continue;
                  count(job, thisMonth);
                }
                options.pageToken = page.nextPageToken;
              } while (!options.pageToken.empty());
            }
          }
        }
      }
    } catch (const std::exception& e) {
      RuleSpend last;
      {
        std::lock_guard lock(mutex_);
        auto& held = spend_[i];
        held.error = e.what();
        ++held.generation;
        last = held;
      }
      if (observer_) observer_(rule, last);  // the last known figures
      continue;
    }
    if (listEarlier) earlier = Earlier{month, earlierUnfinished};
    {
      std::lock_guard lock(mutex_);
      spend.generation = spend_[i].generation + 1;
      spend_[i] = spend;
      auto& noted = noted_[i];
      for (const auto& name : listed) noted.erase(name);
    }
    if (observer_) observer_(rule, spend);
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

bool BudgetLedger::reserve(size_t ruleIndex, uint64_t seenGeneration, const std::string& uid, crd::Usd usd,
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

void BudgetLedger::noteCreated(size_t ruleIndex, const std::string& uid, const std::string& jobName, crd::Usd reserved) {
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
