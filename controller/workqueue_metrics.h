#pragma once
// What a WorkQueue reports as it works; the Prometheus implementation is in runtime_metrics.h.
// The defaults do nothing so that a queue without metrics needs no special cases.
#include "base/clock.h"

namespace vto::controller {

class WorkQueueMetrics {
 public:
  virtual ~WorkQueueMetrics() = default;
  virtual void added() {}
  virtual void depth(size_t) {}
  virtual void queuedFor(Clock::duration) {}  // from add to get
  virtual void workedFor(Clock::duration) {}  // from get to done
  virtual void retried() {}
};

}  // namespace vto::controller
