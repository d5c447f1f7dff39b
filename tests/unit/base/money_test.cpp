// Money (base/money.h): exact micro-dollars, parsed and printed in one place, saturating.
#include "base/money.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace vto {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

TEST(Money, ParsesAndPrintsInOnePlaceAndSaturates) {
  EXPECT_EQ(Usd::parse("250"), Usd::dollars(250));
  EXPECT_EQ(Usd::parse("99.50"), Usd::cents(9950));
  EXPECT_EQ(Usd::parse("0.5"), Usd::cents(50));
  for (const char* bad : {"", "-1", "1.234", "1e3", ".5", "5.", "abc", "9999999999", "1000000000.01", " 1"})
    EXPECT_FALSE(Usd::parse(bad).has_value()) << bad;
  EXPECT_EQ(Usd::micros(41'265'000).plain(), "41.27");
  EXPECT_EQ(Usd().plain(), "0.00");
  EXPECT_EQ(Usd::micros(218'500).plain(4), "0.2185");
  EXPECT_EQ(Usd::micros(4'980'125'000).display(), "$4,980.13");
  EXPECT_EQ(Usd::dollars(5000).display(), "$5,000");
  EXPECT_EQ(Usd::cents(123456750).display(), "$1,234,567.50");
  EXPECT_EQ((Usd() - Usd::cents(320)).display(), "-$3.20");
  // Every formatter handles any value, the extremes included.
  EXPECT_EQ(Usd::max().display(), "$9,223,372,036,854.78");
  EXPECT_EQ((Usd() - Usd::max()).display(), "-$9,223,372,036,854.78");
  EXPECT_EQ((Usd() - Usd::max()).plain(), "0.00");
  // Saturating, never wrapping round to a small or negative figure.
  EXPECT_EQ(Usd::max() + Usd::dollars(1), Usd::max());
  EXPECT_EQ(Usd::dollars(10000) * INT64_MAX, Usd::max());
  EXPECT_TRUE((Usd::max() + Usd::max()).saturated());
  EXPECT_EQ(Usd::dollars(1'000'000'000'000).forDuration(hours(24 * 365 * 100)), Usd::max());
  EXPECT_FALSE(Usd::fromDollars(std::nan("")).has_value());
  EXPECT_FALSE(Usd::fromDollars(INFINITY).has_value());
  EXPECT_FALSE(Usd::fromDollars(1e17).has_value());
  EXPECT_EQ(Usd::fromDollars(0.2185), Usd::micros(218'500));
  // Time at a price per hour, exact.
  EXPECT_EQ(Usd::dollars(3600).forDuration(seconds(1)), Usd::dollars(1));
  EXPECT_EQ(Usd::dollars(1).forDuration(-seconds(5)), Usd());
  EXPECT_EQ(Usd::dollars(3600).timeToSpend(Usd::dollars(10)), seconds(10));
  EXPECT_FALSE(Usd().timeToSpend(Usd::dollars(10)).has_value());
  EXPECT_EQ(Usd::micros(5'005'000).roundedToCents(), Usd::cents(501));
}

}  // namespace
}  // namespace vto
