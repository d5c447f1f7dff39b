#include "vertex/auth.h"

#include <filesystem>
#include <fstream>
#include <latch>
#include <thread>

#include <cpprest/base_uri.h>
#include <gtest/gtest.h>

#include "base/base64.h"
#include "tests/fakes/clock_fake.h"
#include "tests/fakes/vertex_fake_transport.h"
#include "tests/fakes/vertex_test_keys.h"
#include "vertex/jwt.h"

namespace vto::vertex {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::map<std::string, std::string> formFields(const std::string& body) {
  std::map<std::string, std::string> fields;
  for (const auto& [name, value] : web::uri::split_query(body)) fields[name] = web::uri::decode(value);
  return fields;
}

std::string writeTempFile(const std::string& name, const std::string& content) {
  auto path = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  std::ofstream(path) << content;
  return path.string();
}

TEST(Jwt, SignsRs256ThatTheMatchingPublicKeyVerifies) {
  auto keys = testing::generateRsaKeyPair();
  auto other = testing::generateRsaKeyPair();
  auto jwt = signJwtRs256({{"alg", "RS256"}, {"typ", "JWT"}}, {{"iss", "sa@p.iam.gserviceaccount.com"}}, keys.privatePem);
  EXPECT_EQ(std::count(jwt.begin(), jwt.end(), '.'), 2);
  EXPECT_TRUE(verifyJwtRs256(jwt, keys.publicPem));
  EXPECT_FALSE(verifyJwtRs256(jwt, other.publicPem));
  auto tampered = jwt;
  tampered[tampered.find('.') + 2] ^= 1;
  EXPECT_FALSE(verifyJwtRs256(tampered, keys.publicPem));
}

TEST(Jwt, AnUnreadableKeyIsReportedWithoutEchoingIt) {
  try {
    signJwtRs256({}, {}, "-----BEGIN PRIVATE KEY-----\nsecretmaterial\n-----END PRIVATE KEY-----\n");
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(std::string(error.what()).find("secretmaterial"), std::string::npos);
  }
}

TEST(ServiceAccountTokenSource, ExchangesASignedJwtAtTheKeysTokenUri) {
  auto keys = testing::generateRsaKeyPair();
  testing::FakeClock clock;
  testing::ScriptedTransport transport;
  transport.enqueue(200, R"({"access_token": "ya29.sa", "expires_in": 3599, "token_type": "Bearer"})");
  ServiceAccountTokenSource source(transport, clock, {"sa@p.iam.gserviceaccount.com", keys.privatePem, "kid1",
                                                      "http://127.0.0.1:1/token"});
  auto token = source.token();
  EXPECT_EQ(token.value, "ya29.sa");
  EXPECT_EQ(token.expiry, clock.now() + 3599s);

  auto request = transport.requests().at(0);
  EXPECT_EQ(request.url, "http://127.0.0.1:1/token");
  EXPECT_EQ(request.headers.at("Content-Type"), "application/x-www-form-urlencoded");
  auto fields = formFields(request.body);
  EXPECT_EQ(fields["grant_type"], "urn:ietf:params:oauth:grant-type:jwt-bearer");
  const auto& assertion = fields["assertion"];
  EXPECT_TRUE(verifyJwtRs256(assertion, keys.publicPem));
  auto first = assertion.find('.'), last = assertion.rfind('.');
  auto header = json::parse(base64UrlDecode(assertion.substr(0, first)));
  auto claims = json::parse(base64UrlDecode(assertion.substr(first + 1, last - first - 1)));
  EXPECT_EQ(header["alg"], "RS256");
  EXPECT_EQ(header["kid"], "kid1");
  EXPECT_EQ(claims["iss"], "sa@p.iam.gserviceaccount.com");
  EXPECT_EQ(claims["aud"], "http://127.0.0.1:1/token");
  EXPECT_EQ(claims["scope"], kCloudPlatformScope);
  EXPECT_EQ(claims["exp"].get<long long>() - claims["iat"].get<long long>(), 3600);
}

TEST(AuthorizedUserTokenSource, UsesTheRefreshTokenGrant) {
  testing::FakeClock clock;
  testing::ScriptedTransport transport;
  transport.enqueue(200, R"({"access_token": "ya29.user", "expires_in": 3600})");
  AuthorizedUserTokenSource source(transport, clock, {"id", "secret", "1//refresh", "http://127.0.0.1:1/token"});
  EXPECT_EQ(source.token().value, "ya29.user");
  auto fields = formFields(transport.requests().at(0).body);
  EXPECT_EQ(fields["grant_type"], "refresh_token");
  EXPECT_EQ(fields["refresh_token"], "1//refresh");
}

TEST(TokenErrors, NeverContainTheResponseToken) {
  testing::FakeClock clock;
  testing::ScriptedTransport transport;
  transport.enqueue(400, R"({"error": "invalid_grant", "error_description": "Token has been expired or revoked."})");
  AuthorizedUserTokenSource source(transport, clock, {"id", "secret", "1//refresh-secret", "http://127.0.0.1:1/token"});
  try {
    source.token();
    FAIL() << "expected AuthError";
  } catch (const AuthError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("invalid_grant"), std::string::npos);
    EXPECT_EQ(message.find("1//refresh-secret"), std::string::npos);
  }
}

