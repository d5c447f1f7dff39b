#pragma once
// Cloud Storage through its JSON API: list under a prefix, read metadata or content, upload. Pointed at
// fake-gcs-server by STORAGE_EMULATOR_HOST or an explicit endpoint.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/url.h"
#include "vertex/auth.h"
#include "vertex/http_transport.h"

namespace vto::vertex {

struct GcsObject {
  std::string bucket;
  std::string name;
  std::int64_t size = 0;
  std::string updated;      // RFC 3339; moves on any metadata edit
  std::string generation;
  std::string timeCreated;  // RFC 3339; set once, when this generation was written
};

// gs://bucket/some/prefix -> {bucket, "some/prefix"}.
struct GcsUri {
  std::string bucket;
  std::string object;
};
// Throws std::invalid_argument with the expected form when `uri` is not gs://BUCKET[/PATH].
GcsUri parseGcsUri(const std::string& uri);

// One page of objects.list. With a delimiter, names that continue past it below `prefix` are
// rolled up into `prefixes` ("dir/step-12/") instead of being listed one by one.
struct ListObjectsOptions {
  std::string delimiter;  // "" or "/"
  // The partial response to ask for, e.g. "items(name,updated),prefixes,nextPageToken"; "" for all.
  std::string fields;
  int maxResults = 0;     // 0: the server's default (1000)
  std::string matchGlob;  // "" or a glob the server filters names by, e.g. "**.parquet"
};

struct ObjectPage {
  std::vector<GcsObject> objects;
  std::vector<std::string> prefixes;
  std::string nextPageToken;  // empty on the last page
};

// The most pages listObjects() follows; a listing that needs more is refused.
inline constexpr int kMaxListPages = 100;

class GcsClient {
 public:
  virtual ~GcsClient() = default;
  // One page under `prefix`, starting at `pageToken` ("" for the first).
  virtual ObjectPage listObjectsPage(const std::string& bucket, const std::string& prefix, const std::string& pageToken,
                                     const ListObjectsOptions& options) = 0;
  // Every object whose name starts with `prefix`, following nextPageToken for at most `maxPages`
  // pages. Throws ApiError (retryable) when the server repeats a page token or there are more pages;
  // for big listings use listObjectsPage and keep only what you need (reconcilers/checkpoints.h).
  std::vector<GcsObject> listObjects(const std::string& bucket, const std::string& prefix, int maxPages = kMaxListPages);
  // nullopt when the object does not exist.
  virtual std::optional<GcsObject> getObject(const std::string& bucket, const std::string& name) = 0;
  // The object's first maxBytes + 1 bytes at most (a Range read): a longer answer than maxBytes tells
  // the caller the object is larger, without reading it (tenant data: bounded to what is needed).
  // nullopt when the object does not exist.
  virtual std::optional<std::string> readObject(const std::string& bucket, const std::string& name, std::size_t maxBytes) = 0;
  virtual GcsObject upload(const std::string& bucket, const std::string& name, const std::string& content,
                           const std::string& contentType = "application/octet-stream") = 0;
  // Creates the bucket when it is missing; emulators start empty (the real service is set up by hand).
  virtual void ensureBucket(const std::string& bucket, const std::string& project = "vto") = 0;
};

// Tracks the page tokens of one listing: a server that hands back a token it gave before would
// otherwise be followed forever. Throws ApiError (retryable) on a repeat.
class PageTokenGuard {
 public:
  explicit PageTokenGuard(std::string what) : what_(std::move(what)) {}
  void next(const std::string& token);

 private:
  std::string what_;
  std::vector<std::string> seen_;  // bounded by the page cap of the listing
};

class RestGcsClient final : public GcsClient {
 public:
  // endpoint: "https://storage.googleapis.com" or an emulator such as "http://127.0.0.1:4443".
  // tokens may be null for an emulator that needs none. With tokens, the endpoint must pass
  // base/url.h's trustedEndpoint (https, or http only to loopback or with allowInsecure): the
  // constructor throws std::invalid_argument otherwise, so no token is ever attached to a request
  // to an unchecked endpoint. Requests go to the endpoint's canonical form (canonicalUrl).
  RestGcsClient(HttpTransport& http, std::string endpoint, TokenSource* tokens, bool allowInsecure = false);

  ObjectPage listObjectsPage(const std::string& bucket, const std::string& prefix, const std::string& pageToken,
                             const ListObjectsOptions& options) override;
  std::optional<GcsObject> getObject(const std::string& bucket, const std::string& name) override;
  std::optional<std::string> readObject(const std::string& bucket, const std::string& name, std::size_t maxBytes) override;
  GcsObject upload(const std::string& bucket, const std::string& name, const std::string& content,
                   const std::string& contentType) override;
  void ensureBucket(const std::string& bucket, const std::string& project) override;

 private:
  HttpResponse send(HttpRequest request);
  std::string endpoint_;
  HttpTransport& http_;
  TokenSource* tokens_;
};

// STORAGE_EMULATOR_HOST ("host:port" or a URL) when set, else the real service.
std::string gcsEndpoint(const std::optional<std::string>& explicitEndpoint, const EnvLookup& env = processEnv);

}  // namespace vto::vertex
