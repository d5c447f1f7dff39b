#include "vertex/logging_client.h"

#include <gtest/gtest.h>

#include "base/rfc3339.h"
#include "tests/fakes/clock_fake.h"
#include "tests/fakes/logging_fake_client.h"
#include "tests/fakes/vertex_fake_token_source.h"
#include "tests/fakes/vertex_fake_transport.h"
#include "vertex/api_error.h"
#include "vertex/rate_limiter.h"

namespace vto::vertex {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Shaped as Cloud Logging returns a Vertex training job's entries (LogEntry in
// third_party/logging-api/logging.v2.entries-list.subset.json).
const std::string kPage = R"({"entries": [
  {"insertId": "abc1", "timestamp": "2026-12-05T10:00:03.123456789Z", "severity": "ERROR",
   "textPayload": "Traceback (most recent call last):", "logName": "projects/my-project/logs/workerpool0-0",
   "resource": {"type": "ml_job", "labels": {"job_id": "8812345", "task_name": "workerpool0-0", "project_id": "my-project"}},
   "labels": {"compute.googleapis.com/resource_id": "1"}, "receiveTimestamp": "2026-12-05T10:00:04Z"},
  {"insertId": "abc2", "timestamp": "2026-12-05T10:00:04Z", "severity": 200,
   "jsonPayload": {"message": "step 3 loss=0.25", "levelname": "INFO"},
   "resource": {"type": "ml_job", "labels": {"job_id": "8812345"}},
   "labels": {"ml.googleapis.com/task_name": "workerpool1-2"}},
  {"insertId": "abc3", "timestamp": "yesterday", "severity": {"x": 1}, "textPayload": 42, "resource": "odd"}],
  "nextPageToken": "page-2"})";

class LoggingClientTest : public ::testing::Test {
 protected:
  RestLoggingClient client(LoggingClientOptions options = {}) {
    return RestLoggingClient(transport_, tokens_, clock_, std::move(options));
  }
  ListLogEntriesRequest request() {
    ListLogEntriesRequest r;
    r.resourceNames = {"projects/my-project"};
    r.filter = vertexJobLogFilter({.jobId = "8812345"});
    r.pageSize = 100;
    return r;
  }

  testing::FakeClock clock_;
  testing::ScriptedTransport transport_;
  testing::CountingTokenSource tokens_;
};

TEST_F(LoggingClientTest, PostsEntriesListAndDecodesEntries) {
  transport_.enqueue(200, kPage);
  auto req = request();
  req.pageToken = "page-1";
  auto page = client().listEntries(req);
  auto sent = transport_.requests().at(0);
  EXPECT_EQ(sent.method, "POST");
  EXPECT_EQ(sent.url, "https://logging.googleapis.com/v2/entries:list");
  EXPECT_EQ(sent.headers.at("Authorization"), "Bearer token-1");
  EXPECT_EQ(sent.headers.at("Content-Type"), "application/json");
  EXPECT_EQ(sent.maxBodyBytes, 4u << 20);  // a page is bounded in bytes
  EXPECT_EQ(json::parse(sent.body), json::parse(R"({"resourceNames": ["projects/my-project"],
      "filter": "resource.type=\"ml_job\" AND resource.labels.job_id=\"8812345\"", "orderBy": "timestamp asc",
      "pageSize": 100, "pageToken": "page-1"})"));
  ASSERT_EQ(page.entries.size(), 3u);
  const auto& error = page.entries[0];
  EXPECT_EQ(error.insertId, "abc1");
  EXPECT_EQ(error.severity, LogSeverity::Error);
  EXPECT_EQ(error.message, "Traceback (most recent call last):");
  EXPECT_EQ(error.replica(), "workerpool0-0");
  EXPECT_EQ(error.resourceType, "ml_job");
  EXPECT_EQ(error.resourceLabels.at("job_id"), "8812345");
  EXPECT_EQ(error.labels.at("compute.googleapis.com/resource_id"), "1");
  EXPECT_EQ(error.logName, "projects/my-project/logs/workerpool0-0");
  // Nanoseconds are kept: the next filter starts exactly there.
  EXPECT_EQ(rfc3339Exact(*error.timestamp), "2026-12-05T10:00:03.123456789Z");
  const auto& info = page.entries[1];
  EXPECT_EQ(info.severity, LogSeverity::Info);      // by number
  EXPECT_EQ(info.message, "step 3 loss=0.25");      // jsonPayload.message without a textPayload
  EXPECT_EQ(info.replica(), "workerpool1-2");       // the older label
  const auto& odd = page.entries[2];                // wrong types read as absent, never thrown
  EXPECT_FALSE(odd.timestamp);
  EXPECT_EQ(odd.severity, LogSeverity::Default);
  EXPECT_EQ(odd.message, "");
  EXPECT_EQ(odd.replica(), "");
  EXPECT_EQ(page.nextPageToken, "page-2");
}

