#include "vertex/gcs_client.h"

#include <algorithm>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "vertex/api_error.h"
#include "vertex/json_codec.h"

namespace vto::vertex {
namespace {

using nlohmann::json;

// int64 fields arrive as decimal strings (or numbers from some emulators); anything else reads as 0.
std::string int64Text(const json& object, const char* field) {
  auto it = object.find(field);
  if (it == object.end()) return "";
  if (it->is_number_integer()) return it->dump();
  if (it->is_string()) return it->get<std::string>();
  return "";
}

GcsObject decodeObject(const json& item) {
  GcsObject object;
  if (!item.is_object()) return object;
  object.bucket = stringField(item, "bucket");
  object.name = stringField(item, "name");
  auto size = int64Text(item, "size");
  try {
    std::size_t used = 0;
    if (!size.empty()) object.size = std::stoll(size, &used);
    if (used != size.size()) object.size = 0;
  } catch (const std::exception&) {
    object.size = 0;
  }
  object.updated = stringField(item, "updated");
  object.generation = int64Text(item, "generation");
  object.timeCreated = stringField(item, "timeCreated");
  return object;
}

json parseObjectBody(const HttpResponse& response) {
  auto parsed = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) throw ApiError::unexpectedResponse(response.status, response.body, "not a JSON object");
  return parsed;
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

void PageTokenGuard::next(const std::string& token) {
  if (std::find(seen_.begin(), seen_.end(), token) != seen_.end()) {
    throw ApiError::unexpectedResponse(200, "", what_ + ": the server repeated a page token it had already sent");
  }
  seen_.push_back(token);
}

std::vector<GcsObject> GcsClient::listObjects(const std::string& bucket, const std::string& prefix, int maxPages) {
  std::vector<GcsObject> objects;
  PageTokenGuard tokens("listing gs://" + bucket + "/" + prefix);
  std::string pageToken;
  for (int page = 1;; ++page) {
    auto result = listObjectsPage(bucket, prefix, pageToken, {});
    std::move(result.objects.begin(), result.objects.end(), std::back_inserter(objects));
    if (result.nextPageToken.empty()) return objects;
    if (page >= maxPages) {
      throw ApiError(200, "OUT_OF_RANGE",
                     "gs://" + bucket + "/" + prefix + " holds more than " + std::to_string(maxPages) +
                         " pages of objects; list a narrower prefix");
    }
    tokens.next(result.nextPageToken);
    pageToken = result.nextPageToken;
  }
}

RestGcsClient::RestGcsClient(HttpTransport& http, std::string endpoint, TokenSource* tokens, bool allowInsecure)
    : endpoint_(std::move(endpoint)), http_(http), tokens_(tokens) {
  while (!endpoint_.empty() && endpoint_.back() == '/') endpoint_.pop_back();
  if (tokens_ != nullptr) {
    requireTrustedEndpoint(endpoint_, "Cloud Storage endpoint", allowInsecure);
  } else {
    parseUrl(endpoint_);
  }
}

HttpResponse RestGcsClient::send(HttpRequest request) {
  for (bool refreshedToken = false;; refreshedToken = true) {
    if (tokens_ != nullptr) request.headers["Authorization"] = "Bearer " + tokens_->token().value;
    auto response = http_.send(request);
    if (response.status == 401 && tokens_ != nullptr && !refreshedToken) {
      tokens_->invalidate();  // revoked or expired early: one more try with a fresh token
      continue;
    }
    return response;
  }
}

ObjectPage RestGcsClient::listObjectsPage(const std::string& bucket, const std::string& prefix,
                                          const std::string& pageToken, const ListObjectsOptions& options) {
  UrlBuilder url(endpoint_);
  url.literal("storage/v1/b").segment(bucket).literal("o").query("prefix", prefix);
  if (!options.delimiter.empty()) url.query("delimiter", options.delimiter);
  if (!options.fields.empty()) url.query("fields", options.fields);
  if (options.maxResults > 0) url.query("maxResults", std::to_string(options.maxResults));
  if (!options.matchGlob.empty()) url.query("matchGlob", options.matchGlob);
  if (!pageToken.empty()) url.query("pageToken", pageToken);
  HttpRequest request;
  request.url = url.str();
  auto response = send(request);
  if (response.status != 200) throw apiErrorOf(response);
  auto body = parseObjectBody(response);
  ObjectPage page;
  if (auto items = body.find("items"); items != body.end() && items->is_array()) {
    for (const auto& item : *items) {
      if (item.is_object()) page.objects.push_back(decodeObject(item));  // a stray non-object names nothing
    }
  }
  if (auto prefixes = body.find("prefixes"); prefixes != body.end() && prefixes->is_array()) {
    for (const auto& p : *prefixes) {
      if (p.is_string()) page.prefixes.push_back(p.get<std::string>());
    }
  }
  page.nextPageToken = stringField(body, "nextPageToken");
  return page;
}

std::optional<GcsObject> RestGcsClient::getObject(const std::string& bucket, const std::string& name) {
  HttpRequest request;
  request.url = UrlBuilder(endpoint_).literal("storage/v1/b").segment(bucket).literal("o").segment(name).str();
  auto response = send(request);
  if (response.status == 404) return std::nullopt;
  if (response.status != 200) throw apiErrorOf(response);
  return decodeObject(parseObjectBody(response));
}

GcsObject RestGcsClient::upload(const std::string& bucket, const std::string& name, const std::string& content,
                                const std::string& contentType) {
  HttpRequest request;
  request.method = "POST";
  request.url = UrlBuilder(endpoint_)
                    .literal("upload/storage/v1/b")
                    .segment(bucket)
                    .literal("o")
                    .query("uploadType", "media")
                    .query("name", name)
                    .str();
  request.headers["Content-Type"] = contentType;
  request.body = content;
  auto response = send(request);
  if (response.status != 200) throw apiErrorOf(response);
  return decodeObject(parseObjectBody(response));
}

void RestGcsClient::ensureBucket(const std::string& bucket, const std::string& project) {
  HttpRequest request;
  request.method = "POST";
  request.url = UrlBuilder(endpoint_).literal("storage/v1/b").query("project", project).str();
  request.body = json{{"name", bucket}}.dump();
  auto response = send(request);
  if (response.status != 200 && response.status != 409) throw apiErrorOf(response);
}

std::string gcsEndpoint(const std::optional<std::string>& explicitEndpoint, const EnvLookup& env) {
  if (explicitEndpoint && !explicitEndpoint->empty()) return *explicitEndpoint;
  if (auto host = env("STORAGE_EMULATOR_HOST")) {
    return host->find("://") == std::string::npos ? "http://" + *host : *host;
  }
  return "https://storage.googleapis.com";
}

}  // namespace vto::vertex
