// Counted repetition (CompressRepetitions + the count in EarleyItem): the counted form must accept
// exactly the language of the unrolled form, prefix by prefix, and its automata must not grow with
// the bound.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "fsm_test_util.h"
#include "frontends/ebnf_parser.h"
#include "grammar/passes.h"
#include "parser/earley_parser.h"

namespace xg {
namespace {

GrammarFsm Counted(const std::string& ebnf) { return NormalizedFsm(ebnf); }

// The same grammar with every repetition unrolled (the reference).
GrammarFsm Unrolled(const std::string& ebnf) {
  Grammar g = ParseEbnf(ebnf);
  DropUnreachableRules(&g);
  CompressRepetitions(&g, /*unroll_limit=*/1 << 20);
  InlineSmallRules(&g);
  FuseBytes(&g);
  return GrammarFsm::Build(g);
}

bool HasCountedRule(const GrammarFsm& fsm) {
  for (int32_t r = 0; r < fsm.NumRules(); ++r)
    if (fsm.RuleStart(r) >= 0 && fsm.IsCountedRule(r)) return true;
  return false;
}

// Feeds `text` to both parsers; at every prefix both must agree on "still a prefix of a sentence"
// and on "a complete sentence". Returns the number of bytes both accepted.
size_t Compare(const GrammarFsm& counted, const GrammarFsm& unrolled, const std::string& text,
               const std::string& what) {
  EarleyParser a(&counted), b(&unrolled);
  a.Reset();
  b.Reset();
  EXPECT_EQ(a.CanAcceptEnd(), b.CanAcceptEnd()) << what << " at the empty prefix";
  for (size_t i = 0; i < text.size(); ++i) {
    bool ok_a = a.Advance(static_cast<uint8_t>(text[i]));
    bool ok_b = b.Advance(static_cast<uint8_t>(text[i]));
    EXPECT_EQ(ok_a, ok_b) << what << ": byte " << i << " of '" << text << "'";
    if (!ok_a || !ok_b) return i;
    EXPECT_EQ(a.CanAcceptEnd(), b.CanAcceptEnd()) << what << ": prefix '" << text.substr(0, i + 1) << "'";
  }
  return text.size();
}

TEST(CountedRepetition, SameLanguageAsUnrolledPrefixByPrefix) {
  struct Case {
    const char* ebnf;
    const char* alphabet;
    const char* prefix = "";
  };
  const Case cases[] = {
      {"root ::= (\"a\" | \"ab\" | \"b\"){3,40}", "ab"},                     // ambiguous item lengths
      {"root ::= \"x\" (\"a\" | \"bb\"){0,35} \"y\"", "aby", "x"},            // inside a sequence
      {"root ::= (\"a\"{0,40} \",\"){2,34}", "a,"},                         // nested counted rules
      {"root ::= \"a\"{40,}", "ab"},                                        // unbounded, large min
      {"root ::= (\"a\"{1,3}){33,34}", "a"},                                // small item, tight bounds
      {"root ::= item{0,50}\nitem ::= \"(\" root \")\" | \"z\"", "()z"},    // recursion through the item
      {"root ::= [a-c]{35,37} \"d\"?", "abcd"},                             // a class as the item
      {"root ::= (\"b\"?){36,40} \"c\"", "bc"},                              // X? becomes X{0,n}
      {"root ::= \"[\" ( | \"bc\" | \"a\"){35,50} \"]\"", "abc]", "["},          // (X | "") too
  };
  std::mt19937 rng(7);
  for (auto [ebnf, alphabet, prefix] : cases) {
    GrammarFsm counted = Counted(ebnf), unrolled = Unrolled(ebnf);
    EXPECT_TRUE(HasCountedRule(counted)) << ebnf;
    EXPECT_FALSE(HasCountedRule(unrolled)) << ebnf;
    const std::string abc = alphabet;
    size_t longest = 0;
    for (int trial = 0; trial < 1500; ++trial) {
      // Mostly long runs of one letter (to reach the bounds), sometimes mixed.
      std::string text = prefix;
      size_t len = rng() % 90;
      char run = abc[rng() % abc.size()];
      for (size_t i = 0; i < len; ++i) text += (rng() % 8 == 0) ? abc[rng() % abc.size()] : run;
      if (trial % 3 == 0 && abc.find(',') != std::string::npos)
        for (size_t i = 0; i < text.size(); i += 1 + rng() % 45) text[i] = ',';
      longest = std::max(longest, Compare(counted, unrolled, text, ebnf));
      if (::testing::Test::HasFailure()) return;
    }
    EXPECT_GT(longest, 33u) << ebnf << ": no trial got past the unroll limit";
  }
}

TEST(CountedRepetition, AutomataDoNotGrowWithTheBound) {
  int32_t states_small = Counted("root ::= \"[\" (\"a\" | \"bc\"){0,100} \"]\"").NumStates();
  int32_t states_big = Counted("root ::= \"[\" (\"a\" | \"bc\"){0,1000000} \"]\"").NumStates();
  EXPECT_EQ(states_small, states_big);
  EXPECT_LT(states_big, 16);
  GrammarFsm fsm = Counted("root ::= \"a\"{0,1000000}");
  EarleyParser p(&fsm);
  p.Reset();
  for (int i = 0; i < 1000000; ++i) ASSERT_TRUE(p.Advance('a')) << i;
  EXPECT_TRUE(p.CanAcceptEnd());
  EXPECT_FALSE(p.Advance('a'));
  EXPECT_TRUE(p.CanAcceptEnd());  // the rejected byte changed nothing
}

TEST(CountedRepetition, NullableItemsAndSmallBoundsStayUnrolled) {
  // A nullable item has no count to keep (x{0,n} of a nullable x is ambiguous in its count), unless it
  // is X? or (X | ""): then it reads k X's for any k <= n, which is X{0,n}.
  EXPECT_FALSE(HasCountedRule(Counted("root ::= (\"a\"? \"b\"?){0,100}")));
  EXPECT_TRUE(HasCountedRule(Counted("root ::= (\"a\"?){0,100}")));
  EXPECT_TRUE(HasCountedRule(Counted("root ::= (\"\" | \"ab\"){7,100}")));
  EXPECT_FALSE(HasCountedRule(Counted("root ::= \"a\"{0,32}")));
  EXPECT_TRUE(HasCountedRule(Counted("root ::= \"a\"{0,33}")));
  GrammarFsm nullable_item = Counted("root ::= (\"a\"?){0,100} \"b\"");
  EXPECT_EQ(Compare(nullable_item, Unrolled("root ::= (\"a\"?){0,100} \"b\""), std::string(150, 'a'), "nullable"), 100u);
}

TEST(CountedRepetition, CountClassKeepsExactCountsOnlyNearTheBounds) {
  GrammarFsm fsm = Counted("root ::= \"a\"{100,1000}");
  int32_t rule = -1;
  for (int32_t r = 0; r < fsm.NumRules(); ++r)
    if (fsm.RuleStart(r) >= 0 && fsm.IsCountedRule(r)) rule = r;
  ASSERT_GE(rule, 0);
  const int32_t L = 16;  // max token bytes
  EXPECT_EQ(CountClass(fsm, rule, 10, L), kCountBelowMin);   // min out of reach within a token
  EXPECT_EQ(CountClass(fsm, rule, 90, L), 90);               // min reachable: exact
  EXPECT_EQ(CountClass(fsm, rule, 500, L), kCountFree);      // both bounds out of reach
  EXPECT_EQ(CountClass(fsm, rule, 990, L), 990);             // max reachable: exact
}

}  // namespace
}  // namespace xg
