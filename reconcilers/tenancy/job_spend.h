#pragma once
// Reading what vto's jobs cost from what Vertex holds: the one reading behind a budget's spend
// (budget_ledger.h) and `vto cost` (cmd/cost.cpp). Vertex keeps a job whatever becomes of its run, so
// a run deleted by its TTL still counts. Each job is priced by the cost model (governance::priceJob) from its
// own resource: pools, strategy, location, trials, timeout and times.
#include <functional>
#include <string>

#include "base/clock.h"
#include "base/gcp_names.h"
#include "governance/cost.h"
#include "governance/price_catalog.h"
#include "reconcilers/jobs/ownership.h"
#include "vertex/vertex_client.h"

namespace vto::reconcilers {

// Filter terms of Vertex's job lists. Values are label values or months that callers validated, so
// they never hold a quote.
std::string labelIs(const char* key, const std::string& value);  // labels.KEY="VALUE"
std::string hasLabel(const char* key);                              // labels.KEY:*
// The jobs created in `month` ("2026-12", UTC): from its first instant, and before the next month's
// when `bounded`. Throws std::invalid_argument for a month that is not YYYY-MM.
std::string createdInMonth(const std::string& month, bool bounded);
// The jobs that have not ended (no terminal state).
std::string unfinished();

// What one Vertex job adds to its rule's figures: governance::priceJob over the job's own resource.
governance::JobPricing costOfJob(const vertex::Job& job, const governance::PriceCatalog& prices, Clock::time_point now);

// Every job of `kind` in `place` that `filter` selects, page after page, handed to `each` with what it
// costs at `now`; with `ownership`, only the jobs this operator made (anyone may copy vto's labels).
// Throws what the list throws: a reading is whole or fails.
void readJobSpend(vertex::VertexClient& vertex, const Location& place, vertex::JobKind kind, const std::string& filter,
                  const JobOwnership* ownership, const governance::PriceCatalog& prices, Clock::time_point now,
                  const std::function<void(const vertex::Job& job, const governance::JobPricing& pricing)>& each);

}  // namespace vto::reconcilers
