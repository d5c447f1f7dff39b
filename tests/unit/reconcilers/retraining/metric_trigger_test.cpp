// The metric trigger's pure logic (rule 8): Prometheus answers classified, and a breach that must
// hold for `for`, on a simulated clock.
#include <gtest/gtest.h>

#include <cmath>

#include "base/rfc3339.h"
#include "crd/timestamp.h"
#include "reconcilers/retraining/metric_trigger.h"
#include "tests/fakes/clock_fake.h"

namespace vto::reconcilers {
namespace {

using Kind = MetricResult::Kind;
using std::chrono::minutes;
using std::chrono::seconds;

const Clock::time_point T0 = parseRfc3339("2026-12-01T00:00:00Z");

std::string vector(const std::vector<std::string>& values) {
  std::string series;
  for (size_t i = 0; i < values.size(); ++i) {
    series += (i ? "," : "") + std::string(R"({"metric":{"i":")") + std::to_string(i) + R"("},"value":[1764547200.5,")" +
              values[i] + R"("]})";
  }
  return R"({"status":"success","data":{"resultType":"vector","result":[)" + series + "]}}";
}

TEST(ClassifyPrometheusResponse, Table) {
  struct Case {
    const char* what;
    int status;
    std::string body;
    Kind kind;
    double value;
  };
  const Case cases[] = {
      {"one sample", 200, vector({"0.91"}), Kind::Value, 0.91},
      {"a scalar", 200, R"({"status":"success","data":{"resultType":"scalar","result":[1,"3"]}})", Kind::Value, 3},
      {"empty is NoData, never 0", 200, vector({}), Kind::NoData, 0},
      {"NaN is NoData", 200, vector({"NaN"}), Kind::NoData, 0},
      {"+Inf is a value", 200, vector({"+Inf"}), Kind::Value, INFINITY},
      {"two series", 200, vector({"0.5", "0.9"}), Kind::Ambiguous, 0},
      {"a range query", 200, R"({"status":"success","data":{"resultType":"matrix","result":[]}})", Kind::Failed, 0},
      {"a bad query", 400, R"({"status":"error","errorType":"bad_data","error":"parse error"})", Kind::Failed, 0},
      {"a 503 page", 503, "<html>unavailable</html>", Kind::Failed, 0},
      {"bad JSON", 200, "{\"status\":", Kind::Failed, 0},
      {"a value that is no number", 200, vector({"abc"}), Kind::Failed, 0},
      {"a value that is no string", 200, R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,2]}]}})",
       Kind::Failed, 0},
  };
  for (const auto& c : cases) {
    auto result = classifyPrometheusResponse(c.status, c.body);
    EXPECT_EQ(result.kind, c.kind) << c.what << ": " << result.detail;
    if (c.kind == Kind::Value) EXPECT_EQ(result.value, c.value) << c.what;
    if (c.kind != Kind::Value) EXPECT_FALSE(result.detail.empty()) << c.what;
  }
  EXPECT_NE(classifyPrometheusResponse(200, vector({"1", "2"})).detail.find("exactly one"), std::string::npos);
  // A page that is not Prometheus's is described, never quoted (the URL is a tenant's: no reflection).
  auto page = classifyPrometheusResponse(200, "<html>internal dashboard: secret-value</html>");
  EXPECT_EQ(page.detail.find("secret-value"), std::string::npos) << page.detail;
  EXPECT_NE(page.detail.find("45 bytes"), std::string::npos) << page.detail;
  EXPECT_NE(classifyPrometheusResponse(400, R"({"status":"error","errorType":"bad_data","error":"parse error"})")
                .detail.find("parse error"),
            std::string::npos);
}

// One trigger, evaluated as the reconciler would every pollInterval.
struct Trigger {
  crd::MetricTrigger spec;
  std::optional<crd::MetricStatus> status;
  MetricHealth health;
  testing::FakeClock clock{T0};
  bool armed = true;

  Trigger() {
    spec.below = 0.85;
    spec.forDuration = minutes(3);
    spec.pollInterval = minutes(1);
  }

  MetricDecision eval(MetricResult result) {
    auto decision = decideMetric(spec, status, health, MetricEval{clock.now(), std::move(result)}, armed, clock.now());
    afterFiring(decision);
    status = decision.status;
    health = decision.health;
    return decision;
  }
  MetricDecision value(double v) { return eval({Kind::Value, v, ""}); }
};

TEST(MetricTrigger, HealthyNeverFires) {
  Trigger t;
  for (int i = 0; i < 10; ++i, t.clock.advance(minutes(1))) EXPECT_FALSE(t.value(0.9).fire);
  EXPECT_EQ(t.status->lastValue, 0.9);
  EXPECT_FALSE(t.status->breachingSince);
}

TEST(MetricTrigger, ABreachShorterThanForDoesNotFire) {
  Trigger t;
  EXPECT_FALSE(t.value(0.8).fire);
  EXPECT_EQ(t.status->breachingSince, T0);
  t.clock.advance(minutes(2));
  EXPECT_FALSE(t.value(0.8).fire);
  t.clock.advance(minutes(1));
  EXPECT_FALSE(t.value(0.9).fire);  // recovered
  EXPECT_FALSE(t.status->breachingSince);
  t.clock.advance(minutes(1));
  EXPECT_FALSE(t.value(0.8).fire);
}

