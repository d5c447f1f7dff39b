// vto-emulator as a program: its command line, its HTTP surface and its control API, driven over
// real HTTP (the Vertex client's own behaviour is covered by vertex_client_test).
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/emulator_processes.h"
#include "vertex/http_transport.h"

namespace vto::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const std::string kParent = "/v1/projects/emu-project/locations/europe-west4";

class EmulatorOverHttp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(makeTempDir("vto-emulator-it"));
    // The Logging test below polls for entries: Logging's read quota and its "still searching" first
    // pages have tests of their own (job_logs_test, vto_logs_test).
    emulator_ = new EmulatorProcess({"--queue-time", "100ms", "--steps", "1000", "--step-time", "1s",
                                     "--logging-requests-per-minute", "0", "--logging-searching-pages", "off"},
                                    *dir_ + "/emulator.log");
  }
  static void TearDownTestSuite() { delete emulator_; }

  vertex::HttpResponse send(const std::string& method, const std::string& path, const std::string& body = "",
                            std::map<std::string, std::string> headers = {}) {
    return http_.send({method, emulator_->url() + path, std::move(headers), body, 10s});
  }
  std::string token() {
    auto response = send("GET", "/computeMetadata/v1/instance/service-accounts/default/token", "",
                         {{"Metadata-Flavor", "Google"}});
    return json::parse(response.body)["access_token"].get<std::string>();
  }
  json authorized(const std::string& method, const std::string& path, const json& body = nullptr) {
    auto response = send(method, path, body.is_null() ? "" : body.dump(), {{"Authorization", "Bearer " + token()}});
    auto parsed = json::parse(response.body);
    parsed["httpStatus"] = response.status;
    return parsed;
  }

  inline static std::string* dir_ = nullptr;
  inline static EmulatorProcess* emulator_ = nullptr;
  vertex::CppRestTransport http_;
};

json runningJob() {
  return json::parse(R"({"displayName": "long", "jobSpec": {"workerPoolSpecs": [{
      "machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "1", "containerSpec": {"imageUri": "img"}}]}})");
}

TEST_F(EmulatorOverHttp, RequiresABearerTokenOnTheVertexPaths) {
  auto anonymous = send("GET", kParent + "/customJobs");
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_EQ(json::parse(anonymous.body)["error"]["status"], "UNAUTHENTICATED");
  EXPECT_EQ(send("GET", "/computeMetadata/v1/instance/service-accounts/default/token").status, 403);
  EXPECT_EQ(authorized("GET", kParent + "/customJobs")["httpStatus"], 200);
}

TEST_F(EmulatorOverHttp, EachFailureClassEndsARunningJobWithItsCode) {
  std::map<std::string, int> expectedCodes = {
      {"Preemption", 14}, {"Stockout", 8}, {"UserError", 3}, {"InternalError", 13}};
  for (const auto& [failureClass, code] : expectedCodes) {
    auto name = authorized("POST", kParent + "/customJobs", runningJob())["name"].get<std::string>();
    ASSERT_TRUE(waitFor([&] { return authorized("GET", "/v1/" + name)["state"] == "JOB_STATE_RUNNING"; }, 30s, 20ms));
    auto failed = send("POST", "/emulator/v1/" + name + ":fail", json{{"failureClass", failureClass}}.dump());
    EXPECT_EQ(failed.status, 200) << failed.body;
    auto job = authorized("GET", "/v1/" + name);
    EXPECT_EQ(job["state"], "JOB_STATE_FAILED") << failureClass;
    EXPECT_EQ(job["error"]["code"], code) << failureClass;
    EXPECT_FALSE(job["error"]["message"].get<std::string>().empty());
    EXPECT_EQ(send("POST", "/emulator/v1/" + name + ":fail", R"({"failureClass": "Preemption"})").status, 400)
        << "a finished job cannot fail again";
  }
}

TEST_F(EmulatorOverHttp, ListFilterIsUrlDecodedAndValidated) {
  auto created = authorized("POST", kParent + "/customJobs", runningJob());
  // display_name:"lo*" AND create_time>="2000-01-01T00:00:00Z", percent-encoded as a client sends it
  auto filter = vertex::urlEncode(R"(display_name:"lo*" AND create_time>="2000-01-01T00:00:00Z")");
  auto page = authorized("GET", kParent + "/customJobs?filter=" + filter);
  EXPECT_EQ(page["httpStatus"], 200);
  bool found = false;
  for (const auto& job : page["customJobs"]) found = found || job["name"] == created["name"];
  EXPECT_TRUE(found);
  auto bad = authorized("GET", kParent + "/customJobs?filter=" + vertex::urlEncode("owner=me"));
  EXPECT_EQ(bad["httpStatus"], 400);
  EXPECT_NE(bad["error"]["message"].get<std::string>().find("supported:"), std::string::npos);
}

