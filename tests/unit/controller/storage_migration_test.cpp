// Stored objects moved to a CRD's storage version: each written once, then storedVersions recorded.
#include "controller/storage_migration.h"

#include <gtest/gtest.h>

#include "tests/fakes/kube_client_fake.h"

namespace vto::controller {
namespace {

using nlohmann::json;

const Resource kWidgets{"example.dev", "v1beta1", "widgets", true};

json crdStoring(const std::string& storage, const std::vector<std::string>& stored) {
  json versions = json::array();
  for (const auto* name : {"v1beta1", "v1alpha1"}) versions.push_back({{"name", name}, {"served", true}, {"storage", storage == name}});
  return {{"apiVersion", "apiextensions.k8s.io/v1"},
          {"kind", "CustomResourceDefinition"},
          {"metadata", {{"name", "widgets.example.dev"}}},
          {"spec", {{"group", "example.dev"}, {"versions", versions}}},
          {"status", {{"storedVersions", stored}}}};
}

json widget(const std::string& name) {
  return {{"apiVersion", "example.dev/v1beta1"}, {"kind", "Widget"}, {"metadata", {{"name", name}}}, {"spec", {{"size", 3}}}};
}

TEST(StorageMigration, RewritesEveryObjectOnceThenRecordsTheStorageVersionAlone) {
  testing::FakeKubeClient kube;
  kube.create(customResourceDefinitions(), "", crdStoring("v1beta1", {"v1alpha1", "v1beta1"}));
  std::map<std::string, std::string> before;
  for (const auto& [ns, name] : std::vector<std::pair<std::string, std::string>>{{"a", "one"}, {"a", "two"}, {"b", "three"}}) {
    before[name] = kube.create(kWidgets, ns, widget(name))["metadata"]["resourceVersion"];
  }
  auto migration = migrateStorage(kube, "widgets.example.dev", kWidgets);
  EXPECT_TRUE(migration.needed);
  EXPECT_EQ(migration.storedBefore, (std::vector<std::string>{"v1alpha1", "v1beta1"}));
  EXPECT_EQ(migration.rewritten, 3u);
  EXPECT_TRUE(migration.recorded);
  for (const auto& [ns, name] : std::vector<std::pair<std::string, std::string>>{{"a", "one"}, {"a", "two"}, {"b", "three"}}) {
    auto now = kube.get(kWidgets, ns, name);
    EXPECT_NE(now["metadata"]["resourceVersion"], before[name]) << name << " was written";
    EXPECT_EQ(now["spec"], widget(name)["spec"]) << name << ": nothing in it changed";
  }
  auto crd = kube.get(customResourceDefinitions(), "", "widgets.example.dev");
  EXPECT_EQ(crd["status"]["storedVersions"], json::array({"v1beta1"}));

  // Done once: a second start writes nothing.
  int calls = kube.calls();
  auto again = migrateStorage(kube, "widgets.example.dev", kWidgets);
  EXPECT_FALSE(again.needed);
  EXPECT_EQ(again.rewritten, 0u);
  EXPECT_EQ(kube.calls(), calls + 1) << "one GET of the CRD";
}

TEST(StorageMigration, CrdsOlderThanTheOperatorAreSaidAndNothingIsWritten) {
  testing::FakeKubeClient kube;
  kube.create(customResourceDefinitions(), "", crdStoring("v1alpha1", {"v1alpha1"}));
  kube.create(kWidgets, "a", widget("one"));
  try {
    migrateStorage(kube, "widgets.example.dev", kWidgets);
    FAIL() << "expected a refusal";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("upgrade the CRDs first"), std::string::npos) << e.what();
  }
  EXPECT_EQ(kube.get(customResourceDefinitions(), "", "widgets.example.dev")["status"]["storedVersions"], json::array({"v1alpha1"}));
}

}  // namespace
}  // namespace vto::controller
