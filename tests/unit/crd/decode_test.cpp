#include <gtest/gtest.h>

#include "base/rfc3339.h"

#include "crd/duration.h"
#include "crd/retraining_policy.h"
#include "crd/training_run.h"
#include "crd/yaml_json.h"
#include "tests/unit/crd/crd_test_support.h"

namespace vto::crd {
namespace {

using testing::kMinimalRun;
using testing::runFromYaml;

// The decode error for `spec` (YAML of the spec body) inserted into an otherwise valid run.
std::string decodeErrorOf(const std::string& specYaml) {
  auto doc = parseYamlDocuments(kMinimalRun).at(0);
  auto patch = parseYamlDocuments(specYaml).at(0);
  doc["spec"].merge_patch(patch);
  try {
    decodeTrainingRun(doc);
  } catch (const DecodeError& e) {
    return e.what();
  }
  return "";
}

TEST(Decode, AppliesTheDocumentedDefaults) {
  auto run = runFromYaml(kMinimalRun);
  EXPECT_EQ(run.spec.framework, Framework::Other);
  EXPECT_FALSE(run.spec.distribution.has_value());
  EXPECT_TRUE(run.spec.checkpointing.resumeOnFailure);
  EXPECT_EQ(run.spec.checkpointing.maxResumes, 3);
  EXPECT_EQ(run.spec.checkpointing.resumeBackoffSeconds, 60);
  EXPECT_EQ(run.spec.checkpointing.resumeOn,
            (std::vector<FailureClass>{FailureClass::Preemption, FailureClass::Stockout, FailureClass::InternalError}));
  EXPECT_EQ(run.spec.scheduling.strategy, SchedulingStrategy::Standard);
  EXPECT_EQ(run.spec.deletionPolicy, DeletionPolicy::Cancel);
  EXPECT_EQ(displayNameOf(run), "team-a-demo");
  EXPECT_EQ(checkpointDirectoryOf(run.spec), "gs://bucket/demo/checkpoints");
}

TEST(Decode, DistributionDefaultsToOneMachineWithoutStrategy) {
  auto d = runFromYaml(std::string(kMinimalRun) + "  distribution: {}\n").spec.distribution;
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->strategy, Strategy::None);
  EXPECT_EQ(d->workerCount, 1);
}

TEST(Decode, UnknownFieldNamesItsPathAndTheKnownFields) {
  std::string error = decodeErrorOf("distribution: {strategy: PyTorchDDP, workercount: 4}");
  EXPECT_NE(error.find("spec.distribution.workercount: unknown field"), std::string::npos) << error;
  EXPECT_NE(error.find("workerCount"), std::string::npos) << error;
}

TEST(Decode, OutOfRangeValueNamesItsPath) {
  EXPECT_EQ(decodeErrorOf("distribution: {workerCount: 0}"), "spec.distribution.workerCount: must be >= 1");
}

TEST(Decode, WrongTypeNamesItsPath) {
  EXPECT_NE(decodeErrorOf("distribution: {workerCount: \"4\"}").find("spec.distribution.workerCount: must be an integer"),
            std::string::npos);
  EXPECT_NE(decodeErrorOf("trainer: {container: {args: --epochs=1}}").find("spec.trainer.container.args: must be a list"),
            std::string::npos);
  EXPECT_NE(decodeErrorOf("suspend: \"yes\"").find("spec.suspend: must be true or false"), std::string::npos);
}

TEST(Decode, UnknownEnumValueListsTheChoices) {
  EXPECT_EQ(decodeErrorOf("distribution: {strategy: Horovod}"),
            "spec.distribution.strategy: \"Horovod\" is not valid; use one of: None, Mirrored, MultiWorkerMirrored, "
            "ParameterServer, PyTorchDDP, TPU");
}

TEST(Decode, ListElementsAreNamedByIndex) {
  std::string error = decodeErrorOf("trainer: {container: {env: [{name: A, value: x}, {name: B, value: 3}]}}");
  EXPECT_EQ(error.rfind("spec.trainer.container.env[1].value: must be a string", 0), 0u) << error;
}

TEST(Decode, RefusesAnotherKindOrVersion) {
  auto doc = parseYamlDocuments(kMinimalRun).at(0);
  doc["apiVersion"] = "vto.dev/v1";
  EXPECT_THROW(decodeTrainingRun(doc), DecodeError);
  doc = parseYamlDocuments(kMinimalRun).at(0);
  doc["kind"] = "RetrainingPolicy";
  EXPECT_THROW(decodeTrainingRun(doc), DecodeError);
}

TEST(Decode, NullMeansAbsent) {
  auto run = runFromYaml(std::string(kMinimalRun) + "  displayName: null\n  ttlSecondsAfterFinished: ~\n");
  EXPECT_EQ(run.spec.displayName, "");
  EXPECT_FALSE(run.spec.ttlSecondsAfterFinished.has_value());
}

TEST(Decode, ReadsDurationsInBothForms) {
  auto run = runFromYaml(std::string(kMinimalRun) + "  scheduling: {timeout: 1h30m, maxWaitDuration: 7200}\n");
  EXPECT_EQ(run.spec.scheduling.timeoutSeconds, 5400);
  EXPECT_EQ(run.spec.scheduling.maxWaitSeconds, 7200);
  EXPECT_NE(decodeErrorOf("scheduling: {timeout: 5 hours}").find("spec.scheduling.timeout: \"5 hours\" is not a duration"),
            std::string::npos);
}

TEST(Duration, ParsesKubernetesStyleAndSeconds) {
  EXPECT_EQ(parseDurationSeconds("90s"), 90);
  EXPECT_EQ(parseDurationSeconds("30m"), 1800);
  EXPECT_EQ(parseDurationSeconds("24h"), 86400);
  EXPECT_EQ(parseDurationSeconds("1h30m"), 5400);
  EXPECT_EQ(parseDurationSeconds("3600"), 3600);
  EXPECT_EQ(parseDurationSeconds("-5s"), -5);
  EXPECT_EQ(parseDurationSeconds("0s"), 0);
  for (const char* bad : {"", "h", "1x", "1.5h", "100ms", "1h30", "--1s", "99999999999999999999h"})
    EXPECT_FALSE(parseDurationSeconds(bad).has_value()) << bad;
}

TEST(Duration, FormatsBothWays) {
  EXPECT_EQ(formatDuration(5400), "1h30m");
  EXPECT_EQ(formatDuration(90), "1m30s");
  EXPECT_EQ(formatDuration(0), "0s");
  EXPECT_EQ(protoDuration(3600), "3600s");
  for (int64_t s : {1, 59, 60, 3599, 3600, 3661, 86400 * 7})
    EXPECT_EQ(parseDurationSeconds(formatDuration(s)), s);
}

TEST(Yaml, ResolvesPlainScalarsAndKeepsQuotedOnesAsStrings) {
  auto doc = parseYamlDocuments("a: 1\nb: '1'\nc: true\nd: 'true'\ne: 1.5\nf: ~\ng: text\nh: -7\n").at(0);
  EXPECT_TRUE(doc["a"].is_number_integer());
  EXPECT_TRUE(doc["b"].is_string());
  EXPECT_TRUE(doc["c"].is_boolean());
  EXPECT_TRUE(doc["d"].is_string());
  EXPECT_TRUE(doc["e"].is_number_float());
  EXPECT_TRUE(doc["f"].is_null());
  EXPECT_EQ(doc["g"], "text");
  EXPECT_EQ(doc["h"], -7);
}

TEST(Yaml, SplitsDocumentsAndSkipsEmptyOnes) {
  auto docs = parseYamlDocuments("---\na: 1\n---\n---\nb: 2\n");
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[1]["b"], 2);
}

