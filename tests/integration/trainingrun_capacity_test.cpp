// Capacity failover end to end (docs/capacity.md): the emulator runs out of capacity, refuses creates
// for quota or holds jobs pending, and vto moves each run to its next placement, from its newest
// checkpoint, with exactly one job per attempt. Every scenario has its own regions (the emulator's
// capacity entries select jobs by region), so the runs go side by side in one operator stack.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <set>

#include "tests/support/operator_stack.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/simulated_clock.h"
#include "tests/support/wait.h"

namespace vto::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

const auto kStarted = std::chrono::steady_clock::now();

// The tenancy scenario's namespace may use us-central1 only; the others anything.
const char* kTenancyNamespace = "cap-tenancy";
// The race scenario's namespace may hold 8 accelerators at once.
const char* kRaceNamespace = "cap-race";
const std::vector<std::string> kNamespaces = {"cap-stockout", "cap-waiting", "cap-giveup", "cap-quota",
                                              "cap-hold",     "cap-kill",    "cap-queued", "cap-flex",
                                              "cap-spot",     kTenancyNamespace, kRaceNamespace};
const int kRacers = 3;

std::string runYaml(const std::string& ns, const std::string& name, const std::string& location,
                    const std::string& resources, const std::string& capacity) {
  return "apiVersion: vto.dev/v1beta1\nkind: TrainingRun\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
         "\nspec:\n  framework: pytorch\n  location: " + location +
         "\n  trainer:\n    container:\n      imageUri: us-central1-docker.pkg.dev/test-project/train/model:1\n"
         "  resources: " + resources + "\n  baseOutputDirectory: gs://" + kTestBucket + "/" + ns + "/" + name +
         "\n  capacity:\n" + capacity;
}

const std::string kCpu = "{machineType: n1-standard-4}";
const std::string kA100 = "{machineType: a2-highgpu-1g, acceleratorType: NVIDIA_TESLA_A100, acceleratorCount: 1}";
const std::string kT4 = "{machineType: n1-standard-4, acceleratorType: NVIDIA_TESLA_T4, acceleratorCount: 1}";
const std::string kA100x8 = "{machineType: a2-highgpu-8g, acceleratorType: NVIDIA_TESLA_A100, acceleratorCount: 8}";

void applyYaml(OperatorStack& stack, const std::string& yaml) {
  std::string path = stack.dir() + "/manifest-" + std::to_string(std::hash<std::string>{}(yaml)) + ".yaml";
  std::ofstream(path) << yaml;
  stack.kubectlOk("apply -f '" + path + "'");
}

// The emulator's control API; the answer as JSON (null when refused).
json emulatorCall(OperatorStack& stack, const std::string& method, const std::string& path, const std::string& body = "") {
  std::string bodyFile = stack.dir() + "/body.json";
  std::ofstream(bodyFile) << body;
  auto out = runShell("curl -sf -X " + method + " -H 'Content-Type: application/json' " +
                      (body.empty() ? "" : "--data-binary @'" + bodyFile + "' ") + stack.emulator().url() + path);
  return out.exitCode == 0 ? json::parse(out.output, nullptr, false) : json();
}

void setCapacity(OperatorStack& stack, const json& entries) {
  ASSERT_TRUE(emulatorCall(stack, "POST", "/emulator/v1/capacity", entries.dump()).is_object()) << entries.dump();
}

// The operator's clock: the contract's minimums (maxQueueTime 5m, blockFor 1m) are driven by jumping it
// (`vto run --clock-offset-file`), never waited for. Jumps only go forward, and every scenario's waits
// are either far longer than the sum of the jumps (blockFor 1h) or meant to pass.
std::unique_ptr<SimulatedClock>& clockHolder() {
  static std::unique_ptr<SimulatedClock> clock;
  return clock;
}

std::vector<std::string> operatorFlags(const std::string& dir) {
  return {"--config", dir + "/vto-config.yaml", "--checkpoint-poll-interval", "1", "--clock-offset-file", dir + "/clock-offset"};
}

