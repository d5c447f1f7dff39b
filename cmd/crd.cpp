// vto crd: prints the CustomResourceDefinitions, so `vto crd | kubectl apply -f -` installs them.
#include <iostream>

#include "cmd/commands.h"
#include "cmd/flags.h"
#include "crd/crd_yaml.h"

namespace vto::cmd {
int crd(const Args& args) {
  Flags flags("crd",
              "Prints the TrainingRun and RetrainingPolicy CustomResourceDefinitions (vto.dev/v1alpha1) as YAML:\n\n"
              "  vto crd | kubectl apply --server-side -f -",
              {});
  if (!flags.parse(args)) return 0;
  std::cout << crd::customResourceDefinitionsYaml();
  return 0;
}
}  // namespace vto::cmd
