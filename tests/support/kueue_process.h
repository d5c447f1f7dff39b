#pragma once
// The real Kueue manager (sigs.k8s.io/kueue v0.17.0, built from its Go module by scripts/bootstrap.sh
// into the bin dir, its CRDs beside it in kueue-crds/) against a test cluster, for the tests of
// admission by Kueue. docs/kueue-integration-notes.md says how it runs and why:
//   - no webhooks: no webhook configuration is registered and the CRDs are installed without their
//     conversion webhooks, so the API server never calls Kueue (use kueue.x-k8s.io/v1beta2, the
//     stored version; v1beta1 is served without conversion);
//   - internalCertManagement off, so Kueue wants certificates on disk: a throwaway self-signed one
//     for its webhook server (a directory of its own) and for its metrics server, whose path Kueue
//     fixes at /etc/kueue/metrics/certs. That path is provided in a private mount namespace (an
//     overlay of /etc, read-only) so the host's /etc is never written; as root `unshare --mount`,
//     otherwise a user namespace as well;
//   - health, metrics and webhook servers on loopback; leader election off; the visibility server,
//     MultiKueue and topology-aware scheduling off.
#include <memory>
#include <string>

#include "tests/support/subprocess.h"
#include "tests/support/test_cluster.h"

namespace vto::testing {

inline constexpr const char* kKueueVersion = "v0.17.0";

class KueueProcess {
 public:
  // Installs Kueue's CRDs into `cluster`, starts the manager on it (its files in `dir`, a fresh
  // temporary directory when empty) and waits until it is ready (/readyz answers ok, which needs
  // /healthz and its webhook server up); throws with the tail of its log if it is not ready in time.
  explicit KueueProcess(TestCluster& cluster, std::string dir = "");
  ~KueueProcess();  // stops the manager if it runs
  KueueProcess(const KueueProcess&) = delete;
  KueueProcess& operator=(const KueueProcess&) = delete;

  // Server-side applies Kueue's CRDs (binDir()/kueue-crds) and waits until they are established.
  // Idempotent. The constructor calls it; a test that wants the CRDs without the manager calls it alone.
  static void installCrds(TestCluster& cluster);

  // Starts the manager again after stop() (same configuration, new ports) and waits until it is ready.
  void start();
  // Sends `signal` (SIGTERM by default; SIGKILL for a crash), waits for the exit and returns its code.
  int stop(int signal = 15);
  bool running() const { return process_ && process_->running(); }
  long pid() const { return process_ ? process_->pid() : -1; }

  const std::string& dir() const { return dir_; }
  std::string logPath() const { return dir_ + "/kueue.log"; }
  std::string logTail(size_t bytes = 6000) const;
  // http://127.0.0.1:PORT/healthz and /readyz of the running manager.
  std::string healthUrl() const { return "http://127.0.0.1:" + std::to_string(healthPort_) + "/healthz"; }
  std::string readyUrl() const { return "http://127.0.0.1:" + std::to_string(healthPort_) + "/readyz"; }
  // https://127.0.0.1:PORT/metrics (Kueue's metrics need a bearer token the API server authorizes).
  std::string metricsUrl() const { return "https://127.0.0.1:" + std::to_string(metricsPort_) + "/metrics"; }

 private:
  void writeFiles();
  bool startOnce(std::string& why);

  TestCluster& cluster_;
  std::string dir_;
  bool ownsDir_ = false;
  int healthPort_ = 0;
  int metricsPort_ = 0;
  int webhookPort_ = 0;
  std::unique_ptr<Subprocess> process_;
};

}  // namespace vto::testing
