// SequenceInterner: numbers int32 sequences so that equal sequences get equal ids (0, 1, 2, ... in
// order of first appearance). The automaton builders intern one sequence per state (a DFA state's
// NFA-state set in subset construction, a state's signature in each round of minimisation), so a
// map with a heap-allocated vector per key dominated their time. Here every sequence lives in one
// flat buffer and the table is open-addressed over stored 64-bit hashes; equality is checked on the
// stored words, so a hash collision costs a comparison, never a wrong id.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace xg {

class SequenceInterner {
 public:
  SequenceInterner() { Clear(); }

  // Forgets every sequence. The table is sized for `expected` sequences (it still grows past them):
  // clearing costs the table, so one interner reused for many small batches after a large one must
  // not keep refilling the large table.
  void Clear(size_t expected = 8) {
    words_.clear();
    offsets_.assign(1, 0);
    hashes_.clear();
    size_t slots = 16;
    while (slots < expected * 2) slots *= 2;
    slots_.assign(slots, -1);
  }

  // The id of the sequence [p, p + n), and whether it is new.
  std::pair<int32_t, bool> Intern(const int32_t* p, size_t n) {
    if ((Size() + 1) * 2 > slots_.size()) Grow();
    const uint64_t h = Hash(p, n);
    const size_t mask = slots_.size() - 1;
    size_t i = static_cast<size_t>(h) & mask;
    for (int32_t id; (id = slots_[i]) >= 0; i = (i + 1) & mask)
      if (hashes_[id] == h && Length(id) == n && std::equal(p, p + n, Data(id))) return {id, false};
    const int32_t id = static_cast<int32_t>(Size());
    slots_[i] = id;
    hashes_.push_back(h);
    words_.insert(words_.end(), p, p + n);
    offsets_.push_back(words_.size());
    return {id, true};
  }
  std::pair<int32_t, bool> Intern(const std::vector<int32_t>& v) { return Intern(v.data(), v.size()); }
  // The id of [p, p + n) if interned, else -1 (adds nothing).
  int32_t Find(const int32_t* p, size_t n) const {
    const uint64_t h = Hash(p, n);
    const size_t mask = slots_.size() - 1;
    for (size_t i = static_cast<size_t>(h) & mask;; i = (i + 1) & mask) {
      const int32_t id = slots_[i];
      if (id < 0) return -1;
      if (hashes_[id] == h && Length(id) == n && std::equal(p, p + n, Data(id))) return id;
    }
  }

  size_t Size() const { return offsets_.size() - 1; }
  const int32_t* Data(int32_t id) const { return words_.data() + offsets_[id]; }
  size_t Length(int32_t id) const { return offsets_[id + 1] - offsets_[id]; }

 private:
  static uint64_t Hash(const int32_t* p, size_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    for (size_t i = 0; i < n; ++i) {
      h ^= static_cast<uint32_t>(p[i]);
      h *= 0xff51afd7ed558ccdull;
      h ^= h >> 32;
    }
    return h;
  }
  void Grow() {
    std::vector<int32_t> slots(slots_.size() * 2, -1);
    const size_t mask = slots.size() - 1;
    for (int32_t id = 0; id < static_cast<int32_t>(Size()); ++id) {
      size_t i = static_cast<size_t>(hashes_[id]) & mask;
      while (slots[i] >= 0) i = (i + 1) & mask;
      slots[i] = id;
    }
    slots_.swap(slots);
  }

  std::vector<int32_t> words_;
  std::vector<size_t> offsets_;
  std::vector<uint64_t> hashes_;
  std::vector<int32_t> slots_;  // power of two, at most half full
};

}  // namespace xg