TEST(MetadataTokenSource, AsksTheMetadataServerWithTheFlavorHeader) {
  testing::FakeClock clock;
  testing::ScriptedTransport transport;
  transport.enqueue(200, R"({"access_token": "ya29.gke", "expires_in": 1000})");
  MetadataTokenSource source(transport, clock, "127.0.0.1:8089");
  EXPECT_EQ(source.token().value, "ya29.gke");
  auto request = transport.requests().at(0);
  EXPECT_EQ(request.url, "http://127.0.0.1:8089/computeMetadata/v1/instance/service-accounts/default/token");
  EXPECT_EQ(request.headers.at("Metadata-Flavor"), "Google");
}

// Hands out "t1", "t2", ... each valid for 10 minutes.
class SequenceSource final : public TokenSource {
 public:
  explicit SequenceSource(const Clock& clock) : clock_(clock) {}
  AccessToken token() override {
    return {"t" + std::to_string(++calls), clock_.now() + 600s};
  }
  std::atomic<int> calls{0};

 private:
  const Clock& clock_;
};

TEST(CachedTokenSource, RefreshesBeforeExpiry) {
  testing::FakeClock clock;
  auto owned = std::make_unique<SequenceSource>(clock);
  auto* source = owned.get();
  CachedTokenSource cached(std::move(owned), clock, 60s);
  EXPECT_EQ(cached.token().value, "t1");
  clock.advance(539s);
  EXPECT_EQ(cached.token().value, "t1");
  clock.advance(1s);  // 60 s before expiry
  EXPECT_EQ(cached.token().value, "t2");
  cached.invalidate();
  EXPECT_EQ(cached.token().value, "t3");
  EXPECT_EQ(source->calls, 3);
}

TEST(CachedTokenSource, ShortLivedTokensAreRefreshedHalfWayThroughTheirLife) {
  testing::FakeClock clock;
  CachedTokenSource cached(std::make_unique<SequenceSource>(clock), clock, 3600s);  // margin > lifetime
  EXPECT_EQ(cached.token().value, "t1");
  EXPECT_EQ(cached.token().value, "t1");  // not refreshed on every call
  clock.advance(299s);
  EXPECT_EQ(cached.token().value, "t1");
  clock.advance(1s);
  EXPECT_EQ(cached.token().value, "t2");
}

TEST(CachedTokenSource, ConcurrentCallersShareOneRefresh) {
  testing::FakeClock clock;
  auto owned = std::make_unique<SequenceSource>(clock);
  auto* source = owned.get();
  CachedTokenSource cached(std::move(owned), clock);
  std::vector<std::thread> callers;
  std::vector<std::string> seen(8);
  std::latch start(8);  // all callers ask at once
  for (int i = 0; i < 8; ++i) {
    callers.emplace_back([&, i] {
      start.arrive_and_wait();
      seen[i] = cached.token().value;
    });
  }
  for (auto& caller : callers) caller.join();
  EXPECT_EQ(source->calls, 1);
  for (const auto& token : seen) EXPECT_EQ(token, "t1");
}

