// Every sample renders to a body that the official Vertex AI discovery document accepts strictly: no
// unknown field, no output-only field, the right JSON type for each format (int64 as a string,
// durations as "123s"), and only declared enum values.
#include <gtest/gtest.h>

#include <regex>

#include "crd/manifest.h"
#include "crd/render.h"
#include "tests/unit/crd/crd_test_support.h"

namespace vto::crd {
namespace {

class DiscoverySchema {
 public:
  explicit DiscoverySchema(json document) : schemas_(std::move(document.at("schemas"))) {}

  std::vector<std::string> check(const json& value, const std::string& schemaName) const {
    std::vector<std::string> errors;
    checkRef(value, schemaName, "", errors);
    return errors;
  }

 private:
  void checkRef(const json& value, const std::string& name, const std::string& path, std::vector<std::string>& errors) const {
    if (!schemas_.contains(name)) {
      errors.push_back(path + ": schema " + name + " is not in the discovery document");
      return;
    }
    checkValue(value, schemas_.at(name), path, errors);
  }

  void checkValue(const json& value, const json& schema, const std::string& path, std::vector<std::string>& errors) const {
    if (schema.contains("$ref")) return checkRef(value, schema["$ref"], path, errors);
    std::string type = schema.value("type", "any");
    std::string format = schema.value("format", "");
    auto fail = [&](const std::string& what) { errors.push_back((path.empty() ? "(body)" : path) + ": " + what); };
    if (type == "any") return;
    if (type == "object") {
      if (!value.is_object()) return fail("must be an object");
      for (const auto& [key, item] : value.items()) {
        std::string at = path.empty() ? key : path + "." + key;
        if (schema.contains("properties") && schema["properties"].contains(key)) {
          const json& property = schema["properties"][key];
          if (property.value("readOnly", false)) errors.push_back(at + ": output only, must not be sent");
          checkValue(item, property, at, errors);
        } else if (schema.contains("additionalProperties")) {
          checkValue(item, schema["additionalProperties"], at, errors);
        } else {
          errors.push_back(at + ": unknown field");
        }
      }
    } else if (type == "array") {
      if (!value.is_array()) return fail("must be an array");
      for (size_t i = 0; i < value.size(); ++i) checkValue(value[i], schema["items"], path + "[" + std::to_string(i) + "]", errors);
    } else if (type == "string") {
      if (!value.is_string()) return fail("must be a string (format " + format + ")");
      const std::string text = value.get<std::string>();
      if ((format == "int64" || format == "uint64") && !std::regex_match(text, std::regex("^-?[0-9]+$")))
        fail("must be an int64 string");
      if (format == "google-duration" && !std::regex_match(text, std::regex(R"(^-?[0-9]+(\.[0-9]+)?s$)")))
        fail("must be a duration like \"3600s\"");
      if (schema.contains("enum")) {
        const auto& values = schema["enum"];
        if (std::find(values.begin(), values.end(), text) == values.end()) fail("\"" + text + "\" is not a declared enum value");
      }
    } else if (type == "integer") {
      if (!value.is_number_integer()) fail("must be an integer");
    } else if (type == "number") {
      if (!value.is_number()) fail("must be a number");
    } else if (type == "boolean") {
      if (!value.is_boolean()) fail("must be a boolean");
    }
  }

  json schemas_;
};

const DiscoverySchema& vertexSchema() {
  static const DiscoverySchema schema(json::parse(
      testing::readFile(testing::repoRoot() / "third_party/vertex-api/aiplatform.v1.custom-training.subset.json")));
  return schema;
}

std::string schemaOf(const TrainingRun& run) {
  return jobKindOf(run.spec) == vertex::JobKind::Custom ? "GoogleCloudAiplatformV1CustomJob"
                                                   : "GoogleCloudAiplatformV1HyperparameterTuningJob";
}

std::string joinLines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

TEST(SchemaConformance, TheCheckerCatchesMistakes) {
  json bad = json::parse(R"({"displayName": "x", "state": "JOB_STATE_RUNNING", "jobSpec": {"workerPoolSpecs": [
      {"replicaCount": 2, "machineSpec": {"machineType": "n1", "acceleratorType": "NVIDIA_T4"}, "diskSpec": {"bootDiskSizeGb": "100"}}],
      "scheduling": {"timeout": "1h", "strategy": "CHEAP"}, "baseOutputDirectory": {"outputUriPrefix": "gs://b"}, "workerCount": 2}})");
  auto errors = vertexSchema().check(bad, "GoogleCloudAiplatformV1CustomJob");
  std::string all = joinLines(errors);
  for (const char* expected : {"state: output only", "jobSpec.workerPoolSpecs[0].replicaCount: must be a string",
                               "acceleratorType: \"NVIDIA_T4\" is not a declared enum value", "bootDiskSizeGb: must be an integer",
                               "scheduling.timeout: must be a duration", "scheduling.strategy: \"CHEAP\"", "jobSpec.workerCount: unknown field"})
    EXPECT_NE(all.find(expected), std::string::npos) << expected << "\n" << all;
}

TEST(SchemaConformance, EverySampleRendersToAValidVertexBody) {
  int rendered = 0;
  for (const auto& file : testing::yamlFiles(testing::repoRoot() / "config/samples")) {
    for (const auto& document : parseManifests(testing::readFile(file))) {
      if (document.kind() != kTrainingRunKind) continue;
      auto run = decodeTrainingRun(document.object);
      run.metadata.uid = "0b6c1f4e-1111-2222-3333-444455556666";
      for (int attempt : {1, 2}) {
        json body = renderJob(run, attempt, attempt == 1 ? "" : "gs://bucket/checkpoints/ckpt-1");
        auto errors = vertexSchema().check(body, schemaOf(run));
        EXPECT_TRUE(errors.empty()) << file << " attempt " << attempt << ":\n" << joinLines(errors) << body.dump(2);
      }
      ++rendered;
    }
  }
  EXPECT_GE(rendered, 10);
}

TEST(SchemaConformance, RenderedEnumsAreTheOfficialNames) {
  auto run = testing::runFromYaml(std::string(testing::kMinimalRun) + R"(  scheduling: {strategy: FlexStart, maxWaitDuration: 1h, timeout: 1h}
  hyperparameterTuning:
    maxTrialCount: 2
    algorithm: Random
    metrics: [{metricId: m, goal: Minimize}]
    parameters: [{parameterId: p, double: {min: 0.1, max: 1}, scale: ReverseLog}]
)");
  auto errors = vertexSchema().check(renderJob(run, 1, ""), schemaOf(run));
  EXPECT_TRUE(errors.empty()) << joinLines(errors);
}

}  // namespace
}  // namespace vto::crd
