#include "fsm/rule_dfa_cache.h"

namespace xg {

size_t LocalDfa::MemoryBytes() const {
  return sizeof(*this) + final.capacity() + runs.capacity() * sizeof(ByteRun) +
         rule_edges.capacity() * sizeof(RuleEdge) + (run_begin.capacity() + edge_begin.capacity()) * sizeof(int32_t);
}

uint64_t RuleDfaCache::Generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

std::shared_ptr<const CachedRuleDfa> RuleDfaCache::Find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key);
  return it == map_.end() ? nullptr : it->second;
}

void RuleDfaCache::Insert(std::string key, std::shared_ptr<const CachedRuleDfa> dfa, uint64_t generation) {
  // The key, the map node and shared_ptr control block (~64), the automaton.
  const int64_t bytes = static_cast<int64_t>(key.capacity() + sizeof(key) + sizeof(dfa) + 64 +
                                             2 * sizeof(int64_t) + dfa->dfa.MemoryBytes());
  std::lock_guard<std::mutex> lock(mu_);
  if (generation != generation_) return;
  if (limit_ >= 0 && bytes_ + bytes > limit_ && map_.find(key) == map_.end()) {
    // Flushed whole, not by recency: the generation stays, so builds in flight still insert.
    map_.clear();
    bytes_ = 0;
    ++flushes_;
    if (bytes > limit_) return;  // larger than the whole share: not kept
  }
  if (map_.emplace(std::move(key), std::move(dfa)).second) bytes_ += bytes;
}

int64_t RuleDfaCache::Flushes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return flushes_;
}

void RuleDfaCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  map_.clear();
  bytes_ = 0;
  ++generation_;
}

int64_t RuleDfaCache::MemoryBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

std::vector<std::pair<std::string, std::shared_ptr<const CachedRuleDfa>>> RuleDfaCache::Entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {map_.begin(), map_.end()};
}

PrebuiltRuleDfas::PrebuiltRuleDfas(const RuleDfaCache& built) {
  for (auto& [key, dfa] : built.Entries()) by_hash_.emplace(BodyKeyHash(key), std::make_pair(key, dfa));
}

const CachedRuleDfa* PrebuiltRuleDfas::Find(uint64_t hash, const std::string& key) const {
  auto [first, last] = by_hash_.equal_range(hash);
  for (auto it = first; it != last; ++it)
    if (it->second.first == key) return it->second.second.get();
  return nullptr;
}

size_t RuleDfaCache::Size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_.size();
}

}  // namespace xg
