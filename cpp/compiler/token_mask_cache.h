// The adaptive token-mask cache (XGrammar's idea, on Earley states).
//
// For every scannable DFA state s (a state with byte edges), the vocabulary splits three ways when a
// token is parsed starting from the isolated item (s, origin unknown):
//   accepted  - the token's bytes stay inside s's rule (or end exactly where the rule completes):
//               valid in every context in which an item at s is live;
//   rejected  - the bytes fail inside the rule before it could complete;
//   uncertain - the rule completes before the token ends and the rest depends on what follows the
//               rule: resolved at run time against the live parent (ContextMaskEntry), then the
//               live parser.
// The entry uses no follow context at all, so it is a function of the rule's closure (the rules it
// reaches) and the vocabulary only, and can be shared across grammars (rule_mask_cache.h).
// A mask for a whole Earley set is the union of the accepted parts of its scannable states plus
// the uncertain tokens that pass the run-time check. This is exact: every token path begins with a
// scan from some scannable item, and a classification never claims more than the isolated parse
// proves.
//
// Each entry is stored in whichever form is smallest: a list of accepted ids, a list of rejected
// ids, or a bitset. Entries are built by walking the vocabulary in byte order (see TokenizerInfo),
// resuming each token from the configuration reached by its common prefix with the previous one
// (parse_config_cache.h: a lazily built automaton over Earley configurations), and skipping every
// token under a dead prefix without reading it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "fsm/grammar_fsm.h"
#include "tokenizer/token_slices.h"
#include "tokenizer/tokenizer_info.h"

namespace xg {

struct TokenMaskEntry {
  enum class Storage : uint8_t { kAcceptedList, kRejectedList, kBitset };
  Storage storage = Storage::kAcceptedList;
  std::vector<int32_t> ids;        // accepted or rejected token ids, ascending
  std::vector<uint32_t> bits;      // accepted tokens (kBitset)
  std::vector<int32_t> uncertain;  // positions in the sorted vocabulary, ascending
  int32_t num_accepted = 0;
  float build_us = 0;  // CPU time spent building this entry, in µs (introspection)

  // ORs the accepted tokens into `words` (packed, LSB first). `scratch` has MaskWords() words.
  void OrAccepted(const TokenizerInfo& tok, uint32_t* words, std::vector<uint32_t>* scratch) const;
  // Overwrites words[0, MaskWords()) with the accepted tokens (faster than OR into zeros).
  void WriteAccepted(const TokenizerInfo& tok, uint32_t* words) const;
  size_t MemoryBytes() const {
    return sizeof(*this) + (ids.capacity() + bits.capacity() + uncertain.capacity()) * 4;
  }
};

// The token slice (token_slices.h) of each state's lexical loop, found once per state of one
// GrammarFsm: the walks of many entries meet the same loop state (every string value reaches the
// string body), and finding a loop (ByteLoopOf) and its slice key cost more than the walk of a
// literal. Thread-safe.
class LoopSlices {
 public:
  LoopSlices(const GrammarFsm& fsm, const TokenizerInfo& tok);
  // The slice of s's loop when s loops on itself over many bytes (a string body, free text) and
  // the vocabulary's slice cache has one, else null.
  const TokenSlice* Of(int32_t state);
  // Heap bytes of the per-state memo (fixed at construction; the slices belong to the vocabulary).
  size_t HeapBytes() const { return static_cast<size_t>(fsm_.NumStates()) * sizeof(wide_[0]); }

 private:
  const GrammarFsm& fsm_;
  const TokenizerInfo& tok_;
  // Per state: -1 not yet known, else whether it loops on itself over many bytes. Asked for every
  // item of every configuration a walk meets; racing writers store the same value.
  std::unique_ptr<std::atomic<int8_t>[]> wide_;
  std::mutex mu_;
  std::unordered_map<int32_t, std::shared_ptr<const TokenSlice>> memo_;  // null: no slice
};

// Builds the entry of scannable state `state`. Thread-safe. `slices` (of the same fsm and
// vocabulary) may be shared by many calls; null uses a private one.
TokenMaskEntry BuildTokenMaskEntry(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t state,
                                   LoopSlices* slices = nullptr);

// The grammar's own lookahead applied to a structural entry: of its uncertain tokens (which leave
// s's rule before their end), those that die in every context that can follow the rule anywhere
// in the grammar (earley_parser.h's follow expansion) and never complete a follow rule are
// rejected; the rest stay uncertain. Returns the rest (a subset, ascending). The accepted part of
// the shared entry is unchanged, so a grammar keeps the shared entry and its own refined list.
std::vector<int32_t> RefineUncertain(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t state,
                                     const std::vector<int32_t>& structural_uncertain);

// One level of context: the tokens left uncertain at state s, re-classified for a known parent,
// i.e. the set of states where the parent rule resumes once s's rule completes. A token that stays
// inside the parent (or ends exactly where a rule completes) is accepted in that context; one whose
// parent also completes mid-token stays uncertain (checked live); the rest are rejected.
// Parent states are flat (state, count) pairs: a counted parent's count as CountClass gives it
// (earley_parser.h), so one entry serves every count far from the repetition's bounds.
// Keyed by (s, parent states) in CompiledGrammar, so JSON-like grammars resolve most uncertain
// tokens once per context instead of at every step.
struct ContextMaskEntry {
  std::vector<int32_t> accepted_ids;  // token ids (when fewer than the bitset's words)
  std::vector<uint32_t> accepted_bits;  // or the accepted tokens as a packed bitset
  std::vector<int32_t> uncertain;       // positions in the sorted vocabulary, ascending
  // ORs the accepted tokens into `words` (packed, LSB first).
  void OrAccepted(uint32_t* words) const {
    for (int32_t id : accepted_ids) words[id >> 5] |= 1u << (id & 31);
    for (size_t i = 0; i < accepted_bits.size(); ++i) words[i] |= accepted_bits[i];
  }
  size_t MemoryBytes() const {
    return sizeof(*this) + (accepted_ids.capacity() + accepted_bits.capacity() + uncertain.capacity()) * 4;
  }
};

ContextMaskEntry BuildContextMaskEntry(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t state,
                                       const std::vector<int32_t>& parent_states,
                                       const std::vector<int32_t>& base_uncertain);

}  // namespace xg
