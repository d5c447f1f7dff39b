// The work after success as tables over decide(): a succeeded run with spec.model, what observe read
// of the Model Registry and its artifacts in; the upload or import, status.model, ModelRegistered and
// the Events out. Pure, on a fixed clock.
#include <gtest/gtest.h>

#include <functional>

#include "base/rfc3339.h"
#include "controller/conditions.h"
#include "crd/validation.h"
#include "reconcilers/trainingrun/decide.h"

namespace vto::reconcilers {
namespace {

using nlohmann::json;
using std::chrono::minutes;
using std::chrono::seconds;

const Clock::time_point T0 = parseRfc3339("2026-03-01T12:00:00Z");
const std::string kJob = "projects/test-project/locations/us-central1/customJobs/7";
const std::string kModel = "projects/test-project/locations/us-central1/models/fraud";

crd::TrainingRun runWithModel(const std::string& model = "{}") {
  json object = json::parse(R"({"apiVersion": "vto.dev/v1beta1", "kind": "TrainingRun",
    "metadata": {"name": "r", "namespace": "ns", "uid": "u-1", "generation": 1, "resourceVersion": "5"},
    "spec": {"trainer": {"container": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}},
             "resources": {"machineType": "n1-standard-4"},
             "baseOutputDirectory": "gs://bucket/r",
             "model": {"model": "fraud", "servingContainer": {"imageUri": "us-docker.pkg.dev/vertex-ai/prediction/xgboost-cpu.1-7:latest"},
                       "versionAliases": ["candidate"], "evaluation": {"metricsFile": "metrics.json"}}}})");
  object["spec"]["model"].merge_patch(json::parse(model));
  return crd::decodeTrainingRun(object);
}

crd::Condition condition(const std::string& type, const std::string& status, const std::string& reason) {
  return crd::Condition{type, status, reason, "", T0 - minutes(1), 1};
}

// A run whose attempt 1 succeeded and whose status says so; registration `read` as given.
Observed succeeded(const std::string& model = "{}") {
  Observed o;
  o.now = T0;
  o.run = runWithModel(model);
  o.metadata = o.run->metadata;
  o.defaults = {"test-project", "us-central1"};
  o.hasFinalizer = true;
  o.statusStored = true;
  o.status.observedGeneration = 1;
  o.status.phase = crd::Phase::Succeeded;
  o.status.completionTime = T0 - minutes(1);
  crd::Attempt first;
  first.attempt = 1;
  first.jobName = kJob;
  o.status.history.attempts = {first};
  o.status.history.attemptCount = 1;
  o.status.history.startTime = T0 - minutes(10);
  o.status.history.model = crd::RegisteredModel{};
  o.status.history.model->artifactUri = "gs://bucket/r/model/";
  o.status.conditions = {condition("Valid", "True", "SpecValid"), condition("Ready", "False", "Registering"),
                         condition("Succeeded", "True", "JobSucceeded"),
                         condition("ModelRegistered", "False", "Registering"),
                         condition("Reconciling", "True", "Registering"), condition("Stalled", "False", "NotStalled")};
  o.registry.read = true;
  return o;
}

vertex::ModelVersion version7() {
  vertex::ModelVersion v;
  v.name = kModel;
  v.versionId = "7";
  v.versionAliases = {"candidate"};
  v.artifactUri = "gs://bucket/r/model/";
  v.versionCreateTime = T0 - seconds(30);
  return v;
}

std::string registered(const Plan& plan) {
  for (const auto& c : plan.status ? plan.status->conditions : std::vector<crd::Condition>{}) {
    if (c.type == "ModelRegistered") return c.status + "/" + c.reason;
  }
  return "";
}

const crd::Condition& modelRegistered(const crd::TrainingRunStatus& status) {
  static const crd::Condition none;
  const auto* c = controller::findStatusCondition(status.conditions, "ModelRegistered");
  return c != nullptr ? *c : none;
}

