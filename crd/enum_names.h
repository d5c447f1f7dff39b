#pragma once
// One table per enum maps C++ values to the names written in manifests, so decoding, encoding and
// error messages ("must be one of: None, Mirrored, ...") all come from the same list.
#include <string>
#include <utility>
#include <vector>

#include "crd/strict_json.h"

namespace vto::crd {

template <typename E>
using EnumNames = std::vector<std::pair<E, const char*>>;

template <typename E>
std::string enumName(E value, const EnumNames<E>& names) {
  for (const auto& [v, n] : names)
    if (v == value) return n;
  return "";
}

template <typename E>
std::string enumChoices(const EnumNames<E>& names) {
  std::string out;
  for (const auto& [v, n] : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

template <typename E>
E readEnum(const json& value, const std::string& path, const EnumNames<E>& names) {
  auto text = readString(value, path);
  for (const auto& [v, n] : names)
    if (text == n) return v;
  throw DecodeError(path, "\"" + text + "\" is not valid; use one of: " + enumChoices(names));
}

}  // namespace vto::crd
