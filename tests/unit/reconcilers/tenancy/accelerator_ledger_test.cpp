// The accelerator ledger: which runs it keeps, the rule that governs each claim, and which waiting
// runs a release wakes (oldest first, until what they want covers what was freed).
#include "reconcilers/tenancy/accelerator_ledger.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "crd/render.h"
#include "crd/yaml_json.h"
#include "tests/unit/crd/crd_test_support.h"

namespace vto::reconcilers {
namespace {

// Rule 0 caps team-a at 8 and allows only project acme-ml; rule 1 caps namespaces labelled tier=ml at
// 4; rule 2 lets team-c use anything, uncapped.
governance::TenancyRules rules() {
  return governance::parseTenancyRules(crd::parseYamlDocuments(R"(
- namespaces: [team-a]
  imagePrefixes: [us-docker.pkg.dev/p/, us-central1-docker.pkg.dev/p/]
  projects: [acme-ml]
  maxAccelerators: 8
- namespaceSelector: {matchLabels: {tier: ml}}
  imagePrefixes: [us-docker.pkg.dev/p/, us-central1-docker.pkg.dev/p/]
  maxAccelerators: 4
- namespaces: [team-c]
  imagePrefixes: [us-docker.pkg.dev/p/, us-central1-docker.pkg.dev/p/]
)").at(0));
}

// A run of `gpus` T4s created at second `created`; `job` names its current job (empty: waiting).
crd::TrainingRun run(const std::string& ns, const std::string& name, int gpus, int created, const std::string& job = "",
                     crd::Phase phase = crd::Phase::Queued) {
  auto run = crd::testing::runWithSpec("  project: acme-ml\n  resources: {machineType: n1-standard-16, "
                                       "acceleratorType: NVIDIA_TESLA_T4, acceleratorCount: " +
                                       std::to_string(gpus) + "}\n");
  run.metadata.namespace_ = ns;
  run.metadata.name = name;
  run.metadata.uid = "uid-" + name;
  run.metadata.creationTimestamp = "2026-12-04T10:00:" + std::string(created < 10 ? "0" : "") + std::to_string(created) + "Z";
  run.status.phase = phase;
  crd::Attempt first;
  first.attempt = 1;
  first.jobName = job;
  run.status.history.attempts.push_back(first);
  return run;
}

std::vector<std::string> names(const std::vector<controller::ObjectKey>& keys) {
  std::vector<std::string> out;
  for (const auto& key : keys) out.push_back(key.name);
  return out;
}

governance::NamespaceInfo labelled(const std::string& ns) {
  if (ns == "research") return {ns, std::map<std::string, std::string>{{"tier", "ml"}}};
  return {ns, std::map<std::string, std::string>{}};
}

TEST(AcceleratorLedger, KeepsOnlyRunsThatClaimAcceleratorsUnderACap) {
  AcceleratorLedger ledger(rules(), {});
  EXPECT_TRUE(ledger.capped());
  auto held = run("team-a", "held", 4, 1, "jobs/1", crd::Phase::Running);
  auto waiting = run("team-a", "waiting", 4, 2);
  auto cpuOnly = run("team-a", "cpu", 0, 3);
  cpuOnly.spec.resources->acceleratorType.clear();
  auto finished = run("team-a", "done", 4, 4, "jobs/4", crd::Phase::Succeeded);
  auto suspended = run("team-a", "suspended", 4, 5);
  suspended.spec.suspend = true;
  auto otherProject = run("team-a", "elsewhere", 4, 6);  // only rule 1 (by label) could govern it: still kept
  otherProject.spec.project = "other";
  for (const auto* r : {&held, &waiting, &cpuOnly, &finished, &suspended, &otherProject}) {
    EXPECT_TRUE(ledger.update(r->metadata.uid, r).empty());
  }
  EXPECT_EQ(ledger.size(), 3u) << "held, waiting, elsewhere";

  AcceleratorLedger uncapped(governance::parseTenancyRules(crd::parseYamlDocuments("- namespaces: [team-a]\n  imagePrefixes: [us-docker.pkg.dev/p/, us-central1-docker.pkg.dev/p/]\n").at(0)), {});
  EXPECT_FALSE(uncapped.capped());
  uncapped.update(held.metadata.uid, &held);
  EXPECT_EQ(uncapped.size(), 0u);
}

TEST(AcceleratorLedger, EachClaimComesWithTheRuleThatGovernsItsNamespace) {
  AcceleratorLedger ledger(rules(), {});
  auto a = run("team-a", "a", 4, 1, "jobs/1", crd::Phase::Running);
  auto r = run("research", "r", 2, 2);
  auto c = run("team-c", "c", 2, 3);  // governed by the uncapped rule 2 (rule 1 does not select team-c)
  for (const auto* each : {&a, &r, &c}) ledger.update(each->metadata.uid, each);
  int lookups = 0;
  auto claims = ledger.claimsOtherThan("uid-a", [&](const std::string& ns) {
    ++lookups;
    return labelled(ns);
  });
  ASSERT_EQ(claims.size(), 1u) << "a is the caller; c's rule has no cap";
  EXPECT_EQ(claims[0].first, 1u);
  EXPECT_EQ(claims[0].second.key, "research/r");
  EXPECT_EQ(claims[0].second.accelerators, 2);
  EXPECT_FALSE(claims[0].second.holding);
  EXPECT_EQ(lookups, 2) << "once per namespace: research and team-c";

  claims = ledger.claimsOtherThan("uid-r", labelled);
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].first, 0u);
  EXPECT_TRUE(claims[0].second.holding);
}

TEST(AcceleratorLedger, AReleaseWakesTheOldestWaitingRunsUntilWhatWasFreedIsCovered) {
  AcceleratorLedger ledger(rules(), {});
  auto holder = run("team-a", "holder", 4, 1, "jobs/1", crd::Phase::Running);
  auto w1 = run("team-a", "w1", 2, 2);
  auto w2 = run("team-a", "w2", 3, 3);
  auto w3 = run("team-a", "w3", 4, 4);
  for (const auto* each : {&holder, &w3, &w2, &w1}) ledger.update(each->metadata.uid, each);

  EXPECT_TRUE(ledger.update("uid-w1", &w1).empty()) << "a run still waiting frees nothing";
  auto admitted = run("team-a", "w1", 2, 2, "jobs/2");
  EXPECT_TRUE(ledger.update("uid-w1", &admitted).empty()) << "nor does one that gets its job";
  EXPECT_EQ(names(ledger.update("uid-w1", &w1)), std::vector<std::string>{"w2"})
      << "one whose job ended and that waits to resume frees what it held";

  auto done = run("team-a", "holder", 4, 1, "jobs/1", crd::Phase::Succeeded);
  EXPECT_EQ(names(ledger.update("uid-holder", &done)), (std::vector<std::string>{"w1", "w2"}))
      << "2 + 3 cover the 4 freed; w3 could not start before them";
  EXPECT_EQ(ledger.size(), 3u);

  EXPECT_EQ(names(ledger.update("uid-w1", nullptr)), (std::vector<std::string>{"w2"}))
      << "a waiting run that leaves the line lets the next one look";
  EXPECT_TRUE(ledger.update("uid-unknown", nullptr).empty());
}

TEST(AcceleratorLedger, AReleaseWakesNoRunThatNoCapOfItsOwnCouldGovern) {
  AcceleratorLedger ledger(rules(), {});
  auto holder = run("team-a", "holder", 4, 1, "jobs/1", crd::Phase::Running);
  holder.spec.project = "other";  // only rule 1 allows it
  auto waiting = run("team-a", "waiting", 2, 2);
  ledger.update(holder.metadata.uid, &holder);
  ledger.update(waiting.metadata.uid, &waiting);
  EXPECT_EQ(names(ledger.update("uid-holder", nullptr)), std::vector<std::string>{"waiting"})
      << "rule 1 allows both specs";
  ledger.update(holder.metadata.uid, &holder);

  auto rules0Only = rules();
  rules0Only[1].maxAccelerators.reset();
  AcceleratorLedger split(rules0Only, {});
  split.update(holder.metadata.uid, &holder);
  split.update(waiting.metadata.uid, &waiting);
  EXPECT_EQ(split.size(), 1u) << "no capped rule allows the holder's project";
  EXPECT_TRUE(split.update("uid-holder", nullptr).empty());
}

TEST(AcceleratorLedger, AClaimOnAFallbackCountsUnderTheRuleThatAllowsTheFallback) {
  // A cap per accelerator type. The run's own placement is CPU-only (both rules allow it, rule 0
  // first); the fallback its attempt went to asks for A100s, which only rule 1 allows.
  auto perType = governance::parseTenancyRules(crd::parseYamlDocuments(R"(
- namespaces: [team-x]
  imagePrefixes: [us-docker.pkg.dev/p/, us-central1-docker.pkg.dev/p/]
  acceleratorTypes: [NVIDIA_L4]
  maxAccelerators: 8
- namespaces: [team-x]
  imagePrefixes: [us-docker.pkg.dev/p/, us-central1-docker.pkg.dev/p/]
  acceleratorTypes: [NVIDIA_TESLA_A100]
  maxAccelerators: 8
)").at(0));
  AcceleratorLedger ledger(perType, {});
  auto moved = crd::testing::runWithSpec(
      "  project: acme-ml\n  resources: {machineType: n1-standard-16}\n"
      "  capacity: {fallbacks: [{resources: {machineType: a2-highgpu-8g, acceleratorType: NVIDIA_TESLA_A100, "
      "acceleratorCount: 8}}]}\n");
  moved.metadata.namespace_ = "team-x";
  moved.metadata.name = "moved";
  moved.metadata.uid = "uid-moved";
  moved.status.phase = crd::Phase::Queued;
  crd::Attempt second;
  second.attempt = 2;
  second.placement = 1;
  moved.status.history.attempts.push_back(second);
  ledger.update(moved.metadata.uid, &moved);
  auto claims = ledger.claimsOtherThan("uid-new", labelled);
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].first, 1u) << "the A100 rule's cap, not the rule that allows the CPU placement";
  EXPECT_EQ(claims[0].second.accelerators, 8);
}

