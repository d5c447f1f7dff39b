// Models end to end (docs/models.md): a TrainingRun with spec.model registers its model in the
// emulator's Model Registry, once, even when the operator is SIGKILLed between the upload and the
// status write; a run whose job wrote no model says ArtifactMissing; a RetrainingPolicy with
// spec.promotion makes the first version champion, promotes a better one, keeps the champion against
// a worse one, and moves the alias back on a vto.dev/promote-version request. The emulated job writes
// metrics.json from its env EMULATOR_MODEL_METRICS (emulator/README.md "Model files"). Runs start on
// the manual retrain annotation, so no test waits for a cron slot.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "base/rfc3339.h"
#include "tests/support/operator_stack.h"
#include "tests/support/ports.h"
#include "tests/support/wait.h"
#include "vertex/api_error.h"
#include "vertex/model_registry.h"

namespace vto::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// Jobs take about a second; an upload is done 100 ms after it is asked for, so a version exists by
// the time a restarted operator looks for it. The registry as Google documents it (a model's labels
// merged into every version, the model's winning), and refusing to move an alias implicitly, which
// Google documents for the console only: promotion must work either way.
OperatorStack& stack() {
  static OperatorStack shared({"--queue-time", "200ms", "--steps", "2", "--step-time", "200ms", "--model-upload-time",
                               "100ms", "--alias-move", "strict", "--label-merge", "model-wins"});
  static bool installed = (shared.useChartServiceAccount(), true);
  (void)installed;
  return shared;
}

// The registry as a user's script would read it, through vto's own client.
vertex::ModelRegistry& registry() {
  static vertex::CppRestTransport http;
  static RealClock clock;
  static vertex::CachedTokenSource tokens(
      std::make_unique<vertex::MetadataTokenSource>(http, clock, stack().emulator().hostPort()), clock);
  static vertex::RestModelRegistry shared(http, tokens, clock, [] {
    vertex::ModelRegistryOptions options;
    options.endpoint = stack().emulator().url();
    options.allowInsecure = true;
    return options;
  }());
  return shared;
}

std::string modelName(const std::string& model) {
  return std::string("projects/") + kTestProject + "/locations/" + kTestLocation + "/models/" + model;
}

std::vector<vertex::ModelVersion> versionsOf(const std::string& model, const std::map<std::string, std::string>& labels = {}) {
  vertex::ListVersionsOptions options;
  if (!labels.empty()) options.filter = vertex::modelLabelFilter(labels);
  try {
    return registry().listVersions(modelName(model), options).versions;
  } catch (const vertex::ApiError& e) {
    if (e.isNotFound()) return {};
    throw;
  }
}

// spec.model of a model `model` whose metrics file is metrics.json.
std::string modelSpec(const std::string& model, const std::string& indent) {
  return indent + "model:\n" + indent + "  model: " + model + "\n" + indent +
         "  servingContainer: {imageUri: us-docker.pkg.dev/vertex-ai/prediction/xgboost-cpu.1-7:latest}\n" + indent +
         "  evaluation: {metricsFile: metrics.json}\n";
}

class ModelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    started = std::chrono::steady_clock::now();
    ns = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::transform(ns.begin(), ns.end(), ns.begin(), [](char c) { return static_cast<char>(std::tolower(c)); });
    ns = "models-" + ns.substr(0, 40);
    stack().createNamespace(ns);
    startOperator();
  }
  void TearDown() override {
    stack().cluster().kubectl("-n " + ns + " delete retrainingpolicies --all --wait=false");
    stack().stopOperator(SIGTERM);
    std::cout << "[ figures  ] " << ns << ": "
              << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count()
              << " ms\n";
  }
  void startOperator(std::vector<std::string> extra = {}) {
    std::vector<std::string> flags = {"--log-level", "debug"};  // metrics on a port of the operator's choice
    flags.insert(flags.end(), extra.begin(), extra.end());
    stack().startOperator(flags);
  }
  std::string diagnose() {
    return stack().cluster().kubectl("-n " + ns + " get rtp,trainingruns -o yaml").output +
           stack().cluster().kubectl("-n " + ns + " get events").output + stack().operatorLog();
  }
  std::string scrapeMetrics() {
    return runShell("curl -sf " + stack().metricsUrl()).output;
  }
  void apply(const std::string& yaml) {
    std::string path = stack().dir() + "/" + ns + "-" + std::to_string(std::hash<std::string>{}(yaml)) + ".yaml";
    std::ofstream(path) << yaml;
    stack().kubectlOk("apply -f '" + path + "'");
  }
  // A TrainingRun of model `model` whose job's first pool has `env` (YAML flow list).
  void applyRun(const std::string& name, const std::string& model, const std::string& env) {
    apply("apiVersion: vto.dev/v1beta1\nkind: TrainingRun\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
          "\nspec:\n  trainer:\n    container:\n"
          "      imageUri: us-central1-docker.pkg.dev/test-project/train/model:1\n      env: " + env + "\n"
          "  resources: {machineType: n1-standard-4}\n"
          "  baseOutputDirectory: gs://test-bucket/" + ns + "/" + name + "\n" + modelSpec(model, "  "));
  }
  json condition(const json& object, const std::string& type) {
    for (const auto& c : object.value("status", json::object()).value("conditions", json::array())) {
      if (c.value("type", "") == type) return c;
    }
    return json::object();
  }
  bool waitForRegistered(const std::string& name, seconds timeout = seconds(60)) {
    return waitFor([&] { return condition(stack().getRun(ns, name), "ModelRegistered").value("status", "") == "True"; },
                   timeout, std::chrono::milliseconds(200));
  }
  std::string events(const std::string& reason) {
    return stack().kubectlOk("-n " + ns + " get events --field-selector reason=" + reason +
                             " -o jsonpath='{range .items[*]}{.message}{\"\\n\"}{end}'");
  }
  json policy(const std::string& name) { return json::parse(stack().kubectlOk("-n " + ns + " get rtp " + name + " -o json")); }
  json status(const std::string& name) { return policy(name).value("status", json::object()); }

  std::string ns;
  std::chrono::steady_clock::time_point started;
};

TEST_F(ModelsTest, ASucceededRunRegistersExactlyOneVersionWithItsMetrics) {
  applyRun("fraud-1", "fraud", R"([{name: EMULATOR_MODEL_METRICS, value: '{"auRoc": 0.91, "logLoss": 0.2}'}])");
  ASSERT_TRUE(waitForRegistered("fraud-1")) << diagnose();
  auto run = stack().getRun(ns, "fraud-1");
  EXPECT_EQ(run["status"]["phase"], "Succeeded");
  EXPECT_EQ(condition(run, "ModelRegistered")["reason"], "VersionRegistered");
  const auto& model = run["status"]["model"];
  EXPECT_EQ(model["name"], modelName("fraud"));
  EXPECT_EQ(model["versionId"], "1");
  EXPECT_EQ(model["artifactUri"], "gs://test-bucket/" + ns + "/fraud-1/model/");
  EXPECT_DOUBLE_EQ(model["metrics"].value("auRoc", 0.0), 0.91);
  EXPECT_TRUE(model.value("evaluationImported", false));
  EXPECT_TRUE(model.contains("registerTime"));
  // In the registry: one version, labelled with the run's uid, its evaluation imported once, with
  // Google's classification schema (the emulator, as Vertex, refuses one without a schema).
  std::string uid = run["metadata"]["uid"];
  auto versions = versionsOf("fraud", {{"vto-run-uid", uid}});
  ASSERT_EQ(versions.size(), 1u);
  EXPECT_EQ(versions[0].versionId, "1");
  EXPECT_EQ(versions[0].labels.at("managed-by"), "vto");
  auto evaluations = registry().listEvaluations(modelName("fraud") + "@1", 100, "").evaluations;
  ASSERT_EQ(evaluations.size(), 1u);
  EXPECT_EQ(evaluations[0].metricsSchemaUri, "gs://google-cloud-aiplatform/schema/modelevaluation/classification_metrics_1.0.0.yaml");
  EXPECT_NE(events("ModelRegistered").find("version 1 of " + modelName("fraud")), std::string::npos);
  // kubectl wait works on the condition, as docs/models.md says.
  stack().kubectlOk("-n " + ns + " wait --for=condition=ModelRegistered trun/fraud-1 --timeout=5s");
  auto metrics = scrapeMetrics();
  EXPECT_NE(metrics.find("vto_model_versions_registered_total{model=\"fraud\",namespace=\"" + ns + "\"} 1"),
            std::string::npos) << metrics;
}

