// vto migrate: rewrites every TrainingRun and RetrainingPolicy stored at an older version once, then
// records in each CRD that only the storage version is stored. The operator does the same at start;
// this is the one-off for a platform team that wants it done (and checked) before an upgrade.
#include "cmd/migrate.h"

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <iostream>
#include <mutex>

#include "cmd/commands.h"
#include "cmd/flags.h"
#include "controller/rest_config.h"
#include "reconcilers/retraining/reconciler.h"
#include "reconcilers/trainingrun/reconciler.h"

namespace vto::cmd {

void migrateStoredObjects(controller::KubeClient& kube,
                          const std::function<void(const std::string& crd, const controller::StorageMigration&)>& report) {
  for (const auto& [crd, resource] : {std::pair{"trainingruns.vto.dev", reconcilers::trainingRunResource()},
                                      std::pair{"retrainingpolicies.vto.dev", reconcilers::retrainingPolicyResource()}}) {
    report(crd, controller::migrateStorage(kube, crd, resource));
  }
}

void addStorageMigration(controller::Manager& manager, controller::KubeClient& kube, bool watchesAllNamespaces) {
  if (!watchesAllNamespaces) {
    spdlog::info("watching some namespaces only: run `vto migrate` as a cluster admin after an upgrade that changes the "
                 "storage version (docs/upgrading.md)");
    return;
  }
  manager.addLoop([&kube](std::stop_token stop) {
    std::mutex mutex;
    std::condition_variable_any wake;
    std::unique_lock lock(mutex);
    while (!stop.stop_requested()) {
      try {
        migrateStoredObjects(kube, [](const std::string& crd, const controller::StorageMigration& m) {
          if (m.needed)
            spdlog::info("{}: rewrote {} objects stored at an older version ({} written meanwhile); storedVersions recorded",
                         crd, m.rewritten, m.alreadyNewer);
        });
        return;
      } catch (const std::exception& e) {
        spdlog::warn("migrating stored objects to the storage version: {}; trying again in 60 s", e.what());
      }
      wake.wait_for(lock, stop, std::chrono::seconds(60), [] { return false; });
    }
  });
}

namespace {
std::string joined(const std::vector<std::string>& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ",") + v;
  return out.empty() ? "(none)" : out;
}
}  // namespace

int migrate(const Args& args) {
  Flags flags("migrate",
              "Rewrites every TrainingRun and RetrainingPolicy stored at an older API version once, then sets each\n"
              "CRD's status.storedVersions to the storage version alone, so a later release can stop serving the\n"
              "old one. The operator does the same when it starts; this does it now. Needs: list and patch on both\n"
              "kinds, get on their CRDs, patch on customresourcedefinitions/status.",
              {{"kubeconfig", 0, "", "kubeconfig file; default $KUBECONFIG, then ~/.kube/config"},
               {"allow-insecure-endpoints", 0, "false", "allow plain http to a non-loopback Kubernetes endpoint", true}});
  if (!flags.parse(args)) return 0;
  auto restConfig = controller::resolveRestConfig(kubeconfigPath(flags.get("kubeconfig")), flags.getBool("allow-insecure-endpoints"));
  controller::RestKubeClient kube(restConfig);
  migrateStoredObjects(kube, [](const std::string& crd, const controller::StorageMigration& m) {
    if (!m.needed) {
      std::cout << crd << ": stored versions " << joined(m.storedBefore) << ", nothing to migrate\n";
      return;
    }
    std::cout << crd << ": stored versions were " << joined(m.storedBefore) << "; rewrote " << m.rewritten << " objects ("
              << m.alreadyNewer << " written or deleted meanwhile); stored versions now " << (m.recorded ? "recorded" : "not recorded")
              << "\n";
  });
  return 0;
}

}  // namespace vto::cmd
