#include "cmd/describe.h"

#include <gtest/gtest.h>

#include "base/rfc3339.h"

namespace vto::cmd {
namespace {

using nlohmann::json;
using Labels = std::map<std::string, std::string>;

const std::string kJob1 = "projects/p-123456/locations/us-central1/customJobs/1001";
const std::string kJob2 = "projects/p-123456/locations/us-central1/customJobs/1002";

// vto's labels on a job made for run `uid` of team-a/mnist, attempt `attempt`, by cluster `cluster`
// ("" : the release before, which wrote no vto-cluster label).
Labels vtoLabels(const std::string& uid, const std::string& attempt, const std::string& cluster,
                 const std::string& name = "mnist") {
  Labels labels = {{"vto-run-uid", uid}, {"vto-namespace", "team-a"}, {"vto-name", name},
                   {"vto-attempt", attempt}, {"managed-by", "vto"}};
  if (!cluster.empty()) labels["vto-cluster"] = cluster;
  return labels;
}

RunIdentity mnist(std::vector<std::string> runUids = {"new-uid"}) { return {"team-a", "mnist", "new-uid", std::move(runUids)}; }

TEST(DescribeWhoseJob, SaysWhoMadeEachJobAndWhoseItIs) {
  struct Case {
    Labels labels;
    RunIdentity run;
    std::string expected;
  };
  for (const auto& c : std::vector<Case>{
           {vtoLabels("new-uid", "1", "dr-prod"), mnist(), "made by this cluster (dr-prod) for this run"},
           {vtoLabels("old-uid", "2", "dr-prod"), mnist({"old-uid", "new-uid"}),
            "made by this cluster (dr-prod) for an earlier run of this name (uid old-uid, attempt 2): taken over (restored "
            "from a backup: that uid is in vto.dev/run-uids)"},
           {vtoLabels("old-uid", "1", "dr-prod"), mnist(),
            "made by this cluster (dr-prod) for an earlier run of this name (uid old-uid, attempt 1): taken over (re-applied, "
            "or restored without annotations)"},
           {vtoLabels("new-uid", "1", ""), mnist(), "made by the release before (no vto-cluster label) for this run"},
           {vtoLabels("new-uid", "1", "staging"), mnist(), "another cluster's (staging): not this run's"},
           {{{"team", "vision"}}, mnist(), "started outside vto (no vto labels): not this run's"},
           {{}, mnist(), "started outside vto (no vto labels): not this run's"},
           {vtoLabels("other-uid", "1", "dr-prod", "resnet"), mnist(),
            "made by this cluster (dr-prod) for another run (team-a/resnet, uid other-uid): not this run's"},
       }) {
    EXPECT_EQ(whoseJob(c.labels, c.run, "dr-prod"), c.expected) << json(c.labels).dump();
  }
  // Not knowing this cluster's identity, it says which cluster the job names.
  EXPECT_EQ(whoseJob(vtoLabels("new-uid", "1", "dr-prod"), mnist(), ""),
            "made by cluster dr-prod (this cluster's identity is unknown: pass --cluster-id) for this run");
}

TEST(DescribeWhoseJob, AJobStartedOutsideVtoIsTheRunsWhenItsSpecAdoptsIt) {
  auto run = mnist();
  run.adoptJob = kJob1;
  EXPECT_EQ(whoseJob({{"team", "vision"}}, run, "dr-prod", nullptr, std::nullopt, kJob1),
            "started outside vto (no vto labels), adopted by this run (spec.adoptJob)");
  EXPECT_EQ(whoseJob({{"team", "vision"}}, run, "dr-prod", nullptr, std::nullopt, kJob2),
            "started outside vto (no vto labels): not this run's");
  // A resume after the adopted job: vto's own job for this run.
  EXPECT_EQ(whoseJob(vtoLabels("new-uid", "2", "dr-prod"), run, "dr-prod", nullptr, std::nullopt, kJob2),
            "made by this cluster (dr-prod) for this run");

  DescribeInput input;
  input.run = {{"metadata", {{"name", "mnist"}, {"namespace", "team-a"}, {"uid", "new-uid"}}},
               {"spec", {{"adoptJob", kJob1}}},
               {"status", {{"phase", "Running"}, {"attemptCount", 1},
                           {"attempts", json::array({{{"attempt", 1}, {"jobName", kJob1}, {"state", "JOB_STATE_RUNNING"}}})}}}};
  input.clusterId = "dr-prod";
  input.clusterIdSource = "--cluster-id";
  input.jobs[1] = {true, {{"team", "vision"}}, "JOB_STATE_RUNNING", std::nullopt, ""};
  input.events = json::array();
  auto text = describeRun(input);
  EXPECT_NE(text.find("Adopt Job:         " + kJob1 + " (spec.adoptJob)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    Owner:  started outside vto (no vto labels), adopted by this run (spec.adoptJob)\n"), std::string::npos)
      << text;
  input.run["spec"]["adoptJob"] = "projects/p/locations/us-central1/customJobs/../../evil\x1b[0m";
  text = describeRun(input);
  EXPECT_NE(text.find("Adopt Job:         <not a Vertex job name>\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    Owner:  started outside vto (no vto labels): not this run's\n"), std::string::npos) << text;
}

TEST(DescribeWhoseJob, ShowsOnlyValidLabelValues) {
  // Labels are anyone's who may create a Vertex job: an escape sequence or a long text is never printed.
  auto hostile = vtoLabels("new-uid", "1", "\x1b[31mred");
  auto said = whoseJob(hostile, mnist(), "dr-prod");
  EXPECT_EQ(said, "its vto-cluster label is not a label value: not vto's, not this run's");
  auto longName = vtoLabels("old-uid\x1b]0;title\x07", "1; rm -rf", "dr-prod");
  said = whoseJob(longName, mnist(), "dr-prod");
  EXPECT_EQ(said, "made by this cluster (dr-prod) for an earlier run of this name (uid unknown, attempt ?): taken over "
                  "(re-applied, or restored without annotations)");
  EXPECT_EQ(said.find('\x1b'), std::string::npos);
  auto huge = vtoLabels(std::string(500, 'a'), "1", "dr-prod", std::string(500, 'b'));
  said = whoseJob(huge, mnist(), "dr-prod");
  EXPECT_EQ(said, "made by this cluster (dr-prod) for a run it does not name (uid unknown): not this run's");
}

TEST(DescribeWhoseJob, ChecksOwnershipTagsWithTheOperatorsKey) {
  reconcilers::OwnershipKeys keys;
  keys.keys = {std::string(32, 'k')};
  keys.trustUntaggedJobsCreatedBefore = parseRfc3339("2026-12-01T00:00:00Z");
  reconcilers::JobOwnership ownership("dr-prod", keys);
  auto signed_ = vtoLabels("new-uid", "1", "dr-prod");
  ownership.sign(signed_);
  EXPECT_EQ(whoseJob(signed_, mnist(), "dr-prod", &ownership),
            "made by this cluster (dr-prod), its vto-owner tag verified, for this run");
  auto copied = signed_;
  copied["vto-attempt"] = "2";  // a copy of a real job's labels that claims another attempt
  EXPECT_EQ(whoseJob(copied, mnist(), "dr-prod", &ownership),
            "forged: it claims to be this cluster's but its vto-owner tag does not verify with the operator's key: not "
            "this run's (the operator ignores it)");
  auto legacy = vtoLabels("new-uid", "1", "");
  EXPECT_EQ(whoseJob(legacy, mnist(), "dr-prod", &ownership, parseRfc3339("2026-11-01T00:00:00Z")),
            "made by the release before (no vto-cluster label, created before the key was issued) for this run");
  EXPECT_EQ(whoseJob(legacy, mnist(), "dr-prod", &ownership, parseRfc3339("2026-12-02T00:00:00Z")).substr(0, 38),
            "forged: it claims to be vto's but its ");
  EXPECT_EQ(whoseJob(vtoLabels("new-uid", "1", "staging"), mnist(), "dr-prod", &ownership),
            "another cluster's (staging): not this run's");
}

// A run restored from a backup without status: its annotation names the uid it had, attempt 1 is the
// earlier run's job (taken back), attempt 2 its own, which status last saw pending and Vertex says runs.
json restoredRun() {
  return json::parse(R"({
    "apiVersion": "vto.dev/v1beta1", "kind": "TrainingRun",
    "metadata": {"name": "mnist", "namespace": "team-a", "uid": "new-uid",
                 "annotations": {"vto.dev/run-uids": "old-uid,new-uid"}},
    "status": {"phase": "Running", "message": "attempt 2 is training",
               "attemptCount": 2,
               "attempts": [
                 {"attempt": 1, "jobName": "projects/p-123456/locations/us-central1/customJobs/1001", "state": "JOB_STATE_FAILED"},
                 {"attempt": 2, "jobName": "projects/p-123456/locations/us-central1/customJobs/1002", "state": "JOB_STATE_PENDING"}]}
  })");
}

TEST(DescribeRun, PrintsIdentityUidsAttemptsAndOwnershipEvents) {
  DescribeInput input;
  input.run = restoredRun();
  input.clusterId = "dr-prod";
  input.clusterIdSource = "--cluster-id";
  input.now = parseRfc3339("2026-12-05T10:00:00Z");
  input.jobs[1] = {true, vtoLabels("old-uid", "1", "dr-prod"), "JOB_STATE_FAILED", std::nullopt, ""};
  input.jobs[2] = {true, vtoLabels("new-uid", "2", "dr-prod"), "JOB_STATE_RUNNING", std::nullopt, ""};
  input.events = json::parse(R"json([
    {"type": "Normal", "reason": "JobCreated", "message": "created", "involvedObject": {"uid": "new-uid"},
     "lastTimestamp": "2026-12-05T09:59:00Z"},
    {"type": "Normal", "reason": "JobAdopted", "message": "restored without status: took back 1 job(s)",
     "involvedObject": {"uid": "new-uid"}, "firstTimestamp": "2026-12-05T09:55:00Z", "lastTimestamp": "2026-12-05T09:57:00Z",
     "count": 2},
    {"type": "Warning", "reason": "ForeignJobIgnored", "message": "the Vertex job X carries this run's labels",
     "involvedObject": {"uid": "new-uid"}, "lastTimestamp": "2026-12-05T09:59:30Z"},
    {"type": "Normal", "reason": "JobAdopted", "message": "an unrelated run's, long gone",
     "involvedObject": {"uid": "someone-else"}, "lastTimestamp": "2026-12-05T09:58:00Z"}
  ])json");
  EXPECT_EQ(describeRun(input),
            "Name:              mnist\n"
            "Namespace:         team-a\n"
            "UID:               new-uid\n"
            "Phase:             Running\n"
            "Message:           attempt 2 is training\n"
            "Cluster Identity:  dr-prod (--cluster-id)\n"
            "Ownership Tags:    not checked: the labels say who made each job (--ownership-key-file checks their vto-owner "
            "tags)\n"
            "Run UIDs:          old-uid (an earlier run of this name: restored from it)\n"
            "                   new-uid (this run)\n"
            "Attempts:          2\n"
            "  Attempt 1:\n"
            "    Job:    " + kJob1 + "\n"
            "    State:  JOB_STATE_FAILED\n"
            "    Owner:  made by this cluster (dr-prod) for an earlier run of this name (uid old-uid, attempt 1): "
            "taken over (restored from a backup: that uid is in vto.dev/run-uids)\n"
            "  Attempt 2:\n"
            "    Job:           " + kJob2 + "\n"
            "    State:         JOB_STATE_PENDING\n"
            "    Vertex State:  JOB_STATE_RUNNING\n"
            "    Owner:         made by this cluster (dr-prod) for this run\n"
            "Events:\n"
            "  Type     Reason             Age              Message\n"
            "  ----     ------             ---              -------\n"
            "  Normal   JobAdopted         3m (x2 over 5m)  restored without status: took back 1 job(s)\n"
            "  Warning  ForeignJobIgnored  30s              the Vertex job X carries this run's labels\n");
}