// Jobs train 8 steps of 1 s after 1 s in the queue, and write ckpt-<step> after each step (the stockout
// scenario fails its first job after step 2: six steps leave time for that on a loaded machine). A
// stockout is reported 1 s after the queue time (Vertex tries to provision first).
OperatorStack& stack() {
  static OperatorStack shared({"--queue-time", "1s", "--steps", "8", "--step-time", "1s", "--cancel-time", "300ms",
                               "--stockout-wait", "1s"});
  static bool started = [] {
    std::string config = shared.dir() + "/vto-config.yaml";
    std::string others;
    for (const auto& ns : kNamespaces) {
      if (ns != kTenancyNamespace && ns != kRaceNamespace) others += (others.empty() ? "" : ", ") + ns;
    }
    const char* images = "    imagePrefixes: [us-central1-docker.pkg.dev/test-project/]\n";
    std::ofstream(config) << "tenancy:\n  - namespaces: [" << kTenancyNamespace << "]\n    locations: [us-central1]\n" << images
                          << "  - namespaces: [" << kRaceNamespace << "]\n    maxAccelerators: 8\n" << images
                          << "  - namespaces: [" << others << "]\n" << images;
    // What each scenario's regions have, in force before any job.
    json entries = json::array({
        // waiting: nothing anywhere until the test turns it on
        {{"location", "europe-west4"}, {"available", false}, {"mode", "fail"}},
        {{"location", "europe-west3"}, {"available", false}, {"mode", "fail"}},
        // giving up: nothing anywhere, ever
        {{"location", "asia-northeast1"}, {"available", false}, {"mode", "fail"}},
        {{"location", "asia-southeast1"}, {"available", false}, {"mode", "fail"}},
        // quota, the 429 form: no T4 may be held in us-west1, and a create says so
        {{"location", "us-west1"}, {"acceleratorType", "NVIDIA_TESLA_T4"}, {"quota", 0}, {"quotaMode", "refuse"}},
        // quota, as Google documents it: a job over it stays QUEUED in us-west2
        {{"location", "us-west2"}, {"acceleratorType", "NVIDIA_TESLA_T4"}, {"quota", 0}},
        // FlexStart: jobs wait pending in me-west1 until the test gives capacity
        {{"location", "me-west1"}, {"available", false}, {"mode", "hold"}},
        // hold: jobs wait pending in europe-west1
        {{"location", "europe-west1"}, {"available", false}, {"mode", "hold"}},
        // SIGKILL: the primary fails every job
        {{"location", "northamerica-northeast1"}, {"available", false}, {"mode", "fail"}},
        // the race: the CPU primary fails every job, so the racers fail over at the same moment
        {{"location", "australia-southeast1"}, {"available", false}, {"mode", "fail"}},
    });
    setCapacity(shared, entries);
    for (const auto& ns : kNamespaces) shared.createNamespace(ns);
    clockHolder() = std::make_unique<SimulatedClock>(shared.dir() + "/clock-offset");  // offset 0, before the operator reads it
    shared.startOperator(operatorFlags(shared.dir()));
    // Every run but the SIGKILL one starts now, side by side.
    applyYaml(shared, runYaml("cap-waiting", "patient", "europe-west4", kCpu,
                              "    fallbacks: [{location: europe-west3}]\n    blockFor: 1m\n    giveUpAfter: 3h\n"));
    applyYaml(shared, runYaml("cap-giveup", "hopeless", "asia-northeast1", kCpu,
                              "    fallbacks: [{location: asia-southeast1}]\n    blockFor: 1h\n    giveUpAfter: 4s\n"));
    applyYaml(shared, runYaml("cap-quota", "quota", "us-west1", kT4,
                              "    fallbacks: [{location: us-west4}]\n    blockFor: 1h\n"));
    applyYaml(shared, runYaml("cap-hold", "held", "europe-west1", kCpu,
                              "    fallbacks: [{location: europe-west2}]\n    maxQueueTime: 5m\n    blockFor: 3h\n"));
    // maxQueueTime left out: 30m by default, as there is a fallback.
    applyYaml(shared, runYaml("cap-queued", "short", "us-west2", kT4, "    fallbacks: [{location: us-west3}]\n    blockFor: 3h\n"));
    applyYaml(shared, runYaml("cap-flex", "flex", "me-west1",
                              kA100 + "\n  scheduling: {strategy: FlexStart, maxWaitDuration: 2h}",
                              "    fallbacks: [{location: me-central1}]\n    maxQueueTime: 5m\n    blockFor: 3h\n"));

    applyYaml(shared, runYaml(kTenancyNamespace, "outside", "us-central1", kCpu,
                              "    fallbacks: [{location: us-east4}]\n"));
    for (int i = 0; i < kRacers; ++i) {
      applyYaml(shared, runYaml(kRaceNamespace, "racer-" + std::to_string(i), "australia-southeast1", kCpu,
                                "    fallbacks: [{location: australia-southeast2, resources: " + kA100x8 + "}]\n    blockFor: 1h\n"));
    }
    // Last: its job trains 8 s, and the first test must fail it mid-training (on loaded cores the
    // applies above took longer than that when it came first).
    applyYaml(shared, runYaml("cap-stockout", "llm", "us-central1", kA100,
                              "    fallbacks: [{location: us-east4}]\n    blockFor: 1h\n"));
    return true;
  }();
  (void)started;
  return shared;
}

