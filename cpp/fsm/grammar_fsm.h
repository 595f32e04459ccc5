// Per-rule FSMs, the form the Earley parser runs on.
//
// Each rule body is lowered (Thompson construction) to an NFA whose edges read one byte from a byte
// range, reference a rule, or are empty; character classes become UTF-8 byte-range chains. Subset
// construction then makes each rule's automaton deterministic on both bytes and rule references.
// All rules' DFA states live in one numbering so an Earley item is just (state, origin).
//
// After construction the automata are cleaned so that every state lies on a path from its rule's
// start to one of its finals ("trim"), counting only rules that can derive some string
// ("productive"). This is what makes "the Earley set is non-empty" equivalent to "the input so far
// is a prefix of some sentence", which the matcher and the mask cache rely on.
//
// Counted rules (Rule::counted, `R ::= X{min,max}`) become one state, final, with a rule edge on X
// back to itself; the parser keeps the count in the item and consults RepeatMin/RepeatMax for
// whether the item may complete (count >= min) or read another X (count < max).
//
// AnyOrder rules (grammar.h; `R ::= AnyOrder(...)` after LiftAnyOrder) become three states: the start
// A (final when no item is required) reads an item into B; B (final) reads the separator into C; C
// reads an item into B (without a separator B reads the items itself). The parser keeps the set of
// once-items read in the item's count, and asks AnyOrderEdgeAllowed / AnyOrderAfter /
// AnyOrderCanComplete before it predicts along an edge, advances along one, or completes: an item
// edge is closed once its bit is set, the separator once no item is left to read, and the rule
// completes once every required item is read, and every item that a read one requires (requires=).
// Items that require an item that can never be read are dropped. A negative count (kCountFree, in an assumed follow
// context) allows everything. With this, every item the parser adds can still reach a completion,
// as trimming guarantees for plain rules.
//
// Transitions on bytes are stored per byte class: the bytes that no run of any state tells apart
// (the classes refine the partition of 0..255 by every run's range) share one column, so a state's
// row has NumByteClasses() entries instead of 256 (a JSON Schema grammar has ~50 classes). The
// table is the largest object of a compile: at 1 KiB per state, writing it (a memset, and the page
// faults of fresh memory) was 12-15% of compiling JSONSchemaBench's grammars. Next() and the
// ByteRow view hide the classes.
//
// Nullable rules are handled by the parser with the Aycock-Horspool rule (a prediction of a nullable
// rule also advances the predicting item), so `nullable` is computed here exactly.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "automata/codepoint_dfa.h"
#include "fsm/any_order_sets.h"
#include "grammar/grammar.h"

namespace xg {

struct RuleEdge {
  int32_t rule;
  int32_t target;
};

class RuleDfaCache;       // fsm/rule_dfa_cache.h
class PrebuiltRuleDfas;  // fsm/rule_dfa_cache.h

// A state's transitions, indexed by byte: row[b] is the next state on byte b, or -1. A view into the
// automaton (valid while it lives); reading through it costs one more L1 load than a plain array.
class ByteRow {
 public:
  ByteRow(const int32_t* row, const uint8_t* byte_class) : row_(row), byte_class_(byte_class) {}
  int32_t operator[](int b) const { return row_[byte_class_[b]]; }

 private:
  const int32_t* row_;          // NumByteClasses() entries
  const uint8_t* byte_class_;   // 256 entries
};

class GrammarFsm {
 public:
  // Builds the automata of every rule of `g` (which should be normalised). Throws InputError when
  // the root derives no string, or when the automata exceed `max_states`. Each DFA state costs a
  // transition row of at most 1 KiB, so the default caps the automata at 512 MiB (large counted
  // repetitions no longer unroll, see grammar.h; what still hits this is a huge regular expression).
  // With a `cache`, rule automata are looked up there by body and added to it (rule_dfa_cache.h);
  // the result is the same with or without one. Either way a body the grammar repeats under several
  // rule names is built once and copied with each rule's own references.
  // `max_subset_members` bounds the NFA states summed over the subsets that determinization interns
  // (memory and time; LimitError past it). Both defaults are Limits' (support/limits.h).
  static constexpr int64_t kDefaultMaxStates = 1 << 19;
  static constexpr int64_t kDefaultMaxSubsetMembers = int64_t{1} << 24;
  // `generation`: the cache's generation when the caller's compilation began (RuleDfaCache::Insert
  // drops what is built for an ended one); by default, the one at this call. `prebuilt`: automata
  // built once per process, looked up (after `cache`) before a body is built; like the cache, they
  // change time, never the FSM.
  static GrammarFsm Build(const Grammar& g, int64_t max_states = kDefaultMaxStates, RuleDfaCache* cache = nullptr,
                          std::optional<uint64_t> generation = std::nullopt,
                          int64_t max_subset_members = kDefaultMaxSubsetMembers,
                          const PrebuiltRuleDfas* prebuilt = nullptr);

