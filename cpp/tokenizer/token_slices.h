// Token slices: the tokens a lexical loop reads whole, computed once per vocabulary.
//
// The states where a mask entry is expensive are the lexical loops: a JSON string body, free text,
// an identifier. There almost every token of the vocabulary stays alive, so the mask-cache walk
// (token_mask_cache.cc) has to visit the whole token trie: ~5 ms on Gemma 3's 262k tokens, paid
// again by every grammar that has such a state (each property's string is its own state once the
// string rule is inlined). The loops themselves are few: a handful of byte automata (the string
// body's UTF-8 ranges and escapes) recur in every JSON grammar.
//
// A LoopDfa is such a loop cut out of a grammar automaton: the strongly connected component of a
// state in the graph of its byte edges, numbered canonically from that state (byte_loop.h). A
// token whose every byte follows an edge of the loop is alive after it, inside its rule, in every
// context, so it is accepted there whatever the rest of the grammar is. The TokenSlice of a loop is
// that set of tokens, computed by one walk of the sorted vocabulary over the loop's table (a plain
// DFA walk, no parser: dead prefixes skip their whole run), and kept with its complement: the
// tokens the mask-cache walk still has to parse. The cache is keyed by the loop's canonical form and
// lives in the TokenizerInfo, so it is shared by every grammar and compiler of the vocabulary.
//
// Contract: Get() is thread-safe; concurrent requests for one loop compute it once. The cache holds
// at most kMaxSlices slices (each ~MaskWords() + |complement| + NumSorted() words: ~1.4 MB on a
// 262k vocabulary); past that Get() returns null and the caller walks without a slice (computing
// one costs more than the walk it saves once), which costs time, never correctness. Callers ask
// only for wide loops (kMinWideLoopBytes below), which are few.
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace xg {

class TokenizerInfo;

// A byte automaton over local states 0..n-1, state 0 the loop's entry. next[s * 256 + b] is the
// local target of byte b from s, or -1 when b leaves the loop (or has no edge).
struct LoopDfa {
  int32_t num_states = 0;
  std::vector<int32_t> next;
  // The canonical key: the rows as runs (lo, hi, target), one -1 after each state.
  std::string Key() const;
};

// A slice is *useful* when the loop reads at least a quarter of the vocabulary whole; a slice that is
// not keeps only its count (its sets would save the mask-cache walk little).
//
// A useful slice also keeps the loop's *tails*: per offset i < kMaxTailOffset, the set of tokens whose
// rest (bytes i..end) is read whole from the loop's entry, as a bitset over sorted positions. The
// mask-cache walk uses them when a prefix of length i brings the parse into the loop (the first
// character of a key, a string value predicted by the state): the tokens under that trie node are a
// range of sorted positions, so those with their tail bit set are accepted a 64-bit word at a time,
// without being parsed, and only the others are walked.
//
// And its *chain rows*, for the unrolled bounded repetitions of the loop's iteration (a string with
// maxLength 30 is a chain of 30 copies of the string body's character, not a loop): per budget r in
// 1..kMaxChainBudget, the tokens read whole from the entry that start at most r iterations (an
// iteration starts at each byte read at the entry state), as a bitset over sorted positions. A chain
// state that simulates r iterations of the loop (LoopSlices::ChainOf) accepts those tokens unwalked.
struct TokenSlice {
  static constexpr int32_t kMaxTailOffset = 32;
  static constexpr int32_t kMaxChainBudget = 32;
  std::vector<uint32_t> accepted_bits;  // tokens read whole by the loop, packed by id (MaskWords() words)
  std::vector<int32_t> complement;      // every other normal token: positions in the sorted vocabulary, ascending
  // kMaxTailOffset rows of TailWords() words: bit p of row i set iff sorted token p's bytes i.. are
  // read whole (and p has more than i bytes).
  std::vector<uint64_t> tails;
  int32_t tail_words = 0;
  // kMaxChainBudget rows of tail_words words (row r - 1 for budget r), each row's count, and the
  // same rows packed by token id (MaskWords() words each), ready to be a mask entry's bitset.
  std::vector<uint64_t> chain;
  std::vector<int32_t> chain_counts;
  std::vector<uint32_t> chain_by_id;
  // *Entered rows*, for a walk whose first byte enters the loop mid-iteration (a key's first
  // character is a UTF-8 lead byte): per loop state q that the entry reaches in one byte, the tokens
  // whose bytes 1.. are read whole from q (tail_words words each; entered_row[q] is q's row index,
  // -1 when q has none).
  std::vector<uint64_t> entered;
  std::vector<int32_t> entered_row;
  int32_t num_accepted = 0;
  bool Useful() const { return !accepted_bits.empty(); }
  const uint64_t* TailRow(int32_t offset) const { return tails.data() + static_cast<size_t>(offset) * tail_words; }
  bool Tail(int32_t pos, int32_t offset) const { return (TailRow(offset)[pos >> 6] >> (pos & 63)) & 1; }
  const uint64_t* ChainRow(int32_t budget) const {
    return chain.data() + static_cast<size_t>(budget - 1) * tail_words;
  }
  const uint64_t* EnteredRow(int32_t q) const {
    return q < static_cast<int32_t>(entered_row.size()) && entered_row[q] >= 0
               ? entered.data() + static_cast<size_t>(entered_row[q]) * tail_words
               : nullptr;
  }
  const uint32_t* ChainRowById(int32_t budget) const {
    return chain_by_id.data() + static_cast<size_t>(budget - 1) * accepted_bits.size();
  }
  size_t MemoryBytes() const {
    return sizeof(*this) +
           (accepted_bits.capacity() + complement.capacity() + chain_counts.capacity() + chain_by_id.capacity()) * 4 +
           (tails.capacity() + chain.capacity() + entered.capacity()) * 8 + entered_row.capacity() * 4;
  }
};

// The slice of `loop` over `tok` (one vocabulary walk, plus the tails of a useful slice).
TokenSlice ComputeTokenSlice(const TokenizerInfo& tok, const LoopDfa& loop);

// Whether a state whose row has `bytes_with_edges` bytes can head a loop worth a slice: only loops
// that read almost any byte (string bodies, free text) leave most of the vocabulary alive; the
// walk over a narrow loop (digits, whitespace, [a-z]) skips dead prefixes and is cheap already.
constexpr int32_t kMinWideLoopBytes = 96;

class TokenSliceCache {
 public:
  static constexpr size_t kMaxSlices = 64;
  // The slice of `loop`, computed now if needed; null when the cache is full.
  std::shared_ptr<const TokenSlice> Get(const TokenizerInfo& tok, const LoopDfa& loop);
  size_t NumSlices() const;
  size_t MemoryBytes() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_future<std::shared_ptr<const TokenSlice>>> slices_;
  size_t bytes_ = 0;
};

}  // namespace xg
