// Mask prefetch: a bounded breadth-first walk over the automata, a first-byte cost model, and an
// asynchronous ParallelFor over the chosen states (see mask_prefetch.h).
#include "matcher/mask_prefetch.h"

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <thread>
#include <unordered_set>

#include "support/thread_pool.h"

namespace xg {
namespace {

// Number of normal tokens starting with each byte (runs of the byte-sorted vocabulary).
std::array<int64_t, 256> FirstByteCounts(const TokenizerInfo& tok) {
  std::array<int64_t, 256> counts{};
  for (int32_t i = 0; i < tok.NumSorted();) {
    std::string_view t = tok.SortedToken(i);
    if (t.empty()) {
      ++i;
      continue;
    }
    const int32_t end = tok.RunEnd(i, 1);
    counts[static_cast<uint8_t>(t[0])] += end - i;
    i = end;
  }
  return counts;
}

// The first `limit` scannable states reached from `start` by a breadth-first walk.
std::vector<int32_t> FirstScannableStates(const GrammarFsm& fsm, const std::vector<int32_t>& start, size_t limit) {
  std::vector<int32_t> out;
  std::unordered_set<int32_t> seen;
  std::deque<int32_t> queue;
  auto push = [&](int32_t s) {
    if (s >= 0 && seen.insert(s).second) queue.push_back(s);
  };
  for (int32_t s : start) push(s);
  while (!queue.empty() && out.size() < limit) {
    const int32_t s = queue.front();
    queue.pop_front();
    if (fsm.HasBytes(s)) out.push_back(s);
    const ByteRow row = fsm.NextRow(s);
    for (int b = 0; b < 256; ++b) push(row[b]);
    for (const RuleEdge* e = fsm.RuleEdgesBegin(s); e != fsm.RuleEdgesEnd(s); ++e) {
      push(fsm.RuleStart(e->rule));
      if (fsm.RuleNullable(e->rule)) push(e->target);
    }
    if (fsm.IsFinal(s)) {
      for (int32_t t : fsm.RuleFollow(fsm.RuleOf(s))) push(t);
    }
  }
  return out;
}

}  // namespace

PrefetchPlan PlanMaskPrefetch(const std::vector<const GrammarMatcher*>& matchers, int k) {
  PrefetchPlan plan;
  if (k <= 0) return plan;
  // Group the matchers' live states by grammar.
  std::map<const CompiledGrammar*, std::pair<std::shared_ptr<const CompiledGrammar>, std::vector<int32_t>>> groups;
  for (const GrammarMatcher* m : matchers) {
    auto& g = groups[&m->grammar()];
    g.first = m->grammar_ptr();
    m->CurrentScannableStates(&g.second);
  }
  for (auto& [key, group] : groups) {
    const auto& [grammar, start] = group;
    const GrammarFsm& fsm = grammar->fsm();
    const std::array<int64_t, 256> first = FirstByteCounts(grammar->tokenizer());
    std::vector<std::pair<int64_t, int32_t>> ranked;
    for (int32_t s : FirstScannableStates(fsm, start, std::max<size_t>(64, 4 * static_cast<size_t>(k)))) {
      if (grammar->BuiltEntry(s) != nullptr) continue;
      int64_t cost = 0;
      const ByteRow row = fsm.NextRow(s);
      for (int b = 0; b < 256; ++b) cost += row[b] >= 0 ? first[b] : 0;
      ranked.push_back({cost, s});
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (size_t i = 0; i < ranked.size() && i < static_cast<size_t>(k); ++i) {
      plan.states.push_back({grammar, ranked[i].second});
      plan.costs.push_back(ranked[i].first);
    }
  }
  return plan;
}

std::shared_future<void> StartMaskPrefetch(PrefetchPlan plan, int max_threads) {
  return std::async(std::launch::async,
                    [plan = std::move(plan), max_threads] {
                      ThreadPool::Global().ParallelFor(plan.states.size(), std::max(1, max_threads), [&](size_t i) {
                        plan.states[i].first->Entry(plan.states[i].second);
                      });
                    })
      .share();
}

}  // namespace xg
