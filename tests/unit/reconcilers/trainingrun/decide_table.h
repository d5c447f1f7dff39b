#pragma once
// The table harness of decide()'s unit tests: each row is what observe saw and what the plan must say
// (the phase it writes, or no status write at all; its Events by reason; anything else in `check`).
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "reconcilers/trainingrun/decide.h"

namespace vto::reconcilers::decide_table {

struct Row {
  std::string name;
  std::function<Observed()> observed;
  std::optional<crd::Phase> phase;  // nullopt: no status write expected
  std::vector<std::string> events;
  std::function<void(const Plan&)> check = [](const Plan&) {};
};

inline std::vector<std::string> reasons(const Plan& plan) {
  std::vector<std::string> out;
  for (const auto& e : plan.events) out.push_back(e.reason);
  return out;
}

inline void runTable(const std::vector<Row>& rows) {
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    auto plan = decide(row.observed());
    if (row.phase) {
      ASSERT_TRUE(plan.status.has_value());
      ASSERT_TRUE(plan.status->phase.has_value()) << "a status without a phase";
      EXPECT_EQ(crd::enumName(*plan.status->phase, crd::phaseNames()), crd::enumName(*row.phase, crd::phaseNames()))
          << plan.status->message;
    } else {
      EXPECT_FALSE(plan.status.has_value()) << plan.status->message;
    }
    EXPECT_EQ(reasons(plan), row.events);
    row.check(plan);
  }
}

}  // namespace vto::reconcilers::decide_table
