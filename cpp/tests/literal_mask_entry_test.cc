// BuildLiteralMaskEntry answers a literal's states by narrowing the sorted vocabulary instead of
// walking it. Where it answers, its entry must be the walk's, field for field; where a token reads
// the whole literal and goes on, it must decline (that token's fate depends on what follows).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "compiler/compiled_grammar.h"
#include "compiler/grammar_compiler.h"
#include "compiler/token_mask_cache.h"
#include "dense_vocab.h"
#include "frontends/ebnf_parser.h"

namespace xg {
namespace {

// `toks`, then fillers that no grammar here reads (so the vocabulary is large enough for an
// accepted list to be an entry's smallest form, as in every real vocabulary), then <eos>.
std::shared_ptr<const TokenizerInfo> Vocab(std::vector<std::string> toks) {
  for (int i = 0; i < 4000; ++i) toks.push_back("~" + std::to_string(i));
  toks.push_back("<eos>");
  const int32_t n = static_cast<int32_t>(toks.size());
  return std::make_shared<TokenizerInfo>(toks, n, std::vector<int32_t>{n - 1}, std::vector<int32_t>{n - 1});
}

std::vector<std::string> Tokens(const TokenizerInfo& tok, const std::vector<int32_t>& ids) {
  std::vector<std::string> out;
  for (int32_t id : ids) out.push_back(tok.Token(id));
  return out;
}

TEST(LiteralMaskEntry, EqualsTheWalkOnEveryStateItAnswers) {
  // DenseVocab's strings repeat under several ids and nest shared prefixes deeply.
  const auto dense = DenseVocab(/*max_len=*/6, /*per_length=*/150, /*seed=*/3);
  std::vector<std::string> strings;
  for (int32_t id = 0; id + 1 < dense->NumTokens(); ++id) strings.push_back(dense->Token(id));  // not <eos>
  const auto tok = Vocab(strings);
  const std::vector<std::string> grammars = {
      // Property names before rule references, literals inside alternatives and an optional tail.
      "root ::= \"{\" \"\\\"ab\\\"\" \":\" s ( \",\" \"\\\"bab\\\"\" \":\" s )? \"}\"\n"
      "s ::= \"\\\"\" [^\"\\\\]* \"\\\"\"\n",
      // Literals that end where the rule completes, and ones that run into a branch.
      "root ::= \"a:b{\" | \"a:b}\" | \"ba\" ( \"ab\" | \"b\" ) | \"{{}}\"\n",
      // A literal longer than every token (the range empties before the literal ends).
      "root ::= \"abababababab\" x\nx ::= \"}\" | \"{\" x\n",
  };
  int answered = 0, declined = 0;
  for (const std::string& ebnf : grammars) {
    CompiledGrammar g(ParseEbnf(ebnf), tok);
    const GrammarFsm& fsm = g.fsm();
    for (int32_t s = 0; s < fsm.NumStates(); ++s) {
      if (!fsm.HasBytes(s)) continue;
      std::optional<TokenMaskEntry> literal = BuildLiteralMaskEntry(fsm, *tok, s);
      const TokenMaskEntry walked = WalkTokenMaskEntry(fsm, *tok, s);
      if (!literal) {
        ++declined;
        continue;
      }
      ++answered;
      SCOPED_TRACE(ebnf + " state " + std::to_string(s));
      EXPECT_EQ(static_cast<int>(literal->storage), static_cast<int>(walked.storage));
      EXPECT_EQ(literal->ids, walked.ids);
      EXPECT_EQ(literal->uncertain, walked.uncertain);
      EXPECT_EQ(literal->bits, walked.bits);
      EXPECT_EQ(literal->num_accepted, walked.num_accepted);
      EXPECT_TRUE(literal->uncertain_bits.empty());
    }
  }
  // Both paths are exercised: the comparison above is not vacuous.
  EXPECT_GT(answered, 10);
  EXPECT_GT(declined, 5);
}

TEST(LiteralMaskEntry, AcceptsEveryPrefixOfTheLiteralUnderEveryIdWithItsBytes) {
  // Two ids spell "a" (a byte-fallback token and a normal one, say).
  const auto tok = Vocab({"a", "a", "ab", "abc", "b", "ba", "abd"});
  CompiledGrammar g(ParseEbnf("root ::= \"abcd\"\n"), tok);
  std::optional<TokenMaskEntry> e = BuildLiteralMaskEntry(g.fsm(), *tok, g.fsm().RuleStart(g.fsm().Root()));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(Tokens(*tok, e->ids), (std::vector<std::string>{"a", "a", "ab", "abc"}));
  EXPECT_EQ(e->num_accepted, 4);
  EXPECT_TRUE(e->uncertain.empty());
}

TEST(LiteralMaskEntry, DeclinesWhenATokenReadsPastTheLiteral) {
  // "ab" then a rule reference: the token "abx" leaves the literal into whatever follows.
  const std::string ebnf = "root ::= \"ab\" x\nx ::= \"x\" | \"y\"\n";
  {
    const auto tok = Vocab({"a", "ab", "abx", "x"});
    CompiledGrammar g(ParseEbnf(ebnf), tok);
    EXPECT_FALSE(BuildLiteralMaskEntry(g.fsm(), *tok, g.fsm().RuleStart(g.fsm().Root())).has_value());
  }
  {
    const auto tok = Vocab({"a", "ab", "x"});  // nothing reads past "ab"
    CompiledGrammar g(ParseEbnf(ebnf), tok);
    std::optional<TokenMaskEntry> e = BuildLiteralMaskEntry(g.fsm(), *tok, g.fsm().RuleStart(g.fsm().Root()));
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(Tokens(*tok, e->ids), (std::vector<std::string>{"a", "ab"}));
  }
}

TEST(LiteralMaskEntry, DeclinesStatesThatAreNotALiteral) {
  const auto tok = Vocab({"a", "b", "ab"});
  // A branch on two bytes, and a final state that reads on.
  CompiledGrammar g(ParseEbnf("root ::= ( \"a\" | \"b\" ) \"b\"*\n"), tok);
  const GrammarFsm& fsm = g.fsm();
  int checked = 0;
  for (int32_t s = 0; s < fsm.NumStates(); ++s) {
    if (!fsm.HasBytes(s)) continue;
    ++checked;
    EXPECT_FALSE(BuildLiteralMaskEntry(fsm, *tok, s).has_value()) << "state " << s;
  }
  EXPECT_GE(checked, 2);
}

TEST(LiteralMaskEntry, IsSharedAcrossGrammarsByTheBytesItReadAndCounted) {
  const auto tok = Vocab({"\"", "\"c", "\"ci", "ty", "\":", ":", "{", "}", "1", "\"a\""});
  GrammarCompiler compiler(tok, /*max_threads=*/1, /*cache_enabled=*/true, /*cache_limit_bytes=*/-1);
  // The same name before different values, in different rules of different grammars.
  auto a = compiler.CompileEbnf("root ::= \"{\" \"\\\"city\\\":\" \"1\" \"}\"\n", "root", true);
  const GrammarCompiler::CacheInfo after_a = compiler.GetCacheInfo();
  auto b = compiler.CompileEbnf("root ::= \"{\" x \"}\"\nx ::= \"\\\"city\\\":\" \"\\\"a\\\"\"\n", "root", true);
  const GrammarCompiler::CacheInfo after_b = compiler.GetCacheInfo();
  // The states inside `"city":` hold the same entry objects in both grammars: built once.
  int shared = 0;
  for (int32_t sa = 0; sa < a->fsm().NumStates(); ++sa) {
    const TokenMaskEntry* ea = a->BuiltEntry(sa);
    if (!ea) continue;
    for (int32_t sb = 0; sb < b->fsm().NumStates(); ++sb) shared += b->BuiltEntry(sb) == ea;
  }
  EXPECT_GE(shared, 4);  // the states inside "city": reached from either grammar
  EXPECT_GT(after_b.rule_hits, after_a.rule_hits);
  // Every entry held is counted once: the count is the sum of the held entries' sizes.
  int64_t sum = 0;
  for (int64_t n : after_b.rule_entry_sizes) sum += n;
  EXPECT_EQ(sum, after_b.rule_bytes);
  EXPECT_GT(after_b.rule_bytes, 0);
}

}  // namespace
}  // namespace xg
