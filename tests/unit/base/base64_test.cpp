// Base64 as kubeconfigs (standard, padded) and JWTs and page tokens (URL-safe, unpadded) write it.
#include "base/base64.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace vto {
namespace {

TEST(Base64, RoundTripsEveryLengthInBothAlphabets) {
  std::string bytes;
  for (int i = 0; i < 300; ++i) {
    EXPECT_EQ(base64Decode(base64Encode(bytes)), bytes) << i;
    EXPECT_EQ(base64UrlDecode(base64UrlEncode(bytes)), bytes) << i;
    EXPECT_EQ(base64Encode(bytes).size() % 4, 0u) << i;
    EXPECT_EQ(base64UrlEncode(bytes).find('='), std::string::npos) << i;
    bytes += static_cast<char>(i * 37);
  }
}

TEST(Base64, ReadsTheKnownFormsOfRfc4648) {
  EXPECT_EQ(base64Encode("foob"), "Zm9vYg==");
  EXPECT_EQ(base64Decode("Zm9vYg=="), "foob");
  EXPECT_EQ(base64Decode("Zm9vYg"), "foob");  // padding optional
  EXPECT_EQ(base64Encode("\xfb\xff"), "+/8=");
  EXPECT_EQ(base64UrlEncode("\xfb\xff"), "-_8");
}

TEST(Base64, RefusesWhatIsNotBase64) {
  EXPECT_THROW(base64Decode("Zm9v YmFy"), std::invalid_argument);
  EXPECT_THROW(base64Decode("-_8="), std::invalid_argument);  // the URL-safe alphabet is not the standard one
  EXPECT_THROW(base64UrlDecode("+/8"), std::invalid_argument);
  EXPECT_THROW(base64Decode("Zm9v=YmFy"), std::invalid_argument);  // nothing after the padding
}

}  // namespace
}  // namespace vto
