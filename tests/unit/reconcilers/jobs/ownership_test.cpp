// Which Vertex jobs are this operator's: a table over the labels anyone can write.
#include "reconcilers/jobs/ownership.h"

#include <gtest/gtest.h>

#include "base/rfc3339.h"
#include "crd/render.h"
#include "reconcilers/jobs/job_cache.h"

namespace vto::reconcilers {
namespace {

const std::string kKey = "a-key-of-at-least-thirty-two-bytes-0001";
const std::string kOldKey = "the-previous-key-of-32-bytes-or-more-02";
const auto kIssued = parseRfc3339("2026-12-01T00:00:00Z");
const auto kBefore = parseRfc3339("2026-11-20T00:00:00Z");
const auto kAfter = parseRfc3339("2026-12-05T00:00:00Z");

JobOwnership signer(const std::string& cluster = "prod", std::vector<std::string> keys = {kKey}) {
  return JobOwnership(cluster, OwnershipKeys{std::move(keys), kIssued});
}

// The labels vto renders for attempt 2 of a 1-GPU run of team-a.
std::map<std::string, std::string> rendered() {
  return {{crd::kRunUidLabel, "4f1c-uid"}, {crd::kAttemptLabel, "2"},         {crd::kNamespaceLabel, "team-a"},
          {crd::kNameLabel, "train"},      {crd::kAcceleratorsLabel, "1"},    {crd::kAcceleratorTypeLabel, "nvidia_l4"},
          {crd::kTeamLabel, "team-a"},     {crd::kManagedByLabel, "vto"}};
}

std::map<std::string, std::string> signedBy(const JobOwnership& ownership) {
  auto labels = rendered();
  ownership.sign(labels);
  return labels;
}

TEST(JobOwnership, DecidesWhoMadeAJobFromItsLabels) {
  auto ours = signer();
  auto tagged = signedBy(ours);
  ASSERT_EQ(tagged.at(kClusterLabel), "prod");
  ASSERT_EQ(tagged.at(kOwnerTagLabel).size(), 40u);
  auto with = [&](std::map<std::string, std::string> labels, const char* key, const std::string& value) {
    labels[key] = value;
    return labels;
  };
  auto without = [&](std::map<std::string, std::string> labels, const char* key) {
    labels.erase(key);
    return labels;
  };
  struct Row {
    const char* what;
    std::map<std::string, std::string> labels;
    std::optional<Clock::time_point> created;
    JobOwner owner;
  };
  std::vector<Row> rows = {
      {"tagged by this operator", tagged, kAfter, JobOwner::Ours},
      {"untagged, made before the key was issued (the release before)", rendered(), kBefore, JobOwner::Legacy},
      {"untagged, made since", rendered(), kAfter, JobOwner::Forged},
      {"untagged, no creation time", rendered(), std::nullopt, JobOwner::Forged},
      {"another cluster's", signedBy(signer("staging")), kAfter, JobOwner::OtherCluster},
      {"another cluster's label, no tag", with(rendered(), kClusterLabel, "staging"), kAfter, JobOwner::OtherCluster},
      {"our cluster, no tag", without(tagged, kOwnerTagLabel), kAfter, JobOwner::Forged},
      {"a tag with no cluster", without(tagged, kClusterLabel), kBefore, JobOwner::Forged},
      {"a made-up tag", with(tagged, kOwnerTagLabel, std::string(40, 'a')), kAfter, JobOwner::Forged},
      {"a real tag on more accelerators", with(tagged, crd::kAcceleratorsLabel, "1000"), kAfter, JobOwner::Forged},
      {"a real tag on the next attempt", with(tagged, crd::kAttemptLabel, "3"), kAfter, JobOwner::Forged},
      {"a real tag on another run", with(tagged, crd::kRunUidLabel, "victim"), kAfter, JobOwner::Forged},
      {"a real tag on another team", with(tagged, crd::kTeamLabel, "team-b"), kAfter, JobOwner::Forged},
      {"a real tag, another namespace", with(tagged, crd::kNamespaceLabel, "team-b"), kAfter, JobOwner::Forged},
      {"a real tag, labels not in it changed", with(tagged, "cost-center", "x"), kAfter, JobOwner::Ours},
      {"signed with a key not ours", signedBy(signer("prod", {kOldKey})), kAfter, JobOwner::Forged},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(ours.ownerOf(row.labels, row.created), row.owner) << row.what;
    EXPECT_EQ(ours.trusts(row.labels, row.created), row.owner == JobOwner::Ours || row.owner == JobOwner::Legacy) << row.what;
  }
}

TEST(JobOwnership, ARotatedKeyStillVerifiesWhatItSigned) {
  auto before = signedBy(signer("prod", {kOldKey}));
  auto rotated = signer("prod", {kKey, kOldKey});
  EXPECT_EQ(rotated.ownerOf(before, kAfter), JobOwner::Ours);
  EXPECT_EQ(rotated.ownerOf(signedBy(rotated), kAfter), JobOwner::Ours);
  EXPECT_EQ(signer("prod", {kOldKey}).ownerOf(signedBy(rotated), kAfter), JobOwner::Forged) << "new jobs use the first key";
}

// Without a key the cluster label alone says which jobs are ours (the operator warns at start).
TEST(JobOwnership, WithoutAKeyTheClusterLabelDecides) {
  JobOwnership unsigned_("prod", {});
  auto labels = rendered();
  unsigned_.sign(labels);
  EXPECT_EQ(labels.count(kOwnerTagLabel), 0u);
  EXPECT_EQ(unsigned_.ownerOf(labels, kAfter), JobOwner::Ours);
  EXPECT_EQ(unsigned_.ownerOf(rendered(), kAfter), JobOwner::Legacy);
  labels[kClusterLabel] = "staging";
  EXPECT_EQ(unsigned_.ownerOf(labels, kAfter), JobOwner::OtherCluster);
}

TEST(JobOwnership, TheKeyFileIsCheckedField) {
  auto keys = parseOwnershipKeys("keys: [\"" + kKey + "\", \"" + kOldKey + "\"]\ntrustUntaggedJobsCreatedBefore: \"2026-12-01T00:00:00Z\"\n");
  EXPECT_EQ(keys.keys, (std::vector<std::string>{kKey, kOldKey}));
  EXPECT_EQ(keys.trustUntaggedJobsCreatedBefore, kIssued);
  for (const char* bad : {"keys: []\n", "keys: [short]\n", "{}\n", "keys: [\"a-key-of-at-least-thirty-two-bytes-0001\"]\nextra: 1\n",
                          "keys: [\"a-key-of-at-least-thirty-two-bytes-0001\"]\ntrustUntaggedJobsCreatedBefore: yesterday\n",
                          "- a list\n"}) {
    EXPECT_THROW(parseOwnershipKeys(bad), std::invalid_argument) << bad;
  }
  EXPECT_THROW(JobOwnership("Prod Cluster", {}), std::invalid_argument) << "not a label value";
}

// The cache is the one gate: a job the operator did not make never enters it (so it is never
// counted, followed, read or cancelled), and one that imitates a run is remembered for that run.
TEST(JobOwnership, TheJobCacheKeepsOutJobsItDidNotMakeAndRemembersImpostors) {
  auto ownership = signer();
  JobCache cache;
  cache.setOwnership(&ownership);
  std::vector<std::string> woken;
  cache.setImpostorListener([&](const std::string& uid) { woken.push_back(uid); });
  vertex::Job real;
  real.name = "projects/p/locations/us-central1/customJobs/1";
  real.state = vertex::JobState::Running;
  real.createTime = kAfter;
  real.labels = signedBy(ownership);
  EXPECT_TRUE(cache.put(real, kAfter));
  auto forged = real;
  forged.name = "projects/p/locations/us-central1/customJobs/2";
  forged.labels[crd::kAttemptLabel] = "3";
  EXPECT_FALSE(cache.put(forged, kAfter));
  EXPECT_FALSE(cache.get(forged.name));
  EXPECT_EQ(woken, std::vector<std::string>{"4f1c-uid"});
  EXPECT_FALSE(cache.put(forged, kAfter));
  EXPECT_EQ(woken.size(), 1u) << "told once";
  EXPECT_EQ(cache.impostorsOf("4f1c-uid"), std::vector<std::string>{forged.name});
  cache.impostorsReported("4f1c-uid", {forged.name});
  EXPECT_TRUE(cache.impostorsOf("4f1c-uid").empty());
  auto staging = real;
  staging.name = "projects/p/locations/us-central1/customJobs/3";
  staging.labels = signedBy(signer("staging"));
  EXPECT_FALSE(cache.put(staging, kAfter)) << "another cluster's job is not ours";
  EXPECT_EQ(woken.size(), 1u) << "and not an impostor either";
  // A job of ours relabelled later stops counting.
  auto relabelled = real;
  relabelled.labels[crd::kAcceleratorsLabel] = "64";
  EXPECT_FALSE(cache.put(relabelled, kAfter + std::chrono::seconds(1)));
  EXPECT_FALSE(cache.get(real.name));
}


// A job is the run's when made for it, or for the earlier run of its namespace and name it took over.
TEST(JobOwnership, AJobIsTheRunsByItsUidOrAsItsNamesake) {
  std::map<std::string, std::string> labels = {{crd::kRunUidLabel, "old-uid"}, {crd::kNamespaceLabel, "team-a"}, {crd::kNameLabel, "train"}};
  EXPECT_TRUE(isTheRunsJob(labels, "team-a", "train", "old-uid"));
  EXPECT_TRUE(isTheRunsJob(labels, "team-a", "train", "new-uid")) << "re-created under the same name";
  EXPECT_FALSE(isTheRunsJob(labels, "team-a", "other", "new-uid"));
  EXPECT_FALSE(isTheRunsJob(labels, "team-b", "train", "new-uid"));
  EXPECT_FALSE(isTheRunsJob({{crd::kRunUidLabel, "old-uid"}}, "", "", "new-uid")) << "no namesake labels: the uid alone decides";
}

}  // namespace
}  // namespace vto::reconcilers
