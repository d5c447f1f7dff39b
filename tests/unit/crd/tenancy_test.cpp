// Tenancy rules: strict parsing, which rule governs a run, every field a rule limits, and the
// accelerator cap's first-created-first-served admission.
#include <gtest/gtest.h>

#include "crd/strict_json.h"
#include "crd/tenancy.h"
#include "crd/yaml_json.h"
#include "tests/unit/crd/crd_test_support.h"

namespace vto::crd {
namespace {

const char* kRules = R"(
- namespaces: [team-a, team-b]
  projects: [acme-ml]
  locations: [us-central1, europe-west4]
  serviceAccounts: [trainer@acme-ml.iam.gserviceaccount.com]
  bucketPrefixes: [gs://acme-ml-out/, gs://acme-ml-ckpt/team-a]
  acceleratorTypes: [NVIDIA_TESLA_T4, NVIDIA_L4]
  maxAccelerators: 16
- namespaceSelector: {matchLabels: {tier: research}}
  projects: [research]
)";

TenancyRules rules() { return parseTenancyRules(parseYamlDocuments(kRules).at(0)); }

std::string parseError(const std::string& yaml) {
  try {
    parseTenancyRules(parseYamlDocuments(yaml).at(0));
  } catch (const DecodeError& e) {
    return e.what();
  }
  return "";
}

// A run in team-a that every field of rule 0 allows; tests change one field.
TrainingRunSpec allowedSpec() {
  auto spec = testing::runFromYaml(testing::kMinimalRun).spec;
  spec.project = "acme-ml";
  spec.location = "us-central1";
  spec.serviceAccount = "trainer@acme-ml.iam.gserviceaccount.com";
  spec.baseOutputDirectory = "gs://acme-ml-out/demo";
  return spec;
}

const NamespaceInfo kTeamA{"team-a", std::map<std::string, std::string>{}};

TEST(TenancyParse, ReadsEveryField) {
  auto parsed = rules();
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[0].namespaces, (std::vector<std::string>{"team-a", "team-b"}));
  EXPECT_EQ(parsed[0].maxAccelerators, 16);
  EXPECT_EQ(parsed[1].matchLabels->at("tier"), "research");
  EXPECT_EQ(parsed[1].describe(1), "tenancy[1] (namespaces labelled tier=research)");
  EXPECT_TRUE(parseTenancyRules(nullptr).empty());
}

TEST(TenancyParse, RefusesWithTheFieldAndWhatToWrite) {
  EXPECT_EQ(parseError("- namespaces: [a]\n  project: [p]\n").rfind("tenancy[0].project: unknown field", 0), 0u);
  EXPECT_EQ(parseError("- projects: [p]\n"),
            "tenancy[0]: selects no namespace; give namespaces: [NAME, ...] and/or namespaceSelector: {matchLabels: {KEY: VALUE}}");
  EXPECT_NE(parseError("- namespaces: [a]\n  bucketPrefixes: [gs://]\n").find("tenancy[0].bucketPrefixes[0]"), std::string::npos);
  EXPECT_NE(parseError("- namespaces: [a]\n  bucketPrefixes: [s3://x/]\n").find("gs://BUCKET/"), std::string::npos);
  EXPECT_NE(parseError("- namespaces: [a]\n  maxAccelerators: -1\n").find("tenancy[0].maxAccelerators"), std::string::npos);
  EXPECT_NE(parseError("- namespaces: ['']\n").find("tenancy[0].namespaces[0]: must not be empty"), std::string::npos);
  EXPECT_NE(parseError("- namespaces: [a]\n  namespaceSelector: {matchExpressions: []}\n").find("unknown field"), std::string::npos);
  EXPECT_NE(parseError("namespaces: [a]\n").find("must be a list"), std::string::npos);
}

TEST(Tenancy, NoRulesAllowEverything) {
  auto decision = decideTenancy(allowedSpec(), {}, kTeamA, {});
  EXPECT_FALSE(decision.violation);
  EXPECT_FALSE(decision.governingRule);
}

TEST(Tenancy, ARunInsideItsRuleIsAllowedAndGovernedByIt) {
  auto decision = decideTenancy(allowedSpec(), {}, kTeamA, rules());
  EXPECT_FALSE(decision.violation) << decision.violation->message;
  EXPECT_EQ(decision.governingRule, 0u);
}

TEST(Tenancy, AnotherTeamsProjectIsRefusedNamingFieldAndRule) {
  auto spec = allowedSpec();
  spec.project = "research";
  auto violation = checkTenancy(spec, {}, kTeamA, rules());
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->field, "spec.project");
  EXPECT_EQ(violation->ruleIndex, 0u);
  EXPECT_EQ(violation->message,
            "spec.project: project \"research\" is not allowed for this namespace by tenancy[0] (namespaces team-a, "
            "team-b); allowed: acme-ml");
}

