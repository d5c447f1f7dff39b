#pragma once
// Google OAuth 2.0 access tokens, found the way Google's client libraries look for them:
//   1. GOOGLE_APPLICATION_CREDENTIALS names a JSON file: a service account key (a JWT signed with
//      its private key, exchanged at the key's token_uri) or an authorized_user file (refresh token);
//   2. gcloud's application default credentials file ($HOME/.config/gcloud/application_default_credentials.json);
//   3. the metadata server (GCE, GKE Workload Identity); GCE_METADATA_HOST overrides its host.
// Tokens, refresh tokens and keys are secrets: nothing here logs them or puts them into an exception.
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "base/clock.h"
#include "base/retryable_error.h"
#include "vertex/http_transport.h"

namespace vto::vertex {

struct AccessToken {
  std::string value;
  Clock::time_point expiry;
};

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  // A usable token; throws AuthError when none can be had.
  virtual AccessToken token() = 0;
  // Forget any cached token, e.g. after the server answered 401 to it.
  virtual void invalidate() {}
};

// No token could be had (token endpoint down or refusing, bad credentials file). A RetryableError
// so that a run waiting for credentials is requeued with backoff like any other remote failure.
class AuthError : public RetryableError {
 public:
  explicit AuthError(const std::string& what) : RetryableError(what) {}
};

// A token endpoint from a credentials file must be Google's (https, a googleapis.com host or
// accounts.google.com) or a loopback address (tests, emulators): the file's token_uri receives a
// signed assertion or a refresh token. Throws AuthError naming the file's field and the fix.
void checkTokenUri(const std::string& uri, const std::string& source);

inline constexpr const char* kCloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform";

struct ServiceAccountKey {
  std::string clientEmail;
  std::string privateKeyPem;
  std::string privateKeyId;
  std::string tokenUri = "https://oauth2.googleapis.com/token";
};

struct AuthorizedUser {
  std::string clientId;
  std::string clientSecret;
  std::string refreshToken;
  std::string tokenUri = "https://oauth2.googleapis.com/token";
};

// RS256 JWT bearer grant (RFC 7523) at the key's token_uri.
class ServiceAccountTokenSource final : public TokenSource {
 public:
  ServiceAccountTokenSource(HttpTransport& http, const Clock& clock, ServiceAccountKey key,
                            std::string scope = kCloudPlatformScope);
  AccessToken token() override;

 private:
  HttpTransport& http_;
  const Clock& clock_;
  ServiceAccountKey key_;
  std::string scope_;
};

// refresh_token grant, the file `gcloud auth application-default login` writes.
class AuthorizedUserTokenSource final : public TokenSource {
 public:
  AuthorizedUserTokenSource(HttpTransport& http, const Clock& clock, AuthorizedUser user);
  AccessToken token() override;

 private:
  HttpTransport& http_;
  const Clock& clock_;
  AuthorizedUser user_;
};

// GET http://<host>/computeMetadata/v1/instance/service-accounts/default/token, Metadata-Flavor: Google.
class MetadataTokenSource final : public TokenSource {
 public:
  MetadataTokenSource(HttpTransport& http, const Clock& clock, std::string host = "metadata.google.internal");
  AccessToken token() override;

 private:
  HttpTransport& http_;
  const Clock& clock_;
  std::string host_;
};

// Keeps the last token and refreshes it `margin` before it expires (or half-way through its life
// when that is shorter than twice the margin). One caller refreshes, without holding the lock;
// meanwhile the others get the old token while it is still valid and wait only when there is none.
// When a refresh fails and the old token has not expired, the old token is served and the refresh
// is tried again after `retryAfterFailure`.
class CachedTokenSource final : public TokenSource {
 public:
  CachedTokenSource(std::unique_ptr<TokenSource> source, const Clock& clock,
                    std::chrono::seconds margin = std::chrono::seconds(300),
                    std::chrono::seconds retryAfterFailure = std::chrono::seconds(10));
  AccessToken token() override;
  void invalidate() override;

 private:
  std::unique_ptr<TokenSource> source_;
  const Clock& clock_;
  std::chrono::seconds margin_;
  std::chrono::seconds retryAfterFailure_;
  std::mutex mutex_;  // never held while the source is asked for a token
  std::condition_variable refreshed_;
  bool refreshing_ = false;
  std::optional<AccessToken> cached_;
  Clock::time_point refreshAt_;
};

// Reads an environment variable; injectable so tests do not touch the process environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
std::optional<std::string> processEnv(const std::string& name);

// Builds a token source from a credentials JSON file (service_account or authorized_user).
std::unique_ptr<TokenSource> tokenSourceFromFile(const std::string& path, HttpTransport& http, const Clock& clock);

// The chain above, wrapped in a CachedTokenSource.
std::unique_ptr<CachedTokenSource> defaultTokenSource(HttpTransport& http, const Clock& clock,
                                                      const EnvLookup& env = processEnv);

}  // namespace vto::vertex
