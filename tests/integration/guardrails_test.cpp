// Guardrails checked before a run's first job, end to end (kubectl -> API server -> vto run ->
// emulator and fake-gcs-server): tenancy rules from `vto run --config` and the output bucket.
#include <cpprest/http_listener.h>
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <mutex>

#include "tests/support/loopback_http_server.h"
#include "tests/support/operator_stack.h"
#include "tests/support/ports.h"
#include "tests/support/wait.h"
#include "vertex/auth.h"
#include "vertex/http_transport.h"

namespace vto::testing {
namespace {

using std::chrono::seconds;

// A GCS endpoint stub in front of fake-gcs-server: object listings whose prefix contains "forbidden"
// get 403 PERMISSION_DENIED, everything else is forwarded. Why a stub and not fake-gcs-server alone:
// it cannot answer 403. Why at the HTTP level and not a TCP proxy: the 403 depends on the request's
// path and query. Every other call still reaches the real server, and the operator keeps its real
// RestGcsClient and error parsing; only `--gcs-endpoint` points here.
class ForbiddingGcsStub {
 public:
  explicit ForbiddingGcsStub(std::string upstream)
      : upstream_(std::move(upstream)),
        url_("http://127.0.0.1:" + std::to_string(freeLoopbackPort())),
        listener_(web::uri(url_)) {
    listener_.support([this](web::http::http_request request) { handle(std::move(request)); });
    listener_.open().wait();
  }
  ~ForbiddingGcsStub() { listener_.close().wait(); }
  const std::string& url() const { return url_; }

  // The object listings asked for so far (their request targets), in order.
  std::vector<std::string> listings() {
    std::lock_guard lock(mutex_);
    return listings_;
  }

 private:
  void handle(web::http::http_request request) {
    std::string target = request.relative_uri().to_string();
    if (target.find("/o?") != std::string::npos) {
      std::lock_guard lock(mutex_);
      listings_.push_back(target);
    }
    if (target.find("/o?") != std::string::npos && target.find("forbidden") != std::string::npos) {
      request.reply(403, R"({"error": {"code": 403, "status": "PERMISSION_DENIED", "message": "vto@test-project.iam.gserviceaccount.com does not have storage.objects.list access"}})",
                    "application/json");
      return;
    }
    vertex::HttpRequest forward;
    forward.method = request.method();
    forward.url = upstream_ + target;
    forward.body = request.extract_string().get();
    if (request.headers().has("Content-Type")) forward.headers["Content-Type"] = request.headers().content_type();
    try {
      auto response = http_.send(forward);
      web::http::http_response reply(static_cast<web::http::status_code>(response.status));
      reply.set_body(response.body, "application/json");
      request.reply(reply);
    } catch (const std::exception& e) {
      request.reply(502, e.what());
    }
  }

