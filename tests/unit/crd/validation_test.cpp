#include <gtest/gtest.h>

#include <regex>

#include "crd/machine_catalog.h"
#include "crd/crd_yaml.h"
#include "crd/manifest.h"
#include "crd/retraining_policy.h"
#include "crd/strict_json.h"
#include "crd/validation.h"
#include "crd/yaml_json.h"
#include "tests/unit/crd/crd_test_support.h"

namespace vto::crd {
namespace {

namespace fs = std::filesystem;
using testing::kMinimalRun;
using testing::repoRoot;
using testing::runFromYaml;

std::vector<Finding> findingsOf(const std::string& extraSpecYaml) {
  return validate(testing::runWithSpec(extraSpecYaml));
}

bool hasFinding(const std::vector<Finding>& findings, Severity severity, const std::string& path) {
  for (const auto& f : findings)
    if (f.severity == severity && f.path == path) return true;
  return false;
}

std::string describe(const std::vector<Finding>& findings) {
  std::string out;
  for (const auto& f : findings) out += formatFinding(f) + "\n";
  return out;
}

TEST(Validation, MinimalRunIsValid) { EXPECT_TRUE(findingsOf("").empty()) << describe(findingsOf("")); }

// Each file of tests/data/invalid/ states the finding it must produce in a leading comment.
TEST(Validation, EveryInvalidManifestIsRefusedWithTheExpectedPath) {
  auto files = testing::yamlFiles(repoRoot() / "tests/data/invalid");
  ASSERT_GE(files.size(), 11u);
  static const std::regex kExpect(R"(^# expect-(error|warning): (\S+)$)");
  for (const auto& file : files) {
    std::string text = testing::readFile(file);
    std::string expectedKind, expectedPath;
    std::istringstream lines(text.substr(0, text.find("\napiVersion")));
    for (std::string line; std::getline(lines, line);) {
      std::smatch match;
      if (std::regex_match(line, match, kExpect)) {
        expectedKind = match[1];
        expectedPath = match[2];
        break;
      }
    }
    ASSERT_FALSE(expectedPath.empty()) << file << " has no '# expect-error: PATH' line";
    Severity severity = expectedKind == "error" ? Severity::Error : Severity::Warning;
    auto documents = parseManifests(text);
    ASSERT_EQ(documents.size(), 1u) << file;
    auto findings = lintDocument(documents[0]);
    EXPECT_TRUE(hasFinding(findings, severity, expectedPath)) << file << " expected " << expectedKind << " at "
                                                              << expectedPath << ", got:\n" << describe(findings);
    if (severity == Severity::Warning) {
      EXPECT_FALSE(hasErrors(findings)) << file << "\n" << describe(findings);
    }
    // `# expect-cel: ADVICE` is the advice the API server gives (tests/integration/crd_test.cpp); lint gives it too.
    static const std::regex kAdvice(R"(# expect-cel: (.*))");
    std::smatch advice;
    if (std::regex_search(text, advice, kAdvice) && advice[1].str().rfind("none", 0) != 0) {
      EXPECT_NE(describe(findings).find(advice[1].str()), std::string::npos)
          << file << ": lint does not give the API server's advice \"" << advice[1] << "\":\n" << describe(findings);
    }
  }
}

TEST(Validation, EverySampleIsValid) {
  auto files = testing::yamlFiles(repoRoot() / "config/samples");
  ASSERT_GE(files.size(), 11u);
  for (const auto& file : files)
    for (const auto& document : parseManifests(testing::readFile(file))) {
      auto findings = lintDocument(document);
      EXPECT_TRUE(findings.empty()) << file << "\n" << describe(findings);
    }
}

TEST(Validation, AListAsKubectlGetPrintsItIsLintedItemByItem) {
  // `kubectl get trun -A -o yaml | vto lint -f -`: what is stored, checked against today's rules.
  auto bad = testing::readFile(repoRoot() / "tests/data/invalid/14-capacity-block-for-below-minimum.yaml");
  auto good = testing::readFile(repoRoot() / "config/samples/trainingrun_custom_container.yaml");
  nlohmann::json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"metadata", {{"resourceVersion", ""}}},
                         {"items", {parseManifests(good).at(0).object, parseManifests(bad).at(0).object}}};
  auto documents = parseManifests(list.dump());
  ASSERT_EQ(documents.size(), 2u);
  EXPECT_EQ(documents[1].number, 2u);
  EXPECT_TRUE(lintDocument(documents[0]).empty()) << describe(lintDocument(documents[0]));
  EXPECT_TRUE(hasErrors(lintDocument(documents[1])));
  nlohmann::json other = {{"apiVersion", "example.com/v1"}, {"kind", "List"}, {"items", nlohmann::json::array()}};
  EXPECT_EQ(lintDocument(parseManifests(other.dump()).at(0)).at(0).path, "kind") << "only v1 List is a list";
}

