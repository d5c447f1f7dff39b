#pragma once
// Month-to-date spend per budget rule (tenancy `name` + `budget`, API.md "Cost and budgets"), and what
// the rule's unfinished jobs may still spend, from what Vertex holds: the jobs vto labelled
// `vto-team=<rule name>` in the rule's projects and locations, each priced by the cost model
// (governance::priceJob) from its own resource (pools, strategy, trials, timeout, times). The spend counts
// the jobs created this calendar month (UTC); the worst case counts every unfinished job, one created
// last month included. Vertex keeps a job whatever becomes of its run, and vto never deletes jobs, so
// deleting runs, restarting the operator or a leader change never resets a budget: the spend is read
// again, not remembered.
//
// refresh() is one list per project, location and job kind, however many rules read that place (this
// month's jobs: a few requests a minute for the whole operator, not per run or per rule: Vertex's
// list quota is the project's), and a second of the unfinished jobs of earlier months at the month's
// first refresh and for as long as that finds any (none can appear later). Between refreshes, a job
// vto just created counts at what the budget check reserved for it (noteCreated), so two runs
// admitted one after the other cannot both spend the same room.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/gcp_names.h"
#include "controller/polling_source.h"
#include "crd/render.h"
#include "governance/cost.h"
#include "governance/price_catalog.h"
#include "governance/tenancy.h"
#include "reconcilers/jobs/ownership.h"
#include "reconcilers/tenancy/job_spend.h"
#include "vertex/vertex_client.h"

namespace vto::reconcilers {

using crd::kTeamLabel;

struct RuleSpend {
  std::string month;    // "2026-12"
  Usd spent;       // the rule's jobs created this month, up to now
  // What the rule's unfinished jobs (of any month) may still spend until their timeouts, and what
  // was reserved for the jobs being created or created but not listed yet.
  Usd committed;
  int64_t unfinishedJobs = 0;          // the jobs `committed` counts
  std::vector<std::string> unpriced;  // jobs the price table cannot price (not counted)
  std::optional<std::string> error;   // the last refresh failed: the figures are the last known
  // Changes with every figure, note and reservation: what a budget check saw, so that admitting a
  // run can tell whether another run was admitted since (BudgetLedger::reserve).
  uint64_t generation = 0;
};

class BudgetLedger {
 public:
  // Told a rule's figures each time a refresh sets them (the budget metrics).
  using Observer = std::function<void(const governance::TenancyRule& rule, const RuleSpend& spend)>;
  // `defaultLocations`: where to look for a rule without `locations` (the operator's default).
  BudgetLedger(vertex::VertexClient& vertex, const Clock& clock, const governance::TenancyRules& rules,
               const governance::PriceCatalog& prices, std::vector<std::string> defaultLocations,
               const JobOwnership* ownership = nullptr, Observer observer = {});

  // Lists and prices every budget rule's jobs of this month. Never throws: a failed list leaves the
  // rule's last figures with `error` set.
  void refresh();
  // The rule's figures, plus what was noted and held since the last refresh (but for run
  // `exceptHoldOf`'s own hold: a run deciding again after a lost create answer must not be held back
  // by what it holds itself); nullopt before its first refresh.
  std::optional<RuleSpend> spendOf(size_t ruleIndex, const std::string& exceptHoldOf = "") const;
  // Run `uid` is about to create a job under rule `ruleIndex`: holds `usd` for it (counted in spendOf)
  // if the rule's figures are still those of `seenGeneration`; false when they changed since its
  // budget check (another run was admitted, or a refresh came): decide again. `unconditionally`
  // (a Warn budget, which creates anyway) holds it whatever changed. Without this, workers deciding at
  // once would each see the same room and all spend it. A hold the run had already (a create whose
  // answer was lost, or a placement it leaves for a fallback) is replaced, under any rule.
  bool reserve(size_t ruleIndex, uint64_t seenGeneration, const std::string& uid, Usd usd, bool unconditionally);
  // The run created no job: what it held is free again.
  void release(size_t ruleIndex, const std::string& uid);
  // Run `uid`'s job was created: its hold becomes the job's, counted as `reserved` (all of it still to
  // spend) until a refresh lists the job.
  void noteCreated(size_t ruleIndex, const std::string& uid, const std::string& jobName, Usd reserved);
  // A hold follows its job: a create whose answer was lost keeps the run's hold until a read shows
  // the job (jobSeen: the hold becomes the job's, as noteCreated) or the run will create nothing
  // more (forgetRun: gone, finished, suspended or invalid).
  void jobSeen(const std::string& runUid, const std::string& jobName);
  void forgetRun(const std::string& uid);

 private:
  vertex::VertexClient& vertex_;
  const Clock& clock_;
  const governance::TenancyRules& rules_;
  const governance::PriceCatalog& prices_;
  std::vector<std::string> defaultLocations_;
  const JobOwnership* ownership_;  // only jobs this operator made count (the team label alone is anyone's)
  Observer observer_;
  mutable std::mutex mutex_;
  std::map<size_t, RuleSpend> spend_;
  // Per place ("project/location"): the month whose earlier months' unfinished jobs were last listed,
  // and whether any of a budget rule's were.
  struct Earlier {
    std::string month;
    bool unfinished = false;
  };
  std::map<std::string, Earlier> earlier_;  // refresh()'s own (one refresh at a time)
  // Counted as committed: an unfinished job's worst case.
  std::map<size_t, std::map<std::string, Usd>> noted_;  // rule -> job name -> its reservation
  std::map<size_t, std::map<std::string, Usd>> held_;   // rule -> run uid -> its hold, while creating
};

// The refresh as a source on the injected clock, like the other polls: one target, refreshed every
// `interval` (the source's run() is a Manager loop, on the leader; tests call pollDue()).
std::unique_ptr<controller::PollingSource> budgetRefreshSource(BudgetLedger& ledger, const Clock& clock,
                                                               Clock::duration interval);

}  // namespace vto::reconcilers
