// `vto lint` refuses what the real API server refuses (duplicate keys, unknown metadata fields,
// strings over the CRD's maxLength), refuses hostile YAML (alias bombs, alias cycles) with a clear
// error, and checks manifests against tenancy rules offline (`--tenancy FILE`).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/subprocess.h"
#include "tests/support/test_cluster.h"
#include "tests/support/wait.h"

namespace vto::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string quote(const std::string& text) { return "'" + text + "'"; }
std::string vto(const std::string& args) { return quote(binDir() + "/vto") + " " + args; }

// Writes `text` to a file of its own under the test's temporary directory.
std::string writeFile(const std::string& name, const std::string& text) {
  static const fs::path dir = makeTempDir("vto-lint-hardening");
  auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

std::string run(const std::string& metadata, const std::string& extraSpec) {
  return "apiVersion: vto.dev/v1beta1\nkind: TrainingRun\nmetadata: " + metadata +
         "\nspec:\n  trainer:\n    container: {imageUri: us-central1-docker.pkg.dev/p/r/img:1}\n"
         "  resources: {machineType: n1-standard-8, acceleratorType: NVIDIA_TESLA_T4, acceleratorCount: 1}\n" +
         extraSpec;
}

class LintAgreesWithTheApiServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto& cluster = sharedCluster();
    auto applied = runShell(vto("crd") + " | kubectl --kubeconfig=" + quote(cluster.kubeconfig()) + " apply --server-side -f -");
    ASSERT_EQ(applied.exitCode, 0) << applied.output;
    ASSERT_TRUE(waitFor([&] { return cluster.kubectl("get trun -A").exitCode == 0; }, 60s));
  }

  // Both must refuse: `vto lint` with `lintSays` in its output, and a server-side dry run.
  static void bothRefuse(const std::string& name, const std::string& manifest, const std::string& lintSays) {
    auto file = writeFile(name + ".yaml", manifest);
    auto lint = runShell(vto("lint -f " + quote(file)));
    EXPECT_EQ(lint.exitCode, 1) << lint.output;
    EXPECT_NE(lint.output.find(lintSays), std::string::npos) << lint.output;
    auto server = sharedCluster().kubectl("apply --dry-run=server --validate=strict -n default -f " + quote(file));
    EXPECT_NE(server.exitCode, 0) << "the API server accepted what lint refuses: " << server.output;
  }
};

TEST_F(LintAgreesWithTheApiServer, AValidRunPassesBoth) {
  auto file = writeFile("valid.yaml", run("{name: valid}", "  baseOutputDirectory: gs://b/out\n"));
  auto lint = runShell(vto("lint -f " + quote(file)));
  EXPECT_EQ(lint.exitCode, 0) << lint.output;
  auto server = sharedCluster().kubectl("apply --dry-run=server --validate=strict -n default -f " + quote(file));
  EXPECT_EQ(server.exitCode, 0) << server.output;
}

// kubectl turns YAML into JSON and keeps the last of duplicate keys, so the body goes to the API
// server as written (JSON is YAML, so lint reads the same file).
TEST_F(LintAgreesWithTheApiServer, DuplicateKeys) {
  auto file = writeFile("duplicate.json",
                        R"({"apiVersion": "vto.dev/v1beta1", "kind": "TrainingRun", "metadata": {"name": "dup"},
 "spec": {"trainer": {"container": {"imageUri": "us-central1-docker.pkg.dev/p/r/img:1"}},
          "baseOutputDirectory": "gs://b/one", "baseOutputDirectory": "gs://b/two"}})");
  auto lint = runShell(vto("lint -f " + quote(file)));
  EXPECT_EQ(lint.exitCode, 1) << lint.output;
  EXPECT_NE(lint.output.find("line 3: duplicate key \"baseOutputDirectory\""), std::string::npos) << lint.output;
  auto server = sharedCluster().kubectl(
      "create --raw '/apis/vto.dev/v1beta1/namespaces/default/trainingruns?dryRun=All&fieldValidation=Strict' -f " +
      quote(file));
  EXPECT_NE(server.exitCode, 0) << "the API server accepted what lint refuses: " << server.output;
  EXPECT_NE(server.output.find("duplicate field"), std::string::npos) << server.output;
}

TEST_F(LintAgreesWithTheApiServer, UnknownMetadataFields) {
  bothRefuse("metadata", run("{name: meta, lables: {team: a}}", "  baseOutputDirectory: gs://b/out\n"),
             "ERROR metadata.lables: unknown field");
}