TEST(Tenancy, TheOperatorsDefaultsAreCheckedToo) {
  auto spec = allowedSpec();
  spec.project.clear();
  spec.location.clear();
  EXPECT_FALSE(checkTenancy(spec, {"acme-ml", "europe-west4"}, kTeamA, rules()));
  auto violation = checkTenancy(spec, {"other", "us-central1"}, kTeamA, rules());
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->field, "spec.project (the operator's default)");
}

TEST(Tenancy, EachLimitedFieldIsChecked) {
  auto fieldOf = [](const std::function<void(TrainingRunSpec&)>& change) {
    auto spec = allowedSpec();
    change(spec);
    auto violation = checkTenancy(spec, {}, kTeamA, rules());
    return violation ? violation->field : "";
  };
  EXPECT_EQ(fieldOf([](auto& s) { s.location = "asia-east1"; }), "spec.location");
  EXPECT_EQ(fieldOf([](auto& s) { s.serviceAccount = "owner@acme-ml.iam.gserviceaccount.com"; }), "spec.serviceAccount");
  EXPECT_EQ(fieldOf([](auto& s) { s.serviceAccount.clear(); }), "spec.serviceAccount");
  EXPECT_EQ(fieldOf([](auto& s) { s.baseOutputDirectory = "gs://other-team/out"; }), "spec.baseOutputDirectory");
  // A prefix is a directory: gs://acme-ml-out-evil is another bucket.
  EXPECT_EQ(fieldOf([](auto& s) { s.baseOutputDirectory = "gs://acme-ml-out-evil/x"; }), "spec.baseOutputDirectory");
  EXPECT_EQ(fieldOf([](auto& s) { s.baseOutputDirectory = "gs://acme-ml-out/../x"; }), "spec.baseOutputDirectory");
  EXPECT_EQ(fieldOf([](auto& s) { s.checkpointing.directory = "gs://acme-ml-ckpt/team-b/c"; }),
            "spec.checkpointing.directory");
  EXPECT_EQ(fieldOf([](auto& s) { s.checkpointing.directory = "gs://acme-ml-ckpt/team-a/c"; }), "");
  EXPECT_EQ(fieldOf([](auto& s) {
              s.trainer = Trainer{};
              s.trainer->pythonPackage = PythonPackageTrainer{};
              s.trainer->pythonPackage->packageUris = {"gs://acme-ml-out/a.tar.gz", "gs://elsewhere/b.tar.gz"};
            }),
            "spec.trainer.pythonPackage.packageUris[1]");
  EXPECT_EQ(fieldOf([](auto& s) { s.resources->acceleratorType = "NVIDIA_H100_80GB"; }), "spec.resources.acceleratorType");
  EXPECT_EQ(fieldOf([](auto& s) { s.resources->acceleratorCount = 17; }), "spec.resources.acceleratorCount");
}

TEST(Tenancy, ExtraUrisSuchAsAPolicysDataPrefixAreGovernedToo) {
  auto violation = checkTenancy(allowedSpec(), {}, kTeamA, rules(),
                                {{"spec.triggers.newData.gcsPrefix", "gs://other-team/data/"}});
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->field, "spec.triggers.newData.gcsPrefix");
  EXPECT_FALSE(checkTenancy(allowedSpec(), {}, kTeamA, rules(), {{"spec.triggers.newData.gcsPrefix", "gs://acme-ml-out/data/"}}));
}

