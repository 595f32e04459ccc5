// Rule automata shared across grammars.
//
// A rule's minimised DFA (grammar_fsm.h: Thompson NFA, subset construction, Moore minimisation) is a
// function of its body alone, with rule references as opaque edge labels. Agent servers compile a
// new grammar per request whose rules are mostly the same bodies as in earlier requests (the JSON
// string, number and value rules, every tool seen before), and building those automata was the
// largest part of a warm compile. So GrammarFsm::Build keys each body by its canonical text, with
// the rules it references numbered by first appearance ("local references"), builds the automaton
// over local references, and remaps them to the grammar's rules afterwards. Two bodies that differ
// only in which rules they name share one automaton, and because the automaton is always built over
// local references, a cached one is identical to the one a cold build makes: the cache changes
// time, never the FSM.
//
// Thread-safe. Held by a GrammarCompiler's cross-grammar cache and cleared with it; a build that
// read the generation before a Clear() does not insert after it (the same fence as the mask caches).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fsm/grammar_fsm.h"

namespace xg {

// One byte edge range of a DFA state: bytes [lo, hi] go to `target`.
struct ByteRun {
  int16_t lo, hi;
  int32_t target;
};

// A rule's automaton in its own numbering (state 0 is the start) while it is built: byte edges as
// sorted, disjoint runs (rows are a handful of ranges, so every pass costs the runs, not 256
// bytes), expanded to dense rows by GrammarFsm::Build. In the cache, RuleEdge::rule is a local
// reference (an index into the body's references in order of first appearance).
//
// Runs and edges live in two flat arrays (state s's runs are runs[run_begin[s], run_begin[s + 1])),
// not a vector per state: building, copying out of the cache and freeing an automaton then cost a
// few allocations instead of two per state. States are completed in order: AppendRun / AddEdge add
// to the first state not yet completed, CloseState() completes it. `final` may run ahead of the
// completed states while a builder is still discovering states (subset construction).
struct LocalDfa {
  template <typename T>
  struct Span {
    T* first;
    T* last;
    T* begin() const { return first; }
    T* end() const { return last; }
    size_t size() const { return static_cast<size_t>(last - first); }
  };
  std::vector<ByteRun> runs;
  std::vector<RuleEdge> rule_edges;  // each state's sorted by rule
  std::vector<int32_t> run_begin{0}, edge_begin{0};
  std::vector<uint8_t> final;
  int32_t Size() const { return static_cast<int32_t>(final.size()); }
  Span<const ByteRun> Runs(int32_t s) const { return {runs.data() + run_begin[s], runs.data() + run_begin[s + 1]}; }
  Span<const RuleEdge> Edges(int32_t s) const {
    return {rule_edges.data() + edge_begin[s], rule_edges.data() + edge_begin[s + 1]};
  }
  Span<RuleEdge> Edges(int32_t s) {
    return {rule_edges.data() + edge_begin[s], rule_edges.data() + edge_begin[s + 1]};
  }
  size_t MemoryBytes() const;  // including sizeof(*this)
  // Appends [lo, hi] -> target to the open state's runs (in ascending byte order), merging with its
  // last run when contiguous with the same target.
  void AppendRun(int lo, int hi, int32_t target) {
    if (runs.size() > static_cast<size_t>(run_begin.back()) && runs.back().target == target &&
        runs.back().hi + 1 == lo) {
      runs.back().hi = static_cast<int16_t>(hi);
    } else {
      runs.push_back({static_cast<int16_t>(lo), static_cast<int16_t>(hi), target});
    }
  }
  void AddEdge(int32_t rule, int32_t target) { rule_edges.push_back({rule, target}); }
  void CloseState() {
    run_begin.push_back(static_cast<int32_t>(runs.size()));
    edge_begin.push_back(static_cast<int32_t>(rule_edges.size()));
  }
  // Drops the rule edges `drop` selects, keeping each state's order.
  template <typename Pred>
  void RemoveEdges(Pred&& drop) {
    size_t w = 0;
    for (size_t s = 0; s + 1 < edge_begin.size(); ++s) {
      const int32_t from = edge_begin[s], to = edge_begin[s + 1];
      edge_begin[s] = static_cast<int32_t>(w);
      for (int32_t i = from; i < to; ++i)
        if (!drop(rule_edges[i])) rule_edges[w++] = rule_edges[i];
    }
    edge_begin.back() = static_cast<int32_t>(w);
    rule_edges.resize(w);
  }
};

// A cached automaton and what building it charged against GrammarFsm's state budget (the states of
// subset construction, before minimisation), so a grammar hits the limit warm exactly when cold.
// `nfa_states` is the size of its Thompson NFA, checked against the per-rule limit on a hit too.
struct CachedRuleDfa {
  LocalDfa dfa;
  int64_t budget_cost = 0;
  int64_t nfa_states = 0;
};

class RuleDfaCache {
 public:
  // limit_bytes >= 0: an insert that takes the cache past it flushes the cache whole first (as re2
  // resets its DFA cache; automata are rebuilt on demand). -1: unlimited.
  explicit RuleDfaCache(int64_t limit_bytes = -1) : limit_(limit_bytes) {}
  // Read before building; pass to Insert.
  uint64_t Generation() const;
  // The automaton of a body key (see BodyKey in grammar_fsm.cc), or null.
  std::shared_ptr<const CachedRuleDfa> Find(const std::string& key) const;
  // Adds an automaton built after `generation` was read, unless Clear() ran since (then it is
  // dropped: not held, not counted). A key already present keeps its first automaton (both are equal).
  void Insert(std::string key, std::shared_ptr<const CachedRuleDfa> dfa, uint64_t generation);
  void Clear();
  int64_t MemoryBytes() const;
  size_t Size() const;
  // How many times the byte limit flushed the cache.
  int64_t Flushes() const;
  // Every (key, automaton) held now.
  std::vector<std::pair<std::string, std::shared_ptr<const CachedRuleDfa>>> Entries() const;

 private:
  const int64_t limit_;
  int64_t flushes_ = 0;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const CachedRuleDfa>> map_;
  uint64_t generation_ = 0;
  int64_t bytes_ = 0;
};

// Rule automata built once per process and only read afterwards: the bodies every grammar of a front end holds
// (the JSON string, in every JSON Schema grammar), so that a compile without a cache does not rebuild them. Looked up
// by body key hash first, so a grammar pays for key text only on a hash match. Immutable: no lock, never cleared,
// the same for every compiler (the automaton of a body is a pure function of it, see above).
class PrebuiltRuleDfas {
 public:
  explicit PrebuiltRuleDfas(const RuleDfaCache& built);
  // The automaton of `key` (whose BodyKey hash is `hash`), or null.
  const CachedRuleDfa* Find(uint64_t hash, const std::string& key) const;
  bool MayHave(uint64_t hash) const { return by_hash_.count(hash) > 0; }

 private:
  std::unordered_multimap<uint64_t, std::pair<std::string, std::shared_ptr<const CachedRuleDfa>>> by_hash_;
};

}  // namespace xg
