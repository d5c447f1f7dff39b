// `vto run`: the operator. Wiring only: every decision lives in reconcilers/, every mechanism in
// controller/ and vertex/.
#include <algorithm>
#include <malloc.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>

#include <spdlog/spdlog.h>

#include "cmd/cluster_identity.h"
#include "cmd/commands.h"
#include "cmd/file_clock.h"
#include "cmd/flags.h"
#include "cmd/logging.h"
#include "cmd/migrate.h"
#include "cmd/operator_clients.h"
#include "cmd/price_file.h"
#include "cmd/tenancy_config.h"
#include "cmd/version.h"
#include "controller/event_recorder.h"
#include "controller/informer.h"
#include "controller/kube_client.h"
#include "controller/manager.h"
#include "controller/runtime_metrics.h"
#include "controller/shutdown_signals.h"
#include "metrics/api_request_metrics.h"
#include "metrics/budget_metrics.h"
#include "metrics/process_metrics.h"
#include "metrics/retraining_metrics.h"
#include "metrics/trainingrun_metrics.h"
#include "metrics/trainingrun_observer.h"
#include "reconcilers/retraining/wiring.h"
#include "reconcilers/tenancy/budget_ledger.h"
#include "reconcilers/trainingrun/snapshot.h"
#include "reconcilers/trainingrun/wiring.h"

