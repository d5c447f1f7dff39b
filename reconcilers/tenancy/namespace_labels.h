#pragma once
// A namespace as the tenancy rules see it (governance::NamespaceInfo), shared by the reconcilers that check
// them. Labels are read only when a rule selects by them (otherwise vto needs no RBAC on namespaces),
// and kept for `freshFor`, so that checking a run or a policy does not cost an API request per pass.
// A relabelled namespace is judged by its old labels for at most that long.
#include <chrono>
#include <map>
#include <mutex>
#include <string>

#include "base/clock.h"
#include "controller/kube_client.h"
#include "governance/tenancy.h"

namespace vto::reconcilers {

class NamespaceLabels {
 public:
  static constexpr Clock::duration kFreshFor = std::chrono::seconds(30);

  NamespaceLabels(controller::KubeClient& kube, const Clock& clock, const governance::TenancyRules& rules);

  // The namespace's labels when a rule selects by label (a GET at most once per kFreshFor; throws the
  // kube client's ApiError), else just its name.
  governance::NamespaceInfo get(const std::string& name);

 private:
  struct Read {
    std::map<std::string, std::string> labels;
    Clock::time_point at;
  };
  controller::KubeClient& kube_;
  const Clock& clock_;
  bool needed_ = false;
  std::mutex mutex_;
  std::map<std::string, Read> reads_;
};

}  // namespace vto::reconcilers
