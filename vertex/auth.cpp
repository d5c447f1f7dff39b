#include "vertex/auth.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "base/url.h"
#include "vertex/api_error.h"
#include "vertex/json_codec.h"
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

// Bounded: the token endpoint's words end up in logs and status.
std::string boundedString(const json& object, const char* field) { return stringField(object, field).substr(0, 300); }

// Google issues tokens for an hour; a day is the most any sane endpoint would claim.
constexpr double kMaxTokenLifetimeSeconds = 86400;

// Parses {"access_token", "expires_in"}; the error text names the endpoint, never the body's token.
AccessToken parseTokenResponse(const HttpResponse& response, const std::string& endpoint, const Clock& clock) {
  auto body = json::parse(response.body, nullptr, false);
  if (response.status != 200) {
    std::string reason;
    if (body.is_object()) {
      reason = boundedString(body, "error");
      auto description = boundedString(body, "error_description");
      if (!description.empty()) reason += ": " + description;
    }
    throw AuthError("token endpoint " + endpoint + " answered HTTP " + std::to_string(response.status) +
                    (reason.empty() ? "" : " (" + reason + ")"));
  }
  if (!body.is_object() || !body.contains("access_token") || !body["access_token"].is_string() ||
      body["access_token"].get_ref<const std::string&>().empty()) {
    throw AuthError("token endpoint " + endpoint + " answered without an access_token");
  }
  double lifetime = 3600;
  if (auto it = body.find("expires_in"); it != body.end()) {
    lifetime = it->is_number() ? it->get<double>() : -1;
    if (!(lifetime >= 1 && lifetime <= kMaxTokenLifetimeSeconds)) {
      throw AuthError("token endpoint " + endpoint + " answered expires_in " + it->dump().substr(0, 40) +
                      "; expected a number of seconds from 1 to 86400 (check that token_uri is Google's)");
    }
  }
  return {body["access_token"].get<std::string>(),
          clock.now() + std::chrono::seconds(static_cast<long long>(lifetime))};
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

void checkTokenUri(const std::string& uri, const std::string& source) {
  ParsedUrl parsed;
  try {
    parsed = parseUrl(uri);
  } catch (const std::invalid_argument& error) {
    throw AuthError(source + ": token_uri: " + error.what());
  }
  auto endsWith = [&](std::string_view suffix) {
    return parsed.host.size() > suffix.size() &&
           parsed.host.compare(parsed.host.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  bool google = parsed.scheme == "https" && (endsWith(".googleapis.com") || parsed.host == "accounts.google.com");
  bool loopback = (parsed.scheme == "https" || parsed.scheme == "http") && isLoopbackHost(parsed.host);
  if (!google && !loopback) {
    throw AuthError(source + ": token_uri \"" + uri.substr(0, 200) +
                    "\" is not Google's token endpoint; use https://oauth2.googleapis.com/token (a loopback "
                    "address is accepted for local emulators)");
  }
}

ServiceAccountTokenSource::ServiceAccountTokenSource(HttpTransport& http, const Clock& clock, ServiceAccountKey key,
                                                     std::string scope)
    : http_(http), clock_(clock), key_(std::move(key)), scope_(std::move(scope)) {
  checkTokenUri(key_.tokenUri, "service account " + key_.clientEmail);
}

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
    : http_(http), clock_(clock), user_(std::move(user)) {
  checkTokenUri(user_.tokenUri, "authorized user credentials");
}

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
                                     std::chrono::seconds margin, std::chrono::seconds retryAfterFailure)
    : source_(std::move(source)), clock_(clock), margin_(margin), retryAfterFailure_(retryAfterFailure) {}

AccessToken CachedTokenSource::token() {
  std::unique_lock lock(mutex_);
  for (;;) {
    auto now = clock_.now();
    if (cached_ && refreshAt_ > now) return *cached_;
    if (!refreshing_) break;
    if (cached_ && cached_->expiry > now) return *cached_;  // another caller is refreshing it
    refreshed_.wait(lock);
  }
  refreshing_ = true;
  lock.unlock();
  std::optional<AccessToken> fresh;
  std::exception_ptr failure;
  try {
    fresh = source_->token();
  } catch (...) {
    failure = std::current_exception();
  }
  lock.lock();
  refreshing_ = false;
  refreshed_.notify_all();
  auto now = clock_.now();
  if (fresh) {
    cached_ = std::move(fresh);
    auto lifetime = cached_->expiry - now;
    refreshAt_ = cached_->expiry - std::min<Clock::duration>(margin_, lifetime / 2);
    return *cached_;
  }
  if (cached_ && cached_->expiry > now) {
    // The old token still works: keep serving it and try the refresh again a little later.
    refreshAt_ = now + retryAfterFailure_;
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& error) {
      spdlog::warn("refreshing the Google access token failed, the current one is still valid: {}", error.what());
    } catch (...) {
    }
    return *cached_;
  }
  std::rethrow_exception(failure);
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
