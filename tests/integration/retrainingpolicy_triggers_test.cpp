// The polled triggers end to end: kubectl -> real API server -> vto run (as the chart's
// ServiceAccount) -> fake-gcs-server, whose objects the test writes (newData), and Debian's Prometheus
// on loopback scraping a test exporter whose value the test sets (metric). Polls run on a simulated
// clock (`vto run --clock-offset-file`): the test jumps the operator one pollInterval ahead and waits
// until status says the poll happened, so no test waits minutes.
#include <gtest/gtest.h>
#include <signal.h>

#include <cpprest/http_listener.h>

#include <filesystem>
#include <fstream>
#include <mutex>

#include "base/rfc3339.h"
#include "crd/timestamp.h"
#include "tests/support/operator_stack.h"
#include "tests/support/ports.h"
#include "tests/support/simulated_clock.h"
#include "tests/support/wait.h"
#include "vertex/gcs_client.h"

namespace vto::testing {
namespace {

using nlohmann::json;
using std::chrono::minutes;
using std::chrono::seconds;

OperatorStack& stack() {
  static OperatorStack shared({"--queue-time", "1s", "--steps", "4", "--step-time", "200ms"});
  static bool installed = (shared.useChartServiceAccount(), true);
  (void)installed;
  return shared;
}

class NewDataTriggerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ns = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::transform(ns.begin(), ns.end(), ns.begin(), [](char c) { return static_cast<char>(std::tolower(c)); });
    ns = "rtd-" + ns.substr(0, 40);
    stack().createNamespace(ns);
    gcs = std::make_unique<vertex::RestGcsClient>(http, stack().gcs().url(), nullptr);
    gcs->ensureBucket(bucket);
    clock = std::make_unique<SimulatedClock>(stack().dir() + "/clock-offset");
    startOperator();
  }
  void TearDown() override {
    stack().cluster().kubectl("-n " + ns + " delete retrainingpolicies --all --wait=false");
    stack().stopOperator(SIGTERM);
  }
  void startOperator() {
    stack().startOperator({"--clock-offset-file", stack().dir() + "/clock-offset"});
  }
  std::string diagnose() {
    return stack().cluster().kubectl("-n " + ns + " get rtp -o yaml").output +
           stack().cluster().kubectl("-n " + ns + " get trainingruns").output +
           stack().cluster().kubectl("-n " + ns + " get events").output + stack().operatorLog();
  }
  std::string prefix() const { return ns + "/in/"; }
  void upload(const std::string& name, const std::string& content = "0123456789") {
    gcs->upload(bucket, prefix() + name, content);
  }
  // `newData` fields under triggers.newData (YAML flow, without braces).
  void applyPolicy(const std::string& newData, const std::string& extra = "") {
    std::string yaml = "apiVersion: vto.dev/v1beta1\nkind: RetrainingPolicy\nmetadata:\n  name: data\n  namespace: " +
                       ns +
                       "\nspec:\n  template:\n    spec:\n      trainer:\n        container:\n"
                       "          imageUri: us-central1-docker.pkg.dev/test-project/train/model:1\n"
                       "      resources:\n        machineType: n1-standard-4\n"
                       "      baseOutputDirectory: gs://test-bucket/" + ns + "\n"
                       "  triggers:\n    newData: {gcsPrefix: \"gs://" + bucket + "/" + prefix() +
                       "\", pollInterval: 10m" + (newData.empty() ? "" : ", " + newData) + "}\n" + extra;
    std::string path = stack().dir() + "/" + ns + ".yaml";
    std::ofstream(path) << yaml;
    stack().kubectlOk("apply -f '" + path + "'");
    stack().kubectlOk("-n " + ns + " wait --for=condition=Valid rtp/data --timeout=60s");
  }
  json status() {
    return json::parse(stack().kubectlOk("-n " + ns + " get rtp data -o json")).value("status", json::object());
  }
  std::optional<Clock::time_point> lastPoll() {
    auto mark = status().value("dataWatermark", json::object());
    if (!mark.contains("lastPollTime")) return std::nullopt;
    return parseRfc3339(mark["lastPollTime"].get<std::string>());
  }
  // Waits for the first poll, then for each later one: jumps a pollInterval ahead and waits until
  // status shows a poll at or after the jump.
  void firstPoll() {
    ASSERT_TRUE(waitFor([&] { return lastPoll().has_value(); }, seconds(60))) << diagnose();
  }
  void nextPoll(Clock::duration by = minutes(10) + seconds(1)) {
    auto target = clock->now() + by;
    clock->jumpTo(target);
    ASSERT_TRUE(waitFor([&] {
      auto last = lastPoll();
      return last && *last >= target - seconds(1);
    }, seconds(60), std::chrono::milliseconds(200))) << diagnose();
  }
  std::map<std::string, json> runs() {
    auto out = stack().cluster().kubectl("-n " + ns + " get trainingruns -l vto.dev/retraining-policy=data -o json");
    std::map<std::string, json> byName;
    if (out.exitCode != 0) return byName;
    json list = json::parse(out.output);  // a named list: the loop must not run over a destroyed temporary
    for (const auto& run : list["items"]) byName[run["metadata"]["name"].get<std::string>()] = run;
    return byName;
  }
  // Waits until the policy has `count` runs.
  bool waitForRuns(size_t count) {
    return waitFor([&] { return runs().size() >= count; }, seconds(60), std::chrono::milliseconds(200));
  }
  // The newest object's creation time under the prefix, from the server.
  std::string newestCreated() {
    std::string newest;
    for (const auto& o : gcs->listObjects(bucket, prefix())) newest = std::max(newest, o.timeCreated);
    return newest;
  }
  static std::string runNameFor(const std::string& timeCreated) {
    auto t = parseRfc3339(timeCreated);
    return "data-" + std::to_string(std::chrono::floor<seconds>(t).time_since_epoch().count());
  }

