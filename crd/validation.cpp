#include "crd/validation.h"

#include "crd/placement.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <cctype>
#include <limits>
#include <stdexcept>

#include "base/gcp_names.h"
#include "base/money.h"
#include "base/url.h"
#include "crd/accelerators.h"
#include "crd/duration.h"
#include "crd/labels.h"
#include "crd/machine_catalog.h"
#include "crd/schedule.h"
#include "crd/strict_json.h"

namespace vto::crd {
namespace {

// Labels the operator writes on every Vertex job (see render.h); users cannot set them.
constexpr size_t kOperatorLabelCount = 11;
// Trials at the same time (the CRD's maximum): a count that multiplies every accelerator of the run.
constexpr int32_t kMaxParallelTrials = 4096;

class Findings {
 public:
  explicit Findings(std::string root) : root_(std::move(root)) {}
  void error(const std::string& field, std::string message) { add(Severity::Error, field, std::move(message)); }
  void warning(const std::string& field, std::string message) { add(Severity::Warning, field, std::move(message)); }
  std::vector<Finding> take() { return std::move(list_); }

 private:
  void add(Severity s, const std::string& field, std::string message) {
    list_.push_back({s, joinPath(root_, field), std::move(message)});
  }
  std::string root_;
  std::vector<Finding> list_;
};

// gcr.io/... or HOST.gcr.io/... (eu.gcr.io, us.gcr.io, ...).
bool isContainerRegistry(const std::string& image) {
  std::string host = image.substr(0, image.find('/'));
  if (host.size() == image.size()) return false;
  return host == "gcr.io" || (host.size() > 7 && host.compare(host.size() - 7, 7, ".gcr.io") == 0);
}

// Five whitespace-separated fields (minute hour day month weekday).
bool hasFiveCronFields(const std::string& cron) {
  int fields = 0;
  bool inField = false;
  for (char c : cron) {
    bool space = c == ' ' || c == '\t';
    if (!space && !inField) ++fields;
    inField = !space;
  }
  return fields == 5;
}

void checkImage(Findings& f, const std::string& field, const std::string& image) {
  if (isContainerRegistry(image))
    f.error(field, "Container Registry (gcr.io) is deprecated; push the image to Artifact Registry and use "
                   "LOCATION-docker.pkg.dev/PROJECT/REPO/IMAGE");
}

bool isGcsUri(const std::string& uri) { return uri.rfind("gs://", 0) == 0 && uri.size() > 5; }

void checkEnv(Findings& f, const std::string& field, const std::vector<EnvVar>& env) {
  const auto& reserved = reservedEnvNames();
  for (size_t i = 0; i < env.size(); ++i) {
    if (std::find(reserved.begin(), reserved.end(), env[i].name) != reserved.end())
      f.warning(indexPath(field, i) + ".name", env[i].name +
                                                   " is set by Vertex AI for distributed training; remove it, or your "
                                                   "value will break or be overwritten");
    if (env[i].name.rfind("VTO_", 0) == 0)
      f.error(indexPath(field, i) + ".name", "VTO_* variables are set by the operator; rename the variable");
  }
}

void checkTrainer(Findings& f, const TrainingRunSpec& spec) {
  bool hasPools = !spec.workerPoolSpecs.empty();
  if (spec.trainer && hasPools)
    f.error("workerPoolSpecs", "set either trainer (with resources and distribution) or workerPoolSpecs, not both");
  if (!spec.trainer && !hasPools)
    f.error("trainer", "required: set trainer.container or trainer.pythonPackage (or, for experts, workerPoolSpecs)");
  if (hasPools && (spec.resources || spec.distribution))
    f.error(spec.resources ? "resources" : "distribution",
            "workerPoolSpecs describes the machines itself; remove resources and distribution");
  if (!spec.trainer) return;
  const auto& t = *spec.trainer;
  if (t.container.has_value() == t.pythonPackage.has_value())
    f.error("trainer", "set exactly one of trainer.container (your own image) or trainer.pythonPackage "
                       "(a prebuilt image running your package)");
  if (const auto& c = t.container) {
    if (c->imageUri.empty()) f.error("trainer.container.imageUri", "required: the training image, e.g. us-central1-docker.pkg.dev/PROJECT/REPO/IMAGE:TAG");
    checkImage(f, "trainer.container.imageUri", c->imageUri);
    checkEnv(f, "trainer.container.env", c->env);
  }
  if (const auto& p = t.pythonPackage) {
    if (p->executorImageUri.empty())
      f.error("trainer.pythonPackage.executorImageUri",
              "executorImageUri is required: a prebuilt training image, e.g. us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-1.py310:latest");
    checkImage(f, "trainer.pythonPackage.executorImageUri", p->executorImageUri);
    if (p->pythonModule.empty())
      f.error("trainer.pythonPackage.pythonModule", "pythonModule is required: the module to run, e.g. trainer.task");
    if (p->packageUris.empty())
      f.error("trainer.pythonPackage.packageUris", "required: the gs:// URIs of your package, e.g. gs://BUCKET/trainer-0.1.tar.gz");
    for (size_t i = 0; i < p->packageUris.size(); ++i)
      if (!isGcsUri(p->packageUris[i]))
        f.error(indexPath("trainer.pythonPackage.packageUris", i), "packageUris must be gs:// URIs; upload the package to Cloud Storage");
    checkEnv(f, "trainer.pythonPackage.env", p->env);
  }
  if (!spec.resources) f.error("resources", "required with trainer: set resources.machineType, e.g. n1-standard-8");
}

// The tenancy rules count a slice's chips by its topology (acceleratorsOf).
void checkTpuTopology(Findings& f, const std::string& field, const std::string& topology) {
  if (!topology.empty() && !tpuSliceChips(topology))
    f.error(field, "\"" + topology.substr(0, 32) + "\" is not a TPU topology; write the slice's chips per dimension, e.g. 2x2 or 2x2x1");
}

void checkResources(Findings& f, const TrainingRunSpec& spec) {
  if (!spec.resources) return;
  const auto& r = *spec.resources;
  if (r.machineType.empty()) f.error("resources.machineType", "required: the machine type, e.g. n1-standard-8 or a2-highgpu-1g");
  if (!r.acceleratorType.empty()) {
    const auto& known = vertexAcceleratorTypes();
    if (std::find(known.begin(), known.end(), r.acceleratorType) == known.end()) {
      std::string list;
      for (const auto& k : known)
        if (!isRetiredAccelerator(k)) list += (list.empty() ? "" : ", ") + k;
      f.error("resources.acceleratorType", "\"" + r.acceleratorType + "\" is not a Vertex accelerator type; use one of: " + list);
      return;
    }
    if (isRetiredAccelerator(r.acceleratorType)) {
      f.error("resources.acceleratorType", r.acceleratorType + " has reached end of support; use NVIDIA_TESLA_T4 or a newer GPU");
      return;
    }
  }
  if (!r.acceleratorType.empty() && r.acceleratorCount == 0)
    f.error("resources.acceleratorCount", "set acceleratorType and acceleratorCount together (e.g. NVIDIA_TESLA_T4 and 1), or neither");
  if (r.acceleratorType.empty() && r.acceleratorCount != 0)
    f.error("resources.acceleratorType", "set acceleratorType and acceleratorCount together (e.g. NVIDIA_TESLA_T4 and 1), or neither");
  if (!r.tpuTopology.empty() && r.acceleratorType.rfind("TPU_", 0) != 0)
    f.error("resources.tpuTopology", "only TPU slices have a topology; remove it or set a TPU_* acceleratorType");
  checkTpuTopology(f, "resources.tpuTopology", r.tpuTopology);
  if (!r.bootDiskType.empty() && r.bootDiskType != "pd-ssd" && r.bootDiskType != "pd-standard" &&
      r.bootDiskType != "hyperdisk-balanced")
    f.error("resources.bootDiskType", "use pd-ssd, pd-standard or hyperdisk-balanced");
  if (r.machineType.empty() || (r.acceleratorType.empty() != (r.acceleratorCount == 0))) return;
  if (auto problem = MachineCatalog::builtIn().check(r.machineType, r.acceleratorType, r.acceleratorCount)) {
    std::string field = problem->aboutCount ? "resources.acceleratorCount" : "resources.acceleratorType";
    if (problem->certain) f.error(field, problem->message);
    else f.warning(field, problem->message);
  }
}

void checkDistribution(Findings& f, const TrainingRunSpec& spec) {
  if (spec.framework == Framework::PyTorch && usesTpu(spec))
    f.error("framework", "Vertex AI's managed TPUs run TensorFlow and JAX; use GPUs (e.g. PyTorchDDP on "
                         "NVIDIA accelerators) for PyTorch, or framework tensorflow/jax on TPUs");
  if (!spec.distribution) return;
  const auto& d = *spec.distribution;
  bool multiMachine = d.strategy == Strategy::MultiWorkerMirrored || d.strategy == Strategy::PyTorchDDP ||
                      d.strategy == Strategy::ParameterServer;
  if (d.strategy == Strategy::Mirrored && d.workerCount > 1)
    f.error("distribution.workerCount", "MirroredStrategy uses the GPUs of one machine; set workerCount: 1, or use "
                                        "strategy MultiWorkerMirrored for several machines");
  if ((d.strategy == Strategy::None || d.strategy == Strategy::TPU) && d.workerCount > 1)
    f.error("distribution.workerCount", "strategy " + enumName(d.strategy, strategyNames()) +
                                            " runs on one machine; set workerCount: 1, or choose MultiWorkerMirrored, "
                                            "PyTorchDDP or ParameterServer");
  bool tpuAccelerator = spec.resources && spec.resources->acceleratorType.rfind("TPU_", 0) == 0;
  if (d.strategy == Strategy::TPU && spec.resources && !tpuAccelerator)
    f.error("resources.acceleratorType", "strategy TPU needs a TPU accelerator, e.g. TPU_V3 with machineType cloud-tpu");
  if (tpuAccelerator && d.strategy != Strategy::TPU && d.strategy != Strategy::None)
    f.error("distribution.strategy", "a TPU slice is one pool; use strategy: TPU");
  if (d.strategy == Strategy::ParameterServer && !d.parameterServers)
    f.error("distribution.parameterServers", "ParameterServer needs parameterServers: set {replicaCount, machineType}, e.g. "
                                             "{replicaCount: 2, machineType: n1-highmem-8}");
  if (d.strategy != Strategy::ParameterServer && d.parameterServers)
    f.error("distribution.parameterServers", "only strategy ParameterServer uses parameter servers; remove them");
  if (d.strategy != Strategy::ParameterServer && d.evaluator)
    f.error("distribution.evaluator", "only strategy ParameterServer has an evaluator pool; remove it");
  if (const auto& rs = d.reductionServer) {
    if (d.strategy == Strategy::ParameterServer)
      f.error("distribution.reductionServer", "Reduction Server replaces parameter servers for all-reduce "
                                              "training; use it with MultiWorkerMirrored or PyTorchDDP, not ParameterServer");
    else if (!multiMachine)
      f.error("distribution.reductionServer", "Reduction Server needs several machines; use strategy "
                                              "MultiWorkerMirrored or PyTorchDDP with workerCount >= 2");
    if (rs->machineType.rfind("n1-highcpu-", 0) != 0)
      f.error("distribution.reductionServer.machineType", "Reduction Server runs on n1-highcpu-* machines; use e.g. n1-highcpu-16");
    if (d.workerCount < 2)
      f.error("distribution.workerCount", "Reduction Server needs workerCount >= 2 (it aggregates gradients between machines)");
    if (!spec.resources || spec.resources->acceleratorType.rfind("NVIDIA_", 0) != 0)
      f.error("resources.acceleratorType", "Reduction Server speeds up GPU all-reduce; give the workers NVIDIA GPUs or remove reductionServer");
    if (!rs->imageUri.empty()) checkImage(f, "distribution.reductionServer.imageUri", rs->imageUri);
  }
}

void checkOutputs(Findings& f, const TrainingRunSpec& spec) {
  if (spec.baseOutputDirectory.empty())
    f.error("baseOutputDirectory", "required: a gs:// directory for the model, checkpoints and logs, e.g. gs://BUCKET/RUN");
  else if (!isGcsUri(spec.baseOutputDirectory))
    f.error("baseOutputDirectory", "must be a gs:// URI (Vertex writes model, checkpoints and logs to Cloud Storage)");
  if (!spec.checkpointing.directory.empty() && !isGcsUri(spec.checkpointing.directory))
    f.error("checkpointing.directory", "checkpointing.directory must be a gs:// URI, or leave it empty for <baseOutputDirectory>/checkpoints");
}

// Google's prerequisites of FlexStart (Dynamic Workload Scheduler, "Schedule training jobs based on
// resource availability"): Vertex refuses the job otherwise, after a capacity failover chose it. The
// CRD's CEL says the same words.
constexpr std::array<std::string_view, 7> kFlexStartGpus = {
    "NVIDIA_L4", "NVIDIA_TESLA_A100", "NVIDIA_A100_80GB", "NVIDIA_H100_80GB", "NVIDIA_H100_MEGA_80GB",
    "NVIDIA_H200_141GB", "NVIDIA_B200"};
constexpr int64_t kFlexStartMaxTimeoutSeconds = 7 * 86400;
constexpr const char* kFlexStartGpuRule =
    "FlexStart runs only on L4, A100, H100, H200 or B200 GPUs; use one of them or another scheduling strategy";
constexpr const char* kFlexStartTimeoutRule = "FlexStart allows a timeout of at most 7 days (168h)";
constexpr const char* kFlexStartPoolsRule =
    "FlexStart needs the same machine in every worker pool: no parameter servers, evaluator or Reduction Server";

void checkFlexStart(Findings& f, const TrainingRunSpec& spec) {
  const auto types = acceleratorTypesOf(spec);
  if (types.empty()) f.error("scheduling.strategy", kFlexStartGpuRule);
  for (const auto& [path, type] : types) {
    if (std::find(kFlexStartGpus.begin(), kFlexStartGpus.end(), type) == kFlexStartGpus.end()) {
      f.error(path.rfind("spec.", 0) == 0 ? path.substr(5) : path, kFlexStartGpuRule);
    }
  }
  if (spec.scheduling.timeoutSeconds && *spec.scheduling.timeoutSeconds > kFlexStartMaxTimeoutSeconds)
    f.error("scheduling.timeout", kFlexStartTimeoutRule);
  const auto& d = spec.distribution;
  bool mixed = d && (d->parameterServers || d->evaluator || d->reductionServer);
  for (size_t i = 1; i < spec.workerPoolSpecs.size(); ++i) {
    const auto& pool = spec.workerPoolSpecs[i];
    if (pool.is_object() && pool.contains("machineSpec") && spec.workerPoolSpecs[0].is_object() &&
        pool["machineSpec"] != spec.workerPoolSpecs[0].value("machineSpec", nlohmann::json()))
      mixed = true;
  }
  if (mixed) f.error(d ? "distribution" : "workerPoolSpecs", kFlexStartPoolsRule);
}

void checkScheduling(Findings& f, const TrainingRunSpec& spec) {
  const auto& s = spec.scheduling;
  if (s.timeoutSeconds && *s.timeoutSeconds <= 0)
    f.error("scheduling.timeout", "timeout must be a positive duration like 24h, 30m, 1h30m or 90s; leave it out for Vertex's default of 7 days");
  if (s.maxWaitSeconds && s.strategy != SchedulingStrategy::FlexStart)
    f.error("scheduling.maxWaitDuration", "only FlexStart waits for capacity; set scheduling.strategy: FlexStart or remove maxWaitDuration");
  if (s.maxWaitSeconds && *s.maxWaitSeconds < 0)
    f.error("scheduling.maxWaitDuration", "must not be negative; 0 waits indefinitely");
  if (s.strategy == SchedulingStrategy::FlexStart) checkFlexStart(f, spec);
  if (spec.checkpointing.resumeBackoffSeconds > kMaxResumeBackoffSeconds)
    f.warning("checkpointing.resumeBackoff", "the backoff is capped at 1h; a longer value acts as 1h");
  if (!spec.maxCostUsd.empty() && !Usd::parse(spec.maxCostUsd))
    f.error("maxCostUsd", "must be US dollars as a string with at most 2 decimals, e.g. \"250\" or \"99.50\"");
}

// spec.adoptJob names a job in the run's own place, of the kind the run makes; the rest (that the job
// exists and is nobody else's) only the operator can tell.
void checkAdoptJob(Findings& f, const TrainingRunSpec& spec) {
  if (spec.adoptJob.empty()) return;
  static const char* kForm = "must be projects/P/locations/L/customJobs/ID (or hyperparameterTuningJobs/ID)";
  std::vector<std::string> parts;
  for (size_t start = 0; parts.size() < 7;) {
    auto end = spec.adoptJob.find('/', start);
    parts.push_back(spec.adoptJob.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  bool digits = parts.size() == 6 && !parts[5].empty() && parts[5].size() <= 20 &&
                std::all_of(parts[5].begin(), parts[5].end(), [](char c) { return c >= '0' && c <= '9'; });
  if (spec.adoptJob.size() > 200 || parts.size() != 6 || parts[0] != "projects" || parts[2] != "locations" ||
      (parts[4] != "customJobs" && parts[4] != "hyperparameterTuningJobs") || !digits ||
      !(isProjectId(parts[1]) || isProjectNumber(parts[1])) || !isVertexRegion(parts[3])) {
    f.error("adoptJob", kForm);
    return;
  }
  bool tuning = spec.hyperparameterTuning.has_value();
  if (tuning != (parts[4] == "hyperparameterTuningJobs"))
    f.error("adoptJob", tuning ? "a run with hyperparameterTuning adopts a hyperparameterTuningJobs/ID, not a CustomJob"
                               : "names a HyperparameterTuningJob: a run adopts one only with hyperparameterTuning set");
  if (!spec.project.empty() && parts[1] != spec.project)
    f.error("adoptJob", "is in project " + parts[1] + ", not the run's project " + spec.project +
                            ": a run adopts only a job in its own project and location");
  if (!spec.location.empty() && parts[3] != spec.location)
    f.error("adoptJob", "is in " + parts[3] + ", not the run's location " + spec.location +
                            ": a run adopts only a job in its own project and location");
}

// Project and location become part of the host and path of requests carrying the operator's token;
// the same rules are in the CRD schema and inside the Vertex client (base/gcp_names.h).
void checkPlacement(Findings& f, const TrainingRunSpec& spec) {
  if (!spec.project.empty() && !isProjectId(spec.project))
    f.error("project", "\"" + spec.project.substr(0, 64) + "\" " + std::string(kProjectIdRule));
  if (!spec.location.empty() && !isVertexRegion(spec.location))
    f.error("location", "\"" + spec.location.substr(0, 64) + "\" " + std::string(kRegionRule));
}

// Google Cloud labels a user writes (`at`: "labels" or "model.labels"), next to the `operatorCount`
// labels vto adds of its own (vto-* and managed-by) within Google's 64.
void checkGcpLabels(Findings& f, const std::string& at, const std::map<std::string, std::string>& labels, size_t operatorCount) {
  for (const auto& [key, value] : labels) {
    std::string field = at + "." + key;
    if (!isValidGcpLabelKey(key))
      f.error(field, "Google Cloud label keys start with a lowercase letter and use only lowercase letters, digits, "
                     "'_' and '-' (at most 63 characters); rename the key");
    else if (key.rfind("vto-", 0) == 0 || key == "managed-by")
      f.error(field, "vto-* and managed-by are the operator's labels; choose another key");
    if (!isValidGcpLabelValue(value))
      f.error(field, "Google Cloud label values use only lowercase letters, digits, '_' and '-' (at most 63 "
                     "characters); change the value");
  }
  if (labels.size() + operatorCount > kMaxGcpLabels)
    f.error(at, "at most " + std::to_string(kMaxGcpLabels - operatorCount) + " labels (the operator adds " +
                    std::to_string(operatorCount) + " of its own to the 64 allowed)");
}

void checkLabels(Findings& f, const TrainingRunSpec& spec) { checkGcpLabels(f, "labels", spec.labels, kOperatorLabelCount); }

// Labels vto writes on every model version it uploads (vto-run-uid, vto-run-<uid>, vto-namespace,
// vto-cluster, managed-by).
constexpr size_t kOperatorModelLabelCount = 5;

// A path under the artifact directory: relative, no "." or ".." segment, no empty segment.
bool isRelativeObjectPath(const std::string& path) {
  if (path.empty() || path.size() > 256 || path.front() == '/' || path.back() == '/') return false;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string segment = path.substr(start, end - start);
    if (segment.empty() || segment == "." || segment == "..") return false;
    start = end + 1;
  }
  return std::all_of(path.begin(), path.end(), [](unsigned char c) { return c > 0x20 && c < 0x7f && c != '#' && c != '?'; });
}

// Cloud Storage's bucket naming: 3-63 characters (222 with dots, each part at most 63) of lower-case
// letters, digits, '-', '_' and '.', starting and ending with a letter or digit.
bool isBucketName(const std::string& bucket) {
  if (bucket.size() < 3 || bucket.size() > 222) return false;
  if (!std::isalnum(static_cast<unsigned char>(bucket.front())) || !std::isalnum(static_cast<unsigned char>(bucket.back())))
    return false;
  size_t part = 0;
  for (char c : bucket) {
    bool allowed = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    if (!allowed) return false;
    part = c == '.' ? 0 : part + 1;
    if (part > 63) return false;
  }
  return bucket.find('.') != std::string::npos || bucket.size() <= 63;
}

// The problem with a model's artifact directory, or "": gs://BUCKET/PATH/ with a bucket Cloud Storage
// would accept, a path of printable ASCII with no '.', '..' or empty segment (no way out of the
// directory the tenancy rules checked), no '?' or '#'.
std::string artifactUriProblem(const std::string& uri) {
  if (!isGcsUri(uri)) return "must be a gs:// directory holding the model";
  if (!std::all_of(uri.begin(), uri.end(), [](unsigned char c) { return c > ' ' && c < 0x7F && c != '?' && c != '#'; }))
    return "must be printable ASCII without spaces, '?' or '#' (no control characters)";
  auto rest = uri.substr(5);
  auto slash = rest.find('/');
  if (!isBucketName(rest.substr(0, slash)))
    return "must name a Cloud Storage bucket (3-63 lower-case letters, digits, '-', '_' or '.')";
  if (slash == std::string::npos) return "";
  auto path = rest.substr(slash + 1);
  if (!path.empty() && path.back() == '/') path.pop_back();
  if (path.empty()) return "";
  if (!isRelativeObjectPath(path)) return "must have a path without '.', '..' or empty segments";
  return "";
}

void checkModel(Findings& f, const TrainingRunSpec& spec) {
  if (!spec.model) return;
  const auto& m = *spec.model;
  if (auto problem = checkModelReference("model.model", m.model)) f.error("model.model", *problem);
  if (!m.location.empty()) {
    if (auto problem = checkVertexRegion("model.location", m.location)) f.error("model.location", *problem);
  }
  if (!m.artifactUri.empty()) {
    if (auto problem = artifactUriProblem(m.artifactUri); !problem.empty())
      f.error("model.artifactUri", "artifactUri " + problem + ", e.g. gs://BUCKET/models/fraud/, or leave it empty for "
                                   "<baseOutputDirectory>/model/ (where Vertex tells the code to write it: AIP_MODEL_DIR)");
  }
  if (m.displayName.size() > 128) f.error("model.displayName", "at most 128 characters (Vertex's limit)");
  if (m.servingContainer.imageUri.empty())
    f.error("model.servingContainer.imageUri",
            "required: the image that serves the model, e.g. us-docker.pkg.dev/vertex-ai/prediction/xgboost-cpu.1-7:latest");
  else
    checkImage(f, "model.servingContainer.imageUri", m.servingContainer.imageUri);
  for (size_t i = 0; i < m.versionAliases.size(); ++i) {
    auto field = indexPath("model.versionAliases", i);
    if (auto problem = checkVersionAlias(field, m.versionAliases[i])) f.error(field, *problem);
    else if (m.versionAliases[i] == "default")
      f.error(field, "Vertex keeps the alias default on one version itself; choose another alias, e.g. candidate");
  }
  checkGcpLabels(f, "model.labels", m.labels, kOperatorModelLabelCount);
  if (m.evaluation && !isRelativeObjectPath(m.evaluation->metricsFile))
    f.error("model.evaluation.metricsFile",
            "must be a path under the artifact directory such as metrics.json or eval/metrics.json (no leading '/', "
            "no '.' or '..' segments, no '?' or '#')");
}

void checkPromotion(Findings& f, const RetrainingPolicySpec& spec) {
  if (!spec.promotion) return;
  const auto& p = *spec.promotion;
  const auto& model = spec.templ.spec.model;
  if (!model)
    f.error("spec.promotion", "promotion compares the versions the policy's runs register; set "
                              "spec.template.spec.model (the model ID and serving container), or remove promotion");
  if (p.metric.empty() || p.metric.size() > 128)
    f.error("spec.promotion.metric", "required: a key of the evaluation metrics file (at most 128 characters), e.g. auc");
  if (auto problem = checkVersionAlias("spec.promotion.alias", p.alias)) f.error("spec.promotion.alias", *problem);
  if (model && std::find(model->versionAliases.begin(), model->versionAliases.end(), p.alias) != model->versionAliases.end())
    f.error("spec.template.spec.model.versionAliases",
            "\"" + p.alias + "\" is the alias promotion moves to the better version; a run setting it on every new version "
            "would promote without comparing: remove it here");
  if (model && !model->evaluation)
    f.error("spec.template.spec.model.evaluation",
            "promotion reads the metric from each version's evaluation; set evaluation: {metricsFile: metrics.json}");
}

void checkTuning(Findings& f, const TrainingRunSpec& spec) {
  if (!spec.hyperparameterTuning) return;
  const auto& h = *spec.hyperparameterTuning;
  const std::string base = "hyperparameterTuning";
  if (h.metrics.empty())
    f.error(base + ".metrics", "hyperparameterTuning needs at least one metric to optimise, e.g. metrics: [{metricId: accuracy, goal: Maximize}]");
  if (h.parallelTrialCount > h.maxTrialCount)
    f.error(base + ".parallelTrialCount", "parallelTrialCount must be <= maxTrialCount (" + std::to_string(h.maxTrialCount) + ")");
  if (h.parallelTrialCount > kMaxParallelTrials)
    f.error(base + ".parallelTrialCount", "should be less than or equal to " + std::to_string(kMaxParallelTrials) +
                                              " (as the API server says): each parallel trial holds its own machines; "
                                              "run fewer in parallel");
  if (h.parameters.empty())
    f.error(base + ".parameters", "required: at least one parameter to tune");
  for (size_t i = 0; i < h.parameters.size(); ++i) {
    const auto& p = h.parameters[i];
    std::string at = indexPath(base + ".parameters", i);
    int kinds = p.doubleRange.has_value() + p.integerRange.has_value() + p.discrete.has_value() + p.categorical.has_value();
    if (kinds != 1) f.error(at, "set exactly one of double, integer, discrete or categorical");
    if (p.doubleRange && p.doubleRange->min >= p.doubleRange->max) f.error(at + ".double", "min must be < max; swap them or widen the range");
    if (p.integerRange && p.integerRange->min >= p.integerRange->max) f.error(at + ".integer", "min must be < max; swap them or widen the range");
    if (p.discrete && p.discrete->empty()) f.error(at + ".discrete.values", "required: at least one value");
    if (p.categorical && p.categorical->empty()) f.error(at + ".categorical.values", "required: at least one value");
    if (p.doubleRange && h.algorithm == SearchAlgorithm::Grid)
      f.error(at + ".double", "Grid search needs a finite set of values; use discrete values or integer ranges, "
                              "or choose algorithm Bayesian or Random");
    if (p.scale != ParameterScale::Unspecified && p.categorical)
      f.error(at + ".scale", "categorical values have no scale; remove it");
    if (p.scale == ParameterScale::Log && p.doubleRange && p.doubleRange->min <= 0)
      f.error(at + ".double.min", "a Log scale needs min > 0");
  }
  for (size_t i = 0; i < h.metrics.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (h.metrics[i].metricId == h.metrics[j].metricId)
        f.error(indexPath(base + ".metrics", i) + ".metricId", "duplicate metric; list each metricId once");
}

// Raw workerPoolSpecs reach Vertex as written: what tenancy counts (accelerators) and checks (package
// locations, NFS servers, reservations) must be all there is, read as Vertex reads it (raw_pool.h).
void checkRawPools(Findings& f, const TrainingRunSpec& spec) {
  for (size_t i = 0; i < spec.workerPoolSpecs.size(); ++i) {
    const auto& pool = spec.workerPoolSpecs[i];
    std::string at = indexPath("workerPoolSpecs", i);
    if (auto it = pool.find("containerSpec"); it != pool.end() && it->is_object() && it->contains("imageUri") &&
                                              (*it)["imageUri"].is_string())
      checkImage(f, at + ".containerSpec.imageUri", (*it)["imageUri"].get<std::string>());
    auto read = readRawPool(pool);
    for (const auto& unreadable : read.unreadable) f.error(at + "." + unreadable.field, unreadable.expected);
    // A machine that carries accelerators by itself names them, so the rules can check their type.
    if (read.acceleratorType.empty() && !read.machineType.empty()) {
      if (auto problem = MachineCatalog::builtIn().check(read.machineType, "", 0))
        f.error(at + ".machineSpec.acceleratorType", problem->message);
    }
    checkTpuTopology(f, at + ".machineSpec.tpuTopology", read.tpuTopology);
  }
  if (!spec.workerPoolSpecs.empty() && spec.workerPoolSpecs[0].empty())
    f.error("workerPoolSpecs[0]", "the primary pool is required; only later pools may be {}");
}

// One run may hold at most kMaxAcceleratorsPerRun accelerators at once (the CRD says the same for
// the trainer form).
void checkAcceleratorTotal(Findings& f, const TrainingRunSpec& spec) {
  int64_t needed = acceleratorsOf(spec);
  if (needed <= kMaxAcceleratorsPerRun) return;
  bool raw = !spec.workerPoolSpecs.empty();
  f.error(raw ? "workerPoolSpecs" : "resources.acceleratorCount",
          "the run needs " + (needed == std::numeric_limits<int64_t>::max() ? std::string("too many") : std::to_string(needed)) +
              " accelerators at once (" +
              (raw ? "each pool's accelerators per machine x replicaCount" : "accelerators per machine x workerCount") +
              ", x parallelTrialCount), more than the " + std::to_string(kMaxAcceleratorsPerRun) +
              " accelerators one run may hold; ask for fewer");
}

// --- RetrainingPolicy rules (the CRD's CEL rules say the same where CEL can check them) ---

void checkRetrainingPolicyName(Findings& f, const ObjectMeta& metadata) {
  if (metadata.name.size() > kMaxPolicyNameLength)
    f.error("metadata.name", "a RetrainingPolicy name must be at most 52 characters, so that its runs' names "
                             "(<policy>-<unix seconds>) fit in 63; choose a shorter name");
}

// A trigger poll reads a tenant's bucket or Prometheus: more often than this is load, not freshness.
void checkPollInterval(Findings& f, const std::string& field, std::chrono::seconds d) {
  if (d < kMinPollInterval)
    f.error(field, "pollInterval must be a duration of at least " + formatDuration(kMinPollInterval.count()) +
                       ", like 30s, 5m or 1h (a shorter one would poll a bucket or Prometheus many times a minute)");
}

void checkNonNegativeDuration(Findings& f, const std::string& field, const std::string& name, std::chrono::seconds d) {
  if (d.count() < 0) f.error(field, name + " must be a duration of 0s or more, like 0s, 5m or 1h");
}

void checkScheduleTrigger(Findings& f, const ScheduleTrigger& s) {
  const std::string at = "spec.triggers.schedule";
  std::string cron = s.cron;
  for (auto& c : cron) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  cron.erase(0, cron.find_first_not_of(" \t"));
  bool macro = !cron.empty() && cron[0] == '@';
  if (cron.rfind("TZ=", 0) == 0 || cron.rfind("CRON_TZ=", 0) == 0)
    f.error(at + ".cron", "cron must not set a time zone (TZ= or CRON_TZ=); use the timeZone field instead, e.g. timeZone: Europe/Berlin");
  else if (!macro && !hasFiveCronFields(s.cron))
    f.error(at + ".cron", "cron must be a 5-field cron expression (minute hour day month weekday), e.g. \"0 3 * * 1\", "
                          "or @daily/@weekly/@monthly/@hourly");
  else
    try {
      parseCron(s.cron);
    } catch (const std::invalid_argument& e) {
      f.error(at + ".cron", e.what());
    }
  try {
    checkTimeZone(s.timeZone);
  } catch (const std::invalid_argument& e) {
    f.error(at + ".timeZone", e.what());
  }
  checkNonNegativeDuration(f, at + ".jitter", "jitter", s.jitter);
}

void checkNewDataTrigger(Findings& f, const NewDataTrigger& n) {
  const std::string at = "spec.triggers.newData";
  if (!isGcsUri(n.gcsPrefix)) f.error(at + ".gcsPrefix", "gcsPrefix must be a gs:// prefix, e.g. gs://BUCKET/incoming/");
  checkPollInterval(f, at + ".pollInterval", n.pollInterval);
  checkNonNegativeDuration(f, at + ".quietPeriod", "quietPeriod", n.quietPeriod);
}

// Whether `url`, percent-decoded, holds a control character (C0, DEL, or C1 as UTF-8 %C2%80..%C2%9F).
// Sent encoded such bytes end no line, but a URL is a name, and what a name decodes to may be logged,
// shown or passed on by a proxy: the rule is no control characters, decoded or not.
bool hasEncodedControl(const std::string& url) {
  auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
  auto octetAt = [&](size_t i) -> int {
    if (i + 2 >= url.size() || url[i] != '%' || !hex(url[i + 1]) || !hex(url[i + 2])) return -1;
    return std::stoi(url.substr(i + 1, 2), nullptr, 16);
  };
  for (size_t i = 0; i + 2 < url.size(); ++i) {
    int octet = octetAt(i);
    if (octet < 0) continue;
    if (octet < 0x20 || octet == 0x7F) return true;
    if (octet == 0xC2) {
      int next = octetAt(i + 3);
      if (next >= 0x80 && next <= 0x9F) return true;
    }
  }
  return false;
}

void checkMetricTrigger(Findings& f, const MetricTrigger& m) {
  const std::string at = "spec.triggers.metric";
  const auto& url = m.prometheusUrl;
  bool printable = std::all_of(url.begin(), url.end(), [](unsigned char c) { return c > ' ' && c < 0x7F; });
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
    f.error(at + ".prometheusUrl", "prometheusUrl must be an http:// or https:// URL, e.g. http://prometheus.monitoring:9090");
  if (url.find_first_of("?#") != std::string::npos)
    f.error(at + ".prometheusUrl", "prometheusUrl is the server's base URL, without ? or #, e.g. http://prometheus.monitoring:9090");
  if (!printable)
    f.error(at + ".prometheusUrl", "prometheusUrl must be printable ASCII without spaces; percent-encode anything else, e.g. %20 for a space");
  if (hasEncodedControl(url))
    f.error(at + ".prometheusUrl", "prometheusUrl must hold no control characters, percent-encoded ones included (%0d, %0a, %7f, %c2%85)");
  if (printable && url.find_first_of("?#") == std::string::npos) {
    try {
      canonicalUrl(url);  // the client's own check (vertex/prometheus_client.cpp)
    } catch (const InvalidUrl& error) {
      f.error(at + ".prometheusUrl", "prometheusUrl is not a usable base URL (" + error.reason() +
                                         "), e.g. http://prometheus.monitoring:9090");
    }
  }
  if (m.query.empty()) f.error(at + ".query", "required: a PromQL query that returns exactly one sample, e.g. fraud_model_auc{env=\"prod\"}");
  if (m.below.has_value() == m.above.has_value())
    f.error(at, "set exactly one of below or above: the threshold that triggers a retrain");
  checkNonNegativeDuration(f, at + ".for", "for", m.forDuration);
  checkPollInterval(f, at + ".pollInterval", m.pollInterval);
}

void checkRetrainingPolicySpec(Findings& f, const RetrainingPolicySpec& spec) {
  // No trigger at all is allowed: the policy is then a button (the vto.dev/retrain-requested annotation).
  if (spec.triggers.schedule) checkScheduleTrigger(f, *spec.triggers.schedule);
  if (spec.triggers.newData) checkNewDataTrigger(f, *spec.triggers.newData);
  if (spec.triggers.metric) checkMetricTrigger(f, *spec.triggers.metric);
  checkNonNegativeDuration(f, "spec.cooldown", "cooldown", spec.cooldown);
  checkPromotion(f, spec);
  if (!spec.budgetMonthlyUsd.empty() && !Usd::parse(spec.budgetMonthlyUsd))
    f.error("spec.budget.monthlyUsd", "must be US dollars as a string with at most 2 decimals, e.g. \"500\" or \"99.50\"");
  if (spec.templ.labels.count(kRetrainingPolicyLabel))
    f.error(std::string("spec.template.metadata.labels.") + kRetrainingPolicyLabel,
            "the operator sets this label to the policy's name on every run; remove it from the template");
}

}  // namespace

MetricsFileLocation metricsFileOf(const TrainingRunSpec& spec) {
  if (!spec.model || !spec.model->evaluation) return {"", "the run sets no spec.model.evaluation"};
  auto directory = artifactUriOf(*spec.model, spec.baseOutputDirectory);
  if (auto problem = artifactUriProblem(directory); !problem.empty()) return {"", "the artifact directory " + problem};
  const auto& file = spec.model->evaluation->metricsFile;
  if (!isRelativeObjectPath(file))
    return {"", "metricsFile must be a path under the artifact directory without '.', '..' or empty segments"};
  return {directory + file, ""};
}

const std::vector<std::string>& reservedEnvNames() {
  static const std::vector<std::string> names = {"TF_CONFIG", "CLUSTER_SPEC", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK"};
  return names;
}

std::vector<Finding> validateTrainingRunSpec(const TrainingRunSpec& spec, const std::string& path) {
  Findings f(path);
  checkTrainer(f, spec);
  checkResources(f, spec);
  checkDistribution(f, spec);
  checkOutputs(f, spec);
  checkScheduling(f, spec);
  checkLabels(f, spec);
  checkTuning(f, spec);
  checkPlacement(f, spec);
  checkAdoptJob(f, spec);
  checkRawPools(f, spec);
  checkAcceleratorTotal(f, spec);
  checkModel(f, spec);
  auto own = f.take();
  // Every placement a run may move to is held to the same rules (a resolved one has no fallbacks).
  auto placements = validatePlacements(spec, path, own);
  own.insert(own.end(), placements.begin(), placements.end());
  return own;
}

std::vector<Finding> validate(const TrainingRun& run) { return validateTrainingRunSpec(run.spec, "spec"); }

std::vector<Finding> validate(const RetrainingPolicy& policy) {
  auto findings = validateTrainingRunSpec(policy.spec.templ.spec, "spec.template.spec");
  Findings f("");
  checkRetrainingPolicyName(f, policy.metadata);
  checkRetrainingPolicySpec(f, policy.spec);
  if (!policy.spec.templ.spec.adoptJob.empty())
    f.error("spec.template.spec.adoptJob", "a policy's runs cannot adopt a job (each would claim the same one): remove it");
  auto more = f.take();
  findings.insert(findings.end(), more.begin(), more.end());
  return findings;
}

bool hasErrors(const std::vector<Finding>& findings) {
  return std::any_of(findings.begin(), findings.end(), [](const Finding& f) { return f.severity == Severity::Error; });
}

std::string formatFinding(const Finding& finding) {
  return std::string(finding.severity == Severity::Error ? "ERROR" : "WARNING") + " " + finding.path + ": " + finding.message;
}

}  // namespace vto::crd
