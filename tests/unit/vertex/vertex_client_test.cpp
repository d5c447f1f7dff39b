#include "vertex/vertex_client.h"

#include <gtest/gtest.h>

#include "tests/fakes/clock_fake.h"
#include "tests/fakes/vertex_fake_sleeper.h"
#include "tests/fakes/vertex_fake_token_source.h"
#include "tests/fakes/vertex_fake_transport.h"
#include "vertex/api_error.h"

namespace vto::vertex {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const Location kWhere{"my-project", "us-central1"};
const std::string kJobName = "projects/my-project/locations/us-central1/customJobs/123";
const std::string kJob = R"({"name": ")" + kJobName + R"(", "state": 3, "displayName": "t",
                             "labels": {"vto-attempt": "1"}, "createTime": "2026-05-18T10:00:00Z",
                             "error": {"code": 1, "message": "CANCELED"}})";

class VertexClientTest : public ::testing::Test {
 protected:
  RestVertexClient client(VertexClientOptions options = {}) {
    options.retry = {4, 100ms, 1000ms, 2.0};
    return RestVertexClient(transport_, tokens_, clock_, sleeper_, options);
  }

  testing::FakeClock clock_;
  testing::AdvancingSleeper sleeper_{clock_};
  testing::ScriptedTransport transport_;
  testing::CountingTokenSource tokens_;
};

TEST_F(VertexClientTest, GetsFromTheRegionalEndpointWithABearerToken) {
  transport_.enqueue(200, kJob);
  auto job = client().getJob(kJobName);
  auto request = transport_.requests().at(0);
  EXPECT_EQ(request.method, "GET");
  EXPECT_EQ(request.url, "https://us-central1-aiplatform.googleapis.com/v1/" + kJobName);
  EXPECT_EQ(request.headers.at("Authorization"), "Bearer token-1");
  EXPECT_EQ(job.state, JobState::Running);  // decoded from the number 3
  EXPECT_EQ(job.labels.at("vto-attempt"), "1");
  EXPECT_EQ(job.error->code, 1);
  EXPECT_EQ(job.createTime, parseTimestamp("2026-05-18T10:00:00Z"));
}

TEST_F(VertexClientTest, RetriesThrottlingAndUnavailabilityThenSucceeds) {
  transport_.enqueue(429, R"({"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"slow down"}})");
  transport_.enqueue(503, R"({"error":{"code":503,"status":"UNAVAILABLE","message":"try later"}})");
  transport_.enqueue(testing::ScriptedTransport::Answer{0, "", {}, true});  // a timeout
  transport_.enqueue(200, kJob);
  auto vertex = client();
  EXPECT_EQ(vertex.getJob(kJobName).name, kJobName);
  EXPECT_EQ(transport_.requests().size(), 4u);
  EXPECT_EQ(vertex.retries(), 3);
  auto pauses = sleeper_.pauses();
  ASSERT_EQ(pauses.size(), 3u);
  EXPECT_GE(pauses[0], 50ms);
  EXPECT_LE(pauses[0], 100ms);
  EXPECT_GE(pauses[2], 200ms);
  EXPECT_LE(pauses[2], 400ms);
}

TEST_F(VertexClientTest, HonoursRetryAfter) {
  transport_.enqueue(429, "{}", {{"retry-after", "7"}});
  transport_.enqueue(200, kJob);
  client().getJob(kJobName);
  EXPECT_EQ(sleeper_.pauses().at(0), 7000ms);
}

TEST_F(VertexClientTest, GivesUpAfterMaxAttemptsWithTheLastError) {
  transport_.setHandler([](const HttpRequest&) {
    return testing::ScriptedTransport::Answer{503, R"({"error":{"code":503,"status":"UNAVAILABLE","message":"down"}})", {}, false};
  });
  auto vertex = client();
  try {
    vertex.getJob(kJobName);
    FAIL() << "expected ApiError";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.httpStatus(), 503);
    EXPECT_EQ(error.message(), "down");
  }
  EXPECT_EQ(transport_.requests().size(), 4u);
}

TEST_F(VertexClientTest, DoesNotRetryTerminalErrors) {
  transport_.enqueue(400, R"({"error":{"code":400,"status":"INVALID_ARGUMENT","message":"bad accelerator",
                              "details":[{"@type":"type.googleapis.com/google.rpc.BadRequest"}]}})");
  try {
    client().createJob(kWhere, JobKind::Custom, json::object());
    FAIL() << "expected ApiError";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.status(), "INVALID_ARGUMENT");
    EXPECT_EQ(error.details().size(), 1u);
  }
  EXPECT_EQ(transport_.requests().size(), 1u);
}

TEST_F(VertexClientTest, RefreshesTheTokenOnceAfter401) {
  transport_.enqueue(401, R"({"error":{"code":401,"status":"UNAUTHENTICATED","message":"expired"}})");
  transport_.enqueue(200, kJob);
  client().getJob(kJobName);
  EXPECT_EQ(tokens_.invalidations, 1);
  EXPECT_EQ(transport_.requests().at(1).headers.at("Authorization"), "Bearer token-2");

  transport_.setHandler([](const HttpRequest&) {
    return testing::ScriptedTransport::Answer{401, R"({"error":{"code":401,"status":"UNAUTHENTICATED","message":"no"}})", {}, false};
  });
  EXPECT_THROW(client().getJob(kJobName), ApiError);
}