SimulatedClock& operatorClock() {
  stack();
  return *clockHolder();
}

// Moves the operator's clock `by` ahead of where it reads now.
void jumpAhead(std::chrono::seconds by) { operatorClock().jumpTo(operatorClock().now() + by); }

std::string uidOf(const std::string& ns, const std::string& name) {
  std::string uid;
  waitFor([&] { return !(uid = stack().getRun(ns, name)["metadata"].value("uid", "")).empty(); }, seconds(30));
  return uid;
}

// Every job of the run in any of `regions` (vto's labels say the run and the attempt).
std::vector<vertex::Job> jobsOfRun(const std::string& uid, const std::vector<std::string>& regions) {
  std::vector<vertex::Job> jobs;
  for (const auto& region : regions) {
    vertex::ListOptions options;
    options.filter = "labels.vto-run-uid=\"" + uid + "\"";
    auto page = stack().vertex().listJobs({kTestProject, region}, vertex::JobKind::Custom, options);
    jobs.insert(jobs.end(), page.jobs.begin(), page.jobs.end());
  }
  return jobs;
}

// Jobs per attempt number; a count above 1 is a duplicate.
std::map<std::string, int> jobsPerAttempt(const std::vector<vertex::Job>& jobs) {
  std::map<std::string, int> perAttempt;
  for (const auto& job : jobs) perAttempt[job.labels.at("vto-attempt")]++;
  return perAttempt;
}

void expectOneJobPerAttempt(const std::vector<vertex::Job>& jobs, size_t attempts) {
  auto perAttempt = jobsPerAttempt(jobs);
  EXPECT_EQ(perAttempt.size(), attempts);
  for (const auto& [attempt, count] : perAttempt) EXPECT_EQ(count, 1) << "attempt " << attempt << " has " << count << " jobs";
}

json conditionOf(const json& run, const std::string& type) {
  for (const auto& c : run["status"].value("conditions", json::array())) {
    if (c.value("type", "") == type) return c;
  }
  return json::object();
}

std::string eventsOf(const std::string& ns, const std::string& name) { return stack().eventsOf(ns, name); }

int countOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string jobOfAttempt(const std::string& ns, const std::string& name, int attempt) {
  return stack().jobOfAttempt(ns, name, attempt);
}

std::string locationOfJob(const std::string& job) {
  std::smatch match;
  static const std::regex kLocation("/locations/([^/]+)/");
  return std::regex_search(job, match, kLocation) ? match[1].str() : "";
}

