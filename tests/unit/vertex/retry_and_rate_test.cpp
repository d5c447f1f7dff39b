#include <gtest/gtest.h>

#include "tests/fakes/clock_fake.h"
#include "vertex/rate_limiter.h"

namespace vto::vertex {
namespace {

using namespace std::chrono_literals;

TEST(QuotaPacer, HandsBackTheWaitInsteadOfBlocking) {
  testing::FakeClock clock;
  QuotaPacer pacer(clock);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(pacer.tryAcquire("p/l#create", 3), std::nullopt);
  clock.advance(15s);
  EXPECT_EQ(pacer.tryAcquire("p/l#create", 3), 45000ms);  // the 1st leaves the minute in 45 s
  EXPECT_EQ(pacer.tryAcquire("p/l#other", 3), std::nullopt);  // other keys are not held up
  try {
    pacer.acquireOrThrow("p/l#create", 3);
    FAIL() << "expected QuotaPacingError";
  } catch (const QuotaPacingError& error) {
    EXPECT_EQ(error.retryAfter(), 45000ms);
  }
  clock.advance(45s);
  EXPECT_EQ(pacer.tryAcquire("p/l#create", 3), std::nullopt);
  EXPECT_EQ(pacer.tryAcquire("k", 0), std::nullopt);  // unlimited
}

TEST(QuotaPacer, NeverExceedsTheLimitInAnyWindow) {
  testing::FakeClock clock;
  QuotaPacer pacer(clock);
  std::vector<Clock::time_point> sent;
  while (sent.size() < 25) {
    if (auto wait = pacer.tryAcquire("k", 10)) {
      clock.advance(*wait);  // the caller comes back when told, not sooner
      continue;
    }
    sent.push_back(clock.now());
    if (sent.size() % 3 == 0) clock.advance(7s);
  }
  for (std::size_t i = 10; i < sent.size(); ++i) EXPECT_GE(sent[i] - sent[i - 10], 60s) << i;
}

}  // namespace
}  // namespace vto::vertex