TEST_F(VertexClientTest, ListEncodesFilterAndPaging) {
  transport_.enqueue(200, R"({"hyperparameterTuningJobs": [{"name": "projects/my-project/locations/us-central1/hyperparameterTuningJobs/9",
                               "state": "JOB_STATE_SUCCEEDED"}], "nextPageToken": "next"})");
  auto page = client().listJobs(kWhere, JobKind::HyperparameterTuning,
                                {R"(labels.vto-run-uid="a b" AND labels.vto-attempt="1")", 50, "tok"});
  EXPECT_EQ(transport_.requests().at(0).url,
            "https://us-central1-aiplatform.googleapis.com/v1/projects/my-project/locations/us-central1/"
            "hyperparameterTuningJobs?filter=labels.vto-run-uid%3D%22a%20b%22%20AND%20labels.vto-attempt%3D%221%22"
            "&pageSize=50&pageToken=tok");
  ASSERT_EQ(page.jobs.size(), 1u);
  EXPECT_EQ(page.jobs[0].kind, JobKind::HyperparameterTuning);
  EXPECT_EQ(page.jobs[0].state, JobState::Succeeded);
  EXPECT_EQ(page.nextPageToken, "next");
}

TEST_F(VertexClientTest, CancelDeleteAndOperationPolling) {
  transport_.enqueue(200, "{}");
  transport_.enqueue(200, R"({"name": "projects/my-project/locations/us-central1/operations/77", "done": false})");
  transport_.enqueue(200, R"({"name": "projects/my-project/locations/us-central1/operations/77", "done": false})");
  transport_.enqueue(200, R"({"name": "projects/my-project/locations/us-central1/operations/77", "done": true})");
  VertexClientOptions options;
  options.endpoint = "http://127.0.0.1:9999/";
  auto vertex = client(options);
  vertex.cancelJob(kJobName);
  auto operation = vertex.deleteJob(kJobName);
  EXPECT_FALSE(operation.done);
  auto finished = waitForOperation(vertex, operation.name, sleeper_, 1s, 10);
  EXPECT_TRUE(finished.done);
  auto requests = transport_.requests();
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].url, "http://127.0.0.1:9999/v1/" + kJobName + ":cancel");
  EXPECT_EQ(requests[0].body, "{}");
  EXPECT_EQ(requests[1].method, "DELETE");
  EXPECT_EQ(requests[3].url, "http://127.0.0.1:9999/v1/projects/my-project/locations/us-central1/operations/77");
  EXPECT_THROW(vertex.cancelJob("projects/p/locations/l/models/1"), std::invalid_argument);
}

TEST_F(VertexClientTest, PacesCreationsUnderTheQuota) {
  transport_.setHandler([](const HttpRequest&) { return testing::ScriptedTransport::Answer{200, kJob, {}, false}; });
  VertexClientOptions options;
  options.limits.createsPerMinute = 2;
  auto vertex = client(options);
  auto start = clock_.now();
  for (int i = 0; i < 5; ++i) vertex.createJob(kWhere, JobKind::Custom, json::object());
  // 2 at once, 2 a minute later, 1 two minutes later.
  EXPECT_EQ(clock_.now() - start, 120s);
  vertex.getJob(kJobName);  // other requests have their own budget
  EXPECT_EQ(clock_.now() - start, 120s);
}

TEST(VertexEndpoint, PlainHttpOnlyForLoopbackOrWhenAllowed) {
  EXPECT_NO_THROW(validateEndpoint("https://europe-west4-aiplatform.googleapis.com", false));
  EXPECT_NO_THROW(validateEndpoint("http://127.0.0.1:8089", false));
  EXPECT_NO_THROW(validateEndpoint("http://localhost:8089", false));
  EXPECT_THROW(validateEndpoint("http://vertex.internal:8089", false), std::invalid_argument);
  EXPECT_NO_THROW(validateEndpoint("http://vertex.internal:8089", true));
  EXPECT_THROW(validateEndpoint("ftp://x", true), std::invalid_argument);
  try {
    validateEndpoint("http://vertex.internal:8089", false);
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("--allow-insecure-endpoints"), std::string::npos);
  }
}

TEST(VertexNames, LocationAndKindFromAResourceName) {
  auto where = locationOf("projects/p1/locations/europe-west4/hyperparameterTuningJobs/5");
  EXPECT_EQ(where.project, "p1");
  EXPECT_EQ(where.location, "europe-west4");
  EXPECT_EQ(jobKindOf("projects/p1/locations/europe-west4/hyperparameterTuningJobs/5"), JobKind::HyperparameterTuning);
  EXPECT_THROW(locationOf("customJobs/5"), std::invalid_argument);
}

}  // namespace
}  // namespace vto::vertex
