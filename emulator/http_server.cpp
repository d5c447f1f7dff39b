#include "emulator/http_server.h"

#include <algorithm>
#include <tuple>

#include <cpprest/http_listener.h>
#include <spdlog/spdlog.h>

#include "base/free_port.h"

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

HttpServer::HttpServer(Emulator& emulator, const std::string& address) : emulator_(emulator) {
  auto hostPort = splitHostPort(address);
  if (!hostPort || hostPort->first.empty())
    throw std::invalid_argument("--listen " + address + ": expected HOST:PORT, e.g. 127.0.0.1:8089 (port 0 picks a free one)");
  std::tie(host_, port_) = *hostPort;
  url_ = "http://" + address;
}

HttpServer::~HttpServer() = default;

void HttpServer::open() {
  // cpprest's listener cannot report the port it bound: port 0 becomes a free port chosen here,
  // retried when another process takes it first.
  port_ = openOnPort(host_, port_, [this](int candidate) {
    url_ = "http://" + host_ + ":" + std::to_string(candidate);
    listener_ = std::make_unique<web::http::experimental::listener::http_listener>(url_);
    listener_->support([this](web::http::http_request message) { serve(message); });
    listener_->open().wait();
  });
}

void HttpServer::serve(web::http::http_request& message) {
  try {
    auto request = toRequest(message);
    auto response = emulator_.handle(request);
    message.reply(static_cast<web::http::status_code>(response.status), response.body.dump(), "application/json");
  } catch (const std::exception& error) {
    spdlog::error("request failed: {}", error.what());
    message.reply(web::http::status_codes::InternalError,
                  R"({"error":{"code":500,"status":"INTERNAL","message":"emulator error"}})", "application/json");
  }
}

void HttpServer::close() {
  if (listener_) listener_->close().wait();
}

}  // namespace vto::emulator
