// YAML input is hostile: aliases must not expand without bound or form cycles, and a key given
// twice is refused (the API server refuses duplicate fields), each with an error that says what to do.
#include <gtest/gtest.h>

#include "crd/yaml_json.h"
#include "tests/unit/crd/crd_test_support.h"

namespace vto::crd {
namespace {

const auto& errorOf = testing::yamlErrorOf;

std::string corpusFile(const std::string& name) {
  return testing::readFile(testing::repoRoot() / "tests/fuzz/corpus" / name);
}

// Found by review: 555 bytes used 8 GB through yaml-cpp's node tree.
TEST(YamlAliases, BillionLaughsIsRefusedWithinTheBudget) {
  auto error = errorOf(corpusFile("yaml-alias-billion-laughs.yaml"));
  EXPECT_NE(error.find("YAML aliases are limited to 10000 expansions"), std::string::npos) << error;
  EXPECT_NE(error.find("write the value out"), std::string::npos) << error;
}

// Found by review: an 84-byte self-referencing alias crashed with SIGSEGV (a cyclic node tree).
TEST(YamlAliases, SelfReferenceIsRefusedAsACycle) {
  auto error = errorOf(corpusFile("yaml-alias-self-reference.yaml"));
  EXPECT_EQ(error, "line 4: a YAML alias refers to the node that contains it (a cycle); write the value out");
  EXPECT_NE(errorOf("a: &x [1, [2, *x]]\n").find("cycle"), std::string::npos);
}

TEST(YamlAliases, ALongAnchoredStringCannotBeCopiedWithoutBound) {
  std::string text = "a: &s " + std::string(64 * 1024, 'x') + "\nb: [";
  for (int i = 0; i < 40; ++i) text += "*s, ";
  text += "*s]\n";
  EXPECT_NE(errorOf(text).find("KiB of copied text"), std::string::npos);
}

// Without a single alias, nested anchors would each keep a copy of one large value.
TEST(YamlAliases, NestedAnchorsCannotMultiplyALargeValue) {
  std::string text = "a: ";
  for (int i = 0; i < 100; ++i) text += "&a" + std::to_string(i) + " [";
  text += std::string(512 * 1024, 'x');
  for (int i = 0; i < 100; ++i) text += "]";
  text += "\n";
  EXPECT_NE(errorOf(text).find("YAML anchors may hold at most 4 MiB of text in all"), std::string::npos);
}

TEST(YamlAliases, SmallAliasesStillWork) {
  auto doc = parseYamlDocuments("env: &env {A: '1'}\none: *env\ntwo: [*env, *env]\n").at(0);
  EXPECT_EQ(doc["one"]["A"], "1");
  EXPECT_EQ(doc["two"][1]["A"], "1");
}

TEST(YamlKeys, DuplicateKeyIsRefusedWithItsLine) {
  EXPECT_EQ(errorOf("a: 1\nb:\n  c: 1\n  c: 2\n"),
            "line 4: duplicate key \"c\" (the API server refuses it too); keep one of them");
  EXPECT_NE(errorOf("{\"a\": 1, \"a\": 2}").find("duplicate key \"a\""), std::string::npos);
}

TEST(YamlKeys, KeysStayTextAndValuesGetCoreTypes) {
  auto doc = parseYamlDocuments("1: true\n'x': 2\n").at(0);
  EXPECT_EQ(doc["1"], true);
  EXPECT_EQ(doc["x"], 2);
  EXPECT_NE(errorOf("[a]: 1\n").find("map keys must be plain strings"), std::string::npos);
}

}  // namespace
}  // namespace vto::crd
