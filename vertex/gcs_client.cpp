#include "vertex/gcs_client.h"

#include <algorithm>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "vertex/api_error.h"

namespace vto::vertex {
namespace {

using nlohmann::json;

GcsObject decodeObject(const json& item) {
  GcsObject object;
  object.bucket = item.value("bucket", std::string());
  object.name = item.value("name", std::string());
  if (item.contains("size")) object.size = std::stoll(item["size"].is_string() ? item["size"].get<std::string>()
                                                                               : item["size"].dump());
  object.updated = item.value("updated", std::string());
  object.timeCreated = item.value("timeCreated", std::string());
  if (item.contains("generation")) {
    object.generation = item["generation"].is_string() ? item["generation"].get<std::string>() : item["generation"].dump();
  }
  return object;
}

}  // namespace

GcsUri parseGcsUri(const std::string& uri) {
  const std::string scheme = "gs://";
  if (uri.rfind(scheme, 0) != 0 || uri.size() == scheme.size() || uri[scheme.size()] == '/') {
    throw std::invalid_argument("\"" + uri + "\" is not a Cloud Storage URI; write gs://BUCKET/PATH");
  }
  auto rest = uri.substr(scheme.size());
  auto slash = rest.find('/');
  if (slash == std::string::npos) return {rest, ""};
  return {rest.substr(0, slash), rest.substr(slash + 1)};
}

RestGcsClient::RestGcsClient(HttpTransport& http, std::string endpoint, TokenSource* tokens)
    : endpoint_(std::move(endpoint)), http_(http), tokens_(tokens) {
  while (!endpoint_.empty() && endpoint_.back() == '/') endpoint_.pop_back();
}

HttpResponse RestGcsClient::send(HttpRequest request) {
  if (tokens_ != nullptr) request.headers["Authorization"] = "Bearer " + tokens_->token().value;
  return http_.send(request);
}

std::vector<GcsObject> RestGcsClient::listObjects(const std::string& bucket, const std::string& prefix) {
  std::vector<GcsObject> objects;
  std::string pageToken;
  do {
    HttpRequest request;
    request.url = endpoint_ + "/storage/v1/b/" + urlEncode(bucket) + "/o?prefix=" + urlEncode(prefix);
    if (!pageToken.empty()) request.url += "&pageToken=" + urlEncode(pageToken);
    auto response = send(request);
    if (response.status != 200) throw parseApiError(response.status, response.body);
    auto page = json::parse(response.body);
    for (const auto& item : page.value("items", json::array())) objects.push_back(decodeObject(item));
    pageToken = page.value("nextPageToken", std::string());
  } while (!pageToken.empty());
  return objects;
}

void PageTokenGuard::next(const std::string& token) {
  if (std::find(seen_.begin(), seen_.end(), token) != seen_.end()) {
    throw ApiError(200, "INTERNAL", what_ + ": the server repeated a page token it had already sent");
  }
  seen_.push_back(token);
}

ObjectPage RestGcsClient::listObjectsPage(const std::string& bucket, const std::string& prefix,
                                          const std::string& pageToken, const ListObjectsOptions& options) {
  HttpRequest request;
  request.url = endpoint_ + "/storage/v1/b/" + urlEncode(bucket) + "/o?prefix=" + urlEncode(prefix);
  if (!options.delimiter.empty()) request.url += "&delimiter=" + urlEncode(options.delimiter);
  if (!options.fields.empty()) request.url += "&fields=" + urlEncode(options.fields);
  if (options.maxResults > 0) request.url += "&maxResults=" + std::to_string(options.maxResults);
  if (!options.matchGlob.empty()) request.url += "&matchGlob=" + urlEncode(options.matchGlob);
  if (!pageToken.empty()) request.url += "&pageToken=" + urlEncode(pageToken);
  auto response = send(request);
  if (response.status != 200) throw parseApiError(response.status, response.body);
  auto body = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object()) throw ApiError(200, "INTERNAL", "the object listing is not a JSON object");
  ObjectPage page;
  if (auto items = body.find("items"); items != body.end() && items->is_array()) {
    for (const auto& item : *items) {
      if (item.is_object()) page.objects.push_back(decodeObject(item));
    }
  }
  if (auto prefixes = body.find("prefixes"); prefixes != body.end() && prefixes->is_array()) {
    for (const auto& p : *prefixes) {
      if (p.is_string()) page.prefixes.push_back(p.get<std::string>());
    }
  }
  if (auto token = body.find("nextPageToken"); token != body.end() && token->is_string()) {
    page.nextPageToken = token->get<std::string>();
  }
  return page;
}

std::optional<GcsObject> RestGcsClient::getObject(const std::string& bucket, const std::string& name) {
  HttpRequest request;
  request.url = endpoint_ + "/storage/v1/b/" + urlEncode(bucket) + "/o/" + urlEncode(name);
  auto response = send(request);
  if (response.status == 404) return std::nullopt;
  if (response.status != 200) throw parseApiError(response.status, response.body);
  return decodeObject(json::parse(response.body));
}

GcsObject RestGcsClient::upload(const std::string& bucket, const std::string& name, const std::string& content,
                                const std::string& contentType) {
  HttpRequest request;
  request.method = "POST";
  request.url = endpoint_ + "/upload/storage/v1/b/" + urlEncode(bucket) + "/o?uploadType=media&name=" + urlEncode(name);
  request.headers["Content-Type"] = contentType;
  request.body = content;
  auto response = send(request);
  if (response.status != 200) throw parseApiError(response.status, response.body);
  return decodeObject(json::parse(response.body));
}

void RestGcsClient::ensureBucket(const std::string& bucket, const std::string& project) {
  HttpRequest request;
  request.method = "POST";
  request.url = endpoint_ + "/storage/v1/b?project=" + urlEncode(project);
  request.body = json{{"name", bucket}}.dump();
  auto response = send(request);
  if (response.status != 200 && response.status != 409) throw parseApiError(response.status, response.body);
}

std::string gcsEndpoint(const std::optional<std::string>& explicitEndpoint, const EnvLookup& env) {
  if (explicitEndpoint && !explicitEndpoint->empty()) return *explicitEndpoint;
  if (auto host = env("STORAGE_EMULATOR_HOST")) {
    return host->find("://") == std::string::npos ? "http://" + *host : *host;
  }
  return "https://storage.googleapis.com";
}

}  // namespace vto::vertex
