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
// A useful slice also keeps the loop's *tails*: per token, the offsets i < kMaxTailOffset at which the
// token's rest (bytes i..end) is read whole from the loop's entry. The mask-cache walk uses them when
// a prefix brings the parse into the loop (the first character of a key, a string value predicted
// by the state): every token under that trie node whose tail bit is set is accepted without being
// parsed, and only the others are walked.
struct TokenSlice {
  static constexpr int32_t kMaxTailOffset = 32;
  std::vector<uint32_t> accepted_bits;  // tokens read whole by the loop, packed by id (MaskWords() words)
  std::vector<int32_t> complement;      // every other normal token: positions in the sorted vocabulary, ascending
  std::vector<uint32_t> tails;          // per sorted position: bit i set iff bytes i.. are read whole
  int32_t num_accepted = 0;
  bool Useful() const { return !accepted_bits.empty(); }
  size_t MemoryBytes() const {
    return sizeof(*this) + (accepted_bits.capacity() + complement.capacity() + tails.capacity()) * 4;
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
