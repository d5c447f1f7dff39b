#pragma once
// Reading Prometheus text exposition in tests and benches: the API server's /metrics (what it served)
// and the operator's (what it did). One parser for both, so a test and the bench count alike.
#include <functional>
#include <map>
#include <string>

#include "tests/support/test_cluster.h"

namespace vto::testing {

using Labels = std::map<std::string, std::string>;

// The sum of every sample of `metric` whose labels satisfy `select` (all samples when empty).
double sampleSum(const std::string& exposition, const std::string& metric,
                 const std::function<bool(const Labels&)>& select = {});

// Requests the API server has served on TrainingRuns and Events, from its own apiserver_request_total
// (every client together: take a difference across what one client did). Writes are POST, PUT,
// PATCH and DELETE; the rest (GET, LIST, WATCH) are reads.
struct ApiServerRequests {
  double all = 0;
  double reads = 0;
  double runCreates = 0;   // POST trainingruns
  double runUpdates = 0;   // PUT or PATCH on a run itself (metadata and spec: vto's finalizer)
  double runDeletes = 0;   // DELETE trainingruns
  double statusWrites = 0; // PUT or PATCH trainingruns/status
  double eventWrites = 0;  // POST, PUT or PATCH events (either API group)
  double writes() const { return all - reads; }
};
ApiServerRequests apiServerRequests(const TestCluster& cluster);
ApiServerRequests operator-(const ApiServerRequests& after, const ApiServerRequests& before);

}  // namespace vto::testing
