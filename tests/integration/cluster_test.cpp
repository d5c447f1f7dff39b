// The test control plane itself: a real kube-apiserver with RBAC, reachable with kubectl over
// verified TLS, that stops cleanly.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/test_cluster.h"
#include "tests/support/wait.h"

namespace vto::testing {
namespace {

// The command lines of running processes that contain `text` (read from /proc, so no helper
// process of our own can match).
std::vector<std::string> processesMentioning(const std::string& text) {
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream in(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(text) != std::string::npos) found.push_back(entry.path().filename().string() + ": " + cmdline);
  }
  return found;
}

TEST(TestCluster, ServesARealKubernetesVersion) {
  // stderr dropped: kubectl warns there when its own minor version is far from the server's.
  auto result = sharedCluster().kubectl("version -o json 2>/dev/null");
  ASSERT_EQ(result.exitCode, 0) << result.output;
  auto version = nlohmann::json::parse(result.output);
  EXPECT_EQ(version["serverVersion"]["gitVersion"], "v1.37.2") << result.output;
  EXPECT_EQ(version["serverVersion"]["major"], "1");
}

TEST(TestCluster, ServesTheApiGroupsVtoNeeds) {
  auto result = sharedCluster().kubectl("api-resources --no-headers -o name");
  ASSERT_EQ(result.exitCode, 0) << result.output;
  for (const char* resource : {"namespaces", "configmaps", "events", "deployments.apps",
                               "leases.coordination.k8s.io", "customresourcedefinitions.apiextensions.k8s.io",
                               "events.events.k8s.io", "roles.rbac.authorization.k8s.io"}) {
    EXPECT_NE(result.output.find(std::string(resource) + "\n"), std::string::npos) << resource << " missing in:\n"
                                                                                    << result.output;
  }
}

TEST(TestCluster, KubeconfigVerifiesTheServerCertificate) {
  std::ifstream in(sharedCluster().kubeconfig());
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("certificate-authority:"), std::string::npos);
  EXPECT_EQ(text.find("insecure-skip-tls-verify"), std::string::npos);
}

TEST(TestCluster, RbacDeniesAnUnprivilegedServiceAccount) {
  auto& cluster = sharedCluster();
  auto denied = cluster.kubectl("auth can-i list pods --as=system:serviceaccount:default:nobody");
  EXPECT_EQ(denied.exitCode, 1) << denied.output;
  EXPECT_NE(denied.output.find("no"), std::string::npos) << denied.output;
  auto admin = cluster.kubectl("auth can-i '*' '*'");
  EXPECT_EQ(admin.exitCode, 0) << admin.output;
}

TEST(TestCluster, SignsServiceAccountTokensThatRbacThenGoverns) {
  auto& cluster = sharedCluster();
  ASSERT_EQ(cluster.kubectl("create namespace rbac-check").exitCode, 0);
  ASSERT_EQ(cluster.kubectl("-n rbac-check create serviceaccount reader").exitCode, 0);
  auto token = cluster.kubectl("-n rbac-check create token reader --duration=10m");
  ASSERT_EQ(token.exitCode, 0) << token.output;
  std::string bearer = token.output.substr(0, token.output.find_last_not_of("\n") + 1);
  // Only the token authenticates these calls: no kubeconfig, so no admin client certificate.
  auto asReader = [&](const std::string& args) {
    return runShell("kubectl --kubeconfig=/dev/null --server=" + cluster.server() + " --certificate-authority=" +
                    cluster.dir() + "/pki/ca.crt --token='" + bearer + "' -n rbac-check " + args);
  };
  // The token authenticates (the request reaches authorisation) but the account may do nothing yet.
  auto before = asReader("get configmaps");
  EXPECT_NE(before.exitCode, 0);
  EXPECT_NE(before.output.find("forbidden"), std::string::npos) << before.output;
  EXPECT_NE(before.output.find("system:serviceaccount:rbac-check:reader"), std::string::npos) << before.output;

  ASSERT_EQ(cluster.kubectl("-n rbac-check create role read-cm --verb=get,list --resource=configmaps").exitCode, 0);
  ASSERT_EQ(cluster.kubectl("-n rbac-check create rolebinding reader --role=read-cm "
                            "--serviceaccount=rbac-check:reader").exitCode,
            0);
  // RBAC changes reach the authoriser through its informer, so allow a moment for them to apply.
  EXPECT_TRUE(waitFor([&] { return asReader("get configmaps").exitCode == 0; }, std::chrono::seconds(30)));
  auto write = asReader("create configmap x");
  EXPECT_NE(write.exitCode, 0) << "a read-only role must not create: " << write.output;
}

TEST(TestCluster, SigtermStopsEverythingAndRestartKeepsData) {
  TestCluster cluster;
  ASSERT_EQ(cluster.kubectl("create configmap survivor --from-literal=k=v").exitCode, 0);
  // The whole control plane is one process; after SIGTERM it must have exited cleanly, and no
  // process may still run on its directory.
  EXPECT_EQ(cluster.stop(), 0);
  EXPECT_EQ(processesMentioning(cluster.dir()), std::vector<std::string>{});
  cluster.restart();
  auto got = cluster.kubectl("get configmap survivor -o jsonpath='{.data.k}'");
  EXPECT_EQ(got.exitCode, 0) << got.output;
  EXPECT_EQ(got.output, "v");
}

}  // namespace
}  // namespace vto::testing
