// vto render -f FILE|-: the Vertex AI request body of each TrainingRun, exactly as the operator
// would send it for the first attempt. Offline: no cluster, no Vertex.
#include <iostream>

#include "cmd/commands.h"
#include "cmd/flags.h"
#include "cmd/manifest_input.h"
#include "crd/manifest.h"
#include "crd/render.h"
#include "crd/training_run.h"

namespace vto::cmd {
namespace {
Flags renderFlags() {
  return Flags("render",
               "Prints the Vertex AI request body (a CustomJob, or a HyperparameterTuningJob when\n"
               "spec.hyperparameterTuning is set) of each TrainingRun in FILE, one JSON document per line,\n"
               "exactly as the operator would send it. Invalid runs are reported as `vto lint` does and\n"
               "nothing is printed for them (exit 1).",
               {
                   {"filename", 'f', "", "the manifests (YAML or JSON, several documents allowed); - reads stdin"},
                   {"output", 'o', "json",
                    "json (one body per line), json-array (one JSON array), or request (one {method, url, body} "
                    "per line; needs project and location)"},
                   {"project", 0, "", "project for runs without spec.project (the operator's --default-project)"},
                   {"location", 0, "", "location for runs without spec.location (the operator's --default-location)"},
                   {"namespace", 'n', "default", "namespace for manifests without one"},
                   {"attempt", 0, "1", "the attempt number to render"},
                   {"resume-from", 0, "", "render a resumed attempt that starts from this checkpoint URI"},
               });
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
    nlohmann::json body = crd::renderJob(run, o.attempt, o.resumeFrom);
    if (o.output == "request") {
      try {
        auto placement = crd::locationOf(run.spec, o.defaults);
        body = {{"method", "POST"},
                {"url", "https://" + placement.location + "-aiplatform.googleapis.com/v1/" + crd::parentOf(placement) +
                            "/" + std::string(vertex::collectionName(crd::jobKindOf(run.spec)))},
                {"body", body}};
      } catch (const std::invalid_argument& e) {
        std::cerr << "vto render: " << document.label() << ": " << e.what() << "\n";
        ++failures;
        continue;
      }
    }
    ++rendered;
    if (o.output == "json-array") array.push_back(body);
    else std::cout << body.dump() << "\n";
  }
  if (o.output == "json-array") std::cout << array.dump(2) << "\n";
  if (rendered == 0 && failures == 0) std::cerr << "vto render: no TrainingRun in " << o.file << "\n";
  return failures ? 1 : 0;
}

}  // namespace vto::cmd
