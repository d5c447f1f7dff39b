// Parsing API answers without metadata.managedFields gives what json::parse gives, less those.
#include "controller/kube_json.h"

#include <gtest/gtest.h>

namespace vto::controller {
namespace {

using nlohmann::json;

const char* kObject = R"({"apiVersion": "vto.dev/v1beta1", "kind": "TrainingRun",
  "metadata": {"name": "r", "namespace": "ns", "resourceVersion": "7", "finalizers": ["vto.dev/job"],
               "managedFields": [{"manager": "vto", "operation": "Update", "subresource": "status",
                                  "fieldsV1": {"f:status": {"f:attempts": {}, ".": {}}}}],
               "labels": {"team": "ml"}},
  "spec": {"managedFields": ["kept: not metadata's"], "replicas": 2, "ratio": 0.5, "big": 18446744073709551615,
           "negative": -3, "flag": true, "none": null, "empty": {}, "list": [[1, {"a": []}], "x"]},
  "status": {"phase": "Running"}})";

json withoutMetadataManagedFields(json value) {
  if (value.is_object()) {
    if (auto metadata = value.find("metadata"); metadata != value.end() && metadata->is_object()) {
      metadata->erase("managedFields");
    }
    for (auto& [key, member] : value.items()) member = withoutMetadataManagedFields(member);
  } else if (value.is_array()) {
    for (auto& item : value) item = withoutMetadataManagedFields(item);
  }
  return value;
}

TEST(ParseWithoutManagedFields, IsJsonParseLessMetadataManagedFieldsInObjectsListsAndWatchEvents) {
  auto object = json::parse(kObject);
  auto list = json{{"kind", "TrainingRunList"}, {"metadata", {{"resourceVersion", "9"}}}, {"items", {object, object}}};
  auto event = json{{"type", "MODIFIED"}, {"object", object}};
  for (const auto& whole : {object, list, event}) {
    auto parsed = parseWithoutManagedFields(whole.dump());
    EXPECT_EQ(parsed, withoutMetadataManagedFields(whole)) << whole.dump();
    EXPECT_EQ(parsed.dump().find("\"manager\""), std::string::npos);
  }
  auto parsed = parseWithoutManagedFields(kObject);
  EXPECT_FALSE(parsed["metadata"].contains("managedFields"));
  EXPECT_EQ(parsed["spec"]["managedFields"][0], "kept: not metadata's");
  EXPECT_EQ(parsed["metadata"]["labels"]["team"], "ml") << "what follows the skipped member is read";
  EXPECT_EQ(parsed["spec"]["big"].get<std::uint64_t>(), 18446744073709551615ull);
}

TEST(ParseWithoutManagedFields, MalformedTextIsDiscardedAndScalarsParse) {
  EXPECT_TRUE(parseWithoutManagedFields(R"({"metadata": {"managedFields": [1, 2}})").is_discarded());
  EXPECT_TRUE(parseWithoutManagedFields("").is_discarded());
  EXPECT_TRUE(parseWithoutManagedFields("{} trailing").is_discarded());
  EXPECT_EQ(parseWithoutManagedFields("\"text\""), json("text"));
  EXPECT_EQ(parseWithoutManagedFields(R"({"a": 1, "a": 2})"), json::parse(R"({"a": 1, "a": 2})")) << "the last wins";
}

TEST(ResourceVersionOf, ReadsOnlyTheRootsMetadata) {
  EXPECT_EQ(resourceVersionOf(kObject), "7");
  // The search stops at the version: what follows it is not read, malformed or not.
  EXPECT_EQ(resourceVersionOf(R"({"metadata": {"resourceVersion": "8"}, "spec": {)"), "8");
  // Not the version of a label, an annotation, a nested object, the spec or a list's item.
  EXPECT_EQ(resourceVersionOf(R"({"spec": {"resourceVersion": "1"}, "items": [{"metadata": {"resourceVersion": "2"}}],
      "metadata": {"annotations": {"resourceVersion": "3"}, "owner": {"metadata": {"resourceVersion": "4"}},
                   "resourceVersion": "5"}})"),
            "5");
  EXPECT_EQ(resourceVersionOf(R"([{"metadata": {"resourceVersion": "1"}}])"), "");
  EXPECT_EQ(resourceVersionOf(R"({"metadata": {"resourceVersion": 6}})"), "");
  EXPECT_EQ(resourceVersionOf(R"({"metadata": {"name": "r"}})"), "");
  EXPECT_EQ(resourceVersionOf("not json"), "");
  // Sorted keys, as the API server writes a custom resource: managedFields first, with strings that
  // hold quotes, braces and the word itself.
  EXPECT_EQ(resourceVersionOf(R"({"apiVersion":"vto.dev/v1beta1","kind":"TrainingRun","metadata":{"annotations":)"
                              R"({"note":"a \"resourceVersion\":\"9\" {["},"managedFields":[{"fieldsV1":{"f:status":{}},)"
                              R"("manager":"vto"}],"name":"r","resourceVersion":"42","uid":"u"},"spec":{}})"),
            "42");
  // A key written with escapes is left to the full parse, which reads it as what it spells.
  EXPECT_EQ(resourceVersionOf(R"({"metadata":{"resource\u0056ersion":"10"}})"), "10");
  EXPECT_EQ(resourceVersionOf(R"({"metadata":{"resourceVersion":null,"name":"x"}})"), "");
  EXPECT_EQ(resourceVersionOf(R"({"metadata":{"resourceVersion":{"a":"1"},"name":"x"}})"), "");
}

}  // namespace
}  // namespace vto::controller