// Answers "t1" first, then fails every refresh (the token endpoint is down).
class FailingAfterFirstSource final : public TokenSource {
 public:
  explicit FailingAfterFirstSource(const Clock& clock) : clock_(clock) {}
  AccessToken token() override {
    if (++calls == 1) return {"t1", clock_.now() + 600s};
    throw AuthError("token endpoint unreachable");
  }
  std::atomic<int> calls{0};

 private:
  const Clock& clock_;
};

TEST(CachedTokenSource, KeepsServingAStillValidTokenWhenARefreshFails) {
  testing::FakeClock clock;
  auto owned = std::make_unique<FailingAfterFirstSource>(clock);
  auto* source = owned.get();
  CachedTokenSource cached(std::move(owned), clock, 60s, 10s);
  EXPECT_EQ(cached.token().value, "t1");
  clock.advance(545s);  // refresh due; it fails, the token has 55 s left
  EXPECT_EQ(cached.token().value, "t1");
  EXPECT_EQ(cached.token().value, "t1");
  EXPECT_EQ(source->calls, 2);  // not one refresh per call: the next try is 10 s later
  clock.advance(10s);
  EXPECT_EQ(cached.token().value, "t1");
  EXPECT_EQ(source->calls, 3);
  clock.advance(50s);  // expired now: the failure surfaces
  EXPECT_THROW(cached.token(), AuthError);
}

// Blocks in token() until released, so a test can look at the cache while a refresh is in flight.
class GatedSource final : public TokenSource {
 public:
  explicit GatedSource(const Clock& clock) : clock_(clock) {}
  AccessToken token() override {
    int call = ++calls;
    if (call > 1) {
      entered.count_down();
      release.wait();
    }
    return {"t" + std::to_string(call), clock_.now() + 600s};
  }
  std::atomic<int> calls{0};
  std::latch entered{1}, release{1};

 private:
  const Clock& clock_;
};

TEST(CachedTokenSource, DoesNotHoldItsLockWhileRefreshing) {
  testing::FakeClock clock;
  auto owned = std::make_unique<GatedSource>(clock);
  auto* source = owned.get();
  CachedTokenSource cached(std::move(owned), clock, 60s);
  EXPECT_EQ(cached.token().value, "t1");
  clock.advance(545s);
  std::string refreshedBy;
  std::thread refresher([&] { refreshedBy = cached.token().value; });
  source->entered.wait();  // the refresh is in flight
  // With the lock held during the refresh this call would block until release: a deadlock here.
  EXPECT_EQ(cached.token().value, "t1");
  source->release.count_down();
  refresher.join();
  EXPECT_EQ(refreshedBy, "t2");
  EXPECT_EQ(cached.token().value, "t2");
}

TEST(TokenEndpoint, OnlyGooglesOrLoopback) {
  testing::FakeClock clock;
  testing::ScriptedTransport transport;
  auto keys = testing::generateRsaKeyPair();
  for (const char* bad : {"https://evil.example/token", "http://oauth2.googleapis.com/token",
                          "https://oauth2.googleapis.com.evil.example/token", "https://googleapis.com@evil.example/",
                          "http://127.attacker.example/token", "file:///etc/passwd"}) {
    EXPECT_THROW(ServiceAccountTokenSource(transport, clock, {"sa@p.iam.gserviceaccount.com", keys.privatePem, "k", bad}),
                 AuthError)
        << bad;
    EXPECT_THROW(AuthorizedUserTokenSource(transport, clock, {"id", "secret", "1//r", bad}), AuthError) << bad;
  }
  EXPECT_NO_THROW(AuthorizedUserTokenSource(transport, clock, {"id", "secret", "1//r", "https://oauth2.googleapis.com/token"}));
  EXPECT_NO_THROW(AuthorizedUserTokenSource(transport, clock, {"id", "secret", "1//r", "https://accounts.google.com/o/oauth2/token"}));
  EXPECT_NO_THROW(AuthorizedUserTokenSource(transport, clock, {"id", "secret", "1//r", "http://[::1]:8080/token"}));

  auto path = writeTempFile("evil-token-uri.json", json{{"type", "authorized_user"},
                                                        {"client_id", "id"},
                                                        {"client_secret", "s"},
                                                        {"refresh_token", "1//r"},
                                                        {"token_uri", "https://collector.evil.example/token"}}
                                                       .dump());
  EXPECT_THROW(tokenSourceFromFile(path, transport, clock), AuthError);
  EXPECT_TRUE(transport.requests().empty());
  std::filesystem::remove(path);
}

