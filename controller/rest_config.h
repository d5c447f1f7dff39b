#pragma once
// Where the API server is and how to prove who we are: read from a kubeconfig file (client
// certificate/key or bearer token; CA file or inline data) or from the in-cluster service account.
// Exec and auth-provider plugins are not supported: the error says to use a certificate or token.
#include <optional>
#include <string>

#include "base/url.h"

namespace boost::asio::ssl {
class context;
}

namespace vto::controller {

struct RestConfig {
  std::string server;          // https://host:port
  std::string caPem;           // PEM bundle the server certificate is verified against; empty: system CAs
  std::string clientCertPem;   // client certificate (PEM), with clientKeyPem
  std::string clientKeyPem;
  std::string token;           // a fixed bearer token
  std::string tokenFile;       // re-read on every request, so a rotated token is picked up
  std::string defaultNamespace = "default";
  bool insecureSkipTlsVerify = false;  // only when the kubeconfig asks for it explicitly
  bool allowInsecureEndpoints = false;  // --allow-insecure-endpoints: plain http to a non-loopback server
};

// Refuses a server that is not https (plain http only to a loopback address or with
// allowInsecureEndpoints: the bearer token or client key would travel in the clear); throws
// std::invalid_argument saying how to fix it. Called by the loaders below and by RestKubeClient.
// Returns the parsed server URL.
ParsedUrl validateRestConfig(const RestConfig& config);

// With a CA configured, the API server's certificate is verified against that CA only: the
// system's trust store is dropped from `context`.
void trustOnlyClusterCa(boost::asio::ssl::context& context, const std::string& caPem);

// Reads `path`, using its current-context (or `context` when given). Relative file paths in the
// kubeconfig are resolved against its directory, as kubectl does.
RestConfig loadKubeconfig(const std::string& path, const std::string& context = "", bool allowInsecureEndpoints = false);

// The service account mounted into a pod: KUBERNETES_SERVICE_HOST/PORT, the token file and CA
// under `mountDir`.
RestConfig inClusterConfig(const std::string& mountDir = "/var/run/secrets/kubernetes.io/serviceaccount");

// The --kubeconfig flag if set, else $KUBECONFIG, else the in-cluster service account; the error
// names all three when none is available.
RestConfig resolveRestConfig(const std::string& kubeconfigFlag, bool allowInsecureEndpoints = false);

}  // namespace vto::controller
