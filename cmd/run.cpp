// `vto run`: the operator. Wiring only: every decision lives in reconcilers/, every mechanism in
// controller/ and vertex/.
#include <malloc.h>
#include <unistd.h>

#include <condition_variable>
#include <iostream>
#include <mutex>
#include <random>
#include <spdlog/spdlog.h>
#include <stop_token>

#include "cmd/commands.h"
#include "cmd/file_clock.h"
#include "cmd/flags.h"
#include "cmd/logging.h"
#include "cmd/tenancy_config.h"
#include "controller/event_recorder.h"
#include "controller/informer.h"
#include "controller/kube_client.h"
#include "controller/manager.h"
#include "controller/polling_source.h"
#include "controller/runtime_metrics.h"
#include "controller/shutdown_signals.h"
#include "reconcilers/job_poller.h"
#include "reconcilers/retraining_policy_reconciler.h"
#include "reconcilers/training_run_reconciler.h"
#include "metrics/retraining_metrics.h"
#include "metrics/api_request_metrics.h"
#include "metrics/trainingrun_metrics.h"
#include "metrics/process_metrics.h"
#include "metrics/trainingrun_observer.h"
#include "reconcilers/trainingrun_snapshot.h"
#include "cmd/version.h"
#include "vertex/request_observer.h"
#include "vertex/auth.h"
#include "vertex/gcs_client.h"
#include "vertex/prometheus_client.h"
#include "vertex/http_transport.h"
#include "vertex/vertex_client.h"

namespace vto::cmd {
namespace {

Flags runFlags() {
  return Flags("run", "Runs the operator: reconciles TrainingRuns into Vertex AI jobs until SIGTERM.", {
      {"kubeconfig", 0, "", "kubeconfig file; default $KUBECONFIG, then the in-cluster service account"},
      {"namespace", 0, "", "watch only this namespace (repeatable; default all namespaces)", false, true},
      {"vertex-endpoint", 0, "", "Vertex AI base URL (default https://LOCATION-aiplatform.googleapis.com)"},
      {"allow-insecure-endpoints", 0, "false", "allow plain http (credentials in the clear) to a non-loopback Kubernetes, Vertex or GCS endpoint", true},
      {"gcs-endpoint", 0, "", "Cloud Storage base URL (default $STORAGE_EMULATOR_HOST, else storage.googleapis.com)"},
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
      {"vertex-creates-per-minute", 0, "60", "job creations per minute per project and location (Vertex's quota)"},
      {"vertex-requests-per-minute", 0, "600", "other Vertex requests per minute per project and location"},
      {"log-format", 0, "json", "json or text"},
      {"log-level", 0, "info", "trace, debug, info, warn or error"},
      {"max-concurrent-policy-reconciles", 0, "2", "RetrainingPolicies reconciled at once"},
      // Tests only: the operator's clock is real time plus the seconds written in this file.
      {"clock-offset-file", 0, "", "", false, false, true},
  });
}

std::string identity() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  std::random_device random;
  return std::string(host) + "_" + std::to_string(random() % 1000000);
}

}  // namespace

