// Rule automata shared across grammars (fsm/rule_dfa_cache.h) and the structure table's cached
// forward-closure ids: a cached build must equal a cold one, equal bodies must share one automaton
// whatever rules they name, and nothing computed before a Clear() may be kept or counted after it.
// Also the minimisation those automata go through (incremental partition refinement).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "compiler/rule_mask_cache.h"
#include "fsm/grammar_fsm.h"
#include "fsm/rule_dfa_cache.h"
#include "frontends/ebnf_parser.h"
#include "grammar/passes.h"
#include "support/limits.h"

namespace xg {
namespace {

Grammar Normalized(const std::string& ebnf) {
  Grammar g = ParseEbnf(ebnf);
  NormalizeGrammar(&g);
  return g;
}

// Every observable part of two automata, state by state.
void ExpectSameFsm(const GrammarFsm& a, const GrammarFsm& b) {
  ASSERT_EQ(a.NumStates(), b.NumStates());
  ASSERT_EQ(a.NumRules(), b.NumRules());
  for (int32_t r = 0; r < a.NumRules(); ++r) {
    EXPECT_EQ(a.RuleStart(r), b.RuleStart(r)) << "rule " << a.RuleName(r);
    EXPECT_EQ(a.RuleNullable(r), b.RuleNullable(r)) << "rule " << a.RuleName(r);
  }
  for (int32_t s = 0; s < a.NumStates(); ++s) {
    EXPECT_EQ(a.RuleOf(s), b.RuleOf(s)) << "state " << s;
    EXPECT_EQ(a.IsFinal(s), b.IsFinal(s)) << "state " << s;
    for (int byte = 0; byte < 256; ++byte) ASSERT_EQ(a.Next(s, byte), b.Next(s, byte)) << "state " << s;
    ASSERT_EQ(a.RuleEdgesEnd(s) - a.RuleEdgesBegin(s), b.RuleEdgesEnd(s) - b.RuleEdgesBegin(s)) << "state " << s;
    for (const RuleEdge *e = a.RuleEdgesBegin(s), *f = b.RuleEdgesBegin(s); e != a.RuleEdgesEnd(s); ++e, ++f) {
      EXPECT_EQ(e->rule, f->rule) << "state " << s;
      EXPECT_EQ(e->target, f->target) << "state " << s;
    }
  }
}

int32_t RuleStates(const GrammarFsm& fsm, const std::string& rule) {
  int32_t n = 0;
  for (int32_t s = 0; s < fsm.NumStates(); ++s) n += fsm.RuleName(fsm.RuleOf(s)) == rule;
  return n;
}

constexpr const char* kToolGrammar = R"(
root ::= "{" ws "\"name\"" ws ":" ws name ws "," ws "\"args\"" ws ":" ws args ws "}"
name ::= "\"get_weather\"" | "\"get_time\""
args ::= "{" ws ( "\"city\"" ws ":" ws str ( ws "," ws "\"days\"" ws ":" ws int )? )? ws "}"
str ::= "\"" ( [^"\\] | "\\" ["\\/bfnrt] )* "\""
int ::= "-"? ( "0" | [1-9] [0-9]* )
ws ::= [ \t\n]*
)";

TEST(RuleDfaCache, CachedBuildEqualsColdBuild) {
  const Grammar g = Normalized(kToolGrammar);
  const GrammarFsm cold = GrammarFsm::Build(g);
  RuleDfaCache cache;
  const GrammarFsm filling = GrammarFsm::Build(g, GrammarFsm::kDefaultMaxStates, &cache);
  const size_t held = cache.Size();
  EXPECT_GT(held, 0u);
  const int64_t bytes = cache.MemoryBytes();
  EXPECT_GT(bytes, 0);
  const GrammarFsm hitting = GrammarFsm::Build(g, GrammarFsm::kDefaultMaxStates, &cache);
  EXPECT_EQ(cache.Size(), held);  // every body was a hit
  EXPECT_EQ(cache.MemoryBytes(), bytes);
  ExpectSameFsm(cold, filling);
  ExpectSameFsm(cold, hitting);
}

TEST(RuleDfaCache, EqualBodiesNamingOtherRulesShareOneAutomaton) {
  // The same bodies over differently named (and differently numbered) rules: every automaton is a
  // hit, and the result equals this grammar's own cold build.
  RuleDfaCache cache;
  GrammarFsm::Build(Normalized(kToolGrammar), GrammarFsm::kDefaultMaxStates, &cache);
  const size_t held = cache.Size();
  // kToolGrammar with its rules renamed and defined in another order.
  const std::string renamed = R"(
root ::= "{" w_space "\"name\"" w_space ":" w_space tool_name w_space "," w_space "\"args\"" w_space ":" w_space zz_arguments w_space "}"
a_string ::= "\"" ( [^"\\] | "\\" ["\\/bfnrt] )* "\""
w_space ::= [ \t\n]*
an_int ::= "-"? ( "0" | [1-9] [0-9]* )
zz_arguments ::= "{" w_space ( "\"city\"" w_space ":" w_space a_string ( w_space "," w_space "\"days\"" w_space ":" w_space an_int )? )? w_space "}"
tool_name ::= "\"get_weather\"" | "\"get_time\""
)";
  const Grammar g = Normalized(renamed);
  const GrammarFsm warm = GrammarFsm::Build(g, GrammarFsm::kDefaultMaxStates, &cache);
  EXPECT_EQ(cache.Size(), held);
  ExpectSameFsm(GrammarFsm::Build(g), warm);
}

