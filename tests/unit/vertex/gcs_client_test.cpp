#include "vertex/gcs_client.h"

#include <gtest/gtest.h>

#include "tests/fakes/vertex_fake_token_source.h"
#include "tests/fakes/vertex_fake_transport.h"
#include "vertex/api_error.h"

namespace vto::vertex {
namespace {

TEST(GcsUri, SplitsBucketAndObject) {
  auto uri = parseGcsUri("gs://bucket/runs/a/checkpoints/");
  EXPECT_EQ(uri.bucket, "bucket");
  EXPECT_EQ(uri.object, "runs/a/checkpoints/");
  EXPECT_EQ(parseGcsUri("gs://bucket").object, "");
  EXPECT_THROW(parseGcsUri("s3://bucket/x"), std::invalid_argument);
  EXPECT_THROW(parseGcsUri("gs:///x"), std::invalid_argument);
}

TEST(GcsEndpoint, EmulatorHostOrExplicitOrTheRealService) {
  auto none = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  auto emulator = [](const std::string&) -> std::optional<std::string> { return "127.0.0.1:4443"; };
  EXPECT_EQ(gcsEndpoint(std::nullopt, none), "https://storage.googleapis.com");
  EXPECT_EQ(gcsEndpoint(std::nullopt, emulator), "http://127.0.0.1:4443");
  EXPECT_EQ(gcsEndpoint(std::string("http://x:1"), emulator), "http://x:1");
}

TEST(RestGcsClient, ListsEveryPage) {
  testing::ScriptedTransport transport;
  transport.enqueue(200, R"({"items": [{"bucket": "b", "name": "p/ckpt-1", "size": "10", "generation": "5"}],
                             "nextPageToken": "page2"})");
  transport.enqueue(200, R"({"items": [{"bucket": "b", "name": "p/ckpt-2", "size": "12"}]})");
  RestGcsClient client(transport, "http://127.0.0.1:4443/", nullptr);
  auto objects = client.listObjects("b", "p/ckpt-");
  ASSERT_EQ(objects.size(), 2u);
  EXPECT_EQ(objects[0].size, 10);
  EXPECT_EQ(objects[0].generation, "5");
  EXPECT_EQ(objects[1].name, "p/ckpt-2");
  auto requests = transport.requests();
  EXPECT_EQ(requests[0].url, "http://127.0.0.1:4443/storage/v1/b/b/o?prefix=p%2Fckpt-");
  EXPECT_EQ(requests[1].url, "http://127.0.0.1:4443/storage/v1/b/b/o?prefix=p%2Fckpt-&pageToken=page2");
}

TEST(RestGcsClient, OnePageWithGlobFieldsAndSize) {
  testing::ScriptedTransport transport;
  transport.enqueue(200, R"({"items": [{"name": "d/a.parquet", "size": "7", "generation": "3",
                                        "timeCreated": "2026-12-01T00:00:00.250Z"}, "junk"],
                             "nextPageToken": "t2"})");
  transport.enqueue(200, "not json");
  RestGcsClient client(transport, "http://127.0.0.1:4443", nullptr);
  ListObjectsOptions options;
  options.fields = "items(name,timeCreated),nextPageToken";
  options.maxResults = 1000;
  options.matchGlob = "**.parquet";
  auto page = client.listObjectsPage("b", "d/", "t1", options);
  ASSERT_EQ(page.objects.size(), 1u);
  EXPECT_EQ(page.objects[0].timeCreated, "2026-12-01T00:00:00.250Z");
  EXPECT_EQ(page.objects[0].generation, "3");
  EXPECT_EQ(page.nextPageToken, "t2");
  EXPECT_EQ(transport.requests()[0].url,
            "http://127.0.0.1:4443/storage/v1/b/b/o?prefix=d%2F&fields=items%28name%2CtimeCreated%29%2CnextPageToken"
            "&maxResults=1000&matchGlob=%2A%2A.parquet&pageToken=t1");
  EXPECT_THROW(client.listObjectsPage("b", "d/", "", {}), ApiError);
}

TEST(PageTokenGuard, RefusesARepeatedToken) {
  PageTokenGuard guard("listing gs://b/d/");
  guard.next("a");
  guard.next("b");
  EXPECT_THROW(guard.next("a"), ApiError);
}

TEST(RestGcsClient, MetadataOfAMissingObjectIsEmpty) {
  testing::ScriptedTransport transport;
  transport.enqueue(404, R"({"error": {"code": 404, "message": "No such object"}})");
  transport.enqueue(403, R"({"error": {"code": 403, "message": "denied", "status": "PERMISSION_DENIED"}})");
  RestGcsClient client(transport, "http://127.0.0.1:4443", nullptr);
  EXPECT_FALSE(client.getObject("b", "missing").has_value());
  EXPECT_THROW(client.getObject("b", "secret"), ApiError);
}

