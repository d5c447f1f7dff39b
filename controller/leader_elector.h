#pragma once
// Leader election on a coordination.k8s.io/v1 Lease, with client-go's algorithm and timings:
// a candidate takes the lease when it is free, released, or not renewed for leaseDuration (as
// observed on our own clock, so clock skew between nodes does not matter); the leader renews every
// retryPeriod and gives up leadership (fencing) as soon as it has failed to renew for renewDeadline,
// which is shorter than leaseDuration so it stops before anyone else can start.
//
// The renew deadline holds whatever the network does: each request runs under a deadline of the
// renew time left (RequestDeadlineScope), and run() keeps a fencing timer that ends leadership at
// lastRenew + renewDeadline even if a request is stuck somewhere no deadline reaches. A partition
// that swallows packets (no reset, no answer) therefore fences at the deadline, not after the
// client's 30 s request timeout.
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stop_token>
#include <string>

#include "base/clock.h"
#include "controller/kube_client.h"

namespace vto::controller {

class RuntimeMetrics;

struct LeaderElectionConfig {
  std::string leaseName = "vto-controller-leader";
  std::string leaseNamespace;  // --leader-election-namespace
  std::string identity;        // unique per process: hostname + random suffix
  Clock::duration leaseDuration = std::chrono::seconds(15);
  Clock::duration renewDeadline = std::chrono::seconds(10);
  Clock::duration retryPeriod = std::chrono::seconds(2);
};

// The Lease resource.
const Resource& leaseResource();

class LeaderElector {
 public:
  struct Callbacks {
    std::function<void()> startedLeading;
    std::function<void()> stoppedLeading;  // reconciling must stop at once
  };

  // `metrics` may be null. Throws std::invalid_argument on inconsistent timings.
  LeaderElector(KubeClient& client, const Clock& clock, LeaderElectionConfig config,
                Callbacks callbacks, RuntimeMetrics* metrics = nullptr);

  // Tries to acquire until it leads, then renews until leadership is lost (returns false) or
  // `stop` is requested (returns true after releasing the lease so a standby takes over at once).
  bool run(std::stop_token stop);

  // One attempt to acquire or renew; returns when the next attempt is due. run() loops over it;
  // tests call it directly on a simulated clock.
  Clock::time_point step();
  // Gives the lease up if we hold it: holder cleared and a 1 s duration, as client-go does.
  void release();
  bool isLeader() const { return leading_; }

 private:
  bool tryAcquireOrRenew();
  void setLeading(bool leading);
  // run()'s fencing timer: ends leadership when the renew deadline passes without a renewal.
  void fenceAtRenewDeadline(std::stop_token stop);

  KubeClient& client_;
  const Clock& clock_;
  LeaderElectionConfig config_;
  Callbacks callbacks_;
  RuntimeMetrics* metrics_;
  std::atomic<bool> leading_{false};
  // Once run() has fenced, a renew that completes late must not make us lead again.
  std::atomic<bool> fenced_{false};
  std::mutex renewMutex_;  // guards lastRenew_ between step() and the fencing timer
  std::condition_variable renewed_;
  Clock::time_point lastRenew_{};
  // The lease as last seen, and when (on our clock) it last changed.
  std::string observedRecord_;
  Clock::time_point observedAt_{};
  std::mutex waitMutex_;
  std::condition_variable wake_;
};

}  // namespace vto::controller