TEST(Yaml, SyntaxErrorNamesTheLine) {
  try {
    parseYamlDocuments("a: 1\nb: [1, 2\n");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("line"), std::string::npos) << e.what();
  }
}

TEST(Encode, SpecRoundTripsThroughJson) {
  auto run = runFromYaml(std::string(kMinimalRun) + R"(
  framework: pytorch
  distribution: {strategy: PyTorchDDP, workerCount: 4, reductionServer: {replicaCount: 2, machineType: n1-highcpu-16}}
  scheduling: {timeout: 24h, strategy: Spot}
  checkpointing: {resumeOn: [AnyFailure], resumeBackoff: 2m}
  labels: {team: vision}
  hyperparameterTuning:
    maxTrialCount: 4
    metrics: [{metricId: acc, goal: Minimize}]
    parameters: [{parameterId: lr, double: {min: 0.1, max: 1}, scale: Log}, {parameterId: o, categorical: {values: [a]}}]
)");
  json encoded = encodeTrainingRun(run);
  auto again = decodeTrainingRun(encoded);
  EXPECT_EQ(encodeTrainingRun(again), encoded);
  EXPECT_EQ(encoded["spec"]["scheduling"]["timeout"], "24h");
  EXPECT_EQ(encoded["spec"]["distribution"]["strategy"], "PyTorchDDP");
}

