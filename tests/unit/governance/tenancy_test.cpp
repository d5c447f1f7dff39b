// Tenancy rules: strict parsing, which rule governs a run, every field a rule limits, and the
// accelerator cap's first-created-first-served admission.
#include <gtest/gtest.h>

#include <functional>
#include <limits>

#include "crd/accelerators.h"
#include "crd/strict_json.h"
#include "crd/yaml_json.h"
#include "governance/tenancy.h"
#include "tests/unit/crd/crd_test_support.h"

namespace vto::governance {
// What this file reads of the API.
using crd::DecodeError;
using crd::Distribution;
using crd::MetricTrigger;
using crd::ModelSpec;
using crd::NewDataTrigger;
using crd::PythonPackageTrainer;
using crd::ReductionServer;
using crd::RetrainingPolicySpec;
using crd::Trainer;
using crd::TrainingRunSpec;
using crd::acceleratorsOf;
using crd::parseYamlDocuments;
using crd::readRawPool;

namespace {

const char* kRules = R"(
- namespaces: [team-a, team-b]
  projects: [acme-ml]
  locations: [us-central1, europe-west4]
  serviceAccounts: [trainer@acme-ml.iam.gserviceaccount.com]
  bucketPrefixes: [gs://acme-ml-out/, gs://acme-ml-ckpt/team-a]
  acceleratorTypes: [NVIDIA_TESLA_T4, NVIDIA_L4]
  maxAccelerators: 16
  imagePrefixes: [us-central1-docker.pkg.dev/p/, us-docker.pkg.dev/p/]
- namespaceSelector: {matchLabels: {tier: research}}
  projects: [research]
  imagePrefixes: [us-central1-docker.pkg.dev/p/]
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
  auto spec = crd::testing::runFromYaml(crd::testing::kMinimalRun).spec;
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
    {"machineSpec": {"machineType": "g2-standard-48", "acceleratorType": "NVIDIA_L4", "acceleratorCount": 4},
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
  // The rules refuse what they cannot read, whatever validation says (fail closed).
  EXPECT_EQ(fieldOf([](auto& pools) { pools[0]["machineSpec"]["acceleratorCount"] = "four"; }),
            "spec.workerPoolSpecs[0].machineSpec.acceleratorCount");
}

TEST(Tenancy, AClaimComesFromTheRunsMetadataAndSpec) {
  auto run = crd::testing::runFromYaml(crd::testing::kMinimalRun);
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


// --- Every field that reaches Vertex is governed (API.md "Tenancy rules") ---

const char* kClosedRules = R"(
- namespaces: [team-a]
  projects: [acme-ml]
  bucketPrefixes: [gs://acme-ml-out/, gs://shared/team-a/]
  acceleratorTypes: [NVIDIA_TESLA_T4, NVIDIA_L4]
  maxAccelerators: 16
  prometheusUrls: [https://prometheus.monitoring:9090]
  networks:
    - {name: projects/123456/global/networks/team-a-vpc, reservedIpRanges: [team-a-range]}
    - projects/123456/global/networks/shared-vpc
  models: [fraud, churn]
  nfsServers: [10.0.0.2]
  reservations: [projects/acme-ml/zones/us-central1-a/reservations/team-a]
  interactiveShell: false
  imagePrefixes: [us-central1-docker.pkg.dev/p/, us-docker.pkg.dev/p/]
  labels: {experiment: [], cost-center: [cc-1234]}
  tensorboards: [projects/acme-ml/locations/us-central1/tensorboards/7]
  kmsKeys: [projects/acme-ml/locations/us/keyRings/r/cryptoKeys/k]
- namespaces: [team-b]
  models: []
  interactiveShell: true
  imagePrefixes: ["*"]
  labels: {"*": []}
  tensorboards: ["*"]
  kmsKeys: ["*"]
)";

TenancyRules closedRules() { return parseTenancyRules(parseYamlDocuments(kClosedRules).at(0)); }

TrainingRunSpec rawSpec(const std::string& pools) {
  auto spec = allowedSpec();
  spec.trainer.reset();
  spec.resources.reset();
  spec.workerPoolSpecs = nlohmann::json::parse(pools);
  return spec;
}

std::string violationField(const TrainingRunSpec& spec, const TenancyRules& rules = closedRules()) {
  auto violation = checkTenancy(spec, {}, kTeamA, rules);
  return violation ? violation->field : "";
}

TEST(TenancyParse, ReadsTheFieldsThatGovernEverythingElse) {
  auto parsed = closedRules();
  EXPECT_EQ(parsed[0].prometheusUrls, (std::vector<std::string>{"https://prometheus.monitoring:9090"}));
  EXPECT_EQ(parsed[0].networks, (std::vector<std::string>{"projects/123456/global/networks/team-a-vpc",
                                                           "projects/123456/global/networks/shared-vpc"}));
  EXPECT_EQ(parsed[0].reservedIpRanges.at("projects/123456/global/networks/team-a-vpc"),
            std::vector<std::string>{"team-a-range"});
  EXPECT_TRUE(parsed[0].reservedIpRanges.at("projects/123456/global/networks/shared-vpc").empty());
  EXPECT_EQ(parsed[0].labels.at("cost-center"), std::vector<std::string>{"cc-1234"});
  EXPECT_EQ(parsed[1].imagePrefixes, std::vector<std::string>{"*"});
  EXPECT_EQ(parsed[0].models, (std::vector<std::string>{"fraud", "churn"}));
  EXPECT_EQ(parsed[0].nfsServers, (std::vector<std::string>{"10.0.0.2"}));
  EXPECT_EQ(parsed[0].reservations.size(), 1u);
  EXPECT_FALSE(parsed[0].interactiveShell);
  EXPECT_TRUE(parsed[1].interactiveShell);
  EXPECT_EQ(parsed[1].models, std::vector<std::string>{}) << "models: [] is a list: no model";
  EXPECT_FALSE(rules()[0].models) << "absent: none, and warned about at start";

  EXPECT_NE(parseError("- namespaces: [a]\n  prometheusUrls: ['prometheus:9090']\n").find("tenancy[0].prometheusUrls[0]"),
            std::string::npos);
  EXPECT_NE(parseError("- namespaces: [a]\n  prometheusUrls: ['https://p/?x=1']\n").find("not an http(s) base URL"),
            std::string::npos);
  EXPECT_NE(parseError("- namespaces: [a]\n  networks: [team-a-vpc]\n").find("tenancy[0].networks[0]"), std::string::npos);
  EXPECT_NE(parseError("- namespaces: [a]\n  reservations: [team-a]\n").find("tenancy[0].reservations[0]"), std::string::npos);
  EXPECT_NE(parseError("- namespaces: [a]\n  networks: [{name: x}]\n").find("tenancy[0].networks[0]"), std::string::npos);
  EXPECT_NE(parseError("- namespaces: [a]\n  networks: [{reservedIpRanges: [r]}]\n").find("tenancy[0].networks[0].name"),
            std::string::npos);
  // An image prefix is a registry path ending in "/": ".../acme" would let ".../acme-other/..." through.
  for (const char* prefix : {"us-docker.pkg.dev/acme", "us-docker.pkg.dev/", "acme/train/", "US-docker.pkg.dev/acme/",
                             "us-docker.pkg.dev/acme/../other/"}) {
    EXPECT_NE(parseError(std::string("- namespaces: [a]\n  imagePrefixes: ['") + prefix + "']\n")
                  .find("tenancy[0].imagePrefixes[0]"),
              std::string::npos)
        << prefix;
  }
  EXPECT_NE(parseError("- namespaces: [a]\n  labels: [team]\n").find("tenancy[0].labels: must be a map"), std::string::npos);
  EXPECT_NE(parseError("- namespaces: [a]\n  labels: {'*': [x]}\n").find("tenancy[0].labels.*"), std::string::npos);
  EXPECT_NE(parseError("- namespaces: [a]\n  tensorboards: [tb-7]\n").find("tenancy[0].tensorboards[0]"), std::string::npos);
  EXPECT_NE(parseError("- namespaces: [a]\n  kmsKeys: [projects/p/keys/k]\n").find("tenancy[0].kmsKeys[0]"), std::string::npos);
  EXPECT_NE(parseError("- namespaces: [a]\n  interactiveShell: yes-please\n").find("tenancy[0].interactiveShell"),
            std::string::npos);
  EXPECT_NE(parseError("- namespaces: [a]\n  nfsServers: ['']\n").find("tenancy[0].nfsServers[0]: must not be empty"),
            std::string::npos);
  EXPECT_NE(parseError("- namespaces: [a]\n  model: [x]\n").find("tenancy[0].model: unknown field"), std::string::npos);
}

// Vertex's JSON parser reads snake_case proto names too: a pool written in them reached Vertex with
// its accelerators uncounted and its types and package locations unchecked.
TEST(Tenancy, RawPoolsInSnakeCaseAreRefusedNotIgnored) {
  auto spec = rawSpec(R"([{"machine_spec": {"machine_type": "a3-highgpu-8g", "accelerator_type": "NVIDIA_H100_80GB",
                                            "accelerator_count": 8},
                           "replica_count": "100",
                           "python_package_spec": {"executor_image_uri": "us-docker.pkg.dev/p/r/i:1",
                                                   "package_uris": ["gs://other-team/pkg.tar.gz"], "python_module": "m"}}])");
  auto violation = checkTenancy(spec, {}, kTeamA, rules());
  ASSERT_TRUE(violation) << "800 H100s in another team's package passed every rule";
  EXPECT_EQ(violation->field, "spec.workerPoolSpecs[0].machine_spec");
  EXPECT_NE(violation->message.find("write it as machineSpec"), std::string::npos) << violation->message;
  // Nested keys too: a camelCase pool with one snake_case count.
  auto nested = rawSpec(R"([{"machineSpec": {"machineType": "n1-standard-8", "acceleratorType": "NVIDIA_TESLA_T4",
                                             "accelerator_count": 4}, "replicaCount": 1}])");
  EXPECT_EQ(violationField(nested, rules()), "spec.workerPoolSpecs[0].machineSpec.accelerator_count");
}