TEST_F(ModelsTest, ASigkillBetweenUploadAndStatusWriteStillGivesOneVersionPerRun) {
  // The operator is killed as soon as the emulator has answered a run's upload, before (or just as)
  // the operator records what it got back, and again once it has answered the evaluation's import;
  // the restarted operator must find the version by its label and the evaluation by its name, not
  // make them again. One run at a time, so that no other run is caught between its journal and its
  // upload (that case waits DecideOptions::uploadGracePeriod, minutes, before uploading).
  const int runs = 3;
  auto seen = [&](const std::string& path) {
    auto log = readWholeFile(stack().emulator().logPath());
    int count = 0;
    for (size_t at = log.find(path); at != std::string::npos; at = log.find(path, at + 1)) ++count;
    return count;
  };
  int kills = 0;
  const int uploadsBefore = seen("models:upload"), importsBefore = seen("evaluations:import");
  for (int i = 0; i < runs; ++i) {
    std::string name = "churn-" + std::to_string(i);
    applyRun(name, "churn", R"([{name: EMULATOR_MODEL_METRICS, value: '{"auRoc": 0.9}'}])");
    for (auto [path, before] : {std::pair{"models:upload", uploadsBefore}, {"evaluations:import", importsBefore}}) {
      ASSERT_TRUE(waitFor([&] { return seen(path) > before + i; }, seconds(60), std::chrono::milliseconds(5)))
          << path << "\n" << diagnose();
      EXPECT_EQ(stack().stopOperator(SIGKILL), 128 + SIGKILL);
      ++kills;
      startOperator();
    }
    ASSERT_TRUE(waitForRegistered(name)) << diagnose();
  }
  // churn-0's labels are the model's, merged into every version (its vto-run-uid shows on all of
  // them): each later run still finds its own version after a SIGKILL, by a label key of its own.
  std::set<std::string> versionIds;
  for (int i = 0; i < runs; ++i) {
    auto run = stack().getRun(ns, "churn-" + std::to_string(i));
    std::string uid = run["metadata"]["uid"];
    std::string versionId = run["status"]["model"].value("versionId", "");
    auto version = registry().getModel(modelName("churn") + "@" + versionId);
    EXPECT_NE(version.versionDescription.find("(uid " + uid + ")"), std::string::npos)
        << "churn-" << i << " recorded another run's version " << versionId << "\n" << diagnose();
    if (i > 0) {
      EXPECT_TRUE(versionsOf("churn", {{"vto-run-uid", uid}}).empty()) << "the model's labels win the merge";
    }
    EXPECT_TRUE(run["status"]["model"].value("evaluationImported", false));
    EXPECT_EQ(registry().listEvaluations(version.versionName(), 100, "").evaluations.size(), 1u) << "churn-" << i;
    versionIds.insert(versionId);
  }
  EXPECT_EQ(versionIds.size(), static_cast<size_t>(runs));
  EXPECT_EQ(versionsOf("churn").size(), static_cast<size_t>(runs)) << "a run uploaded twice";
  EXPECT_EQ(seen("models:upload") - uploadsBefore, runs) << "an upload was repeated after a SIGKILL";
  EXPECT_EQ(seen("evaluations:import") - importsBefore, runs) << "an import was repeated after a SIGKILL";
  std::cout << "[ figures  ] " << kills << " SIGKILLs during " << runs << " registrations\n";
}

// Metrics no Google schema describes (auc) are kept in status, where promotion reads them, and never
// sent to Vertex, which would answer "400 Invalid Metrics Format" on every try.
TEST_F(ModelsTest, MetricsNoGoogleSchemaNamesAreKeptInStatusWithoutAnImportOrALoop) {
  auto imports = [&] { return readWholeFile(stack().emulator().logPath()); };
  applyRun("plain", "plain", R"([{name: EMULATOR_MODEL_METRICS, value: '{"auc": 0.91}'}])");
  ASSERT_TRUE(waitForRegistered("plain")) << diagnose();
  auto run = stack().getRun(ns, "plain");
  EXPECT_DOUBLE_EQ(run["status"]["model"]["metrics"].value("auc", 0.0), 0.91);
  EXPECT_FALSE(run["status"]["model"].value("evaluationImported", false)) << "written only when true";
  EXPECT_NE(condition(run, "ModelRegistered").value("message", "").find("kept in status only"), std::string::npos)
      << condition(run, "ModelRegistered").dump();
  EXPECT_EQ(imports().find("models/plain@1/evaluations:import"), std::string::npos) << "nothing Vertex would refuse is sent";
}