bool hasEvent(const Plan& plan, const std::string& reason) {
  return std::any_of(plan.events.begin(), plan.events.end(), [&](const auto& e) { return e.reason == reason; });
}

TEST(Registration, ARegisteredRunIsSettledAndARunWithoutModelNeverRegisters) {
  auto o = succeeded();
  o.status.conditions.at(3) = condition("ModelRegistered", "True", "VersionRegistered");
  EXPECT_TRUE(settled(o));
  auto plain = succeeded();
  plain.run->spec.model.reset();
  plain.status.conditions.erase(plain.status.conditions.begin() + 3);
  EXPECT_TRUE(settled(plain));
  EXPECT_FALSE(settled(succeeded()));
}

TEST(Registration, ThePassThatSeesTheSuccessSaysRegisteringAndComesBackAtOnce) {
  auto o = succeeded();
  o.status.phase = crd::Phase::Running;
  o.status.conditions.clear();
  o.status.history.model.reset();
  o.registry = {};
  CachedJob job;
  job.name = kJob;
  job.state = vertex::JobState::Succeeded;
  job.endTime = T0 - seconds(5);
  job.readAt = T0;
  o.vertex.job = job;
  auto plan = decide(o);
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->phase, crd::Phase::Succeeded);
  EXPECT_EQ(registered(plan), "False/Registering");
  EXPECT_EQ(plan.status->history.model->artifactUri, "gs://bucket/r/model/");
  EXPECT_EQ(plan.requeueAfter, seconds(1));
  EXPECT_FALSE(plan.uploadModel);
  EXPECT_TRUE(hasEvent(plan, "Succeeded"));
}

TEST(Registration, TheFirstUploadCreatesTheModelWithTheRunsLabelAndJournalsItsStart) {
  auto o = succeeded();
  o.registry.artifactPresent = true;
  auto plan = decide(o);
  ASSERT_TRUE(plan.uploadModel);
  const auto& request = plan.uploadModel->request;
  EXPECT_EQ(request.modelId, "fraud");
  EXPECT_EQ(request.parentModel, "");
  EXPECT_EQ(plan.uploadModel->where, (Location{"test-project", "us-central1"}));
  EXPECT_EQ(request.model.artifactUri, "gs://bucket/r/model/");
  EXPECT_EQ(request.model.containerSpec["imageUri"], "us-docker.pkg.dev/vertex-ai/prediction/xgboost-cpu.1-7:latest");
  EXPECT_EQ(request.model.versionAliases, std::vector<std::string>{"candidate"});
  EXPECT_EQ(request.model.labels.at("vto-run-uid"), "u-1");
  EXPECT_EQ(request.model.labels.at("vto-run-u-1"), "true") << "a key of the run's own, which merging cannot shadow";
  EXPECT_EQ(request.model.versionDescription, "TrainingRun ns/r (uid u-1)");
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->history.model->uploadStartTime, T0);
  EXPECT_EQ(registered(plan), "False/Registering");
}

TEST(Registration, LaterVersionsNameTheModelAsParent) {
  auto o = succeeded(R"({"location": "europe-west4"})");
  o.registry.artifactPresent = true;
  o.registry.modelExists = true;
  auto plan = decide(o);
  ASSERT_TRUE(plan.uploadModel);
  EXPECT_EQ(plan.uploadModel->request.modelId, "");
  EXPECT_EQ(plan.uploadModel->request.parentModel, "projects/test-project/locations/europe-west4/models/fraud");
}

TEST(Registration, NothingUnderTheArtifactDirectoryIsArtifactMissingRetriedWithBackoff) {
  auto plan = decide(succeeded());
  EXPECT_FALSE(plan.uploadModel);
  EXPECT_EQ(registered(plan), "False/ArtifactMissing");
  ASSERT_TRUE(plan.failure);
  EXPECT_FALSE(plan.failure->terminal);
  EXPECT_TRUE(hasEvent(plan, "ModelNotRegistered"));
  EXPECT_EQ(plan.registrationFailed, Reason::ArtifactMissing);
  EXPECT_NE(modelRegistered(*plan.status).message.find("AIP_MODEL_DIR"), std::string::npos);
}