TEST_F(EmulatorOverHttp, ServesCloudLoggingEntriesListWithItsFilter) {
  auto name = authorized("POST", kParent + "/customJobs", runningJob())["name"].get<std::string>();
  auto id = name.substr(name.rfind('/') + 1);
  json request = {{"resourceNames", {"projects/emu-project"}},
                  {"filter", "resource.type=\"ml_job\" AND resource.labels.job_id=\"" + id +
                                 "\" AND labels.\"ml.googleapis.com/task_name\"=\"workerpool0-0\" AND severity>=INFO"},
                  {"orderBy", "timestamp desc"},
                  {"pageSize", 1}};
  json page;
  ASSERT_TRUE(waitFor([&] {
    page = authorized("POST", "/v2/entries:list", request);
    return page.contains("entries") && !page["entries"].empty() && page.contains("nextPageToken");
  }, 30s, 50ms)) << page.dump();  // a start line and at least one step
  EXPECT_EQ(page["httpStatus"], 200);
  EXPECT_EQ(page["entries"][0]["resource"]["labels"]["job_id"], id);
  EXPECT_EQ(page["entries"][0]["textPayload"].get<std::string>().rfind("step ", 0), 0u) << page.dump();
  auto bad = authorized("POST", "/v2/entries:list", {{"resourceNames", {"projects/emu-project"}}, {"filter", "severity>=LOUD"}});
  EXPECT_EQ(bad["httpStatus"], 400);
  EXPECT_EQ(bad["error"]["status"], "INVALID_ARGUMENT");
}

TEST_F(EmulatorOverHttp, ModelVersionsAreAddressedWithAnEncodedAt) {
  const std::string models = "/v1/projects/emu-project/locations/europe-west4/models";
  json model = {{"displayName", "http"}, {"artifactUri", "gs://b/model/"}};
  auto operation = authorized("POST", models + ":upload", {{"modelId", "http-model"}, {"model", model}});
  ASSERT_EQ(operation["httpStatus"], 200) << operation.dump();
  ASSERT_TRUE(waitFor([&] { return authorized("GET", "/ui/" + operation["name"].get<std::string>())["done"] == true; }, 30s, 50ms));
  auto version = authorized("GET", models + "/http-model%401");
  EXPECT_EQ(version["versionId"], "1") << version.dump();
  auto merged = authorized("POST", models + "/http-model%401:mergeVersionAliases", {{"versionAliases", {"champion"}}});
  EXPECT_EQ(merged["versionAliases"], json({"default", "champion"})) << merged.dump();
  EXPECT_EQ(authorized("GET", models + "/http-model@champion")["versionId"], "1");
}

// A job without capacity, from a --capacity file, reads as Vertex writes it; the control API lists
// and changes the entries.
TEST(EmulatorCapacity, TheCapacityFileAndTheControlApiDecideWhereJobsRun) {
  auto dir = makeTempDir("vto-emulator-capacity");
  {
    std::ofstream file(dir + "/capacity.json");
    file << R"([{"location": "us-central1", "acceleratorType": "NVIDIA_TESLA_A100", "available": false, "mode": "fail"},
                {"location": "us-central1", "acceleratorType": "NVIDIA_L4", "quota": 1, "quotaMode": "refuse"}])";
  }
  EmulatorProcess emulator({"--queue-time", "100ms", "--steps", "2", "--step-time", "100ms", "--stockout-wait", "100ms",
                            "--capacity", dir + "/capacity.json"},
                           dir + "/emulator.log");
  vertex::CppRestTransport http;
  auto token = json::parse(http.send({"GET", emulator.url() + "/computeMetadata/v1/instance/service-accounts/default/token",
                                      {{"Metadata-Flavor", "Google"}}, "", 10s}).body)["access_token"].get<std::string>();
  auto send = [&](const std::string& method, const std::string& path, const json& body = nullptr) {
    auto response = http.send({method, emulator.url() + path, {{"Authorization", "Bearer " + token}},
                               body.is_null() ? "" : body.dump(), 10s});
    auto parsed = json::parse(response.body);
    parsed["httpStatus"] = response.status;
    return parsed;
  };
  auto gpuJob = [](const std::string& type) {
    auto job = runningJob();
    job["jobSpec"]["workerPoolSpecs"][0]["machineSpec"] = {{"machineType", "a2-highgpu-1g"}, {"acceleratorType", type},
                                                           {"acceleratorCount", 1}};
    return job;
  };
  const std::string parent = "/v1/projects/emu-project/locations/us-central1";
  EXPECT_EQ(send("GET", "/emulator/v1/capacity")["entries"].size(), 2u);
  auto name = send("POST", parent + "/customJobs", gpuJob("NVIDIA_TESLA_A100"))["name"].get<std::string>();
  ASSERT_TRUE(waitFor([&] { return send("GET", "/v1/" + name)["state"] == "JOB_STATE_FAILED"; }, 30s, 20ms));
  auto job = send("GET", "/v1/" + name);
  EXPECT_EQ(job["error"]["code"], 8);
  EXPECT_EQ(job["error"]["message"].get<std::string>().rfind("Resources are insufficient in region: us-central1. ", 0), 0u);

  EXPECT_EQ(send("POST", parent + "/customJobs", gpuJob("NVIDIA_L4"))["httpStatus"], 200);
  auto overQuota = send("POST", parent + "/customJobs", gpuJob("NVIDIA_L4"));
  EXPECT_EQ(overQuota["httpStatus"], 429);
  EXPECT_NE(overQuota["error"]["message"].get<std::string>().find("custom_model_training_nvidia_l4_gpus"), std::string::npos);

  auto changed = send("POST", "/emulator/v1/capacity", {{"location", "us-central1"}, {"acceleratorType", "NVIDIA_TESLA_A100"},
                                                        {"available", true}});
  EXPECT_EQ(changed["httpStatus"], 200) << changed.dump();
  auto later = send("POST", parent + "/customJobs", gpuJob("NVIDIA_TESLA_A100"))["name"].get<std::string>();
  ASSERT_TRUE(waitFor([&] { return send("GET", "/v1/" + later)["state"] == "JOB_STATE_SUCCEEDED"; }, 30s, 20ms));
  EXPECT_EQ(send("POST", "/emulator/v1/capacity", {{"mode", "hold"}})["httpStatus"], 400);
}

