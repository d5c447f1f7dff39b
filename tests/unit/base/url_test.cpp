#include "base/url.h"

#include <gtest/gtest.h>

#include "base/gcp_names.h"
#include "base/retryable_error.h"

namespace vto {
namespace {

using namespace std::chrono_literals;

TEST(Loopback, OnlyRealLoopbackAddresses) {
  for (const char* host : {"localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "::1", "[::1]"}) {
    EXPECT_TRUE(isLoopbackHost(host)) << host;
  }
  // A DNS name that starts like a loopback address resolves wherever its owner wants.
  for (const char* host : {"127.attacker.example", "127.0.0.1.nip.io", "localhost.attacker.example", "128.0.0.1",
                           "0x7f.0.0.1", "10.0.0.1", "::2", "", "127.0.0"}) {
    EXPECT_FALSE(isLoopbackHost(host)) << host;
  }
}

TEST(TrustedEndpoint, HttpsAnywherePlainHttpOnlyToLoopbackOrWhenAllowed) {
  EXPECT_NO_THROW(requireTrustedEndpoint("https://storage.googleapis.com", "GCS", false));
  EXPECT_NO_THROW(requireTrustedEndpoint("http://127.0.0.1:4443", "GCS", false));
  EXPECT_NO_THROW(requireTrustedEndpoint("http://[::1]:4443/x", "GCS", false));
  EXPECT_NO_THROW(requireTrustedEndpoint("http://localhost", "GCS", false));
  EXPECT_THROW(requireTrustedEndpoint("http://127.attacker.example", "GCS", false), std::invalid_argument);
  EXPECT_THROW(requireTrustedEndpoint("http://127.attacker.example:80/", "GCS", false), std::invalid_argument);
  EXPECT_THROW(requireTrustedEndpoint("http://gcs.internal:4443", "GCS", false), std::invalid_argument);
  EXPECT_NO_THROW(requireTrustedEndpoint("http://gcs.internal:4443", "GCS", true));
  // user info would let "http://127.0.0.1@evil.example" look like loopback to a prefix check
  EXPECT_THROW(requireTrustedEndpoint("http://127.0.0.1@evil.example", "GCS", false), std::invalid_argument);
  EXPECT_THROW(requireTrustedEndpoint("ftp://127.0.0.1", "GCS", true), std::invalid_argument);
  EXPECT_THROW(requireTrustedEndpoint("127.0.0.1:80", "GCS", true), std::invalid_argument);
  EXPECT_THROW(requireTrustedEndpoint("https://host:99999", "GCS", true), std::invalid_argument);
  try {
    requireTrustedEndpoint("http://gcs.internal:4443", "Cloud Storage endpoint", false);
    FAIL();
  } catch (const std::invalid_argument& error) {
    std::string what = error.what();
    EXPECT_NE(what.find("Cloud Storage endpoint"), std::string::npos) << what;
    EXPECT_NE(what.find("--allow-insecure-endpoints"), std::string::npos) << what;
  }
}

TEST(ParseUrl, SplitsHostPortAndPath) {
  auto url = parseUrl("HTTPS://Example.COM:8443/v1/x?y=z");
  EXPECT_EQ(url.scheme, "https");
  EXPECT_EQ(url.host, "example.com");
  EXPECT_EQ(url.port, 8443);
  EXPECT_EQ(url.path, "/v1/x?y=z");
  EXPECT_EQ(parseUrl("http://[::1]:80").host, "::1");
}

TEST(UrlBuilder, EncodesEverySegmentSoDataCannotChangeHostPathOrQuery) {
  auto url = UrlBuilder("https://h.example/").literal("v1").segment("a/b?c#d").segment("..").segment(".")
                 .verb("cancel").query("q", "x&y=z").query("p", "1").str();
  EXPECT_EQ(url, "https://h.example/v1/a%2Fb%3Fc%23d/%2E%2E/%2E:cancel?q=x%26y%3Dz&p=1");
}

TEST(GcpNames, ProjectIdsAndRegions) {
  for (const char* ok : {"my-project", "test-project", "a12345", "abcdefghijklmnopqrstuvwxyz1234"}) {
    EXPECT_TRUE(isProjectId(ok)) << ok;
  }
  for (const char* bad : {"p1", "My-project", "1project", "project-", "my_project", "my.project", "localhost:80/x?",
                          "abcdefghijklmnopqrstuvwxyz12345", ""}) {
    EXPECT_FALSE(isProjectId(bad)) << bad;
  }
  EXPECT_TRUE(isProjectNumber("123456789012"));
  EXPECT_FALSE(isProjectNumber("123456789012345678901"));
  EXPECT_FALSE(isProjectNumber("12a"));
  for (const char* ok : {"us-central1", "europe-west4", "asia-northeast3", "me-west1"}) EXPECT_TRUE(isVertexRegion(ok)) << ok;
  for (const char* bad : {"localhost:8080/x?", "global", "us-central", "us-central1-a", "US-central1", "us-central1.", "-a1",
                          "evil.example/x?", ""}) {
    EXPECT_FALSE(isVertexRegion(bad)) << bad;
  }
  auto message = checkVertexRegion("spec.location", "localhost:1234/x?");
  ASSERT_TRUE(message);
  EXPECT_NE(message->find("us-central1"), std::string::npos) << *message;
  EXPECT_FALSE(checkProjectId("spec.project", "my-project"));
}

TEST(RetryAfter, ParsedDefensivelyAndClamped) {
  EXPECT_EQ(parseRetryAfterSeconds("7"), 7000ms);
  EXPECT_EQ(parseRetryAfterSeconds("1.5"), 1500ms);
  EXPECT_EQ(parseRetryAfterSeconds("0"), 0ms);
  EXPECT_EQ(parseRetryAfterSeconds("86400"), kMaxRetryAfter);  // a day parks nothing for a day
  EXPECT_EQ(parseRetryAfterSeconds("1e300"), kMaxRetryAfter);  // no undefined conversion
  EXPECT_EQ(parseRetryAfterSeconds("1e999"), std::nullopt);     // out of double's range
  EXPECT_EQ(parseRetryAfterSeconds("-5"), std::nullopt);
  EXPECT_EQ(parseRetryAfterSeconds("nan"), std::nullopt);
  EXPECT_EQ(parseRetryAfterSeconds("inf"), kMaxRetryAfter);
  EXPECT_EQ(parseRetryAfterSeconds("Wed, 21 Oct 2015 07:28:00 GMT"), std::nullopt);
  EXPECT_EQ(parseRetryAfterSeconds("12abc"), std::nullopt);
  EXPECT_EQ(parseRetryAfterSeconds(""), std::nullopt);
  EXPECT_EQ(parseRetryAfterSeconds("30", 10s), 10s);
}

TEST(AuthorityOf, BracketsAnIpv6HostAndKeepsOnlyAGivenPort) {
  EXPECT_EQ(authorityOf(parseUrl("https://[::1]:6443/api")), "[::1]:6443");
  EXPECT_EQ(authorityOf(parseUrl("https://Example.com/x")), "example.com");
  EXPECT_EQ(authorityOf(parseUrl("http://127.0.0.1:8080")), "127.0.0.1:8080");
}

}  // namespace
}  // namespace vto
