#include "compiler/token_mask_cache.h"

#include <algorithm>
#include <optional>

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
      std::copy(normal.begin(), normal.end(), s.begin());
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

// Walks tokens in sorted order from the cache's initial configuration, reusing the common prefix
// with the previous token, and calls report(position, outcome) for each token except those that
// die without any follow rule completing (rejected outright: most of the vocabulary, never listed). `subset` (ascending sorted
// positions) restricts the walk; null walks the whole vocabulary. A prefix that dies rejects every
// token under it at once (RunEnd skips the run without reading the tokens).
// Tails for the walk (token_slices.h): per configuration, the slice of a wide lexical loop one of
// its lineage-0 items is at the entry of, if any. Looked up once per configuration of the walk.
class TailFinder {
 public:
  // The memo lives in per-thread buffers (one walk at a time per thread), cleared per walk: a
  // literal's walk meets a few configurations, and allocating the memo cost as much as using it.
  TailFinder(const ParseConfigCache& cache, LoopSlices& slices)
      : cache_(cache), slices_(slices), checked_(Buffers().checked), found_(Buffers().found) {
    Clear();
  }
  const TokenSlice* Of(int32_t config) {
    if (static_cast<size_t>(config) >= checked_.size()) {
      const size_t n = std::max<size_t>({static_cast<size_t>(config) + 1, 2 * checked_.size(), 16});
      checked_.resize(n, 0), found_.resize(n, nullptr);
    }
    if (!checked_[config]) {
      checked_[config] = 1;
      found_[config] = nullptr;
      for (const EarleyItem& it : cache_.Items(config)) {
        if (it.lineage != 0) continue;
        const TokenSlice* slice = slices_.Of(it.state);
        if (slice && !slice->tails.empty()) {
          found_[config] = slice;
          break;
        }
      }
    }
    return found_[config];
  }
  // Forgets every configuration (keeping the buffers, up to a typical walk's size).
  void Clear() {
    checked_.assign(std::min<size_t>(checked_.size(), 64), 0);
    found_.resize(checked_.size());
  }

  // Asked for every item of every configuration a walk meets, so the edge count comes from the
  // live-byte set (four popcounts) and only wide states look at their row.
  static bool IsWideLoopHead(const GrammarFsm& fsm, int32_t state) {
    const uint64_t* live = fsm.LiveBytes(state);
    int32_t edges = 0;
    for (int w = 0; w < 4; ++w) edges += __builtin_popcountll(live[w]);
    if (edges < kMinWideLoopBytes) return false;
    const int32_t* row = fsm.NextRow(state);
    for (int b = 0; b < 256; ++b)
      if (row[b] == state) return true;
    return false;
  }

