#include "cmd/cluster_identity.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <fstream>
#include <mutex>

#include "base/gcp_names.h"
#include "base/json_fields.h"
#include "base/retryable_error.h"
#include "cmd/flags.h"
#include "controller/api_error.h"

namespace vto::cmd {

namespace {
constexpr size_t kMaxKeyFileBytes = 64 * 1024;
}  // namespace

std::string resolveClusterId(controller::KubeClient& kube, const std::string& flag, std::stop_token stop) {
  if (!flag.empty()) {
    if (!isValidGcpLabelValue(flag))
      throw UsageError("--cluster-id \"" + flag.substr(0, 64) +
                       "\": use 1 to 63 lowercase letters, digits, '_' or '-' (it becomes the vto-cluster label of every job)");
    return flag;
  }
  static const controller::Resource namespaces{"", "v1", "namespaces", false};
  auto wait = std::chrono::seconds(1);
  std::mutex mutex;
  std::condition_variable_any wake;
  while (true) {
    try {
      auto uid = metadataField(kube.get(namespaces, "", "kube-system"), "uid");
      if (uid.empty() || !isValidGcpLabelValue(uid)) throw UsageError("the kube-system namespace has no usable uid: set --cluster-id");
      return uid;
    } catch (const controller::ApiError& e) {
      if (!e.isRetryable())
        throw UsageError(std::string("cannot read the kube-system namespace for the cluster identity (") + e.what() +
                         "): set --cluster-id (chart: clusterId), or grant the operator get on namespaces/kube-system");
      spdlog::warn("reading the kube-system namespace for the cluster identity: {}; trying again", e.what());
    } catch (const RetryableError& e) {
      spdlog::warn("reading the kube-system namespace for the cluster identity: {}; trying again", e.what());
    }
    std::unique_lock lock(mutex);
    if (wake.wait_for(lock, stop, wait, [] { return false; }) || stop.stop_requested())
      throw std::runtime_error("stopped before the cluster identity could be read");
    wait = std::min<std::chrono::seconds>(wait * 2, std::chrono::seconds(10));
  }
}

std::unique_ptr<reconcilers::JobOwnership> jobOwnership(const std::string& clusterId, const std::string& keyFile) {
  reconcilers::OwnershipKeys keys;
  if (keyFile.empty()) {
    spdlog::warn("no --ownership-key-file: Vertex jobs are told apart by their vto-cluster label alone, so anyone who can "
                 "create a Vertex job in a project this operator uses can pass one off as its own (the chart creates "
                 "the key; see docs/security.md)");
  } else {
    std::ifstream in(keyFile, std::ios::binary);
    if (!in) throw UsageError("--ownership-key-file " + keyFile + ": cannot be read");
    std::string text(kMaxKeyFileBytes + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(in.gcount()));
    try {
      keys = reconcilers::parseOwnershipKeys(text);
    } catch (const std::exception& e) {
      throw UsageError("--ownership-key-file " + keyFile + ": " + e.what());
    }
  }
  try {
    return std::make_unique<reconcilers::JobOwnership>(clusterId, std::move(keys));
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

}  // namespace vto::cmd
