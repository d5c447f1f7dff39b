#include "crd/labels.h"

#include <cstdint>
#include <cstdio>

namespace vto::crd {
namespace {
bool isLabelChar(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'; }

uint32_t fnv1a(const std::string& text) {
  uint32_t hash = 2166136261u;
  for (unsigned char c : text) hash = (hash ^ c) * 16777619u;
  return hash;
}
}  // namespace


std::string sanitizeLabelValue(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c >= 'A' && c <= 'Z') out += static_cast<char>(c - 'A' + 'a');
    else out += isLabelChar(c) ? c : '-';
  }
  if (out.size() <= kMaxGcpLabelLength) return out;
  char suffix[10];
  std::snprintf(suffix, sizeof suffix, "-%08x", fnv1a(text));
  return out.substr(0, kMaxGcpLabelLength - 9) + suffix;
}

}  // namespace vto::crd
