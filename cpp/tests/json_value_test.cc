// The JSON reader (support/json_value.h): values, order, escapes, numbers as text, and every rejection.
#include "support/json_value.h"

#include <gtest/gtest.h>

#include <string>

namespace xg {
namespace {

std::optional<JsonValue> Parse(const std::string& text, std::string* error = nullptr) {
  std::string e;
  auto v = ParseJson(text, JsonParseOptions{}, &e);
  if (error) *error = e;
  return v;
}

TEST(JsonValueTest, ObjectsKeepDocumentOrderAndNumbersKeepTheirText) {
  auto v = Parse(" {\"z\": 1.50, \"a\": [true, null, -0, 1e+3], \"m\": {}} ");
  ASSERT_TRUE(v);
  ASSERT_TRUE(v->is_object());
  ASSERT_EQ(v->members.size(), 3u);
  EXPECT_EQ(v->members[0].first, "z");
  EXPECT_EQ(v->members[0].second.text, "1.50");
  EXPECT_EQ(v->members[1].first, "a");
  const JsonValue* a = v->Find("a");
  ASSERT_TRUE(a && a->is_array());
  EXPECT_TRUE(a->items[0].is_bool() && a->items[0].boolean);
  EXPECT_TRUE(a->items[1].is_null());
  EXPECT_EQ(a->items[2].text, "-0");
  EXPECT_EQ(a->items[3].text, "1e+3");
  EXPECT_TRUE(v->Find("m")->is_object());
  EXPECT_EQ(v->Find("missing"), nullptr);
}

TEST(JsonValueTest, StringEscapesDecodeToUtf8) {
  auto v = Parse(R"(["a\"b\\c\/\b\f\n\r\t", "\u00e9\u2028", "\ud83d\ude00", "plain é 😀"])");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->items[0].text, "a\"b\\c/\b\f\n\r\t");
  EXPECT_EQ(v->items[1].text, "\xc3\xa9\xe2\x80\xa8");
  EXPECT_EQ(v->items[2].text, "\xf0\x9f\x98\x80");
  EXPECT_EQ(v->items[3].text, "plain \xc3\xa9 \xf0\x9f\x98\x80");
}

TEST(JsonValueTest, RejectsWhatJsonDoesNotAllow) {
  const char* bad[] = {"",        "{",        "[1,]",       "{\"a\":1,}",   "01",          "1.",
                       "-",       "1e",       "NaN",        "Infinity",     "tru",         "\"a",
                       "\"\t\"",  "\"\\x\"",  "\"\\ud800\"", "\"\\udc00\"", "{\"a\" 1}",    "{1: 2}",
                       "[1 2]",   "1 2",      "\"\xff\"",   "\"\xc3\""};
  for (const char* text : bad) {
    std::string error;
    EXPECT_FALSE(Parse(text, &error)) << text;
    EXPECT_NE(error.find("at byte"), std::string::npos) << text;
  }
}

TEST(JsonValueTest, DuplicateKeysAreAnErrorUnlessAllowed) {
  std::string error;
  EXPECT_FALSE(Parse("{\"a\": 1, \"b\": 2, \"a\": 3}", &error));
  EXPECT_NE(error.find("duplicate key \"a\""), std::string::npos) << error;
  JsonParseOptions keep;
  keep.reject_duplicate_keys = false;
  auto v = ParseJson("{\"a\": 1, \"a\": 3}", keep, &error);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->members.size(), 2u);
  EXPECT_EQ(v->Find("a")->text, "1");
}

TEST(JsonValueTest, DepthLimitIsAnErrorNotACrash) {
  JsonParseOptions options;
  options.max_depth = 64;
  std::string ok(64, '['), deep(65, '[');
  ok += std::string(64, ']');
  deep += std::string(65, ']');
  std::string error;
  EXPECT_TRUE(ParseJson(ok, options, &error));
  EXPECT_FALSE(ParseJson(deep, options, &error));
  EXPECT_NE(error.find("nesting deeper than 64"), std::string::npos) << error;
  std::string hostile(1 << 20, '[');  // far past the default limit: stops at the limit, no deep recursion
  EXPECT_FALSE(Parse(hostile, &error));
}

}  // namespace
}  // namespace xg
