#include "tests/support/operator_stack.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <sstream>

#include "tests/support/wait.h"

namespace vto::testing {

OperatorStack::OperatorStack(std::vector<std::string> emulatorFlags, Crds crds)
    : cluster_(sharedCluster()), dir_(makeTempDir("vto-operator-stack")), operatorKubeconfig_(cluster_.kubeconfig()) {
  gcs_ = std::make_shared<FakeGcsServer>(dir_ + "/gcs.log", std::vector<std::string>{kTestBucket});
  std::vector<std::string> flags = {"--gcs-endpoint", gcs_->url()};
  flags.insert(flags.end(), emulatorFlags.begin(), emulatorFlags.end());
  emulator_ = std::make_shared<EmulatorProcess>(flags, dir_ + "/emulator.log");
  prepare(crds);
}

OperatorStack::OperatorStack(TestCluster& cluster, OperatorStack& vertexOf)
    : cluster_(cluster), dir_(makeTempDir("vto-operator-stack")), operatorKubeconfig_(cluster_.kubeconfig()) {
  gcs_ = vertexOf.gcs_;
  emulator_ = vertexOf.emulator_;
  prepare(Crds::FromThisBuild);
}

void OperatorStack::prepare(Crds crds) {
  // As the chart deploys it: jobs signed with a key of the operator's own.
  std::ofstream(dir_ + "/ownership.yaml") << "keys: [\"" << kTestOwnershipKey << "\"]\n"
                                          << "trustUntaggedJobsCreatedBefore: \"2026-01-01T00:00:00Z\"\n";

  // Server-side: the TrainingRun CRD (two versions, each with the whole schema) is too large for
  // client-side apply's last-applied-configuration annotation.
  if (crds == Crds::FromThisBuild) {
    auto applied = runShell("'" + binDir() + "/vto' crd | kubectl --kubeconfig='" + cluster_.kubeconfig() +
                            "' apply --server-side -f -");
    if (applied.exitCode != 0) throw std::runtime_error("applying the CRDs failed: " + applied.output);
    auto established = cluster_.kubectl(
        "wait --for=condition=Established crd/trainingruns.vto.dev crd/retrainingpolicies.vto.dev --timeout=60s");
    if (established.exitCode != 0) throw std::runtime_error("CRDs not established: " + established.output);
  }

  // The tests read Vertex with vto's own client, authenticated by the emulator's metadata server.
  tokens_ = std::make_unique<vertex::CachedTokenSource>(
      std::make_unique<vertex::MetadataTokenSource>(http_, clock_, emulator_->hostPort()), clock_);
  vertex::VertexClientOptions options;
  options.endpoint = emulator_->url();
  options.limits.requestsPerMinute = 100000;
  vertex_ = std::make_unique<vertex::RestVertexClient>(http_, *tokens_, clock_, options);
  // The operator checks the output bucket before a run's first job: the runs' bucket exists, as it
  // would in a real project (tests of a missing bucket use another name).
  gcsClient_ = std::make_unique<vertex::RestGcsClient>(http_, gcs_->url(), nullptr);
  gcsClient_->ensureBucket("test-bucket", "vto");
}

OperatorStack::~OperatorStack() {
  if (standby_) standby_->stop(std::chrono::seconds(35));
  if (operator_) operator_->stop(std::chrono::seconds(35));
  if (std::getenv("VTO_KEEP_TEST_DIRS") == nullptr) runShell("rm -rf '" + dir_ + "'");
}

void OperatorStack::useChartServiceAccount(const std::vector<std::string>& setValues) {
  const char* source = std::getenv("VTO_SOURCE_DIR");
  std::string chart = std::string(source != nullptr ? source : ".") + "/helm/vto";
  std::string sets;
  for (const auto& value : setValues) sets += " --set '" + value + "'";
  auto install = runShell("'" + binDir() + "/helm' upgrade --install vto '" + chart + "' --kubeconfig '" +
                          cluster_.kubeconfig() + "' --namespace vto-system --create-namespace --set crds.install=false"
                          " --set defaultProject=" + kTestProject + sets + " 2>&1 | grep -v 'symbolic link'");
  if (install.output.find("STATUS: deployed") == std::string::npos) {
    throw std::runtime_error("helm install failed: " + install.output);
  }
  useServiceAccountOfInstalledChart();
}

void OperatorStack::useServiceAccountOfInstalledChart() {
  auto token = cluster_.kubectl("-n vto-system create token vto --duration=2h");
  if (token.exitCode != 0) throw std::runtime_error("kubectl create token failed: " + token.output);
  std::string bearer = token.output.substr(0, token.output.find_last_not_of("\n") + 1);
  operatorKubeconfig_ = dir_ + "/operator.kubeconfig";
  std::ofstream(operatorKubeconfig_) << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: "
                                     << cluster_.server() << "\n    certificate-authority: " << cluster_.dir()
                                     << "/pki/ca.crt\nusers:\n- name: vto\n  user:\n    token: " << bearer
                                     << "\ncontexts:\n- name: c\n  context: {cluster: c, user: vto, namespace: vto-system}\n"
                                        "current-context: c\n";
}

void OperatorStack::useOperatorBinary(const std::string& path, bool releaseBefore) {
  operatorBinary_ = path;
  operatorIsReleaseBefore_ = releaseBefore;
}

void OperatorStack::routeApiServerThrough(const std::string& server) {
  // The same credentials and CA (the proxy is on the same loopback address the certificate names).
  std::ifstream in(operatorKubeconfig_);
  std::stringstream text;
  text << in.rdbuf();
  auto kubeconfig = text.str();
  auto at = kubeconfig.find("server: ");
  if (at == std::string::npos) throw std::runtime_error("no server in " + operatorKubeconfig_);
  auto end = kubeconfig.find('\n', at);
  kubeconfig.replace(at, end - at, "server: " + server);
  directKubeconfig_ = operatorKubeconfig_;
  operatorKubeconfig_ = dir_ + "/operator-routed.kubeconfig";
  std::ofstream(operatorKubeconfig_) << kubeconfig;
}

void OperatorStack::startOperator(std::vector<std::string> extraFlags) {
  // What this operator logs comes after what the ones before it logged: its bound URLs are read there.
  startedAtLogSize_ = operatorLog().size();
  operator_ = std::make_unique<Subprocess>(
      std::vector<std::string>{"sh", "-c", operatorCommand(operatorKubeconfig_, extraFlags, "operator.log")});
}

void OperatorStack::startStandby(std::vector<std::string> extraFlags) {
  standby_ = std::make_unique<Subprocess>(
      std::vector<std::string>{"sh", "-c", operatorCommand(directKubeconfig_, extraFlags, "standby.log")});
}

std::string OperatorStack::standbyLog() const { return readWholeFile(dir_ + "/standby.log"); }

std::string OperatorStack::operatorCommand(const std::string& kubeconfig, const std::vector<std::string>& extraFlags,
                                           const std::string& logName) {
  std::string command = "exec env GCE_METADATA_HOST=" + emulator_->hostPort() +
                        " STORAGE_EMULATOR_HOST=" + gcs_->url() + " '" +
                        (operatorBinary_.empty() ? binDir() + "/vto" : operatorBinary_) + "' run --kubeconfig '" +
                        kubeconfig + "' --vertex-endpoint " +
                        (vertexEndpoint_.empty() ? emulator_->url() : vertexEndpoint_) +
                        " --gcs-endpoint " + gcs_->url() + " --default-project " + kTestProject +
                        " --default-location " + kTestLocation +
                        " --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0"
                        " --vertex-fast-poll-interval 1 --vertex-poll-interval 1 --log-format text";
  if (!operatorIsReleaseBefore_) command += " --ownership-key-file '" + ownershipKeyFile() + "'";
  for (const auto& flag : extraFlags) command += " '" + flag + "'";
  command += " >> '" + dir_ + "/" + logName + "' 2>&1";
  return command;
}

int OperatorStack::stopOperator(int signal) {
  if (!operator_) return -1;
  operator_->signal(signal);
  int code = operator_->wait(std::chrono::seconds(40)).value_or(-1);
  operator_.reset();
  return code;
}

std::string OperatorStack::operatorLog() const { return readWholeFile(dir_ + "/operator.log"); }

std::string OperatorStack::boundUrl(const std::string& what) {
  const std::string marker = what + " listening on ";
  std::string url;
  waitFor(
      [&] {
        auto log = operatorLog();
        auto at = log.rfind(marker);  // the newest start of the operator
        if (at == std::string::npos || at < startedAtLogSize_) return false;
        at += marker.size();
        url = log.substr(at, log.find_first_of(" \"\n", at) - at);
        return true;
      },
      std::chrono::seconds(60));
  if (url.empty()) throw std::runtime_error("the operator never logged \"" + marker + "URL\": " + operatorLog());
  return url;
}

std::string OperatorStack::kubectlOk(const std::string& args) {
  auto result = cluster_.kubectl(args);
  EXPECT_EQ(result.exitCode, 0) << "kubectl " << args << "\n" << result.output;
  return result.output;
}

nlohmann::json OperatorStack::getRun(const std::string& ns, const std::string& name) {
  auto result = cluster_.kubectl("-n " + ns + " get trainingrun " + name + " -o json 2>/dev/null");
  if (result.exitCode != 0) return nullptr;
  return nlohmann::json::parse(result.output, nullptr, false);
}

std::string OperatorStack::phaseOf(const std::string& ns, const std::string& name) {
  auto run = getRun(ns, name);
  if (!run.is_object() || !run.contains("status")) return "";
  return run["status"].value("phase", "");
}

bool OperatorStack::waitForPhase(const std::string& ns, const std::string& name, const std::string& phase,
                                 std::chrono::seconds timeout) {
  return waitFor([&] { return phaseOf(ns, name) == phase; }, timeout, std::chrono::milliseconds(250));
}

std::string OperatorStack::jobOfAttempt(const std::string& ns, const std::string& name, int attempt,
                                        std::chrono::seconds timeout) {
  std::string job;
  waitFor(
      [&] {
        auto run = getRun(ns, name);
        if (!run.is_object() || !run.contains("status")) return false;
        for (const auto& a : run["status"].value("attempts", nlohmann::json::array())) {
          if (a.value("attempt", 0) == attempt) job = a.value("jobName", "");
        }
        return !job.empty();
      },
      timeout, std::chrono::milliseconds(100));
  return job;
}

std::string OperatorStack::eventsOf(const std::string& ns, const std::string& name) {
  return cluster_.kubectl("-n " + ns + " get events --field-selector involvedObject.name=" + name +
                          " -o jsonpath='{range .items[*]}{.reason}: {.message}{\"\\n\"}{end}'").output;
}

std::vector<vertex::Job> OperatorStack::jobsOfRun(const std::string& uid, vertex::JobKind kind) {
  return listJobs("labels.vto-run-uid=\"" + uid + "\"", kind);
}

std::vector<vertex::Job> OperatorStack::listJobs(const std::string& filter, vertex::JobKind kind) {
  vertex::ListOptions options;
  options.filter = filter;
  std::vector<vertex::Job> jobs;
  do {
    vertex::JobPage page;
    bool answered = waitFor(
        [&] {
          try {
            page = vertex_->listJobs({kTestProject, kTestLocation}, kind, options);
            return true;
          } catch (const RetryableError& error) {
            if (!error.isRetryable()) throw;
            return false;
          }
        },
        std::chrono::seconds(30));
    if (!answered) throw std::runtime_error("Vertex kept failing to list jobs for " + filter);
    jobs.insert(jobs.end(), page.jobs.begin(), page.jobs.end());
    options.pageToken = page.nextPageToken;
  } while (!options.pageToken.empty());
  return jobs;
}

void OperatorStack::createNamespace(const std::string& ns) {
  cluster_.kubectl("create namespace " + ns);  // may exist already when a test is repeated
}

std::string simpleRunManifest(const std::string& ns, const std::string& name, const std::string& extraSpec) {
  return "apiVersion: vto.dev/v1beta1\nkind: TrainingRun\nmetadata:\n  name: " + name + "\n  namespace: " + ns +
         "\nspec:\n  framework: pytorch\n  trainer:\n    container:\n"
         "      imageUri: us-central1-docker.pkg.dev/test-project/train/model:1\n"
         "  resources:\n    machineType: n1-standard-4\n"
         "  baseOutputDirectory: gs://" + std::string(kTestBucket) + "/" + ns + "/" + name + "\n" + extraSpec;
}

}  // namespace vto::testing
