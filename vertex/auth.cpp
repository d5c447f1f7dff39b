#include "vertex/auth.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "vertex/api_error.h"
#include "vertex/jwt.h"

namespace vto::vertex {
namespace {

using nlohmann::json;

std::string formEncode(const std::map<std::string, std::string>& fields) {
  std::string body;
  for (const auto& [name, value] : fields) {
    if (!body.empty()) body += '&';
    body += urlEncode(name) + "=" + urlEncode(value);
  }
  return body;
}

// Parses {"access_token", "expires_in"}; the error text names the endpoint, never the body's token.
AccessToken parseTokenResponse(const HttpResponse& response, const std::string& endpoint, const Clock& clock) {
  auto body = json::parse(response.body, nullptr, false);
  if (response.status != 200) {
    std::string reason;
    if (body.is_object()) {
      reason = body.value("error", std::string());
      auto description = body.value("error_description", std::string());
      if (!description.empty()) reason += ": " + description;
    }
    throw AuthError("token endpoint " + endpoint + " answered HTTP " + std::to_string(response.status) +
                    (reason.empty() ? "" : " (" + reason + ")"));
  }
  if (!body.is_object() || !body.contains("access_token") || !body["access_token"].is_string()) {
    throw AuthError("token endpoint " + endpoint + " answered without an access_token");
  }
  auto lifetime = body.contains("expires_in") && body["expires_in"].is_number() ? body["expires_in"].get<long long>()
                                                                               : 3600LL;
  return {body["access_token"].get<std::string>(), clock.now() + std::chrono::seconds(lifetime)};
}

AccessToken postForm(HttpTransport& http, const Clock& clock, const std::string& uri,
                     const std::map<std::string, std::string>& fields) {
  HttpRequest request;
  request.method = "POST";
  request.url = uri;
  request.headers["Content-Type"] = "application/x-www-form-urlencoded";
  request.body = formEncode(fields);
  try {
    return parseTokenResponse(http.send(request), uri, clock);
  } catch (const TransportError& error) {
    throw AuthError(std::string("cannot reach token endpoint: ") + error.what());
  }
}

std::string requireString(const json& file, const std::string& field, const std::string& path) {
  if (!file.contains(field) || !file[field].is_string() || file[field].get<std::string>().empty()) {
    throw AuthError("credentials file " + path + " has no \"" + field +
                    "\"; use a service account key or the file written by `gcloud auth application-default login`");
  }
  return file[field].get<std::string>();
}

}  // namespace

ServiceAccountTokenSource::ServiceAccountTokenSource(HttpTransport& http, const Clock& clock, ServiceAccountKey key,
                                                     std::string scope)
    : http_(http), clock_(clock), key_(std::move(key)), scope_(std::move(scope)) {}

AccessToken ServiceAccountTokenSource::token() {
  auto issuedAt = std::chrono::duration_cast<std::chrono::seconds>(clock_.now().time_since_epoch()).count();
  json header = {{"alg", "RS256"}, {"typ", "JWT"}};
  if (!key_.privateKeyId.empty()) header["kid"] = key_.privateKeyId;
  json claims = {{"iss", key_.clientEmail},
                 {"scope", scope_},
                 {"aud", key_.tokenUri},
                 {"iat", issuedAt},
                 {"exp", issuedAt + 3600}};
  std::string assertion;
  try {
    assertion = signJwtRs256(header, claims, key_.privateKeyPem);
  } catch (const std::invalid_argument& error) {
    throw AuthError(std::string("service account ") + key_.clientEmail + ": " + error.what());
  }
  return postForm(http_, clock_, key_.tokenUri,
                  {{"grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"}, {"assertion", assertion}});
}

AuthorizedUserTokenSource::AuthorizedUserTokenSource(HttpTransport& http, const Clock& clock, AuthorizedUser user)
    : http_(http), clock_(clock), user_(std::move(user)) {}

AccessToken AuthorizedUserTokenSource::token() {
  return postForm(http_, clock_, user_.tokenUri,
                  {{"grant_type", "refresh_token"},
                   {"client_id", user_.clientId},
                   {"client_secret", user_.clientSecret},
                   {"refresh_token", user_.refreshToken}});
}

MetadataTokenSource::MetadataTokenSource(HttpTransport& http, const Clock& clock, std::string host)
    : http_(http), clock_(clock), host_(std::move(host)) {}

AccessToken MetadataTokenSource::token() {
  HttpRequest request;
  request.url = "http://" + host_ + "/computeMetadata/v1/instance/service-accounts/default/token";
  request.headers["Metadata-Flavor"] = "Google";
  request.timeout = std::chrono::seconds(10);
  try {
    return parseTokenResponse(http_.send(request), request.url, clock_);
  } catch (const TransportError& error) {
    throw AuthError(std::string("no Google credentials: GOOGLE_APPLICATION_CREDENTIALS is not set, there is no "
                                "application default credentials file, and the metadata server is unreachable (") +
                    error.what() + "); on GKE enable Workload Identity, elsewhere set GOOGLE_APPLICATION_CREDENTIALS");
  }
}

CachedTokenSource::CachedTokenSource(std::unique_ptr<TokenSource> source, const Clock& clock,
                                     std::chrono::seconds margin)
    : source_(std::move(source)), clock_(clock), margin_(margin) {}

AccessToken CachedTokenSource::token() {
  std::lock_guard lock(mutex_);
  auto now = clock_.now();
  if (!cached_ || refreshAt_ <= now) {
    cached_ = source_->token();
    auto lifetime = cached_->expiry - now;
    refreshAt_ = cached_->expiry - std::min<Clock::duration>(margin_, lifetime / 2);
  }
  return *cached_;
}

void CachedTokenSource::invalidate() {
  std::lock_guard lock(mutex_);
  cached_.reset();
}

std::optional<std::string> processEnv(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::unique_ptr<TokenSource> tokenSourceFromFile(const std::string& path, HttpTransport& http, const Clock& clock) {
  std::ifstream in(path);
  if (!in) throw AuthError("cannot read credentials file " + path + "; check GOOGLE_APPLICATION_CREDENTIALS");
  auto file = json::parse(in, nullptr, false);
  if (!file.is_object()) throw AuthError("credentials file " + path + " is not a JSON object");
  auto type = file.value("type", std::string());
  if (type == "service_account") {
    ServiceAccountKey key;
    key.clientEmail = requireString(file, "client_email", path);
    key.privateKeyPem = requireString(file, "private_key", path);
    key.privateKeyId = file.value("private_key_id", std::string());
    key.tokenUri = file.value("token_uri", key.tokenUri);
    return std::make_unique<ServiceAccountTokenSource>(http, clock, std::move(key));
  }
  if (type == "authorized_user") {
    AuthorizedUser user;
    user.clientId = requireString(file, "client_id", path);
    user.clientSecret = requireString(file, "client_secret", path);
    user.refreshToken = requireString(file, "refresh_token", path);
    user.tokenUri = file.value("token_uri", user.tokenUri);
    return std::make_unique<AuthorizedUserTokenSource>(http, clock, std::move(user));
  }
  throw AuthError("credentials file " + path + " has type \"" + type +
                  "\"; supported are \"service_account\" and \"authorized_user\"");
}

std::unique_ptr<CachedTokenSource> defaultTokenSource(HttpTransport& http, const Clock& clock, const EnvLookup& env) {
  std::unique_ptr<TokenSource> source;
  if (auto path = env("GOOGLE_APPLICATION_CREDENTIALS")) {
    source = tokenSourceFromFile(*path, http, clock);
  } else if (auto home = env("HOME");
             home && std::filesystem::exists(*home + "/.config/gcloud/application_default_credentials.json")) {
    source = tokenSourceFromFile(*home + "/.config/gcloud/application_default_credentials.json", http, clock);
  } else {
    source = std::make_unique<MetadataTokenSource>(http, clock, env("GCE_METADATA_HOST").value_or("metadata.google.internal"));
  }
  return std::make_unique<CachedTokenSource>(std::move(source), clock);
}

}  // namespace vto::vertex