  std::mutex mutex_;
  std::vector<std::string> listings_;
  std::string upstream_;
  std::string url_;
  vertex::CppRestTransport http_;
  web::http::experimental::listener::http_listener listener_;
};

ForbiddingGcsStub* stub = nullptr;  // set by stack()

// The hostile tenant's Prometheus: it accepts and never answers (a black hole a tenant may name).
LoopbackHttpServer& blackHole() {
  static LoopbackHttpServer server("{}", LoopbackHttpServer::Mode::Silent);
  return server;
}
// A service inside the cluster's network that no rule names: nothing may reach it for a tenant.
LoopbackHttpServer& internalService() {
  static LoopbackHttpServer server(R"({"status": "success", "data": {"resultType": "vector", "result": []}})");
  return server;
}

// How stack() starts the operator, so that a test can restart it as it was.
std::vector<std::string>& operatorFlags() {
  static std::vector<std::string> flags;
  return flags;
}

// team-a may use only its own project, bucket, service account and model (fraud); team-cap may hold 4 accelerators
// at once; "buckets" may use anything. team-x is the hostile tenant (its own prefix, 4 accelerators,
// one Prometheus that never answers); team-calm is the neighbour it must not slow. Jobs queue 1 s and
// train 6 steps of 1 s.
OperatorStack& stack() {
  static OperatorStack shared({"--queue-time", "1s", "--steps", "6", "--step-time", "1s", "--stockout-wait", "1s"});
  static bool started = [] {
    std::string config = shared.dir() + "/vto-config.yaml";
    std::ofstream(config) << "tenancy:\n"
                             "  - namespaces: [team-a]\n"
                             "    projects: [test-project]\n"
                             "    bucketPrefixes: [gs://test-bucket/team-a/]\n"
                             "    serviceAccounts: [trainer@test-project.iam.gserviceaccount.com]\n"
                             "    models: [fraud]\n"
                             "    imagePrefixes: [us-central1-docker.pkg.dev/test-project/]\n"
                             "    labels: {experiment: [], cost-center: [cc-team-a]}\n"
                             "    tensorboards: [projects/test-project/locations/us-central1/tensorboards/team-a]\n"
                             "    kmsKeys: [projects/test-project/locations/us-central1/keyRings/ml/cryptoKeys/team-a]\n"
                             "    networks: [{name: projects/123456/global/networks/team-a-vpc, reservedIpRanges: [team-a-range]}]\n"
                             "  - namespaces: [team-cap]\n"
                             "    maxAccelerators: 4\n"
                             "    imagePrefixes: [us-central1-docker.pkg.dev/test-project/]\n"
                             "  - namespaces: [buckets]\n"
                             "    imagePrefixes: [\"*\"]\n"
                             "  - namespaces: [team-x]\n"
                             "    bucketPrefixes: [gs://test-bucket/team-x/]\n"
                             "    maxAccelerators: 4\n"
                             "    prometheusUrls: [\"" << blackHole().url() << "\"]\n"
                             "    imagePrefixes: [us-central1-docker.pkg.dev/test-project/]\n"
                             "  - namespaces: [team-calm]\n"
                             "    imagePrefixes: [us-central1-docker.pkg.dev/test-project/]\n";
    // Destroyed before `shared` stops the operator: its last GCS calls at exit may fail; nothing asserts on them.
    static ForbiddingGcsStub gcs(shared.gcs().url());
    stub = &gcs;
    operatorFlags() = {"--config", config, "--gcs-endpoint", gcs.url()};
    shared.startOperator(operatorFlags());
    return true;
  }();
  (void)started;
  return shared;
}

// The stub the operator lists through.
ForbiddingGcsStub& gcsStub() {
  stack();
  return *stub;
}

void apply(const std::string& yaml) {
  std::string path = stack().dir() + "/manifest-" + std::to_string(std::hash<std::string>{}(yaml)) + ".yaml";
  std::ofstream(path) << yaml;
  stack().kubectlOk("apply -f '" + path + "'");
}

std::string condition(const std::string& ns, const std::string& name, const std::string& type) {
  auto run = stack().getRun(ns, name);
  if (!run.is_object()) return "";
  for (const auto& c : run.value("status", nlohmann::json::object()).value("conditions", nlohmann::json::array())) {
    if (c.value("type", "") == type) return c.value("status", "") + "/" + c.value("reason", "");
  }
  return "";
}

std::string uidOf(const std::string& ns, const std::string& name) {
  return stack().getRun(ns, name)["metadata"].value("uid", "");
}

// Jobs the emulator has created so far (GET /emulator/v1/stats).
int64_t jobsCreated() {
  vertex::CppRestTransport http;
  auto response = http.send({"GET", stack().emulator().url() + "/emulator/v1/stats", {}, "", seconds(5)});
  return nlohmann::json::parse(response.body).value("created", int64_t{0});
}

TEST(Guardrails, ARunOutsideItsTenantsRuleIsRefusedBeforeAnyVertexCall) {
  const std::string ns = "team-a";
  stack().createNamespace(ns);
  // An allowed run first: the rules let team-a's own runs through.
  const std::string ownAccount = "  serviceAccount: trainer@test-project.iam.gserviceaccount.com\n";
  apply(simpleRunManifest(ns, "allowed", ownAccount));  // gs://test-bucket/team-a/allowed
  ASSERT_TRUE(stack().waitForPhase(ns, "allowed", "Succeeded", seconds(120)))
      << stack().getRun(ns, "allowed")["status"].dump() << "\n" << stack().operatorLog();

  auto createdBefore = jobsCreated();
  struct Case {
    std::string name, extraSpec, field;
  };
  std::vector<Case> cases = {
      {"other-project", ownAccount + "  project: team-b-project\n", "spec.project"},
      {"other-bucket", ownAccount + "  checkpointing:\n    directory: gs://team-b-bucket/ckpt\n",
       "spec.checkpointing.directory"},
      {"other-sa", "  serviceAccount: trainer@team-b.iam.gserviceaccount.com\n", "spec.serviceAccount"},
      // Closed unless the rule opens them: a network (the rule lists none) and the interactive shell.
      {"other-network", ownAccount + "  network: projects/999/global/networks/team-b-vpc\n", "spec.network"},
      {"web-shell", ownAccount + "  enableWebAccess: true\n", "spec.enableWebAccess"},
      // Each field that reaches Google under the operator's identity, outside the rule's lists.
      {"other-image", ownAccount + "#image: us-central1-docker.pkg.dev/team-b-project/train/secret:1\n",
       "spec.trainer.container.imageUri"},
      {"serving-image", ownAccount + "  model:\n    model: fraud\n    servingContainer:\n"
                                     "      imageUri: us-central1-docker.pkg.dev/team-b-project/serve/secret:1\n",
       "spec.model.servingContainer.imageUri"},
      {"billing-label", ownAccount + "  labels: {cost-center: cc-team-b}\n", "spec.labels.cost-center"},
      {"other-tensorboard", ownAccount + "  tensorboard: projects/test-project/locations/us-central1/tensorboards/team-b\n",
       "spec.tensorboard"},
      {"other-key", ownAccount + "  encryptionKmsKeyName: projects/test-project/locations/us-central1/keyRings/ml/cryptoKeys/team-b\n",
       "spec.encryptionKmsKeyName"},
      {"other-range", ownAccount + "  network: projects/123456/global/networks/team-a-vpc\n  reservedIpRanges: [team-b-range]\n",
       "spec.reservedIpRanges[0]"},
  };
  // The same fields inside the rule's lists: the run goes through.
  apply(simpleRunManifest(ns, "inside", ownAccount + "  labels: {experiment: lr-sweep, cost-center: cc-team-a}\n"
                                        "  tensorboard: projects/test-project/locations/us-central1/tensorboards/team-a\n"
                                        "  encryptionKmsKeyName: projects/test-project/locations/us-central1/keyRings/ml/cryptoKeys/team-a\n"
                                        "  network: projects/123456/global/networks/team-a-vpc\n"
                                        "  reservedIpRanges: [team-a-range]\n"));
  for (const auto& c : cases) {
    auto manifest = simpleRunManifest(ns, c.name, c.extraSpec);
    // "#image: X" in a case replaces the trainer's image.
    if (auto marker = manifest.find("#image: "); marker != std::string::npos) {
      auto end = manifest.find('\n', marker);
      auto image = manifest.substr(marker + 8, end - marker - 8);
      manifest.erase(marker, end - marker + 1);
      manifest.replace(manifest.find("us-central1-docker.pkg.dev/test-project/train/model:1"),
                       std::string("us-central1-docker.pkg.dev/test-project/train/model:1").size(), image);
    }
    apply(manifest);
  }
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_TRUE(stack().waitForPhase(ns, c.name, "Invalid", seconds(60))) << stack().operatorLog();
    EXPECT_EQ(condition(ns, c.name, "Valid"), "False/TenantPolicyViolation");
    std::string message = stack().getRun(ns, c.name)["status"].value("message", "");
    EXPECT_NE(message.find(c.field), std::string::npos) << message;
    EXPECT_NE(message.find("tenancy[0]"), std::string::npos) << message;
    EXPECT_TRUE(stack().jobsOfRun(uidOf(ns, c.name)).empty());
    auto events = stack().kubectlOk("-n " + ns + " get events --field-selector involvedObject.name=" + c.name +
                                    " -o jsonpath='{.items[*].reason}'");
    EXPECT_NE(events.find("TenantPolicyViolation"), std::string::npos) << events;
  }
  ASSERT_TRUE(stack().waitForPhase(ns, "inside", "Succeeded", seconds(120)))
      << stack().getRun(ns, "inside")["status"].dump() << "\n" << stack().operatorLog();
  auto inside = stack().jobsOfRun(uidOf(ns, "inside"));
  ASSERT_EQ(inside.size(), 1u);
  EXPECT_EQ(inside[0].labels["cost-center"], "cc-team-a");
  EXPECT_EQ(inside[0].raw["jobSpec"].value("reservedIpRanges", nlohmann::json::array()), nlohmann::json::array({"team-a-range"}));
  // The emulator was asked for the inside run's job only, never for the refused ones.
  EXPECT_EQ(jobsCreated(), createdBefore + 1);
}

// Another namespace in the same project names team-a's model and its alias: to upload a version
// with its own serving image, take `champion`, or import evaluations that make team-a's next
// versions lose. Its rule lists no models, so the run and the policy are refused before any call.
TEST(Guardrails, ASecondNamespaceTargetingAnotherTeamsModelAndAliasIsRefused) {
  const std::string ns = "team-x";
  stack().createNamespace(ns);
  const std::string model =
      "  model:\n    model: fraud\n"
      "    servingContainer: {imageUri: us-docker.pkg.dev/vertex-ai/prediction/xgboost-cpu.1-7:latest}\n"
      "    versionAliases: [champion]\n    evaluation: {metricsFile: metrics.json}\n";
  auto createdBefore = jobsCreated();
  apply(simpleRunManifest(ns, "steal-model", model));
  // The same model under spec.template.spec; the alias comes from promotion there (a template may not
  // set the alias promotion moves).
  std::string indented;
  for (size_t at = 0; at < model.size();) {
    auto end = model.find('\n', at);
    auto line = model.substr(at, end - at + 1);
    if (line.find("versionAliases") == std::string::npos) indented += "    " + line;
    at = end + 1;
  }
  apply("apiVersion: vto.dev/v1beta1\nkind: RetrainingPolicy\nmetadata: {name: steal-alias, namespace: " + ns +
        "}\nspec:\n  template:\n    spec:\n      trainer:\n        container:\n"
        "          imageUri: us-central1-docker.pkg.dev/test-project/train/model:1\n"
        "      resources: {machineType: n1-standard-4}\n"
        "      baseOutputDirectory: gs://test-bucket/team-x/steal-alias\n" +
        indented + "  triggers: {}\n  promotion: {metric: auc, goal: Maximize, alias: champion}\n");

  ASSERT_TRUE(stack().waitForPhase(ns, "steal-model", "Invalid", seconds(60)))
      << stack().getRun(ns, "steal-model")["status"].dump() << "\n" << stack().operatorLog();
  EXPECT_EQ(condition(ns, "steal-model", "Valid"), "False/TenantPolicyViolation");
  std::string message = stack().getRun(ns, "steal-model")["status"].value("message", "");
  EXPECT_NE(message.find("spec.model.model"), std::string::npos) << message;
  EXPECT_NE(message.find("fraud"), std::string::npos) << message;

  auto policyValid = [&] {
    auto out = stack().cluster().kubectl("-n " + ns + " get rtp steal-alias -o json");
    if (out.exitCode != 0) return nlohmann::json::object();
    for (const auto& c : nlohmann::json::parse(out.output)["status"].value("conditions", nlohmann::json::array()))
      if (c.value("type", "") == "Valid") return c;
    return nlohmann::json::object();
  };
  ASSERT_TRUE(waitFor([&] { return policyValid().value("reason", "") == "TenantPolicyViolation"; }, seconds(60)))
      << policyValid().dump() << "\n" << stack().operatorLog();
  EXPECT_NE(policyValid().value("message", "").find("spec.template.spec.model.model"), std::string::npos)
      << policyValid().dump();
  EXPECT_EQ(jobsCreated(), createdBefore) << "no job for either";
  stack().cluster().kubectl("-n " + ns + " delete rtp steal-alias --wait=false");
}

TEST(Guardrails, TheAcceleratorCapQueuesASecondRunUntilTheFirstFinishes) {
  const std::string ns = "team-cap";
  stack().createNamespace(ns);
  const std::string gpus = "  resources:\n    machineType: n1-standard-16\n    acceleratorType: NVIDIA_TESLA_T4\n"
                           "    acceleratorCount: 4\n";
  auto manifest = [&](const std::string& name) {
    auto yaml = simpleRunManifest(ns, name);
    return yaml.replace(yaml.find("  resources:\n    machineType: n1-standard-4\n"),
                        std::string("  resources:\n    machineType: n1-standard-4\n").size(), gpus);
  };
  apply(manifest("first"));
  ASSERT_TRUE(waitFor([&] { return !stack().getRun(ns, "first")["status"]["job"].is_null(); }, seconds(60)))
      << stack().operatorLog();
  apply(manifest("second"));
  ASSERT_TRUE(waitFor([&] { return condition(ns, "second", "Ready") == "False/TenantQuotaExceeded"; }, seconds(60)))
      << stack().operatorLog();
  EXPECT_EQ(stack().phaseOf(ns, "second"), "Queued");
  EXPECT_TRUE(stack().jobsOfRun(uidOf(ns, "second")).empty());

  ASSERT_TRUE(stack().waitForPhase(ns, "first", "Succeeded", seconds(120))) << stack().operatorLog();
  ASSERT_TRUE(stack().waitForPhase(ns, "second", "Succeeded", seconds(180))) << stack().operatorLog();
  auto first = stack().jobsOfRun(uidOf(ns, "first"));
  auto second = stack().jobsOfRun(uidOf(ns, "second"));
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 1u);
  // Never both at once: the second job was created after the first ended.
  ASSERT_TRUE(first[0].endTime && second[0].createTime);
  EXPECT_LE(*first[0].endTime, *second[0].createTime);
  EXPECT_NE(condition(ns, "second", "Ready"), "False/TenantQuotaExceeded");  // the gate has gone
}

