#include <iostream>

#include "cmd/commands.h"
#include "cmd/version.h"

namespace vto::cmd {
int version(const Args&) {
  std::cout << "vto " << buildinfo::kVersion << " (git " << buildinfo::kGitRevision << ")\n";
  return 0;
}
}  // namespace vto::cmd
