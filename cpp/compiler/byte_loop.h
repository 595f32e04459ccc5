// The lexical loop of a grammar state, for the token-slice cache (tokenizer/token_slices.h).
//
// The loop of state s is the strongly connected component of s in the graph of its rule's byte
// edges (rule edges and completions are left out: a token that follows byte edges only keeps s's
// item alive whatever else the parser does). It is found by a bounded forward search from s and a
// backward search inside what was found, then renumbered breadth-first from s, bytes in ascending
// order, so equal loops in different grammars get equal LoopDfas and share one slice.
#pragma once

#include <cstdint>
#include <vector>

#include "fsm/grammar_fsm.h"
#include "tokenizer/token_slices.h"

namespace xg {

// Fills *loop with s's loop and returns true, or returns false when s is on no byte cycle, or the
// search passes kMaxForwardStates states or the loop has more than kMaxLoopStates.
// With `fold` >= 0, the search treats state `fold` as s itself (it is not expanded): the loop is then
// one step of a chain, the states on byte paths from s to fold, which an unrolled repetition repeats
// (LoopSlices::ChainOf). Folding is only a way to name a candidate loop; nothing is claimed about
// the chain until its states are checked against the loop.
constexpr int32_t kMaxForwardStates = 512;
constexpr int32_t kMaxLoopStates = 64;
// With `members`, it also gets the loop's automaton states in local order (members[0] = s).
bool ByteLoopOf(const GrammarFsm& fsm, int32_t s, LoopDfa* loop, int32_t fold = -1,
                std::vector<int32_t>* members = nullptr);

}  // namespace xg