TEST(Tenancy, APolicyIsCheckedOnItsTemplateAndItsDataPrefix) {
  RetrainingPolicySpec policy;
  policy.templ.spec = allowedSpec();
  policy.triggers.newData = NewDataTrigger{};
  policy.triggers.newData->gcsPrefix = "gs://acme-ml-out/data/";
  auto decision = decidePolicyTenancy(policy, {}, kTeamA, rules());
  EXPECT_FALSE(decision.violation) << decision.violation->message;
  EXPECT_EQ(decision.governingRule, 0u);

  policy.triggers.newData->gcsPrefix = "gs://other-team/data/";
  auto data = decidePolicyTenancy(policy, {}, kTeamA, rules()).violation;
  ASSERT_TRUE(data);
  EXPECT_EQ(data->field, "spec.triggers.newData.gcsPrefix");

  policy.triggers.newData.reset();
  policy.templ.spec.project.clear();  // the operator's default applies, and is checked
  auto project = decidePolicyTenancy(policy, {"research", "us-central1"}, kTeamA, rules()).violation;
  ASSERT_TRUE(project);
  EXPECT_EQ(project->field, "spec.template.spec.project (the operator's default)");
  EXPECT_EQ(project->message.rfind("spec.template.spec.project (the operator's default): project \"research\"", 0), 0u)
      << project->message;
}

// The expert form (raw Vertex workerPoolSpecs) is counted and checked like the rest: otherwise it
// would be a way around acceleratorTypes, maxAccelerators and bucketPrefixes.
TEST(Tenancy, RawWorkerPoolsAreCountedAndCheckedToo) {
  auto spec = allowedSpec();
  spec.trainer.reset();
  spec.resources.reset();
  spec.workerPoolSpecs = nlohmann::json::parse(R"([
    {"machineSpec": {"machineType": "a3-highgpu-8g", "acceleratorType": "NVIDIA_L4", "acceleratorCount": 4},
     "replicaCount": "2", "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}},
    {},
    {"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": 1,
     "pythonPackageSpec": {"executorImageUri": "us-docker.pkg.dev/p/r/i:1", "pythonModule": "m",
                           "packageUris": ["gs://acme-ml-out/pkg.tar.gz"]}}])");
  EXPECT_EQ(acceleratorsOf(spec), 8) << "4 per machine x 2 replicas; the CPU pool holds none";
  EXPECT_FALSE(checkTenancy(spec, {}, kTeamA, rules()));

  auto fieldOf = [&](const std::function<void(nlohmann::json&)>& change) {
    auto changed = spec;
    change(changed.workerPoolSpecs);
    auto violation = checkTenancy(changed, {}, kTeamA, rules());
    return violation ? violation->field : "";
  };
  EXPECT_EQ(fieldOf([](auto& pools) { pools[0]["machineSpec"]["acceleratorType"] = "NVIDIA_H100_80GB"; }),
            "spec.workerPoolSpecs[0].machineSpec.acceleratorType");
  EXPECT_EQ(fieldOf([](auto& pools) { pools[0]["replicaCount"] = "5"; }), "spec.workerPoolSpecs")
      << "20 accelerators, over the rule's 16";
  EXPECT_EQ(fieldOf([](auto& pools) { pools[2]["pythonPackageSpec"]["packageUris"][0] = "gs://other-team/pkg.tar.gz"; }),
            "spec.workerPoolSpecs[2].pythonPackageSpec.packageUris[0]");

  auto unreadable = readRawPool(nlohmann::json::parse(R"({"machineSpec": {"acceleratorType": 4, "acceleratorCount": "four"},
                                                          "replicaCount": -1, "pythonPackageSpec": {"packageUris": "gs://x"}})"));
  std::vector<std::string> fields;
  for (const auto& each : unreadable.unreadable) fields.push_back(each.field);
  EXPECT_EQ(fields, (std::vector<std::string>{"machineSpec.acceleratorType", "machineSpec.acceleratorCount",
                                              "replicaCount", "pythonPackageSpec.packageUris"}));
}

