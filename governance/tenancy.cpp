#include "governance/tenancy.h"

#include <algorithm>
#include <stdexcept>

#include "base/url.h"
#include "crd/accelerators.h"
#include "crd/strict_json.h"

namespace vto::governance {
// What this file reads of the API.
using crd::DecodeError;
using crd::ObjectReader;
using crd::RawPool;
using crd::RetrainingPolicySpec;
using crd::TrainingRun;
using crd::TrainingRunSpec;
using crd::acceleratorTypesOf;
using crd::acceleratorsOf;
using crd::artifactUriOf;
using crd::checkpointDirectoryOf;
using crd::indexPath;
using crd::joinPath;
using crd::locationOf;
using crd::readList;
using crd::readNumber;
using crd::readRawPool;
using crd::readString;
using crd::readStringList;
using crd::saturatingAdd;
using nlohmann::json;

namespace {

using FieldValues = std::vector<std::pair<std::string, std::string>>;

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

bool listed(const std::vector<std::string>& allowed, const std::string& value) {
  return std::find(allowed.begin(), allowed.end(), value) != allowed.end();
}

bool underPrefix(const std::string& uri, const std::string& prefix) {
  return directoryPrefix(uri).rfind(directoryPrefix(prefix), 0) == 0;
}

// GCS names are literal, but a container reading them through a FUSE mount resolves "..": a URI
// with such a segment could step out of its prefix.
bool hasDotSegment(const std::string& uri) {
  for (const char* dots : {"/../", "/./"}) {
    if (uri.find(dots) != std::string::npos) return true;
  }
  return uri.ends_with("/..") || uri.ends_with("/.");
}

// "projects/P/locations/L/tensorboards/T" against "projects/*/locations/*/tensorboards/*": P, or
// nullopt when `name` does not have that shape (each * one non-empty segment).
std::optional<std::string> projectOfResource(const std::string& name, const std::string& pattern) {
  auto segments = [](const std::string& text) {
    std::vector<std::string> out;
    size_t start = 0;
    while (true) {
      size_t slash = text.find('/', start);
      out.push_back(text.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
      if (slash == std::string::npos) return out;
      start = slash + 1;
    }
  };
  auto have = segments(name), want = segments(pattern);
  if (have.size() != want.size()) return std::nullopt;
  for (size_t i = 0; i < want.size(); ++i) {
    if (have[i].empty() || (want[i] != "*" && have[i] != want[i])) return std::nullopt;
  }
  return have[1];
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

// Every entry of rule field `key` must satisfy `ok`; else the entry is named with `expected`.
template <typename Check>
void requireEach(const std::vector<std::string>& values, const std::string& path, Check&& ok, const std::string& expected) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!ok(values[i])) throw DecodeError(indexPath(path, i), "\"" + values[i] + "\" " + expected);
  }
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
  rule.prometheusUrls = nonEmptyStrings(reader, "prometheusUrls");
  reader.with("networks", [&](const json& list, const std::string& listPath) {
    // A network by name, or {name, reservedIpRanges}: the ranges a run may name on it.
    readList<int>(list, listPath, [&](const json& entry, const std::string& entryPath) {
      std::string name;
      std::vector<std::string> ranges;
      if (entry.is_object()) {
        ObjectReader network(entry, entryPath);
        network.string("name", name);
        ranges = nonEmptyStrings(network, "reservedIpRanges");
        network.finish();
        if (name.empty()) throw DecodeError(entryPath + ".name", "is required: the network's projects/PROJECT_NUMBER/global/networks/NAME");
      } else {
        name = readString(entry, entryPath);
      }
      if (!projectOfResource(name, "projects/*/global/networks/*"))
        throw DecodeError(entryPath, "\"" + name + "\" is not a VPC network name; write projects/PROJECT_NUMBER/global/networks/NAME, "
                                     "as spec.network does (or {name: ..., reservedIpRanges: [RANGE, ...]})");
      rule.networks.push_back(name);
      rule.reservedIpRanges[name] = std::move(ranges);
      return 0;
    });
  });
  rule.imagePrefixes = nonEmptyStrings(reader, "imagePrefixes");
  reader.with("labels", [&](const json& object, const std::string& objectPath) {
    if (!object.is_object()) throw DecodeError(objectPath, "must be a map of label key to allowed values ([] for any), e.g. {experiment: [], cost-center: [cc-1234]}");
    for (const auto& [key, values] : object.items()) {
      auto allowed = readStringList(values, joinPath(objectPath, key));
      if (key == kAnyValue && !allowed.empty())
        throw DecodeError(joinPath(objectPath, key), "\"*\" allows any other key with any value; give it [] or list the keys");
      rule.labels[key] = std::move(allowed);
    }
  });
  rule.tensorboards = nonEmptyStrings(reader, "tensorboards");
  rule.kmsKeys = nonEmptyStrings(reader, "kmsKeys");
  bool listsModels = reader.has("models");  // absent and [] both allow none; absent is warned about at start
  auto models = nonEmptyStrings(reader, "models");
  if (listsModels) rule.models = std::move(models);
  rule.nfsServers = nonEmptyStrings(reader, "nfsServers");
  rule.reservations = nonEmptyStrings(reader, "reservations");
  reader.boolean("interactiveShell", rule.interactiveShell);
  reader.string("name", rule.name);
  reader.with("budget", [&](const json& v, const std::string& p) {
    ObjectReader b(v, p);
    Budget budget;
    b.with("monthlyUsd", [&](const json& m, const std::string& mp) {
      double dollars = readNumber(m, mp);
      auto usd = dollars >= 0 && dollars <= 1e12 ? Usd::fromDollars(dollars) : std::nullopt;
      if (!usd) throw DecodeError(mp, "must be US dollars, 0 or more");
      budget.monthlyUsd = *usd;
    });
    if (!b.has("monthlyUsd")) throw DecodeError(p + ".monthlyUsd", "is required: the rule's spend per calendar month (UTC) in US dollars");
    b.with("onExceeded", [&](const json& a, const std::string& ap) {
      auto action = readString(a, ap);
      if (action == "Hold") budget.onExceeded = BudgetAction::Hold;
      else if (action == "Warn") budget.onExceeded = BudgetAction::Warn;
      else throw DecodeError(ap, "\"" + action + "\" is not valid; use Hold or Warn");
    });
    b.finish();
    rule.budget = budget;
  });
  reader.finish();
  // The name is a metric label and a Google Cloud label value (vto-team) on every job.
  if (!rule.name.empty() && (rule.name.size() > 63 || !std::all_of(rule.name.begin(), rule.name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
      }))) {
    throw DecodeError(path + ".name", "must be at most 63 lower-case letters, digits, '-' or '_', e.g. team-a");
  }
  if (rule.budget && rule.name.empty()) {
    throw DecodeError(path + ".name", "is required with budget: it names the budget in metrics and messages");
  }
  // The month's spend is read from the jobs Vertex holds where the rule lets runs go: an open list
  // (any project, any region) would leave spend nobody reads.
  if (rule.budget && rule.projects.empty()) {
    throw DecodeError(path + ".projects", "is required with budget: the month's spend is read from the jobs in "
                                          "these projects; list the ones the rule's runs may use, e.g. [ml-prod]");
  }
  if (rule.budget && rule.locations.empty()) {
    throw DecodeError(path + ".locations", "is required with budget: the month's spend is read from the jobs in "
                                           "these regions; list the ones the rule's runs may use, e.g. [us-central1]");
  }
  if (rule.namespaces.empty() && !rule.matchLabels) {
    throw DecodeError(path, "selects no namespace; give namespaces: [NAME, ...] and/or "
                            "namespaceSelector: {matchLabels: {KEY: VALUE}}");
  }
  // "gs://" plus a bucket name: a bare "gs://" or "gs://a" prefix-matching "gs://ab" would give
  // away other buckets.
  requireEach(rule.bucketPrefixes, path + ".bucketPrefixes",
              [](const std::string& p) { return p.rfind("gs://", 0) == 0 && p.size() > 5 && p[5] != '/' && !hasDotSegment(p); },
              "is not a gs://BUCKET/ or gs://BUCKET/DIR/ prefix; write e.g. gs://acme-ml-out/");
  requireEach(rule.prometheusUrls, path + ".prometheusUrls",
              [](const std::string& url) { return canonicalPrometheusUrl(url).has_value(); },
              "is not an http(s) base URL; write e.g. https://prometheus.monitoring:9090");
  // A registry path ending in "/" (so that ".../acme-ml/" cannot match ".../acme-ml-other/..."),
  // lower case as image references are.
  requireEach(rule.imagePrefixes, path + ".imagePrefixes",
              [](const std::string& p) {
                return p == kAnyValue || (p.size() > 1 && p.back() == '/' && p.find('/') < p.size() - 1 &&
                                          p.find('.') < p.find('/') && !hasDotSegment("/" + p) &&
                                          std::none_of(p.begin(), p.end(), [](char c) { return c >= 'A' && c <= 'Z'; }));
              },
              "is not an image prefix; write a registry path ending in \"/\", e.g. us-central1-docker.pkg.dev/acme-ml/train/ "
              "(or \"*\" for any image)");
  requireEach(rule.tensorboards, path + ".tensorboards",
              [](const std::string& t) { return t == kAnyValue || projectOfResource(t, "projects/*/locations/*/tensorboards/*"); },
              "is not a TensorBoard name; write projects/PROJECT/locations/LOCATION/tensorboards/ID (or \"*\": any in the rule's projects)");
  requireEach(rule.kmsKeys, path + ".kmsKeys",
              [](const std::string& k) { return k == kAnyValue || projectOfResource(k, "projects/*/locations/*/keyRings/*/cryptoKeys/*"); },
              "is not a KMS key name; write projects/PROJECT/locations/LOCATION/keyRings/RING/cryptoKeys/KEY "
              "(or \"*\": any in the rule's projects)");
  requireEach(rule.reservations, path + ".reservations",
              [](const std::string& r) { return projectOfResource(r, "projects/*/zones/*/reservations/*").has_value(); },
              "is not a reservation name; write projects/PROJECT/zones/ZONE/reservations/NAME");
  return rule;
}

