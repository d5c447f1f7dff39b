#pragma once
// Cutting text that may hold UTF-8 to a byte budget without splitting a character, and making text
// someone else wrote safe to show.
#include <cstddef>
#include <string>
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

// Text from a job (its log lines, Vertex's error message) as status, an Event or a terminal may show
// it: each control character but tab (C0, DEL, and C1 U+0080..U+009F) and each bidi control
// (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069) written as an escape ("\x1b", "\u202e"),
// and each byte that is not part of valid UTF-8 as "\xNN". Line feeds too unless `keepLineFeeds`.
// The one filter for such text: valid UTF-8 out, nothing in it that can move the cursor, recolour
// a terminal or make a line read in another order than it runs.
std::string escapeControls(std::string_view text, bool keepLineFeeds = false);

}  // namespace vto
