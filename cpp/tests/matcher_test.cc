// Engine-level checks: the mask from the token-mask cache equals the brute-force oracle on a small
// vocabulary with many shared prefixes, across grammars that stress the Earley parser.
#include "matcher/grammar_matcher.h"

#include <gtest/gtest.h>

#include <random>

#include "dense_vocab.h"
#include "frontends/ebnf_parser.h"
#include "support/check.h"

namespace xg {
namespace {

std::shared_ptr<const TokenizerInfo> SmallVocab() {
  std::vector<std::string> toks;
  const char* pieces[] = {"a", "b", "c", "x", "0", "1", "9", "\"", "{", "}", "[", "]", ",", ":", " ", "\n", "ab",
                          "abc", "ba", "aa", "aaa", "\"a", "a\"", "\",", "\"}", "},", "}]", "]}", "1,", "12", "0.",
                          "e5", "tru", "true", "null", "\"\"", "{\"", "\":", "\xe4\xb8\xad", "\xe4", "\xb8\xad", "\xc3\xa9", "xyz"};
  for (const char* p : pieces) toks.push_back(p);
  toks.push_back("");  // special (empty)
  toks.push_back("<eos>");
  int32_t n = static_cast<int32_t>(toks.size());
  return std::make_shared<TokenizerInfo>(toks, n + 7, std::vector<int32_t>{n - 2}, std::vector<int32_t>{n - 1});
}

void ExpectMaskEqualsOracleOnWalks(const std::string& ebnf, int walks, int steps,
                                   std::shared_ptr<const TokenizerInfo> tok = SmallVocab()) {
  auto cg = std::make_shared<const CompiledGrammar>(ParseEbnf(ebnf), tok);
  std::mt19937 rng(42);
  std::vector<uint32_t> mask(tok->MaskWords()), oracle(tok->MaskWords());
  int total_steps = 0;
  for (int w = 0; w < walks; ++w) {
    GrammarMatcher m(cg);
    for (int s = 0; s < steps; ++s) {
      m.FillNextTokenBitmask(mask.data(), tok->MaskWords());
      m.FillNextTokenBitmaskBruteForce(oracle.data(), tok->MaskWords());
      ASSERT_EQ(mask, oracle) << ebnf << " walk " << w << " step " << s;
      std::vector<int32_t> allowed;
      // Prefer text tokens so walks go deep; stop tokens only when nothing else is allowed.
      for (int32_t t = 0; t < tok->VocabSize(); ++t)
        if ((mask[t >> 5] >> (t & 31) & 1) && !tok->IsSpecial(t)) allowed.push_back(t);
      if (allowed.empty())
        for (int32_t t : tok->StopIds())
          if (mask[t >> 5] >> (t & 31) & 1) allowed.push_back(t);
      if (allowed.empty() || m.IsTerminated()) break;
      int32_t pick = allowed[rng() % allowed.size()];
      ASSERT_TRUE(m.AcceptToken(pick));
      ++total_steps;
    }
  }
  EXPECT_GE(total_steps, walks * steps / 4) << "walks ended too early to test much";
}

TEST(MaskEqualsOracle, Json) {
  ExpectMaskEqualsOracleOnWalks(
      "root ::= value\nvalue ::= obj | arr | str | num | \"true\" | \"null\"\n"
      "obj ::= \"{\" ws (str ws \":\" ws value ws (\",\" ws str ws \":\" ws value ws)*)? \"}\"\n"
      "arr ::= \"[\" ws (value ws (\",\" ws value ws)*)? \"]\"\nstr ::= \"\\\"\" [^\"]* \"\\\"\"\n"
      "num ::= \"-\"? [0-9]+ (\".\" [0-9]+)? ([eE] [0-9]+)?\nws ::= [ \\n]*",
      30, 40);
}
TEST(MaskEqualsOracle, LiteralsOverDenseVocabulary) {
  // Few live bytes per state (literal keys, a narrow string body): the walk skips most siblings.
  ExpectMaskEqualsOracleOnWalks(
      "root ::= \"{\" (kv (\":\" kv)*)? \"}\"\n"
      "kv ::= \"\\\"ab\\\"\" | \"\\\"aab\\\":\" s | \"\\\"b\\\"\" s | \"\\\"bb:\" s | \"{b}\" | \"}:b\"\n"
      "s ::= \"\\\"\" [b]* \"\\\"\" | \"a\"",
      300, 16, DenseVocab(/*max_len=*/4, /*per_length=*/120, /*seed=*/7));
}

// Runs of a one-byte class inside a counted repetition (bound > kRepeatUnrollLimit): most tokens are
// runs of the class's bytes, accepted by their length against the room left (OneByteRunCapacity), so
// the walks must cross both bounds with tokens of every length.
std::shared_ptr<const TokenizerInfo> RunsVocab() {
  std::vector<std::string> toks = {"Yes", "No", ", ", ".", "a.", "b .", "No, "};
  std::mt19937 rng(11);
  for (int len = 1; len <= 7; ++len)
    for (int i = 0; i < 25; ++i) {
      std::string t;
      for (int j = 0; j < len; ++j) t.push_back("ab "[rng() % 3]);
      toks.push_back(t);
    }
  toks.push_back("<eos>");
  const int32_t n = static_cast<int32_t>(toks.size());
  return std::make_shared<TokenizerInfo>(toks, n, std::vector<int32_t>{n - 1}, std::vector<int32_t>{n - 1});
}

TEST(MaskEqualsOracle, OneByteRunsInACountedRepetition) {
  ExpectMaskEqualsOracleOnWalks("root ::= (\"Yes\" | \"No\") \", \" [ab ]{5,40} \".\"", 80, 40, RunsVocab());
  ExpectMaskEqualsOracleOnWalks("root ::= [ab ]{33,}  \".\"", 40, 40, RunsVocab());
}

TEST(MaskEqualsOracle, LeftRecursionAndAmbiguity) {
  ExpectMaskEqualsOracleOnWalks("root ::= root root | \"a\" | \"b\" | \"\"", 10, 30);
  ExpectMaskEqualsOracleOnWalks("root ::= e\ne ::= e \"+\" t | t\nt ::= t \"*\" f | f\nf ::= [0-9]+ | \"(\" e \")\"", 20,
                                30);
}
TEST(MaskEqualsOracle, NullableAndUnicode) {
  ExpectMaskEqualsOracleOnWalks("root ::= a b a c\na ::= \"a\"? | \"\"\nb ::= [a-c]*\nc ::= [中é]{1,3} \"x\"?", 20, 20);
}

TEST(GrammarMatcher, RejectedTokenLeavesStateUnchanged) {
  auto tok = SmallVocab();
  auto cg = std::make_shared<const CompiledGrammar>(ParseEbnf("root ::= \"ab\" [0-9]+ \"}\""), tok);
  GrammarMatcher m(cg);
  std::vector<uint32_t> before(tok->MaskWords()), after(tok->MaskWords());
  ASSERT_TRUE(m.AcceptToken(16));  // "ab"
  m.FillNextTokenBitmask(before.data(), tok->MaskWords());
  for (int32_t t = 0; t < tok->VocabSize(); ++t) {
    if (before[t >> 5] >> (t & 31) & 1) continue;
    EXPECT_FALSE(m.AcceptToken(t)) << t;
    m.FillNextTokenBitmask(after.data(), tok->MaskWords());
    ASSERT_EQ(before, after) << "token " << t << " changed the matcher";
  }
  EXPECT_THROW(m.AcceptToken(-1), InputError);
  EXPECT_THROW(m.AcceptToken(tok->VocabSize()), InputError);
}

TEST(GrammarMatcher, RollbackRestoresMasks) {
  auto tok = SmallVocab();
  auto cg = std::make_shared<const CompiledGrammar>(ParseEbnf("root ::= (\"a\" | \"b\" | \"ab\")+ \"1\""), tok);
  GrammarMatcher m(cg);
  std::vector<uint32_t> m0(tok->MaskWords()), m1(tok->MaskWords());
  m.FillNextTokenBitmask(m0.data(), tok->MaskWords());
  ASSERT_TRUE(m.AcceptToken(0));
  ASSERT_TRUE(m.AcceptToken(16));
  m.Rollback(2);
  m.FillNextTokenBitmask(m1.data(), tok->MaskWords());
  EXPECT_EQ(m0, m1);
  EXPECT_THROW(m.Rollback(1), InputError);
}

// A string that may end an object's first property: after its closing quote the value ends, the
// optional properties after it (a chain of rules, too long to inline) may all be absent, the rule of
// the first property completes, and only then does the object's "}" decide. The context entry climbs
// those lone ancestors, so a token that closes the string and goes on with bytes none of them takes
// is rejected there, not re-parsed live at every step of the string (two levels left all 20 here).
TEST(GrammarMatcher, ContextClimbsLoneAncestorsThatCanEnd) {
  std::vector<std::string> toks = {"{", "}", "\"", ",", ":", " ", "a", "ab", "1", "\"k\":", "\"p0\":", "\"}", "\","};
  for (char junk : std::string(")]>=;!?@#$%&*+/<")) toks.push_back(std::string("a\"") + junk);
  toks.push_back("a\"}");
  toks.push_back("<eos>");
  const int32_t n = static_cast<int32_t>(toks.size());
  auto tok = std::make_shared<TokenizerInfo>(toks, n, std::vector<int32_t>{n - 1}, std::vector<int32_t>{n - 1});
  std::string ebnf = "root ::= \"{\" ws first ws \"}\"\nfirst ::= \"\\\"k\\\":\" ws val r0 | r0\n";
  for (int i = 0; i < 8; ++i) {
    const std::string k = std::to_string(i), next = "r" + std::to_string(i + 1);
    ebnf += "r" + k + " ::= ws \",\" ws \"\\\"p" + k + "\\\":\" ws val " + next + " | " + next + "\n";
  }
  ebnf += "r8 ::= \"\"\nval ::= str | \"1\"\nws ::= [ ]*\n";
  ebnf += "str ::= \"\\\"\" [^\"]* \"\\\"\"";  // a wide class: its own rule, never inlined
  auto cg = std::make_shared<const CompiledGrammar>(ParseEbnf(ebnf), tok);
  std::vector<uint32_t> mask(tok->MaskWords()), oracle(tok->MaskWords());
  for (const char* prefix : {"{\"k\": \"ab", "{\"k\": \"a\", \"p0\": \"b", "{\"k\": \"a\", \"p0\": \"b c"}) {
    GrammarMatcher m(cg);
    ASSERT_TRUE(m.AcceptString(prefix)) << prefix;
    m.FillNextTokenBitmask(mask.data(), tok->MaskWords());
    m.FillNextTokenBitmaskBruteForce(oracle.data(), tok->MaskWords());
    ASSERT_EQ(mask, oracle) << prefix;
    EXPECT_EQ(m.LastFillLiveChecks(), 0) << prefix;
  }
  ExpectMaskEqualsOracleOnWalks(ebnf, 60, 12, tok);
}

// A batch step that fails undoes the rows that advanced with UndoLastToken: the matcher is as it was,
// rollback budget included (Rollback(1) would use one up).
TEST(GrammarMatcher, UndoLastTokenRestoresStateAndRollbackBudget) {
  auto tok = SmallVocab();
  auto cg = std::make_shared<const CompiledGrammar>(ParseEbnf("root ::= [a-c]*"), tok);
  const int32_t a = 0, b = 1;
  GrammarMatcher m(cg, std::nullopt, /*max_rollback_tokens=*/2);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(m.AcceptToken(a));
  std::vector<uint32_t> before(tok->MaskWords()), after(tok->MaskWords());
  m.FillNextTokenBitmask(before.data(), tok->MaskWords());
  ASSERT_TRUE(m.AcceptToken(b));
  m.UndoLastToken();
  m.FillNextTokenBitmask(after.data(), tok->MaskWords());
  EXPECT_EQ(after, before);
  EXPECT_EQ(m.NumAcceptedTokens(), 3);
  m.Rollback(2);  // the whole budget is still there
  EXPECT_EQ(m.NumAcceptedTokens(), 1);
  EXPECT_THROW(m.Rollback(1), InputError);  // and now used up
}

// A captured rule keeps every completion (no Leo skip): masks stay exact on right recursion through it.
TEST(MaskEqualsOracle, CapturedRightRecursion) {
  ExpectMaskEqualsOracleOnWalks("root ::= \"[\" lst \"]\"\nlst[capture] ::= item \",\" lst | item\n"
                                "item[capture=\"n\"] ::= [0-9]+ | \"ab\"",
                                20, 30);
}

// Captures follow accepted tokens only: an undone step drops its events, a rejected one records nothing.
TEST(GrammarMatcher, CapturesFollowUndoAndRejection) {
  auto tok = SmallVocab();
  auto cg = std::make_shared<const CompiledGrammar>(ParseEbnf("root ::= v \"x\"\nv[capture] ::= [a-c]+"), tok);
  const int32_t a = 0, b = 1, x = 3, one = 5;
  GrammarMatcher m(cg);
  ASSERT_TRUE(m.AcceptToken(a));
  ASSERT_TRUE(m.AcceptToken(b));
  using Captures = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(m.Captures(/*deduplicate=*/false), (Captures{{"v", "a"}, {"v", "ab"}}));
  EXPECT_FALSE(m.AcceptToken(one));
  EXPECT_EQ(m.Captures(true), (Captures{{"v", "ab"}}));
  ASSERT_TRUE(m.AcceptToken(a));
  m.UndoLastToken();
  EXPECT_EQ(m.Captures(false), (Captures{{"v", "a"}, {"v", "ab"}}));
  ASSERT_TRUE(m.AcceptToken(x));
  EXPECT_EQ(m.Captures(true), (Captures{{"v", "ab"}}));
}

}  // namespace
}  // namespace xg