bool labelsMatch(const std::map<std::string, std::string>& want, const std::map<std::string, std::string>& have) {
  for (const auto& [key, value] : want) {
    auto found = have.find(key);
    if (found == have.end() || found->second != value) return false;
  }
  return true;
}

// What a RetrainingPolicy adds to its template's spec: more bucket locations, and the Prometheus
// endpoint of its metric trigger.
struct Extras {
  FieldValues bucketUris;
  std::optional<std::pair<std::string, std::string>> prometheusUrl;  // (field, URL)
};

const char* kReservationNameKey = "compute.googleapis.com/reservation-name";

class RuleCheck {
 public:
  RuleCheck(const TenancyRule& rule, size_t index) : rule_(rule), index_(index) {}

  // "FIELD: WHAT "VALUE" is not allowed for this namespace by RULE; allowed: ...".
  TenancyViolation rejected(std::string field, const std::string& what, const std::string& value,
                            const std::vector<std::string>& allowed, const std::string& ruleField) const {
    return violation(std::move(field), what + " \"" + value + "\" is not allowed for this namespace by " + describe() +
                                           "; allowed: " + (allowed.empty() ? "none (the rule lists no " + ruleField + ")" : joined(allowed)));
  }
  TenancyViolation violation(std::string field, const std::string& message) const {
    TenancyViolation out{std::move(field), index_, describe(), ""};
    out.message = out.field + ": " + message;
    return out;
  }
  std::string describe() const { return rule_.describe(index_); }

