// Partition refinement: the coarsest partition of a deterministic automaton's states in which the states
// of one block have equal signatures (Moore's algorithm, the step of DFA minimisation), refined
// incrementally.
//
// Algorithm. Plain Moore recomputes every state's signature (its finality and the blocks its transitions
// reach) each round, and needs one round per level of the longest literal: a tool's keys made that ~50
// rounds over a whole rule, a trie of property names as many over a key automaton. Here a block is
// re-examined only when a target of one of its states moved to a new block, so a split costs the blocks
// of the moved states' predecessors. Splitting by signatures over a partition no finer than the result
// never separates states with the same future, so the order of the splits does not matter and the
// partition is the one Moore finds.
//
// The initial partition groups states by their distance to a final state (edges on the shortest path; n
// for none): equivalent states have the same language, hence the same distance, so it is no finer than
// the result. Moore's usual start, final / not final, needs one round per state of a literal to tell its
// states apart; by distance, a literal's states start apart. A signature therefore need not mention
// finality (distance 0 is the final states' block).
//
// Contract: the automaton is a `Graph` with
//   int32_t Size() const;                      states 0 .. Size()-1
//   bool Final(int32_t s) const;
//   template <class F> void ForEachTarget(int32_t s, F f) const;   f(t) for every transition s -> t
//   void Signature(int32_t s, const std::vector<int32_t>& block, std::vector<int32_t>* sig) const;
// where Signature writes a sequence that is a function of the blocks s reaches and of what labels those
// transitions (equal for states with the same future under `block`). After RefineBlocks returns true,
// scratch->block[s] is s's block (blocks numbered 0 .. *num_blocks-1, deterministic). Past `work_budget`
// signatures it returns false: minimisation only saves work, so the caller keeps its automaton as it is.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "support/sequence_interner.h"

