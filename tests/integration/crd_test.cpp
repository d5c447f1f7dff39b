// The CRDs from `vto crd` on a real kube-apiserver: they install and become Established, every sample
// is accepted, every invalid manifest whose rule CEL can express is refused with the same advice as
// `vto lint`, immutable fields stay immutable, and `kubectl explain` teaches the fields.
//
// Needs $VTO_BIN_DIR with both `vto` and `vto-testcluster` in it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/support/subprocess.h"
#include "tests/support/test_cluster.h"
#include "tests/support/wait.h"

namespace vto::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

fs::path sourceDir() {
  if (const char* dir = std::getenv("VTO_SOURCE_DIR")) return dir;
  return fs::path(__FILE__).parent_path().parent_path().parent_path();
}

std::vector<fs::path> yamlFiles(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".yaml") out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string shellQuote(const std::string& path) { return "'" + path + "'"; }

// The `# expect-cel: TEXT` line of an invalid manifest, or "" when CEL cannot express its rule.
std::string expectedCelMessage(const fs::path& file) {
  std::ifstream in(file);
  static const std::regex kCel(R"(^# expect-cel: (.*)$)");
  for (std::string line; std::getline(in, line);) {
    std::smatch match;
    if (std::regex_match(line, match, kCel)) return match[1].str().rfind("none", 0) == 0 ? "" : match[1].str();
  }
  return "";
}

// `yaml` in a file of its own; its path.
std::string writeManifest(const std::string& name, const std::string& yaml) {
  std::string path = makeTempDir("vto-crd-" + name) + "/" + name + ".yaml";
  std::ofstream(path) << yaml;
  return path;
}

class CrdTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto& cluster = sharedCluster();
    // Exactly what the docs tell users to run: server-side apply. With v1beta1 and v1alpha1 each
    // carrying the whole schema, the TrainingRun CRD no longer fits client-side apply's 256 KiB
    // last-applied-configuration annotation (the chart installs it through Helm, which needs none).
    ASSERT_EQ(runShell(shellQuote(binDir() + "/vto") + " crd > /dev/null").exitCode, 0);
    auto applied = runShell(shellQuote(binDir() + "/vto") + " crd | kubectl --kubeconfig=" +
                            shellQuote(cluster.kubeconfig()) + " apply --server-side -f -");
    ASSERT_EQ(applied.exitCode, 0) << applied.output;
    for (const char* crd : {"trainingruns.vto.dev", "retrainingpolicies.vto.dev"}) {
      bool established = waitFor(
          [&] {
            auto r = cluster.kubectl(std::string("get crd ") + crd +
                                     " -o jsonpath='{.status.conditions[?(@.type==\"Established\")].status}'");
            return r.exitCode == 0 && r.output == "True";
          },
          60s);
      ASSERT_TRUE(established) << crd << " did not become Established";
    }
    // Discovery of the new kinds can lag behind Established; wait until kubectl knows them.
    ASSERT_TRUE(waitFor([&] { return cluster.kubectl("get trun,rtp -A").exitCode == 0; }, 60s));
  }
};

TEST_F(CrdTest, EverySampleIsAcceptedByTheApiServer) {
  auto files = yamlFiles(sourceDir() / "config/samples");
  ASSERT_GE(files.size(), 11u);
  for (const auto& file : files) {
    auto r = sharedCluster().kubectl("apply --dry-run=server -f " + shellQuote(file));
    EXPECT_EQ(r.exitCode, 0) << file << ":\n" << r.output;
  }
}

