// The Model Registry: uploads as long-running operations, versions and their aliases, evaluations,
// with Vertex's rules and error codes.
#include "emulator/model_registry.h"

#include <regex>

#include <gtest/gtest.h>

#include "tests/unit/emulator/emulator_fixture.h"

namespace vto::emulator {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const std::string kModels = "projects/emu-project/locations/us-central1/models";

class ModelRegistryTest : public EmulatorFixture {
 protected:
  ModelRegistryTest() : EmulatorFixture(options()) {}
  explicit ModelRegistryTest(EmulatorOptions options) : EmulatorFixture(std::move(options)) {}
  static EmulatorOptions options() {
    EmulatorOptions options;
    options.modelUploadTime = 2s;
    return options;
  }

  // Uploads and waits for the operation; returns its response.
  json uploadAndWait(const json& request) {
    auto operation = call("POST", kParent + "/models:upload", request);
    EXPECT_EQ(operation.status, 200) << operation.body.dump();
    advance(2s);
    auto done = call("GET", "/v1/" + operation.body.value("name", std::string()));
    EXPECT_EQ(done.body["done"], true) << done.body.dump();
    return done.body.value("response", json::object());
  }
  json version(const std::string& name) { return call("GET", "/v1/" + name).body; }

  static json model(const std::string& artifactUri, json labels = json::object()) {
    return {{"displayName", "fraud"},
            {"artifactUri", artifactUri},
            {"containerSpec", {{"imageUri", "us-docker.pkg.dev/vertex-ai/prediction/xgboost-cpu.1-7:latest"}}},
            {"labels", labels}};
  }
};

TEST_F(ModelRegistryTest, AnUploadIsAnOperationDoneAfterTheUploadTimeWithTheNewVersion) {
  auto operation = call("POST", kParent + "/models:upload", {{"modelId", "fraud"}, {"model", model("gs://b/run1/model/")}});
  ASSERT_EQ(operation.status, 200) << operation.body.dump();
  std::string name = operation.body["name"];
  EXPECT_EQ(name.rfind(kModels + "/fraud/operations/", 0), 0u) << name;
  EXPECT_EQ(operation.body["done"], false);
  EXPECT_EQ(operation.body["metadata"]["@type"], "type.googleapis.com/google.cloud.aiplatform.v1.UploadModelOperationMetadata");
  EXPECT_EQ(call("GET", "/v1/" + kModels + "/fraud").status, 404) << "the model exists once the upload is done";

  advance(1s);
  EXPECT_EQ(call("GET", "/v1/" + name).body["done"], false);
  advance(1s);
  auto done = call("GET", "/ui/" + name).body;  // the official client's first HTTP rule
  EXPECT_EQ(done["done"], true);
  EXPECT_EQ(done["response"], (json{{"@type", "type.googleapis.com/google.cloud.aiplatform.v1.UploadModelResponse"},
                                    {"model", kModels + "/fraud"},
                                    {"modelVersionId", "1"}}));

  auto fraud = version(kModels + "/fraud");
  EXPECT_EQ(fraud["name"], kModels + "/fraud");
  EXPECT_EQ(fraud["versionId"], "1");
  EXPECT_EQ(fraud["versionAliases"], json({"default"}));
  EXPECT_EQ(fraud["artifactUri"], "gs://b/run1/model/");
  EXPECT_EQ(fraud["displayName"], "fraud");
  EXPECT_TRUE(fraud.contains("createTime") && fraud.contains("versionCreateTime") && fraud.contains("updateTime"));
  EXPECT_EQ(version(kModels + "/fraud@1"), fraud);
  EXPECT_EQ(version(kModels + "/fraud@default"), fraud);
}

TEST_F(ModelRegistryTest, VersionsAreAddedWithParentModelAndAnExistingModelIdIsAConflict) {
  uploadAndWait({{"modelId", "fraud"}, {"model", model("gs://b/run1/model/")}});
  auto again = call("POST", kParent + "/models:upload", {{"modelId", "fraud"}, {"model", model("gs://b/run2/model/")}});
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(again.body["error"]["status"], "ALREADY_EXISTS");

  auto second = uploadAndWait({{"parentModel", kModels + "/fraud"}, {"model", model("gs://b/run2/model/")}});
  EXPECT_EQ(second["modelVersionId"], "2");
  auto third = uploadAndWait({{"parentModel", kModels + "/fraud"}, {"modelId", "fraud"},
                              {"model", [&] { auto m = model("gs://b/run3/model/"); m["versionAliases"] = {"candidate"}; return m; }()}});
  EXPECT_EQ(third["modelVersionId"], "3");
  EXPECT_EQ(version(kModels + "/fraud")["versionId"], "1") << "default stays on the first version";
  EXPECT_EQ(version(kModels + "/fraud@candidate")["versionId"], "3");
  EXPECT_EQ(version(kModels + "/fraud@2")["artifactUri"], "gs://b/run2/model/");

  auto missing = call("POST", kParent + "/models:upload", {{"parentModel", kModels + "/nobody"}, {"model", model("gs://b/x/")}});
  EXPECT_EQ(missing.status, 404);
  auto elsewhere = call("POST", kParent + "/models:upload",
                        {{"parentModel", "projects/other/locations/us-central1/models/fraud"}, {"model", model("gs://b/x/")}});
  EXPECT_EQ(elsewhere.status, 400);
  auto mismatch = call("POST", kParent + "/models:upload",
                       {{"parentModel", kModels + "/fraud"}, {"modelId", "churn"}, {"model", model("gs://b/x/")}});
  EXPECT_EQ(mismatch.status, 400);
  EXPECT_EQ(call("GET", "/v1/" + kModels + "/fraud@4").status, 404);
  EXPECT_EQ(call("GET", "/v1/" + kModels + "/fraud@champion").status, 404);
  EXPECT_EQ(call("GET", "/v1/" + kModels + "/nobody").status, 404);
}

// Faults for uploads alone: each upload is refused before anything is made, other calls pass.
TEST_F(ModelRegistryTest, FaultsOnlyForUploadsRefuseUploadsAndNothingElse) {
  EXPECT_EQ(control("POST", "faults", {{"throttled", 1}, {"only", "upload"}, {"after", "create"}}).status, 400);
  ASSERT_EQ(control("POST", "faults", {{"throttled", 2}, {"only", "upload"}}).status, 200);
  EXPECT_EQ(call("GET", kParent + "/customJobs").status, 200) << "not an upload";
  for (int refused = 0; refused < 2; ++refused) {
    EXPECT_EQ(call("POST", kParent + "/models:upload", {{"modelId", "fraud"}, {"model", model("gs://b/run1/model/")}}).status, 429);
  }
  advance(2s);
  EXPECT_EQ(call("GET", "/v1/" + kModels + "/fraud").status, 404) << "a refused upload makes nothing";
  EXPECT_EQ(uploadAndWait({{"modelId", "fraud"}, {"model", model("gs://b/run1/model/")}}).value("modelVersionId", ""), "1");
}

TEST_F(ModelRegistryTest, UploadBodiesAreValidatedAgainstTheDiscoverySchema) {
  auto unknown = call("POST", kParent + "/models:upload", {{"model", {{"displayName", "x"}, {"colour", "red"}}}});
  EXPECT_EQ(unknown.status, 400);
  EXPECT_EQ(unknown.body["error"]["details"][0]["@type"], "type.googleapis.com/google.rpc.BadRequest");
  EXPECT_EQ(call("POST", kParent + "/models:upload", {{"model", {{"artifactUri", "gs://b/"}}}}).status, 400)
      << "displayName is required";
  EXPECT_EQ(call("POST", kParent + "/models:upload", {{"modelId", "x"}}).status, 400) << "model is required";
  EXPECT_EQ(call("POST", kParent + "/models:upload", {{"modelId", "9lives"}, {"model", model("gs://b/")}}).status, 400);
  auto badAlias = model("gs://b/");
  badAlias["versionAliases"] = {"Champion"};
  EXPECT_EQ(call("POST", kParent + "/models:upload", {{"model", badAlias}}).status, 400);
  // Without modelId, the ID is a number.
  auto generated = uploadAndWait({{"model", model("gs://b/")}});
  EXPECT_TRUE(std::regex_match(generated["model"].get<std::string>(), std::regex(kModels + "/\\d{19}")))
      << generated.dump();
}

TEST_F(ModelRegistryTest, MergeVersionAliasesMovesAnAliasAndKeepsDefaultOnOneVersion) {
  uploadAndWait({{"modelId", "fraud"}, {"model", model("gs://b/1/")}});
  uploadAndWait({{"parentModel", kModels + "/fraud"}, {"model", model("gs://b/2/")}});
  auto merged = call("POST", "/v1/" + kModels + "/fraud@1:mergeVersionAliases", {{"versionAliases", {"champion", "prod-1"}}});
  ASSERT_EQ(merged.status, 200) << merged.body.dump();
  EXPECT_EQ(merged.body["versionId"], "1");
  EXPECT_EQ(merged.body["versionAliases"], json({"default", "champion", "prod-1"}));

  merged = call("POST", "/v1/" + kModels + "/fraud@2:mergeVersionAliases", {{"versionAliases", {"champion", "default"}}});
  EXPECT_EQ(merged.body["versionAliases"], json({"champion", "default"}));
  EXPECT_EQ(version(kModels + "/fraud@1")["versionAliases"], json({"prod-1"})) << "both aliases left version 1";
  EXPECT_EQ(version(kModels + "/fraud")["versionId"], "2");

  merged = call("POST", "/v1/" + kModels + "/fraud@2:mergeVersionAliases", {{"versionAliases", {"-champion", "x-1"}}});
  EXPECT_EQ(merged.body["versionAliases"], json({"default", "x-1"}));
  // Adding and removing the same alias cancel out.
  merged = call("POST", "/v1/" + kModels + "/fraud@2:mergeVersionAliases", {{"versionAliases", {"-x-1", "x-1", "new", "-new"}}});
  EXPECT_EQ(merged.body["versionAliases"], json({"default", "x-1"}));

  auto invalid = [&](const json& aliases, const std::string& at = "@2") {
    return call("POST", "/v1/" + kModels + "/fraud" + at + ":mergeVersionAliases", {{"versionAliases", aliases}}).status;
  };
  EXPECT_EQ(invalid({"-default"}), 400) << "default is always on one version";
  EXPECT_EQ(invalid({"Champion"}), 400);
  EXPECT_EQ(invalid({"1abc"}), 400);
  EXPECT_EQ(invalid({"a"}), 400) << "at least 2 characters";
  EXPECT_EQ(invalid({"ends_"}), 400);
  EXPECT_EQ(invalid({"ends-"}), 400) << "Model.versionAliases: [a-z][a-z0-9-]{0,126}[a-z0-9]";
  EXPECT_EQ(invalid({"camelCase"}), 400) << "lower case only";
  EXPECT_EQ(invalid({std::string(129, 'a')}), 400);
  EXPECT_EQ(invalid({std::string(128, 'a')}), 200);
  EXPECT_EQ(invalid({"ok"}, ""), 400) << "the name must carry a version ID";
  EXPECT_EQ(invalid({"ok"}, "@default"), 400) << "an alias is not a version ID";
  EXPECT_EQ(invalid({"ok"}, "@9"), 404);
  EXPECT_EQ(invalid(json::array()), 400) << "versionAliases is required";
}

TEST_F(ModelRegistryTest, ListVersionsFiltersByLabelAndPages) {
  uploadAndWait({{"modelId", "fraud"}, {"model", model("gs://b/1/", {{"team", "risk"}})}});
  for (auto uid : {"b", "c", "b"}) {
    uploadAndWait({{"parentModel", kModels + "/fraud"}, {"model", model("gs://b/x/", {{"vto-run-uid", uid}})}});
  }
  auto all = call("GET", "/v1/" + kModels + "/fraud:listVersions").body["models"];
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[3]["versionId"], "4");
  EXPECT_EQ(all[3]["name"], kModels + "/fraud@4") << "a list names each version M@versionId";
  auto b = call("GET", "/v1/" + kModels + "/fraud:listVersions", nullptr, {{"filter", R"(labels.vto-run-uid="b")"}, {"pageSize", "1"}});
  ASSERT_EQ(b.status, 200) << b.body.dump();
  ASSERT_EQ(b.body["models"].size(), 1u);
  EXPECT_EQ(b.body["models"][0]["versionId"], "2");
  auto next = call("GET", "/v1/" + kModels + "/fraud:listVersions", nullptr,
                   {{"filter", R"(labels.vto-run-uid="b")"}, {"pageSize", "1"}, {"pageToken", b.body["nextPageToken"]}});
  ASSERT_EQ(next.body["models"].size(), 1u);
  EXPECT_EQ(next.body["models"][0]["versionId"], "4");
  EXPECT_FALSE(next.body.contains("nextPageToken"));
  auto newestFirst = call("GET", "/v1/" + kModels + "/fraud:listVersions", nullptr, {{"orderBy", "create_time desc"}});
  EXPECT_EQ(newestFirst.body["models"][0]["versionId"], "4");
  auto masked = call("GET", "/v1/" + kModels + "/fraud:listVersions", nullptr, {{"readMask", "versionId,labels"}});
  EXPECT_EQ(masked.body["models"][1], (json{{"versionId", "2"}, {"labels", {{"team", "risk"}, {"vto-run-uid", "b"}}}}))
      << "the model's labels (its first upload's) are merged into each version's";
  EXPECT_EQ(call("GET", "/v1/" + kModels + "/fraud:listVersions", nullptr, {{"filter", R"(display_name="x")"}}).status, 400);
  EXPECT_EQ(call("GET", "/v1/" + kModels + "/fraud:listVersions", nullptr, {{"orderBy", "name"}}).status, 400);
  EXPECT_EQ(call("GET", "/v1/" + kModels + "/nobody:listVersions").status, 404);
}

