// Normalising passes over the grammar IR, run by the compiler before FSMs are built:
//   1. DropUnreachableRules: rules the root cannot reach are removed (indices compacted).
//   1b. LiftAnyOrder: every AnyOrder becomes the whole body of a rule, and its items and separator
//      distinct rule references (grammar.h); an item or separator that matches "" is an InputError.
//   1c. LiftTagDispatch: every TagDispatch becomes the whole body of a rule (`<rule>_tag_dispatch<k>`), so the
//      FSM builder can give it its Aho-Corasick automaton; one in a lookahead is an InputError.
//   1d. WrapBudgetedRoot: a root with a token budget (Rule::max_tokens) becomes `<root>_budgeted`, the one
//      reference of a new root rule of the root's name, so that when the budget ends it the parse goes on in the
//      (completed) new root: the output must end.
//   2. InlineSmallRules: a rule with a small body and no lookahead is copied into each reference,
//      except "loop breakers" (a set of rules that cuts every reference cycle), so recursion stays. Fewer rules means fewer Earley predictions and completions at run time; the size cap
//      keeps the per-rule FSMs small. Rules that repeat a wide class (kMinWideClassCodePoints: JSON
//      string bodies, free text) are not inlined either, so their states, the costliest to build
//      masks for, exist once per grammar and are shared across grammars (rule_mask_cache.h).
//   2b. CompressRepetitions (runs before 2): a repetition `x{m,n}` with a bound above
//      `unroll_limit` over a non-nullable x becomes a reference to a counted rule `R ::= X{m,n}`
//      (Rule::counted; X is x's rule, lifted into one if x is not a reference), so its automaton is one
//      state whatever the bound and the parser keeps the count. Small bounds stay unrolled: their
//      states get exact cached masks at no count bookkeeping. A nullable x of the form y? or
//      (y | "" | ...) with y not nullable is first rewritten: x{m,n} is y{0,n}.
//   3. FuseBytes: nested sequences/choices are flattened, adjacent literals in a sequence are joined,
//      and single-code-point classes become literals.
// Nullable and productive analysis run on the FSMs (fsm/grammar_fsm.h), where they are exact.
#pragma once

#include "grammar/grammar.h"

namespace xg {

// Repetitions whose bounds are all at most this are unrolled; larger ones are counted.
constexpr int32_t kRepeatUnrollLimit = 32;
// A character class of at least this many code points is "wide" (a negated class always is); see
// InlineSmallRules. Matches the byte width at which the mask cache keeps token slices
// (kMinWideLoopBytes in tokenizer/token_slices.h).
constexpr int64_t kMinWideClassCodePoints = 96;

void DropUnreachableRules(Grammar* g);
void LiftAnyOrder(Grammar* g);
void LiftTagDispatch(Grammar* g);
void WrapBudgetedRoot(Grammar* g);
void InlineSmallRules(Grammar* g, int max_inline_nodes = 48);
void FuseBytes(Grammar* g);
void CompressRepetitions(Grammar* g, int32_t unroll_limit = kRepeatUnrollLimit);
// All of the above, in order; the result prints and parses back to itself.
void NormalizeGrammar(Grammar* g);

}  // namespace xg
