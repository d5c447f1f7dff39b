#pragma once
// Base64 (RFC 4648): the standard alphabet for kubeconfig certificate data, the URL-safe one without
// padding for JWTs and Vertex page tokens.
#include <string>
#include <string_view>

namespace vto {

// Standard alphabet, padded.
std::string base64Encode(std::string_view bytes);
// Standard alphabet, padding optional; throws std::invalid_argument on any other character.
std::string base64Decode(std::string_view text);
// URL-safe alphabet, unpadded (as JWS requires).
std::string base64UrlEncode(std::string_view bytes);
// URL-safe alphabet, padding optional; throws std::invalid_argument on any other character.
std::string base64UrlDecode(std::string_view text);

}  // namespace vto
