#include "base/rfc3339.h"
#include "vertex/vertex_client.h"

#include <gtest/gtest.h>

#include "tests/fakes/clock_fake.h"
#include "tests/fakes/vertex_fake_sleeper.h"
#include "tests/fakes/vertex_fake_token_source.h"
#include "tests/fakes/vertex_fake_transport.h"
#include "vertex/api_error.h"
#include "vertex/rate_limiter.h"

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
    return RestVertexClient(transport_, tokens_, clock_, options);
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
  EXPECT_EQ(job.createTime, parseRfc3339("2026-05-18T10:00:00Z"));
}

// One backoff layer: the client never sleeps or retries on a reconcile worker; the error carries
// what the work queue needs.
TEST_F(VertexClientTest, FailsFastWithARetryableErrorInsteadOfSleeping) {
  transport_.enqueue(503, R"({"error":{"code":503,"status":"UNAVAILABLE","message":"try later"}})");
  transport_.enqueue(testing::ScriptedTransport::Answer{0, "", {}, true});  // a timeout
  auto vertex = client();
  auto start = clock_.now();
  try {
    vertex.getJob(kJobName);
    FAIL() << "expected ApiError";
  } catch (const RetryableError& error) {
    EXPECT_TRUE(error.isRetryable());
    EXPECT_EQ(error.retryAfter(), std::nullopt);
  }
  EXPECT_THROW(vertex.getJob(kJobName), TransportError);
  EXPECT_EQ(transport_.requests().size(), 2u);
  EXPECT_EQ(clock_.now(), start);
  EXPECT_TRUE(sleeper_.pauses().empty());
}

TEST_F(VertexClientTest, HandsRetryAfterToTheCallerClamped) {
  transport_.enqueue(429, "{}", {{"retry-after", "7"}});
  transport_.enqueue(429, "{}", {{"retry-after", "86400"}});
  transport_.enqueue(503, "{}", {{"retry-after", "1e300"}});
  transport_.enqueue(503, "{}", {{"retry-after", "-3"}});
  transport_.enqueue(503, "{}", {{"retry-after", "soon"}});
  std::vector<std::optional<std::chrono::milliseconds>> seen;
  auto vertex = client();
  for (int i = 0; i < 5; ++i) {
    try {
      vertex.getJob(kJobName);
    } catch (const ApiError& error) {
      seen.push_back(error.retryAfter());
    }
  }
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen[0], 7000ms);
  EXPECT_EQ(seen[1], kMaxRetryAfter);
  EXPECT_EQ(seen[2], kMaxRetryAfter);
  EXPECT_EQ(seen[3], std::nullopt);
  EXPECT_EQ(seen[4], std::nullopt);
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
  EXPECT_THROW(vertex.cancelJob("projects/my-project/locations/us-central1/models/1"), ApiError);
}

TEST_F(VertexClientTest, QuotaPacerHandsBackADelayInsteadOfBlocking) {
  transport_.setHandler([](const HttpRequest&) { return testing::ScriptedTransport::Answer{200, kJob, {}, false}; });
  VertexClientOptions options;
  options.limits.createsPerMinute = 2;
  auto vertex = client(options);
  auto start = clock_.now();
  vertex.createJob(kWhere, JobKind::Custom, json::object());
  clock_.advance(10s);
  vertex.createJob(kWhere, JobKind::Custom, json::object());
  try {
    vertex.createJob(kWhere, JobKind::Custom, json::object());
    FAIL() << "expected QuotaPacingError";
  } catch (const QuotaPacingError& error) {
    EXPECT_EQ(error.retryAfter(), 50000ms);  // the first creation leaves the minute 50 s from now
  }
  EXPECT_EQ(clock_.now(), start + 10s);  // nothing slept
  EXPECT_EQ(transport_.requests().size(), 2u);
  vertex.getJob(kJobName);  // other requests have their own budget
  clock_.advance(50s);
  EXPECT_NO_THROW(vertex.createJob(kWhere, JobKind::Custom, json::object()));
}

