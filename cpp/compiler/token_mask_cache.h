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
// token under a dead prefix without reading it. A state inside a literal (a property or tool name)
// needs no walk when no token reads past the literal's end: its accepted tokens are the literal's
// prefixes, found by a few binary searches (BuildLiteralMaskEntry). Such an entry depends only on
// the bytes read, so CompiledGrammar keys it by them (LiteralKey), not by its state's structure.
//
// Where a state is, or leads into, a lexical loop that reads most of the vocabulary (a JSON string
// body), the walk does not parse those tokens one by one: the vocabulary's token slice of the loop
// (token_slices.h) lists the tokens it reads whole, from its head (tails), from a state one byte in
// (entered rows: a key's first character is a UTF-8 lead byte), and with at most r iterations
// (chain rows), as bitsets over sorted positions. LoopSlices finds, per state of one automaton,
// which of them apply: a loop head; an unrolled bounded repetition of a loop's iteration (a chain:
// `C{0,30}`), proved by simulation against the loop; an item X that a counted repetition `X{m,n}`
// repeats, whose runs a context entry accepts up to the count's room. Each claim is a proof about
// the automaton, so masks stay exact; whatever no slice covers is walked.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
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
  // When most of the vocabulary is uncertain (kManyUncertain): the same positions as a bitset over
  // sorted positions, so a context entry can split them a word at a time.
  std::vector<uint64_t> uncertain_bits;
  int32_t num_accepted = 0;
  float build_us = 0;  // CPU time spent walking for this entry, in µs (introspection; 0 for a literal's)

  // ORs the accepted tokens into `words` (packed, LSB first). `scratch`: a buffer of any size, resized to
  // MaskWords() words when the storage needs one.
  void OrAccepted(const TokenizerInfo& tok, uint32_t* words, std::vector<uint32_t>* scratch) const;
  // Overwrites words[0, MaskWords()) with the accepted tokens (faster than OR into zeros).
  void WriteAccepted(const TokenizerInfo& tok, uint32_t* words) const;
  size_t MemoryBytes() const {
    return sizeof(*this) + (ids.capacity() + bits.capacity() + uncertain.capacity()) * 4 +
           uncertain_bits.capacity() * 8;
  }
  // Whether an uncertain list of `n` positions out of `num_sorted` counts as most of the vocabulary:
  // an item that completes after one character (a string's character in a counted repetition).
  static bool ManyUncertain(size_t n, int32_t num_sorted) { return n > static_cast<size_t>(num_sorted) / 2; }
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
  // When s is a state of a wide loop whose head's slice Of() has found (in this automaton), that
  // slice, with *local set to s's state number in the loop (0 for the head); else null.
  const TokenSlice* MemberOf(int32_t state, int32_t* local);
  // When s heads an unrolled bounded repetition of a wide loop's iteration (a string body's character
  // `C{0,30}` unrolled into a chain of states), that loop's slice, with *budget set to the number of
  // iterations r every path of the chain from s can take: every token the slice's chain row r lists
  // is accepted at s without a walk. Else null. Thread-safe; found once per state.
  //
  // The budget is proved, not assumed: r is the largest number such that from s, every byte path
  // of the loop that begins at most r iterations is a byte path of the grammar automaton (a
  // simulation of the loop by the chain). The loop itself is only a candidate, named by folding the
  // chain's first step (ByteLoopOf's `fold`), so a wrong guess costs a few microseconds, never a mask.
  //
  // *ends_dead is set when, moreover, every loop path from s that begins r + 1 iterations dies at
  // the byte that begins the last one (no byte edge there), inside the rule: no state on the way,
  // s included, is final or has a rule edge (where the parser could leave the rule, or enter
  // another, and read on). Then every other token the loop reads whole is rejected, and only the
  // tokens the loop does not read whole (the slice's complement) need a walk.
  const TokenSlice* ChainOf(int32_t state, int32_t* budget, bool* ends_dead);
  // When s starts a rule X that reads one item and stops (a JSON string's character: a byte, a
  // UTF-8 sequence or an escape, then a final state with no edges), the slice of the loop X*, whose
  // chain rows count X's; else null. For the runs of X inside a counted repetition `X{m,n}`
  // (BuildContextMaskEntry). Thread-safe; found once per state.
  const TokenSlice* ItemLoopOf(int32_t state);
  // Heap bytes of the per-state array (fixed at construction, so that a grammar's size does not
  // drift while a cache counts it; the map memos are not counted, and the slices belong to the
  // vocabulary).
  size_t HeapBytes() const { return static_cast<size_t>(fsm_.NumStates()) * sizeof(flags_[0]); }

 private:
  // What ChainOf proved about one loop's chains, per (automaton state, loop state[, budget]): the
  // heads of one chain share most of it.
  struct ChainMemo {
    std::unordered_map<int64_t, int16_t> budget;
    std::unordered_map<int64_t, int8_t> dead;
  };
  // The chain budget of s against `loop` (see ChainOf), 0 when none, capped at kMaxChainBudget.
  int32_t ChainBudget(int32_t s, const LoopDfa& loop, ChainMemo* memo) const;
  // Whether the chain from s with budget r ends dead against `loop` (see ChainOf).
  bool ChainEndsDead(int32_t s, const LoopDfa& loop, int32_t r, ChainMemo* memo) const;

  const GrammarFsm& fsm_;
  const TokenizerInfo& tok_;
  // Per state, kWideKnown | kWide | kMember bits: whether it loops on itself over many bytes (once
  // known), and whether members_ holds it. Asked for every item of every configuration a walk
  // meets; racing writers set the same bits.
  static constexpr uint8_t kWideKnown = 1, kWide = 2, kMember = 4;
  std::unique_ptr<std::atomic<uint8_t>[]> flags_;
  std::mutex mu_;
  std::unordered_map<int32_t, std::shared_ptr<const TokenSlice>> memo_;  // null: no slice
  struct Chain {
    std::shared_ptr<const TokenSlice> slice;  // null: s heads no chain
    int32_t budget = 0;
    bool ends_dead = false;
  };
  std::unordered_map<int32_t, Chain> chains_;  // under mu_
  struct Member {
    const TokenSlice* slice;  // held by memo_
    int32_t local;
  };
  std::unordered_map<int32_t, Member> members_;  // under mu_: the states of the loops found
  std::unordered_map<int32_t, std::shared_ptr<const TokenSlice>> item_loops_;  // under mu_; null: none
  std::mutex chain_mu_;  // held while a chain is proved
  std::unordered_map<std::string, ChainMemo> chain_memos_;  // by the loop's key, under chain_mu_
};

