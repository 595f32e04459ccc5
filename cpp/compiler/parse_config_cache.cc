#include "compiler/parse_config_cache.h"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "support/check.h"

namespace xg {

ParseConfigCache::ParseConfigCache(const GrammarFsm& fsm, int32_t state, const std::vector<int32_t>* follow)
    : fsm_(fsm), state_(state), follow_(follow), parser_(&fsm) {
  rows_.reserve(8 * 256);  // most walks meet a handful of configurations; spares the regrowth copies
  Clear();
}

void ParseConfigCache::Clear() {
  configs_.clear();
  rows_.clear();
  ids_.Clear();
  parser_.ResetToItem(state_, follow_);
  std::vector<int32_t> none;
  int32_t id = Intern(none);
  XG_ICHECK(id == 0) << "initial configuration must be 0";
}

int32_t ParseConfigCache::Intern(const std::vector<int32_t>& set_config) {
  const int32_t k = parser_.NumSets() - 1;
  std::vector<EarleyItem> items(parser_.SetBegin(k), parser_.SetEnd(k));
  for (EarleyItem& it : items) {
    if (it.origin == k) {
      it.origin = kSelf;
    } else if (it.origin >= 0) {
      it.origin = set_config[it.origin];
    }
  }
  return InternItems(std::move(items), parser_.SetFlags(k));
}

int32_t ParseConfigCache::InternItems(std::vector<EarleyItem> items, uint8_t flags) {
  for (const EarleyItem& it : items)
    if (it.lineage == 0) flags |= kHasLineage0;
  // Canonical order, so equal sets built in different orders are one configuration.
  std::sort(items.begin(), items.end(), [](const EarleyItem& a, const EarleyItem& b) {
    return std::tie(a.state, a.origin, a.lineage, a.count) < std::tie(b.state, b.origin, b.lineage, b.count);
  });
  key_.clear();
  key_.push_back(flags);
  for (const EarleyItem& it : items) key_.insert(key_.end(), {it.state, it.origin, it.lineage, it.count});
  auto [id, inserted] = ids_.Intern(key_.data(), key_.size());  // ids count up as configs_ grows
  if (inserted) {
    configs_.push_back({std::move(items), flags});
    static_assert(kUnknown == -1, "rows are filled with 0xFF bytes");
    const size_t old = rows_.size();
    rows_.resize(old + 256);
    std::memset(rows_.data() + old, 0xFF, 256 * sizeof(int32_t));
  }
  return id;
}

void ParseConfigCache::Materialize(int32_t config, std::vector<int32_t>* set_config) {
  // Configurations reachable through origins; every origin config was interned before the
  // configuration naming it, so ascending ids put origins first.
  std::vector<int32_t> todo = {config}, order;
  std::vector<int32_t> seen;
  while (!todo.empty()) {
    int32_t c = todo.back();
    todo.pop_back();
    if (std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
    seen.push_back(c);
    order.push_back(c);
    for (const EarleyItem& it : configs_[c].items)
      if (it.origin >= 0) todo.push_back(it.origin);
  }
  std::sort(order.begin(), order.end());
  parser_.ResetEmpty(follow_);
  set_config->clear();
  std::vector<int32_t> index_of(configs_.size(), -1);
  std::vector<EarleyItem> items;
  for (int32_t c : order) {
    const int32_t k = static_cast<int32_t>(set_config->size());
    items = configs_[c].items;
    for (EarleyItem& it : items) {
      if (it.origin == kSelf) {
        it.origin = k;
      } else if (it.origin >= 0) {
        it.origin = index_of[it.origin];
      }
    }
    parser_.PushClosedSet(items.data(), items.size(),
                          static_cast<uint8_t>(configs_[c].flags & ~kHasLineage0));
    index_of[c] = k;
    set_config->push_back(c);
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
    if (fsm_.Next(it.state, byte) >= 0) scanner = &it, ++scanners;
  }
  if (scanners == 0) return slot = kDead;
  if (scanners == 1) {
    int32_t t = fsm_.Next(scanner->state, byte);
    if (!fsm_.IsFinal(t) && fsm_.RuleEdgesBegin(t) == fsm_.RuleEdgesEnd(t)) {
      int32_t origin = scanner->origin == kSelf ? config : scanner->origin;
      int32_t id = InternItems({{t, origin, scanner->lineage, scanner->count}}, 0);
      rows_[static_cast<size_t>(config) * 256 + byte] = id;  // rows_ may have grown
      return id;
    }
  }
  std::vector<int32_t> set_config;
  Materialize(config, &set_config);
  int32_t result = kDead;
  if (parser_.Advance(byte)) result = Intern(set_config);
  rows_[static_cast<size_t>(config) * 256 + byte] = result;
  return result;
}

}  // namespace xg