 private:
  struct Memo {
    std::vector<uint8_t> checked;
    std::vector<const TokenSlice*> found;  // held by a LoopSlices
  };
  static Memo& Buffers() {
    thread_local Memo memo;
    return memo;
  }
  const ParseConfigCache& cache_;
  LoopSlices& slices_;
  std::vector<uint8_t>& checked_;
  std::vector<const TokenSlice*>& found_;
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

template <typename Report>
void WalkTokens(ParseConfigCache& cache, const TokenizerInfo& tok, const std::vector<int32_t>* subset,
                uint8_t leave_flags, Report&& report, TailFinder* tails = nullptr) {
  constexpr size_t kMaxConfigs = 1 << 14;  // ~16 MiB of transition rows
  const int32_t count = subset ? static_cast<int32_t>(subset->size()) : tok.NumSorted();
  const bool use_tails = tails != nullptr && subset == nullptr;  // tails skip runs of the whole vocabulary
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
      if (stop_at_tails && d + 1 < TokenSlice::kMaxTailOffset && tails->Of(next)) {
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
    if (tail_node >= 0) {
      // Every token under this node whose rest is read whole by the loop is alive at lineage 0
      // (accepted); only the others are parsed, from this node's configuration.
      const int32_t e = tail_node;
      const std::vector<uint32_t>& bits = tails->Of(config[e])->tails;
      const int32_t end = tok.RunEnd(pos, e);
      std::string_view prev_walked;
      int32_t inner = e;  // config[0..inner] hold the prefix of prev_walked (or of the node)
      for (int32_t j = pos; j < end;) {
        if ((bits[j] >> e) & 1) {
          report(j, TokenOutcome{true, ParseConfigCache::kHasLineage0, follow_done[e] != 0});
          ++j;
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
    : fsm_(fsm), tok_(tok), wide_(new std::atomic<int8_t>[fsm.NumStates()]) {
  for (int32_t s = 0; s < fsm.NumStates(); ++s) wide_[s].store(-1, std::memory_order_relaxed);
}

const TokenSlice* LoopSlices::Of(int32_t state) {
  // Only a state that loops on some byte itself can read most tokens whole (string bodies, free
  // text); this keeps the loop search off the many states that cannot.
  int8_t wide = wide_[state].load(std::memory_order_relaxed);
  if (wide < 0) {
    wide = TailFinder::IsWideLoopHead(fsm_, state);
    wide_[state].store(wide, std::memory_order_relaxed);
  }
  if (!wide) return nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = memo_.find(state);
    if (it != memo_.end()) return it->second.get();
  }
  std::shared_ptr<const TokenSlice> slice;
  LoopDfa loop;
  if (ByteLoopOf(fsm_, state, &loop)) slice = tok_.Slices().Get(tok_, loop);
  std::lock_guard<std::mutex> lock(mu_);
  return memo_.emplace(state, std::move(slice)).first->second.get();  // a racing thread's equal slice wins
}

TokenMaskEntry BuildTokenMaskEntry(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t state,
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
  // Positions in the sorted vocabulary; rejected tokens are the rest and are never listed here
  // (most states reject most of the vocabulary).
  std::vector<int32_t> accepted, uncertain;
  TailFinder tails(cache, *slices);
  WalkTokens(cache, tok, slice ? &slice->complement : nullptr, EarleyParser::kTopCompleted,
             [&](int32_t pos, const TokenOutcome& o) {
               if (o.alive) {
                 // Alive inside the rule (lineage 0), or the rule completed exactly at the end: valid
                 // in any context. Alive only through an assumed follow context: depends on the real one.
                 bool ok = o.end_flags & (ParseConfigCache::kHasLineage0 | EarleyParser::kTopCompleted);
                 (ok ? accepted : uncertain).push_back(pos);
               } else if (o.follow_done) {
                 uncertain.push_back(pos);  // died after leaving the rule: the real context decides
               }
             },
             &tails);

  TokenMaskEntry e;
  const size_t num_accepted = accepted.size() + (slice ? slice->num_accepted : 0);
  e.num_accepted = static_cast<int32_t>(num_accepted);
  const size_t num_rejected = n - num_accepted - uncertain.size();
  const size_t bitset_words = tok.MaskWords();
  // The rejected-list form clears the uncertain tokens too, so it costs rejected + uncertain per
  // use (a string character inside a counted repetition leaves most of the vocabulary uncertain).
  const size_t rejected_cost = num_rejected + uncertain.size();
  if (num_accepted <= rejected_cost && num_accepted < bitset_words) {
    // (never with a slice: a useful slice alone is larger than the bitset)
    e.storage = TokenMaskEntry::Storage::kAcceptedList;
    for (int32_t p : accepted) e.ids.push_back(tok.SortedId(p));
    std::sort(e.ids.begin(), e.ids.end());
  } else if (rejected_cost < num_accepted && rejected_cost < bitset_words) {
    e.storage = TokenMaskEntry::Storage::kRejectedList;
    // Rejected: the walked tokens (all of them, or the slice's complement) reported as neither.
    std::vector<int32_t> listed;
    std::merge(accepted.begin(), accepted.end(), uncertain.begin(), uncertain.end(), std::back_inserter(listed));
    size_t next_listed = 0;  // positions arrive ascending, as `listed` is
    auto emit_unlisted = [&](int32_t p) {
      while (next_listed < listed.size() && listed[next_listed] < p) ++next_listed;
      if (next_listed == listed.size() || listed[next_listed] != p) e.ids.push_back(tok.SortedId(p));
    };
    if (slice) {
      for (int32_t p : slice->complement) emit_unlisted(p);
    } else {
      for (int32_t p = 0; p < n; ++p) emit_unlisted(p);
    }
    std::sort(e.ids.begin(), e.ids.end());
  } else {
    e.storage = TokenMaskEntry::Storage::kBitset;
    if (slice) {
      e.bits = slice->accepted_bits;
    } else {
      e.bits.assign(bitset_words, 0);
    }
    for (int32_t p : accepted) {
      int32_t id = tok.SortedId(p);
      e.bits[id >> 5] |= 1u << (id & 31);
    }
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

// A counted parent over a one-byte item: `R ::= X{m,n}` where X reads exactly one byte (a character
// class; the demo's `[a-z ]{5,40}`), and `state` is X's start. Most tokens that reach such a context
// are runs of X's bytes, each byte one more X: a run of length L, with the parent resuming at count v
// after its first byte, stays inside the repetition exactly while v + L - 1 <= max, so it is alive
// without a walk. (Near the bounds every count is its own context, so the walk over ~every token of
// X's bytes used to be paid once per count.) Returns the longest such run, or 0 when `parents` is not
// that context; *bytes gets X's bytes (GrammarFsm::LiveBytes).
int32_t OneByteRunCapacity(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t state,
                           const std::vector<int32_t>& parents, const uint64_t** bytes) {
  // Exactly one first-level (state, count) pair: a lone parent.
  if (parents.size() < 2 || (parents.size() > 2 && parents[2] != EarleyParser::kFollowLevelSeparator)) return 0;
  const int32_t parent = parents[0], count = parents[1];
  const int32_t x = fsm.RuleOf(state);
  if (!fsm.IsCountedState(parent) || state != fsm.RuleStart(x)) return 0;
  const RuleEdge* edge = fsm.RuleEdgesBegin(parent);
  if (fsm.RuleEdgesEnd(parent) - edge != 1 || edge->rule != x) return 0;
  // X reads one byte from its start into a final state with nothing after it.
  if (fsm.IsFinal(state) || fsm.RuleEdgesBegin(state) != fsm.RuleEdgesEnd(state)) return 0;
  const int32_t* row = fsm.NextRow(state);
  for (int b = 0; b < 256; ++b) {
    const int32_t t = row[b];
    if (t >= 0 && (!fsm.IsFinal(t) || fsm.HasBytes(t) || fsm.RuleEdgesBegin(t) != fsm.RuleEdgesEnd(t))) return 0;
  }
  *bytes = fsm.LiveBytes(state);
  const int32_t max = fsm.RepeatMax(fsm.RuleOf(parent));
  // The count sentinels stand for at least MaxTokenBytes of room (CountClass).
  if (count < 0 || max == Expr::kUnbounded) return tok.MaxTokenBytes();
  return std::max(0, max - count + 1);
}

}  // namespace

ContextMaskEntry BuildContextMaskEntry(const GrammarFsm& fsm, const TokenizerInfo& tok, int32_t state,
                                       const std::vector<int32_t>& parent_states,
                                       const std::vector<int32_t>& base_uncertain) {
  ParseConfigCacheLease lease(fsm, state, &parent_states);
  ParseConfigCache& cache = *lease;
  ContextMaskEntry out;
  const uint64_t* run_bytes = nullptr;
  const int32_t run_capacity = OneByteRunCapacity(fsm, tok, state, parent_states, &run_bytes);
  std::vector<int32_t> to_walk;  // ascending, as base_uncertain
  if (run_capacity > 0) {
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
  WalkTokens(cache, tok, run_capacity > 0 ? &to_walk : &base_uncertain, EarleyParser::kFollowCompleted,
             [&](int32_t pos, const TokenOutcome& o) {
    if (o.alive) {
      out.accepted_ids.push_back(tok.SortedId(pos));  // alive in this real context
    } else if (o.follow_done) {
      out.uncertain.push_back(pos);  // the parent completed too: the grandparent decides, live
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
