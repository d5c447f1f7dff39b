#pragma once
// One HTTP exchange of the emulator, without a transport: the HTTP server (http_server.h) turns
// requests into these, and unit tests build them directly.
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace vto::emulator {

struct Request {
  std::string method;
  std::string path;  // decoded, without the query
  std::map<std::string, std::string> query;    // decoded
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};

struct Response {
  int status = 200;
  nlohmann::json body = nlohmann::json::object();
};

}  // namespace vto::emulator
