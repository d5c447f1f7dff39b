// vto render -f FILE|-: the Vertex AI request body of each TrainingRun, exactly as the operator
// would send it for the first attempt. Offline: no cluster, no Vertex.
#include <iostream>

#include "cmd/commands.h"
#include "cmd/flags.h"
#include "cmd/manifest_input.h"
#include "crd/manifest.h"
#include "crd/placement.h"
#include "crd/render.h"
#include "crd/training_run.h"

namespace vto::cmd {
namespace {
Flags renderFlags() {
  return Flags("render",
               "Prints the Vertex AI request body (a CustomJob, or a HyperparameterTuningJob when\n"
               "spec.hyperparameterTuning is set) of each TrainingRun in FILE, one JSON document per line,\n"
               "exactly as the operator would send it. A run with spec.capacity has one body per placement (the\n"
               "spec, then each fallback merged over it), in order. Invalid runs are reported as `vto lint` does\n"
               "and nothing is printed for them (exit 1).",
               {
                   {"filename", 'f', "", "the manifests (YAML or JSON, several documents allowed); - reads stdin"},
                   {"output", 'o', "json",
                    "json (one body per line), json-array (one JSON array), or request (one {placement, method, url, "
                    "body} per line; needs project and location)"},
                   {"project", 0, "", "project for runs without spec.project (the operator's --default-project)"},
                   {"location", 0, "", "location for runs without spec.location (the operator's --default-location)"},
                   {"namespace", 'n', "default", "namespace for manifests without one"},
                   {"attempt", 0, "1", "the attempt number to render"},
                   {"resume-from", 0, "", "render a resumed attempt that starts from this checkpoint URI"},
               });
}
// One placement's job body, or with `request` the POST that creates it there.
nlohmann::json renderPlacement(const crd::TrainingRun& at, size_t placement, bool request, int attempt,
                               const std::string& resumeFrom, const Location& defaults) {
  nlohmann::json body = crd::renderJob(at, attempt, resumeFrom);
  if (!request) return body;
  auto where = crd::locationOf(at.spec, defaults);
  return {{"placement", placement},
          {"method", "POST"},
          {"url", "https://" + where.location + "-aiplatform.googleapis.com/v1/" + crd::parentOf(where) + "/" +
                      std::string(vertex::collectionName(crd::jobKindOf(at.spec)))},
          {"body", body}};
}
}  // namespace

int render(const Args& args) {
  auto flags = renderFlags();
  if (!flags.parse(args)) return 0;
  struct {
    std::string file, output, namespace_, resumeFrom;
    Location defaults;
    int attempt;
  } o{flags.get("filename"), flags.get("output"), flags.get("namespace"), flags.get("resume-from"),
      {flags.get("project"), flags.get("location")}, flags.getInt("attempt")};
  if (o.attempt < 1) throw UsageError("--attempt must be a number >= 1");
  if (o.file.empty()) throw UsageError("give the manifests with -f FILE (or -f - for stdin)");
  if (o.output != "json" && o.output != "json-array" && o.output != "request") {
    throw UsageError("-o must be json, json-array or request, not \"" + o.output + "\"");
  }

  auto documents = crd::parseManifests(readManifestInput(o.file));
  nlohmann::json array = nlohmann::json::array();
  int failures = 0, rendered = 0;
  for (const auto& document : documents) {
    if (document.kind() == crd::kRetrainingPolicyKind) {
      std::cerr << "vto render: skipping " << document.label() << ": a RetrainingPolicy creates TrainingRuns; "
                << "render its template as a TrainingRun to preview them\n";
      continue;
    }
    auto findings = crd::lintDocument(document);
    if (crd::hasErrors(findings)) {
      for (const auto& f : findings)
        if (f.severity == crd::Severity::Error) std::cerr << crd::formatFinding(f) << " (" << document.label() << ")\n";
      ++failures;
      continue;
    }
    crd::TrainingRun run = crd::decodeTrainingRun(document.object);
    if (run.metadata.namespace_.empty()) run.metadata.namespace_ = o.namespace_;
    std::vector<nlohmann::json> bodies;
    try {
      for (size_t placement = 0; placement < crd::placementCount(run.spec); ++placement) {
        auto at = run;
        at.spec = crd::specAt(run.spec, placement);
        bodies.push_back(renderPlacement(at, placement, o.output == "request", o.attempt, o.resumeFrom, o.defaults));
      }
    } catch (const std::exception& e) {  // a missing project or location (lint passed the rest)
      std::cerr << "vto render: " << document.label() << ": " << e.what() << "\n";
      ++failures;
      continue;
    }
    ++rendered;
    for (auto& body : bodies) {
      if (o.output == "json-array") array.push_back(std::move(body));
      else std::cout << body.dump() << "\n";
    }
  }
  if (o.output == "json-array") std::cout << array.dump(2) << "\n";
  if (rendered == 0 && failures == 0) std::cerr << "vto render: no TrainingRun in " << o.file << "\n";
  return failures ? 1 : 0;
}

}  // namespace vto::cmd
