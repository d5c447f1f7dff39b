// The shipped Grafana dashboards (helm/vto/dashboards/*.json), checked for what breaks them when
// Grafana loads them from ConfigMaps (docs: design/OBSERVABILITY.md): a stable uid, no `__inputs`,
// a `datasource` variable that every panel and query uses, namespace (and policy) variables, unique
// panel ids, a grid without overlaps, a unit and a description on every panel, and no variable
// used that is not defined. Whether each query runs is the observability integration test's job.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

namespace vto::metrics {
namespace {

using nlohmann::json;

// CTest sets VTO_SOURCE_DIR (tests/CMakeLists.txt).
std::filesystem::path dashboardsDir() {
  const char* source = std::getenv("VTO_SOURCE_DIR");
  return std::filesystem::path(source != nullptr ? source : ".") / "helm/vto/dashboards";
}

std::map<std::string, json> loadDashboards() {
  std::map<std::string, json> boards;
  for (const auto& entry : std::filesystem::directory_iterator(dashboardsDir())) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    boards[entry.path().filename().string()] = json::parse(in);
  }
  return boards;
}

// Every panel, rows' nested panels included.
std::vector<json> panelsOf(const json& board) {
  std::vector<json> out;
  for (const auto& panel : board.value("panels", json::array())) {
    out.push_back(panel);
    for (const auto& inner : panel.value("panels", json::array())) out.push_back(inner);
  }
  return out;
}

std::set<std::string> variablesOf(const json& board) {
  std::set<std::string> names;
  for (const auto& variable : board["templating"]["list"]) names.insert(variable["name"].get<std::string>());
  return names;
}

bool usesDatasourceVariable(const json& datasource) {
  return datasource.is_object() && datasource.value("uid", "") == "${datasource}";
}

TEST(DashboardsTest, ThreeDashboardsShipWithStableUniqueUids) {
  auto boards = loadDashboards();
  ASSERT_EQ(boards.size(), 3u);
  std::map<std::string, std::string> titles;
  for (const auto& [file, board] : boards) {
    std::string uid = board.value("uid", "");
    EXPECT_FALSE(uid.empty()) << file;
    EXPECT_LE(uid.size(), 40u) << file << ": Grafana refuses uids longer than 40 characters";
    EXPECT_TRUE(titles.emplace(uid, board.value("title", "")).second) << file << " repeats uid " << uid;
    EXPECT_GE(board.value("schemaVersion", 0), 36) << file;
    EXPECT_FALSE(board.contains("id") && !board["id"].is_null()) << file << ": an id ties the file to one Grafana";
  }
  EXPECT_EQ(titles["vto-operator"], "vto / Operator");
  EXPECT_EQ(titles["vto-trainingruns"], "vto / Training runs");
  EXPECT_EQ(titles["vto-retraining"], "vto / Retraining");
}

TEST(DashboardsTest, NoInputsOnlyTheDatasourceVariable) {
  for (const auto& [file, board] : loadDashboards()) {
    EXPECT_FALSE(board.contains("__inputs")) << file << ": __inputs break provisioning from ConfigMaps";
    EXPECT_FALSE(board.contains("__requires")) << file;
    EXPECT_EQ(board.dump().find("${DS_"), std::string::npos) << file << " refers to an import-time input";
    bool found = false;
    for (const auto& variable : board["templating"]["list"]) {
      if (variable["name"] == "datasource") {
        found = true;
        EXPECT_EQ(variable["type"], "datasource") << file;
        EXPECT_EQ(variable["query"], "prometheus") << file;
      } else if (variable["type"] == "query") {
        EXPECT_TRUE(usesDatasourceVariable(variable["datasource"])) << file << " variable " << variable["name"];
      }
    }
    EXPECT_TRUE(found) << file << " has no datasource variable";
  }
}

TEST(DashboardsTest, EveryPanelAndQueryUsesTheDatasourceVariable) {
  for (const auto& [file, board] : loadDashboards()) {
    for (const auto& panel : panelsOf(board)) {
      if (panel["type"] == "row") continue;
      std::string title = panel.value("title", "");
      EXPECT_TRUE(usesDatasourceVariable(panel["datasource"])) << file << ": " << title;
      ASSERT_FALSE(panel.value("targets", json::array()).empty()) << file << ": " << title;
      for (const auto& target : panel["targets"]) {
        EXPECT_TRUE(usesDatasourceVariable(target["datasource"])) << file << ": " << title;
        EXPECT_FALSE(target.value("expr", "").empty()) << file << ": " << title;
      }
    }
  }
}

TEST(DashboardsTest, NamespaceAndPolicyVariablesExistAndEveryUsedVariableIsDefined) {
  const std::set<std::string> builtins = {"__all", "__rate_interval", "__range", "__interval", "__range_s", "__interval_ms"};
  const std::regex reference(R"(\$\{?([A-Za-z_][A-Za-z0-9_]*))");
  for (const auto& [file, board] : loadDashboards()) {
    auto defined = variablesOf(board);
    EXPECT_TRUE(defined.count("namespace")) << file;
    if (file == "vto-retraining.json") {
      EXPECT_TRUE(defined.count("policy")) << file;
    }
    std::string text = board.dump();
    for (std::sregex_iterator it(text.begin(), text.end(), reference), end; it != end; ++it) {
      std::string name = (*it)[1];
      EXPECT_TRUE(defined.count(name) || builtins.count(name)) << file << " uses undefined $" << name;
    }
  }
}

TEST(DashboardsTest, PanelsHaveUniqueIdsAUnitADescriptionAndDoNotOverlap) {
  for (const auto& [file, board] : loadDashboards()) {
    std::set<int> ids;
    std::vector<json> placed;
    for (const auto& panel : panelsOf(board)) {
      std::string title = panel.value("title", "");
      EXPECT_TRUE(ids.insert(panel["id"].get<int>()).second) << file << ": id " << panel["id"] << " repeats";
      if (panel["type"] == "row") continue;
      EXPECT_FALSE(panel.value("description", "").empty()) << file << ": " << title;
      EXPECT_FALSE(panel["fieldConfig"]["defaults"].value("unit", "").empty()) << file << ": " << title << " has no unit";
      const auto& grid = panel["gridPos"];
      int x = grid["x"], y = grid["y"], w = grid["w"], h = grid["h"];
      EXPECT_GT(w, 0) << title;
      EXPECT_GT(h, 0) << title;
      EXPECT_GE(x, 0) << title;
      EXPECT_LE(x + w, 24) << file << ": " << title << " is wider than the 24-column grid";
      for (const auto& other : placed) {
        const auto& g = other["gridPos"];
        int ox = g["x"], oy = g["y"], ow = g["w"], oh = g["h"];
        bool overlap = x < ox + ow && ox < x + w && y < oy + oh && oy < y + h;
        EXPECT_FALSE(overlap) << file << ": " << title << " overlaps " << other["title"];
      }
      placed.push_back(panel);
    }
  }
}

}  // namespace
}  // namespace vto::metrics