TEST_F(LoggingClientTest, BoundsMessagesAndRefusesOversizedRequestsBeforeSending) {
  std::string longMessage = std::string(10, 'x') + "\xc3\xa9" + std::string(10, 'y');  // é at bytes 10-11
  json page;
  page["entries"] = json::array({json{{"textPayload", longMessage}}});
  transport_.enqueue(200, page.dump());
  auto logging = client({.maxMessageBytes = 11});
  EXPECT_EQ(logging.listEntries(request()).entries.at(0).message, std::string(10, 'x'));  // not cut inside é
  auto many = request();
  many.resourceNames.assign(101, "projects/my-project");
  auto hostile = request();
  hostile.resourceNames = {"projects/my-project/../../x"};
  auto longFilter = request();
  longFilter.filter = std::string(20001, 'a');
  auto badOrder = request();
  badOrder.orderBy = "insertId";
  auto bigPage = request();
  bigPage.pageSize = 1001;
  for (const auto& bad : {many, hostile, longFilter, badOrder, bigPage, ListLogEntriesRequest{}}) {
    EXPECT_THROW(logging.listEntries(bad), ApiError);
  }
  EXPECT_EQ(transport_.requests().size(), 1u);
}

TEST_F(LoggingClientTest, EndpointIsOverridableAndChecked) {
  transport_.enqueue(200, "{}");
  client({.endpoint = "http://127.0.0.1:9999/"}).listEntries(request());
  EXPECT_EQ(transport_.requests().at(0).url, "http://127.0.0.1:9999/v2/entries:list");
  EXPECT_THROW(client({.endpoint = "http://logging.internal:80"}), std::invalid_argument);
  EXPECT_NO_THROW(client({.endpoint = "http://logging.internal:80", .allowInsecure = true}));
  EXPECT_THROW(client({.endpoint = "https://user@logging.googleapis.com"}), std::invalid_argument);
}

TEST_F(LoggingClientTest, ErrorsAreTypedAndThePacerHandsBackADelay) {
  transport_.enqueue(403, R"({"error": {"code": 403, "status": "PERMISSION_DENIED", "message": "no logging.logEntries.list"}})");
  transport_.enqueue(429, "{}", {{"retry-after", "3"}});
  transport_.enqueue(200, "<html>proxy</html>");
  auto logging = client({.requestsPerMinute = 4});
  try {
    logging.listEntries(request());
    FAIL() << "expected ApiError";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.httpStatus(), 403);
    EXPECT_FALSE(error.retryable());
  }
  try {
    logging.listEntries(request());
    FAIL() << "expected ApiError";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.retryAfter(), 3000ms);
  }
  EXPECT_THROW(logging.listEntries(request()), ApiError);
  transport_.enqueue(200, "{}");
  logging.listEntries(request());
  try {
    logging.listEntries(request());
    FAIL() << "expected QuotaPacingError";
  } catch (const QuotaPacingError& error) {
    EXPECT_EQ(error.retryAfter(), 60000ms);
  }
  EXPECT_EQ(logging.requests(), 4);
}

