// Token slices (tokenizer/token_slices.h) and lexical loops (compiler/byte_loop.h): the slice of a
// loop is exactly the tokens it reads whole, equal loops in different grammars share one slice, and
// masks built with a slice equal the brute-force oracle.
#include "tokenizer/token_slices.h"

#include <gtest/gtest.h>

#include <thread>

#include "compiler/byte_loop.h"
#include "grammar/ebnf_parser.h"
#include "grammar/passes.h"
#include "matcher/grammar_matcher.h"
#include "tokenizer/tokenizer_info.h"

namespace xg {
namespace {

// Mostly lowercase words, so a string body's loop reads most of the vocabulary whole (a useful slice).
std::shared_ptr<const TokenizerInfo> WordVocab() {
  std::vector<std::string> toks = {"a", "b", "ab", "abc", "ba", "hello", "world", " w", "x", "y", "z", "zz",
                                   "\"", "\"a", "a\"", "\",", "\"}", "{", "}", ":", ",", "\\", "\\n", "\\\"",
                                   "\xc3\xa9", "\xc3", "\xa9", "x\"", "zz\":", "y\\n"};
  toks.push_back("<eos>");
  const int32_t n = static_cast<int32_t>(toks.size());
  return std::make_shared<TokenizerInfo>(toks, n, std::vector<int32_t>{}, std::vector<int32_t>{n - 1});
}

LoopDfa LowercaseLoop() {
  LoopDfa loop;
  loop.num_states = 1;
  loop.next.assign(256, -1);
  for (int b = 'a'; b <= 'z'; ++b) loop.next[b] = 0;
  return loop;
}

TEST(TokenSlices, SliceIsExactlyTheTokensTheLoopReadsWhole) {
  auto tok = WordVocab();
  TokenSlice slice = ComputeTokenSlice(*tok, LowercaseLoop());
  ASSERT_TRUE(slice.Useful());
  std::vector<uint8_t> in_complement(tok->NumSorted(), 0);
  for (size_t i = 0; i < slice.complement.size(); ++i) {
    if (i > 0) EXPECT_LT(slice.complement[i - 1], slice.complement[i]);
    in_complement[slice.complement[i]] = 1;
  }
  int32_t accepted = 0;
  for (int32_t p = 0; p < tok->NumSorted(); ++p) {
    const std::string_view t = tok->SortedToken(p);
    const bool lower = std::all_of(t.begin(), t.end(), [](char c) { return c >= 'a' && c <= 'z'; });
    const int32_t id = tok->SortedId(p);
    const bool bit = (slice.accepted_bits[id >> 5] >> (id & 31)) & 1;
    EXPECT_EQ(bit, lower) << t;
    EXPECT_EQ(in_complement[p], !lower) << t;  // the complement is every other normal token
    accepted += lower;
  }
  EXPECT_EQ(slice.num_accepted, accepted);
}

TEST(TokenSlices, TailsAreTheOffsetsFromWhichTheRestIsReadWhole) {
  auto tok = WordVocab();
  TokenSlice slice = ComputeTokenSlice(*tok, LowercaseLoop());
  ASSERT_EQ(slice.tails.size(), static_cast<size_t>(tok->NumSorted()));
  for (int32_t p = 0; p < tok->NumSorted(); ++p) {
    const std::string_view t = tok->SortedToken(p);
    for (size_t i = 0; i < t.size(); ++i) {
      const bool rest_lower = std::all_of(t.begin() + i, t.end(), [](char c) { return c >= 'a' && c <= 'z'; });
      EXPECT_EQ((slice.tails[p] >> i) & 1, rest_lower ? 1u : 0u) << t << " from " << i;
    }
    EXPECT_EQ(slice.tails[p] >> t.size(), 0u) << t;  // no offset at or past the end
  }
}

TEST(TokenSlices, NarrowLoopKeepsOnlyItsCount) {
  auto tok = WordVocab();
  LoopDfa loop;
  loop.num_states = 1;
  loop.next.assign(256, -1);
  loop.next['z'] = 0;  // reads "z" and "zz" only: under a quarter of the vocabulary
  TokenSlice slice = ComputeTokenSlice(*tok, loop);
  EXPECT_EQ(slice.num_accepted, 2);
  EXPECT_FALSE(slice.Useful());
  EXPECT_TRUE(slice.complement.empty());
}

// The scannable state of `fsm` inside rule `rule` that loops on byte `b`.
int32_t LoopingState(const GrammarFsm& fsm, const std::string& rule, uint8_t b) {
  for (int32_t s = 0; s < fsm.NumStates(); ++s)
    if (fsm.RuleName(fsm.RuleOf(s)) == rule && fsm.Next(s, b) == s) return s;
  return -1;
}

GrammarFsm Fsm(const std::string& ebnf) {
  Grammar g = ParseEbnf(ebnf);
  NormalizeGrammar(&g);
  return GrammarFsm::Build(g);
}

TEST(ByteLoop, EqualLoopsInDifferentGrammarsHaveEqualKeys) {
  // The same string body inlined after different keys, in different rule shapes.
  GrammarFsm f1 = Fsm(R"(root ::= "{\"k\":\"" [^"\\]* "\"}")");
  GrammarFsm f2 = Fsm(R"(root ::= "[" "1,"* "\"" [^"\\]* "\"]")");
  const int32_t s1 = LoopingState(f1, "root", 'q'), s2 = LoopingState(f2, "root", 'q');
  ASSERT_GE(s1, 0);
  ASSERT_GE(s2, 0);
  LoopDfa l1, l2;
  ASSERT_TRUE(ByteLoopOf(f1, s1, &l1));
  ASSERT_TRUE(ByteLoopOf(f2, s2, &l2));
  EXPECT_EQ(l1.Key(), l2.Key());
  EXPECT_EQ(l1.next['"'], -1);  // the closing quote leaves the loop
  EXPECT_EQ(l1.next['q'], 0);
  EXPECT_FALSE(ByteLoopOf(f1, f1.RuleStart(f1.Root()), &l1));  // on no byte cycle
  // A list whose loop runs through the string makes the string body part of a larger loop (the
  // closing quote stays inside it): a different slice, still exact.
  GrammarFsm f3 = Fsm(R"(root ::= "[" ("\"" [^"\\]* "\"" ",")* "1]")");
  LoopDfa l3;
  ASSERT_TRUE(ByteLoopOf(f3, LoopingState(f3, "root", 'q'), &l3));
  EXPECT_NE(l3.Key(), l1.Key());
  EXPECT_GE(l3.next['"'], 0);
}

TEST(TokenSliceCache, ConcurrentRequestsShareOneSlice) {
  auto tok = WordVocab();
  std::shared_ptr<const TokenSlice> a, b;
  std::thread t1([&] { a = tok->Slices().Get(*tok, LowercaseLoop()); });
  std::thread t2([&] { b = tok->Slices().Get(*tok, LowercaseLoop()); });
  t1.join();
  t2.join();
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(tok->Slices().NumSlices(), 1u);
  EXPECT_GT(tok->Slices().MemoryBytes(), 0u);
}

// Walks `text` (token strings of `tok`) through a matcher of `cg`, comparing the mask with the
// brute-force oracle before every token.
void ExpectMasksEqualOracleAlong(const std::shared_ptr<const CompiledGrammar>& cg, const TokenizerInfo& tok,
                                 const std::vector<std::string>& text) {
  GrammarMatcher m(cg);
  std::vector<uint32_t> mask(tok.MaskWords()), oracle(tok.MaskWords());
  for (const std::string& piece : text) {
    m.FillNextTokenBitmask(mask.data(), tok.MaskWords());
    m.FillNextTokenBitmaskBruteForce(oracle.data(), tok.MaskWords());
    ASSERT_EQ(mask, oracle) << "before " << piece;
    int32_t id = -1;
    for (int32_t i = 0; i < tok.NumTokens(); ++i)
      if (tok.Token(i) == piece) id = i;
    ASSERT_GE(id, 0) << piece;
    ASSERT_TRUE(m.AcceptToken(id)) << piece;
  }
}

TEST(TokenSlices, MasksBuiltWithSlicesEqualTheOracle) {
  auto tok = WordVocab();
  auto cg = std::make_shared<const CompiledGrammar>(
      ParseEbnf(R"(root ::= "{" ("\"" [^"\\]* "\"" ":" "\"" ([^"\\] | "\\" ["n])* "\"")? "}")"), tok);
  // {"ab": "hello world\n"} token by token.
  ExpectMasksEqualOracleAlong(cg, *tok, {"{", "\"a", "b", "\"", ":", "\"", "hello", " w", "\\n", "\"}"});
  EXPECT_GT(tok->Slices().NumSlices(), 0u);  // the string bodies went through the slice cache
}

TEST(TokenSlices, MasksBuiltWithTailsEqualTheOracle) {
  // After `{"` the state is no loop itself, but most first bytes lead into the string-body loop:
  // the walk accepts those subtrees by their tails and parses only the rest (the vocabulary's
  // `x"` and `zz":` are under such subtrees but leave the loop, so they must be parsed).
  auto tok = WordVocab();
  auto cg = std::make_shared<const CompiledGrammar>(
      ParseEbnf(R"(root ::= "{\"" ([^"\\ab] [^"\\]* | "a" "b"? | "b" "a"+) "\":" ("x" | "\"" [^"]* "\"") "}")"),
      tok);
  ExpectMasksEqualOracleAlong(cg, *tok, {"{", "\"", "hello", " w", "\"", ":", "\"a", "\"}"});
  ExpectMasksEqualOracleAlong(cg, *tok, {"{", "\"a", "b", "\"", ":", "x", "}"});
  ExpectMasksEqualOracleAlong(cg, *tok, {"{", "\"", "ba", "a\"", ":", "x", "}"});
}

}  // namespace
}  // namespace xg
