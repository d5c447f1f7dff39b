#pragma once
// What a Controller reports per reconcile; the Prometheus implementation is in runtime_metrics.h.
#include "base/clock.h"

namespace vto::controller {

enum class ReconcileOutcome { Success, Error, Requeue, RequeueAfter };

class ControllerMetrics {
 public:
  virtual ~ControllerMetrics() = default;
  virtual void maxConcurrentReconciles(int) {}
  virtual void activeWorkers(int) {}
  virtual void reconciled(ReconcileOutcome, Clock::duration) {}
};

}  // namespace vto::controller
