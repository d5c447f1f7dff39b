#include "reconcilers/trainingrun/reconciler.h"

#include <algorithm>
#include <limits>
#include <set>

#include <spdlog/spdlog.h>

#include "base/json_fields.h"
#include "base/rfc3339.h"
#include "controller/event.h"
#include "controller/finalizers.h"
#include "crd/labels.h"
#include "crd/placement.h"
#include "reconcilers/jobs/failure_class.h"
#include "reconcilers/trainingrun/capacity.h"
#include "crd/validation.h"
#include "vertex/api_error.h"
#include "vertex/auth.h"
#include "vertex/json_codec.h"
#include "vertex/rate_limiter.h"

namespace vto::reconcilers {

using controller::Result;

const controller::Resource& trainingRunResource() {
  static const controller::Resource resource{"vto.dev", "v1beta1", "trainingruns", true};
  return resource;
}

TrainingRunReconciler::TrainingRunReconciler(const controller::ObjectCache& runs, controller::KubeClient& kube,
                                             vertex::VertexClient& vertex, vertex::GcsClient& gcs, JobCache& jobs,
                                             controller::EventRecorder& events, const Clock& clock,
                                             TrainingRunReconcilerOptions options, metrics::TrainingRunMetrics* metrics)
    : runs_(runs),
      kube_(kube),
      vertex_(vertex),
      gcs_(gcs),
      jobs_(jobs),
      events_(events),
      clock_(clock),
      options_(options),
      decideOptions_{.resyncPeriod = options.resyncPeriod,
                     .cancelPollPeriod = options.cancelPollPeriod,
                     .firstPollWait = std::chrono::seconds(5),
                     .quotaRecheckPeriod = options.quotaRecheckPeriod,
                     .budgetRecheckPeriod = options.budgetRecheckPeriod,
                     .uploadGracePeriod = options.uploadGracePeriod,
                     .clusterId = options.ownership != nullptr ? options.ownership->clusterId() : ""},
      metrics_(metrics),
      checkpoints_(options.checkpointPollPeriod, options.checkpointListsPerMinute),
      accelerators_(options.tenancy, options.defaults,
                    [&jobs](const std::string& name) -> std::optional<bool> {
                      auto ended = jobs.ended(name);
                      return ended ? std::optional(!*ended) : std::nullopt;
                    }),
      namespaces_(kube, clock, options.tenancy),
      startedAt_(clock.now()) {
  // The one place that decides which jobs are this operator's: everything else reads the cache.
  jobs.setOwnership(options_.ownership);
}

Result TrainingRunReconciler::reconcile(const controller::ObjectKey& key) {
  auto cached = runs_.get(key);
  if (!cached) {
    held_.release(key);
    if (options_.ownWrites != nullptr) options_.ownWrites->forget(key);
    return {};  // deleted: the finalizer already did its work
  }
  // A cache still behind this controller's own last write would have us write again and conflict:
  // the echo of that write brings the run back.
  if (options_.ownWrites != nullptr && options_.ownWrites->behind(*cached)) return {};
  auto observed = observe(*cached);
  if (observed.kueue.behind) return {};  // the echo of our own write on its Workload brings it back
  // A run decided on before its Workload is cached would take an eviction's cancel for a user's.
  if (observed.kueue.unsynced) return {.requeueAfter = std::chrono::seconds(1)};
  return act(*cached, observed, decide(observed, decideOptions_));
}

namespace {
// A member of the cached object, read in place (an absent one reads as {}): no copy per reconcile.
// A pass that decided on figures another run changed before act could take them (a budget's room,
// the accelerator cap's): nothing of it is written, and the run is decided again shortly.
Plan decideAgainSoon() {
  Plan again;
  again.requeueAfter = std::chrono::milliseconds(200);
  return again;
}

// The job's labels as Vertex gets them: the rendered ones, the budget rule's team, then this
// operator's cluster and its ownership tag over all of them.
std::map<std::string, std::string> signedLabels(const Observed& o, const nlohmann::json& rendered, const JobOwnership* ownership) {
  auto labels = rendered.get<std::map<std::string, std::string>>();
  if (auto team = trainingrun::teamOf(o); !team.empty()) labels[kTeamLabel] = team;
  if (ownership != nullptr) ownership->sign(labels);
  return labels;
}

const nlohmann::json& memberOf(const nlohmann::json& object, const char* name) {
  static const nlohmann::json empty = nlohmann::json::object();
  auto found = object.find(name);
  return found != object.end() ? *found : empty;
}
}  // namespace

Observed TrainingRunReconciler::observe(const nlohmann::json& object) {
  Observed o;
  o.now = clock_.now();
  o.defaults = options_.defaults;
  o.prices = options_.prices;
  o.hasFinalizer = controller::containsFinalizer(object, kFinalizer);
  o.statusStored = object.contains("status");
  try {
    o.run = crd::decodeTrainingRun(object);
    o.metadata = o.run->metadata;
    o.status = o.run->status;
  } catch (const std::exception& e) {
    o.decodeError = e.what();
    // Read apart, so that a bad spec still leaves the metadata and whatever status can be read.
    o.metadata = crd::decodeObjectMeta(memberOf(object, "metadata"), "metadata");
    try {
      o.status = crd::decodeTrainingRunStatus(memberOf(object, "status"), "status");
    } catch (const std::exception&) {
      o.status = {};  // a status we cannot read is rebuilt from what we observe
    }
  }
  if (auto held = held_.heldFor(controller::keyOf(object), o.metadata.uid)) {
    o.status.phase = held->phase;
    o.status.history = std::move(held->history);
    o.statusHeld = true;
    o.statusStored = false;  // decide plans the write, whatever it finds
  }
  bool deleting = !o.metadata.deletionTimestamp.empty();
  observeWorkload(o);
  if (!o.run || o.kueue.behind || o.kueue.unsynced) return o;
  o.vertex.impostors = jobs_.impostorsOf(o.metadata.uid);
  if (const auto* tails = options_.logTails; tails != nullptr && tails->enabled()) {
    o.logTails.enabled = true;
    o.logTails.read = tails->tailsOf(o.metadata.uid);
  }
  if (ended(o) && !deleting) {
    // Its job has nothing more to say; what follows a success is read from the registry.
    if (workAfterSuccess(o)) observeRegistry(o);
    return o;
  }

  const auto& attempts = o.status.history.attempts;
  const auto* attempt = attempts.empty() ? nullptr : &attempts.back();
  if (attempt != nullptr && !attempt->jobName.empty()) {
    // Where the job runs is read from its name, never from the spec.
    auto target = pollTargetOfJob(attempt->jobName);
    if (target) {
      if (auto failure = jobs_.pollFailure(target->jobPrefix())) o.vertex.unavailable = failure;
    }
    // Status is writable by others: a name outside the run's project and locations is not even read
    // (unless vto saw it, or Vertex wrote the project's number into it, which only its label can tell).
    bool mayRead = jobs_.get(attempt->jobName) || isInTheRunsPlace(o.run->spec, o.defaults, attempt->jobName) ||
                   (target && isProjectNumber(target->where.project));
    // The job spec.adoptJob named, which this run took as attempt 1: its own again after a restart.
    bool adopted = attempt->attempt == 1 && !o.run->spec.adoptJob.empty() && attempt->jobName == o.run->spec.adoptJob;
    if (adopted && mayRead) jobs_.adopt(attempt->jobName, o.metadata.uid);
    if (mayRead) o.vertex.job = readJob(attempt->jobName, target, o);
    // Status is writable by others: only a job vto made for this run (or for the namesake it took
    // over), or the one it adopted (still nobody else's), is followed or cancelled.
    bool theRuns = o.vertex.job && (isTheRunsJob(o.vertex.job->labels, o.metadata.namespace_, o.metadata.name, o.metadata.uid) ||
                                    (adopted && !adoptionRefusal(o, o.vertex.job->labels, false)));
    if (!mayRead || (o.vertex.job && !theRuns)) {
      o.vertex.job.reset();
      o.vertex.notOwned = true;
    }
  } else if (!o.run->spec.adoptJob.empty() && !deleting && (attempt == nullptr || attempt->attempt == 1)) {
    observeAdoption(o);
  } else if (options_.adoptNamesakes && !deleting && (attempt == nullptr || attempt->attempt == 1) && observeRestored(o)) {
    // its history, read back from Vertex
  } else if (options_.adoptNamesakes && !deleting && !o.run->spec.suspend && (attempt == nullptr || attempt->attempt == 1)) {
    observeNamesake(o);
  } else if (deleting || o.run->spec.suspend) {
    // Not in status: a crash may have come between create and the status write. Cancel what exists,
    // where the job would have been created.
    auto where = crd::locationOf(o.run->spec, o.defaults);
    if (!where.project.empty() && !where.location.empty()) {
      PollTarget target{where, crd::jobKindOf(o.run->spec)};
      if (auto found = findByLabels(o, target, attempt != nullptr ? attempt->attempt : 1)) {
        o.vertex.job = cachedJobOf(*found, o.now);
      }
    }
  }
  observeTenancy(o);
  observeCheckpoint(o);
  observeBuckets(o);
  observePriority(o);
  return o;
}

void TrainingRunReconciler::observeWorkload(Observed& o) {
  if (!queueNameOf(o.metadata)) return;  // not Kueue's: nothing is read
  o.kueue.enabled = options_.kueue;
  if (!options_.kueue || options_.workloads == nullptr) return;
  auto name = workloadNameOf(o.metadata);
  auto cached = options_.workloads->get({o.metadata.namespace_, name});
  if (!cached) {
    // Bounded: without Kueue's CRDs the informer never syncs, and the run must still come to say so.
    o.kueue.unsynced = options_.workloadsSynced && !options_.workloadsSynced() && o.now - startedAt_ < options_.awaitWorkloadSync;
    return;
  }
  if (options_.workloadWrites != nullptr && options_.workloadWrites->behind(*cached)) {
    o.kueue.behind = true;
    return;
  }
  auto view = readWorkload(*cached);
  // Its name is the run's, but anyone who may create Workloads could have taken it: only the one the
  // run controls is followed, finished or deleted.
  if (view.controllerUid != o.metadata.uid) {
    o.kueue.foreign = "a Workload named " + name + " already exists in " + o.metadata.namespace_ +
                      " and this run does not control it: vto never uses or replaces another's Workload (delete "
                      "it, and the run gets its own)";
    return;
  }
  o.kueue.workload = std::move(view);
  o.kueue.workloadObject = std::move(cached);
}

void TrainingRunReconciler::observePriority(Observed& o) {
  // Only just before a Workload is made: its priority is read once, then Kueue keeps it current.
  auto priorityClass = priorityClassOf(o.metadata);
  if (priorityClass.empty() || !o.kueue.enabled || o.kueue.workload || o.kueue.foreign || !isKueueObjectName(priorityClass))
    return;
  bool mayCreate = o.metadata.deletionTimestamp.empty() && !o.run->spec.suspend && !ended(o) &&
                   (!o.vertex.job || vertex::isTerminal(o.vertex.job->state));
  if (!mayCreate) return;
  try {
    auto found = kube_.get(workloadPriorityClassResource(), "", priorityClass);
    const auto& value = found.contains("value") ? found["value"] : nlohmann::json();
    if (value.is_number_integer() && value.get<int64_t>() >= std::numeric_limits<int32_t>::min() &&
        value.get<int64_t>() <= std::numeric_limits<int32_t>::max()) {
      o.kueue.priority = static_cast<int32_t>(value.get<int64_t>());
    } else {
      o.kueue.priorityProblem = "the WorkloadPriorityClass " + priorityClass + " (label " + kPriorityClassLabel +
                                ") has no whole-number value";
    }
  } catch (const controller::ApiError& e) {
    if (e.isRetryable()) throw;
    o.kueue.priorityProblem = e.isNotFound() ? "the WorkloadPriorityClass " + priorityClass + " (label " +
                                                   kPriorityClassLabel + ") does not exist: create it, or name another"
                                             : "reading the WorkloadPriorityClass " + priorityClass + ": " + e.what();
  }
}

Plan TrainingRunReconciler::createPlannedWorkload(const Observed& o, Plan plan) {
  const auto& body = *plan.createWorkload;
  KueueReading refusal = o.kueue;
  try {
    kube_.create(workloadResource(), o.metadata.namespace_, body);
    return plan;
  } catch (const controller::ApiError& e) {
    if (e.isAlreadyExists()) {
      // The cache is behind our own earlier create, or someone took the name: the one read answers which.
      auto name = metadataField(body, "name");
      auto existing = kube_.get(workloadResource(), o.metadata.namespace_, name);
      if (controllerUidOf(existing) == o.metadata.uid) return plan;  // ours: its event brings it
      refusal.foreign = "a Workload named " + name + " already exists in " + o.metadata.namespace_ +
                        " and this run does not control it: vto never uses or replaces another's Workload "
                        "(delete it, and the run gets its own)";
    } else if (e.isNotFound()) {
      refusal.notInstalled = true;
    } else if (e.isRetryable()) {
      throw;
    } else {
      refusal.refused = std::string(e.what()) +
                        (e.isForbidden() ? " (the operator's RBAC lacks create on workloads.kueue.x-k8s.io: install "
                                           "the chart with kueue.enabled=true)"
                                         : "");
    }
  }
  // Decided again knowing it: the run says why, and nothing else of this plan happens.
  Observed again = o;
  again.hasFinalizer = true;  // act put it on before
  again.kueue = std::move(refusal);
  auto decided = decide(again, decideOptions_);
  decided.addFinalizer = plan.addFinalizer;
  return decided;
}

void TrainingRunReconciler::readTenancyRules(Observed& o) {
  if (options_.tenancy.empty() || o.tenancy.rules != nullptr) return;  // no rules, or read this pass already
  o.tenancy.rules = &options_.tenancy;
  o.tenancy.ns = namespaces_.get(o.metadata.namespace_);
}

void TrainingRunReconciler::observeRegistry(Observed& o) {
  readTenancyRules(o);
  auto& reading = o.registry;
  reading.read = true;
  if (tenancyOf(o).violation) return;  // refused before any call
  if (options_.registry == nullptr) {
    reading.failure = VertexFailure{0, "this operator runs without a Model Registry client"};
    return;
  }
  auto& registry = *options_.registry;
  const auto& spec = *o.run->spec.model;
  const auto& recorded = o.status.history.model;
  auto artifactUri = crd::artifactUriOf(spec, o.run->spec.baseOutputDirectory);
  std::string step = "reading the Model Registry";
  try {
    // Status is writable by others: the operation it names is followed only under the run's own model
    // (its ID read from the name, the rest from the spec), and the version read is that model's.
    auto model = modelNameOf(o.run->spec, o.defaults);
    auto operationId = recorded ? vertex::parseModelName(recorded->operation) : std::nullopt;
    if (operationId && !operationId->operationId.empty()) {
      auto operation = (operationId->modelId.empty() ? modelLocationOf(o.run->spec, o.defaults).parent() : model) +
                       "/operations/" + operationId->operationId;
      step = "reading the upload " + operation;
      reading.upload = registry.getUploadOperation(operation);
      if (reading.upload->operation.done && reading.upload->result) {
        reading.version = registry.getModel(model + "@" + reading.upload->result->versionId);
      }
    } else {
      // Exactly one version per run: the run's own, if any, whatever pass or process uploaded it. Its
      // own label key: a model's labels, merged into every version, cannot shadow it.
      step = "listing the versions of " + model;
      // A run restored without status looks under the runs it was too (its version may be theirs).
      auto uids = recorded ? std::vector<std::string>{} : crd::runUidsOf(o.metadata);
      std::erase(uids, o.metadata.uid);
      uids.insert(uids.begin(), o.metadata.uid);
      for (const auto& uid : uids) {
        vertex::ListVersionsOptions list;
        list.filter = vertex::modelLabelFilter({{runVersionLabelKey(uid), "true"}});
        try {
          auto page = registry.listVersions(model, list);
          reading.modelExists = true;
          if (const auto* own = runVersionOf(page.versions, uid)) {
            reading.version = *own;
            reading.versionRunUid = uid;
            break;
          }
        } catch (const vertex::ApiError& e) {
          if (!e.isNotFound()) throw;  // 404: the first upload creates the model
          break;
        }
      }
      bool waiting = recorded && recorded->uploadStartTime && o.now < *recorded->uploadStartTime + options_.uploadGracePeriod;
      if (!reading.version && !waiting) {
        step = "listing " + artifactUri;
        auto where = vertex::parseGcsUri(artifactUri);
        vertex::ListObjectsOptions one;
        one.maxResults = 1;  // existence only
        one.fields = "items(name),nextPageToken";
        reading.artifactPresent = !gcs_.listObjectsPage(where.bucket, where.object, "", one).objects.empty();
      }
    }
    bool imported = recorded && recorded->evaluationImported;
    if (reading.version && spec.evaluation && !imported) {
      step = "listing the evaluations of " + reading.version->versionName();
      auto own = evaluationDisplayName(reading.versionRunUid.empty() ? o.metadata.uid : reading.versionRunUid);
      auto page = registry.listEvaluations(reading.version->versionName(), 100, "");
      for (const auto& evaluation : page.evaluations) {
        if (evaluation.displayName == own) reading.importedMetrics = evaluation.metrics;
      }
      if (!reading.importedMetrics) {
        // Only under the artifact directory the rules checked, and never more than the bound: the
        // file is the tenant's, and its bytes past the bound are never asked for.
        auto location = crd::metricsFileOf(o.run->spec);
        if (!location.problem.empty()) {
          reading.metricsFileRefused = location.problem;
        } else {
          auto file = vertex::parseGcsUri(location.uri);
          step = "reading " + location.uri;
          reading.metricsFile = gcs_.readObject(file.bucket, file.object, crd::kMaxMetricsFileBytes);
        }
      }
    }
  } catch (const vertex::ApiError& e) {
    if (e.isRetryable()) throw;  // the work queue backs off
    reading.failure = VertexFailure{e.httpStatus(), step + ": " + e.what()};
    spdlog::warn("{}/{}: {}", o.metadata.namespace_, o.metadata.name, reading.failure->message);
  }
}

void TrainingRunReconciler::observeTenancy(Observed& o) {
  if (options_.tenancy.empty()) return;
  readTenancyRules(o);
  // Others' claims matter only where decide may create a job (no job yet, or one that ended) for a
  // run that wants accelerators on some placement (a CPU-only spec may fail over to GPUs); a running
  // run's pass never reads them.
  bool mayCreate = o.metadata.deletionTimestamp.empty() && !o.run->spec.suspend &&
                   (!o.vertex.job || vertex::isTerminal(o.vertex.job->state));
  if (options_.budgets != nullptr && mayCreate) {
    for (size_t i = 0; i < options_.tenancy.size(); ++i)
      if (options_.tenancy[i].budget)
        if (auto spend = options_.budgets->spendOf(i, o.metadata.uid)) o.tenancy.budgets.emplace(i, std::move(*spend));
  }
  if (!accelerators_.capped() || !mayCreate || !crd::anyPlacementWantsAccelerators(o.run->spec)) return;
  o.tenancy.otherClaims = accelerators_.claimsOtherThan(o.metadata.uid, [&](const std::string& ns) {
    return ns == o.metadata.namespace_ ? o.tenancy.ns : namespaces_.get(ns);
  });
  for (const auto& source : accelerators_.sources()) {
    auto prefix = source.target.jobPrefix();
    if (jobs_.listed(prefix) || o.tenancy.unlistedCaps.count(source.rule)) continue;
    std::string unread = prefix;
    if (auto failure = jobs_.pollFailure(prefix)) unread += " (the last list failed: " + failure->message + ")";
    o.tenancy.unlistedCaps.emplace(source.rule, std::move(unread));
  }
}

void TrainingRunReconciler::observeBuckets(Observed& o) {
  // Only where decide is about to create attempt 1: a valid, allowed, unsuspended run with no job.
  const auto& attempts = o.status.history.attempts;
  bool first = attempts.empty() || (attempts.size() == 1 && attempts[0].jobName.empty() && attempts[0].attempt == 1);
  if (!first || o.vertex.job || !o.metadata.deletionTimestamp.empty() || o.run->spec.suspend) return;
  if (crd::hasErrors(crd::validate(*o.run)) || tenancyOf(o).violation) return;  // refused before any GCS call
  auto look = [&](const std::string& uri) {
    auto listing = checkpointListing(uri);
    vertex::ListObjectsOptions one;
    one.maxResults = 1;  // existence and access only: never the whole prefix
    one.fields = "items(name),nextPageToken";
    gcs_.listObjectsPage(listing.bucket, listing.object, "", one);
  };
  auto directory = crd::checkpointDirectoryOf(o.run->spec);
  auto outputBucket = checkpointListing(o.run->spec.baseOutputDirectory).bucket;
  auto checkpointBucket = checkpointListing(directory).bucket;
  // Runs of a fleet share their buckets: one listed moments ago for another run answers for this one.
  if (buckets_.recentlyListed(checkpointBucket, o.now) &&
      (outputBucket == checkpointBucket || buckets_.recentlyListed(outputBucket, o.now))) {
    o.checkpoints.listed = true;
    return;
  }
  // The output bucket's existence, unless the checkpoint listing below shows it (the same bucket,
  // as by default): one GCS request per new run instead of two.
  if (outputBucket != checkpointBucket) {
    try {
      look(o.run->spec.baseOutputDirectory);
      buckets_.listed(outputBucket, o.now);
    } catch (const vertex::ApiError& e) {
      if (e.isNotFound()) {
        o.outputBucketMissing = outputBucket;
        return;
      }
      if (!e.isForbidden()) throw;  // retried with backoff
    }
  }
  try {
    look(directory);
    o.checkpoints.listed = true;
    buckets_.listed(checkpointBucket, o.now);
  } catch (const vertex::ApiError& e) {
    if (e.isNotFound()) {
      o.outputBucketMissing = checkpointListing(directory).bucket;
    } else if (e.isForbidden()) {
      o.checkpoints.error = e.what();
      o.checkpoints.forbidden = true;
    } else {
      throw;
    }
  }
}

bool ListedBuckets::recentlyListed(const std::string& bucket, Clock::time_point now) const {
  std::lock_guard lock(mutex_);
  auto found = listedAt_.find(bucket);
  return found != listedAt_.end() && now - found->second < kFreshFor;
}

void ListedBuckets::listed(const std::string& bucket, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  if (listedAt_.size() >= kMaxBuckets) {
    std::erase_if(listedAt_, [&](const auto& entry) { return now - entry.second >= kFreshFor; });
    if (listedAt_.size() >= kMaxBuckets) listedAt_.clear();  // bounded whatever the specs name
  }
  listedAt_[bucket] = now;
}

void HeldStatuses::hold(const controller::ObjectKey& key, const std::string& uid, const crd::TrainingRunStatus& status) {
  crd::TrainingRunStatus held;
  held.phase = status.phase;
  held.history = status.history;
  auto encoded = crd::encodeTrainingRunStatus(held).dump();
  std::lock_guard lock(mutex_);
  held_.insert_or_assign(key, Held{uid, std::move(encoded)});
}

std::optional<crd::TrainingRunStatus> HeldStatuses::heldFor(const controller::ObjectKey& key, const std::string& uid) const {
  std::string encoded;
  {
    std::lock_guard lock(mutex_);
    auto found = held_.find(key);
    if (found == held_.end() || found->second.uid != uid) return std::nullopt;
    encoded = found->second.status;
  }
  return crd::decodeTrainingRunStatus(nlohmann::json::parse(encoded), "status");
}

void HeldStatuses::release(const controller::ObjectKey& key) {
  std::lock_guard lock(mutex_);
  held_.erase(key);
}

size_t HeldStatuses::size() const {
  std::lock_guard lock(mutex_);
  return held_.size();
}

std::optional<CachedJob> TrainingRunReconciler::readJob(const std::string& jobName,
                                                        const std::optional<PollTarget>& target, Observed& o) {
  auto cached = jobs_.get(jobName);
  if (cached && o.now - cached->readAt < options_.jobStaleAfter) return cached;
  // Only where no decision acts on the job's absence (deletion and suspension cancel what exists).
  bool following = o.metadata.deletionTimestamp.empty() && !o.run->spec.suspend;
  bool starting = o.now - startedAt_ < options_.awaitFirstPoll;
  if (!cached && starting && following && target && !o.vertex.unavailable && !jobs_.listed(target->jobPrefix())) {
    o.vertex.awaitingFirstPoll = true;
    return std::nullopt;
  }
  try {
    auto job = vertex_.getJob(jobName);
    jobs_.put(job, o.now);
    if (!jobs_.trusts(job)) {
      // Status names a job this operator did not make: never followed, read or cancelled.
      o.vertex.notOwned = true;
      return std::nullopt;
    }
    return jobs_.get(jobName);
  } catch (const vertex::ApiError& e) {
    if (e.isNotFound()) {
      jobs_.erase(jobName);
      o.vertex.notFound = true;
      return std::nullopt;
    }
    // Retryable (429, 5xx, an odd answer): the work queue backs off, never sooner than retryAfter.
    if (e.isRetryable()) throw;
    // Terminal (e.g. 403): decide reports Vertex as unavailable, with the stale job if we have one.
    o.vertex.unavailable = VertexFailure{e.httpStatus(), "reading " + jobName.substr(0, 200) + ": " + e.what()};
    spdlog::warn("{}/{}: {}", o.metadata.namespace_, o.metadata.name, o.vertex.unavailable->message);
    return cached;
  }  // any other RetryableError (transport, quota pacing) propagates to the work queue too
}

Plan TrainingRunReconciler::uploadPlannedModel(const Observed& o, Plan plan, std::optional<nlohmann::json>& written,
                                              const nlohmann::json& cached) {
  // The journal first: once status holds uploadStartTime, a crash after the call waits for this
  // upload's version instead of making a second one.
  auto journaled = plan.status ? *plan.status : o.status;
  if (plan.status) {
    const auto& before = written ? *written : cached;
    auto status = writeStatus(before, *plan.status);
    rememberOwnWrite(before, status);
    written = std::move(status);
  }
  std::optional<vertex::UploadOperation> started;
  std::optional<VertexFailure> refused;
  std::optional<std::chrono::milliseconds> retryAfter;
  try {
    started = options_.registry->uploadModel(plan.uploadModel->where, plan.uploadModel->request);
  } catch (const vertex::ApiError& e) {
    // A 5xx, or a success that names no operation: it may have started, as when no answer came.
    if (uploadMayHaveStarted(e.httpStatus())) throw;
    refused = VertexFailure{e.httpStatus(), e.what()};  // a definite refusal: no upload started
    retryAfter = e.retryAfter();
  } catch (const vertex::QuotaPacingError& e) {
    refused = VertexFailure{429, e.what()};  // never sent
    retryAfter = e.retryAfter();
  } catch (const vertex::AuthError& e) {
    refused = VertexFailure{0, e.what()};  // no token: never sent
  } catch (const RefusedRequestError& e) {
    refused = VertexFailure{400, e.what()};  // never put on the wire, and never will be as it is
  }  // no answer at all (a timeout, a reset): it may have started; the journal stays for the grace period
  auto recorded = recordUpload(o, journaled, std::move(plan), started, refused);
  recorded.retryAfter = retryAfter;
  return recorded;
}

Plan TrainingRunReconciler::createPlannedJob(const Observed& o, Plan plan) {
  // What this pass holds of a budget until its job exists; given back if no job came of it, kept
  // when the create's answer was lost (the job may exist: the hold follows it, BudgetLedger::jobSeen).
  struct BudgetHold {
    BudgetLedger* ledger;
    const std::string& uid;
    std::optional<BudgetReservation> held;
    bool keep = false;
    ~BudgetHold() {
      if (held && ledger != nullptr && !keep) ledger->release(held->rule, uid);
    }
    void becameJob(const std::string& jobName) {
      if (held && ledger != nullptr) ledger->noteCreated(held->rule, uid, jobName, held->usd);
      held.reset();
    }
  } hold{options_.budgets, o.metadata.uid, std::nullopt};
  // A refusal for an accelerator quota moves the attempt to the next placement, at most once each.
  for (size_t tries = 0; plan.createJob && tries <= crd::placementCount(o.run->spec); ++tries) {
    const auto create = *plan.createJob;
    // A budget's room is taken before the create, and only if nobody took it since this pass read it;
    // otherwise this pass decided on stale figures: the run is reconciled again at once. A fallback
    // takes it again at its own price (replacing the hold of the placement it leaves).
    if (const auto& reserved = plan.budgetReservation; reserved && options_.budgets != nullptr) {
      if (!options_.budgets->reserve(reserved->rule, reserved->seenGeneration, o.metadata.uid, reserved->usd,
                                     reserved->unconditionally)) {
        return decideAgainSoon();
      }
      hold.held = reserved;
    } else if (hold.held) {
      options_.budgets->release(hold.held->rule, o.metadata.uid);  // the fallback is under no budget
      hold.held.reset();
    }
    // The cap's room is taken under one lock with every other admission; lost to a run that took it
    // first, this pass decided on claims that no longer hold: nothing is written, decide again.
    if (const auto& room = plan.acceleratorReservation) {
      auto namespaceInfo = [&](const std::string& ns) {
        return ns == o.metadata.namespace_ ? o.tenancy.ns : namespaces_.get(ns);
      };
      if (!accelerators_.reserve(o.metadata.uid, controller::ObjectKey{o.metadata.namespace_, o.metadata.name},
                                 create.attempt, room->rule, room->claim, room->allowedBy, namespaceInfo)) {
        return decideAgainSoon();
      }
    }
    // Exactly once: a job for this run and attempt that already exists (a crash came between its
    // create and the status write) is adopted, never created twice. A first attempt whose finalizer
    // this pass added needs no lookup: every job is created after the finalizer is in place, and the
    // patch was conditional on the version observed without it (one Vertex request less per new run).
    bool fresh = plan.addFinalizer && create.attempt == 1;
    std::optional<vertex::Job> job;
    for (const auto& target : fresh ? std::vector<PollTarget>{} : targetsOf(o, create)) {
      if ((job = findByLabels(o, target, create.attempt))) break;
    }
    bool adopted = job.has_value();
    if (job) {
      accelerators_.release(o.metadata.uid);  // the job is counted now
      hold.becameJob(job->name);
      return recordCreatedJob(o, std::move(plan), cachedJobOf(*job, o.now), adopted);
    }
    try {
      auto at = trainingrun::runAt(*o.run, create.placement);
      if (const auto& reserved = plan.budgetReservation; reserved && reserved->timeout)
        at.spec.scheduling.timeoutSeconds = reserved->timeout->count();
      auto body = crd::renderJob(at, create.attempt, create.resumeFrom);
      body["labels"] = signedLabels(o, body["labels"], jobs_.ownership());
      job = vertex_.createJob(create.where, create.kind, body);
      jobs_.put(*job, o.now);
      accelerators_.release(o.metadata.uid);  // the job is counted now
      hold.becameJob(job->name);
      if (metrics_ != nullptr) metrics_->jobCreated(std::string(vertex::kindName(create.kind)));
      return recordCreatedJob(o, std::move(plan), cachedJobOf(*job, o.now), false);
    } catch (const vertex::ApiError& e) {
      bool quota = o.run->spec.capacity && isAcceleratorQuotaRefusal(e.httpStatus(), e.message());
      // Retryable: the job may exist (a 5xx after the write); both reservations stay until a read
      // shows the job (or the run's next create replaces them).
      if (e.isRetryable() && !quota) {
        hold.keep = true;
        throw;  // the work queue backs off, never sooner than retryAfter
      }
      accelerators_.release(o.metadata.uid);  // refused: no job; a fallback reserves at its own placement
      // Decide again knowing it, on the status this pass has decided so far (no job of this attempt),
      // and on the budgets as they are now (this run's own hold left out).
      Observed again = o;
      again.hasFinalizer = true;  // added above
      if (hold.held) {
        if (auto spend = options_.budgets->spendOf(hold.held->rule, o.metadata.uid))
          again.tenancy.budgets.insert_or_assign(hold.held->rule, std::move(*spend));
      }
      if (quota) {
        if (plan.status) again.status = *plan.status;
        again.vertex.job.reset();
        again.vertex.createQuotaExceeded = e.message();
      } else {
        again.vertex.createRejected = VertexFailure{e.httpStatus(), e.message()};  // refused for good
      }
      auto decided = decide(again, decideOptions_);
      if (!decided.status && again.status != o.status) decided.status = again.status;
      decided.addFinalizer = plan.addFinalizer;
      plan = std::move(decided);
    } catch (...) {
      hold.keep = true;  // no answer at all (a TransportError): the job may exist
      throw;
    }
  }
  return plan;
}

std::vector<PollTarget> TrainingRunReconciler::targetsOf(const Observed& o, const CreateJob& create) const {
  std::vector<PollTarget> targets{{create.where, create.kind}};
  // After a crash, a failover may have created the attempt's job on a placement this pass would not choose.
  for (size_t i = 0; o.run->spec.capacity && i < crd::placementCount(o.run->spec); ++i) {
    auto spec = crd::specAt(o.run->spec, i);
    PollTarget target{crd::locationOf(spec, o.defaults), crd::jobKindOf(spec)};
    if (std::find(targets.begin(), targets.end(), target) == targets.end()) targets.push_back(target);
  }
  return targets;
}

std::optional<vertex::Job> TrainingRunReconciler::findByLabels(const Observed& o, const PollTarget& target, int attempt) {
  vertex::ListOptions list;
  list.filter = std::string("labels.") + crd::kRunUidLabel + "=\"" + crd::sanitizeLabelValue(o.metadata.uid) +
                "\" AND labels." + crd::kAttemptLabel + "=\"" + std::to_string(attempt) + "\"";
  auto page = vertex_.listJobs(target.where, target.kind, list);
  // Labels anyone can copy: only a job this operator made is adopted (the cache remembers the others
  // as impostors, and the run warns about them).
  std::erase_if(page.jobs, [&](const vertex::Job& job) {
    if (jobs_.trusts(job)) return false;
    jobs_.put(job, o.now);
    return true;
  });
  if (page.jobs.empty()) return std::nullopt;
  auto oldest = std::min_element(page.jobs.begin(), page.jobs.end(), [](const auto& a, const auto& b) {
    return a.createTime.value_or(Clock::time_point::max()) < b.createTime.value_or(Clock::time_point::max());
  });
  jobs_.put(*oldest, o.now);
  return *oldest;
}

std::optional<std::string> TrainingRunReconciler::adoptionRefusal(const Observed& o,
                                                                   const std::map<std::string, std::string>& labels,
                                                                   bool askOtherRuns) const {
  const auto& name = o.run->spec.adoptJob;
  auto value = [&](const char* key) { return crd::sanitizeLabelValue(labelOf(labels, key)).substr(0, 63); };
  if (!value(crd::kRunUidLabel).empty() || !value(kClusterLabel).empty() || !value(crd::kNamespaceLabel).empty()) {
    // vto's labels: only this cluster's job for this run (or a run of its name) is this run's to take.
    if (!jobs_.ownership() || !jobs_.ownership()->trusts(labels, std::nullopt)) {
      if (jobs_.adopterOf(name) != o.metadata.uid)
        return "spec.adoptJob " + name + " carries vto's labels (vto-cluster=" + value(kClusterLabel) +
               ") but this cluster's operator did not make it: it is another cluster's, or imitates vto's, and is never "
               "adopted; left untouched";
    } else if (!isTheRunsJob(labels, o.metadata.namespace_, o.metadata.name, o.metadata.uid)) {
      return "spec.adoptJob " + name + " is held by TrainingRun " + value(crd::kNamespaceLabel) + "/" +
             value(crd::kNameLabel) + " (uid " + value(crd::kRunUidLabel) + "), which vto created it for; left untouched";
    }
  }
  if (!askOtherRuns) return std::nullopt;
  // A job is one run's: the run that recorded it, else the one that named it first.
  auto created = o.metadata.creationTimestamp;
  for (const auto& other : runs_.list()) {
    const auto& meta = memberOf(*other, "metadata");
    auto uid = stringField(meta, "uid");
    if (uid == o.metadata.uid) continue;
    const auto& spec = memberOf(*other, "spec");
    bool recorded = false;
    for (const auto& attempt : memberOf(memberOf(*other, "status"), "attempts")) recorded |= stringField(attempt, "jobName") == name;
    bool named = stringField(spec, "adoptJob") == name;
    auto otherCreated = stringField(meta, "creationTimestamp");
    bool first = named && (otherCreated < created || (otherCreated == created && uid < o.metadata.uid));
    auto holder = "TrainingRun " + stringField(meta, "namespace") + "/" + stringField(meta, "name");
    if (recorded) return "spec.adoptJob " + name + " is " + holder + "'s job (its status follows it): a job is one run's; left untouched";
    if (first) return "spec.adoptJob " + name + " is already named by " + holder + "'s spec.adoptJob: a job is one run's; left untouched";
  }
  return std::nullopt;
}

bool TrainingRunReconciler::outsideItsRule(Observed& o) {
  if (options_.tenancy.empty()) return false;
  readTenancyRules(o);
  return tenancyOf(o).violation.has_value();
}

void TrainingRunReconciler::observeAdoption(Observed& o) {
  if (outsideItsRule(o)) return;  // decide refuses the run; its adoptJob is never read
  const auto& name = o.run->spec.adoptJob;
  auto where = crd::locationOf(o.run->spec, o.defaults);
  auto target = pollTargetOfJob(name);
  if (!target || target->where != where || target->kind != crd::jobKindOf(o.run->spec)) {
    o.vertex.adoptionRefused = "spec.adoptJob " + name.substr(0, 200) + " is not a " +
                               std::string(vertex::kindName(crd::jobKindOf(o.run->spec))) + " in the run's project and location (" +
                               where.parent() + "): a run adopts only a job of its own place; left untouched";
    return;
  }
  if (auto refused = adoptionRefusal(o, {}, true)) {
    o.vertex.adoptionRefused = refused;
    return;
  }
  try {
    auto job = vertex_.getJob(name);
    if (auto refused = adoptionRefusal(o, job.labels, false)) {
      o.vertex.adoptionRefused = refused;
      return;
    }
    jobs_.adopt(name, o.metadata.uid);
    jobs_.put(job, o.now);
    o.vertex.adoptable = cachedJobOf(job, o.now);
  } catch (const vertex::ApiError& e) {
    if (e.isNotFound()) {
      o.vertex.adoptionRefused = "spec.adoptJob " + name + " does not exist (404): name a job that does";
      return;
    }
    if (e.isRetryable()) throw;
    o.vertex.unavailable = VertexFailure{e.httpStatus(), "reading spec.adoptJob " + name + ": " + e.what()};
  }
}

bool TrainingRunReconciler::observeRestored(Observed& o) {
  if (outsideItsRule(o)) return false;  // decide refuses the run before anything is listed
  auto uids = crd::runUidsOf(o.metadata);
  std::erase(uids, o.metadata.uid);
  if (uids.empty()) return false;  // a new run (a manifest from Git has no such annotation), or already taken back
  std::set<std::string> earlier;
  for (const auto& uid : uids) earlier.insert(crd::sanitizeLabelValue(uid));
  vertex::ListOptions list;
  list.filter = std::string("labels.") + crd::kNamespaceLabel + "=\"" + crd::sanitizeLabelValue(o.metadata.namespace_) +
                "\" AND labels." + crd::kNameLabel + "=\"" + crd::sanitizeLabelValue(o.metadata.name) + "\"";
  std::vector<PollTarget> places;
  for (size_t i = 0; i < std::max<size_t>(1, crd::placementCount(o.run->spec)); ++i) {
    auto spec = crd::specAt(o.run->spec, i);
    PollTarget place{crd::locationOf(spec, o.defaults), crd::jobKindOf(spec)};
    if (place.where.project.empty() || place.where.location.empty()) continue;  // decide says what is missing
    if (std::find(places.begin(), places.end(), place) == places.end()) places.push_back(place);
  }
  for (const auto& place : places) {
    try {
      for (auto& job : vertex_.listJobs(place.where, place.kind, list).jobs) {
        // Only what this operator made for one of the runs this object was; anything else is left alone.
        if (!jobs_.trusts(job) || !earlier.contains(labelOf(job.labels, crd::kRunUidLabel))) continue;
        jobs_.put(job, o.now);
        o.vertex.restored.push_back(cachedJobOf(job, o.now));
      }
    } catch (const vertex::ApiError& e) {
      if (e.isRetryable()) throw;
      // Never a new job before the history is known: decide waits, and says why.
      o.vertex.unavailable = VertexFailure{e.httpStatus(), "listing the jobs of earlier runs of this name in " +
                                                               place.jobPrefix() + ": " + e.what()};
      o.vertex.placeUnlisted = place.jobPrefix();
      o.vertex.restored.clear();
      return true;
    }
  }
  std::stable_sort(o.vertex.restored.begin(), o.vertex.restored.end(), [](const CachedJob& a, const CachedJob& b) {
    return a.createTime.value_or(Clock::time_point::max()) < b.createTime.value_or(Clock::time_point::max());
  });
  if (o.vertex.restored.size() > 100) o.vertex.restored.erase(o.vertex.restored.begin(), o.vertex.restored.end() - 100);
  // The newest is the current attempt's job: what follows (a checkpoint listing before a resume, the
  // claims before a new job) reads it as it would a job status names.
  if (!o.vertex.restored.empty()) o.vertex.job = o.vertex.restored.back();
  return !o.vertex.restored.empty() || o.vertex.placeUnlisted.has_value();
}

void TrainingRunReconciler::observeNamesake(Observed& o) {
  // Only once the run's place has been listed since the start is the cache's word final: a job left
  // by a run of the same name (before a rebuild, or deleted with deletionPolicy: Orphan) is there.
  auto where = crd::locationOf(o.run->spec, o.defaults);
  if (where.project.empty() || where.location.empty()) return;  // decide says what is missing
  PollTarget place{where, crd::jobKindOf(o.run->spec)};
  auto prefix = place.jobPrefix();
  if (!jobs_.listed(prefix)) {
    if (auto failure = jobs_.pollFailure(prefix)) o.vertex.unavailable = failure;
    o.vertex.placeUnlisted = prefix;
    return;
  }
  for (auto& job : jobs_.unfinishedNamesakes(o.metadata.namespace_, o.metadata.name)) {
    // Another live run's job (a name that sanitises alike) is never taken over.
    auto uid = job.labels.find(crd::kRunUidLabel);
    if (uid != job.labels.end() && uid->second != crd::sanitizeLabelValue(o.metadata.uid) && runs_.keyByUid(uid->second))
      continue;
    if (!o.vertex.namesake || job.createTime < o.vertex.namesake->createTime) o.vertex.namesake = std::move(job);
  }
}

void TrainingRunReconciler::observeCheckpoint(Observed& o) {
  bool forced = checkpointRequired(o);
  bool running = o.vertex.job && o.vertex.job->state == vertex::JobState::Running &&
                 o.metadata.deletionTimestamp.empty() && !o.run->spec.suspend;
  if (!forced && !running) return;
  // A spec edited outside its tenancy rule (checkpointing.directory may change) is never listed.
  if (tenancyOf(o).violation) return;
  if (!forced) {
    Clock::time_point next;
    bool allowed = checkpoints_.take(o.metadata.uid, o.now, next);
    o.checkpoints.nextLookAt = next;
    if (!allowed) return;
  } else {
    checkpoints_.listed(o.metadata.uid, o.now);
  }
  auto directory = crd::checkpointDirectoryOf(o.run->spec);
  try {
    o.checkpoints.latest = findLatestCheckpoint(gcs_, directory, clock_).latest;
    o.checkpoints.listed = true;
  } catch (const std::exception& e) {
    // Status is still right without it; a resume waits for it (decide retries), a running run looks again
    // later. Either way CheckpointsReadable=False tells the user.
    spdlog::warn("{}/{}: cannot list checkpoints: {}", o.metadata.namespace_, o.metadata.name, e.what());
    o.checkpoints.error = e.what();
    const auto* api = dynamic_cast<const RemoteApiError*>(&e);
    o.checkpoints.forbidden = api != nullptr && api->isForbidden();
  }
}

Result TrainingRunReconciler::act(const nlohmann::json& cached, const Observed& o, Plan plan) {
  // The object as our own writes left it (their answers carry the new resourceVersion); until the
  // first write, the cached one, uncopied.
  std::optional<nlohmann::json> written;
  auto current = [&]() -> const nlohmann::json& { return written ? *written : cached; };
  const auto& meta = o.metadata;
  if (plan.addFinalizer || plan.runUids) {
    std::map<std::string, std::string> annotations;
    if (plan.runUids) annotations[crd::kRunUidsAnnotation] = *plan.runUids;
    written = controller::addFinalizer(kube_, trainingRunResource(), cached, kFinalizer, annotations);
    rememberOwnWrite(cached, *written);
  }
  if (plan.cancelJob) {
    try {
      vertex_.cancelJob(*plan.cancelJob);
    } catch (const vertex::ApiError& e) {
      if (!e.isNotFound()) throw;  // already gone counts as cancelled
    }
    jobs_.erase(*plan.cancelJob);  // the next pass reads the CANCELLING/CANCELLED state from Vertex
  }
  // After the job's create: a refusal for an accelerator quota decides again there, and the fallback
  // it moves to may ask for other accelerators, which replaces the Workload in this same pass.
  if (plan.createJob) plan = createPlannedJob(o, std::move(plan));
  if (plan.deleteWorkload) {
    try {
      kube_.remove(workloadResource(), meta.namespace_, *plan.deleteWorkload);
    } catch (const controller::ApiError& e) {
      if (!e.isNotFound()) throw;
    }
  }
  if (plan.createWorkload) plan = createPlannedWorkload(o, std::move(plan));
  if (plan.uploadModel) plan = uploadPlannedModel(o, std::move(plan), written, cached);
  if (const auto& evaluation = plan.importEvaluation) {
    try {
      options_.registry->importEvaluation(evaluation->versionName, evaluation->evaluation);
    } catch (const vertex::ApiError& e) {
      if (e.isRetryable()) throw;  // the next pass finds the evaluation, or imports it
      plan = recordImportFailure(o, std::move(plan), VertexFailure{e.httpStatus(), e.what()});
    }
  }
  // The status that records a new job waits behind other runs' creates, unless more of this pass
  // must follow its write.
  bool holdStatus = plan.jobCreated && plan.status && !plan.releaseAdmission && !plan.finishWorkload &&
                    !plan.removeFinalizer && !plan.deleteRun && !plan.failure && !plan.uploadModel && !plan.importEvaluation;
  if (holdStatus) {
    held_.hold(controller::keyOf(cached), meta.uid, *plan.status);
  } else if (plan.status) {
    auto status = writeStatus(current(), *plan.status);
    rememberOwnWrite(current(), status);
    written = std::move(status);
    if (o.statusHeld) held_.release(controller::keyOf(cached));
  }
  if (plan.releaseAdmission) {
    // After the status that marks the cancelled job as the eviction's: Kueue may admit again at once,
    // and the Evicted condition that otherwise tells is then gone. As Kueue's own integrations release
    // it: the manager that owns status.admission, forced.
    try {
      patchWorkloadStatus(meta.namespace_, *plan.releaseAdmission);
    } catch (const controller::ApiError& e) {
      if (!e.isNotFound()) throw;  // gone: nothing holds the quota
    }
  }
  controller::recordEvents(events_, current(), plan.events);
  if (!plan.impostorsWarned.empty()) jobs_.impostorsReported(meta.uid, plan.impostorsWarned);
  if (metrics_ != nullptr) {
    if (const auto& f = plan.failover) metrics_->capacityFailover(meta.namespace_, f->fromLocation, f->toLocation, f->acceleratorType, f->reason);
    if (plan.resumedAfter) metrics_->resumed(crd::enumName(*plan.resumedAfter, crd::failureClassNames()));
    if (const auto& latest = o.checkpoints.latest; latest && latest->updateTime) {
      auto age = std::chrono::duration<double>(o.now - *latest->updateTime).count();
      metrics_->checkpointAge(meta.namespace_, meta.name, std::max(0.0, age));
    }
    if (plan.finished) metrics_->forgetRun(meta.namespace_, meta.name);
    if (!plan.registeredModel.empty()) metrics_->versionRegistered(meta.namespace_, plan.registeredModel);
    if (!plan.evictedBy.empty()) metrics_->kueueEviction(meta.namespace_, plan.evictedBy);
    if (plan.registrationFailed) metrics_->registrationFailed(meta.namespace_, reasonName(*plan.registrationFailed));
  }
  if (plan.finishWorkload) {
    // After the status that says the run ended: a pass that fails here is retried from that status.
    try {
      patchWorkloadStatus(meta.namespace_, *plan.finishWorkload);
    } catch (const controller::ApiError& e) {
      if (!e.isNotFound()) throw;  // gone: its quota is back anyway
    }
  }
  if (plan.finished || plan.removeFinalizer) checkpoints_.forget(meta.uid);
  if (plan.removeFinalizer) controller::removeFinalizer(kube_, trainingRunResource(), current(), kFinalizer);
  if (plan.deleteRun) {
    try {
      kube_.remove(trainingRunResource(), meta.namespace_, meta.name);
    } catch (const controller::ApiError& e) {
      if (!e.isNotFound()) throw;
    }
  }
  if (plan.failure && plan.failure->terminal) throw controller::TerminalError(plan.failure->message);
  if (plan.failure && plan.retryAfter) throw RetryableError(plan.failure->message, plan.retryAfter);
  if (plan.failure) throw std::runtime_error(plan.failure->message);
  if (holdStatus) return Result{.catchUp = true};
  return Result{plan.requeueAfter};
}

void TrainingRunReconciler::patchWorkloadStatus(const std::string& ns, const nlohmann::json& body) {
  auto name = metadataField(body, "name");
  auto written = kube_.patch(workloadResource(), ns, name, controller::PatchType::Apply, body,
                             kKueueAdmissionFieldManager, /*force=*/true, "status");
  // Conditional on the version the body names (its resourceVersion): until the cache shows ours, a
  // pass would decide on the one it replaced and write again into a 409.
  if (options_.workloadWrites != nullptr)
    options_.workloadWrites->record({ns, name}, metadataField(body, "resourceVersion"), metadataField(written, "resourceVersion"));
}

void TrainingRunReconciler::rememberOwnWrite(const nlohmann::json& replaced, const nlohmann::json& written) {
  // Its watch event then reconciles nothing (the pass that wrote it already decided on it), and a pass
  // that starts before that event arrives waits for it. Both writes recorded here are conditional on
  // `replaced`'s resourceVersion, as OwnWrites needs.
  if (options_.ownWrites == nullptr) return;
  options_.ownWrites->record(controller::keyOf(written), controller::versionOf(replaced), controller::versionOf(written));
}

nlohmann::json TrainingRunReconciler::writeStatus(const nlohmann::json& object, const crd::TrainingRunStatus& status) {
  nlohmann::json written = object;
  written["status"] = crd::encodeTrainingRunStatus(status);
  auto& meta = written["metadata"];
  auto sent = controller::statusWriteBody(object, written["status"]);
  // Stored is what was observed plus this status: the written object is that at the new
  // resourceVersion, the only part of the answer read.
  meta["resourceVersion"] = kube_.updateStatusVersion(trainingRunResource(), stringField(meta, "namespace"), sent);
  return written;
}

}  // namespace vto::reconcilers