TEST(TrainingRunCapacity, AStockoutMovesTheRunToItsFallbackFromItsCheckpoint) {
  const std::string ns = "cap-stockout", name = "llm";
  std::string first = jobOfAttempt(ns, name, 1);
  ASSERT_FALSE(first.empty()) << stack().operatorLog();
  EXPECT_EQ(locationOfJob(first), "us-central1");
  // Attempt 1 trains and checkpoints; then us-central1 runs out of A100s and Vertex fails the job.
  ASSERT_TRUE(waitFor(
      [&] {
        auto trace = emulatorCall(stack(), "GET", "/emulator/v1/" + first + ":trace");
        return trace.is_object() && trace.value("stepsRun", json::array()).size() >= 2;
      },
      seconds(120), std::chrono::milliseconds(50)));
  setCapacity(stack(), {{"location", "us-central1"}, {"acceleratorType", "NVIDIA_TESLA_A100"}, {"available", false},
                        {"mode", "fail"}});
  ASSERT_TRUE(emulatorCall(stack(), "POST", "/emulator/v1/" + first + ":fail", R"({"failureClass": "Stockout"})").is_object());

  ASSERT_TRUE(stack().waitForPhase(ns, name, "Succeeded", seconds(120))) << stack().getRun(ns, name).dump(2);
  auto run = stack().getRun(ns, name);
  const auto& status = run["status"];
  ASSERT_EQ(status["attempts"].size(), 2u) << status.dump(2);
  EXPECT_EQ(status["attempts"][0]["placement"], 0);
  EXPECT_EQ(status["attempts"][1]["placement"], 1);
  EXPECT_EQ(status["placement"]["location"], "us-east4");
  EXPECT_EQ(status["placement"]["index"], 1);
  EXPECT_EQ(status["resumes"].get<int>(), 0) << "a capacity failure spends no resume";
  ASSERT_EQ(status["capacity"]["blocked"].size(), 1u) << status.dump(2);
  EXPECT_EQ(status["capacity"]["blocked"][0]["reason"], "Stockout");
  EXPECT_EQ(status["capacity"]["blocked"][0]["location"], "us-central1");
  // Attempt 2 ran in us-east4 and really resumed from attempt 1's newest checkpoint.
  std::string second = status["attempts"][1]["jobName"];
  EXPECT_EQ(locationOfJob(second), "us-east4");
  std::string resumedFrom = status["attempts"][1].value("resumedFrom", "");
  std::smatch step;
  ASSERT_TRUE(std::regex_match(resumedFrom, step, std::regex("gs://test-bucket/cap-stockout/llm/checkpoints/ckpt-([0-9]+)")))
      << resumedFrom;
  auto trace = emulatorCall(stack(), "GET", "/emulator/v1/" + second + ":trace");
  EXPECT_EQ(trace["resumedFrom"], resumedFrom);
  ASSERT_FALSE(trace["stepsRun"].empty()) << trace.dump();
  EXPECT_EQ(trace["stepsRun"][0].get<int>(), std::stoi(step[1].str()) + 1) << trace.dump();
  // Exactly one job per attempt, wherever it ran.
  auto jobs = jobsOfRun(uidOf(ns, name), {"us-central1", "us-east4"});
  EXPECT_EQ(jobs.size(), 2u);
  expectOneJobPerAttempt(jobs, 2);
  // One Event, saying where it went and why.
  auto events = eventsOf(ns, name);
  EXPECT_EQ(countOf(events, "CapacityFailover:"), 1) << events;
  EXPECT_NE(events.find("CapacityFailover: attempt 2 on us-east4 a2-highgpu-1g 1 x NVIDIA_TESLA_A100 Standard: "
                        "us-central1 had no capacity (Stockout)"),
            std::string::npos)
      << events;
  // Dashboards count it.
  auto metrics = runShell("curl -sf " + stack().metricsUrl()).output;
  double failovers = sampleSum(metrics, "vto_trainingrun_capacity_failovers_total", [](const Labels& l) {
    return l.at("namespace") == "cap-stockout" && l.at("from_location") == "us-central1" && l.at("to_location") == "us-east4" &&
           l.at("accelerator_type") == "NVIDIA_TESLA_A100" && l.at("reason") == "Stockout";
  });
  EXPECT_EQ(failovers, 1) << metrics;
}