// A job's model files are in Cloud Storage (the real fake-gcs-server) when it is seen SUCCEEDED.
TEST(EmulatorModelFiles, ASucceededJobsModelFilesAreAlreadyInCloudStorage) {
  auto dir = makeTempDir("vto-emulator-model-files");
  FakeGcsServer gcs(dir + "/gcs.log", {"models-it"});
  EmulatorProcess emulator({"--queue-time", "100ms", "--steps", "2", "--step-time", "100ms", "--gcs-endpoint", gcs.url()},
                           dir + "/emulator.log");
  vertex::CppRestTransport http;
  auto token = json::parse(http.send({"GET", emulator.url() + "/computeMetadata/v1/instance/service-accounts/default/token",
                                      {{"Metadata-Flavor", "Google"}}, "", 10s}).body)["access_token"].get<std::string>();
  auto job = runningJob();
  job["jobSpec"]["baseOutputDirectory"] = {{"outputUriPrefix", "gs://models-it/run-1"}};
  job["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"] = {{{"name", "EMULATOR_MODEL_METRICS"}, {"value", R"({"auc": 0.9})"}}};
  auto created = http.send({"POST", emulator.url() + "/v1/projects/emu-project/locations/us-central1/customJobs",
                            {{"Authorization", "Bearer " + token}}, job.dump(), 10s});
  ASSERT_EQ(created.status, 200) << created.body;
  auto name = json::parse(created.body)["name"].get<std::string>();
  ASSERT_TRUE(waitFor([&] {
    auto got = http.send({"GET", emulator.url() + "/v1/" + name, {{"Authorization", "Bearer " + token}}, "", 10s});
    return json::parse(got.body)["state"] == "JOB_STATE_SUCCEEDED";
  }, 30s, 5ms));
  auto metrics = http.send({"GET", gcs.url() + "/storage/v1/b/models-it/o/" + vertex::urlEncode("run-1/model/metrics.json") + "?alt=media",
                            {}, "", 10s});
  EXPECT_EQ(metrics.status, 200);
  EXPECT_EQ(json::parse(metrics.body), (json{{"auc", 0.9}}));
  auto model = http.send({"GET", gcs.url() + "/storage/v1/b/models-it/o/" + vertex::urlEncode("run-1/model/model.txt"), {}, "", 10s});
  EXPECT_EQ(model.status, 200);
}

TEST(EmulatorCommandLine, BadFlagsExitWithAMessageThatSaysWhatToDo) {
  auto dir = makeTempDir("vto-emulator-flags");
  {
    std::ofstream file(dir + "/capacity.json");
    file << R"([{"location": "us-central1", "available": "no"}])";
  }
  for (const auto& [flags, expected] : std::vector<std::pair<std::string, std::string>>{
           {"", "--listen HOST:PORT is required"},
           {"--listen 127.0.0.1:1 --step-time 5", "expected a duration such as 500ms"},
           {"--listen 127.0.0.1:1 --fail-rate 2", "between 0 and 1"},
           {"--listen 127.0.0.1:1 --colour red", "unknown flag --colour"},
           {"--listen 127.0.0.1:1 --capacity " + dir + "/capacity.json", "\"available\" must be true or false"},
           {"--listen 127.0.0.1:1 --model-artifacts maybe", "expected on or off"}}) {
    auto result = runShell("'" + emulatorBinDir() + "/vto-emulator' " + flags + " 2>&1");
    EXPECT_EQ(result.exitCode, 2) << flags;
    EXPECT_NE(result.output.find(expected), std::string::npos) << flags << ": " << result.output;
  }
}

}  // namespace
}  // namespace vto::testing
