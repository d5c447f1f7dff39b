#pragma once
// RS256-signed JSON Web Tokens for the OAuth 2.0 service-account flow (RFC 7523), signed with OpenSSL.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace vto::vertex {

// header.claims.signature; throws std::invalid_argument when the PEM key cannot be read (the
// message never contains the key).
std::string signJwtRs256(const nlohmann::json& header, const nlohmann::json& claims, const std::string& privateKeyPem);

// Checks an RS256 signature with a PEM public key; for tests and the emulator's token endpoint.
bool verifyJwtRs256(std::string_view jwt, const std::string& publicKeyPem);

}  // namespace vto::vertex
