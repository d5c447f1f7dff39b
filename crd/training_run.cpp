#include "crd/training_run.h"

#include "crd/duration.h"
#include "crd/strict_json.h"
#include "crd/timestamp.h"

namespace vto::crd {

const EnumNames<Framework>& frameworkNames() {
  static const EnumNames<Framework> names = {{Framework::TensorFlow, "tensorflow"}, {Framework::PyTorch, "pytorch"},
                                             {Framework::Jax, "jax"}, {Framework::XGBoost, "xgboost"},
                                             {Framework::SKLearn, "sklearn"}, {Framework::Other, "other"}};
  return names;
}
const EnumNames<Strategy>& strategyNames() {
  static const EnumNames<Strategy> names = {{Strategy::None, "None"},
                                            {Strategy::Mirrored, "Mirrored"},
                                            {Strategy::MultiWorkerMirrored, "MultiWorkerMirrored"},
                                            {Strategy::ParameterServer, "ParameterServer"},
                                            {Strategy::PyTorchDDP, "PyTorchDDP"},
                                            {Strategy::TPU, "TPU"}};
  return names;
}
const EnumNames<SchedulingStrategy>& schedulingStrategyNames() {
  static const EnumNames<SchedulingStrategy> names = {{SchedulingStrategy::Standard, "Standard"},
                                                      {SchedulingStrategy::Spot, "Spot"},
                                                      {SchedulingStrategy::FlexStart, "FlexStart"}};
  return names;
}
const EnumNames<FailureClass>& failureClassNames() {
  static const EnumNames<FailureClass> names = {
      {FailureClass::Preemption, "Preemption"}, {FailureClass::Stockout, "Stockout"},
      {FailureClass::InternalError, "InternalError"}, {FailureClass::UserError, "UserError"},
      {FailureClass::Timeout, "Timeout"}, {FailureClass::Unknown, "Unknown"}, {FailureClass::AnyFailure, "AnyFailure"}};
  return names;
}
const EnumNames<FailureClass>& resumeOnNames() {
  static const EnumNames<FailureClass> names = {{FailureClass::Preemption, "Preemption"},
                                                {FailureClass::Stockout, "Stockout"},
                                                {FailureClass::InternalError, "InternalError"},
                                                {FailureClass::AnyFailure, "AnyFailure"}};
  return names;
}
const EnumNames<SearchAlgorithm>& searchAlgorithmNames() {
  static const EnumNames<SearchAlgorithm> names = {
      {SearchAlgorithm::Bayesian, "Bayesian"}, {SearchAlgorithm::Grid, "Grid"}, {SearchAlgorithm::Random, "Random"}};
  return names;
}
const EnumNames<MetricGoal>& metricGoalNames() {
  static const EnumNames<MetricGoal> names = {{MetricGoal::Maximize, "Maximize"}, {MetricGoal::Minimize, "Minimize"}};
  return names;
}
const EnumNames<ParameterScale>& parameterScaleNames() {
  static const EnumNames<ParameterScale> names = {
      {ParameterScale::Linear, "Linear"}, {ParameterScale::Log, "Log"}, {ParameterScale::ReverseLog, "ReverseLog"}};
  return names;
}
const EnumNames<DeletionPolicy>& deletionPolicyNames() {
  static const EnumNames<DeletionPolicy> names = {{DeletionPolicy::Cancel, "Cancel"}, {DeletionPolicy::Orphan, "Orphan"}};
  return names;
}
const EnumNames<Phase>& phaseNames() {
  static const EnumNames<Phase> names = {
      {Phase::Pending, "Pending"},       {Phase::Submitted, "Submitted"},   {Phase::Queued, "Queued"},
      {Phase::Running, "Running"},       {Phase::Resuming, "Resuming"},     {Phase::Succeeded, "Succeeded"},
      {Phase::Failed, "Failed"},         {Phase::Cancelling, "Cancelling"}, {Phase::Cancelled, "Cancelled"},
      {Phase::Suspended, "Suspended"},   {Phase::Invalid, "Invalid"}};
  return names;
}

namespace {

constexpr int64_t kMaxInt32 = 2147483647;

std::vector<EnvVar> readEnv(const json& value, const std::string& path) {
  return readList<EnvVar>(value, path, [](const json& item, const std::string& p) {
    ObjectReader r(item, p);
    EnvVar e;
    r.string("name", e.name);
    r.string("value", e.value);
    r.finish();
    if (e.name.empty()) reportDecodeError(DecodeError(joinPath(p, "name"), "required: the variable's name"));
    return e;
  });
}

Trainer readTrainer(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  Trainer t;
  r.with("container", [&](const json& v, const std::string& p) {
    ObjectReader c(v, p);
    ContainerTrainer ct;
    c.string("imageUri", ct.imageUri);
    c.stringList("command", ct.command);
    c.stringList("args", ct.args);
    c.with("env", [&](const json& e, const std::string& ep) { ct.env = readEnv(e, ep); });
    c.finish();
    t.container = ct;
  });
  r.with("pythonPackage", [&](const json& v, const std::string& p) {
    ObjectReader c(v, p);
    PythonPackageTrainer pp;
    c.string("executorImageUri", pp.executorImageUri);
    c.stringList("packageUris", pp.packageUris);
    c.string("pythonModule", pp.pythonModule);
    c.stringList("args", pp.args);
    c.with("env", [&](const json& e, const std::string& ep) { pp.env = readEnv(e, ep); });
    c.finish();
    t.pythonPackage = pp;
  });
  r.finish();
  return t;
}

Resources readResources(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  Resources res;
  r.string("machineType", res.machineType);
  r.string("acceleratorType", res.acceleratorType);
  r.integer("acceleratorCount", res.acceleratorCount, 0, 64);
  r.string("tpuTopology", res.tpuTopology);
  r.string("bootDiskType", res.bootDiskType);
  r.integer("bootDiskSizeGb", res.bootDiskSizeGb, 10, 65536);
  r.finish();
  return res;
}

ReplicaPool readReplicaPool(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  ReplicaPool pool;
  r.integer("replicaCount", pool.replicaCount, 1, 1000);
  r.string("machineType", pool.machineType);
  r.finish();
  if (pool.machineType.empty())
    reportDecodeError(DecodeError(joinPath(path, "machineType"), "required: the machine type of these replicas, e.g. n1-highmem-8"));
  return pool;
}

Distribution readDistribution(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  Distribution d;
  r.with("strategy", [&](const json& v, const std::string& p) { d.strategy = readEnum(v, p, strategyNames()); });
  r.integer("workerCount", d.workerCount, 1, 10000);
  r.with("parameterServers", [&](const json& v, const std::string& p) { d.parameterServers = readReplicaPool(v, p); });
  r.with("evaluator", [&](const json& v, const std::string& p) { d.evaluator = readReplicaPool(v, p); });
  r.with("reductionServer", [&](const json& v, const std::string& p) {
    ObjectReader rs(v, p);
    ReductionServer server;
    rs.integer("replicaCount", server.replicaCount, 1, 1000);
    rs.string("machineType", server.machineType);
    rs.string("imageUri", server.imageUri);
    rs.finish();
    if (server.machineType.empty())
      reportDecodeError(DecodeError(joinPath(p, "machineType"), "required: an n1-highcpu-* machine type, e.g. n1-highcpu-16"));
    d.reductionServer = server;
  });
  r.finish();
  return d;
}

Scheduling readScheduling(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  Scheduling s;
  r.with("timeout", [&](const json& v, const std::string& p) { s.timeoutSeconds = readDuration(v, p); });
  r.boolean("restartJobOnWorkerRestart", s.restartJobOnWorkerRestart);
  r.with("strategy", [&](const json& v, const std::string& p) { s.strategy = readEnum(v, p, schedulingStrategyNames()); });
  r.with("maxWaitDuration", [&](const json& v, const std::string& p) { s.maxWaitSeconds = readDuration(v, p); });
  r.boolean("disableRetries", s.disableRetries);
  r.finish();
  return s;
}

Checkpointing readCheckpointing(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  Checkpointing c;
  r.boolean("resumeOnFailure", c.resumeOnFailure);
  r.integer("maxResumes", c.maxResumes, 0, 100);
  r.with("resumeBackoff", [&](const json& v, const std::string& p) {
    c.resumeBackoffSeconds = readDuration(v, p);
    if (c.resumeBackoffSeconds < 0) throw DecodeError(p, "must not be negative");
  });
  r.with("resumeOn", [&](const json& v, const std::string& p) {
    c.resumeOn = readList<FailureClass>(v, p, [](const json& item, const std::string& ip) {
      return readEnum(item, ip, resumeOnNames());
    });
  });
  r.string("directory", c.directory);
  r.with("totalSteps", [&](const json& v, const std::string& p) {
    c.totalSteps = readInteger(v, p, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    if (*c.totalSteps < 1) {
      throw DecodeError(p, "must be at least 1: the step of the last checkpoint (the number in ckpt-N), for progress");
    }
  });
  r.finish();
  return c;
}

Capacity readCapacity(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  Capacity c;
  r.with("fallbacks", [&](const json& v, const std::string& p) {
    c.fallbacks = readList<Fallback>(v, p, [](const json& item, const std::string& ip) {
      ObjectReader f(item, ip);
      Fallback fallback;
      f.with("location", [&](const json& l, const std::string& lp) { fallback.location = readString(l, lp); });
      // Read as the spec's own would be (unknown fields, types, ranges), kept as written for the merge.
      f.with("resources", [&](const json& x, const std::string& xp) {
        readResources(x, xp);
        fallback.resources = x;
      });
      f.with("scheduling", [&](const json& x, const std::string& xp) {
        readScheduling(x, xp);
        fallback.scheduling = x;
      });
      f.finish();
      return fallback;
    });
  });
  // The CRD's advice, word for word (`vto lint` and `kubectl apply` say the same). A zero blockFor
  // would retry a placement that just had no capacity at once; a zero giveUpAfter would never wait.
  auto duration = [&](const char* key, int64_t& out, bool positive, const std::string& advice) {
    r.with(key, [&](const json& v, const std::string& p) {
      try {
        out = readDuration(v, p);
      } catch (const DecodeError&) {
        throw DecodeError(p, advice);
      }
      if (out < 0 || (positive && out == 0)) throw DecodeError(p, advice);
    });
  };
  duration("maxQueueTime", c.maxQueueSeconds, false, "maxQueueTime must be a duration like 30m, 1h or 0s (never)");
  duration("blockFor", c.blockForSeconds, true, "blockFor must be a positive duration like 30m or 1h");
  duration("giveUpAfter", c.giveUpAfterSeconds, true, "giveUpAfter must be a positive duration like 24h or 2h");
  // The bounds (the CRD's CEL says the same): each capacity failure may create a job, so the
  // shortest waits and the longest give-up bound the creates one object can make.
  if (!value.contains("maxQueueTime") && !c.fallbacks.empty()) c.maxQueueSeconds = kDefaultMaxQueueSeconds;
  if (c.maxQueueSeconds != 0 && c.maxQueueSeconds < kMinMaxQueueSeconds) {
    throw DecodeError(path + ".maxQueueTime", "maxQueueTime must be 0s (never) or at least 5m, like 30m or 1h");
  }
  if (c.blockForSeconds < kMinBlockForSeconds) {
    throw DecodeError(path + ".blockFor", "blockFor must be at least 1m, like 30m or 1h");
  }
  if (c.giveUpAfterSeconds > kMaxGiveUpAfterSeconds) {
    throw DecodeError(path + ".giveUpAfter", "giveUpAfter must be at most 720h (30 days), like 24h");
  }
  r.with("maxFailovers", [&](const json& v, const std::string& p) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > kMaxFailovers) {
      throw DecodeError(p, "maxFailovers must be a number from 0 to 100 (default 20)");
    }
    c.maxFailovers = static_cast<int32_t>(v.get<int64_t>());
  });
  r.finish();
  return c;
}

TuningParameter readParameter(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  TuningParameter p;
  r.string("parameterId", p.parameterId);
  r.with("double", [&](const json& v, const std::string& vp) {
    ObjectReader d(v, vp);
    DoubleRange range;
    if (!d.has("min") || !d.has("max")) reportDecodeError(DecodeError(vp, "needs both min and max"));
    d.number("min", range.min);
    d.number("max", range.max);
    d.finish();
    p.doubleRange = range;
  });
  r.with("integer", [&](const json& v, const std::string& vp) {
    ObjectReader d(v, vp);
    IntegerRange range;
    if (!d.has("min") || !d.has("max")) reportDecodeError(DecodeError(vp, "needs both min and max"));
    d.integer("min", range.min);
    d.integer("max", range.max);
    d.finish();
    p.integerRange = range;
  });
  r.with("discrete", [&](const json& v, const std::string& vp) {
    ObjectReader d(v, vp);
    std::vector<double> values;
    d.with("values", [&](const json& list, const std::string& lp) { values = readList<double>(list, lp, readNumber); });
    d.finish();
    p.discrete = values;
  });
  r.with("categorical", [&](const json& v, const std::string& vp) {
    ObjectReader d(v, vp);
    std::vector<std::string> values;
    d.stringList("values", values);
    d.finish();
    p.categorical = values;
  });
  r.with("scale", [&](const json& v, const std::string& vp) { p.scale = readEnum(v, vp, parameterScaleNames()); });
  r.finish();
  if (p.parameterId.empty())
    reportDecodeError(DecodeError(joinPath(path, "parameterId"), "required: the name the trial receives the value under"));
  return p;
}

HyperparameterTuning readTuning(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  HyperparameterTuning h;
  if (!r.has("maxTrialCount"))
    reportDecodeError(DecodeError(joinPath(path, "maxTrialCount"), "required: how many trials to run in total"));
  r.integer("maxTrialCount", h.maxTrialCount, 1, kMaxInt32);
  r.integer("parallelTrialCount", h.parallelTrialCount, 1, kMaxInt32);
  r.integer("maxFailedTrialCount", h.maxFailedTrialCount, 0, kMaxInt32);
  r.with("algorithm", [&](const json& v, const std::string& p) { h.algorithm = readEnum(v, p, searchAlgorithmNames()); });
  r.with("metrics", [&](const json& v, const std::string& p) {
    h.metrics = readList<TuningMetric>(v, p, [](const json& item, const std::string& ip) {
      ObjectReader m(item, ip);
      TuningMetric metric;
      m.string("metricId", metric.metricId);
      m.with("goal", [&](const json& g, const std::string& gp) { metric.goal = readEnum(g, gp, metricGoalNames()); });
      m.finish();
      if (metric.metricId.empty())
        reportDecodeError(DecodeError(joinPath(ip, "metricId"), "required: the metric the trials report"));
      return metric;
    });
  });
  r.with("parameters", [&](const json& v, const std::string& p) {
    h.parameters = readList<TuningParameter>(v, p, readParameter);
  });
  r.finish();
  return h;
}

json encodeEnv(const std::vector<EnvVar>& env) {
  json out = json::array();
  for (const auto& e : env) out.push_back({{"name", e.name}, {"value", e.value}});
  return out;
}

json encodeReplicaPool(const ReplicaPool& pool) {
  return {{"replicaCount", pool.replicaCount}, {"machineType", pool.machineType}};
}

}  // namespace

