// The real Vertex client, auth and GCS client against the real vto-emulator and fake-gcs-server.
#include <gtest/gtest.h>

#include <algorithm>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include "tests/support/emulator_processes.h"
#include "tests/fakes/vertex_test_keys.h"
#include "reconcilers/jobs/checkpoints.h"
#include "vertex/api_error.h"
#include "vertex/auth.h"
#include "vertex/gcs_client.h"
#include "vertex/vertex_client.h"

namespace vto::vertex {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using testing::waitFor;

const Location kWhere{"demo-project", "us-central1"};

json customJob(const std::string& bucketPath, const std::string& label) {
  return {{"displayName", "train-" + label},
          {"labels", {{"case", label}}},
          {"jobSpec",
           {{"workerPoolSpecs",
             {{{"machineSpec", {{"machineType", "n1-standard-4"}}},
               {"replicaCount", "1"},
               {"containerSpec", {{"imageUri", "us-docker.pkg.dev/p/r/img:1"}}}}}},
            {"baseOutputDirectory", {{"outputUriPrefix", bucketPath}}}}}};
}

// Records every token it hands out, so the log check knows what must not appear.
class RecordingTokenSource final : public TokenSource {
 public:
  explicit RecordingTokenSource(TokenSource& inner) : inner_(inner) {}
  AccessToken token() override {
    auto token = inner_.token();
    std::lock_guard lock(mutex_);
    seen_.insert(token.value);
    return token;
  }
  void invalidate() override { inner_.invalidate(); }
  std::set<std::string> seen() {
    std::lock_guard lock(mutex_);
    return seen_;
  }

 private:
  TokenSource& inner_;
  std::mutex mutex_;
  std::set<std::string> seen_;
};

class VertexAgainstEmulator : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::makeTempDir("vto-vertex-it"));
    // The client's own logs, at the most verbose level, go to a file the secrets test reads.
    auto logger = spdlog::basic_logger_mt("client", *dir_ + "/client.log");
    logger->set_level(spdlog::level::trace);
    logger->flush_on(spdlog::level::trace);
    spdlog::set_default_logger(logger);
    gcs_ = new testing::FakeGcsServer(*dir_ + "/fake-gcs.log", {"vto-it"});
    emulator_ = new testing::EmulatorProcess({"--gcs-endpoint", gcs_->url(), "--queue-time", "200ms", "--steps", "3",
                                              "--step-time", "200ms", "--cancel-time", "100ms"},
                                             *dir_ + "/emulator.log");
  }
  static void TearDownTestSuite() {
    delete emulator_;
    delete gcs_;
  }

  void SetUp() override {
    tokens_ = std::make_unique<CachedTokenSource>(std::make_unique<MetadataTokenSource>(http_, clock_, emulator_->hostPort()),
                                                  clock_);
    recorded_ = std::make_unique<RecordingTokenSource>(*tokens_);
  }

  std::unique_ptr<RestVertexClient> client() {
    VertexClientOptions options;
    options.endpoint = emulator_->url();
    return std::make_unique<RestVertexClient>(http_, *recorded_, clock_, options);
  }

  static json control(const std::string& method, const std::string& path, const json& body = nullptr) {
    CppRestTransport http;
    auto response = http.send({method, emulator_->url() + "/emulator/v1/" + path, {}, body.is_null() ? "" : body.dump(),
                               10s});
    EXPECT_EQ(response.status, 200) << response.body;
    return json::parse(response.body);
  }

  // Polls (with a deadline) until the job reaches `state`.
  Job waitForState(VertexClient& vertex, const std::string& name, JobState state) {
    Job job;
    bool reached = waitFor(
        [&] {
          job = vertex.getJob(name);
          return job.state == state;
        },
        30s, 50ms);
    EXPECT_TRUE(reached) << name << " is " << jobStateName(job.state) << ", expected " << jobStateName(state);
    return job;
  }

  inline static std::string* dir_ = nullptr;
  inline static testing::FakeGcsServer* gcs_ = nullptr;
  inline static testing::EmulatorProcess* emulator_ = nullptr;
  RealClock clock_;
  RealSleeper sleeper_;
  CppRestTransport http_;
  std::unique_ptr<CachedTokenSource> tokens_;
  std::unique_ptr<RecordingTokenSource> recorded_;
};

