#include "metrics/trainingrun_observer.h"

#include <gtest/gtest.h>

#include "metrics/trainingrun_metrics.h"
#include "tests/fakes/clock_fake.h"

namespace vto::metrics {
namespace {

using std::chrono::seconds;

// The value of one series in what the observer exports, or -1 when the series is absent. Counters and
// gauges give their value, histograms their sample count.
double valueOf(const TrainingRunObserver& observer, const std::string& name, const prometheus::Labels& labels) {
  for (const auto& family : observer.Collect()) {
    if (family.name != name) continue;
    for (const auto& metric : family.metric) {
      prometheus::Labels have;
      for (const auto& label : metric.label) have[label.name] = label.value;
      bool match = true;
      for (const auto& [key, value] : labels) match = match && have.count(key) && have[key] == value;
      if (!match) continue;
      if (family.type == prometheus::MetricType::Counter) return metric.counter.value;
      if (family.type == prometheus::MetricType::Gauge) return metric.gauge.value;
      if (family.type == prometheus::MetricType::Histogram) return static_cast<double>(metric.histogram.sample_count);
    }
  }
  return -1;
}

const std::vector<std::string> kPhases = {"Pending", "Queued", "Running", "Resuming", "Succeeded", "Failed"};

class TrainingRunObserverTest : public ::testing::Test {
 protected:
  TrainingRunObserverTest() : observer(clock, kPhases) { observer.setActive(true); }

  RunSnapshot gpuRun(const std::string& phase) {
    RunSnapshot run;
    run.uid = "uid-1";
    run.ns = "team-a";
    run.name = "resnet";
    run.phase = phase;
    run.framework = "pytorch";
    run.scheduling = "Spot";
    run.acceleratorType = "NVIDIA_L4";
    run.pools = {{"g2-standard-8", "NVIDIA_L4", 2, 3}, {"n1-highcpu-16", "", 0, 1}};
    run.created = created;
    return run;
  }

