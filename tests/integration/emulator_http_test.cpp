// vto-emulator as a program: its command line, its HTTP surface and its control API, driven over
// real HTTP (the Vertex client's own behaviour is covered by vertex_client_test).
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
    emulator_ = new EmulatorProcess({"--queue-time", "100ms", "--steps", "1000", "--step-time", "1s"},
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

TEST(EmulatorCommandLine, BadFlagsExitWithAMessageThatSaysWhatToDo) {
  for (const auto& [flags, expected] : std::vector<std::pair<std::string, std::string>>{
           {"", "--listen HOST:PORT is required"},
           {"--listen 127.0.0.1:1 --step-time 5", "expected a duration such as 500ms"},
           {"--listen 127.0.0.1:1 --fail-rate 2", "between 0 and 1"},
           {"--listen 127.0.0.1:1 --colour red", "unknown flag --colour"}}) {
    auto result = runShell("'" + emulatorBinDir() + "/vto-emulator' " + flags + " 2>&1");
    EXPECT_EQ(result.exitCode, 2) << flags;
    EXPECT_NE(result.output.find(expected), std::string::npos) << flags << ": " << result.output;
  }
}

}  // namespace
}  // namespace vto::testing
