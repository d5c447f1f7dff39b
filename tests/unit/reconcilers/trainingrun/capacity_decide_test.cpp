// Capacity failover as decide() tables (API.md "Capacity failover"): a stockout, a quota refusal or a
// job queued past maxQueueTime blocks its placement and moves the next attempt at once; with every
// placement blocked the run waits, and past giveUpAfter it fails with one line per placement.
#include <gtest/gtest.h>

#include "base/rfc3339.h"
#include "reconcilers/trainingrun/decide.h"

namespace vto::reconcilers {
namespace {

using nlohmann::json;
using std::chrono::minutes;
using std::chrono::seconds;
using vertex::JobState;

const Clock::time_point T0 = parseRfc3339("2026-03-01T12:00:00Z");
const std::string kJob = "projects/test-project/locations/us-central1/customJobs/7";
const std::string kEastJob = "projects/test-project/locations/us-east4/customJobs/8";

// A100s in us-central1; then us-east4; then H100s in us-central1 on FlexStart.
constexpr const char* kCapacity = R"({
  "location": "us-central1",
  "resources": {"machineType": "a2-highgpu-8g", "acceleratorType": "NVIDIA_TESLA_A100", "acceleratorCount": 8},
  "scheduling": {"strategy": "Spot"},
  "capacity": {"fallbacks": [{"location": "us-east4"},
                             {"resources": {"machineType": "a3-highgpu-8g", "acceleratorType": "NVIDIA_H100_80GB",
                                            "acceleratorCount": 8},
                              "scheduling": {"strategy": "FlexStart", "maxWaitDuration": "2h"}}],
               "maxQueueTime": "30m", "blockFor": "30m", "giveUpAfter": "2h"}})";

crd::TrainingRun runWith(const std::string& spec = kCapacity) {
  json object = json::parse(R"({"apiVersion": "vto.dev/v1beta1", "kind": "TrainingRun",
    "metadata": {"name": "r", "namespace": "ns", "uid": "u-1", "generation": 1},
    "spec": {"trainer": {"container": {"imageUri": "us-docker.pkg.dev/p/r/i:1"}},
             "baseOutputDirectory": "gs://bucket/r"}})");
  object["spec"].merge_patch(json::parse(spec));
  return crd::decodeTrainingRun(object);
}

// kCapacity with `patch` merged over it (RFC 7386: null removes a field).
std::string capacityWith(const std::string& patch) {
  json spec = json::parse(kCapacity);
  spec.merge_patch(json::parse(patch));
  return spec.dump();
}

CachedJob jobIn(const std::string& name, JobState state, std::optional<vertex::RpcStatus> error = std::nullopt) {
  CachedJob job;
  job.name = name;
  job.state = state;
  job.createTime = T0 - minutes(10);
  if (vertex::isTerminal(state)) job.endTime = T0 - seconds(10);
  job.error = std::move(error);
  job.readAt = T0;
  return job;
}

const vertex::RpcStatus kStockout{8, "Resources are insufficient in region: us-central1. Please try a different region."};

// Attempt 1 of the run, created on `placement` as `job`, in `phase`.
Observed onAttempt1(int placement, const CachedJob& job, crd::Phase phase) {
  Observed o;
  o.now = T0;
  o.run = runWith();
  o.metadata = o.run->metadata;
  o.defaults = {"test-project", "us-central1"};
  o.hasFinalizer = true;
  o.statusStored = true;
  o.status.observedGeneration = 1;
  o.status.phase = phase;
  crd::Attempt first;
  first.attempt = 1;
  first.placement = placement;
  first.jobName = job.name;
  o.status.history.attempts = {first};
  o.status.history.attemptCount = 1;
  o.vertex.job = job;
  o.checkpoints.listed = true;
  o.checkpoints.latest = Checkpoint{"gs://bucket/r/checkpoints/ckpt-4", T0 - minutes(1)};
  return o;
}

