#include "reconcilers/jobs/checkpoints.h"

#include <gtest/gtest.h>

#include "base/rfc3339.h"

#include "tests/fakes/clock_fake.h"
#include "tests/fakes/gcs_fake_client.h"
#include "tests/fakes/vertex_fake_transport.h"
#include "vertex/api_error.h"

namespace vto::reconcilers {
namespace {

vertex::GcsObject object(const std::string& name, const std::string& updated = "2026-12-01T00:00:00Z") {
  return vertex::GcsObject{"bucket", name, 1, updated, "1", ""};
}

TEST(LatestCheckpoint, ComparesStepsAsNumbersNotText) {
  auto latest = latestCheckpoint("gs://bucket/run/checkpoints",
                                 {object("run/checkpoints/ckpt-9"), object("run/checkpoints/ckpt-10"),
                                  object("run/checkpoints/ckpt-2")});
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->uri, "gs://bucket/run/checkpoints/ckpt-10");
}

TEST(LatestCheckpoint, NestedStepFoldersAreOneCheckpointEach) {
  auto latest = latestCheckpoint(
      "gs://bucket/run/checkpoints/",
      {object("run/checkpoints/step-5/model.pt", "2026-12-01T00:00:09Z"),
       object("run/checkpoints/step-12/model.pt", "2026-12-01T00:00:01Z"),
       object("run/checkpoints/step-12/optimizer/shard-00001-of-00002", "2026-12-01T00:00:02Z"),
       object("run/checkpoints/trial/step-3/model.pt", "2026-12-01T00:00:10Z")});
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->uri, "gs://bucket/run/checkpoints/step-12");
  EXPECT_EQ(latest->updateTime, parseRfc3339("2026-12-01T00:00:02Z"));
}

TEST(LatestCheckpoint, TensorFlowPrefixFilesNameTheirCheckpoint) {
  auto latest = latestCheckpoint("gs://bucket/c", {object("c/checkpoint"), object("c/ckpt-7.index"),
                                                   object("c/ckpt-7.data-00000-of-00001"), object("c/ckpt-6.index")});
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->uri, "gs://bucket/c/ckpt-7");
}

TEST(LatestCheckpoint, WithoutNumbersTheNewestUpdateWins) {
  auto latest = latestCheckpoint("gs://bucket/c", {object("c/best/model.pt", "2026-12-01T10:00:00Z"),
                                                   object("c/last/model.pt", "2026-12-01T11:00:00Z")});
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->uri, "gs://bucket/c/last");
}

TEST(LatestCheckpoint, AnEmptyDirectoryHasNone) {
  EXPECT_FALSE(latestCheckpoint("gs://bucket/c", {}));
  EXPECT_FALSE(latestCheckpoint("gs://bucket/c", {object("other/ckpt-1"), object("c")}));
}

TEST(LatestCheckpoint, ObjectsOutsideTheDirectoryDoNotCount) {
  auto latest = latestCheckpoint("gs://bucket/a/checkpoints", {object("a/checkpoints-old/ckpt-99"), object("a/checkpoints/ckpt-1")});
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->uri, "gs://bucket/a/checkpoints/ckpt-1");
}

// The bounded search picks what the rule picks, on the same shapes as above.
class CheckpointSearchTest : public ::testing::Test {
 protected:
  void put(const std::string& name, const std::string& updated = "2026-12-01T00:00:00Z") {
    gcs_.setUpdated(updated);
    gcs_.upload("bucket", name, "x", "application/octet-stream");
  }
  CheckpointSearch search(const std::string& directory, CheckpointSearchLimits limits = {}) {
    return findLatestCheckpoint(gcs_, directory, clock_, limits);
  }
  testing::FakeGcsClient gcs_;
  testing::FakeClock clock_;
};

TEST_F(CheckpointSearchTest, AgreesWithTheRule) {
  put("run/checkpoints/step-5/model.pt", "2026-12-01T00:00:09Z");
  put("run/checkpoints/step-12/model.pt", "2026-12-01T00:00:01Z");
  put("run/checkpoints/step-12/optimizer/shard-00001-of-00002", "2026-12-01T00:00:02Z");
  put("run/checkpoints/trial/step-3/model.pt", "2026-12-01T00:00:10Z");
  put("run/checkpoints/ckpt-9.index");
  put("run/checkpoints/ckpt-10.index");
  put("run/checkpoints-old/ckpt-99");
  auto found = search("gs://bucket/run/checkpoints");
  EXPECT_TRUE(found.complete);
  ASSERT_TRUE(found.latest);
  EXPECT_EQ(found.latest->uri, "gs://bucket/run/checkpoints/step-12");
  EXPECT_EQ(found.latest->updateTime, parseRfc3339("2026-12-01T00:00:02Z"));

  put("c/checkpoint");
  put("c/ckpt-7.index");
  put("c/ckpt-7.data-00000-of-00001");
  put("c/ckpt-6.index");
  EXPECT_EQ(search("gs://bucket/c").latest->uri, "gs://bucket/c/ckpt-7");

  put("u/best/model.pt", "2026-12-01T10:00:00Z");
  put("u/last/model.pt", "2026-12-01T11:00:00Z");
  EXPECT_EQ(search("gs://bucket/u").latest->uri, "gs://bucket/u/last");

  put("n/run/epoch=3/model.pt");
  put("n/run/epoch=12/model.pt");
  EXPECT_EQ(search("gs://bucket/n/").latest->uri, "gs://bucket/n/run/epoch=12");
  EXPECT_FALSE(search("gs://bucket/empty").latest);
}

