// Cost and budgets end to end (docs/cost.md): kubectl -> API server -> vto run -> emulator, with a
// price file that makes a second of n1-standard-4 cost a dollar, so budgets run out in seconds (and an
// hour of n1-standard-8 a dollar, for jobs whose timeouts are long).
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "governance/cost.h"
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
constexpr const char* kSideBySide = "cost-side-by-side";  // rule team-d: $1,000, eight jobs of $120 at most
constexpr const char* kDay = "cost-day";                  // rule team-e: $30, jobs of $24 at most
// Rules agree-KIND: a plain, a multi-pool and a tuning run (a namespace and a rule each), their spend read back.
const std::vector<std::string> kAgree = {"plain", "multi-pool", "tuning"};
constexpr const char* kReview = "cost-review";  // rule review: $30, where the security review's cases are held

std::string writeConfig(OperatorStack& stack, int monthlyUsd) {
  std::string config = stack.dir() + "/cost-config.yaml";
  std::ofstream out(config + ".tmp");
  out << "tenancy:\n"
                                 << "  - namespaces: [" << kTeam << "]\n    projects: [test-project]\n"
                                 << "    locations: [us-central1]\n    name: team-a\n"
                                 << "    budget: {monthlyUsd: " << monthlyUsd << ", onExceeded: Hold}\n" << kImages
                                 << "  - namespaces: [" << kLimited << "]\n" << kImages
                                 << "  - namespaces: [" << kTogether << "]\n    projects: [test-project]\n"
                                 << "    locations: [us-central1]\n    name: team-c\n"
                                 << "    budget: {monthlyUsd: 25, onExceeded: Hold}\n" << kImages
                                 << "  - namespaces: [" << kSideBySide << "]\n    projects: [test-project]\n"
                                 << "    locations: [us-central1]\n    name: team-d\n"
                                 << "    budget: {monthlyUsd: 1000, onExceeded: Hold}\n" << kImages
                                 << "  - namespaces: [" << kDay << "]\n    projects: [test-project]\n"
                                 << "    locations: [us-central1]\n    name: team-e\n"
                                 << "    budget: {monthlyUsd: 30, onExceeded: Hold}\n" << kImages;
  for (const auto& kind : kAgree)
    out << "  - namespaces: [cost-agree-" << kind << "]\n    projects: [test-project]\n"
        << "    locations: [us-central1]\n    name: agree-" << kind << "\n"
        << "    budget: {monthlyUsd: 1000, onExceeded: Hold}\n" << kImages;
  out << "  - namespaces: [" << kReview << "]\n    projects: [test-project]\n"
      << "    locations: [us-central1]\n    name: review\n"
      << "    budget: {monthlyUsd: 30, onExceeded: Hold}\n" << kImages;
  out.close();
  std::rename((config + ".tmp").c_str(), config.c_str());
  return config;
}

std::vector<std::string> operatorFlags(OperatorStack& stack, int monthlyUsd) {
  std::string prices = stack.dir() + "/prices.yaml";
  std::ofstream(prices) << "date: \"2026-12-05\"\nsource: test\nlocations:\n  us-central1:\n"
                        << "    machines: {n1-standard-4: {standard: 3600}, n1-standard-8: {standard: 1},"
                        << " ct5lp-hightpu-4t: {standard: 1}}\n"
                        << "    accelerators: {TPU_V5_LITEPOD: {standard: 1}}\n";
  // Budgets are read every 2 s: the eight budget rules share one place, so a read is 2 lists (4 at a month's
  // first), which leaves the client-side quota of 600 Vertex requests a minute to the job polls.
  return {"--config", writeConfig(stack, monthlyUsd), "--price-catalog", prices, "--budget-poll-interval", "2",
          "--checkpoint-poll-interval", "1"};
}

