#include "cmd/flags.h"

#include <fstream>

#include "crd/yaml_json.h"

#include <iostream>
#include <sstream>
#include <stdexcept>

namespace vto::cmd {

namespace {
// A config file is small: refuse anything larger than 1 MiB instead of reading it whole.
std::string readConfigText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open the file; check the path");
  std::string text;
  char chunk[65536];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (text.size() > 1024 * 1024) throw std::runtime_error("larger than 1 MiB; a config file is a few lines of YAML");
  }
  return text;
}
}  // namespace

Flags::Flags(std::string command, std::string about, std::vector<FlagSpec> specs)
    : command_(std::move(command)), about_(std::move(about)), specs_(std::move(specs)) {
  specs_.push_back({"config", 0, "", "YAML file of flag values (keys are flag names); command-line flags win"});
}

const FlagSpec& Flags::spec(const std::string& name) const {
  for (const auto& s : specs_) {
    if (s.name == name) return s;
  }
  throw UsageError("unknown flag --" + name + "; 'vto " + command_ + " --help' lists the flags");
}

void Flags::set(const std::string& name, const std::string& value, bool fromFile) {
  const auto& s = spec(name);
  if (s.boolean && value != "true" && value != "false") {
    throw UsageError("--" + name + " takes true or false, not \"" + value + "\"");
  }
  if (fromFile && fromCommandLine_[name]) return;
  auto& slot = values_[name];
  if (!fromFile && !fromCommandLine_[name]) slot.clear();  // the command line replaces file values
  if (!fromFile) fromCommandLine_[name] = true;
  if (!s.repeatable) slot.clear();
  slot.push_back(value);
}

bool Flags::parse(const Args& args, std::vector<std::string>* positionals) {
  std::string configPath;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "-h" || arg == "--help") {
      std::cout << usage();
      return false;
    }
    std::string name, value;
    if (arg.size() == 2 && arg[0] == '-' && arg[1] != '-') {
      for (const auto& s : specs_) {
        if (s.shortName == arg[1]) name = s.name;
      }
      if (name.empty()) throw UsageError("unknown flag " + arg + "; 'vto " + command_ + " --help' lists the flags");
    } else if (arg.rfind("--", 0) == 0) {
      name = arg.substr(2);
    } else if (positionals != nullptr) {
      positionals->push_back(arg);
      continue;
    } else {
      throw UsageError("unexpected argument \"" + arg + "\"; 'vto " + command_ + " --help' lists the flags");
    }
    auto eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (spec(name).boolean) {
      value = "true";
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      throw UsageError("--" + name + " needs a value");
    }
    if (name == "config") {
      configPath = value;
      continue;
    }
    set(name, value, false);
  }
  if (!configPath.empty()) {
    values_["config"] = {configPath};
    loadConfigFile(configPath);
  }
  return true;
}

void Flags::allowConfigSection(const std::string& key) { sections_[key] = nullptr; }

const nlohmann::json& Flags::configSection(const std::string& key) const {
  static const nlohmann::json none;
  auto found = sections_.find(key);
  return found == sections_.end() ? none : found->second;
}

namespace {
// A flag value written in YAML: text as it is, numbers and booleans as they print.
std::string flagText(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "";
  return value.dump();
}
}  // namespace

void Flags::loadConfigFile(const std::string& path) {
  std::vector<nlohmann::json> documents;
  try {
    // The manifest reader: aliases budgeted, duplicate keys refused, invalid UTF-8 refused.
    documents = crd::parseYamlDocuments(readConfigText(path));
  } catch (const std::exception& e) {
    throw UsageError("--config " + path + ": " + e.what());
  }
  if (documents.size() > 1) throw UsageError("--config " + path + ": must be one YAML document, not " + std::to_string(documents.size()));
  if (documents.empty()) return;
  const auto& root = documents[0];
  if (!root.is_object()) throw UsageError("--config " + path + ": must be a YAML map of flag names to values");
  for (const auto& [name, value] : root.items()) {
    if (name == "config") throw UsageError("--config " + path + ": a config file cannot name another with `config:`");
    if (auto section = sections_.find(name); section != sections_.end()) {
      section->second = value;
      continue;
    }
    if (value.is_object()) throw UsageError("--config " + path + ": " + name + " takes a value or a list, not a map");
    if (value.is_array()) {
      for (const auto& item : value) set(name, flagText(item), true);
    } else {
      set(name, flagText(value), true);
    }
  }
}

std::string Flags::get(const std::string& name) const {
  auto all = getAll(name);
  return all.empty() ? "" : all.back();
}

std::vector<std::string> Flags::getAll(const std::string& name) const {
  auto it = values_.find(name);
  if (it != values_.end()) return it->second;
  const auto& s = spec(name);
  return s.defaultValue.empty() ? std::vector<std::string>{} : std::vector<std::string>{s.defaultValue};
}

bool Flags::getBool(const std::string& name) const { return get(name) == "true"; }

int Flags::getInt(const std::string& name) const {
  auto text = get(name);
  try {
    size_t used = 0;
    int value = std::stoi(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  throw UsageError("--" + name + " takes a whole number, not \"" + text + "\"");
}

std::string Flags::usage() const {
  std::ostringstream out;
  out << "usage: vto " << command_ << " [flags]\n\n";
  if (!about_.empty()) out << about_ << "\n\n";
  out << "flags:\n";
  for (const auto& s : specs_) {
    if (s.hidden) continue;
    out << "  " << (s.shortName ? std::string("-") + s.shortName + ", " : "") << "--" << s.name
        << (s.boolean ? "" : " VALUE") << "\n      " << s.help;
    if (!s.defaultValue.empty() && s.defaultValue != "false") out << " (default " << s.defaultValue << ")";
    if (s.repeatable) out << " (repeatable)";
    out << "\n";
  }
  return out.str();
}

}  // namespace vto::cmd
