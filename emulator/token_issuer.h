#pragma once
// The emulator's own OAuth tokens: handed out at the metadata server path and at an OAuth token
// endpoint (JWT bearer and refresh token grants), then required as bearer tokens on /v1/.
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "base/clock.h"

namespace vto::emulator {

class TokenIssuer {
 public:
  // publicKeyPem: when set, JWT assertions must be signed by its private key.
  TokenIssuer(const Clock& clock, std::chrono::seconds lifetime, std::string publicKeyPem = "");

  // {"access_token", "expires_in", "token_type"}.
  nlohmann::json issue();
  // The answer of POST /token to an application/x-www-form-urlencoded body: {status, json}.
  std::pair<int, nlohmann::json> exchange(const std::string& formBody);
  bool valid(const std::string& token) const;
  int issuedCount() const;

 private:
  const Clock& clock_;
  std::chrono::seconds lifetime_;
  std::string publicKeyPem_;
  mutable std::mutex mutex_;
  std::map<std::string, Clock::time_point> tokens_;  // token -> expiry
  std::random_device random_;
};

}  // namespace vto::emulator