// Jobs queue 1 s and train 4 steps of 1 s: about $4 to $6 each at $1/s.
OperatorStack& stack() {
  static OperatorStack shared({"--queue-time", "1s", "--steps", "4", "--step-time", "1s", "--cancel-time", "300ms"});
  static bool started = [] {
    shared.createNamespace(kTeam);
    shared.createNamespace(kLimited);
    shared.createNamespace(kTogether);
    shared.createNamespace(kSideBySide);
    shared.createNamespace(kDay);
    for (const auto& kind : kAgree) shared.createNamespace("cost-agree-" + kind);
    shared.createNamespace(kReview);
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
  auto usd = Usd::parse(cost.value("estimatedUsd", ""));
  return usd ? usd->toDouble() : -1;
}

// The Events of `reason` in namespace `ns`.
int eventCount(const std::string& ns, const std::string& reason) {
  auto reasons = stack().kubectlOk("-n " + ns + " get events -o jsonpath='{range .items[*]}{.reason}{\"\\n\"}{end}'");
  int n = 0;
  std::istringstream in(reasons);
  for (std::string line; std::getline(in, line);) n += line == reason;
  return n;
}

// Every job of the runs in `ns` named `prefix-0` .. `prefix-(count-1)`, oldest first.
std::vector<vertex::Job> jobsOfRuns(const std::string& ns, const std::string& prefix, int count) {
  std::vector<vertex::Job> jobs;
  for (int i = 0; i < count; ++i) {
    auto run = stack().getRun(ns, prefix + "-" + std::to_string(i));
    if (!run.is_object()) continue;
    for (auto& job : stack().jobsOfRun(run["metadata"]["uid"].get<std::string>())) jobs.push_back(std::move(job));
  }
  std::sort(jobs.begin(), jobs.end(), [](const auto& a, const auto& b) { return a.createTime < b.createTime; });
  return jobs;
}

// The most jobs that ran at once: each job from its creation to its end (or now).
size_t mostAtOnce(const std::vector<vertex::Job>& jobs) {
  size_t most = 0;
  for (const auto& job : jobs) {
    if (!job.createTime) continue;
    size_t atOnce = 0;
    for (const auto& other : jobs)
      atOnce += other.createTime && *other.createTime <= *job.createTime && (!other.endTime || *other.endTime > *job.createTime);
    most = std::max(most, atOnce);
  }
  return most;
}

// A 10 s timeout: the budget check reserves $10 for each job.
std::string teamRun(const std::string& name) { return simpleRunManifest(kTeam, name, "  scheduling: {timeout: 10s}\n"); }

// A run on n1-standard-8 ($1 an hour here); `resources` replaces its machine, `extraSpec` is added under spec.
std::string dollarAnHourRun(const std::string& ns, const std::string& name, const std::string& extraSpec,
                            const std::string& resources = "    machineType: n1-standard-8\n",
                            const std::string& framework = "pytorch") {
  return "apiVersion: vto.dev/v1beta1\nkind: TrainingRun\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
         "\nspec:\n  framework: " + framework + "\n  trainer:\n    container:\n"
         "      imageUri: us-central1-docker.pkg.dev/test-project/train/model:1\n"
         "  resources:\n" + resources + "  baseOutputDirectory: gs://" + std::string(kTestBucket) + "/" + ns + "/" + name +
         "\n" + extraSpec;
}

// `vto cost ARGS` as a user runs it: their kubeconfig, the emulator as Vertex (and as the metadata
// server for their token), the operator's price file.
CommandResult vtoCost(const std::string& args) {
  return runShell("env -u GOOGLE_APPLICATION_CREDENTIALS -u GCE_METADATA_HOST " + binDir() + "/vto cost " + args +
                  " --kubeconfig '" + stack().cluster().kubeconfig() + "' --vertex-endpoint " + stack().emulator().url() +
                  " --price-catalog '" + stack().dir() + "/prices.yaml'");
}

// The COST-USD of the row of `vto cost`'s table whose first column is `key` ("TOTAL" for the total),
// in cents; -1 when there is no such row.
long long centsOfRow(const std::string& table, const std::string& key) {
  std::istringstream in(table);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + " ", 0) != 0) continue;
    auto usd = Usd::parse(line.substr(line.find_last_of(' ') + 1));
    return usd ? std::llround(usd->toDouble() * 100) : -1;
  }
  return -1;
}

// vto_budget_spent_usd{rule} in cents; -1 before the first read.
long long budgetSpentCents(const std::string& metrics, const std::string& rule) {
  auto at = metrics.find("vto_budget_spent_usd{rule=\"" + rule + "\"} ");
  if (at == std::string::npos) return -1;
  return std::llround(std::strtod(metrics.c_str() + metrics.find("} ", at) + 2, nullptr) * 100);
}

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

  // vto cost reads what Vertex holds: the deleted runs still count, named from their jobs' labels.
  auto table = vtoCost("-A --by run");
  EXPECT_EQ(table.exitCode, 0) << table.output;
  EXPECT_GT(centsOfRow(table.output, std::string(kTeam) + "/third"), 0) << table.output;
  EXPECT_GT(centsOfRow(table.output, std::string(kTeam) + "/first (deleted)"), 100) << table.output;
  EXPECT_GT(centsOfRow(table.output, std::string(kTeam) + "/second (deleted)"), 100) << table.output;
}