TEST_F(VertexClientTest, CreatesAreSharedFairlyBetweenTheNamespacesTheirLabelsName) {
  transport_.setHandler([](const HttpRequest&) { return testing::ScriptedTransport::Answer{200, kJob, {}, false}; });
  VertexClientOptions options;
  options.limits.createsPerMinute = 4;
  auto vertex = client(options);
  auto of = [](const std::string& ns) { return json{{"labels", {{kTenantLabel, ns}}}}; };
  vertex.createJob(kWhere, JobKind::Custom, of("calm"));
  vertex.createJob(kWhere, JobKind::Custom, of("loop"));
  vertex.createJob(kWhere, JobKind::Custom, of("loop"));
  try {
    vertex.createJob(kWhere, JobKind::Custom, of("loop"));
    FAIL() << "expected QuotaPacingError: loop holds its half";
  } catch (const QuotaPacingError& error) {
    EXPECT_NE(std::string(error.what()).find("for namespace loop"), std::string::npos) << error.what();
  }
  EXPECT_NO_THROW(vertex.createJob(kWhere, JobKind::Custom, of("calm"))) << "calm's half is still there";
  EXPECT_EQ(transport_.requests().size(), 4u);
  EXPECT_EQ(tenantOfJob(of("team-a")), "team-a");
  EXPECT_EQ(tenantOfJob(json::object()), "");
  EXPECT_EQ(tenantOfJob(json{{"labels", {{kTenantLabel, 7}}}}), "");
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
  auto where = locationOf("projects/my-project/locations/europe-west4/hyperparameterTuningJobs/5");
  EXPECT_EQ(where.project, "my-project");
  EXPECT_EQ(where.location, "europe-west4");
  EXPECT_EQ(jobKindOf("projects/my-project/locations/europe-west4/hyperparameterTuningJobs/5"),
            JobKind::HyperparameterTuning);
  // Vertex writes the project number into the names it returns.
  EXPECT_EQ(locationOf("projects/123456789012/locations/us-central1/customJobs/7").project, "123456789012");
  EXPECT_EQ(locationOf("projects/my-project/locations/us-central1/operations/8").location, "us-central1");
  EXPECT_EQ(locationOf("projects/my-project/locations/us-central1/customJobs/7/operations/8").location, "us-central1");
  EXPECT_THROW(locationOf("customJobs/5"), std::invalid_argument);
}

// Names come back through status, which anyone with status write access can change: one strict
// pattern, nothing that could move the request to another host or path.
TEST(VertexNames, OneStrictPatternForJobNames) {
  for (const char* bad : {
           "projects/my-project/locations/localhost:8080/x?/customJobs/1",
           "projects/my-project/locations/evil.example#/customJobs/1",
           "projects/my-project/locations/us-central1/customJobs/1/../../../x",
           "projects/my-project/locations/us-central1/customJobs/abc",
           "projects/my-project/locations/us-central1/customJobs/1?x=y",
           "projects/my-project/locations/us-central1/customJobs/",
           "projects/my-project/locations/us-central1/customJobs/1/",
           "projects/my-project/locations/us-central1/models/1",
           "projects/My_Project/locations/us-central1/customJobs/1",
           "projects//locations/us-central1/customJobs/1",
           "/projects/my-project/locations/us-central1/customJobs/1",
           "xprojects/my-project/locations/us-central1/customJobs/1",
       }) {
    EXPECT_FALSE(parseResourceName(bad)) << bad;
    EXPECT_THROW(jobKindOf(bad), std::invalid_argument) << bad;
  }
  EXPECT_THROW(jobKindOf("projects/my-project/locations/us-central1/customJobs/1/operations/2"), std::invalid_argument);
}

// Defence in depth: whatever the CRD and the validator let through, the client refuses a location,
// project or job name that would send the token somewhere else, before any request.
TEST_F(VertexClientTest, RefusesHostileLocationsProjectsAndNamesBeforeAnyRequest) {
  auto vertex = client();
  for (const Location& where : {Location{"my-project", "localhost:8080/x?"}, Location{"my-project", "evil.example#"},
                                Location{"my-project", "us-central1.evil.example"}, Location{"a/../../x", "us-central1"},
                                Location{"my-project?", "us-central1"}, Location{"", "us-central1"}}) {
    EXPECT_THROW(vertex.createJob(where, JobKind::Custom, json::object()), ApiError) << where.location;
    EXPECT_THROW(vertex.listJobs(where, JobKind::Custom, {}), ApiError) << where.location;
  }
  for (const char* name : {"projects/my-project/locations/localhost:8080/x?/customJobs/1",
                           "projects/my-project/locations/us-central1/customJobs/1/../../../../x"}) {
    EXPECT_THROW(vertex.getJob(name), ApiError) << name;
    EXPECT_THROW(vertex.cancelJob(name), ApiError) << name;
    EXPECT_THROW(vertex.deleteJob(name), ApiError) << name;
    EXPECT_THROW(vertex.getOperation(name), ApiError) << name;
  }
  try {
    vertex.createJob({"my-project", "localhost:8080/x?"}, JobKind::Custom, json::object());
  } catch (const ApiError& error) {
    EXPECT_FALSE(error.retryable());
    EXPECT_NE(std::string(error.what()).find("us-central1"), std::string::npos) << error.what();
  }
  EXPECT_TRUE(transport_.requests().empty());
  EXPECT_EQ(tokens_.calls, 0);  // not even a token was fetched
}

