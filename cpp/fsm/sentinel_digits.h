// The digit trie of token sentinels (grammar.h), shared by the automata that read "any token but these":
// ExcludeToken's (fsm/grammar_fsm.cc) and TokenTagDispatch's free text (fsm/tag_dispatch_dfa.cc).
//
// A sentinel is 0xFF, then an id's 7 base-8 digits as bytes kFirstReservedByte + digit. Below a state where some
// digits are read, each next digit either has none of the given ids under it (the rest of any id: a run of such
// digits goes to the shared chain `chain[rest]`, from which any `rest` digits lead on), or all of its ids are given
// (`whole`: the caller decides, e.g. no edge), or some: a new state, recursively. The given ids are sorted,
// disjoint intervals, so the trie costs O(digits x intervals) states however many ids they hold.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "grammar/grammar.h"

namespace xg {

using IdInterval = std::pair<uint32_t, uint32_t>;  // inclusive

// Adds the edges below `state` (the `depth` digits of `prefix` read) for the intervals [first, last) that meet the
// prefix's ids. new_state() -> int32_t; run(state, lo_byte, hi_byte, target); whole(state, byte, first_id, rest):
// every id with that digit lies in the intervals (rest: the digits after it; 0 at the last digit, first_id the id).
template <class NewState, class Run, class Whole>
void SentinelDigitTrie(const IdInterval* first, const IdInterval* last, int32_t state, int64_t prefix, int depth,
                       const std::array<int32_t, kSentinelDigits + 1>& chain, NewState&& new_state, Run&& run,
                       Whole&& whole) {
  const int rest = kSentinelDigits - 1 - depth;  // digits after this one
  const int64_t span = int64_t{1} << (3 * rest);
  int free_from = -1;  // the first of a run of digits with no given id
  auto close_run = [&](int end) {
    if (free_from >= 0) run(state, kFirstReservedByte + free_from, kFirstReservedByte + end - 1, chain[rest]);
    free_from = -1;
  };
  for (int c = 0; c < 8; ++c) {
    const int64_t lo = (prefix * 8 + c) * span, hi = lo + span - 1;
    while (first != last && first->second < lo) ++first;  // intervals wholly before this digit's ids
    const IdInterval* end = first;
    int64_t covered = 0;
    for (; end != last && end->first <= hi; ++end)
      covered += std::min<int64_t>(end->second, hi) - std::max<int64_t>(end->first, lo) + 1;
    if (covered == 0) {
      if (free_from < 0) free_from = c;
      continue;
    }
    close_run(c);
    if (covered == span) {
      whole(state, kFirstReservedByte + c, lo, rest);
      continue;
    }
    const int32_t next = new_state();
    run(state, kFirstReservedByte + c, kFirstReservedByte + c, next);
    SentinelDigitTrie(first, end, next, prefix * 8 + c, depth + 1, chain, new_state, run, whole);
  }
  close_run(8);
}

}  // namespace xg