namespace vto::cmd {

Flags runFlags() {
  return Flags("run", "Runs the operator: reconciles TrainingRuns into Vertex AI jobs until SIGTERM.", {
      {"kubeconfig", 0, "", "kubeconfig file; default $KUBECONFIG, then the in-cluster service account"},
      {"namespace", 0, "", "watch only this namespace (repeatable; default all namespaces)", false, true},
      {"vertex-endpoint", 0, "", "Vertex AI base URL (default https://LOCATION-aiplatform.googleapis.com)"},
      {"allow-insecure-endpoints", 0, "false", "allow plain http (credentials in the clear) to a non-loopback Kubernetes, Vertex or GCS endpoint", true},
      {"gcs-endpoint", 0, "", "Cloud Storage base URL (default $STORAGE_EMULATOR_HOST, else storage.googleapis.com)"},
      // Failed attempts' log tails (status.attempts[].logTail): the operator needs roles/logging.viewer.
      {"logging-endpoint", 0, "", "Cloud Logging base URL (default: --vertex-endpoint when set, else https://logging.googleapis.com)"},
      {"log-tail-lines", 0, "20", "log lines a failed attempt's status and Failed Event show (0: read no logs)"},
      // Cloud Logging allows 60 entries.list calls a minute per project, for every reader together
      // (vto logs, the console, gcloud): the operator keeps well under it (docs/logs.md).
      {"logging-requests-per-minute", 0, "20", "Cloud Logging reads per minute per project for the whole operator (Google's quota: 60, shared)"},
      {"default-project", 0, "", "GCP project for TrainingRuns that name none"},
      {"default-location", 0, "", "Vertex AI location for TrainingRuns that name none"},
      // Loopback by default: only the chart (or an admin) opens them to the pod network.
      {"metrics-bind-address", 0, "127.0.0.1:8080", "address of the Prometheus /metrics endpoint (\":8080\": every interface)"},
      {"health-probe-bind-address", 0, "127.0.0.1:8081", "address of /healthz and /readyz (\":8081\": every interface, as kubelet probes need)"},
      {"leader-elect", 0, "false", "elect one active replica through a Lease", true},
      {"leader-election-namespace", 0, "", "namespace of the Lease (default: the kubeconfig's namespace)"},
      {"max-concurrent-reconciles", 0, "4", "TrainingRuns reconciled at once"},
      {"vertex-poll-interval", 0, "30", "seconds between Vertex job polls while no job is starting"},
      {"vertex-fast-poll-interval", 0, "5", "seconds between Vertex job polls while a job is queued or pending"},
      {"vertex-full-list-interval", 0, "120", "seconds between full lists of unfinished Vertex jobs (repairs missed updates)"},
      {"checkpoint-poll-interval", 0, "600", "seconds between looks at a running run's newest checkpoint"},
      {"checkpoint-lists-per-minute", 0, "200", "checkpoint listings per minute for the whole operator"},
      {"vertex-request-timeout", 0, "30", "seconds a Vertex AI or Model Registry request (connect, send, answer) may take"},
      {"vertex-creates-per-minute", 0, "60", "job creations per minute per project and location (Vertex's quota)"},
      {"vertex-requests-per-minute", 0, "600", "other Vertex requests per minute per project and location"},
      {"log-format", 0, "json", "json or text"},
      {"log-level", 0, "info", "trace, debug, info, warn or error"},
      {"max-concurrent-policy-reconciles", 0, "2", "RetrainingPolicies reconciled at once"},
      {"kube-request-timeout", 0, "30", "seconds a Kubernetes API request (connect, send, answer) may take; watches: --watch-idle-timeout"},
      // The API server sends a bookmark every minute: a watch silent for longer is dead.
      {"watch-idle-timeout", 0, "90", "seconds without an event or bookmark after which a watch is restarted (twice this: stale, /readyz fails)"},
      // An upload asked for whose answer was lost (a crash between them) may still make a version;
      // Vertex keeps no index of uploads by caller, so its version is waited for this long by label.
      {"model-upload-grace-period", 0, "300", "seconds to wait for the version of an upload whose answer a restart lost before uploading again"},
      {"price-catalog", 0, "", "a price file replacing the built-in list prices cost estimates use (docs/cost.md)"},
      {"budget-poll-interval", 0, "30", "seconds between reads of the budget rules' month-to-date spend from Vertex AI"},
      // Two clusters sharing a project never count, adopt or cancel each other's jobs (docs/security.md).
      {"cluster-id", 0, "", "this operator instance's identity, the vto-cluster label of its jobs (default: the kube-system namespace's uid)"},
      {"ownership-key-file", 0, "", "YAML file with the keys that sign and verify the vto-owner tag of this operator's jobs (the chart's Secret)"},
      // Admission by Kueue (docs/kueue.md): needs Kueue installed and the chart's kueue.enabled RBAC.
      {"kueue", 0, "false", "admit runs labelled kueue.x-k8s.io/queue-name through Kueue: a Workload each, no job before Kueue admits it", true},
      // Tests only: the operator's clock is real time plus the seconds written in this file.
      {"clock-offset-file", 0, "", "", false, false, true},
  });
}

namespace {


std::string identity() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  std::random_device random;
  return std::string(host) + "_" + std::to_string(random() % 1000000);
}

controller::ManagerOptions managerOptions(const Flags& flags, const controller::RestConfig& restConfig) {
  controller::ManagerOptions options;
  options.metricsBindAddress = flags.get("metrics-bind-address");
  options.healthProbeBindAddress = flags.get("health-probe-bind-address");
  options.leaderElect = flags.getBool("leader-elect");
  options.leaderElection.leaseNamespace = flags.get("leader-election-namespace").empty()
                                              ? restConfig.defaultNamespace
                                              : flags.get("leader-election-namespace");
  options.leaderElection.identity = identity();
  return options;
}

reconcilers::TrainingRunReconcilerOptions trainingRunOptions(const Flags& flags, const governance::TenancyRules& tenancy) {
  reconcilers::TrainingRunReconcilerOptions options;
  options.defaults = {flags.get("default-project"), flags.get("default-location")};
  options.checkpointPollPeriod = std::chrono::seconds(flags.getInt("checkpoint-poll-interval"));
  options.checkpointListsPerMinute = flags.getInt("checkpoint-lists-per-minute");
  // Vertex polling lists every target at once: just after a start, jobs come from those lists.
  options.awaitFirstPoll = std::chrono::minutes(1);
  options.adoptNamesakes = true;
  options.tenancy = tenancy;
  options.uploadGracePeriod = std::chrono::seconds(std::max(1, flags.getInt("model-upload-grace-period")));
  return options;
}

reconcilers::JobPollerOptions jobPollerOptions(const Flags& flags) {
  reconcilers::JobPollerOptions options;
  options.interval = std::chrono::seconds(flags.getInt("vertex-poll-interval"));
  options.fastInterval = std::chrono::seconds(flags.getInt("vertex-fast-poll-interval"));
  options.fullListInterval = std::chrono::seconds(flags.getInt("vertex-full-list-interval"));
  return options;
}

reconcilers::LogTailOptions logTailOptions(const Flags& flags) {
  reconcilers::LogTailOptions options;
  // Cloud Logging pages hold at most 1,000 entries; the tail is bounded in bytes anyway.
  options.limits.lines = std::clamp(flags.getInt("log-tail-lines"), 1, 1000);
  return options;
}

controller::InformerOptions informerOptions(const Flags& flags, const controller::Resource& resource) {
  controller::InformerOptions options;
  options.resource = resource;
  options.namespaces = flags.getAll("namespace");
  options.watchIdleTimeout = std::chrono::seconds(std::max(1, flags.getInt("watch-idle-timeout")));
  return options;
}

// The TrainingRun metrics come from the informer's cache, as kube-state-metrics does, not from the
// reconciler; the observer exports only while this replica leads.
std::shared_ptr<metrics::TrainingRunObserver> runObserver(controller::Manager& manager, const Clock& clock) {
  auto observer = std::make_shared<metrics::TrainingRunObserver>(clock, reconcilers::trainingRunPhases());
  manager.addCollectable(observer);
  manager.addLoop([observer = observer.get()](std::stop_token stop) {
    observer->setActive(true);
    std::mutex mutex;
    std::condition_variable_any wake;
    std::unique_lock lock(mutex);
    wake.wait(lock, stop, [] { return false; });
    observer->setActive(false);
  });
  return observer;
}

}  // namespace

