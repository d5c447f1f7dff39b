// The work after success (decide.h's workAfterSuccess): registering a succeeded run's model in Vertex
// AI Model Registry (API.md "Model registration"). One step per pass, each from what observe read:
//
//   no version, no upload   -> ArtifactMissing, or upload (journaled in status.model.uploadStartTime)
//   an upload in flight     -> look again shortly; failed: UploadFailed, retried with backoff
//   the version exists      -> import the metrics file as its evaluation (once), ModelRegistered=True
//
// Exactly one version per run: the version carries the run's uid as a label and is looked up before
// every upload; an upload asked for but not recorded (a crash in between, or an answer lost) is waited
// for, not repeated; one Vertex refused started nothing and is made again after the backoff.
#include <algorithm>
#include <cctype>
#include <set>

#include "base/gcp_names.h"
#include "crd/labels.h"
#include "crd/model.h"
#include "reconcilers/jobs/ownership.h"
#include "reconcilers/trainingrun/draft.h"

namespace vto::reconcilers {

using controller::normalEvent;
using controller::warningEvent;
using crd::Phase;
using namespace trainingrun;

namespace {

constexpr int kInvalidArgument = 3, kPermissionDenied = 7, kFailedPrecondition = 9;  // google.rpc.Code

const crd::ModelSpec& modelSpecOf(const Draft& d) { return *d.run.spec.model; }

std::string artifactUriOfRun(const Draft& d) {
  return crd::artifactUriOf(modelSpecOf(d), d.run.spec.baseOutputDirectory);
}

bool isRegistered(const crd::TrainingRunStatus& status) {
  const auto* c = controller::findStatusCondition(status.conditions, conditionTypeName(ConditionType::ModelRegistered));
  return c != nullptr && c->status == "True";
}

// ModelRegistered=False with a reason, and its Warning Event once per new message.
void notRegistered(Draft& d, Reason reason, const std::string& message) {
  bool news = !conditionIs(d, ConditionType::ModelRegistered, "False", reason) ||
              controller::findStatusCondition(d.o.status.conditions, conditionTypeName(ConditionType::ModelRegistered))
                      ->message != message;
  d.condition(ConditionType::ModelRegistered, false, reason, message);
  if (reason == Reason::Registering) return;
  d.plan.registrationFailed = reason;
  if (news) d.plan.events.push_back(warningEvent("ModelNotRegistered", message));
}

Reason reasonOfFailure(int httpStatus, int rpcCode = 0) {
  return httpStatus == 403 || rpcCode == kPermissionDenied ? Reason::PermissionDenied : Reason::UploadFailed;
}

// Vertex refused the request for what it says (400: INVALID_ARGUMENT, FAILED_PRECONDITION): the same
// request gets the same answer, so it is not sent again until the spec changes.
bool deterministic(int httpStatus, int rpcCode = 0) {
  return httpStatus == 400 || rpcCode == kInvalidArgument || rpcCode == kFailedPrecondition;
}

// ModelRegistered=False for good (for this generation): no retry, no requeue.
Plan refuse(Draft& d, const std::string& message) {
  auto& model = *d.next.history.model;
  model.operation.clear();
  model.uploadStartTime.reset();
  notRegistered(d, Reason::RegistrationRefused,
                message.substr(0, 1024) + "; Vertex refuses it as it is, so it is not retried until the spec changes");
  return finish(d);
}

bool isNumber(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::string whatToDo(Reason reason) {
  if (reason == Reason::PermissionDenied)
    return "; give the operator's service account roles/aiplatform.user on the model's project and read access "
           "to the artifact bucket (docs/models.md); retrying with backoff";
  return "; retrying with backoff";
}

// Retried by the work queue's backoff, after the status says why.
Plan retryLater(Draft& d, const std::string& message) {
  d.plan.failure = PassFailure{false, message};
  return finish(d);
}

std::string describeMetrics(const std::map<std::string, double>& metrics) {
  std::string out;
  for (const auto& [name, value] : metrics) {
    if (out.size() > 120) return out + ", ...";
    char number[32];
    std::snprintf(number, sizeof number, "%g", value);
    out += (out.empty() ? "" : ", ") + name + " " + number;
  }
  return out;
}

// The version exists: status.model from it, the evaluation imported once, then ModelRegistered=True.
Plan versionExists(Draft& d, const vertex::ModelVersion& version) {
  const auto& spec = modelSpecOf(d);
  const auto& reading = d.o.registry;
  auto& model = *d.next.history.model;
  model.name = version.name;
  model.versionId = version.versionId;
  model.versionAliases = version.versionAliases;
  model.artifactUri = version.artifactUri.empty() ? artifactUriOfRun(d) : version.artifactUri;
  if (!model.registerTime) model.registerTime = wholeSeconds(version.versionCreateTime.value_or(d.o.now));
  model.operation.clear();
  model.uploadStartTime.reset();
  std::string evaluationNote;
  if (spec.evaluation && !model.evaluationImported && model.metricsError.empty()) {
    const auto& file = spec.evaluation->metricsFile;
    if (reading.importedMetrics) {
      auto parsed = crd::metricsOfJson(*reading.importedMetrics);
      model.metrics = parsed.metrics;
      model.evaluationImported = true;
    } else if (!reading.metricsFileRefused.empty()) {
      model.metricsError = "the metrics file was not read: " + reading.metricsFileRefused;
    } else if (!reading.metricsFile) {
      model.metricsError = "no " + file + " under " + model.artifactUri + ": the version has no evaluation; write a "
                           "flat JSON object of numbers there, e.g. {\"auc\": 0.91}";
    } else if (auto parsed = crd::parseMetricsFile(*reading.metricsFile); !parsed.error.empty()) {
      model.metricsError = model.artifactUri + file + " is not a flat JSON object of numbers: " + parsed.error;
    } else {
      model.metrics = parsed.metrics;
      model.evaluationImported = true;
      vertex::EvaluationImport evaluation;
      evaluation.displayName = evaluationDisplayName(d.o.metadata.uid);
      evaluation.metricsSchemaUri = evaluationSchemaOf(parsed.metrics);
      evaluation.metrics = nlohmann::json(parsed.metrics);
      if (!evaluation.metricsSchemaUri.empty()) {
        d.plan.importEvaluation = ImportEvaluation{version.versionName(), std::move(evaluation)};
      } else {
        // Nothing Vertex would take: the numbers stay in status, which is what promotion reads.
        model.evaluationImported = false;
        evaluationNote = "kept in status only: no Google evaluation schema names these metrics, and Vertex "
                               "refuses metrics its schema does not describe";
      }
    }
  }
  std::string message = "version " + model.versionId + " of " + model.name + " from " + model.artifactUri;
  if (!model.metrics.empty()) message += " (" + describeMetrics(model.metrics) + ")";
  if (!model.metricsError.empty()) message += "; " + model.metricsError;
  if (!evaluationNote.empty()) message += "; metrics " + evaluationNote;
  d.condition(ConditionType::ModelRegistered, true, Reason::VersionRegistered, message);
  d.plan.events.push_back(normalEvent("ModelRegistered", "registered " + message));
  d.plan.registeredModel = modelSpecOf(d).model;
  return finished(d);
}

}  // namespace

namespace trainingrun {

namespace {
// The pass that sees the success: say what comes next and come back at once to do it.
Plan startWorkAfterSuccess(Draft& d) {
  if (!d.next.history.model) d.next.history.model = crd::RegisteredModel{};
  d.next.history.model->artifactUri = artifactUriOfRun(d);
  d.condition(ConditionType::ModelRegistered, false, Reason::Registering,
              "registering " + d.next.history.model->artifactUri + " as a new version of " + modelSpecOf(d).model);
  d.plan.requeueAfter = std::chrono::seconds(1);
  return finish(d);
}
}  // namespace

Plan continueWorkAfterSuccess(Draft& d) {
  const auto& options = d.options;
  const auto& reading = d.o.registry;
  if (!reading.read) return startWorkAfterSuccess(d);
  if (!d.next.history.model) d.next.history.model = crd::RegisteredModel{};
  auto& model = *d.next.history.model;
  // What is uploaded is the spec's checked URI, never what status says (status is writable by others).
  model.artifactUri = artifactUriOfRun(d);
  // Registering writes to Vertex: the rules as they are now govern it, before any call.
  if (auto violation = tenancyOf(d.o).violation) {
    notRegistered(d, Reason::TenantPolicyViolation, violation->message + "; nothing is registered until the spec "
                                                                        "is back inside the rule");
    return finish(d);
  }
  if (reading.failure) {
    if (deterministic(reading.failure->httpStatus)) return refuse(d, reading.failure->message);
    auto reason = reasonOfFailure(reading.failure->httpStatus);
    std::string message = reading.failure->message + whatToDo(reason);
    // The upload status records is gone (an operation Vertex no longer keeps, or its version deleted
    // since): forget it, or every retry would read it again. The next pass looks for the run's version
    // by its label and uploads only when there is none.
    if (reading.failure->httpStatus == 404 && !model.operation.empty()) {
      model.operation.clear();
      model.uploadStartTime.reset();
      message = reading.failure->message + "; looking for the run's version by its label, uploading again if there is none";
    }
    notRegistered(d, reason, message);
    return retryLater(d, reading.failure->message);
  }
  if (reading.version) return versionExists(d, *reading.version);
  if (const auto& upload = reading.upload) {
    if (!upload->operation.done) {
      d.plan.requeueAfter = options.uploadPollPeriod;
      return finish(d);
    }
    // Done without a version (an error, or an answer without one): upload again after the backoff.
    std::string why = upload->operation.error ? upload->operation.error->message : "the operation names no version";
    int code = upload->operation.error ? upload->operation.error->code : 0;
    if (deterministic(0, code)) return refuse(d, "uploading " + model.artifactUri + " failed: " + why.substr(0, 512));
    auto reason = reasonOfFailure(0, code);
    model.operation.clear();
    model.uploadStartTime.reset();
    std::string message = "uploading " + model.artifactUri + " failed: " + why.substr(0, 512) + whatToDo(reason);
    notRegistered(d, reason, message);
    return retryLater(d, message);
  }
  // Asked for, but its operation never recorded: a crash came in between. Its version may still appear:
  // this is an upload in flight whose operation name was lost, looked at as often as one.
  if (model.uploadStartTime && d.o.now < *model.uploadStartTime + options.uploadGracePeriod) {
    d.plan.requeueAfter = std::min<Clock::duration>(options.uploadPollPeriod,
                                                    *model.uploadStartTime + options.uploadGracePeriod - d.o.now);
    return finish(d);
  }
  if (!reading.artifactPresent) {
    std::string message = "nothing under " + model.artifactUri + ": the training code writes the model to "
                          "$AIP_MODEL_DIR (or set spec.model.artifactUri to where it writes); retrying with backoff";
    notRegistered(d, Reason::ArtifactMissing, message);
    return retryLater(d, message);
  }
  const auto& spec = modelSpecOf(d);
  UploadModel upload;
  upload.where = modelLocationOf(d.run.spec, d.o.defaults);
  if (reading.modelExists) {
    upload.request.parentModel = modelNameOf(d.run.spec, d.o.defaults);
  } else if (isNumber(spec.model)) {
    // A number is the ID Vertex gave a model made without one: only Vertex makes such a model.
    return refuse(d, modelNameOf(d.run.spec, d.o.defaults) + " does not exist: a numeric model ID names a model "
                      "made by the console or the SDK, and a new model needs an ID such as fraud");
  } else {
    upload.request.modelId = spec.model;
  }
  auto& m = upload.request.model;
  m.displayName = spec.displayName.empty() ? spec.model : spec.displayName;
  m.artifactUri = model.artifactUri;
  const auto& s = spec.servingContainer;
  m.containerSpec = {{"imageUri", s.imageUri}};
  if (!s.command.empty()) m.containerSpec["command"] = s.command;
  if (!s.args.empty()) m.containerSpec["args"] = s.args;
  for (const auto& [name, value] : s.env) m.containerSpec["env"].push_back({{"name", name}, {"value", value}});
  if (!s.predictRoute.empty()) m.containerSpec["predictRoute"] = s.predictRoute;
  if (!s.healthRoute.empty()) m.containerSpec["healthRoute"] = s.healthRoute;
  m.versionAliases = spec.versionAliases;
  m.labels = spec.labels;
  for (const auto& [key, value] : modelVersionLabels(d.o.metadata, d.options.clusterId)) m.labels[key] = value;
  m.versionDescription = versionDescriptionOf(d.o.metadata);
  upload.request.serviceAccount = d.run.spec.serviceAccount;
  d.plan.uploadModel = std::move(upload);
  model.uploadStartTime = d.now();
  model.operation.clear();
  d.condition(ConditionType::ModelRegistered, false, Reason::Registering,
              "uploading " + model.artifactUri + " as a new version of " + spec.model);
  d.plan.requeueAfter = options.uploadPollPeriod;
  return finish(d);
}

}  // namespace trainingrun

bool ended(const Observed& o) {
  return crd::isFinished(o.status.phase) && o.status.observedGeneration == o.metadata.generation;
}

bool registrationRefused(const crd::TrainingRunStatus& status, std::int64_t generation) {
  const auto* c = controller::findStatusCondition(status.conditions, conditionTypeName(ConditionType::ModelRegistered));
  return c != nullptr && c->status == "False" && c->reason == reasonName(Reason::RegistrationRefused) &&
         c->observedGeneration == generation;
}

bool workAfterSuccess(const Observed& o) {
  return o.run && o.run->spec.model && o.status.phase == Phase::Succeeded && !isRegistered(o.status) &&
         !registrationRefused(o.status, o.metadata.generation);
}

bool settled(const Observed& o) { return ended(o) && !workAfterSuccess(o); }

Location modelLocationOf(const crd::TrainingRunSpec& spec, const Location& defaults) {
  auto where = crd::locationOf(spec, defaults);
  if (spec.model && !spec.model->location.empty()) where.location = spec.model->location;
  return where;
}

std::string modelNameOf(const crd::TrainingRunSpec& spec, const Location& defaults) {
  return modelLocationOf(spec, defaults).parent() + "/models/" + (spec.model ? spec.model->model : "");
}

std::string evaluationDisplayName(const std::string& runUid) { return "vto-" + crd::sanitizeLabelValue(runUid); }

std::map<std::string, std::string> modelVersionLabels(const crd::ObjectMeta& run, const std::string& clusterId) {
  std::map<std::string, std::string> labels{{crd::kRunUidLabel, crd::sanitizeLabelValue(run.uid)},
                                            {runVersionLabelKey(run.uid), "true"},
                                            {"vto-namespace", crd::sanitizeLabelValue(run.namespace_)},
                                            {"managed-by", "vto"}};
  if (!clusterId.empty()) labels[kClusterLabel] = clusterId;
  return labels;
}

std::string runVersionLabelKey(const std::string& runUid) {
  return ("vto-run-" + crd::sanitizeLabelValue(runUid)).substr(0, 63);
}

std::string versionDescriptionOf(const crd::ObjectMeta& run) {
  return "TrainingRun " + run.namespace_ + "/" + run.name + " (uid " + run.uid + ")";
}

const vertex::ModelVersion* runVersionOf(const std::vector<vertex::ModelVersion>& listed, const std::string& runUid) {
  auto older = [](const vertex::ModelVersion& a, const vertex::ModelVersion& b) {
    return a.versionId.size() != b.versionId.size() ? a.versionId.size() < b.versionId.size() : a.versionId < b.versionId;
  };
  const vertex::ModelVersion* oldest = nullptr;
  const vertex::ModelVersion* described = nullptr;
  auto marker = "(uid " + runUid + ")";
  for (const auto& version : listed) {
    if (oldest == nullptr || older(version, *oldest)) oldest = &version;
    bool ours = !runUid.empty() && version.versionDescription.size() >= marker.size() &&
                version.versionDescription.compare(version.versionDescription.size() - marker.size(), marker.size(), marker) == 0;
    if (ours && (described == nullptr || older(version, *described))) described = &version;
  }
  return described != nullptr ? described : oldest;
}

std::string evaluationSchemaOf(const std::map<std::string, double>& metrics) {
  // gs://google-cloud-aiplatform/schema/modelevaluation/: the schemas Google's own importers send, with
  // the scalar metrics each describes (ClassificationEvaluationMetrics, RegressionEvaluationMetrics,
  // ForecastingEvaluationMetrics).
  static const std::vector<std::pair<std::string, std::set<std::string>>> schemas = {
      {"gs://google-cloud-aiplatform/schema/modelevaluation/classification_metrics_1.0.0.yaml",
       {"auPrc", "auRoc", "logLoss"}},
      {"gs://google-cloud-aiplatform/schema/modelevaluation/regression_metrics_1.0.0.yaml",
       {"rootMeanSquaredError", "meanAbsoluteError", "meanAbsolutePercentageError", "rSquared", "rootMeanSquaredLogError"}},
      {"gs://google-cloud-aiplatform/schema/modelevaluation/forecasting_metrics_1.0.0.yaml",
       {"rootMeanSquaredError", "meanAbsoluteError", "meanAbsolutePercentageError", "rSquared", "rootMeanSquaredLogError",
        "weightedAbsolutePercentageError", "rootMeanSquaredPercentageError", "symmetricMeanAbsolutePercentageError"}},
  };
  if (metrics.empty()) return "";
  for (const auto& [uri, names] : schemas) {
    if (std::all_of(metrics.begin(), metrics.end(), [&](const auto& metric) { return names.count(metric.first) > 0; })) return uri;
  }
  return "";
}

Plan recordUpload(const Observed& o, const crd::TrainingRunStatus& journaled, Plan plan,
                  const std::optional<vertex::UploadOperation>& started, const std::optional<VertexFailure>& refused) {
  static const crd::TrainingRun undecoded{};
  Draft d(o, o.run ? *o.run : undecoded);
  d.next = journaled;
  d.plan = std::move(plan);
  d.plan.status.reset();
  d.plan.uploadModel.reset();
  auto& model = *d.next.history.model;
  if (started) {
    model.operation = started->operation.name;
    return finish(d);
  }
  // Refused: no upload started, so the next try needs no grace period. finish() compares with the
  // status before the journal; what is stored now is the journal, so a refusal that status already
  // told (the same 409 again) is written too, or the journal's uploadStartTime would stay.
  model.uploadStartTime.reset();
  auto written = [&](Plan plan) {
    if (!plan.status && d.next != journaled) plan.status = d.next;
    return plan;
  };
  if (deterministic(refused->httpStatus)) {
    return written(refuse(d, "uploading " + model.artifactUri + " failed: " + refused->message.substr(0, 512)));
  }
  auto reason = reasonOfFailure(refused->httpStatus);
  std::string message = "uploading " + model.artifactUri + " failed: " + refused->message.substr(0, 512) + whatToDo(reason);
  notRegistered(d, reason, message);
  d.plan.requeueAfter = Clock::duration::zero();
  return written(retryLater(d, message));
}

bool uploadMayHaveStarted(int httpStatus) { return httpStatus < 400 || httpStatus >= 500; }

Plan recordImportFailure(const Observed& o, Plan plan, const VertexFailure& failure) {
  static const crd::TrainingRun undecoded{};
  Draft d(o, o.run ? *o.run : undecoded);
  d.next = plan.status ? *plan.status : o.status;
  d.plan = std::move(plan);
  d.plan.status.reset();
  d.plan.importEvaluation.reset();
  auto& model = *d.next.history.model;
  if (deterministic(failure.httpStatus)) {
    // The version exists and its numbers are in status (what promotion reads): registered, without
    // the evaluation Vertex would not take; never retried, since it would refuse it again.
    model.evaluationImported = false;
    std::string message = "version " + model.versionId + " of " + model.name + " is registered; Vertex refused its " +
                          "evaluation (" + failure.message.substr(0, 512) + "), so the metrics are kept in status only";
    d.condition(ConditionType::ModelRegistered, true, Reason::EvaluationNotImported, message);
    for (auto& event : d.plan.events) {
      if (event.reason == "ModelRegistered") event.message = "registered " + message;
    }
    return finished(d);
  }
  d.plan.registeredModel.clear();
  std::erase_if(d.plan.events, [](const controller::Event& e) { return e.reason == "ModelRegistered"; });
  model.evaluationImported = false;
  model.metrics.clear();
  auto reason = reasonOfFailure(failure.httpStatus);
  std::string message = "version " + model.versionId + " of " + model.name + " is registered, but importing its " +
                        "evaluation failed: " + failure.message.substr(0, 512) + whatToDo(reason);
  notRegistered(d, reason, message);
  return retryLater(d, message);
}

}  // namespace vto::reconcilers