TEST(Validation, AKindOrApiVersionThatIsNotAStringIsAFindingNotACrash) {
  // `kind: !e` reads as null; the fuzzer found that it threw through parseManifests.
  for (const char* text : {"kind: !e\n", "kind: null\napiVersion: v1\n", "kind: List\napiVersion: [v1]\nitems: []\n",
                           "kind: {}\n"}) {
    std::vector<ManifestDocument> documents;
    ASSERT_NO_THROW(documents = parseManifests(text)) << text;
    ASSERT_EQ(documents.size(), 1u) << text;
    EXPECT_TRUE(hasFinding(lintDocument(documents[0]), Severity::Error, "kind")) << text;
  }
}

TEST(Validation, EveryMessageSaysWhatToDo) {
  // Messages from the corpus are longer than a bare "invalid" and never end in a bare field name.
  for (const auto& file : testing::yamlFiles(repoRoot() / "tests/data/invalid"))
    for (const auto& f : lintDocument(parseManifests(testing::readFile(file)).at(0)))
      EXPECT_GT(f.message.size(), 20u) << file << ": " << f.message;
}

TEST(Validation, MissingTrainerAndOutputAreErrors) {
  auto run = runFromYaml(kMinimalRun);
  run.spec.trainer.reset();
  run.spec.baseOutputDirectory.clear();
  auto findings = validate(run);
  EXPECT_TRUE(hasFinding(findings, Severity::Error, "spec.trainer"));
  EXPECT_TRUE(hasFinding(findings, Severity::Error, "spec.baseOutputDirectory"));
}

TEST(Validation, RetiredAndUnknownAcceleratorsAreErrors) {
  EXPECT_TRUE(hasFinding(findingsOf("  resources: {machineType: n1-standard-8, acceleratorType: NVIDIA_TESLA_K80, acceleratorCount: 1}\n"),
                         Severity::Error, "spec.resources.acceleratorType"));
  EXPECT_TRUE(hasFinding(findingsOf("  resources: {machineType: n1-standard-8, acceleratorType: NVIDIA_T4, acceleratorCount: 1}\n"),
                         Severity::Error, "spec.resources.acceleratorType"));
}

TEST(Validation, AcceleratorOptimizedMachineNeedsItsGpusSpelledOut) {
  auto findings = findingsOf("  resources: {machineType: a2-highgpu-8g}\n");
  ASSERT_TRUE(hasFinding(findings, Severity::Error, "spec.resources.acceleratorType")) << describe(findings);
  EXPECT_NE(findings[0].message.find("NVIDIA_TESLA_A100"), std::string::npos);
}

TEST(Validation, TooManyVcpusForTheGpuCountIsAnError) {
  auto findings = findingsOf("  resources: {machineType: n1-standard-96, acceleratorType: NVIDIA_TESLA_T4, acceleratorCount: 1}\n");
  EXPECT_TRUE(hasFinding(findings, Severity::Error, "spec.resources.acceleratorCount")) << describe(findings);
}

