// Names in Google's answers carry the project's number; requests may use the ID or the number.
#include "emulator/project_numbers.h"

#include <gtest/gtest.h>

#include "tests/unit/emulator/emulator_fixture.h"

namespace vto::emulator {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

TEST(ProjectNumbers, EachIdHasOneTwelveDigitNumber) {
  auto number = ProjectNumbers::numberOf("emu-project");
  EXPECT_EQ(number.size(), 12u);
  EXPECT_NE(number[0], '0');
  EXPECT_EQ(ProjectNumbers::numberOf("emu-project"), number);
  EXPECT_NE(ProjectNumbers::numberOf("other-project"), number);
}

TEST(ProjectNumbers, RequestsReadKnownNumbersAsIdsAndAnswersCarryNumbers) {
  ProjectNumbers numbers;
  const auto number = ProjectNumbers::numberOf("emu-project");
  EXPECT_EQ(numbers.toIds("/v1/projects/" + number + "/locations/x"), "/v1/projects/" + number + "/locations/x")
      << "a number never seen as an ID is left alone (Google would answer 404 or 403 for it)";
  EXPECT_EQ(numbers.toIds("/v1/projects/emu-project/locations/x"), "/v1/projects/emu-project/locations/x");
  EXPECT_EQ(numbers.toIds("{\"parentModel\": \"projects/" + number + "/locations/x/models/m\"}"),
            "{\"parentModel\": \"projects/emu-project/locations/x/models/m\"}");
  json answer = {{"name", "projects/emu-project/locations/x/customJobs/1"},
                 {"list", {"projects/emu-project", "not projects/emu-project", 3}},
                 {"other", "projects/unknown/locations/x"}};
  numbers.toNumbers(answer);
  EXPECT_EQ(answer["name"], "projects/" + number + "/locations/x/customJobs/1");
  EXPECT_EQ(answer["list"][0], "projects/" + number);
  EXPECT_EQ(answer["list"][1], "not projects/emu-project") << "only names, which start with projects/";
  EXPECT_EQ(answer["other"], "projects/unknown/locations/x");
}

class ProjectNumbersEmulatorTest : public EmulatorFixture {
 protected:
  ProjectNumbersEmulatorTest() : EmulatorFixture(options()) {}
  static EmulatorOptions options() {
    EmulatorOptions options;
    options.simulation = {2s, 3, 10s, 1s};
    options.projectNumbers = true;
    return options;
  }
};

TEST_F(ProjectNumbersEmulatorTest, AJobCreatedByIdIsNamedByNumberAndFoundByEither) {
  auto name = create(customJob());
  const auto number = ProjectNumbers::numberOf("emu-project");
  ASSERT_EQ(name.rfind("projects/" + number + "/locations/us-central1/customJobs/", 0), 0u) << name;
  EXPECT_EQ(get(name)["name"], name);
  auto byId = "projects/emu-project/locations/us-central1/customJobs/" + name.substr(name.rfind('/') + 1);
  EXPECT_EQ(get(byId)["name"], name);
  auto listed = call("GET", kParent + "/customJobs").body["customJobs"];
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["name"], name);
  EXPECT_EQ(call("POST", "/v1/" + name + ":cancel").status, 200);
}

}  // namespace
}  // namespace vto::emulator