TEST(Registration, AnUploadAskedForButNotRecordedIsWaitedForNotRepeated) {
  auto o = succeeded();
  o.status.history.model->uploadStartTime = T0 - minutes(1);
  o.registry.artifactPresent = true;
  auto plan = decide(o);
  EXPECT_FALSE(plan.uploadModel);  // its version may still appear: no second upload
  EXPECT_FALSE(plan.status) << crd::encodeTrainingRunStatus(*plan.status).dump() << "\n" << crd::encodeTrainingRunStatus(o.status).dump();
  // Looked at as often as an upload in flight: its version appears seconds after a crash, not minutes.
  EXPECT_EQ(plan.requeueAfter, DecideOptions{}.uploadPollPeriod);
  // After the grace period, nothing appeared: upload again.
  o.now = T0 + minutes(5);
  EXPECT_TRUE(decide(o).uploadModel);
}

TEST(Registration, AnUploadInFlightIsLookedAtAgainWithoutAWrite) {
  auto o = succeeded();
  o.status.history.model->operation = kModel + "/operations/99";
  o.registry.upload = vertex::UploadOperation{vertex::Operation{kModel + "/operations/99", false, std::nullopt, {}}, std::nullopt};
  auto plan = decide(o);
  EXPECT_FALSE(plan.status);
  EXPECT_FALSE(plan.uploadModel);
  EXPECT_EQ(plan.requeueAfter, DecideOptions{}.uploadPollPeriod);
}

TEST(Registration, AFailedUploadSaysWhyAndTriesAgainLater) {
  auto o = succeeded();
  o.status.history.model->operation = kModel + "/operations/99";
  o.registry.upload = vertex::UploadOperation{
      vertex::Operation{kModel + "/operations/99", true, vertex::RpcStatus{7, "caller lacks storage.objects.get"}, {}}, std::nullopt};
  auto plan = decide(o);
  EXPECT_EQ(registered(plan), "False/PermissionDenied");
  EXPECT_EQ(plan.status->history.model->operation, "");
  EXPECT_TRUE(plan.failure);
  EXPECT_NE(modelRegistered(*plan.status).message.find("caller lacks storage.objects.get"), std::string::npos);
}

// An upload whose operation Vertex no longer knows (expired, or its model deleted) is forgotten: the
// next pass looks for the version by label and uploads again only when there is none, instead of
// reading the same missing operation on every retry.
TEST(Registration, AnUploadOperationThatIsGoneIsForgottenNotReadForever) {
  auto o = succeeded();
  o.status.history.model->operation = kModel + "/operations/99";
  o.status.history.model->uploadStartTime = T0 - minutes(30);
  o.registry.failure = VertexFailure{404, "reading the upload " + kModel + "/operations/99: 404 NOT_FOUND"};
  auto plan = decide(o);
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(registered(plan), "False/UploadFailed");
  EXPECT_EQ(plan.status->history.model->operation, "");
  EXPECT_FALSE(plan.status->history.model->uploadStartTime);
  EXPECT_TRUE(plan.failure);
  EXPECT_NE(modelRegistered(*plan.status).message.find("by its label"), std::string::npos);

  // The next pass, from that status, finds no version of the run: it uploads again at once.
  auto next = succeeded();
  next.status = *plan.status;
  next.registry.artifactPresent = true;
  next.registry.modelExists = true;
  EXPECT_TRUE(decide(next).uploadModel);
}