TEST(Validation, UnknownTpuPairingIsOnlyAWarning) {
  auto findings = findingsOf("  framework: jax\n  resources: {machineType: ct4p-hightpu-4t, acceleratorType: TPU_V4_POD, acceleratorCount: 4}\n  distribution: {strategy: TPU}\n");
  EXPECT_TRUE(hasFinding(findings, Severity::Warning, "spec.resources.acceleratorType")) << describe(findings);
  EXPECT_FALSE(hasErrors(findings)) << describe(findings);
}

TEST(Validation, OperatorLabelsAreReserved) {
  EXPECT_TRUE(hasFinding(findingsOf("  labels: {vto-attempt: '9'}\n"), Severity::Error, "spec.labels.vto-attempt"));
  EXPECT_TRUE(hasFinding(findingsOf("  labels: {managed-by: me}\n"), Severity::Error, "spec.labels.managed-by"));
}

TEST(Validation, TooManyLabelsIsAnError) {
  std::string labels = "  labels:\n";
  for (int i = 0; i < 60; ++i) labels += "    l" + std::to_string(i) + ": v\n";
  EXPECT_TRUE(hasFinding(findingsOf(labels), Severity::Error, "spec.labels"));
}

TEST(Validation, OperatorEnvIsReserved) {
  EXPECT_TRUE(hasFinding(findingsOf("  trainer: {container: {imageUri: us-docker.pkg.dev/p/r/i:1, env: [{name: VTO_ATTEMPT, value: '1'}]}}\n"),
                         Severity::Error, "spec.trainer.container.env[0].name"));
}

TEST(Validation, EachTuningParameterHasExactlyOneKind) {
  auto findings = findingsOf(R"(  hyperparameterTuning:
    maxTrialCount: 4
    metrics: [{metricId: acc}]
    parameters: [{parameterId: a}, {parameterId: b, double: {min: 0, max: 1}, integer: {min: 0, max: 2}}]
)");
  EXPECT_TRUE(hasFinding(findings, Severity::Error, "spec.hyperparameterTuning.parameters[0]")) << describe(findings);
  EXPECT_TRUE(hasFinding(findings, Severity::Error, "spec.hyperparameterTuning.parameters[1]")) << describe(findings);
}

TEST(Validation, ExpertWorkerPoolSpecsReplaceTrainer) {
  auto run = runFromYaml(kMinimalRun);
  run.spec.trainer.reset();
  run.spec.resources.reset();
  run.spec.workerPoolSpecs = json::parse(R"([{"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "1",
                                             "containerSpec": {"imageUri": "gcr.io/p/i:1"}}])");
  auto findings = validate(run);
  EXPECT_TRUE(hasFinding(findings, Severity::Error, "spec.workerPoolSpecs[0].containerSpec.imageUri")) << describe(findings);
  EXPECT_EQ(findings.size(), 1u) << describe(findings);
}

// Raw pools reach Vertex as written, and Vertex also reads snake_case names: validation refuses any
// key that is not Vertex's camelCase name, with or without tenancy rules.
TEST(Validation, RawPoolsHoldOnlyVertexsCamelCaseFields) {
  auto run = runFromYaml(kMinimalRun);
  run.spec.trainer.reset();
  run.spec.resources.reset();
  run.spec.workerPoolSpecs = json::parse(R"([{"machineSpec": {"machineType": "n1-standard-8"}, "replicaCount": 1,
                                             "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/i:1"},
                                             "machine_spec": {"machine_type": "a3-highgpu-8g", "accelerator_count": 8},
                                             "python_package_spec": {"package_uris": ["gs://other/p.tar.gz"]}}])");
  auto findings = validate(run);
  ASSERT_TRUE(hasFinding(findings, Severity::Error, "spec.workerPoolSpecs[0].machine_spec")) << describe(findings);
  EXPECT_TRUE(hasFinding(findings, Severity::Error, "spec.workerPoolSpecs[0].python_package_spec")) << describe(findings);
  EXPECT_NE(describe(findings).find("machine_spec: unknown field; write it as machineSpec"), std::string::npos)
      << describe(findings);
}

