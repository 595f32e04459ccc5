// An Earley parser over UTF-8 bytes, running on per-rule DFAs (fsm/grammar_fsm.h).
//
// Terms follow the literature (Earley 1970; Aycock & Horspool 2002):
//   - An Item is a dotted rule: `state` is the DFA state inside its rule (the "dot"), `origin` is the
//     index of the Earley set where that rule's derivation started.
//   - An Earley set (a "Row" in llguidance's words) holds the items valid after reading a prefix of
//     the input; set k is built from set k-1 by scanning one byte, then closed under prediction
//     (an item before a rule reference adds that rule's start item) and completion (an item in a
//     final state advances the items of its origin set that wait on its rule).
//   - Nullable rules: a prediction of a nullable rule also advances the predicting item at once
//     (Aycock-Horspool), so completions never need to revisit the set being built.
// Left recursion, nullable rules and ambiguity need no special handling: items are deduplicated per
// set, so every set is finite. Right recursion uses Leo's optimisation (Leo 1991): when a completion
// would advance the only item waiting on its rule into a state with nothing left to do (final, no
// edges), the whole deterministic chain of such completions is skipped and its topmost item added
// directly, memoised per (set, rule, lineage). Without it `r ::= "a" r | "a"` costs O(depth) per
// byte.
//
// Sets are stored back to back in one vector; Advance pushes a set only when it is non-empty (an
// empty set means the byte is rejected, and the parser is left exactly as it was), PopSets rolls
// back. Because the automata are trimmed, a non-empty set means "the input so far is a prefix of a
// sentence".
//
// The same machinery serves the token-mask cache (compiler/token_mask_cache.h), which parses a
// token's bytes starting from one isolated item whose context is unknown: its origin is the
// virtual set kTopOrigin. When that item's rule completes, the parser records it and continues with
// every state that can follow the rule anywhere in the grammar (virtual origin kFollowOrigin, lineage
// 1), so tokens that cannot continue in any context are rejected outright rather than left
// uncertain. Lineage keeps the two apart: an item of lineage 1 is alive only through an assumed
// context.
//
// Counted repetition (grammar.h): an item of a counted rule `R ::= X{min,max}` carries the number of
// X's read since R started in `count` (0 for items of other rules). It may read another X while
// count < max and complete while count >= min. Two sentinels stand for counts the mask cache does
// not know exactly but knows enough about for one token (see CountClass): kCountFree (may complete
// and continue throughout the token) and kCountBelowMin (may continue, cannot complete). Follow
// states given to ResetToItem are (state, count) pairs for this reason.
//
// AnyOrder rules (grammar.h) keep the set of their once-items read so far in `count` the same way
// (a bitmask; GrammarFsm asks whether an edge is open and sets the bit); kCountFree there means
// "unknown: anything goes", for the assumed follow contexts of the mask cache.
//
// Compaction: once a set can no longer become the last one again (no rollback reaches it), the parse
// reads it only as the origin of a completion: its items that wait on a rule (an edge on a rule
// reference) are the ones completion, Leo and the matcher's follow contexts look at. CompactSets drops
// everything else and removes sets no live item reaches, so a long parse keeps memory in proportion
// to its open constructs (the nesting of the text) rather than its length.
//
// Call order: construct, then Reset() or ResetToItem(); then any sequence of Advance / PopSets /
// CompactSets.
#pragma once

#include <cstdint>
#include <vector>

#include "fsm/grammar_fsm.h"
#include "support/limits.h"

