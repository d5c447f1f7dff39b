// decidePolicy as tables: for each rule of the RetrainingPolicy (docs/retraining.md), a policy, its
// runs and a time in, the runs to create and delete, the status, the Events and the requeue out.
#include <gtest/gtest.h>

#include "base/rfc3339.h"
#include "crd/render.h"
#include "crd/schedule.h"
#include "crd/timestamp.h"
#include "reconcilers/retraining/decide.h"

namespace vto::reconcilers {
namespace {

using nlohmann::json;
using std::chrono::minutes;
using std::chrono::seconds;

const Clock::time_point T0 = parseRfc3339("2026-12-01T00:00:00Z");
constexpr const char* kUid = "5f0c9d7e-aaaa-bbbb-cccc-000000000001";

std::string at(Clock::duration offset) { return rfc3339Exact(T0 + offset); }
long unix(Clock::duration offset) {
  return std::chrono::duration_cast<seconds>((T0 + offset).time_since_epoch()).count();
}
std::string nameAt(Clock::duration offset) { return "fraud-" + std::to_string(unix(offset)); }

// A policy created at T0 that runs every minute; `spec`/`status`/`annotations` are merged in.
json policy(const std::string& spec = "{}", const std::string& status = "", json annotations = json::object()) {
  json p = {{"apiVersion", "vto.dev/v1beta1"},
            {"kind", "RetrainingPolicy"},
            {"metadata",
             {{"name", "fraud"}, {"namespace", "risk"}, {"uid", kUid}, {"generation", 1},
              {"creationTimestamp", at({})}, {"annotations", annotations}}},
            {"spec", json::parse(R"({
              "template": {"metadata": {"labels": {"model": "fraud"}},
                           "spec": {"trainer": {"container": {"imageUri": "us-docker.pkg.dev/p/r/i:1",
                                                              "env": [{"name": "USER", "value": "x"}]}},
                                    "resources": {"machineType": "n1-standard-4"},
                                    "baseOutputDirectory": "gs://bucket/fraud/"}},
              "triggers": {"schedule": {"cron": "* * * * *"}}})")}};
  p["spec"].merge_patch(json::parse(spec));
  if (!status.empty()) p["status"] = json::parse(status);
  return p;
}

// A run this policy created for `reason` at `trigger`, in `phase` ("" for no status yet).
json child(const std::string& name, const std::string& reason, Clock::duration trigger, const std::string& phase = "",
           std::optional<Clock::duration> completed = std::nullopt) {
  json run = {{"apiVersion", "vto.dev/v1beta1"},
              {"kind", "TrainingRun"},
              {"metadata",
               {{"name", name}, {"namespace", "risk"}, {"uid", "run-" + name},
                {"creationTimestamp", at(trigger)},
                {"labels", {{"vto.dev/retraining-policy", "fraud"}}},
                {"annotations", {{"vto.dev/trigger-reason", reason}, {"vto.dev/trigger-time", at(trigger)}}},
                {"ownerReferences", json::array({{{"apiVersion", "vto.dev/v1beta1"}, {"kind", "RetrainingPolicy"},
                                                  {"name", "fraud"}, {"uid", kUid}, {"controller", true}}})}}},
              {"spec", {{"baseOutputDirectory", "gs://bucket/fraud/" + name}}}};
  if (!phase.empty()) run["status"]["phase"] = phase;
  if (completed) run["status"]["completionTime"] = at(*completed);
  return run;
}

PolicyPlan decideAt(const json& p, Clock::duration now, std::vector<json> children = {}) {
  return decidePolicy(readPolicy(p, children, T0 + now));
}

std::vector<std::string> created(const PolicyPlan& plan) {
  std::vector<std::string> names;
  for (const auto& c : plan.create) names.push_back(c.run["metadata"]["name"]);
  return names;
}
std::vector<std::string> removed(const PolicyPlan& plan) {
  std::vector<std::string> names;
  for (const auto& r : plan.remove) names.push_back(r.name);
  return names;
}
bool hasEvent(const PolicyPlan& plan, const std::string& reason) {
  return std::any_of(plan.events.begin(), plan.events.end(), [&](const auto& e) { return e.reason == reason; });
}
int outcomes(const PolicyPlan& plan, const std::string& outcome) {
  return static_cast<int>(std::count_if(plan.outcomes.begin(), plan.outcomes.end(),
                                        [&](const auto& o) { return o.outcome == outcome; }));
}
// The env a run's jobs get from the operator (user env cannot hold VTO_* names): the render of the run.
std::string envOf(const json& run, const std::string& name) {
  auto job = crd::renderCustomJob(crd::decodeTrainingRun(run), 1, "");
  for (const auto& e : job["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"])
    if (e["name"] == name) return e["value"];
  return "";
}
std::string condition(const PolicyPlan& plan, const std::string& type) {
  for (const auto& c : plan.status.conditions)
    if (c.type == type) return c.status + "/" + c.reason;
  return "";
}
// The schedule-state annotation as it would be after the pass (plan's new value, else the old one).
ScheduleState stateAfter(const PolicyPlan& plan, const json& p) {
  if (plan.scheduleState) return *plan.scheduleState;
  return *parseScheduleState(p["metadata"]["annotations"][kScheduleStateAnnotation]);
}
json stateAnnotation(const std::string& cron, bool suspended, Clock::duration since) {
  ScheduleState s{cron, "", suspended, T0 + since};
  return {{kScheduleStateAnnotation, formatScheduleState(s)}};
}

// Rule 1: the name is the nominal slot's, the run is the template's with the trigger on it.
TEST(RetrainingDecide, ScheduledRunIsNamedByItsSlotAndCarriesTheTrigger) {
  auto plan = decideAt(policy(), seconds(75));
  ASSERT_EQ(created(plan), std::vector<std::string>{nameAt(minutes(1))});
  const json& run = plan.create[0].run;
  EXPECT_EQ(run["kind"], "TrainingRun");
  EXPECT_EQ(run["metadata"]["namespace"], "risk");
  EXPECT_EQ(run["metadata"]["labels"]["vto.dev/retraining-policy"], "fraud");
  EXPECT_EQ(run["metadata"]["labels"]["model"], "fraud");
  EXPECT_EQ(run["metadata"]["annotations"]["vto.dev/trigger-reason"], "Schedule");
  EXPECT_EQ(run["metadata"]["annotations"]["vto.dev/trigger-time"], at(minutes(1)));
  const json& owner = run["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner["uid"], kUid);
  EXPECT_EQ(owner["kind"], "RetrainingPolicy");
  EXPECT_EQ(owner["controller"], true);
  EXPECT_EQ(owner["blockOwnerDeletion"], true);
  EXPECT_EQ(run["spec"]["baseOutputDirectory"], "gs://bucket/fraud/" + nameAt(minutes(1)));
  EXPECT_EQ(envOf(run, "USER"), "x");
  EXPECT_EQ(envOf(run, "VTO_TRIGGER_REASON"), "Schedule");
  EXPECT_EQ(envOf(run, "VTO_TRIGGER_TIME"), at(minutes(1)));
  EXPECT_EQ(envOf(run, "VTO_WARM_START_FROM"), "");
  EXPECT_EQ(run["spec"]["trainer"]["container"]["env"].size(), 1u) << "user env stays the user's";
  EXPECT_EQ(plan.status.history.lastScheduleTime, T0 + minutes(1));
  EXPECT_EQ(plan.status.nextScheduleTime, T0 + minutes(2));
  EXPECT_EQ(plan.status.active, std::vector<std::string>{nameAt(minutes(1))});
  EXPECT_EQ(plan.status.history.lastTrigger->reason, crd::TriggerReason::Schedule);
  // Requeue exactly at the next slot, not by polling.
  EXPECT_EQ(plan.requeueAfter, seconds(45));
}

TEST(RetrainingDecide, NothingDueRequeuesAtTheFirstSlot) {
  auto plan = decideAt(policy(), seconds(20));
  EXPECT_TRUE(plan.create.empty());
  EXPECT_EQ(plan.requeueAfter, seconds(40));
  EXPECT_EQ(condition(plan, "Valid"), "True/Valid");
  EXPECT_EQ(condition(plan, "Ready"), "True/Reconciled");
  EXPECT_EQ(condition(plan, "Suspended"), "False/NotSuspended");
}

// Rule 2: a run created just before a crash (status never written) is not created again.
TEST(RetrainingDecide, ARunFromBeforeACrashCarriesTheWatermark) {
  auto plan = decideAt(policy(), seconds(80), {child(nameAt(minutes(1)), "Schedule", minutes(1))});
  EXPECT_TRUE(plan.create.empty());
  EXPECT_EQ(plan.status.history.lastScheduleTime, T0 + minutes(1));
  EXPECT_EQ(plan.status.active, std::vector<std::string>{nameAt(minutes(1))});
}

// Rule 2: status keeps the watermark after history deleted the run.
TEST(RetrainingDecide, StatusWatermarkOutlivesDeletedRuns) {
  auto p = policy("{}", R"({"lastScheduleTime": ")" + at(minutes(1)) + R"("})");
  EXPECT_TRUE(decideAt(p, seconds(100)).create.empty());
}

struct MissedCase {
  std::string name;
  std::string spec;
  Clock::duration now;  // lastScheduleTime is T0 + 1 min; slots every minute after it are due
  std::vector<Clock::duration> expectCreated;
  int64_t expectMissed;
  std::vector<std::string> expectEvents;
};

class MissedRuns : public ::testing::TestWithParam<MissedCase> {};

TEST_P(MissedRuns, Table) {
  const auto& c = GetParam();
  auto p = policy(c.spec, R"({"lastScheduleTime": ")" + at(minutes(1)) + R"("})");
  auto plan = decideAt(p, c.now);
  std::vector<std::string> expected;
  for (auto t : c.expectCreated) expected.push_back(nameAt(t));
  EXPECT_EQ(created(plan), expected);
  EXPECT_EQ(plan.status.history.missedSchedules, c.expectMissed);
  for (const auto& e : c.expectEvents) EXPECT_TRUE(hasEvent(plan, e)) << e;
  // Every due slot is consumed, started or not: nothing runs late on a later pass.
  EXPECT_EQ(plan.status.history.lastScheduleTime, T0 + std::chrono::floor<minutes>(c.now));
}

INSTANTIATE_TEST_SUITE_P(
    RetrainingDecide, MissedRuns,
    ::testing::Values(
        MissedCase{"LatestStartsTheNewestOnly", "{}", minutes(6) + seconds(5), {minutes(6)}, 4, {}},
        MissedCase{"LatestWarnsAbove100", "{}", minutes(150), {minutes(150)}, 148, {"TooManyMissedSchedules"}},
        MissedCase{"LatestAt100DoesNotWarn", "{}", minutes(102), {minutes(102)}, 100, {}},
        MissedCase{"SkipStartsASlotFoundAlone", R"({"missedRuns": "Skip"})", minutes(2), {minutes(2)}, 0, {}},
        MissedCase{"SkipStartsNoneOfSeveral", R"({"missedRuns": "Skip"})", minutes(6), {}, 5, {"MissSchedule"}},
        MissedCase{"AllBackfillsOldestFirst", R"({"missedRuns": "All", "concurrencyPolicy": "Allow", "maxActiveRuns": 10})",
                   minutes(4), {minutes(2), minutes(3), minutes(4)}, 0, {}},
        MissedCase{"AllKeepsTheNewestMaxCatchUpRuns",
                   R"({"missedRuns": "All", "maxCatchUpRuns": 2, "concurrencyPolicy": "Allow", "maxActiveRuns": 10})",
                   minutes(9), {minutes(8), minutes(9)}, 6, {"MissSchedule"}},
        MissedCase{"AllUnderForbidStartsOneAndSkipsTheRest", R"({"missedRuns": "All"})", minutes(4), {minutes(2)}, 2,
                   {"RunAlreadyActive"}},
        MissedCase{"StartingDeadlineDropsALateSlot", R"({"startingDeadlineSeconds": 30})", minutes(3) + seconds(31), {},
                   2, {"MissSchedule"}},
        MissedCase{"StartingDeadlineKeepsAnOnTimeSlot", R"({"startingDeadlineSeconds": 30})", minutes(3) + seconds(30),
                   {minutes(3)}, 1, {}}),
    [](const auto& info) { return info.param.name; });

TEST(RetrainingDecide, StartingDeadlineIsCountedAsMissedDeadline) {
  auto p = policy(R"({"startingDeadlineSeconds": 10})", R"({"lastScheduleTime": ")" + at(minutes(1)) + R"("})");
  auto plan = decideAt(p, minutes(2) + seconds(11));
  EXPECT_EQ(outcomes(plan, "missed_deadline"), 1);
}

// Rule 4: the baseline is the latest of lastScheduleTime, creation, unsuspension and schedule change.
TEST(RetrainingDecide, SlotsBeforeCreationAreNotMissed) {
  auto p = policy();
  p["metadata"]["creationTimestamp"] = at(minutes(30) + seconds(10));
  auto plan = decideAt(p, minutes(30) + seconds(50));
  EXPECT_TRUE(plan.create.empty());
  EXPECT_EQ(plan.status.nextScheduleTime, T0 + minutes(31));
}

TEST(RetrainingDecide, AScheduleEditIsNeverMissed) {
  // Last run at 00:01 under "0 * * * *"; edited to every minute; now 00:10:30.
  auto p = policy("{}", R"({"lastScheduleTime": ")" + at(minutes(1)) + R"("})",
                  stateAnnotation("0 * * * *", false, {}));
  auto plan = decideAt(p, minutes(10) + seconds(30));
  EXPECT_TRUE(plan.create.empty());
  auto state = stateAfter(plan, p);
  EXPECT_EQ(state.cron, "* * * * *");
  EXPECT_EQ(state.since, T0 + minutes(10) + seconds(30));
  // The next pass, with the edit recorded, fires the first slot after it.
  auto later = p;
  later["metadata"]["annotations"][kScheduleStateAnnotation] = formatScheduleState(*plan.scheduleState);
  EXPECT_EQ(created(decideAt(later, minutes(11) + seconds(1))), std::vector<std::string>{nameAt(minutes(11))});
}

TEST(RetrainingDecide, TheSameScheduleKeepsItsBaseline) {
  auto p = policy("{}", R"({"lastScheduleTime": ")" + at(minutes(1)) + R"("})",
                  stateAnnotation("* * * * *", false, {}));
  auto plan = decideAt(p, minutes(3) + seconds(1));
  EXPECT_EQ(created(plan), std::vector<std::string>{nameAt(minutes(3))});
  EXPECT_FALSE(plan.scheduleState.has_value());
}

// Suspend: no runs, no timer; unsuspending fires nothing that was missed meanwhile.
TEST(RetrainingDecide, SuspendedStartsNothing) {
  auto p = policy(R"({"suspend": true})", R"({"lastScheduleTime": ")" + at(minutes(1)) + R"("})",
                  stateAnnotation("* * * * *", false, {}));
  auto plan = decideAt(p, minutes(5));
  EXPECT_TRUE(plan.create.empty());
  EXPECT_EQ(plan.requeueAfter, Clock::duration::zero());
  EXPECT_FALSE(plan.status.nextScheduleTime.has_value());
  EXPECT_EQ(condition(plan, "Suspended"), "True/Suspended");
  EXPECT_TRUE(stateAfter(plan, p).suspended);
}

TEST(RetrainingDecide, UnsuspendingFiresNothingMissed) {
  auto p = policy("{}", R"({"lastScheduleTime": ")" + at(minutes(1)) + R"("})",
                  stateAnnotation("* * * * *", true, {}));
  auto plan = decideAt(p, minutes(60) + seconds(30));
  EXPECT_TRUE(plan.create.empty());
  EXPECT_EQ(outcomes(plan, "suspended"), 59);  // 00:02 .. 01:00 passed while suspended
  auto state = stateAfter(plan, p);
  EXPECT_FALSE(state.suspended);
  EXPECT_EQ(state.since, T0 + minutes(60) + seconds(30));
  EXPECT_EQ(plan.status.nextScheduleTime, T0 + minutes(61));
  EXPECT_EQ(plan.requeueAfter, seconds(30));
}

struct ConcurrencyCase {
  std::string name;
  std::string spec;
  int activeRuns;  // running children before the slot at 00:05
  bool expectCreate;
  int expectRemoved;
  std::string expectEvent;
};

class Concurrency : public ::testing::TestWithParam<ConcurrencyCase> {};

TEST_P(Concurrency, Table) {
  const auto& c = GetParam();
  std::vector<json> children;
  for (int i = 0; i < c.activeRuns; ++i) {
    children.push_back(child(nameAt(minutes(1 + i)), "Schedule", minutes(1 + i), "Running"));
  }
  auto p = policy(c.spec, R"({"lastScheduleTime": ")" + at(minutes(4)) + R"("})");
  auto plan = decideAt(p, minutes(5) + seconds(1), children);
  EXPECT_EQ(!plan.create.empty(), c.expectCreate);
  EXPECT_EQ(static_cast<int>(plan.remove.size()), c.expectRemoved);
  if (!c.expectEvent.empty()) EXPECT_TRUE(hasEvent(plan, c.expectEvent));
  // The slot is consumed either way: Forbid does not run it late.
  EXPECT_EQ(plan.status.history.lastScheduleTime, T0 + minutes(5));
  if (!c.expectCreate) EXPECT_EQ(outcomes(plan, "skipped_active"), 1);
}

INSTANTIATE_TEST_SUITE_P(
    RetrainingDecide, Concurrency,
    ::testing::Values(ConcurrencyCase{"ForbidIdleStarts", "{}", 0, true, 0, ""},
                      ConcurrencyCase{"ForbidSkipsWhileActive", "{}", 1, false, 0, "RunAlreadyActive"},
                      ConcurrencyCase{"ReplaceDeletesTheActiveRun", R"({"concurrencyPolicy": "Replace"})", 1, true, 1, ""},
                      ConcurrencyCase{"AllowBelowTheCap", R"({"concurrencyPolicy": "Allow", "maxActiveRuns": 2})", 1,
                                      true, 0, ""},
                      ConcurrencyCase{"AllowAtTheCap", R"({"concurrencyPolicy": "Allow", "maxActiveRuns": 2})", 2, false,
                                      0, "RunAlreadyActive"},
                      ConcurrencyCase{"AllowDefaultCapIsOne", R"({"concurrencyPolicy": "Allow"})", 1, false, 0,
                                      "RunAlreadyActive"}),
    [](const auto& info) { return info.param.name; });

TEST(RetrainingDecide, FinishedAndDeletingRunsAreNotActive) {
  auto p = policy("{}", R"({"lastScheduleTime": ")" + at(minutes(4)) + R"("})");
  auto deleting = child(nameAt(minutes(3)), "Schedule", minutes(3), "Running");
  deleting["metadata"]["deletionTimestamp"] = at(minutes(4));
  auto plan = decideAt(p, minutes(5), {child(nameAt(minutes(2)), "Schedule", minutes(2), "Failed", minutes(3)), deleting});
  EXPECT_EQ(created(plan), std::vector<std::string>{nameAt(minutes(5))});
}

TEST(RetrainingDecide, RunsOfOtherOwnersAreIgnored) {
  auto foreign = child(nameAt(minutes(1)), "Schedule", minutes(1), "Running");
  foreign["metadata"]["ownerReferences"][0]["uid"] = "someone-else";
  auto plan = decideAt(policy(), minutes(1), {foreign});
  EXPECT_EQ(created(plan), std::vector<std::string>{nameAt(minutes(1))});  // act reports the conflict
}

// Jitter: a fixed offset from the uid; the name keeps the nominal slot.
TEST(RetrainingDecide, JitterDelaysTheStartButNotTheName) {
  auto p = policy(R"({"triggers": {"schedule": {"cron": "0 * * * *", "jitter": "30m"}}})",
                  R"({"lastScheduleTime": ")" + at({}) + R"("})");
  auto offset = crd::jitterOffset(kUid, minutes(30));
  ASSERT_GT(offset, seconds(0));
  ASSERT_LT(offset, minutes(30));
  auto before = decideAt(p, minutes(60) + offset - seconds(1));
  EXPECT_TRUE(before.create.empty());
  EXPECT_EQ(before.status.nextScheduleTime, T0 + minutes(60) + offset);
  EXPECT_EQ(before.requeueAfter, seconds(1));
  auto due = decideAt(p, minutes(60) + offset);
  EXPECT_EQ(created(due), std::vector<std::string>{nameAt(minutes(60))});
  EXPECT_EQ(due.status.nextScheduleTime, T0 + minutes(120) + offset);
}

// Manual requests: any new value is one request, never dropped.
TEST(RetrainingDecide, ManualRequestCreatesOneRunNamedByItsHandlingTime) {
  auto p = policy(R"({"triggers": null})", "", {{"vto.dev/retrain-requested", "1764551000"}});
  auto plan = decideAt(p, seconds(42) + std::chrono::milliseconds(700));
  ASSERT_EQ(created(plan), std::vector<std::string>{nameAt(seconds(42))});
  const json& run = plan.create[0].run;
  EXPECT_EQ(run["metadata"]["annotations"]["vto.dev/trigger-reason"], "Manual");
  EXPECT_EQ(run["metadata"]["annotations"][kRetrainRequestAnnotation], "1764551000");
  EXPECT_EQ(envOf(run, "VTO_TRIGGER_REASON"), "Manual");
  EXPECT_EQ(plan.status.history.lastHandledRetrainRequest, "1764551000");
  EXPECT_EQ(plan.requeueAfter, Clock::duration::zero());  // no schedule: no timer
  EXPECT_EQ(condition(plan, "Ready"), "True/Reconciled");
}

TEST(RetrainingDecide, AHandledRequestIsNotRepeated) {
  auto handledInStatus = policy(R"({"triggers": null})", R"({"lastHandledRetrainRequest": "7"})",
                                {{"vto.dev/retrain-requested", "7"}});
  EXPECT_TRUE(decideAt(handledInStatus, minutes(3)).create.empty());
  // Status lost the write, but the run carries the request.
  auto run = child(nameAt(minutes(1)), "Manual", minutes(1), "Running");
  run["metadata"]["annotations"][kRetrainRequestAnnotation] = "7";
  auto handledByRun = policy(R"({"triggers": null})", "", {{"vto.dev/retrain-requested", "7"}});
  auto plan = decideAt(handledByRun, minutes(3), {run});
  EXPECT_TRUE(plan.create.empty());
  EXPECT_EQ(plan.status.history.lastHandledRetrainRequest, "7");
}

TEST(RetrainingDecide, ManualRequestWaitsUnderForbidAndIsNeverDropped) {
  auto p = policy(R"({"triggers": null})", R"({"lastHandledRetrainRequest": "1"})", {{"vto.dev/retrain-requested", "2"}});
  auto busy = decideAt(p, minutes(3), {child(nameAt(minutes(1)), "Manual", minutes(1), "Running")});
  EXPECT_TRUE(busy.create.empty());
  EXPECT_TRUE(hasEvent(busy, "RetrainRequestPending"));
  EXPECT_EQ(busy.status.history.lastHandledRetrainRequest, "1");
  auto freed = decideAt(p, minutes(9), {child(nameAt(minutes(1)), "Manual", minutes(1), "Succeeded", minutes(8))});
  EXPECT_EQ(created(freed), std::vector<std::string>{nameAt(minutes(9))});
  EXPECT_EQ(freed.status.history.lastHandledRetrainRequest, "2");
}

TEST(RetrainingDecide, ManualRequestReplacesUnderReplace) {
  auto p = policy(R"({"triggers": null, "concurrencyPolicy": "Replace"})", "", {{"vto.dev/retrain-requested", "x"}});
  auto plan = decideAt(p, minutes(3), {child(nameAt(minutes(1)), "Manual", minutes(1), "Running")});
  EXPECT_EQ(removed(plan), std::vector<std::string>{nameAt(minutes(1))});
  EXPECT_EQ(created(plan), std::vector<std::string>{nameAt(minutes(3))});
}

TEST(RetrainingDecide, ManualRequestWaitsWhileSuspended) {
  auto p = policy(R"({"suspend": true})", "", {{"vto.dev/retrain-requested", "x"}});
  auto plan = decideAt(p, minutes(3));
  EXPECT_TRUE(plan.create.empty());
  EXPECT_TRUE(hasEvent(plan, "RetrainRequestPending"));
}

TEST(RetrainingDecide, ManualRequestOnASlotsSecondTakesTheNextSecond) {
  auto p = policy(R"({"concurrencyPolicy": "Allow", "maxActiveRuns": 5})",
                  R"({"lastScheduleTime": ")" + at({}) + R"("})", {{"vto.dev/retrain-requested", "x"}});
  auto plan = decideAt(p, minutes(1));
  EXPECT_EQ(created(plan), (std::vector<std::string>{nameAt(minutes(1)), nameAt(minutes(1) + seconds(1))}));
}

// Warm start: lastSuccessfulRun outlives the run and feeds VTO_WARM_START_FROM.
TEST(RetrainingDecide, WarmStartUsesTheNewestSuccessfulRun) {
  auto p = policy(R"({"warmStart": true})", R"({"lastScheduleTime": ")" + at(minutes(4)) + R"("})");
  auto plan = decideAt(p, minutes(5), {child(nameAt(minutes(2)), "Schedule", minutes(2), "Succeeded", minutes(3)),
                                       child(nameAt(minutes(3)), "Schedule", minutes(3), "Succeeded", minutes(4)),
                                       child(nameAt(minutes(4)), "Schedule", minutes(4), "Failed", minutes(4))});
  ASSERT_EQ(plan.create.size(), 1u);
  const std::string model = "gs://bucket/fraud/" + nameAt(minutes(3)) + "/model/";
  EXPECT_EQ(envOf(plan.create[0].run, "VTO_WARM_START_FROM"), model);
  ASSERT_TRUE(plan.status.history.lastSuccessfulRun);
  EXPECT_EQ(plan.status.history.lastSuccessfulRun->name, nameAt(minutes(3)));
  EXPECT_EQ(plan.status.history.lastSuccessfulRun->modelUri, model);
  EXPECT_EQ(plan.status.history.lastSuccessfulTime, T0 + minutes(4));
  EXPECT_EQ(plan.status.history.counts.succeeded, 2);
  EXPECT_EQ(plan.status.history.counts.failed, 1);
}

TEST(RetrainingDecide, WarmStartWorksAfterTheRunIsDeleted) {
  auto p = policy(R"({"warmStart": true})", R"({"lastScheduleTime": ")" + at(minutes(4)) + R"(",
      "lastSuccessfulRun": {"name": "fraud-1", "completionTime": ")" + at(minutes(1)) + R"(", "modelUri": "gs://b/fraud-1/model/"},
      "lastSuccessfulTime": ")" + at(minutes(1)) + R"("})");
  auto plan = decideAt(p, minutes(5));
  ASSERT_EQ(plan.create.size(), 1u);
  EXPECT_EQ(envOf(plan.create[0].run, "VTO_WARM_START_FROM"), "gs://b/fraud-1/model/");
}

TEST(RetrainingDecide, NoWarmStartWithoutTheFlag) {
  auto p = policy("{}", R"({"lastScheduleTime": ")" + at(minutes(4)) + R"(",
      "lastSuccessfulRun": {"name": "fraud-1", "completionTime": ")" + at(minutes(1)) + R"(", "modelUri": "gs://b/fraud-1/model/"}})");
  auto plan = decideAt(p, minutes(5));
  ASSERT_EQ(plan.create.size(), 1u);
  EXPECT_EQ(envOf(plan.create[0].run, "VTO_WARM_START_FROM"), "");
}

TEST(RetrainingDecide, EachFinishedRunIsCountedOnce) {
  auto p = policy("{}", R"({"lastScheduleTime": ")" + at(minutes(4)) + R"(", "counts": {"succeeded": 5, "failed": 2}})");
  auto counted = child(nameAt(minutes(2)), "Schedule", minutes(2), "Succeeded", minutes(3));
  counted["metadata"]["annotations"][kCountedAnnotation] = "true";
  // Finished in an earlier second than the counted one, but seen later: still counted.
  auto late = child(nameAt(minutes(3)), "Schedule", minutes(3), "Succeeded", minutes(2) + seconds(30));
  auto plan = decideAt(p, minutes(4) + seconds(30),
                       {counted, late, child(nameAt(minutes(4)), "Schedule", minutes(4), "Running")});
  EXPECT_EQ(plan.status.history.counts.succeeded, 6);
  EXPECT_EQ(plan.status.history.counts.failed, 2);
  EXPECT_EQ(plan.markCounted, std::vector<std::string>{nameAt(minutes(3))});
}

// History limits: the newest succeeded and unsuccessful runs are kept, older ones deleted.
TEST(RetrainingDecide, HistoryLimitsDeleteTheOldestFinishedRuns) {
  std::vector<json> children;
  for (int i = 1; i <= 5; ++i) children.push_back(child(nameAt(minutes(i)), "Schedule", minutes(i), "Succeeded", minutes(i) + seconds(30)));
  for (int i = 6; i <= 8; ++i) children.push_back(child(nameAt(minutes(i)), "Schedule", minutes(i), i == 7 ? "Cancelled" : "Failed", minutes(i) + seconds(30)));
  children.push_back(child(nameAt(minutes(9)), "Schedule", minutes(9), "Running"));
  auto p = policy("{}", R"({"lastScheduleTime": ")" + at(minutes(9)) + R"("})");
  auto plan = decideAt(p, minutes(9) + seconds(40), children);
  auto gone = removed(plan);
  std::sort(gone.begin(), gone.end());
  EXPECT_EQ(gone, (std::vector<std::string>{nameAt(minutes(1)), nameAt(minutes(2)), nameAt(minutes(6)), nameAt(minutes(7))}));
}

TEST(RetrainingDecide, HistoryLimitZeroKeepsNoFinishedRun) {
  auto p = policy(R"({"successfulRunsHistoryLimit": 0, "failedRunsHistoryLimit": 0})",
                  R"({"lastScheduleTime": ")" + at(minutes(3)) + R"("})");
  auto plan = decideAt(p, minutes(3) + seconds(30), {child(nameAt(minutes(2)), "Schedule", minutes(2), "Succeeded", minutes(3))});
  EXPECT_EQ(removed(plan), std::vector<std::string>{nameAt(minutes(2))});
  EXPECT_EQ(plan.status.history.lastSuccessfulRun->name, nameAt(minutes(2)));
}

// Invalid policies: Valid=False, a Warning, no runs.
struct InvalidCase {
  std::string name;
  std::string spec;
  std::string reason;
};
class InvalidPolicy : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(InvalidPolicy, Table) {
  auto p = policy(GetParam().spec, "", {{"vto.dev/retrain-requested", "1"}});
  auto plan = decideAt(p, minutes(5));
  EXPECT_TRUE(plan.invalid);
  EXPECT_TRUE(plan.create.empty());
  EXPECT_EQ(condition(plan, "Valid"), "False/" + GetParam().reason);
  EXPECT_EQ(condition(plan, "Stalled"), "True/" + GetParam().reason);  // kstatus: Failed until the spec is edited
  EXPECT_EQ(condition(plan, "Ready"), "False/" + GetParam().reason);
  EXPECT_TRUE(hasEvent(plan, GetParam().reason));
  ASSERT_FALSE(plan.events.empty());
  EXPECT_EQ(plan.events.back().type, controller::EventType::Warning);
  EXPECT_EQ(plan.requeueAfter, Clock::duration::zero());
}

INSTANTIATE_TEST_SUITE_P(
    RetrainingDecide, InvalidPolicy,
    ::testing::Values(InvalidCase{"BadCron", R"({"triggers": {"schedule": {"cron": "61 * * * *"}}})", "InvalidSpec"},
                      InvalidCase{"UnknownZone", R"({"triggers": {"schedule": {"cron": "0 3 * * *", "timeZone": "Mars/Olympus"}}})",
                                  "UnknownTimeZone"},
                      InvalidCase{"UnknownField", R"({"concurrency": "Forbid"})", "InvalidSpec"},
                      InvalidCase{"BadEnum", R"({"concurrencyPolicy": "Sometimes"})", "InvalidSpec"}),
    [](const auto& info) { return info.param.name; });

TEST(RetrainingDecide, ScheduleStateRoundTrips) {
  ScheduleState s{"0 3 * * *", "Europe/Berlin", true, T0};
  EXPECT_EQ(parseScheduleState(formatScheduleState(s)), s);
  EXPECT_FALSE(parseScheduleState("not json").has_value());
}

}  // namespace
}  // namespace vto::reconcilers
