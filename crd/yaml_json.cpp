#include "crd/yaml_json.h"

#include <cctype>
#include <stdexcept>
#include <string_view>

#include <yaml-cpp/yaml.h>

namespace vto::crd {
namespace {

using nlohmann::json;

// Scanners instead of std::regex: libstdc++'s regex recurses per character and can overflow the
// stack on a long scalar.
size_t skipDigits(const std::string& text, size_t i) {
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  return i;
}

// YAML 1.2 core schema integer: [-+]?[0-9]+
bool isInteger(const std::string& text) {
  size_t start = (!text.empty() && (text[0] == '-' || text[0] == '+')) ? 1 : 0;
  return text.size() > start && skipDigits(text, start) == text.size();
}

// YAML 1.2 core schema float: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool isFloat(const std::string& text) {
  size_t i = (!text.empty() && (text[0] == '-' || text[0] == '+')) ? 1 : 0;
  size_t intEnd = skipDigits(text, i);
  bool digits = intEnd > i;
  i = intEnd;
  if (i < text.size() && text[i] == '.') {
    size_t fracEnd = skipDigits(text, i + 1);
    digits = digits || fracEnd > i + 1;
    i = fracEnd;
  }
  if (!digits) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    size_t expEnd = skipDigits(text, i);
    if (expEnd == i) return false;
    i = expEnd;
  }
  return i == text.size();
}

json scalarToJson(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  const std::string& tag = node.Tag();
  // "!" marks a quoted scalar; an explicit !!str tag also keeps the text as it is.
  if (tag == "!" || tag == "tag:yaml.org,2002:str") return text;
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") return nullptr;
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  try {
    if (isInteger(text)) {
      if (text[0] == '-') return std::stoll(text);
      return std::stoull(text[0] == '+' ? text.substr(1) : text);
    }
    if (isFloat(text)) return std::stod(text);
  } catch (const std::out_of_range&) {
    // Too large for 64 bits or a double: keep the text rather than lose digits.
  }
  return text;
}

json toJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: return nullptr;
    case YAML::NodeType::Scalar: return scalarToJson(node);
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& item : node) out.push_back(toJson(item));
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& entry : node) {
        if (!entry.first.IsScalar())
          throw std::runtime_error("line " + std::to_string(entry.first.Mark().line + 1) +
                                   ": map keys must be plain strings");
        out[entry.first.Scalar()] = toJson(entry.second);
      }
      return out;
    }
  }
  return nullptr;
}

// The byte offset of the first invalid UTF-8 sequence or control character YAML does not allow
// (anything below 0x20 but tab, LF, CR; and DEL), or npos. yaml-cpp 0.7 can loop forever on such
// bytes (found by tests/fuzz), and YAML manifests never contain them.
size_t unreadableByteOffset(const std::string& text) {
  size_t i = 0;
  while (i < text.size()) {
    auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) return i;
    size_t length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || i + length > text.size()) return i;
    for (size_t k = 1; k < length; ++k)
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return i;
    i += length;
  }
  return std::string::npos;
}

struct DocumentText {
  std::string text;
  int firstLine = 0;  // 0-based line of the document's first line in the whole stream
};

// Splits a stream at "---" lines (what yaml-cpp's LoadAll does), so each document is loaded on its
// own: yaml-cpp 0.7's LoadAll can loop forever on some invalid input such as a lone ","
// (jbeder/yaml-cpp#1040, fixed upstream after 0.8). A "..." line ends a document too.
std::vector<DocumentText> splitDocuments(const std::string& text) {
  std::vector<DocumentText> out(1);
  int line = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view current(text.data() + start, end - start);
    if (!current.empty() && current.back() == '\r') current.remove_suffix(1);
    auto isMarker = [&](std::string_view marker) {
      return current.substr(0, 3) == marker && (current.size() == 3 || current[3] == ' ' || current[3] == '\t');
    };
    if (isMarker("---")) {
      out.push_back({std::string(current.substr(3)) + "\n", line});
    } else if (isMarker("...")) {
      out.push_back({"", line + 1});
    } else {
      out.back().text.append(current).append("\n");
    }
    ++line;
    start = end + 1;
  }
  return out;
}

}  // namespace

std::vector<json> parseYamlDocuments(const std::string& text) {
  if (size_t bad = unreadableByteOffset(text); bad != std::string::npos)
    throw std::runtime_error("not valid UTF-8 text at byte " + std::to_string(bad) +
                             " (a control character or broken encoding); save the manifest as UTF-8 text");
  std::vector<json> out;
  for (const auto& document : splitDocuments(text)) {
    YAML::Node node;
    try {
      node = YAML::Load(document.text);
    } catch (const YAML::Exception& e) {
      throw std::runtime_error("not valid YAML: line " + std::to_string(document.firstLine + e.mark.line + 1) +
                               ", column " + std::to_string(e.mark.column + 1) + ": " + e.msg);
    }
    json doc = toJson(node);
    if (!doc.is_null()) out.push_back(std::move(doc));
  }
  return out;
}

}  // namespace vto::crd
