#include "emulator/token_issuer.h"

#include <cpprest/base_uri.h>

#include "base/base64.h"
#include "vertex/jwt.h"

namespace vto::emulator {
namespace {

using nlohmann::json;

std::map<std::string, std::string> parseForm(const std::string& body) {
  std::map<std::string, std::string> fields;
  for (const auto& [name, value] : web::uri::split_query(body)) {
    // split_query keeps '+' for spaces and percent escapes: decode both.
    auto decode = [](std::string text) {
      std::replace(text.begin(), text.end(), '+', ' ');
      return web::uri::decode(text);
    };
    fields[decode(name)] = decode(value);
  }
  return fields;
}

std::pair<int, json> oauthError(const std::string& error, const std::string& description) {
  return {400, {{"error", error}, {"error_description", description}}};
}

}  // namespace

TokenIssuer::TokenIssuer(const Clock& clock, std::chrono::seconds lifetime, std::string publicKeyPem)
    : clock_(clock), lifetime_(lifetime), publicKeyPem_(std::move(publicKeyPem)) {}

json TokenIssuer::issue() {
  std::lock_guard lock(mutex_);
  std::string token = "ya29.vto-emulator.";
  static const char* hex = "0123456789abcdef";
  for (int i = 0; i < 40; ++i) token += hex[random_() % 16];
  tokens_[token] = clock_.now() + lifetime_;
  return {{"access_token", token}, {"expires_in", lifetime_.count()}, {"token_type", "Bearer"}};
}

std::pair<int, json> TokenIssuer::exchange(const std::string& formBody) {
  auto fields = parseForm(formBody);
  auto grant = fields["grant_type"];
  if (grant == "urn:ietf:params:oauth:grant-type:jwt-bearer") {
    const auto& assertion = fields["assertion"];
    auto firstDot = assertion.find('.');
    auto lastDot = assertion.rfind('.');
    if (firstDot == std::string::npos || firstDot == lastDot) return oauthError("invalid_grant", "assertion is not a JWT");
    json claims;
    try {
      claims = json::parse(base64UrlDecode(assertion.substr(firstDot + 1, lastDot - firstDot - 1)));
    } catch (const std::exception&) {
      return oauthError("invalid_grant", "the JWT claims are not JSON");
    }
    for (const char* claim : {"iss", "aud", "iat", "exp"}) {
      if (!claims.contains(claim)) return oauthError("invalid_grant", std::string("the JWT has no ") + claim + " claim");
    }
    if (!publicKeyPem_.empty() && !vertex::verifyJwtRs256(assertion, publicKeyPem_)) {
      return oauthError("invalid_grant", "Invalid JWT Signature.");
    }
    return {200, issue()};
  }
  if (grant == "refresh_token") {
    if (fields["refresh_token"].empty()) return oauthError("invalid_request", "refresh_token is missing");
    return {200, issue()};
  }
  return oauthError("unsupported_grant_type", "grant_type \"" + grant + "\" is not supported");
}

bool TokenIssuer::valid(const std::string& token) const {
  std::lock_guard lock(mutex_);
  auto found = tokens_.find(token);
  return found != tokens_.end() && found->second > clock_.now();
}

int TokenIssuer::issuedCount() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(tokens_.size());
}

}  // namespace vto::emulator