TEST(DescribeRun, SaysWhatCouldNotBeRead) {
  DescribeInput input;
  input.run = restoredRun();
  input.clusterIdSource = "the kube-system namespace cannot be read with your access (403); pass --cluster-id";
  input.now = parseRfc3339("2026-12-05T10:00:00Z");
  input.jobs[1].error = "Vertex AI says it does not exist (404)";
  input.jobs[2].error = "permission denied (403): reading a job takes roles/aiplatform.viewer on p-123456";
  input.eventsNote = "your Kubernetes access may not list Events in namespace team-a (403 Forbidden)";
  auto text = describeRun(input);
  EXPECT_NE(text.find("Cluster Identity:  unknown: the kube-system namespace cannot be read"), std::string::npos) << text;
  EXPECT_NE(text.find("Owner:  unknown: the job cannot be read: Vertex AI says it does not exist (404)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Owner:  unknown: the job cannot be read: permission denied (403)"), std::string::npos) << text;
  EXPECT_NE(text.find("Events:  not shown: your Kubernetes access may not list Events in namespace team-a (403 Forbidden)\n"),
            std::string::npos)
      << text;

  // No Google credentials: every job says why, once for all.
  input.jobs.clear();
  input.jobsNote = "the jobs were not read: no Google credentials";
  text = describeRun(input);
  EXPECT_NE(text.find("Owner:  unknown: the jobs were not read: no Google credentials\n"), std::string::npos) << text;
}