TEST(RestGcsClient, UploadsWithTheMediaProtocol) {
  testing::ScriptedTransport transport;
  transport.enqueue(200, R"({"bucket": "b", "name": "out/checkpoints/ckpt-1", "size": "2"})");
  RestGcsClient client(transport, "http://127.0.0.1:4443", nullptr);
  auto object = client.upload("b", "out/checkpoints/ckpt-1", "{}", "application/json");
  EXPECT_EQ(object.size, 2);
  auto request = transport.requests().at(0);
  EXPECT_EQ(request.method, "POST");
  EXPECT_EQ(request.url,
            "http://127.0.0.1:4443/upload/storage/v1/b/b/o?uploadType=media&name=out%2Fcheckpoints%2Fckpt-1");
  EXPECT_EQ(request.body, "{}");
}

TEST(RestGcsClient, ReadsAnObjectOnlyUpToItsBound) {
  testing::ScriptedTransport transport;
  transport.enqueue(206, std::string(11, 'x'));
  transport.enqueue(200, std::string(100, 'y'));  // a server that ignores Range
  transport.enqueue(416, "");                     // an empty object
  RestGcsClient client(transport, "http://127.0.0.1:4443", nullptr);
  EXPECT_EQ(client.readObject("b", "run/model/metrics.json", 10), std::string(11, 'x'));
  EXPECT_EQ(client.readObject("b", "run/model/metrics.json", 10), std::string(11, 'y'))
      << "one byte past the bound says it is larger; the rest is never kept";
  EXPECT_EQ(client.readObject("b", "run/model/metrics.json", 10), std::string());
  for (const auto& request : transport.requests()) {
    EXPECT_EQ(request.headers.at("Range"), "bytes=0-10");
    EXPECT_EQ(request.url, "http://127.0.0.1:4443/storage/v1/b/b/o/run%2Fmodel%2Fmetrics.json?alt=media");
    EXPECT_LE(request.maxBodyBytes, std::size_t{10 + 1 + (1 << 20)}) << "a larger body fails the transport";
    EXPECT_GT(request.maxBodyBytes, 0u);
  }
}

TEST(RestGcsClient, AttachesTheTokenOnlyToAValidatedEndpoint) {
  testing::ScriptedTransport transport;
  testing::CountingTokenSource tokens;
  EXPECT_THROW(RestGcsClient(transport, "http://127.attacker.example:4443", &tokens), std::invalid_argument);
  EXPECT_THROW(RestGcsClient(transport, "http://gcs.internal:4443", &tokens), std::invalid_argument);
  EXPECT_THROW(RestGcsClient(transport, "not a url", nullptr), std::invalid_argument);
  EXPECT_NO_THROW(RestGcsClient(transport, "http://gcs.internal:4443", &tokens, /*allowInsecure=*/true));
  EXPECT_NO_THROW(RestGcsClient(transport, "https://storage.googleapis.com", &tokens));
  EXPECT_EQ(tokens.calls, 0);
  EXPECT_TRUE(transport.requests().empty());
}

TEST(RestGcsClient, RefreshesTheTokenOnceAfter401) {
  testing::ScriptedTransport transport;
  testing::CountingTokenSource tokens;
  transport.enqueue(401, R"({"error": {"code": 401, "message": "expired"}})");
  transport.enqueue(200, R"({"bucket": "b", "name": "o", "size": "1"})");
  RestGcsClient client(transport, "https://storage.googleapis.com", &tokens);
  EXPECT_TRUE(client.getObject("b", "o").has_value());
  EXPECT_EQ(tokens.invalidations, 1);
  EXPECT_EQ(transport.requests().at(0).headers.at("Authorization"), "Bearer token-1");
  EXPECT_EQ(transport.requests().at(1).headers.at("Authorization"), "Bearer token-2");
  transport.setHandler([](const HttpRequest&) {
    return testing::ScriptedTransport::Answer{401, R"({"error": {"code": 401, "message": "no"}})", {}, false};
  });
  EXPECT_THROW(client.getObject("b", "o"), ApiError);  // once only: no loop
  EXPECT_EQ(transport.requests().size(), 4u);
}

TEST(RestGcsClient, ListsOnePageWithDelimiterAndPartialResponse) {
  testing::ScriptedTransport transport;
  transport.enqueue(200, R"({"items": [{"name": "d/ckpt-1.index", "updated": "2026-01-01T00:00:00Z"}],
                             "prefixes": ["d/step-2/", 7], "nextPageToken": "t"})");
  RestGcsClient client(transport, "http://127.0.0.1:4443", nullptr);
  auto page = client.listObjectsPage("b", "d/", "t0", {"/", "items(name,updated),prefixes,nextPageToken", 500});
  EXPECT_EQ(transport.requests().at(0).url,
            "http://127.0.0.1:4443/storage/v1/b/b/o?prefix=d%2F&delimiter=%2F"
            "&fields=items%28name%2Cupdated%29%2Cprefixes%2CnextPageToken&maxResults=500&pageToken=t0");
  ASSERT_EQ(page.objects.size(), 1u);
  EXPECT_EQ(page.prefixes, std::vector<std::string>{"d/step-2/"});
  EXPECT_EQ(page.nextPageToken, "t");
}

