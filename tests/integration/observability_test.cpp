// The shipped dashboards and alerts against a real Prometheus scraping the real operator: runs that
// succeed, fail, and get preempted and resume; then every panel query of helm/vto/dashboards/*.json
// (with its variables resolved the way Grafana would) and every alert expression of
// helm/vto/rules/vto-alerts.yaml goes to Prometheus's /api/v1/query. Each must parse; each must
// return data unless listed below with the reason; every metric a query names must be on /metrics.
// Also: `promtool check metrics` on the scraped text, and the chart's ServiceMonitor,
// PrometheusRule and dashboard ConfigMaps through a server-side dry run against prometheus-operator's
// CRDs (pinned; scripts/bootstrap.sh fetches them into build/prometheus-operator-crds/).
#include <gtest/gtest.h>
#include <signal.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include "tests/support/operator_stack.h"
#include "tests/support/ports.h"
#include "tests/support/wait.h"

namespace vto::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

const char* kNamespace = "obs";
const int kPrometheusPort = freeLoopbackPort();

const char* kRetrainNamespace = "obs-retrain";

// Metrics that may have no series in this scenario, and why.
const std::map<std::string, std::string> kAbsentMetrics = {
    {"vto_retrainingpolicy_last_schedule_time_seconds",
     "the scenario's nightly policy runs on a manual request and reaches no slot; "
     "retrainingpolicy_test checks this gauge on a simulated clock"},
    {"vto_trainingrun_capacity_failovers_total",
     "no run here fails over (a counter appears at its first increment); trainingrun_capacity_test scrapes it"},
    {"vto_model_registration_failures_total",
     "every model here registers (a counter appears at its first increment); models_test scrapes it after an "
     "ArtifactMissing, and tests/promtool fires VtoModelRegistrationFailing on it"},
    {"vto_budget_spent_usd", "no tenancy rule here has a budget; unit tests set it and tests/promtool fires the budget alerts on it"},
    {"vto_budget_limit_usd", "no tenancy rule here has a budget"},
    {"vto_trainingrun_kueue_wait_seconds",
     "no run here is Kueue's (a histogram appears at its first wait); kueue_test scrapes it after a preemption"},
    {"vto_trainingrun_kueue_evictions_total",
     "no run here is Kueue's (a counter appears at its first eviction); kueue_test scrapes it after a preemption"},
    {"vto_trainingrun_cost_usd_total",
     "a counter appears when a priced job is scraped while running; this scenario's jobs may finish between scrapes"},
};
bool absentHere(const std::string& text) {
  for (const auto& [metric, why] : kAbsentMetrics) {
    if (text.find(metric) != std::string::npos) return true;
  }
  return false;
}

// Alerts that must be quiet in a healthy scenario (their expression returns nothing), and why.
const std::map<std::string, std::string> kQuietAlerts = {
    {"VtoOperatorDown", "the operator is up and scraped"},
    {"VtoNoLeader", "the operator leads its Lease"},
    {"VtoReconcileErrorsHigh", "reconciles succeed"},
    {"VtoWorkQueueStuck", "the queue is worked off"},
    {"VtoWatchStale", "the watches bring events and are accepted"},
    {"VtoTrainingRunsFailing", "one failed run of four is below the alert's floor of three"},
    {"VtoVertexThrottling", "the emulator's quota is not exceeded"},
    {"VtoCheckpointStale", "checkpoints are seconds old"},
    {"VtoTrainingRunsWaitingForCapacity", "no run waits for capacity"},
    {"VtoRetrainingScheduleLate", "the policy's runs start on their slots"},
    {"VtoRetrainingStale", "the policy succeeded minutes ago"},
    {"VtoRetrainingTriggerBlind", "the policy's new-data and metric triggers read their sources"},
    {"VtoModelRegistrationFailing", "the policy's run registers its model at the first try"},
    {"VtoBudgetNearlySpent", "no tenancy rule has a budget here"},
    {"VtoBudgetExceeded", "no tenancy rule has a budget here"},
};
// Panels that may be empty after this scenario, by dashboard file and title, and why.
const std::map<std::pair<std::string, std::string>, std::string> kEmptyPanels = {
    // A checkpoint age exists only while a run runs; every run here has finished when queries run.
    {{"vto-trainingruns.json", "Oldest checkpoints of running runs"}, "no run is running when the queries run"},
    // Progress and ETA are exported only until a run finishes.
    {{"vto-trainingruns.json", "Progress of unfinished runs"}, "every run has finished when the queries run"},
};

