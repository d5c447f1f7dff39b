#include "tests/support/prometheus_text.h"

#include <sstream>

namespace vto::testing {
namespace {

// One sample line, `name{a="x",b="y"} value`, or false for comments, other metrics and anything
// unreadable. Label values here never hold an escaped quote, so a plain scan is enough.
bool parseSample(const std::string& line, const std::string& metric, Labels& labels, double& value) {
  if (line.size() <= metric.size() || line.compare(0, metric.size(), metric) != 0) return false;
  size_t at = metric.size();
  labels.clear();
  if (line[at] == '{') {
    size_t close = line.find('}', at);
    if (close == std::string::npos) return false;
    std::string text = line.substr(at + 1, close - at - 1);
    for (size_t pos = 0; pos < text.size();) {
      size_t eq = text.find("=\"", pos);
      if (eq == std::string::npos) return false;
      size_t end = text.find('"', eq + 2);
      if (end == std::string::npos) return false;
      labels[text.substr(pos, eq - pos)] = text.substr(eq + 2, end - eq - 2);
      pos = end + 1;
      if (pos < text.size() && text[pos] == ',') ++pos;
    }
    at = close + 1;
  }
  if (at >= line.size() || line[at] != ' ') return false;
  try {
    value = std::stod(line.substr(at + 1));
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

}  // namespace

double sampleSum(const std::string& exposition, const std::string& metric,
                 const std::function<bool(const Labels&)>& select) {
  double total = 0;
  Labels labels;
  double value = 0;
  std::istringstream lines(exposition);
  for (std::string line; std::getline(lines, line);) {
    if (parseSample(line, metric, labels, value) && (!select || select(labels))) total += value;
  }
  return total;
}

ApiServerRequests apiServerRequests(const TestCluster& cluster) {
  auto out = cluster.kubectl("get --raw /metrics").output;
  ApiServerRequests counted;
  Labels labels;
  double value = 0;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (!parseSample(line, "apiserver_request_total", labels, value)) continue;
    const auto& resource = labels["resource"];
    if (resource != "trainingruns" && resource != "events") continue;
    counted.all += value;
    const auto& verb = labels["verb"];
    const bool write = verb == "POST" || verb == "PUT" || verb == "PATCH" || verb == "DELETE";
    if (!write) {
      counted.reads += value;
    } else if (resource == "events") {
      counted.eventWrites += value;
    } else if (labels["subresource"] == "status") {
      counted.statusWrites += value;
    } else if (verb == "POST") {
      counted.runCreates += value;
    } else if (verb == "DELETE") {
      counted.runDeletes += value;
    } else {
      counted.runUpdates += value;
    }
  }
  return counted;
}

ApiServerRequests operator-(const ApiServerRequests& after, const ApiServerRequests& before) {
  ApiServerRequests d;
  d.all = after.all - before.all;
  d.reads = after.reads - before.reads;
  d.runCreates = after.runCreates - before.runCreates;
  d.runUpdates = after.runUpdates - before.runUpdates;
  d.runDeletes = after.runDeletes - before.runDeletes;
  d.statusWrites = after.statusWrites - before.statusWrites;
  d.eventWrites = after.eventWrites - before.eventWrites;
  return d;
}

}  // namespace vto::testing
