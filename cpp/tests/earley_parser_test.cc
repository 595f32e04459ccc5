#include "parser/earley_parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

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

// A Leo chain that passes through the root rule completing over the whole input (the root is referenced from
// inside, `cr ::= root | ...`) must leave that item in the set: "EE" is a sentence here (found by the random
// token-element oracle, tests/test_token_elements_oracle.py).
TEST(EarleyParser, LeoChainThroughTheRootKeepsTheWholeInputCompletion) {
  GrammarFsm fsm = NormalizedFsm("root ::= cr ar\nar ::= cr+ ar?\ncr ::= root | \"E\" | cr");
  EXPECT_FALSE(FsmAccepts(fsm, "E"));
  for (const char* s : {"EE", "EEE", "EEEE"}) EXPECT_TRUE(FsmAccepts(fsm, s)) << s;
  GrammarFsm nested = NormalizedFsm("root ::= (cr root | cr) ar\nar ::= cr+ \"}\"* (\"Q\" | ar)?\ncr ::= root | \"E\" | cr | \"true\"");
  for (const char* s : {"EE", "trueE", "EtrueE"}) EXPECT_TRUE(FsmAccepts(nested, s)) << s;
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

// AnyOrder: the set of items read lives in the item's count (grammar.h). Checked against the definition
// on every string over {A, B, C, ','} up to length 7: A exactly once, B at most once, C any number of
// times, comma-separated.
TEST(EarleyParser, AnyOrderKeepsTheItemsReadInTheItem) {
  GrammarFsm fsm = NormalizedFsm("root ::= AnyOrder(a, b?, c*, separator=\",\")\na ::= \"A\"\nb ::= \"B\"\nc ::= \"C\"");
  const std::string alphabet = "ABC,";
  int accepted = 0;
  for (int len = 0; len <= 7; ++len) {
    std::vector<int> digits(len, 0);
    while (true) {
      std::string s;
      for (int d : digits) s += alphabet[d];
      // The definition: items alternate with commas, A once, B at most once.
      bool ok = len % 2 == 1;
      int a = 0, b = 0;
      for (int i = 0; ok && i < len; ++i) {
        const bool item_slot = i % 2 == 0;
        ok = item_slot ? s[i] != ',' : s[i] == ',';
        a += s[i] == 'A', b += s[i] == 'B';
      }
      ok = ok && a == 1 && b <= 1;
      EXPECT_EQ(FsmAccepts(fsm, s), ok) << s;
      accepted += ok;
      int i = 0;
      while (i < len && ++digits[i] == static_cast<int>(alphabet.size())) digits[i++] = 0;
      if (i == len) break;
    }
  }
  EXPECT_GT(accepted, 20);
}

// More once-items than an int32 bitmask holds: the count is an interned set's id (fsm/any_order_sets.h).
TEST(EarleyParser, AnyOrderWithManyItemsInternsTheSets) {
  std::string letters;
  for (char c = 'a'; c <= 'z'; ++c) letters += c;
  for (char c = 'A'; c <= 'N'; ++c) letters += c;  // 40 items, each one byte
  std::string ebnf = "root ::= AnyOrder(";
  for (size_t i = 0; i < letters.size(); ++i) ebnf += std::string(i ? ", " : "") + "\"" + letters[i] + "\"" + (i % 2 ? "?" : "");
  ebnf += ")";
  GrammarFsm fsm = NormalizedFsm(ebnf);
  std::string all = letters;
  std::mt19937 rng(7);
  for (int round = 0; round < 5; ++round) {
    std::shuffle(all.begin(), all.end(), rng);
    EXPECT_TRUE(FsmAccepts(fsm, all)) << all;
    EXPECT_FALSE(FsmAccepts(fsm, all + all[0])) << "an item twice";
    std::string required_only;
    for (char c : all)
      if (letters.find(c) % 2 == 0) required_only += c;
    EXPECT_TRUE(FsmAccepts(fsm, required_only));
    EXPECT_FALSE(FsmAccepts(fsm, required_only.substr(1))) << "a required item missing";
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


// What a parse can still do: the last set's items (origins aside, which compaction renumbers), and
// which of the alphabet's bytes may come next.
std::vector<std::tuple<int32_t, int32_t, int32_t>> LastSetItems(const EarleyParser& p) {
  std::vector<std::tuple<int32_t, int32_t, int32_t>> out;
  const int32_t k = p.NumSets() - 1;
  for (const EarleyItem* it = p.SetBegin(k); it != p.SetEnd(k); ++it) out.emplace_back(it->state, it->count, it->lineage);
  std::sort(out.begin(), out.end());
  return out;
}

std::string NextBytes(EarleyParser& p, const std::string& alphabet) {
  std::string out;
  for (char c : alphabet) {
    if (p.Advance(static_cast<uint8_t>(c))) {
      out += c;
      p.PopSets(1);
    }
  }
  return out;
}

// A compacted parse behaves as the full one: at every byte of random walks through several grammars
// (nesting, ambiguity, nullable rules, Leo chains, counted repetition), a parser that compacts
// everything out of a small rollback window after each byte, and rolls back into that window now and
// then, has the same last set, the same next bytes and the same completion as one that keeps all.
TEST(EarleyParser, CompactedSetsParseAsTheFullOnes) {
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"root ::= v\nv ::= \"[\" (v (\",\" v)*)? \"]\" | \"a\" | \"\\\"\" [a-c]* \"\\\"\"", "[],a\"bc"},
      {"root ::= root root | \"a\" | \"(\" root \")\" | \"\"", "a()"},
      {"root ::= \"a\" root | \"b\" root \"c\" | \"d\"", "abcd"},
      {"root ::= x*\nx ::= y y \"z\"\ny ::= \"q\" | \"\" | \"(\" root \")\"", "qz()"},
      {"root ::= (\"ab\" | \"a\" | \"(\" root \")\"){2,40} | \"c\"", "abc()"},
  };
  for (const auto& [ebnf, alphabet] : cases) {
    GrammarFsm fsm = NormalizedFsm(ebnf);
    for (int window : {0, 1, 3}) {
      std::mt19937 rng(7 + window);
      EarleyParser full(&fsm), compacted(&fsm);
      full.Reset();
      compacted.Reset();
      int32_t whole_from = 0;  // sets from here on are whole in `compacted`
      for (int step = 0; step < 600; ++step) {
        const std::string next = NextBytes(full, alphabet);
        ASSERT_EQ(NextBytes(compacted, alphabet), next) << ebnf << " step " << step;
        ASSERT_EQ(LastSetItems(compacted), LastSetItems(full)) << ebnf << " step " << step;
        ASSERT_EQ(compacted.CanAcceptEnd(), full.CanAcceptEnd()) << ebnf << " step " << step;
        if (next.empty()) break;
        const int32_t back = window > 0 ? 1 + static_cast<int32_t>(rng() % window) : 0;
        if (back > 0 && rng() % 6 == 0 && compacted.NumSets() - 1 - back >= whole_from) {
          // Roll back to a set that is still whole, on both.
          full.PopSets(back);
          compacted.PopSets(back);
          continue;
        }
        const char c = next[rng() % next.size()];
        ASSERT_TRUE(full.Advance(static_cast<uint8_t>(c)));
        ASSERT_TRUE(compacted.Advance(static_cast<uint8_t>(c)));
        const int32_t hi = compacted.NumSets() - 1 - window;
        if (hi >= std::max(1, whole_from)) whole_from = hi - compacted.CompactSets(1, hi);
      }
      EXPECT_LE(compacted.NumSets(), full.NumSets()) << ebnf;
    }
  }
}

// Memory follows the open constructs, not the length: a flat list of 20k items compacts to a few
// sets; a list nested 50 deep keeps one set per open bracket.
TEST(EarleyParser, CompactionKeepsTheSetsOpenConstructsNeed) {
  GrammarFsm fsm = NormalizedFsm("root ::= v\nv ::= \"[\" (v (\",\" v)*)? \"]\" | \"a\"");
  EarleyParser p(&fsm);
  p.Reset();
  std::string text(50, '[');
  for (int i = 0; i < 20000; ++i) text += "a,";
  for (char c : text) ASSERT_TRUE(p.Advance(static_cast<uint8_t>(c)));
  const int32_t before = p.NumSets();
  const size_t bytes_before = p.MemoryBytes();
  const int32_t removed = p.CompactSets(1, p.NumSets() - 1);
  EXPECT_EQ(p.NumSets(), before - removed);
  EXPECT_LE(p.NumSets(), 60);  // set 0, one per open bracket, the last set
  EXPECT_LT(p.MemoryBytes() * 50, bytes_before);
  for (char c : std::string("a") + std::string(50, ']')) ASSERT_TRUE(p.Advance(static_cast<uint8_t>(c)));
  EXPECT_TRUE(p.CanAcceptEnd());
}

}  // namespace
}  // namespace xg
