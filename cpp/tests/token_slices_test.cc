// Token slices (tokenizer/token_slices.h) and lexical loops (compiler/byte_loop.h): the slice of a
// loop is exactly the tokens it reads whole, equal loops in different grammars share one slice, and
// masks built with a slice equal the brute-force oracle.
#include "tokenizer/token_slices.h"

#include <gtest/gtest.h>

#include <thread>

#include "compiler/byte_loop.h"
#include "compiler/compiled_grammar.h"
#include "compiler/token_mask_cache.h"
#include "frontends/ebnf_parser.h"
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
  ASSERT_EQ(slice.tail_words, (tok->NumSorted() + 63) / 64);
  for (int32_t p = 0; p < tok->NumSorted(); ++p) {
    const std::string_view t = tok->SortedToken(p);
    for (size_t i = 0; i < t.size(); ++i) {
      const bool rest_lower = std::all_of(t.begin() + i, t.end(), [](char c) { return c >= 'a' && c <= 'z'; });
      EXPECT_EQ(slice.Tail(p, static_cast<int32_t>(i)), rest_lower) << t << " from " << i;
    }
    for (int32_t i = static_cast<int32_t>(t.size()); i < TokenSlice::kMaxTailOffset; ++i)
      EXPECT_FALSE(slice.Tail(p, i)) << t << " from " << i;  // no offset at or past the end
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

// Mostly multi-byte UTF-8 characters, whole and split, so that walks enter a string body's loop
// mid-character.
std::shared_ptr<const TokenizerInfo> Utf8Vocab() {
  std::vector<std::string> toks = {"{", "\"", "{\"", "\xc3\xa9", "\xc3\xa9t", "\xc3\xa9t\xc3\xa9", "\xc3",
                                   "\xa9", "\xa9t", "t\xc3", "a", "ab", "b", "x", "\":", "1", "}",
                                   "\"a", "a\"", "\xe6\x97\xa5\xe6\x9c\xac", "\xe6\x97\xa5", "\xe6",
                                   "\x97\xa5", "\xe6\x97", "\xe6\x9c\xac\"", "\xc3\xa9\":"};
  toks.push_back("<eos>");
  const int32_t n = static_cast<int32_t>(toks.size());
  return std::make_shared<TokenizerInfo>(toks, n, std::vector<int32_t>{}, std::vector<int32_t>{n - 1});
}

TEST(TokenSlices, EnteredRowsAreTheTokensReadWholeFromAStateOneByteIn) {
  auto tok = Utf8Vocab();
  auto cg = std::make_shared<const CompiledGrammar>(ParseEbnf(R"(root ::= "\"" [^"\\]* "\"")"), tok);
  const GrammarFsm& fsm = cg->fsm();
  const int32_t head = fsm.Next(fsm.RuleStart(fsm.Root()), '"');
  LoopDfa loop;
  ASSERT_TRUE(ByteLoopOf(fsm, head, &loop));
  TokenSlice slice = ComputeTokenSlice(*tok, loop);
  ASSERT_TRUE(slice.Useful());
  int32_t rows = 0;
  for (int32_t q = 1; q < loop.num_states; ++q) {
    const uint64_t* row = slice.EnteredRow(q);
    bool entered = false;  // q is one byte from the entry
    for (int b = 0; b < 256; ++b) entered |= loop.next[b] == q;
    ASSERT_EQ(row != nullptr, entered) << q;
    if (!row) continue;
    ++rows;
    for (int32_t p = 0; p < tok->NumSorted(); ++p) {
      const std::string_view t = tok->SortedToken(p);
      int32_t st = q;
      size_t j = 1;
      while (j < t.size() && (st = loop.next[st * 256 + static_cast<uint8_t>(t[j])]) >= 0) ++j;
      EXPECT_EQ((row[p >> 6] >> (p & 63)) & 1, t.size() >= 2 && j == t.size() ? 1u : 0u) << t << " from state " << q;
    }
  }
  EXPECT_GE(rows, 2);  // the two- and three-byte lead states at least
}

TEST(TokenSlices, MasksBuiltWithEnteredRowsEqualTheOracle) {
  // After `{"` the first character may not be `a`: a UTF-8 lead byte enters the string body's
  // loop mid-character, and the tokens under it are accepted off the entered rows.
  auto tok = Utf8Vocab();
  auto cg = std::make_shared<const CompiledGrammar>(
      ParseEbnf(R"(root ::= "{\"" ([^"\\a] [^"\\]* | "a" "b"?) "\":" "1" "}")"), tok);
  ExpectMasksEqualOracleAlong(cg, *tok, {"{\"", "\xc3\xa9t", "\xe6\x97\xa5", "\":", "1", "}"});
  ExpectMasksEqualOracleAlong(cg, *tok, {"{", "\"", "\xc3", "\xa9t", "\":", "1", "}"});
  ExpectMasksEqualOracleAlong(cg, *tok, {"{\"", "\xe6", "\x97\xa5", "\xc3\xa9\":", "1", "}"});
}

// The chain of an unrolled bounded repetition (a string with maxLength): where its head is, what
// LoopSlices::ChainOf proves about it, and the masks built with it against the oracle.
struct ChainCase {
  std::shared_ptr<const CompiledGrammar> cg;
  int32_t head;  // the state after the opening bytes
};

ChainCase CompileChain(const std::shared_ptr<const TokenizerInfo>& tok, const std::string& ebnf,
                       const std::string& opening) {
  auto cg = std::make_shared<const CompiledGrammar>(ParseEbnf(ebnf), tok);
  const GrammarFsm& fsm = cg->fsm();
  int32_t s = fsm.RuleStart(fsm.Root());
  for (char c : opening) s = fsm.Next(s, static_cast<uint8_t>(c));
  return {cg, s};
}

TEST(TokenSlices, ChainOfAnUnrolledStringIsProvedToItsBound) {
  auto tok = WordVocab();
  ChainCase c = CompileChain(tok, R"(root ::= "\"" [^"\\]{0,8} "\"")", "\"");
  ASSERT_GE(c.head, 0);
  LoopSlices slices(c.cg->fsm(), *tok);
  int32_t budget = 0;
  bool ends_dead = false;
  const TokenSlice* chain = slices.ChainOf(c.head, &budget, &ends_dead);
  ASSERT_NE(chain, nullptr);
  EXPECT_EQ(budget, 8);
  EXPECT_TRUE(ends_dead);  // after 8 characters only the closing quote: a 9th character dies inside
  // One level in: the same loop, one iteration less.
  const int32_t next = c.cg->fsm().Next(c.head, 'a');
  ASSERT_EQ(slices.ChainOf(next, &budget, &ends_dead), chain);
  EXPECT_EQ(budget, 7);
  // The masks along a string that runs into the bound (5 + 2 + 1 characters, then only the quote).
  ExpectMasksEqualOracleAlong(c.cg, *tok, {"\"", "hello", "ab", "a", "\""});
  ExpectMasksEqualOracleAlong(c.cg, *tok, {"\"", "z", "world", "\""});
}

TEST(TokenSlices, ChainThatMayEndInItsRuleIsWalkedPastItsBudget) {
  // The repetition ends its rule: a token longer than the budget completes `body` and is judged by
  // what follows it (uncertain, then the live parser), so the chain does not end dead.
  auto tok = WordVocab();
  ChainCase c = CompileChain(tok, R"(root ::= "{" body "}"
body ::= [^"\\{}]{0,6})", "{");
  const GrammarFsm& fsm = c.cg->fsm();
  const int32_t body_start = fsm.RuleStart(fsm.RuleEdgesBegin(c.head)->rule);
  LoopSlices slices(fsm, *tok);
  int32_t budget = 0;
  bool ends_dead = true;
  ASSERT_NE(slices.ChainOf(body_start, &budget, &ends_dead), nullptr);
  EXPECT_EQ(budget, 6);
  EXPECT_FALSE(ends_dead);
  ExpectMasksEqualOracleAlong(c.cg, *tok, {"{", "hello", "x", "}"});
  ExpectMasksEqualOracleAlong(c.cg, *tok, {"{", "ab", "}"});
}

TEST(TokenSlices, ChainBudgetStopsWhereTheChainStopsFollowingTheLoop) {
  // The third character may not be `z`: only two iterations of the loop are proved from the head,
  // and tokens of more characters are walked (`abc` lives, `abz` dies).
  auto tok = WordVocab();
  ChainCase c = CompileChain(tok, R"(root ::= "\"" [^"\\]{2} [^"\\z] [^"\\]{0,4} "\"")", "\"");
  LoopSlices slices(c.cg->fsm(), *tok);
  int32_t budget = 0;
  bool ends_dead = true;
  ASSERT_NE(slices.ChainOf(c.head, &budget, &ends_dead), nullptr);
  EXPECT_EQ(budget, 2);
  EXPECT_FALSE(ends_dead);  // the third character may be anything but `z`
  ExpectMasksEqualOracleAlong(c.cg, *tok, {"\"", "ab", "x", "zz", "\""});
  ExpectMasksEqualOracleAlong(c.cg, *tok, {"\"", "abc", "\""});
}

}  // namespace
}  // namespace xg
