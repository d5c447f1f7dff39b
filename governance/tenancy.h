#pragma once
// Tenancy rules: which namespaces may use which projects, locations, service accounts, buckets,
// accelerators, networks, reservations, NFS servers, metric endpoints and models (contract: "Tenancy
// rules" in API.md). Pure: parsing and decisions over plain inputs, no I/O, so the reconciler's
// `decide` and `vto lint --tenancy` share one implementation.
//
// Semantics:
// - A rule matches a namespace listed in `namespaces` or whose labels include every pair of
//   `namespaceSelector.matchLabels` (an empty matchLabels matches every namespace).
// - A run is allowed when one rule that matches its namespace allows all of it; that rule governs
//   the run (its maxAccelerators is the cap the run counts against).
// - projects, locations, serviceAccounts, bucketPrefixes, acceleratorTypes: an absent or empty
//   list allows anything for that field.
// - Every other field that reaches Vertex is closed unless the rule opens it: images, labels,
//   models, networks (and each network's reservedIpRanges), TensorBoards, KMS keys, nfsServers,
//   reservations and prometheusUrls allow none when absent or empty, interactiveShell is false
//   unless set. Vertex's own prebuilt images are always allowed. `"*"` opens imagePrefixes,
//   tensorboards and kmsKeys (a TensorBoard or key then only needs to be in one of the rule's
//   projects) and, as a key, labels: the operator warns at start about each. Raw workerPoolSpecs
//   hold only fields vto reads (see raw_pool.h).
// - No rules at all: everything is allowed. Rules, but none matches the namespace: nothing is.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/money.h"
#include "crd/render.h"
#include "crd/retraining_policy.h"
#include "crd/training_run.h"

namespace vto::governance {

// A rule's monthly budget (API.md "Cost and budgets"); governance/budget.h decides with it.
enum class BudgetAction { Hold, Warn };
struct Budget {
  Usd monthlyUsd;
  BudgetAction onExceeded = BudgetAction::Hold;
};

struct TenancyRule {
  std::vector<std::string> namespaces;
  std::optional<std::map<std::string, std::string>> matchLabels;  // namespaceSelector.matchLabels
  std::vector<std::string> projects;
  std::vector<std::string> locations;
  std::vector<std::string> serviceAccounts;
  std::vector<std::string> bucketPrefixes;  // gs://bucket/ or gs://bucket/dir/
  std::vector<std::string> acceleratorTypes;
  std::optional<int64_t> maxAccelerators;  // at once, over every run this rule governs
  std::vector<std::string> prometheusUrls;  // metric triggers' base URLs, compared canonically; empty: none
  std::vector<std::string> networks;        // spec.network values allowed; empty: none may be set
  // The reservedIpRanges a run may name on each listed network (networks written as {name,
  // reservedIpRanges}); a network listed by name alone allows none.
  std::map<std::string, std::vector<std::string>> reservedIpRanges;
  // Container images (training pools, the reduction server, the model's serving container): each a
  // registry path prefix ending in "/", or "*" for any. Vertex's prebuilt images are always allowed.
  std::vector<std::string> imagePrefixes;
  // spec.labels and spec.model.labels: each key a run may set and the values allowed for it (an
  // empty list: any value). The key "*" allows any other key with any value.
  std::map<std::string, std::vector<std::string>> labels;
  std::vector<std::string> tensorboards;  // spec.tensorboard: full resource names, or "*" (any in projects)
  std::vector<std::string> kmsKeys;       // spec.encryptionKmsKeyName: full key names, or "*" (any in projects)
  // Model Registry IDs a run may register versions of or promote (spec.model.model); absent (nullopt,
  // which the operator warns about at start: rules written before models existed) or empty: none.
  std::optional<std::vector<std::string>> models;
  std::vector<std::string> nfsServers;    // raw pools' nfsMounts[].server allowed; empty: none
  std::vector<std::string> reservations;  // raw pools' SPECIFIC_RESERVATION names allowed; empty: none
  bool interactiveShell = false;          // enableWebAccess / enableDashboardAccess allowed
  std::string name;                       // names the rule in metrics, messages and the vto-team label
  std::optional<Budget> budget;           // absent: no budget

