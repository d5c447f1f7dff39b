#include "emulator/schema_validator.h"

#include <gtest/gtest.h>

namespace vto::emulator {
namespace {

using nlohmann::json;

const char* kCustomJob = "GoogleCloudAiplatformV1CustomJob";

json validJob() {
  return json::parse(R"({
    "displayName": "train-1",
    "jobSpec": {"workerPoolSpecs": [{"machineSpec": {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4",
                                                      "acceleratorCount": 1},
                                     "replicaCount": "1",
                                     "containerSpec": {"imageUri": "img", "env": [{"name": "K", "value": "V"}]}}],
                "scheduling": {"timeout": "3600s"},
                "baseOutputDirectory": {"outputUriPrefix": "gs://bucket/out/"}},
    "labels": {"team": "ml"}})");
}

// "field: message" of the rejection, or "accepted".
std::string verdict(const json& body, const std::string& schema = kCustomJob) {
  try {
    SchemaValidator::vertexV1().normalize(body, schema);
  } catch (const ValidationError& error) {
    return error.field() + ": " + error.what();
  }
  return "accepted";
}

TEST(SchemaValidator, AcceptsTheDocumentedExampleUnchanged) {
  EXPECT_EQ(SchemaValidator::vertexV1().normalize(validJob(), kCustomJob), validJob());
}

TEST(SchemaValidator, RejectsAnUnknownFieldWithItsPath) {
  auto job = validJob();
  job["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["imageUrl"] = "typo";
  auto result = verdict(job);
  EXPECT_NE((result).find("jobSpec.workerPoolSpecs[0].containerSpec.imageUrl: "), std::string::npos) << (result);
  EXPECT_NE((result).find("Unknown name \"imageUrl\""), std::string::npos) << (result);
}

TEST(SchemaValidator, RejectsAWrongType) {
  auto job = validJob();
  job["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorCount"] = "one";
  EXPECT_NE((verdict(job)).find("jobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount: "), std::string::npos) << (verdict(job));
  job = validJob();
  job["labels"] = json::array();
  EXPECT_NE((verdict(job)).find("labels: "), std::string::npos) << (verdict(job));
  job = validJob();
  job["jobSpec"]["scheduling"]["timeout"] = "1h";
  EXPECT_NE((verdict(job)).find("Duration"), std::string::npos) << (verdict(job));
}

TEST(SchemaValidator, RejectsAnUnknownEnumNameOrNumber) {
  auto job = validJob();
  job["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorType"] = "NVIDIA_TESLA_T5";
  EXPECT_NE((verdict(job)).find("acceleratorType"), std::string::npos) << (verdict(job));
  job["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorType"] = 99;
  EXPECT_NE((verdict(job)).find("acceleratorType"), std::string::npos) << (verdict(job));
}

TEST(SchemaValidator, RejectsAMissingRequiredField) {
  auto job = validJob();
  job.erase("displayName");
  EXPECT_NE((verdict(job)).find("displayName: Required field"), std::string::npos) << (verdict(job));
  job = validJob();
  job["jobSpec"]["workerPoolSpecs"][0]["containerSpec"].erase("imageUri");
  EXPECT_NE((verdict(job)).find("jobSpec.workerPoolSpecs[0].containerSpec.imageUri: Required"), std::string::npos) << (verdict(job));
}

TEST(SchemaValidator, DecodesEnumNumbersByTheirProtoNumbersAndInt64Numbers) {
  auto job = validJob();
  auto& machine = job["jobSpec"]["workerPoolSpecs"][0]["machineSpec"];
  machine["acceleratorType"] = 6;  // TPU_V2 is 6 although it is listed after NVIDIA_RTX_PRO_6000 (18)
  job["jobSpec"]["workerPoolSpecs"][0]["replicaCount"] = 2;
  job["jobSpec"]["scheduling"]["strategy"] = 6;  // FLEX_START; 5 is unused in the proto
  auto canonical = SchemaValidator::vertexV1().normalize(job, kCustomJob);
  EXPECT_EQ(canonical["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorType"], "TPU_V2");
  EXPECT_EQ(canonical["jobSpec"]["workerPoolSpecs"][0]["replicaCount"], "2");
  EXPECT_EQ(canonical["jobSpec"]["scheduling"]["strategy"], "FLEX_START");
}

TEST(SchemaValidator, AcceptsProtoFieldNamesAndDropsOutputOnlyFields) {
  auto job = validJob();
  job["display_name"] = job["displayName"];
  job.erase("displayName");
  job["state"] = "JOB_STATE_SUCCEEDED";
  job["createTime"] = "2020-01-01T00:00:00Z";
  auto canonical = SchemaValidator::vertexV1().normalize(job, kCustomJob);
  EXPECT_EQ(canonical["displayName"], "train-1");
  EXPECT_FALSE(canonical.contains("state"));
  EXPECT_FALSE(canonical.contains("createTime"));
}

TEST(SchemaValidator, ChecksTuningJobsAgainstTheirSchema) {
  json tuning = {{"displayName", "hpt"},
                 {"maxTrialCount", "4"},
                 {"parallelTrialCount", 2},
                 {"studySpec",
                  {{"metrics", {{{"metricId", "accuracy"}, {"goal", 1}}}},
                   {"parameters", {{{"parameterId", "lr"}, {"doubleValueSpec", {{"minValue", 0.001}, {"maxValue", 0.1}}}}}}}},
                 {"trialJobSpec", validJob()["jobSpec"]}};
  auto canonical = SchemaValidator::vertexV1().normalize(tuning, "GoogleCloudAiplatformV1HyperparameterTuningJob");
  EXPECT_EQ(canonical["maxTrialCount"], 4);
  EXPECT_EQ(canonical["studySpec"]["metrics"][0]["goal"], "MAXIMIZE");
  tuning.erase("studySpec");
  EXPECT_NE((verdict(tuning, "GoogleCloudAiplatformV1HyperparameterTuningJob")).find("studySpec: Required"), std::string::npos) << (verdict(tuning, "GoogleCloudAiplatformV1HyperparameterTuningJob"));
}

}  // namespace
}  // namespace vto::emulator
