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

std::invalid_argument badUrl(std::string_view url, std::string_view why) {
  return std::invalid_argument("\"" + std::string(url.substr(0, 200)) + "\" is not a usable URL (" + std::string(why) +
                               "); write SCHEME://HOST[:PORT][/PATH], e.g. https://storage.googleapis.com");
}

}  // namespace

std::string urlEncode(std::string_view text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

ParsedUrl parseUrl(std::string_view url) {
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
  parsed.path = authorityEnd == std::string_view::npos ? "" : std::string(rest.substr(authorityEnd));
  if (!parsed.path.empty() && parsed.path[0] != '/') parsed.path = "/" + parsed.path;
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
