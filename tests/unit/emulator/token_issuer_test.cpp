#include "emulator/token_issuer.h"

#include <gtest/gtest.h>

#include "tests/fakes/clock_fake.h"
#include "tests/fakes/vertex_test_keys.h"
#include "vertex/http_transport.h"
#include "vertex/jwt.h"

namespace vto::emulator {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::string jwtGrant(const std::string& assertion) {
  return "grant_type=" + vertex::urlEncode("urn:ietf:params:oauth:grant-type:jwt-bearer") +
         "&assertion=" + vertex::urlEncode(assertion);
}

json claims() { return {{"iss", "sa@p"}, {"aud", "http://x/token"}, {"iat", 1}, {"exp", 3601}}; }

TEST(TokenIssuer, IssuesTokensThatExpire) {
  testing::FakeClock clock;
  TokenIssuer issuer(clock, 60s);
  auto issued = issuer.issue();
  auto token = issued["access_token"].get<std::string>();
  EXPECT_EQ(issued["expires_in"], 60);
  EXPECT_TRUE(issuer.valid(token));
  EXPECT_NE(issuer.issue()["access_token"], token);
  clock.advance(60s);
  EXPECT_FALSE(issuer.valid(token));
  EXPECT_FALSE(issuer.valid("ya29.unknown"));
}

TEST(TokenIssuer, ExchangesJwtsSignedByTheTrustedKeyOnly) {
  testing::FakeClock clock;
  auto trusted = testing::generateRsaKeyPair();
  auto stranger = testing::generateRsaKeyPair();
  TokenIssuer issuer(clock, 60s, trusted.publicPem);
  json header = {{"alg", "RS256"}, {"typ", "JWT"}};
  auto [status, body] = issuer.exchange(jwtGrant(vertex::signJwtRs256(header, claims(), trusted.privatePem)));
  EXPECT_EQ(status, 200);
  EXPECT_TRUE(issuer.valid(body["access_token"].get<std::string>()));
  auto [rejected, error] = issuer.exchange(jwtGrant(vertex::signJwtRs256(header, claims(), stranger.privatePem)));
  EXPECT_EQ(rejected, 400);
  EXPECT_EQ(error["error"], "invalid_grant");
  auto incomplete = claims();
  incomplete.erase("aud");
  EXPECT_EQ(issuer.exchange(jwtGrant(vertex::signJwtRs256(header, incomplete, trusted.privatePem))).first, 400);
}

TEST(TokenIssuer, RefreshTokenGrantAndUnsupportedGrants) {
  testing::FakeClock clock;
  TokenIssuer issuer(clock, 60s);
  EXPECT_EQ(issuer.exchange("grant_type=refresh_token&refresh_token=1%2F%2Fabc&client_id=c").first, 200);
  EXPECT_EQ(issuer.exchange("grant_type=refresh_token").first, 400);
  EXPECT_EQ(issuer.exchange("grant_type=password&username=u").second["error"], "unsupported_grant_type");
}

}  // namespace
}  // namespace vto::emulator
