// The kube client against a real API server: CRUD, paging, both patch types, typed errors, TLS.
#include <gtest/gtest.h>

#include "controller/kube_client.h"
#include "tests/support/test_cluster.h"

namespace vto::controller {
namespace {

using nlohmann::json;
using vto::testing::sharedCluster;

const Resource kConfigMaps{"", "v1", "configmaps", true};
const Resource kNamespaces{"", "v1", "namespaces", false};

json configMap(const std::string& name, json data) {
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}}, {"data", data}};
}

class KubeClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto created = sharedCluster().kubectl("create namespace kube-client-test");
    ASSERT_EQ(created.exitCode, 0) << created.output;
  }
  RestKubeClient client{loadKubeconfig(sharedCluster().kubeconfig())};
  const std::string ns = "kube-client-test";
};

TEST_F(KubeClientTest, CreateGetUpdateDelete) {
  auto created = client.create(kConfigMaps, ns, configMap("crud", {{"k", "v1"}}));
  EXPECT_FALSE(created["metadata"]["resourceVersion"].get<std::string>().empty());
  auto got = client.get(kConfigMaps, ns, "crud");
  EXPECT_EQ(got["data"]["k"], "v1");
  got["data"]["k"] = "v2";
  auto updated = client.update(kConfigMaps, ns, got);
  EXPECT_EQ(updated["data"]["k"], "v2");
  auto shown = sharedCluster().kubectl("get configmap crud -n " + ns + " -o jsonpath='{.data.k}'");
  EXPECT_EQ(shown.output, "v2");

  client.remove(kConfigMaps, ns, "crud");
  try {
    client.get(kConfigMaps, ns, "crud");
    FAIL() << "the configmap should be gone";
  } catch (const ApiError& error) {
    EXPECT_TRUE(error.isNotFound());
    EXPECT_EQ(error.status().reason, "NotFound");
    EXPECT_FALSE(error.isRetryable());
  }
}

TEST_F(KubeClientTest, StaleUpdateIsARetryableConflict) {
  auto first = client.create(kConfigMaps, ns, configMap("stale", {{"k", "1"}}));
  auto fresh = first;
  fresh["data"]["k"] = "2";
  client.update(kConfigMaps, ns, fresh);
  first["data"]["k"] = "3";
  try {
    client.update(kConfigMaps, ns, first);
    FAIL() << "an update from a stale resourceVersion must fail";
  } catch (const ApiError& error) {
    EXPECT_TRUE(error.isConflict());
    EXPECT_TRUE(error.isRetryable());
    EXPECT_EQ(error.status().code, 409);
  }
  try {
    client.create(kConfigMaps, ns, configMap("stale", {}));
    FAIL() << "creating an existing name must fail";
  } catch (const ApiError& error) {
    EXPECT_TRUE(error.isAlreadyExists());
    EXPECT_FALSE(error.isRetryable());
    EXPECT_EQ(error.status().details["name"], "stale");
  }
}

TEST_F(KubeClientTest, MergePatchAndServerSideApply) {
  client.create(kConfigMaps, ns, configMap("patched", {{"a", "1"}}));
  auto merged = client.patch(kConfigMaps, ns, "patched", PatchType::Merge, {{"data", {{"b", "2"}}}});
  EXPECT_EQ(merged["data"], json({{"a", "1"}, {"b", "2"}}));

  auto applied = client.patch(kConfigMaps, ns, "applied", PatchType::Apply,
                              configMap("applied", {{"owned", "yes"}}), "vto-test", true);
  EXPECT_EQ(applied["data"]["owned"], "yes");
  bool managedByUs = false;
  for (const auto& entry : applied["metadata"]["managedFields"]) {
    if (entry["manager"] == "vto-test" && entry["operation"] == "Apply") managedByUs = true;
  }
  EXPECT_TRUE(managedByUs);
}

TEST_F(KubeClientTest, WritesThatReadOnlyTheNewResourceVersion) {
  auto version = client.createVersion(kConfigMaps, ns, configMap("versioned", {{"a", "1"}}));
  EXPECT_EQ(client.get(kConfigMaps, ns, "versioned")["metadata"]["resourceVersion"], version);
  auto patched = client.mergePatchVersion(kConfigMaps, ns, "versioned",
                                          {{"metadata", {{"resourceVersion", version}}}, {"data", {{"b", "2"}}}});
  auto stored = client.get(kConfigMaps, ns, "versioned");
  EXPECT_NE(patched, version);
  EXPECT_EQ(stored["metadata"]["resourceVersion"], patched);
  EXPECT_EQ(stored["data"], json({{"a", "1"}, {"b", "2"}}));
  try {  // the resourceVersion sent is a precondition
    client.mergePatchVersion(kConfigMaps, ns, "versioned", {{"metadata", {{"resourceVersion", version}}}});
    FAIL() << "a patch on a stale resourceVersion must fail";
  } catch (const ApiError& error) {
    EXPECT_TRUE(error.isConflict());
  }
}

TEST_F(KubeClientTest, ListFollowsContinueTokens) {
  auto made = sharedCluster().kubectl("create namespace kube-client-paging");
  ASSERT_EQ(made.exitCode, 0) << made.output;
  for (int i = 0; i < 5; ++i) {
    client.create(kConfigMaps, "kube-client-paging", configMap("page-" + std::to_string(i), {}));
  }
  ListOptions options;
  options.limit = 2;
  auto firstPage = client.list(kConfigMaps, "kube-client-paging", options);
  EXPECT_EQ(firstPage.items.size(), 2u);
  EXPECT_FALSE(firstPage.continueToken.empty());
  auto all = listAll(client, kConfigMaps, "kube-client-paging", options);
  // kube-root-ca.crt is created in every namespace by the controller manager, which this cluster
  // does not run; count only ours.
  int ours = 0;
  for (const auto& item : all.items) ours += item["metadata"]["name"].get<std::string>().rfind("page-", 0) == 0;
  EXPECT_EQ(ours, 5);
  EXPECT_FALSE(all.resourceVersion.empty());
}

TEST_F(KubeClientTest, ClusterScopedResources) {
  auto namespaces = listAll(client, kNamespaces, "", {});
  bool found = false;
  for (const auto& item : namespaces.items) found |= item["metadata"]["name"] == ns;
  EXPECT_TRUE(found);
  EXPECT_EQ(client.get(kNamespaces, "", ns)["metadata"]["name"], ns);
}

TEST_F(KubeClientTest, ServerNotSignedByTheConfiguredCaIsRejected) {
  auto config = loadKubeconfig(sharedCluster().kubeconfig());
  config.caPem.clear();  // the system CAs do not know the test cluster's CA
  RestKubeClient untrusting(config);
  try {
    untrusting.get(kNamespaces, "", ns);
    FAIL() << "TLS verification must fail";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.status().code, 0);
    EXPECT_TRUE(error.isRetryable());
  }
}

TEST_F(KubeClientTest, AnonymousRequestIsForbidden) {
  auto config = loadKubeconfig(sharedCluster().kubeconfig());
  config.clientCertPem.clear();
  config.clientKeyPem.clear();
  RestKubeClient anonymous(config);
  try {
    anonymous.get(kConfigMaps, ns, "anything");
    FAIL() << "an anonymous request must be refused";
  } catch (const ApiError& error) {
    EXPECT_TRUE(error.status().code == 401 || error.status().code == 403) << error.what();
    EXPECT_FALSE(error.isRetryable());
  }
}

}  // namespace
}  // namespace vto::controller