// What Vertex holds counts, whatever became of the run: a job vto made counts for the namespace its
// labels name until Vertex says it ended.
CachedJob jobOf(const std::string& name, const std::string& ns, int gpus, vertex::JobState state) {
  CachedJob job;
  job.name = "projects/acme-ml/locations/us-central1/customJobs/" + name;
  job.state = state;
  job.labels = {{crd::kNamespaceLabel, ns}, {crd::kAcceleratorsLabel, std::to_string(gpus)},
                {crd::kAcceleratorTypeLabel, "nvidia_tesla_t4"}};
  return job;
}

TEST(AcceleratorLedger, AJobCountsUntilVertexSaysItEndedWhateverBecameOfItsRun) {
  std::map<std::string, bool> live;  // what the JobCache knows
  AcceleratorLedger ledger(rules(), {}, [&](const std::string& name) -> std::optional<bool> {
    auto found = live.find(name);
    return found == live.end() ? std::nullopt : std::optional(found->second);
  });
  auto job = jobOf("1", "team-a", 8, vertex::JobState::Running);
  live[job.name] = true;
  auto holder = run("team-a", "holder", 8, 1, job.name, crd::Phase::Running);
  ledger.update(holder.metadata.uid, &holder);
  EXPECT_TRUE(ledger.updateJob(job.name, &job).empty());
  auto others = ledger.claimsOtherThan("uid-new", labelled);
  ASSERT_EQ(others.size(), 1u) << "the run's job counts, not the run beside it";
  EXPECT_EQ(others[0].second.accelerators, 8);
  EXPECT_TRUE(others[0].second.holding);

  // Deleted with deletionPolicy Orphan, or edited into Invalid, or its spec shrunk: the job still runs.
  auto waiting = run("team-a", "waiting", 4, 2);
  ledger.update(waiting.metadata.uid, &waiting);
  EXPECT_TRUE(ledger.update(holder.metadata.uid, nullptr).empty()) << "nothing is freed while the job runs";
  auto claims = ledger.claimsOtherThan("uid-waiting", labelled);
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].second.accelerators, 8);

  // Vertex says it ended: the waiting run is woken.
  auto ended = jobOf("1", "team-a", 8, vertex::JobState::Cancelled);
  live[job.name] = false;
  EXPECT_EQ(names(ledger.updateJob(job.name, &ended)), std::vector<std::string>{"waiting"});
  EXPECT_TRUE(ledger.claimsOtherThan("uid-waiting", labelled).empty());
}

