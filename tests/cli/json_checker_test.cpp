// The strict JSON parser the CLI tests rely on must itself accept valid and reject invalid JSON,
// or the output checks would prove nothing.
#include "cli/cli_support.hpp"

namespace stepcast_cli_test {
namespace {
namespace json_checker_test {  // this file's own names: test files are compiled several to a unit

bool valid(const std::string& text) {
  Json v;
  return JsonParser(text).parse(v);
}

TEST(JsonChecker, AcceptsValidDocuments) {
  EXPECT_TRUE(valid("{}"));
  EXPECT_TRUE(valid("[]"));
  EXPECT_TRUE(
      valid(" {\"a\": [1, -2.5, 3e-7, 0, 0.25E+3], \"b\": {\"c\": null}, \"d\": true, \"e\": false} \n"));
  EXPECT_TRUE(valid(R"({"s": "q\" b\\ s\/ \b\f\n\r\t \u00e9 \u0001"})"));
  Json v;
  ASSERT_TRUE(JsonParser(R"({"x": {"y": [1, 2]}, "n": 12.5})").parse(v));
  ASSERT_NE(v.at_path("x.y"), nullptr);
  EXPECT_EQ(v.at_path("x.y")->array.size(), 2u);
  EXPECT_DOUBLE_EQ(v["n"].number, 12.5);
  EXPECT_EQ(v.at_path("x.z"), nullptr);
}

TEST(JsonChecker, RejectsInvalidDocuments) {
  for (const char* bad : {"",
                          "{",
                          "[1,]",
                          "{\"a\":1,}",
                          "{a: 1}",
                          "[01]",
                          "[1.]",
                          "[.5]",
                          "[1e]",
                          "[NaN]",
                          "[Infinity]",
                          "[-]",
                          "\"a\nb\"",
                          "\"\\x\"",
                          "\"\\u12\"",
                          "{} {}",
                          "[1 2]",
                          "{\"a\" 1}",
                          "{\"a\":1, \"a\":2}",
                          "'a'",
                          "[tru]",
                          "nul"}) {
    EXPECT_FALSE(valid(bad)) << bad;
  }
}

}  // namespace json_checker_test
}  // namespace
}  // namespace stepcast_cli_test
