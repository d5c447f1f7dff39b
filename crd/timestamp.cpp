#include "crd/timestamp.h"

#include <cctype>
#include <stdexcept>

#include <date/date.h>

namespace vto::crd {
namespace {

// Reads exactly `digits` decimal digits at text[pos]; -1 when they are not there.
int readDigits(const std::string& text, size_t& pos, size_t digits) {
  if (pos + digits > text.size()) return -1;
  int value = 0;
  for (size_t i = 0; i < digits; ++i) {
    char c = text[pos + i];
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
    value = value * 10 + (c - '0');
  }
  pos += digits;
  return value;
}

bool expect(const std::string& text, size_t& pos, char c) {
  if (pos >= text.size() || (text[pos] != c && !(c == 'T' && text[pos] == 't'))) return false;
  ++pos;
  return true;
}

}  // namespace

std::string formatTimestamp(Clock::time_point time) {
  auto day = std::chrono::floor<date::days>(time);
  date::year_month_day ymd{day};
  auto inDay = time - day;
  auto seconds = std::chrono::floor<std::chrono::seconds>(inDay);
  auto fraction = std::chrono::duration_cast<std::chrono::nanoseconds>(inDay - seconds).count();
  long long s = seconds.count();
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02u-%02uT%02lld:%02lld:%02lld", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()), s / 3600, s / 60 % 60, s % 60);
  std::string out = text;
  if (fraction) {
    char digits[16];
    std::snprintf(digits, sizeof digits, ".%09lld", static_cast<long long>(fraction));
    std::string f = digits;
    while (f.back() == '0') f.pop_back();
    out += f;
  }
  return out + "Z";
}

Clock::time_point parseTimestamp(const std::string& text) {
  auto fail = [&]() -> std::invalid_argument {
    return std::invalid_argument("\"" + text + "\" is not an RFC 3339 time; write one like 2026-05-18T03:00:00Z");
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
  date::year_month_day ymd{date::year{year}, date::month{static_cast<unsigned>(month)}, date::day{static_cast<unsigned>(day)}};
  if (!ymd.ok() || hour > 23 || minute > 59 || second > 60) throw fail();
  std::chrono::nanoseconds fraction{0};
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int64_t scale = 100000000;
    size_t start = pos;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
      if (pos - start >= 9) throw fail();
      fraction += std::chrono::nanoseconds((text[pos] - '0') * scale);
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
    int oh = readDigits(text, pos, 2);
    if (oh < 0 || !expect(text, pos, ':')) throw fail();
    int om = readDigits(text, pos, 2);
    if (om < 0 || oh > 23 || om > 59) throw fail();
    offset = std::chrono::minutes(sign * (oh * 60 + om));
  } else {
    throw fail();
  }
  if (pos != text.size()) throw fail();
  auto local = date::sys_days{ymd} + std::chrono::hours(hour) + std::chrono::minutes(minute) + std::chrono::seconds(second);
  return std::chrono::time_point_cast<Clock::duration>(local - offset + fraction);
}

Clock::time_point readTimestamp(const json& value, const std::string& path) {
  auto text = readString(value, path);
  try {
    return parseTimestamp(text);
  } catch (const std::invalid_argument& e) {
    throw DecodeError(path, e.what());
  }
}

}  // namespace vto::crd
