#include "emulator/study.h"

#include <cmath>

#include "vertex/json_codec.h"

namespace vto::emulator {
namespace {

using nlohmann::json;

// A low-discrepancy point in [0, 1) per trial and parameter (golden-ratio sequence), so trials spread
// over the space instead of repeating one value.
double fraction(int index, std::size_t parameter) {
  constexpr double golden = 0.6180339887498949;
  double value = (index + 1) * golden + parameter * 0.5;
  return value - std::floor(value);
}

const json* findSpec(const json& studySpec, const std::string& parameterId) {
  if (!studySpec.contains("parameters")) return nullptr;
  for (const auto& spec : studySpec["parameters"]) {
    if (spec.value("parameterId", std::string()) == parameterId) return &spec;
  }
  return nullptr;
}

double position(const json& spec, const json& value) {
  auto ratio = [](double low, double high, double v) { return high > low ? (v - low) / (high - low) : 1.0; };
  if (spec.contains("doubleValueSpec")) {
    const auto& range = spec["doubleValueSpec"];
    return ratio(range["minValue"].get<double>(), range["maxValue"].get<double>(), value.get<double>());
  }
  if (spec.contains("integerValueSpec")) {
    const auto& range = spec["integerValueSpec"];
    return ratio(static_cast<double>(vertex::int64FromJson(range["minValue"])),
                 static_cast<double>(vertex::int64FromJson(range["maxValue"])), value.get<double>());
  }
  const auto& values = spec.contains("categoricalValueSpec") ? spec["categoricalValueSpec"]["values"]
                                                              : spec["discreteValueSpec"]["values"];
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] == value) return values.size() > 1 ? static_cast<double>(i) / (values.size() - 1) : 1.0;
  }
  return 0.0;
}

}  // namespace

json trialParameters(const json& studySpec, int index) {
  json parameters = json::array();
  std::size_t number = 0;
  for (const auto& spec : studySpec.value("parameters", json::array())) {
    double f = fraction(index, number++);
    json value;
    if (spec.contains("doubleValueSpec")) {
      double low = spec["doubleValueSpec"]["minValue"].get<double>();
      double high = spec["doubleValueSpec"]["maxValue"].get<double>();
      value = low + f * (high - low);
    } else if (spec.contains("integerValueSpec")) {
      auto low = vertex::int64FromJson(spec["integerValueSpec"]["minValue"]);
      auto high = vertex::int64FromJson(spec["integerValueSpec"]["maxValue"]);
      value = low + static_cast<std::int64_t>(std::floor(f * static_cast<double>(high - low + 1)));
    } else {
      const auto& values = spec.contains("categoricalValueSpec") ? spec["categoricalValueSpec"]["values"]
                                                                  : spec["discreteValueSpec"]["values"];
      value = values.empty() ? json() : values[static_cast<std::size_t>(f * values.size())];
    }
    parameters.push_back({{"parameterId", spec.value("parameterId", std::string())}, {"value", value}});
  }
  return parameters;
}

double trialMetric(const json& studySpec, const json& parameters) {
  if (parameters.empty()) return 0.0;
  double sum = 0;
  for (const auto& parameter : parameters) {
    if (const auto* spec = findSpec(studySpec, parameter.value("parameterId", std::string()))) {
      sum += position(*spec, parameter["value"]);
    }
  }
  return sum / parameters.size();
}

}  // namespace vto::emulator