std::string sourceDir() {
  const char* dir = std::getenv("VTO_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

OperatorStack& stack() {
  static OperatorStack shared({"--queue-time", "1s", "--steps", "6", "--step-time", "1s", "--cancel-time", "300ms"});
  static bool started = [] {
    shared.useChartServiceAccount();
    // The operator binds its metrics port itself (port 0, the stack's default) and logs it: metricsUrl().
    shared.startOperator({"--leader-elect", "--leader-election-namespace", "vto-system", "--checkpoint-poll-interval", "1"});
    return true;
  }();
  (void)started;
  return shared;
}

// "127.0.0.1:PORT" of the operator's /metrics, as it logged it once bound.
std::string metricsHostPort() {
  std::string url = stack().metricsUrl();  // http://127.0.0.1:PORT/metrics
  std::string rest = url.substr(url.find("://") + 3);
  return rest.substr(0, rest.find('/'));
}

// Debian's Prometheus on loopback, scraping vto every second the way the chart's ServiceMonitor does
// (job "vto", honor_labels, the pod's namespace as a target label), with the shipped rules loaded.
class PrometheusServer {
 public:
  explicit PrometheusServer(const std::string& dir) {
    std::string config = dir + "/prometheus.yml";
    std::ofstream(config) << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                             "rule_files: ['" << sourceDir() << "/helm/vto/rules/vto-alerts.yaml']\n"
                             "scrape_configs:\n"
                             "  - job_name: vto\n"
                             "    honor_labels: true\n"
                             "    static_configs:\n"
                             "      - targets: ['" << metricsHostPort() << "']\n"
                             "        labels: {namespace: vto-system}\n";
    process_ = std::make_unique<Subprocess>(
        std::vector<std::string>{"prometheus", "--config.file=" + config, "--storage.tsdb.path=" + dir + "/prometheus-data",
                                 "--web.listen-address=127.0.0.1:" + std::to_string(kPrometheusPort)},
        dir + "/prometheus.log");
    dir_ = dir;
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(kPrometheusPort); }
  // The /api/v1/query answer for `expr` (instant, now), or null when there is no JSON answer.
  json query(const std::string& expr) const {
    std::string file = dir_ + "/query.txt";
    std::ofstream(file) << expr;
    auto out = runShell("curl -s --data-urlencode query@'" + file + "' " + url() + "/api/v1/query");
    return json::parse(out.output, nullptr, false);
  }
  double scalar(const std::string& expr) const {
    auto answer = query(expr);
    if (!answer.is_object() || answer.value("status", "") != "success") return -1;
    const auto& result = answer["data"]["result"];
    if (!result.is_array() || result.empty()) return -1;
    return std::stod(result[0]["value"][1].get<std::string>());
  }

 private:
  std::unique_ptr<Subprocess> process_;
  std::string dir_;
};

std::string gpuRunManifest(const std::string& name, const std::string& extra) {
  return std::string("apiVersion: vto.dev/v1beta1\nkind: TrainingRun\nmetadata:\n  name: ") + name +
         "\n  namespace: " + kNamespace +
         "\nspec:\n  framework: pytorch\n  trainer:\n    container:\n"
         "      imageUri: us-central1-docker.pkg.dev/test-project/train/model:1\n"
         "  resources: {machineType: n1-standard-4, acceleratorType: NVIDIA_TESLA_T4, acceleratorCount: 1}\n"
         "  baseOutputDirectory: gs://test-bucket/obs/" + name + "\n" + extra;
}

void applyManifest(const std::string& name, const std::string& manifest) {
  std::string path = stack().dir() + "/" + name + ".yaml";
  std::ofstream(path) << manifest;
  stack().kubectlOk("apply -f '" + path + "'");
}

json emulatorControl(const std::string& method, const std::string& job, const std::string& verb, const std::string& body = "") {
  auto out = runShell("curl -sf -X " + method + " -H 'Content-Type: application/json' " +
                      (body.empty() ? "" : "-d '" + body + "' ") + stack().emulator().url() + "/emulator/v1/" + job + ":" + verb);
  return json::parse(out.output, nullptr, false);
}

// The job of attempt `attempt` once it runs.
std::string runningJob(const std::string& name, int attempt) {
  std::string job;
  waitFor(
      [&] {
        auto run = stack().getRun(kNamespace, name);
        if (!run.is_object() || !run.contains("status")) return false;
        for (const auto& a : run["status"].value("attempts", json::array())) {
          if (a.value("attempt", 0) == attempt && !a.value("jobName", "").empty()) job = a["jobName"];
        }
        return !job.empty() && stack().vertex().getJob(job).state == vertex::JobState::Running;
      },
      seconds(90), std::chrono::milliseconds(100));
  return job;
}

std::string scrapeMetrics() {
  return runShell("curl -sf " + stack().metricsUrl()).output;
}

struct Scenario {
  std::unique_ptr<PrometheusServer> prometheus;
  // /metrics while the spot run was running, and that plus the page after all finished: per-run
  // series exist only in the first.
  std::string runningPage, pages;
};

// Runs the scenario once, with Prometheus started before it so that it sees every transition.
Scenario& scenario() {
  static Scenario shared = [] {
    Scenario s;
    s.prometheus = std::make_unique<PrometheusServer>(stack().dir());
    auto& server = *s.prometheus;
    stack().createNamespace(kNamespace);
    EXPECT_TRUE(waitFor([&] { return server.scalar("up{job=\"vto\"}") == 1; }, seconds(60)))
        << "Prometheus does not scrape vto: " << slurp(stack().dir() + "/prometheus.log");
    // ok: succeeds. gpu: an accelerator run that succeeds. spot: preempted while running, resumes,
    // succeeds. crash: the training code fails, which is not resumed.
    applyManifest("ok", simpleRunManifest(kNamespace, "ok"));
    applyManifest("gpu", gpuRunManifest("gpu", ""));
    applyManifest("spot", gpuRunManifest("spot", "  scheduling: {strategy: Spot}\n  checkpointing: {resumeBackoff: 1s, totalSteps: 6}\n"));
    applyManifest("crash", simpleRunManifest(kNamespace, "crash"));
    // A policy that retrains now (the manual annotation), with every trigger kind so that each of
    // its series exists: a schedule, new data under a GCS prefix, and a metric from this Prometheus.
    stack().createNamespace(kRetrainNamespace);
    applyManifest("policy", std::string("apiVersion: vto.dev/v1beta1\nkind: RetrainingPolicy\nmetadata:\n") +
                                "  name: nightly\n  namespace: " + kRetrainNamespace +
                                "\n  annotations: {vto.dev/retrain-requested: \"1\"}\nspec:\n  template:\n    spec:\n"
                                "      framework: xgboost\n      trainer:\n        container:\n"
                                "          imageUri: us-central1-docker.pkg.dev/test-project/train/model:1\n"
                                "      resources: {machineType: n1-standard-4}\n"
                                "      baseOutputDirectory: gs://test-bucket/obs-retrain/nightly\n"
                                "      model:\n        model: obs-nightly\n"
                                "        servingContainer: {imageUri: us-docker.pkg.dev/vertex-ai/prediction/xgboost-cpu.1-7:latest}\n"
                                "        evaluation: {metricsFile: metrics.json}\n"
                                "  promotion: {metric: auc}\n"
                                "  triggers:\n    schedule: {cron: \"0 3 * * *\"}\n"
                                "    newData: {gcsPrefix: \"gs://test-bucket/obs-retrain-data/\", pollInterval: 10s}\n"
                                "    metric: {prometheusUrl: \"" + server.url() +
                                "\", query: \"vector(0.9)\", below: 0.5, for: 1m, pollInterval: 10s}\n");
    auto spotJob = runningJob("spot", 1);
    EXPECT_FALSE(spotJob.empty()) << stack().operatorLog();
    EXPECT_TRUE(waitFor(
        [&] {
          s.runningPage = scrapeMetrics();
          return s.runningPage.find("\nvto_checkpoint_age_seconds{") != std::string::npos &&
                 s.runningPage.find("\nvto_trainingrun_progress_ratio{") != std::string::npos &&
                 s.runningPage.find("\nvto_trainingrun_eta_timestamp_seconds{") != std::string::npos;
        },
        seconds(60)))
        << "no checkpoint age, progress or ETA for the running spot run";
    EXPECT_TRUE(emulatorControl("POST", spotJob, "fail", R"({"failureClass": "Preemption"})").is_object());
    auto crashJob = runningJob("crash", 1);
    EXPECT_FALSE(crashJob.empty()) << stack().operatorLog();
    EXPECT_TRUE(emulatorControl("POST", crashJob, "fail", R"({"failureClass": "UserError"})").is_object());
    for (auto [name, phase] : {std::pair{"ok", "Succeeded"}, {"gpu", "Succeeded"}, {"spot", "Succeeded"}, {"crash", "Failed"}}) {
      EXPECT_TRUE(stack().waitForPhase(kNamespace, name, phase, seconds(180))) << name << "\n" << stack().operatorLog();
    }
    // Prometheus has the final values once it counts four finished runs; a few more scrapes for rates.
    EXPECT_TRUE(waitFor(
        [&] { return server.scalar("sum(vto_trainingruns_finished_total{namespace=\"" + std::string(kNamespace) + "\"})") == 4; },
        seconds(60)));
    // The policy's run registered its model (the emulated job writes metrics.json) and it became champion.
    EXPECT_TRUE(waitFor([&] { return server.scalar("count(vto_model_champion_metric{job=\"vto\"})") == 1; }, seconds(120)))
        << stack().cluster().kubectl(std::string("-n ") + kRetrainNamespace + " get rtp,trun -o yaml").output;
    double samples = server.scalar("count_over_time(up{job=\"vto\"}[1h])");
    EXPECT_TRUE(waitFor([&] { return server.scalar("count_over_time(up{job=\"vto\"}[1h])") >= samples + 5; }, seconds(60)));
    s.pages = s.runningPage + scrapeMetrics();
    return s;
  }();
  return shared;
}

// Metric names a PromQL expression selects (a name directly before `{`).
std::set<std::string> metricNames(const std::string& expr) {
  static const std::regex selector(R"(([a-zA-Z_:][a-zA-Z0-9_:]*)\{)");
  std::set<std::string> names;
  for (std::sregex_iterator it(expr.begin(), expr.end(), selector), end; it != end; ++it) names.insert((*it)[1]);
  names.erase("up");  // Prometheus's own, per target
  return names;
}

bool onMetricsPage(const std::string& page, const std::string& name) {
  return page.find("\n" + name + "{") != std::string::npos || page.find("\n" + name + " ") != std::string::npos;
}

std::string replaceAll(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) text.replace(at, from.size(), to);
  return text;
}

// Resolves a dashboard's query variables in order, as Grafana does with "All" selected: each
// `label_values(SELECTOR, LABEL)` is run, and the variable becomes the alternation of the values.
std::map<std::string, std::string> resolveVariables(const json& board, const PrometheusServer& prometheus) {
  std::map<std::string, std::string> values;
  static const std::regex labelValues(R"(^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$)");
  for (const auto& variable : board["templating"]["list"]) {
    if (variable["type"] != "query") continue;
    std::string query = variable["definition"];
    for (const auto& [name, value] : values) query = replaceAll(query, "$" + name, value);
    std::smatch match;
    EXPECT_TRUE(std::regex_match(query, match, labelValues)) << board["uid"] << " variable " << variable["name"];
    std::set<std::string> found;
    auto answer = prometheus.query(match[1]);
    EXPECT_EQ(answer.value("status", ""), "success") << match[1] << "\n" << answer.dump();
    if (answer.is_object() && answer.contains("data")) {
      for (const auto& series : answer["data"]["result"]) found.insert(series["metric"].value(match[2].str(), ""));
    }
    std::string alternation;
    for (const auto& value : found) alternation += (alternation.empty() ? "" : "|") + value;
    if (!absentHere(query)) {
      EXPECT_FALSE(found.empty()) << "variable " << variable["name"] << " has no values: " << query;
    }
    values[variable["name"]] = found.empty() ? ".*" : "(" + alternation + ")";
  }
  return values;
}

bool hasData(const json& answer) {
  return answer.is_object() && answer.value("status", "") == "success" && !answer["data"]["result"].empty();
}

TEST(Observability, EveryDashboardQueryParsesAndReturnsDataAndNamesOnlyExportedMetrics) {
  auto& prometheus = *scenario().prometheus;
  const auto& page = scenario().pages;
  int queries = 0, withData = 0;
  for (const auto& entry : std::filesystem::directory_iterator(sourceDir() + "/helm/vto/dashboards")) {
    std::string file = entry.path().filename();
    auto board = json::parse(slurp(entry.path()));
    auto variables = resolveVariables(board, prometheus);
    for (const auto& panel : board["panels"]) {
      std::string title = panel["title"];
      bool panelHasData = false;
      for (const auto& target : panel["targets"]) {
        std::string expr = target["expr"];
        for (const auto& [name, value] : variables) expr = replaceAll(expr, "$" + name, value);
        expr = replaceAll(replaceAll(expr, "$__rate_interval", "1m"), "$__range", "1h");
        auto answer = prometheus.query(expr);
        ++queries;
        ASSERT_EQ(answer.value("status", ""), "success") << file << " / " << title << ": " << expr << "\n" << answer.dump();
        bool data = hasData(answer);
        withData += data;
        panelHasData = panelHasData || data;
        bool absent = absentHere(expr);
        if (!absent && !kEmptyPanels.count({file, title})) {
          EXPECT_TRUE(data) << file << " / " << title << " returns nothing: " << expr;
        }
        for (const auto& metric : metricNames(expr)) {
          if (absent) continue;
          EXPECT_TRUE(onMetricsPage(page, metric)) << file << " / " << title << " uses " << metric << ", not on /metrics";
        }
      }
      if (auto empty = kEmptyPanels.find({file, title}); empty != kEmptyPanels.end()) {
        std::cout << "allowed empty: " << file << " / " << title << ": " << empty->second << "\n";
      }
    }
  }
  std::cout << queries << " dashboard queries, " << withData << " returned data\n";
  // Annotation queries (marks on the time axis) must parse; they return data only near an event.
  for (const auto& entry : std::filesystem::directory_iterator(sourceDir() + "/helm/vto/dashboards")) {
    auto board = json::parse(slurp(entry.path()));
    auto variables = resolveVariables(board, prometheus);
    for (const auto& annotation : board["annotations"]["list"]) {
      std::string expr = annotation.value("expr", "");
      if (expr.empty()) continue;
      for (const auto& [name, value] : variables) expr = replaceAll(expr, "$" + name, value);
      auto answer = prometheus.query(expr);
      EXPECT_EQ(answer.value("status", ""), "success") << entry.path() << " annotation " << annotation["name"] << ": " << expr;
      for (const auto& metric : metricNames(expr)) EXPECT_TRUE(onMetricsPage(page, metric)) << metric;
    }
  }
  EXPECT_GT(queries, 40);
}

TEST(Observability, EveryAlertExpressionParsesUsesExportedMetricsAndIsQuietWhenHealthy) {
  auto& prometheus = *scenario().prometheus;
  const auto& page = scenario().pages;
  auto rules = YAML::LoadFile(sourceDir() + "/helm/vto/rules/vto-alerts.yaml");
  int alerts = 0;
  for (const auto& group : rules["groups"]) {
    for (const auto& rule : group["rules"]) {
      std::string name = rule["alert"].as<std::string>(), expr = rule["expr"].as<std::string>();
      ++alerts;
      auto answer = prometheus.query(expr);
      ASSERT_EQ(answer.value("status", ""), "success") << name << ": " << expr << "\n" << answer.dump();
      auto quiet = kQuietAlerts.find(name);
      ASSERT_NE(quiet, kQuietAlerts.end()) << name << " is in no list: say whether it should fire here";
      EXPECT_FALSE(hasData(answer)) << name << " fires in a healthy scenario: " << answer.dump();
      std::cout << "quiet: " << name << ": " << quiet->second << "\n";
      // The Flux lesson: an alert on a metric nobody exports evaluates to nothing, silently.
      for (const auto& metric : metricNames(expr)) {
        if (absentHere(metric)) continue;
        EXPECT_TRUE(onMetricsPage(page, metric)) << name << " uses " << metric << ", which vto does not export";
        EXPECT_TRUE(hasData(prometheus.query("count_over_time(" + metric + "{job=\"vto\"}[1h])")))
            << name << ": Prometheus never had a series of " << metric;
      }
    }
  }
  EXPECT_EQ(alerts, static_cast<int>(kQuietAlerts.size()));
  // Prometheus loaded the shipped rule file itself.
  auto loaded = json::parse(runShell("curl -s " + prometheus.url() + "/api/v1/rules").output, nullptr, false);
  ASSERT_TRUE(loaded.is_object()) << "no /api/v1/rules answer";
  EXPECT_EQ(loaded["data"]["groups"].size(), 3u) << loaded.dump();
}

TEST(Observability, TheScenarioShowsInTheDomainMetrics) {
  auto& prometheus = *scenario().prometheus;
  std::string ns = std::string("namespace=\"") + kNamespace + "\"";
  EXPECT_EQ(prometheus.scalar("sum(vto_trainingruns_finished_total{" + ns + ",outcome=\"Succeeded\"})"), 3);
  EXPECT_EQ(prometheus.scalar("sum(vto_trainingruns_finished_total{" + ns + ",outcome=\"Failed\"})"), 1);
  EXPECT_EQ(prometheus.scalar("sum(vto_trainingruns{" + ns + ",phase=\"Succeeded\"})"), 3);
  EXPECT_EQ(prometheus.scalar("vto_trainingrun_attempt_failures_total{failure_class=\"Preemption\"}"), 1);
  EXPECT_EQ(prometheus.scalar("vto_trainingrun_attempt_failures_total{failure_class=\"UserError\"}"), 1);
  EXPECT_EQ(prometheus.scalar("vto_trainingrun_resumes_total{failure_class=\"Preemption\"}"), 1);
  EXPECT_EQ(prometheus.scalar("sum(vto_trainingrun_queue_seconds_count{" + ns + "})"), 4);
  EXPECT_EQ(prometheus.scalar("sum(vto_trainingrun_queue_seconds_count{" + ns + ",scheduling=\"Spot\",accelerator_type=\"NVIDIA_TESLA_T4\"})"), 1);
  // Accelerator time grows while a job runs, not only when it ends: the page scraped while the spot
  // run was running already had it.
  static const std::regex whileRunning(
      R"(\nvto_trainingrun_accelerator_seconds_total\{[^}]*accelerator_type="NVIDIA_TESLA_T4"[^}]*\} ([0-9.e+-]+))");
  std::smatch held;
  ASSERT_TRUE(std::regex_search(scenario().runningPage, held, whileRunning)) << scenario().runningPage;
  EXPECT_GT(std::stod(held[1]), 0);
  // Both T4 runs (1 x n1-standard-4 with 1 T4 each) and the two CPU runs on n1-standard-4 count machine
  // time; only the first two count accelerator time.
  double t4 = prometheus.scalar("sum(vto_trainingrun_accelerator_seconds_total{" + ns + ",accelerator_type=\"NVIDIA_TESLA_T4\"})");
  EXPECT_GT(t4, std::stod(held[1]));
  EXPECT_GT(prometheus.scalar("sum(vto_trainingrun_machine_seconds_total{" + ns + ",machine_type=\"n1-standard-4\"})"), t4);
  EXPECT_GE(prometheus.scalar("sum(vto_vertex_requests_total{method=\"CreateCustomJob\",code=\"200\"})"), 5);
  EXPECT_GT(prometheus.scalar("sum(vto_gcs_requests_total{method=\"ListObjects\"})"), 0);
  EXPECT_EQ(prometheus.scalar("count(vto_build_info)"), 1);
  // The policy's run registered one version, which was compared once and became champion.
  std::string retrain = std::string("namespace=\"") + kRetrainNamespace + "\"";
  EXPECT_EQ(prometheus.scalar("sum(vto_model_versions_registered_total{" + retrain + ",model=\"obs-nightly\"})"), 1);
  EXPECT_EQ(prometheus.scalar("sum(vto_model_promotions_total{" + retrain + ",policy=\"nightly\",result=\"Promoted\"})"), 1);
  double champion = prometheus.scalar("vto_model_champion_metric{" + retrain + ",policy=\"nightly\"}");
  EXPECT_GE(champion, 0.80);  // the emulator's auc for a job without EMULATOR_MODEL_METRICS is in [0.80, 0.95]
  EXPECT_LE(champion, 0.95);
}

TEST(Observability, TheScrapedMetricsPassPromtool) {
  scenario();
  std::string path = stack().dir() + "/metrics.txt";
  std::ofstream(path) << scrapeMetrics();
  auto check = runShell("promtool check metrics < '" + path + "'");
  EXPECT_EQ(check.exitCode, 0) << check.output;
  EXPECT_EQ(check.output, "") << "promtool lints";
}

TEST(Observability, TheChartsMonitoringObjectsPassAServerSideDryRunAgainstPrometheusOperatorsCrds) {
  std::string crds = sourceDir() + "/build/prometheus-operator-crds";
  ASSERT_TRUE(std::filesystem::exists(crds + "/VERSION")) << crds << " is missing: run scripts/bootstrap.sh";
  std::cout << "prometheus-operator CRDs " << slurp(crds + "/VERSION");
  auto& cluster = stack().cluster();
  for (const char* kind : {"servicemonitors", "prometheusrules"}) {
    auto created = cluster.kubectl("apply --server-side -f '" + crds + "/monitoring.coreos.com_" + kind + ".yaml'");
    ASSERT_EQ(created.exitCode, 0) << created.output;
  }
  auto established = cluster.kubectl("wait --for=condition=Established crd/servicemonitors.monitoring.coreos.com "
                                     "crd/prometheusrules.monitoring.coreos.com --timeout=60s");
  ASSERT_EQ(established.exitCode, 0) << established.output;
  std::string rendered = stack().dir() + "/monitoring.yaml";
  auto render = runShell("'" + binDir() + "/helm' template vto '" + sourceDir() + "/helm/vto' --namespace vto-system" +
                         " --set serviceMonitor.enabled=true --set serviceMonitor.labels.release=kps" +
                         " --set prometheusRule.enabled=true --set prometheusRule.labels.release=kps" +
                         " --set dashboards.enabled=true" +
                         " --show-only templates/servicemonitor.yaml --show-only templates/prometheusrule.yaml" +
                         " --show-only templates/dashboards.yaml > '" + rendered + "'");
  ASSERT_EQ(render.exitCode, 0) << render.output;
  // Client-side apply, as most users run it: the dashboards must also fit its 256 KiB annotation.
  auto dryRun = cluster.kubectl("apply --dry-run=server -f '" + rendered + "'");
  EXPECT_EQ(dryRun.exitCode, 0) << dryRun.output;
  for (const char* object : {"servicemonitor.monitoring.coreos.com/vto-vto", "prometheusrule.monitoring.coreos.com/vto-vto",
                             "configmap/vto-vto-dashboard-operator", "configmap/vto-vto-dashboard-trainingruns",
                             "configmap/vto-vto-dashboard-retraining"}) {
    EXPECT_NE(dryRun.output.find(std::string(object) + " created (server dry run)"), std::string::npos)
        << object << "\n" << dryRun.output;
  }
}

// Quiet is only half: the operator-down alert must also fire on the real series. Runs last: it stops the operator.
TEST(Observability, ZzTheOperatorDownAlertFiresOnRealSeriesOnceTheOperatorStops) {
  auto& prometheus = *scenario().prometheus;
  std::string expr;
  for (const auto& group : YAML::LoadFile(sourceDir() + "/helm/vto/rules/vto-alerts.yaml")["groups"]) {
    for (const auto& rule : group["rules"]) {
      if (rule["alert"].as<std::string>() == "VtoOperatorDown") expr = rule["expr"].as<std::string>();
    }
  }
  ASSERT_FALSE(expr.empty());
  EXPECT_FALSE(hasData(prometheus.query(expr)));
  EXPECT_EQ(stack().stopOperator(SIGTERM), 0);
  ASSERT_TRUE(waitFor([&] { return prometheus.scalar("up{job=\"vto\"}") == 0; }, seconds(60)));
  EXPECT_TRUE(hasData(prometheus.query(expr))) << expr;
}

}  // namespace
}  // namespace vto::testing