TEST(TrainingRunCapacity, WithEveryPlacementOutTheRunWaitsThenStartsWhenCapacityReturns) {
  const std::string ns = "cap-waiting", name = "patient";
  json waiting;
  ASSERT_TRUE(waitFor(
      [&] {
        waiting = stack().getRun(ns, name);
        return waiting.is_object() && waiting["status"].value("phase", "") == "Queued" &&
               conditionOf(waiting, "Ready").value("reason", "") == "WaitingForCapacity";
      },
      seconds(120), std::chrono::milliseconds(100)))
      << stack().getRun(ns, name).dump(2);
  EXPECT_EQ(conditionOf(waiting, "Ready")["status"], "False");
  std::string message = waiting["status"]["message"];
  EXPECT_NE(message.find("every placement is out of capacity; placement "), std::string::npos) << message;
  EXPECT_TRUE(waiting["status"]["capacity"].contains("waitingSince")) << waiting["status"].dump(2);
  EXPECT_EQ(waiting["status"]["capacity"]["blocked"].size(), 2u) << waiting["status"].dump(2);

  // Capacity comes back in both regions: the run starts by itself once a block (1m) expires.
  setCapacity(stack(), json::array({{{"location", "europe-west4"}, {"available", true}},
                                    {{"location", "europe-west3"}, {"available", true}}}));
  jumpAhead(seconds(61));
  ASSERT_TRUE(stack().waitForPhase(ns, name, "Succeeded", seconds(120))) << stack().getRun(ns, name).dump(2);
  auto status = stack().getRun(ns, name)["status"];
  EXPECT_FALSE(status["capacity"].contains("waitingSince")) << status.dump(2);
  int attempts = status["attemptCount"];
  EXPECT_GE(attempts, 3) << status.dump(2);
  auto jobs = jobsOfRun(uidOf(ns, name), {"europe-west4", "europe-west3"});
  EXPECT_EQ(jobs.size(), static_cast<size_t>(attempts));
  expectOneJobPerAttempt(jobs, attempts);
}

TEST(TrainingRunCapacity, GiveUpAfterFailsTheRunWithOneLinePerPlacement) {
  const std::string ns = "cap-giveup", name = "hopeless";
  ASSERT_TRUE(stack().waitForPhase(ns, name, "Failed", seconds(120))) << stack().getRun(ns, name).dump(2);
  auto run = stack().getRun(ns, name);
  EXPECT_EQ(conditionOf(run, "Failed")["reason"], "CapacityUnavailable");
  EXPECT_EQ(conditionOf(run, "Ready")["reason"], "CapacityUnavailable");
  std::string message = run["status"]["message"];
  EXPECT_NE(message.find("no placement had capacity for 4s (spec.capacity.giveUpAfter):"), std::string::npos) << message;
  for (const auto& [placement, region] : {std::pair{0, "asia-northeast1"}, std::pair{1, "asia-southeast1"}}) {
    std::string line = "\n  placement " + std::to_string(placement) + " (" + region +
                       " n1-standard-4 Standard): Stockout: Resources are insufficient in region: " + region;
    EXPECT_NE(message.find(line), std::string::npos) << line << "\nnot in:\n" << message;
  }
  auto jobs = jobsOfRun(uidOf(ns, name), {"asia-northeast1", "asia-southeast1"});
  EXPECT_EQ(jobs.size(), 2u);
  expectOneJobPerAttempt(jobs, 2);
}

// CPU-only runs whose region runs out at the same moment each fail over to 8 x A100 under a cap of 8:
// their admissions are decided at once on several workers, and the cap's room is reserved under one
// lock, so no two of their A100 jobs are ever unfinished at the same time.
TEST(TrainingRunCapacity, RunsFailingOverAtOnceNeverHoldMoreThanTheCap) {
  struct Span {
    std::string run;
    Clock::time_point created, ended;
  };
  std::vector<Span> spans;
  for (int i = 0; i < kRacers; ++i) {
    std::string name = "racer-" + std::to_string(i);
    ASSERT_TRUE(stack().waitForPhase(kRaceNamespace, name, "Succeeded", seconds(240)))
        << stack().getRun(kRaceNamespace, name).dump(2);
    auto jobs = jobsOfRun(uidOf(kRaceNamespace, name), {"australia-southeast2"});
    ASSERT_EQ(jobs.size(), 1u) << name << ": one A100 job";
    ASSERT_TRUE(jobs[0].createTime && jobs[0].endTime) << jobs[0].name;
    spans.push_back({name, *jobs[0].createTime, *jobs[0].endTime});
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.created < b.created; });
  for (size_t i = 1; i < spans.size(); ++i) {
    EXPECT_GE(spans[i].created, spans[i - 1].ended)
        << spans[i].run << "'s 8 A100s were created while " << spans[i - 1].run << "'s were still held: 16 under a cap of 8";
  }
  int waited = 0;
  for (int i = 0; i < kRacers; ++i) waited += eventsOf(kRaceNamespace, "racer-" + std::to_string(i)).find("TenantQuotaExceeded") != std::string::npos;
  EXPECT_GE(waited, kRacers - 1) << "every run but the first was told it waits for the cap";
}