TEST(Validation, MachinesThatCarryAcceleratorsNameThemAndTopologiesParse) {
  auto run = runFromYaml(kMinimalRun);
  run.spec.trainer.reset();
  run.spec.resources.reset();
  run.spec.workerPoolSpecs = json::parse(R"([{"machineSpec": {"machineType": "ct5lp-hightpu-4t", "tpuTopology": "2by2"},
                                             "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}}])");
  auto findings = validate(run);
  EXPECT_TRUE(hasFinding(findings, Severity::Error, "spec.workerPoolSpecs[0].machineSpec.acceleratorType")) << describe(findings);
  EXPECT_TRUE(hasFinding(findings, Severity::Error, "spec.workerPoolSpecs[0].machineSpec.tpuTopology")) << describe(findings);
  auto resources = findingsOf("  framework: jax\n  resources: {machineType: ct5lp-hightpu-8t}\n  distribution: {strategy: TPU}\n");
  EXPECT_TRUE(hasFinding(resources, Severity::Error, "spec.resources.acceleratorType")) << describe(resources);
  EXPECT_NE(describe(resources).find("comes with accelerators (8 x TPU_V5_LITEPOD)"), std::string::npos) << describe(resources);
}

TEST(Validation, ARunHoldsAtMost4096AcceleratorsAndCountsCannotOverflow) {
  auto trials = findingsOf(R"(  hyperparameterTuning:
    maxTrialCount: 2147483647
    parallelTrialCount: 2147483647
    metrics: [{metricId: acc}]
    parameters: [{parameterId: a, integer: {min: 0, max: 2}}]
)");
  EXPECT_TRUE(hasFinding(trials, Severity::Error, "spec.hyperparameterTuning.parallelTrialCount")) << describe(trials);
  EXPECT_TRUE(hasFinding(trials, Severity::Error, "spec.resources.acceleratorCount")) << describe(trials);
  EXPECT_NE(describe(trials).find("the run needs 2147483647 accelerators at once"), std::string::npos) << describe(trials);

  auto run = runFromYaml(kMinimalRun);
  run.spec.trainer.reset();
  run.spec.resources.reset();
  json pool = json::parse(R"({"machineSpec": {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4",
                                              "acceleratorCount": 4}, "replicaCount": "2000",
                             "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}})");
  run.spec.workerPoolSpecs = json::array({pool});
  auto raw = validate(run);
  EXPECT_TRUE(hasFinding(raw, Severity::Error, "spec.workerPoolSpecs")) << describe(raw);
  EXPECT_NE(describe(raw).find("more than the 4096 accelerators one run may hold"), std::string::npos) << describe(raw);
  pool["replicaCount"] = "1000000";
  run.spec.workerPoolSpecs = json::array({pool});
  EXPECT_TRUE(hasFinding(validate(run), Severity::Error, "spec.workerPoolSpecs[0].replicaCount")) << describe(validate(run));
}

TEST(Validation, RetrainingPolicyRules) {
  auto text = testing::readFile(repoRoot() / "config/samples/retrainingpolicy_weekly.yaml");
  auto policy = decodeRetrainingPolicy(parseYamlDocuments(text).at(0));
  policy.spec.triggers.schedule->cron = "every monday";
  policy.spec.triggers.newData->gcsPrefix = "/data";
  policy.spec.triggers.metric->above = 0.9;
  policy.spec.templ.spec.baseOutputDirectory = "s3://x";
  auto findings = validate(policy);
  EXPECT_TRUE(hasFinding(findings, Severity::Error, "spec.triggers.schedule.cron")) << describe(findings);
  EXPECT_TRUE(hasFinding(findings, Severity::Error, "spec.triggers.newData.gcsPrefix")) << describe(findings);
  EXPECT_TRUE(hasFinding(findings, Severity::Error, "spec.triggers.metric")) << describe(findings);
  EXPECT_TRUE(hasFinding(findings, Severity::Error, "spec.template.spec.baseOutputDirectory")) << describe(findings);
}

