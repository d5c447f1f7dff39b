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
  for (const auto& c : changes) names.insert(c["metadata"]["name"]);
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
