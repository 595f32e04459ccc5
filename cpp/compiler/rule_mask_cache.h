// The cross-grammar (rule-level) token-mask cache: mask entries shared by every grammar compiled for
// one vocabulary, keyed by the structure of the automata that decide them.
//
// Why it is exact. A structural entry (token_mask_cache.h, built with no follow context) of
// scannable state s depends only on s's rule, the rules reachable from it through rule references
// (its "closure"), s's position in its rule, and the vocabulary: a token is parsed from the isolated
// item (s, unknown origin), predictions stay inside the closure, and a token that completes s's rule
// before its end is left uncertain rather than judged by whatever follows the rule in one grammar.
// So two states whose closures are the same automata up to renaming have the same entry, in any
// grammar. (The grammar-specific context, the "lookahead", is applied at run time: uncertain tokens
// are resolved against the live parent, CompiledGrammar::ContextEntry, and then the live parser.)
//
// Keys. Each rule gets a hierarchical structural hash over the rule reference graph: a provisional
// hash of its own automaton (finality, byte transitions, counted bounds, rule edges by position
// only), then the hashes of the rules it references, bottom-up over the strongly connected
// components; inside a component (a cycle) the provisional hashes are refined for as many rounds as
// the component has rules (Weisfeiler-Lehman style), a count that depends only on the component.
// The hash picks the bucket; identity is exact: every rule also gets a structure id from a table
// that interns its canonical form (its own automaton with references written as the ids of the
// rules they name; for a component, all of its rules' forms in breadth-first order from the rule,
// references inside the component by that order). Equal ids mean equal closures, so a hash
// collision is a miss, never a wrong mask. Ids are never reused, even across ClearCache().
//
// A state's key is finer than its rule's: an entry depends only on what can be read from the state,
// so the key is the interned identity of the state's *forward closure* (the states of its rule
// reachable from it, with the structure ids of the rules they reference), hash-consed so that each
// interned form is about one transition row (see ForwardIds).
// Two tools whose objects differ in one property name still share every state after that name.
// One state is never keyed: the root rule's start state, whose forward closure is the whole root rule
// (only a grammar of the same structure has it, and that grammar is a grammar-level hit); its entry is
// built per grammar, so a grammar's first mask waits for neither the hasher nor the root rule's ids.
// Both kinds of reuse in the XGrammar-2 paper follow: the same forward closure is an exact hit; the
// same closure under a different lookahead is the same entry, with only its uncertain tokens
// re-checked in the new grammar (RefineUncertain) and context (ContextMaskEntry).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/fenced_lru_cache.h"
#include "compiler/token_mask_cache.h"
#include "fsm/grammar_fsm.h"
#include "fsm/rule_dfa_cache.h"
#include "support/sequence_interner.h"

namespace xg {

struct StructuralKey {
  uint64_t hash = 0;          // from the hierarchical hashes and the form (bucket only)
  int64_t structure_id = -1;  // the interned forward closure of the state (exact identity); kLiteral
  int32_t position = -1;      // reserved (0): the forward closure already fixes the state
  std::string literal;        // a literal's key (LiteralKey): the bytes it read; else empty
  static constexpr int64_t kLiteral = -2;
  bool operator==(const StructuralKey& o) const {
    return structure_id == o.structure_id && position == o.position && literal == o.literal;
  }
};

struct StructuralKeyHash {
  size_t operator()(const StructuralKey& k) const { return static_cast<size_t>(k.hash); }
};

using RuleMaskCache = FencedLruCache<StructuralKey, TokenMaskEntry, StructuralKeyHash>;

// The key of a literal's entry (BuildLiteralMaskEntry): the bytes it read. Those bytes alone decide
// the entry (the tokens that are their prefixes, for this compiler's vocabulary), so equal names in
// different rules and grammars share one entry; no structure id is needed (nor the hasher).
StructuralKey LiteralKey(const std::string& literal);

// Interns canonical rule forms into ids (never reused). Thread-safe. Clear() drops the forms; the id
// counter keeps counting, so ids handed out before a clear never name a different structure after.
//
// It also keeps each rule structure's forward-closure ids (StructuralHasher::ForwardIds), which are a
// function of the rule's structure id, so a rule seen in an earlier grammar costs a lookup instead of
// interning a form per state. Those are fenced like the mask entries: ids computed under a
// generation that a Clear() ended are not kept.
class StructureTable {
 public:
  using ForwardIdList = std::vector<int64_t>;
  // limit_bytes >= 0: once the table holds more, it is flushed as by Clear() (re2 resets its DFA
  // cache the same way): ids are never reused, so mask entries keyed by flushed ids are misses from
  // then on and age out of their own LRU. -1: unlimited.
  explicit StructureTable(int64_t limit_bytes = -1) : limit_(limit_bytes) {}
  // The id of a form given as bytes (a rule's form) or as 64-bit words (a forward closure), for work
  // that began at `generation` (Generation()). Once a Clear() has ended that generation the form is
  // looked up but not added: a form the table lacks gets a fresh id that is never handed out again,
  // so a compilation in flight during a clear stays exact (a fresh id is a miss, never a wrong hit)
  // and adds nothing to the cleared table.
  int64_t Intern(const std::string& form, uint64_t generation);
  int64_t Intern(const std::vector<int64_t>& form, uint64_t generation);
  // Read before computing forward ids; pass to AddForwardIds.
  uint64_t Generation() const;
  std::shared_ptr<const ForwardIdList> FindForwardIds(int64_t rule_structure_id) const;
  void AddForwardIds(int64_t rule_structure_id, std::shared_ptr<const ForwardIdList> ids, uint64_t generation);
  void Clear();
  int64_t MemoryBytes() const;
  size_t Size() const;
  // How many times the byte limit flushed the table.
  int64_t Flushes() const;

