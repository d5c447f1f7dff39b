// `vto schedule` as a user runs it: the built binary, offline, on the samples and on bad input.
// Needs $VTO_BIN_DIR with `vto` in it; no cluster.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "tests/support/subprocess.h"
#include "tests/support/test_cluster.h"

namespace vto::testing {
namespace {

namespace fs = std::filesystem;

fs::path sourceDir() {
  if (const char* dir = std::getenv("VTO_SOURCE_DIR")) return dir;
  return fs::path(__FILE__).parent_path().parent_path().parent_path();
}

std::string quote(const std::string& text) { return "'" + text + "'"; }
std::string vto(const std::string& args) { return quote(binDir() + "/vto") + " " + args; }
std::string sample(const std::string& name) { return quote(sourceDir() / "config/samples" / name); }

TEST(VtoSchedule, PrintsUtcAndLocalTimesOfASample) {
  auto r = runShell(vto("schedule -f " + sample("retrainingpolicy_weekly.yaml") + " --after 2026-10-24T00:00:00Z --count 3 2>/dev/null"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  // Mondays 03:00 Berlin: CEST ended on Sunday 2026-10-25, so 03:00 is 02:00Z.
  EXPECT_EQ(r.output,
            "2026-10-26T02:00:00Z (2026-10-26 03:00 CET)\n"
            "2026-11-02T02:00:00Z (2026-11-02 03:00 CET)\n"
            "2026-11-09T02:00:00Z (2026-11-09 03:00 CET)\n");
  auto note = runShell(vto("schedule -f " + sample("retrainingpolicy_weekly.yaml") + " --count 1 2>&1 >/dev/null"));
  EXPECT_NE(note.output.find("has jitter 10m"), std::string::npos) << note.output;
}

TEST(VtoSchedule, FallBackNightRunsAFixedTimeJobOnce) {
  auto r = runShell(vto("schedule -f " + sample("retrainingpolicy_nightly_new_york.yaml") + " --after 2026-10-31T12:00:00Z -n 2"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(r.output, "2026-11-01T05:30:00Z (2026-11-01 01:30 EDT)\n2026-11-02T06:30:00Z (2026-11-02 01:30 EST)\n");
}

TEST(VtoSchedule, CronAndTimeZoneWithoutAFile) {
  auto r = runShell(vto("schedule --cron '30 * * * *' --time-zone Europe/Berlin --after 2026-10-25T00:00:00Z --count 3"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(r.output,
            "2026-10-25T00:30:00Z (2026-10-25 02:30 CEST)\n"
            "2026-10-25T01:30:00Z (2026-10-25 02:30 CET)\n"
            "2026-10-25T02:30:00Z (2026-10-25 03:30 CET)\n");
  auto utc = runShell(vto("schedule --cron @daily --after 2026-05-18T10:00:00Z -n 1"));
  EXPECT_EQ(utc.output, "2026-05-19T00:00:00Z (2026-05-19 00:00 UTC)\n");
}

TEST(VtoSchedule, SeveralPoliciesGetAHeaderEach) {
  auto r = runShell("{ cat " + sample("retrainingpolicy_nightly_new_york.yaml") + "; echo ---; cat " + sample("retrainingpolicy_weekly.yaml") +
                    "; } | " + vto("schedule -f - --after 2026-03-07T00:00:00Z -n 1 2>/dev/null"));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(r.output,
            "# document 1 (RetrainingPolicy/ranker-nightly)\n"
            "2026-03-07T06:30:00Z (2026-03-07 01:30 EST)\n"
            "# document 2 (RetrainingPolicy/fraud-weekly)\n"
            "2026-03-09T02:00:00Z (2026-03-09 03:00 CET)\n");
}

TEST(VtoSchedule, BadInputExitsTwoWithAdvice) {
  struct Case {
    std::string args, expected;
  };
  for (const auto& c : std::vector<Case>{
           {"--cron '61 3 * * *'", "minute value 61 is out of range 0-59"},
           {"--cron '0 0 31 2 *'", "never fires"},
           {"--cron 'TZ=Europe/Berlin 0 3 * * *'", "use the timeZone field instead"},
           {"--cron '0 3 * * *' --time-zone Europe/Berlni", "unknown time zone \"Europe/Berlni\""},
           {"-f " + sample("retrainingpolicy_manual.yaml"), "has no RetrainingPolicy with triggers.schedule"},
           {"-f " + quote(sourceDir() / "tests/data/invalid/rtp-02-unknown-time-zone.yaml"), "Europe/Berlin"},
           {"", "give either -f FILE"},
           {"--cron @daily --after yesterday", "write one like 2026-05-18T03:00:00Z"},
       }) {
    auto r = runShell(vto("schedule " + c.args));
    EXPECT_EQ(r.exitCode, 2) << c.args << ":\n" << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << c.args << ":\n" << r.output;
  }
  auto cron = runShell(vto("schedule --cron 'every monday'"));
  EXPECT_NE(cron.output.find("e.g. \"0 3 * * 1\""), std::string::npos) << cron.output;
}

TEST(VtoSchedule, EveryScheduledSampleWorks) {
  int scheduled = 0;
  for (const auto& entry : fs::directory_iterator(sourceDir() / "config/samples")) {
    std::string name = entry.path().filename();
    if (name.rfind("retrainingpolicy_", 0) != 0) continue;
    std::ifstream in(entry.path());
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find("\n    schedule:") == std::string::npos) continue;  // manual or polled triggers only
    auto r = runShell(vto("schedule -f " + quote(entry.path()) + " -n 4 2>/dev/null"));
    EXPECT_EQ(r.exitCode, 0) << name << ":\n" << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 4) << name << ":\n" << r.output;
    ++scheduled;
  }
  EXPECT_GE(scheduled, 2);
}

}  // namespace
}  // namespace vto::testing
