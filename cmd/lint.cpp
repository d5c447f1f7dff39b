// vto lint -f FILE|- ...: the operator's validation, offline. Prints one `SEVERITY path: message`
// line per finding and exits 1 when any finding is an error.
#include <iostream>
#include <optional>

#include "cmd/commands.h"
#include "cmd/flags.h"
#include "cmd/manifest_input.h"
#include "cmd/tenancy_config.h"
#include "crd/api_server_checks.h"
#include "crd/manifest.h"

namespace vto::cmd {

int lint(const Args& args) {
  Flags flags("lint",
              "Checks TrainingRun and RetrainingPolicy manifests (YAML or JSON, several documents per file) with\n"
              "the same rules as the operator, without a cluster. Prints every finding of a document at once\n"
              "(fields that do not decode and broken rules alike), in path order, one line each:\n\n"
              "  ERROR spec.distribution.workerCount: MirroredStrategy uses the GPUs of one machine; ...\n"
              "  WARNING spec.trainer.container.env[0].name: TF_CONFIG is set by Vertex AI ...\n\n"
              "A finding of a file with several documents ends with the document it is about. Exit status: 0\n"
              "when no finding is an error, 1 when one is, 2 on a usage error.",
              {{"filename", 'f', "", "a manifest file, or - for stdin", false, true},
               {"tenancy", 0, "", "check TrainingRuns and RetrainingPolicies against these tenancy rules (every rule field of "
                                  "API.md): the operator's config file or a list of rules"}});
  if (!flags.parse(args)) return 0;
  auto files = flags.getAll("filename");
  if (files.empty()) throw UsageError("give the manifests with -f FILE (or -f - for stdin)");
  std::optional<TenancyFile> tenancy;
  if (!flags.get("tenancy").empty()) tenancy = readTenancyFile(flags.get("tenancy"));
  int errors = 0, warnings = 0;
  for (const auto& file : files) {
    const std::string prefix = files.size() > 1 ? file + ": " : "";
    std::vector<crd::ManifestDocument> documents;
    try {
      documents = crd::parseManifests(readManifestInput(file));
    } catch (const std::exception& e) {
      std::cout << "ERROR " << prefix << e.what() << "\n";
      ++errors;
      continue;
    }
    if (documents.empty()) {
      std::cout << "ERROR " << prefix << "(file): no documents; expected a TrainingRun or RetrainingPolicy\n";
      ++errors;
    }
    for (const auto& document : documents) {
      auto findings = crd::lintDocument(document);
      // What the API server itself would refuse (lengths, unknown metadata), and the tenancy rules.
      for (auto& finding : crd::apiServerFindings(document.object)) findings.push_back(std::move(finding));
      if (tenancy) {
        for (auto& finding : tenancyFindings(document.object, *tenancy)) findings.push_back(std::move(finding));
      }
      for (const auto& finding : findings) {
        std::cout << crd::formatFinding({finding.severity, prefix + finding.path, finding.message});
        if (documents.size() > 1) std::cout << " (" << document.label() << ")";
        std::cout << "\n";
        (finding.severity == crd::Severity::Error ? errors : warnings)++;
      }
    }
  }
  std::cerr << errors << " error(s), " << warnings << " warning(s)\n";
  return errors ? 1 : 0;
}

}  // namespace vto::cmd