 private:
  int64_t InternWords(const int32_t* words, size_t n, uint64_t generation);  // under mu_
  void ClearLocked();                                                         // under mu_
  void FlushIfOverLimit();                                                    // under mu_
  const int64_t limit_;
  int64_t flushes_ = 0;

  mutable std::mutex mu_;
  // Forms in one flat buffer, open-addressed (support/sequence_interner.h): a compile interns a form
  // per automaton state, and a node-based map of strings cost an allocation and three cache misses
  // each. Ids are id_base_ + the interner's id; Clear() moves id_base_ past every id handed out.
  SequenceInterner forms_;
  std::vector<int32_t> scratch_;  // a byte form as 32-bit words
  std::unordered_map<int64_t, std::shared_ptr<const ForwardIdList>> forward_ids_;
  int64_t id_base_ = 0;
  // Ids of forms not added (Intern after a clear): negative, counting down, below the sentinels of
  // StructuralKey (-1, kLiteral), so never equal to an interned id or to each other.
  int64_t next_unstored_id_ = -16;
  int64_t bytes_ = 0;
  uint64_t generation_ = 0;
};

// What a GrammarCompiler shares between its grammars: the mask entries, the structure ids that key
// them, and the rule automata (rule_dfa_cache.h). Cleared together (the entries and automata have
// generation fences, and so does the table's interning). A compilation reads Fence() when it
// starts and passes each part its generation, so what it computes after a Clear() is not kept.
// The byte budget given (the rule-level share of cache_limit_bytes, see GrammarCompiler) is split:
// half for the mask entries (LRU), a quarter each for the structure ids and the automata (each
// flushed whole when over its share). -1: unlimited.
struct CrossGrammarCache {
  static int64_t Share(int64_t limit_bytes, int64_t parts) { return limit_bytes < 0 ? -1 : limit_bytes / parts; }
  explicit CrossGrammarCache(int64_t limit_bytes)
      : entries(Share(limit_bytes, 2)), structures(Share(limit_bytes, 4)), automata(Share(limit_bytes, 4)) {}
  RuleMaskCache entries;
  StructureTable structures;
  RuleDfaCache automata;
  struct Generations {
    uint64_t entries = 0, structures = 0, automata = 0;
  };
  Generations Fence() const { return {entries.Generation(), structures.Generation(), automata.Generation()}; }
  void Clear() {
    entries.Clear();
    structures.Clear();
    automata.Clear();
  }
  // Structure ids and automata: what cache_info() reports as structure_bytes.
  int64_t StructureBytes() const { return structures.MemoryBytes() + automata.MemoryBytes(); }
  int64_t SizeBytes() const { return entries.SizeBytes() + StructureBytes(); }
};

// Structural hashes and keys of one GrammarFsm's states. Thread-safe after construction.
class StructuralHasher {
 public:
  // `table` may be null (no rule-level cache): then no structure ids are made. `generation` is the
  // table's generation when the grammar's compilation began (see StructureTable::Intern).
  StructuralHasher(const GrammarFsm& fsm, StructureTable* table, uint64_t generation = 0);

  uint64_t RuleHash(int32_t rule) const { return rule_hash_[rule]; }
  int64_t StructureId(int32_t rule) const { return structure_id_[rule]; }
  StructuralKey KeyOf(int32_t state) const;
  size_t MemoryBytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = sizeof(*this) + first_state_.capacity() * 4 + rule_hash_.capacity() * 16;
    for (const auto& v : forward_id_) n += v ? v->capacity() * sizeof(int64_t) : 0;
    return n;
  }

 private:
  // The rule's own automaton, with rule references listed in `refs` in the order they appear.
  std::string LocalForm(int32_t rule, std::vector<int32_t>* refs) const;
  // Interned forward-closure ids of the rule's states (by position), built on first use: the rule's
  // state graph condensed into strongly connected components, successors first; a state outside a
  // cycle is its row with targets named by their ids; a state on a cycle is its component's rows in
  // breadth-first order from it (components over 64 states are keyed by rule id and position).
  const std::vector<int64_t>& ForwardIds(int32_t rule) const;
  std::vector<int64_t> ComputeForwardIds(int32_t rule) const;  // what ForwardIds caches

  const GrammarFsm& fsm_;
  std::vector<int32_t> first_state_;  // per rule: its smallest state id (its states are contiguous)
  std::vector<uint64_t> rule_hash_;
  std::vector<int64_t> structure_id_;
  StructureTable* structure_table_;  // null without a rule-level cache
  uint64_t generation_ = 0;           // of structure_table_, when the grammar's compilation began
  mutable std::mutex mu_;
  mutable std::vector<std::shared_ptr<const std::vector<int64_t>>> forward_id_;  // per rule, see ForwardIds
};

}  // namespace xg
