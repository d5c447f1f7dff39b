#pragma once
// A small flag parser for `vto` subcommands: --name=value, --name value, bare --bool, repeatable
// flags, and a YAML config file (`--config FILE`) whose keys are the flag names, so a Helm chart can
// mount one. Flags on the command line win over the file.
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "cmd/commands.h"

namespace vto::cmd {

struct FlagSpec {
  std::string name;          // without the leading dashes
  char shortName = 0;        // -f for --filename; 0 for none
  std::string defaultValue;  // "" for none; "false" for booleans
  std::string help;
  bool boolean = false;
  bool repeatable = false;
  bool hidden = false;  // left out of --help (test-only flags)
};

// A usage error: main() prints it with the hint to --help and exits 2.
class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class Flags {
 public:
  // `about` is the text --help prints between the synopsis line and the flags.
  Flags(std::string command, std::string about, std::vector<FlagSpec> specs);
  // Throws UsageError naming the flag and what to do instead. Returns false for --help (after
  // printing the usage). Arguments that are not flags or flag values go to `positionals` when it is
  // given (`vto logs trun/NAME`), and are refused otherwise.
  bool parse(const Args& args, std::vector<std::string>* positionals = nullptr);
  std::string get(const std::string& name) const;
  std::vector<std::string> getAll(const std::string& name) const;
  bool getBool(const std::string& name) const;
  int getInt(const std::string& name) const;
  std::string usage() const;
  // A structured key the --config file may hold beside the flags (e.g. "tenancy"); call before
  // parse(). Its value is kept as JSON, null when the file has none.
  void allowConfigSection(const std::string& key);
  const nlohmann::json& configSection(const std::string& key) const;

 private:
  const FlagSpec& spec(const std::string& name) const;
  void set(const std::string& name, const std::string& value, bool fromFile);
  void loadConfigFile(const std::string& path);

  std::string command_;
  std::string about_;
  std::vector<FlagSpec> specs_;
  std::map<std::string, std::vector<std::string>> values_;
  std::map<std::string, bool> fromCommandLine_;
  std::map<std::string, nlohmann::json> sections_;
};

}  // namespace vto::cmd