TEST(AcceleratorLedger, ARunWhoseJobIsNotReadYetHoldsWhatItsSpecAsks) {
  AcceleratorLedger ledger(rules(), {}, [](const std::string&) -> std::optional<bool> { return std::nullopt; });
  auto holder = run("team-a", "holder", 4, 1, "projects/acme-ml/locations/us-central1/customJobs/9", crd::Phase::Running);
  ledger.update(holder.metadata.uid, &holder);
  auto claims = ledger.claimsOtherThan("uid-new", labelled);
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_TRUE(claims[0].second.holding);
  EXPECT_EQ(claims[0].second.accelerators, 4);
}

TEST(AcceleratorLedger, AJobWithoutTheLabelsOfItsClaimIsNotCounted) {
  AcceleratorLedger ledger(rules(), {});
  auto job = jobOf("2", "team-a", 8, vertex::JobState::Running);
  job.labels.erase(crd::kAcceleratorsLabel);
  ledger.updateJob(job.name, &job);
  EXPECT_EQ(ledger.size(), 0u) << "made by an older vto: its run's claim stands in";
  auto other = jobOf("3", "team-a", 8, vertex::JobState::Running);
  other.name = "projects/another/locations/us-central1/customJobs/3";
  ledger.updateJob(other.name, &other);
  EXPECT_EQ(ledger.size(), 1u) << "rule 1 (by label) could govern a job in another project";
}

