#include "vertex/http_transport.h"

#include <algorithm>
#include <cctype>

#include <cpprest/http_client.h>

#include "vertex/api_error.h"

namespace vto::vertex {

HttpResponse CppRestTransport::send(const HttpRequest& request) {
  web::http::client::http_client_config config;
  config.set_timeout(request.timeout);
  config.set_validate_certificates(true);
  try {
    web::uri uri(request.url);
    web::uri_builder base;
    base.set_scheme(uri.scheme()).set_host(uri.host()).set_port(uri.port());
    web::http::client::http_client client(base.to_uri(), config);

    web::http::http_request message(request.method);
    message.set_request_uri(uri.resource());
    for (const auto& [name, value] : request.headers) message.headers().add(name, value);
    if (!request.body.empty() || request.method == "POST") {
      auto contentType = request.headers.count("Content-Type") ? request.headers.at("Content-Type")
                                                                : std::string("application/json");
      message.set_body(request.body, contentType);
    }
    auto response = client.request(message).get();
    HttpResponse result;
    result.status = response.status_code();
    for (const auto& [name, value] : response.headers()) {
      std::string lower = name;
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
      result.headers[lower] = value;
    }
    auto tooBig = [&](std::size_t bytes) {
      return TransportError(request.method + " " + request.url + ": the answer has " + std::to_string(bytes) +
                            " bytes, more than the " + std::to_string(request.maxBodyBytes) + " allowed");
    };
    if (request.maxBodyBytes > 0 && response.headers().content_length() > request.maxBodyBytes) {
      throw tooBig(response.headers().content_length());
    }
    result.body = response.extract_utf8string(true).get();
    if (request.maxBodyBytes > 0 && result.body.size() > request.maxBodyBytes) throw tooBig(result.body.size());
    return result;
  } catch (const web::http::http_exception& error) {
    throw TransportError(request.method + " " + request.url + ": " + error.what());
  } catch (const web::uri_exception& error) {
    throw TransportError("invalid URL " + request.url + ": " + error.what());
  } catch (const std::system_error& error) {
    throw TransportError(request.method + " " + request.url + ": " + error.what());
  }
}

}  // namespace vto::vertex
