#pragma once
// Inside decidePolicy (decide.h): one decision in progress, shared by the files that decide each
// trigger (schedule_trigger.cpp, polled_triggers.cpp, decide.cpp). Not for use outside this room.
#include <set>
#include <string>
#include <vector>

#include "reconcilers/retraining/decide.h"

namespace vto::reconcilers::retraining {

using TimePoint = Clock::time_point;

struct Decision {
  const PolicyObserved& in;
  const crd::RetrainingPolicy& policy;
  PolicyPlan plan;
  std::vector<std::string> active;  // names of runs that count against concurrency
  std::set<std::string> taken;      // run names that exist or are planned
  std::string warmStartFrom;

  crd::PolicyHistory& history() { return plan.status.history; }
  void event(controller::EventType type, std::string reason, std::string message) {
    plan.events.push_back({type, std::move(reason), std::move(message)});
  }
  void condition(PolicyCondition type, bool status, PolicyReason reason, const std::string& message = "");
  // The condition as stored, when this pass has nothing new to say about it.
  void keepCondition(PolicyCondition type);
};

// RFC 3339 as status writes it (exact: a watermark keeps GCS's fraction).
std::string timeText(TimePoint t);
std::optional<TimePoint> newer(std::optional<TimePoint> a, std::optional<TimePoint> b);
// Come back no later than `when` (at least a second from now).
void requeueBy(Decision& d, TimePoint when);
enum class Start { Started, Blocked, OverBudget };
// Creates the run for `firing` if the policy's budget and concurrency allow. Blocked: concurrency
// forbids, nothing was planned (the caller says why). OverBudget: spec.budget is spent; the skip is
// recorded (outcome, Event, status.lastSkippedTrigger) and the trigger counts as handled.
Start startRun(Decision& d, Firing firing);
// The active runs, for messages: "a, b".
std::string activeText(const Decision& d);

// The schedule trigger (schedule_trigger.cpp). updateScheduleState moves the missed-slot baseline
// for a schedule edit or an unsuspension and returns the slots that passed while suspended.
int64_t updateScheduleState(Decision& d, ScheduleState& state, bool known);
void fireSchedule(Decision& d, const ScheduleState& state);

// The polled triggers and the manual request (polled_triggers.cpp). A trigger's health comes from
// the state it keeps (a suspended policy's from what its last poll left).
std::optional<TriggerHealth::Problem> dataProblem(const DataState& state);
std::optional<TriggerHealth::Problem> metricProblem(const MetricHealth& health);
void fireNewData(Decision& d);
void fireMetric(Decision& d);
void fireManual(Decision& d);

// Promotion (promotion.cpp): at most one alias move per pass, a promote-version request first; with
// warmStart, runs start from the champion's artifacts.
void promote(Decision& d);
// A run whose registered version promotion has not compared yet.
bool awaitsComparison(const PolicyObserved& observed, const ChildRun& child);

}  // namespace vto::reconcilers::retraining