TEST_F(CheckpointSearchTest, NumberedDirectoriesAreNotListedFileByFile) {
  for (int step = 0; step < 300; ++step) {
    for (int shard = 0; shard < 10; ++shard) {
      put("big/step-" + std::to_string(step) + "/shard-" + std::to_string(shard));
    }
  }
  CheckpointSearchLimits limits;
  limits.pageSize = 100;
  auto found = search("gs://bucket/big", limits);
  ASSERT_TRUE(found.latest);
  EXPECT_EQ(found.latest->uri, "gs://bucket/big/step-299");
  EXPECT_TRUE(found.complete);
  // 300 prefixes at 100 a page, then the winner's 10 files: not the 3,000 objects (30 pages).
  EXPECT_EQ(found.pages, 4);
}

TEST_F(CheckpointSearchTest, StopsAtThePageCapWithTheBestSoFar) {
  for (int i = 0; i < 50; ++i) put("flat/ckpt-" + std::to_string(1000 + i));
  CheckpointSearchLimits limits;
  limits.pageSize = 10;
  limits.maxPages = 3;
  auto found = search("gs://bucket/flat", limits);
  EXPECT_FALSE(found.complete);
  EXPECT_NE(found.stoppedBecause.find("3 pages"), std::string::npos) << found.stoppedBecause;
  EXPECT_EQ(found.pages, 3);
  ASSERT_TRUE(found.latest);
  EXPECT_EQ(found.latest->uri, "gs://bucket/flat/ckpt-1029");
}

// A GcsClient that moves the clock forward with every page: a slow listing.
class SlowGcs final : public vertex::GcsClient {
 public:
  SlowGcs(testing::FakeGcsClient& inner, testing::FakeClock& clock) : inner_(inner), clock_(clock) {}
  vertex::ObjectPage listObjectsPage(const std::string& b, const std::string& p, const std::string& t,
                                     const vertex::ListObjectsOptions& o) override {
    clock_.advance(std::chrono::seconds(8));
    return inner_.listObjectsPage(b, p, t, o);
  }
  std::optional<vertex::GcsObject> getObject(const std::string&, const std::string&) override { return std::nullopt; }
  vertex::GcsObject upload(const std::string&, const std::string&, const std::string&, const std::string&) override {
    return {};
  }
  void ensureBucket(const std::string&, const std::string&) override {}

 private:
  testing::FakeGcsClient& inner_;
  testing::FakeClock& clock_;
};

TEST_F(CheckpointSearchTest, StopsAtTheTimeCap) {
  for (int i = 0; i < 50; ++i) put("slow/ckpt-" + std::to_string(i));
  SlowGcs slow(gcs_, clock_);
  CheckpointSearchLimits limits;
  limits.pageSize = 5;
  limits.maxTime = std::chrono::seconds(20);
  auto found = findLatestCheckpoint(slow, "gs://bucket/slow", clock_, limits);
  EXPECT_FALSE(found.complete);
  EXPECT_EQ(found.pages, 3);  // 8 s each: the fourth would start after 24 s
  EXPECT_TRUE(found.latest);
}

TEST(CheckpointSearch, ARepeatedPageTokenIsNotFollowed) {
  testing::ScriptedTransport transport;
  int served = 0;
  transport.setHandler([&](const vertex::HttpRequest&) {
    ++served;
    return testing::ScriptedTransport::Answer{
        200, R"({"items": [{"name": "d/ckpt-1", "updated": "2026-12-01T00:00:00Z"}], "nextPageToken": "again"})", {}, false};
  });
  vertex::RestGcsClient gcs(transport, "http://127.0.0.1:4443", nullptr);
  testing::FakeClock clock;
  EXPECT_THROW(findLatestCheckpoint(gcs, "gs://b/d", clock), vertex::ApiError);
  EXPECT_EQ(served, 2);
}

}  // namespace
}  // namespace vto::reconcilers
