#include "base/rfc3339.h"

#include <cstdint>
#include <cstdio>
#include <stdexcept>

namespace vto {
namespace {

using std::chrono::duration_cast;
using std::chrono::nanoseconds;

// `digits` digits of the fraction of a second (0: none), then `Z`; `trim` drops trailing zeros.
std::string format(Clock::time_point t, int digits, bool trim) {
  auto day = std::chrono::floor<std::chrono::days>(t);
  std::chrono::year_month_day ymd{day};
  auto inDay = duration_cast<nanoseconds>(t - day);
  long long s = std::chrono::floor<std::chrono::seconds>(inDay).count();
  long long nanos = inDay.count() - s * 1000000000LL;
  char text[48];
  int n = std::snprintf(text, sizeof text, "%04d-%02u-%02uT%02lld:%02lld:%02lld", static_cast<int>(ymd.year()),
                        static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()), s / 3600, s / 60 % 60,
                        s % 60);
  std::string out(text, static_cast<size_t>(n));
  if (digits > 0) {
    char fraction[16];
    std::snprintf(fraction, sizeof fraction, "%09lld", nanos);
    std::string_view kept(fraction, static_cast<size_t>(digits));
    if (trim) {
      while (!kept.empty() && kept.back() == '0') kept.remove_suffix(1);
    }
    if (!kept.empty()) {
      out += '.';
      out += kept;
    }
  }
  out += 'Z';
  return out;
}

// Reads exactly `digits` decimal digits at text[pos]; -1 when they are not there.
int readDigits(std::string_view text, size_t& pos, size_t digits) {
  if (pos + digits > text.size()) return -1;
  int value = 0;
  for (size_t i = 0; i < digits; ++i) {
    char c = text[pos + i];
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  pos += digits;
  return value;
}

bool expect(std::string_view text, size_t& pos, char c) {
  if (pos >= text.size() || (text[pos] != c && !(c == 'T' && text[pos] == 't'))) return false;
  ++pos;
  return true;
}

}  // namespace

std::string rfc3339(Clock::time_point t) { return format(t, 0, false); }
std::string rfc3339Millis(Clock::time_point t) { return format(t, 3, false); }
std::string rfc3339Micro(Clock::time_point t) { return format(t, 6, false); }
std::string rfc3339Exact(Clock::time_point t) { return format(t, 9, true); }

Clock::time_point parseRfc3339(std::string_view text) {
  auto fail = [&]() -> std::invalid_argument {
    return std::invalid_argument("\"" + std::string(text) +
                                 "\" is not an RFC 3339 time; write one like 2026-05-18T03:00:00Z");
  };
  size_t pos = 0;
  int year = readDigits(text, pos, 4);
  if (year < 0 || !expect(text, pos, '-')) throw fail();
  int month = readDigits(text, pos, 2);
  if (month < 0 || !expect(text, pos, '-')) throw fail();
  int day = readDigits(text, pos, 2);
  if (day < 0 || !expect(text, pos, 'T')) throw fail();
  int hour = readDigits(text, pos, 2);
  if (hour < 0 || !expect(text, pos, ':')) throw fail();
  int minute = readDigits(text, pos, 2);
  if (minute < 0 || !expect(text, pos, ':')) throw fail();
  int second = readDigits(text, pos, 2);
  if (second < 0) throw fail();
  std::chrono::year_month_day ymd{std::chrono::year{year}, std::chrono::month{static_cast<unsigned>(month)},
                                  std::chrono::day{static_cast<unsigned>(day)}};
  if (!ymd.ok() || hour > 23 || minute > 59 || second > 60) throw fail();
  nanoseconds fraction{0};
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int64_t scale = 100000000;
    size_t start = pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (pos - start >= 9) throw fail();
      fraction += nanoseconds((text[pos] - '0') * scale);
      scale /= 10;
      ++pos;
    }
    if (pos == start) throw fail();
  }
  std::chrono::minutes offset{0};
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int sign = text[pos] == '-' ? -1 : 1;
    ++pos;
    int offsetHours = readDigits(text, pos, 2);
    if (offsetHours < 0 || !expect(text, pos, ':')) throw fail();
    int offsetMinutes = readDigits(text, pos, 2);
    if (offsetMinutes < 0 || offsetHours > 23 || offsetMinutes > 59) throw fail();
    offset = std::chrono::minutes(sign * (offsetHours * 60 + offsetMinutes));
  } else {
    throw fail();
  }
  if (pos != text.size()) throw fail();
  auto local = std::chrono::sys_days{ymd} + std::chrono::hours(hour) + std::chrono::minutes(minute) +
               std::chrono::seconds(second);
  return std::chrono::time_point_cast<Clock::duration>(local - offset + fraction);
}

std::optional<Clock::time_point> parseRfc3339OrNone(std::string_view text) {
  if (text.empty()) return std::nullopt;
  try {
    return parseRfc3339(text);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

}  // namespace vto