// A TPU machine carries its chips whether or not the pool names them; it used to count as zero.
TEST(Tenancy, TpuMachinesCountTheirChipsWithoutAnAcceleratorType) {
  auto raw = rawSpec(R"([{"machineSpec": {"machineType": "ct5lp-hightpu-4t"}, "replicaCount": 8,
                          "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}}])");
  EXPECT_EQ(acceleratorsOf(raw), 32) << "4 chips per machine x 8 replicas";
  auto violation = checkTenancy(raw, {}, kTeamA, rules());
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->field, "spec.workerPoolSpecs[0].machineSpec.machineType");
  EXPECT_NE(violation->message.find("accelerator type \"TPU_V5_LITEPOD\""), std::string::npos) << violation->message;

  auto unlisted = rules();
  unlisted[0].acceleratorTypes.clear();  // any type: the cap still counts the chips
  EXPECT_EQ(violationField(raw, unlisted), "spec.workerPoolSpecs");

}

// Claims that would wrap negative together must not make room under the cap.
TEST(Tenancy, ClaimsSaturateInsteadOfWrappingNegative) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  std::vector<AcceleratorClaim> claims = {{"a/huge", "t1", kMax, true}, {"a/big", "t2", kMax - 10, true}};
  EXPECT_EQ(acceleratorsInUse(claims), kMax);
  AcceleratorClaim small{"a/small", "t3", 1, false};
  EXPECT_FALSE(admit(small, claims, 16, "tenancy[0]").admitted);
}

