#include "vertex/model_registry.h"

#include <gtest/gtest.h>

#include "tests/fakes/clock_fake.h"
#include "tests/fakes/model_registry_fake.h"
#include "tests/fakes/vertex_fake_token_source.h"
#include "tests/fakes/vertex_fake_transport.h"
#include "vertex/api_error.h"

namespace vto::vertex {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const Location kWhere{"my-project", "us-central1"};
const std::string kBase = "https://us-central1-aiplatform.googleapis.com/v1/projects/my-project/locations/us-central1";
const std::string kModel = "projects/my-project/locations/us-central1/models/fraud";
const std::string kOperation = kModel + "/operations/555";

ModelSpec spec() {
  ModelSpec model;
  model.displayName = "fraud";
  model.artifactUri = "gs://bucket/run-1/model/";
  model.containerSpec = {{"imageUri", "us-docker.pkg.dev/vertex-ai/prediction/xgboost-cpu.1-7:latest"}};
  model.versionAliases = {"candidate"};
  model.labels = {{"vto-run-uid", "abc-123"}};
  return model;
}

std::string operationJson(bool done, const std::string& extra = "") {
  return R"({"name": ")" + kOperation + R"(", "done": )" + (done ? "true" : "false") + extra + "}";
}

class ModelRegistryTest : public ::testing::Test {
 protected:
  RestModelRegistry registry(ModelRegistryOptions options = {}) {
    return RestModelRegistry(transport_, tokens_, clock_, std::move(options));
  }

  testing::FakeClock clock_;
  testing::ScriptedTransport transport_;
  testing::CountingTokenSource tokens_;
};

TEST_F(ModelRegistryTest, UploadsTheFirstVersionWithModelIdAndLaterOnesWithParentModel) {
  transport_.enqueue(200, operationJson(false));
  transport_.enqueue(200, operationJson(false));
  auto client = registry();
  auto first = client.uploadModel(kWhere, {.modelId = "fraud", .model = spec()});
  EXPECT_EQ(first.operation.name, kOperation);
  EXPECT_FALSE(first.operation.done);
  EXPECT_FALSE(first.result);
  auto requests = transport_.requests();
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].url, kBase + "/models:upload");
  EXPECT_EQ(requests[0].headers.at("Authorization"), "Bearer token-1");
  auto body = json::parse(requests[0].body);
  EXPECT_EQ(body["modelId"], "fraud");
  EXPECT_FALSE(body.contains("parentModel"));
  EXPECT_EQ(body["model"]["displayName"], "fraud");
  EXPECT_EQ(body["model"]["artifactUri"], "gs://bucket/run-1/model/");
  EXPECT_EQ(body["model"]["containerSpec"]["imageUri"], "us-docker.pkg.dev/vertex-ai/prediction/xgboost-cpu.1-7:latest");
  EXPECT_EQ(body["model"]["versionAliases"], json::array({"candidate"}));
  EXPECT_EQ(body["model"]["labels"]["vto-run-uid"], "abc-123");

  client.uploadModel(kWhere, {.parentModel = kModel, .model = spec()});
  body = json::parse(transport_.requests()[1].body);
  EXPECT_EQ(body["parentModel"], kModel);
  EXPECT_FALSE(body.contains("modelId"));
}

TEST_F(ModelRegistryTest, FollowsTheOperationWithoutWaitingAndReadsTheNewVersion) {
  transport_.enqueue(200, operationJson(false));
  transport_.enqueue(200, operationJson(true, R"(, "response": {"@type": "type.googleapis.com/google.cloud.aiplatform.v1.UploadModelResponse",
      "model": "projects/123456/locations/us-central1/models/fraud", "modelVersionId": "7"})"));
  auto client = registry();
  auto pending = client.getUploadOperation(kOperation);
  EXPECT_FALSE(pending.operation.done);
  auto done = client.getUploadOperation(kOperation);
  ASSERT_TRUE(done.result);
  EXPECT_EQ(done.result->model, "projects/123456/locations/us-central1/models/fraud");
  EXPECT_EQ(done.result->versionId, "7");
  EXPECT_EQ(done.result->versionName(), "projects/123456/locations/us-central1/models/fraud@7");
  EXPECT_EQ(transport_.requests()[1].method, "GET");
  EXPECT_EQ(transport_.requests()[1].url, kBase + "/models/fraud/operations/555");
  // An operation directly under the location is read there.
  transport_.enqueue(200, R"({"name": "projects/my-project/locations/us-central1/operations/9", "done": false})");
  client.getUploadOperation("projects/my-project/locations/us-central1/operations/9");
  EXPECT_EQ(transport_.requests()[2].url, kBase + "/operations/9");
}