TEST(Registration, TheVersionWithAMetricsFileIsRegisteredAndItsEvaluationImportedOnce) {
  auto o = succeeded();
  o.registry.version = version7();
  o.registry.metricsFile = R"({"auRoc": 0.913, "logLoss": 0.2})";
  auto plan = decide(o);
  EXPECT_EQ(registered(plan), "True/VersionRegistered");
  const auto& model = *plan.status->history.model;
  EXPECT_EQ(model.name, kModel);
  EXPECT_EQ(model.versionId, "7");
  EXPECT_EQ(model.metrics.at("auRoc"), 0.913);
  EXPECT_TRUE(model.evaluationImported);
  EXPECT_EQ(model.registerTime, T0 - seconds(30));
  ASSERT_TRUE(plan.importEvaluation);
  EXPECT_EQ(plan.importEvaluation->versionName, kModel + "@7");
  EXPECT_EQ(plan.importEvaluation->evaluation.displayName, evaluationDisplayName("u-1"));
  EXPECT_EQ(plan.importEvaluation->evaluation.metrics["auRoc"], 0.913);
  EXPECT_EQ(plan.importEvaluation->evaluation.metricsSchemaUri,
            "gs://google-cloud-aiplatform/schema/modelevaluation/classification_metrics_1.0.0.yaml");
  EXPECT_EQ(plan.registeredModel, "fraud");
  EXPECT_TRUE(hasEvent(plan, "ModelRegistered"));

  // Imported by a pass that crashed before its status write: found, not imported again.
  o.registry.metricsFile.reset();
  o.registry.importedMetrics = json{{"auRoc", 0.913}};
  auto again = decide(o);
  EXPECT_FALSE(again.importEvaluation);
  EXPECT_EQ(again.status->history.model->metrics.at("auRoc"), 0.913);
}

TEST(Registration, MetricsNoGoogleSchemaDescribesStayInStatusWithoutAnImport) {
  auto o = succeeded();
  o.registry.version = version7();
  o.registry.metricsFile = R"({"auc": 0.913, "loss": 0.2})";
  auto plan = decide(o);
  EXPECT_EQ(registered(plan), "True/VersionRegistered");
  EXPECT_FALSE(plan.importEvaluation) << "Vertex refuses metrics its schema does not describe";
  EXPECT_FALSE(plan.status->history.model->evaluationImported);
  EXPECT_EQ(plan.status->history.model->metrics.at("auc"), 0.913) << "what promotion reads";
  EXPECT_NE(modelRegistered(*plan.status).message.find("kept in status only"), std::string::npos);
}

TEST(Registration, TheSchemaOfAnEvaluationIsGooglesThatNamesEveryMetric) {
  const std::string base = "gs://google-cloud-aiplatform/schema/modelevaluation/";
  struct Case {
    std::map<std::string, double> metrics;
    std::string schema;
  };
  for (const auto& c : std::vector<Case>{{{{"auRoc", 0.9}}, base + "classification_metrics_1.0.0.yaml"},
                                         {{{"auPrc", 0.9}, {"logLoss", 0.1}}, base + "classification_metrics_1.0.0.yaml"},
                                         {{{"rootMeanSquaredError", 2}, {"rSquared", 0.7}}, base + "regression_metrics_1.0.0.yaml"},
                                         {{{"weightedAbsolutePercentageError", 0.1}}, base + "forecasting_metrics_1.0.0.yaml"},
                                         {{{"auRoc", 0.9}, {"rSquared", 0.7}}, ""},
                                         {{{"auc", 0.9}}, ""},
                                         {{}, ""}}) {
    EXPECT_EQ(evaluationSchemaOf(c.metrics), c.schema) << nlohmann::json(c.metrics).dump();
  }
}