  int32_t NumStates() const { return static_cast<int32_t>(state_rule_.size()); }
  int32_t NumRules() const { return static_cast<int32_t>(rule_start_.size()); }
  int32_t Root() const { return root_; }

  int32_t RuleOf(int32_t s) const { return state_rule_[s]; }
  bool IsFinal(int32_t s) const { return is_final_[s]; }
  // True if the state has at least one byte transition (a "scannable" state in Earley terms).
  bool HasBytes(int32_t s) const { return has_bytes_[s]; }
  // Final with nothing left to read or predict (after a rule's tail call, `R ::= ... S`): an item here
  // completes its rule at once, so it stands for wherever the rule's waiters resume (Leo's chains,
  // GrammarMatcher's context levels).
  bool IsPureTail(int32_t s) const;
  // Next state on byte b, or -1.
  int32_t Next(int32_t s, uint8_t b) const {
    return byte_next_[static_cast<size_t>(s) * num_classes_ + byte_class_[b]];
  }
  ByteRow NextRow(int32_t s) const { return {&byte_next_[static_cast<size_t>(s) * num_classes_], byte_class_}; }
  // The number of byte classes (see the file comment): 1..256.
  int32_t NumByteClasses() const { return num_classes_; }
  // The bytes state s has a transition on, as a 256-bit set (4 words, bit b%64 of word b/64).
  const uint64_t* LiveBytes(int32_t s) const { return &live_bytes_[static_cast<size_t>(s) * 4]; }
  // The row of state s as runs: calls f(b, target) for b = 0 and for every byte whose target (-1:
  // none) differs from byte b-1's, in ascending order. Costs the live bytes, not 256 lookups, which
  // matters where every state of a grammar is described (structural hashing).
  template <typename F>
  void ForEachRowRun(int32_t s, F&& f) const {
    const ByteRow row = NextRow(s);
    const uint64_t* live = LiveBytes(s);
    int32_t last = -2;
    for (int b = 0; b < 256;) {
      if ((live[b >> 6] >> (b & 63)) & 1) {
        if (row[b] != last) f(b, row[b]), last = row[b];
        ++b;
        continue;
      }
      if (last != -1) f(b, -1), last = -1;
      // Skip to the next live byte.
      int w = b >> 6;
      uint64_t rest = live[w] & (~0ull << (b & 63));
      while (!rest && ++w < 4) rest = live[w];
      b = rest ? (w << 6) + __builtin_ctzll(rest) : 256;
    }
  }
  // Rule edges of state s: [RuleEdgesBegin(s), RuleEdgesEnd(s)).
  const RuleEdge* RuleEdgesBegin(int32_t s) const { return rule_edges_.data() + rule_edge_offset_[s]; }
  const RuleEdge* RuleEdgesEnd(int32_t s) const { return rule_edges_.data() + rule_edge_offset_[s + 1]; }

  // Counted repetition (see file comment). RepeatMax is Expr::kUnbounded when unbounded.
  bool IsCountedRule(int32_t r) const { return rule_kind_[r] == kCounted; }
  bool IsCountedState(int32_t s) const { return rule_kind_[state_rule_[s]] == kCounted; }
  // Whether items of state s carry a count (counted and AnyOrder rules): one load for the parser's
  // common case.
  bool HasCount(int32_t s) const { return rule_kind_[state_rule_[s]] != kPlain; }
  int32_t RepeatMin(int32_t r) const { return rule_repeat_[r].first; }
  int32_t RepeatMax(int32_t r) const { return rule_repeat_[r].second; }