TEST(LedgerSources, EveryPlaceACappedRuleAllowsWithTheDefaultsWhereItIsOpen) {
  auto custom = [](size_t rule, const std::string& project, const std::string& location) {
    return LedgerSource{rule, PollTarget{Location{project, location}, vertex::JobKind::Custom}};
  };
  auto tuning = [](size_t rule, const std::string& project, const std::string& location) {
    return LedgerSource{rule, PollTarget{Location{project, location}, vertex::JobKind::HyperparameterTuning}};
  };
  struct Case {
    std::string name, rules;
    Location defaults;
    std::vector<LedgerSource> want;
  };
  std::vector<Case> cases{
      {"no cap: nothing to list", "- namespaces: [a]\n  projects: [acme-ml]\n", {"dflt-project", "us-east1"}, {}},
      {"listed projects x listed locations x both kinds",
       "- namespaces: [a]\n  projects: [acme-ml, acme-two]\n  locations: [us-central1]\n  maxAccelerators: 8\n",
       {},
       {custom(0, "acme-ml", "us-central1"), tuning(0, "acme-ml", "us-central1"), custom(0, "acme-two", "us-central1"),
        tuning(0, "acme-two", "us-central1")}},
      {"open fields take the operator's defaults",
       "- namespaces: [a]\n  maxAccelerators: 8\n- namespaces: [b]\n  locations: [europe-west4]\n  maxAccelerators: 2\n",
       {"dflt-project", "us-east1"},
       {custom(0, "dflt-project", "us-east1"), tuning(0, "dflt-project", "us-east1"),
        custom(1, "dflt-project", "europe-west4"), tuning(1, "dflt-project", "europe-west4")}},
      {"open with no default: no place can be named", "- namespaces: [a]\n  maxAccelerators: 8\n", {}, {}},
      {"only capped rules", "- namespaces: [a]\n  projects: [acme-ml]\n- namespaces: [b]\n  maxAccelerators: 2\n",
       {"dflt-project", "us-east1"}, {custom(1, "dflt-project", "us-east1"), tuning(1, "dflt-project", "us-east1")}},
  };
  for (const auto& c : cases) {
    auto parsed = governance::parseTenancyRules(crd::parseYamlDocuments(c.rules).at(0));
    EXPECT_EQ(ledgerSources(parsed, c.defaults), c.want) << c.name;
  }
  AcceleratorLedger ledger(rules(), {"dflt-project", "us-east1"});
  EXPECT_EQ(ledger.sources(), ledgerSources(rules(), {"dflt-project", "us-east1"}));
}