bool hasEvent(const Plan& plan, const std::string& reason) {
  return std::any_of(plan.events.begin(), plan.events.end(), [&](const auto& e) { return e.reason == reason; });
}
std::string eventMessage(const Plan& plan, const std::string& reason) {
  for (const auto& e : plan.events)
    if (e.reason == reason) return e.message;
  return "";
}
std::string condition(const crd::TrainingRunStatus& status, const std::string& type) {
  for (const auto& c : status.conditions)
    if (c.type == type) return c.status + "/" + c.reason;
  return "";
}

TEST(CapacityDecide, AStockoutMovesTheNextAttemptToTheFirstFallbackAtOnceFromTheCheckpoint) {
  auto plan = decide(onAttempt1(0, jobIn(kJob, JobState::Failed, kStockout), crd::Phase::Running));
  ASSERT_TRUE(plan.createJob.has_value());
  EXPECT_EQ(plan.createJob->attempt, 2);
  EXPECT_EQ(plan.createJob->placement, 1u);
  EXPECT_EQ(plan.createJob->where.location, "us-east4");
  EXPECT_EQ(plan.createJob->resumeFrom, "gs://bucket/r/checkpoints/ckpt-4");
  ASSERT_TRUE(plan.status.has_value());
  EXPECT_EQ(plan.status->history.resumes, 0) << "capacity failures do not spend maxResumes";
  ASSERT_TRUE(plan.status->history.capacity.has_value());
  ASSERT_EQ(plan.status->history.capacity->blocked.size(), 1u);
  const auto& blocked = plan.status->history.capacity->blocked[0];
  EXPECT_EQ(blocked.index, 0);
  EXPECT_EQ(blocked.location, "us-central1");
  EXPECT_EQ(blocked.reason, "Stockout");
  EXPECT_EQ(blocked.until, T0 + minutes(30));
  EXPECT_EQ(plan.status->placement->index, 1);
  EXPECT_EQ(plan.status->placement->location, "us-east4");
  EXPECT_EQ(plan.status->placement->strategy, "Spot");
  EXPECT_EQ(eventMessage(plan, "CapacityFailover"),
            "attempt 2 on us-east4 a2-highgpu-8g 8 x NVIDIA_TESLA_A100 Spot: us-central1 had no capacity (Stockout)");
  ASSERT_TRUE(plan.failover.has_value());
  EXPECT_EQ(plan.failover->fromLocation, "us-central1");
  EXPECT_EQ(plan.failover->toLocation, "us-east4");
  EXPECT_EQ(plan.failover->acceleratorType, "NVIDIA_TESLA_A100");
  EXPECT_EQ(plan.failover->reason, "Stockout");
}

TEST(CapacityDecide, APreemptionResumesOnThePlacementItRanOn) {
  auto o = onAttempt1(1, jobIn(kEastJob, JobState::Failed, vertex::RpcStatus{14, "The VM was preempted."}),
                      crd::Phase::Running);
  o.now = T0 + minutes(5);  // past the resume backoff
  auto plan = decide(o);
  ASSERT_TRUE(plan.createJob.has_value());
  EXPECT_EQ(plan.createJob->placement, 1u);
  EXPECT_EQ(plan.createJob->where.location, "us-east4");
  EXPECT_EQ(plan.status->history.resumes, 1);
  EXPECT_FALSE(hasEvent(plan, "CapacityFailover"));
}

// Placements 0 and 1 blocked, attempt 2 stockout on placement 2: every placement is out.
Observed everyPlacementOut(Clock::time_point now) {
  auto o = onAttempt1(2, jobIn(kJob, JobState::Failed, kStockout), crd::Phase::Running);
  o.now = now;
  crd::CapacityHistory capacity;
  capacity.blocked = {crd::BlockedPlacement{0, "us-central1", "Stockout", T0 + minutes(20), "no A100s"},
                      crd::BlockedPlacement{1, "us-east4", "QuotaExceeded", T0 + minutes(25), "quota"}};
  capacity.failingSince = T0 - minutes(10);
  o.status.history.capacity = capacity;
  return o;
}

