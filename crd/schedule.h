#pragma once
// The schedule calculator of RetrainingPolicy triggers.schedule: cron in an IANA time zone, with Vixie
// cron's rules at daylight-saving changes (docs/retraining.md). Pure: no clock, no state, so the
// reconciler, `vto lint` and `vto schedule` all compute the same times.
#include <bitset>
#include <string>

#include "base/clock.h"

namespace vto::crd {

// A parsed 5-field cron or @hourly/@daily/@weekly/@monthly/@yearly (also @midnight, @annually).
struct CronSchedule {
  std::string expression;          // as written (trimmed)
  std::bitset<60> minutes;
  std::bitset<24> hours;
  std::bitset<32> daysOfMonth;     // 1..31
  std::bitset<13> months;          // 1..12
  std::bitset<7> daysOfWeek;       // 0..6, 0 = Sunday (7 in the expression is Sunday too)
  // A day field that begins with `*` (or `?`): as in cron, day-of-month and day-of-week must both
  // match unless both are restricted, then either may.
  bool daysOfMonthStar = false;
  bool daysOfWeekStar = false;
  // The minute or hour field begins with `*`: the job follows absolute time across DST changes (an
  // hourly job runs every hour); any other job is fixed-time (once per local day's slot).
  bool followsAbsoluteTime = false;
};

// Throws std::invalid_argument with what is wrong and a valid example.
CronSchedule parseCron(const std::string& expression);
// Throws std::invalid_argument naming the zone and advising an IANA name (e.g. Europe/Berlin).
void checkTimeZone(const std::string& timeZone);  // "" = UTC
// The first nominal fire time strictly after t. timeZone "" = UTC. Fixed-time jobs: a local time
// skipped by a forward jump fires once at the first instant after the gap, a repeated local time
// fires at its first occurrence. Throws std::invalid_argument for a bad zone or expression, and
// std::runtime_error when no fire time exists within kScheduleSearchYears (parseCron refuses
// schedules that can never fire, so this needs a pathological expression).
Clock::time_point nextScheduleAfter(const CronSchedule& cron, const std::string& timeZone, Clock::time_point t);
Clock::time_point nextScheduleAfter(const std::string& cron, const std::string& timeZone, Clock::time_point t);
// Jitter offset: fnv1a(policy uid) mod jitter, 0 <= offset < jitter (0 when jitter is 0).
Clock::duration jitterOffset(const std::string& uid, Clock::duration jitter);

// How far nextScheduleAfter looks: "Feb 29 that is a Sunday" can be 40 years away.
inline constexpr int kScheduleSearchYears = 60;

// The local time of t in the zone, to the minute, with the zone's abbreviation:
// "2026-10-25 02:30 CEST". Throws std::invalid_argument for a bad zone.
std::string formatLocalTime(Clock::time_point t, const std::string& timeZone);

}  // namespace vto::crd