RetrainingPolicy samplePolicy() {
  return decodeRetrainingPolicy(parseYamlDocuments(testing::readFile(repoRoot() / "config/samples/retrainingpolicy_weekly.yaml")).at(0));
}

TEST(Validation, RetrainingPolicyScheduleRules) {
  auto policy = samplePolicy();
  policy.spec.triggers.schedule->cron = "0 25 * * *";
  policy.spec.triggers.schedule->timeZone = "Berlin";
  auto findings = validate(policy);
  ASSERT_TRUE(hasFinding(findings, Severity::Error, "spec.triggers.schedule.cron")) << describe(findings);
  EXPECT_NE(describe(findings).find("hour value 25 is out of range 0-23"), std::string::npos) << describe(findings);
  EXPECT_NE(describe(findings).find("unknown time zone \"Berlin\"; use an IANA time zone name such as Europe/Berlin"),
            std::string::npos) << describe(findings);
  policy.spec.triggers.schedule->cron = "CRON_TZ=Europe/Berlin 0 3 * * *";
  policy.spec.triggers.schedule->timeZone = "";
  findings = validate(policy);
  ASSERT_EQ(findings.size(), 1u) << describe(findings);
  EXPECT_NE(findings[0].message.find("use the timeZone field instead"), std::string::npos) << describe(findings);
}

TEST(Validation, RetrainingPolicyNameLeavesRoomForTheRunSuffix) {
  auto policy = samplePolicy();
  policy.metadata.name = std::string(52, 'a');
  EXPECT_TRUE(validate(policy).empty()) << describe(validate(policy));
  policy.metadata.name = std::string(53, 'a');
  EXPECT_TRUE(hasFinding(validate(policy), Severity::Error, "metadata.name"));
}

TEST(Validation, RetrainingPolicyDurationsAndTemplate) {
  auto policy = samplePolicy();
  policy.spec.triggers.metric->pollInterval = std::chrono::seconds(0);
  policy.spec.triggers.metric->forDuration = std::chrono::seconds(-1);
  policy.spec.triggers.newData->quietPeriod = std::chrono::seconds(-1);
  policy.spec.triggers.schedule->jitter = std::chrono::seconds(-1);
  policy.spec.cooldown = std::chrono::seconds(-1);
  policy.spec.templ.labels[kRetrainingPolicyLabel] = "other";
  auto findings = validate(policy);
  for (const char* path : {"spec.triggers.metric.pollInterval", "spec.triggers.metric.for", "spec.triggers.newData.quietPeriod",
                           "spec.triggers.schedule.jitter", "spec.cooldown", "spec.template.metadata.labels.vto.dev/retraining-policy"})
    EXPECT_TRUE(hasFinding(findings, Severity::Error, path)) << path << "\n" << describe(findings);
}

TEST(Validation, RetrainingPolicyWithoutTriggersIsAManualButton) {
  auto policy = samplePolicy();
  policy.spec.triggers = {};
  EXPECT_TRUE(validate(policy).empty()) << describe(validate(policy));
}

TEST(Lint, NamesUnknownKindsAndDecodeErrors) {
  auto docs = parseManifests("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n" + std::string(kMinimalRun) +
                             "  distribution: {workerCount: 0}\n");
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(lintDocument(docs[0]).at(0).path, "kind");
  auto findings = lintDocument(docs[1]);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(formatFinding(findings[0]), "ERROR spec.distribution.workerCount: must be >= 1");
  EXPECT_EQ(docs[1].label(), "document 2 (TrainingRun/demo)");
}

