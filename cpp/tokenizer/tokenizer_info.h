// TokenizerInfo: the decoded vocabulary the engine works on.
//
// Every token id maps to the raw bytes it emits (decoding of RAW / BYTE_FALLBACK / BYTE_LEVEL
// vocabularies happens in Python, xg2jax/vocab_decoding.py). Special tokens (control tokens, empty
// tokens) never match grammar text, nor do tokens holding a byte >= 0xF8 (never in UTF-8; reserved for token
// elements); stop tokens are allowed exactly when the grammar can end; ids in
// [num_tokens, vocab_size) are padding of the logits and are never allowed.
//
// For the mask cache the normal tokens are also kept in lexicographic byte order with the length
// of the common prefix with the previous token (lcp): walking tokens in that order, a parser only
// needs to pop back to the common prefix and scan the rest, and a prefix that dies rejects the whole
// run of tokens sharing it (the "token trie" walk).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/token_slices.h"

namespace xg {

class TokenizerInfo {
 public:
  // tokens[i] = bytes of token i. vocab_size >= tokens.size() (padding ids above). special_ids and
  // stop_ids must be < tokens.size(). Stop tokens are special too (they never match text).
  TokenizerInfo(std::vector<std::string> tokens, int32_t vocab_size, const std::vector<int32_t>& special_ids,
                const std::vector<int32_t>& stop_ids);

  int32_t VocabSize() const { return vocab_size_; }
  int32_t NumTokens() const { return static_cast<int32_t>(tokens_.size()); }
  const std::string& Token(int32_t id) const { return tokens_[id]; }
  bool IsSpecial(int32_t id) const { return is_special_[id]; }
  // Whether the token can match grammar text: not special, and free of the bytes >= 0xF8 that no UTF-8 text holds
  // (reserved for token elements, grammar/grammar.h). The sorted order and NormalMask hold exactly these tokens.
  bool MatchesText(int32_t id) const { return matches_text_[id]; }
  const std::vector<int32_t>& StopIds() const { return stop_ids_; }
  const std::vector<int32_t>& SpecialIds() const { return special_ids_; }

  // Normal tokens in byte order; Lcp(i) = common prefix length of sorted(i-1) and sorted(i), Lcp(0) = 0.
  int32_t NumSorted() const { return static_cast<int32_t>(sorted_ids_.size()); }
  int32_t SortedId(int32_t i) const { return sorted_ids_[i]; }
  int32_t Lcp(int32_t i) const { return lcp_[i]; }
  // Bytes of sorted(i), stored contiguously in sorted order so trie walks read memory in order.
  std::string_view SortedToken(int32_t i) const {
    return std::string_view(sorted_bytes_.data() + sorted_offset_[i], sorted_offset_[i + 1] - sorted_offset_[i]);
  }
  // The end of the run of sorted tokens starting at i that share their first `prefix_len` bytes
  // with sorted(i): the first j > i with Lcp(j) < prefix_len (or NumSorted()). Skips whole blocks
  // of the lcp array using per-block minima, so a dead prefix is skipped in O(run / 32) steps.
  int32_t RunEnd(int32_t i, int32_t prefix_len) const;
  // [begin, end): the sorted positions of the tokens whose first byte is b (empty when none).
  std::pair<int32_t, int32_t> FirstByteRange(uint8_t b) const {
    return {b ? first_byte_end_[b - 1] : 0, first_byte_end_[b]};
  }
  // Packed bitmask words (bit t%32 of word t/32) of all normal tokens.
  const std::vector<uint32_t>& NormalMask() const { return normal_mask_; }
  int32_t MaskWords() const { return (vocab_size_ + 31) / 32; }
  // The longest non-special token, in bytes (bounds how far one token can move a count).
  int32_t MaxTokenBytes() const { return max_token_bytes_; }
  // The token slices of lexical loops seen so far (token_slices.h): a cache shared by every grammar
  // of this vocabulary, filled on first use (so "mutable" on a TokenizerInfo otherwise immutable).
  TokenSliceCache& Slices() const { return slices_; }
  size_t MemoryBytes() const;

 private:
  std::vector<std::string> tokens_;
  int32_t vocab_size_;
  int32_t max_token_bytes_ = 1;
  std::vector<uint8_t> is_special_, matches_text_;
  std::vector<int32_t> stop_ids_, special_ids_;
  std::vector<int32_t> sorted_ids_, lcp_;
  std::string sorted_bytes_;
  static constexpr int32_t kLcpBlock = 32;
  std::vector<int32_t> first_byte_end_;  // [b]: first sorted position whose first byte is > b
  std::vector<int32_t> lcp_block_min_;  // min of lcp_ over each block of kLcpBlock entries
  std::vector<int32_t> sorted_offset_;
  std::vector<uint32_t> normal_mask_;
  mutable TokenSliceCache slices_;
};

}  // namespace xg
