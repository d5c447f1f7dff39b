#include "emulator/http_server.h"

#include <algorithm>

#include <cpprest/http_listener.h>
#include <spdlog/spdlog.h>

namespace vto::emulator {
namespace {

// Query strings are form-encoded: '+' is a space, the rest percent escapes.
std::string decodeQueryPart(std::string text) {
  std::replace(text.begin(), text.end(), '+', ' ');
  return web::uri::decode(text);
}

Request toRequest(web::http::http_request& message) {
  Request request;
  request.method = message.method();
  auto uri = message.relative_uri();
  request.path = web::uri::decode(uri.path());
  for (const auto& [name, value] : web::uri::split_query(uri.query())) {
    request.query[decodeQueryPart(name)] = decodeQueryPart(value);
  }
  for (const auto& [name, value] : message.headers()) {
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    request.headers[lower] = value;
  }
  request.body = message.extract_utf8string(true).get();
  return request;
}

}  // namespace

HttpServer::HttpServer(Emulator& emulator, const std::string& address)
    : emulator_(emulator), url_("http://" + address) {
  listener_ = std::make_unique<web::http::experimental::listener::http_listener>(url_);
  listener_->support([this](web::http::http_request message) {
    try {
      auto request = toRequest(message);
      auto response = emulator_.handle(request);
      message.reply(static_cast<web::http::status_code>(response.status), response.body.dump(), "application/json");
    } catch (const std::exception& error) {
      spdlog::error("request failed: {}", error.what());
      message.reply(web::http::status_codes::InternalError,
                    R"({"error":{"code":500,"status":"INTERNAL","message":"emulator error"}})", "application/json");
    }
  });
}

HttpServer::~HttpServer() = default;

void HttpServer::open() { listener_->open().wait(); }

void HttpServer::close() { listener_->close().wait(); }

}  // namespace vto::emulator
