#include "emulator/list_filter.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "base/rfc3339.h"
#include "emulator/filter_scanner.h"
#include "vertex/json_codec.h"

namespace vto::emulator {
namespace {

constexpr const char* kSupported =
    "supported: display_name (= != :), state (= !=), create_time and update_time (= != < <= > >=) "
    "with RFC 3339 values, labels.KEY (= and :*), joined by AND";

// `pattern` with `*` wildcards, as display_name:"my_job_*".
bool wildcardMatch(const std::string& pattern, const std::string& text) {
  std::size_t p = 0, t = 0, star = std::string::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == text[t]) {
      ++p, ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++, mark = t;
    } else if (star != std::string::npos) {
      p = star + 1, t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace

ListFilter ListFilter::parse(const std::string& text) {
  ListFilter filter;
  FilterScanner scanner(text);
  while (!scanner.done()) {
    if (!filter.terms_.empty() && !scanner.keyword("AND")) {
      throw std::invalid_argument("filter \"" + text + "\": terms must be joined by AND; " + kSupported);
    }
    Term term;
    term.negated = scanner.keyword("NOT");
    scanner.skipSpace();
    term.field = scanner.take([](unsigned char c) { return std::isalnum(c) || c == '_' || c == '.' || c == '-'; });
    term.op = scanner.symbol({"!=", "<=", ">=", "=", "<", ">", ":"});
    try {
      term.value = scanner.value();
    } catch (const std::invalid_argument&) {
      throw std::invalid_argument("unterminated string in filter \"" + text + "\"");
    }
    bool isLabel = term.field.rfind("labels.", 0) == 0 && term.field.size() > 7;
    bool isTime = term.field == "create_time" || term.field == "update_time";
    bool valid = !term.op.empty() && !term.value.empty() &&
                 ((term.field == "display_name" && (term.op == "=" || term.op == "!=" || term.op == ":")) ||
                  (term.field == "state" && (term.op == "=" || term.op == "!=")) ||
                  (isLabel && (term.op == "=" || term.op == "!=" || term.op == ":")) || (isTime && term.op != ":"));
    if (!valid) {
      throw std::invalid_argument("filter \"" + text + "\": cannot use term \"" + term.field + term.op + term.value +
                                  "\"; " + kSupported);
    }
    if (term.field == "state" && !vertex::jobStateFromName(term.value)) {
      throw std::invalid_argument("filter \"" + text + "\": unknown state \"" + term.value +
                                  "\"; use a JOB_STATE_* name such as JOB_STATE_RUNNING");
    }
    if (isTime) parseRfc3339(term.value);  // throws with the expected format
    filter.terms_.push_back(term);
  }
  return filter;
}

bool ListFilter::matches(const nlohmann::json& job) const {
  for (const auto& term : terms_) {
    if (matches(term, job) == term.negated) return false;
  }
  return true;
}

std::optional<std::pair<std::string, std::string>> ListFilter::requiredLabel() const {
  for (const auto& term : terms_) {
    if (!term.negated && term.op == "=" && term.field.rfind("labels.", 0) == 0) return std::make_pair(term.field.substr(7), term.value);
  }
  return std::nullopt;
}

bool ListFilter::onlyLabels() const {
  return std::all_of(terms_.begin(), terms_.end(), [](const Term& term) { return term.field.rfind("labels.", 0) == 0; });
}

bool ListFilter::matches(const Term& term, const nlohmann::json& job) const {
  if (term.field == "display_name") {
    auto name = job.value("displayName", std::string());
    return term.op == ":" ? wildcardMatch(term.value, name) : compareBy(name, term.op, term.value);
  }
  if (term.field == "state") return compareBy(job.value("state", std::string()), term.op, term.value);
  if (term.field == "create_time" || term.field == "update_time") {
    auto field = term.field == "create_time" ? "createTime" : "updateTime";
    if (!job.contains(field)) return false;
    return compareBy(parseRfc3339(job[field].get<std::string>()), term.op, parseRfc3339(term.value));
  }
  auto key = term.field.substr(7);
  auto labels = job.value("labels", nlohmann::json::object());
  if (term.op == ":") return labels.contains(key) && (term.value == "*" || wildcardMatch(term.value, labels[key].get<std::string>()));
  auto value = labels.contains(key) ? labels[key].get<std::string>() : std::string();
  return labels.contains(key) ? compareBy(value, term.op, term.value) : term.op == "!=";
}

}  // namespace vto::emulator