  // AnyOrder rules (see file comment). `count` is an item's set of once-items read: the bitmask itself
  // when the rule has at most kMaxInlineAnyOrderBits once-items, else its id in the rule set table
  // (fsm/any_order_sets.h); negative: unknown.
  static constexpr int32_t kMaxInlineAnyOrderBits = 31;
  bool IsAnyOrderRule(int32_t r) const { return rule_kind_[r] == kAnyOrder; }
  bool IsAnyOrderState(int32_t s) const { return rule_kind_[state_rule_[s]] == kAnyOrder; }
  // The edge's role: its once-item's bit (>= 0), kEdgeRepeated or kEdgeSeparator (AnyOrder states only).
  static constexpr int32_t kEdgeRepeated = -1, kEdgeSeparator = -2;
  int32_t AnyOrderEdgeRole(const RuleEdge* e) const { return edge_role_[e - rule_edges_.data()]; }
  bool AnyOrderEdgeAllowed(int32_t count, int32_t rule, const RuleEdge* e) const {
    if (count < 0) return true;
    const int32_t role = AnyOrderEdgeRole(e);
    const AnyOrderInfo& a = any_order_[rule];
    if (role >= 0) return a.wide ? !any_order_sets_->Test(count, role) : !((count >> role) & 1);
    if (role == kEdgeRepeated || a.has_repeated) return true;
    return a.wide ? !any_order_sets_->ContainsAll(count, a.once_words) : (count & a.once) != a.once;
  }
  // The count after reading edge e's item (may intern a set: LimitError past the table's bound).
  int32_t AnyOrderAfter(int32_t count, int32_t rule, const RuleEdge* e) const {
    const int32_t role = AnyOrderEdgeRole(e);
    if (count < 0 || role < 0) return count;
    return any_order_[rule].wide ? any_order_sets_->With(count, role) : count | (int32_t{1} << role);
  }
  bool AnyOrderCanComplete(int32_t count, int32_t rule) const {
    const AnyOrderInfo& a = any_order_[rule];
    if (count < 0) return true;
    if (!a.wide) {
      if ((count & a.required) != a.required) return false;
      for (const auto& [bit, mask] : a.implies)
        if (((count >> bit) & 1) && (count & static_cast<int32_t>(mask[0])) != static_cast<int32_t>(mask[0])) return false;
      return true;
    }
    if (!any_order_sets_->ContainsAll(count, a.required_words)) return false;
    for (const auto& [bit, mask] : a.implies)
      if (any_order_sets_->Test(count, bit) && !any_order_sets_->ContainsAll(count, mask)) return false;
    return true;
  }
  // Appends what identifies rule r's AnyOrder semantics beyond its automaton (the required and readable
  // once-items) to a structural form (compiler/rule_mask_cache.h); nothing for other rules.
  void AppendAnyOrderForm(int32_t r, std::vector<int64_t>* form) const;

  // TagDispatch rules (grammar.h). Their items are never skipped by Leo's optimisation, so every switch
  // between free text and a tag shows in the Earley sets (matcher/tag_tracker.h reads them).
  bool IsTagDispatchRule(int32_t r) const { return tag_dispatch_rule_[r]; }
  int32_t RuleStart(int32_t r) const { return rule_start_[r]; }
  bool RuleNullable(int32_t r) const { return rule_nullable_[r]; }
  const std::string& RuleName(int32_t r) const { return rule_names_[r]; }
  // The rule's temperature attribute (Rule::temperature), < 0 for none.
  float RuleTemperature(int32_t r) const { return rule_temperature_[r]; }
  // The rule's capture (Rule::capture) as an index into CaptureLabels(), or -1 for none. Rules with one label
  // share its index.
  int32_t RuleCapture(int32_t r) const { return rule_capture_[r]; }
  const std::vector<std::string>& CaptureLabels() const { return capture_labels_; }
  // A rule whose text is a body and a marker (Rule::marker), compiled for the matcher's captures.
  struct MarkerSplit {
    CodepointDfa body, marker;  // whole-string automata of the two parts
    int32_t marker_capture;     // Rule::stop_capture as an index into CaptureLabels(), or -1
    bool hide;                  // Rule::hide_marker
  };
  // The rule's split, or null for a rule without a marker.
  const MarkerSplit* RuleMarkerSplit(int32_t r) const { return rule_split_[r].get(); }
  // Whether a capture of rule `outer` leaves out the marker of rule `inner` (a hide_marker rule `outer` reaches).
  bool HidesMarker(int32_t outer, int32_t inner) const {
    const std::vector<int32_t>& h = hidden_in_[outer];
    return std::binary_search(h.begin(), h.end(), inner);
  }
  // The rule's token budget (Rule::max_tokens), 0 for none; whether any rule has one.
  int32_t RuleMaxTokens(int32_t r) const { return rule_max_tokens_[r]; }
  bool HasTokenBudgets() const { return has_token_budgets_; }
  // Whether the parser must add every completed item of the rule (no Leo skip): the matcher reads them
  // (TagDispatch, captures, token budgets).
  bool KeepsCompletions(int32_t r) const {
    return tag_dispatch_rule_[r] || rule_capture_[r] >= 0 || rule_max_tokens_[r] > 0 || rule_split_[r] != nullptr;
  }
  // States t such that some state has an edge (r -> t): where parsing resumes after rule r completes.
  const std::vector<int32_t>& RuleFollow(int32_t r) const { return rule_follow_[r]; }

