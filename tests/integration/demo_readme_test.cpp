// The README's demo as a new user follows it: scripts/demo.sh brings the system up (every server on a
// port it bound itself), then the README's own preemption commands, read from README.md and run
// verbatim in bash with the demo's env file sourced, fail a running job as a preemption, and vto
// resumes it from a checkpoint (the emulator's trace names ckpt-N), not from scratch. Stopping the
// script must leave none of the processes it started.
//
// Needs $VTO_BIN_DIR with vto, vto-emulator, vto-testcluster and fake-gcs-server.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/support/subprocess.h"
#include "tests/support/test_cluster.h"
#include "tests/support/wait.h"

namespace vto::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;

fs::path sourceDir() {
  if (const char* dir = std::getenv("VTO_SOURCE_DIR")) return dir;
  return fs::path(__FILE__).parent_path().parent_path().parent_path();
}

std::string readText(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The README's preemption commands: the shell lines after "# preempt a running job" up to the end of
// that code block, continuation lines joined, comments and output samples dropped.
std::vector<std::string> readmePreemptionCommands() {
  std::istringstream readme(readText(sourceDir() / "README.md"));
  std::vector<std::string> commands;
  bool inBlock = false;
  std::string pending;
  for (std::string line; std::getline(readme, line);) {
    if (!inBlock) {
      inBlock = line.rfind("# preempt a running job", 0) == 0;
      continue;
    }
    if (line.rfind("```", 0) == 0) break;
    if (line.empty() || line[0] == '#') continue;
    if (!line.empty() && line.back() == '\\') {
      pending += line.substr(0, line.size() - 1);
      continue;
    }
    commands.push_back(pending + line);
    pending.clear();
  }
  return commands;
}

std::string commandContaining(const std::vector<std::string>& commands, const std::string& part) {
  for (const auto& c : commands)
    if (c.find(part) != std::string::npos) return c;
  ADD_FAILURE() << "the README's preemption example has no command with " << part;
  return "false";
}

class DemoReadmeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = makeTempDir("vto-demo");
    // The demo as `make demo` runs it, in watch mode (it keeps running until stopped), with its state in
    // a directory of its own so it cannot disturb a developer's build/demo.
    demo_ = std::make_unique<Subprocess>(
        std::vector<std::string>{"env", "VTO_DEMO_STATE=" + state_, "VTO_BIN_DIR=" + binDir(), "bash",
                                 (sourceDir() / "scripts/demo.sh").string()},
        state_ + "-script.log");
    auto deadline = std::chrono::steady_clock::now() + 300s;
    while (std::chrono::steady_clock::now() < deadline) {
      auto line = demo_->readLine(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
      if (!line) break;
      output_ += *line + "\n";
      if (line->find("sample TrainingRuns applied") != std::string::npos) return;
    }
    FAIL() << "the demo did not apply the samples; it printed:\n" << output_ << readText(state_ + "-script.log");
  }

  void TearDown() override {
    if (demo_) demo_->stop(60s);
    if (std::getenv("VTO_KEEP_TEST_DIRS") == nullptr) runShell("rm -rf '" + state_ + "' '" + state_ + "-script.log'");
  }

  // Runs `command` in bash as the README says: in the repository, after `source build/demo/env`.
  CommandResult userShell(const std::string& command) {
    std::string script = state_ + "/user-command.sh";
    std::ofstream(script) << "source '" << state_ << "/env'\ncd '" << sourceDir().string() << "'\n" << command << "\n";
    return runShell("bash '" + script + "' 2>&1");
  }

  std::string state_;
  std::string output_;
  std::unique_ptr<Subprocess> demo_;
};