TEST(Registration, AMetricsFileThatIsNotFlatNumbersStillRegistersAndSaysWhy) {
  for (const std::string text : {R"({"auc": {"value": 0.9}})", "[1, 2]", "not json", R"({"auc": "high"})"}) {
    auto o = succeeded();
    o.registry.version = version7();
    o.registry.metricsFile = text;
    auto plan = decide(o);
    EXPECT_EQ(registered(plan), "True/VersionRegistered") << text;
    EXPECT_FALSE(plan.importEvaluation) << text;
    EXPECT_TRUE(plan.status->history.model->metrics.empty()) << text;
    EXPECT_NE(plan.status->history.model->metricsError.find("not a flat JSON object of numbers"), std::string::npos) << text;
  }
  auto missing = succeeded();
  missing.registry.version = version7();
  auto plan = decide(missing);
  EXPECT_EQ(registered(plan), "True/VersionRegistered");
  EXPECT_NE(plan.status->history.model->metricsError.find("no metrics.json under gs://bucket/r/model/"), std::string::npos);
}

TEST(Registration, AMetricsFileOverItsBoundOrOutsideTheArtifactDirectoryIsNeverUsed) {
  struct Case {
    std::string name;
    std::function<void(Observed&)> read;
    std::string error;
  };
  std::vector<Case> cases{
      {"one byte over the bound (all the client ever returns of a larger file)",
       [](Observed& o) { o.registry.metricsFile = "{\"auc\": 0.9" + std::string(crd::kMaxMetricsFileBytes, ' ') + "}"; },
       "larger than 64 KiB"},
      {"a path the rules do not allow: nothing read",
       [](Observed& o) { o.registry.metricsFileRefused = "metricsFile must be a path under the artifact directory"; },
       "the metrics file was not read: metricsFile must be a path under the artifact directory"},
  };
  for (const auto& c : cases) {
    auto o = succeeded();
    o.registry.version = version7();
    c.read(o);
    auto plan = decide(o);
    EXPECT_EQ(registered(plan), "True/VersionRegistered") << c.name;
    EXPECT_FALSE(plan.importEvaluation) << c.name;
    EXPECT_TRUE(plan.status->history.model->metrics.empty()) << c.name;
    EXPECT_FALSE(plan.status->history.model->evaluationImported) << c.name;
    EXPECT_NE(plan.status->history.model->metricsError.find(c.error), std::string::npos)
        << c.name << ": " << plan.status->history.model->metricsError;
  }
}

TEST(Registration, ReadsRefusedArePermissionDeniedAndRefusedByTenancyBeforeAnyCall) {
  auto o = succeeded();
  o.registry.failure = VertexFailure{403, "listing the versions of " + kModel + ": 403 PERMISSION_DENIED"};
  auto plan = decide(o);
  EXPECT_EQ(registered(plan), "False/PermissionDenied");
  EXPECT_NE(modelRegistered(*plan.status).message.find("roles/aiplatform.user"), std::string::npos);

  governance::TenancyRules rules(1);
  rules[0].namespaces = {"ns"};
  rules[0].models = std::vector<std::string>{"churn"};
  auto refused = succeeded();
  refused.registry.artifactPresent = true;
  refused.tenancy.rules = &rules;
  refused.tenancy.ns.name = "ns";
  auto told = decide(refused);
  EXPECT_FALSE(told.uploadModel);
  EXPECT_EQ(registered(told), "False/TenantPolicyViolation");
}

TEST(Registration, AFailedImportKeepsTheRunRegisteringAndSaysWhy) {
  auto o = succeeded();
  o.registry.version = version7();
  o.registry.metricsFile = R"({"auRoc": 0.9})";
  auto plan = recordImportFailure(o, decide(o), VertexFailure{500, "internal error"});
  EXPECT_EQ(registered(plan), "False/UploadFailed");
  EXPECT_FALSE(plan.importEvaluation);
  EXPECT_FALSE(plan.status->history.model->evaluationImported);
  EXPECT_EQ(plan.registeredModel, "");
  EXPECT_TRUE(plan.failure);
}