TrainingRunSpec decodeTrainingRunSpec(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  TrainingRunSpec s;
  r.string("project", s.project);
  r.string("location", s.location);
  r.string("displayName", s.displayName);
  r.with("framework", [&](const json& v, const std::string& p) { s.framework = readEnum(v, p, frameworkNames()); });
  r.with("trainer", [&](const json& v, const std::string& p) { s.trainer = readTrainer(v, p); });
  r.with("resources", [&](const json& v, const std::string& p) { s.resources = readResources(v, p); });
  r.with("distribution", [&](const json& v, const std::string& p) { s.distribution = readDistribution(v, p); });
  r.with("workerPoolSpecs", [&](const json& v, const std::string& p) {
    if (!v.is_array()) throw DecodeError(p, "must be a list of Vertex WorkerPoolSpec objects, not " + describeType(v));
    for (size_t i = 0; i < v.size(); ++i)
      if (!v[i].is_object()) throw DecodeError(indexPath(p, i), "must be an object (a Vertex WorkerPoolSpec; {} skips a pool)");
    s.workerPoolSpecs = v;
  });
  r.string("baseOutputDirectory", s.baseOutputDirectory);
  r.string("serviceAccount", s.serviceAccount);
  r.string("network", s.network);
  r.stringList("reservedIpRanges", s.reservedIpRanges);
  r.boolean("enableWebAccess", s.enableWebAccess);
  r.boolean("enableDashboardAccess", s.enableDashboardAccess);
  r.string("tensorboard", s.tensorboard);
  r.string("encryptionKmsKeyName", s.encryptionKmsKeyName);
  r.stringMap("labels", s.labels);
  r.with("scheduling", [&](const json& v, const std::string& p) { s.scheduling = readScheduling(v, p); });
  r.with("checkpointing", [&](const json& v, const std::string& p) { s.checkpointing = readCheckpointing(v, p); });
  r.with("hyperparameterTuning", [&](const json& v, const std::string& p) { s.hyperparameterTuning = readTuning(v, p); });
  r.boolean("suspend", s.suspend);
  r.with("deletionPolicy", [&](const json& v, const std::string& p) { s.deletionPolicy = readEnum(v, p, deletionPolicyNames()); });
  r.integer("ttlSecondsAfterFinished", s.ttlSecondsAfterFinished, 0);
  r.with("capacity", [&](const json& v, const std::string& p) { s.capacity = readCapacity(v, p); });
  r.with("model", [&](const json& v, const std::string& p) { s.model = readModelSpec(v, p); });
  r.string("maxCostUsd", s.maxCostUsd);
  r.string("adoptJob", s.adoptJob);
  r.finish();
  return s;
}

