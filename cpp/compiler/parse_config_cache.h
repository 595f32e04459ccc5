// ParseConfigCache: a lazily built automaton over Earley parse configurations, for the mask-cache
// walks (token_mask_cache.cc).
//
// The walk parses every token's bytes from one isolated item. Inside lexical loops (identifiers,
// string bodies, numbers) the parser keeps reaching the same configuration: the same items in the
// last set, whose origin sets hold the same items, and so on down. A configuration is interned
// by that content, with origins named by the configurations of their sets (not by position), so
// "after ` f`", "after ` fo`" and "after ` foo`" are one configuration. Each configuration gets a
// 256-entry transition row filled on demand: the first time a byte is scanned from it, the
// configuration's sets are rebuilt in a scratch parser (origins first), the Earley step runs, and
// the resulting set is interned. Every later scan of that byte from it is one table lookup, which
// turns the walk over a vocabulary into a DFA walk wherever the grammar is lexical.
//
// Exactness: a configuration fixes everything the parse can still do (its items and, through their
// origins, every set a completion can reach), so equal configurations have equal futures. Flags
// that depend on the path (a follow rule completed earlier) are tracked by the walk, not here.
//
// Memory: each configuration costs its items plus a 1 KiB row; Size() lets the walk Clear() the
// cache past a budget (ids are then invalid; the walk restarts its path).
//
// Reuse: a mask entry's walk usually meets a handful of configurations, so building the cache's
// buffers cost as much as the walk (a literal's entry: ~50 allocations). ParseConfigCacheLease hands
// out a cache kept per thread and Reset() for the new walk, with its buffers' capacity kept (and
// trimmed back when a walk grew them large).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "fsm/grammar_fsm.h"
#include "parser/earley_parser.h"
#include "support/sequence_interner.h"

namespace xg {

class ParseConfigCache {
 public:
  static constexpr int32_t kDead = -2;
  // Flags of a configuration: EarleyParser's set flags, plus kHasLineage0.
  static constexpr uint8_t kHasLineage0 = 4;

  // The walk starts at the isolated item (state, origin unknown); `follow` as in
  // EarleyParser::ResetToItem (must outlive the cache, as must `fsm`).
  ParseConfigCache(const GrammarFsm& fsm, int32_t state, const std::vector<int32_t>* follow);
  // Starts over for another walk (any fsm), keeping the buffers' capacity.
  void Reset(const GrammarFsm& fsm, int32_t state, const std::vector<int32_t>* follow);
  // Frees buffers grown past what a typical walk needs (a pooled cache must not pin a large walk's
  // rows). Reset() must come before the next use.
  void Trim();

  int32_t Initial() const { return 0; }
  // The configuration after scanning `byte` from `config`, or kDead.
  int32_t Step(int32_t config, uint8_t byte) {
    int32_t t = rows_[static_cast<size_t>(config) * 256 + byte];
    return t != kUnknown ? t : Compute(config, byte);
  }
  // (From a dense copy: read after every byte of a walk, and a Config is a cache line.)
  uint8_t Flags(int32_t config) const { return flags_[config]; }
  // The bytes some item of the configuration has a transition on (4 words, as GrammarFsm::LiveBytes):
  // Step sends every other byte to kDead without a parser.
  const uint64_t* LiveBytes(int32_t config) {
    Config& c = configs_[config];
    if (!c.live_known) {
      c.live = {0, 0, 0, 0};
      for (const EarleyItem& it : c.items) {
        const uint64_t* l = fsm_->LiveBytes(it.state);
        for (int w = 0; w < 4; ++w) c.live[w] |= l[w];
      }
      c.live_known = true;
    }
    return c.live.data();
  }
  // The items of a configuration (origins as in Config below: a config id, kSelf or virtual).
  const std::vector<EarleyItem>& Items(int32_t config) const { return configs_[config].items; }
  size_t Size() const { return num_configs_; }
  // Drops every configuration but the initial one.
  void Clear();

 private:
  static constexpr int32_t kUnknown = -1;  // all bits set, so a new row is one memset
  static constexpr int32_t kSelf = -3;  // origin: the configuration's own set
  struct Config {
    std::vector<EarleyItem> items;  // origin: a config id, kSelf, or a virtual origin (< 0)
    uint8_t flags;
    bool live_known = false;  // LiveBytes computed into `live`
    std::array<uint64_t, 4> live{};
  };

  int32_t Compute(int32_t config, uint8_t byte);
  // Interns the parser's last set (set index k); set_config_ maps set indices below k to configs.
  int32_t Intern();
  // Interns a set given with config-id origins (see Config); `items` may point into sorted_ only
  // if n == 0.
  int32_t InternItems(const EarleyItem* items, size_t n, uint8_t flags);
  // Rebuilds the parser's sets for `config` (origins first), filling set_config_.
  void Materialize(int32_t config);

  const GrammarFsm* fsm_;
  int32_t state_;
  const std::vector<int32_t>* follow_;
  EarleyParser parser_;
  std::vector<Config> configs_;  // [0, num_configs_) live; the rest keep their items' capacity
  size_t num_configs_ = 0;
  std::vector<int32_t> rows_;  // 256 per configuration; rows past num_configs_ are stale
  std::vector<uint8_t> flags_;  // per configuration: Config::flags
  SequenceInterner ids_;       // configuration content (flags, then items as 4 ints) -> id
  // Scratch, kept across calls (and walks) for its capacity.
  std::vector<int32_t> key_;
  std::vector<EarleyItem> sorted_, items_;
  std::vector<int32_t> set_config_, todo_, order_, index_of_;
};

// A ParseConfigCache reset for one walk, taken from this thread's pool and returned to it (trimmed)
// when the lease ends. Leases nest (each takes its own cache).
class ParseConfigCacheLease {
 public:
  ParseConfigCacheLease(const GrammarFsm& fsm, int32_t state, const std::vector<int32_t>* follow);
  ~ParseConfigCacheLease();
  ParseConfigCacheLease(const ParseConfigCacheLease&) = delete;
  ParseConfigCacheLease& operator=(const ParseConfigCacheLease&) = delete;
  ParseConfigCache& operator*() { return *cache_; }
  ParseConfigCache* operator->() { return cache_.get(); }

 private:
  std::unique_ptr<ParseConfigCache> cache_;
};

}  // namespace xg