TEST(TrainingRunCapacity, ACreateRefusedForAcceleratorQuotaGoesToTheFallbackInTheSamePass) {
  const std::string ns = "cap-quota", name = "quota";
  ASSERT_TRUE(stack().waitForPhase(ns, name, "Succeeded", seconds(120))) << stack().getRun(ns, name).dump(2);
  auto status = stack().getRun(ns, name)["status"];
  ASSERT_EQ(status["attempts"].size(), 1u) << status.dump(2);
  EXPECT_EQ(status["attempts"][0]["placement"], 1);
  EXPECT_EQ(locationOfJob(status["attempts"][0]["jobName"]), "us-west4");
  ASSERT_EQ(status["capacity"]["blocked"].size(), 1u) << status.dump(2);
  EXPECT_EQ(status["capacity"]["blocked"][0]["reason"], "QuotaExceeded");
  EXPECT_NE(status["capacity"]["blocked"][0]["message"].get<std::string>().find(
                "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"),
            std::string::npos)
      << status.dump(2);
  auto events = eventsOf(ns, name);
  EXPECT_NE(events.find("CapacityFailover: attempt 1 on us-west4 n1-standard-4 1 x NVIDIA_TESLA_T4 Standard: us-west1 had "
                        "no capacity (QuotaExceeded)"),
            std::string::npos)
      << events;
  auto jobs = jobsOfRun(uidOf(ns, name), {"us-west1", "us-west4"});
  EXPECT_EQ(jobs.size(), 1u);
  EXPECT_GE(emulatorCall(stack(), "GET", "/emulator/v1/stats").value("acceleratorQuotaRejected", 0), 1);
}

TEST(TrainingRunCapacity, AJobHeldPendingPastMaxQueueTimeIsCancelledAndCountsAsNoCapacity) {
  const std::string ns = "cap-hold", name = "held";
  ASSERT_FALSE(jobOfAttempt(ns, name, 1).empty()) << stack().operatorLog();
  jumpAhead(seconds(301));  // past maxQueueTime (5m, the contract's minimum)
  ASSERT_TRUE(stack().waitForPhase(ns, name, "Succeeded", seconds(120))) << stack().getRun(ns, name).dump(2);
  auto status = stack().getRun(ns, name)["status"];
  ASSERT_EQ(status["attempts"].size(), 2u) << status.dump(2);
  std::string held = status["attempts"][0]["jobName"];
  EXPECT_EQ(locationOfJob(held), "europe-west1");
  EXPECT_EQ(status["attempts"][0]["state"], "JOB_STATE_CANCELLED");
  EXPECT_EQ(stack().vertex().getJob(held).state, vertex::JobState::Cancelled);
  EXPECT_EQ(locationOfJob(status["attempts"][1]["jobName"]), "europe-west2");
  ASSERT_EQ(status["capacity"]["blocked"].size(), 1u) << status.dump(2);
  EXPECT_EQ(status["capacity"]["blocked"][0]["reason"], "QueueTimeout");
  auto events = eventsOf(ns, name);
  EXPECT_NE(events.find("QueueTimeout: cancelling " + held + ": it waited 300s for capacity"), std::string::npos) << events;
  EXPECT_NE(events.find("CapacityFailover: attempt 2 on europe-west2 n1-standard-4 Standard: europe-west1 had no capacity "
                        "(QueueTimeout)"),
            std::string::npos)
      << events;
  expectOneJobPerAttempt(jobsOfRun(uidOf(ns, name), {"europe-west1", "europe-west2"}), 2);
}

