#include "emulator/job_store.h"

#include <algorithm>

#include "base/rfc3339.h"
#include "emulator/capacity.h"
#include "emulator/list_filter.h"
#include "emulator/listing.h"
#include "emulator/model_artifacts.h"
#include "emulator/study.h"
#include "vertex/api_error.h"
#include "vertex/gcs_client.h"

namespace vto::emulator {
namespace {

std::string labelKey(const std::string& key, const std::string& value) { return key + '\n' + value; }

// Calls f with the labelKey of each of the job's string labels.
template <typename F>
void forEachLabel(const nlohmann::json& resource, F f) {
  auto labels = resource.find("labels");
  if (labels == resource.end() || !labels->is_object()) return;
  for (auto label = labels->begin(); label != labels->end(); ++label) {
    if (label->is_string()) f(labelKey(label.key(), label->get_ref<const std::string&>()));
  }
}

using nlohmann::json;
using vertex::ApiError;
using vertex::JobKind;
using vertex::JobState;

// google.rpc.Code numbers used below.
constexpr int kCancelled = 1, kInvalidArgument = 3, kResourceExhausted = 8, kInternal = 13, kUnavailable = 14;

// Job ids look like Vertex's: 19 decimal digits.
constexpr long long kFirstId = 1000000000000000000LL;

ApiError notFound(const std::string& name) {
  return ApiError(404, "NOT_FOUND", "The resource \"" + name + "\" was not found.");
}

ApiError failedPrecondition(const std::string& message) { return ApiError(400, "FAILED_PRECONDITION", message); }

// VTO_RESUME_FROM=gs://.../ckpt-N in any worker pool's env: the job continues at step N+1.
std::string resumeFrom(const json& resource, JobKind kind) {
  const auto& spec = resource.value(kind == JobKind::Custom ? "jobSpec" : "trialJobSpec", json::object());
  for (const auto& pool : spec.value("workerPoolSpecs", json::array())) {
    for (const char* task : {"containerSpec", "pythonPackageSpec"}) {
      if (!pool.contains(task)) continue;
      for (const auto& variable : pool[task].value("env", json::array())) {
        if (variable.value("name", std::string()) == "VTO_RESUME_FROM") return variable.value("value", std::string());
      }
    }
  }
  return "";
}

int stepOfCheckpoint(const std::string& uri) {
  auto marker = uri.rfind("ckpt-");
  if (marker == std::string::npos) return 0;
  try {
    return std::stoi(uri.substr(marker + 5));
  } catch (const std::exception&) {
    return 0;
  }
}

// The first worker pool must run something: exactly one of containerSpec or pythonPackageSpec.
void checkWorkerPools(const json& spec, const std::string& field) {
  const auto& pools = spec.value("workerPoolSpecs", json::array());
  if (pools.empty()) return;  // the schema walk already reported it as required
  const auto& first = pools[0];
  bool container = first.contains("containerSpec"), python = first.contains("pythonPackageSpec");
  if (container == python) {
    throw ApiError(400, "INVALID_ARGUMENT",
                   field + ".workerPoolSpecs[0] must set exactly one of containerSpec or pythonPackageSpec.");
  }
  if (!first.contains("machineSpec") || first["machineSpec"].value("machineType", std::string()).empty()) {
    throw ApiError(400, "INVALID_ARGUMENT", field + ".workerPoolSpecs[0].machineSpec.machineType is required.");
  }
}

}  // namespace

vto::Location locationIn(const std::string& resourceName) {
  // projects/P/locations/L[/...]
  auto project = resourceName.find('/') + 1;
  auto locations = resourceName.find('/', project);
  auto location = resourceName.find('/', locations + 1) + 1;
  auto end = resourceName.find('/', location);
  if (project == 0 || locations == std::string::npos || location == 0) return {};
  return {resourceName.substr(project, locations - project), resourceName.substr(location, end - location)};
}

FailureClass parseFailureClass(const std::string& name) {
  if (name == "Preemption") return FailureClass::Preemption;
  if (name == "Stockout") return FailureClass::Stockout;
  if (name == "UserError") return FailureClass::UserError;
  if (name == "InternalError") return FailureClass::InternalError;
  if (name == "SpotStockout") return FailureClass::SpotStockout;
  throw ApiError(400, "INVALID_ARGUMENT", "failureClass \"" + name +
                                             "\" is unknown; use Preemption, Stockout, SpotStockout, UserError or InternalError.");
}

JobStore::JobStore(const Clock& clock, SimulationSettings settings, LifecycleHooks* hooks)
    : clock_(clock), settings_(settings), hooks_(hooks) {}

void JobStore::notify(const Job& job, JobEvent::Kind kind, Clock::time_point at, int step, int trial) {
  if (hooks_ == nullptr) return;
  JobEvent event{kind, job.resource, job.kind, at};
  event.step = step;
  event.steps = settings_.steps;
  event.trial = trial;
  hooks_->onEvent(event);
}

json JobStore::create(const vto::Location& where, JobKind kind, json resource, bool overQuota) {
  checkWorkerPools(resource.value(kind == JobKind::Custom ? "jobSpec" : "trialJobSpec", json::object()),
                   kind == JobKind::Custom ? "jobSpec" : "trialJobSpec");
  if (kind == JobKind::HyperparameterTuning &&
      (resource.value("maxTrialCount", 0) <= 0 || resource.value("parallelTrialCount", 0) <= 0)) {
    throw ApiError(400, "INVALID_ARGUMENT", "maxTrialCount and parallelTrialCount must be positive.");
  }
  std::lock_guard lock(mutex_);
  auto now = clock_.now();
  auto name = where.parent() + "/" + std::string(vertex::collectionName(kind)) + "/" + std::to_string(kFirstId + nextId_++);
  Job job;
  job.kind = kind;
  job.resource = std::move(resource);
  job.created = now;
  job.overQuota = overQuota;
  job.resource["name"] = name;
  job.resource["state"] = vertex::jobStateName(JobState::Queued);
  job.resource["createTime"] = rfc3339Millis(now);
  job.resource["updateTime"] = rfc3339Millis(now);
  job.resumedFrom = resumeFrom(job.resource, kind);
  if (!job.resumedFrom.empty()) job.nextStep = stepOfCheckpoint(job.resumedFrom) + 1;
  if (kind == JobKind::Custom) {
    auto prefix = job.resource["jobSpec"].value("baseOutputDirectory", json::object()).value("outputUriPrefix", std::string());
    if (!prefix.empty()) {
      auto uri = vertex::parseGcsUri(prefix);
      if (!uri.object.empty() && uri.object.back() != '/') uri.object += '/';
      job.checkpointBucket = uri.bucket;
      job.checkpointPrefix = uri.object + "checkpoints/";
    }
  }
  auto result = job.resource;
  forEachLabel(job.resource, [&](const std::string& label) { byLabel_[label].push_back(name); });
  jobs_.emplace(name, std::move(job));
  order_.push_back(name);
  return result;
}

JobStore::Job& JobStore::find(const std::string& name) {
  auto found = jobs_.find(name);
  if (found == jobs_.end()) throw notFound(name);
  return found->second;
}

const JobStore::Job& JobStore::find(const std::string& name) const {
  auto found = jobs_.find(name);
  if (found == jobs_.end()) throw notFound(name);
  return found->second;
}

json JobStore::get(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return find(name).resource;
}

ListResult JobStore::list(const vto::Location& where, JobKind kind, const std::string& filterText, int pageSize,
                          const std::string& token, const std::vector<std::vector<std::string>>& readMask) const {
  ListFilter filter;
  try {
    filter = ListFilter::parse(filterText);
  } catch (const std::invalid_argument& error) {
    throw ApiError(400, "INVALID_ARGUMENT", error.what());
  }
  std::size_t size = pageSizeOf(pageSize);
  auto offset = pageOffset(token);
  auto prefix = where.parent() + "/" + std::string(vertex::collectionName(kind)) + "/";

  std::lock_guard lock(mutex_);
  static const std::vector<std::string> none;
  const std::vector<std::string>* candidates = &order_;
  if (auto label = filter.requiredLabel()) {
    auto found = byLabel_.find(labelKey(label->first, label->second));
    candidates = found == byLabel_.end() ? &none : &found->second;
  }
  std::vector<const json*> matching;
  for (const auto& name : *candidates) {
    if (name.rfind(prefix, 0) != 0) continue;
    const auto& resource = jobs_.at(name).resource;
    if (filter.matches(resource)) matching.push_back(&resource);
  }
  ListResult result;
  for (std::size_t i = offset; i < matching.size() && i < offset + size; ++i) {
    result.jobs.push_back(applyReadMask(*matching[i], readMask));
  }
  if (offset + size < matching.size()) result.nextPageToken = pageToken(offset + size);
  return result;
}

void JobStore::cancel(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto& job = find(name);
  auto state = vertex::jobStateFromJson(job.resource["state"]);
  if (vertex::isTerminal(state)) {
    throw failedPrecondition("Cannot cancel \"" + name + "\": the job is already in state " +
                             std::string(vertex::jobStateName(state)) + ".");
  }
  if (state == JobState::Cancelling) return;
  job.cancelRequested = clock_.now();
  setState(job, JobState::Cancelling, clock_.now());
}

json JobStore::remove(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto& job = find(name);
  auto state = vertex::jobStateFromJson(job.resource["state"]);
  if (!vertex::isTerminal(state)) {
    throw failedPrecondition("Cannot delete \"" + name + "\" in state " + std::string(vertex::jobStateName(state)) +
                             "; cancel it and wait until it has stopped.");
  }
  auto location = locationIn(name);
  auto now = rfc3339Millis(clock_.now());
  auto operationName = location.parent() + "/operations/" + std::to_string(kFirstId + nextId_++);
  json operation = {
      {"name", operationName},
      {"metadata",
       {{"@type", "type.googleapis.com/google.cloud.aiplatform.v1.DeleteOperationMetadata"},
        {"genericMetadata", {{"createTime", now}, {"updateTime", now}}}}},
      {"done", false}};
  operations_[operationName] = {operation, name};
  return operation;
}

json JobStore::operation(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto found = operations_.find(name);
  if (found == operations_.end()) throw notFound(name);
  return found->second.operation;
}

void JobStore::fail(const std::string& name, FailureClass failure, std::vector<std::string> output) {
  std::lock_guard lock(mutex_);
  auto& job = find(name);
  auto state = vertex::jobStateFromJson(job.resource["state"]);
  if (vertex::isTerminal(state)) {
    throw failedPrecondition("Cannot fail \"" + name + "\": it already ended in " + std::string(vertex::jobStateName(state)));
  }
  // The messages follow what Vertex writes into CustomJob.error for each kind of failure.
  switch (failure) {
    case FailureClass::Preemption:
      finish(job, JobState::Failed, clock_.now(),
             std::make_pair(kUnavailable, "The replica workerpool0-0 was preempted: the VM was reclaimed by Compute Engine."),
             failure);
      break;
    case FailureClass::Stockout:
      finish(job, JobState::Failed, clock_.now(),
             std::make_pair(kResourceExhausted, stockoutMessage(locationIn(name).location)), failure);
      break;
    case FailureClass::SpotStockout:
      // Google: a Spot VM preempted and not restarted by Compute Engine fails the job with STOCKOUT.
      if (!job.resource.contains("startTime")) {
        throw failedPrecondition("Cannot fail \"" + name + "\" as a preempted Spot job: it never started");
      }
      finish(job, JobState::Failed, clock_.now(),
             std::make_pair(kResourceExhausted, stockoutMessage(locationIn(name).location)), FailureClass::Preemption);
      break;
    case FailureClass::UserError:
      finish(job, JobState::Failed, clock_.now(),
             std::make_pair(kInvalidArgument, "The replica workerpool0-0 exited with a non-zero status of 1."), failure, "",
             std::move(output));
      break;
    case FailureClass::InternalError:
      finish(job, JobState::Failed, clock_.now(), std::make_pair(kInternal, "Internal error occurred. Please retry."),
             failure);
      break;
  }
}

void JobStore::crash(const std::string& name, int step, const std::string& reason) {
  std::lock_guard lock(mutex_);
  auto& job = find(name);
  auto state = vertex::jobStateFromJson(job.resource["state"]);
  if (vertex::isTerminal(state) && state != JobState::Succeeded) return;
  if (step <= 0 && !job.stepsRun.empty()) step = job.stepsRun.front();
  std::erase_if(job.stepsRun, [&](int s) { return s > step; });
  job.nextStep = settings_.steps + 1;  // no further steps
  job.succeededAt.reset();             // its model files will not make it succeed
  finish(job, JobState::Failed, clock_.now(),
         std::make_pair(kInvalidArgument, "The replica workerpool0-0 exited with a non-zero status of 1. " + reason),
         std::nullopt, reason);
}

void JobStore::artifactsWritten(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto found = jobs_.find(name);
  if (found == jobs_.end()) return;
  auto& job = found->second;
  // Cancelled, failed or crashed meanwhile: it stays so.
  if (!job.succeededAt || vertex::jobStateFromJson(job.resource["state"]) != JobState::Running) return;
  auto at = *job.succeededAt;
  job.succeededAt.reset();
  finish(job, JobState::Succeeded, at, std::nullopt);
}

json JobStore::trace(const std::string& name) const {
  std::lock_guard lock(mutex_);
  const auto& job = find(name);
  return {{"stepsRun", job.stepsRun}, {"resumedFrom", job.resumedFrom}};
}

json JobStore::countByState() const {
  std::lock_guard lock(mutex_);
  std::map<std::string, int> counts;
  for (const auto& [name, job] : jobs_) ++counts[job.resource.value("state", std::string())];
  return counts;
}

void JobStore::setState(Job& job, JobState state, Clock::time_point at) {
  job.resource["state"] = vertex::jobStateName(state);
  job.resource["updateTime"] = rfc3339Millis(at);
}

void JobStore::finish(Job& job, JobState state, Clock::time_point at, std::optional<std::pair<int, std::string>> error,
                      std::optional<FailureClass> failure, const std::string& crash, std::vector<std::string> output) {
  bool firstEnd = !vertex::isTerminal(vertex::jobStateFromJson(job.resource["state"]));
  setState(job, state, at);
  job.resource["endTime"] = rfc3339Millis(at);
  if (error) job.resource["error"] = {{"code", error->first}, {"message", error->second}};
  if (hooks_ == nullptr) return;
  JobEvent event{JobEvent::Kind::Ended, job.resource, job.kind, at};
  event.steps = settings_.steps;
  event.firstEnd = firstEnd;
  event.failure = failure;
  event.crash = crash;
  event.output = std::move(output);
  hooks_->onEvent(event);
}

void JobStore::start(Job& job, Clock::time_point at) {
  job.held = false;
  setState(job, JobState::Running, at);
  job.resource["startTime"] = rfc3339Millis(at);
  job.nextStepAt = at + settings_.stepTime;
  // Before the first trials, which start at startTime as written (to the millisecond).
  job.advancedTo = std::chrono::floor<std::chrono::milliseconds>(at) - Clock::duration(1);
  notify(job, JobEvent::Kind::Started, at, job.nextStep);
}

std::vector<CheckpointWrite> JobStore::advance() {
  std::lock_guard lock(mutex_);
  auto now = clock_.now();
  std::vector<CheckpointWrite> writes;
  for (auto& [name, job] : jobs_) {
    auto state = vertex::jobStateFromJson(job.resource["state"]);
    if (state == JobState::Queued && job.overQuota) {
      // Vertex keeps a job over its project's quota QUEUED, without an error, until the quota frees:
      // its queue time counts from then.
      if (hooks_ == nullptr || !hooks_->admit(job.resource, job.kind)) continue;
      job.overQuota = false;
      job.created = now;
    }
    auto pendingAt = job.created + settings_.queueTime / 2;
    auto runningAt = job.created + settings_.queueTime;
    if (state == JobState::Queued && now >= pendingAt) {
      setState(job, state = JobState::Pending, pendingAt);
    }
    if (state == JobState::Pending && now >= runningAt) {
      // A job held for capacity starts (or fails) when the capacity changes, at this tick.
      auto at = job.held ? now : runningAt;
      switch (hooks_ != nullptr ? hooks_->beforeStart(job.resource, job.kind) : StartDecision::Start) {
        case StartDecision::Start:
          start(job, at);
          state = JobState::Running;
          break;
        case StartDecision::Fail:
          // Vertex tries to provision for a while before it reports the stockout.
          if (now < runningAt + settings_.stockoutWait) {
            job.held = true;
            break;
          }
          finish(job, JobState::Failed, std::max(at, runningAt + settings_.stockoutWait),
                 std::make_pair(kResourceExhausted, stockoutMessage(locationIn(name).location)));
          continue;
        case StartDecision::Hold:
          job.held = true;
          break;
      }
    }
    if (state == JobState::Running) {
      if (job.kind == JobKind::Custom) {
        advanceCustom(job, now, writes);
      } else {
        advanceTuning(job, now);
      }
    }
    if (state == JobState::Cancelling && now >= *job.cancelRequested + settings_.cancelTime) {
      finish(job, JobState::Cancelled, *job.cancelRequested + settings_.cancelTime,
             std::make_pair(kCancelled, std::string("CANCELED")));
    }
  }
  for (auto& [operationName, pending] : operations_) {
    if (pending.operation["done"].get<bool>()) continue;
    if (auto gone = jobs_.find(pending.jobName); gone != jobs_.end()) {
      forEachLabel(gone->second.resource, [&](const std::string& label) {
        auto& names = byLabel_[label];
        names.erase(std::remove(names.begin(), names.end(), pending.jobName), names.end());
        if (names.empty()) byLabel_.erase(label);
      });
      jobs_.erase(gone);
    }
    order_.erase(std::remove(order_.begin(), order_.end(), pending.jobName), order_.end());
    pending.operation["done"] = true;
    pending.operation["response"] = {{"@type", "type.googleapis.com/google.protobuf.Empty"}};
    pending.operation["metadata"]["genericMetadata"]["updateTime"] = rfc3339Millis(now);
  }
  return writes;
}

void JobStore::advanceCustom(Job& job, Clock::time_point now, std::vector<CheckpointWrite>& writes) {
  if (job.succeededAt) return;  // waiting for its model files
  auto finishedAt = job.nextStepAt - settings_.stepTime;
  while (job.nextStep <= settings_.steps && job.nextStepAt <= now) {
    job.stepsRun.push_back(job.nextStep);
    if (!job.checkpointBucket.empty()) {
      json content = {{"job", job.resource["name"]}, {"step", job.nextStep}};
      writes.push_back({job.checkpointBucket, job.checkpointPrefix + "ckpt-" + std::to_string(job.nextStep), content.dump(),
                        job.resource["name"].get<std::string>(), job.nextStep});
    }
    notify(job, JobEvent::Kind::Step, job.nextStepAt, job.nextStep);
    finishedAt = job.nextStepAt;
    ++job.nextStep;
    job.nextStepAt += settings_.stepTime;
  }
  if (job.nextStep <= settings_.steps) return;
  auto artifacts = settings_.modelArtifacts ? modelArtifactsOf(job.resource, settings_.steps) : ModelArtifacts{};
  if (!artifacts.error.empty()) {
    finish(job, JobState::Failed, finishedAt,
           std::make_pair(kInvalidArgument, "The replica workerpool0-0 exited with a non-zero status of 1. " + artifacts.error),
           std::nullopt, artifacts.error);
  } else if (artifacts.writes.empty()) {
    finish(job, JobState::Succeeded, finishedAt, std::nullopt);
  } else {
    // SUCCEEDED once the files are in Cloud Storage, so that a client seeing it finds them.
    job.succeededAt = finishedAt;
    for (auto& write : artifacts.writes) writes.push_back(std::move(write));
  }
}

void JobStore::advanceTuning(Job& job, Clock::time_point now) {
  const auto& study = job.resource["studySpec"];
  int maxTrials = job.resource["maxTrialCount"].get<int>();
  int parallel = job.resource["parallelTrialCount"].get<int>();
  auto trialTime = std::max<Clock::duration>(settings_.stepTime * settings_.steps, std::chrono::milliseconds(1));
  auto startTime = parseRfc3339(job.resource["startTime"].get<std::string>());
  // What happened since the previous advance, in (advancedTo, now]: each moment is logged once.
  auto since = job.advancedTo;
  auto happened = [&](Clock::time_point t) { return t > since && t <= now; };
  job.advancedTo = now;
  json trials = json::array();
  Clock::time_point lastEnd = startTime;
  bool allDone = true;
  for (int index = 0; index < maxTrials; ++index) {
    auto start = startTime + trialTime * (index / parallel);
    auto end = start + trialTime;
    if (start > now) {
      allDone = false;
      break;
    }
    auto parameters = trialParameters(study, index);
    json trial = {{"id", std::to_string(index + 1)}, {"state", "ACTIVE"}, {"parameters", parameters},
                  {"startTime", rfc3339Millis(start)}};
    if (happened(start)) notify(job, JobEvent::Kind::TrialStarted, start, 0, index + 1);
    // Steps of this trial that ended since the previous advance, without walking every step.
    auto stepTime = std::max<Clock::duration>(settings_.stepTime, Clock::duration(1));
    long long firstStep = since < start ? 1 : (since - start) / stepTime + 1;
    long long lastStep = std::min<long long>(settings_.steps, (std::min(now, end) - start) / stepTime);
    for (auto step = firstStep; step <= lastStep; ++step) {
      notify(job, JobEvent::Kind::TrialStep, start + stepTime * step, static_cast<int>(step), index + 1);
    }
    if (happened(end)) notify(job, JobEvent::Kind::TrialEnded, end, settings_.steps, index + 1);
    if (end <= now) {
      json metrics = json::array();
      for (const auto& metric : study.value("metrics", json::array())) {
        metrics.push_back({{"metricId", metric.value("metricId", std::string())},
                           {"value", trialMetric(study, parameters)}});
      }
      trial["state"] = "SUCCEEDED";
      trial["endTime"] = rfc3339Millis(end);
      trial["finalMeasurement"] = {{"stepCount", std::to_string(settings_.steps)}, {"metrics", metrics}};
      lastEnd = std::max(lastEnd, end);
    } else {
      allDone = false;
    }
    trials.push_back(trial);
  }
  if (trials != job.resource.value("trials", json::array())) {
    job.resource["trials"] = trials;
    job.resource["updateTime"] = rfc3339Millis(now);
  }
  if (allDone) finish(job, JobState::Succeeded, lastEnd, std::nullopt);
}

}  // namespace vto::emulator