TEST(RestGcsClient, ListingReadsOnlyEachItemsOwnFieldsWhenTheFieldsMaskIsIgnored) {
  // fake-gcs-server ignores `fields`: every object arrives with its ACLs and custom metadata, whose
  // nested names and buckets are not the object's.
  testing::ScriptedTransport transport;
  transport.enqueue(200, R"({"kind": "storage#objects", "items": [
      {"kind": "storage#object", "acl": [{"bucket": "other", "name": "acl-entry", "size": "99"}],
       "name": "d/ckpt-3", "metadata": {"name": "custom", "updated": "never"}, "bucket": "b", "size": 12,
       "generation": 17, "updated": "2026-01-01T00:00:03Z", "selfLink": "http://x"},
      {"name": "d/ckpt-4", "size": "12x", "updated": 5}],
    "prefixes": ["d/step-9/"], "nextPageToken": "n"})");
  transport.enqueue(200, R"({"items": {"one": {"name": "d/not-a-list"}}, "nextPageToken": 3})");
  transport.enqueue(200, R"(["d/ckpt-1"])");
  RestGcsClient client(transport, "http://127.0.0.1:4443", nullptr);
  auto page = client.listObjectsPage("b", "d/", "", {"/", "items(name,updated),prefixes,nextPageToken", 500});
  ASSERT_EQ(page.objects.size(), 2u);
  EXPECT_EQ(page.objects[0].name, "d/ckpt-3");
  EXPECT_EQ(page.objects[0].bucket, "b");
  EXPECT_EQ(page.objects[0].size, 12);
  EXPECT_EQ(page.objects[0].generation, "17");
  EXPECT_EQ(page.objects[0].updated, "2026-01-01T00:00:03Z");
  EXPECT_EQ(page.objects[1].name, "d/ckpt-4");
  EXPECT_EQ(page.objects[1].size, 0);
  EXPECT_EQ(page.objects[1].updated, "");
  EXPECT_EQ(page.prefixes, std::vector<std::string>{"d/step-9/"});
  EXPECT_EQ(page.nextPageToken, "n");
  auto odd = client.listObjectsPage("b", "d/", "", {});
  EXPECT_TRUE(odd.objects.empty());
  EXPECT_EQ(odd.nextPageToken, "");
  EXPECT_THROW(client.listObjectsPage("b", "d/", "", {}), ApiError);  // not an object
}

TEST(RestGcsClient, ARepeatedPageTokenStopsTheListing) {
  testing::ScriptedTransport transport;
  int served = 0;
  transport.setHandler([&](const HttpRequest&) {
    ++served;
    return testing::ScriptedTransport::Answer{200, R"({"items": [{"name": "p/x"}], "nextPageToken": "same"})", {}, false};
  });
  RestGcsClient client(transport, "http://127.0.0.1:4443", nullptr);
  EXPECT_THROW(client.listObjects("b", "p/"), ApiError);
  EXPECT_EQ(served, 2);  // the second page repeated the first page's token
}

TEST(RestGcsClient, ListingIsCappedInPages) {
  testing::ScriptedTransport transport;
  int served = 0;
  transport.setHandler([&](const HttpRequest&) {
    ++served;
    return testing::ScriptedTransport::Answer{
        200, R"({"items": [{"name": "p/x"}], "nextPageToken": "t)" + std::to_string(served) + R"("})", {}, false};
  });
  RestGcsClient client(transport, "http://127.0.0.1:4443", nullptr);
  EXPECT_THROW(client.listObjects("b", "p/", 5), ApiError);
  EXPECT_EQ(served, 5);
}

TEST(RestGcsClient, UnexpectedBodiesBecomeTypedErrors) {
  testing::ScriptedTransport transport;
  transport.enqueue(200, "<html>proxy login</html>");
  transport.enqueue(200, R"({"bucket": "b", "name": "o", "size": {"x": 1}, "generation": [1]})");
  transport.enqueue(503, "upstream down", {{"retry-after", "99999"}});
  RestGcsClient client(transport, "http://127.0.0.1:4443", nullptr);
  EXPECT_THROW(client.getObject("b", "o"), ApiError);
  auto odd = client.getObject("b", "o");
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->size, 0);
  try {
    client.getObject("b", "o");
    FAIL();
  } catch (const ApiError& error) {
    EXPECT_TRUE(error.retryable());
    EXPECT_EQ(error.retryAfter(), kMaxRetryAfter);
  }
}

}  // namespace
}  // namespace vto::vertex
