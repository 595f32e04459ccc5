#include "compiler/token_mask_cache.h"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <tuple>
#include <type_traits>
#include <unordered_set>

#include "compiler/byte_loop.h"
#include "compiler/parse_config_cache.h"
#include "parser/earley_parser.h"

namespace xg {

void TokenMaskEntry::OrAccepted(const TokenizerInfo& tok, uint32_t* words, std::vector<uint32_t>* scratch) const {
  const int32_t n = tok.MaskWords();
  switch (storage) {
    case Storage::kAcceptedList:
      for (int32_t id : ids) words[id >> 5] |= 1u << (id & 31);
      return;
    case Storage::kBitset:
      for (int32_t i = 0; i < n; ++i) words[i] |= bits[i];
      return;
    case Storage::kRejectedList: {
      std::vector<uint32_t>& s = *scratch;
      const std::vector<uint32_t>& normal = tok.NormalMask();
      s.assign(normal.begin(), normal.end());  // sized here, on first use: most fills never need it
      for (int32_t id : ids) s[id >> 5] &= ~(1u << (id & 31));
      for (int32_t u : uncertain) {
        int32_t id = tok.SortedId(u);
        s[id >> 5] &= ~(1u << (id & 31));
      }
      for (int32_t i = 0; i < n; ++i) words[i] |= s[i];
      return;
    }
  }
}

void TokenMaskEntry::WriteAccepted(const TokenizerInfo& tok, uint32_t* words) const {
  const int32_t n = tok.MaskWords();
  switch (storage) {
    case Storage::kAcceptedList:
      std::fill(words, words + n, 0u);
      for (int32_t id : ids) words[id >> 5] |= 1u << (id & 31);
      return;
    case Storage::kBitset:
      std::copy(bits.begin(), bits.end(), words);
      return;
    case Storage::kRejectedList: {
      const std::vector<uint32_t>& normal = tok.NormalMask();
      std::copy(normal.begin(), normal.end(), words);
      for (int32_t id : ids) words[id >> 5] &= ~(1u << (id & 31));
      for (int32_t u : uncertain) {
        int32_t id = tok.SortedId(u);
        words[id >> 5] &= ~(1u << (id & 31));
      }
      return;
    }
  }
}

namespace {

// What a token's walk found.
struct TokenOutcome {
  bool alive;          // every byte was scanned
  uint8_t end_flags;   // ParseConfigCache flags of the last configuration (alive only)
  bool follow_done;    // a follow-context rule completed at some byte up to the end or the death
};

// The number of bytes `state` has an edge on (four popcounts of its live-byte set).
int32_t NumLiveBytes(const GrammarFsm& fsm, int32_t state) {
  const uint64_t* live = fsm.LiveBytes(state);
  int32_t n = 0;
  for (int w = 0; w < 4; ++w) n += __builtin_popcountll(live[w]);
  return n;
}

// Tails for the walk (token_slices.h): per configuration, the slice of a wide lexical loop one of
// its lineage-0 items is in (at the loop's head, or at a state one byte in), if any. Looked up once
// per configuration of the walk.
class TailFinder {
 public:
  // The memo lives in per-thread buffers (one walk at a time per thread), cleared per walk: a
  // literal's walk meets a few configurations, and allocating the memo cost as much as using it.
  TailFinder(const ParseConfigCache& cache, LoopSlices& slices)
      : cache_(cache), slices_(slices), checked_(Buffers().checked), found_(Buffers().found) {
    Clear();
  }
  // The tail row for `depth` bytes into the walk at configuration `config`, or null: the row of
  // the wide loop one of its lineage-0 items is in, at that item's loop state (its head, or a state
  // the head reaches in one byte when depth is 1).
  const uint64_t* RowAt(int32_t config, int32_t depth) {
    if (depth >= TokenSlice::kMaxTailOffset) return nullptr;
    if (static_cast<size_t>(config) >= checked_.size()) {
      const size_t n = std::max<size_t>({static_cast<size_t>(config) + 1, 2 * checked_.size(), 16});
      checked_.resize(n, 0), found_.resize(n, {nullptr, 0});
    }
    if (!checked_[config]) {
      checked_[config] = 1;
      found_[config] = {nullptr, 0};
      for (const EarleyItem& it : cache_.Items(config)) {
        if (it.lineage != 0) continue;
        int32_t local = 0;
        const TokenSlice* slice = slices_.MemberOf(it.state, &local);
        if (slice && !slice->tails.empty()) {  // a useful slice's
          found_[config] = {slice, local};
          if (local == 0) break;  // (a head's rows serve every depth)
        }
      }
    }
    const Found& f = found_[config];
    if (f.slice == nullptr) return nullptr;
    if (f.local == 0) return f.slice->TailRow(depth);
    return depth == 1 ? f.slice->EnteredRow(f.local) : nullptr;
  }
  // Forgets every configuration (keeping the buffers, up to a typical walk's size).
  void Clear() {
    checked_.assign(std::min<size_t>(checked_.size(), 64), 0);
    found_.resize(checked_.size(), {nullptr, 0});
  }

  // Asked for every item of every configuration a walk meets, so the edge count comes from the
  // live-byte set (four popcounts) and only wide states look at their row.
  static bool IsWideLoopHead(const GrammarFsm& fsm, int32_t state) {
    if (NumLiveBytes(fsm, state) < kMinWideLoopBytes) return false;
    const ByteRow row = fsm.NextRow(state);
    for (int b = 0; b < 256; ++b)
      if (row[b] == state) return true;
    return false;
  }