namespace xg {

// The working memory of RefineBlocks, kept from automaton to automaton by callers that refine many.
struct PartitionScratch {
  std::vector<int32_t> block, pred_begin, preds, cursor, dist, queue, count, elems, first, last, todo;
  std::vector<uint8_t> dirty;
  SequenceInterner signatures;
  std::vector<int32_t> sig, group, group_start, reordered, moved, distinct, distinct_begin;
};

template <class Graph>
bool RefineBlocks(const Graph& g, int64_t work_budget, PartitionScratch* scratch, int32_t* num_blocks) {
  const int32_t n = g.Size();
  int64_t work = 0;
  // Predecessors, flat: those of t are preds[pred_begin[t], pred_begin[t + 1]).
  std::vector<int32_t>& pred_begin = scratch->pred_begin;
  std::vector<int32_t>& preds = scratch->preds;
  std::vector<int32_t>& cursor = scratch->cursor;
  pred_begin.assign(n + 1, 0);
  for (int32_t s = 0; s < n; ++s) g.ForEachTarget(s, [&](int32_t t) { ++pred_begin[t + 1]; });
  for (int32_t t = 0; t < n; ++t) pred_begin[t + 1] += pred_begin[t];
  preds.resize(pred_begin[n]);
  cursor.assign(pred_begin.begin(), pred_begin.end() - 1);
  for (int32_t s = 0; s < n; ++s) g.ForEachTarget(s, [&](int32_t t) { preds[cursor[t]++] = s; });
  std::vector<int32_t>& dist = scratch->dist;
  dist.assign(n, n);
  std::vector<int32_t>& queue = scratch->queue;
  queue.clear();
  for (int32_t s = 0; s < n; ++s)
    if (g.Final(s)) dist[s] = 0, queue.push_back(s);
  for (size_t i = 0; i < queue.size(); ++i) {
    const int32_t t = queue[i];
    for (int32_t k = pred_begin[t]; k < pred_begin[t + 1]; ++k)
      if (dist[preds[k]] == n) dist[preds[k]] = dist[t] + 1, queue.push_back(preds[k]);
  }
  std::vector<int32_t>& block = scratch->block;
  block.resize(n);
  // The partition, flat: block b's states are elems[first[b], last[b]) (no vector per block: a split
  // reorders its block's range in place, stably, and its new blocks are subranges of it). Initially
  // one block per distance, in order of distance, each in state order (a counting sort).
  std::vector<int32_t>& elems = scratch->elems;
  std::vector<int32_t>& first = scratch->first;
  std::vector<int32_t>& last = scratch->last;
  std::vector<int32_t>& count = scratch->count;
  count.assign(n + 2, 0);
  for (int32_t s = 0; s < n; ++s) ++count[dist[s] + 1];
  for (int32_t k = 0; k <= n; ++k) count[k + 1] += count[k];
  elems.resize(n);
  first.clear();
  last.clear();
  for (int32_t k = 0; k <= n; ++k)
    if (count[k + 1] > count[k]) first.push_back(count[k]), last.push_back(count[k + 1]);
  for (int32_t s = 0; s < n; ++s) elems[count[dist[s]]++] = s;
  for (int32_t b = 0; b < static_cast<int32_t>(first.size()); ++b)
    for (int32_t i = first[b]; i < last[b]; ++i) block[elems[i]] = b;
  std::vector<uint8_t>& dirty = scratch->dirty;
  dirty.assign(first.size(), 1);
  std::vector<int32_t>& todo = scratch->todo;
  todo.clear();
  for (int32_t b = 0; b < static_cast<int32_t>(first.size()); ++b) todo.push_back(b);
  SequenceInterner& signatures = scratch->signatures;
  constexpr int32_t kSmallBlock = 8;
  std::vector<int32_t>& sig = scratch->sig;
  std::vector<int32_t>& group = scratch->group;
  std::vector<int32_t>& group_start = scratch->group_start;
  std::vector<int32_t>& reordered = scratch->reordered;
  std::vector<int32_t>& moved = scratch->moved;
  std::vector<int32_t>& distinct = scratch->distinct;
  std::vector<int32_t>& distinct_begin = scratch->distinct_begin;
  while (!todo.empty()) {
    std::sort(todo.begin(), todo.end());  // a deterministic order of new block ids
    moved.clear();
    for (int32_t b : todo) {
      dirty[b] = 0;
      const int32_t f = first[b], size = last[b] - first[b];
      if (size < 2) continue;
      work += size;
      if (work > work_budget) return false;
      // Group ids: distinct signatures in order of first appearance. A small block (most blocks after the
      // first round) compares against the few distinct ones kept so far instead of clearing a hash table.
      group.resize(size);
      int32_t num_groups = 0;
      if (size <= kSmallBlock) {
        distinct.clear();
        distinct_begin.assign(1, 0);
        for (int32_t i = 0; i < size; ++i) {
          g.Signature(elems[f + i], block, &sig);
          int32_t k = 0;
          for (; k < num_groups; ++k) {
            const int32_t* w = distinct.data() + distinct_begin[k];
            if (static_cast<size_t>(distinct_begin[k + 1] - distinct_begin[k]) == sig.size() &&
                std::equal(sig.begin(), sig.end(), w))
              break;
          }
          if (k == num_groups) {
            distinct.insert(distinct.end(), sig.begin(), sig.end());
            distinct_begin.push_back(static_cast<int32_t>(distinct.size()));
            ++num_groups;
          }
          group[i] = k;
        }
      } else {
        signatures.Clear(size);
        for (int32_t i = 0; i < size; ++i) {
          g.Signature(elems[f + i], block, &sig);
          group[i] = signatures.Intern(sig).first;
        }
        num_groups = static_cast<int32_t>(signatures.Size());
      }
      if (num_groups == 1) continue;
      // Stable counting sort of the range by group. Group 0 (the first state's) keeps the block; the
      // others become new blocks in group order.
      group_start.assign(num_groups + 1, 0);
      for (int32_t k : group) ++group_start[k + 1];
      for (int32_t k = 0; k < num_groups; ++k) group_start[k + 1] += group_start[k];
      reordered.resize(size);
      for (int32_t i = 0; i < size; ++i) reordered[group_start[group[i]]++] = elems[f + i];
      std::copy(reordered.begin(), reordered.end(), elems.begin() + f);
      // group_start[k] is now the end of group k; group 0 starts at 0.
      last[b] = f + group_start[0];
      for (int32_t k = 1; k < num_groups; ++k) {
        const int32_t nb = static_cast<int32_t>(first.size());
        first.push_back(f + group_start[k - 1]);
        last.push_back(f + group_start[k]);
        for (int32_t i = first.back(); i < last.back(); ++i) block[elems[i]] = nb, moved.push_back(elems[i]);
        dirty.push_back(0);
      }
    }
    todo.clear();
    for (int32_t s : moved) {
      for (int32_t i = pred_begin[s]; i < pred_begin[s + 1]; ++i) {
        const int32_t b = block[preds[i]];
        if (!dirty[b]) dirty[b] = 1, todo.push_back(b);
      }
    }
  }
  *num_blocks = static_cast<int32_t>(first.size());
  return true;
}

}  // namespace xg
