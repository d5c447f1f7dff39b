#pragma once
// The whole system for end-to-end tests, all real processes on loopback: the API server (shared per
// test binary), fake-gcs-server, vto-emulator, the CRDs from `vto crd`, and `vto run` itself. Tests
// drive it with kubectl, as a user would, and read Vertex through vto's own client.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/emulator_processes.h"
#include "tests/support/subprocess.h"
#include "tests/support/test_cluster.h"
#include "vertex/auth.h"
#include "vertex/gcs_client.h"
#include "vertex/vertex_client.h"

namespace vto::testing {

inline constexpr const char* kTestProject = "test-project";
inline constexpr const char* kTestLocation = "us-central1";
// The bucket simpleRunManifest() writes to; the stack creates it in fake-gcs-server.
inline constexpr const char* kTestBucket = "test-bucket";
// The key the stack's operator signs its jobs' ownership tag with (tests forge jobs without it).
inline constexpr const char* kTestOwnershipKey = "test-ownership-key-0123456789abcdef0123456789";

class OperatorStack {
 public:
  // Which CRDs the stack applies: this build's (`vto crd`), or none, for a test that installs them
  // itself (the chart of the release before, tests/integration/upgrade_release_test.cpp).
  enum class Crds { FromThisBuild, None };
  // `emulatorFlags` are added to the emulator's (lifecycle timings, fault injection).
  explicit OperatorStack(std::vector<std::string> emulatorFlags = {}, Crds crds = Crds::FromThisBuild);
  // Another cluster's stack on `vertexOf`'s emulator and GCS (two clusters sharing a project, or a
  // cluster rebuilt beside the lost one): `cluster` gets the CRDs; Vertex and the buckets are shared.
  OperatorStack(TestCluster& cluster, OperatorStack& vertexOf);
  ~OperatorStack();

  TestCluster& cluster() { return cluster_; }
  EmulatorProcess& emulator() { return *emulator_; }
  FakeGcsServer& gcs() { return *gcs_; }
  const std::string& dir() const { return dir_; }

  // Installs the Helm chart (helm/vto) into namespace vto-system and makes `vto run` authenticate as
  // the chart's ServiceAccount, so the operator has exactly the chart's RBAC and no more.
  void useChartServiceAccount(const std::vector<std::string>& setValues = {});  // helm --set for each
  // Makes the next startOperator() authenticate as the ServiceAccount vto of vto-system, which a chart
  // the test installed itself made (a fresh token each call).
  void useServiceAccountOfInstalledChart();
  // The `vto` the next startOperator() runs: `path` (empty: this build's, in binDir()). `releaseBefore`:
  // that binary predates job ownership, so it is started without --ownership-key-file.
  void useOperatorBinary(const std::string& path, bool releaseBefore = false);
  // The ownership key file this build's operator is started with (a test may rewrite it, e.g. with the
  // key of the chart's Secret, before startOperator()).
  std::string ownershipKeyFile() const { return dir_ + "/ownership.yaml"; }
  // Where the next startOperator() reaches the API server and Vertex (a chaos proxy in front of
  // them); the defaults are the cluster's kubeconfig (or the chart's, see above) and the emulator.
  void routeApiServerThrough(const std::string& server);
  void routeVertexThrough(const std::string& url) { vertexEndpoint_ = url; }
  // Starts `vto run` (extra flags appended); stopOperator sends `signal` and returns the exit code.
  void startOperator(std::vector<std::string> extraFlags = {});
  int stopOperator(int signal);
  // A second `vto run` (with --leader-elect among the flags, a standby) that reaches the API server
  // directly even after routeApiServerThrough; its log is standbyLog().
  void startStandby(std::vector<std::string> extraFlags = {});
  std::string standbyLog() const;
  bool operatorRunning() const { return operator_ && operator_->running(); }
  bool standbyRunning() const { return standby_ && standby_->running(); }
  std::string operatorLog() const;
  // Where the running operator serves, as it logged once bound (it binds port 0 itself); waits for
  // the log line. metricsUrl() ends in /metrics, healthUrl() in /healthz.
  std::string metricsUrl() { return boundUrl("metrics"); }
  std::string healthUrl() { return boundUrl("health probes"); }
  // The pid of `vto run` (the shell that starts it execs it), or -1 when it is not running.
  long operatorPid() const { return operator_ ? operator_->pid() : -1; }

  // kubectl against the cluster, failing the test on a non-zero exit.
  std::string kubectlOk(const std::string& args);
  // The TrainingRun as JSON, or null when it does not exist.
  nlohmann::json getRun(const std::string& ns, const std::string& name);
  std::string phaseOf(const std::string& ns, const std::string& name);
  // Waits until the run's phase is `phase`; false on the deadline.
  bool waitForPhase(const std::string& ns, const std::string& name, const std::string& phase,
                    std::chrono::seconds timeout = std::chrono::seconds(120));
  // The job status names for the run's attempt `attempt`, once it does ("" on the deadline).
  std::string jobOfAttempt(const std::string& ns, const std::string& name, int attempt,
                           std::chrono::seconds timeout = std::chrono::seconds(120));
  // The run's Events, one "Reason: message" a line.
  std::string eventsOf(const std::string& ns, const std::string& name);
  // Every Vertex job (CustomJob or HyperparameterTuningJob) labelled with the run's uid.
  std::vector<vertex::Job> jobsOfRun(const std::string& uid, vertex::JobKind kind = vertex::JobKind::Custom);
  // Every job matching `filter`, all pages. The client fails fast, so a page the emulator answers
  // with an injected fault (429, 503) is asked for again, up to a deadline, as the work queue would.
  std::vector<vertex::Job> listJobs(const std::string& filter, vertex::JobKind kind = vertex::JobKind::Custom);
  vertex::VertexClient& vertex() { return *vertex_; }
  vertex::GcsClient& gcsClient() { return *gcsClient_; }  // fake-gcs-server, as the operator reads it
  void createNamespace(const std::string& ns);

 private:
  void prepare(Crds crds);  // the ownership key, the CRDs, the clients of Vertex and GCS
  std::string boundUrl(const std::string& what);
  size_t startedAtLogSize_ = 0;  // operator.log's size when the running operator was started
  std::string operatorCommand(const std::string& kubeconfig, const std::vector<std::string>& extraFlags,
                              const std::string& logName);

  TestCluster& cluster_;
  std::string dir_;
  std::shared_ptr<FakeGcsServer> gcs_;
  std::shared_ptr<EmulatorProcess> emulator_;
  std::unique_ptr<Subprocess> operator_;
  std::unique_ptr<Subprocess> standby_;
  std::string operatorKubeconfig_;  // the cluster-admin kubeconfig unless useChartServiceAccount()
  std::string vertexEndpoint_;      // empty: the emulator's URL
  std::string directKubeconfig_ = operatorKubeconfig_;  // before routeApiServerThrough
  std::string operatorBinary_;      // empty: binDir()/vto
  bool operatorIsReleaseBefore_ = false;
  vertex::CppRestTransport http_;
  RealClock clock_;
  std::unique_ptr<vertex::CachedTokenSource> tokens_;
  std::unique_ptr<vertex::RestVertexClient> vertex_;
  std::unique_ptr<vertex::RestGcsClient> gcsClient_;
};

// A TrainingRun manifest on a small CPU machine; `extraSpec` is YAML appended under `spec:` (indented).
std::string simpleRunManifest(const std::string& ns, const std::string& name, const std::string& extraSpec = "");

}  // namespace vto::testing