TEST(Tenancy, DataPrefixesAreDirectoriesInTheCheckAndTheListing) {
  EXPECT_EQ(directoryPrefix("gs://shared/team-a"), "gs://shared/team-a/");
  EXPECT_EQ(directoryPrefix("gs://shared/team-a/"), "gs://shared/team-a/");
  EXPECT_EQ(directoryPrefix("gs://shared"), "gs://shared/");
  RetrainingPolicySpec policy;
  policy.templ.spec = allowedSpec();
  policy.triggers.newData = NewDataTrigger{};
  // gs://shared/team-a is the directory gs://shared/team-a/: allowed, and what the operator lists.
  policy.triggers.newData->gcsPrefix = "gs://shared/team-a";
  EXPECT_FALSE(decidePolicyTenancy(policy, {}, kTeamA, closedRules()).violation);
  // gs://shared/team-ab is another directory, with or without its slash.
  for (const char* other : {"gs://shared/team-ab", "gs://shared/team-ab/", "gs://shared/team-"}) {
    policy.triggers.newData->gcsPrefix = other;
    auto violation = decidePolicyTenancy(policy, {}, kTeamA, closedRules()).violation;
    ASSERT_TRUE(violation) << other;
    EXPECT_EQ(violation->field, "spec.triggers.newData.gcsPrefix");
    EXPECT_NE(violation->message.find("\"" + directoryPrefix(other) + "\""), std::string::npos)
        << "the message names the directory that was checked: " << violation->message;
  }
}

