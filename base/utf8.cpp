#include "base/utf8.h"

#include <cstdint>
#include <cstdio>

namespace vto {

namespace {

// Code points that move or hide text on a terminal or in a viewer: C1 controls, and the bidi
// marks, embeddings, overrides and isolates (a line that reads one way and runs another).
bool isInvisibleControl(std::uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

void appendEscape(std::string& out, const char* format, unsigned value) {
  char escaped[12];
  std::snprintf(escaped, sizeof escaped, format, value);
  out += escaped;
}

// The length of the valid UTF-8 sequence at text[i] and its code point, or 0 when it is not one
// (a stray continuation byte, a truncated or overlong sequence, a surrogate, beyond U+10FFFF).
std::size_t decodeAt(std::string_view text, std::size_t i, std::uint32_t& cp) {
  auto lead = static_cast<unsigned char>(text[i]);
  std::size_t length = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, cp = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, cp = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, cp = lead & 0x07;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    auto next = static_cast<unsigned char>(text[i + k]);
    if ((next & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (next & 0x3F);
  }
  if ((length == 3 && cp < 0x800) || (length == 4 && cp < 0x10000) || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
    return 0;
  }
  return length;
}

}  // namespace

std::string escapeControls(std::string_view text, bool keepLineFeeds) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) {
      if ((byte < 0x20 && byte != '\t' && !(keepLineFeeds && byte == '\n')) || byte == 0x7F) {
        appendEscape(out, "\\x%02x", byte);
      } else {
        out += static_cast<char>(byte);
      }
      ++i;
      continue;
    }
    std::uint32_t cp = 0;
    auto length = decodeAt(text, i, cp);
    if (length == 0) {
      appendEscape(out, "\\x%02x", byte);
      ++i;
    } else if (isInvisibleControl(cp)) {
      appendEscape(out, "\\u%04x", cp);
      i += length;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

}  // namespace vto
