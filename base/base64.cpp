#include "base/base64.h"

#include <stdexcept>

namespace vto {
namespace {

constexpr std::string_view kStandard = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view kUrlSafe = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string decode(std::string_view text, std::string_view alphabet) {
  std::string out;
  unsigned value = 0;
  int bits = 0;
  size_t end = text.find('=');
  if (end != std::string_view::npos && text.find_first_not_of('=', end) != std::string_view::npos)
    throw std::invalid_argument("base64 has characters after its padding");
  for (char c : text.substr(0, end)) {
    auto index = alphabet.find(c);
    if (index == std::string_view::npos) throw std::invalid_argument("invalid base64 character");
    value = (value << 6) | static_cast<unsigned>(index);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((value >> bits) & 255);
    }
  }
  return out;
}

std::string encode(std::string_view bytes, std::string_view alphabet) {
  std::string out;
  unsigned value = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    value = (value << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += alphabet[(value >> bits) & 63];
    }
  }
  if (bits > 0) out += alphabet[(value << (6 - bits)) & 63];
  return out;
}

}  // namespace

std::string base64Encode(std::string_view bytes) {
  auto out = encode(bytes, kStandard);
  out.append((4 - out.size() % 4) % 4, '=');
  return out;
}

std::string base64Decode(std::string_view text) { return decode(text, kStandard); }

std::string base64UrlEncode(std::string_view bytes) { return encode(bytes, kUrlSafe); }  // unpadded, as JWS requires

std::string base64UrlDecode(std::string_view text) { return decode(text, kUrlSafe); }

}  // namespace vto
