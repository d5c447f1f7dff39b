#include <gtest/gtest.h>

#include "tests/fakes/clock_fake.h"
#include "tests/fakes/vertex_fake_sleeper.h"
#include "vertex/rate_limiter.h"
#include "vertex/retry.h"

namespace vto::vertex {
namespace {

using namespace std::chrono_literals;

TEST(Backoff, GrowsExponentiallyWithJitterUpToTheCap) {
  Backoff backoff({6, 1000ms, 8000ms, 2.0}, 7);
  for (int retry = 1; retry <= 6; ++retry) {
    auto ceiling = std::min<long long>(1000LL << (retry - 1), 8000);
    auto delay = backoff.delay(retry).count();
    EXPECT_GE(delay, ceiling / 2) << "retry " << retry;
    EXPECT_LE(delay, ceiling) << "retry " << retry;
  }
}

TEST(Backoff, RetryAfterIsAFloor) {
  Backoff backoff({6, 100ms, 1000ms, 2.0}, 7);
  EXPECT_EQ(backoff.delay(1, 5000ms), 5000ms);
  EXPECT_LE(backoff.delay(1, 1ms), 100ms);
}

TEST(RateLimiter, SpreadsABurstOverTheWindow) {
  testing::FakeClock clock;
  testing::AdvancingSleeper sleeper(clock);
  RateLimiter limiter(clock, sleeper);
  auto start = clock.now();
  for (int i = 0; i < 3; ++i) limiter.acquire("p/l#create", 3);
  EXPECT_TRUE(sleeper.pauses().empty());
  limiter.acquire("p/l#create", 3);  // the 4th must wait until the 1st leaves the minute
  EXPECT_EQ(clock.now() - start, 60s);
  limiter.acquire("p/l#other", 3);  // other keys are not held up
  EXPECT_EQ(sleeper.pauses().size(), 1u);
}

TEST(RateLimiter, NeverExceedsTheLimitInAnyWindow) {
  testing::FakeClock clock;
  testing::AdvancingSleeper sleeper(clock);
  RateLimiter limiter(clock, sleeper);
  std::vector<Clock::time_point> sent;
  for (int i = 0; i < 25; ++i) {
    limiter.acquire("k", 10);
    sent.push_back(clock.now());
    if (i % 3 == 0) clock.advance(7s);
  }
  for (std::size_t i = 10; i < sent.size(); ++i) EXPECT_GE(sent[i] - sent[i - 10], 60s) << i;
}

}  // namespace
}  // namespace vto::vertex
