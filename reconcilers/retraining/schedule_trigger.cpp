// The schedule trigger (docs/retraining.md, rules 3-6): slots of a cron in a time zone, the missed-slot
// baseline, missed runs, concurrency and jitter.
#include <deque>

#include "base/rfc3339.h"
#include "crd/schedule.h"
#include "reconcilers/retraining/decision.h"

namespace vto::reconcilers::retraining {

using controller::EventType;
using crd::TriggerReason;

namespace {

// Slots of one schedule, with the jitter applied to "now" rather than to each slot.
class Slots {
 public:
  explicit Slots(const crd::ScheduleTrigger& trigger) : cron_(crd::parseCron(trigger.cron)), zone_(trigger.timeZone) {}

  TimePoint after(TimePoint t) const { return crd::nextScheduleAfter(cron_, zone_, t); }

  // How many slots lie in (from, to], counted up to kMissedCountCap.
  int64_t count(TimePoint from, TimePoint to) const {
    int64_t n = 0;
    for (auto t = after(from); t <= to && n < kMissedCountCap; t = after(t)) ++n;
    return n;
  }

  // The newest `n` slots in (from, to], oldest first. Looks back from `to` in windows that grow four
  // times each step, so a long outage costs a few calls, not one per missed slot.
  std::vector<TimePoint> newest(TimePoint from, TimePoint to, size_t n) const {
    std::chrono::seconds window(60);
    while (true) {
      TimePoint start = to - window <= from ? from : to - window;
      std::deque<TimePoint> found;
      for (auto t = after(start); t <= to; t = after(t)) {
        found.push_back(t);
        if (found.size() > n) found.pop_front();
      }
      if (found.size() >= n || start == from) return {found.begin(), found.end()};
      window *= 4;
    }
  }