TEST_F(ModelRegistryTest, EvaluationsBelongToTheVersionTheyWereImportedTo) {
  uploadAndWait({{"modelId", "fraud"}, {"model", model("gs://b/1/")}});
  uploadAndWait({{"parentModel", kModels + "/fraud"}, {"model", model("gs://b/2/")}});
  json evaluation = {{"displayName", "holdout"},
                     {"metricsSchemaUri", "gs://google-cloud-aiplatform/schema/modelevaluation/classification_metrics_1.0.0.yaml"},
                     {"metrics", {{"auRoc", 0.913}, {"logLoss", 0.21}}}};
  auto imported = call("POST", "/v1/" + kModels + "/fraud@2/evaluations:import", {{"modelEvaluation", evaluation}});
  ASSERT_EQ(imported.status, 200) << imported.body.dump();
  EXPECT_TRUE(std::regex_match(imported.body["name"].get<std::string>(), std::regex(kModels + "/fraud/evaluations/\\d+")));
  EXPECT_EQ(imported.body["metrics"]["auRoc"], 0.913);
  EXPECT_TRUE(imported.body.contains("createTime"));
  const std::string regression = "gs://google-cloud-aiplatform/schema/modelevaluation/regression_metrics_1.0.0.yaml";
  auto toDefault = call("POST", "/v1/" + kModels + "/fraud/evaluations:import",
                        {{"modelEvaluation", {{"metricsSchemaUri", regression}, {"metrics", {{"rSquared", 0.8}}}}}});
  ASSERT_EQ(toDefault.status, 200) << toDefault.body.dump();

  auto ofVersion2 = call("GET", "/v1/" + kModels + "/fraud@2/evaluations").body["modelEvaluations"];
  ASSERT_EQ(ofVersion2.size(), 1u);
  EXPECT_EQ(ofVersion2[0], imported.body);
  auto ofDefault = call("GET", "/v1/" + kModels + "/fraud/evaluations").body["modelEvaluations"];
  ASSERT_EQ(ofDefault.size(), 1u);
  EXPECT_EQ(ofDefault[0]["metrics"]["rSquared"], 0.8);
  EXPECT_EQ(call("GET", "/v1/" + imported.body["name"].get<std::string>()).body, imported.body);

  EXPECT_EQ(call("POST", "/v1/" + kModels + "/fraud@7/evaluations:import", {{"modelEvaluation", evaluation}}).status, 404);
  EXPECT_EQ(call("POST", "/v1/" + kModels + "/fraud/evaluations:import", {{"evaluation", evaluation}}).status, 400);
  EXPECT_EQ(call("GET", "/v1/" + kModels + "/fraud/evaluations/123").status, 404);
}

