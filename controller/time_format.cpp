#include "controller/time_format.h"

#include <cstdio>
#include <ctime>

namespace vto::controller {
namespace {

std::string format(Clock::time_point t, bool micro) {
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  std::time_t seconds = static_cast<std::time_t>(micros / 1000000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  if (!micro) return std::string(text) + "Z";
  char result[48];
  std::snprintf(result, sizeof result, "%s.%06lldZ", text, static_cast<long long>(micros % 1000000));
  return result;
}

}  // namespace

std::string rfc3339(Clock::time_point t) { return format(t, false); }
std::string rfc3339Micro(Clock::time_point t) { return format(t, true); }

}  // namespace vto::controller
