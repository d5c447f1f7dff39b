// vto-emulator: a local Vertex AI for demos and tests. See emulator/emulator.h and --help.
#include <csignal>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "emulator/emulator.h"
#include "emulator/http_server.h"
#include "vertex/api_error.h"
#include "vertex/gcs_client.h"

namespace {

constexpr const char* kUsage = R"(usage: vto-emulator --listen HOST:PORT [options]
  --listen HOST:PORT             where to serve; port 0 picks a free port, printed in the ready line
  --gcs-endpoint URL             fake-gcs-server for checkpoints (default: $STORAGE_EMULATOR_HOST; none: no checkpoints)
  --queue-time DURATION          time a job spends QUEUED then PENDING (default 2s)
  --steps N                      training steps per job, per trial for tuning jobs (default 5)
  --step-time DURATION           time per step (default 1s)
  --cancel-time DURATION         time from CANCELLING to CANCELLED (default 500ms)
  --stockout-wait DURATION       a job where there is no capacity waits this long PENDING past its
                                 queue time before it fails with the stockout error (default 30s)
  --fail-rate F                  share of /v1/ requests answered 503 (default 0)
  --throttle-rate F              share of /v1/ requests answered 429 (default 0)
  --create-quota-per-minute N    job creations per minute before 429 RESOURCE_EXHAUSTED (default 0: none)
  --create-quota-window DURATION the quota's window (default 1m; shorter for tests)
  --token-lifetime DURATION      lifetime of issued access tokens (default 3600s)
  --trusted-public-key FILE      verify JWT assertions at /token with this PEM public key
  --seed N                       seed of the fault injection (default 1)
  --checkpoint-writers N         threads that upload checkpoints beside the lifecycle (default 2; 0:
                                 inside each tick, so a slow GCS holds back every job's state)
  --missing-bucket create|fail   a job whose checkpoint bucket is missing fails (default), or the
                                 bucket is created (benches that never create one)
  --capacity FILE                capacity and accelerator quota entries at start: a JSON list of
                                 {"location", "acceleratorType", "machineType", "strategy", "available",
                                 "mode": "fail"|"hold", "quota", "quotaMode": "queue"|"refuse"} (see POST /emulator/v1/capacity)
  --model-artifacts on|off       a CustomJob that succeeds writes model.txt and metrics.json under
                                 <baseOutputDirectory>/model/ before it is SUCCEEDED (default on)
  --model-upload-time DURATION   time until a models:upload Operation is done (default 2s)
  --log-entries-per-job N        Cloud Logging entries kept per job, the newest (default 32; 0: no logs)
  --logging-requests-per-minute N  entries:list calls per minute per project before 429 (default 60, as
                                 Google's read quota; 0: none)
  --logging-quota-window DURATION  that quota's window (default 1m; shorter for tests)
  --logging-searching-pages on|off  entries:list without a lower timestamp bound first answers an empty
                                 page with a nextPageToken, "still searching" (default on, as Google documents)
  --alias-move implicit|strict   mergeVersionAliases adding an alias another version holds moves it
                                 (default, as the console documents) or is refused (400 FAILED_PRECONDITION)
  --label-merge model-wins|version-wins  a label key on both a model and its version: whose value a
                                 returned version shows (default model-wins; Google documents the merge only)
  --project-numbers on|off       names in answers carry the project's number, as Google's do; requests
                                 may use the ID or the number (default off)
DURATION is a number with ms, s or m, e.g. 500ms, 2s, 1m.)";

std::chrono::milliseconds parseDuration(const std::string& flag, const std::string& text) {
  std::size_t used = 0;
  double number = 0;
  try {
    number = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  auto unit = text.substr(used);
  double scale = unit == "ms" ? 1 : unit == "s" ? 1000 : unit == "m" ? 60000 : -1;
  if (used == 0 || scale < 0 || number < 0) {
    throw std::invalid_argument(flag + " " + text + ": expected a duration such as 500ms, 2s or 1m");
  }
  return std::chrono::milliseconds(static_cast<long long>(number * scale));
}

double parseRate(const std::string& flag, const std::string& text) {
  try {
    auto rate = std::stod(text);
    if (rate >= 0 && rate <= 1) return rate;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument(flag + " " + text + ": expected a share between 0 and 1, e.g. 0.1");
}

int parseCount(const std::string& flag, const std::string& text) {
  try {
    std::size_t used = 0;
    auto count = std::stoi(text, &used);
    if (used == text.size() && count >= 0) return count;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument(flag + " " + text + ": expected a whole number >= 0");
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace vto;
  std::string listen;
  std::optional<std::string> gcsEndpoint;
  emulator::EmulatorOptions options;
  int checkpointWriters = 2;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string flag = argv[i];
      if (flag == "--help" || flag == "-h") {
        std::cout << kUsage << "\n";
        return 0;
      }
      if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value (or is unknown); see --help");
      std::string value = argv[++i];
      if (flag == "--listen") listen = value;
      else if (flag == "--gcs-endpoint") gcsEndpoint = value;
      else if (flag == "--queue-time") options.simulation.queueTime = parseDuration(flag, value);
      else if (flag == "--steps") options.simulation.steps = parseCount(flag, value);
      else if (flag == "--step-time") options.simulation.stepTime = parseDuration(flag, value);
      else if (flag == "--cancel-time") options.simulation.cancelTime = parseDuration(flag, value);
      else if (flag == "--stockout-wait") options.simulation.stockoutWait = parseDuration(flag, value);
      else if (flag == "--fail-rate") options.failRate = parseRate(flag, value);
      else if (flag == "--throttle-rate") options.throttleRate = parseRate(flag, value);
      else if (flag == "--create-quota-per-minute") options.createQuotaPerMinute = parseCount(flag, value);
      else if (flag == "--create-quota-window") options.createQuotaWindow = parseDuration(flag, value);
      else if (flag == "--token-lifetime") {
        options.tokenLifetime = std::chrono::duration_cast<std::chrono::seconds>(parseDuration(flag, value));
      } else if (flag == "--trusted-public-key") options.trustedPublicKeyPem = readFile(value);
      else if (flag == "--missing-bucket") {
        if (value != "create" && value != "fail") {
          throw std::invalid_argument("--missing-bucket " + value + ": expected create or fail");
        }
        options.createMissingBuckets = value == "create";
      } else if (flag == "--checkpoint-writers") checkpointWriters = parseCount(flag, value);
      else if (flag == "--capacity") {
        options.capacity = nlohmann::json::parse(readFile(value), nullptr, false);
        if (!options.capacity.is_array()) {
          throw std::invalid_argument("--capacity " + value + ": expected a JSON list of capacity entries");
        }
      } else if (flag == "--model-artifacts") {
        if (value != "on" && value != "off") throw std::invalid_argument("--model-artifacts " + value + ": expected on or off");
        options.simulation.modelArtifacts = value == "on";
      } else if (flag == "--model-upload-time") options.modelUploadTime = parseDuration(flag, value);
      else if (flag == "--log-entries-per-job") options.logEntriesPerJob = parseCount(flag, value);
      else if (flag == "--logging-requests-per-minute") options.loggingRequestsPerMinute = parseCount(flag, value);
      else if (flag == "--logging-quota-window") options.loggingQuotaWindow = parseDuration(flag, value);
      else if (flag == "--logging-searching-pages") {
        if (value != "on" && value != "off") throw std::invalid_argument(flag + " " + value + ": expected on or off");
        options.loggingSearchingPages = value == "on";
      } else if (flag == "--alias-move") {
        if (value != "implicit" && value != "strict") throw std::invalid_argument("--alias-move " + value + ": expected implicit or strict");
        options.registry.strictAliasMove = value == "strict";
      } else if (flag == "--label-merge") {
        if (value != "model-wins" && value != "version-wins") {
          throw std::invalid_argument("--label-merge " + value + ": expected model-wins or version-wins");
        }
        options.registry.modelLabelsWin = value == "model-wins";
      }
      else if (flag == "--project-numbers") {
        if (value != "on" && value != "off") throw std::invalid_argument(flag + " " + value + ": expected on or off");
        options.projectNumbers = value == "on";
      }
      else if (flag == "--seed") options.seed = static_cast<std::uint32_t>(parseCount(flag, value));
      else throw std::invalid_argument("unknown flag " + flag + "; see --help");
    }
    if (listen.empty()) throw std::invalid_argument("--listen HOST:PORT is required, e.g. --listen 127.0.0.1:8089");
  } catch (const std::invalid_argument& error) {
    std::cerr << "vto-emulator: " << error.what() << "\n";
    return 2;
  }

  // SIGTERM/SIGINT end the server; block them in every thread and wait for them below.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // stdout carries only the "listening on URL" line that callers wait for (and read the port from);
  // logs go to stderr.
  spdlog::set_default_logger(spdlog::stderr_color_mt("vto-emulator"));

  RealClock clock;
  vertex::CppRestTransport http;
  std::unique_ptr<vertex::RestGcsClient> gcs;
  auto endpoint = gcsEndpoint ? *gcsEndpoint : vertex::processEnv("STORAGE_EMULATOR_HOST").value_or("");
  if (!endpoint.empty()) gcs = std::make_unique<vertex::RestGcsClient>(http, vertex::gcsEndpoint(endpoint), nullptr);

  std::unique_ptr<emulator::Emulator> emulatorOwner;
  try {
    emulatorOwner = std::make_unique<emulator::Emulator>(clock, options, gcs.get());
  } catch (const vertex::ApiError& error) {
    std::cerr << "vto-emulator: --capacity: " << error.message() << "\n";
    return 2;
  }
  auto& emulator = *emulatorOwner;
  emulator.startCheckpointWriters(checkpointWriters);
  std::unique_ptr<emulator::HttpServer> serverOwner;
  try {
    serverOwner = std::make_unique<emulator::HttpServer>(emulator, listen);
  } catch (const std::invalid_argument& error) {
    std::cerr << "vto-emulator: " << error.what() << "\n";
    return 2;
  }
  auto& server = *serverOwner;
  try {
    server.open();
  } catch (const std::exception& error) {
    std::cerr << "vto-emulator: cannot listen on " << listen << ": " << error.what() << "\n";
    return 1;
  }
  std::cout << "vto-emulator listening on " << server.url() << std::endl;

  // The lifecycle runs on the real clock: a ticker advances it a few times per second.
  std::atomic<bool> running = true;
  std::thread ticker([&] {
    while (running) {
      emulator.tick();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  int received = 0;
  sigwait(&signals, &received);
  running = false;
  ticker.join();
  server.close();
  spdlog::info("vto-emulator stopped");
  return 0;
}