TEST_F(ModelRegistryTest, AFailedUploadIsADoneOperationWithItsError) {
  transport_.enqueue(200, operationJson(true, R"(, "error": {"code": 9, "message": "artifact not found"})"));
  auto done = registry().getUploadOperation(kOperation);
  EXPECT_TRUE(done.operation.done);
  ASSERT_TRUE(done.operation.error);
  EXPECT_EQ(done.operation.error->code, 9);
  EXPECT_EQ(done.operation.error->message, "artifact not found");
  EXPECT_FALSE(done.result);
}

// What goes into status must be a name vto accepts back.
TEST_F(ModelRegistryTest, RefusesAnswersWhoseNamesItWouldNotAcceptBack) {
  transport_.enqueue(200, R"({"name": "projects/my-project/locations/localhost:1/models/fraud/operations/1"})");
  transport_.enqueue(200, operationJson(true, R"(, "response": {"model": "projects/my-project/locations/us-central1/models/../x",
                                                             "modelVersionId": "7"})"));
  transport_.enqueue(200, operationJson(true, R"(, "response": {"model": ")" + kModel + R"(", "modelVersionId": "seven"})"));
  transport_.enqueue(200, R"({"name": "projects/my-project/locations/us-central1/models/fraud", "versionId": "x"})");
  auto client = registry();
  EXPECT_THROW(client.uploadModel(kWhere, {.modelId = "fraud", .model = spec()}), ApiError);
  EXPECT_THROW(client.getUploadOperation(kOperation), ApiError);
  EXPECT_THROW(client.getUploadOperation(kOperation), ApiError);
  try {
    client.getModel(kModel);
    FAIL() << "expected ApiError";
  } catch (const ApiError& error) {
    EXPECT_TRUE(error.retryable());  // an odd answer, not the caller's mistake
  }
}

TEST_F(ModelRegistryTest, GetsAModelByVersionIdOrAliasWithALiteralAt) {
  const std::string model = R"({"name": "projects/my-project/locations/us-central1/models/fraud", "versionId": "3",
      "versionAliases": ["default", "champion"], "displayName": "fraud", "artifactUri": "gs://b/m/",
      "labels": {"vto-run-uid": "abc"}, "versionCreateTime": "2026-05-18T10:00:00Z"})";
  transport_.enqueue(200, model);
  transport_.enqueue(200, model);
  transport_.enqueue(200, model);
  auto client = registry();
  auto version = client.getModel(kModel);
  EXPECT_EQ(version.versionId, "3");
  EXPECT_EQ(version.versionName(), kModel + "@3");
  EXPECT_EQ(version.versionAliases, (std::vector<std::string>{"default", "champion"}));
  EXPECT_EQ(version.labels.at("vto-run-uid"), "abc");
  EXPECT_TRUE(version.versionCreateTime);
  client.getModel(kModel + "@3");
  client.getModel(kModel + "@champion");
  auto requests = transport_.requests();
  EXPECT_EQ(requests[0].url, kBase + "/models/fraud");
  EXPECT_EQ(requests[1].url, kBase + "/models/fraud@3");
  EXPECT_EQ(requests[2].url, kBase + "/models/fraud@champion");
}