TEST_F(LintAgreesWithTheApiServer, MaxLength) {
  bothRefuse("maxlength", run("{name: long}", "  baseOutputDirectory: gs://b/out\n  displayName: " + std::string(129, 'd') + "\n"),
             "ERROR spec.displayName: is 129 characters long; the API server refuses more than 128");
}

std::string rawRun(const std::string& name, const std::string& pool) {
  return "apiVersion: vto.dev/v1beta1\nkind: TrainingRun\nmetadata: {name: " + name +
         "}\nspec:\n  baseOutputDirectory: gs://b/out\n  workerPoolSpecs:\n    - " + pool + "\n";
}

// Raw pools: Vertex's camelCase names only (Vertex would also read snake_case ones, which the tenancy
// rules would not), counts within the CRD's maximums; a valid pool in every form Vertex reads passes.
TEST_F(LintAgreesWithTheApiServer, RawPoolKeys) {
  auto valid = writeFile("raw-valid.yaml",
                         rawRun("raw-ok", "{machineSpec: {machineType: n1-standard-8, acceleratorType: NVIDIA_TESLA_T4, "
                                          "acceleratorCount: \"2\"}, replicaCount: \"2\", diskSpec: {bootDiskSizeGb: 200}, "
                                          "nfsMounts: [{server: 10.0.0.2, path: /a, mountPoint: a}], "
                                          "containerSpec: {imageUri: us-docker.pkg.dev/p/r/i:1, env: [{name: A, value: b}]}}"));
  auto lint = runShell(vto("lint -f " + quote(valid)));
  EXPECT_EQ(lint.exitCode, 0) << lint.output;
  auto server = sharedCluster().kubectl("apply --dry-run=server --validate=strict -n default -f " + quote(valid));
  EXPECT_EQ(server.exitCode, 0) << server.output;

  bothRefuse("raw-snake", rawRun("raw-snake", "{machine_spec: {machine_type: a3-highgpu-8g, accelerator_count: 8}, "
                                              "replica_count: \"64\", containerSpec: {imageUri: us-docker.pkg.dev/p/r/i:1}}"),
             "ERROR spec.workerPoolSpecs[0].machine_spec: unknown field; write it as machineSpec");
  bothRefuse("raw-nested", rawRun("raw-nested", "{machineSpec: {machineType: n1-standard-8, accelerator_count: 8}, "
                                                "containerSpec: {imageUri: us-docker.pkg.dev/p/r/i:1}}"),
             "ERROR spec.workerPoolSpecs[0].machineSpec.accelerator_count: unknown field; write it as acceleratorCount");
  bothRefuse("raw-replicas", rawRun("raw-replicas", "{machineSpec: {machineType: n1-standard-8}, replicaCount: 20000, "
                                                    "containerSpec: {imageUri: us-docker.pkg.dev/p/r/i:1}}"),
             "ERROR spec.workerPoolSpecs[0].replicaCount: must be a whole number from 0 to 10000");
  bothRefuse("raw-enum-number", rawRun("raw-enum-number", "{machineSpec: {machineType: n1-standard-8, acceleratorType: 5, "
                                                          "acceleratorCount: 1}, containerSpec: {imageUri: us-docker.pkg.dev/p/r/i:1}}"),
             "ERROR spec.workerPoolSpecs[0].machineSpec.acceleratorType: must be a string");
}

TEST(LintHostileYaml, AliasBombAndCycleAreRefusedWithAClearError) {
  auto bomb = runShell(vto("lint -f " + quote((fs::path(sourceDir()) / "tests/fuzz/corpus/yaml-alias-billion-laughs.yaml").string())));
  EXPECT_EQ(bomb.exitCode, 1);
  EXPECT_NE(bomb.output.find("YAML aliases are limited to 10000 expansions"), std::string::npos) << bomb.output;
  auto cycle = runShell(vto("render -f " + quote((fs::path(sourceDir()) / "tests/fuzz/corpus/yaml-alias-self-reference.yaml").string())));
  EXPECT_EQ(cycle.exitCode, 1) << "a crash is not an answer: " << cycle.output;
  EXPECT_NE(cycle.output.find("(a cycle); write the value out"), std::string::npos) << cycle.output;
}