 private:
  struct Found {
    const TokenSlice* slice;  // held by a LoopSlices
    int32_t local;            // the item's state in the slice's loop
  };
  struct Memo {
    std::vector<uint8_t> checked;
    std::vector<Found> found;
  };
  static Memo& Buffers() {
    thread_local Memo memo;
    return memo;
  }
  const ParseConfigCache& cache_;
  LoopSlices& slices_;
  std::vector<uint8_t>& checked_;
  std::vector<Found>& found_;
};

// Where a full walk goes on after sorted(pos) = t died at byte d from a configuration whose live
// bytes are `live` (ParseConfigCache::LiveBytes), when none of the dead need reporting: the first
// later token whose byte d is live, or the first one outside t[0..d)'s run. Every token skipped
// shares t[0..d) and has a dead byte at d. The target is the first token >= t[0..d) + b, b the
// next live byte after t[d] (or the first token not starting with t[0..d) when there is none);
// that predicate is monotone over the sorted vocabulary, so it is found by galloping from pos.
// A state that scans a few bytes thus costs a few searches, not one step per distinct first byte.
int32_t NextLiveSibling(const TokenizerInfo& tok, int32_t pos, std::string_view t, int32_t d,
                        const uint64_t* live) {
  int32_t b = static_cast<uint8_t>(t[d]) + 1;
  while (b < 256) {
    const uint64_t rest = live[b >> 6] >> (b & 63);
    if (rest) {
      b += __builtin_ctzll(rest);
      break;
    }
    b = (b | 63) + 1;
  }
  const std::string_view prefix = t.substr(0, d);
  std::string target(prefix);
  if (b < 256) target.push_back(static_cast<char>(b));
  auto reached = [&](int32_t j) {
    const std::string_view u = tok.SortedToken(j);
    if (b == 256) return u.substr(0, d) != prefix;
    return u.compare(target) >= 0;  // std::char_traits<char> compares bytes as unsigned char
  };
  const int32_t n = tok.NumSorted();
  int32_t lo = pos + 1, hi = pos + 1;
  for (int32_t step = 1; hi < n && !reached(hi); step *= 2) lo = hi + 1, hi = lo + step;
  hi = std::min(hi, n);
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo) / 2;
    if (reached(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// The first position in [from, end) whose bit in `row` is clear, or end.
int32_t NextClearBit(const uint64_t* row, int32_t from, int32_t end) {
  int32_t w = from >> 6;
  uint64_t x = ~row[w] & (~uint64_t{0} << (from & 63));
  while (x == 0) {
    if ((++w << 6) >= end) return end;
    x = ~row[w];
  }
  return std::min(end, (w << 6) + __builtin_ctzll(x));
}

// Sets bits [lo, hi) of `bits`.
void SetBitRange(uint64_t* bits, int32_t lo, int32_t hi) {
  if (lo >= hi) return;
  const int32_t wl = lo >> 6, wh = (hi - 1) >> 6;
  const uint64_t first = ~uint64_t{0} << (lo & 63);
  const uint64_t last = ~uint64_t{0} >> (63 - ((hi - 1) & 63));
  if (wl == wh) {
    bits[wl] |= first & last;
    return;
  }
  bits[wl] |= first;
  for (int32_t w = wl + 1; w < wh; ++w) bits[w] = ~uint64_t{0};
  bits[wh] |= last;
}

// Sorts distinct token ids (< vocab_size) ascending: a long list through a bitset over the
// vocabulary (linear; sorting thousands of rejected ids cost as much as the walk that found them).
void SortTokenIds(std::vector<int32_t>* ids, int32_t vocab_size) {
  if (ids->size() < 512) {
    std::sort(ids->begin(), ids->end());
    return;
  }
  std::vector<uint64_t> seen((vocab_size + 63) / 64, 0);
  for (int32_t id : *ids) seen[id >> 6] |= uint64_t{1} << (id & 63);
  ids->clear();
  for (size_t w = 0; w < seen.size(); ++w)
    for (uint64_t x = seen[w]; x; x &= x - 1) ids->push_back(static_cast<int32_t>(w << 6) + __builtin_ctzll(x));
}

// Walks tokens in sorted order from the cache's initial configuration, reusing the common prefix
// with the previous token, and calls report(position, outcome) for each token except those that
// die without any follow rule completing (rejected outright: most of the vocabulary, never
// listed). `subset` (ascending sorted positions) restricts the walk; null walks the whole
// vocabulary. A prefix that dies rejects every token under it at once (RunEnd skips the run
// without reading the tokens). With `tails`, the walk of the whole vocabulary reports the tokens a
// wide loop reads whole as ranges: report_range(lo, hi, outcome) for the positions [lo, hi), all
// with the same outcome.
template <typename Report, typename ReportRange = std::nullptr_t>
void WalkTokens(ParseConfigCache& cache, const TokenizerInfo& tok, const std::vector<int32_t>* subset,
                uint8_t leave_flags, Report&& report, TailFinder* tails = nullptr,
                ReportRange&& report_range = nullptr) {
  constexpr size_t kMaxConfigs = 1 << 14;  // ~16 MiB of transition rows
  constexpr bool kHasRangeReport = !std::is_same_v<std::decay_t<ReportRange>, std::nullptr_t>;
  const int32_t count = subset ? static_cast<int32_t>(subset->size()) : tok.NumSorted();
  // Tails skip runs of the whole vocabulary.
  const bool use_tails = kHasRangeReport && tails != nullptr && subset == nullptr;
  // Sized for the longest token up front (scan grows them only for a longer subset token).
  std::vector<int32_t> config(tok.MaxTokenBytes() + 1, cache.Initial());  // config[d]: after d bytes
  std::vector<uint8_t> follow_done(tok.MaxTokenBytes() + 1, 0);  // a follow rule completed in bytes 1..d
  // Scans u from byte d (config[0..d] hold u's first d bytes), filling config and follow_done.
  // Returns where it stopped: u.size() when u is alive (*dead false), the byte it died at (*dead
  // true), or, with stop_at_tails, the depth of the first node whose configuration enters a wide
  // loop (*tail_node set to it).
  auto scan = [&](std::string_view u, int32_t d, bool stop_at_tails, bool* dead, int32_t* tail_node) {
    const int32_t n = static_cast<int32_t>(u.size());
    if (static_cast<int32_t>(config.size()) < n + 1) config.resize(n + 1), follow_done.resize(n + 1, 0);
    *dead = false;
    for (; d < n; ++d) {
      const int32_t next = cache.Step(config[d], static_cast<uint8_t>(u[d]));
      if (next == ParseConfigCache::kDead) {
        *dead = true;
        return d;
      }
      config[d + 1] = next;
      follow_done[d + 1] = follow_done[d] | ((cache.Flags(next) & leave_flags) != 0);
      if (stop_at_tails && tails->RowAt(next, d + 1)) {
        *tail_node = d + 1;
        return d + 1;
      }
    }
    return n;
  };
  // Token `pos` of the whole vocabulary died at byte d: so does every token sharing its first d+1
  // bytes; those a follow rule completed for are reported. Returns the end of that run.
  auto report_dead_run = [&](int32_t pos, int32_t d) {
    const TokenOutcome outcome{false, 0, follow_done[d] != 0};
    const int32_t end = tok.RunEnd(pos, d + 1);
    if (outcome.follow_done)
      for (int32_t j = pos; j < end; ++j) report(j, outcome);
    return end;
  };
  int32_t depth = 0;
  std::string_view prev;
  for (int32_t k = 0; k < count;) {
    const int32_t pos = subset ? (*subset)[k] : k;
    std::string_view t = tok.SortedToken(pos);
    int32_t lcp = 0;
    if (k > 0) {
      if (subset) {
        size_t m = std::min(prev.size(), t.size());
        while (static_cast<size_t>(lcp) < m && prev[lcp] == t[lcp]) ++lcp;
      } else {
        lcp = tok.Lcp(pos);
      }
    }
    prev = t;
    if (cache.Size() > kMaxConfigs) {  // over budget: start afresh (ids are invalidated)
      cache.Clear();
      if (tails) tails->Clear();
      depth = 0;
      config[0] = cache.Initial();
    }
    const int32_t len = static_cast<int32_t>(t.size());
    bool dead = false;
    int32_t tail_node = -1;  // depth of a new trie node whose configuration enters a wide loop
    depth = scan(t, std::min(depth, lcp), use_tails, &dead, &tail_node);
    if constexpr (kHasRangeReport) {
      if (tail_node >= 0) {
        // Every token under this node whose rest is read whole by the loop is alive at lineage 0
        // (accepted): the run of the node's tokens is a range of sorted positions, so those are
        // reported a range at a time off the slice's tail row; only the others are parsed, from this
        // node's configuration.
        const int32_t e = tail_node;
        const uint64_t* row = tails->RowAt(config[e], e);
        const TokenOutcome read_whole{true, ParseConfigCache::kHasLineage0, follow_done[e] != 0};
        const int32_t end = tok.RunEnd(pos, e);
        std::string_view prev_walked;
        int32_t inner = e;  // config[0..inner] hold the prefix of prev_walked (or of the node)
        for (int32_t j = pos; j < end;) {
          const int32_t z = NextClearBit(row, j, end);
          if (z > j) {
            report_range(j, z, read_whole);
            j = z;
            continue;
          }
          std::string_view u = tok.SortedToken(j);
          int32_t d = e;
          if (!prev_walked.empty()) {
            const int32_t m = static_cast<int32_t>(std::min(prev_walked.size(), u.size()));
            while (d < m && prev_walked[d] == u[d]) ++d;
            d = std::min(d, inner);
          }
          bool udead = false;
          inner = scan(u, d, false, &udead, nullptr);
          prev_walked = u;
          if (!udead) {
            report(j, TokenOutcome{true, cache.Flags(config[u.size()]), follow_done[u.size()] != 0});
            ++j;
          } else {
            // (No token of the dead run has its tail bit: the loop item would have read those bytes
            // too, and the configuration would not be dead.)
            j = report_dead_run(j, inner);
          }
        }
        depth = e;  // config[0..e] still hold the node's prefix, shared by every token of the run
        k = end;
        continue;
      }
    }
    if (!dead) {
      report(pos, TokenOutcome{true, cache.Flags(config[len]), follow_done[len] != 0});
      ++k;
      continue;
    }
    // Every following token that shares the first depth+1 bytes dies at the same byte.
    if (subset) {
      const TokenOutcome outcome{false, 0, follow_done[depth] != 0};
      if (outcome.follow_done) report(pos, outcome);
      ++k;
      while (k < count) {
        std::string_view u = tok.SortedToken((*subset)[k]);
        if (static_cast<int32_t>(u.size()) <= depth || u.compare(0, depth + 1, t, 0, depth + 1) != 0) break;
        if (outcome.follow_done) report((*subset)[k], outcome);
        prev = u;
        ++k;
      }
    } else if (follow_done[depth]) {
      k = report_dead_run(pos, depth);
    } else {
      k = NextLiveSibling(tok, pos, t, depth, cache.LiveBytes(config[depth]));
    }
  }
}

}  // namespace

LoopSlices::LoopSlices(const GrammarFsm& fsm, const TokenizerInfo& tok)
    : fsm_(fsm), tok_(tok), flags_(new std::atomic<uint8_t>[fsm.NumStates()]) {
  for (int32_t s = 0; s < fsm.NumStates(); ++s) flags_[s].store(0, std::memory_order_relaxed);
}

const TokenSlice* LoopSlices::Of(int32_t state) {
  // Only a state that loops on some byte itself can read most tokens whole (string bodies, free
  // text); this keeps the loop search off the many states that cannot.
  uint8_t flags = flags_[state].load(std::memory_order_relaxed);
  if (!(flags & kWideKnown)) {
    flags = kWideKnown | (TailFinder::IsWideLoopHead(fsm_, state) ? kWide : 0);
    flags_[state].fetch_or(flags, std::memory_order_relaxed);
  }
  if (!(flags & kWide)) return nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = memo_.find(state);
    if (it != memo_.end()) return it->second.get();
  }
  std::shared_ptr<const TokenSlice> slice;
  LoopDfa loop;
  std::vector<int32_t> members;
  if (ByteLoopOf(fsm_, state, &loop, -1, &members)) slice = tok_.Slices().Get(tok_, loop);
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = memo_.emplace(state, std::move(slice));  // a racing thread's equal slice wins
  if (inserted && it->second && it->second->Useful())
    for (size_t i = 1; i < members.size(); ++i) {
      members_.emplace(members[i], Member{it->second.get(), static_cast<int32_t>(i)});
      flags_[members[i]].fetch_or(kMember, std::memory_order_relaxed);
    }
  return it->second.get();
}

const TokenSlice* LoopSlices::MemberOf(int32_t state, int32_t* local) {
  *local = 0;
  if (const TokenSlice* head = Of(state)) return head;
  // Asked for every item of every configuration a walk meets: most states are in no loop, and the
  // flag answers for them without the lock (a flag set by a racing Of() is seen now or next time).
  if (!(flags_[state].load(std::memory_order_relaxed) & kMember)) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(state);
  if (it == members_.end()) return nullptr;
  *local = it->second.local;
  return it->second.slice;
}

int32_t LoopSlices::ChainBudget(int32_t s, const LoopDfa& loop, ChainMemo* memo) const {
  // best(c, q): the most iterations r such that every loop path from q that begins at most r
  // iterations is a byte path from automaton state c (-1: some path within the current iteration
  // is not). A byte read at q = 0 begins an iteration. A pair met again while it is being computed
  // (an automaton cycle, i.e. no chain) counts as -1, which only lowers the budget: every value
  // memoized is a sound lower bound, so the memo is shared by every head of the chain. Past
  // kMaxPairs new pairs the search gives up (budget 0, memo dropped: the unfinished values are not).
  // The recursion is at most kMaxPairs deep (each frame is a new pair): small enough for any thread's
  // stack, and far above a 32-character chain of a 13-state string body (~400 pairs).
  constexpr int32_t kMaxPairs = 2048;
  constexpr int16_t kPending = -2;
  const int32_t cap = TokenSlice::kMaxChainBudget;
  int32_t new_pairs = 0;
  bool gave_up = false;
  auto best = [&](auto&& self, int32_t c, int32_t q) -> int32_t {
    const int64_t key = static_cast<int64_t>(c) * loop.num_states + q;
    auto [it, inserted] = memo->budget.emplace(key, kPending);
    if (!inserted) return it->second == kPending ? -1 : it->second;
    if (++new_pairs > kMaxPairs) gave_up = true;
    int32_t r = cap;
    const ByteRow row = fsm_.NextRow(c);
    int32_t last_q2 = -1, last_c2 = -2;  // runs of one (q2, c2) pair (character ranges) are checked once
    for (int b = 0; b < 256 && !gave_up; ++b) {
      const int32_t q2 = loop.next[static_cast<size_t>(q) * 256 + b];
      if (q2 < 0) continue;
      const int32_t c2 = row[b];
      if (q2 == last_q2 && c2 == last_c2) continue;
      last_q2 = q2, last_c2 = c2;
      if (q == 0) {
        r = std::min(r, c2 < 0 ? 0 : 1 + self(self, c2, q2));  // -1 below: this iteration cannot finish
      } else {
        r = std::min(r, c2 < 0 ? -1 : self(self, c2, q2));
      }
      if (r < 0 || (q == 0 && r == 0)) break;
    }
    r = std::min(r, cap);
    memo->budget[key] = static_cast<int16_t>(r);
    return r;
  };
  const int32_t r = best(best, s, 0);
  if (gave_up) {
    memo->budget.clear();
    return 0;
  }
  return std::max(r, 0);
}

bool LoopSlices::ChainEndsDead(int32_t s, const LoopDfa& loop, int32_t r, ChainMemo* memo) const {
  // dead(c, q, r): every loop path from (c, q) that begins at most r iterations is a byte path from
  // c through states that are not final and have no rule edge, and at the byte that would begin one
  // more, the automaton state has no edge on it. Every state on the way counts, c included: at a
  // final state the parser may complete the rule, and at a rule edge predict another, and either
  // may go on to read the rest of a token the loop reads whole (`w ::= [^"] | [^"]{2} "\""` under
  // `root ::= w "d"*` accepts "ddd" by completing w after one byte). Memoized (shared by the
  // chain's heads); a pair met again while it is being computed counts as false (sound: no claim).
  // Past kMaxNodes new nodes (also the recursion's depth bound), no claim.
  constexpr int32_t kMaxNodes = 2048;
  constexpr int8_t kPending = -1;
  int32_t new_nodes = 0;
  bool gave_up = false;
  auto dead = [&](auto&& self, int32_t c, int32_t q, int32_t left) -> bool {
    const int64_t key =
        (static_cast<int64_t>(c) * loop.num_states + q) * (TokenSlice::kMaxChainBudget + 1) + left;
    auto [it, inserted] = memo->dead.emplace(key, kPending);
    if (!inserted) return it->second == 1;
    if (++new_nodes > kMaxNodes) gave_up = true;
    const bool ends_here = q == 0 && left == 0;
    bool ok = !gave_up && !fsm_.IsFinal(c) && fsm_.RuleEdgesBegin(c) == fsm_.RuleEdgesEnd(c);
    const ByteRow row = fsm_.NextRow(c);
    int32_t last_q2 = -1, last_c2 = -2;  // runs of one (q2, c2) pair are checked once
    for (int b = 0; b < 256 && ok; ++b) {
      const int32_t q2 = loop.next[static_cast<size_t>(q) * 256 + b];
      if (q2 < 0) continue;
      const int32_t c2 = row[b];
      if (q2 == last_q2 && c2 == last_c2) continue;
      last_q2 = q2, last_c2 = c2;
      if (ends_here) {
        ok = c2 < 0;
      } else {
        ok = c2 >= 0 && self(self, c2, q2, q == 0 ? left - 1 : left);
      }
    }
    memo->dead[key] = ok ? 1 : 0;
    return ok;
  };
  const bool ok = dead(dead, s, 0, r);
  if (gave_up) {
    memo->dead.clear();
    return false;
  }
  return ok;
}

const TokenSlice* LoopSlices::ChainOf(int32_t state, int32_t* budget, bool* ends_dead) {
  *budget = 0;
  *ends_dead = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = chains_.find(state);
    if (it != chains_.end()) {
      *budget = it->second.budget;
      *ends_dead = it->second.ends_dead;
      return it->second.slice.get();
    }
  }
  Chain chain;
  // A chain head reads nearly every byte (as a wide loop head does) and is not itself a loop.
  if (NumLiveBytes(fsm_, state) >= kMinWideLoopBytes && Of(state) == nullptr) {
    // The chain's next link: where a printable ASCII byte leads (a one-byte iteration of a string
    // body, say); the candidate loop is the step from here to there, folded.
    const ByteRow row = fsm_.NextRow(state);
    int32_t next = -1;
    for (int b = 0x20; b < 0x7f && next < 0; ++b)
      if (row[b] >= 0 && row[b] != state && fsm_.HasBytes(row[b])) next = row[b];
    // A link that is a loop itself (a key's first character, then the string body) is no chain.
    if (next >= 0 && TailFinder::IsWideLoopHead(fsm_, next)) next = -1;
    LoopDfa loop;
    if (next >= 0 && ByteLoopOf(fsm_, state, &loop, next)) {
      std::lock_guard<std::mutex> lock(chain_mu_);  // the memo of this loop's chains
      ChainMemo& memo = chain_memos_[loop.Key()];
      const int32_t r = ChainBudget(state, loop, &memo);
      if (r >= 2) {  // (one iteration is a single character: the walk finds those cheaply)
        std::shared_ptr<const TokenSlice> slice = tok_.Slices().Get(tok_, loop);
        if (slice && slice->Useful() && !slice->chain.empty())
          chain = {std::move(slice), r, ChainEndsDead(state, loop, r, &memo)};
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  const Chain& held = chains_.emplace(state, std::move(chain)).first->second;  // a racing thread's equal one wins
  *budget = held.budget;
  *ends_dead = held.ends_dead;
  return held.slice.get();
}

const TokenSlice* LoopSlices::ItemLoopOf(int32_t state) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = item_loops_.find(state);
    if (it != item_loops_.end()) return it->second.get();
  }
  std::shared_ptr<const TokenSlice> slice;
  // X's states from its start by byte edges (bounded): no rule edges, and a single final state that
  // has no edges at all (so each X is one item, and the loop X* is X with that state folded onto s).
  std::vector<int32_t> reach = {state};
  std::unordered_set<int32_t> seen = {state};
  int32_t final_state = -1;
  bool ok = !fsm_.IsFinal(state);
  for (size_t i = 0; ok && i < reach.size(); ++i) {
    const int32_t c = reach[i];
    if (fsm_.RuleEdgesBegin(c) != fsm_.RuleEdgesEnd(c)) ok = false;
    if (fsm_.IsFinal(c)) {
      if (fsm_.HasBytes(c) || (final_state >= 0 && final_state != c)) ok = false;
      final_state = c;
      continue;
    }
    const ByteRow row = fsm_.NextRow(c);
    for (int b = 0; ok && b < 256; ++b)
      if (row[b] >= 0 && seen.insert(row[b]).second) {
        if (static_cast<int32_t>(reach.size()) >= kMaxForwardStates) ok = false;
        reach.push_back(row[b]);
      }
  }
  LoopDfa loop;
  if (ok && final_state >= 0 && ByteLoopOf(fsm_, state, &loop, final_state)) {
    slice = tok_.Slices().Get(tok_, loop);
    if (slice && (!slice->Useful() || slice->chain.empty())) slice = nullptr;
  }
  std::lock_guard<std::mutex> lock(mu_);
  return item_loops_.emplace(state, std::move(slice)).first->second.get();
}

std::optional<TokenMaskEntry> BuildLiteralMaskEntry(const GrammarFsm& fsm, const TokenizerInfo& tok,
                                                    int32_t state, std::string* read) {
  // The byte that state c reads, when c is a literal's state: exactly one byte edge, no rule edge,
  // not final. Else -1.
  auto only_byte = [&](int32_t c) {
    if (fsm.IsFinal(c) || fsm.RuleEdgesBegin(c) != fsm.RuleEdgesEnd(c)) return -1;
    const uint64_t* live = fsm.LiveBytes(c);
    int b = -1;
    for (int w = 0; w < 4; ++w) {
      if (!live[w]) continue;
      if (b >= 0 || (live[w] & (live[w] - 1))) return -1;
      b = w * 64 + __builtin_ctzll(live[w]);
    }
    return b;
  };
  if (only_byte(state) < 0) return std::nullopt;
  // [lo, hi): the sorted tokens that begin with the j bytes read so far. Within it the tokens equal
  // to those bytes (several ids can share bytes) come first; the others are ordered by byte j. Each
  // step narrows it to one byte; once it is empty no token reaches further, so the walk along the
  // literal stops there. (A cycle of literal states could never reach a final state: trimmed
  // automata have none, and the range empties within MaxTokenBytes steps anyway.)
  int32_t lo = 0, hi = tok.NumSorted();
  std::vector<int32_t> ids;
  if (read) read->clear();
  for (int32_t c = state, j = 0;; ++j) {
    while (lo < hi && tok.SortedToken(lo).size() == static_cast<size_t>(j)) ++lo;  // accepted last step
    if (lo == hi) break;
    const int b = only_byte(c);
    // The literal ends at c; a token that reads it whole and goes on depends on what follows: walk.
    if (b < 0) return std::nullopt;
    // The first position in [x, y) whose byte j is above `limit` (those bytes ascend there).
    auto first_above = [&](int32_t x, int32_t y, int limit) {
      while (x < y) {
        const int32_t m = x + (y - x) / 2;
        if (static_cast<uint8_t>(tok.SortedToken(m)[j]) <= limit) x = m + 1;
        else y = m;
      }
      return x;
    };
    if (j == 0) {
      std::tie(lo, hi) = tok.FirstByteRange(static_cast<uint8_t>(b));
    } else {
      lo = first_above(lo, hi, b - 1);
      hi = first_above(lo, hi, b);
    }
    // Tokens that end here stay on the literal, inside the rule: accepted in any context.
    for (int32_t p = lo; p < hi && tok.SortedToken(p).size() == static_cast<size_t>(j) + 1; ++p)
      ids.push_back(tok.SortedId(p));
    if (read) read->push_back(static_cast<char>(b));
    c = fsm.Next(c, b);
  }
  // A list is the smallest form unless the vocabulary is tiny; the walk picks the form otherwise.
  const size_t n = static_cast<size_t>(tok.NumSorted());
  if (ids.size() >= static_cast<size_t>(tok.MaskWords()) || ids.size() > n - ids.size()) return std::nullopt;
  TokenMaskEntry e;
  e.storage = TokenMaskEntry::Storage::kAcceptedList;
  e.num_accepted = static_cast<int32_t>(ids.size());
  std::sort(ids.begin(), ids.end());
  e.ids = std::move(ids);
  return e;
}

TokenMaskEntry BuildTokenMaskEntry(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t state,
                                   LoopSlices* slices) {
  if (std::optional<TokenMaskEntry> e = BuildLiteralMaskEntry(fsm, tok, state)) return std::move(*e);
  return WalkTokenMaskEntry(fsm, tok, state, slices);
}

TokenMaskEntry WalkTokenMaskEntry(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t state,
                                  LoopSlices* slices) {
  // No follow context: a token that outlives the rule is judged by the context at run time (this
  // is what makes the entry a function of the rule's closure alone; rule_mask_cache.h).
  static const std::vector<int32_t> kNoFollow;
  std::optional<LoopSlices> own_slices;
  if (slices == nullptr) slices = &own_slices.emplace(fsm, tok);
  ParseConfigCacheLease lease(fsm, state, &kNoFollow);
  ParseConfigCache& cache = *lease;
  const int32_t n = tok.NumSorted();
  // The tokens s's lexical loop reads whole are accepted (alive at lineage 0 in any context); the
  // parser walks the rest (a slice that reads little of the vocabulary would save the walk little).
  const TokenSlice* slice = slices->Of(state);
  if (slice && !slice->Useful()) slice = nullptr;
  // Or the head of an unrolled repetition of a loop's iteration: the tokens within its budget are
  // accepted up front, and the walk parses the rest.
  int32_t budget = 0;
  bool ends_dead = false;
  const TokenSlice* chain = slice ? nullptr : slices->ChainOf(state, &budget, &ends_dead);
  // Accepted: the positions the walk parsed (ascending), and, once a loop's rows accept tokens a
  // range at a time (most of the vocabulary at a string's first character), a bitset over sorted
  // positions. A literal's state accepts a handful of tokens: it never allocates the bitset.
  // Uncertain: positions, ascending. Rejected tokens are the rest and are never listed here (most
  // states reject most of the vocabulary).
  const int32_t pos_words = (n + 63) / 64;
  std::vector<int32_t> walked_accepted;
  std::vector<uint64_t> accepted;  // empty until a row or range needs it
  size_t num_walk_accepted = 0;  // counted as set (a popcount is a libgcc call without -mpopcnt)
  std::vector<int32_t> uncertain;
  // With a chain: the positions to walk, ascending: those its row does not list, or when the chain
  // ends dead, only those the loop does not read whole.
  std::vector<int32_t> unproved;
  if (chain) {
    const uint64_t* row = chain->ChainRow(budget);
    accepted.assign(row, row + pos_words);
    num_walk_accepted = chain->chain_counts[budget - 1];
  }
  if (chain && !ends_dead) {
    const uint64_t* row = chain->ChainRow(budget);
    unproved.reserve(n - num_walk_accepted);
    for (int32_t w = 0; w < pos_words; ++w) {
      uint64_t x = ~row[w];
      if (w == pos_words - 1 && (n & 63)) x &= (uint64_t{1} << (n & 63)) - 1;
      for (; x; x &= x - 1) unproved.push_back((w << 6) + __builtin_ctzll(x));
    }
  }
  TailFinder tails(cache, *slices);
  WalkTokens(
      cache, tok, slice ? &slice->complement : !chain ? nullptr : ends_dead ? &chain->complement : &unproved,
      EarleyParser::kTopCompleted,
      [&](int32_t pos, const TokenOutcome& o) {
        if (o.alive) {
          // Alive inside the rule (lineage 0), or the rule completed exactly at the end: valid in
          // any context. Alive only through an assumed follow context: depends on the real one.
          if (o.end_flags & (ParseConfigCache::kHasLineage0 | EarleyParser::kTopCompleted)) {
            walked_accepted.push_back(pos);
            ++num_walk_accepted;
          } else {
            uncertain.push_back(pos);
          }
        } else if (o.follow_done) {
          uncertain.push_back(pos);  // died after leaving the rule: the real context decides
        }
      },
      &tails,
      [&](int32_t lo, int32_t hi, const TokenOutcome&) {  // read whole by a loop at lineage 0
        if (accepted.empty()) accepted.assign(pos_words, 0);
        SetBitRange(accepted.data(), lo, hi);
        num_walk_accepted += hi - lo;
      });
  // Calls f(pos) for each set bit of `bits` (pos_words words), ascending.
  auto for_each_bit = [&](const uint64_t* bits, bool complement, auto&& f) {
    for (int32_t w = 0; w < pos_words; ++w) {
      uint64_t x = complement ? ~bits[w] : bits[w];
      if (complement && w == pos_words - 1 && (n & 63)) x &= (uint64_t{1} << (n & 63)) - 1;
      while (x) {
        f((w << 6) + __builtin_ctzll(x));
        x &= x - 1;
      }
    }
  };

  TokenMaskEntry e;
  const size_t num_accepted = num_walk_accepted + (slice ? slice->num_accepted : 0);
  e.num_accepted = static_cast<int32_t>(num_accepted);
  const size_t num_rejected = n - num_accepted - uncertain.size();
  const size_t bitset_words = tok.MaskWords();
  // The rejected-list form clears the uncertain tokens too, so it costs rejected + uncertain per
  // use (a string character inside a counted repetition leaves most of the vocabulary uncertain).
  const size_t rejected_cost = num_rejected + uncertain.size();
  const bool accepted_list = num_accepted <= rejected_cost && num_accepted < bitset_words;
  if (!accepted_list && accepted.empty()) accepted.assign(pos_words, 0);
  if (!accepted.empty())  // the parsed ones join the rows' (a chain keeps them listed too, for its bitset)
    for (int32_t p : walked_accepted) accepted[p >> 6] |= uint64_t{1} << (p & 63);
  if (accepted_list) {
    // (never with a slice: a useful slice alone is larger than the bitset)
    e.storage = TokenMaskEntry::Storage::kAcceptedList;
    e.ids.reserve(num_accepted);
    if (accepted.empty()) {
      for (int32_t p : walked_accepted) e.ids.push_back(tok.SortedId(p));
    } else {
      for_each_bit(accepted.data(), false, [&](int32_t p) { e.ids.push_back(tok.SortedId(p)); });
    }
    SortTokenIds(&e.ids, tok.VocabSize());
  } else if (rejected_cost < num_accepted && rejected_cost < bitset_words) {
    e.storage = TokenMaskEntry::Storage::kRejectedList;
    // Rejected: the walked tokens (all of them, or the slice's complement) neither accepted nor uncertain.
    e.ids.reserve(num_rejected);
    size_t next_uncertain = 0;  // positions arrive ascending, as `uncertain` is
    auto emit_if_rejected = [&](int32_t p) {
      while (next_uncertain < uncertain.size() && uncertain[next_uncertain] < p) ++next_uncertain;
      if (next_uncertain < uncertain.size() && uncertain[next_uncertain] == p) return;
      e.ids.push_back(tok.SortedId(p));
    };
    if (slice) {
      for (int32_t p : slice->complement)
        if (!((accepted[p >> 6] >> (p & 63)) & 1)) emit_if_rejected(p);
    } else {
      for_each_bit(accepted.data(), true, emit_if_rejected);
    }
    SortTokenIds(&e.ids, tok.VocabSize());
  } else {
    e.storage = TokenMaskEntry::Storage::kBitset;
    auto set_id = [&](int32_t p) {
      const int32_t id = tok.SortedId(p);
      e.bits[id >> 5] |= 1u << (id & 31);
    };
    if (chain) {
      const uint32_t* row = chain->ChainRowById(budget);
      e.bits.assign(row, row + bitset_words);
      for (int32_t p : walked_accepted) set_id(p);
    } else {
      if (slice) {
        e.bits = slice->accepted_bits;
      } else {
        e.bits.assign(bitset_words, 0);
      }
      for_each_bit(accepted.data(), false, set_id);
    }
  }
  if (TokenMaskEntry::ManyUncertain(uncertain.size(), n)) {
    e.uncertain_bits.assign(pos_words, 0);
    for (int32_t p : uncertain) e.uncertain_bits[p >> 6] |= uint64_t{1} << (p & 63);
  }
  e.uncertain = std::move(uncertain);
  return e;
}

}  // namespace xg

namespace xg {

std::vector<int32_t> RefineUncertain(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t state,
                                     const std::vector<int32_t>& structural_uncertain) {
  std::vector<int32_t> out;
  if (structural_uncertain.empty()) return out;
  ParseConfigCacheLease lease(fsm, state, nullptr);  // null follow: every state that can follow the rule
  ParseConfigCache& cache = *lease;
  WalkTokens(cache, tok, &structural_uncertain, EarleyParser::kFollowCompleted,
             [&](int32_t pos, const TokenOutcome& o) {
               // Never accepted here: a structurally uncertain token died inside the rule, so it is
               // alive now only through an assumed follow context.
               if (o.alive || o.follow_done) out.push_back(pos);
             });
  return out;
}

namespace {

// A counted parent over an item: `R ::= X{m,n}` where `state` is X's start and X reads one item
// and stops (a character class: the demo's `[a-z ]{5,40}`; or a JSON string's character, one byte,
// a UTF-8 sequence or an escape). Most tokens that reach such a context are runs of X's, each one
// more X: a run of L X's, with the parent resuming at count v after the first, stays inside the
// repetition exactly while v + L - 1 <= max, so it is alive without a walk. (Near the bounds every
// count is its own context, so the walk over ~every token used to be paid once per count.) Returns
// the longest such run, or 0 when `parents` is not that context.
int32_t RunCapacity(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t state,
                    const std::vector<int32_t>& parents) {
  // Exactly one first-level (state, count) pair: a lone parent.
  if (parents.size() < 2 || (parents.size() > 2 && parents[2] != EarleyParser::kFollowLevelSeparator)) return 0;
  const int32_t parent = parents[0], count = parents[1];
  const int32_t x = fsm.RuleOf(state);
  if (!fsm.IsCountedState(parent) || state != fsm.RuleStart(x)) return 0;
  const RuleEdge* edge = fsm.RuleEdgesBegin(parent);
  if (fsm.RuleEdgesEnd(parent) - edge != 1 || edge->rule != x) return 0;
  const int32_t max = fsm.RepeatMax(fsm.RuleOf(parent));
  // The count sentinels stand for at least MaxTokenBytes of room (CountClass).
  if (count < 0 || max == Expr::kUnbounded) return tok.MaxTokenBytes();
  return std::max(0, max - count + 1);
}

// Whether X (starting at `state`) reads exactly one byte into a final state with nothing after it;
// *bytes gets X's bytes (GrammarFsm::LiveBytes).
bool IsOneByteItem(const GrammarFsm& fsm, int32_t state, const uint64_t** bytes) {
  if (fsm.IsFinal(state) || fsm.RuleEdgesBegin(state) != fsm.RuleEdgesEnd(state)) return false;
  const ByteRow row = fsm.NextRow(state);
  for (int b = 0; b < 256; ++b) {
    const int32_t t = row[b];
    if (t >= 0 && (!fsm.IsFinal(t) || fsm.HasBytes(t) || fsm.RuleEdgesBegin(t) != fsm.RuleEdgesEnd(t))) return false;
  }
  *bytes = fsm.LiveBytes(state);
  return true;
}

}  // namespace

ContextMaskEntry BuildContextMaskEntry(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t state,
                                       const std::vector<int32_t>& parent_states,
                                       const std::vector<int32_t>& base_uncertain, LoopSlices* slices,
                                       const std::vector<uint64_t>* base_bits) {
  ParseConfigCacheLease lease(fsm, state, &parent_states);
  ParseConfigCache& cache = *lease;
  ContextMaskEntry out;
  const uint64_t* run_bytes = nullptr;
  const int32_t run_capacity = RunCapacity(fsm, tok, state, parent_states);
  const bool one_byte_runs = run_capacity > 0 && IsOneByteItem(fsm, state, &run_bytes);
  // Runs of a longer item: the chain row of the loop X* for the capacity (capped at the rows kept;
  // longer runs are walked) lists them, packed by id and by position.
  const TokenSlice* item_loop = run_capacity > 0 && !one_byte_runs && slices ? slices->ItemLoopOf(state) : nullptr;
  std::vector<int32_t> to_walk;  // ascending, as base_uncertain
  if (item_loop) {
    const int32_t r = std::min(run_capacity, TokenSlice::kMaxChainBudget);
    const uint32_t* by_id = item_loop->ChainRowById(r);
    out.accepted_bits.assign(by_id, by_id + tok.MaskWords());
    const uint64_t* by_pos = item_loop->ChainRow(r);
    if (base_bits) {  // a word at a time
      for (size_t w = 0; w < base_bits->size(); ++w)
        for (uint64_t x = (*base_bits)[w] & ~by_pos[w]; x; x &= x - 1)
          to_walk.push_back(static_cast<int32_t>(w << 6) + __builtin_ctzll(x));
    } else {
      for (int32_t pos : base_uncertain)
        if (!((by_pos[pos >> 6] >> (pos & 63)) & 1)) to_walk.push_back(pos);
    }
  } else if (one_byte_runs) {
    // Typically most of the vocabulary: straight into a bitset (sorting the ids cost more than the rest).
    out.accepted_bits.assign(tok.MaskWords(), 0);
    for (int32_t pos : base_uncertain) {
      const std::string_view t = tok.SortedToken(pos);
      bool run = static_cast<int32_t>(t.size()) <= run_capacity;
      for (size_t i = 0; run && i < t.size(); ++i) {
        const uint8_t b = static_cast<uint8_t>(t[i]);
        run = (run_bytes[b >> 6] >> (b & 63)) & 1;
      }
      if (run) {
        const int32_t id = tok.SortedId(pos);
        out.accepted_bits[id >> 5] |= 1u << (id & 31);
      } else {
        to_walk.push_back(pos);
      }
    }
  }
  WalkTokens(cache, tok, item_loop || one_byte_runs ? &to_walk : &base_uncertain, EarleyParser::kFollowCompleted,
             [&](int32_t pos, const TokenOutcome& o) {
    if (o.alive) {
      out.accepted_ids.push_back(tok.SortedId(pos));  // alive in this real context
    } else if (o.follow_done) {
      out.uncertain.push_back(pos);  // the last level completed too: what is above decides, live
    }
  });
  // Many accepted tokens (a counted item such as a string's character accepts most of the
  // vocabulary through its parent), or runs already set above: a bitset is cheaper to OR at every step.
  if (!out.accepted_bits.empty() || out.accepted_ids.size() > static_cast<size_t>(tok.MaskWords())) {
    out.accepted_bits.resize(tok.MaskWords(), 0);
    for (int32_t id : out.accepted_ids) out.accepted_bits[id >> 5] |= 1u << (id & 31);
    out.accepted_ids = {};
  } else {
    std::sort(out.accepted_ids.begin(), out.accepted_ids.end());
  }
  return out;
}

}  // namespace xg
