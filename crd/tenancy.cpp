#include "crd/tenancy.h"

#include <algorithm>

#include "crd/strict_json.h"

namespace vto::crd {
namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

bool listed(const std::vector<std::string>& allowed, const std::string& value) {
  return std::find(allowed.begin(), allowed.end(), value) != allowed.end();
}

// A prefix is a directory: "gs://b/dir" governs gs://b/dir and gs://b/dir/..., never gs://b/dirx.
std::string asDirectory(std::string prefix) {
  if (prefix.back() != '/') prefix += '/';
  return prefix;
}

bool underPrefix(const std::string& uri, const std::string& directory) {
  return uri.rfind(directory, 0) == 0 || uri + "/" == directory;
}

// GCS names are literal, but a container reading them through a FUSE mount resolves "..": a URI
// with such a segment could step out of its prefix.
bool hasDotSegment(const std::string& uri) {
  for (const char* dots : {"/../", "/./"}) {
    if (uri.find(dots) != std::string::npos) return true;
  }
  return uri.ends_with("/..") || uri.ends_with("/.");
}

std::vector<std::string> nonEmptyStrings(ObjectReader& reader, const std::string& key) {
  std::vector<std::string> out;
  reader.stringList(key, out);
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].empty())
      throw DecodeError(indexPath(reader.pathOf(key), i), "must not be empty; remove the entry or write a value");
  }
  return out;
}

TenancyRule parseRule(const json& value, const std::string& path) {
  ObjectReader reader(value, path);
  TenancyRule rule;
  rule.namespaces = nonEmptyStrings(reader, "namespaces");
  reader.with("namespaceSelector", [&](const json& selector, const std::string& selectorPath) {
    ObjectReader inner(selector, selectorPath);
    std::map<std::string, std::string> labels;
    inner.stringMap("matchLabels", labels);
    inner.finish();
    rule.matchLabels = std::move(labels);
  });
  rule.projects = nonEmptyStrings(reader, "projects");
  rule.locations = nonEmptyStrings(reader, "locations");
  rule.serviceAccounts = nonEmptyStrings(reader, "serviceAccounts");
  rule.bucketPrefixes = nonEmptyStrings(reader, "bucketPrefixes");
  rule.acceleratorTypes = nonEmptyStrings(reader, "acceleratorTypes");
  reader.integer("maxAccelerators", rule.maxAccelerators, 0, 1'000'000);
  reader.finish();
  if (rule.namespaces.empty() && !rule.matchLabels) {
    throw DecodeError(path, "selects no namespace; give namespaces: [NAME, ...] and/or "
                            "namespaceSelector: {matchLabels: {KEY: VALUE}}");
  }
  for (size_t i = 0; i < rule.bucketPrefixes.size(); ++i) {
    const auto& prefix = rule.bucketPrefixes[i];
    // "gs://" plus a bucket name: a bare "gs://" or "gs://a" prefix-matching "gs://ab" would give
    // away other buckets.
    if (prefix.rfind("gs://", 0) != 0 || prefix.size() <= 5 || prefix[5] == '/' || hasDotSegment(prefix)) {
      throw DecodeError(indexPath(path + ".bucketPrefixes", i),
                        "\"" + prefix + "\" is not a gs://BUCKET/ or gs://BUCKET/DIR/ prefix; write e.g. gs://acme-ml-out/");
    }
  }
  return rule;
}

bool labelsMatch(const std::map<std::string, std::string>& want, const std::map<std::string, std::string>& have) {
  for (const auto& [key, value] : want) {
    auto found = have.find(key);
    if (found == have.end() || found->second != value) return false;
  }
  return true;
}

