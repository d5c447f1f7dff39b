// The fake API server behaves as the real one where reconcilers depend on it: a status subresource,
// resourceVersion preconditions, finalizers holding a deleted object.
#include "tests/fakes/kube_client_fake.h"

#include <gtest/gtest.h>

namespace vto::controller {
namespace {

using nlohmann::json;

const Resource kRuns{"vto.dev", "v1beta1", "trainingruns", true};

json created(KubeClient& kube) {
  return kube.create(kRuns, "ns", json{{"metadata", {{"name", "r"}}}, {"spec", {{"a", 1}}}, {"status", {{"phase", "Old"}}}});
}

TEST(FakeKubeClientTest, UpdateIgnoresStatusAndUpdateStatusChangesOnlyStatus) {
  testing::FakeKubeClient fake;
  KubeClient& kube = fake;
  auto object = created(kube);
  object["spec"]["a"] = 2;
  object["status"]["phase"] = "Ignored";
  object = kube.update(kRuns, "ns", object);
  EXPECT_EQ(object["spec"]["a"], 2);
  EXPECT_EQ(object["status"]["phase"], "Old");
  object["spec"]["a"] = 3;
  object["status"]["phase"] = "New";
  object = kube.updateStatus(kRuns, "ns", object);
  EXPECT_EQ(object["spec"]["a"], 2);
  EXPECT_EQ(object["status"]["phase"], "New");
}

TEST(FakeKubeClientTest, AStaleResourceVersionIsAConflict) {
  testing::FakeKubeClient fake;
  KubeClient& kube = fake;
  auto stale = created(kube);
  kube.updateStatus(kRuns, "ns", stale);
  try {
    kube.patch(kRuns, "ns", "r", PatchType::Merge,
               json{{"metadata", {{"finalizers", {"f"}}, {"resourceVersion", stale["metadata"]["resourceVersion"]}}}});
    FAIL() << "a patch from a stale read must not win";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status().code, 409);
  }
  EXPECT_THROW(kube.updateStatus(kRuns, "ns", stale), ApiError);
}

TEST(FakeKubeClientTest, FinalizersHoldADeletedObjectUntilTheLastGoes) {
  testing::FakeKubeClient fake;
  KubeClient& kube = fake;
  created(kube);
  kube.patch(kRuns, "ns", "r", PatchType::Merge, json{{"metadata", {{"finalizers", {"f"}}}}});
  kube.remove(kRuns, "ns", "r");
  EXPECT_TRUE(kube.get(kRuns, "ns", "r")["metadata"].contains("deletionTimestamp"));
  kube.patch(kRuns, "ns", "r", PatchType::Merge, json{{"metadata", {{"finalizers", json::array()}}}});
  EXPECT_THROW(kube.get(kRuns, "ns", "r"), ApiError);
}

}  // namespace
}  // namespace vto::controller
