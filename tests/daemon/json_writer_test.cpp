#include "daemon/json_writer.h"

#include <cmath>

#include <gtest/gtest.h>

namespace iodrift::daemon {
namespace {

TEST(JsonWriter, WritesNestedContainersWithCommas) {
  JsonWriter w;
  w.BeginObject();
  w.Key("a");
  w.Integer(-1);
  w.Key("b");
  w.BeginArray();
  w.Unsigned(1);
  w.Bool(true);
  w.Null();
  w.EndArray();
  w.Key("c");
  w.BeginObject();
  w.EndObject();
  w.EndObject();
  EXPECT_EQ(w.str(), R"({"a":-1,"b":[1,true,null],"c":{}})");
}

TEST(JsonWriter, EscapesStringsAndControlCharacters) {
  JsonWriter w;
  w.String("q\"b\\n\n\x01");
  EXPECT_EQ(w.str(), R"("q\"b\\n\n\u0001")");
}

TEST(JsonWriter, WholeNumbersExactOthersShortestRoundTripNonFiniteNull) {
  JsonWriter w;
  w.BeginArray();
  w.Number(67108864);
  w.Number(0.421234567891);
  w.Number(1796231630.123456);
  w.Number(std::nan(""));
  w.Number(INFINITY);
  w.OptionalNumber(std::nullopt);
  w.EndArray();
  EXPECT_EQ(w.str(), "[67108864,0.421234567891,1796231630.123456,null,null,null]");
}

}  // namespace
}  // namespace iodrift::daemon
