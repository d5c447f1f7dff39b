// The checkpoint schedule bounds GCS lists by a rate, not by the fleet, and lists each run at most
// once per interval.
#include "reconcilers/jobs/checkpoint_schedule.h"

#include <gtest/gtest.h>

#include <map>

namespace vto::reconcilers {
namespace {

using std::chrono::seconds;

TEST(CheckpointScheduleTest, AThousandRunsListAtTheConfiguredRateAndEachAtMostOncePerInterval) {
  CheckpointSchedule schedule(seconds(60), 200);
  Clock::time_point start{seconds(1'000'000)};
  std::map<int, std::vector<Clock::time_point>> listed;
  int total = 0;
  // Every run asks every second for five minutes (far more often than any real pass).
  for (int second = 0; second < 300; ++second) {
    auto now = start + seconds(second);
    for (int run = 0; run < 1000; ++run) {
      Clock::time_point next;
      if (schedule.take("uid-" + std::to_string(run), now, next)) {
        listed[run].push_back(now);
        ++total;
      } else {
        EXPECT_GT(next, now);
      }
    }
  }
  EXPECT_LE(total, 200 * 5 + 17) << "the rate (plus a five-second burst) bounds the lists, not the fleet";
  EXPECT_GE(total, 200 * 5 - 17) << "and the budget is used";
  for (const auto& [run, times] : listed) {
    for (size_t i = 1; i < times.size(); ++i) EXPECT_GE(times[i] - times[i - 1], seconds(60)) << run;
  }
}

// Each run comes back only when `next` says (as the work queue does): oversubscribed five times, a
// run is never refused on a return: it wakes twice per look (once to be given its slot), plus once
// at first to be spread over the interval.
TEST(CheckpointScheduleTest, AnOversubscribedRunWakesOnlyToListNeverToBeRefusedAgain) {
  CheckpointSchedule schedule(seconds(60), 200);
  Clock::time_point start{seconds(1'000'000)};
  std::map<int, Clock::time_point> wake;
  for (int run = 0; run < 1000; ++run) wake[run] = start;
  int asks = 0, lists = 0;
  for (int second = 0; second < 600; ++second) {
    auto now = start + seconds(second);
    for (auto& [run, at] : wake) {
      if (at > now) continue;
      ++asks;
      Clock::time_point next;
      lists += schedule.take("uid-" + std::to_string(run), now, next);
      EXPECT_GT(next, now);
      at = next;
    }
  }
  EXPECT_GE(lists, 200 * 10 - 17) << "the budget is used";
  EXPECT_LE(lists, 200 * 10 + 17);
  EXPECT_LE(asks, 2 * lists + 2 * 1000) << "refused runs came back to be refused again";
}

TEST(CheckpointScheduleTest, AForcedLookCountsSoTheNextPassDoesNotListAgain) {
  CheckpointSchedule schedule(seconds(60), 200);
  Clock::time_point now{seconds(1'000'000)};
  schedule.listed("u", now);
  Clock::time_point next;
  EXPECT_FALSE(schedule.take("u", now + seconds(1), next));
  EXPECT_EQ(next, now + seconds(60));
  EXPECT_TRUE(schedule.take("u", now + seconds(60), next));
}

}  // namespace
}  // namespace vto::reconcilers
