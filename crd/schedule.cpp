#include "crd/schedule.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <vector>

#include <date/tz.h>

namespace vto::crd {
namespace {

using std::chrono::minutes;
using LocalMinutes = date::local_time<minutes>;

constexpr const char* kCronExample = "e.g. \"0 3 * * 1\" (03:00 every Monday) or \"*/15 * * * *\" (every 15 minutes)";
constexpr size_t kMaxExpressionLength = 256;

struct FieldSpec {
  const char* name;
  int min;
  int max;
  std::vector<std::string> names;  // names[i] is the value min + i ("jan" = 1, "sun" = 0)
};

const FieldSpec kMinute{"minute", 0, 59, {}};
const FieldSpec kHour{"hour", 0, 23, {}};
const FieldSpec kDayOfMonth{"day-of-month", 1, 31, {}};
const FieldSpec kMonth{"month", 1, 12, {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}};
// 7 is Sunday as well as 0 (folded after parsing).
const FieldSpec kDayOfWeek{"day-of-week", 0, 7, {"sun", "mon", "tue", "wed", "thu", "fri", "sat"}};

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

class CronError {
 public:
  explicit CronError(const std::string& expression) : expression_(expression) {}
  std::invalid_argument operator()(const std::string& what) const {
    return std::invalid_argument("cron \"" + expression_ + "\": " + what + "; write 5 fields (minute hour day-of-month month " +
                                 "day-of-week) or @hourly/@daily/@weekly/@monthly/@yearly, " + kCronExample);
  }

