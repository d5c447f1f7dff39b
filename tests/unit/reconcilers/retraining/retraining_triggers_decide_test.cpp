// decidePolicy with the polled triggers (rules 7-9): a poll or a query in, runs, status,
// TriggersHealthy, Events and outcomes out.
#include <gtest/gtest.h>

#include "base/rfc3339.h"
#include "crd/render.h"
#include "crd/timestamp.h"
#include "reconcilers/retraining/decide.h"

namespace vto::reconcilers {
namespace {

using nlohmann::json;
using std::chrono::minutes;
using std::chrono::seconds;

const Clock::time_point T0 = parseRfc3339("2026-12-01T00:00:00Z");
constexpr const char* kUid = "5f0c9d7e-aaaa-bbbb-cccc-000000000002";

std::string at(Clock::duration offset) { return rfc3339Exact(T0 + offset); }

json policy(const std::string& triggers, const std::string& extraSpec = "{}", json status = json::object()) {
  json p = {{"apiVersion", "vto.dev/v1beta1"},
            {"kind", "RetrainingPolicy"},
            {"metadata", {{"name", "fraud"}, {"namespace", "risk"}, {"uid", kUid}, {"generation", 1},
                          {"creationTimestamp", at({})}}},
            {"spec", json::parse(R"({
              "template": {"spec": {"trainer": {"container": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}},
                                    "resources": {"machineType": "n1-standard-4"},
                                    "baseOutputDirectory": "gs://bucket/fraud/"}}})")}};
  p["spec"]["triggers"] = json::parse(triggers);
  p["spec"].merge_patch(json::parse(extraSpec));
  if (!status.empty()) p["status"] = status;
  return p;
}

const char* kData = R"({"newData": {"gcsPrefix": "gs://data/in/", "pollInterval": "10m"}})";
const char* kMetric = R"({"metric": {"prometheusUrl": "http://127.0.0.1:9090", "query": "auc", "below": 0.85,
                                     "for": "0s", "pollInterval": "1m"}})";

// A run of this policy made by `reason`, created at `created`.
json child(const std::string& name, const std::string& reason, Clock::duration created, const std::string& phase = "",
           std::optional<Clock::duration> completed = std::nullopt) {
  json run = {{"metadata",
               {{"name", name}, {"namespace", "risk"}, {"creationTimestamp", at(created)},
                {"annotations", {{"vto.dev/trigger-reason", reason}, {"vto.dev/trigger-time", at(created)}}},
                {"ownerReferences", json::array({{{"uid", kUid}, {"controller", true}}})}}},
              {"spec", {{"baseOutputDirectory", "gs://bucket/fraud/" + name}}}};
  if (!phase.empty()) run["status"]["phase"] = phase;
  if (completed) run["status"]["completionTime"] = at(*completed);
  return run;
}

DataPoll poll(Clock::duration now, const std::optional<crd::DataWatermark>& status,
              const std::vector<std::pair<std::string, Clock::duration>>& objects) {
  std::optional<DataPosition> watermark;
  if (status && status->timeCreated) watermark = DataPosition{*status->timeCreated, status->name};
  static const DataState none;
  DataPoll p{T0 + now, NewDataScan(!status || !status->lastPollTime, watermark, none), ""};
  for (const auto& [name, created] : objects) p.scan->add({name, "1", T0 + created, 100});
  return p;
}

std::string condition(const PolicyPlan& plan, const std::string& type) {
  for (const auto& c : plan.status.conditions)
    if (c.type == type) return c.status + "/" + c.reason;
  return "";
}
bool hasEvent(const PolicyPlan& plan, const std::string& reason) {
  return std::any_of(plan.events.begin(), plan.events.end(), [&](const auto& e) { return e.reason == reason; });
}
std::string envOf(const json& run, const std::string& name) {
  auto job = crd::renderCustomJob(crd::decodeTrainingRun(run), 1, "");
  for (const auto& e : job["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"])
    if (e["name"] == name) return e["value"];
  return "";
}
json statusWith(const crd::DataWatermark& mark) {
  crd::RetrainingPolicyStatus status;
  status.history.dataWatermark = mark;
  return crd::encodeRetrainingPolicyStatus(status);
}

TEST(RetrainingTriggersDecide, TheFirstPollSetsTheWatermarkAndRequeuesAtTheNext) {
  auto in = readPolicy(policy(kData), {}, T0 + minutes(1));
  in.dataPoll = poll(minutes(1), std::nullopt, {{"in/a", seconds(5)}});
  auto plan = decidePolicy(in);
  EXPECT_TRUE(plan.create.empty());
  ASSERT_TRUE(plan.status.history.dataWatermark);
  EXPECT_EQ(plan.status.history.dataWatermark->name, "in/a");
  EXPECT_EQ(plan.status.history.dataWatermark->lastPollTime, T0 + minutes(1));
  EXPECT_EQ(plan.requeueAfter, minutes(10));
  EXPECT_EQ(condition(plan, "TriggersHealthy"), "True/Healthy");
  EXPECT_EQ(condition(plan, "Ready"), "True/Reconciled");
  EXPECT_EQ(condition(plan, "Stalled"), "False/NotStalled");
  ASSERT_TRUE(plan.dataState);
}