TEST(CapacityDecide, WithEveryPlacementOutTheRunWaitsAndSaysWhenTheNextOneIsTriedAgain) {
  auto plan = decide(everyPlacementOut(T0));
  EXPECT_FALSE(plan.createJob.has_value());
  ASSERT_TRUE(plan.status.has_value());
  EXPECT_EQ(plan.status->phase, crd::Phase::Queued);
  EXPECT_EQ(condition(*plan.status, "Ready"), "False/WaitingForCapacity");
  EXPECT_EQ(condition(*plan.status, "Failed"), "False/WaitingForCapacity");
  EXPECT_NE(plan.status->message.find("placement 0 (us-central1) is tried again at 2026-03-01T12:20:00Z"), std::string::npos)
      << plan.status->message;
  EXPECT_EQ(plan.status->history.capacity->waitingSince, T0);
  EXPECT_EQ(plan.requeueAfter, minutes(20));
  EXPECT_TRUE(hasEvent(plan, "WaitingForCapacity"));
  EXPECT_FALSE(plan.status->placement.has_value()) << "no attempt runs anywhere";
}

TEST(CapacityDecide, WhenABlockExpiresTheWaitingRunStartsThereByItself) {
  auto o = everyPlacementOut(T0);
  auto waiting = decide(o);
  o.status = *waiting.status;
  o.vertex.job.reset();  // attempt 2 has no job yet
  o.now = T0 + minutes(20);
  auto plan = decide(o);
  ASSERT_TRUE(plan.createJob.has_value());
  EXPECT_EQ(plan.createJob->attempt, 2);
  EXPECT_EQ(plan.createJob->placement, 0u);
  EXPECT_FALSE(plan.status->history.capacity->waitingSince.has_value());
  EXPECT_EQ(plan.status->history.capacity->blocked.size(), 2u) << "placement 1 and 2 are still blocked";
  EXPECT_TRUE(hasEvent(plan, "CapacityFailover"));
}