TEST_F(DemoReadmeTest, PreemptionResumesFromACheckpointAndStoppingLeavesNoProcess) {
  // The demo printed the operator's endpoints and wrote them to the env file; they answer.
  EXPECT_NE(output_.find("operator metrics: http://127.0.0.1:"), std::string::npos) << output_;
  auto metrics = userShell("curl -sf \"$VTO_METRICS_URL\"");
  EXPECT_EQ(metrics.exitCode, 0) << metrics.output;
  EXPECT_NE(metrics.output.find("vto_"), std::string::npos);
  EXPECT_EQ(userShell("curl -sf \"$VTO_HEALTH_URL\"").output, "ok");
  // Every bucket the samples use exists.
  auto buckets = userShell("curl -sf \"$STORAGE_EMULATOR_HOST/storage/v1/b\"").output;
  EXPECT_NE(buckets.find("\"my-bucket\""), std::string::npos) << buckets;

  // The budget sample: one of team-small's two runs (whichever the operator decides second) waits for
  // its $0.40 while the other runs.
  const std::string readyReasons =
      "kubectl -n team-small get trun -o jsonpath='{.items[*].status.conditions[?(@.type==\"Ready\")].reason}'";
  EXPECT_TRUE(waitFor([&] { return userShell(readyReasons).output.find("BudgetExceeded") != std::string::npos; }, 60s, 250ms))
      << userShell("kubectl -n team-small get trun -o yaml").output;

  auto commands = readmePreemptionCommands();
  ASSERT_EQ(commands.size(), 3u) << "expected the README's fail, attempts and trace commands";
  std::string fail = commandContaining(commands, ":fail");
  std::string attempts = commandContaining(commands, "{.status.attempts}");
  std::string trace = commandContaining(commands, ":trace");

  // The job must be running and past its first checkpoint, or there is nothing to resume from.
  json before;
  ASSERT_TRUE(waitFor(
      [&] {
        before = json::parse(userShell(trace).output, nullptr, false);
        return before.is_object() && !before.value("stepsRun", json::array()).empty();
      },
      180s, 250ms))
      << "llm-spot never ran a step; operator log:\n" << readText(state_ + "/operator.log");

  auto failed = json::parse(userShell(fail).output, nullptr, false);
  ASSERT_TRUE(failed.is_object()) << userShell(fail).output;
  EXPECT_EQ(failed.value("state", ""), "JOB_STATE_FAILED") << failed.dump();

  // Attempt 2 comes after resumeBackoff (30 s in the sample).
  json history;
  ASSERT_TRUE(waitFor(
      [&] {
        history = json::parse(userShell(attempts).output, nullptr, false);
        return history.is_array() && history.size() >= 2 && !history[1].value("jobName", "").empty();
      },
      180s, 500ms))
      << history.dump() << "\noperator log:\n" << readText(state_ + "/operator.log");
  EXPECT_EQ(history[0].value("failureClass", ""), "Preemption") << history.dump();

  json resumed;
  ASSERT_TRUE(waitFor(
      [&] {
        resumed = json::parse(userShell(trace).output, nullptr, false);
        return resumed.is_object() && resumed.value("resumedFrom", "") != "";
      },
      60s, 250ms))
      << "attempt 2 started from scratch: " << resumed.dump();
  std::smatch checkpoint;
  std::string from = resumed["resumedFrom"];
  ASSERT_TRUE(std::regex_match(from, checkpoint, std::regex(R"(gs://my-bucket/llm-spot/checkpoints/ckpt-([0-9]+))"))) << from;
  int step = std::stoi(checkpoint[1]);
  EXPECT_GE(step, 1);
  EXPECT_EQ(history[1].value("resumedFrom", ""), from) << history.dump();
  auto stepsRun = resumed.value("stepsRun", json::array());
  if (!stepsRun.empty()) EXPECT_EQ(stepsRun[0], step + 1) << resumed.dump();

  // The crashing sample: `kubectl describe trun mnist-crash` shows the traceback's last line, in the
  // attempt's Log Tail and in the Failed Event.
  std::string described;
  EXPECT_TRUE(waitFor(
      [&] {
        described = userShell("kubectl describe trun mnist-crash").output;
        return described.find("Warning  Failed") != std::string::npos;
      },
      120s, 500ms))
      << described;
  EXPECT_NE(described.find("Log Tail:"), std::string::npos) << described;
  EXPECT_NE(described.find("RuntimeError: EMULATOR_MODEL_METRICS"), std::string::npos) << described;

  // The waiting one then starts by itself and both end Succeeded, each with its cost.
  EXPECT_TRUE(waitFor(
      [&] {
        return userShell("kubectl -n team-small get trun -o jsonpath='{.items[*].status.phase}'").output ==
               "Succeeded Succeeded";
      },
      120s, 500ms))
      << userShell("kubectl -n team-small get trun -o yaml").output;
  auto wide = userShell("kubectl -n team-small get trun -o wide").output;
  EXPECT_NE(wide.find("COST"), std::string::npos) << wide;
  EXPECT_NE(wide.find(" 0.00 "), std::string::npos) << "seconds of n1-standard-4 cost under a cent\n" << wide;

  // Stopping the demo stops everything it started.
  std::vector<pid_t> started;
  std::ifstream pids(state_ + "/pids");
  for (pid_t pid; pids >> pid;) started.push_back(pid);
  EXPECT_GE(started.size(), 4u);
  demo_->stop(60s);
  demo_.reset();
  EXPECT_TRUE(waitFor(
      [&] {
        for (pid_t pid : started)
          if (::kill(pid, 0) == 0) return false;
        return true;
      },
      30s))
      << "a process of the demo outlived it";
}

}  // namespace
}  // namespace vto::testing