std::vector<std::string> pathsOf(const std::vector<Finding>& findings) {
  std::vector<std::string> paths;
  for (const auto& f : findings) paths.push_back(f.path);
  return paths;
}

TEST(Lint, ReportsStructuralAndSemanticProblemsAtOnceInPathOrder) {
  // One structural mistake (workerCount: 0 fails to decode) and three semantic ones, as in issue 15:
  // `kubectl apply` names all four, so lint must too, in one pass.
  auto docs = parseManifests(R"(apiVersion: vto.dev/v1beta1
kind: TrainingRun
metadata: {name: four}
spec:
  trainer:
    container: {imageUri: gcr.io/p/img:1, args: [a, 2, b, 3, c, d, e, f, g, h, 11]}
  resources: {machineType: n1-standard-8}
  distribution: {strategy: MultiWorkerMirrored, workerCount: 0}
  baseOutputDirectory: s3://bucket/out
  labels: {Team: vision}
  surprise: true
)");
  auto findings = lintDocument(docs.at(0));
  EXPECT_EQ(pathsOf(findings), (std::vector<std::string>{
                                   "spec.baseOutputDirectory", "spec.distribution.workerCount", "spec.labels.Team",
                                   "spec.surprise", "spec.trainer.container.args[1]", "spec.trainer.container.args[3]",
                                   "spec.trainer.container.args[10]", "spec.trainer.container.imageUri"}))
      << describe(findings);
}

TEST(Lint, AFieldThatFailsToDecodeIsReportedOnce) {
  // The decode error says it; "required: the machine type" about the same field would only repeat it.
  auto docs = parseManifests("apiVersion: vto.dev/v1beta1\nkind: TrainingRun\nmetadata: {name: x}\nspec:\n"
                             "  trainer: {container: {imageUri: us-docker.pkg.dev/p/r/i:1}}\n"
                             "  resources: {machineType: 8}\n  baseOutputDirectory: gs://b/o\n");
  auto findings = lintDocument(docs.at(0));
  ASSERT_EQ(findings.size(), 1u) << describe(findings);
  EXPECT_EQ(findings[0].path, "spec.resources.machineType");
  EXPECT_EQ(findings[0].message.rfind("must be a string", 0), 0u) << findings[0].message;
  auto wholeSpec = lintDocument(parseManifests("apiVersion: vto.dev/v1beta1\nkind: TrainingRun\nmetadata: {name: x}\nspec: 3\n").at(0));
  EXPECT_EQ(pathsOf(wholeSpec), std::vector<std::string>{"spec"}) << describe(wholeSpec);
}

TEST(Lint, RetrainingPolicyTemplatesGetEveryProblemToo) {
  auto docs = parseManifests(R"(apiVersion: vto.dev/v1beta1
kind: RetrainingPolicy
metadata: {name: weekly}
spec:
  template:
    spec:
      trainer: {container: {imageUri: gcr.io/p/img:1}}
      resources: {machineType: n1-standard-8, acceleratorCount: 100}
      distribution: {workerCount: 0}
      baseOutputDirectory: gs://b/out
  triggers:
    schedule: {cron: "every monday"}
)");
  auto findings = lintDocument(docs.at(0));
  for (const char* path : {"spec.template.spec.distribution.workerCount", "spec.template.spec.resources.acceleratorCount",
                           "spec.template.spec.trainer.container.imageUri", "spec.triggers.schedule.cron"})
    EXPECT_TRUE(hasFinding(findings, Severity::Error, path)) << path << "\n" << describe(findings);
}

TEST(Lint, DecodingOutsideLintStillStopsAtTheFirstError) {
  // The reconciler decodes without a collector: one DecodeError, as before.
  auto object = parseManifests(std::string(kMinimalRun) + "  distribution: {workerCount: 0}\n  surprise: 1\n").at(0).object;
  EXPECT_THROW(decodeTrainingRun(object), DecodeError);
}