TEST(CapacityDecide, PastGiveUpAfterTheRunFailsWithOneLinePerPlacement) {
  auto o = everyPlacementOut(T0);
  auto waiting = decide(o);
  o.status = *waiting.status;
  o.vertex.job.reset();
  for (auto& blocked : o.status.history.capacity->blocked) blocked.until = T0 + minutes(300);
  o.now = T0 + minutes(111);  // failing since T0-10m, giveUpAfter 2h
  auto plan = decide(o);
  EXPECT_FALSE(plan.createJob.has_value());
  EXPECT_EQ(plan.status->phase, crd::Phase::Failed);
  EXPECT_EQ(condition(*plan.status, "Failed"), "True/CapacityUnavailable");
  const auto& message = plan.status->message;
  EXPECT_NE(message.find("placement 0 (us-central1 a2-highgpu-8g 8 x NVIDIA_TESLA_A100 Spot): Stockout: no A100s"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("placement 1 (us-east4"), std::string::npos) << message;
  EXPECT_NE(message.find("placement 2 (us-central1 a3-highgpu-8g 8 x NVIDIA_H100_80GB FlexStart): Stockout"),
            std::string::npos)
      << message;
  EXPECT_TRUE(hasEvent(plan, "Failed"));
}

TEST(CapacityDecide, AJobQueuedPastMaxQueueTimeIsCancelledAndThenCountsAsAStockout) {
  auto queued = jobIn(kJob, JobState::Queued);
  queued.createTime = T0 - minutes(31);
  auto o = onAttempt1(0, queued, crd::Phase::Queued);
  auto plan = decide(o);
  ASSERT_TRUE(plan.cancelJob.has_value());
  EXPECT_EQ(*plan.cancelJob, kJob);
  EXPECT_TRUE(hasEvent(plan, "QueueTimeout"));
  // The cancel went through: its end moves the run on.
  o.status = *plan.status;
  o.vertex.job = jobIn(kJob, JobState::Cancelled);
  auto moved = decide(o);
  ASSERT_TRUE(moved.createJob.has_value());
  EXPECT_EQ(moved.createJob->placement, 1u);
  EXPECT_EQ(moved.status->history.capacity->blocked[0].reason, "QueueTimeout");
  EXPECT_NE(moved.status->phase, crd::Phase::Cancelled);
}

TEST(CapacityDecide, AQueuedJobYoungerThanMaxQueueTimeIsLookedAtAgainWhenItIsDue) {
  auto queued = jobIn(kJob, JobState::Pending);
  queued.createTime = T0 - minutes(29);
  auto plan = decide(onAttempt1(0, queued, crd::Phase::Queued));
  EXPECT_FALSE(plan.cancelJob.has_value());
  EXPECT_EQ(plan.requeueAfter, minutes(1));
}

TEST(CapacityDecide, QueueTimeCountsFromVtosOwnRecordOfTheCreateWhenThatIsLater) {
  // Vertex's clock ahead of the operator's (or the operator's injected clock jumped): a job vto
  // created a minute ago is not cancelled because Vertex's createTime reads 31 minutes.
  auto queued = jobIn(kJob, JobState::Queued);
  queued.createTime = T0 - minutes(31);
  auto o = onAttempt1(0, queued, crd::Phase::Queued);
  o.status.history.attempts[0].startTime = T0 - minutes(1);
  auto plan = decide(o);
  EXPECT_FALSE(plan.cancelJob.has_value());
  EXPECT_EQ(plan.requeueAfter, minutes(5)) << "the resync comes before the deadline (29m)";
}

TEST(CapacityDecide, ACreateRefusedForAnAcceleratorQuotaTriesTheNextPlacementInTheSamePass) {
  auto o = onAttempt1(0, jobIn(kJob, JobState::Failed, kStockout), crd::Phase::Running);
  auto first = decide(o);  // attempt 2 goes to placement 1 (us-east4)
  o.status = *first.status;
  o.vertex.job.reset();
  o.vertex.createQuotaExceeded =
      "The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus";
  auto plan = decide(o);
  ASSERT_TRUE(plan.createJob.has_value());
  EXPECT_EQ(plan.createJob->attempt, 2);
  EXPECT_EQ(plan.createJob->placement, 2u);
  EXPECT_EQ(plan.status->history.capacity->blocked.back().reason, "QuotaExceeded");
  EXPECT_EQ(plan.failover->fromLocation, "us-east4");
  EXPECT_EQ(plan.failover->reason, "QuotaExceeded");
}

TEST(CapacityDecide, ARunningJobEndsTheCapacityFailures) {
  auto o = onAttempt1(1, jobIn(kEastJob, JobState::Running), crd::Phase::Queued);
  crd::CapacityHistory capacity;
  capacity.failingSince = T0 - minutes(5);
  o.status.history.capacity = capacity;
  auto plan = decide(o);
  ASSERT_TRUE(plan.status.has_value());
  EXPECT_FALSE(plan.status->history.capacity->failingSince.has_value());
  EXPECT_EQ(plan.status->history.attempts[0].location, "us-east4") << "where it runs comes from the job's name";
}

TEST(CapacityDecide, AStockoutOnASpotJobThatHadStartedIsAPreemption) {
  // Google: a preempted Spot VM that Compute Engine cannot restart fails the job with STOCKOUT.
  auto ran = jobIn(kJob, JobState::Failed, kStockout);
  ran.startTime = T0 - minutes(8);
  auto o = onAttempt1(0, ran, crd::Phase::Running);
  o.now = T0 + minutes(5);  // past the resume backoff
  auto plan = decide(o);
  ASSERT_TRUE(plan.createJob.has_value());
  EXPECT_EQ(plan.createJob->placement, 0u) << "resumed where it ran";
  EXPECT_EQ(plan.createJob->resumeFrom, "gs://bucket/r/checkpoints/ckpt-4");
  EXPECT_EQ(plan.status->history.resumes, 1);
  EXPECT_FALSE(hasEvent(plan, "CapacityFailover"));
  EXPECT_TRUE(!plan.status->history.capacity || plan.status->history.capacity->blocked.empty()) << "nothing blocked";
  EXPECT_EQ(plan.status->history.attempts[0].failureClass, crd::FailureClass::Preemption);

  // Without spec.capacity, with resumeOn [Preemption] only: it resumes too.
  auto plain = onAttempt1(0, ran, crd::Phase::Running);
  plain.run = runWith(capacityWith(R"({"capacity": null, "checkpointing": {"resumeOn": ["Preemption"]}})"));
  plain.metadata = plain.run->metadata;
  plain.status.history.attempts[0].placement.reset();
  plain.now = T0 + minutes(5);
  auto resumed = decide(plain);
  ASSERT_TRUE(resumed.createJob.has_value()) << resumed.status->message;
  EXPECT_EQ(resumed.status->history.resumes, 1);
}

TEST(CapacityDecide, AStockoutOfASpotJobThatNeverStartedStillMovesAndOneOnStandardIsAStockout) {
  auto standard = onAttempt1(1, jobIn(kEastJob, JobState::Failed, kStockout), crd::Phase::Running);
  standard.run = runWith(capacityWith(R"({"scheduling": {"strategy": "Standard"}})"));
  standard.metadata = standard.run->metadata;
  standard.status.history.attempts[0].placement = 1;
  auto job = jobIn(kEastJob, JobState::Failed, kStockout);
  job.startTime = T0 - minutes(8);
  standard.vertex.job = job;
  auto plan = decide(standard);
  ASSERT_TRUE(plan.createJob.has_value());
  EXPECT_EQ(plan.createJob->placement, 0u) << "a Standard job's STOCKOUT is no preemption: it moves";
  EXPECT_EQ(plan.status->history.capacity->blocked[0].reason, "Stockout");
}

TEST(CapacityDecide, AFlexStartJobIsNeverCancelledWithinItsOwnMaxWaitDuration) {
  auto queued = jobIn(kJob, JobState::Queued);
  queued.createTime = T0 - minutes(31);  // past maxQueueTime (30m), within maxWaitDuration (2h)
  auto plan = decide(onAttempt1(2, queued, crd::Phase::Queued));
  EXPECT_FALSE(plan.cancelJob.has_value());
  EXPECT_EQ(plan.requeueAfter, minutes(5)) << "the resync, well before its wait ends (89m)";
  EXPECT_FALSE(hasEvent(plan, "QueueTimeout"));

  queued.createTime = T0 - minutes(121);
  auto late = decide(onAttempt1(2, queued, crd::Phase::Queued));
  ASSERT_TRUE(late.cancelJob.has_value()) << "past its own wait, maxQueueTime applies";

  // maxWaitDuration 0s waits indefinitely: Vertex waits, and so does vto.
  auto forever = onAttempt1(2, queued, crd::Phase::Queued);
  forever.run = runWith(capacityWith(R"({"capacity": {"fallbacks": [{"location": "us-east4"},
      {"scheduling": {"strategy": "FlexStart", "maxWaitDuration": "0s"}}]}})"));
  forever.metadata = forever.run->metadata;
  queued.createTime = T0 - minutes(60 * 48);
  forever.vertex.job = queued;
  EXPECT_FALSE(decide(forever).cancelJob.has_value());
}