TEST(Tenancy, NetworkTensorboardKmsAndTheShellAreGoverned) {
  auto fieldOf = [](const std::function<void(TrainingRunSpec&)>& change) {
    auto spec = allowedSpec();
    change(spec);
    return violationField(spec);
  };
  EXPECT_EQ(fieldOf([](auto&) {}), "");
  EXPECT_EQ(fieldOf([](auto& s) { s.network = "projects/123456/global/networks/team-a-vpc"; }), "");
  EXPECT_EQ(fieldOf([](auto& s) { s.network = "projects/999/global/networks/team-b-vpc"; }), "spec.network");
  EXPECT_EQ(fieldOf([](auto& s) { s.reservedIpRanges = {"team-b-range"}; }), "spec.reservedIpRanges");
  EXPECT_EQ(fieldOf([](auto& s) {
              s.network = "projects/123456/global/networks/team-a-vpc";
              s.reservedIpRanges = {"team-a-range"};
            }),
            "");
  // Reserved ranges per network: another range of a listed network, or any range of a network
  // listed by name alone, is refused.
  EXPECT_EQ(fieldOf([](auto& s) {
              s.network = "projects/123456/global/networks/team-a-vpc";
              s.reservedIpRanges = {"team-a-range", "team-b-range"};
            }),
            "spec.reservedIpRanges[1]");
  EXPECT_EQ(fieldOf([](auto& s) {
              s.network = "projects/123456/global/networks/shared-vpc";
              s.reservedIpRanges = {"team-a-range"};
            }),
            "spec.reservedIpRanges[0]");
  EXPECT_EQ(fieldOf([](auto& s) { s.network = "projects/123456/global/networks/shared-vpc"; }), "");
  // TensorBoards and keys by name: another of the rule's own project is refused too.
  EXPECT_EQ(fieldOf([](auto& s) { s.tensorboard = "projects/acme-ml/locations/us-central1/tensorboards/7"; }), "");
  EXPECT_EQ(fieldOf([](auto& s) { s.tensorboard = "projects/acme-ml/locations/us-central1/tensorboards/8"; }),
            "spec.tensorboard");
  EXPECT_EQ(fieldOf([](auto& s) { s.tensorboard = "projects/research/locations/us-central1/tensorboards/7"; }),
            "spec.tensorboard");
  EXPECT_EQ(fieldOf([](auto& s) { s.tensorboard = "tensorboards/7"; }), "spec.tensorboard");
  EXPECT_EQ(fieldOf([](auto& s) { s.encryptionKmsKeyName = "projects/acme-ml/locations/us/keyRings/r/cryptoKeys/k"; }), "");
  EXPECT_EQ(fieldOf([](auto& s) { s.encryptionKmsKeyName = "projects/acme-ml/locations/us/keyRings/r/cryptoKeys/other"; }),
            "spec.encryptionKmsKeyName");
  EXPECT_EQ(fieldOf([](auto& s) { s.encryptionKmsKeyName = "projects/research/locations/us/keyRings/r/cryptoKeys/k"; }),
            "spec.encryptionKmsKeyName");
  EXPECT_EQ(fieldOf([](auto& s) { s.enableWebAccess = true; }), "spec.enableWebAccess");
  EXPECT_EQ(fieldOf([](auto& s) { s.enableDashboardAccess = true; }), "spec.enableDashboardAccess");

  auto network = allowedSpec();
  network.network = "projects/999/global/networks/team-b-vpc";
  auto violation = checkTenancy(network, {}, kTeamA, rules());  // a rule without networks: none allowed
  ASSERT_TRUE(violation);
  EXPECT_NE(violation->message.find("allowed: none (the rule lists no networks)"), std::string::npos) << violation->message;
  auto shell = allowedSpec();
  shell.enableWebAccess = true;
  EXPECT_FALSE(checkTenancy(shell, {}, {"team-b", std::map<std::string, std::string>{}}, closedRules()))
      << "team-b's rule has interactiveShell: true";
  auto withoutRules = allowedSpec();
  withoutRules.network = "projects/999/global/networks/any";
  withoutRules.enableWebAccess = true;
  EXPECT_FALSE(checkTenancy(withoutRules, {}, kTeamA, {})) << "no rules: everything is allowed";
}

