// HandleRegistry: the process-wide table of grammar matchers addressed by int32 handles, for callers
// that cannot hold C++ pointers: XLA custom calls and io_callbacks inside jitted decode loops.
//
// Contracts:
//   - Handles are never reused. A freed handle stays unknown forever, so a stale handle is an
//     error ("unknown or freed"), never another row's matcher.
//   - Slots live behind shared_ptr: a step that found a slot keeps it alive even if Python frees the
//     handle at the same time (the matcher is destroyed when the step lets go).
//   - Each slot has its own mutex. A batch step locks its slots in ascending handle order, so shards
//     that run concurrently on several threads never deadlock, and one matcher is never advanced by
//     two calls at once.
// Thread-safe: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "matcher/grammar_matcher.h"

namespace xg {

class HandleRegistry {
 public:
  struct Slot {
    explicit Slot(GrammarMatcher m) : matcher(std::move(m)) {}
    std::mutex mu;  // held by the step that advances / fills this matcher
    GrammarMatcher matcher;
  };

  // Takes ownership of `matcher` and returns its new handle (>= 0).
  int32_t Add(GrammarMatcher matcher);
  // Forgets `handle`. InputError if it is unknown or already freed.
  void Free(int32_t handle);
  // The slot of `handle`, or nullptr if unknown or freed.
  std::shared_ptr<Slot> Find(int32_t handle) const;
  // A copy of the matcher behind `handle` (taken under its lock). InputError if unknown.
  GrammarMatcher Snapshot(int32_t handle) const;
  int32_t NumLive() const;

  static HandleRegistry& Global();

 private:
  mutable std::shared_mutex mu_;
  std::unordered_map<int32_t, std::shared_ptr<Slot>> slots_;
  int32_t next_ = 0;
};

}  // namespace xg