 private:
  const TenancyRule& rule_;
  size_t index_;
};

std::optional<TenancyViolation> rawPoolViolation(const TenancyRule& rule, const RuleCheck& check, const RawPool& pool,
                                                 const std::string& at) {
  // Fail closed: a pool the rules cannot read completely is not allowed, whatever validation says.
  if (!pool.unreadable.empty()) {
    const auto& first = pool.unreadable.front();
    return check.violation(at + "." + first.field, first.expected + " (the tenancy rules of " + check.describe() +
                                                       " check only what they can read)");
  }
  for (size_t j = 0; j < pool.nfsMounts.size(); ++j) {
    const auto& server = pool.nfsMounts[j].server;
    if (!listed(rule.nfsServers, server))
      return check.rejected(indexPath(at + ".nfsMounts", j) + ".server", "NFS server", server, rule.nfsServers, "nfsServers");
  }
  if (pool.lustreMounts > 0) {
    return check.violation(at + ".lustreMounts", "Lustre mounts are not allowed while tenancy rules exist (" + check.describe() +
                                                     " has no field that could allow one); remove lustreMounts");
  }
  if (const auto& affinity = pool.reservationAffinity) {
    const std::string field = at + ".machineSpec.reservationAffinity";
    if (affinity->type == "NO_RESERVATION") return std::nullopt;  // on-demand capacity only: nobody's reservation
    if (affinity->type != "SPECIFIC_RESERVATION") {
      return check.violation(field + ".reservationAffinityType",
                             "\"" + affinity->type + "\" is not allowed for this namespace by " + check.describe() +
                                 ": it may consume any reservation of the project, another team's too; use "
                                 "SPECIFIC_RESERVATION with a reservation the rule lists (" +
                                 (rule.reservations.empty() ? "none" : joined(rule.reservations)) + "), or NO_RESERVATION");
    }
    if (affinity->key != kReservationNameKey || affinity->values.empty()) {
      return check.violation(field + ".key", std::string("the rules allow reservations by name: set key: ") + kReservationNameKey +
                                                 " and values: [projects/PROJECT/zones/ZONE/reservations/NAME]");
    }
    for (size_t k = 0; k < affinity->values.size(); ++k) {
      if (!listed(rule.reservations, affinity->values[k]))
        return check.rejected(indexPath(field + ".values", k), "reservation", affinity->values[k], rule.reservations,
                              "reservations");
    }
  }
  return std::nullopt;
}