// The first thing `rule` does not allow, or nullopt.
std::optional<TenancyViolation> violationOf(const TenancyRule& rule, size_t index, const TrainingRunSpec& spec,
                                            const Location& placement,
                                            const std::vector<std::pair<std::string, std::string>>& extraBucketUris) {
  auto rejected = [&](std::string field, const std::string& what, const std::string& value,
                      const std::vector<std::string>& allowed) {
    TenancyViolation violation{std::move(field), index, rule.describe(index), ""};
    violation.message = violation.field + ": " + what + " \"" + value + "\" is not allowed for this namespace by " +
                        violation.rule + "; allowed: " + joined(allowed);
    return violation;
  };
  if (!rule.projects.empty() && !listed(rule.projects, placement.project))
    return rejected(spec.project.empty() ? "spec.project (the operator's default)" : "spec.project", "project",
                    placement.project, rule.projects);
  if (!rule.locations.empty() && !listed(rule.locations, placement.location))
    return rejected(spec.location.empty() ? "spec.location (the operator's default)" : "spec.location", "location",
                    placement.location, rule.locations);
  if (!rule.serviceAccounts.empty() && !listed(rule.serviceAccounts, spec.serviceAccount)) {
    // No service account means Vertex's default one for the project, which the rule does not name.
    return rejected("spec.serviceAccount", "service account",
                    spec.serviceAccount.empty() ? "(none: the project's default)" : spec.serviceAccount,
                    rule.serviceAccounts);
  }
  if (!rule.bucketPrefixes.empty()) {
    auto uris = bucketUrisOf(spec);
    uris.insert(uris.end(), extraBucketUris.begin(), extraBucketUris.end());
    for (const auto& [field, uri] : uris) {
      const std::string& location = uri;  // clang 15 cannot capture a structured binding
      bool allowed = !hasDotSegment(location) &&
                     std::any_of(rule.bucketPrefixes.begin(), rule.bucketPrefixes.end(),
                                 [&](const auto& p) { return underPrefix(location, asDirectory(p)); });
      if (!allowed) return rejected(field, "location", uri, rule.bucketPrefixes);
    }
  }
  if (!rule.acceleratorTypes.empty()) {
    for (const auto& [field, type] : acceleratorTypesOf(spec)) {
      if (!listed(rule.acceleratorTypes, type)) return rejected(field, "accelerator type", type, rule.acceleratorTypes);
    }
  }
  if (auto needed = acceleratorsOf(spec); rule.maxAccelerators && needed > *rule.maxAccelerators) {
    TenancyViolation violation{spec.workerPoolSpecs.empty() ? "spec.resources.acceleratorCount" : "spec.workerPoolSpecs",
                               index, rule.describe(index), ""};
    violation.message = violation.field + ": the run needs " + std::to_string(needed) +
                        (spec.workerPoolSpecs.empty() ? " accelerators at once (per machine x machines x parallel trials)"
                                                      : " accelerators at once (each pool's acceleratorCount x "
                                                        "replicaCount, x parallel trials)") +
                        ", more than the " +
                        std::to_string(*rule.maxAccelerators) + " that " + violation.rule +
                        " allows in total; ask for fewer";
    return violation;
  }
  return std::nullopt;
}

}  // namespace

std::string TenancyRule::describe(size_t index) const {
  std::string out = "tenancy[" + std::to_string(index) + "] (";
  if (!namespaces.empty()) out += "namespaces " + joined(namespaces);
  if (matchLabels) {
    std::string labels;
    for (const auto& [key, value] : *matchLabels) labels += (labels.empty() ? "" : ",") + key + "=" + value;
    out += std::string(namespaces.empty() ? "" : "; ") + "namespaces labelled " + (labels.empty() ? "(any)" : labels);
  }
  return out + ")";
}

TenancyRules parseTenancyRules(const json& value, const std::string& path) {
  if (value.is_null()) return {};
  return readList<TenancyRule>(value, path, parseRule);
}

int64_t acceleratorsOf(const TrainingRunSpec& spec) {
  int64_t trials = spec.hyperparameterTuning ? std::max<int32_t>(spec.hyperparameterTuning->parallelTrialCount, 1) : 1;
  if (!spec.workerPoolSpecs.empty()) {  // the expert form: every pool's machines count
    int64_t total = 0;
    for (const auto& pool : spec.workerPoolSpecs) {
      auto read = readRawPool(pool);
      if (!read.acceleratorType.empty()) total += read.acceleratorCount * read.replicaCount;
    }
    return total * trials;
  }
  if (!spec.resources || spec.resources->acceleratorType.empty()) return 0;
  int64_t machines = spec.distribution ? std::max<int32_t>(spec.distribution->workerCount, 1) : 1;
  return int64_t{spec.resources->acceleratorCount} * machines * trials;
}

std::vector<std::pair<std::string, std::string>> acceleratorTypesOf(const TrainingRunSpec& spec) {
  std::vector<std::pair<std::string, std::string>> out;
  if (spec.resources && !spec.resources->acceleratorType.empty())
    out.emplace_back("spec.resources.acceleratorType", spec.resources->acceleratorType);
  for (size_t i = 0; i < spec.workerPoolSpecs.size(); ++i) {
    auto read = readRawPool(spec.workerPoolSpecs[i]);
    if (!read.acceleratorType.empty())
      out.emplace_back(indexPath("spec.workerPoolSpecs", i) + ".machineSpec.acceleratorType", read.acceleratorType);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> bucketUrisOf(const TrainingRunSpec& spec) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!spec.baseOutputDirectory.empty()) out.emplace_back("spec.baseOutputDirectory", spec.baseOutputDirectory);
  auto checkpoints = checkpointDirectoryOf(spec);
  if (!checkpoints.empty()) {
    bool explicitDirectory = !spec.checkpointing.directory.empty();
    out.emplace_back(explicitDirectory ? "spec.checkpointing.directory" : "spec.checkpointing.directory (default)",
                     checkpoints);
  }
  if (spec.trainer && spec.trainer->pythonPackage) {
    const auto& uris = spec.trainer->pythonPackage->packageUris;
    for (size_t i = 0; i < uris.size(); ++i)
      out.emplace_back(indexPath("spec.trainer.pythonPackage.packageUris", i), uris[i]);
  }
  for (size_t i = 0; i < spec.workerPoolSpecs.size(); ++i) {
    auto uris = readRawPool(spec.workerPoolSpecs[i]).packageUris;
    for (size_t j = 0; j < uris.size(); ++j) {
      out.emplace_back(indexPath(indexPath("spec.workerPoolSpecs", i) + ".pythonPackageSpec.packageUris", j), uris[j]);
    }
  }
  return out;
}

