#pragma once
// Vertex AI Model Registry (v1 ModelService) over REST: upload a model version (a long-running
// operation followed with getUploadOperation, never waited for here), read a model or one of its
// versions, list versions by label, move aliases, import and list evaluations. The interface is what
// the reconcilers use (a fake lives in tests/fakes/); RestModelRegistry is the real implementation,
// on the same transport, token source and pacing conventions as RestVertexClient. Field names and
// shapes: third_party/vertex-api/README.md, "Model Registry".
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/gcp_names.h"
#include "vertex/auth.h"
#include "vertex/http_transport.h"
#include "vertex/rate_limiter.h"
#include "vertex/request_observer.h"
#include "vertex/vertex_client.h"

namespace vto::vertex {

// The rules for model IDs and version aliases (isModelId, isVersionAlias and their checks) are in
// base/gcp_names.h, shared with crd/validation.cpp.

// A Model Registry name, parsed with one strict pattern (names come back from Vertex and are stored
// in status, so they are untrusted):
//   projects/P/locations/L/models/M[@V]
//   projects/P/locations/L/models/M/evaluations/E
//   projects/P/locations/L/models/M/operations/O     projects/P/locations/L/operations/O
// P a project ID or number, L a region, M a model ID (isModelId) or a number Vertex assigned, V a
// version ID (a number) or an alias (isVersionAlias), E and O numbers.
struct ModelName {
  Location where;
  std::string modelId;       // empty only for an operation directly under the location
  std::string version;       // after '@': a version ID or an alias; empty: the default version
  std::string evaluationId;  // set for an evaluation
  std::string operationId;   // set for an operation
  // projects/P/locations/L/models/M, without the version.
  std::string model() const;
  // model() plus "@V" when a version is named.
  std::string versioned() const;
};
std::optional<ModelName> parseModelName(std::string_view name);
// projects/P/locations/L/models/M for a checked location and model ID; throws std::invalid_argument.
std::string modelName(const Location& where, std::string_view modelId);

// One version of a Model (a Vertex Model resource).
struct ModelVersion {
  std::string name;       // projects/P/locations/L/models/M, without the version
  std::string versionId;  // "1", "2", ...
  std::vector<std::string> versionAliases;
  std::string displayName;
  std::string artifactUri;
  std::string description;
  std::string versionDescription;
  std::map<std::string, std::string> labels;
  std::optional<Clock::time_point> createTime, versionCreateTime, versionUpdateTime;
  nlohmann::json raw;  // the whole resource, for fields not decoded above
  // name@versionId: the name that reads, or moves aliases on, exactly this version.
  std::string versionName() const { return versionId.empty() ? name : name + "@" + versionId; }
};
// Decodes a Model resource; fields of the wrong type read as absent. A name with "@V" gives the
// version ID when the resource has no versionId of its own.
ModelVersion decodeModelVersion(nlohmann::json resource);

// What the new version is (Model fields as UploadModelRequest.model takes them).
struct ModelSpec {
  std::string displayName;  // required by Vertex
  std::string artifactUri;  // gs:// directory of the artifact
  // ModelContainerSpec as Vertex's JSON, e.g. {"imageUri": "us-docker.pkg.dev/..."}: an object with
  // a string imageUri (required by Vertex for a custom model); passed through as it is.
  nlohmann::json containerSpec = nlohmann::json::object();
  std::vector<std::string> versionAliases;  // each checked with isVersionAlias
  std::map<std::string, std::string> labels;
  std::string description;         // of the model
  std::string versionDescription;  // of this version
};

// models:upload. Exactly one of modelId (the first version: the new model's ID) and parentModel (a
// later version: the model's name, in the same location) is set.
struct UploadModelRequest {
  std::string modelId;
  std::string parentModel;
  ModelSpec model;
  std::string serviceAccount;  // optional: who reads the artifact (default: Vertex's service agent)
};

// What a finished upload made (UploadModelResponse).
struct UploadedVersion {
  std::string model;      // projects/P/locations/L/models/M
  std::string versionId;  // the new version's ID
  std::string versionName() const { return model + "@" + versionId; }
};

// The long-running operation of an upload: while !operation.done, ask again later (getUploadOperation).
// Done with operation.error: the upload failed (error.code is a google.rpc.Code). Done without an
// error: `result` names the version.
struct UploadOperation {
  Operation operation;
  std::optional<UploadedVersion> result;
};

struct ListVersionsOptions {
  std::string filter;  // e.g. modelLabelFilter({{"vto-run-uid", uid}})
  int pageSize = 0;    // 0: the server's default
  std::string pageToken;
  std::string orderBy;  // "create_time desc", "update_time asc", ...; empty: the server's order
};

struct ModelVersionPage {
  std::vector<ModelVersion> versions;
  std::string nextPageToken;  // empty on the last page
};

// labels.K="V" AND ...: a listVersions filter on exact label values. Keys and values must follow
// Google's label rules (keys [a-z][a-z0-9_-]{0,62}, values [a-z0-9_-]{0,63}): anything else throws
// std::invalid_argument, so nothing from a label can change the filter's meaning.
std::string modelLabelFilter(const std::map<std::string, std::string>& labels);

// A ModelEvaluation. `metrics` is any JSON (Vertex's is described by metricsSchemaUri); vto imports
// a flat object of numbers.
struct ModelEvaluation {
  std::string name;  // projects/P/locations/L/models/M/evaluations/E
  std::string displayName;
  std::string metricsSchemaUri;
  nlohmann::json metrics = nlohmann::json::object();
  std::optional<Clock::time_point> createTime;
  nlohmann::json raw;
};
ModelEvaluation decodeModelEvaluation(nlohmann::json resource);

struct EvaluationImport {
  std::string displayName;
  std::string metricsSchemaUri;  // gs:// YAML describing `metrics`
  nlohmann::json metrics = nlohmann::json::object();  // a JSON object, at most kMaxEvaluationMetricsBytes
  nlohmann::json metadata;                            // optional; null: not sent
};
inline constexpr std::size_t kMaxEvaluationMetricsBytes = 64 * 1024;

struct EvaluationPage {
  std::vector<ModelEvaluation> evaluations;
  std::string nextPageToken;
};

class ModelRegistry {
 public:
  virtual ~ModelRegistry() = default;
  // Every method fails fast like VertexClient's: ApiError for an answer that is not success
  // (notFound() for 404), TransportError, QuotaPacingError, AuthError, and ApiError::refusedRequest
  // (not retryable) for a name, ID or alias that fails the checks above, before any request.