TEST(Guardrails, ARunWhoseBucketIsMissingWaitsWithoutAJobAndStartsOnceItExists) {
  const std::string ns = "buckets";
  stack().createNamespace(ns);
  auto yaml = simpleRunManifest(ns, "late");
  yaml.replace(yaml.find("gs://test-bucket/"), std::string("gs://test-bucket/").size(), "gs://late-bucket/");
  apply(yaml);
  ASSERT_TRUE(waitFor([&] { return condition(ns, "late", "Ready") == "False/OutputBucketNotFound"; }, seconds(60)))
      << stack().operatorLog();
  EXPECT_TRUE(stack().jobsOfRun(uidOf(ns, "late")).empty());
  auto events = stack().kubectlOk("-n " + ns + " get events --field-selector involvedObject.name=late,reason=OutputBucketNotFound"
                                  " -o jsonpath='{.items[*].message}'");
  EXPECT_NE(events.find("gs://late-bucket"), std::string::npos) << events;

  stack().gcsClient().ensureBucket("late-bucket");
  ASSERT_TRUE(stack().waitForPhase(ns, "late", "Succeeded", seconds(120))) << stack().operatorLog();
  EXPECT_EQ(stack().jobsOfRun(uidOf(ns, "late")).size(), 1u);
  EXPECT_NE(condition(ns, "late", "Ready"), "False/OutputBucketNotFound");  // the gate has gone
  EXPECT_EQ(condition(ns, "late", "CheckpointsReadable"), "True/CheckpointsListed");
}

