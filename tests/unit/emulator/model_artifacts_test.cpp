// The model files a succeeding CustomJob leaves in AIP_MODEL_DIR, written before it is SUCCEEDED.
#include "emulator/model_artifacts.h"

#include <set>

#include <gtest/gtest.h>

#include "base/rfc3339.h"
#include "tests/support/wait.h"
#include "tests/unit/emulator/emulator_fixture.h"

namespace vto::emulator {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

EmulatorOptions threeSteps() {
  EmulatorOptions options;
  options.simulation = {2s, 3, 10s, 1s};
  return options;
}

class ModelArtifactsTest : public EmulatorFixture {
 protected:
  ModelArtifactsTest() : EmulatorFixture(threeSteps()) {}
  std::string runToEnd(const json& job) {
    auto name = create(job);
    advance(2s);
    advance(30s);
    return name;
  }
};

TEST_F(ModelArtifactsTest, ASucceededJobLeavesAModelAndItsMetricsInAipModelDir) {
  auto name = runToEnd(customJob());
  ASSERT_EQ(get(name)["state"], "JOB_STATE_SUCCEEDED");
  auto model = json::parse(gcs_.content("bkt", "runs/a/model/model.txt"));
  EXPECT_EQ(model["job"], name);
  EXPECT_EQ(model["steps"], 3);
  auto metrics = json::parse(gcs_.content("bkt", "runs/a/model/metrics.json"));
  ASSERT_TRUE(metrics.contains("auc")) << metrics.dump();
  EXPECT_GE(metrics["auc"].get<double>(), 0.80);
  EXPECT_LE(metrics["auc"].get<double>(), 0.95);
  EXPECT_EQ(metrics, defaultModelMetrics(name)) << "deterministic from the job's name";
}

TEST(DefaultModelMetrics, VaryFromJobToJobWithinTheirRange) {
  std::set<double> seen;
  for (int i = 0; i < 50; ++i) {
    auto auc = defaultModelMetrics("projects/p/locations/l/customJobs/" + std::to_string(1000 + i))["auc"].get<double>();
    EXPECT_GE(auc, 0.80);
    EXPECT_LE(auc, 0.95);
    seen.insert(auc);
  }
  EXPECT_GT(seen.size(), 40u);
}

TEST_F(ModelArtifactsTest, MetricsComeFromTheFirstPoolsEnvironmentWhenSet) {
  auto name = runToEnd(customJob("given", {{{"name", "EMULATOR_MODEL_METRICS"}, {"value", R"({"auc": 0.913, "loss": 0.2})"}}}));
  ASSERT_EQ(get(name)["state"], "JOB_STATE_SUCCEEDED");
  EXPECT_EQ(json::parse(gcs_.content("bkt", "runs/a/model/metrics.json")), (json{{"auc", 0.913}, {"loss", 0.2}}));
}

TEST_F(ModelArtifactsTest, NoModelWritesNothing) {
  auto name = runToEnd(customJob("none", {{{"name", "EMULATOR_NO_MODEL"}, {"value", "1"}}}));
  ASSERT_EQ(get(name)["state"], "JOB_STATE_SUCCEEDED");
  EXPECT_TRUE(gcs_.listObjects("bkt", "runs/a/model/").empty());
  EXPECT_EQ(gcs_.listObjects("bkt", "runs/a/checkpoints/").size(), 3u);
}

TEST_F(ModelArtifactsTest, MetricsThatAreNotAJsonObjectCrashTheTrainingCode) {
  auto name = runToEnd(customJob("bad", {{{"name", "EMULATOR_MODEL_METRICS"}, {"value", "[0.9]"}}}));
  auto job = get(name);
  EXPECT_EQ(job["state"], "JOB_STATE_FAILED");
  EXPECT_EQ(job["error"]["code"], 3);
  EXPECT_NE(job["error"]["message"].get<std::string>().find("EMULATOR_MODEL_METRICS is not a JSON object"), std::string::npos);
  EXPECT_TRUE(gcs_.listObjects("bkt", "runs/a/model/").empty());
}

TEST(ModelArtifactsWithoutGcs, AJobStillSucceeds) {
  testing::FakeClock clock;
  Emulator emulator(clock, threeSteps(), nullptr);
  auto token = emulator.handle({"GET", "/computeMetadata/v1/instance/service-accounts/default/token", {},
                                {{"metadata-flavor", "Google"}}, ""}).body["access_token"].get<std::string>();
  auto call = [&](const std::string& method, const std::string& path, const std::string& body = "") {
    return emulator.handle({method, path, {}, {{"authorization", "Bearer " + token}}, body}).body;
  };
  std::string name = call("POST", kParent + "/customJobs", customJob().dump())["name"];
  clock.advance(40s);
  emulator.tick();
  EXPECT_EQ(call("GET", "/v1/" + name)["state"], "JOB_STATE_SUCCEEDED");
}

TEST(ModelArtifactsOrdering, AJobIsSucceededOnlyOnceItsModelFilesAreWritten) {
  testing::FakeClock clock;
  GatedGcs gcs([](const std::string& name) { return name.find("/model/") != std::string::npos; });
  Emulator emulator(clock, threeSteps(), &gcs);
  emulator.startCheckpointWriters(1);
  auto token = emulator.handle({"GET", "/computeMetadata/v1/instance/service-accounts/default/token", {},
                                {{"metadata-flavor", "Google"}}, ""}).body["access_token"].get<std::string>();
  auto get = [&](const std::string& name) {
    return emulator.handle({"GET", "/v1/" + name, {}, {{"authorization", "Bearer " + token}}, ""}).body;
  };
  std::string name = emulator.handle({"POST", kParent + "/customJobs", {}, {{"authorization", "Bearer " + token}},
                                      customJob().dump()}).body["name"];
  clock.advance(40s);
  emulator.tick();
  ASSERT_TRUE(testing::waitFor([&] { return gcs.waiting() == 1; }, 10s, 1ms));
  auto job = get(name);
  EXPECT_EQ(job["state"], "JOB_STATE_RUNNING") << "its model files are not written yet";
  EXPECT_EQ(emulator.handle({"GET", "/emulator/v1/stats", {}, {}, ""}).body["modelFilesQueued"], 1);

  gcs.open();
  ASSERT_TRUE(testing::waitFor([&] { return get(name)["state"] == "JOB_STATE_SUCCEEDED"; }, 10s, 1ms));
  EXPECT_TRUE(gcs.objects.getObject("bkt", "runs/a/model/model.txt").has_value());
  EXPECT_TRUE(gcs.objects.getObject("bkt", "runs/a/model/metrics.json").has_value());
  job = get(name);
  EXPECT_EQ(job["endTime"], rfc3339Millis(clock.now() - 40s + 32s)) << "it ended when its last step did";
}

}  // namespace
}  // namespace vto::emulator
