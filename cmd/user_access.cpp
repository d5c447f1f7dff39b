#include "cmd/user_access.h"

#include <algorithm>

#include "base/url.h"
#include "cmd/flags.h"

namespace vto::cmd {

std::string runNameOf(const std::string& argument, const std::string& command) {
  std::string name = argument;
  if (auto slash = argument.find('/'); slash != std::string::npos) {
    auto kind = argument.substr(0, slash);
    for (const char* accepted : {"trun", "trainingrun", "trainingruns", "trainingrun.vto.dev", "trainingruns.vto.dev"}) {
      if (kind == accepted) name = argument.substr(slash + 1);
    }
    if (name == argument) {
      throw UsageError("`vto " + command + "` reads TrainingRuns: write trun/NAME, not \"" + argument.substr(0, 100) + "\"");
    }
  }
  bool valid = !name.empty() && name.size() <= 253 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
  });
  if (!valid) throw UsageError("\"" + name.substr(0, 100) + "\" is not a TrainingRun name (lower-case letters, digits, '-', '.')");
  return name;
}

std::string checkedEndpoint(const std::string& url, const char* flag, bool allowInsecure) {
  try {
    requireTrustedEndpoint(url, flag, allowInsecure);
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
  return url;
}

std::optional<std::string> emulatorMetadataHost(const std::string& vertexEndpoint) {
  if (vertexEndpoint.empty()) return std::nullopt;
  auto parsed = parseUrl(vertexEndpoint);
  if (parsed.scheme != "http" || !isLoopbackHost(parsed.host)) return std::nullopt;
  return authorityOf(parsed);
}

std::unique_ptr<vertex::CachedTokenSource> userTokenSource(vertex::HttpTransport& http, const Clock& clock,
                                                           const std::string& vertexEndpoint) {
  auto metadataHost = emulatorMetadataHost(vertexEndpoint);
  vertex::EnvLookup env = [metadataHost](const std::string& variable) {
    auto value = vertex::processEnv(variable);
    if (!value && variable == "GCE_METADATA_HOST") return metadataHost;
    return value;
  };
  auto tokens = vertex::defaultTokenSource(http, clock, env);
  tokens->token();
  return tokens;
}

std::string userVertexEndpoint(const std::string& flag, bool allowInsecure) {
  auto endpoint = flag.empty() ? vertex::processEnv("VERTEX_EMULATOR").value_or("") : flag;
  if (!endpoint.empty()) checkedEndpoint(endpoint, "--vertex-endpoint", allowInsecure);
  return endpoint;
}

std::unique_ptr<vertex::CachedTokenSource> userTokensOrSignIn(vertex::HttpTransport& http, const Clock& clock,
                                                              const std::string& vertexEndpoint, const std::string& purpose) {
  try {
    return userTokenSource(http, clock, vertexEndpoint);
  } catch (const vertex::AuthError& error) {
    throw UsageError(std::string(error.what()) + "; " + purpose + ", run `gcloud auth application-default login` (or set "
                     "GOOGLE_APPLICATION_CREDENTIALS to a service account key file)");
  }
}

}  // namespace vto::cmd