TEST_F(ModelRegistryTest, ListsVersionsByLabelPageByPageAndSkipsNamesItCannotUse) {
  transport_.enqueue(200, R"({"models": [
      {"name": "projects/my-project/locations/us-central1/models/fraud@2", "labels": {"vto-run-uid": "abc"}},
      {"name": "projects/my-project/locations/us-central1/models/fraud", "versionId": "5"},
      {"name": "projects/my-project/locations/evil.example/models/fraud", "versionId": "6"},
      {"name": "projects/my-project/locations/us-central1/models/fraud", "versionId": "../6"}],
      "nextPageToken": "next"})");
  auto page = registry().listVersions(
      kModel, {.filter = modelLabelFilter({{"vto-run-uid", "abc"}}), .pageSize = 10, .pageToken = "tok", .orderBy = "create_time desc"});
  EXPECT_EQ(transport_.requests()[0].url,
            kBase + "/models/fraud:listVersions?filter=labels.vto-run-uid%3D%22abc%22&pageSize=10&pageToken=tok"
                    "&orderBy=create_time%20desc");
  ASSERT_EQ(page.versions.size(), 2u);
  EXPECT_EQ(page.versions[0].name, kModel);  // the version left the name for versionId
  EXPECT_EQ(page.versions[0].versionId, "2");
  EXPECT_EQ(page.versions[1].versionId, "5");
  EXPECT_EQ(page.nextPageToken, "next");
}

TEST(ModelLabelFilter, WritesOnlyLabelsThatFollowGooglesRules) {
  EXPECT_EQ(modelLabelFilter({{"vto-run-uid", "0a1b-2c"}, {"managed-by", "vto"}}),
            R"(labels.managed-by="vto" AND labels.vto-run-uid="0a1b-2c")");
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"vto-run-uid", R"(x" OR labels.a="b)"}, {"a b", "x"}, {"Key", "x"}, {"k", "UPPER"}, {"", "x"},
           {"k", std::string(64, 'a')}}) {
    EXPECT_THROW(modelLabelFilter({{key, value}}), std::invalid_argument) << key << "=" << value;
  }
}

TEST_F(ModelRegistryTest, MergesAliasesOnAVersionIdOnly) {
  transport_.enqueue(200, R"({"name": "projects/my-project/locations/us-central1/models/fraud", "versionId": "7",
                              "versionAliases": ["champion"]})");
  auto client = registry();
  auto version = client.mergeVersionAliases(kModel + "@7", {"champion", "-candidate"});
  EXPECT_EQ(version.versionAliases, std::vector<std::string>{"champion"});
  auto request = transport_.requests()[0];
  EXPECT_EQ(request.method, "POST");
  EXPECT_EQ(request.url, kBase + "/models/fraud@7:mergeVersionAliases");
  EXPECT_EQ(json::parse(request.body), json::parse(R"({"versionAliases": ["champion", "-candidate"]})"));
  // An alias does not name one version for good, and a bare model names none: refused.
  EXPECT_THROW(client.mergeVersionAliases(kModel + "@champion", {"x1"}), ApiError);
  EXPECT_THROW(client.mergeVersionAliases(kModel, {"x1"}), ApiError);
  EXPECT_THROW(client.mergeVersionAliases(kModel + "@7", {}), ApiError);
  EXPECT_EQ(transport_.requests().size(), 1u);
}