// A resource of the run (a TensorBoard, a KMS key) must be one the rule lists by name, or, where
// the rule lists "*", any in one of the rule's projects.
std::optional<TenancyViolation> resourceViolation(const TenancyRule& rule, const RuleCheck& check, const std::string& field,
                                                  const std::string& what, const std::string& name,
                                                  const std::string& pattern, const std::vector<std::string>& allowed,
                                                  const std::string& ruleField) {
  if (name.empty()) return std::nullopt;
  if (listed(allowed, name)) return std::nullopt;
  if (!listed(allowed, kAnyValue)) return check.rejected(field, what, name, allowed, ruleField);
  auto project = projectOfResource(name, pattern);
  if (!project) {
    return check.violation(field, "\"" + name + "\" is not a " + what + " name; write " + pattern +
                                      " (PROJECT by its ID), so that " + check.describe() + " can check its project");
  }
  if (rule.projects.empty() || listed(rule.projects, *project)) return std::nullopt;
  return check.violation(field, what + " \"" + name + "\" is in project \"" + *project +
                                    "\", which is not allowed for this namespace by " + check.describe() +
                                    "; allowed: a " + what + " in " + joined(rule.projects) + " (by project ID)");
}

// The first thing `rule` does not allow, or nullopt.
std::optional<TenancyViolation> violationOf(const TenancyRule& rule, size_t index, const TrainingRunSpec& spec,
                                            const Location& placement, const Extras& extras) {
  RuleCheck check(rule, index);
  auto rejected = [&](std::string field, const std::string& what, const std::string& value,
                      const std::vector<std::string>& allowed, const std::string& ruleField) {
    return check.rejected(std::move(field), what, value, allowed, ruleField);
  };
  if (!rule.projects.empty() && !listed(rule.projects, placement.project))
    return rejected(spec.project.empty() ? "spec.project (the operator's default)" : "spec.project", "project",
                    placement.project, rule.projects, "projects");
  if (!rule.locations.empty() && !listed(rule.locations, placement.location))
    return rejected(spec.location.empty() ? "spec.location (the operator's default)" : "spec.location", "location",
                    placement.location, rule.locations, "locations");
  if (!rule.serviceAccounts.empty() && !listed(rule.serviceAccounts, spec.serviceAccount)) {
    // No service account means Vertex's default one for the project, which the rule does not name.
    return rejected("spec.serviceAccount", "service account",
                    spec.serviceAccount.empty() ? "(none: the project's default)" : spec.serviceAccount,
                    rule.serviceAccounts, "serviceAccounts");
  }
  std::vector<RawPool> pools;
  for (const auto& pool : spec.workerPoolSpecs) pools.push_back(readRawPool(pool));
  for (size_t i = 0; i < pools.size(); ++i) {
    if (auto violation = rawPoolViolation(rule, check, pools[i], indexPath("spec.workerPoolSpecs", i))) return violation;
  }
  if (!rule.bucketPrefixes.empty()) {
    auto uris = bucketUrisOf(spec);
    uris.insert(uris.end(), extras.bucketUris.begin(), extras.bucketUris.end());
    for (const auto& [field, uri] : uris) {
      const std::string& location = uri;  // clang 15 cannot capture a structured binding
      bool allowed = !hasDotSegment(location) &&
                     std::any_of(rule.bucketPrefixes.begin(), rule.bucketPrefixes.end(),
                                 [&](const auto& p) { return underPrefix(location, p); });
      if (!allowed) return rejected(field, "location", uri, rule.bucketPrefixes, "bucketPrefixes");
    }
  }
  if (!rule.acceleratorTypes.empty()) {
    for (const auto& [field, type] : acceleratorTypesOf(spec)) {
      if (!listed(rule.acceleratorTypes, type))
        return rejected(field, "accelerator type", type, rule.acceleratorTypes, "acceleratorTypes");
    }
  }
  if (auto needed = acceleratorsOf(spec); rule.maxAccelerators && needed > *rule.maxAccelerators) {
    auto violation = check.violation(
        spec.workerPoolSpecs.empty() ? "spec.resources.acceleratorCount" : "spec.workerPoolSpecs",
        "the run needs " + std::to_string(needed) +
            (spec.workerPoolSpecs.empty() ? " accelerators at once (per machine x machines x parallel trials)"
                                          : " accelerators at once (each pool's acceleratorCount x replicaCount, x parallel trials)") +
            ", more than the " + std::to_string(*rule.maxAccelerators) + " that " + check.describe() +
            " allows in total; ask for fewer");
    return violation;
  }
  if (!spec.network.empty() && !listed(rule.networks, spec.network))
    return rejected("spec.network", "network", spec.network, rule.networks, "networks");
  if (!spec.reservedIpRanges.empty() && spec.network.empty()) {
    return check.violation("spec.reservedIpRanges", "reserved IP ranges belong to a network: set spec.network to one " +
                                                        check.describe() + " allows (" +
                                                        (rule.networks.empty() ? "it lists none" : joined(rule.networks)) +
                                                        "), or remove reservedIpRanges");
  }
  if (!spec.reservedIpRanges.empty()) {
    auto ranges = rule.reservedIpRanges.find(spec.network);
    const std::vector<std::string> none;
    const auto& allowed = ranges == rule.reservedIpRanges.end() ? none : ranges->second;
    for (size_t i = 0; i < spec.reservedIpRanges.size(); ++i) {
      if (!listed(allowed, spec.reservedIpRanges[i]))
        return rejected(indexPath("spec.reservedIpRanges", i), "reserved IP range", spec.reservedIpRanges[i], allowed,
                        "reservedIpRanges for network " + spec.network);
    }
  }
  for (const auto& [field, image] : imagesOf(spec)) {
    const std::string& uri = image;  // clang 15 cannot capture a structured binding
    bool allowed = isVertexPrebuiltImage(uri) ||
                   std::any_of(rule.imagePrefixes.begin(), rule.imagePrefixes.end(), [&](const std::string& prefix) {
                     return prefix == kAnyValue || (uri.rfind(prefix, 0) == 0 && !hasDotSegment(uri));
                   });
    if (!allowed) {
      return check.violation(field, "image \"" + uri + "\" is not allowed for this namespace by " + check.describe() +
                                        "; allowed: images under " +
                                        (rule.imagePrefixes.empty() ? "none (the rule lists no imagePrefixes)"
                                                                    : joined(rule.imagePrefixes)) +
                                        ", and Vertex's prebuilt images");
    }
  }
  auto labelViolation = [&](const std::string& at, const std::map<std::string, std::string>& labels)
      -> std::optional<TenancyViolation> {
    for (const auto& [key, value] : labels) {
      auto allowed = rule.labels.find(key);
      if (allowed == rule.labels.end()) allowed = rule.labels.find(kAnyValue);
      if (allowed == rule.labels.end()) {
        std::vector<std::string> keys;
        for (const auto& entry : rule.labels) keys.push_back(entry.first);
        return rejected(joinPath(at, key), "label key", key, keys, "labels");
      }
      if (!allowed->second.empty() && !listed(allowed->second, value))
        return rejected(joinPath(at, key), "label value", key + "=" + value, allowed->second, "values for label " + key);
    }
    return std::nullopt;
  };
  if (auto violation = labelViolation("spec.labels", spec.labels)) return violation;
  if (spec.model) {
    if (auto violation = labelViolation("spec.model.labels", spec.model->labels)) return violation;
  }
  if (auto violation = resourceViolation(rule, check, "spec.tensorboard", "TensorBoard", spec.tensorboard,
                                         "projects/*/locations/*/tensorboards/*", rule.tensorboards, "tensorboards"))
    return violation;
  if (auto violation = resourceViolation(rule, check, "spec.encryptionKmsKeyName", "KMS key", spec.encryptionKmsKeyName,
                                         "projects/*/locations/*/keyRings/*/cryptoKeys/*", rule.kmsKeys, "kmsKeys"))
    return violation;
  if (!rule.interactiveShell && (spec.enableWebAccess || spec.enableDashboardAccess)) {
    const char* field = spec.enableWebAccess ? "enableWebAccess" : "enableDashboardAccess";
    return check.violation(std::string("spec.") + field,
                           std::string("interactive access to the training containers (") + field +
                               ") is not allowed for this namespace by " + check.describe() +
                               "; set it to false, or ask the platform team for interactiveShell: true");
  }
  if (const auto& prometheus = extras.prometheusUrl) {
    auto canonical = canonicalPrometheusUrl(prometheus->second);
    bool allowed = canonical && std::any_of(rule.prometheusUrls.begin(), rule.prometheusUrls.end(), [&](const auto& url) {
                     return canonicalPrometheusUrl(url) == canonical;
                   });
    if (!allowed) return rejected(prometheus->first, "Prometheus URL", prometheus->second, rule.prometheusUrls, "prometheusUrls");
  }
  if (spec.model) {
    // The model lives in the run's project; its location may differ from the run's.
    const auto& model = *spec.model;
    if (!model.location.empty() && !rule.locations.empty() && !listed(rule.locations, model.location))
      return rejected("spec.model.location", "location", model.location, rule.locations, "locations");
    if (auto violation = checkModelAllowed(rule, index, model.model)) return violation;
  }
  return std::nullopt;
}