TenancyDecision decideTenancy(const TrainingRunSpec& spec, const Location& defaults, const NamespaceInfo& ns,
                              const TenancyRules& rules,
                              const std::vector<std::pair<std::string, std::string>>& extraBucketUris) {
  TenancyDecision decision;
  if (rules.empty()) return decision;
  auto placement = locationOf(spec, defaults);
  std::optional<TenancyViolation> first;
  for (size_t i = 0; i < rules.size(); ++i) {
    const auto& rule = rules[i];
    if (!ruleSelects(rule, ns)) continue;
    if (!listed(rule.namespaces, ns.name) && !ns.labels) decision.assumedSelectorRules.push_back(i);
    auto violation = violationOf(rule, i, spec, placement, extraBucketUris);
    if (!violation) {
      decision.governingRule = i;
      return decision;
    }
    if (!first) first = std::move(violation);
  }
  if (!first) {
    first = TenancyViolation{"metadata.namespace", std::nullopt, "",
                             "metadata.namespace: no tenancy rule matches namespace \"" + ns.name +
                                 "\", so runs there may use no project; ask the platform team to add it to a rule"};
  }
  decision.violation = std::move(first);
  return decision;
}

TenancyDecision decidePolicyTenancy(const RetrainingPolicySpec& spec, const Location& defaults,
                                    const NamespaceInfo& ns, const TenancyRules& rules) {
  static const std::string kDataPrefix = "spec.triggers.newData.gcsPrefix";
  std::vector<std::pair<std::string, std::string>> extra;
  if (spec.triggers.newData) extra.emplace_back(kDataPrefix, spec.triggers.newData->gcsPrefix);
  auto decision = decideTenancy(spec.templ.spec, defaults, ns, rules, extra);
  auto& violation = decision.violation;
  if (violation && violation->field != kDataPrefix && violation->field.rfind("spec.", 0) == 0) {
    std::string field = "spec.template." + violation->field;
    if (violation->message.rfind(violation->field, 0) == 0) violation->message.replace(0, violation->field.size(), field);
    violation->field = std::move(field);
  }
  return decision;
}

bool ruleSelects(const TenancyRule& rule, const NamespaceInfo& ns) {
  if (listed(rule.namespaces, ns.name)) return true;
  if (!rule.matchLabels) return false;
  return !ns.labels || labelsMatch(*rule.matchLabels, *ns.labels);
}

std::vector<bool> rulesAllowing(const TrainingRunSpec& spec, const Location& defaults, const TenancyRules& rules) {
  auto placement = locationOf(spec, defaults);
  std::vector<bool> allowed(rules.size());
  for (size_t i = 0; i < rules.size(); ++i) allowed[i] = !violationOf(rules[i], i, spec, placement, {});
  return allowed;
}

std::optional<TenancyViolation> checkTenancy(const TrainingRunSpec& spec, const Location& defaults,
                                             const NamespaceInfo& ns, const TenancyRules& rules,
                                             const std::vector<std::pair<std::string, std::string>>& extraBucketUris) {
  return decideTenancy(spec, defaults, ns, rules, extraBucketUris).violation;
}

AcceleratorClaim claimOf(const TrainingRun& run, bool holding) {
  return {run.metadata.namespace_ + "/" + run.metadata.name, run.metadata.creationTimestamp, acceleratorsOf(run.spec),
          holding};
}

int64_t acceleratorsInUse(const std::vector<AcceleratorClaim>& claims) {
  int64_t total = 0;
  for (const auto& claim : claims) {
    if (claim.holding) total += claim.accelerators;
  }
  return total;
}

bool olderThan(const AcceleratorClaim& a, const AcceleratorClaim& b) {
  return a.creationTimestamp != b.creationTimestamp ? a.creationTimestamp < b.creationTimestamp : a.key < b.key;
}

AdmitDecision admit(const AcceleratorClaim& candidate, const std::vector<AcceleratorClaim>& claims, int64_t cap,
                    const std::string& ruleDescription) {
  AdmitDecision decision;
  for (const auto& claim : claims) {
    if (claim.key == candidate.key) continue;
    if (claim.holding) {
      decision.inUse += claim.accelerators;
    } else if (olderThan(claim, candidate)) {
      decision.aheadInLine += claim.accelerators;
    }
  }
  decision.admitted = decision.inUse + decision.aheadInLine + candidate.accelerators <= cap;
  if (!decision.admitted) {
    decision.message = "waiting for accelerators: " + std::to_string(decision.inUse) + " of " + std::to_string(cap) +
                       " allowed by " + ruleDescription + " are in use and older runs wait for " +
                       std::to_string(decision.aheadInLine) + "; this run needs " +
                       std::to_string(candidate.accelerators) + " and starts when they are free";
  }
  return decision;
}

}  // namespace vto::crd
