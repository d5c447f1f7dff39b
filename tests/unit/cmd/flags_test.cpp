#include "cmd/flags.h"

#include <gtest/gtest.h>

namespace vto::cmd {
namespace {

Flags logsLike() {
  return Flags("logs", "", {{"namespace", 'n', "", "ns"}, {"follow", 'f', "false", "follow", true}, {"tail", 0, "", "n"}});
}

TEST(FlagsTest, ArgumentsBesideFlagsGoToPositionalsWhenTheCommandTakesThem) {
  auto flags = logsLike();
  std::vector<std::string> positionals;
  ASSERT_TRUE(flags.parse({"-n", "team", "trun/resnet", "-f", "--tail=5"}, &positionals));
  EXPECT_EQ(positionals, std::vector<std::string>{"trun/resnet"});
  EXPECT_EQ(flags.get("namespace"), "team");  // a flag's value is never a positional
  EXPECT_TRUE(flags.getBool("follow"));
  EXPECT_EQ(flags.getInt("tail"), 5);
  // A command without positionals still refuses them, naming the argument.
  auto strict = logsLike();
  try {
    strict.parse({"trun/resnet"});
    FAIL() << "expected UsageError";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("unexpected argument \"trun/resnet\""), std::string::npos);
  }
}

}  // namespace
}  // namespace vto::cmd
