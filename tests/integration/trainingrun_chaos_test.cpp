// Exactly-once under failure: the operator is killed with SIGKILL mid-submission and restarted, and
// Vertex answers 503/429 at random. Every run must finish with exactly one job per attempt.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <iostream>
#include <map>
#include <random>

#include "tests/support/operator_stack.h"
#include "tests/support/wait.h"

namespace vto::testing {
namespace {

using std::chrono::seconds;

void applyRuns(OperatorStack& stack, const std::string& ns, int count) {
  stack.createNamespace(ns);
  std::string manifests;
  for (int i = 0; i < count; ++i) manifests += "---\n" + simpleRunManifest(ns, "run-" + std::to_string(i));
  std::string path = stack.dir() + "/" + ns + ".yaml";
  std::ofstream(path) << manifests;
  stack.kubectlOk("apply -f '" + path + "'");
}

// All of vto's jobs whose runs live in `ns`.
std::vector<vertex::Job> jobsInNamespace(OperatorStack& stack, const std::string& ns) {
  return stack.listJobs("labels.managed-by=\"vto\" AND labels.vto-namespace=\"" + ns + "\"");
}

// Jobs beyond the first for any (run, attempt): each one is a duplicate.
int duplicates(const std::vector<vertex::Job>& jobs) {
  std::map<std::pair<std::string, std::string>, int> perAttempt;
  for (const auto& job : jobs) perAttempt[{job.labels.at("vto-run-uid"), job.labels.at("vto-attempt")}]++;
  int extra = 0;
  for (const auto& [key, count] : perAttempt) extra += count - 1;
  return extra;
}

void expectAllSucceededOnce(OperatorStack& stack, const std::string& ns, int count) {
  for (int i = 0; i < count; ++i) {
    std::string name = "run-" + std::to_string(i);
    ASSERT_TRUE(stack.waitForPhase(ns, name, "Succeeded", seconds(300)))
        << name << " is " << stack.phaseOf(ns, name) << "\n" << stack.operatorLog();
  }
  auto jobs = jobsInNamespace(stack, ns);
  int dup = duplicates(jobs);
  std::cout << "[ figures  ] " << ns << ": " << count << " runs, " << jobs.size() << " jobs, " << dup << " duplicates\n";
  EXPECT_EQ(dup, 0);
  EXPECT_EQ(jobs.size(), static_cast<size_t>(count));
}

TEST(TrainingRunChaos, SigkillDuringSubmissionNeverDuplicatesAJob) {
  OperatorStack stack({"--queue-time", "1s", "--steps", "3", "--step-time", "1s"});
  const std::string ns = "sigkill";
  const int runs = 50;
  applyRuns(stack, ns, runs);
  std::mt19937 random(20261202);  // fixed seed: a failure can be replayed
  int kills = 0;
  size_t created = 0;
  stack.startOperator();
  // Kill each time a few more jobs exist, so the kills land in the middle of submitting.
  while (created < static_cast<size_t>(runs)) {
    size_t target = std::min<size_t>(runs, created + 1 + random() % 6);
    bool reached = waitFor([&] { return (created = jobsInNamespace(stack, ns).size()) >= target; }, seconds(60),
                           std::chrono::milliseconds(50));
    ASSERT_TRUE(reached) << "stuck at " << created << " jobs\n" << stack.operatorLog();
    if (created >= static_cast<size_t>(runs)) break;
    EXPECT_EQ(stack.stopOperator(SIGKILL), 128 + SIGKILL);
    ++kills;
    stack.startOperator();
  }
  std::cout << "[ figures  ] operator killed with SIGKILL " << kills << " times while submitting " << runs << " runs\n";
  EXPECT_GE(kills, 5);
  expectAllSucceededOnce(stack, ns, runs);
}

TEST(TrainingRunChaos, TwentyPercentOfVertexAnswersFailingStillFinishesEveryRunOnce) {
  OperatorStack stack({"--queue-time", "1s", "--steps", "3", "--step-time", "1s", "--fail-rate", "0.1",
                       "--throttle-rate", "0.1", "--seed", "7"});
  const std::string ns = "faults";
  applyRuns(stack, ns, 20);
  stack.startOperator();
  expectAllSucceededOnce(stack, ns, 20);
}

}  // namespace
}  // namespace vto::testing
