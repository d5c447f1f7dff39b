#include "metrics/budget_metrics.h"

namespace vto::metrics {

BudgetMetrics::BudgetMetrics(prometheus::Registry& registry)
    : spent_(prometheus::BuildGauge()
                 .Name("vto_budget_spent_usd")
                 .Help("Month-to-date list-price spend of a tenancy rule's Vertex AI jobs, in USD")
                 .Register(registry)),
      limit_(prometheus::BuildGauge()
                 .Name("vto_budget_limit_usd")
                 .Help("A tenancy rule's monthly budget, in USD")
                 .Register(registry)) {}

void BudgetMetrics::set(const std::string& rule, double spentUsd, double limitUsd) {
  spent_.Add({{"rule", rule}}).Set(spentUsd);
  limit_.Add({{"rule", rule}}).Set(limitUsd);
}

}  // namespace vto::metrics
