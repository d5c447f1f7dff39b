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

// A decimal size; anything else reads as 0.
std::int64_t sizeOf(const std::string& text) {
  try {
    std::size_t used = 0;
    auto size = text.empty() ? 0 : std::stoll(text, &used);
    return used == text.size() ? size : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

GcsObject decodeObject(const json& item) {
  GcsObject object;
  if (!item.is_object()) return object;
  object.bucket = stringField(item, "bucket");
  object.name = stringField(item, "name");
  object.size = sizeOf(int64Text(item, "size"));
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


// Reads an objects.list answer straight into an ObjectPage, keeping only the fields GcsObject has: no
// JSON tree of the page. A server that ignores the `fields` mask (fake-gcs-server does) sends every
// object's full metadata, ACLs included, about 1 KB an object.
class ObjectPageReader final : public nlohmann::json_sax<json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t value) override { return scalar(std::to_string(value)); }
  bool number_unsigned(number_unsigned_t value) override { return scalar(std::to_string(value)); }
  bool number_float(number_float_t, const string_t&) override { return scalar(""); }
  bool string(string_t& value) override { return text(value); }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    if (depth_ == 0) rootIsObject_ = true;
    if (depth_ == 1 && topKey_ == "items") itemsArray_ = false;
    ++depth_;
    if (depth_ == 3 && inItems()) item_.emplace();
    return true;
  }
  bool end_object() override {
    if (depth_ == 3 && inItems() && item_) {
      page.objects.push_back(std::move(*item_));
      item_.reset();
    }
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == 1 && topKey_ == "items") itemsArray_ = true;
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool key(string_t& name) override {
    if (depth_ == 1) topKey_ = name;
    if (depth_ == 3) itemKey_ = name;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

  bool rootIsObject() const { return rootIsObject_; }
  ObjectPage page;

 private:
  bool inItems() const { return topKey_ == "items" && itemsArray_; }
  // int64 fields arrive as decimal strings (or numbers from some emulators).
  bool scalar(std::string value) {
    if (depth_ == 3 && item_ && (itemKey_ == "size" || itemKey_ == "generation")) return text(value);
    return true;
  }
  bool text(std::string& value) {
    if (depth_ == 1 && topKey_ == "nextPageToken") page.nextPageToken = std::move(value);
    if (depth_ == 2 && topKey_ == "prefixes") page.prefixes.push_back(std::move(value));
    if (depth_ != 3 || !item_) return true;
    auto& object = *item_;
    if (itemKey_ == "bucket") object.bucket = std::move(value);
    else if (itemKey_ == "name") object.name = std::move(value);
    else if (itemKey_ == "updated") object.updated = std::move(value);
    else if (itemKey_ == "generation") object.generation = std::move(value);
    else if (itemKey_ == "timeCreated") object.timeCreated = std::move(value);
    else if (itemKey_ == "size") object.size = sizeOf(value);
    return true;
  }

  int depth_ = 0;
  bool rootIsObject_ = false;
  bool itemsArray_ = false;
  std::string topKey_, itemKey_;
  std::optional<GcsObject> item_;  // the item being read: only objects in `items` name an object
};

ObjectPage readObjectPage(const HttpResponse& response) {
  ObjectPageReader reader;
  if (!json::sax_parse(response.body, &reader) || !reader.rootIsObject()) {
    throw ApiError::unexpectedResponse(response.status, response.body, "not a JSON object");
  }
  return std::move(reader.page);
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
    : endpoint_(tokens != nullptr ? trustedEndpoint(endpoint, "Cloud Storage endpoint", allowInsecure)
                                  : canonicalUrl(endpoint)),
      http_(http),
      tokens_(tokens) {}

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
  return readObjectPage(response);
}

std::optional<GcsObject> RestGcsClient::getObject(const std::string& bucket, const std::string& name) {
  HttpRequest request;
  request.url = UrlBuilder(endpoint_).literal("storage/v1/b").segment(bucket).literal("o").segment(name).str();
  auto response = send(request);
  if (response.status == 404) return std::nullopt;
  if (response.status != 200) throw apiErrorOf(response);
  return decodeObject(parseObjectBody(response));
}

std::optional<std::string> RestGcsClient::readObject(const std::string& bucket, const std::string& name,
                                                     std::size_t maxBytes) {
  HttpRequest request;
  request.url = UrlBuilder(endpoint_).literal("storage/v1/b").segment(bucket).literal("o").segment(name).query("alt", "media").str();
  request.headers["Range"] = "bytes=0-" + std::to_string(maxBytes);
  // A server that ignores Range sends everything: beyond a bound, that is a TransportError.
  request.maxBodyBytes = maxBytes + 1 + (1 << 20);
  auto response = send(request);
  if (response.status == 404) return std::nullopt;
  if (response.status == 416) return std::string();  // an empty object has no byte 0
  if (response.status != 200 && response.status != 206) throw apiErrorOf(response);
  if (response.body.size() > maxBytes + 1) response.body.resize(maxBytes + 1);
  return std::move(response.body);
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
