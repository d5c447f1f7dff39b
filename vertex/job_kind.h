#pragma once
// The two kinds of Vertex AI training job vto creates: the one JobKind type. Header-only and free of
// network code, so that crd/ (which renders job bodies) names the kind without depending on the client.
#include <string_view>

namespace vto::vertex {

enum class JobKind { Custom, HyperparameterTuning };

// "customJobs" / "hyperparameterTuningJobs": the collection segment of the REST path.
constexpr std::string_view collectionName(JobKind kind) {
  return kind == JobKind::Custom ? "customJobs" : "hyperparameterTuningJobs";
}
// "CustomJob" / "HyperparameterTuningJob": the resource's kind, as status.job.kind shows it.
constexpr std::string_view kindName(JobKind kind) {
  return kind == JobKind::Custom ? "CustomJob" : "HyperparameterTuningJob";
}

}  // namespace vto::vertex
