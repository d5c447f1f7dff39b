#include "metrics/process_metrics.h"

#include <gtest/gtest.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <ctime>
#include <vector>

namespace vto::metrics {
namespace {

double valueOf(const std::vector<prometheus::MetricFamily>& families, const std::string& name) {
  for (const auto& family : families) {
    if (family.name != name || family.metric.empty()) continue;
    return family.type == prometheus::MetricType::Counter ? family.metric[0].counter.value : family.metric[0].gauge.value;
  }
  return -1;
}

TEST(ProcessMetricsTest, ReadsThisProcesssCpuMemoryFdsAndStartTime) {
  std::vector<char> touched(32 << 20, 1);  // 32 MiB resident at least
  auto families = ProcessMetrics().Collect();
  EXPECT_GE(valueOf(families, "process_resident_memory_bytes"), 32 << 20);
  EXPECT_GE(valueOf(families, "process_virtual_memory_bytes"), valueOf(families, "process_resident_memory_bytes"));
  EXPECT_GE(valueOf(families, "process_cpu_seconds_total"), 0);
  EXPECT_GE(valueOf(families, "process_open_fds"), 3);  // stdin, stdout, stderr
  double started = valueOf(families, "process_start_time_seconds");
  EXPECT_LE(started, static_cast<double>(std::time(nullptr)) + 1);
  EXPECT_GT(started, static_cast<double>(std::time(nullptr)) - 24 * 3600);
  EXPECT_EQ(touched[1000], 1);
}

TEST(ProcessMetricsTest, AnUnreadableProcExportsNothingRatherThanNonsense) {
  EXPECT_TRUE(ProcessMetrics("/nonexistent/self", "/nonexistent/stat").Collect().empty());
}

}  // namespace
}  // namespace vto::metrics