 private:
  crd::CronSchedule cron_;
  std::string zone_;
};

// The due slots that `missedRuns` starts, oldest first (rule 4), with its Events.
std::vector<TimePoint> chosenSlots(Decision& d, const Slots& slots, TimePoint baseline, TimePoint dueBy, int64_t due) {
  const auto& spec = d.policy.spec;
  std::vector<TimePoint> chosen;
  switch (spec.missedRuns) {
    case crd::MissedRunsPolicy::Latest:
      chosen = slots.newest(baseline, dueBy, 1);
      if (due - 1 > kTooManyMissed) {
        d.event(EventType::Warning, "TooManyMissedSchedules",
                "more than " + std::to_string(kTooManyMissed) + " slots were missed; starting only the newest (" +
                    timeText(chosen.back()) + "). Check the operator's uptime, or set startingDeadlineSeconds");
      }
      break;
    case crd::MissedRunsPolicy::Skip:
      // A slot found alone is on time; with several due, all were missed and none is started.
      if (due == 1) chosen = slots.newest(baseline, dueBy, 1);
      break;
    case crd::MissedRunsPolicy::All:
      chosen = slots.newest(baseline, dueBy, static_cast<size_t>(std::max(1, spec.maxCatchUpRuns)));
      break;
  }
  int64_t notStarted = due - static_cast<int64_t>(chosen.size());
  if (notStarted > 0 && spec.missedRuns != crd::MissedRunsPolicy::Latest) {
    d.event(EventType::Warning, "MissSchedule",
            std::to_string(notStarted) + (due >= kMissedCountCap ? "+" : "") + " missed slot(s) not started (missedRuns " +
                crd::enumName(spec.missedRuns, crd::missedRunsPolicyNames()) + ")");
  }
  d.history().missedSchedules += notStarted;
  return chosen;
}

// Starts the run of one chosen slot unless its deadline has passed or concurrency forbids.
void startSlot(Decision& d, TimePoint slot, Clock::duration jitter) {
  const auto& spec = d.policy.spec;
  if (d.taken.count(runNameFor(d.policy.metadata.name, slot))) return;  // its run exists already
  if (spec.startingDeadlineSeconds && d.in.now - (slot + jitter) > std::chrono::seconds(*spec.startingDeadlineSeconds)) {
    d.plan.outcomes.push_back({TriggerReason::Schedule, "missed_deadline"});
    d.event(EventType::Warning, "MissSchedule",
            "the slot " + timeText(slot) + " is more than startingDeadlineSeconds (" +
                std::to_string(*spec.startingDeadlineSeconds) + ") late; it is not started");
    ++d.history().missedSchedules;
    return;
  }
  std::string blocking = activeText(d);
  auto started = startRun(d, Firing{TriggerReason::Schedule, slot, {}});
  if (started == Start::Started) return;
  if (started == Start::OverBudget) {  // recorded with the figures; the slot is not run late
    ++d.history().missedSchedules;
    return;
  }
  d.plan.outcomes.push_back({TriggerReason::Schedule, "skipped_active"});
  d.event(EventType::Normal, "RunAlreadyActive",
          "skipped the slot " + timeText(slot) + ": " + blocking + " is still active (concurrencyPolicy " +
              crd::enumName(spec.concurrencyPolicy, crd::concurrencyPolicyNames()) + "); the slot is not run late");
  ++d.history().missedSchedules;
}

}  // namespace

int64_t updateScheduleState(Decision& d, ScheduleState& state, bool known) {
  const auto& spec = d.policy.spec;
  std::string cron = spec.triggers.schedule ? spec.triggers.schedule->cron : "";
  std::string zone = spec.triggers.schedule ? spec.triggers.schedule->timeZone : "";
  int64_t passedWhileSuspended = 0;
  if (!known) {
    state.since = parseRfc3339OrNone(d.policy.metadata.creationTimestamp);
  } else if (state.cron != cron || state.timeZone != zone) {
    state.since = d.in.now;  // a schedule edit is never "missed" (CronJob #123220)
  } else if (state.suspended && !spec.suspend) {
    if (spec.triggers.schedule && state.since) {
      Slots slots(*spec.triggers.schedule);
      auto from = newer(d.history().lastScheduleTime, state.since);
      passedWhileSuspended = slots.count(*from, d.in.now);
    }
    state.since = d.in.now;  // unsuspending fires nothing missed (CronJob #110919)
  }
  state.cron = cron;
  state.timeZone = zone;
  state.suspended = spec.suspend;
  return passedWhileSuspended;
}

void fireSchedule(Decision& d, const ScheduleState& state) {
  const auto& trigger = *d.policy.spec.triggers.schedule;
  auto& history = d.history();
  Slots slots(trigger);
  auto jitter = crd::jitterOffset(d.policy.metadata.uid, trigger.jitter);
  // A slot is due once its jittered time has come; comparing nominal slots with now - jitter says so.
  TimePoint dueBy = d.in.now - jitter;
  // Slots after the latest of these were missed; time before them never counts (rule 4).
  TimePoint baseline =
      newer(newer(history.lastScheduleTime, parseRfc3339OrNone(d.policy.metadata.creationTimestamp)), state.since).value_or(d.in.now);
  int64_t due = baseline < dueBy ? slots.count(baseline, dueBy) : 0;
  if (due > 0) {
    for (auto slot : chosenSlots(d, slots, baseline, dueBy, due)) startSlot(d, slot, jitter);
    history.lastScheduleTime = slots.newest(baseline, dueBy, 1).back();
    baseline = *history.lastScheduleTime;
  }
  auto next = slots.after(std::max(baseline, dueBy));
  d.plan.status.nextScheduleTime = next + jitter;
  d.plan.requeueAfter = std::max<Clock::duration>(*d.plan.status.nextScheduleTime - d.in.now, Clock::duration::zero());
  if (d.plan.requeueAfter == Clock::duration::zero()) d.plan.requeueAfter = std::chrono::seconds(1);
}

}  // namespace vto::reconcilers::retraining