// "400 Invalid Metrics Format": asking again gets the same answer. The version is registered and its
// numbers stay in status, where promotion reads them; nothing loops.
TEST(Registration, AnImportVertexRefusesForItsContentEndsRegisteredWithAReasonNotALoop) {
  auto o = succeeded();
  o.registry.version = version7();
  o.registry.metricsFile = R"({"auRoc": 0.9})";
  auto plan = recordImportFailure(o, decide(o), VertexFailure{400, "400 INVALID_ARGUMENT: Invalid Metrics Format"});
  EXPECT_EQ(registered(plan), "True/EvaluationNotImported");
  EXPECT_FALSE(plan.failure);
  EXPECT_EQ(plan.status->history.model->metrics.at("auRoc"), 0.9);
  EXPECT_EQ(plan.registeredModel, "fraud");
  EXPECT_NE(modelRegistered(*plan.status).message.find("Invalid Metrics Format"), std::string::npos);
  auto next = succeeded();
  next.status = *plan.status;
  EXPECT_TRUE(settled(next)) << "nothing left to do: no second import";
}

TEST(Registration, AnUploadVertexRefusesIsNotRetriedUntilTheSpecChanges) {
  auto o = succeeded();
  o.registry.artifactPresent = true;
  auto asked = decide(o);
  ASSERT_TRUE(asked.uploadModel && asked.status);
  auto plan = recordUpload(o, *asked.status, asked, std::nullopt,
                           VertexFailure{400, "400 INVALID_ARGUMENT: containerSpec.imageUri is not a valid image"});
  EXPECT_EQ(registered(plan), "False/RegistrationRefused");
  EXPECT_FALSE(plan.failure) << "no backoff loop";
  EXPECT_TRUE(hasEvent(plan, "ModelNotRegistered"));
  auto after = succeeded();
  after.status = *plan.status;
  EXPECT_FALSE(workAfterSuccess(after));
  EXPECT_TRUE(settled(after));
  after.metadata.generation = 2;  // the user fixed the spec
  EXPECT_TRUE(workAfterSuccess(after));

  // Refused by its operation (INVALID_ARGUMENT, FAILED_PRECONDITION): the same.
  for (int code : {3, 9}) {
    auto failed = succeeded();
    failed.status.history.model->operation = kModel + "/operations/99";
    failed.registry.upload = vertex::UploadOperation{
        vertex::Operation{kModel + "/operations/99", true, vertex::RpcStatus{code, "bad artifact"}, {}}, std::nullopt};
    auto told = decide(failed);
    EXPECT_EQ(registered(told), "False/RegistrationRefused") << code;
    EXPECT_FALSE(told.failure) << code;
    EXPECT_EQ(told.status->history.model->operation, "");
  }
}

// A refused upload (409: a sibling run created the model a moment earlier) started nothing: its
// journal goes, so the next pass, in this process or a restarted one, uploads again at once instead
// of waiting the grace period for a version that cannot come. The second identical refusal too: status
// before the journal already said it, but what is stored is the journal.
TEST(Registration, ARefusedUploadIsRecordedSoNoPassWaitsTheGracePeriod) {
  const VertexFailure conflict{409, "409 ALREADY_EXISTS: Model \"" + kModel + "\" already exists"};
  auto o = succeeded();
  o.registry.artifactPresent = true;
  for (int refusal = 1; refusal <= 3; ++refusal) {
    auto asked = decide(o);
    ASSERT_TRUE(asked.uploadModel) << "refusal " << refusal << ": uploads at once, no grace period";
    ASSERT_TRUE(asked.status);
    EXPECT_EQ(asked.status->history.model->uploadStartTime, o.now);
    auto plan = recordUpload(o, *asked.status, asked, std::nullopt, conflict);
    ASSERT_TRUE(plan.status) << "refusal " << refusal << ": the journal must be overwritten";
    EXPECT_FALSE(plan.status->history.model->uploadStartTime) << refusal;
    EXPECT_EQ(registered(plan), "False/UploadFailed") << refusal;
    EXPECT_TRUE(plan.failure) << "retried with backoff";
    // The next pass (or a restarted operator) reads what was stored, a second later on the clock.
    o.status = *plan.status;
    o.now += seconds(1);
  }
}