TEST(RetrainingTriggersDecide, NewDataMakesOneRunNamedByTheNewestObjectWithItsWatermark) {
  crd::DataWatermark mark{T0, "in/a", 0, 0, T0};
  auto in = readPolicy(policy(kData, "{}", statusWith(mark)), {}, T0 + minutes(10));
  in.dataPoll = poll(minutes(10), mark, {{"in/a", {}}, {"in/b", seconds(61)}, {"in/c", seconds(62)}});
  auto plan = decidePolicy(in);
  ASSERT_EQ(plan.create.size(), 1u);
  const auto& run = plan.create[0].run;
  auto unix = std::chrono::duration_cast<seconds>((T0 + seconds(62)).time_since_epoch()).count();
  EXPECT_EQ(run["metadata"]["name"], "fraud-" + std::to_string(unix));
  EXPECT_EQ(envOf(run, "VTO_TRIGGER_REASON"), "NewData");
  EXPECT_EQ(envOf(run, "VTO_DATA_WATERMARK"), at(seconds(62)));
  EXPECT_EQ(run["metadata"]["annotations"][kDataWatermarkNameAnnotation], "in/c");
  EXPECT_EQ(plan.status.history.dataWatermark->name, "in/c");
  EXPECT_EQ(plan.status.history.dataWatermark->pendingObjects, 0);
  EXPECT_EQ(plan.status.history.lastTrigger->reason, crd::TriggerReason::NewData);
}

TEST(RetrainingTriggersDecide, ARunsWatermarkIsCarriedWhenStatusLostIt) {
  // Status was wiped; the run made for in/c says where the data stood: nothing re-fires.
  auto run = child("fraud-1", "NewData", minutes(5), "Succeeded", minutes(8));
  run["metadata"]["annotations"][crd::kDataWatermarkAnnotation] = at(seconds(62));
  run["metadata"]["annotations"][kDataWatermarkNameAnnotation] = "in/c";
  auto in = readPolicy(policy(kData), {run}, T0 + minutes(20));
  // A listing taken against status's lost watermark would count in/b and in/c again: not judged.
  in.dataPoll = poll(minutes(20), std::nullopt, {{"in/b", seconds(61)}, {"in/c", seconds(62)}});
  auto plan = decidePolicy(in);
  EXPECT_TRUE(plan.create.empty());
  EXPECT_EQ(plan.status.history.dataWatermark->name, "in/c");
  // The next listing, against the carried watermark, finds nothing new either.
  auto again = readPolicy(policy(kData, "{}", crd::encodeRetrainingPolicyStatus(plan.status)), {run}, T0 + minutes(21));
  crd::DataWatermark carried{T0 + seconds(62), "in/c", 0, 0, T0 + minutes(5)};
  again.dataPoll = poll(minutes(21), carried, {{"in/b", seconds(61)}, {"in/c", seconds(62)}});
  auto next = decidePolicy(again);
  EXPECT_TRUE(next.create.empty());
  EXPECT_EQ(next.status.history.dataWatermark->name, "in/c");
  EXPECT_EQ(next.status.history.dataWatermark->lastPollTime, T0 + minutes(21)) << "judged";
}

TEST(RetrainingTriggersDecide, APollErrorMakesTriggersUnhealthyWithAWarning) {
  crd::DataWatermark mark{T0, "in/a", 0, 0, T0};
  auto in = readPolicy(policy(kData, "{}", statusWith(mark)), {}, T0 + minutes(10));
  in.dataPoll = DataPoll{T0 + minutes(10), std::nullopt, "listing gs://data/in/ failed (HTTP 403)"};
  auto plan = decidePolicy(in);
  EXPECT_TRUE(plan.create.empty());
  EXPECT_EQ(condition(plan, "TriggersHealthy"), "False/DataPollFailed");
  // kstatus: a trigger that does not answer makes the policy not Ready; it clears by itself, so not Stalled.
  EXPECT_EQ(condition(plan, "Ready"), "False/DataPollFailed");
  EXPECT_EQ(condition(plan, "Stalled"), "False/NotStalled");
  EXPECT_EQ(condition(plan, "Reconciling"), "False/Reconciled");
  EXPECT_TRUE(hasEvent(plan, "DataPollFailed"));
  // Without a poll the next pass keeps saying so (the failure is in the data-state annotation).
  auto p = policy(kData, "{}", crd::encodeRetrainingPolicyStatus(plan.status));
  p["metadata"]["annotations"][kDataStateAnnotation] = formatDataState(*plan.dataState);
  auto next = decidePolicy(readPolicy(p, {}, T0 + minutes(11)));
  EXPECT_EQ(condition(next, "TriggersHealthy"), "False/DataPollFailed");
}