TEST(MetricTrigger, ABreachThatHoldsFiresOnceNamedByTheTruncatedEvaluationTime) {
  Trigger t;
  t.clock.advance(seconds(7));
  t.value(0.8);
  t.clock.advance(minutes(3));
  auto decision = t.value(0.8);
  ASSERT_TRUE(decision.fire);
  EXPECT_EQ(*decision.fire, T0 + minutes(3));  // 00:03:07 truncated to the 1m poll interval
  EXPECT_FALSE(t.status->breachingSince);
  // The run is active: disarmed, the breach is not tracked.
  t.armed = false;
  for (int i = 0; i < 10; ++i) {
    t.clock.advance(minutes(1));
    EXPECT_FALSE(t.value(0.5).fire);
  }
  // Re-armed: the breach must hold `for` again.
  t.armed = true;
  t.clock.advance(minutes(1));
  EXPECT_FALSE(t.value(0.5).fire);
  t.clock.advance(minutes(3));
  EXPECT_TRUE(t.value(0.5).fire);
}

TEST(MetricTrigger, AboveFiresOnHighValues) {
  Trigger t;
  t.spec.below.reset();
  t.spec.above = 100;
  t.spec.forDuration = seconds(0);
  EXPECT_FALSE(t.value(100).fire);
  EXPECT_TRUE(t.value(101).fire);
}

TEST(MetricTrigger, NoDataAndNaNNeverFireAndRestartFor) {
  Trigger t;
  t.spec.forDuration = seconds(0);
  EXPECT_FALSE(t.eval({Kind::NoData, 0, "no series"}).fire);  // never read as 0 < 0.85
  EXPECT_FALSE(t.status->lastValue);
  t.spec.forDuration = minutes(3);
  t.value(0.5);
  t.clock.advance(minutes(2));
  t.eval({Kind::NoData, 0, "NaN"});
  EXPECT_FALSE(t.status->breachingSince);
  t.clock.advance(minutes(1));
  EXPECT_FALSE(t.value(0.5).fire);  // `for` starts again
  EXPECT_EQ(t.health.reason, "");
}

TEST(MetricTrigger, SeveralSeriesAreAmbiguousAndNeverFire) {
  Trigger t;
  t.spec.forDuration = seconds(0);
  auto decision = t.eval({Kind::Ambiguous, 0, "2 series"});
  EXPECT_FALSE(decision.fire);
  EXPECT_EQ(t.health.reason, "MetricQueryAmbiguous");
  EXPECT_EQ(t.status->consecutiveErrors, 0);
  t.value(0.9);
  EXPECT_EQ(t.health.reason, "");
}

TEST(MetricTrigger, FailuresBecomeUnhealthyAfterTheBudgetAndNeverFire) {
  Trigger t;
  t.spec.forDuration = minutes(2);
  t.value(0.5);
  for (int i = 1; i <= 3; ++i) {
    t.clock.advance(minutes(1));
    auto decision = t.eval({Kind::Failed, 0, "connection refused"});
    EXPECT_FALSE(decision.fire);
    EXPECT_FALSE(decision.failedEvent);
    EXPECT_EQ(t.health.reason, "");
    EXPECT_EQ(t.status->consecutiveErrors, i);
  }
  t.clock.advance(minutes(1));
  auto decision = t.eval({Kind::Failed, 0, "connection refused"});
  ASSERT_TRUE(decision.failedEvent);
  EXPECT_NE(decision.failedEvent->find("connection refused"), std::string::npos);
  EXPECT_EQ(t.health.reason, "MetricQueryFailed");
  EXPECT_FALSE(t.status->breachingSince);  // an outage is not a held breach
  t.clock.advance(minutes(1));
  EXPECT_FALSE(t.eval({Kind::Failed, 0, "connection refused"}).failedEvent);  // one Event per outage
  t.clock.advance(minutes(1));
  EXPECT_FALSE(t.value(0.5).fire);
  EXPECT_EQ(t.health.reason, "");
  EXPECT_EQ(t.status->consecutiveErrors, 0);
}

TEST(MetricTrigger, EvaluatesEveryPollInterval) {
  Trigger t;
  EXPECT_EQ(nextMetricEval(t.spec, t.status, t.clock.now()), t.clock.now());
  t.value(0.9);
  t.clock.advance(seconds(20));
  auto decision = decideMetric(t.spec, t.status, t.health, std::nullopt, true, t.clock.now());
  EXPECT_EQ(decision.nextEval, T0 + minutes(1));
  EXPECT_EQ(decision.status.lastValue, 0.9);
}

TEST(MetricTrigger, HealthRoundTripsThroughItsAnnotation) {
  MetricHealth health{"MetricQueryFailed", "4 queries failed"};
  EXPECT_EQ(parseMetricHealth(formatMetricHealth(health)), health);
  EXPECT_FALSE(parseMetricHealth("]"));
}

}  // namespace
}  // namespace vto::reconcilers