TEST(Guardrails, ForbiddenCheckpointsStillSubmitTheJobAndSaySoInACondition) {
  const std::string ns = "buckets";
  stack().createNamespace(ns);
  apply(simpleRunManifest(ns, "forbidden-ckpt"));  // its checkpoint listing gets 403 from the stub
  ASSERT_TRUE(waitFor([&] { return condition(ns, "forbidden-ckpt", "CheckpointsReadable") == "False/CheckpointsForbidden"; },
                      seconds(60)))
      << stack().getRun(ns, "forbidden-ckpt")["status"].dump() << "\n" << stack().operatorLog();
  ASSERT_TRUE(stack().waitForPhase(ns, "forbidden-ckpt", "Succeeded", seconds(120))) << stack().operatorLog();
  EXPECT_EQ(stack().jobsOfRun(uidOf(ns, "forbidden-ckpt")).size(), 1u);
  EXPECT_EQ(condition(ns, "forbidden-ckpt", "CheckpointsReadable"), "False/CheckpointsForbidden");
  auto events = stack().kubectlOk("-n " + ns + " get events --field-selector involvedObject.name=forbidden-ckpt,"
                                  "reason=CheckpointsUnreadable -o jsonpath='{.items[*].message}'");
  EXPECT_NE(events.find("from scratch"), std::string::npos) << events;
}

