#include "base/url.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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

TEST(ParseUrl, RefusesEveryCharacterThatCouldEndTheRequestLine) {
  // A request target that parseUrl accepts is written into "GET <target> HTTP/1.1" as it is.
  for (const std::string& bad : std::vector<std::string>{
           "http://h/x\r\nX-Injected: 1", "http://h/x\nX", "http://h/x\rX", "http://h/x\tX", "http://h/x y",
           std::string("http://h/x\0y", 12), "http://h/x\x7f", "http://h/\xc3\xa9", "http://h\r\nX: 1/", "http://h/x\\y",
           "http://h/x%", "http://h/x%4", "http://h/x%zz", "http://h/x#frag", "http://h/x<y>", "http://h/x\"y",
           "http://h/x{y}", "http://h/x|y", "http://h/x^y", "http://h/x`y", "http://h/x[y]", "http://user@h/",
           "http://user:pw@h/", "http://h\xc3\xa9.example/", "http://h%2e.example/"}) {
    EXPECT_THROW(parseUrl(bad), InvalidUrl) << bad;
  }
  // Everything UrlBuilder writes is accepted as it is: every byte of a segment is encoded.
  std::string everyByte;
  for (int c = 0; c < 256; ++c) everyByte += static_cast<char>(c);
  auto built = UrlBuilder("http://h").segment(everyByte).query("q", everyByte).str();
  EXPECT_EQ(parseUrl(built).path, built.substr(8));
  EXPECT_EQ(parseUrl("http://h/a-b._~!$&'()*+,;=:@/%2F?x=%0D%0A&y=/?").path, "/a-b._~!$&'()*+,;=:@/%2F?x=%0D%0A&y=/?");
}

TEST(ParseUrl, ErrorsDescribeTheUrlWithoutReplayingIt) {
  try {
    parseUrl("http://prom:9090/x\r\nX-Injected: 1");
    FAIL();
  } catch (const InvalidUrl& error) {
    std::string what = error.what();
    EXPECT_EQ(what.find_first_of("\r\n"), std::string::npos) << what;
    EXPECT_NE(what.find("\\x0D\\x0AX-Injected"), std::string::npos) << what;  // escaped, so it can be read
    EXPECT_NE(what.find("control character 0x0D at position 18"), std::string::npos) << what;
    EXPECT_NE(what.find("percent-encoded"), std::string::npos) << what;      // what to write instead
    EXPECT_EQ(error.reason().find("prom"), std::string::npos) << error.reason();  // the reason alone: no URL
  }
  try {
    parseUrl("http://h/" + std::string(10000, 'a') + " ");
    FAIL();
  } catch (const InvalidUrl& error) {
    EXPECT_LT(std::string(error.what()).size(), 500u);
  }
}

TEST(CanonicalUrl, OneStringForEverySpellingOfAUrl) {
  EXPECT_EQ(canonicalUrl("HTTP://Prometheus.Monitoring:9090"), "http://prometheus.monitoring:9090/");
  EXPECT_EQ(canonicalUrl("http://prom:80/"), "http://prom/");
  EXPECT_EQ(canonicalUrl("https://prom:443"), "https://prom/");
  EXPECT_EQ(canonicalUrl("https://prom:80"), "https://prom:80/");
  EXPECT_EQ(canonicalUrl("http://[::1]:80/x"), "http://[::1]/x");
  EXPECT_EQ(canonicalUrl("http://[::1]:9090/x"), "http://[::1]:9090/x");
  // Unreserved characters decoded, everything else encoded in upper case, nothing else touched.
  EXPECT_EQ(canonicalUrl("http://h/%7euser/%41%2d%5F%2e/%2f%3a%0d%0A?q=%7B%7d&r=%61"),
            "http://h/~user/A-_./%2F%3A%0D%0A?q=%7B%7D&r=a");
  EXPECT_EQ(canonicalUrl("http://h/a/b/"), "http://h/a/b/");
  EXPECT_EQ(canonicalUrl("http://h/a..b/.x/x."), "http://h/a..b/.x/x.");
  for (const char* bad : {"http://h/./x", "http://h/a/..", "http://h/a/../b", "http://h/%2e%2E/x", "http://h/a/%2E",
                          "http://h/x\r\n", "http://u@h/", "h:80", "http://h/%G0"}) {
    EXPECT_THROW(canonicalUrl(bad), std::invalid_argument) << bad;
  }
}

TEST(TrustedEndpoint, ChecksAndReturnsTheCanonicalForm) {
  EXPECT_EQ(trustedEndpoint("HTTPS://Storage.GoogleAPIs.com:443", "GCS", false), "https://storage.googleapis.com/");
  EXPECT_EQ(trustedEndpoint("http://LOCALHOST:4443/", "GCS", false), "http://localhost:4443/");
  EXPECT_THROW(trustedEndpoint("http://gcs.internal", "GCS", false), std::invalid_argument);
  try {
    trustedEndpoint("https://h/x y", "Vertex endpoint", false);
    FAIL();
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(std::string(error.what()).rfind("Vertex endpoint: ", 0), 0u) << error.what();
  }
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
