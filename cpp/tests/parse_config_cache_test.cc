// The mask walks take their ParseConfigCache (and tail memo) from a per-thread pool, reset for each
// walk. An entry must not depend on what the thread walked before: other grammars, other states, or
// a walk large enough that the pooled cache is trimmed when it comes back.
#include "compiler/parse_config_cache.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "compiler/compiled_grammar.h"
#include "compiler/token_mask_cache.h"
#include "dense_vocab.h"
#include "frontends/ebnf_parser.h"

namespace xg {
namespace {

// Many distinct literals: a walk from the start meets one configuration per prefix (hundreds), more
// than a pooled cache keeps, so it is trimmed when the walk's lease ends.
std::string ManyLiterals() {
  const std::string alphabet = "ab:{}";
  std::mt19937 rng(5);
  std::string ebnf = "root ::= (";
  for (int i = 0; i < 300; ++i) {
    ebnf += i ? " | \"" : " \"";
    for (int j = 0; j < 5; ++j) ebnf.push_back(alphabet[rng() % alphabet.size()]);
    ebnf += "\"";
  }
  return ebnf + " ) s\ns ::= \"\\\"\" [^\"\\\\]* \"\\\"\"\n";
}

struct EntryView {
  int storage;
  std::vector<int32_t> ids, uncertain;
  std::vector<uint32_t> bits;
  int32_t num_accepted;
  bool operator==(const EntryView& o) const {
    return storage == o.storage && ids == o.ids && uncertain == o.uncertain && bits == o.bits &&
           num_accepted == o.num_accepted;
  }
};

std::vector<EntryView> EntriesOf(const std::string& ebnf, const std::shared_ptr<const TokenizerInfo>& tok) {
  CompiledGrammar g(ParseEbnf(ebnf), tok);
  std::vector<EntryView> out;
  for (int32_t s = 0; s < g.fsm().NumStates(); ++s) {
    if (!g.fsm().HasBytes(s)) continue;
    TokenMaskEntry e = BuildTokenMaskEntry(g.fsm(), *tok, s);
    out.push_back({static_cast<int>(e.storage), e.ids, e.uncertain, e.bits, e.num_accepted});
  }
  return out;
}

TEST(ParseConfigCacheLease, EntriesDoNotDependOnWhatTheThreadWalkedBefore) {
  const auto tok = DenseVocab(/*max_len=*/6, /*per_length=*/150, /*seed=*/11);
  const std::string json_like =
      "root ::= \"{\" ( \"\\\"a\\\"\" \":\" s ( \",\" \"\\\"b\\\"\" \":\" s )* )? \"}\"\n"
      "s ::= \"\\\"\" [^\"\\\\]* \"\\\"\"\n";  // a wide loop: the walk takes token slices
  const std::string literals = ManyLiterals();
  std::vector<EntryView> fresh_json, fresh_literals, after_json, after_literals;
  std::thread([&] { fresh_json = EntriesOf(json_like, tok); }).join();  // a new thread: an empty pool
  std::thread([&] { fresh_literals = EntriesOf(literals, tok); }).join();
  std::thread([&] {
    EntriesOf(literals, tok);  // grows the pooled cache past what it keeps (trimmed on return)
    after_json = EntriesOf(json_like, tok);
    after_literals = EntriesOf(literals, tok);
    after_json = EntriesOf(json_like, tok);
  }).join();
  ASSERT_FALSE(fresh_json.empty());
  EXPECT_TRUE(fresh_json == after_json);
  EXPECT_TRUE(fresh_literals == after_literals);
}

TEST(ParseConfigCacheLease, NestedLeasesGetTheirOwnCaches) {
  const auto tok = DenseVocab(/*max_len=*/6, /*per_length=*/150, /*seed=*/11);
  CompiledGrammar g(ParseEbnf("root ::= \"ab\" \":\" \"{}\"\n"), tok);
  ParseConfigCacheLease outer(g.fsm(), 0, nullptr);
  const int32_t after_a = outer->Step(outer->Initial(), 'a');
  ASSERT_NE(after_a, ParseConfigCache::kDead);
  {
    ParseConfigCacheLease inner(g.fsm(), 0, nullptr);
    EXPECT_NE(&*inner, &*outer);
    EXPECT_EQ(inner->Step(inner->Initial(), ':'), ParseConfigCache::kDead);
  }
  // The outer walk's configurations are intact after the inner lease ended.
  EXPECT_EQ(outer->Size(), 2u);
  EXPECT_NE(outer->Step(after_a, 'b'), ParseConfigCache::kDead);
}

}  // namespace
}  // namespace xg
