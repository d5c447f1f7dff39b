#include "emulator/model_artifacts.h"

#include <cmath>
#include <cstdint>

#include "vertex/gcs_client.h"

namespace vto::emulator {
namespace {

using nlohmann::json;

// The value of `name` in the first worker pool's env; nullptr when it is not set.
const json* firstPoolEnv(const json& job, const std::string& name) {
  auto spec = job.find("jobSpec");
  if (spec == job.end() || !spec->contains("workerPoolSpecs") || (*spec)["workerPoolSpecs"].empty()) return nullptr;
  const auto& pool = (*spec)["workerPoolSpecs"][0];
  for (const char* task : {"containerSpec", "pythonPackageSpec"}) {
    auto container = pool.find(task);
    if (container == pool.end() || !container->contains("env")) continue;
    for (const auto& variable : (*container)["env"]) {
      if (variable.value("name", std::string()) == name && variable.contains("value")) return &variable["value"];
    }
  }
  return nullptr;
}

// FNV-1a: a hash that is the same on every platform and run, unlike std::hash.
std::uint64_t stableHash(const std::string& text) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  return hash;
}

}  // namespace

json defaultModelMetrics(const std::string& jobName) {
  double unit = static_cast<double>(stableHash(jobName) % 10001) / 10000.0;
  return {{"auc", std::round((0.80 + 0.15 * unit) * 10000) / 10000}};
}

ModelArtifacts modelArtifactsOf(const json& customJob, int steps) {
  ModelArtifacts artifacts;
  auto prefix = customJob.value("jobSpec", json::object())
                    .value("baseOutputDirectory", json::object())
                    .value("outputUriPrefix", std::string());
  const json* noModel = firstPoolEnv(customJob, kNoModelEnv);
  if (prefix.empty() || (noModel != nullptr && *noModel == "1")) return artifacts;

  auto name = customJob.value("name", std::string());
  json metrics = defaultModelMetrics(name);
  if (const json* given = firstPoolEnv(customJob, kModelMetricsEnv)) {
    auto parsed = given->is_string() ? json::parse(given->get<std::string>(), nullptr, false) : json();
    if (!parsed.is_object()) {
      artifacts.error = std::string(kModelMetricsEnv) + " is not a JSON object such as {\"auc\": 0.91}: " +
                        given->dump().substr(0, 200);
      return artifacts;
    }
    metrics = std::move(parsed);
  }
  auto uri = vertex::parseGcsUri(prefix);
  if (!uri.object.empty() && uri.object.back() != '/') uri.object += '/';
  auto directory = uri.object + "model/";
  json model = {{"format", "vto-emulator stand-in for a trained model"}, {"job", name}, {"steps", steps}};
  artifacts.writes.push_back({uri.bucket, directory + "model.txt", model.dump() + "\n", name, steps, true, false});
  artifacts.writes.push_back({uri.bucket, directory + "metrics.json", metrics.dump(), name, steps, true, true});
  return artifacts;
}

}  // namespace vto::emulator
