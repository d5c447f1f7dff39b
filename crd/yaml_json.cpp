#include "crd/yaml_json.h"

#include <cctype>
#include <stdexcept>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>

#include <yaml-cpp/eventhandler.h>
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

json scalarToJson(const std::string& tag, const std::string& text) {
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

std::string lineOf(const YAML::Mark& mark, int firstLine) {
  return "line " + std::to_string(firstLine + mark.line + 1);
}

// Builds JSON straight from yaml-cpp's parser events instead of its node tree: the node tree
// shares aliased nodes, so a self-referencing alias became a cycle (a crash when converted) and a
// "billion laughs" file a few hundred bytes long expanded to gigabytes. Here every alias is copied
// against a budget, an alias to a node still being built (a cycle) is refused, and so is a key
// that appears twice in one map (the API server refuses duplicate fields too).
class JsonBuilder final : public YAML::EventHandler {
 public:
  explicit JsonBuilder(int firstLine) : firstLine_(firstLine) {}

  json take() { return std::move(result_); }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { add(mark, nullptr, anchor, 1, 0); }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    if (expectingKey()) {
      // A key is text whatever it looks like ("1", "true"); JSON object keys are strings.
      add(mark, value, anchor, 1, value.size());
      return;
    }
    add(mark, scalarToJson(tag, value), anchor, 1, value.size());
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto found = anchors_.find(anchor);
    if (found == anchors_.end())
      throw std::runtime_error(lineOf(mark, firstLine_) +
                               ": a YAML alias refers to the node that contains it (a cycle); write the value out");
    const Anchored& anchored = found->second;
    aliasNodes_ += anchored.nodes;
    aliasBytes_ += anchored.bytes;
    if (aliasNodes_ > kMaxAliasNodes || aliasBytes_ > kMaxAliasBytes)
      throw std::runtime_error(lineOf(mark, firstLine_) + ": YAML aliases are limited to " +
                               std::to_string(kMaxAliasNodes) + " expansions (and " +
                               std::to_string(kMaxAliasBytes / 1024) + " KiB of copied text); write the value out");
    add(mark, anchored.value, 0, anchored.nodes, anchored.bytes);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, json::array(), anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, json::object(), anchor);
  }
  void OnMapEnd() override { close(); }

 private:
  static constexpr size_t kMaxAliasNodes = 10000;
  static constexpr size_t kMaxAliasBytes = 1024 * 1024;
  static constexpr size_t kMaxAnchoredNodes = 100000;
  static constexpr size_t kMaxAnchoredBytes = 4 * 1024 * 1024;

  struct Frame {
    json value;
    YAML::anchor_t anchor = 0;
    YAML::Mark mark;
    size_t nodes = 1;  // nodes in this subtree, aliases counted at their copied size
    size_t bytes = 0;  // scalar text in this subtree
    std::optional<std::string> key;  // maps: the key whose value comes next
  };
  struct Anchored {
    json value;
    size_t nodes = 0;
    size_t bytes = 0;
  };

  bool expectingKey() const { return !stack_.empty() && stack_.back().value.is_object() && !stack_.back().key; }

  void open(const YAML::Mark& mark, json value, YAML::anchor_t anchor) {
    if (expectingKey())
      throw std::runtime_error(lineOf(mark, firstLine_) + ": map keys must be plain strings");
    stack_.push_back({std::move(value), anchor, mark, 1, 0, std::nullopt});
  }

  void close() {
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    add(frame.mark, std::move(frame.value), frame.anchor, frame.nodes, frame.bytes);
  }

  // Places a finished node in its parent (or as the document) and remembers it if anchored.
  void add(const YAML::Mark& mark, json value, YAML::anchor_t anchor, size_t nodes, size_t bytes) {
    if (anchor != 0) {
      // Each anchor keeps a copy: nested anchors over one large value would multiply it.
      anchoredNodes_ += nodes;
      anchoredBytes_ += bytes;
      if (anchoredNodes_ > kMaxAnchoredNodes || anchoredBytes_ > kMaxAnchoredBytes)
        throw std::runtime_error(lineOf(mark, firstLine_) + ": YAML anchors may hold at most " +
                                 std::to_string(kMaxAnchoredBytes / (1024 * 1024)) +
                                 " MiB of text in all; write the values out instead of anchoring them");
      anchors_[anchor] = {value, nodes, bytes};
    }
    if (stack_.empty()) {
      result_ = std::move(value);
      return;
    }
    Frame& parent = stack_.back();
    parent.nodes += nodes;
    parent.bytes += bytes;
    if (parent.value.is_array()) {
      parent.value.push_back(std::move(value));
    } else if (!parent.key) {
      if (!value.is_string())
        throw std::runtime_error(lineOf(mark, firstLine_) + ": map keys must be plain strings");
      auto key = value.get<std::string>();
      if (parent.value.contains(key))
        throw std::runtime_error(lineOf(mark, firstLine_) + ": duplicate key \"" + key +
                                 "\" (the API server refuses it too); keep one of them");
      parent.key = std::move(key);
    } else {
      parent.value[*parent.key] = std::move(value);
      parent.key.reset();
    }
  }

  int firstLine_;
  std::vector<Frame> stack_;
  std::map<YAML::anchor_t, Anchored> anchors_;
  size_t aliasNodes_ = 0;
  size_t aliasBytes_ = 0;
  size_t anchoredNodes_ = 0;
  size_t anchoredBytes_ = 0;
  json result_;
};

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
    JsonBuilder builder(document.firstLine);
    try {
      std::istringstream in(document.text);
      YAML::Parser parser(in);
      parser.HandleNextDocument(builder);
    } catch (const YAML::Exception& e) {
      throw std::runtime_error("not valid YAML: line " + std::to_string(document.firstLine + e.mark.line + 1) +
                               ", column " + std::to_string(e.mark.column + 1) + ": " + e.msg);
    }
    json doc = builder.take();
    if (!doc.is_null()) out.push_back(std::move(doc));
  }
  return out;
}

}  // namespace vto::crd
