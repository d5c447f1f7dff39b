#include "controller/object_cache.h"

#include <gtest/gtest.h>

namespace vto::controller {
namespace {

using nlohmann::json;

json object(const std::string& ns, const std::string& name, const std::string& rv,
            const std::string& app = "") {
  json o = {{"metadata", {{"namespace", ns}, {"name", name}, {"resourceVersion", rv}}}};
  if (!app.empty()) o["metadata"]["labels"]["app"] = app;
  return o;
}

TEST(ObjectCacheTest, ReplaceReportsNewChangedAndGoneObjectsOfItsNamespaceOnly) {
  ObjectCache cache;
  cache.upsert(object("a", "same", "1"));
  cache.upsert(object("a", "changed", "1"));
  cache.upsert(object("a", "gone", "1"));
  cache.upsert(object("b", "elsewhere", "1"));
  auto changes = cache.replace("a", json::array({object("a", "same", "1"), object("a", "changed", "2"),
                                                 object("a", "new", "3")}));
  std::set<std::string> names;
  for (const auto& c : changes) names.insert((*c)["metadata"]["name"]);
  EXPECT_EQ(names, (std::set<std::string>{"changed", "new", "gone"}));
  EXPECT_FALSE(cache.get({"a", "gone"}));
  EXPECT_TRUE(cache.get({"b", "elsewhere"})) << "another namespace's objects are left alone";
  EXPECT_EQ(cache.list("a").size(), 3u);
  EXPECT_EQ(cache.size(), 4u);
}

TEST(ObjectCacheTest, LabelIndexFollowsChanges) {
  ObjectCache cache("app");
  cache.upsert(object("a", "x", "1", "web"));
  cache.upsert(object("a", "y", "1", "web"));
  EXPECT_EQ(cache.byLabel("web").size(), 2u);
  cache.upsert(object("a", "y", "2", "db"));
  EXPECT_EQ(cache.byLabel("web").size(), 1u);
  EXPECT_EQ(cache.byLabel("db").size(), 1u);
  cache.erase({"a", "x"});
  EXPECT_TRUE(cache.byLabel("web").empty());
  cache.replace("", json::array());
  EXPECT_TRUE(cache.byLabel("db").empty());
}

}  // namespace
}  // namespace vto::controller

namespace vto::controller {
namespace {

TEST(ObjectCacheUidIndexTest, FindsAKeyByUidAndForgetsItWithTheObject) {
  ObjectCache cache;
  cache.upsert(nlohmann::json{{"metadata", {{"namespace", "a"}, {"name", "x"}, {"uid", "u1"}, {"resourceVersion", "1"}}}});
  cache.upsert(nlohmann::json{{"metadata", {{"namespace", "b"}, {"name", "y"}, {"uid", "u2"}, {"resourceVersion", "2"}}}});
  EXPECT_EQ(cache.keyByUid("u1"), (ObjectKey{"a", "x"}));
  EXPECT_EQ(cache.keyByUid("u2"), (ObjectKey{"b", "y"}));
  EXPECT_FALSE(cache.keyByUid("u3").has_value());
  // Re-created under the same name: a new uid, the old one is gone.
  cache.upsert(nlohmann::json{{"metadata", {{"namespace", "a"}, {"name", "x"}, {"uid", "u9"}, {"resourceVersion", "3"}}}});
  EXPECT_FALSE(cache.keyByUid("u1").has_value());
  EXPECT_EQ(cache.keyByUid("u9"), (ObjectKey{"a", "x"}));
  cache.erase({"a", "x"});
  EXPECT_FALSE(cache.keyByUid("u9").has_value());
  cache.replace("", nlohmann::json::array());
  EXPECT_FALSE(cache.keyByUid("u2").has_value());
}

}  // namespace
}  // namespace vto::controller
