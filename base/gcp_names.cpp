#include "base/gcp_names.h"

#include <algorithm>

namespace vto {
namespace {

bool lowerAlpha(char c) { return c >= 'a' && c <= 'z'; }
bool digit(char c) { return c >= '0' && c <= '9'; }

std::string quoted(std::string_view value) {
  return "\"" + std::string(value.substr(0, 64)) + (value.size() > 64 ? "...\"" : "\"");
}

}  // namespace

bool isProjectId(std::string_view p) {
  if (p.size() < 6 || p.size() > 30 || !lowerAlpha(p.front())) return false;
  if (!(lowerAlpha(p.back()) || digit(p.back()))) return false;
  return std::all_of(p.begin(), p.end(), [](char c) { return lowerAlpha(c) || digit(c) || c == '-'; });
}

bool isProjectNumber(std::string_view p) {
  return !p.empty() && p.size() <= 20 && std::all_of(p.begin(), p.end(), digit);
}

bool isVertexRegion(std::string_view l) {
  // [a-z]+ '-' [a-z]+ [0-9]+
  std::size_t i = 0;
  auto run = [&](bool (*pred)(char)) {
    auto start = i;
    while (i < l.size() && pred(l[i])) ++i;
    return i > start;
  };
  if (l.size() > 64 || !run(lowerAlpha)) return false;
  if (i >= l.size() || l[i] != '-') return false;
  ++i;
  if (!run(lowerAlpha) || !run(digit)) return false;
  return i == l.size();
}

bool isValidGcpLabelKey(std::string_view key) {
  return !key.empty() && key.size() <= 63 && lowerAlpha(key[0]) &&
         std::all_of(key.begin(), key.end(), [](char c) { return lowerAlpha(c) || digit(c) || c == '_' || c == '-'; });
}

bool isValidGcpLabelValue(std::string_view value) {
  return value.size() <= 63 &&
         std::all_of(value.begin(), value.end(), [](char c) { return lowerAlpha(c) || digit(c) || c == '_' || c == '-'; });
}

bool isModelId(std::string_view id) {
  return !id.empty() && id.size() <= 63 && (lowerAlpha(id[0]) || id[0] == '_') &&
         std::all_of(id.begin(), id.end(), [](char c) { return lowerAlpha(c) || digit(c) || c == '_' || c == '-'; });
}

bool isModelReference(std::string_view id) {
  if (isModelId(id)) return true;
  return !id.empty() && id.size() <= 20 && std::all_of(id.begin(), id.end(), digit);
}

bool isVersionAlias(std::string_view alias) {
  if (alias.size() < 2 || alias.size() > 128 || !lowerAlpha(alias.front())) return false;
  auto middle = alias.substr(1, alias.size() - 2);
  char last = alias.back();
  return std::all_of(middle.begin(), middle.end(), [](char c) { return lowerAlpha(c) || digit(c) || c == '-'; }) &&
         (lowerAlpha(last) || digit(last));
}

std::optional<std::string> checkProjectId(std::string_view field, std::string_view project) {
  if (isProjectId(project)) return std::nullopt;
  return std::string(field) + " " + quoted(project) + " " + std::string(kProjectIdRule);
}

std::optional<std::string> checkVertexRegion(std::string_view field, std::string_view location) {
  if (isVertexRegion(location)) return std::nullopt;
  return std::string(field) + " " + quoted(location) + " " + std::string(kRegionRule);
}

std::optional<std::string> checkModelId(std::string_view field, std::string_view id) {
  if (isModelId(id)) return std::nullopt;
  return std::string(field) + " " + quoted(id) + " " + std::string(kModelIdRule);
}

std::optional<std::string> checkVersionAlias(std::string_view field, std::string_view alias) {
  if (isVersionAlias(alias)) return std::nullopt;
  return std::string(field) + " " + quoted(alias) + " " + std::string(kVersionAliasRule);
}

std::optional<std::string> checkModelReference(std::string_view field, std::string_view id) {
  if (isModelReference(id)) return std::nullopt;
  return std::string(field) + " " + quoted(id) + " " + std::string(kModelReferenceRule);
}

}  // namespace vto
