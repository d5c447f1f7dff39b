#include "vertex/model_registry.h"

#include <algorithm>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "base/gcp_names.h"
#include "base/url.h"
#include "vertex/api_error.h"
#include "vertex/google_rest.h"
#include "vertex/json_codec.h"

namespace vto::vertex {
namespace {

using nlohmann::json;

const char* kModelNameForm =
    "expected projects/PROJECT/locations/REGION/models/MODEL[@VERSION] (MODEL a model ID, VERSION a version ID "
    "or an alias), as Vertex returns them";
const char* kOperationNameForm =
    "expected projects/PROJECT/locations/REGION/models/MODEL/operations/ID or "
    "projects/PROJECT/locations/REGION/operations/ID (ID a number), as models:upload returns them";

std::string quotedExcerpt(std::string_view value) { return "\"" + std::string(value.substr(0, 64)) + "\""; }

// "M" or "M@V" as a name's model segment.
bool splitModelSegment(std::string_view segment, std::string& modelId, std::string& version) {
  auto at = segment.find('@');
  auto id = segment.substr(0, at);
  if (!isModelId(id) && !isDecimalId(id)) return false;
  modelId = id;
  version.clear();
  if (at == std::string_view::npos) return true;
  auto v = segment.substr(at + 1);
  if (!isDecimalId(v) && !isVersionAlias(v)) return false;
  version = v;
  return true;
}

ApiError refused(const std::string& what, const std::string& name, const char* form) {
  return ApiError::refusedRequest("\"" + name.substr(0, 200) + "\" is not " + what + "; " + form);
}

// A model name for a request: a model (with a version only when `versionAllowed`), never a child.
ModelName parseModelOrRefuse(const std::string& name, bool versionAllowed) {
  auto parsed = parseModelName(name);
  if (!parsed || parsed->modelId.empty() || !parsed->operationId.empty() || !parsed->evaluationId.empty() ||
      (!versionAllowed && !parsed->version.empty())) {
    throw refused(versionAllowed ? "a Vertex model name" : "a Vertex model name without a version", name,
                  kModelNameForm);
  }
  return *parsed;
}

std::vector<std::string> stringList(const json& object, const char* field) {
  std::vector<std::string> values;
  if (!object.is_object()) return values;
  auto it = object.find(field);
  if (it == object.end() || !it->is_array()) return values;
  for (const auto& value : *it) {
    if (value.is_string()) values.push_back(value.get<std::string>());
  }
  return values;
}

// A version whose name or ID vto would not accept back cannot be stored in status or read again.
bool hasValidName(const ModelVersion& version) {
  auto parsed = parseModelName(version.name);
  return parsed && !parsed->modelId.empty() && parsed->version.empty() && parsed->operationId.empty() &&
         parsed->evaluationId.empty() && isDecimalId(version.versionId);
}

bool isEvaluationName(const std::string& name) {
  auto parsed = parseModelName(name);
  return parsed && !parsed->evaluationId.empty();
}

ModelVersion requireValidName(ModelVersion version) {
  if (!hasValidName(version)) {
    throw ApiError::unexpectedResponse(200, version.raw.dump(), "the model has no valid name and version ID");
  }
  return version;
}

void checkSpec(const ModelSpec& spec) {
  if (spec.displayName.empty() || spec.displayName.size() > 128) {
    throw ApiError::refusedRequest("model.displayName must be 1 to 128 characters");
  }
  if (!spec.containerSpec.is_object() || !spec.containerSpec.contains("imageUri") ||
      !spec.containerSpec["imageUri"].is_string() || spec.containerSpec["imageUri"].get_ref<const std::string&>().empty()) {
    throw ApiError::refusedRequest(
        "model.containerSpec must be an object with an imageUri, the serving image (e.g. "
        "us-docker.pkg.dev/vertex-ai/prediction/xgboost-cpu.1-7:latest)");
  }
  for (const auto& alias : spec.versionAliases) {
    if (auto problem = checkVersionAlias("model.versionAliases[]", alias)) throw ApiError::refusedRequest(*problem);
  }
}

json specJson(const ModelSpec& spec) {
  json model = {{"displayName", spec.displayName}, {"containerSpec", spec.containerSpec}};
  if (!spec.artifactUri.empty()) model["artifactUri"] = spec.artifactUri;
  if (!spec.versionAliases.empty()) model["versionAliases"] = spec.versionAliases;
  if (!spec.labels.empty()) model["labels"] = spec.labels;
  if (!spec.description.empty()) model["description"] = spec.description;
  if (!spec.versionDescription.empty()) model["versionDescription"] = spec.versionDescription;
  return model;
}

}  // namespace

std::string ModelName::model() const {
  return where.parent() + "/models/" + modelId;
}

std::string ModelName::versioned() const { return version.empty() ? model() : model() + "@" + version; }

std::optional<ModelName> parseModelName(std::string_view name) {
  auto located = splitLocatedName(name, 4);
  if (!located) return std::nullopt;
  const auto& rest = located->rest;
  ModelName parsed;
  parsed.where = located->where;
  if (rest.size() == 2 && rest[0] == "operations") {
    if (!isDecimalId(rest[1])) return std::nullopt;
    parsed.operationId = rest[1];
    return parsed;
  }
  if (rest.size() < 2 || rest[0] != "models" || !splitModelSegment(rest[1], parsed.modelId, parsed.version)) {
    return std::nullopt;
  }
  if (rest.size() == 2) return parsed;
  if (rest.size() != 4 || !isDecimalId(rest[3])) return std::nullopt;
  if (rest[2] == "evaluations") {
    parsed.evaluationId = rest[3];
    return parsed;
  }
  if (rest[2] == "operations" && parsed.version.empty()) {
    parsed.operationId = rest[3];
    return parsed;
  }
  return std::nullopt;
}

std::string modelName(const Location& where, std::string_view modelId) {
  checkLocation(where);
  if (auto problem = checkModelId("model", modelId)) throw std::invalid_argument(*problem);
  return ModelName{where, std::string(modelId), "", "", ""}.model();
}

ModelVersion decodeModelVersion(json resource) {
  ModelVersion version;
  if (!resource.is_object()) return version;
  version.name = stringField(resource, "name");
  version.versionId = stringField(resource, "versionId");
  if (auto parsed = parseModelName(version.name); parsed && !parsed->version.empty() && parsed->evaluationId.empty()) {
    // listVersions names each version "M@versionId".
    version.name = parsed->model();
    if (version.versionId.empty() && isDecimalId(parsed->version)) version.versionId = parsed->version;
  }
  version.versionAliases = stringList(resource, "versionAliases");
  version.displayName = stringField(resource, "displayName");
  version.artifactUri = stringField(resource, "artifactUri");
  version.description = stringField(resource, "description");
  version.versionDescription = stringField(resource, "versionDescription");
  version.labels = stringMapField(resource, "labels");
  version.createTime = timeField(resource, "createTime");
  version.versionCreateTime = timeField(resource, "versionCreateTime");
  version.versionUpdateTime = timeField(resource, "versionUpdateTime");
  version.raw = std::move(resource);
  return version;
}

ModelEvaluation decodeModelEvaluation(json resource) {
  ModelEvaluation evaluation;
  if (!resource.is_object()) return evaluation;
  evaluation.name = stringField(resource, "name");
  evaluation.displayName = stringField(resource, "displayName");
  evaluation.metricsSchemaUri = stringField(resource, "metricsSchemaUri");
  if (auto metrics = resource.find("metrics"); metrics != resource.end()) evaluation.metrics = *metrics;
  evaluation.createTime = timeField(resource, "createTime");
  evaluation.raw = std::move(resource);
  return evaluation;
}

std::string modelLabelFilter(const std::map<std::string, std::string>& labels) {
  std::string filter;
  for (const auto& [key, value] : labels) {
    if (!isValidGcpLabelKey(key)) {
      throw std::invalid_argument("label key " + quotedExcerpt(key) +
                                  " is not a Google label key ([a-z][a-z0-9_-]{0,62}); it cannot go into a filter");
    }
    if (!isValidGcpLabelValue(value)) {
      throw std::invalid_argument("label value " + quotedExcerpt(value) +
                                  " is not a Google label value ([a-z0-9_-]{0,63}); it cannot go into a filter");
    }
    if (!filter.empty()) filter += " AND ";
    filter += "labels." + key + "=\"" + value + "\"";
  }
  return filter;
}

RestModelRegistry::RestModelRegistry(HttpTransport& http, TokenSource& tokens, const Clock& clock,
                                     ModelRegistryOptions options)
    : http_(http),
      tokens_(tokens),
      options_(std::move(options)),
      ownPacer_(options_.pacer == nullptr ? std::make_unique<QuotaPacer>(clock, options_.window) : nullptr),
      pacer_(options_.pacer != nullptr ? *options_.pacer : *ownPacer_) {
  while (!options_.endpoint.empty() && options_.endpoint.back() == '/') options_.endpoint.pop_back();
  if (!options_.endpoint.empty()) validateEndpoint(options_.endpoint, options_.allowInsecure);
}

std::string RestModelRegistry::locationUrl(const Location& where) const {
  return vertexLocationUrl(options_.endpoint, where).str();
}

std::string RestModelRegistry::modelUrl(const ModelName& name) const {
  // The model ID and the version are checked ([a-z0-9_-], [a-zA-Z0-9-]): '@' stays literal, as
  // Google's own clients send it ({+name} is a reserved expansion).
  auto url = UrlBuilder(locationUrl(name.where)).segment("models").segment(name.modelId).str();
  return name.version.empty() ? url : url + "@" + name.version;
}

json RestModelRegistry::call(const std::string& method, const Location& where, const std::string& url,
                             const json* body) {
  paceOrThrow(pacer_, requestQuotaKey(where), options_.requestsPerMinute, options_.observer);
  return callGoogleJson(http_, tokens_, {method, url, {}, "", options_.timeout, 0}, body, &requests_);
}

UploadOperation RestModelRegistry::decodeUpload(const json& resource) const {
  UploadOperation upload{decodeOperation(resource), std::nullopt};
  auto parsed = parseModelName(upload.operation.name);
  // Stored in status and asked for again: it must be a name vto accepts back.
  if (!parsed || parsed->operationId.empty()) {
    throw ApiError::unexpectedResponse(200, resource.dump(), "the upload operation has no valid name");
  }
  if (!upload.operation.done || upload.operation.error) return upload;
  const auto response = resource.value("response", json::object());
  UploadedVersion version{stringField(response, "model"), stringField(response, "modelVersionId")};
  auto model = parseModelName(version.model);
  if (!model || model->modelId.empty() || !model->version.empty() || !model->operationId.empty() ||
      !model->evaluationId.empty() || !isDecimalId(version.versionId)) {
    throw ApiError::unexpectedResponse(200, resource.dump(),
                                       "the finished upload names no valid model and modelVersionId");
  }
  upload.result = std::move(version);
  return upload;
}

UploadOperation RestModelRegistry::uploadModel(const Location& where, const UploadModelRequest& request) {
  json body = json::object();
  if (request.modelId.empty() == request.parentModel.empty()) {
    throw ApiError::refusedRequest(
        "models:upload takes exactly one of modelId (the first version of a new model) and parentModel (a new "
        "version of an existing model)");
  }
  if (!request.modelId.empty()) {
    if (auto problem = checkModelId("modelId", request.modelId)) throw ApiError::refusedRequest(*problem);
    body["modelId"] = request.modelId;
  } else {
    auto parent = parseModelOrRefuse(request.parentModel, /*versionAllowed=*/false);
    if (parent.where.parent() != where.parent()) {
      throw ApiError::refusedRequest("parentModel " + request.parentModel.substr(0, 200) + " is not in " +
                                     where.parent() + ", where the version is uploaded");
    }
    body["parentModel"] = parent.model();
  }
  checkSpec(request.model);
  body["model"] = specJson(request.model);
  if (!request.serviceAccount.empty()) body["serviceAccount"] = request.serviceAccount;
  auto url = UrlBuilder(locationUrl(where)).literal("models").verb("upload").str();
  return decodeUpload(call("POST", where, url, &body));
}

UploadOperation RestModelRegistry::getUploadOperation(const std::string& operationName) {
  auto parsed = parseModelName(operationName);
  if (!parsed || parsed->operationId.empty()) throw refused("a Vertex operation name", operationName, kOperationNameForm);
  auto base = parsed->modelId.empty() ? locationUrl(parsed->where) : modelUrl(*parsed);
  auto url = UrlBuilder(base).literal("operations").segment(parsed->operationId).str();
  return decodeUpload(call("GET", parsed->where, url, nullptr));
}

ModelVersion RestModelRegistry::getModel(const std::string& name) {
  auto parsed = parseModelOrRefuse(name, /*versionAllowed=*/true);
  return requireValidName(decodeModelVersion(call("GET", parsed.where, modelUrl(parsed), nullptr)));
}

ModelVersionPage RestModelRegistry::listVersions(const std::string& model, const ListVersionsOptions& options) {
  auto parsed = parseModelOrRefuse(model, /*versionAllowed=*/false);
  UrlBuilder url(modelUrl(parsed));
  url.verb("listVersions");
  if (!options.filter.empty()) url.query("filter", options.filter);
  if (options.pageSize > 0) url.query("pageSize", std::to_string(options.pageSize));
  if (!options.pageToken.empty()) url.query("pageToken", options.pageToken);
  if (!options.orderBy.empty()) url.query("orderBy", options.orderBy);
  auto response = call("GET", parsed.where, url.str(), nullptr);
  ModelVersionPage page;
  if (auto items = response.find("models"); items != response.end() && items->is_array()) {
    int skipped = 0;
    for (auto& item : *items) {
      auto version = decodeModelVersion(std::move(item));
      if (!hasValidName(version)) {
        ++skipped;  // a version without a valid name and ID can be neither stored nor read again
        continue;
      }
      page.versions.push_back(std::move(version));
    }
    if (skipped > 0) spdlog::warn("vertex listVersions {}: skipped {} versions without a valid name", model, skipped);
  }
  page.nextPageToken = stringField(response, "nextPageToken");
  return page;
}

ModelVersion RestModelRegistry::mergeVersionAliases(const std::string& versionName,
                                                    const std::vector<std::string>& aliases) {
  auto parsed = parseModelOrRefuse(versionName, /*versionAllowed=*/true);
  if (!isDecimalId(parsed.version)) {
    throw refused("a model version name with a version ID (MODEL@7)", versionName, kModelNameForm);
  }
  if (aliases.empty()) throw ApiError::refusedRequest("mergeVersionAliases needs at least one alias");
  for (const auto& alias : aliases) {
    std::string_view bare = alias;
    if (!bare.empty() && bare.front() == '-') bare.remove_prefix(1);  // "-alias" removes it
    if (auto problem = checkVersionAlias("versionAliases[]", bare)) throw ApiError::refusedRequest(*problem);
  }
  json body = {{"versionAliases", aliases}};
  auto url = modelUrl(parsed) + ":mergeVersionAliases";
  return requireValidName(decodeModelVersion(call("POST", parsed.where, url, &body)));
}

ModelEvaluation RestModelRegistry::importEvaluation(const std::string& model, const EvaluationImport& evaluation) {
  auto parsed = parseModelOrRefuse(model, /*versionAllowed=*/true);
  if (!evaluation.metrics.is_object()) {
    throw ApiError::refusedRequest("the evaluation's metrics must be a JSON object, e.g. {\"auc\": 0.91}");
  }
  if (evaluation.metrics.dump().size() > kMaxEvaluationMetricsBytes) {
    throw ApiError::refusedRequest("the evaluation's metrics are larger than 64 KiB; import a summary");
  }
  json imported = {{"metrics", evaluation.metrics}};
  if (!evaluation.displayName.empty()) imported["displayName"] = evaluation.displayName;
  if (!evaluation.metricsSchemaUri.empty()) imported["metricsSchemaUri"] = evaluation.metricsSchemaUri;
  if (!evaluation.metadata.is_null()) imported["metadata"] = evaluation.metadata;
  json body = {{"modelEvaluation", std::move(imported)}};
  auto url = UrlBuilder(modelUrl(parsed)).literal("evaluations").verb("import").str();
  auto result = decodeModelEvaluation(call("POST", parsed.where, url, &body));
  if (!isEvaluationName(result.name)) {
    throw ApiError::unexpectedResponse(200, result.raw.dump(), "the imported evaluation has no valid name");
  }
  return result;
}

EvaluationPage RestModelRegistry::listEvaluations(const std::string& model, int pageSize, const std::string& pageToken) {
  auto parsed = parseModelOrRefuse(model, /*versionAllowed=*/true);
  UrlBuilder url(modelUrl(parsed));
  url.literal("evaluations");
  if (pageSize > 0) url.query("pageSize", std::to_string(pageSize));
  if (!pageToken.empty()) url.query("pageToken", pageToken);
  auto response = call("GET", parsed.where, url.str(), nullptr);
  EvaluationPage page;
  if (auto items = response.find("modelEvaluations"); items != response.end() && items->is_array()) {
    for (auto& item : *items) {
      auto evaluation = decodeModelEvaluation(std::move(item));
      if (isEvaluationName(evaluation.name)) page.evaluations.push_back(std::move(evaluation));
    }
  }
  page.nextPageToken = stringField(response, "nextPageToken");
  return page;
}

}  // namespace vto::vertex
