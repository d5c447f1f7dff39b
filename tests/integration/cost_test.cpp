// Cost and budgets end to end (docs/cost.md): kubectl -> API server -> vto run -> emulator, with a
// price file that makes a second of n1-standard-4 cost a dollar, so budgets run out in seconds.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <fstream>

#include "crd/cost.h"
#include "tests/support/operator_stack.h"
#include "tests/support/subprocess.h"
#include "tests/support/wait.h"

namespace vto::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr const char* kTeam = "cost-team";     // governed by rule team-a and its budget
constexpr const char* kLimited = "cost-limit";  // no budget; maxCostUsd
constexpr const char* kImages = "    imagePrefixes: [us-central1-docker.pkg.dev/test-project/]\n";
constexpr const char* kTogether = "cost-together";  // rule team-c: room for one job at a time

std::string writeConfig(OperatorStack& stack, int monthlyUsd) {
  std::string config = stack.dir() + "/cost-config.yaml";
  std::ofstream(config + ".tmp") << "tenancy:\n"
                                 << "  - namespaces: [" << kTeam << "]\n    projects: [test-project]\n"
                                 << "    locations: [us-central1]\n    name: team-a\n"
                                 << "    budget: {monthlyUsd: " << monthlyUsd << ", onExceeded: Hold}\n" << kImages
                                 << "  - namespaces: [" << kLimited << "]\n" << kImages
                                 << "  - namespaces: [" << kTogether << "]\n    projects: [test-project]\n"
                                 << "    locations: [us-central1]\n    name: team-c\n"
                                 << "    budget: {monthlyUsd: 25, onExceeded: Hold}\n" << kImages;
  std::rename((config + ".tmp").c_str(), config.c_str());
  return config;
}

std::vector<std::string> operatorFlags(OperatorStack& stack, int monthlyUsd) {
  std::string prices = stack.dir() + "/prices.yaml";
  std::ofstream(prices) << "date: \"2026-12-05\"\nsource: test\nlocations:\n  us-central1:\n"
                        << "    machines: {n1-standard-4: {standard: 3600}}\n";
  return {"--config", writeConfig(stack, monthlyUsd), "--price-catalog", prices, "--budget-poll-interval", "1",
          "--checkpoint-poll-interval", "1"};
}

// Jobs queue 1 s and train 4 steps of 1 s: about $4 to $6 each at $1/s.
OperatorStack& stack() {
  static OperatorStack shared({"--queue-time", "1s", "--steps", "4", "--step-time", "1s", "--cancel-time", "300ms"});
  static bool started = [] {
    shared.createNamespace(kTeam);
    shared.createNamespace(kLimited);
    shared.createNamespace(kTogether);
    shared.startOperator(operatorFlags(shared, 30));
    return true;
  }();
  (void)started;
  return shared;
}

void apply(const std::string& yaml) {
  std::string path = stack().dir() + "/manifest-" + std::to_string(std::hash<std::string>{}(yaml)) + ".yaml";
  std::ofstream(path) << yaml;
  stack().kubectlOk("apply -f '" + path + "'");
}

std::string condition(const json& run, const std::string& type) {
  for (const auto& c : run.value("status", json::object()).value("conditions", json::array()))
    if (c.value("type", "") == type) return c.value("status", "") + "/" + c.value("reason", "");
  return "";
}

double estimate(const json& run) {
  auto cost = run.value("status", json::object()).value("cost", json::object());
  return crd::parseUsd(cost.value("estimatedUsd", "")).value_or(-1);
}

// A 10 s timeout: the budget check reserves $10 for each job.
std::string teamRun(const std::string& name) { return simpleRunManifest(kTeam, name, "  scheduling: {timeout: 10s}\n"); }

