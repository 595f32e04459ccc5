// FencedLruCache: a thread-safe compute-once cache with exact byte accounting, an optional byte
// budget with LRU eviction, and a generation fence for Clear(). Both of GrammarCompiler's caches
// (whole grammars, and token-mask entries shared across grammars) are instances.
//
// The algorithm:
//   - GetOrCompute(key, compute, size_of): under the lock, a held key returns its future (a ready
//     entry also moves to the front of the LRU list); an absent key gets a pending slot stamped with
//     the current generation and the caller becomes its computer. Everyone else asking for the key
//     waits on the slot's shared future, so a key is computed once however many threads ask.
//   - The computer runs `compute` with no lock held, then measures the value (`size_of`: its real
//     size, known only now) and takes the lock again. Only if the generation is still the one it
//     started in does it mark the slot ready, add the size to the count and evict least recently
//     used ready entries while the count exceeds the budget (a value larger than the whole budget is
//     returned but not kept). The check and the add happen under the same lock as Clear(), so no
//     clear can fall between them.
//   - A computation that throws removes its own pending slot (if the generation is unchanged), is
//     never counted, and hands the exception to every waiter.
//   - Clear() bumps the generation, drops every slot and zeroes the count, all under the lock, and
//     returns at once: it never waits for computations in flight. Their callers, and whoever already
//     waits on them, still get the value (or the exception); the value is just not cached or counted.
//   - A caller whose work began before a Clear() (a grammar compiled before it, still building its
//     entries) passes the generation it read then as `fence`: once a clear has ended that
//     generation, a hit still serves it, but a miss is computed for that caller alone, never cached
//     or counted. So nothing a compilation in flight computes outlives a clear, however long it runs.
// So at every quiescent point SizeBytes() equals the sum of the sizes of the entries held.
//
// One mutex guards everything; it is only ever held for map and list updates, never while
// computing or waiting, so a plain mutex costs nothing a reader-writer lock would save.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace xg {

template <typename Key, typename Value, typename Hash = std::hash<Key>, typename Eq = std::equal_to<Key>>
class FencedLruCache {
 public:
  using ValuePtr = std::shared_ptr<const Value>;

  // limit_bytes < 0: unlimited (nothing is ever evicted).
  explicit FencedLruCache(int64_t limit_bytes = -1) : limit_(limit_bytes) {}
  FencedLruCache(const FencedLruCache&) = delete;
  FencedLruCache& operator=(const FencedLruCache&) = delete;

  // The value of `key`, computed by `compute` (with no lock held) if the cache does not hold it.
  // Rethrows compute's exception, to this caller and to every caller waiting on the same key.
  static constexpr uint64_t kCurrent = ~uint64_t{0};  // no fence: the generation at the call
  ValuePtr GetOrCompute(const Key& key, const std::function<ValuePtr()>& compute,
                        const std::function<int64_t(const Value&)>& size_of, uint64_t fence = kCurrent) {
    std::optional<std::promise<ValuePtr>> promise;  // made only by the computer (a promise allocates)
    std::shared_future<ValuePtr> future;
    uint64_t generation = 0;
    bool computer = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = slots_.find(key);
      if (it != slots_.end()) {
        if (it->second.ready) {
          ++hits_;
          lru_.splice(lru_.begin(), lru_, it->second.lru);
        }
        future = it->second.future;
      } else if (fence != kCurrent && fence != generation_) {
        ++misses_;  // the caller's work predates a Clear(): computed for it alone, below
      } else {
        ++misses_;
        computer = true;
        generation = generation_;
        future = promise.emplace().get_future().share();
        slots_.emplace(key, Slot{future, 0, false, generation, lru_.end()});
      }
    }
    if (!computer && !future.valid()) return compute();  // fenced out: neither cached nor counted
    if (!computer) {
      if (wait_hook_) wait_hook_();
      return future.get();
    }

    ValuePtr value;
    try {
      value = compute();
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (generation_ == generation) slots_.erase(key);  // our pending slot: only Clear() removes others
      }
      promise->set_exception(std::current_exception());
      throw;
    }
    const int64_t size = size_of(*value);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (generation_ == generation) {
        auto it = slots_.find(key);
        if (limit_ >= 0 && size > limit_) {
          slots_.erase(it);  // larger than the whole budget: returned, not kept
        } else {
          lru_.push_front(&it->first);
          it->second.lru = lru_.begin();
          it->second.ready = true;
          it->second.size = size;
          bytes_ += size;
          EvictOverBudget();
        }
      }
    }
    promise->set_value(value);
    return value;
  }

  // The value of `key` if the cache holds it ready (a hit, moved to the front of the LRU order),
  // else null without counting a miss or computing anything (a key still being computed is null
  // too: the caller's GetOrCompute will wait for it). Lets a caller skip work that only a miss needs.
  ValuePtr GetIfReady(const Key& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slots_.find(key);
    if (it == slots_.end() || !it->second.ready) return nullptr;
    ++hits_;
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return it->second.future.get();  // ready: does not block
  }

  // Drops every entry and zeroes the count; computations in flight finish uncounted (see above).
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    ++generation_;
    slots_.clear();
    lru_.clear();
    bytes_ = 0;
  }

  int64_t SizeBytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return bytes_;
  }
  // Sizes of the entries held (ready ones), for checking SizeBytes() against them.
  std::vector<int64_t> EntrySizes() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<int64_t> out;
    for (const auto& [key, slot] : slots_)
      if (slot.ready) out.push_back(slot.size);
    return out;
  }
  size_t NumEntries() const {
    std::lock_guard<std::mutex> lock(mu_);
    return lru_.size();
  }
  uint64_t Generation() const {
    std::lock_guard<std::mutex> lock(mu_);
    return generation_;
  }
  int64_t Hits() const {
    std::lock_guard<std::mutex> lock(mu_);
    return hits_;
  }
  int64_t Misses() const {
    std::lock_guard<std::mutex> lock(mu_);
    return misses_;
  }
  int64_t LimitBytes() const { return limit_; }
  // Tests only: called (no lock held) by every caller about to wait on another's computation. Set
  // it before any concurrent use.
  void SetWaitHookForTesting(std::function<void()> hook) { wait_hook_ = std::move(hook); }

 private:
  struct Slot {
    std::shared_future<ValuePtr> future;
    int64_t size;
    bool ready;  // computed, counted, and in lru_
    uint64_t generation;
    typename std::list<const Key*>::iterator lru;
  };

  // Evicts least recently used ready entries while over budget (mu_ held). The entry just added is
  // at the front and fits the budget alone, so it is never the one evicted.
  void EvictOverBudget() {
    while (limit_ >= 0 && bytes_ > limit_ && !lru_.empty()) {
      const Key* victim = lru_.back();
      lru_.pop_back();
      auto it = slots_.find(*victim);
      bytes_ -= it->second.size;
      slots_.erase(it);
    }
  }

  const int64_t limit_;
  mutable std::mutex mu_;
  std::unordered_map<Key, Slot, Hash, Eq> slots_;  // node-based: &key stays valid for lru_
  std::list<const Key*> lru_;                      // ready entries, most recent first
  int64_t bytes_ = 0;
  uint64_t generation_ = 0;
  int64_t hits_ = 0, misses_ = 0;
  std::function<void()> wait_hook_;
};

}  // namespace xg