TenancyDecision decide(const TrainingRunSpec& spec, const Location& defaults, const NamespaceInfo& ns,
                       const TenancyRules& rules, const Extras& extras) {
  TenancyDecision decision;
  if (rules.empty()) return decision;
  auto placement = locationOf(spec, defaults);
  std::optional<TenancyViolation> first;
  for (size_t i = 0; i < rules.size(); ++i) {
    const auto& rule = rules[i];
    if (!ruleSelects(rule, ns)) continue;
    if (!listed(rule.namespaces, ns.name) && !ns.labels) decision.assumedSelectorRules.push_back(i);
    auto violation = violationOf(rule, i, spec, placement, extras);
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

std::vector<std::string> TenancyRule::startupWarnings(size_t index) const {
  std::vector<std::string> out;
  const std::string rule = describe(index);
  // Rules written before models existed allowed every model; absent now allows none.
  if (!models)
    out.push_back(rule + " has no `models`: runs in its namespaces may register or promote no model (absent means none); "
                         "list the model IDs they use, e.g. models: [fraud]");
  if (listed(imagePrefixes, kAnyValue))
    out.push_back(rule + " allows any image (imagePrefixes: [\"*\"]): its runs may have the project's service agent pull "
                         "another team's private image; list the registry paths they use instead");
  else if (imagePrefixes.empty())
    out.push_back(rule + " lists no imagePrefixes: its runs may use only Vertex's prebuilt images (absent means none); "
                         "list the registry paths they use, e.g. imagePrefixes: [us-central1-docker.pkg.dev/PROJECT/REPO/]");
  if (labels.count(kAnyValue))
    out.push_back(rule + " allows any label key (labels: {\"*\": []}): its runs may set billing labels such as "
                         "cost-center on their jobs; list the keys they may set instead");
  if (listed(tensorboards, kAnyValue))
    out.push_back(rule + " allows any TensorBoard in its projects (tensorboards: [\"*\"]), another team's too; list them by name");
  if (listed(kmsKeys, kAnyValue))
    out.push_back(rule + " allows any KMS key in its projects (kmsKeys: [\"*\"]), another team's too; list them by name");
  return out;
}

bool isVertexPrebuiltImage(const std::string& imageUri) {
  // Google's public repositories of prebuilt containers (training, prediction, reduction server).
  static const char* const kPrefixes[] = {"us-docker.pkg.dev/vertex-ai/", "europe-docker.pkg.dev/vertex-ai/",
                                          "asia-docker.pkg.dev/vertex-ai/", "us-docker.pkg.dev/vertex-ai-restricted/",
                                          "europe-docker.pkg.dev/vertex-ai-restricted/",
                                          "asia-docker.pkg.dev/vertex-ai-restricted/"};
  if (hasDotSegment(imageUri)) return false;
  return std::any_of(std::begin(kPrefixes), std::end(kPrefixes),
                     [&](const char* prefix) { return imageUri.rfind(prefix, 0) == 0; });
}

std::vector<std::pair<std::string, std::string>> imagesOf(const TrainingRunSpec& spec) {
  std::vector<std::pair<std::string, std::string>> out;
  auto add = [&](std::string field, const std::string& image) {
    if (!image.empty()) out.emplace_back(std::move(field), image);
  };
  if (const auto& trainer = spec.trainer) {
    if (trainer->container) add("spec.trainer.container.imageUri", trainer->container->imageUri);
    if (trainer->pythonPackage) add("spec.trainer.pythonPackage.executorImageUri", trainer->pythonPackage->executorImageUri);
  }
  if (spec.distribution && spec.distribution->reductionServer)
    add("spec.distribution.reductionServer.imageUri", spec.distribution->reductionServer->imageUri);
  for (size_t i = 0; i < spec.workerPoolSpecs.size(); ++i) {
    auto pool = readRawPool(spec.workerPoolSpecs[i]);
    add(indexPath("spec.workerPoolSpecs", i) + ".containerSpec.imageUri", pool.containerImageUri);
    add(indexPath("spec.workerPoolSpecs", i) + ".pythonPackageSpec.executorImageUri", pool.executorImageUri);
  }
  if (spec.model) add("spec.model.servingContainer.imageUri", spec.model->servingContainer.imageUri);
  return out;
}

TenancyRules parseTenancyRules(const json& value, const std::string& path) {
  if (value.is_null()) return {};
  auto rules = readList<TenancyRule>(value, path, parseRule);
  for (size_t i = 0; i < rules.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (!rules[i].name.empty() && rules[i].name == rules[j].name)
        throw DecodeError(indexPath(path, i) + ".name", "\"" + rules[i].name + "\" names " + indexPath(path, j) + " already");
  return rules;
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
  if (spec.model) {
    out.emplace_back(spec.model->artifactUri.empty() ? "spec.model.artifactUri (default)" : "spec.model.artifactUri",
                     artifactUriOf(*spec.model, spec.baseOutputDirectory));
  }
  return out;
}

std::string directoryPrefix(const std::string& uri) {
  if (uri.empty() || uri.back() == '/') return uri;
  return uri + "/";
}

std::optional<std::string> canonicalPrometheusUrl(const std::string& url) {
  ParsedUrl parsed;
  try {
    parsed = parseUrl(url);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
  if ((parsed.scheme != "http" && parsed.scheme != "https") || parsed.path.find_first_of("?#") != std::string::npos)
    return std::nullopt;
  if (parsed.port == (parsed.scheme == "https" ? 443 : 80)) parsed.port = 0;
  std::string path = parsed.path;
  while (!path.empty() && path.back() == '/') path.pop_back();
  return parsed.scheme + "://" + authorityOf(parsed) + path;
}

std::optional<TenancyViolation> checkModelAllowed(const TenancyRule& rule, size_t ruleIndex, const std::string& modelId,
                                                  const std::string& field) {
  // Closed when absent, like every other governed field: another tenant of a shared project could
  // otherwise upload into, promote in, or warm-start from a model that is not its own.
  if (rule.models && listed(*rule.models, modelId)) return std::nullopt;
  return RuleCheck(rule, ruleIndex).rejected(field, "model", modelId, rule.models.value_or(std::vector<std::string>{}), "models");
}

TenancyDecision decideTenancy(const TrainingRunSpec& spec, const Location& defaults, const NamespaceInfo& ns,
                              const TenancyRules& rules, const FieldValues& extraBucketUris) {
  return decide(spec, defaults, ns, rules, Extras{extraBucketUris, std::nullopt});
}

TenancyDecision decidePolicyTenancy(const RetrainingPolicySpec& spec, const Location& defaults,
                                    const NamespaceInfo& ns, const TenancyRules& rules) {
  Extras extras;
  // Checked as the directory the operator lists (directoryPrefix), not as written.
  if (spec.triggers.newData)
    extras.bucketUris.emplace_back("spec.triggers.newData.gcsPrefix", directoryPrefix(spec.triggers.newData->gcsPrefix));
  if (spec.triggers.metric) extras.prometheusUrl.emplace("spec.triggers.metric.prometheusUrl", spec.triggers.metric->prometheusUrl);
  auto decision = decide(spec.templ.spec, defaults, ns, rules, extras);
  auto& violation = decision.violation;
  // The template's fields are named under spec.template; the policy's own (spec.triggers...) as they are.
  if (violation && violation->field.rfind("spec.", 0) == 0 && violation->field.rfind("spec.triggers.", 0) != 0) {
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
                                             const FieldValues& extraBucketUris) {
  return decideTenancy(spec, defaults, ns, rules, extraBucketUris).violation;
}

AcceleratorClaim claimOf(const TrainingRun& run, bool holding) {
  return {run.metadata.namespace_ + "/" + run.metadata.name, run.metadata.creationTimestamp, acceleratorsOf(run.spec),
          holding};
}

int64_t acceleratorsInUse(const std::vector<AcceleratorClaim>& claims) {
  int64_t total = 0;
  for (const auto& claim : claims) {
    if (claim.holding) total = saturatingAdd(total, claim.accelerators);
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
      decision.inUse = saturatingAdd(decision.inUse, claim.accelerators);
    } else if (olderThan(claim, candidate)) {
      decision.aheadInLine = saturatingAdd(decision.aheadInLine, claim.accelerators);
    }
  }
  decision.admitted = saturatingAdd(saturatingAdd(decision.inUse, decision.aheadInLine), candidate.accelerators) <= cap;
  if (!decision.admitted) {
    decision.message = "waiting for accelerators: " + std::to_string(decision.inUse) + " of " + std::to_string(cap) +
                       " allowed by " + ruleDescription + " are in use and older runs wait for " +
                       std::to_string(decision.aheadInLine) + "; this run needs " +
                       std::to_string(candidate.accelerators) + " and starts when they are free";
  }
  return decision;
}

}  // namespace vto::governance
