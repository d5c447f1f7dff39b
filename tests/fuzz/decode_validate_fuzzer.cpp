// libFuzzer target: any bytes through the manifest path of `vto lint` and `vto render` (YAML -> JSON
// -> types -> validation -> Vertex body). It must never crash or trip a sanitizer, and what decodes
// must survive encode -> decode unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "crd/manifest.h"
#include "crd/render.h"
#include "crd/retraining_policy.h"
#include "crd/training_run.h"

namespace {

void checkRoundTrip(const nlohmann::json& encoded, const nlohmann::json& again) {
  if (encoded != again) std::abort();  // encode/decode lost or changed something
}

void exercise(const vto::crd::ManifestDocument& document) {
  using namespace vto::crd;
  auto findings = lintDocument(document);
  if (hasErrors(findings)) return;
  if (document.kind() == kTrainingRunKind) {
    TrainingRun run = decodeTrainingRun(document.object);
    json encoded = encodeTrainingRun(run);
    checkRoundTrip(encoded, encodeTrainingRun(decodeTrainingRun(encoded)));
    renderJob(run, 1, "");
    renderJob(run, 2, "gs://bucket/checkpoints/ckpt-1");
  } else {
    RetrainingPolicy policy = decodeRetrainingPolicy(document.object);
    json encoded = encodeRetrainingPolicy(policy);
    checkRoundTrip(encoded, encodeRetrainingPolicy(decodeRetrainingPolicy(encoded)));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<vto::crd::ManifestDocument> documents;
  try {
    documents = vto::crd::parseManifests(text);
  } catch (const std::runtime_error&) {
    return 0;  // not YAML: `vto lint` reports it as an error
  }
  for (const auto& document : documents) exercise(document);
  return 0;
}