TEST(Encode, StatusRoundTripsThroughJson) {
  TrainingRunStatus status;
  status.observedGeneration = 3;
  status.phase = Phase::Running;
  status.message = "attempt 2 running";
  status.conditions.push_back({"Running", "True", "JobRunning", "", parseRfc3339("2026-01-01T00:00:00Z"), 3});
  status.job = JobRef{"projects/p/locations/l/customJobs/42", "42", "CustomJob", "JOB_STATE_RUNNING", "", {}, {}, {}, {}};
  Attempt failed;
  failed.attempt = 1;
  failed.jobName = "projects/p/locations/l/customJobs/41";
  failed.state = "JOB_STATE_FAILED";
  failed.failureClass = FailureClass::Preemption;
  failed.message = "preempted";
  status.history.attempts.push_back(failed);
  status.history.attemptCount = 2;
  status.history.resumes = 1;
  status.history.lastCheckpoint = CheckpointRef{"gs://b/ckpt-7", std::nullopt};
  json encoded = encodeTrainingRunStatus(status);
  EXPECT_EQ(encoded["phase"], "Running");
  EXPECT_EQ(encodeTrainingRunStatus(decodeTrainingRunStatus(encoded, "status")), encoded);
}

TEST(Encode, KeepsTheApiServersMetadata) {
  auto doc = parseYamlDocuments(kMinimalRun).at(0);
  doc["metadata"]["managedFields"] = json::array({{{"manager", "kubectl"}}});
  doc["metadata"]["generation"] = 5;
  auto run = decodeTrainingRun(doc);
  EXPECT_EQ(run.metadata.generation, 5);
  json encoded = encodeTrainingRun(run);
  EXPECT_EQ(encoded["metadata"]["managedFields"][0]["manager"], "kubectl");
  EXPECT_EQ(encoded["metadata"]["uid"], "0b6c1f4e-1111-2222-3333-444455556666");
}

TEST(RetrainingPolicy, DecodesTheSampleAndRoundTrips) {
  auto text = testing::readFile(testing::repoRoot() / "config/samples/retrainingpolicy_weekly.yaml");
  auto policy = decodeRetrainingPolicy(parseYamlDocuments(text).at(0));
  EXPECT_EQ(policy.spec.triggers.schedule->cron, "0 3 * * mon");
  EXPECT_EQ(policy.spec.triggers.schedule->jitter, std::chrono::minutes(10));
  EXPECT_EQ(policy.spec.triggers.metric->bearerTokenSecret->key, "token");
  EXPECT_EQ(policy.spec.triggers.metric->forDuration, std::chrono::seconds(1800));
  EXPECT_EQ(policy.spec.triggers.metric->below, 0.85);
  EXPECT_EQ(policy.spec.concurrencyPolicy, ConcurrencyPolicy::Forbid);
  EXPECT_EQ(policy.spec.templ.labels.at("model"), "fraud");
  json encoded = encodeRetrainingPolicy(policy);
  EXPECT_EQ(encodeRetrainingPolicy(decodeRetrainingPolicy(encoded)), encoded);
}

TEST(RetrainingPolicy, TemplateSpecErrorsNameTheTemplatePath) {
  auto doc = parseYamlDocuments(testing::readFile(testing::repoRoot() / "config/samples/retrainingpolicy_weekly.yaml")).at(0);
  doc["spec"]["template"]["spec"]["resources"]["machinetype"] = "x";
  try {
    decodeRetrainingPolicy(doc);
    FAIL() << "no error";
  } catch (const DecodeError& e) {
    EXPECT_EQ(e.path(), "spec.template.spec.resources.machinetype");
  }
}

