#include "emulator/listing.h"

#include "base/base64.h"
#include "vertex/api_error.h"

namespace vto::emulator {
namespace {

void copyMasked(const nlohmann::json& from, nlohmann::json& to, const std::vector<std::string>& path, size_t depth) {
  if (!from.is_object()) return;
  auto found = from.find(path[depth]);
  if (found == from.end()) return;
  if (depth + 1 == path.size()) {
    to[path[depth]] = *found;
  } else if (found->is_array()) {
    auto& items = to[path[depth]];
    if (!items.is_array()) items = nlohmann::json::array();
    for (size_t i = 0; i < found->size(); ++i) {
      if (items.size() <= i) items.push_back(nlohmann::json::object());
      copyMasked((*found)[i], items[i], path, depth + 1);
    }
  } else {
    auto& inner = to[path[depth]];
    if (!inner.is_object()) inner = nlohmann::json::object();
    copyMasked(*found, inner, path, depth + 1);
  }
}

}  // namespace

std::string pageToken(std::size_t offset) { return base64UrlEncode("offset:" + std::to_string(offset)); }

std::size_t pageOffset(const std::string& token) {
  if (token.empty()) return 0;
  try {
    auto decoded = base64UrlDecode(token);
    if (decoded.rfind("offset:", 0) == 0) return std::stoul(decoded.substr(7));
  } catch (const std::exception&) {
  }
  throw vertex::ApiError(400, "INVALID_ARGUMENT",
                         "Invalid page token \"" + token + "\"; pass the nextPageToken of the previous page.");
}

std::size_t pageSizeOf(int requested, std::size_t defaultSize, std::size_t maxSize) {
  if (requested < 0) throw vertex::ApiError(400, "INVALID_ARGUMENT", "pageSize must not be negative.");
  return requested == 0 ? defaultSize : std::min<std::size_t>(requested, maxSize);
}

int pageSizeParameter(const std::map<std::string, std::string>& query) {
  auto found = query.find("pageSize");
  if (found == query.end()) return 0;
  try {
    return std::stoi(found->second);
  } catch (const std::exception&) {
    throw vertex::ApiError(400, "INVALID_ARGUMENT", "pageSize \"" + found->second + "\" is not a number.");
  }
}

nlohmann::json applyReadMask(const nlohmann::json& resource, const std::vector<std::vector<std::string>>& readMask) {
  if (readMask.empty()) return resource;
  nlohmann::json masked = nlohmann::json::object();
  for (const auto& path : readMask) copyMasked(resource, masked, path, 0);
  return masked;
}

}  // namespace vto::emulator
