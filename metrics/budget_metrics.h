#pragma once
// The tenancy budgets (API.md "Cost and budgets"): vto_budget_spent_usd{rule} and
// vto_budget_limit_usd{rule}, set after each read of the rules' month-to-date spend.
#include <string>

#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace vto::metrics {

class BudgetMetrics {
 public:
  explicit BudgetMetrics(prometheus::Registry& registry);
  void set(const std::string& rule, double spentUsd, double limitUsd);

 private:
  prometheus::Family<prometheus::Gauge>& spent_;
  prometheus::Family<prometheus::Gauge>& limit_;
};

}  // namespace vto::metrics
