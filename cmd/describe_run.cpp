// The pure core of `vto describe` (cmd/describe.h): run JSON, job labels and Events in, text out.
#include <algorithm>
#include <set>

#include "base/gcp_names.h"
#include "base/json_fields.h"
#include "base/utf8.h"
#include "cmd/describe.h"
#include "cmd/job_logs.h"
#include "crd/labels.h"
#include "crd/object_meta.h"
#include "crd/render.h"
#include "vertex/vertex_client.h"

namespace vto::cmd {

namespace {

using nlohmann::json;

// Text someone else wrote, as a terminal may show it: at most `max` bytes, controls escaped.
std::string shown(const std::string& text, size_t max = 256) {
  auto cut = utf8PrefixLength(text, max);
  return escapeControls(std::string_view(text).substr(0, cut)) + (cut < text.size() ? "..." : "");
}

// A job's label as `vto describe` may show it: present, and a valid Google Cloud label value.
struct Label {
  bool present = false;
  bool valid = false;
  std::string value;  // set only when valid
};
Label labelOf(const std::map<std::string, std::string>& labels, const char* key) {
  auto found = labels.find(key);
  if (found == labels.end()) return {};
  if (!isValidGcpLabelValue(found->second)) return {true, false, ""};
  return {true, true, found->second};
}

// A vto-attempt label: a number, else "?".
std::string attemptOf(const Label& label) {
  bool digits = label.valid && !label.value.empty() && label.value.size() <= 9 &&
                std::all_of(label.value.begin(), label.value.end(), [](char c) { return c >= '0' && c <= '9'; });
  return digits ? label.value : "?";
}

// kubectl's ages: 42s, 17m, 5h, 3d.
std::string ageOf(Clock::duration elapsed) {
  auto seconds = std::max<long long>(0, std::chrono::duration_cast<std::chrono::seconds>(elapsed).count());
  if (seconds < 120) return std::to_string(seconds) + "s";
  if (seconds < 120 * 60) return std::to_string(seconds / 60) + "m";
  if (seconds < 48 * 3600) return std::to_string(seconds / 3600) + "h";
  return std::to_string(seconds / 86400) + "d";
}

// "Key:" padded so that the values of one block line up, as kubectl describe does.
struct Row {
  std::string key, value;
};
void writeBlock(std::string& out, const std::string& indent, const std::vector<Row>& rows) {
  size_t width = 0;
  for (const auto& row : rows) width = std::max(width, row.key.size());
  for (const auto& row : rows) {
    auto value = row.value;
    // A value of several lines: the later ones under the first.
    std::string continuation = "\n" + indent + std::string(width + 3, ' ');
    for (size_t at = value.find('\n'); at != std::string::npos; at = value.find('\n', at + continuation.size())) {
      value.replace(at, 1, continuation);
    }
    out += indent + row.key + ":" + std::string(width - row.key.size() + 2, ' ') + value + "\n";
  }
}

}  // namespace

bool isOwnershipEventReason(const std::string& reason) {
  return reason == "JobAdopted" || reason == "AdoptionRefused" || reason == "ForeignJobIgnored";
}

RunIdentity runIdentityOf(const json& run) {
  RunIdentity id;
  id.ns = metadataField(run, "namespace");
  id.name = metadataField(run, "name");
  id.uid = metadataField(run, "uid");
  if (run.is_object() && run.contains("spec")) {
    auto adopt = stringField(run["spec"], "adoptJob");
    auto parsed = vertex::parseResourceName(adopt);
    if (parsed && parsed->kind && parsed->operationId.empty()) id.adoptJob = adopt;
  }
  if (run.is_object() && run.contains("metadata")) {
    try {
      id.runUids = crd::runUidsOf(crd::decodeObjectMeta(run["metadata"], "metadata"));
    } catch (const std::exception&) {
      // Metadata of the wrong shape names no earlier uid.
    }
  }
  return id;
}

std::string whoseJob(const std::map<std::string, std::string>& labels, const RunIdentity& run, const std::string& clusterId,
                     const reconcilers::JobOwnership* ownership, std::optional<Clock::time_point> createTime,
                     const std::string& job) {
  auto cluster = labelOf(labels, reconcilers::kClusterLabel);
  auto tag = labelOf(labels, reconcilers::kOwnerTagLabel);
  auto runUid = labelOf(labels, crd::kRunUidLabel);
  auto jobNamespace = labelOf(labels, crd::kNamespaceLabel);
  auto jobName = labelOf(labels, crd::kNameLabel);
  auto attempt = labelOf(labels, crd::kAttemptLabel);
  auto managedBy = labels.find(crd::kManagedByLabel);
  bool vtoLabels = cluster.present || tag.present || runUid.present || jobNamespace.present || jobName.present ||
                   attempt.present || (managedBy != labels.end() && managedBy->second == crd::kManagedByValue);
  bool adopted = !job.empty() && job == run.adoptJob;
  if (!vtoLabels) {
    return adopted ? "started outside vto (no vto labels), adopted by this run (spec.adoptJob)"
                   : "started outside vto (no vto labels): not this run's";
  }

  // Who made it.
  std::string maker;
  if (!cluster.present) {
    maker = "made by the release before (no vto-cluster label)";
  } else if (!cluster.valid || cluster.value.empty()) {
    return "its vto-cluster label is not a label value: not vto's, not this run's";
  } else if (clusterId.empty()) {
    maker = "made by cluster " + cluster.value + " (this cluster's identity is unknown: pass --cluster-id)";
  } else if (cluster.value != clusterId) {
    return "another cluster's (" + cluster.value + "): not this run's";
  } else {
    maker = "made by this cluster (" + clusterId + ")";
  }
  if (ownership != nullptr) {
    switch (ownership->ownerOf(labels, createTime)) {
      case reconcilers::JobOwner::Ours: maker += ", its vto-owner tag verified,"; break;
      case reconcilers::JobOwner::Legacy:
        maker = "made by the release before (no vto-cluster label, created before the key was issued)";
        break;
      case reconcilers::JobOwner::OtherCluster: return "another cluster's (" + cluster.value + "): not this run's";
      case reconcilers::JobOwner::Forged:
        return std::string("forged: it claims to be ") + (cluster.present ? "this cluster's" : "vto's") +
               " but its vto-owner tag does not verify with the operator's key: not this run's (the operator ignores it)";
    }
  }

  // Whose it is.
  if (runUid.valid && !runUid.value.empty() && runUid.value == crd::sanitizeLabelValue(run.uid)) return maker + " for this run";
  bool sameName = jobNamespace.valid && jobName.valid && !jobNamespace.value.empty() && !jobName.value.empty() &&
                  jobNamespace.value == crd::sanitizeLabelValue(run.ns) && jobName.value == crd::sanitizeLabelValue(run.name);
  std::string uid = runUid.valid && !runUid.value.empty() ? runUid.value : "unknown";
  if (sameName) {
    bool restored = runUid.valid && std::any_of(run.runUids.begin(), run.runUids.end(), [&](const std::string& earlier) {
                      return earlier != run.uid && crd::sanitizeLabelValue(earlier) == runUid.value;
                    });
    return maker + " for an earlier run of this name (uid " + uid + ", attempt " + attemptOf(attempt) + "): taken over (" +
           (restored ? "restored from a backup: that uid is in vto.dev/run-uids" : "re-applied, or restored without annotations") +
           ")";
  }
  if (jobNamespace.valid && jobName.valid && !jobNamespace.value.empty() && !jobName.value.empty()) {
    return maker + " for another run (" + jobNamespace.value + "/" + jobName.value + ", uid " + uid +
           "): not this run's";
  }
  return maker + " for a run it does not name (uid " + uid + "): not this run's";
}

std::vector<std::pair<int, std::string>> jobsToRead(const json& run) {
  std::vector<std::pair<int, std::string>> jobs;
  for (const auto& attempt : runJobsOf(run).attempts) {
    auto parsed = vertex::parseResourceName(attempt.jobName);
    if (parsed && parsed->kind && parsed->operationId.empty()) jobs.emplace_back(attempt.number, attempt.jobName);
  }
  if (jobs.size() > static_cast<size_t>(kDescribeMaxJobReads)) jobs.erase(jobs.begin(), jobs.end() - kDescribeMaxJobReads);
  return jobs;
}

std::string describeRun(const DescribeInput& input) {
  const auto& run = input.run;
  auto id = runIdentityOf(run);
  const json empty = json::object();
  const json& status = run.is_object() && run.contains("status") && run["status"].is_object() ? run["status"] : empty;
  auto jobs = runJobsOf(run);
  std::string out;

  std::vector<Row> header;
  header.push_back({"Name", shown(id.name)});
  header.push_back({"Namespace", shown(id.ns)});
  header.push_back({"UID", shown(id.uid)});
  header.push_back({"Phase", jobs.phase.empty() ? "<none> (the operator has not written status yet)" : shown(jobs.phase, 64)});
  if (auto message = stringField(status, "message"); !message.empty()) header.push_back({"Message", shown(message, 512)});
  header.push_back({"Cluster Identity", input.clusterId.empty() ? "unknown: " + input.clusterIdSource
                                                                : input.clusterId + " (" + input.clusterIdSource + ")"});
  header.push_back({"Ownership Tags", input.ownership != nullptr
                                          ? "checked with the operator's key (--ownership-key-file)"
                                          : "not checked: the labels say who made each job (--ownership-key-file "
                                            "checks their vto-owner tags)"});
  if (run.is_object() && run.contains("spec") && !stringField(run["spec"], "adoptJob").empty()) {
    header.push_back({"Adopt Job", id.adoptJob.empty() ? "<not a Vertex job name>" : id.adoptJob + " (spec.adoptJob)"});
  }
  std::string uids;
  for (const auto& uid : id.runUids) {
    uids += (uids.empty() ? "" : "\n") + uid + (uid == id.uid ? " (this run)" : " (an earlier run of this name: restored from it)");
  }
  if (uids.empty()) uids = "<none> (no vto.dev/run-uids annotation yet: the operator writes it with its finalizer)";
  header.push_back({"Run UIDs", uids});
  int count = jobs.attemptCount;
  for (const auto& attempt : jobs.attempts) count = std::max(count, attempt.number);
  std::string attemptsLine = std::to_string(count);
  if (static_cast<int>(jobs.attempts.size()) < count)
    attemptsLine += " (status keeps the newest " + std::to_string(jobs.attempts.size()) + ")";
  header.push_back({"Attempts", attemptsLine});
  writeBlock(out, "", header);

  for (const auto& attempt : jobs.attempts) {
    out += "  Attempt " + std::to_string(attempt.number) + ":\n";
    std::vector<Row> rows;
    auto parsed = vertex::parseResourceName(attempt.jobName);
    bool isJob = parsed && parsed->kind && parsed->operationId.empty();
    if (attempt.jobName.empty()) {
      rows.push_back({"Job", "<none yet>"});
    } else if (!isJob) {
      rows.push_back({"Job", "<not a Vertex job name: not read>"});
    } else {
      rows.push_back({"Job", attempt.jobName});
    }
    if (!attempt.state.empty()) rows.push_back({"State", shown(attempt.state, 64)});
    if (isJob) {
      auto read = input.jobs.find(attempt.number);
      if (read != input.jobs.end() && read->second.read) {
        const auto& job = read->second;
        // What Vertex says now, when status says otherwise (status lags by a poll, or was edited).
        if (!job.state.empty() && job.state != attempt.state) rows.push_back({"Vertex State", shown(job.state, 64)});
        rows.push_back({"Owner", whoseJob(job.labels, id, input.clusterId, input.ownership, job.createTime, attempt.jobName)});
      } else if (read != input.jobs.end()) {
        rows.push_back({"Owner", "unknown: the job cannot be read: " + read->second.error});
      } else if (!input.jobsNote.empty()) {
        rows.push_back({"Owner", "unknown: " + input.jobsNote});
      } else {
        rows.push_back({"Owner", "not read (only the newest " + std::to_string(kDescribeMaxJobReads) + " attempts' jobs are)"});
      }
    }
    writeBlock(out, "    ", rows);
  }

  // Events about the run (this uid or an earlier one of the annotation), newest kDescribeMaxEvents.
  if (!input.events) {
    out += "Events:  not shown: " + input.eventsNote + "\n";
    return out;
  }
  std::set<std::string> uidsOfRun(id.runUids.begin(), id.runUids.end());
  uidsOfRun.insert(id.uid);
  struct Shown {
    Clock::time_point at;
    std::string type, reason, age, message;
  };
  std::vector<Shown> events;
  const json& items = input.events->is_array() ? *input.events : empty;
  for (const auto& event : items) {
    auto reason = stringField(event, "reason");
    if (!isOwnershipEventReason(reason)) continue;
    const auto& involved = event.is_object() && event.contains("involvedObject") ? event["involvedObject"] : empty;
    if (auto uid = stringField(involved, "uid"); !uid.empty() && !uidsOfRun.contains(uid)) continue;
    auto last = timeField(event, "lastTimestamp");
    if (!last) last = timeField(event, "eventTime");
    if (!last) last = timeField(event, "firstTimestamp");
    auto type = stringField(event, "type");
    Shown row{last.value_or(Clock::time_point{}), type == "Warning" ? "Warning" : "Normal", reason,
              last ? ageOf(input.now - *last) : "<unknown>", shown(stringField(event, "message"), 1024)};
    if (event.is_object() && event.contains("count") && event["count"].is_number_integer() && event["count"].get<long long>() > 1) {
      auto first = timeField(event, "firstTimestamp");
      row.age += " (x" + std::to_string(event["count"].get<long long>()) +
                 (first ? " over " + ageOf(input.now - *first) : std::string()) + ")";
    }
    events.push_back(std::move(row));
  }
  std::stable_sort(events.begin(), events.end(), [](const Shown& a, const Shown& b) { return a.at < b.at; });
  if (events.size() > static_cast<size_t>(kDescribeMaxEvents)) events.erase(events.begin(), events.end() - kDescribeMaxEvents);
  if (events.empty()) {
    out += "Events:  <none> (no JobAdopted, AdoptionRefused or ForeignJobIgnored Event; the API server keeps Events for an "
           "hour by default)\n";
    return out;
  }
  out += "Events:\n";
  size_t typeWidth = 4, reasonWidth = 6, ageWidth = 3;
  for (const auto& e : events) {
    typeWidth = std::max(typeWidth, e.type.size());
    reasonWidth = std::max(reasonWidth, e.reason.size());
    ageWidth = std::max(ageWidth, e.age.size());
  }
  auto line = [&](const std::string& type, const std::string& reason, const std::string& age, const std::string& message) {
    out += "  " + type + std::string(typeWidth - type.size() + 2, ' ') + reason + std::string(reasonWidth - reason.size() + 2, ' ') +
           age + std::string(ageWidth - age.size() + 2, ' ') + message + "\n";
  };
  line("Type", "Reason", "Age", "Message");
  line("----", "------", "---", "-------");
  for (const auto& e : events) line(e.type, e.reason, e.age, e.message);
  return out;
}

}  // namespace vto::cmd