TEST(DescribeRun, ReadsTheNewestTenJobsAndNothingThatIsNotAJobName) {
  json run = {{"metadata", {{"name", "long"}, {"namespace", "team-a"}, {"uid", "u-1"}}},
              {"status", {{"phase", "Running"}, {"attemptCount", 14}, {"attempts", json::array()}}}};
  for (int i = 1; i <= 12; ++i) {
    run["status"]["attempts"].push_back(
        {{"attempt", i}, {"jobName", "projects/p-123456/locations/us-central1/customJobs/" + std::to_string(1000 + i)}});
  }
  run["status"]["attempts"][11]["jobName"] = "projects/p/locations/us-central1/customJobs/1012/../../x\x1b[2J";
  auto reads = jobsToRead(run);
  ASSERT_EQ(reads.size(), 10u);
  EXPECT_EQ(reads.front().first, 2);
  EXPECT_EQ(reads.back().first, 11);
  DescribeInput input;
  input.run = run;
  input.clusterId = "c";
  input.clusterIdSource = "--cluster-id";
  for (const auto& [attempt, job] : reads) input.jobs[attempt] = {true, vtoLabels("u-1", std::to_string(attempt), "c"), "", {}, ""};
  auto text = describeRun(input);
  EXPECT_NE(text.find("Attempts:          14 (status keeps the newest 12)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  Attempt 1:\n    Job:    projects/p-123456/locations/us-central1/customJobs/1001\n"
                      "    Owner:  not read (only the newest 10 attempts' jobs are)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  Attempt 12:\n    Job:  <not a Vertex job name: not read>\n"), std::string::npos) << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_NE(text.find("Events:  not shown: \n"), std::string::npos) << text;
}

