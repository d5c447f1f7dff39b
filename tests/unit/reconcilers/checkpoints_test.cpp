#include "reconcilers/checkpoints.h"

#include <gtest/gtest.h>

namespace vto::reconcilers {
namespace {

vertex::GcsObject object(const std::string& name, const std::string& updated = "2026-12-01T00:00:00Z") {
  return vertex::GcsObject{"bucket", name, 1, updated, "1"};
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
  EXPECT_EQ(latest->updateTime, "2026-12-01T00:00:02Z");
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

}  // namespace
}  // namespace vto::reconcilers