// Images are pulled by the project's service agent, which can read every team's registry: a run
// may name only images under its rule's prefixes (and Vertex's own prebuilt ones).
TEST(Tenancy, ImagesOfEveryPoolAndTheServingContainerAreGoverned) {
  auto fieldOf = [](const std::function<void(TrainingRunSpec&)>& change, const TenancyRules& rules = closedRules()) {
    auto spec = allowedSpec();
    change(spec);
    return violationField(spec, rules);
  };
  EXPECT_EQ(fieldOf([](auto&) {}), "");
  EXPECT_EQ(fieldOf([](auto& s) { s.trainer->container->imageUri = "us-central1-docker.pkg.dev/other-team/r/img:1"; }),
            "spec.trainer.container.imageUri");
  EXPECT_EQ(fieldOf([](auto& s) { s.trainer->container->imageUri = "us-central1-docker.pkg.dev/p-other/r/img:1"; }),
            "spec.trainer.container.imageUri")
      << "a prefix is a directory: p/ does not allow p-other/";
  EXPECT_EQ(fieldOf([](auto& s) { s.trainer->container->imageUri = "us-central1-docker.pkg.dev/p/../other/img:1"; }),
            "spec.trainer.container.imageUri");
  EXPECT_EQ(fieldOf([](auto& s) {
              s.trainer->container->imageUri = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-1.py310:latest";
            }),
            "")
      << "Vertex's prebuilt images are always allowed";
  EXPECT_EQ(fieldOf([](auto& s) {
              s.trainer->container.reset();
              s.trainer->pythonPackage = PythonPackageTrainer{};
              s.trainer->pythonPackage->executorImageUri = "gcr.io/other/exec:1";
              s.trainer->pythonPackage->pythonModule = "m";
            }),
            "spec.trainer.pythonPackage.executorImageUri");
  EXPECT_EQ(fieldOf([](auto& s) {
              s.distribution = Distribution{};
              s.distribution->reductionServer = ReductionServer{};
              s.distribution->reductionServer->imageUri = "docker.io/attacker/rs:1";
            }),
            "spec.distribution.reductionServer.imageUri");
  EXPECT_EQ(fieldOf([](auto& s) {
              s.model = ModelSpec{};
              s.model->model = "fraud";
              s.model->servingContainer.imageUri = "us-central1-docker.pkg.dev/other-team/serve/img:1";
            }),
            "spec.model.servingContainer.imageUri");
  EXPECT_EQ(violationField(rawSpec(R"([{"machineSpec": {"machineType": "n1-standard-4"},
                                        "containerSpec": {"imageUri": "us-docker.pkg.dev/other/r/i:1"}}])")),
            "spec.workerPoolSpecs[0].containerSpec.imageUri");
  EXPECT_EQ(violationField(rawSpec(R"([{"machineSpec": {"machineType": "n1-standard-4"},
                                        "pythonPackageSpec": {"executorImageUri": "us-docker.pkg.dev/other/r/i:1",
                                                              "pythonModule": "m", "packageUris": ["gs://acme-ml-out/p.tgz"]}}])")),
            "spec.workerPoolSpecs[0].pythonPackageSpec.executorImageUri");
  // "*" opens the field (team-b's rule); a rule with no imagePrefixes allows only Vertex's images.
  auto anyImage = allowedSpec();
  anyImage.trainer->container->imageUri = "docker.io/anything/at-all:1";
  EXPECT_FALSE(checkTenancy(anyImage, {}, {"team-b", std::map<std::string, std::string>{}}, closedRules()));
  auto noPrefixes = parseTenancyRules(parseYamlDocuments("- namespaces: [team-a]\n").at(0));
  auto violation = checkTenancy(allowedSpec(), {}, kTeamA, noPrefixes);
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->message,
            "spec.trainer.container.imageUri: image \"us-central1-docker.pkg.dev/p/r/img:1\" is not allowed for this "
            "namespace by tenancy[0] (namespaces team-a); allowed: images under none (the rule lists no imagePrefixes), "
            "and Vertex's prebuilt images");
}

