// Promotion as tables over decidePolicy: a policy with spec.promotion, its runs' registered versions
// and what the registry says of the alias holder in; the alias move, status.champion,
// status.lastPromotion, the Events and the watermark out.
#include <gtest/gtest.h>

#include "base/rfc3339.h"
#include "reconcilers/retraining/decide.h"

namespace vto::reconcilers {
namespace {

using nlohmann::json;
using std::chrono::minutes;

const Clock::time_point T0 = parseRfc3339("2026-12-01T00:00:00Z");
constexpr const char* kUid = "5f0c9d7e-aaaa-bbbb-cccc-000000000003";
constexpr const char* kModel = "projects/p-123456/locations/us-central1/models/fraud";

json policy(const std::string& promotion, const std::string& status = "{}", json annotations = json::object()) {
  json p = {{"apiVersion", "vto.dev/v1beta1"},
            {"kind", "RetrainingPolicy"},
            {"metadata",
             {{"name", "fraud"}, {"namespace", "risk"}, {"uid", kUid}, {"generation", 1},
              {"creationTimestamp", rfc3339Exact(T0)}, {"annotations", annotations}}},
            {"spec", json::parse(R"({
              "template": {"spec": {"trainer": {"container": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}},
                                    "resources": {"machineType": "n1-standard-4"},
                                    "project": "p-123456", "location": "us-central1",
                                    "baseOutputDirectory": "gs://bucket/fraud/",
                                    "model": {"model": "fraud",
                                              "servingContainer": {"imageUri": "us-docker.pkg.dev/vertex-ai/prediction/xgboost-cpu.1-7:latest"},
                                              "evaluation": {"metricsFile": "metrics.json"}}}},
              "successfulRunsHistoryLimit": 10})")}};
  p["spec"]["promotion"] = json::parse(promotion);
  p["status"] = json::parse(status);
  return p;
}

// A succeeded run of the policy whose model registered as `versionId` with `metrics`.
json run(const std::string& name, const std::string& versionId, const json& metrics, const std::string& metricsError = "") {
  json model = {{"name", kModel}, {"versionId", versionId}, {"artifactUri", "gs://bucket/fraud/" + name + "/model/"}};
  if (!metrics.empty()) model["metrics"] = metrics;
  if (!metricsError.empty()) model["metricsError"] = metricsError;
  return {{"apiVersion", "vto.dev/v1beta1"},
          {"kind", "TrainingRun"},
          {"metadata",
           {{"name", name}, {"namespace", "risk"}, {"uid", "run-" + name}, {"creationTimestamp", rfc3339Exact(T0)},
            {"labels", {{"vto.dev/retraining-policy", "fraud"}}},
            {"annotations", {{"vto.dev/trigger-reason", "Manual"}, {"vto.dev/trigger-time", rfc3339Exact(T0)}}},
            {"ownerReferences", json::array({{{"apiVersion", "vto.dev/v1beta1"}, {"kind", "RetrainingPolicy"},
                                              {"name", "fraud"}, {"uid", kUid}, {"controller", true}}})}}},
          {"spec", {{"baseOutputDirectory", "gs://bucket/fraud/" + name}, {"model", {{"model", "fraud"}}}}},
          {"status",
           {{"phase", "Succeeded"},
            {"completionTime", rfc3339Exact(T0 + minutes(5))},
            {"model", model},
            {"conditions", json::array({{{"type", "ModelRegistered"}, {"status", "True"}, {"reason", "VersionRegistered"}}})}}}};
}

struct Case {
  const char* name;
  std::string promotion;
  std::string status;  // the policy's stored status
  std::vector<json> runs;
  std::optional<VersionMetric> holder;  // who holds the alias, as observe read it
  // Expected:
  std::optional<crd::PromotionResult> result;
  std::string moved;          // the version the alias moves to; "" none
  std::string champion;       // status.champion.versionId after
  std::string compared;       // status.lastComparedVersion after
  std::string messagePart;    // in lastPromotion.message
};

VersionMetric holding(const std::string& versionId, std::optional<double> metric) {
  return VersionMetric{versionId, metric, "", "gs://bucket/fraud/old/model/"};
}

class PromotionTable : public ::testing::TestWithParam<Case> {};

TEST_P(PromotionTable, DecidesAsTheRulesSay) {
  const auto& c = GetParam();
  auto observed = readPolicy(policy(c.promotion, c.status), c.runs, T0 + minutes(10));
  ASSERT_TRUE(observed.policy) << observed.decodeError;
  auto work = promotionWork(observed);
  ASSERT_TRUE(work.any());
  observed.promotion = PromotionReading{kModel, c.holder, std::nullopt, std::nullopt};
  auto plan = decidePolicy(observed);
  ASSERT_FALSE(plan.invalid) << (plan.status.conditions.empty() ? "" : plan.status.conditions[0].message);
  ASSERT_EQ(plan.promotion, c.result);
  const auto& history = plan.status.history;
  ASSERT_TRUE(history.lastPromotion);
  EXPECT_EQ(history.lastPromotion->result, *c.result);
  EXPECT_NE(history.lastPromotion->message.find(c.messagePart), std::string::npos) << history.lastPromotion->message;
  if (c.moved.empty()) {
    EXPECT_FALSE(plan.moveAlias);
  } else {
    ASSERT_TRUE(plan.moveAlias);
    EXPECT_EQ(plan.moveAlias->versionName, std::string(kModel) + "@" + c.moved);
    // The holder gives the alias up first, so the move works where Vertex refuses to move it implicitly.
    EXPECT_EQ(plan.moveAlias->fromVersionName, c.holder ? std::string(kModel) + "@" + c.holder->versionId : "");
  }
  EXPECT_EQ(history.champion ? history.champion->versionId : "", c.champion);
  EXPECT_EQ(history.lastComparedVersion, c.compared);
  bool promoted = *c.result == crd::PromotionResult::Promoted;
  EXPECT_TRUE(std::any_of(plan.events.begin(), plan.events.end(), [&](const auto& e) {
    return e.reason == (promoted ? "ModelPromoted" : "ModelNotPromoted") && e.message == history.lastPromotion->message;
  }));
}

const std::string kMaximize = R"({"metric": "auc", "goal": "Maximize", "minImprovement": 0.002, "alias": "champion"})";
const std::string kMinimize = R"({"metric": "loss", "goal": "Minimize", "minImprovement": 0.01, "alias": "champion"})";
const std::string kChampion5 = R"({"champion": {"versionId": "5", "metric": 0.905, "run": "fraud-5"}, "lastComparedVersion": "5"})";

INSTANTIATE_TEST_SUITE_P(
    Promotion, PromotionTable,
    ::testing::Values(
        Case{"TheFirstVersionWithTheMetricBecomesChampion", kMaximize, "{}", {run("fraud-1", "1", {{"auc", 0.9}})},
             std::nullopt, crd::PromotionResult::Promoted, "1", "1", "1", "the first version with auc"},
        Case{"ABetterVersionByMoreThanMinImprovementIsPromoted", kMaximize, kChampion5,
             {run("fraud-7", "7", {{"auc", 0.913}})}, holding("5", 0.905), crd::PromotionResult::Promoted, "7", "7", "7",
             "auc 0.913 > 0.905 + 0.002"},
        Case{"BetterByLessThanMinImprovementKeepsTheChampion", kMaximize, kChampion5,
             {run("fraud-7", "7", {{"auc", 0.906}})}, holding("5", 0.905), crd::PromotionResult::NotBetter, "", "5", "7",
             "auc 0.906 is not > 0.905 + 0.002"},
        Case{"ATieKeepsTheChampion", R"({"metric": "auc"})", kChampion5, {run("fraud-7", "7", {{"auc", 0.905}})},
             holding("5", 0.905), crd::PromotionResult::NotBetter, "", "5", "7", "version 5 stays champion"},
        Case{"AWorseVersionKeepsTheChampion", kMaximize, kChampion5, {run("fraud-7", "7", {{"auc", 0.8}})},
             holding("5", 0.905), crd::PromotionResult::NotBetter, "", "5", "7", "auc 0.8 is not > 0.905"},
        Case{"MinimizePromotesALowerValue", kMinimize, R"({"champion": {"versionId": "5", "metric": 0.2}, "lastComparedVersion": "5"})",
             {run("fraud-7", "7", {{"loss", 0.15}})}, holding("5", 0.2), crd::PromotionResult::Promoted, "7", "7", "7",
             "loss 0.15 < 0.2 - 0.01"},
        Case{"MinimizeKeepsTheChampionAgainstAHigherValue", kMinimize,
             R"({"champion": {"versionId": "5", "metric": 0.2}, "lastComparedVersion": "5"})",
             {run("fraud-7", "7", {{"loss", 0.195}})}, holding("5", 0.2), crd::PromotionResult::NotBetter, "", "5", "7",
             "loss 0.195 is not < 0.2 - 0.01"},
        Case{"AVersionWithoutTheMetricIsNoMetricAndSaysWhichItHas", kMaximize, kChampion5,
             {run("fraud-7", "7", {{"loss", 0.1}})}, holding("5", 0.905), crd::PromotionResult::NoMetric, "", "5", "7",
             "version 7 has no auc: its evaluation has no auc (it has loss)"},
        Case{"AMetricsFileThatIsNotFlatIsNoMetricAndSaysWhy", kMaximize, kChampion5,
             {run("fraud-7", "7", json::object(), "gs://bucket/fraud/fraud-7/model/metrics.json is not a flat JSON object of numbers: \"auc\" is a object")},
             holding("5", 0.905), crd::PromotionResult::NoMetric, "", "5", "7", "not a flat JSON object of numbers"},
        Case{"AHolderWithoutTheMetricIsReplaced", kMaximize, R"({"lastComparedVersion": "5"})",
             {run("fraud-7", "7", {{"auc", 0.7}})}, holding("3", std::nullopt), crd::PromotionResult::Promoted, "7", "7",
             "7", "version 3, which held champion, has no auc"},
        Case{"VersionsAreComparedOldestFirstByNumber", kMaximize, R"({"lastComparedVersion": "9"})",
             {run("fraud-11", "11", {{"auc", 0.95}}), run("fraud-10", "10", {{"auc", 0.9}})}, holding("9", 0.85),
             crd::PromotionResult::Promoted, "10", "10", "10", "auc 0.9 > 0.85"}),
    [](const auto& info) { return std::string(info.param.name); });

// status.model is writable by others: a run that says it registered into another model (another
// team's, or another project's) is never judged as a version of the policy's own model.
TEST(Promotion, AVersionOfAnotherModelIsNeverComparedNorPromoted) {
  auto foreign = run("fraud-9", "9", {{"auc", 0.999}});
  foreign["status"]["model"]["name"] = "projects/other-team/locations/us-central1/models/fraud";
  auto observed = readPolicy(policy(kMaximize), {foreign}, T0 + minutes(10));
  ASSERT_TRUE(promotionWork(observed).any());
  observed.promotion = PromotionReading{kModel, holding("5", 0.905), std::nullopt, std::nullopt};
  auto plan = decidePolicy(observed);
  EXPECT_FALSE(plan.moveAlias) << "version 9 of the policy's model would have taken the alias";
  ASSERT_TRUE(plan.status.history.lastPromotion);
  EXPECT_EQ(plan.status.history.lastPromotion->result, crd::PromotionResult::Failed);
  EXPECT_NE(plan.status.history.lastPromotion->message.find("not " + std::string(kModel)), std::string::npos);
  EXPECT_EQ(plan.status.history.lastComparedVersion, "9") << "compared once, not again every pass";
  EXPECT_EQ(runOfVersion(observed, kModel, "9"), nullptr) << "its metrics lend nothing to the policy's version 9";
}

TEST(Promotion, AComparedVersionIsNeverComparedAgainAndNothingIsRead) {
  auto observed = readPolicy(policy(kMaximize, kChampion5), {run("fraud-5", "5", {{"auc", 0.905}})}, T0 + minutes(10));
  EXPECT_FALSE(promotionWork(observed).any());
  auto plan = decidePolicy(observed);
  EXPECT_FALSE(plan.promotion);
  EXPECT_FALSE(plan.moveAlias);
  ASSERT_TRUE(plan.status.history.champion);
  EXPECT_EQ(plan.status.history.champion->versionId, "5");
}

// The pass that moved the alias crashed before its status write: the next pass finds the candidate
// holding the alias already. It is recorded as promoted now, with both numbers, and not moved again.
TEST(Promotion, AnAliasMovedBeforeACrashIsRecordedWithBothNumbersAndAPromotedTime) {
  auto observed = readPolicy(policy(kMaximize, kChampion5), {run("fraud-7", "7", {{"auc", 0.913}})}, T0 + minutes(10));
  observed.promotion = PromotionReading{kModel, holding("7", 0.913), std::nullopt, std::nullopt};
  auto plan = decidePolicy(observed);
  EXPECT_FALSE(plan.moveAlias);
  EXPECT_EQ(plan.promotion, crd::PromotionResult::Promoted);
  const auto& history = plan.status.history;
  ASSERT_TRUE(history.champion);
  EXPECT_EQ(history.champion->versionId, "7");
  EXPECT_EQ(history.champion->metric, 0.913);
  EXPECT_EQ(history.champion->run, "fraud-7");
  EXPECT_EQ(history.champion->promotedTime, T0 + minutes(10));
  EXPECT_EQ(history.lastComparedVersion, "7");
  EXPECT_EQ(history.lastPromotion->message, "auc 0.913 > 0.905 + 0.002: version 7 replaces version 5 as champion");
  EXPECT_TRUE(std::any_of(plan.events.begin(), plan.events.end(), [&](const auto& e) {
    return e.reason == "ModelPromoted" && e.message == history.lastPromotion->message;
  }));

  // Status already names it champion (the pass was recorded): its promotedTime is kept.
  auto stored = policy(kMaximize, R"({"champion": {"versionId": "7", "metric": 0.913, "promotedTime": "2026-12-01T00:05:00Z"}, "lastComparedVersion": "5"})");
  auto again = readPolicy(stored, {run("fraud-7", "7", {{"auc", 0.913}})}, T0 + minutes(10));
  again.promotion = PromotionReading{kModel, holding("7", 0.913), std::nullopt, std::nullopt};
  auto kept = decidePolicy(again);
  EXPECT_EQ(kept.status.history.champion->promotedTime, T0 + minutes(5));
  EXPECT_EQ(kept.status.history.lastPromotion->message, "version 7 holds champion already");
}

TEST(Promotion, ARollbackMovesTheAliasToTheNamedVersionAsManual) {
  json annotations = {{kPromoteVersionAnnotation, "5"}};
  auto observed = readPolicy(policy(kMaximize, R"({"champion": {"versionId": "7", "metric": 0.913}, "lastComparedVersion": "7"})", annotations),
                             {run("fraud-5", "5", {{"auc", 0.905}}), run("fraud-7", "7", {{"auc", 0.913}})}, T0 + minutes(10));
  auto work = promotionWork(observed);
  EXPECT_EQ(work.request, "5");
  EXPECT_EQ(work.candidate, nullptr);
  observed.promotion = PromotionReading{kModel, holding("7", 0.913), VersionMetric{"5", 0.905, "fraud-5", "gs://bucket/fraud/fraud-5/model/"}, std::nullopt};
  auto plan = decidePolicy(observed);
  ASSERT_TRUE(plan.moveAlias);
  EXPECT_EQ(plan.moveAlias->versionName, std::string(kModel) + "@5");
  EXPECT_EQ(plan.moveAlias->fromVersionName, std::string(kModel) + "@7") << "the holder gives the alias up first";
  EXPECT_EQ(plan.promotion, crd::PromotionResult::Manual);
  const auto& history = plan.status.history;
  EXPECT_EQ(history.champion->versionId, "5");
  EXPECT_EQ(history.champion->metric, 0.905);
  EXPECT_EQ(history.champion->artifactUri, "gs://bucket/fraud/fraud-5/model/");
  EXPECT_EQ(history.lastHandledPromoteRequest, "5");
  EXPECT_EQ(history.lastComparedVersion, "7");  // a rollback never makes 7 a candidate again
  EXPECT_EQ(history.lastPromotion->message, "version 5 holds champion by request (was version 7)");

  // Handled: the next pass with the same annotation does nothing; removing it clears the request.
  auto stored = policy(kMaximize, crd::encodeRetrainingPolicyStatus(plan.status).dump(), annotations);
  EXPECT_FALSE(promotionWork(readPolicy(stored, {}, T0 + minutes(11))).any());
  stored["metadata"]["annotations"] = json::object();
  auto cleared = decidePolicy(readPolicy(stored, {}, T0 + minutes(12)));
  EXPECT_EQ(cleared.status.history.lastHandledPromoteRequest, "");
}

TEST(Promotion, ARequestForAVersionThatIsNotThereOrNotANumberFailsAndMovesNothing) {
  for (const std::string request : {"42", "latest"}) {
    auto observed = readPolicy(policy(kMaximize, kChampion5, {{kPromoteVersionAnnotation, request}}), {}, T0 + minutes(10));
    observed.promotion = PromotionReading{kModel, holding("5", 0.905), std::nullopt, std::nullopt};
    auto plan = decidePolicy(observed);
    EXPECT_FALSE(plan.moveAlias) << request;
    EXPECT_EQ(plan.promotion, crd::PromotionResult::Failed) << request;
    EXPECT_EQ(plan.status.history.champion->versionId, "5") << request;
    EXPECT_EQ(plan.status.history.lastHandledPromoteRequest, request);
  }
}

TEST(Promotion, AFailedAliasMoveKeepsEveryWatermarkAndIsRetried) {
  auto observed = readPolicy(policy(kMaximize, kChampion5), {run("fraud-7", "7", {{"auc", 0.95}})}, T0 + minutes(10));
  observed.promotion = PromotionReading{kModel, holding("5", 0.905), std::nullopt, std::nullopt};
  auto plan = afterPromotionFailed(observed, decidePolicy(observed), "403 PERMISSION_DENIED");
  const auto& history = plan.status.history;
  EXPECT_FALSE(plan.moveAlias);
  EXPECT_EQ(history.champion->versionId, "5");
  EXPECT_EQ(history.lastComparedVersion, "5");
  EXPECT_EQ(history.lastPromotion->result, crd::PromotionResult::Failed);
  EXPECT_NE(history.lastPromotion->message.find("403 PERMISSION_DENIED"), std::string::npos);
  EXPECT_TRUE(plan.failure);
  EXPECT_FALSE(std::any_of(plan.events.begin(), plan.events.end(), [](const auto& e) { return e.reason == "ModelPromoted"; }));
}

TEST(Promotion, RunsStartFromTheChampionsArtifacts) {
  auto p = policy(kMaximize, R"({"champion": {"versionId": "5", "metric": 0.905, "artifactUri": "gs://bucket/fraud/fraud-5/model/"}, "lastComparedVersion": "5"})",
                  {{"vto.dev/retrain-requested", "1"}});
  p["spec"]["warmStart"] = true;
  auto plan = decidePolicy(readPolicy(p, {}, T0 + minutes(10)));
  ASSERT_EQ(plan.create.size(), 1u);
  EXPECT_EQ(plan.create[0].run["metadata"]["annotations"]["vto.dev/warm-start-from"], "gs://bucket/fraud/fraud-5/model/");
}

TEST(Promotion, ARunStillRegisteringOrNotComparedIsKeptThroughHistoryPruning) {
  auto p = policy(kMaximize, kChampion5);
  p["spec"]["successfulRunsHistoryLimit"] = 0;
  auto registering = run("fraud-8", "", json::object());
  registering["status"].erase("model");
  registering["status"]["conditions"] = json::array();
  auto plan = decidePolicy(readPolicy(p, {run("fraud-5", "5", {{"auc", 0.9}}), run("fraud-7", "7", {{"auc", 0.9}}), registering},
                                      T0 + minutes(10)));
  std::vector<std::string> removed;
  for (const auto& r : plan.remove) removed.push_back(r.name);
  EXPECT_EQ(removed, std::vector<std::string>{"fraud-5"});
}

}  // namespace
}  // namespace vto::reconcilers
