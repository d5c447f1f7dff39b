#include "emulator/model_registry.h"

#include <algorithm>
#include <regex>
#include <set>

#include "base/rfc3339.h"
#include "emulator/list_filter.h"
#include "emulator/listing.h"
#include "emulator/schema_validator.h"
#include "vertex/api_error.h"

namespace vto::emulator {
namespace {

using nlohmann::json;
using vertex::ApiError;

constexpr long long kFirstId = 1000000000000000000LL;  // IDs look like Vertex's: 19 decimal digits
constexpr std::size_t kMaxEvaluationsPerVersion = 1000;
constexpr const char* kDefaultAlias = "default";

ApiError notFound(const std::string& what) { return ApiError(404, "NOT_FOUND", what); }
ApiError invalid(const std::string& message) { return ApiError(400, "INVALID_ARGUMENT", message); }

// Vertex's alias rule as Model.versionAliases documents it: [a-z][a-z0-9-]{0,126}[a-z0-9], so never a
// version ID, never upper case, never a trailing hyphen.
void checkAlias(const std::string& alias) {
  static const std::regex rule("[a-z][a-z0-9-]{0,126}[a-z0-9]");
  if (!std::regex_match(alias, rule)) {
    throw invalid("Version alias \"" + alias.substr(0, 200) +
                  "\" is invalid: it must match [a-z][a-z0-9-]{0,126}[a-z0-9] (start with a lower-case letter, "
                  "2 to 128 lower-case letters, digits and hyphens, end with a lower-case letter or digit).");
  }
}

// The metric names of the schemas Google's own importers send (gs://google-cloud-aiplatform/schema/
// modelevaluation/*_metrics_1.0.0.yaml, the ClassificationEvaluationMetrics, RegressionEvaluationMetrics
// and ForecastingEvaluationMetrics messages): metrics naming anything else are refused.
const std::map<std::string, std::set<std::string>>& knownSchemas() {
  static const std::map<std::string, std::set<std::string>> schemas = {
      {"gs://google-cloud-aiplatform/schema/modelevaluation/classification_metrics_1.0.0.yaml",
       {"auPrc", "auRoc", "logLoss", "confidenceMetrics", "confusionMatrix"}},
      {"gs://google-cloud-aiplatform/schema/modelevaluation/regression_metrics_1.0.0.yaml",
       {"rootMeanSquaredError", "meanAbsoluteError", "meanAbsolutePercentageError", "rSquared",
        "rootMeanSquaredLogError"}},
      {"gs://google-cloud-aiplatform/schema/modelevaluation/forecasting_metrics_1.0.0.yaml",
       {"rootMeanSquaredError", "meanAbsoluteError", "meanAbsolutePercentageError", "rSquared",
        "rootMeanSquaredLogError", "weightedAbsolutePercentageError", "rootMeanSquaredPercentageError",
        "symmetricMeanAbsolutePercentageError", "quantileMetrics"}},
  };
  return schemas;
}

// Real output shows "400 Invalid Metrics Format" for metrics a schema does not describe; an import
// without a schema is refused the same way (every Google importer sends one).
void checkMetricsFormat(const json& evaluation) {
  auto uri = evaluation.value("metricsSchemaUri", std::string());
  if (uri.empty()) {
    throw invalid("Invalid Metrics Format: the ModelEvaluation has no metricsSchemaUri to read its metrics with.");
  }
  auto schema = knownSchemas().find(uri);
  if (schema == knownSchemas().end()) {
    if (uri.rfind("gs://", 0) != 0) throw invalid("Invalid Metrics Format: metricsSchemaUri \"" + uri.substr(0, 200) + "\" is not a gs:// URI.");
    return;  // a user's own schema: the emulator cannot read it, so it trusts it
  }
  const auto& metrics = evaluation.contains("metrics") ? evaluation["metrics"] : json::object();
  if (!metrics.is_object()) throw invalid("Invalid Metrics Format: metrics must be an object.");
  for (const auto& [name, value] : metrics.items()) {
    if (!schema->second.count(name)) {
      throw invalid("Invalid Metrics Format: \"" + name.substr(0, 100) + "\" is not a metric of " + uri + ".");
    }
  }
}

bool isVersionId(const std::string& text) {
  return !text.empty() && text.size() < 10 && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool hasAlias(const json& resource, const std::string& alias) {
  const auto& aliases = resource["versionAliases"];
  return std::find(aliases.begin(), aliases.end(), alias) != aliases.end();
}

void touch(json& resource, Clock::time_point now) {
  resource["updateTime"] = rfc3339Millis(now);
  resource["versionUpdateTime"] = rfc3339Millis(now);
}

std::string queryValue(const std::map<std::string, std::string>& query, const std::string& name) {
  auto found = query.find(name);
  return found == query.end() ? "" : found->second;
}

// {"<collection>": page, "nextPageToken": ...} for the items from the request's page token on.
json page(const std::vector<const json*>& items, const char* collection, const std::map<std::string, std::string>& query,
          const std::vector<std::vector<std::string>>& readMask = {}) {
  auto offset = pageOffset(queryValue(query, "pageToken"));
  auto size = pageSizeOf(pageSizeParameter(query));
  json body = {{collection, json::array()}};
  for (auto i = offset; i < items.size() && i < offset + size; ++i) body[collection].push_back(applyReadMask(*items[i], readMask));
  if (offset + size < items.size()) body["nextPageToken"] = pageToken(offset + size);
  return body;
}

}  // namespace

ModelRegistry::ModelRegistry(const Clock& clock, std::chrono::milliseconds uploadTime, RegistryBehaviour behaviour)
    : clock_(clock), uploadTime_(uploadTime), behaviour_(behaviour) {}

Response ModelRegistry::handle(const Request& request, const vto::Location& where, const std::vector<std::string>& rest) {
  std::lock_guard lock(mutex_);
  completeDue(clock_.now());  // so that a request sees what the clock says, ticked or not

  const auto& method = request.method;
  if (rest.size() == 1 && rest[0] == "models:upload" && method == "POST") return {200, upload(where, request.body)};
  if (rest.empty() || rest[0] != "models" || rest.size() < 2) {
    throw notFound("No method " + method + " " + request.path + " in vto-emulator's Model Registry.");
  }
  // models/ID[@VERSION][:verb]
  auto colon = rest[1].find(':');
  auto verb = colon == std::string::npos ? "" : rest[1].substr(colon + 1);
  auto reference = rest[1].substr(0, colon);
  auto at = reference.find('@');
  auto version = at == std::string::npos ? "" : reference.substr(at + 1);
  auto model = where.parent() + "/models/" + reference.substr(0, at);
  if (rest.size() == 2) {
    if (verb.empty() && method == "GET") return {200, find(model, version).resource};
    if (verb == "listVersions" && method == "GET") return {200, listVersions(model, request.query)};
    if (verb == "mergeVersionAliases" && method == "POST") return {200, mergeVersionAliases(model, version, request.body)};
  } else if (rest.size() == 3 && verb.empty()) {
    if (rest[2] == "evaluations:import" && method == "POST") return {200, importEvaluation(model, version, request.body)};
    if (rest[2] == "evaluations" && method == "GET") return {200, listEvaluations(model, version, request.query)};
  } else if (rest.size() == 4 && verb.empty() && version.empty() && method == "GET") {
    if (rest[2] == "evaluations") return {200, evaluation(model, rest[3])};
    if (rest[2] == "operations") {
      auto found = operations_.find(model + "/operations/" + rest[3]);
      if (found == operations_.end()) throw notFound("Operation \"" + model + "/operations/" + rest[3] + "\" was not found.");
      return {200, found->second};
    }
  }
  throw notFound("No method " + method + " " + request.path + " in vto-emulator's Model Registry.");
}

void ModelRegistry::advance() {
  std::lock_guard lock(mutex_);
  completeDue(clock_.now());
}

void ModelRegistry::completeDue(Clock::time_point now) {
  for (auto& upload : pending_) {
    if (upload.doneAt <= now) complete(upload, upload.doneAt);
  }
  std::erase_if(pending_, [&](const PendingUpload& upload) { return upload.doneAt <= now; });
}

json ModelRegistry::upload(const vto::Location& where, const std::string& body) {
  auto request = parseRequestBody(body, "GoogleCloudAiplatformV1UploadModelRequest");
  auto resource = request["model"];
  resource.erase("name");  // the name comes from modelId or parentModel
  for (const auto& alias : resource.value("versionAliases", json::array())) checkAlias(alias.get<std::string>());
  auto parentModel = request.value("parentModel", std::string());
  auto modelId = request.value("modelId", std::string());
  auto prefix = where.parent() + "/models/";

  std::string name;
  if (!parentModel.empty()) {
    auto id = parentModel.rfind(prefix, 0) == 0 ? parentModel.substr(prefix.size()) : "";
    if (id.empty() || id.find_first_of("/@") != std::string::npos) {
      throw invalid("parentModel \"" + parentModel.substr(0, 200) + "\" must be a model of " + where.parent() +
                    ", e.g. " + prefix + "my-model (without a version).");
    }
    if (!modelId.empty() && modelId != id) {
      throw invalid("modelId \"" + modelId + "\" differs from the ID of parentModel \"" + parentModel +
                    "\"; leave modelId empty when uploading a version.");
    }
    auto found = models_.find(parentModel);
    if (found == models_.end() || found->second.versions.empty()) {
      throw notFound("The parent model \"" + parentModel + "\" was not found; upload its first version without parentModel.");
    }
    name = parentModel;
  } else {
    if (!modelId.empty()) {
      static const std::regex rule("[a-z_][a-z0-9_-]{0,62}");
      if (!std::regex_match(modelId, rule)) {
        throw invalid("modelId \"" + modelId.substr(0, 100) +
                      "\" is invalid: up to 63 characters of [a-z0-9_-], not starting with a digit or a hyphen.");
      }
    }
    name = prefix + (modelId.empty() ? std::to_string(kFirstId + nextId_++) : modelId);
    if (models_.count(name)) {
      throw ApiError(409, "ALREADY_EXISTS",
                     "Model \"" + name + "\" already exists; to add a version, upload with parentModel \"" + name + "\".");
    }
  }
  auto& model = models_[name];
  auto now = clock_.now();
  auto operationName = name + "/operations/" + std::to_string(kFirstId + nextId_++);
  json operation = {{"name", operationName},
                    {"metadata",
                     {{"@type", "type.googleapis.com/google.cloud.aiplatform.v1.UploadModelOperationMetadata"},
                      {"genericMetadata", {{"createTime", rfc3339Millis(now)}, {"updateTime", rfc3339Millis(now)}}}}},
                    {"done", false}};
  operations_[operationName] = operation;
  pending_.push_back({operationName, name, model.nextVersion++, std::move(resource), now + uploadTime_});
  return operation;
}

void ModelRegistry::complete(PendingUpload& upload, Clock::time_point at) {
  auto& model = models_[upload.model];
  auto own = upload.resource.value("labels", json::object());
  if (model.versions.empty()) {
    model.created = at;
    model.labels = own;
  }
  auto aliases = upload.resource.value("versionAliases", json::array());
  json resource = std::move(upload.resource);
  json labels = behaviour_.modelLabelsWin ? own : model.labels;
  for (const auto& [key, value] : (behaviour_.modelLabelsWin ? model.labels : own).items()) labels[key] = value;
  if (!labels.empty()) resource["labels"] = labels;
  resource["name"] = upload.model;
  resource["versionId"] = std::to_string(upload.versionId);
  resource["versionAliases"] = json::array();
  resource["createTime"] = rfc3339Millis(model.created);
  resource["versionCreateTime"] = rfc3339Millis(at);
  touch(resource, at);
  resource["modelSourceInfo"] = {{"sourceType", "CUSTOM"}};
  if (resource.contains("containerSpec")) resource["supportedDeploymentResourcesTypes"] = {"DEDICATED_RESOURCES"};
  auto& version = model.versions[upload.versionId];
  version.resource = std::move(resource);
  bool hasDefault = std::any_of(model.versions.begin(), model.versions.end(),
                                [](const auto& entry) { return hasAlias(entry.second.resource, kDefaultAlias); });
  if (!hasDefault) moveAlias(model, version, kDefaultAlias, at);
  for (const auto& alias : aliases) moveAlias(model, version, alias.get<std::string>(), at);

  auto& operation = operations_[upload.operation];
  operation["done"] = true;
  operation["metadata"]["genericMetadata"]["updateTime"] = rfc3339Millis(at);
  operation["response"] = {{"@type", "type.googleapis.com/google.cloud.aiplatform.v1.UploadModelResponse"},
                           {"model", upload.model},
                           {"modelVersionId", std::to_string(upload.versionId)}};
}

void ModelRegistry::moveAlias(Model& model, Version& version, const std::string& alias, Clock::time_point now) {
  for (auto& [id, other] : model.versions) {
    if (&other == &version || !hasAlias(other.resource, alias)) continue;
    auto& aliases = other.resource["versionAliases"];
    aliases.erase(std::remove(aliases.begin(), aliases.end(), alias), aliases.end());
    touch(other.resource, now);
  }
  if (!hasAlias(version.resource, alias)) {
    version.resource["versionAliases"].push_back(alias);
    touch(version.resource, now);
  }
}

ModelRegistry::Version& ModelRegistry::find(const std::string& model, const std::string& reference) {
  return const_cast<Version&>(std::as_const(*this).find(model, reference));
}

const ModelRegistry::Version& ModelRegistry::find(const std::string& model, const std::string& reference) const {
  auto found = models_.find(model);
  if (found == models_.end() || found->second.versions.empty()) throw notFound("The Model \"" + model + "\" was not found.");
  const auto& versions = found->second.versions;
  if (isVersionId(reference)) {
    auto version = versions.find(std::stoi(reference));
    if (version != versions.end()) return version->second;
  } else {
    auto alias = reference.empty() ? std::string(kDefaultAlias) : reference;
    for (const auto& [id, version] : versions) {
      if (hasAlias(version.resource, alias)) return version;
    }
  }
  throw notFound("The Model \"" + model + "@" + reference + "\" was not found: the model has no version " +
                 (isVersionId(reference) ? "" : "with alias ") + reference + ".");
}

json ModelRegistry::listVersions(const std::string& model, const std::map<std::string, std::string>& query) const {
  find(model, "");  // NOT_FOUND for a model without versions
  ListFilter filter;
  try {
    filter = ListFilter::parse(queryValue(query, "filter"));
  } catch (const std::invalid_argument& error) {
    throw invalid(error.what());
  }
  if (!filter.onlyLabels()) {
    throw invalid("filter \"" + queryValue(query, "filter") +
                  "\": ListModelVersions filters on labels only: labels.KEY=\"VALUE\", labels.KEY:*, joined by AND.");
  }
  std::vector<std::vector<std::string>> readMask;
  if (auto mask = queryValue(query, "readMask"); !mask.empty()) {
    try {
      readMask = SchemaValidator::vertexV1().fieldMask(mask, "GoogleCloudAiplatformV1Model");
    } catch (const ValidationError& error) {
      throw invalid(error.what());
    }
  }
  std::vector<const json*> versions;
  for (const auto& [id, version] : models_.at(model).versions) {
    if (filter.matches(version.resource)) versions.push_back(&version.resource);
  }
  // orderBy: create_time or update_time, ascending unless followed by desc; default: by version ID.
  static const std::regex order(R"(\s*(create_time|createTime|update_time|updateTime)(\s+(asc|desc))?\s*)");
  std::smatch match;
  auto orderBy = queryValue(query, "orderBy");
  if (!orderBy.empty()) {
    if (!std::regex_match(orderBy, match, order)) {
      throw invalid("orderBy \"" + orderBy + "\" is not supported; use create_time or update_time, optionally followed by desc.");
    }
    auto field = match[1].str().rfind("create", 0) == 0 ? "versionCreateTime" : "versionUpdateTime";
    bool descending = match[3].str() == "desc";
    std::stable_sort(versions.begin(), versions.end(), [&](const json* a, const json* b) {
      auto left = parseRfc3339((*a)[field].get<std::string>()), right = parseRfc3339((*b)[field].get<std::string>());
      return descending ? left > right : left < right;
    });
  }
  // Each version is named M@versionId in a list, as Vertex lists them.
  auto body = page(versions, "models", query, readMask);
  for (auto& item : body["models"]) {
    if (item.contains("name") && item.contains("versionId")) {
      item["name"] = item["name"].get<std::string>() + "@" + item["versionId"].get<std::string>();
    }
  }
  return body;
}

json ModelRegistry::mergeVersionAliases(const std::string& modelName, const std::string& versionId, const std::string& body) {
  if (!isVersionId(versionId)) {
    throw invalid("The name \"" + modelName + (versionId.empty() ? "" : "@" + versionId) +
                  "\" must include a version ID, e.g. " + modelName + "@1.");
  }
  auto& version = find(modelName, versionId);
  auto request = parseRequestBody(body, "GoogleCloudAiplatformV1MergeVersionAliasesRequest");
  std::vector<std::string> added, removed;
  for (const auto& item : request["versionAliases"]) {
    auto alias = item.get<std::string>();
    bool removal = !alias.empty() && alias[0] == '-';
    if (removal) alias.erase(0, 1);
    checkAlias(alias);
    if (removal && alias == kDefaultAlias) {
      throw invalid("The alias \"default\" cannot be removed: it is always on one version. Add it to another version instead.");
    }
    (removal ? removed : added).push_back(alias);
  }
  // Adding and removing the same alias cancel out, as Vertex documents.
  auto both = [&](const std::string& alias) {
    return std::count(added.begin(), added.end(), alias) && std::count(removed.begin(), removed.end(), alias);
  };
  auto now = clock_.now();
  auto& model = models_.at(modelName);
  if (behaviour_.strictAliasMove) {
    for (const auto& alias : added) {
      if (both(alias) || alias == kDefaultAlias) continue;  // "default" can only move: it is never removed
      for (const auto& [id, other] : model.versions) {
        if (&other != &version && hasAlias(other.resource, alias)) {
          throw ApiError(400, "FAILED_PRECONDITION",
                         "The alias \"" + alias + "\" is already on version " + std::to_string(id) + " of " + modelName +
                             "; remove it there first (\"-" + alias + "\").");
        }
      }
    }
  }
  for (const auto& alias : removed) {
    auto& aliases = version.resource["versionAliases"];
    if (both(alias) || !hasAlias(version.resource, alias)) continue;
    aliases.erase(std::remove(aliases.begin(), aliases.end(), alias), aliases.end());
    touch(version.resource, now);
  }
  for (const auto& alias : added) {
    if (!both(alias)) moveAlias(model, version, alias, now);
  }
  return version.resource;
}

json ModelRegistry::importEvaluation(const std::string& model, const std::string& versionRef, const std::string& body) {
  auto& version = find(model, versionRef);
  auto request = parseRequestBody(body, "GoogleCloudAiplatformV1ImportModelEvaluationRequest");
  if (version.evaluations.size() >= kMaxEvaluationsPerVersion) {
    throw ApiError(400, "FAILED_PRECONDITION",
                   "vto-emulator keeps at most 1000 evaluations per model version; this one has that many.");
  }
  auto evaluation = request["modelEvaluation"];
  checkMetricsFormat(evaluation);
  evaluation["name"] = model + "/evaluations/" + std::to_string(kFirstId + nextId_++);
  evaluation["createTime"] = rfc3339Millis(clock_.now());
  version.evaluations.push_back(evaluation);
  return evaluation;
}

json ModelRegistry::listEvaluations(const std::string& model, const std::string& versionRef,
                                    const std::map<std::string, std::string>& query) const {
  const auto& version = find(model, versionRef);
  if (!queryValue(query, "filter").empty()) throw invalid("vto-emulator does not filter ModelEvaluations; list without a filter.");
  std::vector<const json*> items;
  for (const auto& evaluation : version.evaluations) items.push_back(&evaluation);
  return page(items, "modelEvaluations", query);
}

json ModelRegistry::evaluation(const std::string& model, const std::string& id) const {
  find(model, "");
  auto name = model + "/evaluations/" + id;
  for (const auto& [versionId, version] : models_.at(model).versions) {
    for (const auto& evaluation : version.evaluations) {
      if (evaluation["name"] == name) return evaluation;
    }
  }
  throw notFound("The ModelEvaluation \"" + name + "\" was not found.");
}

}  // namespace vto::emulator
