#pragma once
// One HTTP exchange, behind an interface so the client's retry, pacing and auth logic can be unit
// tested against a scripted fake (tests/fakes/vertex_fake_transport.h).
#include <chrono>
#include <cstddef>
#include <map>
#include <string>

#include "base/url.h"

namespace vto::vertex {

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::map<std::string, std::string> headers;
  std::string body;
  std::chrono::milliseconds timeout{30000};
  // 0: any size. Else an answer whose Content-Length, or body, is larger is a TransportError.
  std::size_t maxBodyBytes = 0;
};

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // Returns any HTTP answer, error statuses included; throws TransportError when there is none
  // (connection refused, TLS failure, timeout).
  virtual HttpResponse send(const HttpRequest& request) = 0;
};

// cpprestsdk, with TLS certificates verified.
class CppRestTransport final : public HttpTransport {
 public:
  HttpResponse send(const HttpRequest& request) override;
};

// Percent-encoding lives with the URL builder in base/url.h.
using vto::urlEncode;

}  // namespace vto::vertex
