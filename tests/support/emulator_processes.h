#pragma once
// Real vto-emulator and fake-gcs-server child processes for integration tests (the real
// programs, on loopback ports they bind themselves or retry when lost). Executables come from $VTO_EMULATOR_BIN_DIR when set
// (a helper's own build), else from binDir().
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/ports.h"
#include "tests/support/subprocess.h"
#include "tests/support/test_cluster.h"
#include "tests/support/wait.h"
#include "vertex/http_transport.h"

namespace vto::testing {

inline std::string emulatorBinDir() {
  const char* dir = std::getenv("VTO_EMULATOR_BIN_DIR");
  return dir != nullptr && *dir != '\0' ? dir : binDir();
}

inline std::string readWholeFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// fake-gcs-server, in memory, plain http on loopback. It cannot report a port it picked itself
// (its "server started at" line repeats the -port flag), so it gets a port free right now and is
// restarted on a new one when another process took that port first. Like Cloud Storage it starts
// without buckets: create the ones a test writes to (the emulator fails jobs whose bucket is missing).
class FakeGcsServer {
 public:
  // `backend`: fake-gcs-server's storage flags. Its memory backend scans every object of a bucket on
  // each write (10,000 uploads take minutes); `-backend filesystem -filesystem-root R -data SEED` loads
  // a seeded tree in seconds.
  explicit FakeGcsServer(const std::string& logPath, const std::vector<std::string>& buckets = {},
                         const std::vector<std::string>& backend = {"-backend", "memory"})
      : logPath_(logPath) {
    constexpr int kAttempts = 8;
    for (int attempt = 1; !process_; ++attempt) {
      port_ = freeLoopbackPort();
      size_t logStart = readWholeFile(logPath).size();
      auto command = "exec '" + emulatorBinDir() + "/fake-gcs-server' -scheme http -host 127.0.0.1 -port " +
                     std::to_string(port_);
      for (const auto& flag : backend) command += " '" + flag + "'";
      command += " >> '" + logPath + "' 2>&1";
      auto process = std::make_unique<Subprocess>(std::vector<std::string>{"sh", "-c", command});
      auto logOfThisStart = [&] {
        auto log = readWholeFile(logPath);
        return log.size() > logStart ? log.substr(logStart) : std::string();
      };
      // "server started" comes after its listener bound and its -data seed loaded (10,000 objects take
      // tens of seconds on a loaded machine); an exit before it is a failed bind or worse.
      waitFor([&] { return logOfThisStart().find("server started") != std::string::npos || !process->running(); },
              std::chrono::seconds(180));
      if (process->running() && logOfThisStart().find("server started") != std::string::npos) {
        process_ = std::move(process);
      } else if (attempt == kAttempts || logOfThisStart().find("address already in use") == std::string::npos) {
        throw std::runtime_error("fake-gcs-server did not start: " + logOfThisStart());
      }
    }
    vertex::CppRestTransport http;
    bool ready = waitFor(
        [&] {
          try {
            return http.send({"GET", url() + "/storage/v1/b", {}, "", std::chrono::seconds(2)}).status == 200;
          } catch (const std::exception&) {
            return false;
          }
        },
        std::chrono::seconds(30));
    if (!ready) throw std::runtime_error("fake-gcs-server did not answer: " + readWholeFile(logPath));
    for (const auto& bucket : buckets) createBucket(bucket);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& logPath() const { return logPath_; }

  // Creates `bucket` (an existing one is fine), as `gsutil mb` would on Google Cloud.
  void createBucket(const std::string& bucket) {
    vertex::CppRestTransport http;
    auto response = http.send({"POST", url() + "/storage/v1/b?project=vto", {{"Content-Type", "application/json"}},
                               "{\"name\": \"" + bucket + "\"}", std::chrono::seconds(10)});
    if (response.status != 200 && response.status != 409)
      throw std::runtime_error("fake-gcs-server refused bucket " + bucket + ": HTTP " + std::to_string(response.status) +
                               " " + response.body);
  }

 private:
  int port_ = 0;
  std::string logPath_;
  std::unique_ptr<Subprocess> process_;
};

// vto-emulator with the given extra flags, on a port it binds itself (--listen 127.0.0.1:0); ready
// once it printed "vto-emulator listening on URL", which says the port.
class EmulatorProcess {
 public:
  EmulatorProcess(std::vector<std::string> flags, const std::string& logPath) : logPath_(logPath) {
    std::vector<std::string> argv = {emulatorBinDir() + "/vto-emulator", "--listen", "127.0.0.1:0"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    process_ = std::make_unique<Subprocess>(argv, logPath);
    auto line = process_->readLine(std::chrono::seconds(30));
    const std::string kReady = "listening on http://127.0.0.1:";
    auto at = line ? line->find(kReady) : std::string::npos;
    if (at == std::string::npos) throw std::runtime_error("vto-emulator did not start: " + readWholeFile(logPath));
    port_ = std::stoi(line->substr(at + kReady.size()));
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string hostPort() const { return "127.0.0.1:" + std::to_string(port_); }
  const std::string& logPath() const { return logPath_; }
  int stop() { return process_->stop(std::chrono::seconds(10)); }

 private:
  int port_ = 0;
  std::string logPath_;
  std::unique_ptr<Subprocess> process_;
};

}  // namespace vto::testing
