// The schedule calculator (crd/schedule.h): cron syntax, the day-of-month/day-of-week rule, and
// Vixie cron's DST rules in real IANA zones (docs/retraining.md has the same table for users).
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <set>

#include "base/rfc3339.h"
#include "crd/schedule.h"
#include "crd/timestamp.h"

namespace vto::crd {
namespace {

Clock::time_point at(const std::string& rfc3339) { return parseRfc3339(rfc3339); }

// The fire times after `after`, as RFC 3339 text.
std::vector<std::string> next(const std::string& cron, const std::string& zone, const std::string& after, int count) {
  std::vector<std::string> out;
  auto t = at(after);
  for (int i = 0; i < count; ++i) {
    t = nextScheduleAfter(cron, zone, t);
    out.push_back(rfc3339Exact(t));
  }
  return out;
}

using Times = std::vector<std::string>;

std::string parseError(const std::string& cron) {
  try {
    parseCron(cron);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

// --- DST: the table of docs/retraining.md ---

TEST(ScheduleDst, BerlinSpringForwardFixedTimeFiresOnceRightAfterTheGap) {
  // 2026-03-29 02:00 CET -> 03:00 CEST (01:00Z): 02:30 does not exist that night.
  EXPECT_EQ(next("30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", 3),
            (Times{"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z"}));
  // Every fixed time inside the gap lands on the same instant, which fires once.
  EXPECT_EQ(next("0,15,30,45 2 * * *", "Europe/Berlin", "2026-03-29T00:50:00Z", 2),
            (Times{"2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z"}));
}

TEST(ScheduleDst, BerlinFallBackFixedTimeFiresOnceAtTheFirstOccurrence) {
  // 2026-10-25 03:00 CEST -> 02:00 CET (01:00Z): 02:30 happens at 00:30Z and again at 01:30Z.
  EXPECT_EQ(next("30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", 2), (Times{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}));
}

TEST(ScheduleDst, BerlinHourlyJobFollowsAbsoluteTime) {
  EXPECT_EQ(next("30 * * * *", "Europe/Berlin", "2026-10-25T00:00:00Z", 3),
            (Times{"2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z", "2026-10-25T02:30:00Z"}));
  // Spring: local 02:30 does not exist, so 01:30 CET (00:30Z) is followed by 03:30 CEST (01:30Z).
  EXPECT_EQ(next("30 * * * *", "Europe/Berlin", "2026-03-29T00:00:00Z", 2), (Times{"2026-03-29T00:30:00Z", "2026-03-29T01:30:00Z"}));
  // A stepped minute field begins with `*` too: both 02:00-02:59 hours of the fall-back night run.
  EXPECT_EQ(next("*/30 2 * * *", "Europe/Berlin", "2026-10-24T23:00:00Z", 5),
            (Times{"2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:00:00Z", "2026-10-25T01:30:00Z",
                   "2026-10-26T01:00:00Z"}));
  // ...and on the spring-forward night that hour does not exist, so nothing runs until the next day.
  EXPECT_EQ(next("*/30 2 * * *", "Europe/Berlin", "2026-03-28T23:00:00Z", 1), (Times{"2026-03-30T00:00:00Z"}));
  EXPECT_TRUE(parseCron("*/30 2 * * *").followsAbsoluteTime);
  EXPECT_TRUE(parseCron("@hourly").followsAbsoluteTime);
  EXPECT_FALSE(parseCron("0 3 * * *").followsAbsoluteTime);
  EXPECT_FALSE(parseCron("0-59 0-23 * * *").followsAbsoluteTime);
}

TEST(ScheduleDst, BerlinFixedTimeMovesWithTheOffset) {
  EXPECT_EQ(next("0 3 * * *", "Europe/Berlin", "2026-03-28T00:00:00Z", 2), (Times{"2026-03-28T02:00:00Z", "2026-03-29T01:00:00Z"}));
  EXPECT_EQ(next("0 3 * * *", "Europe/Berlin", "2026-10-24T00:00:00Z", 2), (Times{"2026-10-24T01:00:00Z", "2026-10-25T02:00:00Z"}));
}

TEST(ScheduleDst, NewYorkSpringForward) {
  // 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z).
  EXPECT_EQ(next("30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", 2), (Times{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}));
  EXPECT_EQ(next("0 * * * *", "America/New_York", "2026-03-08T05:30:00Z", 2), (Times{"2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z"}));
}

TEST(ScheduleDst, NewYorkFallBack) {
  // 2026-11-01 02:00 EDT -> 01:00 EST (06:00Z): 01:30 happens at 05:30Z and 06:30Z.
  EXPECT_EQ(next("30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", 2), (Times{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}));
  EXPECT_EQ(next("30 * * * *", "America/New_York", "2026-11-01T05:00:00Z", 3),
            (Times{"2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:30:00Z"}));
}

TEST(ScheduleDst, LordHoweHalfHourShift) {
  // Lord Howe moves its clocks by 30 minutes. 2026-04-05 02:00 +11 -> 01:30 +1030 (04-04T15:00Z).
  EXPECT_EQ(next("45 1 * * *", "Australia/Lord_Howe", "2026-04-04T12:00:00Z", 2), (Times{"2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"}));
  EXPECT_EQ(next("45 * * * *", "Australia/Lord_Howe", "2026-04-04T14:00:00Z", 3),
            (Times{"2026-04-04T14:45:00Z", "2026-04-04T15:15:00Z", "2026-04-04T16:15:00Z"}));
  // 2026-10-04 02:00 +1030 -> 02:30 +11 (10-03T15:30Z): 02:15 does not exist that night.
  EXPECT_EQ(next("15 2 * * *", "Australia/Lord_Howe", "2026-10-03T12:00:00Z", 2), (Times{"2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"}));
  EXPECT_EQ(next("15 * * * *", "Australia/Lord_Howe", "2026-10-03T14:30:00Z", 2), (Times{"2026-10-03T14:45:00Z", "2026-10-03T16:15:00Z"}));
}

TEST(ScheduleDst, SamoaSkippedAWholeDay) {
  // Pacific/Apia jumped from -10 to +14 at 2011-12-30T10:00Z: local Dec 30 never happened. Its 12:00
  // fires once when the gap ends (Dec 31 00:00 local), then Dec 31 12:00 as usual.
  EXPECT_EQ(next("0 12 * * *", "Pacific/Apia", "2011-12-29T23:00:00Z", 2), (Times{"2011-12-30T10:00:00Z", "2011-12-30T22:00:00Z"}));
}

// --- calendar rules ---

TEST(Schedule, StrictlyAfterAndWholeMinutes) {
  EXPECT_EQ(next("0 3 * * *", "", "2026-05-18T03:00:00Z", 1), (Times{"2026-05-19T03:00:00Z"}));
  EXPECT_EQ(next("0 3 * * *", "", "2026-05-18T02:59:59.999Z", 1), (Times{"2026-05-18T03:00:00Z"}));
  EXPECT_EQ(next("* * * * *", "UTC", "2026-05-18T03:00:30Z", 2), (Times{"2026-05-18T03:01:00Z", "2026-05-18T03:02:00Z"}));
}

TEST(Schedule, FebruaryTwentyNinth) {
  EXPECT_EQ(next("0 12 29 2 *", "", "2026-01-01T00:00:00Z", 2), (Times{"2028-02-29T12:00:00Z", "2032-02-29T12:00:00Z"}));
  // Feb 29 that is a Sunday (day-of-week begins with `*`, so both must match): 2032, decades apart.
  EXPECT_EQ(next("0 0 29 2 */7", "", "2026-01-01T00:00:00Z", 1), (Times{"2032-02-29T00:00:00Z"}));
}

TEST(Schedule, ThirtyFirstSkipsShortMonths) {
  EXPECT_EQ(next("0 0 31 * *", "", "2026-01-31T00:00:00Z", 3), (Times{"2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z", "2026-07-31T00:00:00Z"}));
}

TEST(Schedule, DayOfMonthOrDayOfWeekWhenBothAreRestricted) {
  // The 13th or any Friday: 2026-04-10 is a Friday, 04-13 a Monday.
  EXPECT_EQ(next("0 0 13 * 5", "", "2026-04-10T00:00:00Z", 2), (Times{"2026-04-13T00:00:00Z", "2026-04-17T00:00:00Z"}));
  // A day field beginning with `*` makes it AND: days 1, 11, 21, 31 that are Mondays.
  EXPECT_EQ(next("0 0 */10 * mon", "", "2026-01-01T00:00:00Z", 1), (Times{"2026-05-11T00:00:00Z"}));
  // `?` is `*` in the day fields.
  EXPECT_EQ(next("0 0 ? * mon", "", "2026-04-10T00:00:00Z", 1), (Times{"2026-04-13T00:00:00Z"}));
}

TEST(Schedule, NamesAreCaseInsensitiveAndSevenIsSunday) {
  EXPECT_EQ(next("0 9 * jan,JUL MON-fri", "", "2026-01-30T10:00:00Z", 1), (Times{"2026-07-01T09:00:00Z"}));
  EXPECT_EQ(parseCron("0 0 * * 7").daysOfWeek, parseCron("0 0 * * sun").daysOfWeek);
  EXPECT_EQ(parseCron("0 0 * * 5-7").daysOfWeek, parseCron("0 0 * * fri,sat,sun").daysOfWeek);
  EXPECT_EQ(parseCron("0 0 1 Feb-apr *").months, parseCron("0 0 1 2,3,4 *").months);
}

TEST(Schedule, RangesStepsAndLists) {
  EXPECT_EQ(next("*/15 * * * *", "", "2026-05-18T10:07:00Z", 2), (Times{"2026-05-18T10:15:00Z", "2026-05-18T10:30:00Z"}));
  EXPECT_EQ(next("5-20/5 * * * *", "", "2026-05-18T10:20:00Z", 2), (Times{"2026-05-18T11:05:00Z", "2026-05-18T11:10:00Z"}));
  EXPECT_EQ(next("10/20 * * * *", "", "2026-05-18T10:30:00Z", 2), (Times{"2026-05-18T10:50:00Z", "2026-05-18T11:10:00Z"}));
  EXPECT_EQ(next("0 8-10,17 * * *", "", "2026-05-18T10:00:00Z", 2), (Times{"2026-05-18T17:00:00Z", "2026-05-19T08:00:00Z"}));
}

TEST(Schedule, Macros) {
  const std::string after = "2026-05-18T10:07:00Z";  // a Monday
  EXPECT_EQ(next("@hourly", "", after, 1), (Times{"2026-05-18T11:00:00Z"}));
  EXPECT_EQ(next("@daily", "", after, 1), (Times{"2026-05-19T00:00:00Z"}));
  EXPECT_EQ(next("@midnight", "", after, 1), (Times{"2026-05-19T00:00:00Z"}));
  EXPECT_EQ(next("@weekly", "", after, 1), (Times{"2026-05-24T00:00:00Z"}));
  EXPECT_EQ(next("@monthly", "", after, 1), (Times{"2026-06-01T00:00:00Z"}));
  EXPECT_EQ(next("@yearly", "", after, 1), (Times{"2027-01-01T00:00:00Z"}));
  EXPECT_EQ(next("@annually", "", after, 1), (Times{"2027-01-01T00:00:00Z"}));
  EXPECT_EQ(next("@daily", "Europe/Berlin", after, 1), (Times{"2026-05-18T22:00:00Z"}));
}

TEST(Schedule, ManySuccessiveTimesAreIncreasingAndMatch) {
  auto t = at("2026-01-01T00:00:00Z");
  for (int i = 0; i < 2000; ++i) {
    auto n = nextScheduleAfter("*/7 * * * *", "Asia/Kolkata", t);
    ASSERT_GT(n, t);
    ASSERT_LE(n - t, Clock::duration(std::chrono::minutes(7)));
    ASSERT_EQ(std::stoi(formatLocalTime(n, "Asia/Kolkata").substr(14, 2)) % 7, 0) << rfc3339Exact(n);
    t = n;
  }
}

// --- bad input: each message says what is wrong and shows a valid example ---

TEST(ScheduleErrors, ImpossibleDaysAreRefusedAtParseTime) {
  for (const char* cron : {"0 0 31 2 *", "0 0 30 2 *", "0 0 31 4,6,9,11 *"}) {
    auto message = parseError(cron);
    EXPECT_NE(message.find("never fires"), std::string::npos) << cron << ": " << message;
  }
  EXPECT_EQ(parseError("0 0 29 2 *"), "(accepted)");
}

TEST(ScheduleErrors, EachMessageNamesTheProblemAndAnExample) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"every monday", "has 2 fields, not 5"},
      {"61 * * * *", "minute value 61 is out of range 0-59"},
      {"0 24 * * *", "hour value 24 is out of range 0-23"},
      {"0 0 0 * *", "day-of-month value 0 is out of range 1-31"},
      {"0 0 * 13 *", "month value 13 is out of range 1-12"},
      {"0 0 * * 8", "day-of-week value 8 is out of range 0-7"},
      {"*/0 * * * *", "a step of 0 never advances"},
      {"5-1 * * * *", "runs backwards"},
      {"0 0 * foo *", "\"foo\" is not a number or a name (jan, feb"},
      {"0 0 * * funday", "\"funday\" is not a number or a name (sun, mon"},
      {"0 0 1,,2 * *", "empty list item"},
      {"@fortnightly", "not a known macro"},
      {"", "the expression is empty"},
      {"0 0 * * * *", "has 6 fields, not 5"},
  };
  for (const auto& [cron, expected] : cases) {
    auto message = parseError(cron);
    EXPECT_NE(message.find(expected), std::string::npos) << cron << ": " << message;
    EXPECT_NE(message.find("e.g. \"0 3 * * 1\""), std::string::npos) << cron << ": " << message;
  }
}

TEST(ScheduleErrors, TimeZoneInsideTheExpressionPointsToTimeZone) {
  for (const char* cron : {"TZ=Europe/Berlin 0 3 * * *", "CRON_TZ=UTC 0 3 * * *", "  tz=UTC 0 3 * * *"}) {
    auto message = parseError(cron);
    EXPECT_NE(message.find("use the timeZone field instead"), std::string::npos) << cron << ": " << message;
  }
}

TEST(ScheduleErrors, UnknownZonesAreRefusedWithAdvice) {
  EXPECT_NO_THROW(checkTimeZone(""));
  EXPECT_NO_THROW(checkTimeZone("UTC"));
  EXPECT_NO_THROW(checkTimeZone("Europe/Berlin"));
  for (const char* zone : {"Mars/Olympus", "CEST", "../../etc/passwd", "Europe/Berlin "}) {
    try {
      checkTimeZone(zone);
      ADD_FAILURE() << zone << " accepted";
    } catch (const std::invalid_argument& e) {
      std::string message = e.what();
      EXPECT_NE(message.find(std::string("\"") + zone + "\""), std::string::npos) << message;
      EXPECT_NE(message.find("IANA time zone name such as Europe/Berlin"), std::string::npos) << message;
    }
  }
  EXPECT_THROW(nextScheduleAfter("@daily", "Mars/Olympus", at("2026-01-01T00:00:00Z")), std::invalid_argument);
}

// --- jitter and display ---

TEST(Schedule, JitterIsAStableHashInsideTheWindow) {
  using namespace std::chrono_literals;
  EXPECT_EQ(jitterOffset("0b6c1f4e-1111-2222-3333-444455556666", Clock::duration::zero()), Clock::duration::zero());
  EXPECT_EQ(jitterOffset("a", 10min), jitterOffset("a", 10min));
  // Kubernetes uids are random UUIDs; 200 of them over 600 one-second slots.
  std::mt19937 random(7);
  std::set<Clock::duration::rep> distinct;
  for (int i = 0; i < 200; ++i) {
    char uid[40];
    std::snprintf(uid, sizeof uid, "%08x-%04x-4%03x-8%03x-%012llx", static_cast<unsigned>(random()), static_cast<unsigned>(random() & 0xffff),
                  static_cast<unsigned>(random() & 0xfff), static_cast<unsigned>(random() & 0xfff),
                  static_cast<unsigned long long>(random()) << 16 | (random() & 0xffff));
    auto offset = jitterOffset(uid, 10min);
    ASSERT_GE(offset, Clock::duration::zero());
    ASSERT_LT(offset, Clock::duration(10min));
    EXPECT_EQ(offset % std::chrono::seconds(1), Clock::duration::zero());
    distinct.insert(offset.count());
  }
  EXPECT_GT(distinct.size(), 140u);  // 200 policies do not start together (a fair hash gives ~170)
  auto tiny = jitterOffset("x", 500ms);
  EXPECT_LT(tiny, Clock::duration(500ms));
}

TEST(Schedule, LocalTimeShowsTheZoneAbbreviation) {
  EXPECT_EQ(formatLocalTime(at("2026-10-25T00:30:00Z"), "Europe/Berlin"), "2026-10-25 02:30 CEST");
  EXPECT_EQ(formatLocalTime(at("2026-10-25T01:30:00Z"), "Europe/Berlin"), "2026-10-25 02:30 CET");
  EXPECT_EQ(formatLocalTime(at("2026-10-25T01:30:00Z"), ""), "2026-10-25 01:30 UTC");
}

TEST(Timestamp, RoundTripsAndKeepsFractions) {
  EXPECT_EQ(rfc3339Exact(at("2026-05-18T03:00:00Z")), "2026-05-18T03:00:00Z");
  EXPECT_EQ(rfc3339Exact(at("2026-05-18T05:00:00+02:00")), "2026-05-18T03:00:00Z");
  EXPECT_EQ(rfc3339Exact(at("2026-05-18T03:00:00.123400Z")), "2026-05-18T03:00:00.1234Z");
  EXPECT_THROW(parseRfc3339("2026-05-18 03:00:00"), std::invalid_argument);
  EXPECT_THROW(parseRfc3339("2026-02-30T03:00:00Z"), std::invalid_argument);
  EXPECT_THROW(parseRfc3339("2026-05-18T03:00:00"), std::invalid_argument);
}

}  // namespace
}  // namespace vto::crd