// Labels reach Google's billing export: a run sets only the keys (and values) its rule allows.
TEST(Tenancy, LabelKeysAndValuesAreGoverned) {
  auto fieldOf = [](const std::map<std::string, std::string>& labels, bool onModel = false) {
    auto spec = allowedSpec();
    if (onModel) {
      spec.model = ModelSpec{};
      spec.model->model = "fraud";
      spec.model->labels = labels;
    } else {
      spec.labels = labels;
    }
    return violationField(spec);
  };
  EXPECT_EQ(fieldOf({{"experiment", "lr-sweep"}, {"cost-center", "cc-1234"}}), "");
  EXPECT_EQ(fieldOf({{"cost-center", "cc-9999"}}), "spec.labels.cost-center") << "another team's cost center";
  EXPECT_EQ(fieldOf({{"team", "team-b"}}), "spec.labels.team") << "a key the rule does not list";
  EXPECT_EQ(fieldOf({{"team", "team-b"}}, true), "spec.model.labels.team");
  EXPECT_EQ(fieldOf({{"experiment", "x"}}, true), "");
  auto spec = allowedSpec();
  spec.labels = {{"cost-center", "cc-9999"}};
  auto violation = checkTenancy(spec, {}, kTeamA, closedRules());
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->message,
            "spec.labels.cost-center: label value \"cost-center=cc-9999\" is not allowed for this namespace by "
            "tenancy[0] (namespaces team-a); allowed: cc-1234");
  EXPECT_FALSE(checkTenancy(spec, {}, {"team-b", std::map<std::string, std::string>{}}, closedRules()))
      << "team-b's rule allows any key (\"*\")";
  spec.labels = {{"anything", "x"}};
  violation = checkTenancy(spec, {}, kTeamA, rules());
  ASSERT_TRUE(violation) << "a rule without labels allows none";
  EXPECT_NE(violation->message.find("allowed: none (the rule lists no labels)"), std::string::npos) << violation->message;
}

TEST(TenancyParse, TheOperatorWarnsAtStartAboutOpenedAndUnlistedFields) {
  auto closed = closedRules();
  EXPECT_TRUE(closed[0].startupWarnings(0).empty()) << "every field listed, none opened";
  auto opened = closed[1].startupWarnings(1);
  ASSERT_EQ(opened.size(), 4u);
  EXPECT_EQ(opened[0].rfind("tenancy[1] (namespaces team-b) allows any image", 0), 0u) << opened[0];
  EXPECT_NE(opened[1].find("allows any label key"), std::string::npos);
  EXPECT_NE(opened[2].find("any TensorBoard"), std::string::npos);
  EXPECT_NE(opened[3].find("any KMS key"), std::string::npos);
  auto old = parseTenancyRules(parseYamlDocuments("- namespaces: [a]\n").at(0))[0].startupWarnings(0);
  ASSERT_EQ(old.size(), 2u) << "a rule written before models and images were governed";
  EXPECT_NE(old[0].find("has no `models`"), std::string::npos);
  EXPECT_NE(old[1].find("lists no imagePrefixes"), std::string::npos);
}

TEST(Tenancy, RawPoolsNfsMountsReservationsAndLustreAreGoverned) {
  auto poolWith = [](const std::string& extra) {
    return rawSpec(R"([{"machineSpec": {"machineType": "n1-standard-8")" + extra +
                   R"(, "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}}])");
  };
  EXPECT_EQ(violationField(poolWith("}")), "");
  EXPECT_EQ(violationField(poolWith(R"(}, "nfsMounts": [{"server": "10.0.0.2", "path": "/a", "mountPoint": "a"}])")), "");
  EXPECT_EQ(violationField(poolWith(R"(}, "nfsMounts": [{"server": "10.0.0.2", "path": "/a", "mountPoint": "a"},
                                                          {"server": "10.9.9.9", "path": "/b", "mountPoint": "b"}])")),
            "spec.workerPoolSpecs[0].nfsMounts[1].server");
  EXPECT_EQ(violationField(poolWith(R"(}, "nfsMounts": [{"server": "10.0.0.2", "path": "/a", "mountPoint": "a"}])"), rules()),
            "spec.workerPoolSpecs[0].nfsMounts[0].server")
      << "a rule without nfsServers allows none";
  const std::string affinity = R"(, "reservationAffinity": {"reservationAffinityType": )";
  EXPECT_EQ(violationField(poolWith(affinity + R"("NO_RESERVATION"}})")), "");
  EXPECT_EQ(violationField(poolWith(affinity + R"("SPECIFIC_RESERVATION", "key": "compute.googleapis.com/reservation-name",
                                                  "values": ["projects/acme-ml/zones/us-central1-a/reservations/team-a"]}})")),
            "");
  EXPECT_EQ(violationField(poolWith(affinity + R"("SPECIFIC_RESERVATION", "key": "compute.googleapis.com/reservation-name",
                                                  "values": ["projects/acme-ml/zones/us-central1-a/reservations/team-b"]}})")),
            "spec.workerPoolSpecs[0].machineSpec.reservationAffinity.values[0]");
  EXPECT_EQ(violationField(poolWith(affinity + R"("ANY_RESERVATION"}})")),
            "spec.workerPoolSpecs[0].machineSpec.reservationAffinity.reservationAffinityType");
  EXPECT_EQ(violationField(poolWith(affinity + R"("SPECIFIC_RESERVATION", "key": "team", "values": ["a"]}})")),
            "spec.workerPoolSpecs[0].machineSpec.reservationAffinity.key");
  EXPECT_EQ(violationField(poolWith(R"(}, "lustreMounts": [{"instanceIp": "10.0.0.3", "volumeHandle": "v", "filesystem": "f",
                                                             "mountPoint": "l"}])")),
            "spec.workerPoolSpecs[0].lustreMounts");
}