// Prebuilt automata (built once per process for the bodies every grammar of a front end holds) are found by body,
// whatever the rule is named, give the FSM a cold build gives, and are charged like cache hits.
TEST(PrebuiltRuleDfas, ABuildWithPrebuiltAutomataEqualsAColdBuild) {
  RuleDfaCache built;
  GrammarFsm::Build(Normalized(R"(root ::= "[" str "]"
str ::= "\"" ( [^"\\] | "\\" ["\\/bfnrt] )* "\"")"),
                    GrammarFsm::kDefaultMaxStates, &built);
  const PrebuiltRuleDfas prebuilt(built);
  const Grammar g = Normalized(kToolGrammar);  // its `str` has the same body
  ExpectSameFsm(GrammarFsm::Build(g), GrammarFsm::Build(g, GrammarFsm::kDefaultMaxStates, nullptr, std::nullopt,
                                                         GrammarFsm::kDefaultMaxSubsetMembers, &prebuilt));
  RuleDfaCache cache;  // with a cache too (looked up first, then the prebuilt automata)
  ExpectSameFsm(GrammarFsm::Build(g), GrammarFsm::Build(g, GrammarFsm::kDefaultMaxStates, &cache, std::nullopt,
                                                         GrammarFsm::kDefaultMaxSubsetMembers, &prebuilt));
}

TEST(PrebuiltRuleDfas, AreLookedUpAndChargedAgainstTheStateBudget) {
  const Grammar g = Normalized(kToolGrammar);
  RuleDfaCache built;
  GrammarFsm::Build(g, GrammarFsm::kDefaultMaxStates, &built);
  // The same automata, each claiming to have cost more states than the budget: a build that uses one fails.
  RuleDfaCache costly;
  for (auto& [key, dfa] : built.Entries()) {
    auto copy = std::make_shared<CachedRuleDfa>(*dfa);
    copy->budget_cost = GrammarFsm::kDefaultMaxStates;
    costly.Insert(key, std::move(copy), costly.Generation());
  }
  const PrebuiltRuleDfas prebuilt(costly);
  EXPECT_NO_THROW(GrammarFsm::Build(g));
  EXPECT_THROW(GrammarFsm::Build(g, GrammarFsm::kDefaultMaxStates, nullptr, std::nullopt,
                                 GrammarFsm::kDefaultMaxSubsetMembers, &prebuilt),
               LimitError);
}

TEST(RuleDfaCache, AutomatonBuiltBeforeAClearIsNeitherKeptNorCounted) {
  RuleDfaCache cache;
  auto dfa = std::make_shared<CachedRuleDfa>();
  dfa->dfa.final = {1};
  dfa->dfa.CloseState();
  const uint64_t before = cache.Generation();
  cache.Insert("kept", dfa, before);
  EXPECT_EQ(cache.Size(), 1u);
  EXPECT_GT(cache.MemoryBytes(), 0);
  cache.Clear();
  EXPECT_EQ(cache.Size(), 0u);
  EXPECT_EQ(cache.MemoryBytes(), 0);
  cache.Insert("late", dfa, before);  // started before the clear, finished after it
  EXPECT_EQ(cache.Find("late"), nullptr);
  EXPECT_EQ(cache.Size(), 0u);
  EXPECT_EQ(cache.MemoryBytes(), 0);
  cache.Insert("late", dfa, cache.Generation());  // the same key computed after the clear counts once
  cache.Insert("late", dfa, cache.Generation());
  EXPECT_EQ(cache.Size(), 1u);
  EXPECT_NE(cache.Find("late"), nullptr);
}

TEST(StructureTable, ForwardIdsComputedBeforeAClearAreNeitherKeptNorCounted) {
  StructureTable table;
  auto ids = std::make_shared<const std::vector<int64_t>>(std::vector<int64_t>{1, 2, 3});
  const uint64_t before = table.Generation();
  table.AddForwardIds(7, ids, before);
  EXPECT_NE(table.FindForwardIds(7), nullptr);
  EXPECT_GT(table.MemoryBytes(), 0);
  table.Clear();
  EXPECT_EQ(table.MemoryBytes(), 0);
  table.AddForwardIds(8, ids, before);
  EXPECT_EQ(table.FindForwardIds(8), nullptr);
  EXPECT_EQ(table.MemoryBytes(), 0);
}

TEST(Minimize, MergesTheUnrolledFirstPassOfALoop) {
  // Subset construction reaches "after the first 1" and "after a later 1" by different paths; they
  // have the same future, so the minimal automaton has 5 states: [, 1, ",", 1 again, ].
  const GrammarFsm fsm = GrammarFsm::Build(Normalized(R"(root ::= "[" ( "1" ( "," "1" )* )? "]")"));
  EXPECT_EQ(RuleStates(fsm, "root"), 5);
}

TEST(Minimize, MergesSharedSuffixesOfLongKeys) {
  // Two keys with a long common suffix share its states (finding that took plain Moore one round of
  // the whole automaton per character of the suffix).
  const GrammarFsm fsm = GrammarFsm::Build(Normalized(R"(root ::= ("\"alpha_location\"" | "\"gamma_location\"") ":" [0-9]+)"));
  // Distinct prefixes: nothing, ", "a, "al, "alp, "g, "ga, "gam (8). "alph and "gamm have the same
  // future, so from there one chain: before each byte of `a_location":` (13), then the digit loop (1).
  EXPECT_EQ(RuleStates(fsm, "root"), 22);
}

}  // namespace
}  // namespace xg
