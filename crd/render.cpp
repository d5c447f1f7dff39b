#include "crd/render.h"

#include "base/json_fields.h"
#include "crd/accelerators.h"

#include <stdexcept>

#include "crd/duration.h"
#include "crd/labels.h"
#include "crd/retraining_policy.h"

namespace vto::crd {
namespace {

using nlohmann::json;

json envJson(const std::vector<EnvVar>& userEnv, const TrainingRun& run, int attempt, const std::string& resumeFrom) {
  json env = json::array();
  for (const auto& e : userEnv) env.push_back({{"name", e.name}, {"value", e.value}});
  env.push_back({{"name", "VTO_TRAININGRUN"}, {"value", run.metadata.namespace_ + "/" + run.metadata.name}});
  env.push_back({{"name", "VTO_ATTEMPT"}, {"value", std::to_string(attempt)}});
  if (!resumeFrom.empty()) env.push_back({{"name", "VTO_RESUME_FROM"}, {"value", resumeFrom}});
  for (const auto& [annotation, variable] : runEnvAnnotations()) {
    auto found = run.metadata.annotations.find(annotation);
    if (found != run.metadata.annotations.end()) env.push_back({{"name", variable}, {"value", found->second}});
  }
  return env;
}

// The trainer's code on a pool (containerSpec or pythonPackageSpec), with the operator's env.
void putTrainerCode(json& pool, const Trainer& trainer, const TrainingRun& run, int attempt, const std::string& resumeFrom) {
  if (const auto& c = trainer.container) {
    json spec = {{"imageUri", c->imageUri}};
    if (!c->command.empty()) spec["command"] = c->command;
    if (!c->args.empty()) spec["args"] = c->args;
    spec["env"] = envJson(c->env, run, attempt, resumeFrom);
    pool["containerSpec"] = spec;
  } else if (const auto& p = trainer.pythonPackage) {
    json spec = {{"executorImageUri", p->executorImageUri}, {"packageUris", p->packageUris}, {"pythonModule", p->pythonModule}};
    if (!p->args.empty()) spec["args"] = p->args;
    spec["env"] = envJson(p->env, run, attempt, resumeFrom);
    pool["pythonPackageSpec"] = spec;
  }
}

json machineSpec(const std::string& machineType, const Resources* accelerators) {
  json spec = {{"machineType", machineType}};
  if (accelerators && !accelerators->acceleratorType.empty()) {
    spec["acceleratorType"] = accelerators->acceleratorType;
    spec["acceleratorCount"] = accelerators->acceleratorCount;
  }
  if (accelerators && !accelerators->tpuTopology.empty()) spec["tpuTopology"] = accelerators->tpuTopology;
  return spec;
}

json diskSpec(const Resources& r) {
  json disk = json::object();
  if (!r.bootDiskType.empty()) disk["bootDiskType"] = r.bootDiskType;
  if (r.bootDiskSizeGb) disk["bootDiskSizeGb"] = r.bootDiskSizeGb;
  return disk;
}

json trainingPools(const TrainingRun& run, int attempt, const std::string& resumeFrom) {
  const auto& spec = run.spec;
  const Distribution dist = spec.distribution.value_or(Distribution{});
  const Resources res = spec.resources.value_or(Resources{});

  auto replicaPool = [&](int32_t replicas) {
    json pool = {{"machineSpec", machineSpec(res.machineType, &res)}, {"replicaCount", std::to_string(replicas)}};
    if (json disk = diskSpec(res); !disk.empty()) pool["diskSpec"] = disk;
    putTrainerCode(pool, *spec.trainer, run, attempt, resumeFrom);
    return pool;
  };
  // Parameter servers and the evaluator run the trainer's code on their own CPU machines.
  auto auxiliaryPool = [&](const ReplicaPool& p) {
    json pool = {{"machineSpec", machineSpec(p.machineType, nullptr)}, {"replicaCount", std::to_string(p.replicaCount)}};
    putTrainerCode(pool, *spec.trainer, run, attempt, resumeFrom);
    return pool;
  };

  json pools = json::array();
  pools.push_back(replicaPool(1));
  int32_t workers = dist.workerCount - 1;
  switch (dist.strategy) {
    case Strategy::None:
    case Strategy::Mirrored:
    case Strategy::TPU:
      break;
    case Strategy::MultiWorkerMirrored:
    case Strategy::PyTorchDDP:
      if (workers > 0 || dist.reductionServer) pools.push_back(workers > 0 ? replicaPool(workers) : json::object());
      if (const auto& rs = dist.reductionServer) {
        json env = envJson({}, run, attempt, resumeFrom);
        pools.push_back({{"machineSpec", machineSpec(rs->machineType, nullptr)},
                         {"replicaCount", std::to_string(rs->replicaCount)},
                         {"containerSpec",
                          {{"imageUri", rs->imageUri.empty() ? kDefaultReductionServerImage : rs->imageUri}, {"env", env}}}});
      }
      break;
    case Strategy::ParameterServer:
      pools.push_back(workers > 0 ? replicaPool(workers) : json::object());
      pools.push_back(dist.parameterServers ? auxiliaryPool(*dist.parameterServers) : json::object());
      if (dist.evaluator) pools.push_back(auxiliaryPool(*dist.evaluator));
      break;
  }
  return pools;
}

// Expert pools pass through as written, with the operator's env added to every pool's code and
// replicaCount in its int64 string form.
json rawPools(const TrainingRun& run, int attempt, const std::string& resumeFrom) {
  json pools = run.spec.workerPoolSpecs;
  for (auto& pool : pools) {
    if (pool.empty()) continue;
    if (auto it = pool.find("replicaCount"); it != pool.end() && it->is_number_integer())
      *it = std::to_string(it->get<int64_t>());
    for (const char* codeKey : {"containerSpec", "pythonPackageSpec"}) {
      auto code = pool.find(codeKey);
      if (code == pool.end() || !code->is_object()) continue;
      std::vector<EnvVar> userEnv;
      if (auto env = code->find("env"); env != code->end() && env->is_array())
        for (const auto& e : *env) userEnv.push_back({stringField(e, "name"), stringField(e, "value")});
      (*code)["env"] = envJson(userEnv, run, attempt, resumeFrom);
    }
  }
  return pools;
}

const char* schedulingStrategyEnum(SchedulingStrategy s) {
  switch (s) {
    case SchedulingStrategy::Spot: return "SPOT";
    case SchedulingStrategy::FlexStart: return "FLEX_START";
    case SchedulingStrategy::Standard: break;
  }
  return "STANDARD";
}

json customJobSpec(const TrainingRun& run, int attempt, const std::string& resumeFrom) {
  const auto& spec = run.spec;
  json jobSpec = {{"workerPoolSpecs", spec.trainer ? trainingPools(run, attempt, resumeFrom) : rawPools(run, attempt, resumeFrom)}};
  const auto& s = spec.scheduling;
  json scheduling = {{"strategy", schedulingStrategyEnum(s.strategy)}};
  if (s.timeoutSeconds) scheduling["timeout"] = protoDuration(*s.timeoutSeconds);
  if (s.restartJobOnWorkerRestart) scheduling["restartJobOnWorkerRestart"] = true;
  if (s.maxWaitSeconds) scheduling["maxWaitDuration"] = protoDuration(*s.maxWaitSeconds);
  if (s.disableRetries) scheduling["disableRetries"] = true;
  jobSpec["scheduling"] = scheduling;
  if (!spec.serviceAccount.empty()) jobSpec["serviceAccount"] = spec.serviceAccount;
  if (!spec.network.empty()) jobSpec["network"] = spec.network;
  if (!spec.reservedIpRanges.empty()) jobSpec["reservedIpRanges"] = spec.reservedIpRanges;
  // The same prefix on every attempt, so AIP_CHECKPOINT_DIR stays where the checkpoints are.
  jobSpec["baseOutputDirectory"] = {{"outputUriPrefix", spec.baseOutputDirectory}};
  if (spec.enableWebAccess) jobSpec["enableWebAccess"] = true;
  if (spec.enableDashboardAccess) jobSpec["enableDashboardAccess"] = true;
  if (!spec.tensorboard.empty()) jobSpec["tensorboard"] = spec.tensorboard;
  return jobSpec;
}

void putCommonFields(json& body, const TrainingRun& run, int attempt) {
  body["displayName"] = displayNameOf(run);
  body["labels"] = jobLabels(run, attempt);
  if (!run.spec.encryptionKmsKeyName.empty()) body["encryptionSpec"] = {{"kmsKeyName", run.spec.encryptionKmsKeyName}};
}

const char* scaleEnum(ParameterScale s) {
  switch (s) {
    case ParameterScale::Linear: return "UNIT_LINEAR_SCALE";
    case ParameterScale::Log: return "UNIT_LOG_SCALE";
    case ParameterScale::ReverseLog: return "UNIT_REVERSE_LOG_SCALE";
    case ParameterScale::Unspecified: break;
  }
  return "SCALE_TYPE_UNSPECIFIED";
}

json studySpec(const HyperparameterTuning& h) {
  json metrics = json::array(), params = json::array();
  for (const auto& m : h.metrics)
    metrics.push_back({{"metricId", m.metricId}, {"goal", m.goal == MetricGoal::Maximize ? "MAXIMIZE" : "MINIMIZE"}});
  for (const auto& p : h.parameters) {
    json param = {{"parameterId", p.parameterId}};
    if (p.doubleRange) param["doubleValueSpec"] = {{"minValue", p.doubleRange->min}, {"maxValue", p.doubleRange->max}};
    if (p.integerRange)
      param["integerValueSpec"] = {{"minValue", std::to_string(p.integerRange->min)}, {"maxValue", std::to_string(p.integerRange->max)}};
    if (p.discrete) param["discreteValueSpec"] = {{"values", *p.discrete}};
    if (p.categorical) param["categoricalValueSpec"] = {{"values", *p.categorical}};
    if (p.scale != ParameterScale::Unspecified) param["scaleType"] = scaleEnum(p.scale);
    params.push_back(param);
  }
  json study = {{"metrics", metrics}, {"parameters", params}};
  // Bayesian optimisation is Vertex's default, spelled ALGORITHM_UNSPECIFIED; leaving it out says the same.
  if (h.algorithm == SearchAlgorithm::Grid) study["algorithm"] = "GRID_SEARCH";
  if (h.algorithm == SearchAlgorithm::Random) study["algorithm"] = "RANDOM_SEARCH";
  return study;
}

}  // namespace

vertex::JobKind jobKindOf(const TrainingRunSpec& spec) {
  return spec.hyperparameterTuning ? vertex::JobKind::HyperparameterTuning : vertex::JobKind::Custom;
}

Location locationOf(const TrainingRunSpec& spec, const Location& defaults) {
  return {spec.project.empty() ? defaults.project : spec.project, spec.location.empty() ? defaults.location : spec.location};
}

std::string parentOf(const Location& where) {
  if (where.project.empty())
    throw std::invalid_argument("no project: set spec.project or the operator's default project (--project)");
  if (where.location.empty())
    throw std::invalid_argument("no location: set spec.location or the operator's default location (--location)");
  return where.parent();
}

std::map<std::string, std::string> jobLabels(const TrainingRun& run, int attempt) {
  auto labels = run.spec.labels;
  labels[kRunUidLabel] = sanitizeLabelValue(run.metadata.uid);
  labels[kNamespaceLabel] = sanitizeLabelValue(run.metadata.namespace_);
  labels[kNameLabel] = sanitizeLabelValue(run.metadata.name);
  labels[kAttemptLabel] = std::to_string(attempt);
  labels[kManagedByLabel] = kManagedByValue;
  // For the billing export: which policy made the run (a team's vto-team is added where the rule is known).
  if (auto policy = run.metadata.labels.find(kRetrainingPolicyLabel); policy != run.metadata.labels.end())
    labels[kPolicyLabel] = sanitizeLabelValue(policy->second);
  if (auto accelerators = acceleratorsOf(run.spec); accelerators > 0) {
    labels[kAcceleratorsLabel] = std::to_string(accelerators);
    auto types = acceleratorTypesOf(run.spec);
    if (!types.empty()) labels[kAcceleratorTypeLabel] = sanitizeLabelValue(types.front().second);
  }
  return labels;
}

json renderCustomJob(const TrainingRun& run, int attempt, const std::string& resumeFrom) {
  json body = json::object();
  putCommonFields(body, run, attempt);
  body["jobSpec"] = customJobSpec(run, attempt, resumeFrom);
  return body;
}

json renderHyperparameterTuningJob(const TrainingRun& run, int attempt, const std::string& resumeFrom) {
  if (!run.spec.hyperparameterTuning)
    throw std::invalid_argument("renderHyperparameterTuningJob: spec.hyperparameterTuning is not set");
  const auto& h = *run.spec.hyperparameterTuning;
  json body = json::object();
  putCommonFields(body, run, attempt);
  body["studySpec"] = studySpec(h);
  body["maxTrialCount"] = h.maxTrialCount;
  body["parallelTrialCount"] = h.parallelTrialCount;
  if (h.maxFailedTrialCount) body["maxFailedTrialCount"] = h.maxFailedTrialCount;
  body["trialJobSpec"] = customJobSpec(run, attempt, resumeFrom);
  return body;
}

json renderJob(const TrainingRun& run, int attempt, const std::string& resumeFrom) {
  return jobKindOf(run.spec) == vertex::JobKind::Custom ? renderCustomJob(run, attempt, resumeFrom)
                                                   : renderHyperparameterTuningJob(run, attempt, resumeFrom);
}

const std::vector<std::pair<const char*, const char*>>& runEnvAnnotations() {
  static const std::vector<std::pair<const char*, const char*>> mapping = {
      {kTriggerReasonAnnotation, "VTO_TRIGGER_REASON"},
      {kTriggerTimeAnnotation, "VTO_TRIGGER_TIME"},
      {kWarmStartFromAnnotation, "VTO_WARM_START_FROM"},
      {kDataWatermarkAnnotation, "VTO_DATA_WATERMARK"},
  };
  return mapping;
}

}  // namespace vto::crd