  testing::FakeClock clock;
  TrainingRunObserver observer;
  Clock::time_point created = clock.now();
};

TEST_F(TrainingRunObserverTest, CountsRunsPerPhaseWithZerosForTheOtherPhasesOfTheNamespace) {
  observer.observe(gpuRun("Queued"));
  EXPECT_EQ(valueOf(observer, "vto_trainingruns", {{"namespace", "team-a"}, {"phase", "Queued"}}), 1);
  EXPECT_EQ(valueOf(observer, "vto_trainingruns", {{"namespace", "team-a"}, {"phase", "Running"}}), 0);
  observer.forget("uid-1");
  EXPECT_EQ(valueOf(observer, "vto_trainingruns", {{"namespace", "team-a"}, {"phase", "Queued"}}), -1);
}

TEST_F(TrainingRunObserverTest, AccountsAcceleratorAndMachineTimeWhileRunningAndStopsWhenItEnds) {
  observer.observe(gpuRun("Queued"));
  clock.advance(seconds(30));
  observer.observe(gpuRun("Running"));
  EXPECT_EQ(valueOf(observer, "vto_trainingrun_queue_seconds", {{"scheduling", "Spot"}, {"accelerator_type", "NVIDIA_L4"}}), 1);
  clock.advance(seconds(100));
  // Grows while the job runs: a scrape accounts up to now. 3 replicas x 2 accelerators x 100 s.
  EXPECT_DOUBLE_EQ(valueOf(observer, "vto_trainingrun_accelerator_seconds_total",
                           {{"namespace", "team-a"}, {"accelerator_type", "NVIDIA_L4"}, {"scheduling", "Spot"}}),
                   600);
  EXPECT_DOUBLE_EQ(valueOf(observer, "vto_trainingrun_machine_seconds_total", {{"machine_type", "n1-highcpu-16"}}), 100);
  clock.advance(seconds(50));
  auto done = gpuRun("Succeeded");
  done.completed = clock.now();
  observer.observe(done);
  clock.advance(seconds(1000));
  EXPECT_DOUBLE_EQ(valueOf(observer, "vto_trainingrun_accelerator_seconds_total", {{"namespace", "team-a"}}), 900);
  EXPECT_EQ(valueOf(observer, "vto_trainingruns_finished_total",
                    {{"namespace", "team-a"}, {"framework", "pytorch"}, {"outcome", "Succeeded"}}),
            1);
  EXPECT_EQ(valueOf(observer, "vto_trainingrun_duration_seconds", {{"outcome", "Succeeded"}}), 1);
  // Seeing the finished run again counts nothing twice.
  observer.observe(done);
  EXPECT_EQ(valueOf(observer, "vto_trainingruns_finished_total", {{"outcome", "Succeeded"}}), 1);
}

TEST_F(TrainingRunObserverTest, CostGrowsAtTheRunningJobsHourlyPriceAndStopsWhenItEnds) {
  auto running = gpuRun("Running");
  running.hourlyUsd = 36.0;  // $0.01 a second
  observer.observe(running);
  clock.advance(seconds(100));
  EXPECT_NEAR(valueOf(observer, "vto_trainingrun_cost_usd_total",
                      {{"namespace", "team-a"}, {"accelerator_type", "NVIDIA_L4"}, {"scheduling", "Spot"}}),
              1.0, 1e-9);
  auto done = gpuRun("Succeeded");
  done.completed = clock.now();
  observer.observe(done);
  clock.advance(seconds(1000));
  EXPECT_NEAR(valueOf(observer, "vto_trainingrun_cost_usd_total", {{"namespace", "team-a"}}), 1.0, 1e-9);
}

TEST_F(TrainingRunObserverTest, ASnapshotWithoutPoolsKeepsThoseOfTheSameGenerationOnly) {
  auto running = gpuRun("Running");
  running.generation = 1;
  running.poolsRead = true;
  observer.observe(running);
  EXPECT_TRUE(observer.hasPools("uid-1", 1));
  EXPECT_FALSE(observer.hasPools("uid-1", 2)) << "a new spec may have other machines";
  auto unread = running;  // what the handler sends when hasPools() said yes: no pools rendered
  unread.pools.clear();
  unread.acceleratorType = "none";
  unread.poolsRead = false;
  observer.observe(unread);
  clock.advance(seconds(100));
  EXPECT_DOUBLE_EQ(valueOf(observer, "vto_trainingrun_accelerator_seconds_total", {{"namespace", "team-a"}}), 600)
      << "3 replicas x 2 accelerators x 100 s, from the pools kept";
  unread.generation = 2;  // edited: the old pools no longer stand
  observer.observe(unread);
  clock.advance(seconds(100));
  EXPECT_DOUBLE_EQ(valueOf(observer, "vto_trainingrun_accelerator_seconds_total", {{"namespace", "team-a"}}), 600);
}

TEST_F(TrainingRunObserverTest, CountsEachFailedAttemptOnceByFailureClass) {
  observer.observe(gpuRun("Running"));
  auto resuming = gpuRun("Resuming");
  resuming.failedAttempts = {{1, "Preemption"}};
  observer.observe(resuming);
  observer.observe(resuming);
  auto again = gpuRun("Running");
  again.failedAttempts = {{1, "Preemption"}, {2, "Stockout"}};
  observer.observe(again);
  EXPECT_EQ(valueOf(observer, "vto_trainingrun_attempt_failures_total", {{"failure_class", "Preemption"}}), 1);
  EXPECT_EQ(valueOf(observer, "vto_trainingrun_attempt_failures_total", {{"failure_class", "Stockout"}}), 1);
}

// Runs waiting for Kueue: a gauge per namespace (0 included), and each wait, before the first job
// and again after an eviction, once it ends.
TEST_F(TrainingRunObserverTest, KueueWaitsAreCountedNowAndTimedWhenKueueAdmits) {
  auto waiting = gpuRun("Queued");
  waiting.waitingForKueue = true;
  observer.observe(waiting);
  auto other = gpuRun("Running");
  other.uid = "uid-2";
  observer.observe(other);
  EXPECT_EQ(valueOf(observer, "vto_trainingruns_waiting_for_kueue", {{"namespace", "team-a"}}), 1);
  EXPECT_EQ(valueOf(observer, "vto_trainingrun_kueue_wait_seconds", {}), -1) << "still waiting";
  clock.advance(seconds(40));
  observer.observe(gpuRun("Submitted"));  // admitted: its job is created in the same pass
  EXPECT_EQ(valueOf(observer, "vto_trainingruns_waiting_for_kueue", {{"namespace", "team-a"}}), 0);
  EXPECT_EQ(valueOf(observer, "vto_trainingrun_kueue_wait_seconds", {{"namespace", "team-a"}}), 1);
  double sum = -1;
  for (const auto& family : observer.Collect())
    if (family.name == "vto_trainingrun_kueue_wait_seconds") sum = family.metric.at(0).histogram.sample_sum;
  EXPECT_EQ(sum, 40);
  // Evicted, waiting again, and deleted while waiting: a second wait, the gauge back to 0.
  observer.observe(waiting);
  clock.advance(seconds(5));
  observer.observe(waiting);
  EXPECT_EQ(valueOf(observer, "vto_trainingrun_kueue_wait_seconds", {{"namespace", "team-a"}}), 1);
  auto cancelled = gpuRun("Cancelled");
  cancelled.waitingForKueue = true;  // its last Ready condition, kept by a finished run
  observer.observe(cancelled);
  EXPECT_EQ(valueOf(observer, "vto_trainingrun_kueue_wait_seconds", {{"namespace", "team-a"}}), 2);
  EXPECT_EQ(valueOf(observer, "vto_trainingruns_waiting_for_kueue", {{"namespace", "team-a"}}), 0);
}

TEST(TrainingRunMetrics, KueueEvictionsAreCountedByKueuesReasonBoundedToTheReasonsItHas) {
  prometheus::Registry registry;
  TrainingRunMetrics metrics(registry);
  metrics.kueueEviction("team-a", "Preempted");
  metrics.kueueEviction("team-a", "Preempted");
  metrics.kueueEviction("team-a", "DeactivatedDueToMaximumExecutionTimeExceeded");
  metrics.kueueEviction("team-a", "whatever a hand-written condition says");
  std::map<std::string, double> byReason;
  for (const auto& family : registry.Collect()) {
    if (family.name != "vto_trainingrun_kueue_evictions_total") continue;
    for (const auto& metric : family.metric)
      for (const auto& label : metric.label)
        if (label.name == "reason") byReason[label.value] = metric.counter.value;
  }
  EXPECT_EQ(byReason, (std::map<std::string, double>{
                          {"Preempted", 2}, {"DeactivatedDueToMaximumExecutionTimeExceeded", 1}, {"Other", 1}}));
}

TEST_F(TrainingRunObserverTest, TheFirstSightIsABaselineNotATransition) {
  // What the start-up list shows happened before this process: nothing is counted for it.
  auto old = gpuRun("Failed");
  old.failedAttempts = {{1, "Preemption"}};
  observer.observe(old);
  EXPECT_EQ(valueOf(observer, "vto_trainingruns_finished_total", {}), -1);
  EXPECT_EQ(valueOf(observer, "vto_trainingrun_attempt_failures_total", {}), -1);
  EXPECT_EQ(valueOf(observer, "vto_trainingruns", {{"phase", "Failed"}}), 1);
}

TEST_F(TrainingRunObserverTest, AStandbyExportsNothingAndDoesNotCountTheLeadersTime) {
  TrainingRunObserver standby(clock, kPhases);
  auto run = gpuRun("Queued");
  standby.observe(run);
  run.phase = "Running";
  standby.observe(run);
  clock.advance(seconds(100));
  EXPECT_EQ(valueOf(standby, "vto_trainingruns", {}), -1);
  EXPECT_EQ(valueOf(standby, "vto_trainingrun_accelerator_seconds_total", {}), -1);
  // Taking over: only time from now on is this replica's to count.
  standby.setActive(true);
  clock.advance(seconds(10));
  EXPECT_DOUBLE_EQ(valueOf(standby, "vto_trainingrun_accelerator_seconds_total", {{"namespace", "team-a"}}), 60);
  EXPECT_EQ(valueOf(standby, "vto_trainingruns", {{"phase", "Running"}}), 1);
}

TEST_F(TrainingRunObserverTest, ProgressAndEtaArePerRunOnlyUntilTheRunFinishes) {
  auto running = gpuRun("Running");
  EXPECT_EQ(valueOf(observer, "vto_trainingrun_progress_ratio", {}), -1);
  running.progressRatio = 0.7;
  running.eta = Clock::time_point(seconds(1'800'000'000));
  observer.observe(running);
  EXPECT_DOUBLE_EQ(valueOf(observer, "vto_trainingrun_progress_ratio", {{"namespace", "team-a"}, {"name", "resnet"}}), 0.7);
  EXPECT_DOUBLE_EQ(valueOf(observer, "vto_trainingrun_eta_timestamp_seconds", {{"namespace", "team-a"}, {"name", "resnet"}}),
                   1'800'000'000);
  // Preempted: the progress stays, the ETA of the attempt that ended goes.
  auto resuming = running;
  resuming.phase = "Resuming";
  resuming.eta.reset();
  observer.observe(resuming);
  EXPECT_DOUBLE_EQ(valueOf(observer, "vto_trainingrun_progress_ratio", {{"name", "resnet"}}), 0.7);
  EXPECT_EQ(valueOf(observer, "vto_trainingrun_eta_timestamp_seconds", {{"name", "resnet"}}), -1);
  auto done = running;
  done.phase = "Succeeded";
  done.progressRatio = 1.0;
  observer.observe(done);
  EXPECT_EQ(valueOf(observer, "vto_trainingrun_progress_ratio", {{"name", "resnet"}}), -1);
  EXPECT_EQ(valueOf(observer, "vto_trainingrun_eta_timestamp_seconds", {{"name", "resnet"}}), -1);
  // A standby exports no per-run series either.
  TrainingRunObserver standby(clock, kPhases);
  standby.observe(running);
  EXPECT_EQ(valueOf(standby, "vto_trainingrun_progress_ratio", {}), -1);
}

TEST_F(TrainingRunObserverTest, ADeletedRunningRunIsAccountedUpToItsDeletion) {
  observer.observe(gpuRun("Queued"));
  observer.observe(gpuRun("Running"));
  clock.advance(seconds(10));
  observer.forget("uid-1");
  clock.advance(seconds(100));
  EXPECT_DOUBLE_EQ(valueOf(observer, "vto_trainingrun_accelerator_seconds_total", {{"namespace", "team-a"}}), 60);
}

}  // namespace
}  // namespace vto::metrics
