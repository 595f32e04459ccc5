#include "compiler/parse_config_cache.h"

#include <algorithm>
#include <cstring>
#include <tuple>
#include <type_traits>

#include "support/check.h"
#include "support/fill_budget.h"

namespace xg {

namespace {
// A walk that met more configurations than this gives its buffers back when its lease ends.
constexpr size_t kPooledConfigs = 64;
constexpr size_t kReservedConfigs = 8;  // most walks meet a handful: spares the regrowth copies
}  // namespace

ParseConfigCache::ParseConfigCache(const GrammarFsm& fsm, int32_t state, const std::vector<int32_t>* follow)
    : fsm_(&fsm), state_(state), follow_(follow), parser_(&fsm) {
  rows_.resize(kReservedConfigs * 256);
  Clear();
}

void ParseConfigCache::Reset(const GrammarFsm& fsm, int32_t state, const std::vector<int32_t>* follow) {
  if (fsm_ != &fsm) parser_ = EarleyParser(&fsm);
  fsm_ = &fsm;
  state_ = state;
  follow_ = follow;
  Clear();
}

void ParseConfigCache::Trim() {
  // Scratch sized by one configuration's items (a large Earley set) is dropped the same way.
  constexpr size_t kPooledItems = 1024;
  auto drop_large = [&](auto& v) {
    if (v.capacity() > kPooledItems) std::remove_reference_t<decltype(v)>().swap(v);
  };
  drop_large(sorted_), drop_large(items_), drop_large(key_), drop_large(set_config_), drop_large(todo_),
      drop_large(order_), drop_large(index_of_);
  if (configs_.size() <= kPooledConfigs) return;
  configs_.resize(kPooledConfigs);
  configs_.shrink_to_fit();
  std::vector<int32_t>(kReservedConfigs * 256).swap(rows_);
  ids_ = SequenceInterner();
  parser_ = EarleyParser(fsm_);  // Reset() starts it over before the next walk
}

void ParseConfigCache::Clear() {
  num_configs_ = 0;  // rows_ keeps its size: rows are filled as configurations are added
  ids_.Clear();
  parser_.ResetToItem(state_, follow_);
  set_config_.clear();
  int32_t id = Intern();
  XG_ICHECK(id == 0) << "initial configuration must be 0";
}

int32_t ParseConfigCache::Intern() {
  const int32_t k = parser_.NumSets() - 1;
  items_.assign(parser_.SetBegin(k), parser_.SetEnd(k));
  for (EarleyItem& it : items_) {
    if (it.origin == k) {
      it.origin = kSelf;
    } else if (it.origin >= 0) {
      it.origin = set_config_[it.origin];
    }
  }
  return InternItems(items_.data(), items_.size(), parser_.SetFlags(k));
}

int32_t ParseConfigCache::InternItems(const EarleyItem* items, size_t n, uint8_t flags) {
  sorted_.assign(items, items + n);
  for (const EarleyItem& it : sorted_)
    if (it.lineage == 0) flags |= kHasLineage0;
  // Canonical order, so equal sets built in different orders are one configuration.
  std::sort(sorted_.begin(), sorted_.end(), [](const EarleyItem& a, const EarleyItem& b) {
    return std::tie(a.state, a.origin, a.lineage, a.count) < std::tie(b.state, b.origin, b.lineage, b.count);
  });
  key_.resize(1 + 4 * sorted_.size());
  key_[0] = flags;
  int32_t* k = key_.data() + 1;
  for (const EarleyItem& it : sorted_) *k++ = it.state, *k++ = it.origin, *k++ = it.lineage, *k++ = it.count;
  auto [id, inserted] = ids_.Intern(key_.data(), key_.size());  // ids count up as configs do
  if (inserted) {
    if (num_configs_ == configs_.size()) configs_.emplace_back();
    Config& c = configs_[num_configs_++];
    c.items.assign(sorted_.begin(), sorted_.end());
    c.flags = flags;
    c.live_known = false;
    if (flags_.size() < num_configs_) flags_.resize(std::max<size_t>(num_configs_, 2 * flags_.size()));
    flags_[num_configs_ - 1] = flags;
    // rows_ keeps its size across Clear(), so a reused cache fills each row once (resize would
    // zero it first).
    const size_t row = (num_configs_ - 1) * 256;
    if (rows_.size() < row + 256) rows_.resize(std::max(row + 256, 2 * rows_.size()));
    static_assert(kUnknown == -1, "rows are filled with 0xFF bytes");
    std::memset(rows_.data() + row, 0xFF, 256 * sizeof(int32_t));
  }
  return id;
}

void ParseConfigCache::Materialize(int32_t config) {
  // Configurations reachable through origins; every origin config was interned before the
  // configuration naming it, so ascending ids put origins first.
  todo_.assign(1, config);
  order_.clear();
  while (!todo_.empty()) {
    int32_t c = todo_.back();
    todo_.pop_back();
    if (std::find(order_.begin(), order_.end(), c) != order_.end()) continue;
    order_.push_back(c);
    for (const EarleyItem& it : configs_[c].items)
      if (it.origin >= 0) todo_.push_back(it.origin);
  }
  std::sort(order_.begin(), order_.end());
  parser_.ResetEmpty(follow_);
  set_config_.clear();
  index_of_.assign(num_configs_, -1);
  for (int32_t c : order_) {
    const int32_t k = static_cast<int32_t>(set_config_.size());
    items_ = configs_[c].items;
    for (EarleyItem& it : items_) {
      if (it.origin == kSelf) {
        it.origin = k;
      } else if (it.origin >= 0) {
        it.origin = index_of_[it.origin];
      }
    }
    parser_.PushClosedSet(items_.data(), items_.size(),
                          static_cast<uint8_t>(configs_[c].flags & ~kHasLineage0));
    index_of_[c] = k;
    set_config_.push_back(c);
  }
}

int32_t ParseConfigCache::Compute(int32_t config, uint8_t byte) {
  int32_t& slot = rows_[static_cast<size_t>(config) * 256 + byte];
  // Fast paths that need no parser: no item scans the byte (dead), or a lone item steps into a
  // state with nothing to predict or complete (the set is just that item).
  const std::vector<EarleyItem>& items = configs_[config].items;
  const EarleyItem* scanner = nullptr;
  int scanners = 0;
  for (const EarleyItem& it : items) {
    if (fsm_->Next(it.state, byte) >= 0) scanner = &it, ++scanners;
  }
  if (scanners == 0) return slot = kDead;
  if (scanners == 1) {
    int32_t t = fsm_->Next(scanner->state, byte);
    if (!fsm_->IsFinal(t) && fsm_->RuleEdgesBegin(t) == fsm_->RuleEdgesEnd(t)) {
      const int32_t origin = scanner->origin == kSelf ? config : scanner->origin;
      const EarleyItem next{t, origin, scanner->lineage, scanner->count};
      int32_t id = InternItems(&next, 1, 0);  // may grow configs_ (scanner dangles) and rows_ (slot)
      rows_[static_cast<size_t>(config) * 256 + byte] = id;
      return id;
    }
  }
  Materialize(config);
  int32_t result = kDead;
  const int64_t work_before = parser_.TotalWork();
  if (parser_.Advance(byte)) result = Intern();
  FillWorkBudget::Charge(parser_.TotalWork() - work_before);  // the fill's or the entry build's budget
  rows_[static_cast<size_t>(config) * 256 + byte] = result;
  return result;
}

namespace {
std::vector<std::unique_ptr<ParseConfigCache>>& LeasePool() {
  thread_local std::vector<std::unique_ptr<ParseConfigCache>> pool;
  return pool;
}
}  // namespace

ParseConfigCacheLease::ParseConfigCacheLease(const GrammarFsm& fsm, int32_t state, const std::vector<int32_t>* follow) {
  auto& pool = LeasePool();
  if (pool.empty()) {
    cache_ = std::make_unique<ParseConfigCache>(fsm, state, follow);
  } else {
    cache_ = std::move(pool.back());
    pool.pop_back();
    cache_->Reset(fsm, state, follow);
  }
}

ParseConfigCacheLease::~ParseConfigCacheLease() {
  cache_->Trim();
  LeasePool().push_back(std::move(cache_));
}

}  // namespace xg