namespace xg {

struct EarleyItem {
  int32_t state;
  int32_t origin;     // Earley set index, or kTopOrigin / kFollowOrigin
  int32_t lineage;    // 0: real or top context; 1: assumed follow context (mask cache only)
  int32_t count = 0;  // counted rules: X's read so far, or kCountFree / kCountBelowMin; AnyOrder: items read
};

// Count sentinels (see the file comment).
constexpr int32_t kCountFree = -1;
constexpr int32_t kCountBelowMin = -2;

// The count a counted item resumes with after one more X (real count c), as the mask cache may key
// it: within a token of at most `max_token_bytes` bytes the item reads at most that many more X's
// (X is never nullable), so far from both bounds only the sentinel matters and one cache entry
// serves every such count; near a bound the exact count is kept.
int32_t CountClass(const GrammarFsm& fsm, int32_t rule, int32_t count_after, int32_t max_token_bytes);

class EarleyParser {
 public:
  static constexpr int32_t kTopOrigin = -1;
  static constexpr int32_t kFollowOrigin = -2;  // the first follow level; level i (0-based) is FollowOrigin(i)
  static constexpr int32_t kFollowLevelSeparator = -3;
  static constexpr int32_t FollowOrigin(int32_t level) { return kFollowOrigin - 2 * level; }
  // The follow level of a virtual origin <= kFollowOrigin (the inverse of FollowOrigin).
  static constexpr size_t FollowLevelOf(int32_t origin) { return static_cast<size_t>((kFollowOrigin - origin) / 2); }
  // Per-set flags.
  static constexpr uint8_t kTopCompleted = 1;     // the isolated item's rule completed here
  static constexpr uint8_t kFollowCompleted = 2;  // a follow-context rule completed here

  explicit EarleyParser(const GrammarFsm* fsm);
  // Limits::max_items_per_set and max_work_per_byte bound every set built from now on (Advance
  // raises LimitError and leaves the parser unchanged). `limits` must outlive the parser.
  void SetLimits(const Limits* limits) { limits_ = limits; }

  // Set 0 = closure of the root rule's start item.
  void Reset();
  // Set 0 = closure of the isolated item (state, kTopOrigin). Completions of the isolated rule in
  // set 0 itself are not followed (other items of the real set handle that case). When the rule
  // completes later, parsing continues in `follow` (flat (state, count) pairs: where the parent
  // resumes), or in every state that can follow the rule anywhere (counted ones with kCountFree) if
  // `follow` is null. `follow` may hold further levels, each after a kFollowLevelSeparator: level
  // i+1 is where parsing resumes once a state of level i completes its rule (the grandparent when
  // the parent can end right after the item, and so on up a chain of lone ancestors). Only when the
  // last level completes is the set flagged kFollowCompleted. `follow` must outlive the parse.
  void ResetToItem(int32_t state, const std::vector<int32_t>* follow = nullptr);

  // No sets at all, in isolated-item mode (as ResetToItem) with the given follow; for rebuilding a
  // parse from stored sets with PushClosedSet.
  void ResetEmpty(const std::vector<int32_t>* follow = nullptr);
  // Appends a set that is already closed (items' origins are set indices below it or virtual).
  void PushClosedSet(const EarleyItem* items, size_t n, uint8_t flags);

  // Scans `byte` from the last set. Returns false (and changes nothing) if no item can read it.
  bool Advance(uint8_t byte);
  // Scans `byte` from set k (not necessarily the last) into a new last set: the first byte of a second
  // reading of one token (GrammarMatcher: a text token a Token() element also names). Same contract.
  bool AdvanceFrom(int32_t k, uint8_t byte);
  void PopSets(int32_t n);
  // Frees what no later parse step can read in the sets [lo, hi) (see "Compaction" above): removes the
  // sets of the range that no item of a later set reaches as an origin (directly, or through the
  // waiting items of sets that are reached), and drops from the sets that stay every item that waits
  // on no rule. Sets below lo are untouched; sets from hi on keep all their items, with origins
  // renumbered. Requires 1 <= lo <= hi < NumSets(): set 0 and the last set always stay. Returns the
  // number of sets removed: a set index j >= hi is j - removed afterwards. Popping back to a set
  // below hi afterwards is not allowed (the sets of the range no longer hold their scannable items).
  int32_t CompactSets(int32_t lo, int32_t hi);
  // Gives back the capacity of the set storage once it is mostly unused (after popping many sets).
  void ReleaseUnusedMemory();
  int32_t NumSets() const { return static_cast<int32_t>(set_begin_.size()) - 1; }