TEST(Guardrails, APolicyWhoseDataPrefixIsAnotherTeamsIsRefusedAndTheBucketNeverListed) {
  const std::string ns = "team-a";
  stack().createNamespace(ns);
  auto policy = [&](const std::string& name, const std::string& dataPrefix) {
    return "apiVersion: vto.dev/v1beta1\nkind: RetrainingPolicy\nmetadata: {name: " + name + ", namespace: " + ns +
           "}\nspec:\n  template:\n    spec:\n      trainer:\n        container:\n"
           "          imageUri: us-central1-docker.pkg.dev/test-project/train/model:1\n"
           "      resources: {machineType: n1-standard-4}\n"
           "      serviceAccount: trainer@test-project.iam.gserviceaccount.com\n"
           "      baseOutputDirectory: gs://test-bucket/team-a/" + name + "\n"
           "  triggers:\n    newData: {gcsPrefix: \"" + dataPrefix + "\", pollInterval: 1m}\n";
  };
  auto validOf = [&](const std::string& name) {
    auto out = stack().cluster().kubectl("-n " + ns + " get rtp " + name + " -o json");
    if (out.exitCode != 0) return nlohmann::json::object();
    for (const auto& c : nlohmann::json::parse(out.output)["status"].value("conditions", nlohmann::json::array()))
      if (c.value("type", "") == "Valid") return c;
    return nlohmann::json::object();
  };
  auto listedBucket = [](const std::string& bucket) {
    for (const auto& target : gcsStub().listings())
      if (target.find("/b/" + bucket + "/o?") != std::string::npos) return true;
    return false;
  };
  // An allowed policy first: its own bucket is listed, so the operator does reach GCS for policies.
  apply(policy("own-data", "gs://test-bucket/team-a/data/"));
  ASSERT_TRUE(waitFor([&] { return listedBucket("test-bucket"); }, seconds(60))) << stack().operatorLog();

  apply(policy("their-data", "gs://team-b-bucket/data/"));
  ASSERT_TRUE(waitFor([&] { return validOf("their-data").value("reason", "") == "TenantPolicyViolation"; }, seconds(60)))
      << validOf("their-data").dump() << "\n" << stack().operatorLog();
  EXPECT_EQ(validOf("their-data").value("status", ""), "False");
  EXPECT_NE(validOf("their-data").value("message", "").find("spec.triggers.newData.gcsPrefix"), std::string::npos);
  EXPECT_FALSE(listedBucket("team-b-bucket")) << "refused before the operator's identity lists it";
  auto runs = stack().kubectlOk("-n " + ns + " get trainingruns -l vto.dev/retraining-policy=their-data -o name");
  EXPECT_EQ(runs, "") << "and no run was created";
  stack().cluster().kubectl("-n " + ns + " delete rtp own-data their-data --wait=false");
}

