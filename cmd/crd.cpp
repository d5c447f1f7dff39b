// vto crd: prints the CustomResourceDefinitions, so `vto crd | kubectl apply --server-side -f -` installs them.
// `vto crd --update-catalog-rules FILE` regenerates the machine/accelerator CEL rules of the
// TrainingRun CRD file from the compiled-in machine catalog (the table `vto lint` checks against).
#include <fstream>
#include <iostream>
#include <sstream>

#include "cmd/commands.h"
#include "cmd/flags.h"
#include "crd/crd_yaml.h"
#include "crd/machine_catalog.h"

namespace vto::cmd {
int crd(const Args& args) {
  Flags flags("crd",
              "Prints the TrainingRun and RetrainingPolicy CustomResourceDefinitions (vto.dev/v1beta1 stored, v1alpha1 served and deprecated) as YAML:\n\n"
              "  vto crd | kubectl apply --server-side -f -\n\n"
              "With --update-catalog-rules FILE, rewrites the generated machine/accelerator rules of the\n"
              "TrainingRun CRD in FILE (helm/vto/files/crds/trainingruns.vto.dev.yaml) from the machine catalog\n"
              "(third_party/vertex-api/machine-accelerators.json, compiled in) instead; rebuild vto after\n"
              "editing the catalog, then run it and commit the file.",
              {{"update-catalog-rules", 0, "", "the TrainingRun CRD file to regenerate the catalog rules in"}});
  if (!flags.parse(args)) return 0;
  std::string file = flags.get("update-catalog-rules");
  if (file.empty()) {
    std::cout << crd::customResourceDefinitionsYaml();
    return 0;
  }
  std::ifstream in(file);
  if (!in) throw UsageError("cannot read " + file + "; give the path of helm/vto/files/crds/trainingruns.vto.dev.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string updated = crd::withCatalogRules(text.str(), crd::MachineCatalog::builtIn());
  in.close();
  if (updated == text.str()) {
    std::cerr << file << " is up to date\n";
    return 0;
  }
  std::ofstream out(file, std::ios::trunc);
  out << updated;
  if (!out.flush()) throw std::runtime_error("cannot write " + file);
  std::cerr << "updated the machine catalog rules in " << file << "\n";
  return 0;
}
}  // namespace vto::cmd
