#include "parser/earley_parser.h"

#include <gtest/gtest.h>

#include "fsm_test_util.h"

namespace xg {
namespace {

TEST(EarleyParser, LeftRightRecursionNullableAmbiguity) {
  GrammarFsm left = NormalizedFsm("root ::= root \"a\" | \"b\"");
  EXPECT_TRUE(FsmAccepts(left, "baaa"));
  EXPECT_FALSE(FsmAccepts(left, "ab"));
  GrammarFsm right = NormalizedFsm("root ::= \"a\" root | \"b\"");
  EXPECT_TRUE(FsmAccepts(right, "aaab"));
  EXPECT_FALSE(FsmAccepts(right, "aaa"));
  GrammarFsm nullable = NormalizedFsm("root ::= a a \"x\" a\na ::= \"y\" | \"\"");
  for (const char* s : {"x", "yx", "yyx", "xy", "yyxy"}) EXPECT_TRUE(FsmAccepts(nullable, s)) << s;
  EXPECT_FALSE(FsmAccepts(nullable, "yyyx"));
  GrammarFsm ambiguous = NormalizedFsm("root ::= root root | \"a\" | \"\"");
  EXPECT_TRUE(FsmAccepts(ambiguous, ""));
  EXPECT_TRUE(FsmAccepts(ambiguous, "aaaaa"));
}

// Leo's optimisation: right recursion keeps each Earley set small instead of growing with depth.
TEST(EarleyParser, RightRecursionSetsStayBounded) {
  for (const char* ebnf : {"root ::= [a-z] root | [a-z]", "root ::= r\nr ::= [a-z] r | [a-z]",
                           "root ::= item (\",\" root)?\nitem ::= [0-9]+"}) {
    GrammarFsm fsm = NormalizedFsm(ebnf);
    EarleyParser p(&fsm);
    p.Reset();
    std::string text;
    for (int i = 0; i < 2000; ++i) text += std::string(ebnf).find(',') != std::string::npos ? (i % 2 ? "," : "7") : "q";
    if (std::string(ebnf).find(',') != std::string::npos) text += "7";
    size_t max_items = 0;
    for (char c : text) {
      ASSERT_TRUE(p.Advance(static_cast<uint8_t>(c))) << ebnf;
      int32_t k = p.NumSets() - 1;
      max_items = std::max<size_t>(max_items, p.SetEnd(k) - p.SetBegin(k));
    }
    EXPECT_TRUE(p.CanAcceptEnd()) << ebnf;
    EXPECT_LE(max_items, 16u) << ebnf << ": sets grow with the recursion depth";
  }
}

TEST(EarleyParser, RejectedByteLeavesParserUnchanged) {
  GrammarFsm fsm = NormalizedFsm("root ::= \"ab\" | \"ac\"");
  EarleyParser p(&fsm);
  p.Reset();
  ASSERT_TRUE(p.Advance('a'));
  int32_t sets = p.NumSets();
  EXPECT_FALSE(p.Advance('x'));
  EXPECT_EQ(p.NumSets(), sets);
  EXPECT_TRUE(p.Advance('c'));
  EXPECT_TRUE(p.CanAcceptEnd());
}

}  // namespace
}  // namespace xg
