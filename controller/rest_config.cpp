#include "controller/rest_config.h"

#include <boost/asio/ssl.hpp>
#include <openssl/x509.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "base/base64.h"
#include "base/url.h"

namespace vto::controller {
namespace {

std::string readFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + what + " " + path + ": check that the file exists");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string decodeBase64(const std::string& text, const std::string& field) {
  try {
    return base64Decode(text);
  } catch (const std::exception&) {
    throw std::runtime_error("kubeconfig field " + field + " is not valid base64");
  }
}

YAML::Node findNamed(const YAML::Node& list, const std::string& name, const std::string& kind,
                     const std::string& path) {
  if (list) {
    for (const auto& entry : list) {
      if (entry["name"] && entry["name"].as<std::string>() == name) return entry[kind];
    }
  }
  throw std::runtime_error("kubeconfig " + path + " has no " + kind + " named '" + name +
                           "'; fix the context or pick another with --context");
}

// A file path from the kubeconfig, resolved against the kubeconfig's own directory.
std::string resolvePath(const std::string& file, const std::filesystem::path& base) {
  std::filesystem::path p(file);
  return p.is_absolute() ? file : (base / p).string();
}

// `<field>-data` (base64) wins over `<field>` (a file), as in client-go.
std::string dataOrFile(const YAML::Node& node, const std::string& field,
                       const std::filesystem::path& base) {
  if (node[field + "-data"]) return decodeBase64(node[field + "-data"].as<std::string>(), field + "-data");
  if (node[field]) return readFile(resolvePath(node[field].as<std::string>(), base), field);
  return "";
}

}  // namespace

ParsedUrl validateRestConfig(const RestConfig& config) {
  return requireTrustedEndpoint(config.server, "Kubernetes API server", config.allowInsecureEndpoints);
}

void trustOnlyClusterCa(boost::asio::ssl::context& context, const std::string& caPem) {
  // A fresh, empty store replaces the one holding the system's default verify paths.
  SSL_CTX_set_cert_store(context.native_handle(), X509_STORE_new());
  context.add_certificate_authority(boost::asio::buffer(caPem));
}

RestConfig loadKubeconfig(const std::string& path, const std::string& context, bool allowInsecureEndpoints) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& error) {
    throw std::runtime_error("cannot read kubeconfig " + path + ": " + error.what());
  }
  auto base = std::filesystem::absolute(path).parent_path();
  std::string contextName = context.empty() && root["current-context"]
                                ? root["current-context"].as<std::string>()
                                : context;
  if (contextName.empty()) {
    throw std::runtime_error("kubeconfig " + path + " has no current-context; set one with "
                             "`kubectl config use-context`");
  }
  auto ctx = findNamed(root["contexts"], contextName, "context", path);
  auto cluster = findNamed(root["clusters"], ctx["cluster"].as<std::string>(""), "cluster", path);
  RestConfig config;
  config.allowInsecureEndpoints = allowInsecureEndpoints;
  config.server = cluster["server"].as<std::string>("");
  if (config.server.empty()) throw std::runtime_error("kubeconfig " + path + ": cluster has no server");
  try {
    validateRestConfig(config);
  } catch (const std::invalid_argument& error) {
    throw std::runtime_error("kubeconfig " + path + ": " + error.what());
  }
  config.caPem = dataOrFile(cluster, "certificate-authority", base);
  config.insecureSkipTlsVerify = cluster["insecure-skip-tls-verify"].as<bool>(false);
  if (ctx["namespace"]) config.defaultNamespace = ctx["namespace"].as<std::string>();
  if (ctx["user"]) {
    auto user = findNamed(root["users"], ctx["user"].as<std::string>(), "user", path);
    if (user["exec"] || user["auth-provider"]) {
      throw std::runtime_error("kubeconfig " + path + ": exec and auth-provider credentials are "
                               "not supported; use a client certificate or a token");
    }
    config.clientCertPem = dataOrFile(user, "client-certificate", base);
    config.clientKeyPem = dataOrFile(user, "client-key", base);
    if (user["token"]) config.token = user["token"].as<std::string>();
    if (user["tokenFile"]) config.tokenFile = resolvePath(user["tokenFile"].as<std::string>(), base);
    if (config.clientCertPem.empty() != config.clientKeyPem.empty()) {
      throw std::runtime_error("kubeconfig " + path + ": a client certificate needs its key and "
                               "a key its certificate");
    }
  }
  return config;
}

RestConfig inClusterConfig(const std::string& mountDir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !port) {
    throw std::runtime_error("not running in a cluster (KUBERNETES_SERVICE_HOST/PORT unset)");
  }
  RestConfig config;
  std::string hostText(host);
  if (hostText.find(':') != std::string::npos) hostText = "[" + hostText + "]";  // IPv6
  config.server = "https://" + hostText + ":" + port;
  config.tokenFile = mountDir + "/token";
  readFile(config.tokenFile, "service account token");  // fail now rather than on first request
  config.caPem = readFile(mountDir + "/ca.crt", "service account CA");
  std::ifstream ns(mountDir + "/namespace");
  if (ns) std::getline(ns, config.defaultNamespace);
  return config;
}

RestConfig resolveRestConfig(const std::string& kubeconfigFlag, bool allowInsecureEndpoints) {
  if (!kubeconfigFlag.empty()) return loadKubeconfig(kubeconfigFlag, "", allowInsecureEndpoints);
  const char* env = std::getenv("KUBECONFIG");
  if (env && *env) {
    // KUBECONFIG may list several files; the first one is used.
    std::string first(env);
    first = first.substr(0, first.find(':'));
    return loadKubeconfig(first, "", allowInsecureEndpoints);
  }
  try {
    return inClusterConfig();
  } catch (const std::exception& error) {
    throw std::runtime_error(std::string("no Kubernetes credentials: pass --kubeconfig, set "
                                         "KUBECONFIG, or run in a pod with a service account (") +
                             error.what() + ")");
  }
}

}  // namespace vto::controller