// Six runs register into one new model at once while the operator is SIGKILLed again and again in
// the first seconds: six versions, each run's own, every run ModelRegistered=True.
TEST_F(ModelsTest, SixRunsIntoOneNewModelWithSigkillsEndWithSixVersions) {
  const int runs = 6;
  auto uploads = [&] {
    auto log = readWholeFile(stack().emulator().logPath());
    int count = 0;
    for (size_t at = log.find("models:upload"); at != std::string::npos; at = log.find("models:upload", at + 1)) ++count;
    return count;
  };
  const int before = uploads();
  const std::vector<std::string> shortGrace = {"--model-upload-grace-period", "8"};
  stack().stopOperator(SIGTERM);
  startOperator(shortGrace);
  for (int i = 0; i < runs; ++i) applyRun("six-" + std::to_string(i), "six", "[]");
  // Killed as each of the first uploads is answered: between the upload and its status write. Other
  // runs are caught between their journal and their upload: each waits the grace period (shortened
  // here from five minutes) for a version that never comes, then uploads.
  int kills = 0;
  for (; kills < 4; ++kills) {
    if (!waitFor([&] { return uploads() > before + kills; }, seconds(60), std::chrono::milliseconds(5))) break;
    EXPECT_EQ(stack().stopOperator(SIGKILL), 128 + SIGKILL);
    startOperator(shortGrace);
  }
  EXPECT_EQ(kills, 4) << diagnose();
  for (int i = 0; i < runs; ++i) ASSERT_TRUE(waitForRegistered("six-" + std::to_string(i), seconds(120))) << i << "\n" << diagnose();
  std::set<std::string> versionIds;
  Clock::duration slowest{};
  for (int i = 0; i < runs; ++i) {
    auto run = stack().getRun(ns, "six-" + std::to_string(i));
    // Registered within a minute of succeeding, SIGKILLs and the (shortened) grace included.
    auto registered = parseRfc3339(run["status"]["model"].value("registerTime", ""));
    auto succeeded = parseRfc3339(run["status"].value("completionTime", ""));
    slowest = std::max(slowest, registered - succeeded);
    EXPECT_LT(registered - succeeded, seconds(60)) << i;
    std::string versionId = run["status"]["model"].value("versionId", "");
    auto version = registry().getModel(modelName("six") + "@" + versionId);
    EXPECT_NE(version.versionDescription.find("(uid " + run["metadata"]["uid"].get<std::string>() + ")"), std::string::npos) << i;
    versionIds.insert(versionId);
  }
  EXPECT_EQ(versionIds.size(), static_cast<size_t>(runs));
  EXPECT_EQ(versionsOf("six").size(), static_cast<size_t>(runs)) << diagnose();
  std::cout << "[ figures  ] " << kills << " SIGKILLs, " << runs << " versions, the slowest registered "
            << std::chrono::duration_cast<std::chrono::seconds>(slowest).count() << " s after its run succeeded\n";
}

