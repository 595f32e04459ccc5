#include "tokenizer/token_slices.h"

#include <algorithm>
#include <optional>

#include "tokenizer/tokenizer_info.h"

namespace xg {

std::string LoopDfa::Key() const {
  std::vector<int32_t> runs;
  for (int32_t s = 0; s < num_states; ++s) {
    const int32_t* row = &next[static_cast<size_t>(s) * 256];
    for (int b = 0; b < 256;) {
      int e = b + 1;
      while (e < 256 && row[e] == row[b]) ++e;
      if (row[b] >= 0) runs.insert(runs.end(), {b, e - 1, row[b]});
      b = e;
    }
    runs.push_back(-1);
  }
  return std::string(reinterpret_cast<const char*>(runs.data()), runs.size() * sizeof(int32_t));
}

namespace {

// Whether the loop reads t's bytes from..end whole, starting at loop state q.
bool ReadsWhole(const LoopDfa& loop, int32_t q, std::string_view t, size_t from) {
  for (size_t j = from; j < t.size(); ++j)
    if ((q = loop.next[static_cast<size_t>(q) * 256 + static_cast<uint8_t>(t[j])]) < 0) return false;
  return true;
}

}  // namespace

TokenSlice ComputeTokenSlice(const TokenizerInfo& tok, const LoopDfa& loop) {
  TokenSlice out;
  out.accepted_bits.assign(tok.MaskWords(), 0);
  const int32_t n = tok.NumSorted();
  std::vector<int32_t> at(tok.MaxTokenBytes() + 1, 0);  // at[d]: loop state after d bytes
  std::vector<int32_t> started(tok.MaxTokenBytes() + 1, 0);  // started[d]: iterations begun in d bytes
  std::vector<uint8_t> iterations(n, 0);  // per accepted sorted position, capped at kMaxChainBudget + 1
  int32_t depth = 0;
  for (int32_t k = 0; k < n;) {
    std::string_view t = tok.SortedToken(k);
    const int32_t len = static_cast<int32_t>(t.size());
    depth = std::min(depth, k > 0 ? tok.Lcp(k) : 0);
    bool dead = false;
    for (; depth < len; ++depth) {
      int32_t nx = loop.next[static_cast<size_t>(at[depth]) * 256 + static_cast<uint8_t>(t[depth])];
      if (nx < 0) {
        dead = true;
        break;
      }
      at[depth + 1] = nx;
      started[depth + 1] = started[depth] + (at[depth] == 0);
    }
    if (!dead) {
      iterations[k] = static_cast<uint8_t>(std::min(started[len], TokenSlice::kMaxChainBudget + 1));
      const int32_t id = tok.SortedId(k);
      out.accepted_bits[id >> 5] |= 1u << (id & 31);
      ++out.num_accepted;
      ++k;
      continue;
    }
    // Every token sharing the first depth+1 bytes leaves the loop at the same byte.
    const int32_t end = tok.RunEnd(k, depth + 1);
    for (; k < end; ++k) out.complement.push_back(k);
  }
  if (out.num_accepted >= n / 4) {
    out.tail_words = (n + 63) / 64;
    out.tails.assign(static_cast<size_t>(TokenSlice::kMaxTailOffset) * out.tail_words, 0);
    for (int32_t k = 0; k < n; ++k) {
      std::string_view t = tok.SortedToken(k);
      const int32_t len = static_cast<int32_t>(t.size());
      for (int32_t i = 0; i < std::min(len, TokenSlice::kMaxTailOffset); ++i)
        if (ReadsWhole(loop, 0, t, i)) out.tails[static_cast<size_t>(i) * out.tail_words + (k >> 6)] |= uint64_t{1} << (k & 63);
    }
    // Entered rows: from each state one byte from the entry, bytes 1.. of every token.
    out.entered_row.assign(loop.num_states, -1);
    int32_t num_entered = 0;
    for (int b = 0; b < 256; ++b) {
      const int32_t q = loop.next[b];
      if (q > 0 && out.entered_row[q] < 0) out.entered_row[q] = num_entered++;
    }
    out.entered.assign(static_cast<size_t>(num_entered) * out.tail_words, 0);
    for (int32_t q = 1; q < loop.num_states; ++q) {
      if (out.entered_row[q] < 0) continue;
      uint64_t* row = out.entered.data() + static_cast<size_t>(out.entered_row[q]) * out.tail_words;
      for (int32_t k = 0; k < n; ++k) {
        std::string_view t = tok.SortedToken(k);
        if (t.size() >= 2 && ReadsWhole(loop, q, t, 1)) row[k >> 6] |= uint64_t{1} << (k & 63);
      }
    }
    // Chain rows: each token in the row of its own iteration count, then every row ORed into the next.
    const int32_t rows = TokenSlice::kMaxChainBudget;
    out.chain.assign(static_cast<size_t>(rows) * out.tail_words, 0);
    for (int32_t k = 0; k < n; ++k) {
      const int32_t it = iterations[k];
      if (it >= 1 && it <= rows) out.chain[static_cast<size_t>(it - 1) * out.tail_words + (k >> 6)] |= uint64_t{1} << (k & 63);
    }
    std::vector<int32_t> with_count(rows + 2, 0);
    for (uint8_t it : iterations) ++with_count[it];
    out.chain_counts.assign(rows, 0);
    for (int32_t r = 0; r < rows; ++r) {
      uint64_t* row = out.chain.data() + static_cast<size_t>(r) * out.tail_words;
      if (r > 0)
        for (int32_t w = 0; w < out.tail_words; ++w) row[w] |= row[w - out.tail_words];
      out.chain_counts[r] = (r > 0 ? out.chain_counts[r - 1] : 0) + with_count[r + 1];
    }
    const size_t id_words = out.accepted_bits.size();
    out.chain_by_id.assign(static_cast<size_t>(rows) * id_words, 0);
    for (int32_t k = 0; k < n; ++k) {
      const int32_t it = iterations[k], id = tok.SortedId(k);
      if (it < 1 || it > rows) continue;
      out.chain_by_id[static_cast<size_t>(it - 1) * id_words + (id >> 5)] |= 1u << (id & 31);
    }
    for (int32_t r = 1; r < rows; ++r)
      for (size_t w = 0; w < id_words; ++w)
        out.chain_by_id[r * id_words + w] |= out.chain_by_id[(r - 1) * id_words + w];
  }
  if (out.num_accepted < n / 4) {
    // Walking the whole trie is about as cheap as walking this complement: keep only the count,
    // so that narrow loops (digits, whitespace) cost the cache a few bytes.
    out.accepted_bits = {};
    out.complement = {};
  }
  out.complement.shrink_to_fit();
  return out;
}

std::shared_ptr<const TokenSlice> TokenSliceCache::Get(const TokenizerInfo& tok, const LoopDfa& loop) {
  std::string key = loop.Key();
  std::optional<std::promise<std::shared_ptr<const TokenSlice>>> promise;  // made only to compute (it allocates)
  std::shared_future<std::shared_ptr<const TokenSlice>> computed_elsewhere;
  bool keep = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slices_.find(key);
    if (it != slices_.end()) {
      computed_elsewhere = it->second;
    } else if (slices_.size() < kMaxSlices) {
      slices_.emplace(key, promise.emplace().get_future().share());
      keep = true;
    }
  }
  if (computed_elsewhere.valid()) return computed_elsewhere.get();  // waits outside the lock
  if (!keep) return nullptr;  // full: the caller walks without a slice (a slice costs more than one walk)
  try {
    auto slice = std::make_shared<const TokenSlice>(ComputeTokenSlice(tok, loop));
    {
      std::lock_guard<std::mutex> lock(mu_);
      bytes_ += slice->MemoryBytes() + key.size() + 64;  // + key and map node
    }
    promise->set_value(slice);
    return slice;
  } catch (...) {
    promise->set_exception(std::current_exception());  // waiters get the error; the next caller retries
    std::lock_guard<std::mutex> lock(mu_);
    slices_.erase(key);
    throw;
  }
}

size_t TokenSliceCache::NumSlices() const {
  std::lock_guard<std::mutex> lock(mu_);
  return slices_.size();
}

size_t TokenSliceCache::MemoryBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace xg