// Four runs applied at once, checked by four workers at once against the same figures: the room
// ($25) holds one job at a time ($15 to its 15 s timeout: a second would make $30), so their jobs
// must run one after another, never two at once, until the month's spend leaves no room (~$5 each:
// two or three jobs; the rest wait).
TEST(CostTest, RunsAdmittedAtOnceNeverShareTheSameRoom) {
  std::string all;
  for (int i = 0; i < 4; ++i)
    all += (i ? "---\n" : "") + simpleRunManifest(kTogether, "together-" + std::to_string(i), "  scheduling: {timeout: 15s}\n");
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
    return held + done == 4 && done >= 2;
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

// A $1,000 budget and eight runs of 2-minute timeouts at $1 a second: each may cost $120 at most,
// $960 together, so all eight run side by side and none is held (a running job counted for an hour
// of its price, $3,600, held them one after another).
TEST(CostTest, EightShortRunsUnderAThousandDollarsRunSideBySide) {
  std::string all;
  for (int i = 0; i < 8; ++i)
    all += (i ? "---\n" : "") + simpleRunManifest(kSideBySide, "side-" + std::to_string(i), "  scheduling: {timeout: 2m}\n");
  apply(all);
  auto succeeded = [&] {
    for (int i = 0; i < 8; ++i)
      if (stack().phaseOf(kSideBySide, "side-" + std::to_string(i)) != "Succeeded") return false;
    return true;
  };
  ASSERT_TRUE(waitFor(succeeded, seconds(120))) << stack().kubectlOk(std::string("-n ") + kSideBySide + " get trun -o wide");
  EXPECT_EQ(eventCount(kSideBySide, "BudgetExceeded"), 0) << stack().kubectlOk(std::string("-n ") + kSideBySide + " get events");
  auto jobs = jobsOfRuns(kSideBySide, "side", 8);
  EXPECT_EQ(jobs.size(), 8u);
  std::cout << "[ figures  ] " << mostAtOnce(jobs) << " of 8 jobs ran at once under $1,000 (none held)\n";
}

// Six runs with 24 h timeouts at $1 an hour under $30: each may cost $24, so one runs at a time, the
// others held with the figures, whatever little the one running has spent so far.
TEST(CostTest, SixDayLongJobsUnderThirtyDollarsRunOneAtATime) {
  std::string all;
  for (int i = 0; i < 6; ++i) {
    all += (i ? "---\n" : "") + dollarAnHourRun(kDay, "day-" + std::to_string(i), "  scheduling: {timeout: 24h}\n");
  }
  apply(all);
  std::string heldMessage;
  auto twoDoneOthersHeld = [&] {
    int held = 0, done = 0;
    for (int i = 0; i < 6; ++i) {
      auto run = stack().getRun(kDay, "day-" + std::to_string(i));
      if (condition(run, "Ready") == "False/BudgetExceeded") {
        ++held;
        heldMessage = run["status"].value("message", "");
      }
      done += run.value("status", json::object()).value("phase", "") == "Succeeded";
    }
    return done >= 2 && held + done >= 5;  // one more may be between its admission and its end
  };
  ASSERT_TRUE(waitFor(twoDoneOthersHeld, seconds(120))) << stack().kubectlOk(std::string("-n ") + kDay + " get trun -o wide");
  auto jobs = jobsOfRuns(kDay, "day", 6);
  EXPECT_EQ(mostAtOnce(jobs), 1u) << jobs.size() << " jobs; two ran at once under a $30 budget";
  EXPECT_NE(heldMessage.find("this run may cost up to $24 (24 h at $1/h)"), std::string::npos) << heldMessage;
  for (const auto& job : jobs) {
    EXPECT_EQ(job.raw["jobSpec"]["scheduling"].value("timeout", ""), "86400s") << job.name;
  }
  std::cout << "[ figures  ] " << jobs.size() << " jobs one at a time under $30 at $24 each\n";
  stack().kubectlOk(std::string("-n ") + kDay + " delete trun --all --wait=false");
}

// The same jobs priced three times: status.cost from the run, the budget's reading of Vertex
// (vto_budget_spent_usd) and `vto cost` (the same reading, as a user): once the jobs have ended, the
// three agree to the cent for a plain, a multi-pool and a tuning run, each on its own (a rule and a
// namespace each). Then a run its TTL deleted still counts in `vto cost`.
TEST(CostTest, StatusCostTheBudgetsSpendAndVtoCostAgreeToTheCentForEachKind) {
  const std::map<std::string, std::string> specs = {
      // Deleted by its TTL once the figures below are read (they take a few seconds anyway).
      {"plain", "  scheduling: {timeout: 30s}\n  ttlSecondsAfterFinished: 10\n"},
      {"multi-pool", "  scheduling: {timeout: 30s}\n  distribution: {strategy: PyTorchDDP, workerCount: 3}\n"},
      {"tuning", "  scheduling: {timeout: 30s}\n  hyperparameterTuning:\n    maxTrialCount: 2\n    parallelTrialCount: 1\n"
                 "    metrics: [{metricId: accuracy, goal: Maximize}]\n"
                 "    parameters: [{parameterId: lr, double: {min: 0.001, max: 0.1}}]\n"}};
  for (const auto& kind : kAgree) apply(simpleRunManifest("cost-agree-" + kind, "run", specs.at(kind)));
  std::map<std::string, long long> status;
  for (const auto& kind : kAgree) {  // each read as it succeeds, the plain one before its TTL
    ASSERT_TRUE(stack().waitForPhase("cost-agree-" + kind, "run", "Succeeded", seconds(90))) << kind << stack().operatorLog();
    status[kind] = std::llround(estimate(stack().getRun("cost-agree-" + kind, "run")) * 100);
    EXPECT_GT(status[kind], 100) << kind << ": a few seconds at $1 a second";
  }
  // The ledger reads Vertex every 2 s: once a read lists the ended jobs, its figure is final.
  std::string metrics;
  waitFor([&] {
    metrics = runShell("curl -sf " + stack().metricsUrl()).output;
    for (const auto& kind : kAgree)
      if (budgetSpentCents(metrics, "agree-" + kind) != status[kind]) return false;
    return true;
  }, seconds(20));
  auto byTeam = vtoCost("-A --by team");
  ASSERT_EQ(byTeam.exitCode, 0) << byTeam.output;
  for (const auto& kind : kAgree) {
    auto ns = vtoCost("-n cost-agree-" + kind);
    ASSERT_EQ(ns.exitCode, 0) << ns.output;
    EXPECT_EQ(budgetSpentCents(metrics, "agree-" + kind), status[kind]) << kind << "\n" << metrics;
    EXPECT_EQ(centsOfRow(ns.output, "TOTAL"), status[kind]) << kind << "\n" << ns.output;
    EXPECT_EQ(centsOfRow(byTeam.output, "agree-" + kind), status[kind]) << kind << "\n" << byTeam.output;
    std::cout << "[ figures  ] " << kind << ": status.cost, vto_budget_spent_usd and vto cost $" << status[kind] / 100
              << "." << status[kind] % 100 / 10 << status[kind] % 10 << "\n";
  }

  // Deleted by its TTL: the run is gone, its job and its cost are not.
  ASSERT_TRUE(waitFor([&] { return !stack().getRun("cost-agree-plain", "run").is_object(); }, seconds(30)))
      << "ttlSecondsAfterFinished: 10";
  auto afterDelete = vtoCost("-n cost-agree-plain --by run --project test-project --location us-central1");
  ASSERT_EQ(afterDelete.exitCode, 0) << afterDelete.output;
  EXPECT_EQ(centsOfRow(afterDelete.output, "cost-agree-plain/run (deleted)"), status["plain"]) << afterDelete.output;
  EXPECT_EQ(centsOfRow(afterDelete.output, "TOTAL"), status["plain"]) << afterDelete.output;
  auto nowhere = vtoCost("-n cost-agree-plain");
  EXPECT_EQ(nowhere.exitCode, 2) << "no run names a place to read: " << nowhere.output;
  EXPECT_NE(nowhere.output.find("--project P --location L"), std::string::npos) << nowhere.output;
  // Vertex not answering: an error that says what to do instead, never a partial sum.
  // (The token still comes from the emulator, as the metadata server.)
  auto metadataHost = stack().emulator().url().substr(std::string("http://").size());
  auto down = runShell("env -u GOOGLE_APPLICATION_CREDENTIALS GCE_METADATA_HOST=" + metadataHost + " " + binDir() +
                       "/vto cost -A --kubeconfig '" + stack().cluster().kubeconfig() +
                       "' --vertex-endpoint http://127.0.0.1:1");
  EXPECT_EQ(down.exitCode, 1) << down.output;
  EXPECT_NE(down.output.find("kubectl get trun -A -o wide"), std::string::npos) << down.output;
  EXPECT_EQ(down.output.find("TOTAL"), std::string::npos) << down.output;
}

// The security review's admission cases, seen as Hold decisions on the real system under a $30
// budget at $1 an hour (no job runs: each is held before its job is created).
TEST(CostTest, TheReviewsCasesAreHeldWithTheirWholeCost) {
  const std::map<std::string, std::pair<std::string, std::string>> cases = {  // name -> manifest, message
      {"no-timeout", {dollarAnHourRun(kReview, "no-timeout", ""), "this run may cost up to $168 (7 days at $1/h)"}},
      {"trials",
       {dollarAnHourRun(kReview, "trials",
                        "  scheduling: {timeout: 1h}\n  hyperparameterTuning:\n    maxTrialCount: 100\n"
                        "    parallelTrialCount: 1\n    metrics: [{metricId: accuracy, goal: Maximize}]\n"
                        "    parameters: [{parameterId: lr, double: {min: 0.001, max: 0.1}}]\n"),
        "this run may cost up to $100 (100 trials of up to 1 h at $1/h)"}},
      // 4 hosts x $1 + 16 chips x $1: one host priced alone ($5/h, $10) would fit.
      {"tpu-slice",
       {dollarAnHourRun(kReview, "tpu-slice", "  scheduling: {timeout: 2h}\n  distribution: {strategy: TPU}\n",
                        "    machineType: ct5lp-hightpu-4t\n    acceleratorType: TPU_V5_LITEPOD\n"
                        "    acceleratorCount: 4\n    tpuTopology: 4x4\n", "jax"),
        "this run may cost up to $40 (2 h at $20/h)"}},
  };
  std::string all;
  for (const auto& [name, c] : cases) all += (all.empty() ? "" : "---\n") + c.first;
  apply(all);
  for (const auto& [name, c] : cases) {
    std::string message;
    EXPECT_TRUE(waitFor([&] {
      auto run = stack().getRun(kReview, name);
      message = run.is_object() ? run.value("status", json::object()).value("message", "") : "";
      return condition(run, "Ready") == "False/BudgetExceeded";
    }, seconds(30))) << name << ": " << stack().getRun(kReview, name).dump();
    EXPECT_NE(message.find(c.second), std::string::npos) << name << ": " << message;
    EXPECT_EQ(stack().phaseOf(kReview, name), "Queued") << name;
    auto uid = stack().getRun(kReview, name)["metadata"]["uid"].get<std::string>();
    EXPECT_TRUE(stack().jobsOfRun(uid).empty() && stack().jobsOfRun(uid, vertex::JobKind::HyperparameterTuning).empty())
        << name << ": no job while held";
  }

  // A price of 1e17 an hour is refused when the file is read: by `vto prices` and at the operator's start.
  std::string absurd = stack().dir() + "/absurd-prices.yaml";
  std::ofstream(absurd) << "date: \"2026-12-05\"\nsource: test\nlocations:\n  us-central1:\n"
                        << "    machines: {n1-standard-8: {standard: 1e17}}\n";
  auto prices = runShell(binDir() + "/vto prices --price-catalog '" + absurd + "'");
  EXPECT_EQ(prices.exitCode, 2) << prices.output;
  EXPECT_NE(prices.output.find("is more than $10,000 an hour"), std::string::npos) << prices.output;
  auto start = runShell(binDir() + "/vto run --price-catalog '" + absurd + "' --kubeconfig '" +
                        stack().cluster().kubeconfig() + "' --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0");
  EXPECT_EQ(start.exitCode, 2) << "the operator does not start: " << start.output;
  EXPECT_NE(start.output.find("is more than $10,000 an hour"), std::string::npos) << start.output;
  stack().kubectlOk(std::string("-n ") + kReview + " delete trun --all --wait=false");
}

}  // namespace
}  // namespace vto::testing
