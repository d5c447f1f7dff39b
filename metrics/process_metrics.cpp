#include "metrics/process_metrics.h"

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace vto::metrics {
namespace {

prometheus::MetricFamily family(const char* name, const char* help, prometheus::MetricType type, double value) {
  prometheus::MetricFamily out;
  out.name = name;
  out.help = help;
  out.type = type;
  prometheus::ClientMetric metric;
  if (type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  out.metric.push_back(metric);
  return out;
}

// The fields of /proc/self/stat after the command name (which may hold spaces), numbered as in
// proc(5) from 3 (state).
std::vector<std::string> statFields(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');
  std::vector<std::string> fields;
  if (close == std::string::npos) return fields;
  std::istringstream rest(text.substr(close + 1));
  for (std::string field; rest >> field;) fields.push_back(field);
  return fields;
}

double bootTime(const std::string& procStat) {
  std::ifstream in(procStat);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("btime ", 0) == 0) return std::stod(line.substr(6));
  }
  return 0;
}

}  // namespace

ProcessMetrics::ProcessMetrics(std::string procSelf, std::string procStat)
    : procSelf_(std::move(procSelf)), procStat_(std::move(procStat)) {}

std::vector<prometheus::MetricFamily> ProcessMetrics::Collect() const {
  std::vector<prometheus::MetricFamily> out;
  auto fields = statFields(procSelf_ + "/stat");
  // proc(5): utime 14, stime 15, starttime 22, vsize 23, rss 24 (pages); fields[0] is field 3.
  if (fields.size() > 21) {
    double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
    double pageSize = static_cast<double>(::sysconf(_SC_PAGESIZE));
    try {
      out.push_back(family("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                           prometheus::MetricType::Counter, (std::stod(fields[11]) + std::stod(fields[12])) / ticks));
      out.push_back(family("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
                           prometheus::MetricType::Gauge, bootTime(procStat_) + std::stod(fields[19]) / ticks));
      out.push_back(family("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                           prometheus::MetricType::Gauge, std::stod(fields[20])));
      out.push_back(family("process_resident_memory_bytes", "Resident memory size in bytes.",
                           prometheus::MetricType::Gauge, std::stod(fields[21]) * pageSize));
    } catch (const std::exception&) {
      out.clear();  // an unreadable /proc: export nothing rather than nonsense
    }
  }
  std::error_code error;
  double fds = 0;
  for (std::filesystem::directory_iterator it(procSelf_ + "/fd", error), end; !error && it != end; it.increment(error)) ++fds;
  if (!error) out.push_back(family("process_open_fds", "Number of open file descriptors.", prometheus::MetricType::Gauge, fds));
  return out;
}

}  // namespace vto::metrics