// A tenant trying the known ways through (docs/security.md, "Threat model") is refused, and its
// neighbour's runs and manual retrains go on undisturbed while it holds its black-hole Prometheus.
TEST(Guardrails, AHostileTenantIsRefusedAndSlowsNoOtherTenant) {
  const std::string ns = "team-x", calm = "team-calm";
  stack().createNamespace(ns);
  stack().createNamespace(calm);
  auto policy = [](const std::string& space, const std::string& name, const std::string& extra) {
    return "apiVersion: vto.dev/v1beta1\nkind: RetrainingPolicy\nmetadata: {name: " + name + ", namespace: " + space +
           "}\nspec:\n  template:\n    spec:\n      trainer:\n        container:\n"
           "          imageUri: us-central1-docker.pkg.dev/test-project/train/model:1\n"
           "      resources: {machineType: n1-standard-4}\n"
           "      baseOutputDirectory: gs://test-bucket/" + space + "/" + name + "\n" + extra;
  };
  auto conditionOf = [](const std::string& space, const std::string& kind, const std::string& name, const std::string& type) {
    auto out = stack().cluster().kubectl("-n " + space + " get " + kind + " " + name + " -o json");
    if (out.exitCode != 0) return nlohmann::json::object();
    for (const auto& c : nlohmann::json::parse(out.output)["status"].value("conditions", nlohmann::json::array()))
      if (c.value("type", "") == type) return c;
    return nlohmann::json::object();
  };

  // 1. Twenty policies whose metric trigger names the black hole: each poll holds a connection until
  // its deadline. Polls run off the reconcile workers, one per namespace at a time.
  std::string many;
  for (int i = 0; i < 20; ++i)
    many += "---\n" + policy(ns, "hole-" + std::to_string(i),
                             "  triggers:\n    metric: {prometheusUrl: \"" + blackHole().url() +
                                 "\", query: up, below: 0.5, pollInterval: 10s}\n");
  apply(many);
  ASSERT_TRUE(waitFor([] { return blackHole().accepted() >= 2; }, seconds(60))) << stack().operatorLog();

  // 2. Meanwhile the neighbour's manual retrain and its run go on: a request handled and a run
  // created within a few seconds, not after twenty polls of ten seconds.
  apply(policy(calm, "on-request", ""));
  stack().kubectlOk("-n " + calm + " annotate rtp on-request vto.dev/retrain-requested=now");
  ASSERT_TRUE(waitFor(
      [&] {
        return stack().kubectlOk("-n " + calm + " get trainingruns -l vto.dev/retraining-policy=on-request -o name") != "";
      },
      seconds(20)))
      << "the neighbour's manual retrain waited behind the hostile tenant's polls\n" << stack().operatorLog();
  apply(simpleRunManifest(calm, "calm-run"));
  ASSERT_TRUE(stack().waitForPhase(calm, "calm-run", "Succeeded", seconds(120))) << stack().operatorLog();

  // 3. A Prometheus no rule names (here: a service on the operator's network) is refused before any
  // connection: no port scan, no answers read back through status.
  apply(policy(ns, "scan", "  triggers:\n    metric: {prometheusUrl: \"" + internalService().url() +
                               "\", query: up, below: 0.5}\n"));
  ASSERT_TRUE(waitFor([&] { return conditionOf(ns, "rtp", "scan", "Valid").value("reason", "") == "TenantPolicyViolation"; },
                      seconds(60)))
      << conditionOf(ns, "rtp", "scan", "Valid").dump() << "\n" << stack().operatorLog();
  EXPECT_NE(conditionOf(ns, "rtp", "scan", "Valid").value("message", "").find("spec.triggers.metric.prometheusUrl"),
            std::string::npos);
  EXPECT_EQ(internalService().accepted(), 0);

  // 4. A data prefix without its slash is a directory: team-x/ is listed, never team-xy's names.
  stack().gcsClient().upload("test-bucket", "team-xy/other-teams-secret.csv", "x");
  stack().gcsClient().upload("test-bucket", "team-x/data/new.csv", "x");
  apply(policy(ns, "no-slash", "  triggers:\n    newData: {gcsPrefix: \"gs://test-bucket/team-x\", pollInterval: 10s}\n"));
  auto listed = [](const std::string& prefix) {
    for (const auto& target : gcsStub().listings())
      if (target.find("/b/test-bucket/o?") != std::string::npos &&
          (target.find("prefix=" + prefix + "%2F") != std::string::npos || target.find("prefix=" + prefix + "/") != std::string::npos))
        return true;
    return false;
  };
  ASSERT_TRUE(waitFor([&] { return listed("team-x"); }, seconds(60))) << stack().operatorLog();
  for (const auto& target : gcsStub().listings()) EXPECT_EQ(target.find("prefix=team-x&"), std::string::npos) << target;
  auto status = stack().cluster().kubectl("-n " + ns + " get rtp no-slash -o jsonpath={.status}").output;
  EXPECT_EQ(status.find("team-xy"), std::string::npos) << status;

  // 5. The accelerator cap counts what Vertex holds: a run deleted with deletionPolicy Orphan leaves
  // its job, and the job's accelerators count until it ends. The emulator holds V100 jobs PENDING.
  vertex::CppRestTransport http;
  auto capacity = [&](bool available) {
    auto body = nlohmann::json{{"location", "us-central1"}, {"acceleratorType", "NVIDIA_TESLA_V100"}, {"available", available}};
    if (!available) body["mode"] = "hold";
    auto response = http.send({"POST", stack().emulator().url() + "/emulator/v1/capacity",
                               {{"Content-Type", "application/json"}}, body.dump(), seconds(5)});
    ASSERT_EQ(response.status, 200) << response.body;
  };
  capacity(false);
  auto gpuRun = [&](const std::string& name, const std::string& extra) {
    auto yaml = simpleRunManifest(ns, name, extra);
    const std::string cpu = "  resources:\n    machineType: n1-standard-4\n";
    return yaml.replace(yaml.find(cpu), cpu.size(),
                        "  resources:\n    machineType: n1-standard-16\n    acceleratorType: NVIDIA_TESLA_V100\n"
                        "    acceleratorCount: 4\n");
  };
  apply(gpuRun("orphaned", "  deletionPolicy: Orphan\n"));
  ASSERT_TRUE(waitFor([&] { return !stack().getRun(ns, "orphaned")["status"]["job"].is_null(); }, seconds(60)))
      << stack().operatorLog();
  auto orphanUid = uidOf(ns, "orphaned");
  stack().kubectlOk("-n " + ns + " delete trun orphaned --wait=true --timeout=60s");
  ASSERT_EQ(stack().jobsOfRun(orphanUid).size(), 1u);
  // And after a restart, when no live run follows a job in the orphan's project and location: the
  // new process lists vto's unfinished jobs where the cap's rule allows before admitting anyone.
  ASSERT_EQ(stack().stopOperator(SIGTERM), 0);
  stack().startOperator(operatorFlags());
  apply(gpuRun("next", ""));
  auto readyMessage = [&] {
    for (const auto& c : stack().getRun(ns, "next")["status"].value("conditions", nlohmann::json::array()))
      if (c.value("type", "") == "Ready") return c.value("message", "");
    return std::string();
  };
  // Held by the orphan's claim itself, not only by the wait for the first list.
  ASSERT_TRUE(waitFor(
      [&] {
        return condition(ns, "next", "Ready") == "False/TenantQuotaExceeded" &&
               readyMessage().find("first list") == std::string::npos;
      },
      seconds(60)))
      << stack().getRun(ns, "next")["status"].dump() << "\n" << stack().operatorLog();
  EXPECT_TRUE(stack().jobsOfRun(uidOf(ns, "next")).empty());

  // 6. Nor can the cap be escaped through a capacity fallback: a CPU-only run whose placement stocks
  // out, with a fallback that asks for 4 V100s, waits for the cap like any other.
  {
    auto response = http.send({"POST", stack().emulator().url() + "/emulator/v1/capacity",
                               {{"Content-Type", "application/json"}},
                               R"({"location": "us-east1", "available": false, "mode": "fail"})", seconds(5)});
    ASSERT_EQ(response.status, 200) << response.body;
  }
  apply(simpleRunManifest(ns, "sneaky",
                          "  location: us-east1\n  capacity:\n    fallbacks:\n      - location: us-central1\n"
                          "        resources: {machineType: n1-standard-16, acceleratorType: NVIDIA_TESLA_V100, "
                          "acceleratorCount: 4}\n    blockFor: 1h\n"));
  ASSERT_TRUE(waitFor(
      [&] {
        auto run = stack().getRun(ns, "sneaky");
        return condition(ns, "sneaky", "Ready") == "False/TenantQuotaExceeded" && run.is_object() &&
               run["status"].value("attempts", nlohmann::json::array()).size() == 2;
      },
      seconds(60)))
      << stack().getRun(ns, "sneaky")["status"].dump() << "\n" << stack().operatorLog();
  EXPECT_EQ(stack().getRun(ns, "sneaky")["status"]["attempts"][1].value("placement", -1), 1);
  EXPECT_TRUE(stack().jobsOfRun(uidOf(ns, "sneaky")).empty()) << "no job on the GPU fallback while the cap is held";
  // And a failover loop (a job every second, forever) is refused at the door.
  {
    std::string path = stack().dir() + "/loop.yaml";
    std::ofstream(path) << simpleRunManifest(ns, "loop",
                                             "  capacity:\n    fallbacks: [{location: us-east4}]\n    maxQueueTime: 1s\n"
                                             "    blockFor: 1s\n    giveUpAfter: 87600h\n");
    auto refused = stack().cluster().kubectl("apply -f '" + path + "'");
    EXPECT_NE(refused.exitCode, 0) << refused.output;
    EXPECT_NE(refused.output.find("maxQueueTime must be 0s (never) or at least 5m"), std::string::npos) << refused.output;
    EXPECT_NE(refused.output.find("blockFor must be at least 1m"), std::string::npos) << refused.output;
    EXPECT_NE(refused.output.find("giveUpAfter must be at most 720h"), std::string::npos) << refused.output;
  }
  capacity(true);  // the orphaned job runs and ends; only then does the claim go, and "next" starts
  ASSERT_TRUE(stack().waitForPhase(ns, "next", "Succeeded", seconds(180))) << stack().operatorLog();
  auto orphan = stack().jobsOfRun(orphanUid);
  auto next = stack().jobsOfRun(uidOf(ns, "next"));
  ASSERT_EQ(orphan.size(), 1u);
  ASSERT_EQ(next.size(), 1u);
  ASSERT_TRUE(orphan[0].endTime && next[0].createTime);
  EXPECT_LE(*orphan[0].endTime, *next[0].createTime);

  // The bound held all along: the tenant's polls one at a time (four workers would hold four).
  EXPECT_LE(blackHole().peakOpen(), 2);  // one at a time; a closing connection may be counted as the next opens
  std::string names;
  for (int i = 0; i < 20; ++i) names += " hole-" + std::to_string(i);
  stack().cluster().kubectl("-n " + ns + " delete rtp" + names + " scan no-slash --wait=false");
}