TEST(RetrainingPolicy, AppliesTheContractsDefaults) {
  auto policy = decodeRetrainingPolicy(parseYamlDocuments(R"(
apiVersion: vto.dev/v1beta1
kind: RetrainingPolicy
metadata: {name: p}
spec:
  template: {spec: {baseOutputDirectory: gs://b/m}}
  triggers:
    schedule: {cron: "@daily"}
    newData: {gcsPrefix: gs://b/in/}
    metric: {prometheusUrl: http://prom:9090, query: q, below: 1}
)").at(0));
  const auto& s = policy.spec;
  EXPECT_EQ(s.triggers.schedule->timeZone, "");
  EXPECT_EQ(s.triggers.schedule->jitter, std::chrono::seconds(0));
  EXPECT_EQ(s.triggers.newData->pollInterval, std::chrono::minutes(10));
  EXPECT_EQ(s.triggers.newData->minNewObjects, 1);
  EXPECT_EQ(s.triggers.newData->minNewBytes, 0);
  EXPECT_EQ(s.triggers.newData->quietPeriod, std::chrono::seconds(0));
  EXPECT_EQ(s.triggers.metric->pollInterval, std::chrono::minutes(1));
  EXPECT_EQ(s.triggers.metric->maxConsecutiveErrors, 4);
  EXPECT_FALSE(s.triggers.metric->bearerTokenSecret);
  EXPECT_EQ(s.missedRuns, MissedRunsPolicy::Latest);
  EXPECT_EQ(s.maxCatchUpRuns, 10);
  EXPECT_EQ(s.concurrencyPolicy, ConcurrencyPolicy::Forbid);
  EXPECT_EQ(s.maxActiveRuns, 1);
  EXPECT_EQ(s.cooldown, std::chrono::seconds(0));
  EXPECT_FALSE(s.warmStart);
  EXPECT_EQ(s.successfulRunsHistoryLimit, 3);
  EXPECT_EQ(s.failedRunsHistoryLimit, 1);
  EXPECT_FALSE(s.suspend);
  EXPECT_FALSE(s.startingDeadlineSeconds);
}

TEST(RetrainingPolicy, StatusRoundTripsWithTimesAsTimePoints) {
  json status = json::parse(R"({
    "observedGeneration": 4,
    "active": [{"name": "fraud-weekly-1764640800"}],
    "lastTrigger": {"time": "2025-12-02T02:00:00Z", "reason": "NewData"},
    "lastScheduleTime": "2025-12-01T02:00:00Z",
    "nextScheduleTime": "2025-12-08T02:07:13Z",
    "lastSuccessfulTime": "2025-11-24T04:10:00Z",
    "lastSuccessfulRun": {"name": "fraud-weekly-1764036000", "completionTime": "2025-11-24T04:10:00Z",
                          "modelUri": "gs://risk-models/fraud/fraud-weekly-1764036000/model/"},
    "lastHandledRetrainRequest": "1764650000",
    "missedSchedules": 2,
    "counts": {"succeeded": 12, "failed": 1},
    "dataWatermark": {"timeCreated": "2025-12-02T01:59:58.123456Z", "name": "transactions/day=2025-12-01/part-9.parquet",
                      "pendingObjects": 3, "pendingBytes": 4096, "lastPollTime": "2025-12-02T02:00:00Z"},
    "metric": {"lastValue": 0.91, "lastEvalTime": "2025-12-02T02:00:00Z", "consecutiveErrors": 1},
    "conditions": [{"type": "Ready", "status": "True", "reason": "Scheduled", "message": "next run at 2025-12-08T02:07:13Z"}]
  })");
  auto decoded = decodeRetrainingPolicyStatus(status, "status");
  EXPECT_EQ(decoded.active, std::vector<std::string>{"fraud-weekly-1764640800"});
  EXPECT_EQ(decoded.history.lastTrigger->reason, TriggerReason::NewData);
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::seconds>(decoded.history.lastScheduleTime->time_since_epoch()).count(), 1764554400);
  EXPECT_EQ(decoded.history.lastSuccessfulRun->modelUri, "gs://risk-models/fraud/fraud-weekly-1764036000/model/");
  EXPECT_EQ(decoded.history.counts.succeeded, 12);
  EXPECT_EQ(decoded.history.dataWatermark->pendingBytes, 4096);
  EXPECT_EQ(decoded.history.metric->lastValue, 0.91);
  EXPECT_FALSE(decoded.history.metric->breachingSince);
  // A GCS creation time keeps its fraction: the watermark compares (timeCreated, name) exactly.
  EXPECT_EQ(encodeRetrainingPolicyStatus(decoded), status);
}

TEST(RetrainingPolicy, BadTimesAndDurationsNameTheirPath) {
  auto expectPath = [](const json& status, const std::string& path) {
    try {
      decodeRetrainingPolicyStatus(status, "status");
      ADD_FAILURE() << "no error for " << status.dump();
    } catch (const DecodeError& e) {
      EXPECT_EQ(e.path(), path);
      EXPECT_NE(e.message().find("2026-05-18T03:00:00Z"), std::string::npos) << e.message();
    }
  };
  expectPath(json{{"lastScheduleTime", "yesterday"}}, "status.lastScheduleTime");
  expectPath(json{{"dataWatermark", {{"timeCreated", "2025-12-02 01:59:58"}}}}, "status.dataWatermark.timeCreated");
  auto doc = parseYamlDocuments(testing::readFile(testing::repoRoot() / "config/samples/retrainingpolicy_weekly.yaml")).at(0);
  doc["spec"]["cooldown"] = "soon";
  try {
    decodeRetrainingPolicy(doc);
    FAIL() << "no error";
  } catch (const DecodeError& e) {
    EXPECT_EQ(e.path(), "spec.cooldown");
  }
}

TEST(RetrainingPolicy, NamesAreTheContracts) {
  EXPECT_STREQ(kRetrainingPolicyLabel, "vto.dev/retraining-policy");
  EXPECT_STREQ(kTriggerReasonAnnotation, "vto.dev/trigger-reason");
  EXPECT_STREQ(kTriggerTimeAnnotation, "vto.dev/trigger-time");
  EXPECT_STREQ(kRetrainRequestedAnnotation, "vto.dev/retrain-requested");
  EXPECT_EQ(enumChoices(triggerReasonNames()), "Schedule, Manual, NewData, Metric");
  EXPECT_EQ(enumChoices(missedRunsPolicyNames()), "Latest, Skip, All");
}

}  // namespace
}  // namespace vto::crd

namespace vto::crd {
namespace {
// Found by tests/fuzz: yaml-cpp loops forever on invalid UTF-8, so it never gets such input.
TEST(Yaml, RefusesInvalidUtf8AndControlCharacters) {
  try {
    parseYamlDocuments("a: 1\nb: \xff\xff\n");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "not valid UTF-8 text at byte 8 (a control character or broken encoding); save the manifest as UTF-8 text");
  }
  EXPECT_THROW(parseYamlDocuments(std::string("name: a\0b\n", 10)), std::runtime_error);
  EXPECT_EQ(parseYamlDocuments("name: \xc3\xa9t\xc3\xa9\n").at(0)["name"], "\xc3\xa9t\xc3\xa9");
}
}  // namespace
}  // namespace vto::crd