TEST_F(ModelRegistryTest, ImportsAndListsEvaluationsOfAVersion) {
  transport_.enqueue(200, R"({"name": "projects/my-project/locations/us-central1/models/fraud/evaluations/42",
      "metrics": {"auc": 0.913}, "metricsSchemaUri": "gs://schema.yaml", "createTime": "2026-05-18T10:00:00Z"})");
  transport_.enqueue(200, R"({"modelEvaluations": [
      {"name": "projects/my-project/locations/us-central1/models/fraud/evaluations/42", "metrics": {"auc": 0.913}},
      {"name": "projects/my-project/locations/us-central1/models/fraud/evaluations/x?y", "metrics": {}}]})");
  auto client = registry();
  auto imported = client.importEvaluation(kModel + "@7", {.displayName = "run-1", .metricsSchemaUri = "gs://schema.yaml",
                                                          .metrics = {{"auc", 0.913}, {"loss", 0.2}}});
  EXPECT_EQ(imported.name, kModel + "/evaluations/42");
  EXPECT_EQ(imported.metrics["auc"], 0.913);
  auto request = transport_.requests()[0];
  EXPECT_EQ(request.url, kBase + "/models/fraud@7/evaluations:import");
  auto body = json::parse(request.body);
  EXPECT_EQ(body["modelEvaluation"]["metrics"]["loss"], 0.2);
  EXPECT_EQ(body["modelEvaluation"]["metricsSchemaUri"], "gs://schema.yaml");
  EXPECT_EQ(body["modelEvaluation"]["displayName"], "run-1");
  auto page = client.listEvaluations(kModel + "@7", 5, "");
  EXPECT_EQ(transport_.requests()[1].url, kBase + "/models/fraud@7/evaluations?pageSize=5");
  ASSERT_EQ(page.evaluations.size(), 1u);
  EXPECT_EQ(page.evaluations[0].metrics["auc"], 0.913);
  // Metrics that are not an object, or are too large, never leave.
  EXPECT_THROW(client.importEvaluation(kModel, {.metrics = json::array({1})}), ApiError);
  json large = json::object();
  for (int i = 0; i < 5000; ++i) large["metric_" + std::to_string(i)] = 0.123456789;
  EXPECT_THROW(client.importEvaluation(kModel, {.metrics = large}), ApiError);
  EXPECT_EQ(transport_.requests().size(), 2u);
}

// Defence in depth: a model ID, alias or name from a spec or from status that could move the request
// elsewhere is refused before any request, without even a token.
TEST_F(ModelRegistryTest, RefusesHostileNamesIdsAndAliasesBeforeAnyRequest) {
  auto client = registry();
  for (const char* id : {"Fraud", "1fraud", "-fraud", "fr/aud", "fr@ud", "", "a b", "../x"}) {
    EXPECT_THROW(client.uploadModel(kWhere, {.modelId = id, .model = spec()}), ApiError) << id;
  }
  auto badAlias = spec();
  badAlias.versionAliases = {"Champion"};
  EXPECT_THROW(client.uploadModel(kWhere, {.modelId = "fraud", .model = badAlias}), ApiError);
  auto noImage = spec();
  noImage.containerSpec = json::object();
  EXPECT_THROW(client.uploadModel(kWhere, {.modelId = "fraud", .model = noImage}), ApiError);
  EXPECT_THROW(client.uploadModel(kWhere, {.model = spec()}), ApiError);  // neither modelId nor parentModel
  EXPECT_THROW(client.uploadModel(kWhere, {.modelId = "fraud", .parentModel = kModel, .model = spec()}), ApiError);
  EXPECT_THROW(client.uploadModel(kWhere, {.parentModel = "projects/my-project/locations/europe-west4/models/fraud",
                                           .model = spec()}),
               ApiError);  // another location
  EXPECT_THROW(client.uploadModel({"my-project", "localhost:8080/x?"}, {.modelId = "fraud", .model = spec()}), ApiError);
  for (const char* name : {"projects/my-project/locations/localhost:8080/x?/models/fraud",
                           "projects/my-project/locations/us-central1/models/fraud/../../x",
                           "projects/my-project/locations/us-central1/models/fraud@",
                           "projects/my-project/locations/us-central1/models/fraud@a@b",
                           "projects/my-project/locations/us-central1/models/fraud@ch/ampion",
                           "projects/my-project/locations/us-central1/models/fraud?x=1",
                           "projects/my-project/locations/us-central1/customJobs/1",
                           "projects/my-project/locations/us-central1/models/fraud/operations/1"}) {
    EXPECT_THROW(client.getModel(name), ApiError) << name;
    EXPECT_THROW(client.listVersions(name, {}), ApiError) << name;
    EXPECT_THROW(client.importEvaluation(name, {}), ApiError) << name;
  }
  for (const char* name : {kModel.c_str(), "projects/my-project/locations/us-central1/operations/abc",
                           "projects/my-project/locations/us-central1/models/fraud@1/operations/2"}) {
    EXPECT_THROW(client.getUploadOperation(name), ApiError) << name;
  }
  EXPECT_THROW(client.mergeVersionAliases(kModel + "@7", {"-"}), ApiError);
  EXPECT_THROW(client.mergeVersionAliases(kModel + "@7", {"UPPER"}), ApiError);
  EXPECT_TRUE(transport_.requests().empty());
  EXPECT_EQ(tokens_.calls, 0);
  try {
    client.uploadModel(kWhere, {.modelId = "Fraud", .model = spec()});
  } catch (const ApiError& error) {
    EXPECT_FALSE(error.retryable());
    EXPECT_NE(std::string(error.what()).find("fraud-detector"), std::string::npos) << error.what();
  }
}

