#include "base/url.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace vto {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool isHostChar(unsigned char c) { return std::isalnum(c) || c == '-' || c == '.' || c == '_'; }
bool isUnreserved(unsigned char c) { return std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~'; }
// RFC 3986's pchar and query: unreserved, sub-delims, ':', '@', '/', '?' (and '%' HEXDIG HEXDIG).
bool isTargetChar(unsigned char c) {
  return isUnreserved(c) || std::string_view("!$&'()*+,;=:@/?").find(static_cast<char>(c)) != std::string_view::npos;
}
bool isHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
int hexValue(char c) { return std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : std::toupper(c) - 'A' + 10; }

constexpr const char* kHex = "0123456789ABCDEF";

std::string hexByte(unsigned char c) { return {'0', 'x', kHex[c >> 4], kHex[c & 15]}; }

// The URL as it may appear in an error: bytes that could end a log line or fake one escaped, and
// cut short, so that a hostile value is described rather than replayed.
std::string printable(std::string_view url) {
  constexpr size_t kShown = 120;
  std::string out;
  for (unsigned char c : url.substr(0, kShown)) {
    if (c < 0x20 || c >= 0x7F || c == '"' || c == '\\') {
      out += "\\x" + hexByte(c).substr(2);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (url.size() > kShown) out += "...";
  return out;
}

InvalidUrl badUrl(std::string_view url, const std::string& why) {
  return InvalidUrl("\"" + printable(url) + "\" is not a usable URL (" + why +
                        "); write SCHEME://HOST[:PORT][/PATH] with any other character percent-encoded, "
                        "e.g. https://storage.googleapis.com",
                    why);
}

// Bytes no part of a URL may hold as they are.
void refuseRawBytes(std::string_view url) {
  for (size_t at = 0; at < url.size(); ++at) {
    auto c = static_cast<unsigned char>(url[at]);
    auto where = " at position " + std::to_string(at);
    if (c < 0x20 || c == 0x7F) throw badUrl(url, "control character " + hexByte(c) + where);
    if (c == ' ') throw badUrl(url, "a space" + where);
    if (c >= 0x80) throw badUrl(url, "a byte that is not ASCII (" + hexByte(c) + ")" + where);
    if (c == '\\') throw badUrl(url, "a backslash" + where);
  }
}

// The path and query (`target`, which starts at `offset` in `url`): only what RFC 3986 allows there,
// every '%' followed by two hex digits.
void checkTarget(std::string_view url, std::string_view target, size_t offset) {
  for (size_t i = 0; i < target.size(); ++i) {
    auto c = static_cast<unsigned char>(target[i]);
    auto where = " at position " + std::to_string(offset + i);
    if (c == '#') throw badUrl(url, "a fragment (#...)" + where + ", which is never sent to a server");
    if (c == '%') {
      if (i + 2 >= target.size() || !isHex(target[i + 1]) || !isHex(target[i + 2])) {
        throw badUrl(url, "'%' not followed by two hex digits" + where + "; write a literal % as %25");
      }
      i += 2;
    } else if (!isTargetChar(c)) {
      throw badUrl(url, std::string("'") + static_cast<char>(c) + "'" + where + " is not allowed in a path or query");
    }
  }
}

// Percent-encoding in one form: an unreserved character decoded, any other octet as %XX in upper
// case. `target` has passed checkTarget.
std::string normalisePercentEncoding(std::string_view target) {
  std::string out;
  out.reserve(target.size());
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] != '%') {
      out += target[i];
      continue;
    }
    auto octet = static_cast<unsigned char>(hexValue(target[i + 1]) * 16 + hexValue(target[i + 2]));
    i += 2;
    if (isUnreserved(octet)) {
      out += static_cast<char>(octet);
    } else {
      out += {'%', kHex[octet >> 4], kHex[octet & 15]};
    }
  }
  return out;
}

}  // namespace

std::string urlEncode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (isUnreserved(c)) {
      out += static_cast<char>(c);
    } else {
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return out;
}