TEST(MachineCatalog, KnowsTheTableEntries) {
  const auto& catalog = MachineCatalog::builtIn();
  EXPECT_FALSE(catalog.check("a2-highgpu-8g", "NVIDIA_TESLA_A100", 8));
  EXPECT_FALSE(catalog.check("g2-standard-24", "NVIDIA_L4", 2));
  EXPECT_FALSE(catalog.check("n1-highmem-16", "NVIDIA_TESLA_V100", 8));
  EXPECT_FALSE(catalog.check("e2-standard-4", "", 0));
  EXPECT_TRUE(catalog.check("a2-highgpu-8g", "NVIDIA_TESLA_A100", 4));
  EXPECT_TRUE(catalog.check("g2-standard-4", "NVIDIA_TESLA_T4", 1));
  auto problem = catalog.check("n1-standard-4", "NVIDIA_L4", 1);
  ASSERT_TRUE(problem);
  EXPECT_TRUE(problem->certain);
  EXPECT_NE(problem->message.find("g2-standard-"), std::string::npos) << problem->message;
}

TEST(MachineCatalog, TheCrdCarriesTheCatalogRulesGeneratedFromIt) {
  // One source: the CEL rules in helm/vto/files/crds/trainingruns.vto.dev.yaml are generated from the
  // catalog `vto lint` uses. When this fails, rebuild vto and run
  //   build/bin/vto crd --update-catalog-rules helm/vto/files/crds/trainingruns.vto.dev.yaml
  std::string checkedIn = trainingRunCrdYaml();
  EXPECT_EQ(withCatalogRules(checkedIn, MachineCatalog::builtIn()), checkedIn)
      << "the TrainingRun CRD's machine catalog rules are out of date; regenerate them with "
         "`vto crd --update-catalog-rules helm/vto/files/crds/trainingruns.vto.dev.yaml`";
  auto rules = MachineCatalog::builtIn().celRules();
  EXPECT_GE(rules.size(), 15u);
  EXPECT_NE(checkedIn.find("Accelerator \\\"NVIDIA_TESLA_A100\\\" is not supported"), std::string::npos);
  EXPECT_THROW(withCatalogRules("kind: CustomResourceDefinition\n", MachineCatalog::builtIn()), std::runtime_error);
}

TEST(MachineCatalog, EachCatalogRuleIsAlsoJudgedOnEveryFallbackAsMerged) {
  auto own = MachineCatalog::builtIn().celRules();
  auto merged = MachineCatalog::builtIn().fallbackCelRules();
  ASSERT_FALSE(merged.empty());
  EXPECT_LT(merged.size(), own.size());  // joined: each rule of its own was a program per write
  // Each catalog rule is in one of them, with the message that names its first offending fallback.
  size_t offenderLists = 0;
  for (const auto& rule : merged) {
    for (size_t at = rule.messageExpression.find("self.capacity.fallbacks.filter(f, !("); at != std::string::npos;
         at = rule.messageExpression.find("self.capacity.fallbacks.filter(f, !(", at + 1))
      ++offenderLists;
  }
  EXPECT_EQ(offenderLists, own.size());
  for (const auto& rule : merged) {
    EXPECT_EQ(rule.fieldPath, ".capacity.fallbacks");
    for (const std::string field : {"machineType", "acceleratorType", "acceleratorCount"}) {
      // Every field is the fallback's when it names it, else the spec's: none is read from `self` alone.
      EXPECT_EQ(rule.rule.find("self." + field), std::string::npos) << rule.rule;
      EXPECT_EQ(rule.messageExpression.find("self." + field), std::string::npos) << rule.messageExpression;
    }
  }
  std::string checkedIn = trainingRunCrdYaml();
  EXPECT_NE(checkedIn.find(kFallbackCatalogRulesBegin), std::string::npos);
  EXPECT_NE(checkedIn.find("a capacity fallback, merged over spec.resources: "), std::string::npos);
}

}  // namespace
}  // namespace vto::crd