TEST(ModelNames, OneStrictPattern) {
  auto parsed = parseModelName("projects/123456/locations/us-central1/models/fraud@champion");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->where.project, "123456");
  EXPECT_EQ(parsed->modelId, "fraud");
  EXPECT_EQ(parsed->version, "champion");
  EXPECT_EQ(parsed->model(), "projects/123456/locations/us-central1/models/fraud");
  EXPECT_EQ(parsed->versioned(), "projects/123456/locations/us-central1/models/fraud@champion");
  EXPECT_EQ(parseModelName("projects/p-123456/locations/us-central1/models/4455/evaluations/9")->evaluationId, "9");
  EXPECT_EQ(parseModelName("projects/p-123456/locations/us-central1/models/_x/operations/9")->operationId, "9");
  EXPECT_EQ(parseModelName("projects/p-123456/locations/us-central1/operations/9")->modelId, "");
  for (const char* bad : {"projects/p-123456/locations/us-central1/models", "projects/p-123456/locations/us-central1/models/",
                          "projects/p-123456/locations/us-central1/models//x", "/projects/p-123456/locations/us-central1/models/x",
                          "projects/p-123456/locations/us-central1/models/x/evaluations/y",
                          "projects/p-123456/locations/us-central1/models/x/versions/1",
                          "projects/p-123456/locations/global/models/x"}) {
    EXPECT_FALSE(parseModelName(bad)) << bad;
  }
  EXPECT_EQ(modelName({"my-project", "us-central1"}, "fraud"), kModel);
  EXPECT_THROW(modelName({"my-project", "us-central1"}, "Fraud"), std::invalid_argument);
}

TEST(ModelRules, ModelIdsAndAliasesFollowVertex) {
  EXPECT_TRUE(isModelId("fraud"));
  EXPECT_TRUE(isModelId("_fraud_2-x"));
  EXPECT_TRUE(isModelId(std::string(63, 'a')));
  EXPECT_FALSE(isModelId(std::string(64, 'a')));
  EXPECT_FALSE(isModelId("2fraud"));
  EXPECT_TRUE(isVersionAlias("champion"));
  EXPECT_TRUE(isVersionAlias("candidate-2"));
  EXPECT_FALSE(isVersionAlias("cAndidate-2")) << "Model.versionAliases: [a-z][a-z0-9-]{0,126}[a-z0-9]";
  EXPECT_FALSE(isVersionAlias("ab-")) << "never a trailing hyphen";
  EXPECT_TRUE(isModelReference("4711")) << "a model the console or the SDK made";
  EXPECT_FALSE(isModelReference(std::string(21, '1')));
  EXPECT_FALSE(isModelReference("2fraud"));
  EXPECT_TRUE(isVersionAlias("a" + std::string(127, 'b')));
  EXPECT_FALSE(isVersionAlias("a" + std::string(128, 'b')));
  EXPECT_FALSE(isVersionAlias("a"));
  EXPECT_FALSE(isVersionAlias("7"));
  EXPECT_FALSE(isVersionAlias("Champion"));
  EXPECT_FALSE(isVersionAlias("champioN"));
  EXPECT_FALSE(isVersionAlias("cham_pion"));
  EXPECT_NE(checkVersionAlias("versionAliases[0]", "X")->find("versionAliases[0] \"X\""), std::string::npos);
}

