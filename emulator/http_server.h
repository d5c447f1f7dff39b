#pragma once
// Serves an Emulator over HTTP with cpprestsdk's listener.
#include <memory>
#include <string>

#include "emulator/emulator.h"

namespace web::http::experimental::listener {
class http_listener;
}

namespace vto::emulator {

class HttpServer {
 public:
  // address: host:port, e.g. 127.0.0.1:8089.
  HttpServer(Emulator& emulator, const std::string& address);
  ~HttpServer();
  void open();
  void close();
  const std::string& url() const { return url_; }

 private:
  Emulator& emulator_;
  std::string url_;
  std::unique_ptr<web::http::experimental::listener::http_listener> listener_;
};

}  // namespace vto::emulator
