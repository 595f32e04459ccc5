// Mask prefetch: build, on host threads, the token-mask entries a batch of matchers will need first,
// while the caller does something else (the prefill forward pass of a jitted decode loop).
//
// Which states: from each matcher's live scannable states, a breadth-first walk over the grammar's
// automata (byte edges, rule starts, nullable rules, and the follow states of rules that can end)
// collects the scannable states reached first. Cost estimate: a state's entry walks every token
// whose first byte it can read, so cost = sum over its byte edges of the number of tokens starting
// with that byte (exact for the first trie level, an upper bound below it). The K most expensive
// states not yet built are built on the thread pool, most expensive first.
//
// Nothing waits for a prefetch: a decode step that needs an entry being built waits on that entry's
// lock only (CompiledGrammar builds each entry once), and entries it does not need never block it.
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <utility>
#include <vector>

#include "matcher/grammar_matcher.h"

namespace xg {

// The (grammar, state) pairs chosen for one prefetch, most expensive first.
struct PrefetchPlan {
  std::vector<std::pair<std::shared_ptr<const CompiledGrammar>, int32_t>> states;
  std::vector<int64_t> costs;  // estimated tokens walked, per state
};

// Chooses up to k states per distinct grammar among the matchers (k <= 0: none).
PrefetchPlan PlanMaskPrefetch(const std::vector<const GrammarMatcher*>& matchers, int k);

// Starts building the plan's entries on a background thread that uses up to max_threads pool
// threads; the future completes when all are built (and rethrows a build error).
std::shared_future<void> StartMaskPrefetch(PrefetchPlan plan, int max_threads);

}  // namespace xg