TEST_F(ModelRegistryTest, PacesItselfOnTheBudgetItSharesWithTheVertexClient) {
  transport_.setHandler([](const HttpRequest&) {
    return testing::ScriptedTransport::Answer{200, R"({"name": "projects/my-project/locations/us-central1/models/fraud",
                                                       "versionId": "1"})", {}, false};
  });
  RestVertexClient vertex(transport_, tokens_, clock_, {.limits = {.requestsPerMinute = 2}});
  auto client = registry({.requestsPerMinute = 2, .pacer = &vertex.pacer()});
  client.getModel(kModel);
  client.getModel(kModel);
  EXPECT_THROW(client.getModel(kModel), QuotaPacingError);
  // The Vertex client's own requests now wait too: one budget per project and region.
  EXPECT_THROW(vertex.getJob("projects/my-project/locations/us-central1/customJobs/1"), QuotaPacingError);
  clock_.advance(1min);
  EXPECT_NO_THROW(client.getModel(kModel));
  EXPECT_EQ(transport_.requests().size(), 3u);
}

TEST_F(ModelRegistryTest, RefreshesTheTokenOnceAfter401AndKeepsRetryAfter) {
  transport_.enqueue(401, R"({"error": {"code": 401, "status": "UNAUTHENTICATED", "message": "expired"}})");
  transport_.enqueue(200, R"({"name": "projects/my-project/locations/us-central1/models/fraud", "versionId": "1"})");
  transport_.enqueue(429, "{}", {{"retry-after", "7"}});
  auto client = registry();
  client.getModel(kModel);
  EXPECT_EQ(transport_.requests()[1].headers.at("Authorization"), "Bearer token-2");
  try {
    client.getModel(kModel);
    FAIL() << "expected ApiError";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.retryAfter(), 7000ms);
  }
  EXPECT_EQ(client.requests(), 3);
}

// The fake behaves as the real registry does for what reconcilers rely on.
TEST(FakeModelRegistryTest, VersionsAliasesAndOperationsAsVertexKeepsThem) {
  testing::FakeModelRegistry fake;
  auto upload = fake.uploadModel(kWhere, {.modelId = "fraud", .model = spec()});
  EXPECT_FALSE(upload.operation.done);
  auto done = fake.getUploadOperation(upload.operation.name);
  ASSERT_TRUE(done.result);
  EXPECT_EQ(done.result->versionName(), kModel + "@1");
  EXPECT_THROW(fake.uploadModel(kWhere, {.modelId = "fraud", .model = spec()}), ApiError);  // already exists
  fake.pollsUntilDone = 0;
  auto second = fake.uploadModel(kWhere, {.parentModel = kModel, .model = spec()});
  ASSERT_TRUE(second.result);
  EXPECT_EQ(second.result->versionId, "2");
  // "candidate" moved to version 2; "default" stays on version 1.
  EXPECT_EQ(fake.getModel(kModel).versionId, "1");
  EXPECT_EQ(fake.getModel(kModel + "@candidate").versionId, "2");
  fake.mergeVersionAliases(kModel + "@2", {"default", "champion"});
  EXPECT_EQ(fake.getModel(kModel).versionId, "2");
  EXPECT_EQ(fake.listVersions(kModel, {.filter = modelLabelFilter({{"vto-run-uid", "abc-123"}})}).versions.size(), 2u);
  EXPECT_TRUE(fake.listVersions(kModel, {.filter = modelLabelFilter({{"vto-run-uid", "other"}})}).versions.empty());
  fake.importEvaluation(kModel + "@2", {.metrics = {{"auc", 0.9}}});
  EXPECT_EQ(fake.listEvaluations(kModel + "@2", 0, "").evaluations.size(), 1u);
  EXPECT_TRUE(fake.listEvaluations(kModel + "@1", 0, "").evaluations.empty());
  fake.failNextUpload({9, "artifact not found"});
  auto failed = fake.uploadModel(kWhere, {.parentModel = kModel, .model = spec()});
  ASSERT_TRUE(failed.operation.error);
  EXPECT_EQ(fake.versions(kModel).size(), 2u);
}

}  // namespace
}  // namespace vto::vertex
