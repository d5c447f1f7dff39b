#include "vertex/request_observer.h"

#include <gtest/gtest.h>

#include "tests/fakes/clock_fake.h"
#include "vertex/api_error.h"

namespace vto::vertex {
namespace {

HttpRequest request(const std::string& method, const std::string& url) {
  HttpRequest r;
  r.method = method;
  r.url = url;
  return r;
}

TEST(RequestObserverTest, NamesVertexMethodsFromVerbAndPath) {
  const std::string base = "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1/";
  EXPECT_EQ(vertexMethodOf(request("POST", base + "customJobs")), "CreateCustomJob");
  EXPECT_EQ(vertexMethodOf(request("GET", base + "customJobs?filter=labels.a%3D%22b%22&pageSize=100")), "ListCustomJobs");
  EXPECT_EQ(vertexMethodOf(request("GET", base + "customJobs/123")), "GetCustomJob");
  EXPECT_EQ(vertexMethodOf(request("POST", base + "customJobs/123:cancel")), "CancelCustomJob");
  EXPECT_EQ(vertexMethodOf(request("DELETE", base + "hyperparameterTuningJobs/9")), "DeleteHyperparameterTuningJob");
  EXPECT_EQ(vertexMethodOf(request("GET", base + "hyperparameterTuningJobs")), "ListHyperparameterTuningJobs");
  EXPECT_EQ(vertexMethodOf(request("GET", base + "customJobs/123/operations/456")), "GetOperation");
  // Anything else is one bounded value, whatever the URL holds.
  EXPECT_EQ(vertexMethodOf(request("GET", base + "datasets/1")), "Other");
  EXPECT_EQ(vertexMethodOf(request("PATCH", base + "customJobs/123")), "Other");
}

TEST(RequestObserverTest, NamesModelRegistryMethods) {
  const std::string base = "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1/";
  EXPECT_EQ(vertexMethodOf(request("POST", base + "models:upload")), "UploadModel");
  EXPECT_EQ(vertexMethodOf(request("GET", base + "models/fraud")), "GetModel");
  EXPECT_EQ(vertexMethodOf(request("GET", base + "models/fraud@champion")), "GetModel");
  EXPECT_EQ(vertexMethodOf(request("GET", base + "models/fraud:listVersions?filter=labels.a%3D%22b%22")), "ListModelVersions");
  EXPECT_EQ(vertexMethodOf(request("POST", base + "models/fraud@7:mergeVersionAliases")), "MergeVersionAliases");
  EXPECT_EQ(vertexMethodOf(request("POST", base + "models/fraud@7/evaluations:import")), "ImportModelEvaluation");
  EXPECT_EQ(vertexMethodOf(request("GET", base + "models/fraud/evaluations?pageSize=5")), "ListModelEvaluations");
  EXPECT_EQ(vertexMethodOf(request("GET", base + "models/fraud/operations/555")), "GetOperation");
  EXPECT_EQ(vertexMethodOf(request("DELETE", base + "models/fraud")), "Other");
  EXPECT_EQ(vertexMethodOf(request("GET", base + "models/fraud:export")), "Other");
  EXPECT_EQ(vertexMethodOf(request("GET", base + "models/fraud/evaluations/3/slices")), "Other");
}

TEST(RequestObserverTest, NamesCloudLoggingMethods) {
  EXPECT_EQ(loggingMethodOf(request("POST", "https://logging.googleapis.com/v2/entries:list")), "ListLogEntries");
  EXPECT_EQ(loggingMethodOf(request("POST", "http://127.0.0.1:8089/v2/entries:list")), "ListLogEntries");
  EXPECT_EQ(loggingMethodOf(request("POST", "https://logging.googleapis.com/v2/entries:write")), "Other");
  EXPECT_EQ(loggingMethodOf(request("GET", "https://logging.googleapis.com/v2/entries:list")), "Other");
}

TEST(RequestObserverTest, NamesCloudStorageMethods) {
  const std::string base = "http://127.0.0.1:4443";
  EXPECT_EQ(gcsMethodOf(request("GET", base + "/storage/v1/b/bucket/o?prefix=run%2Fcheckpoints%2F")), "ListObjects");
  EXPECT_EQ(gcsMethodOf(request("GET", base + "/storage/v1/b/bucket/o/run%2Fckpt-1")), "GetObject");
  EXPECT_EQ(gcsMethodOf(request("POST", base + "/upload/storage/v1/b/bucket/o?uploadType=media&name=x")), "InsertObject");
  EXPECT_EQ(gcsMethodOf(request("POST", base + "/storage/v1/b?project=p")), "InsertBucket");
  EXPECT_EQ(gcsMethodOf(request("DELETE", base + "/storage/v1/b/bucket/o/x")), "Other");
}

class Recorder final : public RequestObserver {
 public:
  void requestDone(const std::string& method, const std::string& code, Clock::duration took) override {
    calls.push_back(method + " " + code + " " + std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
  }
  void quotaWaited(Clock::duration) override {}
  void timedOut() override { calls.push_back("timed out"); }
  std::vector<std::string> calls;
};

class SlowTransport final : public HttpTransport {
 public:
  SlowTransport(testing::FakeClock& clock, int status) : clock_(clock), status_(status) {}
  HttpResponse send(const HttpRequest&) override {
    clock_.advance(std::chrono::milliseconds(250));
    if (status_ == 0) throw TransportError("connection refused");
    if (status_ < 0) throw TimeoutError("no answer within 250 ms");
    HttpResponse response;
    response.status = status_;
    return response;
  }

 private:
  testing::FakeClock& clock_;
  int status_;
};

TEST(RequestObserverTest, ReportsEveryExchangeWithItsStatusAndDurationAndErrorsAsError) {
  testing::FakeClock clock;
  Recorder recorder;
  SlowTransport answers(clock, 429), refuses(clock, 0);
  ObservedTransport observed(answers, clock, recorder, vertexMethodOf);
  ObservedTransport broken(refuses, clock, recorder, vertexMethodOf);
  EXPECT_EQ(observed.send(request("POST", "https://h/v1/projects/p/locations/l/customJobs")).status, 429);
  EXPECT_THROW(broken.send(request("GET", "https://h/v1/projects/p/locations/l/customJobs/1")), TransportError);
  EXPECT_EQ(recorder.calls, (std::vector<std::string>{"CreateCustomJob 429 250", "GetCustomJob <error> 250"}));
}

TEST(RequestObserverTest, ASilentPeerIsReportedAsATimeoutBesideTheError) {
  testing::FakeClock clock;
  Recorder recorder;
  SlowTransport silent(clock, -1);
  ObservedTransport observed(silent, clock, recorder, vertexMethodOf);
  EXPECT_THROW(observed.send(request("GET", "https://h/v1/projects/p/locations/l/customJobs")), TimeoutError);
  EXPECT_EQ(recorder.calls, (std::vector<std::string>{"ListCustomJobs <error> 250", "timed out"}));
}

}  // namespace
}  // namespace vto::vertex
