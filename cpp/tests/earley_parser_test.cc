#include "parser/earley_parser.h"

#include <gtest/gtest.h>

#include "grammar/ebnf_parser.h"
#include "grammar/passes.h"

namespace xg {
namespace {

GrammarFsm Fsm(const std::string& ebnf) {
  Grammar g = ParseEbnf(ebnf);
  NormalizeGrammar(&g);
  return GrammarFsm::Build(g);
}

bool Accepts(const GrammarFsm& fsm, const std::string& s) {
  EarleyParser p(&fsm);
  p.Reset();
  for (char c : s)
    if (!p.Advance(static_cast<uint8_t>(c))) return false;
  return p.CanAcceptEnd();
}

TEST(EarleyParser, LeftRightRecursionNullableAmbiguity) {
  GrammarFsm left = Fsm("root ::= root \"a\" | \"b\"");
  EXPECT_TRUE(Accepts(left, "baaa"));
  EXPECT_FALSE(Accepts(left, "ab"));
  GrammarFsm right = Fsm("root ::= \"a\" root | \"b\"");
  EXPECT_TRUE(Accepts(right, "aaab"));
  EXPECT_FALSE(Accepts(right, "aaa"));
  GrammarFsm nullable = Fsm("root ::= a a \"x\" a\na ::= \"y\" | \"\"");
  for (const char* s : {"x", "yx", "yyx", "xy", "yyxy"}) EXPECT_TRUE(Accepts(nullable, s)) << s;
  EXPECT_FALSE(Accepts(nullable, "yyyx"));
  GrammarFsm ambiguous = Fsm("root ::= root root | \"a\" | \"\"");
  EXPECT_TRUE(Accepts(ambiguous, ""));
  EXPECT_TRUE(Accepts(ambiguous, "aaaaa"));
}

// Leo's optimisation: right recursion keeps each Earley set small instead of growing with depth.
TEST(EarleyParser, RightRecursionSetsStayBounded) {
  for (const char* ebnf : {"root ::= [a-z] root | [a-z]", "root ::= r\nr ::= [a-z] r | [a-z]",
                           "root ::= item (\",\" root)?\nitem ::= [0-9]+"}) {
    GrammarFsm fsm = Fsm(ebnf);
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
  GrammarFsm fsm = Fsm("root ::= \"ab\" | \"ac\"");
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
