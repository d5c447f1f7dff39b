#include "reconcilers/tenancy/budget_ledger.h"

#include <algorithm>
#include <exception>

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
  bool running = job.startTime && !vertex::isTerminal(job.state);
  double usd = 0;
  if (auto trials = raw.find("trials"); trials != raw.end() && trials->is_array() && !trials->empty()) {
    int runningTrials = 0;
    for (const auto& trial : *trials) {
      if (!trial.is_object()) continue;
      auto start = parseRfc3339OrNone(trial.value("startTime", ""));
      if (!start) continue;
      auto end = parseRfc3339OrNone(trial.value("endTime", ""));
      auto until = end ? *end : job.endTime ? *job.endTime : now;
      usd += crd::usageOf(rate, until - *start).usd;
      if (!end && running) ++runningTrials;
    }
    out.hourlyUsd = rate.usd * runningTrials;
  } else if (job.startTime) {
    if (raw.contains("trialJobSpec")) parallel = std::max<double>(1, raw.value("parallelTrialCount", 1));
    auto until = job.endTime ? *job.endTime : now;
    usd = crd::usageOf(rate, until - *job.startTime).usd * parallel;
    if (running) out.hourlyUsd = rate.usd * parallel;
  }
  out.usd = usd;
  return out;
}

BudgetLedger::BudgetLedger(vertex::VertexClient& vertex, const Clock& clock, const crd::TenancyRules& rules,
                           const crd::PriceCatalog& prices, std::vector<std::string> defaultLocations)
    : vertex_(vertex), clock_(clock), rules_(rules), prices_(prices), defaultLocations_(std::move(defaultLocations)) {}

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
      continue;
    }
    std::lock_guard lock(mutex_);
    spend_[i] = spend;
    auto& noted = noted_[i];
    for (const auto& name : listed) noted.erase(name);
  }
}

std::optional<RuleSpend> BudgetLedger::spendOf(size_t ruleIndex) const {
  std::lock_guard lock(mutex_);
  auto found = spend_.find(ruleIndex);
  if (found == spend_.end()) return std::nullopt;
  RuleSpend spend = found->second;
  if (auto noted = noted_.find(ruleIndex); noted != noted_.end())
    for (const auto& [name, usd] : noted->second) spend.spentUsd += usd;
  return spend;
}

void BudgetLedger::noteCreated(size_t ruleIndex, const std::string& jobName, double reservedUsd) {
  std::lock_guard lock(mutex_);
  noted_[ruleIndex][jobName] = reservedUsd;
}

}  // namespace vto::reconcilers
