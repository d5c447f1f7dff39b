#pragma once
// The contract a reconciler implements (as in controller-runtime): given the key of an object,
// read the current state, make the world match the spec, and say whether to come back.
// Reconciliation is level-based: the key carries no event, so every pass starts from what it observes.
#include <chrono>
#include <stdexcept>

#include "base/clock.h"
#include "controller/object_key.h"

namespace vto::controller {

struct Result {
  // Come back after this long (the key is not counted as failing); zero means not on a timer.
  Clock::duration requeueAfter = Clock::duration::zero();
  // Come back after the rate limiter's backoff, as after an error.
  bool requeue = false;
  // Come back at low priority (WorkQueue::addLowPriority): what is left only records what this pass
  // did, and may wait behind passes that start work.
  bool catchUp = false;
};

// Thrown from reconcile() for a problem retrying cannot fix (an invalid spec, a permission denied):
// the key is not requeued until the object changes. Any other exception is retried with backoff.
class TerminalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Reconciler {
 public:
  virtual ~Reconciler() = default;
  // Called by at most one worker at a time for a given key. Throwing TerminalError stops retries;
  // throwing anything else retries with per-key exponential backoff.
  virtual Result reconcile(const ObjectKey& key) = 0;
};

}  // namespace vto::controller
