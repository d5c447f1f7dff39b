#pragma once
// A real control plane for integration tests: build/bin/vto-testcluster (etcd + kube-apiserver) in a
// temporary directory, and kubectl pointed at it.
#include <memory>
#include <string>

#include "tests/support/subprocess.h"

namespace vto::testing {

// Where vto's executables are: $VTO_BIN_DIR, else the build's bin directory.
std::string binDir();
// The repository's root: $VTO_SOURCE_DIR (CTest sets it), else the source tree this was built from.
std::string sourceDir();
// A fresh directory under $TMPDIR (or /tmp) that the caller owns.
std::string makeTempDir(const std::string& prefix);

class TestCluster {
 public:
  // Starts the cluster in `dir` (a fresh temporary directory when empty) and waits until it is
  // ready; throws with the tail of its log if it is not ready within the deadline.
  explicit TestCluster(std::string dir = "");
  ~TestCluster();

  const std::string& dir() const { return dir_; }
  std::string kubeconfig() const { return dir_ + "/kubeconfig"; }
  std::string server() const;  // https://127.0.0.1:PORT, from the kubeconfig
  std::string logPath() const { return dir_ + "/testcluster.log"; }
  // Runs `kubectl --kubeconfig=... ARGS` (ARGS is shell text) and captures its output.
  CommandResult kubectl(const std::string& args) const;
  // Stops the control plane (SIGTERM) and returns its exit code; restart() starts it again on the
  // same data directory, so stored objects survive.
  int stop();
  void restart();

 private:
  void start();
  std::string dir_;
  std::unique_ptr<Subprocess> process_;
};

// One cluster shared by every test of an integration binary, started on first use and stopped
// when the binary exits.
TestCluster& sharedCluster();

}  // namespace vto::testing
