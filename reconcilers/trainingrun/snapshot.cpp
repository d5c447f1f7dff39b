#include "reconcilers/trainingrun/snapshot.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "base/json_fields.h"
#include "base/rfc3339.h"
#include "crd/placement.h"
#include "crd/render.h"
#include "crd/training_run.h"
#include "governance/cost.h"
#include "vertex/json_codec.h"

namespace vto::reconcilers {
namespace {

// Label values from the object: short names of letters, digits, '-' and '_' pass, anything else is "other".
std::string boundedLabel(const std::string& value) {
  if (value.empty() || value.size() > 64) return value.empty() ? value : "other";
  for (char c : value) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return "other";
  }
  return value;
}

// The pools of the rendered job (governance::shapeOfRun, as the cost model reads them), each replica
// counted once per trial that runs at once.
std::vector<metrics::MachinePool> poolsOf(const crd::TrainingRun& decoded) {
  // The machines of the placement the current attempt went to (with capacity failover).
  crd::TrainingRun run = decoded;
  const auto& attempts = decoded.status.history.attempts;
  if (!attempts.empty() && attempts.back().placement && *attempts.back().placement > 0) {
    run.spec = crd::specAt(decoded.spec, static_cast<size_t>(*attempts.back().placement));
  }
  auto shape = governance::shapeOfRun(run, "");
  std::vector<metrics::MachinePool> pools;
  for (const auto& pool : shape.pools) {
    metrics::MachinePool out;
    out.machineType = boundedLabel(pool.machineType);
    out.acceleratorType = boundedLabel(pool.acceleratorType);
    // Per machine: a multi-host TPU slice's chips spread over its hosts.
    out.acceleratorCount = static_cast<int>(pool.acceleratorCount / std::max<int64_t>(pool.hosts, 1));
    out.replicas = static_cast<int>(pool.replicas * pool.hosts * shape.parallelTrials);
    pools.push_back(out);
  }
  return pools;
}

}  // namespace

std::vector<std::string> trainingRunPhases() {
  std::vector<std::string> names;
  for (const auto& [phase, name] : crd::phaseNames()) names.emplace_back(name);
  return names;
}

metrics::RunSnapshot trainingRunSnapshot(const nlohmann::json& object, bool readPools) {
  std::optional<crd::TrainingRun> run;
  try {
    run = crd::decodeTrainingRun(object);
  } catch (const std::exception&) {
  }
  return trainingRunSnapshot(object, run ? &*run : nullptr, readPools);
}

metrics::RunSnapshot trainingRunSnapshot(const nlohmann::json& object, const crd::TrainingRun* decoded, bool readPools) {
  metrics::RunSnapshot snapshot;
  auto meta = crd::decodeObjectMeta(object.value("metadata", nlohmann::json::object()), "metadata");
  snapshot.uid = meta.uid;
  snapshot.ns = meta.namespace_;
  snapshot.name = meta.name;
  snapshot.created = parseRfc3339OrNone(meta.creationTimestamp);
  snapshot.generation = meta.generation;
  if (decoded == nullptr) return snapshot;  // counted as Pending until the operator reports it Invalid
  const auto& run = *decoded;
  if (run.status.phase) snapshot.phase = crd::enumName(*run.status.phase, crd::phaseNames());
  snapshot.framework = crd::enumName(run.spec.framework, crd::frameworkNames());
  snapshot.scheduling = crd::enumName(run.spec.scheduling.strategy, crd::schedulingStrategyNames());
  snapshot.completed = run.status.completionTime;
  snapshot.waitingForCapacity = run.status.history.capacity && run.status.history.capacity->waitingSince;
  for (const auto& c : run.status.conditions)
    if (c.type == "Ready" && c.status == "False" && c.reason == "WaitingForKueue") snapshot.waitingForKueue = true;
  if (run.status.cost && run.status.cost->hourlyUsd) snapshot.hourlyUsd = run.status.cost->hourlyUsd->toDouble();
  if (const auto& progress = run.status.progress; progress && progress->totalSteps && *progress->totalSteps > 0) {
    snapshot.progressRatio = std::clamp(static_cast<double>(progress->step) / static_cast<double>(*progress->totalSteps), 0.0, 1.0);
    snapshot.eta = progress->eta;
  }
  for (const auto& attempt : run.status.history.attempts) {
    if (attempt.attempt == 1) snapshot.firstRunning = attempt.startTime;
    if (attempt.failureClass) snapshot.failedAttempts[attempt.attempt] = crd::enumName(*attempt.failureClass, crd::failureClassNames());
  }
  // Machine and accelerator names are label values: only once the operator has validated the run.
  if (readPools && run.status.phase && *run.status.phase != crd::Phase::Invalid) {
    try {
      snapshot.pools = poolsOf(run);
      snapshot.poolsRead = true;
    } catch (const std::exception&) {
      snapshot.pools.clear();
    }
    if (!snapshot.pools.empty() && !snapshot.pools.front().acceleratorType.empty()) {
      snapshot.acceleratorType = snapshot.pools.front().acceleratorType;
    }
  }
  return snapshot;
}

}  // namespace vto::reconcilers