// Which answers may hide a started upload: only those whose outcome is unknown wait the grace period.
TEST(Registration, OnlyAnAnswerWhoseOutcomeIsUnknownMayHaveStartedAnUpload) {
  for (int refused : {400, 401, 403, 404, 409, 429}) EXPECT_FALSE(uploadMayHaveStarted(refused)) << refused;
  for (int unknown : {500, 502, 503, 504, 200}) EXPECT_TRUE(uploadMayHaveStarted(unknown)) << unknown;
  // The journal of such an upload stays: the next pass waits for its version, then uploads again.
  auto o = succeeded();
  o.registry.artifactPresent = true;
  auto asked = decide(o);
  ASSERT_TRUE(asked.status);
  o.status = *asked.status;
  o.now += seconds(10);
  EXPECT_FALSE(decide(o).uploadModel);
  o.now = T0 + DecideOptions{}.uploadGracePeriod;
  EXPECT_TRUE(decide(o).uploadModel);
}

TEST(Registration, ANumericModelIdGetsVersionsButIsNeverCreated) {
  auto exists = succeeded(R"({"model": "4711"})");
  exists.registry.artifactPresent = true;
  exists.registry.modelExists = true;
  auto plan = decide(exists);
  ASSERT_TRUE(plan.uploadModel);
  EXPECT_EQ(plan.uploadModel->request.parentModel, "projects/test-project/locations/us-central1/models/4711");

  auto missing = succeeded(R"({"model": "4711"})");
  missing.registry.artifactPresent = true;
  auto refused = decide(missing);
  EXPECT_FALSE(refused.uploadModel);
  EXPECT_EQ(registered(refused), "False/RegistrationRefused");
  EXPECT_FALSE(crd::hasErrors(crd::validate(*missing.run))) << "a number is a valid spec.model.model";
}

TEST(Registration, TheUploadSendsTheSpecsArtifactUriWhateverStatusSays) {
  auto o = succeeded();
  o.status.history.model->artifactUri = "gs://someone-elses-bucket/secret/";
  o.registry.artifactPresent = true;
  auto plan = decide(o);
  ASSERT_TRUE(plan.uploadModel);
  EXPECT_EQ(plan.uploadModel->request.model.artifactUri, "gs://bucket/r/model/");
}

TEST(Registration, TheRunsVersionIsTheOneItsDescriptionNamesElseTheOldest) {
  crd::ObjectMeta run;
  run.uid = "u-1";
  run.namespace_ = "ns";
  run.name = "r";
  auto version = [&](const std::string& id, const std::string& description) {
    vertex::ModelVersion v;
    v.name = kModel;
    v.versionId = id;
    v.versionDescription = description;
    return v;
  };
  // Run u-1 made the model, so its label key is on every version (the model's labels merged in).
  std::vector<vertex::ModelVersion> listed = {version("12", "TrainingRun ns/r2 (uid u-2)"), version("3", versionDescriptionOf(run)),
                                              version("2", "TrainingRun ns/r1 (uid u-0)")};
  ASSERT_NE(runVersionOf(listed, run.uid), nullptr);
  EXPECT_EQ(runVersionOf(listed, run.uid)->versionId, "3");
  listed.erase(listed.begin() + 1);
  EXPECT_EQ(runVersionOf(listed, run.uid)->versionId, "2") << "no description names it: the oldest";
  EXPECT_EQ(runVersionOf({}, run.uid), nullptr);
}

TEST(Registration, TheTtlWaitsForTheRegistration) {
  auto o = succeeded();
  o.run->spec.ttlSecondsAfterFinished = 0;
  auto plan = decide(o);  // ArtifactMissing
  EXPECT_FALSE(plan.deleteRun);
  o.registry.version = version7();
  o.registry.metricsFile = R"({"auc": 0.9})";
  EXPECT_TRUE(decide(o).deleteRun);
}

}  // namespace
}  // namespace vto::reconcilers