ParsedUrl parseUrl(std::string_view url) {
  refuseRawBytes(url);
  ParsedUrl parsed;
  auto schemeEnd = url.find("://");
  if (schemeEnd == std::string_view::npos || schemeEnd == 0) throw badUrl(url, "no scheme");
  parsed.scheme = lower(url.substr(0, schemeEnd));
  for (char c : parsed.scheme) {
    if (!std::isalpha(static_cast<unsigned char>(c))) throw badUrl(url, "bad scheme");
  }
  auto rest = url.substr(schemeEnd + 3);
  auto authorityEnd = rest.find_first_of("/?#");
  auto authority = rest.substr(0, authorityEnd);
  if (authorityEnd != std::string_view::npos) {
    checkTarget(url, rest.substr(authorityEnd), schemeEnd + 3 + authorityEnd);
    parsed.path = std::string(rest.substr(authorityEnd));
    if (parsed.path[0] != '/') parsed.path = "/" + parsed.path;
  }
  if (authority.find('@') != std::string_view::npos) throw badUrl(url, "user info before the host is not allowed");
  std::string_view host, port;
  if (!authority.empty() && authority[0] == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) throw badUrl(url, "unclosed [ in the host");
    host = authority.substr(1, close - 1);
    auto after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') throw badUrl(url, "junk after the IPv6 host");
      port = after.substr(1);
    }
    in6_addr address{};
    if (inet_pton(AF_INET6, std::string(host).c_str(), &address) != 1) throw badUrl(url, "bad IPv6 address");
  } else {
    auto colon = authority.find(':');
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
    for (unsigned char c : host) {
      if (!isHostChar(c)) throw badUrl(url, "the host has a character a host name cannot have");
    }
  }
  if (host.empty()) throw badUrl(url, "empty host");
  parsed.host = lower(host);
  if (!port.empty() || authority.find(':') != std::string_view::npos) {
    if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c); })) {
      throw badUrl(url, "the port is not a number");
    }
    parsed.port = std::stoi(std::string(port));
    if (parsed.port < 1 || parsed.port > 65535) throw badUrl(url, "the port is out of range");
  }
  return parsed;
}

std::string canonicalUrl(std::string_view url) {
  auto parsed = parseUrl(url);
  if ((parsed.scheme == "http" && parsed.port == 80) || (parsed.scheme == "https" && parsed.port == 443)) parsed.port = 0;
  auto target = normalisePercentEncoding(parsed.path.empty() ? "/" : parsed.path);
  // Dot-segments are looked for after decoding: "%2E%2E" is ".." to a server.
  auto path = std::string_view(target).substr(0, target.find('?'));
  for (size_t start = 0; start < path.size();) {
    auto end = std::min(path.find('/', start + 1), path.size());
    auto segment = path.substr(start + 1, end - start - 1);
    if (segment == "." || segment == "..") {
      throw badUrl(url, "a \"" + std::string(segment) + "\" path segment; write the path it stands for");
    }
    start = end;
  }
  return parsed.scheme + "://" + authorityOf(parsed) + target;
}

std::string authorityOf(const ParsedUrl& url) {
  bool ipv6 = url.host.find(':') != std::string::npos;
  return (ipv6 ? "[" + url.host + "]" : url.host) + (url.port != 0 ? ":" + std::to_string(url.port) : "");
}

bool isLoopbackHost(std::string_view host) {
  std::string text = lower(host);
  if (text.size() > 2 && text.front() == '[' && text.back() == ']') text = text.substr(1, text.size() - 2);
  if (text == "localhost") return true;
  in_addr v4{};
  // inet_pton(AF_INET) accepts only four dotted decimal parts, so "127.attacker.example" fails here.
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

ParsedUrl requireTrustedEndpoint(std::string_view url, std::string_view what, bool allowInsecure) {
  ParsedUrl parsed;
  try {
    parsed = parseUrl(url);
  } catch (const std::invalid_argument& error) {
    throw std::invalid_argument(std::string(what) + ": " + error.what());
  }
  if (parsed.scheme == "https") return parsed;
  if (parsed.scheme == "http") {
    if (isLoopbackHost(parsed.host) || allowInsecure) return parsed;
    throw std::invalid_argument(std::string(what) + " \"" + std::string(url) +
                                "\" uses plain http to a host that is not loopback, which would send credentials "
                                "in the clear; use https, or pass --allow-insecure-endpoints if you really mean it");
  }
  throw std::invalid_argument(std::string(what) + " \"" + std::string(url) +
                              "\" must start with https:// (or http:// for a loopback host such as 127.0.0.1)");
}

std::string trustedEndpoint(std::string_view url, std::string_view what, bool allowInsecure) {
  std::string canonical;
  try {
    canonical = canonicalUrl(url);
  } catch (const std::invalid_argument& error) {
    throw std::invalid_argument(std::string(what) + ": " + error.what());
  }
  requireTrustedEndpoint(canonical, what, allowInsecure);
  return canonical;
}

UrlBuilder::UrlBuilder(std::string_view base) : url_(base) {
  while (!url_.empty() && url_.back() == '/') url_.pop_back();
}

UrlBuilder& UrlBuilder::literal(std::string_view path) {
  if (!path.empty() && path.front() != '/') url_ += '/';
  url_ += path;
  return *this;
}

UrlBuilder& UrlBuilder::segment(std::string_view value) {
  url_ += '/';
  // "." and ".." would be dot-segments that a server resolves; encoded they are plain names.
  if (value == ".") {
    url_ += "%2E";
  } else if (value == "..") {
    url_ += "%2E%2E";
  } else {
    url_ += urlEncode(value);
  }
  return *this;
}

UrlBuilder& UrlBuilder::verb(std::string_view verb) {
  url_ += ':';
  url_ += verb;
  return *this;
}

UrlBuilder& UrlBuilder::query(std::string_view name, std::string_view value) {
  url_ += hasQuery_ ? '&' : '?';
  hasQuery_ = true;
  url_ += urlEncode(name);
  url_ += '=';
  url_ += urlEncode(value);
  return *this;
}

}  // namespace vto
