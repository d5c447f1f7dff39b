// vto schedule: the next fire times of a RetrainingPolicy's schedule, computed offline by the same
// code the operator uses (crd/schedule.h), so DST nights and time zones can be checked before applying.
#include <iostream>

#include "base/rfc3339.h"
#include "cmd/commands.h"
#include "cmd/flags.h"
#include "cmd/manifest_input.h"
#include "crd/duration.h"
#include "crd/manifest.h"
#include "crd/retraining_policy.h"
#include "crd/schedule.h"
#include "crd/timestamp.h"

namespace vto::cmd {
namespace {

constexpr int kMaxCount = 10000;

struct NamedSchedule {
  std::string label;  // "" for --cron
  crd::ScheduleTrigger trigger;
};

// The schedules of the RetrainingPolicies in `file`; throws UsageError when there is none.
std::vector<NamedSchedule> schedulesOf(const std::string& file) {
  std::vector<NamedSchedule> out;
  auto documents = crd::parseManifests(readManifestInput(file));
  for (const auto& document : documents) {
    if (document.kind() != crd::kRetrainingPolicyKind) continue;
    crd::RetrainingPolicy policy;
    try {
      policy = crd::decodeRetrainingPolicy(document.object);
    } catch (const crd::DecodeError& e) {
      throw UsageError(document.label() + ": " + e.what() + " (`vto lint -f " + file + "` checks the whole manifest)");
    }
    if (!policy.spec.triggers.schedule) {
      std::cerr << "vto schedule: " << document.label() << " has no triggers.schedule; it runs on its other triggers or on "
                << "`kubectl annotate rtp/" << policy.metadata.name << " vto.dev/retrain-requested=\"$(date +%s)\" --overwrite`\n";
      continue;
    }
    out.push_back({document.label(), *policy.spec.triggers.schedule});
  }
  if (out.empty())
    throw UsageError(file + " has no RetrainingPolicy with triggers.schedule; give one, or use --cron EXPR [--time-zone TZ]");
  return out;
}

}  // namespace

int schedule(const Args& args) {
  Flags flags("schedule",
              "Prints the next nominal fire times of a RetrainingPolicy's schedule (or of --cron), one a line:\n"
              "the time in UTC (RFC 3339), then the local time in the policy's time zone:\n\n"
              "  2026-10-25T00:30:00Z (2026-10-25 02:30 CEST)\n\n"
              "Offline, with the operator's own calculator: daylight-saving nights follow docs/retraining.md\n"
              "(a fixed-time job runs once; one whose minute or hour begins with * follows absolute time).\n"
              "A jitter is not added: runs are named by these nominal times. Exit status 2 on a bad cron\n"
              "expression, time zone or flag.",
              {{"filename", 'f', "", "a file with RetrainingPolicies, or - for stdin"},
               {"cron", 0, "", "a cron expression instead of -f, e.g. \"0 3 * * mon\""},
               {"time-zone", 0, "", "the IANA time zone for --cron, e.g. Europe/Berlin (default UTC)"},
               {"after", 0, "", "start after this RFC 3339 time instead of now, e.g. 2026-10-24T00:00:00Z"},
               {"count", 'n', "5", "how many fire times to print"}});
  if (!flags.parse(args)) return 0;
  std::string file = flags.get("filename"), cron = flags.get("cron");
  if (file.empty() == cron.empty()) throw UsageError("give either -f FILE (a RetrainingPolicy) or --cron EXPR, e.g. --cron \"0 3 * * mon\"");
  if (!file.empty() && !flags.get("time-zone").empty())
    throw UsageError("--time-zone goes with --cron; with -f the policy's triggers.schedule.timeZone is used");
  int count = flags.getInt("count");
  if (count < 1 || count > kMaxCount) throw UsageError("--count must be between 1 and " + std::to_string(kMaxCount));
  Clock::time_point after = RealClock().now();
  if (!flags.get("after").empty()) {
    try {
      after = parseRfc3339(flags.get("after"));
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--after: ") + e.what());
    }
  }
  auto schedules = file.empty() ? std::vector<NamedSchedule>{{"", {cron, flags.get("time-zone"), {}}}} : schedulesOf(file);
  for (const auto& [label, trigger] : schedules) {
    crd::CronSchedule parsed;
    try {
      parsed = crd::parseCron(trigger.cron);
      crd::checkTimeZone(trigger.timeZone);
    } catch (const std::invalid_argument& e) {
      throw UsageError((label.empty() ? "" : label + ": ") + e.what());
    }
    if (schedules.size() > 1) std::cout << "# " << label << "\n";
    if (trigger.jitter.count() > 0)
      std::cerr << "vto schedule: " << label << " has jitter " << crd::formatDuration(trigger.jitter.count())
                << ": each run starts a fixed offset below that after these times (hashed from the policy's uid)\n";
    auto t = after;
    for (int i = 0; i < count; ++i) {
      t = crd::nextScheduleAfter(parsed, trigger.timeZone, t);
      std::cout << rfc3339Exact(t) << " (" << crd::formatLocalTime(t, trigger.timeZone) << ")\n";
    }
  }
  return 0;
}

}  // namespace vto::cmd
