#include "tokenizer/tokenizer_info.h"

#include <algorithm>
#include <climits>

#include "support/check.h"

namespace xg {

TokenizerInfo::TokenizerInfo(std::vector<std::string> tokens, int32_t vocab_size,
                             const std::vector<int32_t>& special_ids, const std::vector<int32_t>& stop_ids)
    : tokens_(std::move(tokens)), vocab_size_(vocab_size) {
  const int32_t n = NumTokens();
  XG_USER_CHECK(vocab_size_ >= n) << "TokenizerInfo: vocab_size (" << vocab_size_
                                  << ") is smaller than the number of tokens (" << n << ")";
  is_special_.assign(n, 0);
  for (int32_t id : special_ids) {
    XG_USER_CHECK(id >= 0 && id < n) << "TokenizerInfo: special token id " << id << " is out of range [0, " << n << ")";
    is_special_[id] = 1;
  }
  for (int32_t id : stop_ids) {
    XG_USER_CHECK(id >= 0 && id < n) << "TokenizerInfo: stop token id " << id << " is out of range [0, " << n << ")";
    is_special_[id] = 1;
  }
  for (int32_t i = 0; i < n; ++i)
    if (tokens_[i].empty()) is_special_[i] = 1;
  stop_ids_ = stop_ids;
  std::sort(stop_ids_.begin(), stop_ids_.end());
  stop_ids_.erase(std::unique(stop_ids_.begin(), stop_ids_.end()), stop_ids_.end());
  for (int32_t i = 0; i < n; ++i)
    if (is_special_[i]) special_ids_.push_back(i);

  matches_text_.assign(n, 0);
  for (int32_t i = 0; i < n; ++i) {
    matches_text_[i] = !is_special_[i] && std::none_of(tokens_[i].begin(), tokens_[i].end(), [](char c) {
      return static_cast<uint8_t>(c) >= 0xF8;
    });
    if (matches_text_[i]) sorted_ids_.push_back(i);
  }
  std::sort(sorted_ids_.begin(), sorted_ids_.end(), [&](int32_t a, int32_t b) {
    int c = tokens_[a].compare(tokens_[b]);
    return c != 0 ? c < 0 : a < b;
  });
  lcp_.assign(sorted_ids_.size(), 0);
  normal_mask_.assign(MaskWords(), 0);
  sorted_offset_.assign(1, 0);
  for (size_t i = 0; i < sorted_ids_.size(); ++i) {
    int32_t id = sorted_ids_[i];
    sorted_bytes_ += tokens_[id];
    max_token_bytes_ = std::max(max_token_bytes_, static_cast<int32_t>(tokens_[id].size()));
    sorted_offset_.push_back(static_cast<int32_t>(sorted_bytes_.size()));
    normal_mask_[id >> 5] |= 1u << (id & 31);
    if (i > 0) {
      const std::string &a = tokens_[sorted_ids_[i - 1]], &b = tokens_[id];
      size_t m = std::min(a.size(), b.size()), k = 0;
      while (k < m && a[k] == b[k]) ++k;
      lcp_[i] = static_cast<int32_t>(k);
    }
  }
  first_byte_end_.assign(256, 0);
  for (size_t i = 0; i < sorted_ids_.size(); ++i) first_byte_end_[static_cast<uint8_t>(SortedToken(i)[0])] = i + 1;
  for (int b = 1; b < 256; ++b) first_byte_end_[b] = std::max(first_byte_end_[b], first_byte_end_[b - 1]);
  lcp_block_min_.assign((lcp_.size() + kLcpBlock - 1) / kLcpBlock, 0);
  for (size_t b = 0; b < lcp_block_min_.size(); ++b) {
    int32_t m = INT32_MAX;
    for (size_t j = b * kLcpBlock; j < std::min(lcp_.size(), (b + 1) * kLcpBlock); ++j) m = std::min(m, lcp_[j]);
    lcp_block_min_[b] = m;
  }
}

int32_t TokenizerInfo::RunEnd(int32_t i, int32_t prefix_len) const {
  const int32_t n = NumSorted();
  // First-byte runs (the most common dead prefix: a byte the state cannot scan) in O(1).
  if (prefix_len == 1) return first_byte_end_[static_cast<uint8_t>(SortedToken(i)[0])];
  int32_t j = i + 1;
  // Finish the current block linearly.
  while (j < n && j % kLcpBlock != 0) {
    if (lcp_[j] < prefix_len) return j;
    ++j;
  }
  // Skip whole blocks whose minimum keeps the prefix.
  while (j < n && lcp_block_min_[j / kLcpBlock] >= prefix_len) j += kLcpBlock;
  while (j < n && lcp_[j] >= prefix_len) ++j;
  return std::min(j, n);
}

size_t TokenizerInfo::MemoryBytes() const {
  size_t n = lcp_block_min_.size() * 4;
  for (auto& t : tokens_) n += t.capacity() + sizeof(std::string);
  return n + slices_.MemoryBytes() + sorted_bytes_.capacity() + sorted_ids_.size() * 16 + normal_mask_.size() * 4 + is_special_.size() + matches_text_.size();
}

}  // namespace xg
