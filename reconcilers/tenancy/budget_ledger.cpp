#include "reconcilers/tenancy/budget_ledger.h"

#include <algorithm>
#include <exception>

#include "base/json_fields.h"
#include "base/rfc3339.h"
#include "crd/budget.h"
#include "crd/cost.h"
#include "crd/render.h"

namespace vto::reconcilers {
namespace {

// "2026-12" -> 2026-12-01T00:00:00Z, for the list's create_time filter.
std::string monthStart(const std::string& month) { return month + "-01T00:00:00Z"; }

}  // namespace

JobCostReading costOfJob(const vertex::Job& job, const crd::PriceCatalog& prices, Clock::time_point now) {
  JobCostReading out;
  const auto& raw = job.raw;
  const nlohmann::json* spec = nullptr;
  double parallel = 1;
  if (auto trial = raw.find("trialJobSpec"); trial != raw.end()) {
    spec = &*trial;
  } else if (auto custom = raw.find("jobSpec"); custom != raw.end()) {
    spec = &*custom;
  }
  if (spec == nullptr || !spec->is_object()) return out;
  std::string location;
  try {
    location = vertex::locationOf(job.name).location;
  } catch (const std::exception&) {
    return out;
  }
  auto pools = crd::poolsOfWorkerPools(spec->value("workerPoolSpecs", nlohmann::json::array()));
  auto pricing = crd::priceOf(prices, pools, location, crd::strategyOfJob(spec->value("scheduling", nlohmann::json())));
  if (!pricing.rate) return out;
  const auto& rate = *pricing.rate;
  // A job Vertex has not started yet (QUEUED, PENDING) will run: it counts as running for the next
  // hour, or the room it takes would look free until it starts.
  bool unfinished = !vertex::isTerminal(job.state);
  if (raw.contains("trialJobSpec")) parallel = std::max<double>(1, raw.value("parallelTrialCount", 1));
  double usd = 0;
  if (auto trials = raw.find("trials"); trials != raw.end() && trials->is_array() && !trials->empty()) {
    int runningTrials = 0;
    for (const auto& trial : *trials) {
      if (!trial.is_object()) continue;
      auto start = timeField(trial, "startTime");
      if (!start) continue;
      auto end = timeField(trial, "endTime");
      auto until = end ? *end : job.endTime ? *job.endTime : now;
      usd += crd::usageOf(rate, until - *start).usd;
      if (!end && unfinished) ++runningTrials;
    }
    // Between trials a tuning job still starts the next ones, as many at once as it may run.
    if (unfinished) out.hourlyUsd = rate.usd * std::max<double>(runningTrials, parallel);
  } else {
    if (job.startTime) {
      auto until = job.endTime ? *job.endTime : now;
      usd = crd::usageOf(rate, until - *job.startTime).usd * parallel;
    }
    if (unfinished) out.hourlyUsd = rate.usd * parallel;
  }
  out.usd = usd;
  return out;
}

BudgetLedger::BudgetLedger(vertex::VertexClient& vertex, const Clock& clock, const crd::TenancyRules& rules,
                           const crd::PriceCatalog& prices, std::vector<std::string> defaultLocations,
                           const JobOwnership* ownership)
    : vertex_(vertex),
      clock_(clock),
      rules_(rules),
      prices_(prices),
      defaultLocations_(std::move(defaultLocations)),
      ownership_(ownership) {}

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
    try {
      for (const auto& project : rule.projects) {
        for (const auto& location : locations) {
          for (auto kind : {vertex::JobKind::Custom, vertex::JobKind::HyperparameterTuning}) {
            vertex::ListOptions options;
            options.filter = std::string("labels.") + kTeamLabel + "=\"" + rule.name + "\" AND create_time>=\"" +
                             monthStart(month) + "\"";
            options.pageSize = 100;
            do {
              auto page = vertex_.listJobs(Location{project, location}, kind, options);
              for (const auto& job : page.jobs) {
                // Vertex filters by creation already; a job from another month is not this month's spend.
                if (job.createTime && crd::budgetMonth(*job.createTime) != month) continue;
                // Anyone can label a job vto-team; another cluster's jobs are its own budget's.
                if (ownership_ != nullptr && !ownership_->trusts(job.labels, job.createTime)) continue;
                listed.push_back(job.name);
                auto cost = costOfJob(job, prices_, now);
                if (!cost.usd) {
                  spend.unpriced.push_back(job.name);
                  continue;
                }
                spend.spentUsd += *cost.usd;
                spend.runningHourlyUsd += cost.hourlyUsd;
              }
              options.pageToken = page.nextPageToken;
            } while (!options.pageToken.empty());
          }
        }
      }
    } catch (const std::exception& e) {
      std::lock_guard lock(mutex_);
      auto& held = spend_[i];
      held.error = e.what();
      ++held.generation;
      continue;
    }
    std::lock_guard lock(mutex_);
    spend.generation = spend_[i].generation + 1;
    spend_[i] = spend;
    auto& noted = noted_[i];
    for (const auto& name : listed) noted.erase(name);
  }
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
        spend.spentUsd += reserved.usd;
        spend.runningHourlyUsd += reserved.hourlyUsd;
      }
  return spend;
}

bool BudgetLedger::reserve(size_t ruleIndex, uint64_t seenGeneration, const std::string& uid, double usd,
                           double hourlyUsd, bool unconditionally) {
  std::lock_guard lock(mutex_);
  auto& spend = spend_[ruleIndex];
  if (!unconditionally && spend.generation != seenGeneration) return false;
  for (auto& [rule, holds] : held_) {
    if (rule != ruleIndex && holds.erase(uid) > 0) ++spend_[rule].generation;
  }
  held_[ruleIndex][uid] = {usd, hourlyUsd};
  ++spend.generation;
  return true;
}

void BudgetLedger::release(size_t ruleIndex, const std::string& uid) {
  std::lock_guard lock(mutex_);
  if (held_[ruleIndex].erase(uid) > 0) ++spend_[ruleIndex].generation;
}

void BudgetLedger::noteCreated(size_t ruleIndex, const std::string& uid, const std::string& jobName, double reservedUsd,
                               double hourlyUsd) {
  std::lock_guard lock(mutex_);
  held_[ruleIndex].erase(uid);
  noted_[ruleIndex][jobName] = {reservedUsd, hourlyUsd};
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