TEST(TokenEndpoint, ExpiresInMustBeASaneNumberOfSeconds) {
  testing::FakeClock clock;
  testing::ScriptedTransport transport;
  AuthorizedUserTokenSource source(transport, clock, {"id", "secret", "1//r", "http://127.0.0.1:1/token"});
  for (const char* bad : {R"(0)", R"(-60)", R"(1e12)", R"("3600")", R"(null)", R"(1e300)"}) {
    transport.enqueue(200, std::string(R"({"access_token": "ya29.x", "expires_in": )") + bad + "}");
    EXPECT_THROW(source.token(), AuthError) << bad;
  }
  transport.enqueue(200, R"({"access_token": "ya29.x"})");  // absent: Google's hour
  EXPECT_EQ(source.token().expiry, clock.now() + 3600s);
  transport.enqueue(200, R"({"access_token": 42, "expires_in": 3600})");
  EXPECT_THROW(source.token(), AuthError);
  transport.enqueue(503, R"({"error": 5, "error_description": ["x"]})");
  EXPECT_THROW(source.token(), AuthError);
}

TEST(DefaultTokenSource, FollowsGooglesOrder) {
  testing::FakeClock clock;
  testing::ScriptedTransport transport;
  transport.setHandler([](const HttpRequest& request) {
    auto body = request.url.find("computeMetadata") != std::string::npos ? "metadata"
                : request.body.find("refresh_token") != std::string::npos ? "user"
                                                                          : "service-account";
    return testing::ScriptedTransport::Answer{200, json{{"access_token", body}, {"expires_in", 3600}}.dump(), {}, false};
  });
  auto keys = testing::generateRsaKeyPair();
  auto keyFile = writeTempFile("vto-sa.json", json{{"type", "service_account"},
                                                   {"client_email", "sa@p.iam.gserviceaccount.com"},
                                                   {"private_key", keys.privatePem},
                                                   {"token_uri", "http://127.0.0.1:1/token"}}
                                                  .dump());
  auto home = std::filesystem::temp_directory_path() / ("vto-home-" + std::to_string(::getpid()));
  std::filesystem::create_directories(home / ".config/gcloud");
  std::ofstream(home / ".config/gcloud/application_default_credentials.json")
      << json{{"type", "authorized_user"}, {"client_id", "c"}, {"client_secret", "s"}, {"refresh_token", "r"}}.dump();

  auto env = [&](std::map<std::string, std::string> values) {
    return [values](const std::string& name) -> std::optional<std::string> {
      auto found = values.find(name);
      if (found == values.end()) return std::nullopt;
      return found->second;
    };
  };
  EXPECT_EQ(defaultTokenSource(transport, clock, env({{"GOOGLE_APPLICATION_CREDENTIALS", keyFile}, {"HOME", home}}))
                ->token().value, "service-account");
  EXPECT_EQ(defaultTokenSource(transport, clock, env({{"HOME", home}}))->token().value, "user");
  EXPECT_EQ(defaultTokenSource(transport, clock, env({{"HOME", "/nonexistent"}, {"GCE_METADATA_HOST", "127.0.0.1:1"}}))
                ->token().value, "metadata");
  EXPECT_EQ(transport.requests().back().url,
            "http://127.0.0.1:1/computeMetadata/v1/instance/service-accounts/default/token");

  auto badFile = writeTempFile("vto-bad.json", R"({"type": "external_account"})");
  EXPECT_THROW(defaultTokenSource(transport, clock, env({{"GOOGLE_APPLICATION_CREDENTIALS", badFile}})), AuthError);
  std::filesystem::remove(keyFile);
  std::filesystem::remove(badFile);
  std::filesystem::remove_all(home);
}

}  // namespace
}  // namespace vto::vertex
