#pragma once
// Real vto-emulator and fake-gcs-server child processes for integration tests (the real
// programs, started on free loopback ports). Executables come from $VTO_EMULATOR_BIN_DIR when set
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

// fake-gcs-server, in memory, plain http on loopback.
class FakeGcsServer {
 public:
  explicit FakeGcsServer(const std::string& logPath) : port_(freeLoopbackPort()), logPath_(logPath) {
    auto command = "exec '" + emulatorBinDir() + "/fake-gcs-server' -scheme http -host 127.0.0.1 -port " +
                   std::to_string(port_) + " -backend memory >> '" + logPath + "' 2>&1";
    process_ = std::make_unique<Subprocess>(std::vector<std::string>{"sh", "-c", command});
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
    if (!ready) throw std::runtime_error("fake-gcs-server did not start: " + readWholeFile(logPath));
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& logPath() const { return logPath_; }

 private:
  int port_;
  std::string logPath_;
  std::unique_ptr<Subprocess> process_;
};

// vto-emulator with the given extra flags; ready once it printed its listening line.
class EmulatorProcess {
 public:
  EmulatorProcess(std::vector<std::string> flags, const std::string& logPath)
      : port_(freeLoopbackPort()), logPath_(logPath) {
    std::vector<std::string> argv = {emulatorBinDir() + "/vto-emulator", "--listen",
                                     "127.0.0.1:" + std::to_string(port_)};
    argv.insert(argv.end(), flags.begin(), flags.end());
    process_ = std::make_unique<Subprocess>(argv, logPath);
    auto line = process_->readLine(std::chrono::seconds(30));
    if (!line || line->find("listening on") == std::string::npos) {
      throw std::runtime_error("vto-emulator did not start: " + readWholeFile(logPath));
    }
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string hostPort() const { return "127.0.0.1:" + std::to_string(port_); }
  const std::string& logPath() const { return logPath_; }
  int stop() { return process_->stop(std::chrono::seconds(10)); }

 private:
  int port_;
  std::string logPath_;
  std::unique_ptr<Subprocess> process_;
};

}  // namespace vto::testing
