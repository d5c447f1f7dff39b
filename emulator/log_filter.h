#pragma once
// The `filter` of Cloud Logging's entries.list: a subset of the Logging query language, refused with
// what is supported rather than half understood. Comparisons joined by AND (or by a space, which the
// language reads as AND), each optionally negated with NOT or a leading -:
//   resource.type="ml_job"  resource.labels.job_id="123"  labels."ml.googleapis.com/task_name"="workerpool0-0"
//   severity>=ERROR  timestamp>="2026-05-18T00:00:00Z"  logName="projects/p/logs/workerpool0-0"  textPayload:"loss"
// Values may be quoted or bare; `:` is "has" (a case-insensitive substring; `:*` a present field).
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"

namespace vto::emulator {

enum class LogField { LogName, ResourceType, ResourceLabel, Label, Severity, Timestamp, ReceiveTimestamp, TextPayload, InsertId };

// What a filter reads of one log entry.
class LogEntryFields {
 public:
  virtual ~LogEntryFields() = default;
  // A text field (LogName, ResourceType, ResourceLabel and Label with their key, TextPayload,
  // InsertId); nullopt when the entry does not have it.
  virtual std::optional<std::string> text(LogField field, const std::string& key) const = 0;
  virtual int severity() const = 0;  // LogSeverity number: INFO 200, ERROR 500
  virtual Clock::time_point time(LogField field) const = 0;  // Timestamp or ReceiveTimestamp
};

// The LogSeverity number of a name (case-insensitive: DEFAULT 0 ... EMERGENCY 800); -1 when unknown.
int logSeverity(const std::string& name);
// The name of a LogSeverity number that logSeverity() knows.
std::string logSeverityName(int severity);

class LogFilter {
 public:
  // Throws std::invalid_argument saying what is wrong and what is supported.
  static LogFilter parse(const std::string& text);
  bool matches(const LogEntryFields& entry) const;
  // The value that every matching entry has for `field`/`key` (a term `field="value"` not negated):
  // lets a store look up, e.g., one job's entries instead of testing every entry.
  std::optional<std::string> required(LogField field, const std::string& key = "") const;
  // Whether a term (not negated) gives `field` a lower bound (> or >=).
  bool hasLowerBound(LogField field) const;

 private:
  struct Term {
    bool negated = false;
    LogField field = LogField::LogName;
    std::string key;  // the label of ResourceLabel and Label
    std::string op;   // = != < <= > >= :
    std::string value;
    int severity = 0;
    Clock::time_point time;
  };
  bool matches(const Term& term, const LogEntryFields& entry) const;
  std::vector<Term> terms_;
};

}  // namespace vto::emulator