TEST(Tenancy, AClaimComesFromTheRunsMetadataAndSpec) {
  auto run = testing::runFromYaml(testing::kMinimalRun);
  run.metadata.creationTimestamp = "2026-01-01T00:00:00Z";
  auto claim = claimOf(run, true);
  EXPECT_EQ(claim.key, "team-a/demo");
  EXPECT_EQ(claim.creationTimestamp, "2026-01-01T00:00:00Z");
  EXPECT_EQ(claim.accelerators, 1);
  EXPECT_TRUE(claim.holding);
}

TEST(Tenancy, ANamespaceMatchedByNoRuleMayUseNothing) {
  auto violation = checkTenancy(allowedSpec(), {}, {"team-z", std::map<std::string, std::string>{}}, rules());
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->field, "metadata.namespace");
  EXPECT_FALSE(violation->ruleIndex);
  EXPECT_NE(violation->message.find("no tenancy rule matches namespace \"team-z\""), std::string::npos);
}

TEST(Tenancy, SelectorsMatchLabelsOrAreAssumedWhenLabelsAreUnknown) {
  auto spec = allowedSpec();
  spec.project = "research";
  NamespaceInfo labelled{"lab", std::map<std::string, std::string>{{"tier", "research"}, {"x", "y"}}};
  EXPECT_EQ(decideTenancy(spec, {}, labelled, rules()).governingRule, 1u);
  NamespaceInfo other{"lab", std::map<std::string, std::string>{{"tier", "prod"}}};
  EXPECT_TRUE(checkTenancy(spec, {}, other, rules()));
  auto offline = decideTenancy(spec, {}, {"lab", std::nullopt}, rules());
  EXPECT_FALSE(offline.violation);
  EXPECT_EQ(offline.assumedSelectorRules, (std::vector<size_t>{1}));
}

TEST(Tenancy, AcceleratorsCountMachinesAndParallelTrials) {
  auto spec = allowedSpec();
  spec.resources->acceleratorCount = 2;
  EXPECT_EQ(acceleratorsOf(spec), 2);
  spec.distribution = Distribution{};
  spec.distribution->workerCount = 3;
  EXPECT_EQ(acceleratorsOf(spec), 6);
  spec.hyperparameterTuning = HyperparameterTuning{};
  spec.hyperparameterTuning->parallelTrialCount = 2;
  EXPECT_EQ(acceleratorsOf(spec), 12);
  spec.resources->acceleratorType.clear();
  EXPECT_EQ(acceleratorsOf(spec), 0);
}

TEST(TenancyAdmit, FirstCreatedFirstServed) {
  std::vector<AcceleratorClaim> claims = {
      {"a/running", "2026-01-01T00:00:00Z", 8, true},
      {"a/older-big", "2026-01-01T00:01:00Z", 8, false},
      {"a/younger-small", "2026-01-01T00:02:00Z", 2, false},
  };
  EXPECT_EQ(acceleratorsInUse(claims), 8);
  // 8 in use + 8 for the older run fills a cap of 16.
  EXPECT_TRUE(admit(claims[1], claims, 16, "tenancy[0]").admitted);
  auto younger = admit(claims[2], claims, 16, "tenancy[0]");
  EXPECT_FALSE(younger.admitted) << "a younger small run must not overtake an older waiting one";
  EXPECT_EQ(younger.inUse, 8);
  EXPECT_EQ(younger.aheadInLine, 8);
  EXPECT_NE(younger.message.find("8 of 16 allowed by tenancy[0] are in use"), std::string::npos);
  // The running job finishes: both fit.
  claims.erase(claims.begin());
  EXPECT_TRUE(admit(claims[1], claims, 16, "tenancy[0]").admitted);
  // Same creation time: the name decides, so two replicas of the decision agree.
  std::vector<AcceleratorClaim> tied = {{"a/x", "t", 10, false}, {"a/y", "t", 10, false}};
  EXPECT_TRUE(admit(tied[0], tied, 16, "r").admitted);
  EXPECT_FALSE(admit(tied[1], tied, 16, "r").admitted);
}

}  // namespace
}  // namespace vto::crd
