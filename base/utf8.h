#pragma once
// Cutting text that may hold UTF-8 to a byte budget without splitting a character.
#include <cstddef>
#include <string_view>

namespace vto {

// The length of the longest prefix of `text` no longer than `max` bytes that ends on a character
// boundary.
inline std::size_t utf8PrefixLength(std::string_view text, std::size_t max) {
  if (text.size() <= max) return text.size();
  std::size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return end;
}

// The start of the longest suffix of `text` no longer than `max` bytes that starts on a character
// boundary.
inline std::size_t utf8SuffixStart(std::string_view text, std::size_t max) {
  if (text.size() <= max) return 0;
  std::size_t start = text.size() - max;
  while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
  return start;
}

}  // namespace vto