TEST_F(VertexAgainstEmulator, JobRunsToSuccessAndItsCheckpointsAppearInFakeGcs) {
  auto vertex = client();
  auto job = vertex->createJob(kWhere, JobKind::Custom, customJob("gs://vto-it/run-ok", "ok"));
  EXPECT_EQ(job.state, JobState::Queued);
  auto done = waitForState(*vertex, job.name, JobState::Succeeded);
  EXPECT_TRUE(done.startTime && done.endTime);

  RestGcsClient gcs(http_, gcs_->url(), nullptr);
  auto objects = gcs.listObjects("vto-it", "run-ok/checkpoints/");
  std::set<std::string> names;
  for (const auto& object : objects) names.insert(object.name);
  EXPECT_EQ(names, (std::set<std::string>{"run-ok/checkpoints/ckpt-1", "run-ok/checkpoints/ckpt-2",
                                          "run-ok/checkpoints/ckpt-3"}));
  EXPECT_TRUE(gcs.getObject("vto-it", "run-ok/checkpoints/ckpt-3").has_value());
  EXPECT_EQ(control("GET", job.name + ":trace")["stepsRun"], json({1, 2, 3}));
}

TEST_F(VertexAgainstEmulator, ResumedJobRunsOnlyTheRemainingSteps) {
  auto vertex = client();
  auto body = customJob("gs://vto-it/run-resume", "resume");
  body["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"] = {
      {{"name", "VTO_RESUME_FROM"}, {"value", "gs://vto-it/run-resume/checkpoints/ckpt-1"}}};
  auto job = vertex->createJob(kWhere, JobKind::Custom, body);
  waitForState(*vertex, job.name, JobState::Succeeded);
  auto trace = control("GET", job.name + ":trace");
  EXPECT_EQ(trace["stepsRun"], json({2, 3}));
  EXPECT_EQ(trace["resumedFrom"], "gs://vto-it/run-resume/checkpoints/ckpt-1");
}

// One backoff layer: each throttled or unavailable answer comes straight back as a RetryableError
// (the work queue waits, not the client); the next call goes through.
TEST_F(VertexAgainstEmulator, ThrottlingAndUnavailabilityFailFastAsRetryableErrors) {
  auto vertex = client();
  auto before = control("GET", "stats");
  control("POST", "faults", {{"unavailable", 2}, {"throttled", 1}});
  std::vector<int> statuses;
  for (int i = 0; i < 3; ++i) {
    try {
      vertex->listJobs(kWhere, JobKind::Custom, {});
      ADD_FAILURE() << "call " << i << " should have met a fault";
    } catch (const ApiError& error) {
      EXPECT_TRUE(error.isRetryable()) << error.what();
      statuses.push_back(error.httpStatus());
    }
  }
  std::sort(statuses.begin(), statuses.end());
  EXPECT_EQ(statuses, (std::vector<int>{429, 503, 503}));
  EXPECT_NO_THROW(vertex->listJobs(kWhere, JobKind::Custom, {}));
  EXPECT_EQ(vertex->requests(), 4);  // no hidden retries
  auto after = control("GET", "stats");
  EXPECT_EQ(after.value("unavailable", 0) - before.value("unavailable", 0), 2);
  EXPECT_EQ(after.value("throttled", 0) - before.value("throttled", 0), 1);
}

