// Promotion (API.md "Promotion"): each version a run of the policy registers is compared once, in
// version order, with the version holding the alias; a better one gets the alias by one
// mergeVersionAliases. A vto.dev/promote-version request moves the alias to the version it names
// (rollback), recorded as Manual. Pure: observe read the registry (PromotionReading), act moves the alias.
#include <algorithm>
#include <cstdio>

#include "controller/event.h"
#include "reconcilers/retraining/decision.h"

namespace vto::reconcilers {

using controller::EventType;
using crd::PromotionResult;

namespace {

bool isVersionId(const std::string& text) {
  return !text.empty() && text.size() <= 20 && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Version IDs are decimal numbers: "10" comes after "9".
bool newerVersion(const std::string& a, const std::string& b) {
  if (!isVersionId(a)) return false;
  if (!isVersionId(b)) return true;
  return a.size() != b.size() ? a.size() > b.size() : a > b;
}

std::string annotationOf(const crd::ObjectMeta& meta, const char* key) {
  auto found = meta.annotations.find(key);
  return found == meta.annotations.end() ? "" : found->second;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

}  // namespace

const ChildRun* runOfVersion(const PolicyObserved& o, const std::string& model, const std::string& versionId) {
  for (const auto& child : o.children) {
    if (child.model && child.model->name == model && child.model->versionId == versionId) return &child;
  }
  return nullptr;
}

std::optional<double> metricOf(const crd::RegisteredModel& model, const std::string& metric) {
  auto found = model.metrics.find(metric);
  if (found == model.metrics.end()) return std::nullopt;
  return found->second;
}

namespace {

// status.champion for `version`, keeping when it was promoted while the same version holds the alias.
crd::Champion championOf(const retraining::Decision& d, const VersionMetric& version, bool promotedNow) {
  crd::Champion champion;
  champion.versionId = version.versionId;
  champion.metric = version.metric;
  champion.run = version.run;
  champion.artifactUri = version.artifactUri;
  const auto& old = d.in.status.history.champion;
  if (!promotedNow && old && old->versionId == version.versionId) {
    champion.promotedTime = old->promotedTime;
    if (champion.run.empty()) champion.run = old->run;
    if (champion.artifactUri.empty()) champion.artifactUri = old->artifactUri;
  } else if (promotedNow) {
    champion.promotedTime = std::chrono::floor<std::chrono::seconds>(d.in.now);
  }
  return champion;
}

void record(retraining::Decision& d, const std::string& versionId, PromotionResult result, std::string message) {
  d.history().lastPromotion = crd::PromotionRecord{versionId, result, message, std::chrono::floor<std::chrono::seconds>(d.in.now)};
  d.plan.promotion = result;
  bool moved = result == PromotionResult::Promoted || result == PromotionResult::Manual;
  d.event(result == PromotionResult::NotBetter || moved ? EventType::Normal : EventType::Warning,
          moved ? "ModelPromoted" : "ModelNotPromoted", std::move(message));
}

// Whether Vertex moves an alias off its holder when it is added elsewhere is documented for the
// console only: the holder gives it up first, so the move works either way.
void moveAlias(retraining::Decision& d, const PromotionReading& reading, const std::string& versionId, PromotionResult result) {
  MoveAlias move{reading.model + "@" + versionId, d.policy.spec.promotion->alias, result, ""};
  if (reading.holder && reading.holder->versionId != versionId && move.alias != "default") {
    move.fromVersionName = reading.model + "@" + reading.holder->versionId;
  }
  d.plan.moveAlias = std::move(move);
}

// A promote-version request: the alias goes to the version it names, whatever its metric.
void promoteOnRequest(retraining::Decision& d, const PromotionReading& reading, const std::string& request) {
  const auto& alias = d.policy.spec.promotion->alias;
  auto& history = d.history();
  history.lastHandledPromoteRequest = request;
  if (!isVersionId(request)) {
    record(d, "", PromotionResult::Failed,
           std::string(kPromoteVersionAnnotation) + " \"" + request.substr(0, 64) +
               "\" is not a version ID; annotate with the number of an existing version, e.g. 5");
    return;
  }
  if (!reading.requested) {
    record(d, request, PromotionResult::Failed, "version " + request + " of " + reading.model + " does not exist; nothing moved");
    return;
  }
  std::string was = reading.holder ? " (was version " + reading.holder->versionId + ")" : "";
  if (reading.holder && reading.holder->versionId == request) was = " (it held it already)";
  moveAlias(d, reading, request, PromotionResult::Manual);
  history.champion = championOf(d, *reading.requested, true);
  record(d, request, PromotionResult::Manual, "version " + request + " holds " + alias + " by request" + was);
}

struct Verdict {
  bool better = true;
  std::string message;  // with both numbers when the holder has one
};

// The rule: `mine` (version `versionId`'s metric) against the version holding the alias, if any.
Verdict judge(const crd::PromotionSpec& spec, const std::string& versionId, double mine,
              const std::optional<VersionMetric>& holder) {
  const auto& metric = spec.metric;
  std::string mineText = metric + " " + number(mine);
  if (!holder) return {true, mineText + ": the first version with " + metric + " becomes " + spec.alias};
  if (!holder->metric) {
    return {true, mineText + "; version " + holder->versionId + ", which held " + spec.alias + ", has no " + metric};
  }
  double theirs = *holder->metric;
  bool maximize = spec.goal == crd::PromotionGoal::Maximize;
  // Strictly better by minImprovement: a tie keeps the champion.
  bool better = maximize ? mine > theirs + spec.minImprovement : mine < theirs - spec.minImprovement;
  std::string op = better ? (maximize ? " > " : " < ") : (maximize ? " is not > " : " is not < ");
  std::string message = mineText + op + number(theirs) + (maximize ? " + " : " - ") + number(spec.minImprovement);
  message += better ? ": version " + versionId + " replaces version " + holder->versionId + " as " + spec.alias
                    : ": version " + holder->versionId + " stays " + spec.alias;
  return {better, message};
}

// The alias is on the candidate already, though status.champion names another version: this policy
// moved it in a pass whose status write never happened (a crash between the two), or someone moved it
// by hand. Either way it was promoted now; the numbers come from the champion status still names.
void alreadyHolds(retraining::Decision& d, const VersionMetric& mine) {
  const auto& spec = *d.policy.spec.promotion;
  const auto& stored = d.in.status.history.champion;
  bool recorded = stored && stored->versionId == mine.versionId;
  std::string message = "version " + mine.versionId + " holds " + spec.alias + " already";
  if (!recorded && stored) {
    auto verdict = judge(spec, mine.versionId, *mine.metric,
                         VersionMetric{stored->versionId, stored->metric, stored->run, stored->artifactUri});
    if (verdict.better) message = verdict.message;
  }
  d.history().champion = championOf(d, mine, !recorded);
  record(d, mine.versionId, PromotionResult::Promoted, message);
}

// The oldest registered version not compared yet: the alias holder's metric against its own.
void compare(retraining::Decision& d, const PromotionReading& reading, const ChildRun& candidate) {
  const auto& spec = *d.policy.spec.promotion;
  const auto& model = *candidate.model;
  auto& history = d.history();
  history.lastComparedVersion = model.versionId;
  // status.model is writable by others, and a run may have been edited: only a version of the
  // policy's own model is judged (its number would name another version of that model).
  if (model.name != reading.model) {
    record(d, model.versionId, PromotionResult::Failed,
           "run " + candidate.name + " registered into " + model.name.substr(0, 256) + ", not " + reading.model +
               ": its version is not compared; nothing moved");
    return;
  }
  VersionMetric mine{model.versionId, metricOf(model, spec.metric), candidate.name, model.artifactUri};
  const auto& metric = spec.metric;
  if (!mine.metric) {
    std::string why = !model.metricsError.empty() ? model.metricsError : "its evaluation has no " + metric;
    if (model.metricsError.empty() && !model.metrics.empty()) {
      why += " (it has";
      for (const auto& [name, value] : model.metrics) why += " " + name;
      why += ")";
    }
    record(d, model.versionId, PromotionResult::NoMetric, "version " + model.versionId + " has no " + metric + ": " + why);
    return;
  }
  const auto& holder = reading.holder;
  if (holder && holder->versionId == model.versionId) return alreadyHolds(d, mine);
  auto verdict = judge(spec, model.versionId, *mine.metric, holder);
  if (!verdict.better) {
    history.champion = championOf(d, *holder, false);
    record(d, model.versionId, PromotionResult::NotBetter, verdict.message);
    return;
  }
  moveAlias(d, reading, model.versionId, PromotionResult::Promoted);
  history.champion = championOf(d, mine, true);
  record(d, model.versionId, PromotionResult::Promoted, verdict.message);
}

}  // namespace

PromotionWork promotionWork(const PolicyObserved& o) {
  PromotionWork work;
  if (!o.policy || !o.policy->spec.promotion) return work;
  const auto& history = o.status.history;
  auto request = annotationOf(o.metadata, kPromoteVersionAnnotation);
  if (!request.empty() && request != history.lastHandledPromoteRequest) work.request = request;
  for (const auto& child : o.children) {
    if (!retraining::awaitsComparison(o, child)) continue;
    if (!work.candidate || newerVersion(work.candidate->model->versionId, child.model->versionId)) work.candidate = &child;
  }
  return work;
}

namespace retraining {

bool awaitsComparison(const PolicyObserved& o, const ChildRun& child) {
  return o.policy && o.policy->spec.promotion && child.model &&
         newerVersion(child.model->versionId, o.status.history.lastComparedVersion);
}

void promote(Decision& d) {
  auto& history = d.history();
  // An annotation removed clears the request it made, so the same version can be asked for again.
  if (annotationOf(d.policy.metadata, kPromoteVersionAnnotation).empty()) history.lastHandledPromoteRequest.clear();
  auto work = promotionWork(d.in);
  const auto& reading = d.in.promotion;
  if (work.any() && reading) {
    if (reading->failure) {
      std::string versionId = !work.request.empty() ? work.request : work.candidate->model->versionId;
      record(d, versionId, PromotionResult::Failed, "reading " + reading->model + ": " + *reading->failure + "; retrying with backoff");
      d.plan.failure = *reading->failure;
    } else if (!work.request.empty()) {
      promoteOnRequest(d, *reading, work.request);
    } else {
      compare(d, *reading, *work.candidate);
    }
    // One alias move per pass: come back for the next version at once.
    d.plan.requeueAfter = std::chrono::seconds(1);
  }
  // With promotion, a warm start begins from the model in production, not merely the newest one.
  if (d.policy.spec.warmStart && history.champion && !history.champion->artifactUri.empty()) {
    d.warmStartFrom = history.champion->artifactUri;
  }
}

}  // namespace retraining

PolicyPlan afterPromotionFailed(const PolicyObserved& o, PolicyPlan plan, const std::string& error) {
  const auto& old = o.status.history;
  auto& history = plan.status.history;
  const auto& move = *plan.moveAlias;
  auto versionId = move.versionName.substr(move.versionName.rfind('@') + 1);
  // Nothing moved: the champion, the watermark and the request stay as they were, to be tried again.
  history.champion = old.champion;
  history.lastComparedVersion = old.lastComparedVersion;
  history.lastHandledPromoteRequest = old.lastHandledPromoteRequest;
  std::string message = "moving " + move.alias + " to version " + versionId + " failed: " + error.substr(0, 512) +
                        "; retrying with backoff";
  history.lastPromotion = crd::PromotionRecord{versionId, PromotionResult::Failed, message,
                                               std::chrono::floor<std::chrono::seconds>(o.now)};
  std::erase_if(plan.events, [](const controller::Event& e) { return e.reason == "ModelPromoted" || e.reason == "ModelNotPromoted"; });
  plan.events.push_back(controller::warningEvent("ModelNotPromoted", message));
  plan.promotion = PromotionResult::Failed;
  plan.moveAlias.reset();
  plan.failure = message;
  return plan;
}

}  // namespace vto::reconcilers