 private:
  std::string expression_;
};

// One value: a number or (for month and day-of-week) a name.
int parseValue(const std::string& text, const FieldSpec& spec, const std::string& field, const CronError& error) {
  if (text.empty()) throw error(std::string(spec.name) + " field \"" + field + "\" has an empty value");
  if (std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    if (text.size() > 4) throw error(std::string(spec.name) + " value " + text + " is out of range " + std::to_string(spec.min) + "-" + std::to_string(spec.max));
    int value = std::stoi(text);
    if (value < spec.min || value > spec.max)
      throw error(std::string(spec.name) + " value " + text + " is out of range " + std::to_string(spec.min) + "-" + std::to_string(spec.max));
    return value;
  }
  auto name = lower(text);
  for (size_t i = 0; i < spec.names.size(); ++i)
    if (spec.names[i] == name) return spec.min + static_cast<int>(i);
  std::string known;
  for (const auto& n : spec.names) known += (known.empty() ? "" : ", ") + n;
  throw error(std::string(spec.name) + " field \"" + field + "\": \"" + text + "\" is not a number" +
              (known.empty() ? "" : " or a name (" + known + ")"));
}

// A comma-separated list of `*`, `N`, `N-M`, each with an optional `/STEP`. Returns the bits of
// spec.min..spec.max (bit i = value i) and whether the field begins with `*`.
std::vector<bool> parseField(const std::string& field, const FieldSpec& spec, bool allowQuestionMark, const CronError& error,
                             bool& star) {
  std::vector<bool> bits(spec.max + 1, false);
  star = !field.empty() && (field[0] == '*' || (allowQuestionMark && field[0] == '?'));
  size_t start = 0;
  while (true) {
    size_t comma = field.find(',', start);
    std::string item = field.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) throw error(std::string(spec.name) + " field \"" + field + "\" has an empty list item");
    std::string range = item;
    int step = 1;
    if (auto slash = item.find('/'); slash != std::string::npos) {
      range = item.substr(0, slash);
      std::string stepText = item.substr(slash + 1);
      if (stepText.empty() || stepText.size() > 4 ||
          !std::all_of(stepText.begin(), stepText.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
        throw error(std::string(spec.name) + " field \"" + field + "\": the step after / must be a positive number");
      step = std::stoi(stepText);
      if (step == 0) throw error(std::string(spec.name) + " field \"" + field + "\": a step of 0 never advances; use 1 or more");
    }
    int low = spec.min, high = spec.max;
    if (range == "*" || (allowQuestionMark && range == "?")) {
      // the whole range
    } else if (auto dash = range.find('-'); dash != std::string::npos) {
      low = parseValue(range.substr(0, dash), spec, field, error);
      high = parseValue(range.substr(dash + 1), spec, field, error);
      if (low > high)
        throw error(std::string(spec.name) + " range \"" + range + "\" runs backwards; write the smaller value first, e.g. " +
                    (spec.names.empty() ? "1-5" : spec.names[0] + "-" + spec.names[spec.names.size() - 1]));
    } else {
      low = parseValue(range, spec, field, error);
      // "N/STEP" means from N to the end, as in most crons; a bare N is N alone.
      high = item.find('/') == std::string::npos ? low : spec.max;
    }
    for (int v = low; v <= high; v += step) bits[v] = true;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return bits;
}

template <size_t N>
std::bitset<N> toBits(const std::vector<bool>& values) {
  std::bitset<N> out;
  for (size_t i = 0; i < values.size() && i < N; ++i) out[i] = values[i];
  return out;
}

bool dayMatches(const CronSchedule& cron, date::sys_days day) {
  date::year_month_day ymd{day};
  if (!cron.months[static_cast<unsigned>(ymd.month())]) return false;
  bool dom = cron.daysOfMonth[static_cast<unsigned>(ymd.day())];
  bool dow = cron.daysOfWeek[date::weekday{day}.c_encoding()];
  return (cron.daysOfMonthStar || cron.daysOfWeekStar) ? (dom && dow) : (dom || dow);
}

// The first local minute >= from (and < limit) whose calendar fields match, scanning days, not minutes.
std::optional<LocalMinutes> nextLocalMatch(const CronSchedule& cron, LocalMinutes from, LocalMinutes limit) {
  auto day = std::chrono::floor<date::days>(from);
  auto inDay = from - day;
  int startHour = static_cast<int>(inDay.count() / 60), startMinute = static_cast<int>(inDay.count() % 60);
  while (day < limit) {
    date::sys_days sysDay{day.time_since_epoch()};
    date::year_month_day ymd{sysDay};
    if (!cron.months[static_cast<unsigned>(ymd.month())]) {
      // Skip the rest of a month that never matches.
      auto next = date::sys_days{(ymd.year() / ymd.month() + date::months{1}) / 1};
      day = date::local_days{next.time_since_epoch()};
      startHour = startMinute = 0;
      continue;
    }
    if (dayMatches(cron, sysDay)) {
      for (int h = startHour; h < 24; ++h) {
        if (!cron.hours[h]) continue;
        for (int m = h == startHour ? startMinute : 0; m < 60; ++m) {
          if (!cron.minutes[m]) continue;
          auto at = day + std::chrono::hours(h) + minutes(m);
          if (at >= limit) return std::nullopt;
          return at;
        }
      }
    }
    day += date::days{1};
    startHour = startMinute = 0;
  }
  return std::nullopt;
}

// Schedules whose days never occur (`0 0 31 2 *`, `0 0 30 2 *`) are refused at parse time. 28 years
// hold every (month, day, weekday) combination, Feb 29 on each weekday included.
bool canEverFire(const CronSchedule& cron) {
  auto first = date::sys_days{date::year{2001} / 1 / 1};
  auto last = date::sys_days{date::year{2029} / 1 / 1};
  for (auto day = first; day < last; day += date::days{1})
    if (dayMatches(cron, day)) return true;
  return false;
}

const date::time_zone* zoneFor(const std::string& timeZone) {
  static const char* kAdvice = "; use an IANA time zone name such as Europe/Berlin, America/New_York or UTC "
                               "(the list: timedatectl list-timezones, or /usr/share/zoneinfo)";
  std::string name = timeZone.empty() ? "UTC" : timeZone;
  bool plausible = name.size() <= 64 && name.find("..") == std::string::npos && name[0] != '/' &&
                   std::all_of(name.begin(), name.end(), [](char c) {
                     return std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '_' || c == '-' || c == '+';
                   });
  // Shown in messages, Events and conditions: bounded.
  std::string shown = timeZone.size() > 80 ? timeZone.substr(0, 80) + "..." : timeZone;
  if (!plausible) throw std::invalid_argument("time zone \"" + shown + "\" is not a time zone name" + kAdvice);
  try {
    return date::locate_zone(name);
  } catch (const std::exception&) {
    throw std::invalid_argument("unknown time zone \"" + shown + "\"" + kAdvice);
  }
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

}  // namespace

CronSchedule parseCron(const std::string& expression) {
  std::string text = trim(expression);
  CronError error(text.size() > kMaxExpressionLength ? text.substr(0, 40) + "..." : text);
  if (text.empty()) throw error("the expression is empty");
  if (text.size() > kMaxExpressionLength) throw error("the expression is longer than " + std::to_string(kMaxExpressionLength) + " characters");
  std::string upper = text;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper.rfind("TZ=", 0) == 0 || upper.rfind("CRON_TZ=", 0) == 0)
    throw std::invalid_argument("cron \"" + text + "\" sets a time zone (TZ= or CRON_TZ=); use the timeZone field instead, e.g. "
                                "cron: \"0 3 * * 1\" with timeZone: Europe/Berlin");
  std::string fiveFields = text;
  if (text[0] == '@') {
    static const std::vector<std::pair<std::string, std::string>> kMacros = {
        {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"}, {"@weekly", "0 0 * * 0"},
        {"@daily", "0 0 * * *"},  {"@midnight", "0 0 * * *"}, {"@hourly", "0 * * * *"}};
    auto macro = std::find_if(kMacros.begin(), kMacros.end(), [&](const auto& m) { return m.first == lower(text); });
    if (macro == kMacros.end()) throw error("\"" + text + "\" is not a known macro (@hourly, @daily, @midnight, @weekly, @monthly, @yearly, @annually)");
    fiveFields = macro->second;
  }
  std::vector<std::string> fields;
  for (size_t i = 0; i < fiveFields.size();) {
    if (fiveFields[i] == ' ' || fiveFields[i] == '\t') {
      ++i;
      continue;
    }
    size_t end = fiveFields.find_first_of(" \t", i);
    if (end == std::string::npos) end = fiveFields.size();
    fields.push_back(fiveFields.substr(i, end - i));
    i = end;
  }
  if (fields.size() != 5) throw error("has " + std::to_string(fields.size()) + " field" + (fields.size() == 1 ? "" : "s") + ", not 5");
  CronSchedule cron;
  cron.expression = text;
  bool minuteStar = false, hourStar = false, monthStar = false;
  cron.minutes = toBits<60>(parseField(fields[0], kMinute, false, error, minuteStar));
  cron.hours = toBits<24>(parseField(fields[1], kHour, false, error, hourStar));
  cron.daysOfMonth = toBits<32>(parseField(fields[2], kDayOfMonth, true, error, cron.daysOfMonthStar));
  cron.months = toBits<13>(parseField(fields[3], kMonth, false, error, monthStar));
  auto dow = parseField(fields[4], kDayOfWeek, true, error, cron.daysOfWeekStar);
  if (dow[7]) dow[0] = true;
  cron.daysOfWeek = toBits<7>(dow);
  cron.followsAbsoluteTime = minuteStar || hourStar;
  if (!canEverFire(cron))
    throw error("it never fires: day-of-month " + fields[2] + " does not occur in month " + fields[3] +
                " (February has 28 or 29 days; April, June, September and November 30); choose days that exist");
  return cron;
}

void checkTimeZone(const std::string& timeZone) { zoneFor(timeZone); }

Clock::time_point nextScheduleAfter(const CronSchedule& cron, const std::string& timeZone, Clock::time_point t) {
  const date::time_zone* zone = zoneFor(timeZone);
  auto horizon = std::chrono::floor<std::chrono::seconds>(t + date::years{kScheduleSearchYears});
  // Fire times are whole minutes; the first one strictly after t is at or after this.
  auto first = std::chrono::floor<minutes>(t) + minutes(1);
  if (cron.followsAbsoluteTime) {
    // Walk the zone's offset periods: within one, local time is UTC plus a fixed offset, so every
    // matching local minute inside the period is one real instant (both 02:30s of a fall-back night).
    auto cursor = date::sys_time<minutes>(first);
    while (cursor < horizon) {
      auto info = zone->get_info(cursor);
      auto offset = std::chrono::duration_cast<minutes>(info.offset);
      auto periodEnd = std::min(info.end, horizon);  // sys_seconds; the last period of UTC ends at max()
      auto localFrom = LocalMinutes{(cursor + offset).time_since_epoch()};
      auto localLimit = LocalMinutes{(std::chrono::ceil<minutes>(periodEnd) + offset).time_since_epoch()};
      if (auto match = nextLocalMatch(cron, localFrom, localLimit)) return date::sys_time<minutes>{match->time_since_epoch()} - offset;
      if (info.end >= horizon) break;
      cursor = std::chrono::ceil<minutes>(info.end);
    }
  } else {
    // Fixed-time job: walk matching local times in order; each maps to one instant (a skipped one to
    // the end of the gap, a repeated one to its first occurrence), and that map never decreases, so
    // the first instant after t is the answer. Start a day early: no offset change exceeds a day.
    auto offsetNow = std::chrono::duration_cast<minutes>(zone->get_info(t).offset);
    auto from = LocalMinutes{(std::chrono::floor<minutes>(t) + offsetNow).time_since_epoch()} - date::days{1};
    auto limit = LocalMinutes{(std::chrono::floor<minutes>(horizon) + offsetNow).time_since_epoch()};
    while (auto match = nextLocalMatch(cron, from, limit)) {
      auto at = zone->to_sys(*match, date::choose::earliest);
      if (at > t) return at;
      from = *match + minutes(1);
    }
  }
  throw std::runtime_error("cron \"" + cron.expression + "\" has no fire time in the " + std::to_string(kScheduleSearchYears) +
                           " years after the given time; choose days that occur, e.g. \"0 0 1 * *\"");
}

Clock::time_point nextScheduleAfter(const std::string& cron, const std::string& timeZone, Clock::time_point t) {
  return nextScheduleAfter(parseCron(cron), timeZone, t);
}

Clock::duration jitterOffset(const std::string& uid, Clock::duration jitter) {
  if (jitter <= Clock::duration::zero()) return Clock::duration::zero();
  uint64_t hash = 14695981039346656037ull;  // FNV-1a, 64 bit
  for (unsigned char c : uid) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  // Whole seconds when the jitter allows it, so start times read cleanly.
  auto seconds = std::chrono::floor<std::chrono::seconds>(jitter).count();
  if (seconds > 0) return std::chrono::seconds(static_cast<int64_t>(hash % static_cast<uint64_t>(seconds)));
  return Clock::duration(static_cast<Clock::duration::rep>(hash % static_cast<uint64_t>(jitter.count())));
}

std::string formatLocalTime(Clock::time_point t, const std::string& timeZone) {
  const date::time_zone* zone = zoneFor(timeZone);
  auto at = std::chrono::floor<minutes>(t);
  auto info = zone->get_info(at);
  auto local = at + std::chrono::duration_cast<minutes>(info.offset);
  auto day = std::chrono::floor<date::days>(local);
  date::year_month_day ymd{day};
  auto inDay = (local - day).count();
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02u-%02u %02d:%02d ", static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                static_cast<unsigned>(ymd.day()), static_cast<int>(inDay / 60), static_cast<int>(inDay % 60));
  return text + info.abbrev;
}

}  // namespace vto::crd
