#pragma once
// Inside decide: capacity failover (API.md "Capacity failover"). A run with spec.capacity may run on
// any of its placements (crd/placement.h); a placement that had no capacity (a stockout, an
// accelerator quota refusal, a job queued past maxQueueTime) is blocked for blockFor, and the next
// attempt goes at once to the first placement that is not, from the newest checkpoint. With every
// placement blocked the run waits (WaitingForCapacity), and after giveUpAfter of capacity failures
// it fails (CapacityUnavailable). Not for use outside this room.
#include <optional>
#include <string>

#include "reconcilers/trainingrun/draft.h"

namespace vto::reconcilers::trainingrun {

// Vertex's maxWaitDuration when a FlexStart job names none (Scheduling.maxWaitDuration, 24h).
inline constexpr int64_t kFlexStartDefaultWaitSeconds = 24 * 3600;

// Written into an attempt's message when vto cancels its job for waiting past maxQueueTime.
inline constexpr const char* kQueueTimeoutMessage = "cancelled by vto: queued longer than spec.capacity.maxQueueTime";

// The placement the current attempt uses (0 without spec.capacity, or before one is chosen).
size_t placementOf(const Draft& d);
// The run as placement `index` makes it (its spec merged with the fallback's fields).
crd::TrainingRun runAt(const crd::TrainingRun& run, size_t index);
// Why the current attempt's failed job failed. A STOCKOUT on a Spot job that had started is a
// preemption: Google documents that a preempted Spot VM, once Compute Engine gives up restarting
// it, fails the job with a STOCKOUT error; it resumes where it ran, its placement not blocked.
crd::FailureClass failureClassOf(const Draft& d, const CachedJob& job);
// Whether a failed job lacked capacity: Vertex's stockout (RESOURCE_EXHAUSTED, "Resources are
// insufficient in region ...") that failureClassOf does not call a preemption.
bool lackedCapacity(const Draft& d, const CachedJob& job);
// The current attempt's placement had no capacity: blocked until now + blockFor, and the capacity
// failures counted from now when they were not already.
void blockPlacement(Draft& d, const std::string& reason, const std::string& message);
// A new attempt after a capacity failure: it chooses its placement anew (a preemption's keeps it).
void startAttemptElsewhere(Draft& d, const std::string& why);
// In create(): chooses the current attempt's placement when it has none. A plan when the run cannot
// be created now: it waits for capacity, or gives up.
std::optional<Plan> placementGate(Draft& d);
// The CapacityFailover Event and metric when the attempt about to be created goes elsewhere than
// the placement that refused it this pass (`refusedNow`) or, else, than the attempt before it.
void announceMove(Draft& d, size_t to, std::optional<size_t> refusedNow);
// While the job is queued or pending: cancelled once it waited maxQueueTime (its end then counts as
// no capacity); until then, the requeue no later than that. A FlexStart job waits at least its own
// maxWaitDuration (Vertex's default 24h; 0s: indefinitely): waiting is what FlexStart is for.
void watchQueueTime(Draft& d, const CachedJob& job);
// One more capacity move than spec.capacity.maxFailovers allows: the run gives up (a plan), else nullopt.
std::optional<Plan> failoverBudget(Draft& d);
// A job running again ends the capacity failures (waiting and giving up count from the next one).
void capacityRecovered(Draft& d);
// status.placement and the blocked placements still in force, for the status of the pass.
void placementView(Draft& d);

}  // namespace vto::reconcilers::trainingrun
