#include "tests/support/test_cluster.h"

#include <stdlib.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace vto::testing {

std::string binDir() {
  if (const char* dir = std::getenv("VTO_BIN_DIR"); dir != nullptr && *dir != '\0') return dir;
  return VTO_DEFAULT_BIN_DIR;
}

std::string sourceDir() {
  if (const char* dir = std::getenv("VTO_SOURCE_DIR"); dir != nullptr && *dir != '\0') return dir;
  return VTO_DEFAULT_SOURCE_DIR;
}

std::string makeTempDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/" + prefix + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
  return pattern;
}

namespace {
std::string tail(const std::string& path, size_t bytes = 4000) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > bytes ? s.substr(s.size() - bytes) : s;
}
}  // namespace

TestCluster::TestCluster(std::string dir) : dir_(dir.empty() ? makeTempDir("vto-testcluster") : std::move(dir)) {
  start();
}

TestCluster::~TestCluster() {
  if (process_) process_->stop();
  if (std::getenv("VTO_KEEP_TEST_DIRS") == nullptr) runShell("rm -rf '" + dir_ + "'");
}

void TestCluster::start() {
  process_ = std::make_unique<Subprocess>(
      std::vector<std::string>{binDir() + "/vto-testcluster", "--dir", dir_}, logPath());
  // Cold etcd + API server start takes a few seconds; a loaded two-core CI machine, longer.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    auto line = process_->readLine(left);
    if (!line) break;
    if (*line == "ready") return;
  }
  process_->stop();
  throw std::runtime_error("vto-testcluster did not become ready; its log ends with:\n" + tail(logPath()));
}

std::string TestCluster::server() const {
  std::ifstream in(kubeconfig());
  for (std::string line; std::getline(in, line);) {
    auto at = line.find("server: ");
    if (at != std::string::npos) return line.substr(at + 8);
  }
  throw std::runtime_error("no server in " + kubeconfig());
}

CommandResult TestCluster::kubectl(const std::string& args) const {
  return runShell("kubectl --kubeconfig='" + kubeconfig() + "' " + args);
}

int TestCluster::stop() {
  int code = process_ ? process_->stop() : -1;
  process_.reset();
  return code;
}

void TestCluster::restart() {
  stop();
  start();
}

TestCluster& sharedCluster() {
  static TestCluster cluster;
  return cluster;
}

}  // namespace vto::testing