int run(const Args& args) {
  auto flags = runFlags();
  allowTenancySection(flags);
  if (!flags.parse(args)) return 0;
  setupLogging(flags.get("log-format"), flags.get("log-level"));
  // Parsed before anything starts, so a bad rule stops the operator with the field named.
  auto tenancy = tenancyRulesFromConfig(flags);
  std::optional<governance::PriceCatalog> priceFile;
  if (!flags.get("price-catalog").empty()) priceFile = readPriceCatalog(flags.get("price-catalog"));
  controller::ShutdownSignals signals;  // before any thread starts, so only its watcher gets them
  // glibc gives every thread that allocates an arena of its own (up to 8 per core) and keeps what each
  // frees for that thread: two arenas bound the memory free in idle arenas (docs/benchmarks.md).
  mallopt(M_ARENA_MAX, 2);

  RealClock realClock;
  std::optional<FileClock> fileClock;
  if (!flags.get("clock-offset-file").empty()) fileClock.emplace(flags.get("clock-offset-file"));
  const Clock& clock = fileClock ? static_cast<const Clock&>(*fileClock) : realClock;
  auto registry = std::make_shared<prometheus::Registry>();
  auto restConfig = controller::resolveRestConfig(flags.get("kubeconfig"), flags.getBool("allow-insecure-endpoints"));
  auto options = managerOptions(flags, restConfig);
  auto runtimeMetrics = std::make_shared<controller::RuntimeMetrics>(*registry);
  controller::RestKubeClient kube(restConfig, runtimeMetrics.get(),
                                  std::chrono::seconds(std::max(1, flags.getInt("kube-request-timeout"))),
                                  controller::ManagedFields::Omit);  // the operator reads none of it
  controller::Manager manager(kube, clock, options, registry, runtimeMetrics);
  auto ownership = jobOwnership(resolveClusterId(kube, flags.get("cluster-id"), signals.token()),
                                flags.get("ownership-key-file"));
  spdlog::info("cluster identity {} (the vto-cluster label of this operator's jobs; jobs {})", ownership->clusterId(),
               ownership->signs() ? "signed and verified with the ownership key" : "not signed: no ownership key");
  metrics::registerBuildInfo(*registry, buildinfo::kVersion, buildinfo::kGitRevision, ownership->clusterId());
  metrics::ApiRequestMetrics requestMetrics(*registry);
  OperatorClients clients(flags, clock, requestMetrics);
  auto processMetrics = std::make_shared<metrics::ProcessMetrics>();  // held here: the manager keeps weak_ptrs
  manager.addCollectable(processMetrics);
  controller::EventRecorderOptions eventOptions;
  eventOptions.onDropped = [&requestMetrics](uint64_t count) { requestMetrics.eventsDropped(count); };
  controller::KubeEventRecorder events(kube, clock, "vto", options.leaderElection.identity, eventOptions);

  auto runInformer = informerOptions(flags, reconcilers::trainingRunResource());
  runInformer.indexedLabel = crd::kRetrainingPolicyLabel;  // a policy's runs, for its reconciler
  auto& runs = manager.addInformer(runInformer);
  auto& policies = manager.addInformer(informerOptions(flags, reconcilers::retrainingPolicyResource()));
  metrics::TrainingRunMetrics trainingRunMetrics(*registry);
  auto observer = runObserver(manager, clock);
  auto runOptions = trainingRunOptions(flags, tenancy);
  // Only with --kueue: vto's Workloads (by their run-uid label), which wake their runs.
  controller::Informer* workloads = nullptr;
  if (flags.getBool("kueue")) {
    workloads = &manager.addInformer(
        reconcilers::workloadInformerOptions(informerOptions(flags, reconcilers::workloadResource())));
    runOptions.kueue = true;
    runOptions.workloads = &workloads->cache();
    runOptions.workloadsSynced = [workloads] { return workloads->hasSynced(); };
  }
  runOptions.ownership = ownership.get();
  runOptions.registry = &clients.registry();
  runOptions.prices = priceFile ? &*priceFile : &governance::PriceCatalog::builtIn();
  // Budgets: the rules' month-to-date spend is read from Vertex by one source (on the leader), not per run.
  metrics::BudgetMetrics budgetMetrics(*registry);
  std::optional<reconcilers::BudgetLedger> budgets;
  std::unique_ptr<controller::PollingSource> budgetRefresh;
  if (std::any_of(tenancy.begin(), tenancy.end(), [](const auto& rule) { return rule.budget.has_value(); })) {
    budgets.emplace(clients.vertex(), clock, tenancy, *runOptions.prices,
                    std::vector<std::string>{flags.get("default-location")}, ownership.get(),
                    [&budgetMetrics](const governance::TenancyRule& rule, const reconcilers::RuleSpend& spend) {
                      budgetMetrics.set(rule.name, spend.spent.toDouble(), rule.budget->monthlyUsd.toDouble());
                    });
    runOptions.budgets = &*budgets;
    auto interval = std::chrono::seconds(std::max(1, flags.getInt("budget-poll-interval")));
    runOptions.budgetRecheckPeriod = interval;
    budgetRefresh = reconcilers::budgetRefreshSource(*budgets, clock, interval);
    manager.addLoop([&budgetRefresh](std::stop_token stop) { budgetRefresh->run(stop); });
  }
  addStorageMigration(manager, kube, flags.getAll("namespace").empty());
  reconcilers::TrainingRunController trainingRuns(
      runs.cache(), {kube, clients.vertex(), clients.gcs(), events, clock, &trainingRunMetrics, observer.get(), clients.logging()},
      runOptions, jobPollerOptions(flags), logTailOptions(flags));
  metrics::RetrainingMetrics retrainingMetrics(*registry);
  reconcilers::RetrainingController retraining(
      policies.cache(), runs.cache(),
      {kube, events, clock, {&clients.gcs(), &clients.prometheus()}, {tenancy, runOptions.defaults}, &retrainingMetrics,
       &trainingRuns.ownWrites(), &clients.registry()});
  // The policies' handler first: it only enqueues, and a run's own handler then reconciles it once its
  // poll target and accelerator claim are current.
  reconcilers::wireRetraining(manager, policies, runs, retraining, flags.getInt("max-concurrent-policy-reconciles"));
  reconcilers::wireTrainingRuns(manager, runs, trainingRuns, flags.getInt("max-concurrent-reconciles"));
  if (workloads != nullptr) reconcilers::wireWorkloads(*workloads, trainingRuns);
  return manager.run(signals.token());
}

}  // namespace vto::cmd