TEST(CapacityDecide, WithFallbacksAJobHeldQueuedMovesAfterThe30mDefault) {
  // Vertex holds a job QUEUED, without an error, while the project lacks quota.
  auto queued = jobIn(kJob, JobState::Queued);
  queued.createTime = T0 - minutes(30);
  auto o = onAttempt1(0, queued, crd::Phase::Queued);
  o.run = runWith(capacityWith(R"({"capacity": {"fallbacks": [{"location": "us-east4"}], "maxQueueTime": null}})"));
  o.metadata = o.run->metadata;
  ASSERT_EQ(o.run->spec.capacity->maxQueueSeconds, 1800);
  auto plan = decide(o);
  ASSERT_TRUE(plan.cancelJob.has_value());
  EXPECT_TRUE(hasEvent(plan, "QueueTimeout"));
}

TEST(CapacityDecide, OneCapacityFailureMoreThanMaxFailoversFailsTheRun) {
  auto o = onAttempt1(0, jobIn(kJob, JobState::Failed, kStockout), crd::Phase::Running);
  o.run = runWith(capacityWith(R"({"capacity": {"maxFailovers": 2}})"));
  o.metadata = o.run->metadata;
  crd::CapacityHistory capacity;
  capacity.failovers = 1;
  o.status.history.capacity = capacity;
  auto moved = decide(o);
  ASSERT_TRUE(moved.createJob.has_value()) << "the second move is allowed";
  EXPECT_EQ(moved.status->history.capacity->failovers, 2);

  o.status.history.capacity->failovers = 2;
  auto plan = decide(o);
  EXPECT_FALSE(plan.createJob.has_value());
  EXPECT_EQ(plan.status->phase, crd::Phase::Failed);
  EXPECT_EQ(condition(*plan.status, "Failed"), "True/CapacityUnavailable");
  EXPECT_NE(plan.status->message.find("spec.capacity.maxFailovers"), std::string::npos) << plan.status->message;

  // A quota refusal at create is a move too.
  auto q = onAttempt1(0, jobIn(kJob, JobState::Failed, kStockout), crd::Phase::Running);
  q.run = o.run;
  q.status.history.capacity = crd::CapacityHistory{};
  q.status.history.capacity->failovers = 1;
  auto first = decide(q);  // the stockout: move 2
  q.status = *first.status;
  q.vertex.job.reset();
  q.vertex.createQuotaExceeded = "custom_model_training_nvidia_a100_gpus";
  auto refused = decide(q);
  EXPECT_FALSE(refused.createJob.has_value());
  EXPECT_EQ(refused.status->phase, crd::Phase::Failed);
}