  size_t MemoryBytes() const;

 private:
  int32_t root_ = -1;
  std::vector<int32_t> state_rule_;
  std::vector<uint8_t> is_final_, has_bytes_;
  std::vector<uint64_t> live_bytes_;  // 4 words per state, see LiveBytes
  // Leaves new elements uninitialised on resize: Build fills the table with one memset of -1, and a
  // zero-fill before it would write the largest object of a compile twice.
  template <typename T>
  struct UninitAllocator : std::allocator<T> {
    template <typename U>
    struct rebind {
      using other = UninitAllocator<U>;
    };
    UninitAllocator() = default;
    template <typename U>
    UninitAllocator(const UninitAllocator<U>&) {}
    template <typename U>
    void construct(U* p) {
      ::new (static_cast<void*>(p)) U;
    }
    template <typename U, typename... Args>
    void construct(U* p, Args&&... args) {
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
  };
  std::vector<int32_t, UninitAllocator<int32_t>> byte_next_;  // num_classes_ entries per state
  uint8_t byte_class_[256] = {};
  int32_t num_classes_ = 1;
  std::vector<int32_t> rule_edge_offset_;
  std::vector<RuleEdge> rule_edges_;
  std::vector<int32_t> rule_start_;
  std::vector<uint8_t> rule_nullable_;
  enum RuleKind : uint8_t { kPlain = 0, kCounted = 1, kAnyOrder = 2 };
  std::vector<uint8_t> rule_kind_;
  std::vector<std::pair<int32_t, int32_t>> rule_repeat_;  // (min, max) of counted rules
  std::vector<uint8_t> tag_dispatch_rule_;
  struct AnyOrderInfo {
    bool wide = false;            // more once-items than kMaxInlineAnyOrderBits: counts are set ids
    bool has_repeated = false;    // a repeated item can be read (so the separator never closes)
    int32_t required = 0, once = 0;                 // narrow: required / readable once-items
    std::vector<uint64_t> required_words, once_words;  // the same as words (both widths)
    // requires=: (bit, the once-items it requires as words); a completion needs them once bit is read.
    std::vector<std::pair<int32_t, std::vector<uint64_t>>> implies;
  };
  std::vector<AnyOrderInfo> any_order_;  // per rule (empty when the grammar has no AnyOrder rule)
  std::vector<int32_t> edge_role_;       // aligned with rule_edges_ (empty likewise)
  std::shared_ptr<AnyOrderSetTable> any_order_sets_;  // wide rules' sets (null without one)
  std::vector<std::string> rule_names_;
  std::vector<float> rule_temperature_;
  std::vector<int32_t> rule_capture_;
  std::vector<int32_t> rule_max_tokens_;
  std::vector<std::shared_ptr<const MarkerSplit>> rule_split_;
  std::vector<std::vector<int32_t>> hidden_in_;  // per captured rule: the hide_marker rules it reaches, sorted
  // Fills capture_labels_, rule_capture_, rule_split_ and hidden_in_ (see the accessors).
  void BuildCaptureTables(const Grammar& g, int64_t max_states);
  bool has_token_budgets_ = false;
  std::vector<std::string> capture_labels_;
  std::vector<std::vector<int32_t>> rule_follow_;
};

inline bool GrammarFsm::IsPureTail(int32_t s) const {
  return IsFinal(s) && !HasBytes(s) && RuleEdgesBegin(s) == RuleEdgesEnd(s);
}

// The hash GrammarFsm::Build computes along with a rule body's key (rule_dfa_cache.h), from the key text.
uint64_t BodyKeyHash(const std::string& key);

}  // namespace xg
