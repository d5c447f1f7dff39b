// escapeControls: the one filter for text from a job before status, an Event or a terminal shows it.
#include "base/utf8.h"

#include <gtest/gtest.h>

namespace vto {
namespace {

TEST(EscapeControls, ControlAndBidiCharactersBecomeEscapesTheRestPassesThrough) {
  EXPECT_EQ(escapeControls("plain text\twith a tab"), "plain text\twith a tab");
  EXPECT_EQ(escapeControls("caf\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x99\x82"), "caf\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x99\x82");
  EXPECT_EQ(escapeControls("a\x1b[2Jb\x07\x7f\r"), "a\\x1b[2Jb\\x07\\x7f\\x0d");
  EXPECT_EQ(escapeControls("one\ntwo"), "one\\x0atwo");
  EXPECT_EQ(escapeControls("one\ntwo", /*keepLineFeeds=*/true), "one\ntwo");
  // C1 (U+0080..U+009F), bidi marks, embeddings, overrides and isolates.
  EXPECT_EQ(escapeControls("\xC2\x80\xC2\x9B\xC2\x9F\xC2\xA0"), "\\u0080\\u009b\\u009f\xC2\xA0");
  EXPECT_EQ(escapeControls("\xD8\x9C\xE2\x80\x8E\xE2\x80\x8F\xE2\x80\xAA\xE2\x80\xAE\xE2\x81\xA6\xE2\x81\xA9"),
            "\\u061c\\u200e\\u200f\\u202a\\u202e\\u2066\\u2069");
  EXPECT_EQ(escapeControls("\xE2\x80\x8D\xE2\x81\xAA"), "\xE2\x80\x8D\xE2\x81\xAA") << "not a control in the list";
  // Bytes that are not UTF-8 (stray, truncated, overlong, surrogate): each shown as \xNN.
  EXPECT_EQ(escapeControls("\xFF\x80"), "\\xff\\x80");
  EXPECT_EQ(escapeControls("\xE2\x80"), "\\xe2\\x80");
  EXPECT_EQ(escapeControls("\xC0\xAF"), "\\xc0\\xaf");
  EXPECT_EQ(escapeControls("\xED\xA0\x80"), "\\xed\\xa0\\x80");
}

}  // namespace
}  // namespace vto