// Builds the entry of scannable state `state`: BuildLiteralMaskEntry where it applies, else
// WalkTokenMaskEntry. Thread-safe. `slices` (of the same fsm and vocabulary) may be shared by many
// calls; null uses a private one.
TokenMaskEntry BuildTokenMaskEntry(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t state,
                                   LoopSlices* slices = nullptr);

// The entry of a state inside a literal, without a walk, or nullopt. From `state` the automaton
// reads a literal: a run of states that each have one byte edge, no rule edge, and are not final
// (a property name, a tool name, an enum value, `","arguments":{`). A token either is a prefix of
// the literal (accepted: it ends inside the rule), or leaves it at a wrong byte (rejected), or
// reads the whole literal and goes on; only the last kind depends on what follows, so when the
// vocabulary has no such token the entry is exactly the literal's prefixes, found by narrowing the
// sorted vocabulary one byte at a time (a few binary searches, where a walk sets up an Earley
// configuration cache). Equal to WalkTokenMaskEntry's entry whenever it returns one (tested on
// every state of several grammars).
// `read`, when given, gets the bytes the narrowing read: they alone decide the entry (LiteralKey).
std::optional<TokenMaskEntry> BuildLiteralMaskEntry(const GrammarFsm& fsm, const TokenizerInfo& tok,
                                                    int32_t state, std::string* read = nullptr);

// The entry of `state` by a walk of the vocabulary (see the file comment).
TokenMaskEntry WalkTokenMaskEntry(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t state,
                                  LoopSlices* slices = nullptr);

// The grammar's own lookahead applied to a structural entry: of its uncertain tokens (which leave
// s's rule before their end), those that die in every context that can follow the rule anywhere
// in the grammar (earley_parser.h's follow expansion) and never complete a follow rule are
// rejected; the rest stay uncertain. Returns the rest (a subset, ascending). The accepted part of
// the shared entry is unchanged, so a grammar keeps the shared entry and its own refined list.
std::vector<int32_t> RefineUncertain(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t state,
                                     const std::vector<int32_t>& structural_uncertain);

// Known context: the tokens left uncertain at state s, re-classified for a known parent, i.e. the
// set of states where the parent rule resumes once s's rule completes, and, when that lone parent
// can itself end right there, the states where its own parent resumes, and so on up a few lone
// ancestors (GrammarMatcher::ContextFollow; levels split by kFollowLevelSeparator). A token that
// stays inside these levels (or ends exactly where a rule completes) is accepted in that context;
// one whose last level also completes mid-token stays uncertain (checked live); the rest are
// rejected. Parent states are flat (state, count) pairs: a counted parent's count as CountClass
// gives it (earley_parser.h), so one entry serves every count far from the repetition's bounds.
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

// `slices` (of the same fsm and vocabulary) may be null; `base_bits`, when given, holds the
// positions of base_uncertain as a bitset (TokenMaskEntry::uncertain_bits).
ContextMaskEntry BuildContextMaskEntry(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t state,
                                       const std::vector<int32_t>& parent_states,
                                       const std::vector<int32_t>& base_uncertain, LoopSlices* slices = nullptr,
                                       const std::vector<uint64_t>* base_bits = nullptr);

}  // namespace xg
