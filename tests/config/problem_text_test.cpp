// Problem::ToString never prints control bytes raw: a CR from a CRLF file (in a quoted key name,
// in a file name) shows as `\r`, other control bytes as `\xNN`; tabs and line breaks in a
// message stay.
#include <gtest/gtest.h>

#include "config/config.h"

namespace iodrift::config {
namespace {

TEST(ProblemToString, EscapesCarriageReturnAndControlBytes) {
  Problem problem{"bad.yaml", 2, 7, "dbus", "got `nope\r`, \x1b[31mred"};
  const std::string text = problem.ToString();
  EXPECT_EQ(text, "bad.yaml:2:7: dbus: got `nope\\r`, \\x1b[31mred");
  EXPECT_EQ(text.find('\r'), std::string::npos);
  Problem keyed{"bad\r.yaml", 0, 0, "a\rb", "x\ty\nz"};
  EXPECT_EQ(keyed.ToString(), "bad\\r.yaml: a\\rb: x\ty\nz");
}

TEST(ProblemToString, UnknownKeyWithACarriageReturnFromACrlfFile) {
  // A quoted key keeps its CR; the unknown-key problem names it, escaped.
  LoadResult result = LoadFromString("\"colour\r\": blue\r\n", "crlf.yaml");
  ASSERT_FALSE(result.has_value());
  ASSERT_EQ(result.error().size(), 1u);
  const std::string text = result.error().front().ToString();
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  EXPECT_NE(text.find("colour\\r: unknown key"), std::string::npos) << text;
}

}  // namespace
}  // namespace iodrift::config
