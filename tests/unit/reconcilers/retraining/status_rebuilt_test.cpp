// A policy's status is rebuilt from what a pass observes, and only its watermarks are carried: a pass
// with nothing new must compute exactly the stored status, every field of it. The fixture sets every
// field with designated initializers, and a missing one is a compile error here: a field added to
// crd::RetrainingPolicyStatus must be added below, and decide must then rebuild or carry it, or this
// test fails (never reset, nor carried, silently).
#pragma GCC diagnostic error "-Wmissing-field-initializers"

#include <gtest/gtest.h>

#include "base/rfc3339.h"
#include "reconcilers/retraining/decide.h"

namespace vto::reconcilers {
namespace {

using nlohmann::json;
using std::chrono::minutes;
using std::chrono::seconds;

const Clock::time_point T0 = parseRfc3339("2026-12-01T00:00:00Z");
constexpr const char* kUid = "5f0c9d7e-aaaa-bbbb-cccc-000000000002";

crd::Condition condition(const char* type, const char* status, const char* reason, std::string message = "") {
  return crd::Condition{.type = type,
                        .status = status,
                        .reason = reason,
                        .message = std::move(message),
                        .lastTransitionTime = T0,
                        .observedGeneration = 1};
}

TEST(PolicyStatusRebuilt, APassThatSeesNothingNewComputesTheStoredStatus) {
  auto now = T0 + minutes(90) + seconds(20);
  crd::RetrainingPolicyStatus stored{
      .observedGeneration = 1,
      .active = {},
      .nextScheduleTime = T0 + minutes(120),
      .history =
          crd::PolicyHistory{
              .lastTrigger = crd::TriggerRecord{.time = T0 + minutes(60), .reason = crd::TriggerReason::Schedule},
              .lastScheduleTime = T0 + minutes(60),
              .lastSuccessfulTime = T0 + minutes(70),
              .lastSuccessfulRun = crd::SuccessfulRun{.name = "fraud-1764550800",
                                                      .completionTime = T0 + minutes(70),
                                                      .modelUri = "gs://bucket/fraud/fraud-1764550800/model/"},
              .lastHandledRetrainRequest = "42",
              .missedSchedules = 3,
              .counts = crd::RunCounts{.succeeded = 5, .failed = 2},
              .dataWatermark = crd::DataWatermark{.timeCreated = T0 + minutes(80),
                                                  .name = "in/day-9.csv",
                                                  .pendingObjects = 0,
                                                  .pendingBytes = 0,
                                                  .lastPollTime = T0 + minutes(90)},
              .metric = crd::MetricStatus{.lastValue = 0.93,
                                          .lastEvalTime = T0 + minutes(90),
                                          .breachingSince = std::nullopt,
                                          .consecutiveErrors = 0},
              .champion = crd::Champion{.versionId = "5",
                                        .metric = 0.905,
                                        .run = "fraud-1764550800",
                                        .artifactUri = "gs://bucket/fraud/fraud-1764550800/model/",
                                        .promotedTime = T0 + minutes(75)},
              .lastPromotion = crd::PromotionRecord{.versionId = "6",
                                                    .result = crd::PromotionResult::NotBetter,
                                                    .message = "auc 0.9 is not > 0.905 + 0: version 5 stays champion",
                                                    .time = T0 + minutes(85)},
              .lastHandledPromoteRequest = "",
              .lastComparedVersion = "6",
              // No budget and no priced runs: nothing spent to report, nothing skipped.
              .spend = std::nullopt,
              .lastSkippedTrigger = std::nullopt,
          },
      .conditions = {condition("Valid", "True", "Valid"),
                     condition("Ready", "True", "Reconciled", "next run at 2026-12-01T02:00:00Z"),
                     condition("TriggersHealthy", "True", "Healthy"), condition("Suspended", "False", "NotSuspended"),
                     condition("Reconciling", "False", "Reconciled"), condition("Stalled", "False", "NotStalled")},
  };
  json policy = {{"apiVersion", "vto.dev/v1beta1"},
                 {"kind", "RetrainingPolicy"},
                 {"metadata",
                  {{"name", "fraud"},
                   {"namespace", "risk"},
                   {"uid", kUid},
                   {"generation", 1},
                   {"creationTimestamp", rfc3339Exact(T0)},
                   {"annotations",
                    {{"vto.dev/retrain-requested", "42"},
                     {kScheduleStateAnnotation,
                      formatScheduleState(ScheduleState{.cron = "0 * * * *", .timeZone = "", .suspended = false, .since = T0})},
                     {kDataStateAnnotation, formatDataState(DataState{})},
                     {kMetricHealthAnnotation, formatMetricHealth(MetricHealth{})}}}}},
                 {"spec", json::parse(R"({
                   "template": {"spec": {"trainer": {"container": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}},
                                         "resources": {"machineType": "n1-standard-4"},
                                         "baseOutputDirectory": "gs://bucket/fraud/"}},
                   "triggers": {"schedule": {"cron": "0 * * * *"},
                                "newData": {"gcsPrefix": "gs://data/in/", "pollInterval": "10m"},
                                "metric": {"prometheusUrl": "http://prometheus:9090", "query": "auc", "below": 0.85,
                                           "pollInterval": "5m"}}})")},
                 {"status", crd::encodeRetrainingPolicyStatus(stored)}};
  auto observed = readPolicy(policy, {}, now);
  ASSERT_TRUE(observed.policy) << observed.decodeError;
  auto plan = decidePolicy(observed);
  EXPECT_TRUE(plan.create.empty());
  EXPECT_EQ(plan.status, stored) << crd::encodeRetrainingPolicyStatus(plan.status).dump(2);
  EXPECT_FALSE(plan.scheduleState || plan.dataState || plan.metricHealth) << "no state annotation changes";
}

}  // namespace
}  // namespace vto::reconcilers
