// Raw workerPoolSpecs: the table of Vertex's camelCase field names is the discovery document's,
// every other key (snake_case twins first) and every value of the wrong type is a problem, and what
// the tenancy rules need is read out.
#include <gtest/gtest.h>

#include "crd/machine_catalog.h"
#include "crd/raw_pool.h"
#include "tests/unit/crd/crd_test_support.h"

namespace vto::crd {
namespace {

using nlohmann::json;

// WorkerPoolSpec's closure in the discovery document, in rawPoolSchema()'s notation.
std::map<std::string, std::map<std::string, std::string>> discoveryClosure() {
  auto document = json::parse(testing::readFile(testing::repoRoot() / "third_party/vertex-api/aiplatform.v1.custom-training.subset.json"));
  const json& schemas = document.at("schemas");
  const std::string prefix = "GoogleCloudAiplatformV1";
  std::map<std::string, std::map<std::string, std::string>> out;
  std::vector<std::string> pending = {prefix + "WorkerPoolSpec"};
  while (!pending.empty()) {
    std::string id = pending.back();
    pending.pop_back();
    std::string name = id.substr(prefix.size());
    if (out.count(name)) continue;
    auto& fields = out[name];
    for (const auto& [field, property] : schemas.at(id).at("properties").items()) {
      if (property.value("readOnly", false)) continue;
      auto typeOf = [&](const json& p) -> std::string {
        if (p.contains("$ref")) {
          pending.push_back(p["$ref"].get<std::string>());
          return p["$ref"].get<std::string>().substr(prefix.size());
        }
        std::string type = p.at("type");
        if (type == "integer") return p.value("format", "int32");
        if (type == "string" && p.value("format", "") == "int64") return "int64";
        return type;
      };
      fields[field] = property.value("type", "") == "array" ? "[]" + typeOf(property.at("items")) : typeOf(property);
    }
  }
  return out;
}

TEST(RawPoolSchema, IsTheDiscoveryDocumentsWorkerPoolSpec) {
  auto expected = discoveryClosure();
  ASSERT_GE(expected.size(), 9u);
  EXPECT_EQ(rawPoolSchema(), expected);
}

std::vector<std::string> problemFields(const RawPool& pool) {
  std::vector<std::string> out;
  for (const auto& problem : pool.unreadable) out.push_back(problem.field);
  return out;
}

TEST(RawPool, SnakeCaseAndUnknownKeysAreProblemsNamingTheCamelCaseSpelling) {
  auto pool = readRawPool(json::parse(R"({
    "machine_spec": {"accelerator_count": 8},
    "machineSpec": {"machineType": "n1-standard-8", "AcceleratorType": "NVIDIA_TESLA_T4",
                    "reservationAffinity": {"reservation_affinity_type": "ANY_RESERVATION"}},
    "containerSpec": {"imageUri": "i", "env": [{"name": "A", "value": "1", "valueFrom": "x"}]},
    "pythonPackageSpec": {"package_uris": ["gs://x/p.tar.gz"]},
    "nfsMounts": [{"server": "10.0.0.2", "mount_point": "a"}],
    "replicaCount": 1, "replica_count": 100, "sidecars": []})"));
  EXPECT_EQ(problemFields(pool),
            (std::vector<std::string>{"machine_spec", "replica_count", "sidecars", "machineSpec.AcceleratorType",
                                      "machineSpec.reservationAffinity.reservation_affinity_type",
                                      "containerSpec.env[0].valueFrom", "pythonPackageSpec.package_uris",
                                      "nfsMounts[0].mount_point"}));
  EXPECT_EQ(pool.unreadable[0].expected,
            "unknown field; write it as machineSpec: vto reads and checks only Vertex's camelCase JSON names, and "
            "Vertex would read this one too");
  EXPECT_NE(pool.unreadable[3].expected.find("write it as acceleratorType"), std::string::npos);
  EXPECT_EQ(pool.unreadable[2].expected,
            "unknown field; a Vertex WorkerPoolSpec has machineSpec, replicaCount, containerSpec, pythonPackageSpec, "
            "diskSpec, nfsMounts, lustreMounts");
  // What was not read keeps its default: the snake_case twins counted nothing.
  EXPECT_EQ(pool.acceleratorCount, 0);
  EXPECT_EQ(pool.replicaCount, 1);
  EXPECT_TRUE(pool.packageUris.empty());
}

TEST(RawPool, ValuesMustHaveTheTypeVertexReadsNotAnAlternativeSpelling) {
  auto pool = readRawPool(json::parse(R"({
    "machineSpec": {"machineType": "n1-standard-8", "acceleratorType": 5, "acceleratorCount": 4097},
    "replicaCount": "1e2", "diskSpec": {"bootDiskSizeGb": "100"},
    "containerSpec": {"imageUri": "i", "args": ["a", 1], "env": {"name": "A"}},
    "nfsMounts": "10.0.0.2:/a"})"));
  EXPECT_EQ(problemFields(pool),
            (std::vector<std::string>{"machineSpec.acceleratorType", "machineSpec.acceleratorCount", "replicaCount",
                                      "containerSpec.args[1]", "containerSpec.env", "nfsMounts"}));
  EXPECT_EQ(pool.unreadable[1].expected, "must be a whole number from 0 to 4096, e.g. 1");
  EXPECT_EQ(pool.unreadable[2].expected, "must be a whole number from 0 to 10000, e.g. 1");
}

TEST(RawPool, ReadsWhatTheTenancyRulesGovern) {
  auto pool = readRawPool(json::parse(R"({
    "machineSpec": {"machineType": "ct5lp-hightpu-4t", "acceleratorType": "TPU_V5_LITEPOD", "acceleratorCount": "4",
                    "tpuTopology": "2x2",
                    "reservationAffinity": {"reservationAffinityType": "SPECIFIC_RESERVATION",
                                            "key": "compute.googleapis.com/reservation-name", "values": ["projects/p/zones/z/reservations/r"]}},
    "replicaCount": "2",
    "nfsMounts": [{"server": "10.0.0.2", "path": "/a", "mountPoint": "a"}, {"path": "/b"}],
    "lustreMounts": [{"instanceIp": "10.0.0.3"}]})"));
  EXPECT_TRUE(pool.unreadable.empty());
  EXPECT_EQ(pool.machineType, "ct5lp-hightpu-4t");
  EXPECT_EQ(pool.acceleratorCount, 4);
  EXPECT_EQ(pool.replicaCount, 2);
  EXPECT_EQ(pool.tpuTopology, "2x2");
  ASSERT_EQ(pool.nfsMounts.size(), 2u);
  EXPECT_EQ(pool.nfsMounts[0].server, "10.0.0.2");
  EXPECT_EQ(pool.nfsMounts[1].server, "") << "a mount without a server is still a mount the rules see";
  ASSERT_TRUE(pool.reservationAffinity);
  EXPECT_EQ(pool.reservationAffinity->type, "SPECIFIC_RESERVATION");
  EXPECT_EQ(pool.reservationAffinity->values, std::vector<std::string>{"projects/p/zones/z/reservations/r"});
  EXPECT_EQ(pool.lustreMounts, 1u);
  EXPECT_TRUE(readRawPool(json::object()).unreadable.empty()) << "{} skips a pool";
}

TEST(MachineCatalog, KnowsWhatAMachineCarriesByItself) {
  const auto& catalog = MachineCatalog::builtIn();
  auto carries = [&](const std::string& machine) {
    auto builtIn = catalog.builtInAccelerators(machine);
    return builtIn ? builtIn->acceleratorType + " x" + std::to_string(builtIn->count) : "none";
  };
  EXPECT_EQ(carries("n1-standard-8"), "none");
  EXPECT_EQ(carries("e2-standard-4"), "none");
  EXPECT_EQ(carries("g1-small"), "none");
  EXPECT_EQ(carries("a2-highgpu-8g"), "NVIDIA_TESLA_A100 x8");
  EXPECT_EQ(carries("g2-standard-24"), "NVIDIA_L4 x2");
  EXPECT_EQ(carries("cloud-tpu"), " x8") << "TPU_V2 or TPU_V3: the table cannot say which";
  EXPECT_EQ(carries("ct5lp-hightpu-4t"), "TPU_V5_LITEPOD x4") << "the count from the name, the type from the table";
  EXPECT_EQ(carries("ct6e-standard-8t"), " x8") << "a TPU family the table does not list";
  EXPECT_EQ(carries("a3-edgegpu-8g-nolssd"), " x8");
  EXPECT_EQ(carries("g9-standard-4"), " x0") << "a GPU family the table does not list: count unknown";
  EXPECT_EQ(tpuSliceChips("2x2"), 4);
  EXPECT_EQ(tpuSliceChips("4x4x8"), 128);
  EXPECT_FALSE(tpuSliceChips("4"));
  EXPECT_FALSE(tpuSliceChips("2x2x2x2"));
  EXPECT_FALSE(tpuSliceChips("2xx2"));
  EXPECT_FALSE(tpuSliceChips("v4-8"));
  // Without an accelerator type, such machines are refused with what they carry.
  auto problem = catalog.check("ct5lp-hightpu-4t", "", 0);
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->message,
            "machine type ct5lp-hightpu-4t comes with accelerators (4 x TPU_V5_LITEPOD); set acceleratorType and "
            "acceleratorCount to what it carries");
}

}  // namespace
}  // namespace vto::crd
