#include <gtest/gtest.h>

#include "crd/labels.h"

namespace vto::crd {
namespace {

TEST(Labels, KeysAndValuesFollowGcpRules) {
  EXPECT_TRUE(isValidGcpLabelKey("team"));
  EXPECT_TRUE(isValidGcpLabelKey("a_b-9"));
  EXPECT_FALSE(isValidGcpLabelKey(""));
  EXPECT_FALSE(isValidGcpLabelKey("9lives"));
  EXPECT_FALSE(isValidGcpLabelKey("Team"));
  EXPECT_FALSE(isValidGcpLabelKey("app.kubernetes.io/name"));
  EXPECT_FALSE(isValidGcpLabelKey(std::string(64, 'a')));
  EXPECT_TRUE(isValidGcpLabelValue(""));
  EXPECT_TRUE(isValidGcpLabelValue("0b6c1f4e-1111"));
  EXPECT_FALSE(isValidGcpLabelValue("v1.2"));
  EXPECT_FALSE(isValidGcpLabelValue(std::string(64, 'a')));
}

TEST(Labels, SanitizeKeepsValidValuesAsTheyAre) {
  EXPECT_EQ(sanitizeLabelValue("team-vision"), "team-vision");
  EXPECT_EQ(sanitizeLabelValue("0b6c1f4e-1111-2222-3333-444455556666"), "0b6c1f4e-1111-2222-3333-444455556666");
}

TEST(Labels, SanitizeLowercasesAndReplacesOtherCharacters) {
  EXPECT_EQ(sanitizeLabelValue("ResNet.v2"), "resnet-v2");
  EXPECT_EQ(sanitizeLabelValue("a/b:c"), "a-b-c");
}

TEST(Labels, SanitizeNeverFailsOnAnyKubernetesName) {
  // The longest DNS subdomain name Kubernetes allows, and odd bytes.
  std::string longName(253, 'a');
  for (std::string name : {longName, std::string("x.y.z"), std::string("\xc3\xa9t\xc3\xa9"), std::string("")}) {
    EXPECT_TRUE(isValidGcpLabelValue(sanitizeLabelValue(name))) << name;
  }
}

TEST(Labels, SanitizeKeepsLongNamesDistinct) {
  std::string a = std::string(70, 'a') + "-one";
  std::string b = std::string(70, 'a') + "-two";
  EXPECT_EQ(sanitizeLabelValue(a).size(), 63u);
  EXPECT_NE(sanitizeLabelValue(a), sanitizeLabelValue(b));
  EXPECT_EQ(sanitizeLabelValue(a), sanitizeLabelValue(a));
}

}  // namespace
}  // namespace vto::crd
