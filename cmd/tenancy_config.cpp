#include "cmd/tenancy_config.h"

#include <spdlog/spdlog.h>

#include "base/json_fields.h"
#include "cmd/manifest_input.h"
#include "crd/object_meta.h"
#include "crd/strict_json.h"
#include "crd/training_run.h"
#include "crd/yaml_json.h"

namespace vto::cmd {

void allowTenancySection(Flags& flags) { flags.allowConfigSection("tenancy"); }

governance::TenancyRules tenancyRulesFromConfig(const Flags& flags) {
  governance::TenancyRules rules;
  try {
    rules = governance::parseTenancyRules(flags.configSection("tenancy"));
  } catch (const crd::DecodeError& e) {
    throw UsageError("--config " + flags.get("config") + ": " + e.what());
  }
  if (rules.empty()) {
    spdlog::warn("no tenancy rules configured: every namespace may use every project, location, service account "
                 "and bucket the operator's identity can reach; set `tenancy:` in the config file (the chart's "
                 "values) to limit each namespace");
  } else {
    spdlog::info("tenancy: {} rule(s); a namespace no rule matches may use nothing", rules.size());
  }
  // Fields a rule opens with "*", and fields it leaves closed because it was written before they
  // were governed (docs/security.md, "Upgrading").
  for (size_t i = 0; i < rules.size(); ++i) {
    for (const auto& warning : rules[i].startupWarnings(i)) spdlog::warn("{}", warning);
  }
  return rules;
}

TenancyFile readTenancyFile(const std::string& path) {
  try {
    auto documents = crd::parseYamlDocuments(readManifestInput(path));
    if (documents.size() != 1) throw std::runtime_error("must be one YAML document");
    const auto& root = documents[0];
    TenancyFile file;
    if (root.is_object()) {
      if (!root.contains("tenancy"))
        throw std::runtime_error("has no `tenancy:` key; give the operator's config file or a list of rules");
      file.rules = governance::parseTenancyRules(root["tenancy"]);
      auto text = [&](const char* key) { return root.contains(key) && root[key].is_string() ? root[key].get<std::string>() : ""; };
      file.defaults = {text("default-project"), text("default-location")};
    } else {
      file.rules = governance::parseTenancyRules(root);
    }
    return file;
  } catch (const std::exception& e) {
    throw UsageError("--tenancy " + path + ": " + e.what());
  }
}

std::vector<crd::Finding> tenancyFindings(const nlohmann::json& object, const TenancyFile& tenancy) {
  std::vector<crd::Finding> out;
  if (!object.is_object()) return out;
  const std::string kind = stringField(object, "kind");
  if (kind != crd::kTrainingRunKind && kind != crd::kRetrainingPolicyKind) return out;
  crd::ObjectMeta metadata;
  governance::TenancyDecision decision;
  try {
    metadata = crd::decodeObjectMeta(object.value("metadata", nlohmann::json::object()), "metadata");
  } catch (const std::exception&) {
    return out;  // the decode error is already a finding of its own
  }
  governance::NamespaceInfo ns{metadata.namespace_.empty() ? "default" : metadata.namespace_, std::nullopt};
  try {
    decision = kind == crd::kTrainingRunKind
                   ? governance::decideTenancy(crd::decodeTrainingRun(object).spec, tenancy.defaults, ns, tenancy.rules)
                   : governance::decidePolicyTenancy(crd::decodeRetrainingPolicy(object).spec, tenancy.defaults, ns,
                                              tenancy.rules);
  } catch (const std::exception&) {
    return out;
  }
  if (metadata.namespace_.empty()) {
    out.push_back({crd::Severity::Warning, "metadata.namespace",
                   "not set: checked the tenancy rules for namespace \"default\"; kubectl applies it to your "
                   "context's namespace, so set metadata.namespace to check the right one"});
  }
  for (size_t index : decision.assumedSelectorRules) {
    out.push_back({crd::Severity::Warning, "metadata.namespace",
                   "namespace labels are unknown offline: assumed that " + tenancy.rules[index].describe(index) +
                       " matches namespace \"" + ns.name + "\"; the operator checks the real labels"});
  }
  if (decision.violation) {
    auto message = decision.violation->message;
    // The message starts with the field for conditions and events; the finding has it as its path.
    if (message.rfind(decision.violation->field + ": ", 0) == 0) message.erase(0, decision.violation->field.size() + 2);
    out.push_back({crd::Severity::Error, decision.violation->field, message});
  }
  return out;
}

}  // namespace vto::cmd