int run(const Args& args) {
  auto flags = runFlags();
  allowTenancySection(flags);
  if (!flags.parse(args)) return 0;
  setupLogging(flags.get("log-format"), flags.get("log-level"));
  // Parsed before anything starts, so a bad rule stops the operator with the field named.
  auto tenancy = tenancyRulesFromConfig(flags);  // for the reconciler's tenancy check
  controller::ShutdownSignals signals;  // before any thread starts, so only its watcher gets them
  // glibc gives every thread that allocates an arena of its own (up to 8 per core) and keeps what each
  // frees for that thread: with the workers, the informers and the event and HTTP threads, some of the
  // peak RSS can be memory free in idle arenas. Two arenas bound that; measured only together with
  // the checkpoint-slot change (peak RSS 50.5 -> 48.8 MiB at 1,000 runs), not on its own.
  mallopt(M_ARENA_MAX, 2);

  RealClock realClock;
  std::optional<FileClock> fileClock;
  if (!flags.get("clock-offset-file").empty()) fileClock.emplace(flags.get("clock-offset-file"));
  const Clock& clock = fileClock ? static_cast<const Clock&>(*fileClock) : realClock;
  auto registry = std::make_shared<prometheus::Registry>();
  auto restConfig = controller::resolveRestConfig(flags.get("kubeconfig"), flags.getBool("allow-insecure-endpoints"));

  controller::ManagerOptions managerOptions;
  managerOptions.metricsBindAddress = flags.get("metrics-bind-address");
  managerOptions.healthProbeBindAddress = flags.get("health-probe-bind-address");
  managerOptions.leaderElect = flags.getBool("leader-elect");
  managerOptions.leaderElection.leaseNamespace = flags.get("leader-election-namespace").empty()
                                                     ? restConfig.defaultNamespace
                                                     : flags.get("leader-election-namespace");
  managerOptions.leaderElection.identity = identity();
  auto runtimeMetrics = std::make_shared<controller::RuntimeMetrics>(*registry);
  controller::RestKubeClient kube(restConfig, runtimeMetrics.get(), std::chrono::seconds(30),
                                  controller::ManagedFields::Omit);  // the operator reads none of it
  controller::Manager manager(kube, clock, managerOptions, registry, runtimeMetrics);

  vertex::CppRestTransport http;
  auto tokens = vertex::defaultTokenSource(http, clock);
  vertex::VertexClientOptions vertexOptions;
  vertexOptions.endpoint = flags.get("vertex-endpoint");
  vertexOptions.allowInsecure = flags.getBool("allow-insecure-endpoints");
  vertexOptions.limits.createsPerMinute = flags.getInt("vertex-creates-per-minute");
  vertexOptions.limits.requestsPerMinute = flags.getInt("vertex-requests-per-minute");
  if (!vertexOptions.endpoint.empty()) vertex::validateEndpoint(vertexOptions.endpoint, vertexOptions.allowInsecure);
  // --- Observability (issue 13): request metrics for Vertex AI and Cloud Storage, build info. ---
  // Each client sends through an ObservedTransport that counts and times every HTTP exchange; the
  // Vertex client also reports its pacer waits. The token source keeps the bare transport.
  metrics::registerBuildInfo(*registry, buildinfo::kVersion, buildinfo::kGitRevision);
  metrics::ApiRequestMetrics apiMetrics(*registry);
  struct VertexRequests final : vertex::RequestObserver {
    metrics::ApiRequestMetrics& to;
    explicit VertexRequests(metrics::ApiRequestMetrics& m) : to(m) {}
    void requestDone(const std::string& method, const std::string& code, Clock::duration took) override {
      to.vertexRequest(method, code, std::chrono::duration<double>(took).count());
    }
    void quotaWaited(Clock::duration waited) override {
      to.vertexQuotaWait(std::chrono::duration<double>(waited).count());
    }
  } vertexRequests(apiMetrics);
  struct GcsRequests final : vertex::RequestObserver {
    metrics::ApiRequestMetrics& to;
    explicit GcsRequests(metrics::ApiRequestMetrics& m) : to(m) {}
    void requestDone(const std::string& method, const std::string& code, Clock::duration) override {
      to.gcsRequest(method, code);
    }
    void quotaWaited(Clock::duration) override {}
  } gcsRequests(apiMetrics);
  vertex::ObservedTransport vertexHttp(http, clock, vertexRequests, vertex::vertexMethodOf);
  vertex::ObservedTransport gcsHttp(http, clock, gcsRequests, vertex::gcsMethodOf);
  vertexOptions.observer = &vertexRequests;
  // --- end observability ---
  vertex::RestVertexClient vertexClient(vertexHttp, *tokens, clock, vertexOptions);
  auto gcsFlag = flags.get("gcs-endpoint");
  vertex::RestGcsClient gcs(gcsHttp, vertex::gcsEndpoint(gcsFlag.empty() ? std::nullopt : std::optional(gcsFlag)),
                            tokens.get(), vertexOptions.allowInsecure);
  metrics::TrainingRunMetrics trainingRunMetrics(*registry);

  controller::InformerOptions informerOptions;
  informerOptions.resource = reconcilers::trainingRunResource();
  informerOptions.namespaces = flags.getAll("namespace");
  informerOptions.indexedLabel = crd::kRetrainingPolicyLabel;  // a policy's runs, for its reconciler
  auto& runs = manager.addInformer(informerOptions);

  reconcilers::JobCache jobs;
  controller::EventRecorderOptions eventOptions;
  eventOptions.onDropped = [&apiMetrics](uint64_t count) { apiMetrics.eventsDropped(count); };
  controller::KubeEventRecorder events(kube, clock, "vto", managerOptions.leaderElection.identity, eventOptions);
  reconcilers::TrainingRunReconcilerOptions reconcilerOptions;
  reconcilerOptions.defaults = {flags.get("default-project"), flags.get("default-location")};
  reconcilerOptions.checkpointPollPeriod = std::chrono::seconds(flags.getInt("checkpoint-poll-interval"));
  reconcilerOptions.checkpointListsPerMinute = flags.getInt("checkpoint-lists-per-minute");
  // The PollingSource below lists every target at once: just after a start, jobs come from those lists.
  reconcilerOptions.awaitFirstPoll = std::chrono::minutes(1);
  reconcilerOptions.tenancy = tenancy;
  controller::OwnWrites ownWrites;  // their watch events reconcile nothing
  reconcilerOptions.ownWrites = &ownWrites;
  reconcilers::TrainingRunReconciler reconciler(runs.cache(), kube, vertexClient, gcs, jobs, events, clock,
                                                reconcilerOptions, &trainingRunMetrics);
  manager.addController("trainingrun", reconciler, flags.getInt("max-concurrent-reconciles"));
  auto& queue = manager.queue("trainingrun");

  // RetrainingPolicies: their own informer; their runs come from the TrainingRun informer's label index,
  // and any change of a run wakes its policy (a run's end frees a Forbid slot or a pending request).
  metrics::RetrainingMetrics retrainingMetrics(*registry);
  controller::InformerOptions policyInformerOptions;
  policyInformerOptions.resource = reconcilers::retrainingPolicyResource();
  policyInformerOptions.namespaces = flags.getAll("namespace");
  auto& policies = manager.addInformer(policyInformerOptions);
  vertex::PrometheusClient prometheus(http, flags.getBool("allow-insecure-endpoints"));
  reconcilers::RetrainingPolicyReconciler policyReconciler(policies.cache(), runs.cache(), kube, events, clock,
                                                           &retrainingMetrics, {&gcs, &prometheus},
                                                           {tenancy, reconcilerOptions.defaults});
  manager.addController("retrainingpolicy", policyReconciler, flags.getInt("max-concurrent-policy-reconciles"));
  auto& policyQueue = manager.queue("retrainingpolicy");
  policies.addHandler(controller::enqueueKey(policyQueue));
  runs.addHandler([&policyQueue](const nlohmann::json& run) {
    const auto& meta = run.value("metadata", nlohmann::json::object());
    auto policy = meta.value("labels", nlohmann::json::object()).value(crd::kRetrainingPolicyLabel, "");
    if (!policy.empty()) policyQueue.add({meta.value("namespace", ""), policy});
  });

  // --- Observability (issue 13): TrainingRun metrics derived from the informer cache, like
  // kube-state-metrics; the reconciler is not involved. Every change of a run goes to the observer;
  // a run no longer in the cache (same uid) was deleted (the handler is below, shared with the Vertex
  // poll targets). Running jobs' accelerator and machine time
  // is accounted when scraped. The loop runs only on the leader, so only the leader exports them.
  auto trainingRunObserver = std::make_shared<metrics::TrainingRunObserver>(clock, reconcilers::trainingRunPhases());
  manager.addCollectable(trainingRunObserver);
  auto processMetrics = std::make_shared<metrics::ProcessMetrics>();  // held here: the manager keeps weak_ptrs
  manager.addCollectable(processMetrics);
  manager.addLoop([observer = trainingRunObserver.get()](std::stop_token stop) {
    observer->setActive(true);
    std::mutex mutex;
    std::condition_variable_any wake;
    std::unique_lock lock(mutex);
    wake.wait(lock, stop, [] { return false; });
    observer->setActive(false);
  });
  // --- end observability ---

  // Vertex has no watch: a PollingSource polls each (project, location, kind) that unfinished runs
  // use, on its own schedule and backoff, and wakes the runs whose jobs changed (by uid, an index).
  reconcilers::PollTargets targets(reconcilerOptions.defaults);
  // The poll targets, the accelerator ledger and the run metrics read the same decoded run: one
  // decode per watch event.
  auto& accelerators = reconciler.accelerators();
  runs.addHandler([&runs, &targets, &accelerators, &queue, observer = trainingRunObserver.get()](const nlohmann::json& run) {
    auto key = controller::keyOf(run);
    auto uid = run["metadata"].value("uid", "");
    auto wake = [&](const std::vector<controller::ObjectKey>& keys) {
      for (const auto& waiting : keys) queue.add(waiting);
    };
    if (runs.cache().uidAt(key) != uid) {  // gone, or replaced by a namesake
      targets.update(key, nullptr);
      wake(accelerators.update(uid, nullptr));
      observer->forget(uid);
      return;
    }
    std::optional<crd::TrainingRun> decoded;
    try {
      decoded = crd::decodeTrainingRun(run);
    } catch (const std::exception&) {
      // Undecodable: the reconciler reports it Invalid; it has no job to poll and no machines.
    }
    const auto* decodedRun = decoded ? &*decoded : nullptr;
    targets.update(key, decodedRun);
    wake(accelerators.update(uid, decodedRun));
    auto generation = run["metadata"].value("generation", int64_t{0});
    observer->observe(reconcilers::trainingRunSnapshot(run, decodedRun, !observer->hasPools(uid, generation)));
  });
  // After the handler above: a run is reconciled only once its poll target and its accelerator
  // claim are current (admission must see every older run's claim).
  runs.addHandler(controller::enqueueUnlessOwnWrite(queue, ownWrites));
  reconcilers::JobPollerOptions pollerOptions;
  pollerOptions.interval = std::chrono::seconds(flags.getInt("vertex-poll-interval"));
  pollerOptions.fastInterval = std::chrono::seconds(flags.getInt("vertex-fast-poll-interval"));
  pollerOptions.fullListInterval = std::chrono::seconds(flags.getInt("vertex-full-list-interval"));
  reconcilers::JobPoller poller(vertexClient, jobs, clock, [&](const std::string& uid) {
    if (auto key = runs.cache().keyByUid(uid)) queue.add(*key);
  }, pollerOptions);
  controller::PollingSource polling(
      clock,
      [&] {
        std::vector<std::string> keys;
        for (const auto& [key, target] : targets.current()) keys.push_back(key);
        return keys;
      },
      [&](const std::string& key) {
        auto all = targets.current();
        auto found = all.find(key);
        return found == all.end() ? pollerOptions.interval : poller.poll(found->second);
      });
  manager.addLoop([&](std::stop_token stop) { polling.run(stop); });
  return manager.run(signals.token());
}

}  // namespace vto::cmd
