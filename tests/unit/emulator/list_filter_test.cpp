#include "emulator/list_filter.h"

#include <gtest/gtest.h>

namespace vto::emulator {
namespace {

using nlohmann::json;

json job() {
  return {{"displayName", "my_job_7"},
          {"state", "JOB_STATE_RUNNING"},
          {"createTime", "2026-05-18T10:00:00.000Z"},
          {"updateTime", "2026-05-18T11:00:00.000Z"},
          {"labels", {{"vto-run-uid", "abc"}, {"vto-attempt", "2"}}}};
}

bool matches(const std::string& filter) { return ListFilter::parse(filter).matches(job()); }

TEST(ListFilter, EmptyMatchesEverything) { EXPECT_TRUE(matches("")); }

TEST(ListFilter, LabelEqualityAndExistence) {
  EXPECT_TRUE(matches(R"(labels.vto-run-uid="abc" AND labels.vto-attempt="2")"));
  EXPECT_FALSE(matches(R"(labels.vto-run-uid="abc" AND labels.vto-attempt="3")"));
  EXPECT_TRUE(matches("labels.vto-run-uid=abc"));
  EXPECT_TRUE(matches("labels.vto-attempt:*"));
  EXPECT_FALSE(matches("labels.other:*"));
}

TEST(ListFilter, RequiredLabelIsALabelEqualityNotNegated) {
  using Label = std::optional<std::pair<std::string, std::string>>;
  EXPECT_EQ(ListFilter::parse(R"(state="JOB_STATE_RUNNING" AND labels.vto-run-uid="abc")").requiredLabel(),
            Label(std::make_pair("vto-run-uid", "abc")));
  EXPECT_EQ(ListFilter::parse(R"(NOT labels.vto-run-uid="abc")").requiredLabel(), std::nullopt);
  EXPECT_EQ(ListFilter::parse(R"(labels.vto-run-uid!="abc")").requiredLabel(), std::nullopt);
  EXPECT_EQ(ListFilter::parse("labels.vto-run-uid:*").requiredLabel(), std::nullopt);
  EXPECT_EQ(ListFilter::parse("").requiredLabel(), std::nullopt);
}

TEST(ListFilter, StateAndDisplayName) {
  EXPECT_TRUE(matches(R"(state="JOB_STATE_RUNNING")"));
  EXPECT_TRUE(matches(R"(state!="JOB_STATE_FAILED" AND display_name:"my_job_*")"));
  EXPECT_FALSE(matches(R"(display_name="my_job")"));
  EXPECT_TRUE(matches(R"(NOT display_name="my_job")"));
}

TEST(ListFilter, TimeComparisonsAcceptOffsets) {
  EXPECT_TRUE(matches(R"(create_time>"2026-05-18T00:00:00Z")"));
  EXPECT_FALSE(matches(R"(create_time>"2026-05-18T12:00:00+02:00")"));  // 10:00Z, not after
  EXPECT_TRUE(matches(R"(create_time>="2026-05-18T12:00:00+02:00")"));
  EXPECT_TRUE(matches(R"(update_time<"2026-05-19T00:00:00Z" AND create_time<="2026-05-18T10:00:00Z")"));
}

TEST(ListFilter, RejectsWhatVertexDoesNotSupportWithTheSupportedSyntax) {
  for (const char* bad : {R"(state>"JOB_STATE_RUNNING")", R"(state="RUNNING")", R"(create_time>"yesterday")",
                          R"(labels.a="1" OR labels.b="2")", R"(owner="me")", R"(display_name="unterminated)"}) {
    EXPECT_THROW(ListFilter::parse(bad), std::invalid_argument) << bad;
  }
  try {
    ListFilter::parse(R"(owner="me")");
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("supported:"), std::string::npos);
  }
}

}  // namespace
}  // namespace vto::emulator