TEST(CostTest, ATeamRunsUntilItsBudgetIsSpentAndNothingButARaisedBudgetFreesIt) {
  // $30: the first job fits (0 + 10), the second too (~5 + 10); the third runs 3 machines ($30 for its
  // 10 s), which only fits a budget nothing was spent from.
  for (const char* name : {"first", "second"}) {
    apply(teamRun(name));
    ASSERT_TRUE(stack().waitForPhase(kTeam, name, "Succeeded", seconds(90))) << stack().operatorLog();
    auto run = stack().getRun(kTeam, name);
    EXPECT_GT(estimate(run), 1) << run["status"].dump();
    EXPECT_EQ(run["status"]["cost"].value("priceCatalog", "").rfind("custom:", 0), 0u) << run["status"].dump();
    EXPECT_EQ(condition(run, "CostEstimated"), "True/Priced");
  }
  apply(simpleRunManifest(kTeam, "third", "  scheduling: {timeout: 10s}\n  distribution: {strategy: PyTorchDDP, workerCount: 3}\n"));
  ASSERT_TRUE(waitFor([&] { return condition(stack().getRun(kTeam, "third"), "Ready") == "False/BudgetExceeded"; }, seconds(60)))
      << stack().getRun(kTeam, "third").dump() << stack().operatorLog();
  auto held = stack().getRun(kTeam, "third");
  EXPECT_EQ(held["status"].value("phase", ""), "Queued");
  EXPECT_NE(held["status"].value("message", "").find("team-a spent $"), std::string::npos) << held["status"].dump();
  EXPECT_NE(held["status"].value("message", "").find(" of $30 in "), std::string::npos) << held["status"].dump();

  // Deleting the finished runs frees nothing: the spend is read from the jobs Vertex keeps.
  stack().kubectlOk(std::string("-n ") + kTeam + " delete trainingrun first second");
  EXPECT_FALSE(waitFor([&] { return stack().phaseOf(kTeam, "third") != "Queued"; }, seconds(4)));
  // Nor does a SIGKILL of the operator: the new process reads the same spend.
  stack().stopOperator(SIGKILL);
  stack().startOperator(operatorFlags(stack(), 30));
  EXPECT_FALSE(waitFor([&] { return stack().phaseOf(kTeam, "third") != "Queued"; }, seconds(5)));
  auto metrics = runShell("curl -sf " + stack().metricsUrl()).output;
  EXPECT_NE(metrics.find("vto_budget_spent_usd{rule=\"team-a\"}"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("vto_budget_limit_usd{rule=\"team-a\"} 30"), std::string::npos) << metrics;

  // A raised budget starts the waiting run by itself.
  stack().stopOperator(SIGTERM);
  stack().startOperator(operatorFlags(stack(), 1000));
  ASSERT_TRUE(stack().waitForPhase(kTeam, "third", "Succeeded", seconds(90))) << stack().operatorLog();

  // vto cost reads the runs left in the cluster.
  auto table = runShell(binDir() + "/vto cost -A --by run --kubeconfig '" + stack().cluster().kubeconfig() + "'");
  EXPECT_EQ(table.exitCode, 0) << table.output;
  EXPECT_NE(table.output.find(std::string(kTeam) + "/third"), std::string::npos) << table.output;
}

// Four runs applied at once, checked by four workers at once against the same figures: the room
// ($25) holds one job at a time ($10 for its 10 s, and a running job's next hour at $1/s fills the
// rest), so their jobs must run one after another, never two at once, until the month's spend leaves
// no room (~$5 each: three jobs; the fourth waits).
TEST(CostTest, RunsAdmittedAtOnceNeverShareTheSameRoom) {
  std::string all;
  for (int i = 0; i < 4; ++i)
    all += (i ? "---\n" : "") + simpleRunManifest(kTogether, "together-" + std::to_string(i), "  scheduling: {timeout: 10s}\n");
  apply(all);
  std::vector<vertex::Job> jobs;
  auto settled = [&] {
    jobs.clear();
    int held = 0, done = 0;
    for (int i = 0; i < 4; ++i) {
      auto run = stack().getRun(kTogether, "together-" + std::to_string(i));
      if (!run.is_object()) return false;
      for (auto& job : stack().jobsOfRun(run["metadata"]["uid"].get<std::string>())) jobs.push_back(std::move(job));
      held += condition(run, "Ready") == "False/BudgetExceeded";
      done += run.value("status", json::object()).value("phase", "") == "Succeeded";
    }
    return held + done == 4 && done >= 3;
  };
  ASSERT_TRUE(waitFor(settled, seconds(120)))
      << jobs.size() << " jobs\n" << stack().kubectlOk(std::string("-n ") + kTogether + " get trun -o yaml");
  std::sort(jobs.begin(), jobs.end(), [](const auto& a, const auto& b) { return a.createTime < b.createTime; });
  for (size_t i = 1; i < jobs.size(); ++i) {
    ASSERT_TRUE(jobs[i - 1].endTime && jobs[i].createTime);
    EXPECT_GE(*jobs[i].createTime, *jobs[i - 1].endTime)
        << jobs[i].name << " was created while " << jobs[i - 1].name << " still ran: two runs spent the same room";
  }
  std::cout << "[ figures  ] " << jobs.size() << " jobs one after another under a $25 budget\n";
}

TEST(CostTest, MaxCostUsdCancelsARunningJob) {
  apply(simpleRunManifest(kLimited, "capped", "  maxCostUsd: \"2\"\n  scheduling: {timeout: 60s}\n"));
  ASSERT_TRUE(waitFor([&] { return condition(stack().getRun(kLimited, "capped"), "Failed") == "True/CostLimitReached"; },
                      seconds(90)))
      << stack().getRun(kLimited, "capped").dump() << stack().operatorLog();
  auto run = stack().getRun(kLimited, "capped");
  EXPECT_EQ(run["status"].value("phase", ""), "Failed");
  EXPECT_GE(estimate(run), 2);
  EXPECT_LT(estimate(run), 10) << "cancelled near the limit, not at the end of the job";
  auto metrics = runShell("curl -sf " + stack().metricsUrl()).output;
  EXPECT_NE(metrics.find("vto_trainingrun_cost_usd_total{"), std::string::npos) << metrics;
}

}  // namespace
}  // namespace vto::testing
