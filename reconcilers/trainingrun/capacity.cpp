#include "reconcilers/trainingrun/capacity.h"

#include <algorithm>
#include <cctype>

#include "base/rfc3339.h"
#include "crd/placement.h"
#include "reconcilers/jobs/failure_class.h"

namespace vto::reconcilers::trainingrun {

using controller::normalEvent;
using controller::warningEvent;
using crd::Phase;

namespace {

crd::CapacityHistory& capacityOf(Draft& d) {
  auto& capacity = d.next.history.capacity;
  if (!capacity) capacity = crd::CapacityHistory{};
  return *capacity;
}

const crd::BlockedPlacement* blockOf(const crd::CapacityHistory& capacity, size_t index) {
  for (const auto& blocked : capacity.blocked) {
    if (static_cast<size_t>(blocked.index) == index) return &blocked;
  }
  return nullptr;
}

// Where placement `index` sends a job: its location, or the operator's default.
std::string locationAt(const Draft& d, size_t index) {
  return crd::locationOf(crd::specAt(d.run.spec, index), d.o.defaults).location;
}

// "a2-highgpu-8g 8 x NVIDIA_TESLA_A100 Spot": what a placement asks Vertex for.
std::string machinesAt(const crd::TrainingRunSpec& spec) {
  std::string text = spec.resources ? spec.resources->machineType : "workerPoolSpecs";
  if (spec.resources && spec.resources->acceleratorCount > 0) {
    text += " " + std::to_string(spec.resources->acceleratorCount) + " x " + spec.resources->acceleratorType;
  }
  return text + " " + crd::enumName(spec.scheduling.strategy, crd::schedulingStrategyNames());
}

// One line per placement and why it is refused, for the give-up message.
std::string placementTable(Draft& d) {
  std::string table;
  auto& capacity = capacityOf(d);
  for (size_t i = 0; i < crd::placementCount(d.run.spec); ++i) {
    const auto* blocked = blockOf(capacity, i);
    table += "\n  placement " + std::to_string(i) + " (" + locationAt(d, i) + " " + machinesAt(crd::specAt(d.run.spec, i)) +
             "): " + (blocked ? blocked->reason + ": " + blocked->message : "no capacity seen");
  }
  return table;
}

// Failed, reason CapacityUnavailable: the run stops looking for capacity.
Plan giveUp(Draft& d, const std::string& message) {
  d.phase(Phase::Failed, message);
  d.next.completionTime = d.now();
  d.condition(ConditionType::Failed, true, Reason::CapacityUnavailable, d.next.message);
  d.condition(ConditionType::Ready, false, Reason::CapacityUnavailable, d.next.message);
  capacityOf(d).waitingSince.reset();
  return finished(d);
}

}  // namespace

std::optional<Plan> failoverBudget(Draft& d) {
  const auto& spec = *d.run.spec.capacity;
  auto& capacity = capacityOf(d);
  if (capacity.failovers <= spec.maxFailovers) return std::nullopt;
  // The attempt that was to take the move never gets a job.
  d.current().placement.reset();
  return giveUp(d, "capacity failed " + std::to_string(capacity.failovers) + " times, more than the " +
                       std::to_string(spec.maxFailovers) + " moves spec.capacity.maxFailovers allows:" + placementTable(d));
}

size_t placementOf(const Draft& d) {
  const auto& attempts = d.next.history.attempts;
  if (attempts.empty() || !attempts.back().placement) return 0;
  return static_cast<size_t>(*attempts.back().placement);
}

crd::TrainingRun runAt(const crd::TrainingRun& run, size_t index) {
  if (index == 0) return run;
  crd::TrainingRun at = run;
  at.spec = crd::specAt(run.spec, index);
  return at;
}

crd::FailureClass failureClassOf(const Draft& d, const CachedJob& job) {
  auto failure = classifyFailure(job.state, job.error);
  if (failure != crd::FailureClass::Stockout || !job.startTime) return failure;
  crd::SchedulingStrategy strategy = d.run.spec.scheduling.strategy;
  try {
    strategy = crd::specAt(d.run.spec, placementOf(d)).scheduling.strategy;
  } catch (const crd::DecodeError&) {
    // validation refuses such a run before any job; the spec's own strategy stands in
  }
  return strategy == crd::SchedulingStrategy::Spot ? crd::FailureClass::Preemption : failure;
}

bool lackedCapacity(const Draft& d, const CachedJob& job) {
  return job.state == vertex::JobState::Failed && job.error && failureClassOf(d, job) == crd::FailureClass::Stockout;
}

void blockPlacement(Draft& d, const std::string& reason, const std::string& message) {
  size_t index = placementOf(d);
  auto& capacity = capacityOf(d);
  std::erase_if(capacity.blocked, [&](const auto& b) { return static_cast<size_t>(b.index) == index; });
  crd::BlockedPlacement blocked;
  blocked.index = static_cast<int32_t>(index);
  blocked.location = d.current().location.empty() ? locationAt(d, index) : d.current().location;
  blocked.reason = reason;
  blocked.until = d.now() + std::chrono::seconds(d.run.spec.capacity->blockForSeconds);
  blocked.message = message.substr(0, 512);
  capacity.blocked.push_back(blocked);
  std::sort(capacity.blocked.begin(), capacity.blocked.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  if (!capacity.failingSince) capacity.failingSince = d.now();
  capacity.failovers++;
}

void startAttemptElsewhere(Draft& d, const std::string& why) {
  const auto& checkpoint = d.o.checkpoints.latest;
  auto& history = d.next.history;
  crd::Attempt attempt;
  attempt.attempt = d.current().attempt + 1;
  attempt.resumedFrom = checkpoint ? checkpoint->uri : "";
  history.attempts.push_back(attempt);
  history.attemptCount++;
  if (history.attempts.size() > crd::kMaxAttemptsInStatus) history.attempts.erase(history.attempts.begin());
  if (checkpoint) history.lastCheckpoint = crd::CheckpointRef{checkpoint->uri, checkpoint->updateTime};
  // The job is gone and a new one will be made: no failure stands while the run moves or waits.
  d.condition(ConditionType::Failed, false, Reason::WaitingForCapacity, why);
}

std::optional<Plan> placementGate(Draft& d) {
  auto& attempt = d.current();
  auto& capacity = capacityOf(d);
  if (!attempt.placement) {
    for (size_t i = 0; i < crd::placementCount(d.run.spec); ++i) {
      const auto* blocked = blockOf(capacity, i);
      if (!blocked || !blocked->until || *blocked->until <= d.o.now) {  // never blocked, or no longer
        attempt.placement = static_cast<int32_t>(i);
        break;
      }
    }
  }
  if (attempt.placement) {
    capacity.waitingSince.reset();
    return std::nullopt;
  }
  // Every placement is blocked: wait for the first to unblock, or give up.
  const auto& spec = *d.run.spec.capacity;
  auto giveUpAt = capacity.failingSince.value_or(d.now()) + std::chrono::seconds(spec.giveUpAfterSeconds);
  if (d.o.now >= giveUpAt) {
    return giveUp(d, "no placement had capacity for " + std::to_string(spec.giveUpAfterSeconds) +
                         "s (spec.capacity.giveUpAfter):" + placementTable(d));
  }
  auto next = std::min_element(capacity.blocked.begin(), capacity.blocked.end(),
                               [](const auto& a, const auto& b) { return a.until < b.until; });
  std::string message = "every placement is out of capacity; placement " + std::to_string(next->index) + " (" +
                        next->location + ") is tried again at " + rfc3339(*next->until) + ", and the run gives up at " +
                        rfc3339(giveUpAt);
  if (!conditionIs(d, ConditionType::Ready, "False", Reason::WaitingForCapacity)) {
    d.plan.events.push_back(warningEvent("WaitingForCapacity", message));
  }
  if (!capacity.waitingSince) capacity.waitingSince = d.now();
  d.phase(Phase::Queued, message, Told::ByOwnEvent);
  d.condition(ConditionType::Ready, false, Reason::WaitingForCapacity, message);
  d.plan.requeueAfter = std::max<Clock::duration>(std::min(*next->until, giveUpAt) - d.o.now, std::chrono::seconds(1));
  return finish(d);
}

void announceMove(Draft& d, size_t to, std::optional<size_t> refusedNow) {
  const auto& attempts = d.next.history.attempts;
  // From the placement that refused this very attempt, else from the one the attempt before ran on.
  auto from = refusedNow;
  if (!from && attempts.size() >= 2 && attempts[attempts.size() - 2].placement) from = *attempts[attempts.size() - 2].placement;
  if (!from || *from == to) return;
  const auto* blocked = blockOf(capacityOf(d), *from);
  auto spec = crd::specAt(d.run.spec, to);
  std::string fromLocation = blocked ? blocked->location : locationAt(d, *from);
  std::string reason = blocked ? blocked->reason : "Stockout";
  d.plan.events.push_back(normalEvent(
      "CapacityFailover", "attempt " + std::to_string(d.current().attempt) + " on " + locationAt(d, to) + " " +
                              machinesAt(spec) + ": " + fromLocation + " had no capacity (" + reason + ")"));
  d.plan.failover = Failover{fromLocation, locationAt(d, to), spec.resources ? spec.resources->acceleratorType : "",
                             reason};
}

void watchQueueTime(Draft& d, const CachedJob& job) {
  const auto& capacity = d.run.spec.capacity;
  if (!capacity || capacity->maxQueueSeconds <= 0 || !job.createTime) return;
  if (job.state != vertex::JobState::Queued && job.state != vertex::JobState::Pending) return;
  int64_t waits = capacity->maxQueueSeconds;
  try {
    const auto scheduling = crd::specAt(d.run.spec, placementOf(d)).scheduling;
    if (scheduling.strategy == crd::SchedulingStrategy::FlexStart) {
      int64_t flexWait = scheduling.maxWaitSeconds.value_or(kFlexStartDefaultWaitSeconds);
      if (flexWait == 0) return;  // it waits indefinitely, as the user asked of Vertex
      waits = std::max(waits, flexWait);
    }
  } catch (const crd::DecodeError&) {
    // validation refuses such a run before any job
  }
  // Counted from the later of Vertex's createTime and vto's own record of the create (the attempt's
  // startTime, on the operator's clock): a clock behind Google's never cancels a job it just made.
  auto since = *job.createTime;
  if (const auto& created = d.current().startTime; created && *created > since) since = *created;
  auto deadline = since + std::chrono::seconds(waits);
  if (d.o.now < deadline) {
    d.plan.requeueAfter = std::min(d.plan.requeueAfter, std::max<Clock::duration>(deadline - d.o.now, std::chrono::seconds(1)));
    return;
  }
  d.plan.cancelJob = job.name;
  d.current().message = kQueueTimeoutMessage;
  d.plan.events.push_back(normalEvent("QueueTimeout", "cancelling " + job.name + ": it waited " + std::to_string(waits) +
                                                          "s for capacity (spec.capacity.maxQueueTime)"));
}

void capacityRecovered(Draft& d) {
  auto& capacity = d.next.history.capacity;
  if (!capacity) return;
  capacity->failingSince.reset();
  capacity->waitingSince.reset();
}

void placementView(Draft& d) {
  if (!d.run.spec.capacity) return;
  auto& capacity = capacityOf(d);
  std::erase_if(capacity.blocked, [&](const auto& b) { return !b.until || *b.until <= d.o.now; });
  const auto& attempts = d.next.history.attempts;
  if (attempts.empty() || !attempts.back().placement) {
    d.next.placement.reset();
    return;
  }
  size_t index = placementOf(d);
  auto spec = crd::specAt(d.run.spec, index);
  crd::PlacementRef ref;
  ref.index = static_cast<int32_t>(index);
  ref.location = attempts.back().location.empty() ? locationAt(d, index) : attempts.back().location;
  if (spec.resources) {
    ref.machineType = spec.resources->machineType;
    ref.acceleratorType = spec.resources->acceleratorType;
    ref.acceleratorCount = spec.resources->acceleratorCount;
  }
  ref.strategy = crd::enumName(spec.scheduling.strategy, crd::schedulingStrategyNames());
  d.next.placement = ref;
}

}  // namespace vto::reconcilers::trainingrun