TEST_F(ModelRegistryTest, AnEvaluationWithoutASchemaOrWithMetricsItsSchemaLacksIsAnInvalidMetricsFormat) {
  uploadAndWait({{"modelId", "fraud"}, {"model", model("gs://b/1/")}});
  auto import = [&](const json& evaluation) {
    return call("POST", "/v1/" + kModels + "/fraud@1/evaluations:import", {{"modelEvaluation", evaluation}});
  };
  auto schemaless = import({{"metrics", {{"auc", 0.9}}}});
  EXPECT_EQ(schemaless.status, 400);
  EXPECT_EQ(schemaless.body["error"]["status"], "INVALID_ARGUMENT");
  EXPECT_NE(schemaless.body["error"]["message"].get<std::string>().find("Invalid Metrics Format"), std::string::npos);
  const std::string classification = "gs://google-cloud-aiplatform/schema/modelevaluation/classification_metrics_1.0.0.yaml";
  EXPECT_EQ(import({{"metricsSchemaUri", classification}, {"metrics", {{"auc", 0.9}}}}).status, 400)
      << "auc is not a field of the classification schema (auRoc is)";
  EXPECT_EQ(import({{"metricsSchemaUri", "gs://mine/schema.yaml"}, {"metrics", {{"auc", 0.9}}}}).status, 200)
      << "a schema of the user's own is not read, so not refused";
  EXPECT_EQ(call("GET", "/v1/" + kModels + "/fraud@1/evaluations").body["modelEvaluations"].size(), 1u);
}

