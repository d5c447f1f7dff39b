#pragma once
// The tokens of the filter languages the emulator reads (list filters, AIP-160, and Cloud Logging's
// query language): keywords, names, comparison symbols and values, quoted or bare.
#include <cctype>
#include <initializer_list>
#include <stdexcept>
#include <string>

namespace vto::emulator {

class FilterScanner {
 public:
  explicit FilterScanner(const std::string& text) : text_(text) {}

  bool done() {
    skipSpace();
    return pos_ >= text_.size();
  }
  // Whether the next character, after spaces, is `c` (not consumed).
  bool peek(char c) {
    skipSpace();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  void skip() { ++pos_; }
  // An upper-case keyword (AND, OR, NOT) standing alone; consumed when it is there.
  bool keyword(const std::string& word) {
    skipSpace();
    if (text_.compare(pos_, word.size(), word) != 0) return false;
    auto after = pos_ + word.size();
    if (after < text_.size() && !std::isspace(static_cast<unsigned char>(text_[after])) && text_[after] != '(') return false;
    pos_ = after;
    return true;
  }
  // The characters from here that `allowed` accepts (possibly none), without skipping spaces first.
  template <typename Allowed>
  std::string take(Allowed allowed) {
    auto start = pos_;
    while (pos_ < text_.size() && allowed(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    return text_.substr(start, pos_ - start);
  }
  bool atQuote() const { return pos_ < text_.size() && text_[pos_] == '"'; }
  bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  // The first of `symbols` found here, after spaces, consumed; "" when none is.
  std::string symbol(std::initializer_list<const char*> symbols) {
    skipSpace();
    for (const char* candidate : symbols) {
      std::string symbol(candidate);
      if (text_.compare(pos_, symbol.size(), symbol) == 0) {
        pos_ += symbol.size();
        return symbol;
      }
    }
    return "";
  }
  // A "quoted string" (with \" and \\ escapes) or a bare word up to a space or a parenthesis.
  std::string value() {
    skipSpace();
    if (atQuote()) return quoted();
    return take([](unsigned char c) { return !std::isspace(c) && c != '(' && c != ')'; });
  }
  // The "quoted string" that starts here. Throws std::invalid_argument when it does not end.
  std::string quoted() {
    std::string out;
    for (++pos_; pos_ < text_.size(); ++pos_) {
      char c = text_[pos_];
      if (c == '\\' && pos_ + 1 < text_.size()) {
        out += text_[++pos_];
      } else if (c == '"') {
        ++pos_;
        return out;
      } else {
        out += c;
      }
    }
    throw std::invalid_argument("unterminated string");
  }
  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

 private:
  const std::string& text_;
  std::size_t pos_ = 0;
};

}  // namespace vto::emulator
