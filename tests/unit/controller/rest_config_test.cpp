// Kubeconfig loading: inline data and files, token files, and clear errors.
#include "controller/rest_config.h"

#include <gtest/gtest.h>

#include <boost/asio/ssl.hpp>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <filesystem>
#include <fstream>

#include "base/base64.h"
#include "tests/support/test_cluster.h"

namespace vto::controller {
namespace {

std::string base64(const std::string& text) {
  return base64Encode(text);
}

class RestConfigTest : public ::testing::Test {
 protected:
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string dir = vto::testing::makeTempDir("rest-config-test");
};

TEST_F(RestConfigTest, PlainHttpOnlyToLoopbackOrWithTheFlag) {
  auto kubeconfig = [&](const std::string& server) {
    write("config", "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                    "clusters: [{name: k, cluster: {server: \"" + server + "\"}}]\n"
                    "users: [{name: u, user: {token: secret-token}}]\n"
                    "contexts: [{name: c, context: {cluster: k, user: u}}]\n");
    return dir + "/config";
  };
  EXPECT_NO_THROW(loadKubeconfig(kubeconfig("http://127.0.0.1:8080")));
  EXPECT_NO_THROW(loadKubeconfig(kubeconfig("http://localhost:8080")));
  EXPECT_NO_THROW(loadKubeconfig(kubeconfig("https://api.example:6443")));
  for (const char* server : {"http://api.example:8080", "http://127.attacker.example:8080", "ftp://127.0.0.1"}) {
    try {
      loadKubeconfig(kubeconfig(server));
      ADD_FAILURE() << server << " was accepted";
    } catch (const std::runtime_error& error) {
      std::string what = error.what();
      EXPECT_EQ(what.find("secret-token"), std::string::npos) << what;
    }
  }
  EXPECT_NO_THROW(loadKubeconfig(kubeconfig("http://api.example:8080"), "", /*allowInsecureEndpoints=*/true));
  RestConfig direct;
  direct.server = "http://api.example:8080";
  direct.token = "secret-token";
  EXPECT_THROW(validateRestConfig(direct), std::invalid_argument);
}

// A self-signed CA certificate, made fresh so the test needs no key material on disk.
X509* makeSelfSignedCa() {
  EVP_PKEY* key = EVP_RSA_gen(2048);
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(cert), "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("vto-test-cluster-ca"), -1, -1, 0);
  X509_set_issuer_name(cert, X509_get_subject_name(cert));
  X509_set_pubkey(cert, key);
  X509V3_CTX v3;
  X509V3_set_ctx(&v3, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ca = X509V3_EXT_conf_nid(nullptr, &v3, NID_basic_constraints, "critical,CA:TRUE");
  X509_add_ext(cert, ca, -1);
  X509_EXTENSION_free(ca);
  X509_sign(cert, key, EVP_sha256());
  EVP_PKEY_free(key);
  return cert;
}

std::string pemOf(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  long size = BIO_get_mem_data(bio, &data);
  std::string pem(data, size);
  BIO_free(bio);
  return pem;
}

bool verifies(boost::asio::ssl::context& context, X509* cert) {
  X509_STORE_CTX* check = X509_STORE_CTX_new();
  X509_STORE_CTX_init(check, SSL_CTX_get_cert_store(context.native_handle()), cert, nullptr);
  bool ok = X509_verify_cert(check) == 1;
  X509_STORE_CTX_free(check);
  return ok;
}

TEST(ClusterCa, WithACaConfiguredTheSystemStoreIsNotTrusted) {
  // A root every system trusts: the first one in the distribution's bundle.
  FILE* bundle = std::fopen("/etc/ssl/certs/ca-certificates.crt", "r");
  if (bundle == nullptr) GTEST_SKIP() << "no system CA bundle on this machine";
  X509* publicRoot = PEM_read_X509(bundle, nullptr, nullptr, nullptr);
  std::fclose(bundle);
  ASSERT_NE(publicRoot, nullptr);
  X509* clusterCa = makeSelfSignedCa();

  boost::asio::ssl::context context(boost::asio::ssl::context::sslv23_client);
  context.set_default_verify_paths();  // what the client does before it trusts only the cluster CA (kube_client.cpp)
  ASSERT_TRUE(verifies(context, publicRoot)) << "the system store should trust its own root";
  trustOnlyClusterCa(context, pemOf(clusterCa));
  EXPECT_TRUE(verifies(context, clusterCa));
  EXPECT_FALSE(verifies(context, publicRoot)) << "a certificate from any public CA would pass as the API server";
  X509_free(publicRoot);
  X509_free(clusterCa);
}

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