// Runs failing over at once each decided, unlocked, that the cap had room; act reserves under one
// lock, so only as many as fit get room, whichever thread comes first, and the others see it held.
TEST(AcceleratorLedger, ConcurrentReservationsNeverExceedTheCap) {
  for (int round = 0; round < 20; ++round) {
    AcceleratorLedger ledger(rules(), {});
    std::vector<crd::TrainingRun> runs;
    for (int i = 0; i < 6; ++i) runs.push_back(run("team-a", "failover-" + std::to_string(i), 0, i, "jobs/cpu-" + std::to_string(i), crd::Phase::Running));
    for (auto& r : runs) ledger.update(r.metadata.uid, &r);  // CPU-only: nothing claimed yet
    auto onFallback = run("team-a", "x", 8, 0);                 // what each asks for on its fallback
    std::atomic<int> granted{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 6; ++i) {
      threads.emplace_back([&, i] {
        auto claim = governance::claimOf(onFallback, false);
        claim.key = "team-a/failover-" + std::to_string(i);
        claim.creationTimestamp = runs[i].metadata.creationTimestamp;
        if (ledger.reserve(runs[i].metadata.uid, {"team-a", runs[i].metadata.name}, 2, 0, claim, {true, false, false}, labelled))
          ++granted;
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(granted.load(), 1) << "round " << round << ": 8 A100s each under a cap of 8";
    int64_t held = 0;
    for (const auto& [rule, claim] : ledger.claimsOtherThan("nobody", labelled)) held += claim.accelerators;
    EXPECT_EQ(held, 8) << "the reservation counts for every other admission";
  }
}

// A reservation stands for the job it is about to create: it goes once that job is known, not when
// another attempt's job of the same run changes, and a refused create gives it back.
TEST(AcceleratorLedger, AReservationLastsUntilItsJobIsKnownOrItIsReleased) {
  AcceleratorLedger ledger(rules(), {});
  auto r = run("team-a", "mover", 8, 1, "jobs/attempt-1", crd::Phase::Running);
  auto claim = governance::claimOf(r, false);
  ASSERT_TRUE(ledger.reserve(r.metadata.uid, {"team-a", "mover"}, 2, 0, claim, {true, false, false}, labelled));
  auto total = [&] {
    int64_t held = 0;
    for (const auto& [rule, c] : ledger.claimsOtherThan("nobody", labelled)) held += c.accelerators;
    return held;
  };
  EXPECT_EQ(total(), 8);
  CachedJob attempt1;
  attempt1.name = "projects/acme-ml/locations/us-central1/customJobs/1";
  attempt1.state = vertex::JobState::Failed;
  attempt1.labels = {{crd::kRunUidLabel, r.metadata.uid}, {crd::kAttemptLabel, "1"}};
  ledger.updateJob(attempt1.name, &attempt1);
  EXPECT_EQ(total(), 8) << "attempt 1's job is not the one reserved for";
  CachedJob attempt2 = attempt1;
  attempt2.name = "projects/acme-ml/locations/us-central1/customJobs/2";
  attempt2.state = vertex::JobState::Queued;
  attempt2.labels = {{crd::kRunUidLabel, r.metadata.uid}, {crd::kAttemptLabel, "2"}, {crd::kNamespaceLabel, "team-a"},
                     {crd::kAcceleratorsLabel, "8"}, {crd::kAcceleratorTypeLabel, "nvidia_tesla_t4"}};
  ledger.updateJob(attempt2.name, &attempt2);
  EXPECT_EQ(total(), 8) << "now counted as the job, not twice";
  ASSERT_TRUE(ledger.reserve("uid-other", {"team-a", "other"}, 1, 0, claim, {true, false, false}, labelled) == false)
      << "the job holds the room";
  ledger.updateJob(attempt2.name, nullptr);
  ASSERT_TRUE(ledger.reserve("uid-other", {"team-a", "other"}, 1, 0, claim, {true, false, false}, labelled));
  ledger.release("uid-other");
  EXPECT_EQ(total(), 0);
}

}  // namespace
}  // namespace vto::reconcilers