TEST(TrainingRunCapacity, AQuotaShortfallHeldQueuedMovesToTheFallbackAfterTheDefaultMaxQueueTime) {
  // Google: a project short of quota gets its job created and kept QUEUED, no 429, no error.
  const std::string ns = "cap-queued", name = "short";
  std::string first = jobOfAttempt(ns, name, 1);
  ASSERT_FALSE(first.empty()) << stack().operatorLog();
  EXPECT_EQ(locationOfJob(first), "us-west2");
  ASSERT_TRUE(waitFor([&] { return stack().vertex().getJob(first).state == vertex::JobState::Queued; }, seconds(30)));
  EXPECT_EQ(stack().getRun(ns, name)["status"]["phase"], "Queued");
  jumpAhead(seconds(30 * 60 + 1));  // past the 30m default (there is a fallback)
  ASSERT_TRUE(stack().waitForPhase(ns, name, "Succeeded", seconds(120))) << stack().getRun(ns, name).dump(2);
  auto status = stack().getRun(ns, name)["status"];
  ASSERT_EQ(status["attempts"].size(), 2u) << status.dump(2);
  EXPECT_EQ(stack().vertex().getJob(first).state, vertex::JobState::Cancelled);
  EXPECT_EQ(locationOfJob(status["attempts"][1]["jobName"]), "us-west3");
  EXPECT_EQ(status["capacity"]["blocked"][0]["reason"], "QueueTimeout") << status.dump(2);
  EXPECT_GE(emulatorCall(stack(), "GET", "/emulator/v1/stats").value("acceleratorQuotaQueued", 0), 1);
  expectOneJobPerAttempt(jobsOfRun(uidOf(ns, name), {"us-west2", "us-west3"}), 2);
}

TEST(TrainingRunCapacity, AFlexStartPlacementSurvivesMaxQueueTimeWithinItsMaxWaitDuration) {
  // By now the operator's clock is over 30m ahead: the held FlexStart job is past maxQueueTime (5m)
  // but inside its own maxWaitDuration (2h). It stays; capacity comes; it runs where it waited.
  const std::string ns = "cap-flex", name = "flex";
  std::string job = jobOfAttempt(ns, name, 1);
  ASSERT_FALSE(job.empty()) << stack().operatorLog();
  jumpAhead(seconds(60));  // whatever ran before, past maxQueueTime
  // Its pass after the jump sees a job past maxQueueTime: it must leave it alone.
  EXPECT_FALSE(waitFor([&] { return stack().vertex().getJob(job).state != vertex::JobState::Pending; }, seconds(5)))
      << "cancelled within its maxWaitDuration: " << stack().getRun(ns, name).dump(2);
  setCapacity(stack(), {{"location", "me-west1"}, {"available", true}});
  ASSERT_TRUE(stack().waitForPhase(ns, name, "Succeeded", seconds(120))) << stack().getRun(ns, name).dump(2);
  auto status = stack().getRun(ns, name)["status"];
  EXPECT_EQ(status["attempts"].size(), 1u) << status.dump(2);
  EXPECT_EQ(eventsOf(ns, name).find("QueueTimeout"), std::string::npos);
}

