// Subcommands whose layers have not landed yet. Each moves to its own file when it is implemented.
#include <iostream>

#include "cmd/commands.h"

namespace vto::cmd {
namespace {
int notYet(const char* name) {
  std::cerr << "vto " << name << ": not implemented yet\n";
  return 2;
}
}  // namespace
int crd(const Args&) { return notYet("crd"); }
int lint(const Args&) { return notYet("lint"); }
int render(const Args&) { return notYet("render"); }
int run(const Args&) { return notYet("run"); }
}  // namespace vto::cmd
