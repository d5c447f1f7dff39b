#include "emulator/emulator.h"

#include <algorithm>
#include <bit>
#include <optional>
#include <set>

#include <spdlog/spdlog.h>

#include "emulator/listing.h"
#include "emulator/schema_validator.h"
#include "vertex/api_error.h"

namespace vto::emulator {
namespace {

using nlohmann::json;
using vertex::ApiError;
using vertex::JobKind;

// Cloud Logging's limit on one LogEntry (https://cloud.google.com/logging/quotas: 256 KB).
constexpr std::size_t kMaxLogEntryBytes = 256 * 1024;
constexpr const char* kMetadataTokenPath = "/computeMetadata/v1/instance/service-accounts/default/token";

Response errorResponse(const ApiError& error) {
  return {error.httpStatus(), vertex::makeErrorBody(vertex::rpcCodeNumber(error.status()), error.message(), error.details())};
}

std::vector<std::string> split(const std::string& path) {
  std::vector<std::string> segments;
  std::size_t start = 1;
  while (start <= path.size()) {
    auto end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    segments.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return segments;
}

std::optional<JobKind> kindOfCollection(const std::string& collection) {
  if (collection == "customJobs") return JobKind::Custom;
  if (collection == "hyperparameterTuningJobs") return JobKind::HyperparameterTuning;
  return std::nullopt;
}

std::string schemaIdOf(JobKind kind) {
  return kind == JobKind::Custom ? "GoogleCloudAiplatformV1CustomJob" : "GoogleCloudAiplatformV1HyperparameterTuningJob";
}

}  // namespace

Emulator::Emulator(const Clock& clock, EmulatorOptions options, vertex::GcsClient* checkpoints)
    : clock_(clock),
      options_(options),
      checkpoints_(checkpoints),
      logs_(clock, options.logEntriesPerJob, options.loggingSearchingPages),
      models_(clock, options.modelUploadTime, options.registry),
      jobs_(clock, options.simulation, &hooks_),
      tokens_(clock, options.tokenLifetime, options.trustedPublicKeyPem),
      random_(options.seed),
      recentCreates_(options.createQuotaWindow) {
  capacity_.add(options.capacity);
}

// Both run inside the lifecycle's tick, on the ticker thread: an exception there would end the
// process, so a job these cannot read starts and goes unlogged instead (validation makes it rare).
StartDecision Emulator::Hooks::beforeStart(const json& job, JobKind kind) {
  try {
    return emulator_.capacity_.decide(demandOf(job, kind, locationIn(job["name"].get<std::string>()).location));
  } catch (const std::exception& error) {
    spdlog::warn("capacity check of {} failed, starting it: {}", job.value("name", std::string()), error.what());
    return StartDecision::Start;
  }
}

bool Emulator::Hooks::admit(const json& job, JobKind kind) {
  try {
    auto name = job["name"].get<std::string>();
    if (!emulator_.capacity_.reserve(demandOf(job, kind, locationIn(name).location), false)) return false;
    std::lock_guard lock(emulator_.quotaMutex_);
    emulator_.holdingQuota_.insert(name);
    return true;
  } catch (const std::exception& error) {
    spdlog::warn("quota check of {} failed, admitting it: {}", job.value("name", std::string()), error.what());
    return true;
  }
}

void Emulator::Hooks::onEvent(const JobEvent& event) {
  try {
    emulator_.logs_.record(event);
    if (event.kind == JobEvent::Kind::Ended && event.firstEnd) {
      auto name = event.job["name"].get<std::string>();
      bool held = false;
      {
        std::lock_guard lock(emulator_.quotaMutex_);
        held = emulator_.holdingQuota_.erase(name) > 0;
      }
      // A job that ended while QUEUED over its quota never held any.
      if (held) emulator_.capacity_.release(demandOf(event.job, event.jobKind, locationIn(name).location));
    }
  } catch (const std::exception& error) {
    spdlog::warn("following {} failed: {}", event.job.value("name", std::string()), error.what());
  }
}

Response Emulator::handle(const Request& original) {
  // Google's names carry project numbers: read them as IDs here, write numbers into the answer below.
  std::optional<Request> byId;
  if (options_.projectNumbers) {
    byId = original;
    byId->path = projectNumbers_.toIds(original.path);
    byId->body = projectNumbers_.toIds(original.body);
    for (auto& [key, value] : byId->query) value = projectNumbers_.toIds(value);
  }
  const Request& request = byId ? *byId : original;
  Response response;
  try {
    if (request.path == kMetadataTokenPath) {
      auto flavor = request.headers.find("metadata-flavor");
      if (flavor == request.headers.end() || flavor->second != "Google") {
        response = {403, {{"error", "Missing required header \"Metadata-Flavor: Google\""}}};
      } else {
        response = {200, tokens_.issue()};
      }
    } else if (request.path == "/token" && request.method == "POST") {
      auto [status, body] = tokens_.exchange(request.body);
      response = {status, body};
    } else if (request.path.rfind("/emulator/v1/", 0) == 0) {
      response = handleControl(request);
    } else if (request.path.rfind("/v1/", 0) == 0 || request.path.rfind("/ui/", 0) == 0) {
      response = handleVertex(request);
    } else if (request.path.rfind("/v2/", 0) == 0) {
      response = handleLogging(request);
    } else {
      throw ApiError(404, "NOT_FOUND", "No such path: " + request.path);
    }
  } catch (const ApiError& error) {
    response = errorResponse(error);
  }
  bool vertexPath = request.path.rfind("/v1/", 0) == 0 || request.path.rfind("/ui/", 0) == 0;
  if (options_.projectNumbers && vertexPath) projectNumbers_.toNumbers(response.body);
  {
    std::lock_guard lock(mutex_);
    ++stats_["requests"];
    // Vertex API calls alone (not tokens, not this control API): what a benchmark counts per run.
    if (request.path.rfind("/v1/", 0) == 0 || request.path.rfind("/ui/", 0) == 0) ++stats_["vertexRequests"];
    if (request.path.rfind("/v2/", 0) == 0) ++stats_["loggingRequests"];
  }
  // Method, path and status only: never headers (they carry tokens) nor bodies.
  spdlog::info("{} {} -> {}", request.method, request.path, response.status);
  return response;
}

bool Emulator::injectFault(Response& response, bool upload) {
  std::lock_guard lock(mutex_);
  if (!faultsAfter_.empty()) return false;  // armed only by the call they wait for
  if (faultsOnUploads_ && !upload) return false;
  std::uniform_real_distribution<double> unit(0, 1);
  if (failNext_ > 0 || (options_.failRate > 0 && unit(random_) < options_.failRate)) {
    if (failNext_ > 0) --failNext_;
    ++stats_["unavailable"];
    response = {503, vertex::makeErrorBody(14, "The service is currently unavailable.")};
    return true;
  }
  if (throttleNext_ > 0 || (options_.throttleRate > 0 && unit(random_) < options_.throttleRate)) {
    if (throttleNext_ > 0) --throttleNext_;
    ++stats_["throttled"];
    response = {429, vertex::makeErrorBody(8, "Too many requests, please retry later.")};
    return true;
  }
  return false;
}

void Emulator::lostAnswer(const std::string& verb, Response& response) {
  {
    std::lock_guard lock(mutex_);
    if (faultsAfter_ != verb) return;
    faultsAfter_.clear();
    ++stats_["answersLost"];
  }
  injectFault(response);
}

bool Emulator::overCreateQuota() {
  if (options_.createQuotaPerMinute <= 0) return false;
  std::lock_guard lock(mutex_);
  if (recentCreates_.tryRecord(clock_.now(), options_.createQuotaPerMinute)) return false;
  ++stats_["quotaRejected"];
  return true;
}

Response Emulator::createJob(const vto::Location& where, JobKind kind, const std::string& body) {
  auto canonical = parseRequestBody(body, schemaIdOf(kind));
  if (overCreateQuota()) {
    json quotaFailure = {{"@type", "type.googleapis.com/google.rpc.QuotaFailure"},
                         {"violations",
                          {{{"subject", "projects/" + where.project},
                            {"description", "custom_job_creation_requests_per_minute_per_project_per_region"}}}}};
    throw ApiError(429, "RESOURCE_EXHAUSTED",
                   "Quota exceeded for quota metric 'Job creation requests' and limit 'Job creation requests per "
                   "minute per region' of service 'aiplatform.googleapis.com' for consumer 'project:" +
                       where.project + "'.",
                   json::array({quotaFailure}));
  }
  // The job holds its accelerators against the quotas from now until it ends; over a quota it waits
  // QUEUED for them (or, where the quota's entry says so, the create is refused with a 429).
  auto demand = demandOf(canonical, kind, where.location);
  bool admitted = false;
  try {
    admitted = capacity_.reserve(demand);
  } catch (const ApiError&) {
    std::lock_guard lock(mutex_);
    ++stats_["acceleratorQuotaRejected"];
    throw;
  }
  json created;
  try {
    created = jobs_.create(where, kind, std::move(canonical), !admitted);
  } catch (...) {
    if (admitted) capacity_.release(demand);
    throw;
  }
  if (admitted) {
    std::lock_guard lock(quotaMutex_);
    holdingQuota_.insert(created["name"].get<std::string>());
  }
  {
    std::lock_guard lock(mutex_);
    ++stats_["created"];
    if (!admitted) ++stats_["acceleratorQuotaQueued"];
  }
  return {200, created};
}

bool Emulator::authorized(const Request& request) {
  auto authorization = request.headers.find("authorization");
  const std::string bearer = "Bearer ";
  return authorization != request.headers.end() && authorization->second.rfind(bearer, 0) == 0 &&
         tokens_.valid(authorization->second.substr(bearer.size()));
}

Response Emulator::handleVertex(const Request& request) {
  if (!authorized(request)) {
    throw ApiError(401, "UNAUTHENTICATED",
                   "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or "
                   "other valid authentication credential.");
  }
  Response fault;
  if (injectFault(fault, request.method == "POST" && request.path.ends_with("/models:upload"))) return fault;

  // v1/projects/P/locations/L/<collection>[/ID[:verb]]
  auto segments = split(request.path);
  if (segments.size() < 6 || segments[1] != "projects" || segments[3] != "locations") {
    throw ApiError(404, "NOT_FOUND", "No such path: " + request.path);
  }
  vto::Location where{segments[2], segments[4]};
  const auto& collection = segments[5];
  if (collection == "operations" && segments.size() == 7 && request.method == "GET") {
    return {200, jobs_.operation(where.parent() + "/operations/" + segments[6])};
  }
  bool modelOperation = collection == "models" && segments.size() == 9 && segments[7] == "operations";
  // The official clients' first HTTP rule for GetOperation is /ui/{name=...}; /v1/ is its alternative.
  if (segments[0] == "ui" && !modelOperation) throw ApiError(404, "NOT_FOUND", "No such path: " + request.path);
  if (collection == "models" || collection == "models:upload") {
    return models_.handle(request, where, std::vector<std::string>(segments.begin() + 5, segments.end()));
  }
  auto kind = kindOfCollection(collection);
  if (!kind) throw ApiError(404, "NOT_FOUND", "No such collection: " + collection);
  if (segments.size() == 6) {
    if (request.method == "POST") {
      auto created = createJob(where, *kind, request.body);
      lostAnswer("create", created);
      return created;
    }
    if (request.method == "GET") {
      auto filter = request.query.count("filter") ? request.query.at("filter") : "";
      auto token = request.query.count("pageToken") ? request.query.at("pageToken") : "";
      std::vector<std::vector<std::string>> mask;
      if (auto readMask = request.query.find("readMask"); readMask != request.query.end()) {
        try {
          mask = SchemaValidator::vertexV1().fieldMask(readMask->second, schemaIdOf(*kind));
        } catch (const ValidationError& error) {
          throw ApiError(400, "INVALID_ARGUMENT", error.what());
        }
      }
      auto page = jobs_.list(where, *kind, filter, pageSizeParameter(request.query), token, mask);
      json body = {{std::string(vertex::collectionName(*kind)), page.jobs}};
      if (!page.nextPageToken.empty()) body["nextPageToken"] = page.nextPageToken;
      return {200, body};
    }
  } else if (segments.size() == 7) {
    auto id = segments[6];
    auto colon = id.find(':');
    auto verb = colon == std::string::npos ? "" : id.substr(colon + 1);
    auto name = where.parent() + "/" + collection + "/" + id.substr(0, colon);
    if (verb.empty() && request.method == "GET") return {200, jobs_.get(name)};
    if (verb.empty() && request.method == "DELETE") return {200, jobs_.remove(name)};
    if (verb == "cancel" && request.method == "POST") {
      jobs_.cancel(name);
      Response cancelled{200, json::object()};
      lostAnswer("cancel", cancelled);
      return cancelled;
    }
  }
  throw ApiError(404, "NOT_FOUND", "No method " + request.method + " " + request.path);
}

Response Emulator::handleLogging(const Request& request) {
  if (!authorized(request)) {
    throw ApiError(401, "UNAUTHENTICATED",
                   "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or "
                   "other valid authentication credential.");
  }
  if (request.path != "/v2/entries:list" || request.method != "POST") {
    throw ApiError(404, "NOT_FOUND", "No method " + request.method + " " + request.path +
                                         "; vto-emulator serves Cloud Logging's POST /v2/entries:list only.");
  }
  auto body = json::parse(request.body.empty() ? "{}" : request.body, nullptr, false);
  if (body.is_discarded()) throw ApiError(400, "INVALID_ARGUMENT", "Invalid JSON payload received. The body is not JSON.");
  if (options_.loggingRequestsPerMinute > 0) {
    // Counted per project named first, every reader together; the answer has no Retry-After.
    std::string project = "-";
    if (auto names = body.find("resourceNames"); names != body.end() && names->is_array() && !names->empty() &&
                                                  (*names)[0].is_string()) {
      project = (*names)[0].get<std::string>();
    }
    std::lock_guard lock(mutex_);
    auto [window, added] = recentLogReads_.try_emplace(project, options_.loggingQuotaWindow);
    if (!window->second.tryRecord(clock_.now(), options_.loggingRequestsPerMinute)) {
      ++stats_["loggingThrottled"];
      throw ApiError(429, "RESOURCE_EXHAUSTED",
                     "Quota exceeded for quota metric 'Read requests' and limit 'Read requests per minute' of service "
                     "'logging.googleapis.com' for consumer '" + project.substr(0, 100) + "'.");
    }
  }
  return {200, logs_.list(body)};
}

Response Emulator::handleCapacity(const Request& request) {
  if (request.method == "POST") {
    auto body = json::parse(request.body, nullptr, false);
    if (body.is_discarded()) throw ApiError(400, "INVALID_ARGUMENT", "The body is not JSON: send a capacity entry.");
    capacity_.add(body);
  } else if (request.method == "DELETE") {
    capacity_.clear();
  } else if (request.method != "GET") {
    throw ApiError(404, "NOT_FOUND", "No control method " + request.method + " /emulator/v1/capacity; use GET, POST or DELETE.");
  }
  return {200, {{"entries", capacity_.entries()}}};
}

Response Emulator::handleControl(const Request& request) {
  auto rest = request.path.substr(std::string("/emulator/v1/").size());
  if (rest == "capacity") return handleCapacity(request);
  if (rest == "stats" && request.method == "GET") {
    json byState = jobs_.countByState();
    std::size_t queued = 0, modelFilesQueued = 0;
    for (auto& writer : writers_) {
      std::lock_guard lock(writer->mutex);
      queued += writer->queue.size();
      modelFilesQueued += writer->modelFiles.size();
    }
    auto logEntries = logs_.size();
    std::lock_guard lock(mutex_);
    json body = stats_;
    body["tokensIssued"] = tokens_.issuedCount();
    body["jobsByState"] = std::move(byState);
    body["checkpointsQueued"] = queued;
    body["modelFilesQueued"] = modelFilesQueued;
    body["logEntries"] = logEntries;
    return {200, body};
  }
  if (rest == "faults" && request.method == "POST") {
    auto body = json::parse(request.body, nullptr, false);
    auto after = body.is_object() ? body.value("after", std::string()) : std::string();
    auto only = body.is_object() ? body.value("only", std::string()) : std::string();
    if (!body.is_object() || (after != "" && after != "create" && after != "cancel") || (only != "" && only != "upload") ||
        (after != "" && only != "")) {
      throw ApiError(400, "INVALID_ARGUMENT",
                     "Expected {\"unavailable\": N, \"throttled\": M} and optionally \"after\": \"create\" or \"cancel\", "
                     "or \"only\": \"upload\".");
    }
    std::lock_guard lock(mutex_);
    failNext_ = body.value("unavailable", 0);
    throttleNext_ = body.value("throttled", 0);
    faultsAfter_ = failNext_ + throttleNext_ > 0 ? after : "";
    faultsOnUploads_ = failNext_ + throttleNext_ > 0 && only == "upload";
    return {200, json::object()};
  }
  auto colon = rest.rfind(':');
  auto name = rest.substr(0, colon);
  auto verb = colon == std::string::npos ? "" : rest.substr(colon + 1);
  if (verb == "trace" && request.method == "GET") return {200, jobs_.trace(name)};
  if (verb == "fail" && request.method == "POST") {
    auto body = json::parse(request.body, nullptr, false);
    if (!body.is_object() || !body.contains("failureClass") || !body["failureClass"].is_string()) {
      throw ApiError(400, "INVALID_ARGUMENT",
                     "Expected {\"failureClass\": \"Preemption\"|\"Stockout\"|\"UserError\"|\"InternalError\"}.");
    }
    // "log": what the training code wrote last, one Cloud Logging entry each (a test's hostile log);
    // an entry is at most 256 KiB, Cloud Logging's own limit.
    std::vector<std::string> output;
    if (body.contains("log")) {
      const auto& log = body["log"];
      bool valid = log.is_array() && log.size() <= 1000 &&
                   std::all_of(log.begin(), log.end(), [](const json& e) { return e.is_string() && e.get_ref<const std::string&>().size() <= kMaxLogEntryBytes; });
      if (!valid) throw ApiError(400, "INVALID_ARGUMENT", "\"log\" must be at most 1000 strings of at most 256 KiB each.");
      for (const auto& entry : log) output.push_back(entry.get<std::string>());
    }
    jobs_.fail(name, parseFailureClass(body["failureClass"].get<std::string>()), std::move(output));
    return {200, jobs_.get(name)};
  }
  throw ApiError(404, "NOT_FOUND",
                 "No control method " + request.method + " " + request.path +
                     "; use GET /emulator/v1/stats, POST /emulator/v1/faults, GET/POST/DELETE /emulator/v1/capacity, "
                     "POST /emulator/v1/{job}:fail or GET /emulator/v1/{job}:trace");
}

namespace {
constexpr std::size_t kMaxQueuedPerWriter = 100000;  // ~300 bytes each: about 30 MB per writer at most
}  // namespace

Emulator::~Emulator() {
  for (auto& writer : writers_) {
    writer->thread.request_stop();
    writer->ready.notify_all();
  }
  writers_.clear();  // joins
}

void Emulator::startCheckpointWriters(int count) {
  for (int i = 0; i < count; ++i) {
    auto writer = std::make_unique<CheckpointWriter>();
    writer->thread = std::jthread([this, w = writer.get()](std::stop_token stop) { runWriter(*w, stop); });
    writers_.push_back(std::move(writer));
  }
}

void Emulator::tick() {
  std::lock_guard tickLock(tickMutex_);
  auto writes = jobs_.advance();
  models_.advance();
  if (checkpoints_ == nullptr) {
    // Nowhere to write model files: the jobs that ran their last step succeed now.
    for (const auto& write : writes) {
      if (write.completesJob) jobs_.artifactsWritten(write.jobName);
    }
    return;
  }
  if (writers_.empty()) {
    std::set<std::string> crashed;
    for (const auto& write : writes) writeCheckpoint(write, crashed);
    return;
  }
  int dropped = 0;
  for (auto& write : writes) {
    auto& writer = *writers_[std::hash<std::string>{}(write.jobName) % writers_.size()];
    std::unique_lock lock(writer.mutex);
    auto& queue = write.modelFile ? writer.modelFiles : writer.queue;
    if (queue.size() >= kMaxQueuedPerWriter) {
      lock.unlock();
      if (!write.modelFile) {
        ++dropped;
        continue;
      }
      {
        std::lock_guard statsLock(mutex_);
        ++stats_["modelFilesDropped"];
      }
      if (write.completesJob) jobs_.artifactsWritten(write.jobName);  // succeeds without its files
      continue;
    }
    queue.push_back(std::move(write));
    writer.ready.notify_one();
  }
  if (dropped == 0) return;
  long total = 0;
  {
    std::lock_guard lock(mutex_);
    total = stats_["checkpointsDropped"] += dropped;
  }
  // Logged when the total passes a power of two: a GCS that stays behind would otherwise log 20 times a second.
  if (std::bit_floor(static_cast<unsigned long>(total)) > std::bit_floor(static_cast<unsigned long>(total - dropped))) {
    spdlog::warn("GCS is behind: {} checkpoint writes dropped so far (checkpointsDropped in /emulator/v1/stats)", total);
  }
}

void Emulator::runWriter(CheckpointWriter& writer, std::stop_token stop) {
  std::set<std::string> crashed;
  while (true) {
    CheckpointWrite write;
    {
      std::unique_lock lock(writer.mutex);
      writer.ready.wait(lock, stop, [&] { return !writer.queue.empty() || !writer.modelFiles.empty(); });
      if (stop.stop_requested()) return;
      auto& queue = writer.modelFiles.empty() ? writer.queue : writer.modelFiles;
      write = std::move(queue.front());
      queue.pop_front();
    }
    if (crashed.size() > 10000) crashed.clear();  // bounded; a crashed job writes nothing new
    writeCheckpoint(write, crashed);
  }
}

void Emulator::writeCheckpoint(const CheckpointWrite& write, std::set<std::string>& crashed) {
  if (crashed.count(write.jobName)) return;
  std::string uri = "gs://" + write.bucket + "/" + write.object;
  std::string what = write.modelFile ? "model file" : "checkpoint";
  try {
    try {
      checkpoints_->upload(write.bucket, write.object, write.content, "application/json");
    } catch (const ApiError& error) {
      if (!error.isNotFound() || !options_.createMissingBuckets) throw;
      checkpoints_->ensureBucket(write.bucket);
      checkpoints_->upload(write.bucket, write.object, write.content, "application/json");
    }
  } catch (const ApiError& error) {
    // Real training code crashes when its output bucket is missing; so does the emulated job.
    if (error.isNotFound()) {
      crashed.insert(write.jobName);
      spdlog::warn("job {} fails: its {} bucket gs://{} does not exist", write.jobName, what, write.bucket);
      // Model files overtake the job's own checkpoints on the writer; with its bucket missing, the real
      // code would have crashed at the first of them, so that is where the job stops.
      jobs_.crash(write.jobName, write.modelFile ? 0 : write.step,
                  "The training code could not write its " + what + " " + uri + ": the bucket gs://" + write.bucket +
                      " does not exist (404). Create the bucket, or set baseOutputDirectory (or "
                      "checkpointing.directory) to a bucket the job can write.");
      return;
    }
    spdlog::warn("cannot write {} {}: {}", what, uri, error.what());
  } catch (const std::exception& error) {
    spdlog::warn("cannot write {} {}: {}", what, uri, error.what());
  }
  // Written, or failed for a reason real training code would retry past: the job succeeds.
  if (write.completesJob) jobs_.artifactsWritten(write.jobName);
}

}  // namespace vto::emulator