TEST(DescribeRun, EscapesWhatOthersWroteAndKeepsTheNewestTenEvents) {
  json run = {{"metadata", {{"name", "r"}, {"namespace", "n"}, {"uid", "u-1"}, {"annotations", {{"vto.dev/run-uids", "a,B@d,u-1"}}}}},
              {"status", {{"phase", "Failed\x1b[31m"}, {"message", "line one\nline two \xe2\x80\xae"}}}};
  DescribeInput input;
  input.run = run;
  input.clusterId = "c";
  input.clusterIdSource = "--cluster-id";
  input.now = parseRfc3339("2026-12-05T10:00:00Z");
  input.events = json::array();
  for (int i = 0; i < 15; ++i) {
    input.events->push_back({{"type", "Warning"},
                             {"reason", "ForeignJobIgnored"},
                             {"message", "event " + std::to_string(i) + " \x1b]8;;evil\x07"},
                             {"involvedObject", {{"uid", "u-1"}}},
                             {"lastTimestamp", rfc3339(input.now - std::chrono::minutes(60 - i))}});
  }
  auto text = describeRun(input);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find("\xe2\x80\xae"), std::string::npos) << text;
  EXPECT_NE(text.find("Phase:             Failed\\x1b[31m\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Message:           line one\\x0aline two"), std::string::npos) << text;
  // Only valid uids of the annotation.
  EXPECT_NE(text.find("Run UIDs:          a (an earlier run of this name: restored from it)\n"
                      "                   u-1 (this run)\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("event 4 "), std::string::npos) << text;
  EXPECT_NE(text.find("event 5 "), std::string::npos) << text;
  EXPECT_NE(text.find("event 14 "), std::string::npos) << text;
  EXPECT_LT(text.find("event 5 "), text.find("event 14 "));
  EXPECT_NE(text.find("Attempts:          0\nEvents:\n"), std::string::npos) << text;
}

TEST(DescribeRun, ARunTheOperatorHasNotSeen) {
  DescribeInput input;
  input.run = {{"metadata", {{"name", "fresh"}, {"namespace", "n"}, {"uid", "u-9"}}}};
  input.clusterId = "c";
  input.clusterIdSource = "--cluster-id";
  input.events = json::array();
  auto text = describeRun(input);
  EXPECT_NE(text.find("Phase:             <none> (the operator has not written status yet)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Run UIDs:          <none> (no vto.dev/run-uids annotation yet"), std::string::npos) << text;
  EXPECT_NE(text.find("Events:  <none> (no JobAdopted, AdoptionRefused or ForeignJobIgnored Event"), std::string::npos) << text;
}

}  // namespace
}  // namespace vto::cmd
