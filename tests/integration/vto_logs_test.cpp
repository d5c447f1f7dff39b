// `vto logs` and `kubectl vto logs` as a user runs them: the built binary, the user's kubeconfig against
// a real API server, and the Vertex emulator for the job and its log (POST /v2/entries:list), with the
// emulator's metadata server as the user's Google credentials.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/operator_stack.h"
#include "tests/support/wait.h"
#include "vertex/api_error.h"
#include "vertex/logging_client.h"

namespace vto::testing {
namespace {

using std::chrono::seconds;

// Jobs queue 1 s and train 4 steps of 1 s.
OperatorStack& stack() {
  static OperatorStack shared({"--queue-time", "1s", "--steps", "4", "--step-time", "1s"});
  static bool started = (shared.startOperator(), true);
  (void)started;
  return shared;
}

std::string quote(const std::string& text) { return "'" + text + "'"; }

// The command as a user's shell runs it: no credentials but what `env` names, HOME without gcloud's
// files. stdout (the log) and stderr (vto's notes) are kept apart.
struct LogsResult {
  int exitCode = -1;
  std::string out, err;
};
LogsResult run(const std::string& program, const std::string& args, const std::string& env) {
  auto dir = stack().dir();
  std::filesystem::create_directories(dir + "/home");
  auto errPath = dir + "/vto-logs.err";
  auto result = runShell("env -u GOOGLE_APPLICATION_CREDENTIALS -u VERTEX_EMULATOR -u GCE_METADATA_HOST HOME=" +
                         quote(dir + "/home") + " KUBECONFIG=" + quote(stack().cluster().kubeconfig()) + " PATH=" +
                         quote(binDir()) + ":\"$PATH\" " + env + " " + program + " " + args + " 2>" + quote(errPath));
  std::ifstream in(errPath);
  std::stringstream err;
  err << in.rdbuf();
  return {result.exitCode, result.output, err.str()};
}
LogsResult vtoLogs(const std::string& args) {
  return run(quote(binDir() + "/vto") + " logs", args, "VERTEX_EMULATOR=" + stack().emulator().url());
}

void applyManifest(const std::string& yaml) {
  std::string path = stack().dir() + "/manifest-" + std::to_string(std::hash<std::string>{}(yaml)) + ".yaml";
  std::ofstream(path) << yaml;
  stack().kubectlOk("apply -f '" + path + "'");
}

std::string jobOf(const std::string& ns, const std::string& name) {
  auto run = stack().getRun(ns, name);
  if (!run.is_object()) return "";
  return run.value(nlohmann::json::json_pointer("/status/job/name"), std::string());
}

// Ends a running job as Vertex would (the emulator's control API), e.g. "UserError" or "Preemption".
void failJob(const std::string& job, const std::string& failureClass) {
  vertex::PooledHttpTransport http;
  RealClock clock;
  vertex::MetadataTokenSource tokens(http, clock, stack().emulator().hostPort());
  auto failed = http.send({"POST", stack().emulator().url() + "/emulator/v1/" + job + ":fail",
                           {{"Content-Type", "application/json"}, {"Authorization", "Bearer " + tokens.token().value}},
                           nlohmann::json{{"failureClass", failureClass}}.dump(), std::chrono::seconds(10)});
  ASSERT_EQ(failed.status, 200) << failed.body;
}

TEST(VtoLogs, UserMistakesExitTwoWithWhatToDo) {
  const std::string ns = "logs-mistakes";
  stack().createNamespace(ns);
  applyManifest(simpleRunManifest(ns, "held", "  suspend: true\n"));
  ASSERT_TRUE(stack().waitForPhase(ns, "held", "Suspended", seconds(60))) << stack().operatorLog();
  applyManifest(simpleRunManifest(ns, "done"));
  ASSERT_TRUE(stack().waitForPhase(ns, "done", "Succeeded", seconds(120))) << stack().operatorLog();
  struct Case {
    std::string args, expected;
  };
  for (const auto& c : std::vector<Case>{
           {"trun/nope -n " + ns, "trainingrun nope not found in namespace " + ns},
           {"trun/held -n " + ns, "no job yet: the run is Suspended"},
           {"trun/done -n " + ns + " --attempt 3", "attempt 3 does not exist: the run has 1 attempt"},
           {"trun/done -n " + ns + " --since 10x", "--since \"10x\" is not a positive duration"},
           {"trun/done -n " + ns + " --replica chief", "write workerpoolN-M"},
           {"pods/done -n " + ns, "write trun/NAME"},
       }) {
    auto result = vtoLogs(c.args);
    EXPECT_EQ(result.exitCode, 2) << c.args << "\n" << result.err;
    EXPECT_NE(result.err.find(c.expected), std::string::npos) << c.args << "\n" << result.err;
    EXPECT_EQ(result.out, "") << c.args;
  }
  // No Google credentials at all (no key file, no gcloud login, no metadata server): say how to get some.
  auto noCredentials = run(quote(binDir() + "/vto") + " logs", "trun/done -n " + ns, "GCE_METADATA_HOST=127.0.0.1:1");
  EXPECT_EQ(noCredentials.exitCode, 2) << noCredentials.err;
  EXPECT_NE(noCredentials.err.find("gcloud auth application-default login"), std::string::npos) << noCredentials.err;
}

TEST(VtoLogs, KubectlRunsItAsAPlugin) {
  auto result = run("kubectl", "vto logs trun/nope -n default", "VERTEX_EMULATOR=" + stack().emulator().url());
  EXPECT_EQ(result.exitCode, 2) << result.err;
  EXPECT_NE(result.err.find("kubectl vto logs: trainingrun nope not found in namespace default"), std::string::npos)
      << result.err;
}

TEST(VtoLogs, FollowsASucceedingRunToItsEndAndExitsZero) {
  const std::string ns = "logs-follow";
  stack().createNamespace(ns);
  applyManifest(simpleRunManifest(ns, "fine"));
  ASSERT_TRUE(waitFor([&] { return !jobOf(ns, "fine").empty(); }, seconds(60))) << stack().operatorLog();
  auto followed = vtoLogs("trun/fine -n " + ns + " -f --poll-interval 2");
  EXPECT_EQ(followed.exitCode, 0) << followed.err;
  EXPECT_NE(followed.err.find("ended JOB_STATE_SUCCEEDED"), std::string::npos) << followed.err;
  EXPECT_NE(followed.out.find(" workerpool0-0 "), std::string::npos) << followed.out;
  // Once ended, the same log without -f, and one replica's lines only.
  auto all = vtoLogs("trun/fine -n " + ns);
  EXPECT_EQ(all.exitCode, 0) << all.err;
  EXPECT_EQ(all.out, followed.out);
  auto primary = vtoLogs("trun/fine -n " + ns + " --replica workerpool0-0 --tail 1");
  EXPECT_EQ(primary.exitCode, 0) << primary.err;
  EXPECT_EQ(std::count(primary.out.begin(), primary.out.end(), '\n'), 1) << primary.out;
}

TEST(VtoLogs, AFailedRunShowsItsTracebackAndExitsOne) {
  const std::string ns = "logs-failure";
  stack().createNamespace(ns);
  applyManifest(simpleRunManifest(ns, "broken"));
  ASSERT_TRUE(stack().waitForPhase(ns, "broken", "Running", seconds(60))) << stack().operatorLog();
  failJob(jobOf(ns, "broken"), "UserError");
  auto followed = vtoLogs("trun/broken -n " + ns + " -f --poll-interval 2");
  EXPECT_EQ(followed.exitCode, 1) << followed.err;
  EXPECT_NE(followed.err.find("ended JOB_STATE_FAILED"), std::string::npos) << followed.err;
  EXPECT_NE(followed.out.find("Traceback"), std::string::npos) << followed.out;
  auto errors = vtoLogs("trun/broken -n " + ns + " --severity ERROR");
  EXPECT_NE(errors.out.find("Traceback"), std::string::npos) << errors.out;
  EXPECT_EQ(errors.out.find(" INFO "), std::string::npos) << errors.out;
}

TEST(VtoLogs, AResumedRunShowsEachAttemptsOwnLog) {
  const std::string ns = "logs-resume";
  stack().createNamespace(ns);
  applyManifest(simpleRunManifest(ns, "spot", "  scheduling: {strategy: Spot}\n  checkpointing: {resumeBackoff: 1s}\n"));
  ASSERT_TRUE(stack().waitForPhase(ns, "spot", "Running", seconds(60))) << stack().operatorLog();
  auto first = jobOf(ns, "spot");
  failJob(first, "Preemption");
  ASSERT_TRUE(stack().waitForPhase(ns, "spot", "Succeeded", seconds(120))) << stack().operatorLog();
  ASSERT_NE(jobOf(ns, "spot"), first) << "the run resumed on a second job";
  // A preemption is not the code's failure: no log is read for it, and no tail is written.
  EXPECT_EQ(stack().getRun(ns, "spot").value(nlohmann::json::json_pointer("/status/attempts/0/logTail"), std::string("")), "");
  // Attempt 1's job was preempted (exit 1), the newest attempt's succeeded (exit 0): each command
  // read the log of the job it names.
  auto preempted = vtoLogs("trun/spot -n " + ns + " --attempt 1 -f");
  EXPECT_EQ(preempted.exitCode, 1) << preempted.err;
  EXPECT_NE(preempted.err.find("ended JOB_STATE_FAILED"), std::string::npos) << preempted.err;
  auto latest = vtoLogs("trun/spot -n " + ns + " -f");
  EXPECT_EQ(latest.exitCode, 0) << latest.err;
  EXPECT_NE(latest.err.find("ended JOB_STATE_SUCCEEDED"), std::string::npos) << latest.err;
  EXPECT_NE(preempted.out, latest.out);
  EXPECT_NE(preempted.out.find(" workerpool0-0 "), std::string::npos) << preempted.out;
}

// The operator's side of a failure (status.attempts[].logTail, the Failed Event): with
// --vertex-endpoint naming the emulator, the same emulator serves the operator the job's log.
TEST(VtoLogs, AFailedRunShowsTheTracebackInDescribeWithinSeconds) {
  const std::string ns = "logs-tail";
  stack().createNamespace(ns);
  applyManifest(simpleRunManifest(ns, "nan"));
  ASSERT_TRUE(stack().waitForPhase(ns, "nan", "Running", seconds(60))) << stack().operatorLog();
  failJob(jobOf(ns, "nan"), "UserError");
  ASSERT_TRUE(stack().waitForPhase(ns, "nan", "Failed", seconds(60))) << stack().operatorLog();
  std::string tail;
  ASSERT_TRUE(waitFor(
      [&] {
        auto run = stack().getRun(ns, "nan");
        tail = run.value(nlohmann::json::json_pointer("/status/attempts/0/logTail"), std::string());
        return !tail.empty();
      },
      seconds(15)))  // within seconds of the phase change, which was written first
      << stack().operatorLog();
  EXPECT_NE(tail.find("Traceback (most recent call last):"), std::string::npos) << tail;
  EXPECT_EQ(tail.substr(tail.rfind('\n') + 1), "ValueError: Input 'features' contains NaN values") << tail;
  std::string described;
  ASSERT_TRUE(waitFor(
      [&] {
        described = stack().kubectlOk("describe trun nan -n " + ns);
        return described.find("Warning  Failed") != std::string::npos;
      },
      seconds(15)))
      << described;
  EXPECT_NE(described.find("Log Tail:"), std::string::npos) << described;
  EXPECT_NE(described.find("ValueError: Input 'features' contains NaN values"), std::string::npos) << described;
  auto event = described.substr(described.find("Warning  Failed"));
  EXPECT_NE(event.find("log: "), std::string::npos) << event;
  EXPECT_NE(event.find("ValueError: Input 'features' contains NaN values"), std::string::npos) << event;
  // Tenant data stays out of the operator's own log.
  EXPECT_EQ(stack().operatorLog().find("contains NaN values"), std::string::npos);
}

// Cloud Logging allows 60 reads a minute per project, for every reader together (the emulator's
// default, as Google's). Two users follow the run with `vto logs -f` (every 10 s) while its job fails:
// the operator's log tail still lands in status, not "could not read the log".
TEST(VtoLogs, ALogTailLandsUnderTheSixtyAMinuteBudgetSharedWithTwoFollowingTerminals) {
  const std::string ns = "logs-budget";
  stack().createNamespace(ns);
  applyManifest(simpleRunManifest(ns, "shared"));
  ASSERT_TRUE(stack().waitForPhase(ns, "shared", "Running", seconds(60))) << stack().operatorLog();
  auto dir = stack().dir();
  std::vector<std::string> outs;
  for (int i = 0; i < 2; ++i) {
    outs.push_back(dir + "/follow-" + std::to_string(i) + ".out");
    // In the background, as a second and third terminal would.
    run(quote(binDir() + "/vto") + " logs", "trun/shared -n " + ns + " -f >" + quote(outs.back()) + " 2>&1 &",
        "VERTEX_EMULATOR=" + stack().emulator().url());
  }
  failJob(jobOf(ns, "shared"), "UserError");
  std::string tail;
  ASSERT_TRUE(waitFor(
      [&] {
        tail = stack().getRun(ns, "shared").value(nlohmann::json::json_pointer("/status/attempts/0/logTail"), std::string());
        return !tail.empty();
      },
      seconds(60)))
      << stack().operatorLog();
  EXPECT_EQ(tail.find("could not read the log"), std::string::npos) << tail;
  EXPECT_NE(tail.find("ValueError: Input 'features' contains NaN values"), std::string::npos) << tail;
  // Both terminals end with the job, having shown its traceback.
  for (const auto& out : outs) {
    std::string text;
    EXPECT_TRUE(waitFor(
        [&] {
          std::ifstream in(out);
          std::stringstream all;
          all << in.rdbuf();
          text = all.str();
          return text.find("ended JOB_STATE_FAILED") != std::string::npos;
        },
        seconds(60)))
        << text;
    EXPECT_NE(text.find("Traceback"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace vto::testing