Condition decodeCondition(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  Condition c;
  r.string("type", c.type);
  r.string("status", c.status);
  r.string("reason", c.reason);
  r.string("message", c.message);
  readTime(r, "lastTransitionTime", c.lastTransitionTime);
  r.integer("observedGeneration", c.observedGeneration, 0);
  r.finish();
  return c;
}

json encodeCondition(const Condition& c) {
  json out = {{"type", c.type}, {"status", c.status}, {"reason", c.reason}, {"message", c.message}};
  writeTime(out, "lastTransitionTime", c.lastTransitionTime);
  if (c.observedGeneration) out["observedGeneration"] = c.observedGeneration;
  return out;
}

TrainingRunStatus decodeTrainingRunStatus(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  TrainingRunStatus s;
  r.integer("observedGeneration", s.observedGeneration, 0);
  r.with("phase", [&](const json& v, const std::string& p) { s.phase = readEnum(v, p, phaseNames()); });
  r.string("message", s.message);
  r.with("conditions", [&](const json& v, const std::string& p) { s.conditions = readList<Condition>(v, p, decodeCondition); });
  r.with("job", [&](const json& v, const std::string& p) {
    ObjectReader j(v, p);
    JobRef job;
    j.string("name", job.name);
    j.string("id", job.id);
    j.string("kind", job.kind);
    j.string("state", job.state);
    j.string("consoleUrl", job.consoleUrl);
    readTime(j, "createTime", job.createTime);
    readTime(j, "startTime", job.startTime);
    readTime(j, "endTime", job.endTime);
    j.stringMap("webAccessUris", job.webAccessUris);
    j.finish();
    s.job = job;
  });
  r.with("progress", [&](const json& v, const std::string& p) {
    ObjectReader pr(v, p);
    Progress progress;
    pr.integer("step", progress.step, 0);
    pr.integer("totalSteps", progress.totalSteps, 1);
    pr.integer("percent", progress.percent, 0, 100);
    readTime(pr, "eta", progress.eta);
    pr.number("secondsPerStep", progress.secondsPerStep);
    pr.finish();
    s.progress = progress;
  });
  r.with("placement", [&](const json& v, const std::string& p) {
    ObjectReader pr(v, p);
    PlacementRef ref;
    pr.integer("index", ref.index, 0, 100);
    pr.string("location", ref.location);
    pr.string("machineType", ref.machineType);
    pr.string("acceleratorType", ref.acceleratorType);
    pr.integer("acceleratorCount", ref.acceleratorCount, 0);
    pr.string("strategy", ref.strategy);
    pr.finish();
    s.placement = ref;
  });
  r.with("capacity", [&](const json& v, const std::string& p) {
    ObjectReader c(v, p);
    CapacityHistory capacity;
    c.with("blocked", [&](const json& b, const std::string& bp) {
      capacity.blocked = readList<BlockedPlacement>(b, bp, [](const json& item, const std::string& ip) {
        ObjectReader e(item, ip);
        BlockedPlacement blocked;
        e.integer("index", blocked.index, 0, 100);
        e.string("location", blocked.location);
        e.string("reason", blocked.reason);
        readTime(e, "until", blocked.until);
        e.string("message", blocked.message);
        e.finish();
        return blocked;
      });
    });
    readTime(c, "waitingSince", capacity.waitingSince);
    readTime(c, "failingSince", capacity.failingSince);
    c.integer("failovers", capacity.failovers, 0, 1000000);
    c.finish();
    s.history.capacity = capacity;
  });
  r.with("model", [&](const json& v, const std::string& p) { s.history.model = readRegisteredModel(v, p); });
  r.with("attempts", [&](const json& v, const std::string& p) {
    s.history.attempts = readList<Attempt>(v, p, [](const json& item, const std::string& ip) {
      ObjectReader a(item, ip);
      Attempt at;
      a.integer("attempt", at.attempt, 0);
      a.integer("placement", at.placement, 0, 100);
      a.string("location", at.location);
      a.string("jobName", at.jobName);
      a.string("state", at.state);
      readTime(a, "startTime", at.startTime);
      readTime(a, "endTime", at.endTime);
      // Written by vto; an unknown name (an edit by hand) reads as Unknown instead of breaking the run.
      a.with("failureClass", [&](const json& fc, const std::string& fp) {
        auto name = readString(fc, fp);
        at.failureClass = FailureClass::Unknown;
        for (const auto& [value, known] : failureClassNames())
          if (name == known && value != FailureClass::AnyFailure) at.failureClass = value;
      });
      a.string("message", at.message);
      a.string("resumedFrom", at.resumedFrom);
      a.string("logTail", at.logTail);
      a.with("costUsd", [&](const json& c, const std::string& cp) { at.costUsd = readUsd(c, cp); });
      a.number("acceleratorHours", at.acceleratorHours);
      a.number("replicaHours", at.replicaHours);
      a.finish();
      return at;
    });
  });
  r.integer("attemptCount", s.history.attemptCount, 0);
  r.integer("resumes", s.history.resumes, 0);
  r.with("lastCheckpoint", [&](const json& v, const std::string& p) {
    ObjectReader c(v, p);
    CheckpointRef ref;
    c.string("uri", ref.uri);
    readTime(c, "updateTime", ref.updateTime);
    c.finish();
    s.history.lastCheckpoint = ref;
  });
  r.with("bestTrial", [&](const json& v, const std::string& p) {
    ObjectReader b(v, p);
    BestTrial t;
    b.string("id", t.id);
    b.raw("parameters", t.parameters);
    b.with("metrics", [&](const json& m, const std::string& mp) {
      if (!m.is_object()) throw DecodeError(mp, "must be a map of numbers");
      for (const auto& [k, n] : m.items())
        decodeField([&, &k = k, &n = n] { t.metrics[k] = readNumber(n, joinPath(mp, k)); });
    });
    b.finish();
    s.history.bestTrial = t;
  });
  readTime(r, "startTime", s.history.startTime);
  readTime(r, "completionTime", s.completionTime);
  r.with("cost", [&](const json& v, const std::string& p) {
    ObjectReader c(v, p);
    RunCost cost;
    c.with("estimatedUsd", [&](const json& e, const std::string& ep) { cost.estimatedUsd = readUsd(e, ep); });
    c.number("acceleratorHours", cost.acceleratorHours);
    c.number("replicaHours", cost.replicaHours);
    c.with("hourlyUsd", [&](const json& h, const std::string& hp) { cost.hourlyUsd = readUsd(h, hp); });
    c.string("priceCatalog", cost.priceCatalog);
    readTime(c, "updateTime", cost.updateTime);
    c.finish();
    s.cost = cost;
  });
  r.finish();
  return s;
}

