// Problem::ToString never prints control bytes raw: a CR from a CRLF file shows as `\r`, other
// control bytes as `\xNN`; tabs and line breaks in a message stay.
#include <gtest/gtest.h>

#include "config/config.h"

namespace iodrift::config {
namespace {

TEST(ProblemToString, EscapesCarriageReturnAndControlBytes) {
  Problem problem{"bad.yaml", 2, 7, "dbus", "got `nope\r`, \x1b[31mred"};
  const std::string text = problem.ToString();
  EXPECT_EQ(text, "bad.yaml:2:7: dbus: got `nope\\r`, \\x1b[31mred");
  EXPECT_EQ(text.find('\r'), std::string::npos);
  Problem keyed{"bad.yaml", 0, 0, "a\rb", "x\ty\nz"};
  EXPECT_EQ(keyed.ToString(), "bad.yaml: a\\rb: x\ty\nz");
}

}  // namespace
}  // namespace iodrift::config