  // Starts the upload; the operation is often not done yet: store operation.name and look again
  // later with getUploadOperation (never wait on a worker).
  virtual UploadOperation uploadModel(const Location& where, const UploadModelRequest& request) = 0;
  // GET v1/{operation}: an operation name returned by uploadModel.
  virtual UploadOperation getUploadOperation(const std::string& operationName) = 0;
  // models.get: `name` is a model (its default version), name@versionId or name@alias.
  virtual ModelVersion getModel(const std::string& name) = 0;
  // models:listVersions of a model (no version in `model`).
  virtual ModelVersionPage listVersions(const std::string& model, const ListVersionsOptions& options) = 0;
  // models:mergeVersionAliases on `versionName` (model@versionId: a version ID, not an alias).
  // "alias" adds it to this version (Vertex moves it off any other); "-alias" removes it.
  virtual ModelVersion mergeVersionAliases(const std::string& versionName, const std::vector<std::string>& aliases) = 0;
  // models.evaluations:import under `model` (with "@versionId" to attach it to that version).
  virtual ModelEvaluation importEvaluation(const std::string& model, const EvaluationImport& evaluation) = 0;
  // models.evaluations.list under `model` (with "@versionId": that version's).
  virtual EvaluationPage listEvaluations(const std::string& model, int pageSize, const std::string& pageToken) = 0;
};

struct ModelRegistryOptions {
  // Empty: https://{location}-aiplatform.googleapis.com, the regional endpoint of each request.
  std::string endpoint;
  bool allowInsecure = false;  // plain http only to loopback hosts unless set
  // Requests per minute per project and region, paced as RestVertexClient paces its own. With
  // `pacer` set (RestVertexClient::pacer()), the two clients share one budget, as Vertex counts them:
  // give it the Vertex client's limits.requestsPerMinute then.
  int requestsPerMinute = 600;
  QuotaPacer* pacer = nullptr;
  std::chrono::milliseconds window = std::chrono::minutes(1);  // of a pacer of its own; shorter only in tests
  std::chrono::milliseconds timeout{60000};
  RequestObserver* observer = nullptr;  // told how long the pacer deferred a call
};

class RestModelRegistry final : public ModelRegistry {
 public:
  // Throws std::invalid_argument when options.endpoint is not a trusted endpoint (validateEndpoint).
  RestModelRegistry(HttpTransport& http, TokenSource& tokens, const Clock& clock, ModelRegistryOptions options = {});

  UploadOperation uploadModel(const Location& where, const UploadModelRequest& request) override;
  UploadOperation getUploadOperation(const std::string& operationName) override;
  ModelVersion getModel(const std::string& name) override;
  ModelVersionPage listVersions(const std::string& model, const ListVersionsOptions& options) override;
  ModelVersion mergeVersionAliases(const std::string& versionName, const std::vector<std::string>& aliases) override;
  ModelEvaluation importEvaluation(const std::string& model, const EvaluationImport& evaluation) override;
  EvaluationPage listEvaluations(const std::string& model, int pageSize, const std::string& pageToken) override;

  int requests() const { return requests_.load(); }

 private:
  // The request's URL prefix, `base/v1/projects/P/locations/L`, from checked parts.
  std::string locationUrl(const Location& where) const;
  // locationUrl + "/models/M[@V]" of a parsed name.
  std::string modelUrl(const ModelName& name) const;
  nlohmann::json call(const std::string& method, const Location& where, const std::string& url,
                      const nlohmann::json* body);
  UploadOperation decodeUpload(const nlohmann::json& resource) const;

  HttpTransport& http_;
  TokenSource& tokens_;
  ModelRegistryOptions options_;
  std::unique_ptr<QuotaPacer> ownPacer_;
  QuotaPacer& pacer_;
  std::atomic<int> requests_{0};
};

}  // namespace vto::vertex