TEST(TrainingRunCapacity, ASpotStockoutAfterACheckpointResumesOnTheSamePlacement) {
  // Google: a preempted Spot VM that is not restarted fails the job with STOCKOUT.
  const std::string ns = "cap-spot", name = "spot";
  applyYaml(stack(), runYaml(ns, name, "southamerica-east1",
                             kCpu + "\n  scheduling: {strategy: Spot}\n  checkpointing: {resumeBackoff: 1s}",
                             "    fallbacks: [{location: southamerica-west1}]\n    blockFor: 3h\n"));
  std::string first = jobOfAttempt(ns, name, 1);
  ASSERT_FALSE(first.empty()) << stack().operatorLog();
  ASSERT_TRUE(waitFor(
      [&] {
        auto trace = emulatorCall(stack(), "GET", "/emulator/v1/" + first + ":trace");
        return trace.is_object() && trace.value("stepsRun", json::array()).size() >= 2;
      },
      seconds(120), std::chrono::milliseconds(50)));
  ASSERT_TRUE(emulatorCall(stack(), "POST", "/emulator/v1/" + first + ":fail", R"({"failureClass": "SpotStockout"})").is_object());
  ASSERT_TRUE(stack().waitForPhase(ns, name, "Succeeded", seconds(120))) << stack().getRun(ns, name).dump(2);
  auto status = stack().getRun(ns, name)["status"];
  ASSERT_EQ(status["attempts"].size(), 2u) << status.dump(2);
  EXPECT_EQ(status["attempts"][0]["failureClass"], "Preemption") << status.dump(2);
  EXPECT_EQ(status["attempts"][1]["placement"], 0);
  EXPECT_EQ(locationOfJob(status["attempts"][1]["jobName"]), "southamerica-east1");
  EXPECT_FALSE(status["attempts"][1].value("resumedFrom", "").empty()) << "it resumed from its checkpoint";
  EXPECT_EQ(status["resumes"], 1);
  EXPECT_TRUE(!status.contains("capacity") || status["capacity"].value("blocked", json::array()).empty()) << status.dump(2);
  EXPECT_EQ(eventsOf(ns, name).find("CapacityFailover"), std::string::npos);
}

TEST(TrainingRunCapacity, AFallbackOutsideTheTenancyRuleRefusesTheRunBeforeAnyJob) {
  const std::string ns = kTenancyNamespace, name = "outside";
  ASSERT_TRUE(stack().waitForPhase(ns, name, "Invalid", seconds(120))) << stack().getRun(ns, name).dump(2);
  auto run = stack().getRun(ns, name);
  auto valid = conditionOf(run, "Valid");
  EXPECT_EQ(valid["status"], "False");
  EXPECT_EQ(valid["reason"], "TenantPolicyViolation");
  std::string message = valid["message"];
  EXPECT_EQ(message.rfind("spec.capacity.fallbacks[0]:", 0), 0u) << message;
  EXPECT_NE(message.find("us-east4"), std::string::npos) << message;
  EXPECT_TRUE(jobsOfRun(uidOf(ns, name), {"us-central1", "us-east4"}).empty());
}

TEST(TrainingRunCapacity, SigkillDuringAFailoverLeavesNoDuplicateJob) {
  const std::string ns = "cap-kill", name = "killed";
  const std::vector<std::string> regions = {"northamerica-northeast1", "northamerica-northeast2"};
  applyYaml(stack(), runYaml(ns, name, regions[0], kCpu, "    fallbacks: [{location: " + regions[1] + "}]\n    blockFor: 1h\n"));
  std::string uid = uidOf(ns, name);
  auto jobsNow = [&] { return jobsOfRun(uid, regions); };
  // Killed once as attempt 1's stockout shows, and once as attempt 2's job appears: in the middle of
  // the failover, before and after its create.
  ASSERT_TRUE(waitFor(
      [&] {
        auto jobs = jobsNow();
        return !jobs.empty() && jobs.front().state == vertex::JobState::Failed;
      },
      seconds(120), std::chrono::milliseconds(20)));
  EXPECT_EQ(stack().stopOperator(SIGKILL), 128 + SIGKILL);
  stack().startOperator(operatorFlags(stack().dir()));
  ASSERT_TRUE(waitFor([&] { return jobsNow().size() >= 2; }, seconds(120), std::chrono::milliseconds(20)))
      << stack().operatorLog();
  EXPECT_EQ(stack().stopOperator(SIGKILL), 128 + SIGKILL);
  stack().startOperator(operatorFlags(stack().dir()));

  ASSERT_TRUE(stack().waitForPhase(ns, name, "Succeeded", seconds(120))) << stack().getRun(ns, name).dump(2);
  auto jobs = jobsNow();
  EXPECT_EQ(jobs.size(), 2u);
  expectOneJobPerAttempt(jobs, 2);
  auto status = stack().getRun(ns, name)["status"];
  EXPECT_EQ(locationOfJob(status["attempts"][1]["jobName"]), regions[1]);
  auto elapsed = std::chrono::duration_cast<seconds>(std::chrono::steady_clock::now() - kStarted).count();
  std::cout << "[ figures  ] capacity scenarios done in " << elapsed << " s\n";
}

}  // namespace
}  // namespace vto::testing
