// The clear fence at every level of the rule-level cache: a grammar whose compilation began before
// CrossGrammarCache::Clear() keeps building (its automata, structure ids, forward closures and mask
// entries, eagerly or on first use) and none of it is kept or counted after the clear; its masks stay
// exact. Single-threaded and deterministic: "in flight" is a compiled grammar that still has work to
// do when the clear happens, which is exactly what a compilation on another thread is at that moment.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/compiled_grammar.h"
#include "compiler/rule_mask_cache.h"
#include "dense_vocab.h"
#include "frontends/ebnf_parser.h"
#include "matcher/grammar_matcher.h"

namespace xg {
namespace {

const char* kGrammar =
    "root ::= \"{\" ws (pair (\",\" ws pair)*)? \"}\"\n"
    "pair ::= str ws \":\" ws val ws\n"
    "val ::= str | [0-9]+ | \"true\" | root\n"
    "str ::= \"\\\"\" [a-z:{}]* \"\\\"\"\n"
    "ws ::= [ ]*\n";

// Masks along a walk that takes the first allowed token each step, checked against the oracle.
void ExpectExactMasks(const std::shared_ptr<const CompiledGrammar>& cg, const TokenizerInfo& tok) {
  GrammarMatcher m(cg);
  std::vector<uint32_t> mask(tok.MaskWords()), oracle(tok.MaskWords());
  for (int step = 0; step < 12; ++step) {
    m.FillNextTokenBitmask(mask.data(), tok.MaskWords());
    m.FillNextTokenBitmaskBruteForce(oracle.data(), tok.MaskWords());
    ASSERT_EQ(mask, oracle) << "step " << step;
    int32_t next = -1;
    for (int32_t id = 0; id < tok.NumTokens() && next < 0; ++id)
      if ((mask[id >> 5] >> (id & 31)) & 1u) next = id;
    if (next < 0 || !m.AcceptToken(next)) break;
  }
}

TEST(CacheFence, WorkOfACompilationBegunBeforeAClearIsNeitherKeptNorCounted) {
  auto tok = DenseVocab(4, 60, 7);
  auto cache = std::make_shared<CrossGrammarCache>(-1);
  auto in_flight = std::make_shared<const CompiledGrammar>(ParseEbnf(kGrammar), tok, cache);
  EXPECT_GT(cache->SizeBytes(), 0) << "its automata are counted before the clear";
  cache->Clear();
  ASSERT_EQ(cache->SizeBytes(), 0);
  // The compilation goes on: every entry (structure ids, forward closures, keyed and literal entries).
  in_flight->BuildAllMasks(1);
  EXPECT_EQ(cache->entries.SizeBytes(), 0);
  EXPECT_EQ(cache->entries.NumEntries(), 0u);
  EXPECT_EQ(cache->structures.MemoryBytes(), 0);
  EXPECT_EQ(cache->structures.Size(), 0u);
  EXPECT_EQ(cache->automata.MemoryBytes(), 0);
  EXPECT_EQ(cache->SizeBytes(), 0);
  ExpectExactMasks(in_flight, *tok);
  EXPECT_EQ(cache->SizeBytes(), 0) << "masks built on first use after the clear are not kept either";

  // A compilation begun after the clear fills the cache as usual, and its sizes add up.
  auto after = std::make_shared<const CompiledGrammar>(ParseEbnf(kGrammar), tok, cache);
  after->BuildAllMasks(1);
  EXPECT_GT(cache->entries.NumEntries(), 0u);
  EXPECT_GT(cache->structures.Size(), 0u);
  int64_t held = 0;
  for (int64_t s : cache->entries.EntrySizes()) held += s;
  EXPECT_EQ(cache->entries.SizeBytes(), held);
  ExpectExactMasks(after, *tok);
  // A third grammar of the same structure is all hits.
  const int64_t bytes = cache->SizeBytes();
  auto third = std::make_shared<const CompiledGrammar>(ParseEbnf(kGrammar), tok, cache);
  third->BuildAllMasks(1);
  EXPECT_EQ(cache->SizeBytes(), bytes) << "an equal grammar is all hits";
}

TEST(CacheFence, StructureIdsInternedAfterTheirGenerationEndedAreNeverReused) {
  StructureTable table;
  const uint64_t before = table.Generation();
  const int64_t kept = table.Intern(std::string("kept"), before);
  table.Clear();
  const uint64_t now = table.Generation();
  // Work from before the clear: a form the table lacks gets an id of its own, and adds nothing.
  const int64_t late1 = table.Intern(std::string("late"), before);
  const int64_t late2 = table.Intern(std::string("late"), before);
  EXPECT_EQ(table.Size(), 0u);
  EXPECT_EQ(table.MemoryBytes(), 0);
  EXPECT_NE(late1, late2);
  const int64_t fresh = table.Intern(std::string("late"), now);
  EXPECT_EQ(table.Size(), 1u);
  for (int64_t id : {kept, late1, late2}) EXPECT_NE(fresh, id);
  // Now the table holds the form, so work from before the clear finds it (a hit adds nothing).
  EXPECT_EQ(table.Intern(std::string("late"), before), fresh);
  EXPECT_EQ(table.Size(), 1u);
}

}  // namespace
}  // namespace xg