  std::string ns;
  const std::string bucket = "trigger-data";
  vertex::CppRestTransport http;
  std::unique_ptr<vertex::GcsClient> gcs;
  std::unique_ptr<SimulatedClock> clock;
};

TEST_F(NewDataTriggerTest, ExistingDataDoesNotFireAndTheSecondOfTwoFiresOnce) {
  upload("old-1");
  upload("old-2");
  applyPolicy("minNewObjects: 2");
  firstPoll();
  EXPECT_EQ(status()["dataWatermark"]["name"], prefix() + "old-2") << diagnose();
  nextPoll();
  EXPECT_TRUE(runs().empty()) << diagnose();

  upload("new-1");
  nextPoll();
  EXPECT_TRUE(runs().empty()) << diagnose();
  EXPECT_EQ(status()["dataWatermark"]["pendingObjects"], 1);

  upload("new-2");
  auto newest = newestCreated();
  nextPoll();
  ASSERT_TRUE(waitForRuns(1)) << diagnose();
  auto all = runs();
  ASSERT_EQ(all.size(), 1u);
  const auto& [name, run] = *all.begin();
  EXPECT_EQ(name, runNameFor(newest));
  EXPECT_EQ(run["metadata"]["annotations"]["vto.dev/trigger-reason"], "NewData");
  EXPECT_EQ(parseRfc3339(run["metadata"]["annotations"]["vto.dev/data-watermark"].get<std::string>()), parseRfc3339(newest));
  EXPECT_EQ(status()["dataWatermark"]["pendingObjects"], 0);
  stack().kubectlOk("-n " + ns + " wait --for=condition=TriggersHealthy rtp/data --timeout=10s");

  // Once: later polls without new data make nothing.
  ASSERT_TRUE(stack().waitForPhase(ns, name, "Succeeded")) << diagnose();
  nextPoll();
  nextPoll();
  EXPECT_EQ(runs().size(), 1u) << diagnose();
  auto metrics = runShell("curl -sf " + stack().metricsUrl()).output;
  EXPECT_NE(metrics.find("vto_retrainingpolicy_trigger_healthy{namespace=\"" + ns +
                         "\",policy=\"data\",trigger=\"newData\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("vto_retrainingpolicy_data_pending_objects{namespace=\"" + ns + "\",policy=\"data\"} 0"),
            std::string::npos);
}

TEST_F(NewDataTriggerTest, ABurstMakesOneRunAndARestartReFiresNothing) {
  applyPolicy("");
  firstPoll();
  for (int i = 0; i < 50; ++i) upload("part-" + std::to_string(1000 + i));
  auto newest = newestCreated();
  nextPoll();
  ASSERT_TRUE(waitForRuns(1)) << diagnose();
  EXPECT_EQ(runs().begin()->first, runNameFor(newest));

  stack().stopOperator(SIGKILL);
  startOperator();
  nextPoll();
  nextPoll();
  EXPECT_EQ(runs().size(), 1u) << diagnose();
}

TEST_F(NewDataTriggerTest, QuietPeriodDelaysTheRunUntilUploadsStop) {
  applyPolicy("pollInterval: 1m, quietPeriod: 5m", "  concurrencyPolicy: Allow\n  maxActiveRuns: 5\n");
  firstPoll();
  upload("a");
  nextPoll(minutes(1) + seconds(1));
  nextPoll(minutes(3));
  EXPECT_TRUE(runs().empty());
  upload("b");  // still arriving: the quiet period starts again
  nextPoll(minutes(1) + seconds(1));
  nextPoll(minutes(3));
  EXPECT_TRUE(runs().empty()) << diagnose();
  auto newest = newestCreated();
  nextPoll(minutes(3));
  ASSERT_TRUE(waitForRuns(1)) << diagnose();
  EXPECT_EQ(runs().begin()->first, runNameFor(newest));
}

TEST_F(NewDataTriggerTest, TenThousandObjectsAreListedInPages) {
  // The 10,000 objects are seeded from files into a second fake-gcs-server on its filesystem backend
  // (uploaded one by one to the in-memory one, they take minutes), and the operator uses that server.
  const int count = 10000;
  stack().stopOperator(SIGTERM);
  auto seed = std::filesystem::path(stack().dir()) / "seed-10000";
  std::filesystem::create_directories(seed / bucket / prefix());
  std::filesystem::create_directories(seed / "test-bucket");  // the triggered run's output bucket
  for (int i = 0; i < count; ++i) std::ofstream(seed / bucket / prefix() / ("o-" + std::to_string(100000 + i))) << "x";
  FakeGcsServer large(stack().dir() + "/fake-gcs-10000.log", {},
                      {"-backend", "filesystem", "-filesystem-root", stack().dir() + "/gcs-10000", "-data", seed.string()});
  gcs = std::make_unique<vertex::RestGcsClient>(http, large.url(), nullptr);
  stack().startOperator({"--clock-offset-file", stack().dir() + "/clock-offset", "--gcs-endpoint", large.url()});
  applyPolicy("minNewBytes: 3");
  firstPoll();
  EXPECT_EQ(status()["dataWatermark"]["name"], prefix() + "o-" + std::to_string(100000 + count - 1)) << diagnose();
  upload("z-1", "xy");
  nextPoll();
  EXPECT_EQ(status()["dataWatermark"]["pendingBytes"], 2);
  EXPECT_TRUE(runs().empty());
  upload("z-2", "xy");
  nextPoll();
  ASSERT_TRUE(waitForRuns(1)) << diagnose();
}

// A model's exporter: serves /metrics with the text the test sets.
class TestExporter {
 public:
  TestExporter() : port_(freeLoopbackPort()) {
    listener_ = std::make_unique<web::http::experimental::listener::http_listener>(
        "http://127.0.0.1:" + std::to_string(port_) + "/metrics");
    listener_->support(web::http::methods::GET, [this](web::http::http_request request) {
      std::string text;
      {
        std::lock_guard guard(mutex_);
        for (const auto& [key, lines] : texts_) text += lines;
      }
      request.reply(web::http::status_codes::OK, text, "text/plain; version=0.0.4");
    });
    listener_->open().wait();
  }
  ~TestExporter() { listener_->close().wait(); }
  // The exposition lines of one test (each test uses its own metric name).
  void set(const std::string& key, const std::string& lines) {
    std::lock_guard guard(mutex_);
    texts_[key] = lines;
  }
  int port() const { return port_; }

 private:
  int port_;
  std::mutex mutex_;
  std::map<std::string, std::string> texts_;
  std::unique_ptr<web::http::experimental::listener::http_listener> listener_;
};

// Debian's Prometheus on loopback scraping the exporter every second.
class PrometheusServer {
 public:
  PrometheusServer(const std::string& dir, int exporterPort) : port_(freeLoopbackPort()), dir_(dir) {
    std::string config = dir + "/prometheus-triggers.yml";
    std::ofstream(config) << "global: {scrape_interval: 1s}\nscrape_configs:\n  - job_name: model\n"
                             "    static_configs: [{targets: ['127.0.0.1:" << exporterPort << "']}]\n";
    process_ = std::make_unique<Subprocess>(
        std::vector<std::string>{"prometheus", "--config.file=" + config,
                                 "--storage.tsdb.path=" + dir + "/prometheus-triggers-data",
                                 "--web.listen-address=127.0.0.1:" + std::to_string(port_)},
        dir + "/prometheus-triggers.log");
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // The query's answer as the test sees it: how many series, and the first value ("" when none).
  std::pair<size_t, std::string> query(const std::string& expr) const {
    std::string file = dir_ + "/triggers-query.txt";
    std::ofstream(file) << expr;
    auto out = runShell("curl -s --data-urlencode query@'" + file + "' " + url() + "/api/v1/query");
    auto answer = json::parse(out.output, nullptr, false);
    if (!answer.is_object() || answer.value("status", "") != "success") return {0, "error"};
    const auto& result = answer["data"]["result"];
    if (result.empty()) return {0, ""};
    return {result.size(), result[0]["value"][1].get<std::string>()};
  }

 private:
  int port_;
  std::string dir_;
  std::unique_ptr<Subprocess> process_;
};

TestExporter& exporter() {
  static TestExporter shared;
  return shared;
}
PrometheusServer& prometheus() {
  static PrometheusServer shared(stack().dir(), exporter().port());
  return shared;
}

class MetricTriggerTest : public NewDataTriggerTest {
 protected:
  void SetUp() override {
    NewDataTriggerTest::SetUp();
    metric = "model_quality_" + std::to_string(++counter);
  }
  void TearDown() override {
    exporter().set(metric, "");
    NewDataTriggerTest::TearDown();
  }
  // Sets the exported value and waits until Prometheus answers with it.
  void setValue(const std::string& value) {
    exporter().set(metric, "# TYPE " + metric + " gauge\n" + metric + "{model=\"fraud\"} " + value + "\n");
    ASSERT_TRUE(waitFor([&] { return prometheus().query(metric).second == value; }, seconds(60)))
        << "Prometheus does not see " << metric << " = " << value;
  }
  void applyMetricPolicy(const std::string& fields, const std::string& query = "", const std::string& url = "") {
    std::string yaml = "apiVersion: vto.dev/v1beta1\nkind: RetrainingPolicy\nmetadata:\n  name: metric\n  namespace: " +
                       ns +
                       "\nspec:\n  template:\n    spec:\n      suspend: true\n      trainer:\n        container:\n"
                       "          imageUri: us-central1-docker.pkg.dev/test-project/train/model:1\n"
                       "      resources:\n        machineType: n1-standard-4\n"
                       "      baseOutputDirectory: gs://test-bucket/" + ns + "\n"
                       "  triggers:\n    metric: {prometheusUrl: \"" + (url.empty() ? prometheus().url() : url) +
                       "\", query: '" + (query.empty() ? metric : query) + "', pollInterval: 1m, " + fields + "}\n";
    std::string path = stack().dir() + "/" + ns + "-metric.yaml";
    std::ofstream(path) << yaml;
    stack().kubectlOk("apply -f '" + path + "'");
    stack().kubectlOk("-n " + ns + " wait --for=condition=Valid rtp/metric --timeout=60s");
  }
  json metricStatus() {
    return json::parse(stack().kubectlOk("-n " + ns + " get rtp metric -o json"))
        .value("status", json::object())
        .value("metric", json::object());
  }
  std::optional<Clock::time_point> lastEval() {
    auto m = metricStatus();
    if (!m.contains("lastEvalTime")) return std::nullopt;
    return parseRfc3339(m["lastEvalTime"].get<std::string>());
  }
  void firstEval() { ASSERT_TRUE(waitFor([&] { return lastEval().has_value(); }, seconds(60))) << diagnose(); }
  // Jumps a pollInterval ahead and waits for the evaluation.
  void nextEval() {
    auto target = clock->now() + minutes(1) + seconds(1);
    clock->jumpTo(target);
    ASSERT_TRUE(waitFor([&] {
      auto last = lastEval();
      return last && *last >= target - seconds(1);
    }, seconds(60), std::chrono::milliseconds(200))) << diagnose();
  }
  std::map<std::string, json> metricRuns() {
    auto out = stack().cluster().kubectl("-n " + ns + " get trainingruns -l vto.dev/retraining-policy=metric -o json");
    std::map<std::string, json> byName;
    if (out.exitCode != 0) return byName;
    json list = json::parse(out.output);  // a named list: the loop must not run over a destroyed temporary
    for (const auto& run : list["items"]) byName[run["metadata"]["name"].get<std::string>()] = run;
    return byName;
  }
  std::string healthy() {
    auto conditions = json::parse(stack().kubectlOk("-n " + ns + " get rtp metric -o json"))
                          .value("status", json::object())
                          .value("conditions", json::array());
    for (const auto& c : conditions)
      if (c["type"] == "TriggersHealthy") return c["status"].get<std::string>() + "/" + c["reason"].get<std::string>();
    return "";
  }

  std::string metric;
  static inline int counter = 0;
};

TEST_F(MetricTriggerTest, HealthyThenAShortBreachThenOneThatHoldsMakesOneRun) {
  setValue("0.9");
  applyMetricPolicy("below: 0.85, for: 3m");
  firstEval();
  nextEval();
  EXPECT_EQ(metricStatus()["lastValue"], 0.9);
  EXPECT_TRUE(metricRuns().empty());
  EXPECT_EQ(healthy(), "True/Healthy");

  // A breach shorter than `for`.
  setValue("0.5");
  nextEval();
  EXPECT_TRUE(metricStatus().contains("breachingSince")) << diagnose();
  nextEval();
  setValue("0.9");
  nextEval();
  EXPECT_FALSE(metricStatus().contains("breachingSince"));
  EXPECT_TRUE(metricRuns().empty()) << diagnose();

  // A breach that holds: one run.
  setValue("0.5");
  for (int i = 0; i < 4; ++i) nextEval();
  ASSERT_TRUE(waitFor([&] { return metricRuns().size() == 1; }, seconds(30))) << diagnose();
  const auto run = metricRuns().begin()->second;
  EXPECT_EQ(run["metadata"]["annotations"]["vto.dev/trigger-reason"], "Metric");
  // Still breaching while that run is active (it is suspended, so it stays active): no second run.
  for (int i = 0; i < 5; ++i) nextEval();
  EXPECT_EQ(metricRuns().size(), 1u) << diagnose();
}

TEST_F(MetricTriggerTest, NoDataAndNaNNeverFire) {
  exporter().set(metric, "");
  applyMetricPolicy("below: 0.85, for: 0s");
  firstEval();
  nextEval();
  EXPECT_FALSE(metricStatus().contains("lastValue"));
  setValue("NaN");
  nextEval();
  nextEval();
  EXPECT_FALSE(metricStatus().contains("lastValue"));
  EXPECT_TRUE(metricRuns().empty()) << diagnose();
  EXPECT_EQ(healthy(), "True/Healthy");
}

TEST_F(MetricTriggerTest, TwoSeriesAreAmbiguous) {
  exporter().set(metric, "# TYPE " + metric + " gauge\n" + metric + "{replica=\"a\"} 0.5\n" + metric +
                             "{replica=\"b\"} 0.5\n");
  ASSERT_TRUE(waitFor([&] { return prometheus().query(metric).first == 2; }, seconds(60)));
  applyMetricPolicy("below: 0.85, for: 0s");
  firstEval();
  ASSERT_TRUE(waitFor([&] { return healthy() == "False/MetricQueryAmbiguous"; }, seconds(30))) << diagnose();
  nextEval();
  EXPECT_TRUE(metricRuns().empty());
}

TEST_F(MetricTriggerTest, PrometheusDownIsUnhealthyAfterTheErrorBudgetAndNeverARun) {
  applyMetricPolicy("below: 0.85, for: 0s, maxConsecutiveErrors: 3", "",
                    "http://127.0.0.1:" + std::to_string(freeLoopbackPort()));
  firstEval();
  nextEval();
  EXPECT_EQ(healthy(), "True/Healthy");  // two failures: within the budget
  EXPECT_EQ(metricStatus()["consecutiveErrors"], 2);
  nextEval();
  EXPECT_EQ(healthy(), "False/MetricQueryFailed") << diagnose();
  auto events = stack().cluster().kubectl("-n " + ns + " get events --field-selector reason=MetricQueryFailed").output;
  EXPECT_NE(events.find("MetricQueryFailed"), std::string::npos) << events;
  EXPECT_TRUE(metricRuns().empty());
}

// A token for an authenticated Prometheus: the operator (as the chart's ServiceAccount) reads only
// the Secrets that the chart's metricTokenSecrets grants, and never logs the token.
TEST_F(MetricTriggerTest, ATokenSecretIsReadOnlyWhereTheChartGrantsIt) {
  stack().useChartServiceAccount({"metricTokenSecrets[0].namespace=" + ns, "metricTokenSecrets[0].names[0]=prom-token"});
  stack().stopOperator(SIGTERM);
  startOperator();
  for (std::string name : {"prom-token", "other-token"}) {
    stack().kubectlOk("-n " + ns + " create secret generic " + name + " --from-literal=token=s3cr3t-" + name);
  }
  setValue("0.95");
  applyMetricPolicy("below: 0.85, for: 0s, maxConsecutiveErrors: 1, bearerTokenSecret: {name: prom-token, key: token}");
  firstEval();
  EXPECT_EQ(healthy(), "True/Healthy") << diagnose();
  EXPECT_EQ(metricStatus()["consecutiveErrors"], 0) << diagnose();

  applyMetricPolicy("below: 0.85, for: 0s, maxConsecutiveErrors: 1, bearerTokenSecret: {name: other-token, key: token}");
  nextEval();
  EXPECT_EQ(healthy(), "False/MetricQueryFailed") << diagnose();
  auto rtp = stack().kubectlOk("-n " + ns + " get rtp metric -o json");
  EXPECT_NE(rtp.find("cannot read the Secret " + ns + "/other-token"), std::string::npos) << rtp;
  EXPECT_NE(rtp.find("give the operator get on it"), std::string::npos) << rtp;
  EXPECT_EQ(stack().operatorLog().find("s3cr3t"), std::string::npos) << "a token reached the log";
  EXPECT_TRUE(metricRuns().empty());
}

}  // namespace
}  // namespace vto::testing