// A checkpoint directory with many objects: the search lists prefixes, not every file, and keeps
// only the best candidate (fake-gcs-server answers delimiter, maxResults and page tokens).
TEST_F(VertexAgainstEmulator, CheckpointSearchInABigDirectoryIsBounded) {
  RestGcsClient gcs(http_, gcs_->url(), nullptr);
  for (int step = 1; step <= 120; ++step) {
    for (int shard = 0; shard < 5; ++shard) {
      gcs.upload("vto-it", "big/checkpoints/step-" + std::to_string(step) + "/shard-" + std::to_string(shard), "x",
                 "application/octet-stream");
    }
  }
  gcs.upload("vto-it", "big/checkpoints/notes/readme.txt", "x", "text/plain");
  reconcilers::CheckpointSearchLimits limits;
  limits.pageSize = 50;
  auto found = reconcilers::findLatestCheckpoint(gcs, "gs://vto-it/big/checkpoints", clock_, limits);
  ASSERT_TRUE(found.latest);
  EXPECT_EQ(found.latest->uri, "gs://vto-it/big/checkpoints/step-120");
  EXPECT_TRUE(found.latest->updateTime.has_value());
  EXPECT_TRUE(found.complete) << found.stoppedBecause;
  // At most: 121 prefixes at 50 a page (3), the unnumbered notes/ (1), the winner's 5 files (1).
  // Every object one by one would be 13 pages (fake-gcs-server may also answer in one page).
  EXPECT_LE(found.pages, 5);
  // The level listing the search starts from: directories rolled up, not 601 objects.
  auto level = gcs.listObjectsPage("vto-it", "big/checkpoints/", "", {"/", "items(name,updated),prefixes,nextPageToken", 0, ""});
  EXPECT_TRUE(level.objects.empty());
  EXPECT_EQ(level.prefixes.size(), 121u);

  limits.maxPages = 2;
  auto capped = reconcilers::findLatestCheckpoint(gcs, "gs://vto-it/big/checkpoints", clock_, limits);
  EXPECT_FALSE(capped.complete);
  EXPECT_EQ(capped.pages, 2);
}

TEST_F(VertexAgainstEmulator, ListFiltersByLabelAndPages) {
  auto vertex = client();
  for (int i = 0; i < 3; ++i) vertex->createJob(kWhere, JobKind::Custom, customJob("gs://vto-it/paging", "paging"));
  ListOptions options{R"(labels.case="paging")", 2, ""};
  auto first = vertex->listJobs(kWhere, JobKind::Custom, options);
  ASSERT_EQ(first.jobs.size(), 2u);
  ASSERT_FALSE(first.nextPageToken.empty());
  options.pageToken = first.nextPageToken;
  auto second = vertex->listJobs(kWhere, JobKind::Custom, options);
  EXPECT_EQ(second.jobs.size(), 1u);
  EXPECT_TRUE(second.nextPageToken.empty());
}

TEST_F(VertexAgainstEmulator, CancelThenDeleteThroughAnOperation) {
  auto vertex = client();
  auto job = vertex->createJob(kWhere, JobKind::Custom, customJob("gs://vto-it/cancel", "cancel"));
  vertex->cancelJob(job.name);
  auto cancelled = waitForState(*vertex, job.name, JobState::Cancelled);
  ASSERT_TRUE(cancelled.error.has_value());
  EXPECT_EQ(cancelled.error->code, 1);
  auto operation = vertex->deleteJob(job.name);
  operation = waitForOperation(*vertex, operation.name, sleeper_, 50ms, 200);
  EXPECT_TRUE(operation.done);
  try {
    vertex->getJob(job.name);
    ADD_FAILURE() << "the deleted job is still there";
  } catch (const ApiError& error) {
    EXPECT_TRUE(error.isNotFound());
  }
}

TEST_F(VertexAgainstEmulator, TuningJobRunsItsTrials) {
  auto vertex = client();
  json tuning = {{"displayName", "hpt"},
                 {"maxTrialCount", 3},
                 {"parallelTrialCount", 2},
                 {"studySpec", json::parse(R"({"metrics": [{"metricId": "loss", "goal": "MINIMIZE"}],
                     "parameters": [{"parameterId": "lr", "doubleValueSpec": {"minValue": 0.001, "maxValue": 0.1}}]})")},
                 {"trialJobSpec", customJob("gs://vto-it/hpt", "hpt")["jobSpec"]}};
  auto job = vertex->createJob(kWhere, JobKind::HyperparameterTuning, tuning);
  auto done = waitForState(*vertex, job.name, JobState::Succeeded);
  ASSERT_EQ(done.raw["trials"].size(), 3u);
  for (const auto& trial : done.raw["trials"]) EXPECT_EQ(trial["state"], "SUCCEEDED");
}

