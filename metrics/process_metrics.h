#pragma once
// The standard process_* metrics every Prometheus client library exports (CPU, memory, file
// descriptors, start time), read from /proc when scraped; prometheus-cpp has none of its own.
#include <prometheus/collectable.h>

#include <string>
#include <vector>

namespace vto::metrics {

class ProcessMetrics final : public prometheus::Collectable {
 public:
  // `procSelf` is /proc/self (a test may point it at a copy).
  explicit ProcessMetrics(std::string procSelf = "/proc/self", std::string procStat = "/proc/stat");
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  std::string procSelf_, procStat_;
};

}  // namespace vto::metrics