  // "tenancy[0] (namespaces team-a, team-b)": how messages name the rule.
  std::string describe(size_t index) const;
  // What the operator warns about at start: the fields this rule opens with "*", and the fields a
  // rule written before they were governed leaves closed (imagePrefixes, models), one line each.
  std::vector<std::string> startupWarnings(size_t index) const;
};

// The opener of imagePrefixes, tensorboards, kmsKeys and label keys.
inline constexpr const char* kAnyValue = "*";
// Vertex's prebuilt training, prediction and reduction-server images: public, Google's, always allowed.
bool isVertexPrebuiltImage(const std::string& imageUri);

// The container images a run names, as (field path, image): its trainer, the reduction server when
// set, raw pools' containerSpec and pythonPackageSpec, and the model's serving container.
std::vector<std::pair<std::string, std::string>> imagesOf(const crd::TrainingRunSpec& spec);

using TenancyRules = std::vector<TenancyRule>;

// Strictly parses the value of `tenancy:` (a list of rules); throws DecodeError naming the field
// (e.g. "tenancy[1].maxAccelerators") and what is expected. `null` is no rules.
TenancyRules parseTenancyRules(const nlohmann::json& value, const std::string& path = "tenancy");

// A namespace as the check sees it. `labels` is nullopt when they are unknown (offline lint):
// then a rule that selects by label is assumed to match, and the result says so.
struct NamespaceInfo {
  std::string name;
  std::optional<std::map<std::string, std::string>> labels;
};

struct TenancyViolation {
  std::string field;  // "spec.project", "spec.checkpointing.directory", ... ("metadata.namespace" when no rule matches)
  std::optional<size_t> ruleIndex;  // the rule the message is about; nullopt when none matches
  std::string rule;                 // its description, or "" when none matches
  std::string message;              // names the field and the rule, says what is allowed
};

struct TenancyDecision {
  std::optional<size_t> governingRule;       // set when allowed by a rule (nullopt: no rules configured)
  std::optional<TenancyViolation> violation;  // set when refused
  std::vector<size_t> assumedSelectorRules;   // rules assumed to match because labels were unknown
};

// GCS locations the run writes or reads that bucket prefixes govern, as (field path, URI).
std::vector<std::pair<std::string, std::string>> bucketUrisOf(const crd::TrainingRunSpec& spec);

// A GCS prefix as a directory: "/" appended where missing ("gs://b/team-a" -> "gs://b/team-a/",
// "gs://b" -> "gs://b/"). The bucket check compares these, and whoever lists a prefix the check
// allowed (a newData trigger's gcsPrefix) must list exactly this value, or "gs://b/team-a" would
// pass a rule for gs://b/team-a/ and list gs://b/team-ab/ too.
std::string directoryPrefix(const std::string& uri);

// A metric trigger's Prometheus base URL in the form rules compare: scheme and host lower case, the
// scheme's default port dropped, trailing "/" trimmed ("HTTPS://Prom.Monitoring:443/" ->
// "https://prom.monitoring"). nullopt when it is not an http(s) base URL (vto::parseUrl refuses
// it, or it has a query or fragment). The one place URLs are canonicalised for the rules.
std::optional<std::string> canonicalPrometheusUrl(const std::string& url);

// Whether rule `ruleIndex` lets a run register versions of Model Registry model `modelId`: only those
// its `models` lists (none when it has no `models`). `field` names the run's field in
// the violation. Waiting for spec.model (not in TrainingRunSpec yet): once it exists, violationOf
// in tenancy.cpp calls this with spec.model.model, so decideTenancy and lint check it.
std::optional<TenancyViolation> checkModelAllowed(const TenancyRule& rule, size_t ruleIndex, const std::string& modelId,
                                                  const std::string& field = "spec.model.model");

// The full decision: which rule governs the run, or why it is refused. `defaults` are the
// operator's --default-project/--default-location, applied first as the reconciler does.
// `extraBucketUris` are further (field, URI) pairs the bucket prefixes govern, e.g. a
// RetrainingPolicy's ("spec.triggers.newData.gcsPrefix", "gs://...") beside its template's spec.
TenancyDecision decideTenancy(const crd::TrainingRunSpec& spec, const Location& defaults, const NamespaceInfo& ns,
                              const TenancyRules& rules,
                              const std::vector<std::pair<std::string, std::string>>& extraBucketUris = {});
// A RetrainingPolicy's decision: its template's spec (a violation's field is named under
// spec.template.spec), its newData.gcsPrefix, which the operator lists with its own identity (as
// directoryPrefix(gcsPrefix)), and its metric trigger's prometheusUrl, which the operator queries
// (one of the rule's prometheusUrls).
TenancyDecision decidePolicyTenancy(const crd::RetrainingPolicySpec& spec, const Location& defaults,
                                    const NamespaceInfo& ns, const TenancyRules& rules);
// decideTenancy in two halves, for callers that meet one spec in many namespaces or the reverse
// (the accelerator ledger): whether rule i's fields other than the namespace allow the spec (entry
// i), and whether a rule selects a namespace (labels unknown: a label selector is assumed to match).
// The governing rule is the first that does both.
std::vector<bool> rulesAllowing(const crd::TrainingRunSpec& spec, const Location& defaults, const TenancyRules& rules);
bool ruleSelects(const TenancyRule& rule, const NamespaceInfo& ns);
// The refusal alone, for callers that only need to know whether the run may go ahead.
std::optional<TenancyViolation> checkTenancy(const crd::TrainingRunSpec& spec, const Location& defaults,
                                             const NamespaceInfo& ns, const TenancyRules& rules,
                                             const std::vector<std::pair<std::string, std::string>>& extraBucketUris = {});

// The accelerator cap, first created first served. Inputs are the runs governed by one rule that
// want accelerators and are not finished, suspended or invalid.
struct AcceleratorClaim {
  std::string key;                // "namespace/name", the tie-breaker
  std::string creationTimestamp;  // RFC 3339 (sorts as text)
  int64_t accelerators = 0;
  bool holding = false;  // its job exists and is not finished: the accelerators are in use
};

// A run's claim; `holding` is the caller's reading of its status (a job exists and is unfinished).
AcceleratorClaim claimOf(const crd::TrainingRun& run, bool holding);

int64_t acceleratorsInUse(const std::vector<AcceleratorClaim>& claims);

// The order of the line: created first, then by namespace/name (so replicas agree on ties).
bool olderThan(const AcceleratorClaim& a, const AcceleratorClaim& b);

struct AdmitDecision {
  bool admitted = false;
  int64_t inUse = 0;        // held by others
  int64_t aheadInLine = 0;  // wanted by older waiting runs
  std::string message;      // when not admitted: why and what frees it
};

// Whether `candidate` (which does not hold yet) may start now under `cap`: only when what is in
// use, plus what every older waiting run wants, plus its own fits. An older run that does not fit
// blocks younger ones, so a large run is never starved by a stream of small ones.
AdmitDecision admit(const AcceleratorClaim& candidate, const std::vector<AcceleratorClaim>& claims, int64_t cap,
                    const std::string& ruleDescription);

}  // namespace vto::governance