// A CPU-only spec whose fallback asks for 8 A100s, with its CPU attempt just out of capacity: the
// fallback is the placement the next attempt would take, and the cap must count it.
Observed cpuRunMovingToGpus(const governance::TenancyRules& rules, const std::vector<std::pair<size_t, governance::AcceleratorClaim>>& others) {
  auto o = onAttempt1(0, jobIn(kJob, JobState::Failed, kStockout), crd::Phase::Running);
  o.run = runWith(R"({"location": "us-central1", "resources": {"machineType": "n1-standard-8"},
    "capacity": {"fallbacks": [{"resources": {"machineType": "a2-highgpu-8g", "acceleratorType": "NVIDIA_TESLA_A100",
                                              "acceleratorCount": 8}}]}})");
  o.metadata = o.run->metadata;
  o.tenancy.rules = &rules;
  o.tenancy.ns = {"ns", std::nullopt};
  o.tenancy.otherClaims = others;
  return o;
}

TEST(CapacityDecide, AGpuFallbackOfACpuOnlyRunWaitsForTheCapANeighbourHolds) {
  // Row 1: one rule caps the namespace at 8. Row 2: per-accelerator-type rules: the CPU placement is
  // governed by an uncapped rule, the A100 fallback by the rule that allows A100s and caps them.
  struct Row {
    const char* name;
    const char* rules;
    size_t neighbourRule;
  };
  for (const auto& row : {Row{"one cap", R"([{"imagePrefixes": ["us-docker.pkg.dev/p/", "us-central1-docker.pkg.dev/p/"], "namespaces": ["ns"], "maxAccelerators": 8}])", 0},
                          Row{"a cap per accelerator type",
                              R"([{"imagePrefixes": ["us-docker.pkg.dev/p/", "us-central1-docker.pkg.dev/p/"], "namespaces": ["ns"], "acceleratorTypes": ["NVIDIA_L4"]},
                                  {"imagePrefixes": ["us-docker.pkg.dev/p/", "us-central1-docker.pkg.dev/p/"], "namespaces": ["ns"], "acceleratorTypes": ["NVIDIA_TESLA_A100"], "maxAccelerators": 8}])",
                              1}}) {
    SCOPED_TRACE(row.name);
    const auto rules = governance::parseTenancyRules(json::parse(row.rules));
    governance::AcceleratorClaim neighbour{"other/holder", "2026-03-01T11:00:00Z", 8, true};
    auto plan = decide(cpuRunMovingToGpus(rules, {{row.neighbourRule, neighbour}}));
    EXPECT_FALSE(plan.createJob.has_value()) << "the neighbour holds all 8";
    ASSERT_TRUE(plan.status.has_value());
    EXPECT_EQ(plan.status->phase, crd::Phase::Queued);
    EXPECT_EQ(condition(*plan.status, "Ready"), "False/TenantQuotaExceeded");
    EXPECT_EQ(plan.status->history.attempts.back().placement, 1) << "it waits for the cap on the fallback";

    auto free = decide(cpuRunMovingToGpus(rules, {}));
    ASSERT_TRUE(free.createJob.has_value()) << "with the cap free the fallback starts";
    EXPECT_EQ(free.createJob->placement, 1u);
  }
}

