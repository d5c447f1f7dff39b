// NamespaceLabels: a namespace is read only when a rule selects by label, and at most once per
// kFreshFor; a relabelled namespace is seen once that has passed.
#include "reconcilers/tenancy/namespace_labels.h"

#include <gtest/gtest.h>

#include "tests/fakes/clock_fake.h"
#include "tests/fakes/kube_client_fake.h"

namespace vto::reconcilers {
namespace {

using nlohmann::json;

const controller::Resource kNamespaces{"", "v1", "namespaces", false};

governance::TenancyRules rulesFrom(const std::string& text) { return governance::parseTenancyRules(json::parse(text)); }

TEST(NamespaceLabels, ReadsANamespaceAtMostOncePerFreshnessWindow) {
  testing::FakeKubeClient kube;
  testing::FakeClock clock;
  kube.create(kNamespaces, "", {{"metadata", {{"name", "lab"}, {"labels", {{"tier", "ml"}}}}}});
  NamespaceLabels namespaces(kube, clock, rulesFrom(R"([{"namespaceSelector": {"matchLabels": {"tier": "ml"}}}])"));
  int before = kube.calls();
  auto info = namespaces.get("lab");
  ASSERT_TRUE(info.labels);
  EXPECT_EQ(info.labels->at("tier"), "ml");
  EXPECT_EQ(namespaces.get("lab").labels, info.labels);
  EXPECT_EQ(kube.calls(), before + 1) << "the second pass used the first read";

  kube.patch(kNamespaces, "", "lab", controller::PatchType::Merge, {{"metadata", {{"labels", {{"tier", "web"}}}}}}, "",
             false, "");
  clock.advance(NamespaceLabels::kFreshFor - std::chrono::seconds(1));
  EXPECT_EQ(namespaces.get("lab").labels->at("tier"), "ml") << "still fresh";
  clock.advance(std::chrono::seconds(1));
  EXPECT_EQ(namespaces.get("lab").labels->at("tier"), "web") << "read again once the window has passed";
  EXPECT_THROW(namespaces.get("missing"), controller::ApiError);
}

TEST(NamespaceLabels, NoRuleSelectingByLabelMeansNoRead) {
  testing::FakeKubeClient kube;
  testing::FakeClock clock;
  NamespaceLabels namespaces(kube, clock, rulesFrom(R"([{"namespaces": ["lab"], "maxAccelerators": 4}])"));
  int before = kube.calls();
  auto info = namespaces.get("lab");
  EXPECT_EQ(info.name, "lab");
  EXPECT_FALSE(info.labels);
  EXPECT_EQ(kube.calls(), before) << "no RBAC on namespaces is needed";
}

}  // namespace
}  // namespace vto::reconcilers