  const EarleyItem* SetBegin(int32_t k) const { return items_.data() + set_begin_[k]; }
  const EarleyItem* SetEnd(int32_t k) const { return items_.data() + set_begin_[k + 1]; }
  uint8_t SetFlags(int32_t k) const { return set_flags_[k]; }
  // A set's position in the input: set 0 is at 0, a set built by scanning one byte from set k at k's position + 1,
  // a pushed closed set one past the last set's. The caller may relabel a set (GrammarMatcher counts positions in
  // the text a user sees, where a special token is its text); compaction keeps each set's position.
  int64_t SetPosition(int32_t k) const { return set_pos_[k]; }
  void SetPosition(int32_t k, int64_t position) { set_pos_[k] = position; }
  // True if the root rule has completed over the whole input (the input is a sentence).
  bool CanAcceptEnd() const;
  // Appends the distinct scannable states of the last set (lineage 0) to out.
  void ScannableStates(std::vector<int32_t>* out) const;

  const GrammarFsm& fsm() const { return *fsm_; }
  // Whether an item (of any set) completes its rule: a final state, and a count its rule may end with.
  bool CanComplete(const EarleyItem& it) const;
  // Work (items processed and scanned, as for Limits::max_work_per_byte) summed over every byte read
  // since construction: differences measure the cost of a sequence of Advance calls.
  int64_t TotalWork() const { return total_work_ + work_; }
  size_t MemoryBytes() const {
    size_t leo = leo_.capacity() * sizeof(leo_[0]);
    for (const auto& m : leo_) leo += m.capacity() * sizeof(LeoMemo);
    return items_.capacity() * sizeof(EarleyItem) + set_begin_.capacity() * sizeof(int32_t) + set_flags_.capacity() +
           set_pos_.capacity() * sizeof(int64_t) + leo;
  }

 private:
  // Adds `item` to the set being built (the last one) unless already present.
  void Add(int32_t state, int32_t origin, int32_t lineage, int32_t count = 0);
  // Whether an item may read another X of its counted rule.
  bool CanContinue(const EarleyItem& it) const;
  // Closes the set being built, from item index `from` on.
  void Close(size_t from);
  [[noreturn]] void ThrowWorkLimit() const;
  void BeginSet();
  // Drops every set; `follow` overrides the follow states for what comes next (see ResetToItem).
  void Clear(const std::vector<int32_t>* follow);
  // Pushes set 0 as the closure of one item.
  void StartWith(int32_t state, int32_t origin);
  // Adds the (state, count) pairs of follow level `level` (0-based) to the set being built.
  void AddFollowLevel(size_t level);
  // Leo's topmost item for completing `rule` (lineage `lineage`) back to set `origin`, or false if
  // the completion is not deterministic there. Memoised in leo_.
  bool LeoItem(int32_t origin, int32_t rule, int32_t lineage, EarleyItem* out);

  const GrammarFsm* fsm_;
  const Limits* limits_ = &DefaultLimits();
  int64_t work_ = 0;  // work spent closing the set being built (see Limits::max_work_per_byte)
  int64_t total_work_ = 0;  // work_ of every set closed before the current one (TotalWork)
  std::vector<EarleyItem> items_;
  std::vector<int32_t> set_begin_;  // set k = items_[set_begin_[k], set_begin_[k+1]); last entry = end
  std::vector<uint8_t> set_flags_;
  std::vector<int64_t> set_pos_;  // aligned with set_flags_ (SetPosition)
  struct LeoMemo {
    int32_t rule, lineage;
    bool valid;
    EarleyItem item;
  };
  std::vector<std::vector<LeoMemo>> leo_;  // per set, aligned with set_flags_
  const std::vector<int32_t>* follow_override_ = nullptr;
  std::vector<size_t> follow_level_begin_;  // index in *follow_override_ of each level's first pair
  // Open-addressing dedup table for the set being built once it is large (item indices), invalidated
  // by bumping `stamp_`.
  std::vector<uint32_t> hash_keys_;
  std::vector<uint32_t> hash_stamp_;
  uint32_t stamp_ = 0;
};

}  // namespace xg