// Ends a running job as Vertex would (the emulator's control API) with what its code wrote last.
void failWithLog(const std::string& job, const std::vector<std::string>& log) {
  vertex::PooledHttpTransport http;
  RealClock clock;
  vertex::MetadataTokenSource tokens(http, clock, stack().emulator().hostPort());
  nlohmann::json body = {{"failureClass", "UserError"}};
  if (!log.empty()) body["log"] = log;
  auto failed = http.send({"POST", stack().emulator().url() + "/emulator/v1/" + job + ":fail",
                           {{"Content-Type", "application/json"}, {"Authorization", "Bearer " + tokens.token().value}},
                           body.dump(), seconds(10)});
  ASSERT_EQ(failed.status, 200) << failed.body;
}

std::string jobOf(const std::string& ns, const std::string& name) {
  return stack().getRun(ns, name).value(nlohmann::json::json_pointer("/status/job/name"), std::string());
}

std::string logTailOf(const std::string& ns, const std::string& name) {
  auto run = stack().getRun(ns, name);
  if (!run.is_object()) return "";
  return run.value(nlohmann::json::json_pointer("/status/attempts/0/logTail"), std::string());
}

bool hasFailedEvent(const std::string& ns, const std::string& name) {
  auto out = stack().cluster().kubectl("-n " + ns + " get events --field-selector reason=Failed,involvedObject.name=" +
                                       name + " -o name");
  return out.exitCode == 0 && !out.output.empty();
}

