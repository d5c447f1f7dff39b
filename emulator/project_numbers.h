#pragma once
// Google's answers name a project by its NUMBER (projects/123456789012/locations/...), while requests
// may name it by ID or number (observed in real job and model names; see docs/google-fidelity.md).
// With it on, the emulator answers as Google does: each project ID gets a fixed 12-digit number,
// requests naming that number are read as the ID, and every name in an answer carries the number.
#include <map>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

namespace vto::emulator {

class ProjectNumbers {
 public:
  // The number Google would give `id`: derived from it, 12 digits, never starting with 0.
  static std::string numberOf(const std::string& id);
  // `text` (a path or a request body) with each "projects/NUMBER" of a project seen before read as its ID;
  // each project ID it names is remembered.
  std::string toIds(const std::string& text);
  // Every string in `body` that starts with "projects/ID" names the project by its number instead.
  void toNumbers(nlohmann::json& body);

 private:
  std::mutex mutex_;
  std::map<std::string, std::string> idOfNumber_;
  std::map<std::string, std::string> numberOfId_;
};

}  // namespace vto::emulator