TEST(CapacityDecide, AClaimUnderAnotherRulesCapDoesNotHoldTheFallbackBack) {
  // The neighbour's 8 count under the L4 rule's cap; the A100 fallback's cap is free.
  const auto rules = governance::parseTenancyRules(json::parse(
      R"([{"imagePrefixes": ["us-docker.pkg.dev/p/", "us-central1-docker.pkg.dev/p/"], "namespaces": ["ns"], "acceleratorTypes": ["NVIDIA_L4"], "maxAccelerators": 8},
          {"imagePrefixes": ["us-docker.pkg.dev/p/", "us-central1-docker.pkg.dev/p/"], "namespaces": ["ns"], "acceleratorTypes": ["NVIDIA_TESLA_A100"], "maxAccelerators": 8}])"));
  governance::AcceleratorClaim neighbour{"other/holder", "2026-03-01T11:00:00Z", 8, true};
  auto plan = decide(cpuRunMovingToGpus(rules, {{0, neighbour}}));
  ASSERT_TRUE(plan.createJob.has_value());
  EXPECT_EQ(plan.createJob->placement, 1u);
}

TEST(CapacityDecide, AFallbackOutsideTheTenantsRuleRefusesTheRunNamingTheFallback) {
  static const auto rules =
      governance::parseTenancyRules(json::parse(R"([{"imagePrefixes": ["us-docker.pkg.dev/p/", "us-central1-docker.pkg.dev/p/"], "namespaces": ["ns"], "locations": ["us-central1"]}])"));
  Observed o;
  o.now = T0;
  o.run = runWith();
  o.metadata = o.run->metadata;
  o.defaults = {"test-project", "us-central1"};
  o.tenancy.rules = &rules;
  o.tenancy.ns = {"ns", std::nullopt};
  auto plan = decide(o);
  EXPECT_FALSE(plan.createJob.has_value());
  EXPECT_EQ(plan.status->phase, crd::Phase::Invalid);
  EXPECT_EQ(plan.status->message.rfind("spec.capacity.fallbacks[0]: ", 0), 0u) << plan.status->message;
}

TEST(CapacityDecide, AFallbackTheCatalogRefusesMakesTheRunInvalidNamingTheFallback) {
  // What CEL cannot judge (the spec's A100s on the fallback's H100 machine), decide refuses before any job.
  Observed o;
  o.now = T0;
  o.run = runWith(R"({"location": "us-central1",
    "resources": {"machineType": "a2-highgpu-8g", "acceleratorType": "NVIDIA_TESLA_A100", "acceleratorCount": 8},
    "capacity": {"fallbacks": [{"location": "us-east4"}, {"resources": {"machineType": "a3-highgpu-8g"}}]}})");
  o.metadata = o.run->metadata;
  o.defaults = {"test-project", "us-central1"};
  auto plan = decide(o);
  EXPECT_FALSE(plan.createJob.has_value());
  ASSERT_TRUE(plan.status.has_value());
  EXPECT_EQ(plan.status->phase, crd::Phase::Invalid);
  EXPECT_EQ(condition(*plan.status, "Valid"), "False/SpecInvalid");
  EXPECT_NE(plan.status->message.find("ERROR spec.capacity.fallbacks[1].resources.acceleratorType: Accelerator "
                                      "\"NVIDIA_TESLA_A100\" is not supported for machine type \"a3-highgpu-8g\""),
            std::string::npos)
      << plan.status->message;
  EXPECT_TRUE(hasEvent(plan, "InvalidSpec"));
}

}  // namespace
}  // namespace vto::reconcilers
