#pragma once
// URLs for outbound requests, parsed and built in one place. Every request that carries a credential
// goes to an endpoint checked by requireTrustedEndpoint(), and every user-influenced part of a path
// goes through UrlBuilder::segment(), which percent-encodes it: a value such as "x/../y?z" stays one
// segment and cannot change the host, the path or the query. A URL that comes from outside (a
// tenant's field, a flag) is taken in canonicalUrl()'s form: parsed strictly, rebuilt, and that
// string is both what is checked and what is sent.
#include <stdexcept>
#include <string>
#include <string_view>

namespace vto {

// Percent-encodes everything except RFC 3986 unreserved characters (A-Z a-z 0-9 - . _ ~).
std::string urlEncode(std::string_view text);

// A URL parseUrl or canonicalUrl refused. what() quotes the URL (escaped, truncated) and says what
// form is expected; reason() says only what is wrong, for a caller that must not repeat a hostile
// value (the HTTP transport).
class InvalidUrl : public std::invalid_argument {
 public:
  InvalidUrl(const std::string& what, std::string reason) : std::invalid_argument(what), reason_(std::move(reason)) {}
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

struct ParsedUrl {
  std::string scheme;  // lower case: "https", "http"
  std::string host;    // lower case, without brackets for IPv6 ("::1")
  int port = 0;        // 0: not given (the scheme's default)
  std::string path;    // from the first '/' on, query included, exactly as written; may be empty
};

// Strict absolute-URL parse: scheme://host[:port][/path][?query]. Refuses, anywhere in the URL, a
// control character (0x00-0x1F, 0x7F), a space, a byte that is not ASCII and a backslash; user info
// (user@host); a fragment (#); in the path and query any character RFC 3986 does not allow there and
// a '%' without two hex digits after it; empty hosts, characters a host name cannot have, bad ports.
// What it accepts can be written into a request line as it is: nothing in it ends the line, starts a
// header or another request. Throws InvalidUrl (a std::invalid_argument) saying what form is expected.
ParsedUrl parseUrl(std::string_view url);

// The one form of a URL that comes from outside (a tenant's prometheusUrl, an endpoint flag): what
// parseUrl accepts, rebuilt with scheme and host in lower case, the default port dropped, an empty
// path written "/", percent-encoding normalised (hex digits in upper case, unreserved characters
// decoded: "%7e" is "~"); a "." or ".." path segment, written plainly or encoded, is refused (a base
// URL never needs one, and a server would resolve it). Two spellings of one URL give one string:
// compare, check and send this form. Throws InvalidUrl.
std::string canonicalUrl(std::string_view url);

// "host:port" as it goes in a Host header (an IPv6 host in brackets; no port when it was not given).
std::string authorityOf(const ParsedUrl& url);

// True only for real loopback addresses: "localhost", an IPv4 literal in 127.0.0.0/8 (all four
// parts numeric: "127.attacker.example" is a DNS name, not loopback) and the IPv6 literal ::1.
bool isLoopbackHost(std::string_view host);

// The check for any endpoint vto sends a credential to (kube API server, Vertex, GCS, a token
// endpoint): https anywhere, plain http only to a loopback host or when the operator explicitly
// allowed it (--allow-insecure-endpoints). `what` names the endpoint in the error, e.g. "Vertex
// endpoint". Returns the parsed URL; throws std::invalid_argument saying how to fix it.
ParsedUrl requireTrustedEndpoint(std::string_view url, std::string_view what, bool allowInsecure);

// requireTrustedEndpoint on canonicalUrl(url), which it returns: the base URL to send to, for an
// endpoint given from outside (a flag, a tenant's field).
std::string trustedEndpoint(std::string_view url, std::string_view what, bool allowInsecure);

// Builds base + "/seg1/seg2..." + "?a=b&c=d", encoding each segment and query value.
class UrlBuilder {
 public:
  // `base` is an already validated endpoint such as "https://host:443" (a trailing '/' is dropped).
  explicit UrlBuilder(std::string_view base);
  // A fixed part of the API's path, written by vto itself ("v1", "storage/v1"); not encoded.
  UrlBuilder& literal(std::string_view path);
  // One path segment from data (a project, a bucket, an object name): percent-encoded.
  UrlBuilder& segment(std::string_view value);
  // A custom method suffix, Google's ":cancel"; `verb` is vto's own constant.
  UrlBuilder& verb(std::string_view verb);
  UrlBuilder& query(std::string_view name, std::string_view value);
  const std::string& str() const { return url_; }

 private:
  std::string url_;
  bool hasQuery_ = false;
};

}  // namespace vto