// A job whose code wrote a million newlines (four Cloud Logging entries of 250,000, the most an
// entry holds) fails: its tail is read from the newest lines of each entry, not trimmed a line at a
// time, and a neighbour failing at the same moment gets its Event and its tail within seconds.
TEST(Guardrails, AMillionNewlinesInAJobsLogDelayNoTenantsFailure) {
  const std::string ns = "team-x", calm = "team-calm";
  stack().createNamespace(ns);
  stack().createNamespace(calm);
  apply(simpleRunManifest(ns, "newlines"));
  apply(simpleRunManifest(calm, "calm-fails"));
  ASSERT_TRUE(stack().waitForPhase(ns, "newlines", "Running", seconds(60))) << stack().operatorLog();
  ASSERT_TRUE(stack().waitForPhase(calm, "calm-fails", "Running", seconds(60))) << stack().operatorLog();
  std::vector<std::string> flood(4, std::string(250000, '\n'));
  flood.push_back("ValueError: the last of a million newlines");
  failWithLog(jobOf(ns, "newlines"), flood);
  failWithLog(jobOf(calm, "calm-fails"), {});

  ASSERT_TRUE(waitFor([&] { return !logTailOf(calm, "calm-fails").empty() && hasFailedEvent(calm, "calm-fails"); },
                      seconds(20)))
      << "the neighbour's failure waited\n" << stack().operatorLog();
  EXPECT_NE(logTailOf(calm, "calm-fails").find("ValueError: Input 'features' contains NaN values"), std::string::npos);
  std::string tail;
  ASSERT_TRUE(waitFor(
      [&] {
        tail = logTailOf(ns, "newlines");
        return tail.find("ValueError") != std::string::npos && hasFailedEvent(ns, "newlines");
      },
      seconds(20)))
      << tail << "\n" << stack().operatorLog();
  EXPECT_LE(tail.size(), 4096u);
  EXPECT_NE(tail.find("ValueError: the last of a million newlines"), std::string::npos) << tail;
  stack().cluster().kubectl("-n " + ns + " delete trun newlines --wait=false");
  stack().cluster().kubectl("-n " + calm + " delete trun calm-fails --wait=false");
}

// A shared project: team-x's run whose status (status RBAC) is made to name team-calm's failed job in
// the same project and location. vto reads a log only for a job it made for that very run, so the
// thief's tail says why it was not read, and the victim's secret never leaves the victim's run.
TEST(Guardrails, AStatusNamingAnotherTeamsJobInTheSameProjectGetsNoLog) {
  const std::string thiefNs = "team-x", victimNs = "team-calm";
  stack().createNamespace(thiefNs);
  stack().createNamespace(victimNs);
  apply(simpleRunManifest(victimNs, "victim"));
  apply(simpleRunManifest(thiefNs, "thief"));
  ASSERT_TRUE(stack().waitForPhase(victimNs, "victim", "Running", seconds(60))) << stack().operatorLog();
  ASSERT_TRUE(stack().waitForPhase(thiefNs, "thief", "Running", seconds(60))) << stack().operatorLog();
  const std::string victimJob = jobOf(victimNs, "victim");
  failWithLog(victimJob, {"API_KEY=sk-team-calm-secret"});
  failWithLog(jobOf(thiefNs, "thief"), {"the thief's own line"});
  ASSERT_TRUE(waitFor([&] { return logTailOf(victimNs, "victim").find("sk-team-calm-secret") != std::string::npos; }, seconds(30)))
      << "the victim reads its own log\n" << stack().operatorLog();
  ASSERT_TRUE(waitFor([&] { return !logTailOf(thiefNs, "thief").empty(); }, seconds(30))) << stack().operatorLog();

  auto patch = nlohmann::json::array({{{"op", "replace"}, {"path", "/status/attempts/0/jobName"}, {"value", victimJob}},
                                      {{"op", "remove"}, {"path", "/status/attempts/0/logTail"}}});
  stack().kubectlOk("-n " + thiefNs + " patch trun thief --subresource=status --type=json -p '" + patch.dump() + "'");
  std::string tail;
  ASSERT_TRUE(waitFor(
      [&] {
        tail = logTailOf(thiefNs, "thief");
        return !tail.empty();
      },
      seconds(30)))
      << stack().getRun(thiefNs, "thief")["status"].dump() << "\n" << stack().operatorLog();
  EXPECT_EQ(tail.find("sk-team-calm-secret"), std::string::npos) << tail;
  EXPECT_NE(tail.find("not read"), std::string::npos) << tail;
  EXPECT_EQ(stack().operatorLog().find("sk-team-calm-secret"), std::string::npos) << "nor in the operator's own log";
  stack().cluster().kubectl("-n " + thiefNs + " delete trun thief --wait=false");
  stack().cluster().kubectl("-n " + victimNs + " delete trun victim --wait=false");
}

}  // namespace
}  // namespace vto::testing