TEST_F(VertexClientTest, UnexpectedResponsesBecomeTypedErrors) {
  transport_.enqueue(200, "<html><body>Sign in to the captive portal</body></html>");
  transport_.enqueue(200, "[1, 2]");
  transport_.enqueue(500, R"({"error": {"code": "x", "status": 14, "message": 42, "details": "nope"}})");
  transport_.enqueue(502, "<html>bad gateway</html>");
  // A created job without a valid name cannot be followed: refused, not stored.
  transport_.enqueue(200, R"({"name": "projects/my-project/locations/localhost:1/customJobs/1"})");
  auto vertex = client();
  for (int i = 0; i < 2; ++i) {
    try {
      vertex.getJob(kJobName);
      FAIL() << "expected ApiError";
    } catch (const ApiError& error) {
      EXPECT_TRUE(error.retryable());
      EXPECT_EQ(error.httpStatus(), 200);
    }
  }
  try {
    vertex.getJob(kJobName);
    FAIL() << "expected ApiError";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.status(), "UNAVAILABLE");  // 14 by number
    EXPECT_EQ(error.message(), "42");
    EXPECT_TRUE(error.details().empty());
  }
  try {
    vertex.getJob(kJobName);
    FAIL() << "expected ApiError";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.httpStatus(), 502);
  }
  EXPECT_THROW(vertex.createJob(kWhere, JobKind::Custom, json::object()), ApiError);
}

TEST(VertexDecode, UnknownStatesAndOddFieldsDecodeWithoutThrowing) {
  auto job = decodeJob(JobKind::Custom, json::parse(R"({"name": 5, "state": "JOB_STATE_FROM_THE_FUTURE",
      "labels": {"a": 1, "b": "x"}, "createTime": "yesterday", "error": {"code": "NOT_A_CODE", "message": {}}})"));
  EXPECT_EQ(job.state, JobState::Unspecified);
  EXPECT_EQ(job.name, "");
  EXPECT_EQ(job.labels.size(), 1u);
  EXPECT_FALSE(job.createTime);
  EXPECT_EQ(decodeJob(JobKind::Custom, json::parse(R"({"state": 99})")).state, JobState::Unspecified);
  EXPECT_EQ(decodeJob(JobKind::Custom, json::parse(R"({"state": {"x": 1}})")).state, JobState::Unspecified);
  EXPECT_EQ(decodeJob(JobKind::Custom, json::parse("[]")).state, JobState::Unspecified);
}

TEST(VertexDecode, TrialsAndWebAccessUrisOfAnyShapeDecodeWithoutThrowing) {
  // Wrong JSON types in trials, metrics and URIs are skipped; the well-formed trial still wins.
  auto job = decodeJob(JobKind::HyperparameterTuning, json::parse(R"({
      "studySpec": {"metrics": [{"metricId": "accuracy", "goal": 7}]},
      "trials": [5, {"id": 3, "finalMeasurement": {"metrics": [{"metricId": "accuracy", "value": 0.9}]},
                     "parameters": [{"parameterId": ["x"], "value": 1}, "junk"]},
                 {"id": "4", "finalMeasurement": {"metrics": [{"metricId": {}, "value": 1.0},
                                                              {"metricId": "accuracy", "value": "high"}]}},
                 {"id": "5", "finalMeasurement": {"metrics": [{"metricId": "accuracy", "value": 0.95}]},
                  "parameters": [{"parameterId": "lr", "value": 0.1}]}],
      "webAccessUris": {"workerpool0-0": "https://shell.example", "bad": 1}})"));
  ASSERT_TRUE(job.bestTrial);
  EXPECT_EQ(job.bestTrial->id, "5");
  EXPECT_EQ(job.bestTrial->parameters["lr"], 0.1);
  EXPECT_EQ(job.webAccessUris.size(), 1u);
  EXPECT_FALSE(decodeJob(JobKind::HyperparameterTuning, json::parse(R"({"studySpec": {"metrics": "x"}, "trials": {}})")).bestTrial);
  EXPECT_TRUE(decodeJob(JobKind::Custom, json::parse(R"({"webAccessUris": []})")).webAccessUris.empty());
}

}  // namespace
}  // namespace vto::vertex