namespace vto::crd {
namespace {
// Found by tests/fuzz: yaml-cpp 0.7's LoadAll loops forever on a lone "," (jbeder/yaml-cpp#1040).
TEST(Yaml, LoneCommaGivesNoDocumentInsteadOfHanging) {
  EXPECT_TRUE(parseYamlDocuments(",a: b\n").empty());
  EXPECT_EQ(parseYamlDocuments("a: 1\n---\n,\n").size(), 1u);
}

using testing::yamlErrorOf;

TEST(Yaml, ErrorLinesCountFromTheStartOfTheStream) {
  // The same broken document, alone and after a two-line document: the line moves by two.
  EXPECT_EQ(yamlErrorOf("b: 2\nc: [1\n"), "not valid YAML: line 3, column 1: end of sequence flow not found");
  EXPECT_EQ(yamlErrorOf("a: 1\n---\nb: 2\nc: [1\n"), "not valid YAML: line 5, column 1: end of sequence flow not found");
}

TEST(Yaml, DocumentMarkersWithContentAndEndMarkers) {
  auto docs = parseYamlDocuments("--- {a: 1}\n...\n---\nb: 2\n...\n");
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0]["a"], 1);
  EXPECT_EQ(docs[1]["b"], 2);
}
}  // namespace
}  // namespace vto::crd
