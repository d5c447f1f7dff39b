#include "emulator/log_filter.h"

#include <map>

#include <gtest/gtest.h>

#include "base/rfc3339.h"

namespace vto::emulator {
namespace {

struct FakeEntry final : LogEntryFields {
  std::map<std::string, std::string> resourceLabels = {{"job_id", "42"}, {"task_name", "workerpool0-0"}};
  std::map<std::string, std::string> labels = {{"ml.googleapis.com/task_name", "workerpool0-0"}};
  std::string textPayload = "step 3/10 loss=0.4123";
  int level = 200;
  Clock::time_point at = parseRfc3339("2026-05-18T10:00:00.500Z");

  std::optional<std::string> text(LogField field, const std::string& key) const override {
    auto lookup = [&](const std::map<std::string, std::string>& map) -> std::optional<std::string> {
      auto found = map.find(key);
      return found == map.end() ? std::nullopt : std::optional(found->second);
    };
    switch (field) {
      case LogField::ResourceType:
        return "ml_job";
      case LogField::ResourceLabel:
        return lookup(resourceLabels);
      case LogField::Label:
        return lookup(labels);
      case LogField::TextPayload:
        return textPayload;
      case LogField::LogName:
        return "projects/p/logs/workerpool0-0";
      default:
        return std::nullopt;
    }
  }
  int severity() const override { return level; }
  Clock::time_point time(LogField) const override { return at; }
};

bool matches(const std::string& filter, const FakeEntry& entry = {}) { return LogFilter::parse(filter).matches(entry); }

TEST(LogFilter, ComparesEachSupportedField) {
  EXPECT_TRUE(matches(""));
  EXPECT_TRUE(matches(R"(resource.type="ml_job")"));
  EXPECT_TRUE(matches("resource.type=ml_job"));
  EXPECT_FALSE(matches(R"(resource.type!="ml_job")"));
  EXPECT_TRUE(matches(R"(resource.labels.job_id="42")"));
  EXPECT_FALSE(matches(R"(resource.labels.job_id="43")"));
  EXPECT_TRUE(matches(R"(labels."ml.googleapis.com/task_name"="workerpool0-0")"));
  EXPECT_FALSE(matches(R"(labels."ml.googleapis.com/trial_id"="1")")) << "an absent label equals nothing";
  EXPECT_TRUE(matches(R"(labels."ml.googleapis.com/trial_id"!="1")"));
  EXPECT_TRUE(matches(R"(labels."ml.googleapis.com/task_name":*)"));
  EXPECT_TRUE(matches(R"(textPayload:"LOSS=")"));
  EXPECT_TRUE(matches(R"(logName="projects/p/logs/workerpool0-0")"));
  EXPECT_TRUE(matches("severity>=INFO"));
  EXPECT_TRUE(matches("severity<warning"));
  EXPECT_FALSE(matches("severity>=ERROR"));
  EXPECT_TRUE(matches(R"(timestamp>="2026-05-18T10:00:00.500Z")"));
  EXPECT_FALSE(matches(R"(timestamp>"2026-05-18T10:00:00.500Z")"));
  EXPECT_TRUE(matches(R"(timestamp>"2026-05-18T12:00:00+03:00")")) << "offsets are times too";
}

TEST(LogFilter, JoinsByAndOrSpaceAndNegatesWithNotOrMinus) {
  EXPECT_TRUE(matches(R"(resource.type="ml_job" AND severity>=INFO AND textPayload:"step")"));
  EXPECT_TRUE(matches(R"(resource.type="ml_job" severity>=INFO)"));
  EXPECT_FALSE(matches(R"(resource.type="ml_job" AND severity>=ERROR)"));
  EXPECT_TRUE(matches("NOT severity>=ERROR"));
  EXPECT_TRUE(matches(R"(-resource.labels.job_id="7" AND resource.type="ml_job")"));
  EXPECT_FALSE(matches(R"(NOT resource.labels.job_id="42")"));
}

TEST(LogFilter, RefusesWhatItDoesNotUnderstand) {
  for (const char* filter : {"severity>=ERROR OR resource.type=\"ml_job\"", "(severity>=ERROR)", "\"loss\"", "loss",
                             "jsonPayload.step=3", "labels.\"open", "severity>=LOUD", "timestamp>=yesterday",
                             "textPayload=~\"st.p\"", "resource.type<\"x\"", "severity:ERROR", "resource.labels.=\"x\"",
                             "severity>=ERROR AND"}) {
    try {
      LogFilter::parse(filter);
      ADD_FAILURE() << filter << " was accepted";
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find("supported:"), std::string::npos) << filter << ": " << error.what();
    }
  }
}

TEST(LogFilter, NamesTheJobEveryMatchBelongsTo) {
  EXPECT_EQ(LogFilter::parse(R"(severity>=INFO resource.labels.job_id="42")").required(LogField::ResourceLabel, "job_id"), "42");
  EXPECT_FALSE(LogFilter::parse(R"(NOT resource.labels.job_id="42")").required(LogField::ResourceLabel, "job_id"));
  EXPECT_FALSE(LogFilter::parse(R"(resource.labels.job_id:"42")").required(LogField::ResourceLabel, "job_id"));
}

TEST(LogSeverity, NamesAndNumbers) {
  EXPECT_EQ(logSeverity("error"), 500);
  EXPECT_EQ(logSeverity("EMERGENCY"), 800);
  EXPECT_EQ(logSeverity("LOUD"), -1);
  EXPECT_EQ(logSeverityName(400), "WARNING");
}

}  // namespace
}  // namespace vto::emulator
