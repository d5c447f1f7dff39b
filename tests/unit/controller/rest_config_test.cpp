// Kubeconfig loading: inline data and files, token files, and clear errors.
#include "controller/rest_config.h"

#include <gtest/gtest.h>

#include <cpprest/asyncrt_utils.h>

#include <filesystem>
#include <fstream>

#include "tests/support/test_cluster.h"

namespace vto::controller {
namespace {

std::string base64(const std::string& text) {
  return utility::conversions::to_base64(std::vector<unsigned char>(text.begin(), text.end()));
}

class RestConfigTest : public ::testing::Test {
 protected:
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string dir = vto::testing::makeTempDir("rest-config-test");
};

TEST_F(RestConfigTest, InlineDataAndToken) {
  write("config", R"(apiVersion: v1
kind: Config
current-context: c
contexts: [{name: c, context: {cluster: k, user: u, namespace: team}}]
clusters: [{name: k, cluster: {server: "https://10.0.0.1:6443", certificate-authority-data: ")" +
                      base64("CA PEM") + R"("}}]
users: [{name: u, user: {token: secret-token}}]
)");
  auto config = loadKubeconfig(dir + "/config");
  EXPECT_EQ(config.server, "https://10.0.0.1:6443");
  EXPECT_EQ(config.caPem, "CA PEM");
  EXPECT_EQ(config.token, "secret-token");
  EXPECT_EQ(config.defaultNamespace, "team");
  EXPECT_FALSE(config.insecureSkipTlsVerify);
}

TEST_F(RestConfigTest, FilesAreRelativeToTheKubeconfig) {
  write("ca.crt", "CA");
  write("client.crt", "CERT");
  write("client.key", "KEY");
  write("config", R"(current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: "https://h:1", certificate-authority: ca.crt}}]
users: [{name: u, user: {client-certificate: client.crt, client-key: client.key}}]
)");
  auto config = loadKubeconfig(dir + "/config");
  EXPECT_EQ(config.caPem, "CA");
  EXPECT_EQ(config.clientCertPem, "CERT");
  EXPECT_EQ(config.clientKeyPem, "KEY");
  EXPECT_EQ(config.defaultNamespace, "default");
}

TEST_F(RestConfigTest, ExecPluginsAreRefusedWithAnExplanation) {
  write("config", R"(current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: "https://h:1"}}]
users: [{name: u, user: {exec: {command: gke-gcloud-auth-plugin}}}]
)");
  try {
    loadKubeconfig(dir + "/config");
    FAIL();
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("use a client certificate or a token"), std::string::npos);
  }
}

TEST_F(RestConfigTest, MissingContextIsNamed) {
  write("config", "current-context: nope\ncontexts: []\nclusters: []\n");
  try {
    loadKubeconfig(dir + "/config");
    FAIL();
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("'nope'"), std::string::npos) << error.what();
  }
}

TEST_F(RestConfigTest, InClusterReadsTheServiceAccount) {
  write("token", "sa-token\n");
  write("ca.crt", "CLUSTER CA");
  write("namespace", "vto-system");
  setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto config = inClusterConfig(dir);
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  EXPECT_EQ(config.server, "https://10.96.0.1:443");
  EXPECT_EQ(config.tokenFile, dir + "/token");
  EXPECT_EQ(config.caPem, "CLUSTER CA");
  EXPECT_EQ(config.defaultNamespace, "vto-system");
}

TEST_F(RestConfigTest, NoCredentialsAnywhereSaysWhatToDo) {
  unsetenv("KUBECONFIG");
  unsetenv("KUBERNETES_SERVICE_HOST");
  try {
    resolveRestConfig("");
    FAIL();
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("--kubeconfig"), std::string::npos);
  }
}

}  // namespace
}  // namespace vto::controller
