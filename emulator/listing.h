#pragma once
// What every List method of the emulated Vertex API shares: page tokens (an offset into a list in
// creation order, opaque to clients), page sizes and read masks.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace vto::emulator {

std::string pageToken(std::size_t offset);
// Throws vertex::ApiError(400) for a token that pageToken() did not make.
std::size_t pageOffset(const std::string& token);
// The page size for a request's pageSize (0: the default; above the maximum: the maximum). Throws
// vertex::ApiError(400) when it is negative.
std::size_t pageSizeOf(int requested, std::size_t defaultSize = 100, std::size_t maxSize = 1000);
// The pageSize query parameter (0 when absent); throws vertex::ApiError(400) when it is not a number.
int pageSizeParameter(const std::map<std::string, std::string>& query);

// The fields of `resource` that `readMask` names (lowerCamelCase paths, as SchemaValidator::fieldMask
// gives them), at the same places; a path through a list keeps that field of each item.
nlohmann::json applyReadMask(const nlohmann::json& resource, const std::vector<std::vector<std::string>>& readMask);

}  // namespace vto::emulator
