#pragma once
// A local Vertex AI: the v1 REST surface for CustomJobs, HyperparameterTuningJobs and their delete
// Operations, the Model Registry (model_registry.h), the jobs' Cloud Logging entries (job_logs.h), its
// own token issuer, fault injection, quota and capacity emulation (capacity.h) and a control API for
// tests. Transport-free: the HTTP server (http_server.h) turns requests into handle() calls, and unit
// tests call handle() directly.
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "emulator/capacity.h"
#include "emulator/job_logs.h"
#include "emulator/job_store.h"
#include "emulator/model_registry.h"
#include "emulator/project_numbers.h"
#include "emulator/request.h"
#include "emulator/token_issuer.h"
#include "vertex/gcs_client.h"
#include "vertex/rate_limiter.h"

namespace vto::emulator {

struct EmulatorOptions {
  SimulationSettings simulation;
  double failRate = 0;        // share of /v1/ requests answered 503 UNAVAILABLE
  double throttleRate = 0;    // share of /v1/ requests answered 429 RESOURCE_EXHAUSTED
  int createQuotaPerMinute = 0;  // 0: no quota
  // The quota's window; a minute like Vertex's, shorter in tests that want to see pacing quickly.
  std::chrono::milliseconds createQuotaWindow = std::chrono::minutes(1);
  std::chrono::seconds tokenLifetime{3600};
  std::string trustedPublicKeyPem;  // verifies JWT assertions at /token when set
  std::uint32_t seed = 1;
  // A job whose checkpoint bucket is missing fails, as real training code would; true creates the
  // bucket instead (for benches, such as the Go peer's, that never create one).
  bool createMissingBuckets = false;
  nlohmann::json capacity = nlohmann::json::array();   // capacity entries at start (capacity.h)
  std::chrono::milliseconds modelUploadTime{2000};     // models:upload Operations are done after this
  std::size_t logEntriesPerJob = 32;                   // the newest entries each job keeps; 0: no logs
  RegistryBehaviour registry;                          // where Google's behaviour is undocumented
  // Cloud Logging's read quota: entries:list calls per minute per project, shared by every reader and
  // answered 429 RESOURCE_EXHAUSTED without Retry-After beyond it, as Google documents; 0: none.
  int loggingRequestsPerMinute = 60;
  std::chrono::milliseconds loggingQuotaWindow = std::chrono::minutes(1);  // shorter only in tests
  // entries:list without a lower timestamp bound answers a first page with no entries and a
  // nextPageToken ("still searching"), as Google documents it may.
  bool loggingSearchingPages = true;
  // Names in answers carry the project's number, as Google's do (project_numbers.h); requests may
  // use the ID or the number. Off by default: tests compare names they build from IDs.
  bool projectNumbers = false;
};

class Emulator {
 public:
  // checkpoints may be null: jobs then run without writing checkpoint objects or model files.
  // Throws vertex::ApiError(400) when options.capacity holds an invalid entry.
  Emulator(const Clock& clock, EmulatorOptions options, vertex::GcsClient* checkpoints);

  ~Emulator();

  Response handle(const Request& request);
  // Moves the simulation to clock.now() and writes the checkpoints that became due: before it
  // returns, or on the writer threads once startCheckpointWriters() has run.
  void tick();
  // From now on, checkpoints are written by `count` threads (each job's by one of them, in step
  // order), so that a slow GCS delays checkpoints and never job states. Written inside tick(), 10,000
  // jobs' uploads (1,000 a second) made each tick longer than the last, and jobs sat QUEUED for
  // minutes with their updateTime stamped long before anyone could see the change.
  void startCheckpointWriters(int count);

 private:
  Response handleVertex(const Request& request);
  Response handleLogging(const Request& request);
  Response handleControl(const Request& request);
  Response handleCapacity(const Request& request);
  bool authorized(const Request& request);
  Response createJob(const vto::Location& where, vertex::JobKind kind, const std::string& body);
  bool injectFault(Response& response, bool upload = false);
  bool overCreateQuota();
  // Uploads one checkpoint or model file; a job whose bucket is missing crashes there (recorded in
  // `crashed`). The last model file of a job makes it SUCCEEDED, written or not.
  void writeCheckpoint(const CheckpointWrite& write, std::set<std::string>& crashed);

  // One writer thread and the writes waiting for it (bounded: beyond the bound a write is dropped
  // and counted in stats as checkpointsDropped or modelFilesDropped). Model files go first: a job is
  // SUCCEEDED only once they are written, and a GCS that falls behind on checkpoints must not hold
  // jobs RUNNING.
  struct CheckpointWriter {
    std::mutex mutex;
    std::condition_variable_any ready;  // waits with a stop_token
    std::deque<CheckpointWrite> modelFiles;
    std::deque<CheckpointWrite> queue;
    std::jthread thread;
  };
  void runWriter(CheckpointWriter& writer, std::stop_token stop);

  // What the lifecycle asks of capacity and tells the logs and the quota counts.
  class Hooks final : public LifecycleHooks {
   public:
    explicit Hooks(Emulator& emulator) : emulator_(emulator) {}
    StartDecision beforeStart(const nlohmann::json& job, vertex::JobKind kind) override;
    bool admit(const nlohmann::json& job, vertex::JobKind kind) override;
    void onEvent(const JobEvent& event) override;

   private:
    Emulator& emulator_;
  };

  const Clock& clock_;
  EmulatorOptions options_;
  vertex::GcsClient* checkpoints_;
  Capacity capacity_;
  std::mutex quotaMutex_;
  std::set<std::string> holdingQuota_;  // jobs whose accelerators count against the quotas (guarded by quotaMutex_)
  JobLogs logs_;
  ModelRegistry models_;
  Hooks hooks_{*this};
  JobStore jobs_;
  TokenIssuer tokens_;
  ProjectNumbers projectNumbers_;
  std::mutex mutex_;  // guards the members below
  std::mt19937 random_;
  int failNext_ = 0, throttleNext_ = 0;  // queued by POST /emulator/v1/faults
  // "create" or "cancel" ("after" in the faults body): the faults above wait for the next job create or
  // cancel, which is carried out and answered with the first of them (an answer lost after Google acted).
  std::string faultsAfter_;
  // "only": "upload": the faults answer model uploads alone, refused before anything is carried out.
  bool faultsOnUploads_ = false;
  // Arms the faults when `verb` is what they wait for: `response` (of the call just carried out) becomes
  // the first of them.
  void lostAnswer(const std::string& verb, Response& response);
  vertex::SlidingWindow recentCreates_;
  std::map<std::string, vertex::SlidingWindow> recentLogReads_;  // by project
  std::map<std::string, int> stats_;
  std::mutex tickMutex_;  // one tick at a time, so checkpoints are written in step order
  std::vector<std::unique_ptr<CheckpointWriter>> writers_;  // set before the ticker starts, then fixed
};

}  // namespace vto::emulator