// An upload Vertex refuses (here 429, as a 409 from a sibling that created the model a moment earlier)
// started nothing: the run uploads again at once, in the same process and after a restart, never
// waiting the grace period of an upload whose answer was lost (an hour here, so a wait fails the test).
TEST_F(ModelsTest, RefusedUploadsAreUploadedAgainAtOnceAfterARestartToo) {
  auto refused = [&] {
    auto log = readWholeFile(stack().emulator().logPath());
    int count = 0;
    for (size_t at = log.find("models:upload -> 429"); at != std::string::npos; at = log.find("models:upload -> 429", at + 1)) ++count;
    return count;
  };
  auto faults = [&](const std::string& body) {
    auto result = runShell("curl -sf -X POST -d '" + body + "' " + stack().emulator().url() + "/emulator/v1/faults");
    ASSERT_EQ(result.exitCode, 0) << result.output;
  };
  const std::vector<std::string> longGrace = {"--model-upload-grace-period", "3600"};
  stack().stopOperator(SIGTERM);
  startOperator(longGrace);
  const int before = refused();
  faults(R"({"throttled": 1000, "only": "upload"})");
  applyRun("refused", "refused", "[]");
  // The same refusal again and again: each recorded, none waited for (the journal used to stay from
  // the second identical one on, and the run waited the grace period).
  bool refusedThrice = waitFor([&] { return refused() >= before + 3; }, seconds(60), std::chrono::milliseconds(20));
  // Stopped with a refusal recorded (a pass in flight finishes first), then started with none left.
  stack().stopOperator(SIGTERM);
  faults("{}");
  ASSERT_TRUE(refusedThrice) << refused() - before << " refused uploads\n" << diagnose();
  auto stored = stack().getRun(ns, "refused");
  EXPECT_EQ(condition(stored, "ModelRegistered").value("reason", ""), "UploadFailed") << stored.dump();
  EXPECT_FALSE(stored["status"].value("model", json::object()).contains("uploadStartTime")) << stored.dump();
  startOperator(longGrace);
  ASSERT_TRUE(waitForRegistered("refused")) << diagnose();
  EXPECT_EQ(versionsOf("refused").size(), 1u);
}

TEST_F(ModelsTest, AJobThatWroteNoModelSaysArtifactMissing) {
  applyRun("empty", "empty", "[{name: EMULATOR_NO_MODEL, value: \"1\"}]");
  ASSERT_TRUE(waitFor([&] { return condition(stack().getRun(ns, "empty"), "ModelRegistered").value("reason", "") == "ArtifactMissing"; },
                      seconds(60)))
      << diagnose();
  auto run = stack().getRun(ns, "empty");
  EXPECT_EQ(run["status"]["phase"], "Succeeded");
  auto registered = condition(run, "ModelRegistered");
  EXPECT_EQ(registered["status"], "False");
  EXPECT_NE(registered.value("message", "").find("gs://test-bucket/" + ns + "/empty/model/"), std::string::npos)
      << registered.dump();
  EXPECT_NE(registered.value("message", "").find("AIP_MODEL_DIR"), std::string::npos) << registered.dump();
  EXPECT_TRUE(versionsOf("empty").empty());
  EXPECT_FALSE(events("ModelNotRegistered").empty());
  auto metrics = scrapeMetrics();
  EXPECT_NE(metrics.find("vto_model_registration_failures_total{namespace=\"" + ns + "\",reason=\"ArtifactMissing\"}"),
            std::string::npos) << metrics;
}