TEST(Tenancy, APolicysPrometheusUrlMustBeOneOfTheRulesCanonically) {
  EXPECT_EQ(canonicalPrometheusUrl("HTTPS://Prometheus.Monitoring:443/"), "https://prometheus.monitoring");
  EXPECT_EQ(canonicalPrometheusUrl("http://prometheus.monitoring:80/prom/"), "http://prometheus.monitoring/prom");
  EXPECT_EQ(canonicalPrometheusUrl("http://[::1]:9090"), "http://[::1]:9090");
  EXPECT_FALSE(canonicalPrometheusUrl("ftp://prometheus"));
  EXPECT_FALSE(canonicalPrometheusUrl("http://user@prometheus"));
  EXPECT_FALSE(canonicalPrometheusUrl("http://prometheus/?x"));

  RetrainingPolicySpec policy;
  policy.templ.spec = allowedSpec();
  policy.triggers.metric = MetricTrigger{};
  auto fieldFor = [&](const std::string& url, const TenancyRules& rules) {
    policy.triggers.metric->prometheusUrl = url;
    auto violation = decidePolicyTenancy(policy, {}, kTeamA, rules).violation;
    return violation ? violation->field : "";
  };
  EXPECT_EQ(fieldFor("https://prometheus.monitoring:9090", closedRules()), "");
  EXPECT_EQ(fieldFor("HTTPS://PROMETHEUS.monitoring:9090/", closedRules()), "");
  EXPECT_EQ(fieldFor("https://prometheus.monitoring:9091", closedRules()), "spec.triggers.metric.prometheusUrl");
  EXPECT_EQ(fieldFor("http://prometheus.monitoring:9090", closedRules()), "spec.triggers.metric.prometheusUrl");
  EXPECT_EQ(fieldFor("https://team-b-service.team-b:8080", closedRules()), "spec.triggers.metric.prometheusUrl");
  EXPECT_EQ(fieldFor("https://prometheus.monitoring:9090", rules()), "spec.triggers.metric.prometheusUrl")
      << "a rule without prometheusUrls allows none";
  EXPECT_EQ(fieldFor("https://anything:1", {}), "") << "no rules: everything is allowed";
}

TEST(Tenancy, ModelsAreCheckedByIdWhenTheRuleListsThem) {
  auto parsed = closedRules();
  EXPECT_FALSE(checkModelAllowed(parsed[0], 0, "fraud"));
  auto violation = checkModelAllowed(parsed[0], 0, "pricing");
  ASSERT_TRUE(violation);
  EXPECT_EQ(violation->field, "spec.model.model");
  EXPECT_EQ(violation->message,
            "spec.model.model: model \"pricing\" is not allowed for this namespace by tenancy[0] (namespaces team-a); "
            "allowed: fraud, churn");
  EXPECT_TRUE(checkModelAllowed(parsed[1], 1, "fraud")) << "models: [] allows none";
  auto absent = checkModelAllowed(rules()[0], 0, "anything");
  ASSERT_TRUE(absent) << "no models field: none, as every other governed field";
  EXPECT_NE(absent->message.find("the rule lists no models"), std::string::npos) << absent->message;
}

}  // namespace
}  // namespace vto::governance