class StrictRegistryTest : public ModelRegistryTest {
 protected:
  StrictRegistryTest() : ModelRegistryTest(strict()) {}
  static EmulatorOptions strict() {
    auto options = ModelRegistryTest::options();
    options.registry.strictAliasMove = true;
    options.registry.modelLabelsWin = true;
    return options;
  }
};

TEST_F(StrictRegistryTest, AnAliasHeldElsewhereIsRefusedUntilItsHolderGivesItUp) {
  uploadAndWait({{"modelId", "fraud"}, {"model", model("gs://b/1/", {{"vto-run-uid", "one"}})}});
  uploadAndWait({{"parentModel", kModels + "/fraud"}, {"model", model("gs://b/2/", {{"vto-run-uid", "two"}})}});
  auto merge = [&](const std::string& at, const json& aliases) {
    return call("POST", "/v1/" + kModels + "/fraud@" + at + ":mergeVersionAliases", {{"versionAliases", aliases}});
  };
  ASSERT_EQ(merge("1", {"champion"}).status, 200);
  auto taken = merge("2", {"champion"});
  EXPECT_EQ(taken.status, 400);
  EXPECT_EQ(taken.body["error"]["status"], "FAILED_PRECONDITION");
  EXPECT_EQ(version(kModels + "/fraud@1")["versionAliases"], json({"default", "champion"})) << "nothing moved";
  EXPECT_EQ(merge("2", {"default"}).status, 200) << "default only ever moves";
  ASSERT_EQ(merge("1", {"-champion"}).status, 200);
  EXPECT_EQ(merge("2", {"champion"}).status, 200);

  // The model's labels win over a version's own: run one's uid shows on version 2 as well.
  EXPECT_EQ(version(kModels + "/fraud@2")["labels"]["vto-run-uid"], "one");
  auto two = call("GET", "/v1/" + kModels + "/fraud:listVersions", nullptr, {{"filter", R"(labels.vto-run-uid="two")"}});
  EXPECT_TRUE(two.body.value("models", json::array()).empty()) << two.body.dump();
}

}  // namespace
}  // namespace vto::emulator