TEST_F(ModelsTest, APolicyPromotesTheBetterVersionKeepsTheChampionAgainstAWorseOneAndRollsBack) {
  auto applyPolicy = [&](double auc) {
    char metrics[64];
    std::snprintf(metrics, sizeof metrics, "{\"auc\": %g}", auc);
    apply("apiVersion: vto.dev/v1beta1\nkind: RetrainingPolicy\nmetadata:\n  name: ranker\n  namespace: " + ns +
          "\nspec:\n  template:\n    spec:\n      trainer:\n        container:\n"
          "          imageUri: us-central1-docker.pkg.dev/test-project/train/model:1\n"
          "          env: [{name: EMULATOR_MODEL_METRICS, value: '" + metrics + "'}]\n"
          "      resources: {machineType: n1-standard-4}\n"
          "      baseOutputDirectory: gs://test-bucket/" + ns + "/ranker\n" + modelSpec("ranker", "      ") +
          "  triggers: {}\n  promotion: {metric: auc, goal: Maximize, minImprovement: 0.01, alias: champion}\n"
          "  warmStart: true\n");
  };
  // One run with `auc`, then the policy has compared its version.
  int request = 0;
  auto retrainWith = [&](double auc, const std::string& expectedVersion) {
    applyPolicy(auc);
    stack().kubectlOk("-n " + ns + " annotate rtp/ranker vto.dev/retrain-requested=" + std::to_string(++request) + " --overwrite");
    return waitFor([&] { return status("ranker").value("lastComparedVersion", "") == expectedVersion; }, seconds(60),
                   std::chrono::milliseconds(200));
  };
  auto holder = [&] { return registry().getModel(modelName("ranker") + "@champion").versionId; };

  ASSERT_TRUE(retrainWith(0.80, "1")) << diagnose();
  auto s = status("ranker");
  EXPECT_EQ(s["champion"]["versionId"], "1");
  EXPECT_DOUBLE_EQ(s["champion"].value("metric", 0.0), 0.80);
  EXPECT_EQ(s["lastPromotion"]["result"], "Promoted");
  EXPECT_EQ(holder(), "1");

  ASSERT_TRUE(retrainWith(0.90, "2")) << diagnose();
  s = status("ranker");
  EXPECT_EQ(s["champion"]["versionId"], "2");
  EXPECT_EQ(s["lastPromotion"]["result"], "Promoted");
  EXPECT_EQ(holder(), "2");
  auto promoted = events("ModelPromoted");
  EXPECT_NE(promoted.find("auc 0.9 > 0.8 + 0.01"), std::string::npos) << promoted;
  // With promotion, warm starts begin from the champion's artifacts.
  EXPECT_EQ(s["champion"]["artifactUri"], s.value("lastSuccessfulRun", json::object()).value("modelUri", ""));

  ASSERT_TRUE(retrainWith(0.85, "3")) << diagnose();
  s = status("ranker");
  EXPECT_EQ(s["champion"]["versionId"], "2");
  EXPECT_EQ(s["lastPromotion"]["result"], "NotBetter");
  EXPECT_EQ(s["lastPromotion"]["versionId"], "3");
  EXPECT_EQ(holder(), "2");
  auto kept = events("ModelNotPromoted");
  EXPECT_NE(kept.find("auc 0.85 is not > 0.9 + 0.01"), std::string::npos) << kept;

  // kubectl get rtp shows the champion.
  auto table = stack().kubectlOk("-n " + ns + " get rtp ranker");
  EXPECT_NE(table.find("CHAMPION"), std::string::npos) << table;
  EXPECT_NE(table.find("0.9"), std::string::npos) << table;

  // Roll back to version 1 by hand.
  stack().kubectlOk("-n " + ns + " annotate rtp/ranker vto.dev/promote-version=1 --overwrite");
  ASSERT_TRUE(waitFor([&] { return status("ranker").value("lastPromotion", json::object()).value("result", "") == "Manual"; },
                      seconds(30)))
      << diagnose();
  s = status("ranker");
  EXPECT_EQ(s["champion"]["versionId"], "1");
  EXPECT_DOUBLE_EQ(s["champion"].value("metric", 0.0), 0.80);
  EXPECT_EQ(holder(), "1");
  EXPECT_NE(events("ModelPromoted").find("version 1 holds champion by request (was version 2)"), std::string::npos);
  // The next run starts from the champion's artifacts (version 1's), not from the newest run's.
  const std::string championArtifacts = s["champion"]["artifactUri"];
  ASSERT_TRUE(retrainWith(0.70, "4")) << diagnose();
  json fourth;
  auto all = json::parse(stack().kubectlOk("-n " + ns + " get trun -o json"));
  for (const auto& run : all["items"]) {
    if (run["status"]["model"].value("versionId", "") == "4") fourth = run;
  }
  ASSERT_TRUE(fourth.is_object()) << diagnose();
  auto jobs = stack().jobsOfRun(fourth["metadata"]["uid"]);
  ASSERT_EQ(jobs.size(), 1u);
  std::string warmStart;
  for (const auto& e : jobs[0].raw["jobSpec"]["workerPoolSpecs"][0]["containerSpec"].value("env", json::array())) {
    if (e.value("name", "") == "VTO_WARM_START_FROM") warmStart = e.value("value", "");
  }
  EXPECT_EQ(warmStart, championArtifacts);
  EXPECT_EQ(status("ranker")["champion"]["versionId"], "1");

  auto metrics = scrapeMetrics();
  const std::string labels = "namespace=\"" + ns + "\",policy=\"ranker\"";
  for (auto [result, count] : {std::pair{"Promoted", 2}, {"NotBetter", 2}, {"Manual", 1}}) {
    EXPECT_NE(metrics.find("vto_model_promotions_total{" + labels + ",result=\"" + result + "\"} " + std::to_string(count)),
              std::string::npos) << result << "\n" << metrics;
  }
  EXPECT_NE(metrics.find("vto_model_champion_metric{" + labels + "} 0.8"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("vto_model_versions_registered_total{model=\"ranker\",namespace=\"" + ns + "\"} 4"),
            std::string::npos) << metrics;
  std::string path = stack().dir() + "/models-metrics.txt";
  std::ofstream(path) << metrics;
  auto check = runShell("promtool check metrics < '" + path + "'");
  EXPECT_EQ(check.exitCode, 0) << check.output;
}

}  // namespace
}  // namespace vto::testing

