#include "controller/leader_elector.h"

#include <spdlog/spdlog.h>

#include <stdexcept>
#include <thread>

#include "base/json_fields.h"
#include "controller/runtime_metrics.h"
#include "base/rfc3339.h"

namespace vto::controller {

const Resource& leaseResource() {
  static const Resource lease{"coordination.k8s.io", "v1", "leases", true};
  return lease;
}

namespace {

int wholeSeconds(Clock::duration d) {
  return static_cast<int>(std::chrono::duration_cast<std::chrono::seconds>(d).count());
}

}  // namespace

LeaderElector::LeaderElector(KubeClient& client, const Clock& clock, LeaderElectionConfig config,
                             Callbacks callbacks, RuntimeMetrics* metrics)
    : client_(client), clock_(clock), config_(std::move(config)), callbacks_(std::move(callbacks)),
      metrics_(metrics) {
  if (config_.leaseNamespace.empty()) {
    throw std::invalid_argument("leader election needs a namespace: set --leader-election-namespace");
  }
  if (config_.identity.empty()) throw std::invalid_argument("leader election needs an identity");
  if (!(config_.leaseDuration > config_.renewDeadline && config_.renewDeadline > config_.retryPeriod)) {
    throw std::invalid_argument("leader election needs leaseDuration > renewDeadline > retryPeriod");
  }
  if (metrics_) metrics_->leaderStatus(config_.leaseName, false);
}

void LeaderElector::setLeading(bool leading) {
  if (leading_.exchange(leading) == leading) return;
  if (metrics_) metrics_->leaderStatus(config_.leaseName, leading);
  if (leading) {
    spdlog::info("leader election: {} acquired lease {}/{}", config_.identity,
                 config_.leaseNamespace, config_.leaseName);
    if (callbacks_.startedLeading) callbacks_.startedLeading();
  } else {
    spdlog::warn("leader election: {} lost lease {}/{}", config_.identity, config_.leaseNamespace,
                 config_.leaseName);
    if (callbacks_.stoppedLeading) callbacks_.stoppedLeading();
  }
}

bool LeaderElector::tryAcquireOrRenew() {
  auto now = clock_.now();
  nlohmann::json lease;
  try {
    lease = client_.get(leaseResource(), config_.leaseNamespace, config_.leaseName);
  } catch (const ApiError& error) {
    if (!error.isNotFound()) throw;
    nlohmann::json created = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", config_.leaseName}, {"namespace", config_.leaseNamespace}}},
        {"spec",
         {{"holderIdentity", config_.identity},
          {"leaseDurationSeconds", wholeSeconds(config_.leaseDuration)},
          {"acquireTime", rfc3339Micro(now)},
          {"renewTime", rfc3339Micro(now)},
          {"leaseTransitions", 0}}}};
    client_.create(leaseResource(), config_.leaseNamespace, created);
    observedRecord_ = created["spec"].dump();
    observedAt_ = now;
    return true;
  }
  auto& spec = lease["spec"];
  if (!spec.is_object()) spec = nlohmann::json::object();
  auto record = spec.dump();
  if (record != observedRecord_) {
    observedRecord_ = record;
    observedAt_ = now;
  }
  std::string holder = stringField(spec, "holderIdentity");
  auto held = std::chrono::seconds(spec.value("leaseDurationSeconds", 0));
  bool valid = observedAt_ + held > now;
  if (!holder.empty() && holder != config_.identity && valid) return false;

