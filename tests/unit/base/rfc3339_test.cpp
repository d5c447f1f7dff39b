#include "base/rfc3339.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace vto {
namespace {

using namespace std::chrono_literals;

TEST(Rfc3339, EachPrecisionWritesItsOwnForm) {
  auto t = parseRfc3339("2026-05-18T10:00:00.123456789Z");
  EXPECT_EQ(rfc3339(t), "2026-05-18T10:00:00Z");
  EXPECT_EQ(rfc3339Millis(t), "2026-05-18T10:00:00.123Z");
  EXPECT_EQ(rfc3339Micro(t), "2026-05-18T10:00:00.123456Z");
  EXPECT_EQ(rfc3339Exact(t), "2026-05-18T10:00:00.123456789Z");
  auto whole = parseRfc3339("2026-12-31T23:59:59Z");
  EXPECT_EQ(rfc3339Exact(whole), "2026-12-31T23:59:59Z");
  EXPECT_EQ(rfc3339Millis(whole), "2026-12-31T23:59:59.000Z");
  EXPECT_EQ(rfc3339Exact(whole + 1s), "2027-01-01T00:00:00Z");
  EXPECT_EQ(rfc3339Exact(parseRfc3339("2028-02-29T12:00:00.5Z")), "2028-02-29T12:00:00.5Z");
}

TEST(Rfc3339, ParsesOffsetsAndRejectsWhatIsNotRfc3339) {
  EXPECT_EQ(parseRfc3339("2026-05-18T12:30:00+02:30"), parseRfc3339("2026-05-18T10:00:00Z"));
  EXPECT_EQ(parseRfc3339("2026-05-18t10:00:00z"), parseRfc3339("2026-05-18T10:00:00Z"));
  for (const char* bad : {"2026-05-18 10:00:00Z", "2026-05-18T10:00:00", "2026-02-30T10:00:00Z", "2026-5-18T10:00:00Z",
                          "2026-05-18T10:00:00.Z", "2026-05-18T10:00:00.1234567890Z", "2026-05-18T10:00:00Zjunk",
                          "2026-05-18T24:00:00Z", ""}) {
    EXPECT_THROW(parseRfc3339(bad), std::invalid_argument) << bad;
  }
  try {
    parseRfc3339("yesterday");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "\"yesterday\" is not an RFC 3339 time; write one like 2026-05-18T03:00:00Z");
  }
}

}  // namespace
}  // namespace vto
