// vto: the operator (`vto run`) and its offline tools, one binary.
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <string_view>

#include "cmd/commands.h"
#include "cmd/flags.h"

namespace {
struct Subcommand {
  std::function<int(const vto::cmd::Args&)> fn;
  const char* summary;
};

const std::map<std::string, Subcommand>& subcommands() {
  static const std::map<std::string, Subcommand> table = {
      {"run", {vto::cmd::run, "run the operator against a Kubernetes cluster"}},
      {"lint", {vto::cmd::lint, "check TrainingRun/RetrainingPolicy manifests offline (-f FILE|-)"}},
      {"render", {vto::cmd::render, "print the Vertex AI request body for each TrainingRun (-f FILE|-)"}},
      {"schedule", {vto::cmd::schedule, "print the next fire times of a RetrainingPolicy schedule (-f FILE | --cron EXPR)"}},
      {"crd", {vto::cmd::crd, "print the CustomResourceDefinitions (vto crd | kubectl apply --server-side -f -)"}},
      {"logs", {vto::cmd::logs, "print a TrainingRun's job log, -f to follow it (vto logs trun/NAME)"}},
      {"describe", {vto::cmd::describe, "say whose a TrainingRun's Vertex jobs are: cluster identity, run uids, adoption (vto describe trun/NAME)"}},
      {"cost", {vto::cmd::cost, "a month's spend, from the jobs Vertex AI holds ([-n NS | -A] [--month YYYY-MM] [--by ...])"}},
      {"migrate", {vto::cmd::migrate, "rewrite every stored TrainingRun and RetrainingPolicy at the storage version once"}},
      {"prices", {vto::cmd::prices, "print the price table cost estimates use ([--location L] [--machine M])"}},
      {"version", {vto::cmd::version, "print the version and git revision"}},
  };
  return table;
}

// "vto", or "kubectl vto" when run as the kubectl plugin kubectl-vto (`kubectl vto logs trun/NAME`).
std::string programName(const char* argv0) {
  std::string_view path = argv0 == nullptr ? "" : argv0;
  auto slash = path.rfind('/');
  auto base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return base == "kubectl-vto" ? "kubectl vto" : "vto";
}

int usage(std::ostream& out, const std::string& program, int code) {
  out << "usage: " << program << " COMMAND [flags]\n\ncommands:\n";
  for (const auto& [name, sub] : subcommands()) out << "  " << name << std::string(10 - name.size(), ' ') << sub.summary << "\n";
  out << "\n'" << program << " COMMAND --help' describes a command's flags.\n";
  return code;
}
}  // namespace

// jemalloc's options (cmd/CMakeLists.txt links it), read at its first allocation; MALLOC_CONF in the
// environment still overrides them. Two arenas instead of four per core: the threads that allocate
// are few, and each arena keeps memory of its own (about 2 MiB of peak RSS at 1,000 runs). Without
// jemalloc this is an unused string.
extern "C" {
const char* malloc_conf = "narenas:2";
}

int main(int argc, char** argv) {
  // The same commands under either name: kubectl finds plugins as kubectl-NAME on the PATH.
  auto program = programName(argc > 0 ? argv[0] : nullptr);
  if (argc < 2) return usage(std::cerr, program, 2);
  std::string name = argv[1];
  if (name == "-h" || name == "--help" || name == "help") return usage(std::cout, program, 0);
  if (name == "--version") name = "version";
  auto it = subcommands().find(name);
  if (it == subcommands().end()) {
    std::cerr << program << ": unknown command \"" << name << "\"\n\n";
    return usage(std::cerr, program, 2);
  }
  vto::cmd::Args args(argv + 2, argv + argc);
  try {
    return it->second.fn(args);
  } catch (const vto::cmd::UsageError& e) {
    std::cerr << program << " " << name << ": " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << program << " " << name << ": " << e.what() << "\n";
    return 1;
  }
}