TEST(VertexJobLogFilter, EveryValueIsCheckedNeverInterpolatedRaw) {
  EXPECT_EQ(vertexJobLogFilter({.jobId = "8812345"}), R"(resource.type="ml_job" AND resource.labels.job_id="8812345")");
  EXPECT_EQ(vertexJobLogFilter({.jobId = "8812345",
                                .replica = "workerpool1-12",
                                .minSeverity = LogSeverity::Error,
                                .since = parseRfc3339("2026-12-05T10:00:03.5Z")}),
            R"(resource.type="ml_job" AND resource.labels.job_id="8812345" AND )"
            R"(resource.labels.task_name="workerpool1-12" AND severity>=ERROR AND timestamp>="2026-12-05T10:00:03.5Z")");
  EXPECT_EQ(vertexJobLogFilter({.jobId = "1", .since = parseRfc3339("2026-12-05T10:00:00Z"), .until = parseRfc3339("2026-12-05T11:00:00Z")}),
            R"(resource.type="ml_job" AND resource.labels.job_id="1" AND timestamp>="2026-12-05T10:00:00Z" AND )"
            R"(timestamp<="2026-12-05T11:00:00Z")");
  for (const char* job : {"", "88a", R"(1" OR resource.type="gce_instance)", "1 2", "-1"}) {
    EXPECT_THROW(vertexJobLogFilter({.jobId = job}), std::invalid_argument) << job;
  }
  for (const char* replica : {"workerpool", "workerpool0", "workerpool0-", "workerpool-0", "workerpoolA-0",
                              R"(workerpool0-0" OR "1"="1)", "workerpool0-0 ", "chief-0", "workerpool123-0"}) {
    EXPECT_THROW(vertexJobLogFilter({.jobId = "1", .replica = replica}), std::invalid_argument) << replica;
  }
  EXPECT_TRUE(isReplicaName("workerpool3-999999"));
  EXPECT_FALSE(isReplicaName("workerpool3-1000000"));
}

TEST(LogSeverities, NamesAndNumbers) {
  EXPECT_EQ(severityFromName("warning"), LogSeverity::Warning);
  EXPECT_EQ(severityFromName("EMERGENCY"), LogSeverity::Emergency);
  EXPECT_FALSE(severityFromName("LOUD"));
  EXPECT_EQ(severityName(LogSeverity::Critical), "CRITICAL");
  EXPECT_EQ(decodeLogEntry(json::parse(R"({"severity": 400})")).severity, LogSeverity::Warning);
  EXPECT_EQ(decodeLogEntry(json::parse(R"({"severity": 401})")).severity, LogSeverity::Default);
}

TEST(CollectEntries, FollowsPagesWithinItsLimitsAndStopsOnARepeatedToken) {
  testing::FakeClock clock;
  testing::FakeLoggingClient fake;
  for (int i = 0; i < 25; ++i) {
    fake.add("7", "workerpool0-0", "2026-12-05T10:00:" + std::string(i < 10 ? "0" : "") + std::to_string(i) + "Z",
             LogSeverity::Info, "line " + std::to_string(i));
  }
  ListLogEntriesRequest request;
  request.resourceNames = {"projects/my-project"};
  request.filter = vertexJobLogFilter({.jobId = "7"});
  request.pageSize = 10;
  auto all = collectEntries(fake, request, clock);
  EXPECT_EQ(all.entries.size(), 25u);
  EXPECT_EQ(all.entries.front().message, "line 0");
  EXPECT_EQ(all.nextPageToken, "");
  auto two = collectEntries(fake, request, clock, {.maxPages = 2});
  EXPECT_EQ(two.entries.size(), 20u);
  EXPECT_EQ(two.nextPageToken, "20");  // where to go on from

  class Repeating final : public LoggingClient {
   public:
    LogEntryPage listEntries(const ListLogEntriesRequest&) override { return {{}, "same"}; }
  } repeating;
  EXPECT_THROW(collectEntries(repeating, request, clock), ApiError);
}

// An empty page with a token is "still searching" (Cloud Logging's entries.list): followed, within a bound.
TEST(FirstEntries, FollowsStillSearchingPagesWithinItsBound) {
  testing::FakeLoggingClient fake;
  fake.add("7", "workerpool0-0", "2026-12-05T10:00:01Z", LogSeverity::Error, "Traceback");
  ListLogEntriesRequest request;
  request.resourceNames = {"projects/my-project"};
  request.filter = vertexJobLogFilter({.jobId = "7"});
  fake.searchFirst(1);
  auto page = firstEntries(fake, request);
  ASSERT_EQ(page.entries.size(), 1u);
  EXPECT_EQ(fake.requests().size(), 2u);

  class Searching final : public LoggingClient {
   public:
    LogEntryPage listEntries(const ListLogEntriesRequest&) override { return {{}, "t" + std::to_string(++calls)}; }
    int calls = 0;
  } searching;
  auto none = firstEntries(searching, request, 3);
  EXPECT_TRUE(none.entries.empty());
  EXPECT_EQ(searching.calls, 3) << "bounded";
}

}  // namespace
}  // namespace vto::vertex