TEST(RetrainingTriggersDecide, CooldownSkipsAPolledTriggerButNotAManualRequest) {
  crd::DataWatermark mark{T0, "in/a", 0, 0, T0};
  auto p = policy(kData, R"({"cooldown": "1h", "concurrencyPolicy": "Allow", "maxActiveRuns": 5})", statusWith(mark));
  std::vector<json> children = {child("fraud-1", "Metric", minutes(0), "Succeeded", minutes(5))};
  auto in = readPolicy(p, children, T0 + minutes(30));
  in.dataPoll = poll(minutes(30), mark, {{"in/b", minutes(20)}});
  auto plan = decidePolicy(in);
  EXPECT_TRUE(plan.create.empty());
  EXPECT_TRUE(hasEvent(plan, "SkippedCooldown"));
  ASSERT_EQ(plan.outcomes.size(), 1u);
  EXPECT_EQ(plan.outcomes[0].outcome, "skipped_cooldown");
  EXPECT_EQ(plan.status.history.dataWatermark->pendingObjects, 1);  // still pending, fires after the cooldown
  // A manual request in the same cooldown starts at once.
  p["metadata"]["annotations"]["vto.dev/retrain-requested"] = "1";
  auto manual = decidePolicy(readPolicy(p, children, T0 + minutes(30)));
  ASSERT_EQ(manual.create.size(), 1u);
  EXPECT_EQ(manual.create[0].firing.reason, crd::TriggerReason::Manual);
}

TEST(RetrainingTriggersDecide, AMetricBreachFiresOnceAndNotWhileItsRunIsActive) {
  auto in = readPolicy(policy(kMetric), {}, T0 + seconds(90));
  in.metricEval = MetricEval{T0 + seconds(90), {MetricResult::Kind::Value, 0.5, ""}};
  auto plan = decidePolicy(in);
  ASSERT_EQ(plan.create.size(), 1u);
  auto unix = std::chrono::duration_cast<seconds>((T0 + minutes(1)).time_since_epoch()).count();
  EXPECT_EQ(plan.create[0].run["metadata"]["name"], "fraud-" + std::to_string(unix));
  EXPECT_EQ(plan.status.history.metric->lastValue, 0.5);
  EXPECT_FALSE(plan.status.history.metric->breachingSince);
  // Next evaluation: its run is active, still breaching, no second run.
  auto p = policy(kMetric, "{}", crd::encodeRetrainingPolicyStatus(plan.status));
  auto later = readPolicy(p, {child("fraud-" + std::to_string(unix), "Metric", seconds(90), "Running")}, T0 + seconds(150));
  later.metricEval = MetricEval{T0 + seconds(150), {MetricResult::Kind::Value, 0.4, ""}};
  EXPECT_TRUE(decidePolicy(later).create.empty());
}

TEST(RetrainingTriggersDecide, AmbiguousAndFailedQueriesAreUnhealthyNeverARun) {
  auto in = readPolicy(policy(kMetric), {}, T0);
  in.metricEval = MetricEval{T0, {MetricResult::Kind::Ambiguous, 0, "2 series"}};
  auto plan = decidePolicy(in);
  EXPECT_TRUE(plan.create.empty());
  EXPECT_EQ(condition(plan, "TriggersHealthy"), "False/MetricQueryAmbiguous");

  crd::RetrainingPolicyStatus status;
  status.history.metric = crd::MetricStatus{std::nullopt, T0, std::nullopt, 3};
  auto failing = readPolicy(policy(kMetric, "{}", crd::encodeRetrainingPolicyStatus(status)), {}, T0 + minutes(1));
  failing.metricEval = MetricEval{T0 + minutes(1), {MetricResult::Kind::Failed, 0, "connection refused"}};
  auto failed = decidePolicy(failing);
  EXPECT_TRUE(failed.create.empty());
  EXPECT_EQ(condition(failed, "TriggersHealthy"), "False/MetricQueryFailed");
  EXPECT_TRUE(hasEvent(failed, "MetricQueryFailed"));
  EXPECT_EQ(failed.status.history.metric->consecutiveErrors, 4);
}

TEST(RetrainingTriggersDecide, ASuspendedPolicyNeitherPollsNorWakesForPolls) {
  crd::DataWatermark mark{T0, "in/a", 3, 30, T0};
  auto plan = decidePolicy(readPolicy(policy(kData, R"({"suspend": true})", statusWith(mark)), {}, T0 + minutes(30)));
  EXPECT_TRUE(plan.create.empty());
  EXPECT_EQ(plan.requeueAfter, Clock::duration::zero());
  EXPECT_EQ(plan.status.history.dataWatermark->pendingObjects, 3);
}

}  // namespace
}  // namespace vto::reconcilers