TEST(LintTenancy, ChecksManifestsAgainstTheOperatorsConfigFile) {
  auto config = writeFile("config.yaml", R"(default-project: acme-ml
default-location: us-central1
tenancy:
  - namespaces: [team-a]
    projects: [acme-ml]
    bucketPrefixes: [gs://acme-ml-out/]
    imagePrefixes: [us-central1-docker.pkg.dev/p/, us-central1-docker.pkg.dev/acme-ml/]
  - namespaceSelector: {matchLabels: {tier: research}}
    projects: [research]
    imagePrefixes: [us-central1-docker.pkg.dev/p/]
)");
  auto allowed = writeFile("allowed.yaml", run("{name: ok, namespace: team-a}", "  baseOutputDirectory: gs://acme-ml-out/x\n"));
  auto ok = runShell(vto("lint --tenancy " + quote(config) + " -f " + quote(allowed)));
  EXPECT_EQ(ok.exitCode, 0) << ok.output;

  auto otherBucket = writeFile("bucket.yaml", run("{name: bad, namespace: team-a}", "  baseOutputDirectory: gs://team-b-out/x\n"));
  auto refused = runShell(vto("lint --tenancy " + quote(config) + " -f " + quote(otherBucket)));
  EXPECT_EQ(refused.exitCode, 1) << refused.output;
  EXPECT_NE(refused.output.find("ERROR spec.baseOutputDirectory: location \"gs://team-b-out/x\" is not allowed for this "
                                "namespace by tenancy[0] (namespaces team-a); allowed: gs://acme-ml-out/"),
            std::string::npos)
      << refused.output;

  // Labels are unknown offline: the selector rule is assumed to match, and lint says so.
  auto research = writeFile("research.yaml", run("{name: r, namespace: lab}", "  project: research\n  baseOutputDirectory: gs://r/x\n"));
  auto assumed = runShell(vto("lint --tenancy " + quote(config) + " -f " + quote(research)));
  EXPECT_EQ(assumed.exitCode, 0) << assumed.output;
  EXPECT_NE(assumed.output.find("namespace labels are unknown offline: assumed that tenancy[1]"), std::string::npos)
      << assumed.output;

  // A RetrainingPolicy: its template's fields and its data prefix (which the operator would list).
  auto policy = [&](const std::string& file, const std::string& output, const std::string& data) {
    return writeFile(file, "apiVersion: vto.dev/v1beta1\nkind: RetrainingPolicy\nmetadata: {name: p, namespace: team-a}\n"
                           "spec:\n  template:\n    spec:\n      trainer:\n        container:\n"
                           "          imageUri: us-central1-docker.pkg.dev/acme-ml/r/img:1\n"
                           "      resources: {machineType: n1-standard-4}\n      baseOutputDirectory: " + output +
                           "\n  triggers:\n    newData: {gcsPrefix: \"" + data + "\"}\n");
  };
  auto goodPolicy = runShell(vto("lint --tenancy " + quote(config) + " -f " +
                                 quote(policy("policy-ok.yaml", "gs://acme-ml-out/p", "gs://acme-ml-out/data/"))));
  EXPECT_EQ(goodPolicy.exitCode, 0) << goodPolicy.output;
  struct Refused {
    std::string output, data, finding;
  };
  for (const auto& c : {Refused{"gs://acme-ml-out/p", "gs://team-b-out/data/",
                                "ERROR spec.triggers.newData.gcsPrefix: location \"gs://team-b-out/data/\" is not allowed"},
                        Refused{"gs://team-b-out/p", "gs://acme-ml-out/data/",
                                "ERROR spec.template.spec.baseOutputDirectory: location \"gs://team-b-out/p\""}}) {
    auto refusedPolicy = runShell(vto("lint --tenancy " + quote(config) + " -f " + quote(policy("policy-bad.yaml", c.output, c.data))));
    EXPECT_EQ(refusedPolicy.exitCode, 1) << refusedPolicy.output;
    EXPECT_NE(refusedPolicy.output.find(c.finding), std::string::npos) << refusedPolicy.output;
  }

  auto badRules = writeFile("bad-rules.yaml", "tenancy:\n  - namespaces: [a]\n    project: [p]\n");
  auto usage = runShell(vto("lint --tenancy " + quote(badRules) + " -f " + quote(allowed)));
  EXPECT_EQ(usage.exitCode, 2) << usage.output;
  EXPECT_NE(usage.output.find("tenancy[0].project: unknown field"), std::string::npos) << usage.output;
}

// Every rule field of API.md's contract, offline: what each closed field refuses, and what it allows.
TEST(LintTenancy, KnowsEveryRuleField) {
  auto config = writeFile("config-all.yaml", R"(default-project: acme-ml
default-location: us-central1
tenancy:
  - namespaces: [team-a]
    projects: [acme-ml]
    locations: [us-central1]
    serviceAccounts: [trainer@acme-ml.iam.gserviceaccount.com]
    bucketPrefixes: [gs://acme-ml-out/]
    acceleratorTypes: [NVIDIA_TESLA_T4]
    maxAccelerators: 16
    prometheusUrls: [https://prometheus.monitoring:9090]
    networks: [{name: projects/123456/global/networks/team-a-vpc, reservedIpRanges: [team-a-range]}]
    models: [fraud]
    nfsServers: [10.0.0.2]
    reservations: [projects/acme-ml/zones/us-central1-a/reservations/team-a]
    interactiveShell: false
    imagePrefixes: [us-central1-docker.pkg.dev/p/, us-central1-docker.pkg.dev/acme-ml/, us-docker.pkg.dev/p/]
    labels: {experiment: [], cost-center: [cc-team-a]}
    tensorboards: [projects/acme-ml/locations/us-central1/tensorboards/1]
    kmsKeys: [projects/acme-ml/locations/us-central1/keyRings/ml/cryptoKeys/team-a]
)");
  const std::string base = "  serviceAccount: trainer@acme-ml.iam.gserviceaccount.com\n  baseOutputDirectory: gs://acme-ml-out/x\n";
  auto lintRun = [&](const std::string& name, const std::string& extra) {
    auto file = writeFile(name + ".yaml", run("{name: " + name + ", namespace: team-a}", base + extra));
    return runShell(vto("lint --tenancy " + quote(config) + " -f " + quote(file)));
  };
  auto ok = lintRun("all-ok", "  network: projects/123456/global/networks/team-a-vpc\n  reservedIpRanges: [team-a-range]\n"
                              "  tensorboard: projects/acme-ml/locations/us-central1/tensorboards/1\n"
                              "  encryptionKmsKeyName: projects/acme-ml/locations/us-central1/keyRings/ml/cryptoKeys/team-a\n"
                              "  labels: {experiment: lr-sweep, cost-center: cc-team-a}\n");
  EXPECT_EQ(ok.exitCode, 0) << ok.output;
  struct Case {
    std::string name, extra, finding;
  };
  for (const auto& c : {Case{"net", "  network: projects/999/global/networks/team-b-vpc\n",
                             "ERROR spec.network: network \"projects/999/global/networks/team-b-vpc\" is not allowed"},
                        Case{"ranges", "  reservedIpRanges: [team-b-range]\n", "ERROR spec.reservedIpRanges: reserved IP ranges belong to a network"},
                        Case{"other-range", "  network: projects/123456/global/networks/team-a-vpc\n  reservedIpRanges: [team-b-range]\n",
                             "ERROR spec.reservedIpRanges[0]: reserved IP range \"team-b-range\" is not allowed"},
                        Case{"tb", "  tensorboard: projects/acme-ml/locations/us-central1/tensorboards/2\n",
                             "ERROR spec.tensorboard: TensorBoard \"projects/acme-ml/locations/us-central1/tensorboards/2\" is not "
                             "allowed for this namespace by tenancy[0] (namespaces team-a); allowed: "
                             "projects/acme-ml/locations/us-central1/tensorboards/1"},
                        Case{"kms", "  encryptionKmsKeyName: projects/acme-ml/locations/us/keyRings/r/cryptoKeys/team-b\n",
                             "ERROR spec.encryptionKmsKeyName: KMS key"},
                        Case{"label", "  labels: {cost-center: cc-team-b}\n",
                             "ERROR spec.labels.cost-center: label value \"cost-center=cc-team-b\" is not allowed"},
                        Case{"serving", "  model: {model: fraud, servingContainer: {imageUri: docker.io/someone/serve:1}}\n",
                             "ERROR spec.model.servingContainer.imageUri: image \"docker.io/someone/serve:1\" is not allowed"},
                        Case{"shell", "  enableWebAccess: true\n", "ERROR spec.enableWebAccess: interactive access"}}) {
    auto refused = lintRun(c.name, c.extra);
    EXPECT_EQ(refused.exitCode, 1) << c.name << ": " << refused.output;
    EXPECT_NE(refused.output.find(c.finding), std::string::npos) << c.name << ": " << refused.output;
  }

  auto pool = [&](const std::string& name, const std::string& extra) {
    auto file = writeFile(name + ".yaml",
                          "apiVersion: vto.dev/v1beta1\nkind: TrainingRun\nmetadata: {name: " + name +
                              ", namespace: team-a}\nspec:\n" + base +
                              "  workerPoolSpecs:\n    - {machineSpec: {" + extra +
                              ", containerSpec: {imageUri: us-docker.pkg.dev/p/r/i:1}}\n");
    return runShell(vto("lint --tenancy " + quote(config) + " -f " + quote(file)));
  };
  auto nfs = pool("nfs-ok", "machineType: n1-standard-8}, nfsMounts: [{server: 10.0.0.2, path: /a, mountPoint: a}]");
  EXPECT_EQ(nfs.exitCode, 0) << nfs.output;
  auto otherNfs = pool("nfs-bad", "machineType: n1-standard-8}, nfsMounts: [{server: 10.9.9.9, path: /a, mountPoint: a}]");
  EXPECT_NE(otherNfs.output.find("ERROR spec.workerPoolSpecs[0].nfsMounts[0].server: NFS server \"10.9.9.9\" is not allowed"),
            std::string::npos)
      << otherNfs.output;
  auto anyReservation = pool("rsv-any", "machineType: n1-standard-8, reservationAffinity: {reservationAffinityType: ANY_RESERVATION}}");
  EXPECT_NE(anyReservation.output.find("ERROR spec.workerPoolSpecs[0].machineSpec.reservationAffinity.reservationAffinityType"),
            std::string::npos)
      << anyReservation.output;
  auto cpu = pool("cpu", "machineType: n1-standard-8}, replicaCount: 8");
  EXPECT_EQ(cpu.exitCode, 0) << "n1-standard-8 holds no accelerators: " << cpu.output;
  auto chips = pool("tpu-chips", "machineType: ct5lp-hightpu-4t, acceleratorType: TPU_V5_LITEPOD, acceleratorCount: 4}, "
                                 "replicaCount: 8");
  EXPECT_NE(chips.output.find("ERROR spec.workerPoolSpecs[0].machineSpec.acceleratorType: accelerator type \"TPU_V5_LITEPOD\""),
            std::string::npos)
      << chips.output;

  auto policy = [&](const std::string& name, const std::string& url) {
    auto file = writeFile(name + ".yaml",
                          "apiVersion: vto.dev/v1beta1\nkind: RetrainingPolicy\nmetadata: {name: p, namespace: team-a}\n"
                          "spec:\n  template:\n    spec:\n      trainer:\n        container:\n"
                          "          imageUri: us-central1-docker.pkg.dev/acme-ml/r/img:1\n"
                          "      resources: {machineType: n1-standard-4}\n"
                          "      serviceAccount: trainer@acme-ml.iam.gserviceaccount.com\n"
                          "      baseOutputDirectory: gs://acme-ml-out/p\n"
                          "  triggers:\n    metric: {prometheusUrl: \"" + url + "\", query: up, below: 1}\n");
    return runShell(vto("lint --tenancy " + quote(config) + " -f " + quote(file)));
  };
  auto listed = policy("prom-ok", "https://Prometheus.Monitoring:9090/");
  EXPECT_EQ(listed.exitCode, 0) << listed.output;
  auto other = policy("prom-bad", "http://team-b-api.team-b:8080");
  EXPECT_EQ(other.exitCode, 1) << other.output;
  EXPECT_NE(other.output.find("ERROR spec.triggers.metric.prometheusUrl: Prometheus URL \"http://team-b-api.team-b:8080\" "
                              "is not allowed for this namespace by tenancy[0] (namespaces team-a); allowed: "
                              "https://prometheus.monitoring:9090"),
            std::string::npos)
      << other.output;

  auto badNetwork = writeFile("bad-network.yaml", "tenancy:\n  - namespaces: [a]\n    networks: [team-a-vpc]\n");
  auto usage = runShell(vto("lint --tenancy " + quote(badNetwork) + " -f " + quote(writeFile("any.yaml", run("{name: x}", base)))));
  EXPECT_EQ(usage.exitCode, 2) << usage.output;
  EXPECT_NE(usage.output.find("tenancy[0].networks[0]: \"team-a-vpc\" is not a VPC network name"), std::string::npos)
      << usage.output;
}

// `vto run --config`: the tenancy rules are read strictly before anything starts, and no rules is a
// warning. (It stops at the missing kubeconfig right after, so no cluster is needed.)
TEST(RunConfig, TenancyIsParsedStrictlyAndNoRulesIsAWarning) {
  auto bad = writeFile("run-bad.yaml", "log-format: text\ntenancy:\n  - namespaces: [a]\n    projets: [x]\n");
  auto refused = runShell(vto("run --kubeconfig /nonexistent --config " + quote(bad)));
  EXPECT_EQ(refused.exitCode, 2) << refused.output;
  EXPECT_NE(refused.output.find("tenancy[0].projets: unknown field"), std::string::npos) << refused.output;
  auto none = writeFile("run-none.yaml", "log-format: text\n");
  auto warned = runShell(vto("run --kubeconfig /nonexistent --config " + quote(none)));
  EXPECT_NE(warned.output.find("no tenancy rules configured: every namespace may use every project"), std::string::npos)
      << warned.output;
  auto two = writeFile("run-two.yaml", "log-format: text\ntenancy:\n  - namespaces: [a]\n  - namespaces: [b]\n");
  auto parsed = runShell(vto("run --kubeconfig /nonexistent --config " + quote(two)));
  EXPECT_NE(parsed.output.find("tenancy: 2 rule(s)"), std::string::npos) << parsed.output;
}

// The chart: the NetworkPolicy is on by default and admits only metrics scrapes and, to the probe
// port, the pod's own node (which a NetworkPolicy always admits: the chart writes no rule for it, as
// a rule without `from` would admit anyone); healthFrom adds peers, and an empty peer is refused.
// `tenancy:` from the values reaches the operator's config file intact.
TEST(Chart, NetworkPolicyAndTenancyRender) {
  auto chart = quote((fs::path(sourceDir()) / "helm/vto").string());
  auto policy = runShell(quote(binDir() + "/helm") + " template t " + chart + " --show-only templates/networkpolicy.yaml");
  ASSERT_EQ(policy.exitCode, 0) << policy.output;
  EXPECT_NE(policy.output.find("kind: NetworkPolicy"), std::string::npos) << policy.output;
  EXPECT_NE(policy.output.find("policyTypes: [Ingress]"), std::string::npos) << policy.output;
  EXPECT_NE(policy.output.find("port: 8080"), std::string::npos) << policy.output;
  EXPECT_EQ(policy.output.find("port: 8081"), std::string::npos) << "by default no rule admits anyone to the probes:\n"
                                                                 << policy.output;
  EXPECT_NE(policy.output.find("app.kubernetes.io/name: prometheus"), std::string::npos) << policy.output;
  EXPECT_EQ(policy.output.find("port: 80\n"), std::string::npos) << policy.output;
  auto nodes = writeFile("node-cidr.yaml", "networkPolicy:\n  healthFrom: [{ipBlock: {cidr: 10.128.0.0/20}}]\n");
  auto fromNodes = runShell(quote(binDir() + "/helm") + " template t " + chart + " -f " + quote(nodes) +
                            " --show-only templates/networkpolicy.yaml");
  ASSERT_EQ(fromNodes.exitCode, 0) << fromNodes.output;
  auto probeRule = fromNodes.output.find("port: 8081");
  ASSERT_NE(probeRule, std::string::npos) << fromNodes.output;
  EXPECT_NE(fromNodes.output.find("cidr: 10.128.0.0/20", probeRule), std::string::npos) << fromNodes.output;
  auto emptyPeer = writeFile("empty-peer.yaml", "networkPolicy:\n  healthFrom: [{}]\n");
  EXPECT_NE(runShell(quote(binDir() + "/helm") + " template t " + chart + " -f " + quote(emptyPeer)).exitCode, 0)
      << "values.schema.json accepted an empty peer";

  auto values = writeFile("values.yaml", "tenancy:\n  - namespaces: [team-a]\n    projects: [acme-ml]\n    maxAccelerators: 4\n");
  auto config = runShell(quote(binDir() + "/helm") + " template t " + chart + " -f " + quote(values) +
                         " --show-only templates/configmap.yaml");
  ASSERT_EQ(config.exitCode, 0) << config.output;
  // The rendered config.yaml, as `vto lint --tenancy` reads the operator's config file.
  auto body = config.output.substr(config.output.find("config.yaml: |") + 15);
  std::string unindented;
  for (size_t at = 0; at < body.size();) {
    auto end = body.find('\n', at);
    auto line = body.substr(at, end == std::string::npos ? std::string::npos : end - at);
    unindented += (line.rfind("    ", 0) == 0 ? line.substr(4) : line) + "\n";
    if (end == std::string::npos) break;
    at = end + 1;
  }
  auto rendered = writeFile("rendered-config.yaml", unindented);
  auto manifest = writeFile("team-a.yaml", run("{name: x, namespace: team-a}", "  project: other\n  baseOutputDirectory: gs://b/x\n"));
  auto lint = runShell(vto("lint --tenancy " + quote(rendered) + " -f " + quote(manifest)));
  EXPECT_EQ(lint.exitCode, 1) << unindented << lint.output;
  EXPECT_NE(lint.output.find("ERROR spec.project: project \"other\" is not allowed"), std::string::npos) << lint.output;

  auto off = runShell(quote(binDir() + "/helm") + " template t " + chart + " --set networkPolicy.enabled=false");
  EXPECT_EQ(off.output.find("kind: NetworkPolicy"), std::string::npos);
  auto refusedValues = writeFile("bad-values.yaml", "tenancy:\n  - projects: [p]\n");
  auto schema = runShell(quote(binDir() + "/helm") + " template t " + chart + " -f " + quote(refusedValues));
  EXPECT_NE(schema.exitCode, 0) << "values.schema.json accepted a rule that selects no namespace";
}

// The chart's values schema knows every rule field, and the rendered config keeps them for the operator.
TEST(Chart, TenancyValuesKnowEveryRuleField) {
  auto chart = quote((fs::path(sourceDir()) / "helm/vto").string());
  auto values = writeFile("values-all.yaml", R"(tenancy:
  - namespaces: [team-a]
    projects: [acme-ml]
    prometheusUrls: [https://prometheus.monitoring:9090]
    networks: [projects/123456/global/networks/team-a-vpc]
    models: [fraud]
    nfsServers: [10.0.0.2]
    reservations: [projects/acme-ml/zones/us-central1-a/reservations/team-a]
    interactiveShell: true
)");
  auto config = runShell(quote(binDir() + "/helm") + " template t " + chart + " -f " + quote(values) +
                         " --show-only templates/configmap.yaml");
  ASSERT_EQ(config.exitCode, 0) << config.output;
  for (const char* field : {"prometheusUrls:", "networks:", "models:", "nfsServers:", "reservations:", "interactiveShell: true"})
    EXPECT_NE(config.output.find(field), std::string::npos) << field << " missing from:\n" << config.output;
  for (const char* bad : {"    networks: [team-a-vpc]\n", "    prometheusUrls: [prometheus:9090]\n", "    interactiveShell: \"yes\"\n",
                          "    reservations: [team-a]\n", "    nfsServers: [\"\"]\n", "    interactiveshell: true\n"}) {
    auto refused = writeFile("values-bad.yaml", std::string("tenancy:\n  - namespaces: [team-a]\n") + bad);
    auto schema = runShell(quote(binDir() + "/helm") + " template t " + chart + " -f " + quote(refused));
    EXPECT_NE(schema.exitCode, 0) << "values.schema.json accepted " << bad;
  }
}

// image.digest pins what runs: the Deployment names repository@digest; a tag in its place is refused.
TEST(Chart, ImageDigestPinsTheDeployment) {
  auto chart = quote((fs::path(sourceDir()) / "helm/vto").string());
  auto render = [&](const std::string& set) {
    return runShell(quote(binDir() + "/helm") + " template t " + chart + " --show-only templates/deployment.yaml " + set);
  };
  const std::string digest = "sha256:" + std::string(64, 'a');
  auto pinned = render("--set image.digest=" + digest);
  ASSERT_EQ(pinned.exitCode, 0) << pinned.output;
  EXPECT_NE(pinned.output.find("image: \"localhost/vto@" + digest + "\""), std::string::npos) << pinned.output;
  auto tagged = render("");
  EXPECT_NE(tagged.output.find("image: \"localhost/vto:dev\""), std::string::npos) << tagged.output;
  auto refused = render("--set image.digest=latest");
  EXPECT_NE(refused.exitCode, 0) << refused.output;
  EXPECT_NE(refused.output.find("image/digest"), std::string::npos) << refused.output;
}

}  // namespace
}  // namespace vto::testing
