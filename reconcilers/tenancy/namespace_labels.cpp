#include "reconcilers/tenancy/namespace_labels.h"

#include <algorithm>

namespace vto::reconcilers {

namespace {
// Past this many namespaces read, stale reads are dropped: memory follows the namespaces in use.
constexpr size_t kPruneAbove = 1024;
}  // namespace

NamespaceLabels::NamespaceLabels(controller::KubeClient& kube, const Clock& clock, const governance::TenancyRules& rules)
    : kube_(kube), clock_(clock) {
  needed_ = std::any_of(rules.begin(), rules.end(), [](const auto& rule) { return rule.matchLabels.has_value(); });
}

governance::NamespaceInfo NamespaceLabels::get(const std::string& name) {
  governance::NamespaceInfo info{name, std::nullopt};
  if (!needed_) return info;
  auto now = clock_.now();
  {
    std::lock_guard lock(mutex_);
    auto found = reads_.find(name);
    if (found != reads_.end() && now - found->second.at < kFreshFor) {
      info.labels = found->second.labels;
      return info;
    }
  }
  static const controller::Resource namespaces{"", "v1", "namespaces", false};
  auto object = kube_.get(namespaces, "", name);  // outside the lock: other namespaces do not wait
  info.labels = object.value("/metadata/labels"_json_pointer, std::map<std::string, std::string>{});
  std::lock_guard lock(mutex_);
  if (reads_.size() > kPruneAbove) {
    std::erase_if(reads_, [&](const auto& entry) { return now - entry.second.at >= kFreshFor; });
  }
  reads_.insert_or_assign(name, Read{*info.labels, now});
  return info;
}

}  // namespace vto::reconcilers
