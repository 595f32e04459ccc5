// GrammarFsm::Build (grammar_fsm.h) against independent oracles:
//   * byte classes: the transition table keeps one column per class of bytes that no run tells apart;
//     classes that are too coarse would make the automaton read a byte as another one, so the language
//     is checked against std::regex on every ASCII string up to length 2, the class count by hand;
//   * subset construction and minimisation: random expressions against std::regex;
//   * rule bodies repeated under several names (built once): each keeps its own references.
#include "fsm/grammar_fsm.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "fsm/rule_dfa_cache.h"
#include "fsm_test_util.h"
#include "parser/earley_parser.h"

namespace xg {
namespace {

TEST(GrammarFsmByteClasses, LanguageEqualsRegexOnShortAsciiStrings) {
  struct Case {
    const char* ebnf;
    const char* regex;  // the same language (ECMAScript syntax of std::regex)
  };
  const Case cases[] = {
      {"root ::= [a-c] \"x\" | [b-d] \"y\" | \"q\"", "[a-c]x|[b-d]y|q"},
      {"root ::= [^a-z\\n] [0-9]? | \"z\" [a-y]", "[^a-z\\n][0-9]?|z[a-y]"},
      {"root ::= ( [ -/] | [:-@] ) [A-Z]* | \"\\x01\"", "([ -/]|[:-@])[A-Z]*|\\x01"},
  };
  for (const Case& c : cases) {
    const GrammarFsm fsm = NormalizedFsm(c.ebnf);
    const std::regex re(c.regex);
    std::string s;
    auto check = [&] { EXPECT_EQ(FsmAccepts(fsm, s), std::regex_match(s, re)) << c.ebnf << " on \"" << s << "\""; };
    check();
    for (int a = 1; a < 128; ++a) {
      s.assign(1, static_cast<char>(a));
      check();
      for (int b = 1; b < 128; ++b) {
        s.assign({static_cast<char>(a), static_cast<char>(b)});
        check();
      }
    }
  }
}

TEST(GrammarFsmByteClasses, ClassesAreTheDistinctRangeMemberships) {
  // Ranges [a-c], [b-d], x, y: bytes a | b c | d | x | y | every other byte -> 6 classes (the last
  // one not contiguous).
  const GrammarFsm fsm = NormalizedFsm("root ::= [a-c] \"x\" | [b-d] \"y\"");
  EXPECT_EQ(fsm.NumByteClasses(), 6);
  // Only full-range runs (any byte): one class.
  EXPECT_EQ(NormalizedFsm("root ::= \"\" | \"a\"").NumByteClasses(), 2);
  // Every ASCII byte told apart (each leads to its own state): one class each, plus 0 and 128..255.
  std::string all = "root ::= \"\"";
  for (int b = 1; b < 128; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "\\x%02x", b);
    all += std::string(" | \"") + hex + hex + "\"";
  }
  const GrammarFsm wide = NormalizedFsm(all);
  EXPECT_EQ(wide.NumByteClasses(), 128);
  for (int b = 1; b < 128; ++b) {
    EXPECT_TRUE(FsmAccepts(wide, std::string(2, static_cast<char>(b)))) << b;
    EXPECT_FALSE(FsmAccepts(wide, std::string({static_cast<char>(b), static_cast<char>(b % 127 + 1)}))) << b;
  }
}

// Subset construction and minimisation against std::regex on random expressions over {a, b, c}: every
// string up to length 4. A wrong merge in minimisation (two states with different futures in one
// block) changes the language; the seeded generator makes nested stars, alternations with shared
// prefixes and suffixes, and optional parts, which give blocks that split into several groups.
TEST(GrammarFsmMinimize, RandomExpressionsMatchRegex) {
  std::mt19937 rng(12345);
  std::function<std::pair<std::string, std::string>(int)> gen = [&](int depth) -> std::pair<std::string, std::string> {
    const int kind = depth == 0 ? 0 : static_cast<int>(rng() % 5);
    if (kind == 0) {
      const std::string lit(1, static_cast<char>('a' + rng() % 3));
      return {"\"" + lit + "\"", lit};
    }
    auto [e1, r1] = gen(depth - 1);
    if (kind == 1) return {"( " + e1 + " )*", "(?:" + r1 + ")*"};
    if (kind == 2) return {"( " + e1 + " )?", "(?:" + r1 + ")?"};
    auto [e2, r2] = gen(depth - 1);
    if (kind == 3) return {e1 + " " + e2, "(?:" + r1 + ")(?:" + r2 + ")"};
    return {"( " + e1 + " | " + e2 + " )", "(?:" + r1 + "|" + r2 + ")"};
  };
  std::vector<std::string> strings = {""};
  for (size_t i = 0; i < strings.size(); ++i)
    if (strings[i].size() < 4)
      for (char c : {'a', 'b', 'c'}) strings.push_back(strings[i] + c);
  for (int trial = 0; trial < 60; ++trial) {
    auto [ebnf, regex] = gen(4);
    const GrammarFsm fsm = NormalizedFsm("root ::= " + ebnf);
    const std::regex re(regex);
    for (const std::string& str : strings)
      ASSERT_EQ(FsmAccepts(fsm, str), std::regex_match(str, re)) << ebnf << " on \"" << str << "\"";
  }
}

// Build keys rule bodies by their text with references numbered locally, so `a` and `c` below (the
// same body over different rules) share one automaton build. Each must still lead to its own rules:
// were `c` given `a`'s references, "x2" and "yx22" would be rejected and "x1" would not tell them apart.
TEST(GrammarFsmTwinBodies, RepeatedBodyKeepsItsOwnReferences) {
  const char* ebnf =
      "root ::= a | c\n"
      "a ::= \"x\" b | \"y\" a\n"
      "c ::= \"x\" d | \"y\" c\n"
      "b ::= \"1\" | \"1\" b\n"
      "d ::= \"2\" | \"2\" d\n";
  const GrammarFsm fsm = NormalizedFsm(ebnf);
  ASSERT_GE(fsm.NumRules(), 5) << "normalisation inlined the twins; the test no longer covers them";
  for (const char* ok : {"x1", "x2", "yx22", "yyx111", "yyyx2"}) EXPECT_TRUE(FsmAccepts(fsm, ok)) << ok;
  for (const char* bad : {"x12", "x21", "yx", "y1", "x"}) EXPECT_FALSE(FsmAccepts(fsm, bad)) << bad;
  // And the cached path (rule_dfa_cache.h) gives the same automaton size.
  Grammar g = ParseEbnf(ebnf);
  NormalizeGrammar(&g);
  RuleDfaCache cache;
  EXPECT_EQ(GrammarFsm::Build(g, GrammarFsm::kDefaultMaxStates, &cache).NumStates(), fsm.NumStates());
}

}  // namespace
}  // namespace xg