TrainingRun decodeTrainingRun(const json& object) {
  ObjectReader r(object, "");
  TrainingRun run;
  std::string apiVersion, kind;
  r.string("apiVersion", apiVersion);
  r.string("kind", kind);
  if (!isServedApiVersion(apiVersion))
    reportDecodeError(DecodeError("apiVersion", "must be " + std::string(kApiVersion) + " (or the deprecated " +
                                                    kDeprecatedApiVersion + "), not \"" + apiVersion + "\""));
  if (kind != kTrainingRunKind) reportDecodeError(DecodeError("kind", "must be TrainingRun, not \"" + kind + "\""));
  r.with("metadata", [&](const json& v, const std::string& p) { run.metadata = decodeObjectMeta(v, p); });
  if (const json* spec = r.get("spec")) decodeField([&] { run.spec = decodeTrainingRunSpec(*spec, "spec"); });
  else reportDecodeError(DecodeError("spec", "required: a TrainingRun needs a spec (see `kubectl explain trainingrun.spec`)"));
  r.with("status", [&](const json& v, const std::string& p) { run.status = decodeTrainingRunStatus(v, p); });
  r.finish();
  return run;
}

json encodeTrainingRunSpec(const TrainingRunSpec& s) {
  json out = json::object();
  auto putString = [&](const char* key, const std::string& v) {
    if (!v.empty()) out[key] = v;
  };
  putString("project", s.project);
  putString("location", s.location);
  putString("displayName", s.displayName);
  out["framework"] = enumName(s.framework, frameworkNames());
  if (s.trainer) {
    json t = json::object();
    if (const auto& c = s.trainer->container)
      t["container"] = {{"imageUri", c->imageUri}, {"command", c->command}, {"args", c->args}, {"env", encodeEnv(c->env)}};
    if (const auto& p = s.trainer->pythonPackage)
      t["pythonPackage"] = {{"executorImageUri", p->executorImageUri}, {"packageUris", p->packageUris},
                            {"pythonModule", p->pythonModule},         {"args", p->args},
                            {"env", encodeEnv(p->env)}};
    out["trainer"] = t;
  }
  if (const auto& r = s.resources) {
    json res = {{"machineType", r->machineType}};
    if (!r->acceleratorType.empty()) res["acceleratorType"] = r->acceleratorType;
    if (r->acceleratorCount) res["acceleratorCount"] = r->acceleratorCount;
    if (!r->tpuTopology.empty()) res["tpuTopology"] = r->tpuTopology;
    if (!r->bootDiskType.empty()) res["bootDiskType"] = r->bootDiskType;
    if (r->bootDiskSizeGb) res["bootDiskSizeGb"] = r->bootDiskSizeGb;
    out["resources"] = res;
  }
  if (const auto& d = s.distribution) {
    json dist = {{"strategy", enumName(d->strategy, strategyNames())}, {"workerCount", d->workerCount}};
    if (d->parameterServers) dist["parameterServers"] = encodeReplicaPool(*d->parameterServers);
    if (d->evaluator) dist["evaluator"] = encodeReplicaPool(*d->evaluator);
    if (const auto& rs = d->reductionServer) {
      dist["reductionServer"] = {{"replicaCount", rs->replicaCount}, {"machineType", rs->machineType}};
      if (!rs->imageUri.empty()) dist["reductionServer"]["imageUri"] = rs->imageUri;
    }
    out["distribution"] = dist;
  }
  if (!s.workerPoolSpecs.empty()) out["workerPoolSpecs"] = s.workerPoolSpecs;
  putString("baseOutputDirectory", s.baseOutputDirectory);
  putString("serviceAccount", s.serviceAccount);
  putString("network", s.network);
  if (!s.reservedIpRanges.empty()) out["reservedIpRanges"] = s.reservedIpRanges;
  out["enableWebAccess"] = s.enableWebAccess;
  out["enableDashboardAccess"] = s.enableDashboardAccess;
  putString("tensorboard", s.tensorboard);
  putString("encryptionKmsKeyName", s.encryptionKmsKeyName);
  if (!s.labels.empty()) out["labels"] = s.labels;
  json sched = {{"restartJobOnWorkerRestart", s.scheduling.restartJobOnWorkerRestart},
                {"strategy", enumName(s.scheduling.strategy, schedulingStrategyNames())},
                {"disableRetries", s.scheduling.disableRetries}};
  if (s.scheduling.timeoutSeconds) sched["timeout"] = formatDuration(*s.scheduling.timeoutSeconds);
  if (s.scheduling.maxWaitSeconds) sched["maxWaitDuration"] = formatDuration(*s.scheduling.maxWaitSeconds);
  out["scheduling"] = sched;
  json resumeOn = json::array();
  for (auto c : s.checkpointing.resumeOn) resumeOn.push_back(enumName(c, resumeOnNames()));
  out["checkpointing"] = {{"resumeOnFailure", s.checkpointing.resumeOnFailure},
                          {"maxResumes", s.checkpointing.maxResumes},
                          {"resumeBackoff", formatDuration(s.checkpointing.resumeBackoffSeconds)},
                          {"resumeOn", resumeOn}};
  if (!s.checkpointing.directory.empty()) out["checkpointing"]["directory"] = s.checkpointing.directory;
  if (s.checkpointing.totalSteps) out["checkpointing"]["totalSteps"] = *s.checkpointing.totalSteps;
  if (const auto& h = s.hyperparameterTuning) {
    json metrics = json::array(), params = json::array();
    for (const auto& m : h->metrics) metrics.push_back({{"metricId", m.metricId}, {"goal", enumName(m.goal, metricGoalNames())}});
    for (const auto& p : h->parameters) {
      json param = {{"parameterId", p.parameterId}};
      if (p.doubleRange) param["double"] = {{"min", p.doubleRange->min}, {"max", p.doubleRange->max}};
      if (p.integerRange) param["integer"] = {{"min", p.integerRange->min}, {"max", p.integerRange->max}};
      if (p.discrete) param["discrete"] = {{"values", *p.discrete}};
      if (p.categorical) param["categorical"] = {{"values", *p.categorical}};
      if (p.scale != ParameterScale::Unspecified) param["scale"] = enumName(p.scale, parameterScaleNames());
      params.push_back(param);
    }
    out["hyperparameterTuning"] = {{"maxTrialCount", h->maxTrialCount},
                                   {"parallelTrialCount", h->parallelTrialCount},
                                   {"maxFailedTrialCount", h->maxFailedTrialCount},
                                   {"algorithm", enumName(h->algorithm, searchAlgorithmNames())},
                                   {"metrics", metrics},
                                   {"parameters", params}};
  }
  out["suspend"] = s.suspend;
  out["deletionPolicy"] = enumName(s.deletionPolicy, deletionPolicyNames());
  if (s.ttlSecondsAfterFinished) out["ttlSecondsAfterFinished"] = *s.ttlSecondsAfterFinished;
  if (!s.maxCostUsd.empty()) out["maxCostUsd"] = s.maxCostUsd;
  if (!s.adoptJob.empty()) out["adoptJob"] = s.adoptJob;
  if (const auto& c = s.capacity) {
    json fallbacks = json::array();
    for (const auto& f : c->fallbacks) {
      json entry = json::object();
      if (f.location) entry["location"] = *f.location;
      if (f.resources.is_object()) entry["resources"] = f.resources;
      if (f.scheduling.is_object()) entry["scheduling"] = f.scheduling;
      fallbacks.push_back(entry);
    }
    out["capacity"] = {{"fallbacks", fallbacks},
                       {"maxQueueTime", formatDuration(c->maxQueueSeconds)},
                       {"blockFor", formatDuration(c->blockForSeconds)},
                       {"giveUpAfter", formatDuration(c->giveUpAfterSeconds)},
                       {"maxFailovers", c->maxFailovers}};
  }
  if (s.model) out["model"] = encodeModelSpec(*s.model);
  return out;
}