namespace vto::testing {
namespace {

// Google's answers name the project by its number (projects/123456789012/...), requests by ID or
// number: a run whose job names, operations and versions all carry the number is still followed,
// resumed after a preemption, and registered, with one job per attempt and one version.
TEST(ProjectNumbers, ARunIsFollowedResumedAndRegisteredWhenGooglesNamesCarryTheProjectNumber) {
  // Twelve steps (6 s): the job must still run when the test, having seen a checkpoint, preempts it;
  // with four (2 s) it had ended first on loaded cores.
  OperatorStack numbered({"--queue-time", "200ms", "--steps", "12", "--step-time", "500ms", "--model-upload-time",
                          "100ms", "--project-numbers", "on"});
  numbered.startOperator({"--checkpoint-poll-interval", "1"});
  const std::string ns = "numbers";
  numbered.createNamespace(ns);
  std::string path = numbered.dir() + "/numbered.yaml";
  std::ofstream(path) << simpleRunManifest(ns, "numbered",
                                           "  scheduling: {strategy: Spot}\n"
                                           "  checkpointing: {resumeBackoff: 1s}\n" + modelSpec("numbered", "  "));
  numbered.kubectlOk("apply -f '" + path + "'");
  auto jobOfAttempt = [&](int attempt) {
    std::string job;
    waitFor(
        [&] {
          auto run = numbered.getRun(ns, "numbered");
          for (const auto& a : run.value("status", json::object()).value("attempts", json::array()))
            if (a.value("attempt", 0) == attempt && !a.value("jobName", "").empty()) job = a["jobName"];
          return !job.empty();
        },
        seconds(60), std::chrono::milliseconds(100));
    return job;
  };
  auto first = jobOfAttempt(1);
  ASSERT_EQ(first.rfind("projects/", 0), 0u) << numbered.operatorLog();
  const std::string project = first.substr(9, first.find('/', 9) - 9);
  ASSERT_EQ(project.size(), 12u) << first << ": the emulator names the project by a number";
  ASSERT_TRUE(std::all_of(project.begin(), project.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) << first;
  // Preempted once it has written a checkpoint: attempt 2 resumes from it.
  ASSERT_TRUE(waitFor([&] { return !numbered.getRun(ns, "numbered")["status"].value("lastCheckpoint", json::object()).empty(); },
                      seconds(60), std::chrono::milliseconds(100)))
      << numbered.operatorLog();
  auto failed = runShell("curl -sf -X POST -H 'Content-Type: application/json' -d '{\"failureClass\": \"Preemption\"}' " +
                         numbered.emulator().url() + "/emulator/v1/" + first + ":fail");
  ASSERT_EQ(failed.exitCode, 0) << failed.output;
  auto second = jobOfAttempt(2);
  EXPECT_NE(second.find("projects/" + project + "/"), std::string::npos) << second;
  ASSERT_TRUE(numbered.waitForPhase(ns, "numbered", "Succeeded", seconds(120))) << numbered.operatorLog();
  ASSERT_TRUE(waitFor(
      [&] {
        for (const auto& c : numbered.getRun(ns, "numbered")["status"].value("conditions", json::array()))
          if (c.value("type", "") == "ModelRegistered") return c.value("status", "") == "True";
        return false;
      },
      seconds(60), std::chrono::milliseconds(200)))
      << numbered.kubectlOk("-n " + ns + " get trun numbered -o yaml") << numbered.operatorLog();
  auto run = numbered.getRun(ns, "numbered");
  EXPECT_EQ(run["status"]["attempts"].size(), 2u);
  EXPECT_EQ(run["status"]["model"].value("versionId", ""), "1");
  EXPECT_EQ(numbered.jobsOfRun(run["metadata"]["uid"].get<std::string>()).size(), 2u) << "one job per attempt";
  EXPECT_EQ(run["status"]["conditions"].dump().find("JobNotOwned"), std::string::npos);
}

}  // namespace
}  // namespace vto::testing
