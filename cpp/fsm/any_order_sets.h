// Interned sets of AnyOrder items (grammar.h) for AnyOrder rules with more once-items than fit in an
// int32 bitmask: an Earley item's count is then the id of its set in this table, so equal sets are
// equal counts (the parser deduplicates items by value) and an item stays 16 bytes. Narrow rules
// (at most kMaxInlineAnyOrderBits once-items) keep the bitmask inline and never come here.
//
// Thread-safe: one table per GrammarFsm, shared by every parser and mask-cache worker of a compiled
// grammar; ids are never reused or moved. Id 0 is the empty set. The table is bounded
// (kMaxSets; LimitError past it, which the parser turns into a rejected byte with nothing changed).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "support/check.h"

namespace xg {

class AnyOrderSetTable {
 public:
  static constexpr int32_t kMaxSets = 1 << 20;

  AnyOrderSetTable() { Intern({}); }

  // Whether set `id` holds `bit`.
  bool Test(int32_t id, int32_t bit) const {
    std::lock_guard<std::mutex> lock(mu_);
    const std::vector<uint64_t>& s = sets_[id];
    const size_t w = static_cast<size_t>(bit) >> 6;
    return w < s.size() && ((s[w] >> (bit & 63)) & 1);
  }
  // Whether set `id` holds every bit of `mask` (words, bit i in word i / 64).
  bool ContainsAll(int32_t id, const std::vector<uint64_t>& mask) const {
    std::lock_guard<std::mutex> lock(mu_);
    const std::vector<uint64_t>& s = sets_[id];
    for (size_t w = 0; w < mask.size(); ++w)
      if ((mask[w] & ~(w < s.size() ? s[w] : 0)) != 0) return false;
    return true;
  }
  // The id of set `id` with `bit` added.
  int32_t With(int32_t id, int32_t bit) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<uint64_t> s = sets_[id];
    const size_t w = static_cast<size_t>(bit) >> 6;
    if (s.size() <= w) s.resize(w + 1, 0);
    s[w] |= uint64_t{1} << (bit & 63);
    return InternLocked(std::move(s));
  }
  size_t MemoryBytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = sets_.capacity() * sizeof(sets_[0]);
    for (const auto& s : sets_) n += 2 * s.size() * sizeof(uint64_t) + 64;  // the words, the index key, overhead
    return n;
  }

 private:
  int32_t Intern(std::vector<uint64_t> s) {
    std::lock_guard<std::mutex> lock(mu_);
    return InternLocked(std::move(s));
  }
  int32_t InternLocked(std::vector<uint64_t> s) {
    while (!s.empty() && s.back() == 0) s.pop_back();  // one spelling per set
    std::string key(reinterpret_cast<const char*>(s.data()), s.size() * sizeof(uint64_t));
    auto it = index_.find(key);
    if (it != index_.end()) return it->second;
    if (static_cast<int64_t>(sets_.size()) >= kMaxSets)
      throw LimitError("AnyOrder: more than " + std::to_string(kMaxSets) +
                       " distinct sets of items read (AnyOrderSetTable::kMaxSets)");
    const int32_t id = static_cast<int32_t>(sets_.size());
    sets_.push_back(std::move(s));
    index_.emplace(std::move(key), id);
    return id;
  }

  mutable std::mutex mu_;
  std::vector<std::vector<uint64_t>> sets_;
  std::unordered_map<std::string, int32_t> index_;
};

}  // namespace xg