TEST_F(VertexAgainstEmulator, InvalidBodyIsATerminalTypedError) {
  auto vertex = client();
  auto body = customJob("gs://vto-it/bad", "bad");
  body["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["acceleratorType"] = "NVIDIA_TESLA_T5";
  try {
    vertex->createJob(kWhere, JobKind::Custom, body);
    ADD_FAILURE() << "expected ApiError";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.httpStatus(), 400);
    EXPECT_EQ(error.status(), "INVALID_ARGUMENT");
    EXPECT_NE(error.message().find("acceleratorType"), std::string::npos);
    EXPECT_FALSE(error.isRetryable());
  }
  EXPECT_EQ(vertex->requests(), 1);
}

// A quota of 3 creations per 2 seconds stands in for Vertex's per-minute one, to keep the test short.
std::vector<std::string> quotaFlags() { return {"--create-quota-per-minute", "3", "--create-quota-window", "2s"}; }

TEST(VertexPacing, WithoutPacingABurstIsRejectedByTheQuota) {
  auto dir = testing::makeTempDir("vto-vertex-unpaced");
  testing::EmulatorProcess emulator(quotaFlags(), dir + "/emulator.log");
  RealClock clock;
  CppRestTransport http;
  CachedTokenSource tokens(std::make_unique<MetadataTokenSource>(http, clock, emulator.hostPort()), clock);
  VertexClientOptions options;
  options.endpoint = emulator.url();
  options.limits = {0, 0, 2s};  // no client-side pacing
  RestVertexClient unpaced(http, tokens, clock, options);
  for (int i = 0; i < 3; ++i) unpaced.createJob(kWhere, JobKind::Custom, customJob("gs://b/x", "burst"));
  try {
    unpaced.createJob(kWhere, JobKind::Custom, customJob("gs://b/x", "burst"));
    ADD_FAILURE() << "the 4th creation in the window was accepted";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.httpStatus(), 429);
    EXPECT_EQ(error.status(), "RESOURCE_EXHAUSTED");
  }
}

TEST(VertexPacing, APacedBurstStaysUnderTheQuota) {
  auto dir = testing::makeTempDir("vto-vertex-paced");
  testing::EmulatorProcess emulator(quotaFlags(), dir + "/emulator.log");
  RealClock clock;
  RealSleeper sleeper;
  CppRestTransport http;
  CachedTokenSource tokens(std::make_unique<MetadataTokenSource>(http, clock, emulator.hostPort()), clock);
  VertexClientOptions options;
  options.endpoint = emulator.url();
  // The client's window is a little longer than the server's: requests do not arrive in exactly
  // the rhythm they were sent.
  options.limits = {3, 600, 2500ms};
  RestVertexClient paced(http, tokens, clock, options);
  int created = 0, told = 0;
  while (created < 7) {
    try {
      paced.createJob(kWhere, JobKind::Custom, customJob("gs://b/x", "paced"));
      ++created;
    } catch (const QuotaPacingError& error) {
      // The pacer does not block; it says when to come back, as the work queue would.
      ++told;
      ASSERT_TRUE(error.retryAfter());
      sleeper.sleepFor(*error.retryAfter());
    }  // an ApiError (the server's 429) fails the test
  }
  EXPECT_GE(told, 2);
}

