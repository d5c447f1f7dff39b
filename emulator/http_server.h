#pragma once
// Serves an Emulator over HTTP with cpprestsdk's listener.
#include <memory>
#include <string>

#include "emulator/emulator.h"

namespace web::http {
class http_request;
namespace experimental::listener {
class http_listener;
}
}  // namespace web::http

namespace vto::emulator {

class HttpServer {
 public:
  // address: host:port, e.g. 127.0.0.1:8089; port 0 picks a free port when open() binds.
  // Throws std::invalid_argument for an address that is not host:port.
  HttpServer(Emulator& emulator, const std::string& address);
  ~HttpServer();
  void open();
  void close();
  // The URL served, with the port actually bound once open() returned.
  const std::string& url() const { return url_; }

 private:
  void serve(web::http::http_request& message);

  Emulator& emulator_;
  std::string host_;
  int port_ = 0;
  std::string url_;
  std::unique_ptr<web::http::experimental::listener::http_listener> listener_;
};

}  // namespace vto::emulator
