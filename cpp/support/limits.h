// Resource limits of the engine: the one place where every bound on untrusted input lives, with its
// default and what it costs. Grammars, schemas and regexes arrive with requests inside serving
// processes; each of these bounds turns an input whose shape or size would crash the process (stack
// depth), never return (a loop with no exit on a pathological grammar) or exhaust memory into an
// InputError that names the limit. The defaults admit every grammar of the project's corpora
// (JSONSchemaBench, BFCL tool sets, llama.cpp / Lark grammars) with a wide margin.
//
// Where each applies:
//   max_nesting_depth       parsing (EBNF groups, regex groups); every pass, printer and automaton
//                           builder that walks an expression tree recursively relies on it (their stack
//                           use is linear in it). Checked on every Grammar a CompiledGrammar is built
//                           from, whatever its front end. The bytes a level takes depend on the build
//                           and the thread's stack on the caller, so those passes also check the
//                           stack left (support/stack_guard.h): a grammar within the depth but too
//                           deep for the calling thread's stack raises LimitError, never crashes.
//   max_items_per_set       the Earley sets of a parse (memory): `root ::= root root | "a"` grows one
//   max_work_per_byte       item per byte read, and reading a byte scans the sets its completions
//                           reach back to, so one byte costs O(n) items and O(n^2) work (time). A
//                           byte over either bound raises LimitError with the parser unchanged; a
//                           matcher then keeps the error as a sticky state that every later call
//                           reports until reset() (llguidance's convention).
//   max_automaton_states    compiling: DFA states over all rules of a grammar (a transition row of up
//                           to 1 KiB each), and NFA states of any one rule (a bounded repetition is
//                           unrolled into copies of its body).
//   max_subset_members      compiling: NFA states summed over the subsets the DFA states stand for (4
//                           bytes each, and the time to close them). Nested bounded repetitions of
//                           ambiguous bodies (`((\d{1,20} x){1,20}){0,50}`) keep the state count
//                           moderate while each subset tracks thousands of counters: this bounds
//                           their memory and time. Both raise LimitError; nothing is cached.
//   max_fill_work           everything one mask fill parses (support/fill_budget.h): the mask entries it
//                           builds (a walk of the vocabulary per state), context entries, and the
//                           uncertain tokens it checks against the live parser. Each byte is bounded by
//                           max_work_per_byte, but a first fill may build hundreds of entries; past
//                           this the fill raises LimitError (sticky, as above). Outside a fill (eager
//                           builds at compile time) it bounds each entry build on its own.
//   max_resume_chain        how far a fill climbs through rules that complete at once (a chain of unit
//                           rules `a ::= b`, `b ::= c`, ...): past it the fill stops climbing and
//                           leaves the decision to the live parser, which is exact, just slower.
// Costs: the nesting check is one linear pass over the grammar; the items and work checks one
// comparison per item added and per completion; the resume bound one counter per climb; the fill
// work one subtraction per uncertain token.
#pragma once

#include <cstdint>

namespace xg {

// The process-wide nesting depth (xgrammar's "max recursion depth"): what a Limits with max_nesting_depth ==
// kFollowProcessNestingDepth uses, read when a grammar is parsed or checked. 10000 unless set (xgrammar's
// default); SetProcessNestingDepth takes 1..kMaxProcessNestingDepth (InputError otherwise).
constexpr int32_t kDefaultProcessNestingDepth = 10000;
constexpr int32_t kMaxProcessNestingDepth = 10000;
int32_t ProcessNestingDepth();
void SetProcessNestingDepth(int64_t depth);

struct Limits {
  static constexpr int32_t kFollowProcessNestingDepth = 0;
  // Expression nesting, in tree levels (a group or a repetition operator each adds one). The deepest
  // recursive pass takes ~0.3 KB of stack per level in a release build (10000 levels: ~3 MB) and several KB
  // under sanitizers; past the stack the calling thread has, it raises LimitError (support/stack_guard.h). By
  // default (kFollowProcessNestingDepth) the process-wide setting above; read it through NestingDepth().
  int32_t max_nesting_depth = kFollowProcessNestingDepth;
  // Earley items in one set (16 bytes each, plus the set's share of the dedup table): 16 MiB.
  int64_t max_items_per_set = 1 << 20;
  // Items processed plus items scanned by completions while reading one byte: ~0.1 s of one core.
  // Ordinary grammars stay below 10^4; JSON Schemas of JSONSchemaBench below 10^5.
  int64_t max_work_per_byte = int64_t{1} << 24;
  // Rules climbed through pure tails when a fill resolves a context (see above).
  int32_t max_resume_chain = 64;
  // DFA states of a grammar's automata, and NFA states of one rule's (see above): up to 512 MiB of rows.
  int64_t max_automaton_states = int64_t{1} << 19;
  // NFA states summed over the DFA states' subsets while determinizing (see above): 64 MiB, ~10 s.
  int64_t max_subset_members = int64_t{1} << 24;
  // Parser work of one fill, entry builds included (see above): ~1.5 s of one core.
  int64_t max_fill_work = int64_t{1} << 28;
};

// The nesting depth `limits` allow: its own, or the process-wide one.
inline int32_t NestingDepth(const Limits& limits) {
  return limits.max_nesting_depth != Limits::kFollowProcessNestingDepth ? limits.max_nesting_depth
                                                                          : ProcessNestingDepth();
}

// The limits every engine object uses unless it is given others.
inline const Limits& DefaultLimits() {
  static const Limits limits;
  return limits;
}

}  // namespace xg