  if (holder != config_.identity) {
    spec["acquireTime"] = rfc3339Micro(now);
    spec["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
    spec["holderIdentity"] = config_.identity;
  }
  spec["leaseDurationSeconds"] = wholeSeconds(config_.leaseDuration);
  spec["renewTime"] = rfc3339Micro(now);
  // The update carries the resourceVersion we read: if someone else wrote in between, 409.
  client_.update(leaseResource(), config_.leaseNamespace, lease);
  observedRecord_ = spec.dump();
  observedAt_ = now;
  return true;
}

Clock::time_point LeaderElector::step() {
  auto now = clock_.now();
  Clock::time_point renewBy;
  {
    std::lock_guard guard(renewMutex_);
    // Leading: the renew time left. Not leading: an attempt may take up to a renew deadline too.
    renewBy = (leading_ ? lastRenew_ : now) + config_.renewDeadline;
  }
  bool ok = false;
  try {
    RequestDeadlineScope deadline(std::chrono::steady_clock::now() +
                                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(renewBy - now));
    ok = tryAcquireOrRenew();
  } catch (const std::exception& error) {
    spdlog::warn("leader election: lease {}/{}: {}", config_.leaseNamespace, config_.leaseName,
                 error.what());
  }
  if (ok && !fenced_) {
    {
      std::lock_guard guard(renewMutex_);
      lastRenew_ = now;
    }
    setLeading(true);
    std::lock_guard guard(renewMutex_);  // so the fencing timer cannot miss the news between check and wait
    renewed_.notify_all();
  } else if (leading_) {
    std::unique_lock lock(renewMutex_);
    bool expired = clock_.now() - lastRenew_ >= config_.renewDeadline;
    lock.unlock();
    if (expired) setLeading(false);
  }
  return now + config_.retryPeriod;
}

void LeaderElector::fenceAtRenewDeadline(std::stop_token stop) {
  std::stop_callback wakeOnStop(stop, [this] {
    std::lock_guard guard(renewMutex_);
    renewed_.notify_all();
  });
  std::unique_lock lock(renewMutex_);
  while (!stop.stop_requested()) {
    if (!leading_) {
      renewed_.wait(lock);  // until step() leads (or stop)
      continue;
    }
    auto fenceAt = lastRenew_ + config_.renewDeadline;
    if (clock_.now() >= fenceAt) {
      fenced_ = true;
      lock.unlock();
      spdlog::error("leader election: {} could not renew lease {}/{} within {} s: fencing", config_.identity,
                    config_.leaseNamespace, config_.leaseName, wholeSeconds(config_.renewDeadline));
      setLeading(false);
      {
        std::lock_guard guard(waitMutex_);
        wake_.notify_all();
      }
      return;
    }
    clock_.waitUntil(lock, renewed_, fenceAt);
  }
}

bool LeaderElector::run(std::stop_token stop) {
  std::stop_callback wakeOnStop(stop, [this] {
    std::lock_guard guard(waitMutex_);
    wake_.notify_all();
  });
  std::jthread fencing([this](std::stop_token fencingStop) { fenceAtRenewDeadline(fencingStop); });
  bool wasLeading = false;
  while (!stop.stop_requested()) {
    auto next = step();
    if ((wasLeading || fenced_) && !leading_) {
      fenced_ = true;
      return false;
    }
    wasLeading = leading_;
    std::unique_lock lock(waitMutex_);
    while (!stop.stop_requested() && !fenced_ && clock_.now() < next) clock_.waitUntil(lock, wake_, next);
  }
  fencing.request_stop();
  fencing.join();
  release();
  return true;
}

void LeaderElector::release() {
  if (!leading_) return;
  try {
    // A shutdown must not hang on an unreachable API server: the lease expires on its own anyway.
    RequestDeadlineScope deadline(std::chrono::steady_clock::now() +
                                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(config_.retryPeriod));
    auto lease = client_.get(leaseResource(), config_.leaseNamespace, config_.leaseName);
    if (stringField(lease["spec"], "holderIdentity") == config_.identity) {
      auto now = rfc3339Micro(clock_.now());
      lease["spec"]["holderIdentity"] = "";
      lease["spec"]["leaseDurationSeconds"] = 1;
      lease["spec"]["acquireTime"] = now;
      lease["spec"]["renewTime"] = now;
      client_.update(leaseResource(), config_.leaseNamespace, lease);
    }
  } catch (const std::exception& error) {
    spdlog::warn("leader election: could not release lease {}/{}: {}", config_.leaseNamespace,
                 config_.leaseName, error.what());
  }
  setLeading(false);
}

}  // namespace vto::controller