TEST(VertexAuth, MetadataTokensAreRefreshedWhenTheyExpire) {
  auto dir = testing::makeTempDir("vto-vertex-refresh");
  testing::EmulatorProcess emulator({"--token-lifetime", "1s"}, dir + "/emulator.log");
  RealClock clock;
  CppRestTransport http;
  CachedTokenSource tokens(std::make_unique<MetadataTokenSource>(http, clock, emulator.hostPort()), clock,
                           std::chrono::seconds(0));
  VertexClientOptions options;
  options.endpoint = emulator.url();
  RestVertexClient vertex(http, tokens, clock, options);
  auto first = tokens.token().value;
  vertex.listJobs(kWhere, JobKind::Custom, {});
  // Keep calling until the first token has expired: every call must still succeed.
  bool refreshed = waitFor(
      [&] {
        vertex.listJobs(kWhere, JobKind::Custom, {});
        return tokens.token().value != first;
      },
      20s, 100ms);
  EXPECT_TRUE(refreshed);
  EXPECT_NO_THROW(vertex.listJobs(kWhere, JobKind::Custom, {}));
}

TEST(VertexAuth, ServiceAccountJwtIsExchangedAtTheKeysTokenUri) {
  auto dir = testing::makeTempDir("vto-vertex-jwt");
  auto keys = testing::generateRsaKeyPair();
  std::ofstream(dir + "/public.pem") << keys.publicPem;
  testing::EmulatorProcess emulator({"--trusted-public-key", dir + "/public.pem"}, dir + "/emulator.log");
  std::ofstream(dir + "/key.json") << json{{"type", "service_account"},
                                           {"client_email", "vto@demo-project.iam.gserviceaccount.com"},
                                           {"private_key_id", "k1"},
                                           {"private_key", keys.privatePem},
                                           {"token_uri", emulator.url() + "/token"}}
                                          .dump();
  RealClock clock;
  CppRestTransport http;
  auto tokens = defaultTokenSource(http, clock, [&](const std::string& name) -> std::optional<std::string> {
    if (name == "GOOGLE_APPLICATION_CREDENTIALS") return dir + "/key.json";
    return std::nullopt;
  });
  VertexClientOptions options;
  options.endpoint = emulator.url();
  RestVertexClient vertex(http, *tokens, clock, options);
  EXPECT_NO_THROW(vertex.listJobs(kWhere, JobKind::Custom, {}));

  // A key the token endpoint does not trust is refused.
  auto stranger = testing::generateRsaKeyPair();
  ServiceAccountTokenSource untrusted(http, clock, {"x@p.iam.gserviceaccount.com", stranger.privatePem, "", emulator.url() + "/token"});
  EXPECT_THROW(untrusted.token(), AuthError);
  auto log = testing::readWholeFile(dir + "/emulator.log");
  EXPECT_EQ(log.find("PRIVATE KEY"), std::string::npos);
}

// Runs last (gtest keeps declaration order): every token the shared emulator issued to these tests
// and the private key material must be absent from every log written.
TEST_F(VertexAgainstEmulator, LogsHoldNoTokenOrKey) {
  auto vertex = client();
  control("POST", "faults", {{"unavailable", 1}, {"throttled", 1}});
  for (int fault = 0; fault < 2; ++fault) EXPECT_THROW(vertex->listJobs(kWhere, JobKind::Custom, {}), ApiError);
  vertex->listJobs(kWhere, JobKind::Custom, {});
  tokens_->invalidate();
  vertex->listJobs(kWhere, JobKind::Custom, {});
  auto issued = recorded_->seen();
  ASSERT_GE(issued.size(), 2u);
  spdlog::default_logger()->flush();
  for (const auto& path : {*dir_ + "/client.log", *dir_ + "/emulator.log", *dir_ + "/fake-gcs.log"}) {
    auto log = testing::readWholeFile(path);
    EXPECT_FALSE(log.empty()) << path << " should hold the request log";
    for (const auto& token : issued) EXPECT_EQ(log.find(token), std::string::npos) << "token found in " << path;
    EXPECT_EQ(log.find("ya29."), std::string::npos) << "a token prefix appears in " << path;
    EXPECT_EQ(log.find("PRIVATE KEY"), std::string::npos) << path;
  }
}

}  // namespace
}  // namespace vto::vertex