namespace vto::crd {
namespace {

// "No control characters" holds for what a prometheusUrl decodes to, not only for its raw bytes.
TEST(Validation, APrometheusUrlWithPercentEncodedControlsIsRefused) {
  auto findingsFor = [](const std::string& url) {
    auto policy = decodeRetrainingPolicy(parseYamlDocuments(R"(
apiVersion: vto.dev/v1beta1
kind: RetrainingPolicy
metadata: {name: p, namespace: ns}
spec:
  template:
    spec:
      trainer: {container: {imageUri: us-docker.pkg.dev/p/r/trainer:1}}
      resources: {machineType: n1-standard-4}
      baseOutputDirectory: gs://b/m
  triggers:
    metric: {prometheusUrl: ")" + url + R"(", query: q, below: 1}
)").at(0));
    return describe(validate(policy));
  };
  for (const std::string url : {"http://prom:9090/p%0d%0aX", "http://prom:9090/p%0AX", "http://prom:9090/%00",
                                "http://prom:9090/%7f", "http://prom:9090/%7F", "http://prom:9090/a%C2%85b",
                                "http://prom:9090/%c2%9b31m"}) {
    EXPECT_NE(findingsFor(url).find("no control characters"), std::string::npos) << url;
  }
  for (const std::string url : {"http://prom:9090", "http://prom:9090/p%2Fq", "http://prom:9090/%250d",
                                "http://prom:9090/caf%C3%A9", "http://prom:9090/%20x"}) {
    EXPECT_EQ(findingsFor(url).find("prometheusUrl"), std::string::npos) << url << ": " << findingsFor(url);
  }
}

TEST(MetricsFileOf, OnlyUnderTheCheckedArtifactDirectory) {
  const std::string serving = "    servingContainer: {imageUri: us-docker.pkg.dev/p/r/serve:1}\n";
  struct Case {
    std::string name, model, uri, problem;
  };
  std::vector<Case> cases{
      {"the default directory under the output", "    evaluation: {metricsFile: metrics.json}\n",
       "gs://bucket/demo/model/metrics.json", ""},
      {"a nested path", "    evaluation: {metricsFile: eval/metrics.json}\n", "gs://bucket/demo/model/eval/metrics.json", ""},
      {"an explicit directory", "    artifactUri: gs://models-bucket/fraud\n    evaluation: {metricsFile: m.json}\n",
       "gs://models-bucket/fraud/m.json", ""},
      {"a parent segment", "    evaluation: {metricsFile: ../../team-b/metrics.json}\n", "", "metricsFile must be a path"},
      {"an absolute path", "    evaluation: {metricsFile: /team-b/metrics.json}\n", "", "metricsFile must be a path"},
      {"an empty segment", "    evaluation: {metricsFile: eval//metrics.json}\n", "", "metricsFile must be a path"},
      {"a query", "    evaluation: {metricsFile: \"m.json?alt=json\"}\n", "", "metricsFile must be a path"},
      {"a directory with a parent segment",
       "    artifactUri: gs://bucket/team-a/../team-b/\n    evaluation: {metricsFile: metrics.json}\n", "",
       "the artifact directory must have a path without"},
      {"a directory in no valid bucket", "    artifactUri: gs://B/x/\n    evaluation: {metricsFile: metrics.json}\n", "",
       "the artifact directory must name a Cloud Storage bucket"},
      {"no evaluation", "", "", "no spec.model.evaluation"},
  };
  for (const auto& c : cases) {
    auto run = testing::runWithSpec("  model:\n    model: fraud\n" + serving + c.model);
    auto file = metricsFileOf(run.spec);
    EXPECT_EQ(file.uri, c.uri) << c.name;
    if (c.problem.empty()) {
      EXPECT_EQ(file.problem, "") << c.name;
    } else {
      EXPECT_NE(file.problem.find(c.problem), std::string::npos) << c.name << ": " << file.problem;
    }
  }
}

}  // namespace
}  // namespace vto::crd
