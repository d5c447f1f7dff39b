#include "emulator/log_filter.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>
#include <utility>

#include "base/rfc3339.h"
#include "emulator/filter_scanner.h"
#include "emulator/list_filter.h"

namespace vto::emulator {
namespace {

constexpr const char* kSupported =
    "supported: resource.type, resource.labels.KEY, labels.KEY (or labels.\"KEY\"), logName, textPayload and insertId "
    "(= != :), severity (= != < <= > >= a LogSeverity name such as ERROR), timestamp and receiveTimestamp "
    "(= != < <= > >= an RFC 3339 time), each optionally negated with NOT, joined by AND";

constexpr std::array<std::pair<const char*, int>, 9> kSeverities = {{{"DEFAULT", 0},
                                                                     {"DEBUG", 100},
                                                                     {"INFO", 200},
                                                                     {"NOTICE", 300},
                                                                     {"WARNING", 400},
                                                                     {"ERROR", 500},
                                                                     {"CRITICAL", 600},
                                                                     {"ALERT", 700},
                                                                     {"EMERGENCY", 800}}};

std::invalid_argument refused(const std::string& filter, const std::string& problem) {
  return std::invalid_argument("filter \"" + filter.substr(0, 300) + "\": " + problem + "; " + kSupported);
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// A field path: names and quoted names joined by dots (labels."ml.googleapis.com/task_name").
std::vector<std::string> pathOf(FilterScanner& scanner) {
  std::vector<std::string> segments;
  scanner.skipSpace();
  do {
    segments.push_back(scanner.atQuote() ? scanner.quoted()
                                         : scanner.take([](unsigned char c) { return std::isalnum(c) || c == '_'; }));
  } while (scanner.at('.') && (scanner.skip(), true));
  return segments;
}

// The field a path names, with its key for labels; nullopt when it is not one this filter supports.
std::optional<std::pair<LogField, std::string>> fieldOf(const std::vector<std::string>& path) {
  if (path.size() == 1) {
    const auto& name = path[0];
    if (name == "logName" || name == "log_name") return std::make_pair(LogField::LogName, std::string());
    if (name == "severity") return std::make_pair(LogField::Severity, std::string());
    if (name == "timestamp") return std::make_pair(LogField::Timestamp, std::string());
    if (name == "receiveTimestamp" || name == "receive_timestamp") return std::make_pair(LogField::ReceiveTimestamp, std::string());
    if (name == "textPayload" || name == "text_payload") return std::make_pair(LogField::TextPayload, std::string());
    if (name == "insertId" || name == "insert_id") return std::make_pair(LogField::InsertId, std::string());
  }
  if (path.size() == 2 && path[0] == "resource" && path[1] == "type") return std::make_pair(LogField::ResourceType, std::string());
  if (path.size() == 3 && path[0] == "resource" && path[1] == "labels" && !path[2].empty()) {
    return std::make_pair(LogField::ResourceLabel, path[2]);
  }
  if (path.size() == 2 && path[0] == "labels" && !path[1].empty()) return std::make_pair(LogField::Label, path[1]);
  return std::nullopt;
}

}  // namespace

int logSeverity(const std::string& name) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  for (const auto& [known, number] : kSeverities) {
    if (upper == known) return number;
  }
  return -1;
}

std::string logSeverityName(int severity) {
  for (const auto& [name, number] : kSeverities) {
    if (number == severity) return name;
  }
  return "DEFAULT";
}

LogFilter LogFilter::parse(const std::string& text) {
  if (text.size() > 20000) throw std::invalid_argument("filter is longer than 20,000 characters");
  LogFilter filter;
  FilterScanner scanner(text);
  try {
    while (!scanner.done()) {
      if (!filter.terms_.empty()) scanner.keyword("AND");  // a space between terms also means AND
      if (scanner.keyword("OR")) throw refused(text, "OR is not supported");
      if (scanner.peek('(') || scanner.peek(')')) throw refused(text, "parentheses are not supported");
      Term term;
      if (scanner.keyword("NOT")) {
        term.negated = true;
      } else if (scanner.peek('-')) {
        scanner.skip();
        term.negated = true;
      }
      auto path = pathOf(scanner);
      std::string name;
      for (const auto& segment : path) name += (name.empty() ? "" : ".") + segment;
      auto field = fieldOf(path);
      term.op = scanner.symbol({"=~", "!~", "!=", "<=", ">=", "=", "<", ">", ":"});
      if (term.op.empty()) throw refused(text, "\"" + name + "\" is not followed by a comparison (a bare word searches every field, which is not supported)");
      if (!field) throw refused(text, "unknown field \"" + name + "\"");
      if (term.op == "=~" || term.op == "!~") throw refused(text, "regular expressions (" + term.op + ") are not supported");
      std::tie(term.field, term.key) = *field;
      term.value = scanner.value();
      bool ordered = term.op != "=" && term.op != "!=" && term.op != ":";
      switch (term.field) {
        case LogField::Severity:
          term.severity = logSeverity(term.value);
          if (term.severity < 0) throw refused(text, "unknown severity \"" + term.value + "\"");
          if (term.op == ":") throw refused(text, "severity takes = != < <= > >=");
          break;
        case LogField::Timestamp:
        case LogField::ReceiveTimestamp:
          if (term.op == ":") throw refused(text, name + " takes = != < <= > >=");
          try {
            term.time = parseRfc3339(term.value);
          } catch (const std::invalid_argument& error) {
            throw refused(text, name + " \"" + term.value + "\": " + error.what());
          }
          break;
        case LogField::InsertId:
          break;
        default:
          if (ordered) throw refused(text, name + " takes = != :");
      }
      filter.terms_.push_back(std::move(term));
    }
  } catch (const std::invalid_argument& error) {
    std::string message = error.what();
    if (message.rfind("filter \"", 0) == 0) throw;
    throw refused(text, message);
  }
  return filter;
}

bool LogFilter::matches(const LogEntryFields& entry) const {
  for (const auto& term : terms_) {
    if (matches(term, entry) == term.negated) return false;
  }
  return true;
}

bool LogFilter::matches(const Term& term, const LogEntryFields& entry) const {
  switch (term.field) {
    case LogField::Severity:
      return compareBy(entry.severity(), term.op, term.severity);
    case LogField::Timestamp:
    case LogField::ReceiveTimestamp:
      return compareBy(entry.time(term.field), term.op, term.time);
    default:
      break;
  }
  auto value = entry.text(term.field, term.key);
  if (!value) return term.op == "!=";
  if (term.op == ":") return term.value == "*" || lower(*value).find(lower(term.value)) != std::string::npos;
  return compareBy(*value, term.op, term.value);
}

std::optional<std::string> LogFilter::required(LogField field, const std::string& key) const {
  for (const auto& term : terms_) {
    if (!term.negated && term.op == "=" && term.field == field && term.key == key) return term.value;
  }
  return std::nullopt;
}

bool LogFilter::hasLowerBound(LogField field) const {
  return std::any_of(terms_.begin(), terms_.end(), [&](const Term& term) {
    return !term.negated && term.field == field && (term.op == ">" || term.op == ">=");
  });
}

}  // namespace vto::emulator
