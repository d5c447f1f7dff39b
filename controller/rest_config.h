#pragma once
// Where the API server is and how to prove who we are: read from a kubeconfig file (client
// certificate/key or bearer token; CA file or inline data) or from the in-cluster service account.
// Exec and auth-provider plugins are not supported: the error says to use a certificate or token.
#include <optional>
#include <string>

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
};

// Reads `path`, using its current-context (or `context` when given). Relative file paths in the
// kubeconfig are resolved against its directory, as kubectl does.
RestConfig loadKubeconfig(const std::string& path, const std::string& context = "");

// The service account mounted into a pod: KUBERNETES_SERVICE_HOST/PORT, the token file and CA
// under `mountDir`.
RestConfig inClusterConfig(const std::string& mountDir = "/var/run/secrets/kubernetes.io/serviceaccount");

// The --kubeconfig flag if set, else $KUBECONFIG, else the in-cluster service account; the error
// names all three when none is available.
RestConfig resolveRestConfig(const std::string& kubeconfigFlag);

}  // namespace vto::controller