TEST_F(CrdTest, InvalidManifestsThatCelExpressesAreRefusedWithTheAdvice) {
  int checked = 0;
  for (const auto& file : yamlFiles(sourceDir() / "tests/data/invalid")) {
    std::string advice = expectedCelMessage(file);
    if (advice.empty()) continue;
    auto r = sharedCluster().kubectl("apply --dry-run=server -f " + shellQuote(file));
    EXPECT_NE(r.exitCode, 0) << file << " was accepted:\n" << r.output;
    EXPECT_NE(r.output.find(advice), std::string::npos) << file << ": expected \"" << advice << "\" in:\n" << r.output;
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

TEST_F(CrdTest, LintAgreesWithTheApiServerOnEveryInvalidManifest) {
  for (const auto& file : yamlFiles(sourceDir() / "tests/data/invalid")) {
    if (expectedCelMessage(file).empty()) continue;
    auto r = runShell(shellQuote(binDir() + "/vto") + " lint -f " + shellQuote(file) + "");
    EXPECT_EQ(r.exitCode, 1) << file << ":\n" << r.output;
    EXPECT_NE(r.output.find(expectedCelMessage(file)), std::string::npos) << file << ":\n" << r.output;
  }
}

TEST_F(CrdTest, EveryAcceleratorCaseIsRefusedByTheApiServerWithLintsAdvice) {
  // The machine/accelerator rules are CEL generated from the catalog lint uses (see crd_yaml.h): every
  // accelerator case of the corpus is refused at `kubectl apply`, not only later by the operator.
  int checked = 0;
  for (const auto& file : yamlFiles(sourceDir() / "tests/data/invalid")) {
    if (file.filename().string().rfind("08-", 0) != 0) continue;
    std::string advice = expectedCelMessage(file);
    ASSERT_FALSE(advice.empty()) << file << " has no `# expect-cel:` advice";
    auto applied = sharedCluster().kubectl("apply --dry-run=server -f " + shellQuote(file));
    EXPECT_NE(applied.exitCode, 0) << file << " was accepted:\n" << applied.output;
    EXPECT_NE(applied.output.find(advice), std::string::npos) << file << ": expected \"" << advice << "\" in:\n" << applied.output;
    auto linted = runShell(shellQuote(binDir() + "/vto") + " lint -f " + shellQuote(file));
    EXPECT_NE(linted.output.find(advice), std::string::npos) << file << ":\n" << linted.output;
    ++checked;
  }
  EXPECT_GE(checked, 7);
}

TEST_F(CrdTest, LintReportsInOnePassWhatTheApiServerReports) {
  // Issue 15's manifest: a structural mistake (workerCount: 0) and three semantic ones.
  std::string path = writeManifest("four", R"(apiVersion: vto.dev/v1beta1
kind: TrainingRun
metadata: {name: four, namespace: default}
spec:
  trainer: {container: {imageUri: gcr.io/p/img:1}}
  resources: {machineType: n1-standard-8, acceleratorType: NVIDIA_TESLA_A100, acceleratorCount: 1}
  distribution: {strategy: MultiWorkerMirrored, workerCount: 0}
  baseOutputDirectory: s3://bucket/out
)");
  auto applied = sharedCluster().kubectl("apply --dry-run=server -f " + shellQuote(path));
  EXPECT_NE(applied.exitCode, 0) << applied.output;
  auto linted = runShell(shellQuote(binDir() + "/vto") + " lint -f " + shellQuote(path));
  EXPECT_EQ(linted.exitCode, 1);
  EXPECT_NE(linted.output.find("4 error(s)"), std::string::npos) << linted.output;
  for (const char* advice : {"Container Registry (gcr.io) is deprecated", "must be a gs:// URI",
                             "Accelerator \"NVIDIA_TESLA_A100\" is not supported for machine type \"n1-standard-8\""}) {
    EXPECT_NE(applied.output.find(advice), std::string::npos) << advice << " missing in:\n" << applied.output;
    EXPECT_NE(linted.output.find(advice), std::string::npos) << advice << " missing in:\n" << linted.output;
  }
  EXPECT_NE(linted.output.find("ERROR spec.distribution.workerCount: must be >= 1"), std::string::npos) << linted.output;
  // In path order, as the API server lists them.
  EXPECT_LT(linted.output.find("spec.baseOutputDirectory"), linted.output.find("spec.distribution.workerCount")) << linted.output;
  EXPECT_LT(linted.output.find("spec.resources.acceleratorType"), linted.output.find("spec.trainer.container.imageUri")) << linted.output;
}

TEST_F(CrdTest, AFallbackMayChangeTheWaitOfTheSpecsFlexStart) {
  // The rule on a fallback's maxWaitDuration judges the merged placement: this one keeps FlexStart.
  std::string path = writeManifest("flex-fallback", R"(apiVersion: vto.dev/v1beta1
kind: TrainingRun
metadata: {name: flex, namespace: default}
spec:
  trainer: {container: {imageUri: us-central1-docker.pkg.dev/p/r/img:1}}
  resources: {machineType: a3-highgpu-8g, acceleratorType: NVIDIA_H100_80GB, acceleratorCount: 8}
  scheduling: {strategy: FlexStart, maxWaitDuration: 1h}
  baseOutputDirectory: gs://bucket/out
  capacity:
    fallbacks: [{location: us-east4, scheduling: {maxWaitDuration: 4h}}]
)");
  auto applied = sharedCluster().kubectl("apply --dry-run=server -f " + shellQuote(path));
  EXPECT_EQ(applied.exitCode, 0) << applied.output;
  auto linted = runShell(shellQuote(binDir() + "/vto") + " lint -f " + shellQuote(path));
  EXPECT_EQ(linted.exitCode, 0) << linted.output;
}

TEST_F(CrdTest, DefaultsAreAppliedByTheApiServer) {
  auto& cluster = sharedCluster();
  auto sample = sourceDir() / "config/samples/trainingrun_custom_container.yaml";
  auto r = cluster.kubectl("apply --dry-run=server -o json -f " + shellQuote(sample));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  for (const char* expected : {"\"deletionPolicy\": \"Cancel\"", "\"maxResumes\": 3", "\"resumeBackoff\": \"60s\"",
                               "\"strategy\": \"Standard\"", "\"Preemption\""})
    EXPECT_NE(r.output.find(expected), std::string::npos) << expected << " missing in:\n" << r.output;
}

TEST_F(CrdTest, ImmutableFieldsCannotChangeButMutableOnesCan) {
  auto& cluster = sharedCluster();
  auto sample = sourceDir() / "config/samples/trainingrun_pytorch_ddp.yaml";
  ASSERT_EQ(cluster.kubectl("create namespace crd-immutable").exitCode, 0);
  auto created = cluster.kubectl("apply -n crd-immutable -f " + shellQuote(sample));
  ASSERT_EQ(created.exitCode, 0) << created.output;
  auto changed = cluster.kubectl(
      "patch trun resnet-ddp -n crd-immutable --type=merge -p '{\"spec\":{\"resources\":{\"machineType\":\"a2-highgpu-4g\",\"acceleratorCount\":4}}}'");
  EXPECT_NE(changed.exitCode, 0) << changed.output;
  EXPECT_NE(changed.output.find("resources is immutable; create a new TrainingRun"), std::string::npos) << changed.output;
  auto suspended = cluster.kubectl("patch trun resnet-ddp -n crd-immutable --type=merge -p '{\"spec\":{\"suspend\":true}}'");
  EXPECT_EQ(suspended.exitCode, 0) << suspended.output;
}

TEST_F(CrdTest, PrinterColumnsAndShortNames) {
  auto& cluster = sharedCluster();
  ASSERT_EQ(cluster.kubectl("create namespace crd-columns").exitCode, 0);
  auto created = cluster.kubectl("apply -n crd-columns -f " + shellQuote(sourceDir() / "config/samples/trainingrun_flex_start.yaml"));
  ASSERT_EQ(created.exitCode, 0) << created.output;
  auto plain = cluster.kubectl("get trun -n crd-columns");
  ASSERT_EQ(plain.exitCode, 0) << plain.output;
  std::string header = plain.output.substr(0, plain.output.find('\n'));
  for (const char* column : {"NAME", "PHASE", "JOB", "ATTEMPTS", "AGE"}) EXPECT_NE(header.find(column), std::string::npos) << header;
  EXPECT_EQ(header.find("FRAMEWORK"), std::string::npos) << header;
  auto wide = cluster.kubectl("get trun -n crd-columns -o wide");
  for (const char* column : {"FRAMEWORK", "MACHINE", "MESSAGE", "pytorch", "a3-highgpu-8g"})
    EXPECT_NE(wide.output.find(column), std::string::npos) << wide.output;
  auto byCategory = cluster.kubectl("get ml -n crd-columns -o name");
  EXPECT_NE(byCategory.output.find("trainingrun.vto.dev/diffusion-flex"), std::string::npos) << byCategory.output;
}

TEST_F(CrdTest, RetrainingPolicyDefaultsAndPrinterColumns) {
  auto& cluster = sharedCluster();
  ASSERT_EQ(cluster.kubectl("create namespace crd-rtp").exitCode, 0);
  auto sample = sourceDir() / "config/samples/retrainingpolicy_manual.yaml";
  auto dry = cluster.kubectl("apply -n crd-rtp --dry-run=server -o json -f " + shellQuote(sample));
  ASSERT_EQ(dry.exitCode, 0) << dry.output;
  for (const char* expected : {"\"missedRuns\": \"Latest\"", "\"maxCatchUpRuns\": 10", "\"concurrencyPolicy\": \"Forbid\"",
                               "\"maxActiveRuns\": 1", "\"cooldown\": \"0s\"", "\"successfulRunsHistoryLimit\": 3"})
    EXPECT_NE(dry.output.find(expected), std::string::npos) << expected << " missing in:\n" << dry.output;
  auto weekly = cluster.kubectl("apply -n crd-rtp --dry-run=server -o json -f " +
                                shellQuote(sourceDir() / "config/samples/retrainingpolicy_weekly.yaml"));
  for (const char* expected : {"\"maxConsecutiveErrors\": 4", "\"minNewBytes\": 0"})
    EXPECT_NE(weekly.output.find(expected), std::string::npos) << expected << " missing in:\n" << weekly.output;
  ASSERT_EQ(cluster.kubectl("apply -n crd-rtp -f " + shellQuote(sourceDir() / "config/samples/retrainingpolicy_weekly.yaml")).exitCode, 0);
  auto table = cluster.kubectl("get rtp -n crd-rtp");
  ASSERT_EQ(table.exitCode, 0) << table.output;
  std::string header = table.output.substr(0, table.output.find('\n'));
  for (const char* column : {"NAME", "SCHEDULE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "NEXT", "AGE"})
    EXPECT_NE(header.find(column), std::string::npos) << header;
  EXPECT_NE(table.output.find("0 3 * * mon"), std::string::npos) << table.output;
  // Status times are RFC 3339 and the schema accepts the operator's encoding (fractions included).
  auto status = cluster.kubectl(
      "patch rtp fraud-weekly -n crd-rtp --subresource=status --type=merge -p "
      "'{\"status\":{\"lastScheduleTime\":\"2026-10-26T02:00:00Z\",\"nextScheduleTime\":\"2026-11-02T02:07:13Z\","
      "\"dataWatermark\":{\"timeCreated\":\"2026-10-26T01:59:58.123456Z\",\"name\":\"a.parquet\"},"
      "\"counts\":{\"succeeded\":1,\"failed\":0}}}'");
  EXPECT_EQ(status.exitCode, 0) << status.output;
  auto wide = cluster.kubectl("get rtp -n crd-rtp -o wide");
  EXPECT_NE(wide.output.find("2026-11-02T02:07:13Z"), std::string::npos) << wide.output;
}

TEST_F(CrdTest, ExplainTeachesTheFields) {
  auto r = sharedCluster().kubectl("explain trainingrun.spec.distribution");
  ASSERT_EQ(r.exitCode, 0) << r.output;
  for (const char* expected : {"How training spreads over machines", "workerCount", "Machines in total", "reductionServer",
                               "ParameterServer"})
    EXPECT_NE(r.output.find(expected), std::string::npos) << expected << " missing in:\n" << r.output;
  auto policy = sharedCluster().kubectl("explain rtp.spec.triggers.schedule.cron");
  EXPECT_NE(policy.output.find("5-field cron"), std::string::npos) << policy.output;
}

TEST_F(CrdTest, ExplainShowsDurationsAsStringsWithTheirFormat) {
  for (const char* field : {"spec.scheduling.timeout", "spec.scheduling.maxWaitDuration", "spec.checkpointing.resumeBackoff"}) {
    auto r = sharedCluster().kubectl(std::string("explain trainingrun.") + field);
    ASSERT_EQ(r.exitCode, 0) << r.output;
    EXPECT_NE(r.output.find("<string>"), std::string::npos) << field << ":\n" << r.output;
    EXPECT_EQ(r.output.find("<Object>"), std::string::npos) << field << ":\n" << r.output;
    EXPECT_NE(r.output.find("a duration such as"), std::string::npos) << field << ":\n" << r.output;
  }
  // A duration in another form than h/m/s is refused with the format.
  auto r = runShell("sed 's/timeout: 2h/timeout: 2 hours/' " +
                    shellQuote(sourceDir() / "config/samples/trainingrun_custom_container.yaml") + " | kubectl --kubeconfig=" +
                    shellQuote(sharedCluster().kubeconfig()) + " apply --dry-run=server -f - 2>&1");
  EXPECT_NE(r.output.find("timeout must be a positive duration like 24h"), std::string::npos) << r.output;
}

// The offline commands, as a user runs them (no cluster needed).
std::string vto(const std::string& args) { return shellQuote(binDir() + "/vto") + " " + args; }

TEST(VtoCli, LintNamesTheDocumentOfAMultiDocumentFile) {
  auto samples = sourceDir() / "config/samples";
  auto bad = sourceDir() / "tests/data/invalid/05-mirrored-several-workers.yaml";
  auto r = runShell("{ cat " + shellQuote(samples / "trainingrun_pytorch_ddp.yaml") + "; echo ---; cat " + shellQuote(bad) +
                    "; } | " + vto("lint -f -"));
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("ERROR spec.distribution.workerCount: MirroredStrategy uses the GPUs of one machine"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(document 2 (TrainingRun/bad))"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 error(s), 0 warning(s)"), std::string::npos) << r.output;
}

TEST(VtoCli, LintPassesEverySampleAndWarnsWithoutFailing) {
  auto r = runShell(vto("lint") + " $(for f in " + shellQuote(sourceDir() / "config/samples") + "/*.yaml; do printf ' -f %s' \"$f\"; done)");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  auto warning = runShell(vto("lint -f " + shellQuote(sourceDir() / "tests/data/invalid/09-reserved-env.yaml") + ""));
  EXPECT_EQ(warning.exitCode, 0) << warning.output;
  EXPECT_EQ(warning.output.rfind("WARNING spec.trainer.container.env[0].name: TF_CONFIG", 0), 0u) << warning.output;
}

TEST(VtoCli, RenderPrintsOneBodyPerLineOrAnArray) {
  auto samples = sourceDir() / "config/samples";
  std::string both = "{ cat " + shellQuote(samples / "trainingrun_custom_container.yaml") + "; echo ---; cat " +
                     shellQuote(samples / "trainingrun_hyperparameter_tuning.yaml") + "; } | ";
  auto lines = runShell(both + vto("render -f -"));
  ASSERT_EQ(lines.exitCode, 0) << lines.output;
  EXPECT_EQ(std::count(lines.output.begin(), lines.output.end(), '\n'), 2) << lines.output;
  EXPECT_EQ(lines.output.rfind("{\"displayName\":\"default-mnist-custom\"", 0), 0u) << lines.output;
  EXPECT_NE(lines.output.find("\"studySpec\""), std::string::npos) << lines.output;
  auto array = runShell(both + vto("render -f - -o json-array"));
  ASSERT_EQ(array.exitCode, 0) << array.output;
  EXPECT_EQ(array.output.rfind("[", 0), 0u) << array.output;
  auto request = runShell(vto("render -o request --project p1 --location us-east1 -f " + shellQuote(samples / "trainingrun_parameter_server.yaml")));
  EXPECT_NE(request.output.find("https://europe-west4-aiplatform.googleapis.com/v1/projects/p1/locations/europe-west4/customJobs"),
            std::string::npos) << request.output;
}

TEST(VtoCli, RenderRefusesAnInvalidRun) {
  auto r = runShell(vto("render -f " + shellQuote(sourceDir() / "tests/data/invalid/01-gcr-image.yaml") + ""));
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("ERROR spec.trainer.container.imageUri: Container Registry"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("displayName"), std::string::npos) << r.output;
}

TEST(VtoCli, BadUsageExplainsItself) {
  auto r = runShell(vto("lint"));
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.output.find("-f FILE"), std::string::npos) << r.output;
  auto missing = runShell(vto("lint -f /nonexistent.yaml"));
  EXPECT_EQ(missing.exitCode, 1);
  EXPECT_NE(missing.output.find("cannot open the file"), std::string::npos) << missing.output;
  auto help = runShell(vto("render --help"));
  EXPECT_EQ(help.exitCode, 0);
  EXPECT_NE(help.output.find("json-array"), std::string::npos) << help.output;
}

}  // namespace
}  // namespace vto::testing