json encodeTrainingRunStatus(const TrainingRunStatus& s) {
  json out = json::object();
  auto putString = [](json& o, const char* key, const std::string& v) {
    if (!v.empty()) o[key] = v;
  };
  out["observedGeneration"] = s.observedGeneration;
  if (s.phase) out["phase"] = enumName(*s.phase, phaseNames());
  putString(out, "message", s.message);
  out["conditions"] = json::array();
  for (const auto& c : s.conditions) out["conditions"].push_back(encodeCondition(c));
  if (const auto& j = s.job) {
    json job = json::object();
    putString(job, "name", j->name);
    putString(job, "id", j->id);
    putString(job, "kind", j->kind);
    putString(job, "state", j->state);
    putString(job, "consoleUrl", j->consoleUrl);
    writeTime(job, "createTime", j->createTime);
    writeTime(job, "startTime", j->startTime);
    writeTime(job, "endTime", j->endTime);
    if (!j->webAccessUris.empty()) job["webAccessUris"] = j->webAccessUris;
    out["job"] = job;
  }
  if (const auto& p = s.progress) {
    out["progress"] = {{"step", p->step}};
    if (p->totalSteps) out["progress"]["totalSteps"] = *p->totalSteps;
    if (p->percent) out["progress"]["percent"] = *p->percent;
    writeTime(out["progress"], "eta", p->eta);
    if (p->secondsPerStep) out["progress"]["secondsPerStep"] = *p->secondsPerStep;
  }
  out["attempts"] = json::array();
  const auto& h = s.history;
  for (const auto& a : h.attempts) {
    json at = {{"attempt", a.attempt}};
    if (a.placement) at["placement"] = *a.placement;
    putString(at, "location", a.location);
    putString(at, "jobName", a.jobName);
    putString(at, "state", a.state);
    writeTime(at, "startTime", a.startTime);
    writeTime(at, "endTime", a.endTime);
    if (a.failureClass) at["failureClass"] = enumName(*a.failureClass, failureClassNames());
    putString(at, "message", a.message);
    putString(at, "resumedFrom", a.resumedFrom);
    putString(at, "logTail", a.logTail);
    if (a.costUsd) {
      at["costUsd"] = a.costUsd->plain();
      at["acceleratorHours"] = a.acceleratorHours;
      at["replicaHours"] = a.replicaHours;
    }
    out["attempts"].push_back(at);
  }
  if (const auto& p = s.placement) {
    out["placement"] = {{"index", p->index}, {"location", p->location}, {"machineType", p->machineType},
                        {"acceleratorType", p->acceleratorType}, {"acceleratorCount", p->acceleratorCount},
                        {"strategy", p->strategy}};
  }
  if (const auto& c = h.capacity) {
    json blocked = json::array();
    for (const auto& b : c->blocked) {
      json entry = {{"index", b.index}, {"location", b.location}, {"reason", b.reason}, {"message", b.message}};
      writeTime(entry, "until", b.until);
      blocked.push_back(entry);
    }
    out["capacity"] = {{"blocked", blocked}};
    writeTime(out["capacity"], "waitingSince", c->waitingSince);
    writeTime(out["capacity"], "failingSince", c->failingSince);
    if (c->failovers > 0) out["capacity"]["failovers"] = c->failovers;
  }
  if (h.model) out["model"] = encodeRegisteredModel(*h.model);
  out["attemptCount"] = h.attemptCount;
  out["resumes"] = h.resumes;
  if (h.lastCheckpoint) {
    out["lastCheckpoint"] = {{"uri", h.lastCheckpoint->uri}};
    writeTime(out["lastCheckpoint"], "updateTime", h.lastCheckpoint->updateTime);
  }
  if (h.bestTrial) out["bestTrial"] = {{"id", h.bestTrial->id}, {"parameters", h.bestTrial->parameters}, {"metrics", h.bestTrial->metrics}};
  writeTime(out, "startTime", h.startTime);
  writeTime(out, "completionTime", s.completionTime);
  if (const auto& c = s.cost) {
    json cost = {{"estimatedUsd", c->estimatedUsd.plain()}, {"acceleratorHours", c->acceleratorHours},
                 {"replicaHours", c->replicaHours}, {"priceCatalog", c->priceCatalog}};
    if (c->hourlyUsd) cost["hourlyUsd"] = c->hourlyUsd->plain();
    writeTime(cost, "updateTime", c->updateTime);
    out["cost"] = cost;
  }
  return out;
}

json encodeTrainingRun(const TrainingRun& run) {
  return {{"apiVersion", kApiVersion},
          {"kind", kTrainingRunKind},
          {"metadata", encodeObjectMeta(run.metadata)},
          {"spec", encodeTrainingRunSpec(run.spec)},
          {"status", encodeTrainingRunStatus(run.status)}};
}

bool isFinished(std::optional<Phase> phase) {
  return phase == Phase::Succeeded || phase == Phase::Failed || phase == Phase::Cancelled;
}

std::string displayNameOf(const TrainingRun& run) {
  if (!run.spec.displayName.empty()) return run.spec.displayName;
  return run.metadata.namespace_.empty() ? run.metadata.name : run.metadata.namespace_ + "-" + run.metadata.name;
}

std::string checkpointDirectoryOf(const TrainingRunSpec& spec) {
  if (!spec.checkpointing.directory.empty()) return spec.checkpointing.directory;
  std::string base = spec.baseOutputDirectory;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/checkpoints";
}

bool usesTpu(const TrainingRunSpec& spec) {
  if (spec.distribution && spec.distribution->strategy == Strategy::TPU) return true;
  return spec.resources && spec.resources->acceleratorType.rfind("TPU_", 0) == 0;
}

}  // namespace vto::crd
