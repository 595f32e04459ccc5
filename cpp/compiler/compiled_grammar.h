// CompiledGrammar: a normalised grammar, its automata, and the lazily built token-mask cache for
// one vocabulary. Shared read-only between matchers and threads.
//
// Mask entries are built the first time any matcher reaches a state (JIT), under a striped lock, and
// published through an atomic pointer so readers never lock. BuildAllMasks builds every scannable
// state up front (eager mode), in parallel. With a rule-level cache (rule_mask_cache.h, shared by
// the grammars of one GrammarCompiler), an entry is looked up by its state's structural key first
// and built only on a miss; the grammar holds a reference to every entry it uses, so an entry the
// cache evicts or clears stays valid for the grammars that already hold it.
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <string>
#include <vector>

#include "compiler/rule_mask_cache.h"
#include "support/limits.h"
#include "compiler/token_mask_cache.h"
#include "fsm/dispatch_watch.h"
#include "fsm/grammar_fsm.h"
#include "grammar/grammar.h"
#include "tokenizer/tokenizer_info.h"

namespace xg {

class CompiledGrammar {
 public:
  // `limits` bound the grammar's shape (checked here) and every matcher's parse (support/limits.h).
  CompiledGrammar(Grammar grammar, std::shared_ptr<const TokenizerInfo> tok,
                  std::shared_ptr<CrossGrammarCache> rule_cache = nullptr, const Limits& limits = DefaultLimits());
  ~CompiledGrammar();
  CompiledGrammar(const CompiledGrammar&) = delete;
  CompiledGrammar& operator=(const CompiledGrammar&) = delete;

  const Grammar& grammar() const { return grammar_; }
  const GrammarFsm& fsm() const { return fsm_; }
  const TokenizerInfo& tokenizer() const { return *tok_; }
  // The tokens the grammar names (Token(...), TokenTagDispatch; grammar.h token elements), sorted: the matcher
  // feeds their sentinels, and a fill checks them after the mask entries (which hold the text readings only).
  const std::vector<int32_t>& TokenElements() const { return token_elements_; }
  // The grammar has a budget gate (BudgetSpent(), grammar.h): the matcher opens gates after each accepted step.
  bool HasBudgetGates() const { return has_budget_gates_; }
  // Whether the matcher reads token `id` as a token element (its sentinel) too: a named token, or any token in a
  // grammar with ExcludeToken(...).
  bool NamesToken(int32_t id) const {
    return reads_any_token_ || std::binary_search(token_elements_.begin(), token_elements_.end(), id);
  }
  // The grammar has ExcludeToken(...) (free text over tokens): a fill adds the tokens whose sentinels the
  // automata read from a live state (OrSentinelTokens).
  bool ReadsAnyToken() const { return reads_any_token_; }
  // Sets the bit of every token id (< the number of tokens) whose sentinel the automata read from scannable
  // `state`. Exact: every state lies on a path to a final state (grammar_fsm.h), so an item that reads a
  // sentinel stays alive. Costs the digit states walked: a subtree with no excluded id is one range of bits.
  void OrSentinelTokens(int32_t state, uint32_t* words) const;
  const Limits& limits() const { return limits_; }
  // The outermost TagDispatch rules and their tags, whose switches matchers report (fsm/dispatch_watch.h).
  const DispatchWatch& dispatch_watch() const { return dispatch_watch_; }
  const std::shared_ptr<const TokenizerInfo>& tokenizer_ptr() const { return tok_; }

  // The entry of scannable state `state`, built now if needed.
  const TokenMaskEntry& Entry(int32_t state) const;
  // The uncertain tokens of `state` in this grammar (RefineUncertain of its entry's), positions in
  // the sorted vocabulary, ascending. Builds the entry if needed.
  const std::vector<int32_t>& Uncertain(int32_t state) const {
    Entry(state);  // acquire-loads the published entry, after which uncertain_[state] is set
    return uncertain_[state];
  }
  // The context entry of (state, parent_states) (see ContextMaskEntry), built now if needed.
  // parent_states: flat (state, count) pairs (see EarleyParser::ResetToItem), sorted and unique.
  const ContextMaskEntry& ContextEntry(int32_t state, const std::vector<int32_t>& parent_states) const;
  int32_t NumContextEntries() const;
  // The entry of `state` if already built, else nullptr (introspection; never builds).
  const TokenMaskEntry* BuiltEntry(int32_t state) const { return entries_[state].load(std::memory_order_acquire); }
  // Builds every scannable state's entry with up to num_threads threads.
  void BuildAllMasks(int num_threads) const;
  int32_t NumScannableStates() const;
  int32_t NumBuiltEntries() const { return built_.load(std::memory_order_relaxed); }
  // Everything this grammar references, shared mask entries included.
  size_t MemoryBytes() const;
  // What this grammar owns: MemoryBytes() less the entries held by the rule-level cache (those are
  // counted there). The grammar-level cache counts a grammar by this, measured when it is added.
  size_t OwnBytes() const;
  // The structural keys of this grammar's states; null without a rule-level cache (nothing to key) and
  // until the first entry that is looked up there (the start state's is not: see Entry).
  const StructuralHasher* hasher() const { return hasher_.load(std::memory_order_acquire); }

 private:
  static constexpr int kStripes = 64;

  // The rule-level cache's generations when this compilation began (declared first: read before
  // anything is built). Everything this grammar adds to that cache, then or later, is fenced by them,
  // so a ClearCache() during or after the compilation keeps none of it (CrossGrammarCache::Fence).
  CrossGrammarCache::Generations fence_;
  Limits limits_;
  Grammar grammar_;
  GrammarFsm fsm_;
  std::shared_ptr<const TokenizerInfo> tok_;
  std::shared_ptr<CrossGrammarCache> rule_cache_;  // null: entries are private to this grammar
  int32_t start_state_;  // the root rule's start state
  DispatchWatch dispatch_watch_;
  std::vector<int32_t> token_elements_;
  bool reads_any_token_ = false;
  bool has_budget_gates_ = false;
  // Built on first use (Hasher()): a first mask at the start state needs no keys.
  const StructuralHasher& Hasher() const;
  mutable std::once_flag hasher_once_;
  mutable std::unique_ptr<const StructuralHasher> hasher_owner_;
  mutable std::atomic<const StructuralHasher*> hasher_{nullptr};
  mutable LoopSlices loop_slices_{fsm_, *tok_};  // shared by this grammar's mask walks
  std::unique_ptr<std::atomic<const TokenMaskEntry*>[]> entries_;
  mutable std::vector<std::shared_ptr<const TokenMaskEntry>> held_;  // owners of entries_ (set under the stripe lock)
  mutable std::vector<std::vector<int32_t>> uncertain_;  // per state: the refined uncertain list
  mutable std::mutex stripes_[kStripes];
  mutable std::atomic<int32_t> built_{0};
  struct ContextKeyHash {
    size_t operator()(const std::vector<int32_t>& k) const {
      uint64_t h = 0xcbf29ce484222325ull;
      for (int32_t x : k) h = (h ^ static_cast<uint32_t>(x)) * 0x100000001b3ull;
      return static_cast<size_t>(h);
    }
  };
  // Key: state followed by the parent states. Entries never move once inserted.
  mutable std::shared_mutex context_mu_;
  mutable std::unordered_map<std::vector<int32_t>, std::unique_ptr<ContextMaskEntry>, ContextKeyHash> context_;
  mutable std::atomic<size_t> entry_bytes_{0};    // mask entries referenced (private or shared)
  mutable std::atomic<size_t> private_bytes_{0};  // entries built without the rule-level cache, and context entries
};

}  // namespace xg
