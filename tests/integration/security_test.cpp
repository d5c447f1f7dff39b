// Where the operator's credentials may go (docs/security.md, "Credentials and endpoints"): no value a
// tenant writes into a TrainingRun, nor anything written into its status, makes vto connect to a
// host of the tenant's choosing. A real listener on loopback records every connection it gets.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "tests/support/operator_stack.h"
#include "tests/support/wait.h"

namespace vto::testing {
namespace {

using namespace std::chrono_literals;

// Accepts and counts TCP connections on 127.0.0.1:<ephemeral port> until destroyed.
class ConnectionRecorder {
 public:
  ConnectionRecorder() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(fd_, 16) != 0) {
      throw std::runtime_error("cannot listen on loopback");
    }
    socklen_t length = sizeof address;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd wanted{fd_, POLLIN, 0};
        if (::poll(&wanted, 1, 100) > 0) {  // the timeout only lets the loop see stop_
          int client = ::accept(fd_, nullptr, nullptr);
          if (client >= 0) {
            ++connections_;
            ::close(client);
          }
        }
      }
    });
  }
  ~ConnectionRecorder() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  int connections() const { return connections_; }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread thread_;
};

std::string writeManifest(const OperatorStack& stack, const std::string& name, const std::string& text) {
  auto path = stack.dir() + "/" + name + ".yaml";
  std::ofstream(path) << text;
  return path;
}

TEST(Credentials, NoRunOrStatusCanSendTheTokenToAHostOfItsChoosing) {
  ConnectionRecorder listener;
  auto port = std::to_string(listener.port());
  OperatorStack stack;

  // 1. The API server refuses a location (or project) that is not what Google names it.
  auto hostile = writeManifest(stack, "hostile",
                               simpleRunManifest("default", "hostile", "  location: \"localhost:" + port + "/x?\"\n"));
  auto refused = stack.cluster().kubectl("apply -f '" + hostile + "'");
  EXPECT_NE(refused.exitCode, 0) << refused.output;
  EXPECT_NE(refused.output.find("must be a Vertex AI region such as us-central1"), std::string::npos) << refused.output;
  auto project = writeManifest(stack, "project",
                               simpleRunManifest("default", "project", "  project: \"localhost:" + port + "\"\n"));
  refused = stack.cluster().kubectl("apply -f '" + project + "'");
  EXPECT_NE(refused.exitCode, 0) << refused.output;
  EXPECT_NE(refused.output.find("must be a Google Cloud project ID"), std::string::npos) << refused.output;

  // 2. Whoever can write status names a job on the listener; vto runs against the real regional
  //    endpoints (no --vertex-endpoint), as in production.
  auto victim = writeManifest(stack, "victim", simpleRunManifest("default", "victim"));
  stack.kubectlOk("apply -f '" + victim + "'");
  std::string crafted = "projects/test-project/locations/localhost:" + port + "?/customJobs/1";
  stack.kubectlOk("patch trainingrun victim -n default --subresource=status --type=merge -p '"
                  "{\"status\": {\"phase\": \"Running\", \"attemptCount\": 1, \"attempts\": [{\"attempt\": 1, "
                  "\"jobName\": \"" + crafted + "\"}]}}'");
  stack.startOperator({"--vertex-endpoint="});
  // The operator has reconciled the run once it refuses the job name (the run fails: the job is not
  // the run's) or logs the refusal: only then is "no connection" news.
  EXPECT_TRUE(waitFor([&] {
    return stack.phaseOf("default", "victim") == "Failed" ||
           stack.operatorLog().find("refused before sending any request") != std::string::npos;
  }, 60s)) << stack.operatorLog();
  EXPECT_NE(stack.getRun("default", "victim")["status"].value("message", "").find("vto did not create for this run"),
            std::string::npos) << stack.getRun("default", "victim").dump();
  EXPECT_EQ(listener.connections(), 0) << "vto connected to a host named in a TrainingRun's status";
  EXPECT_EQ(stack.operatorLog().find("Bearer"), std::string::npos);
}

}  // namespace
}  // namespace vto::testing
