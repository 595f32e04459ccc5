// HandleRegistry: the process-wide table of grammar matchers addressed by int32 handles, for callers
// that cannot hold C++ pointers: XLA custom calls and io_callbacks inside jitted decode loops.
//
// Contracts:
//   - Handles are never reused. A freed handle stays unknown forever, so a stale handle is an
//     error ("unknown or freed"), never another row's matcher.
//   - Slots live behind shared_ptr: a step that found a slot keeps it alive even if Python frees the
//     handle at the same time (the matcher is destroyed when the step lets go).
//   - Each handle has an owner: the GrammarState (one GrammarState.create call) it was made for. One
//     step serves one owner, so a handle pasted into another state's batch is an error naming the
//     row, not a silent advance of a matcher that another decode loop also steps.
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
    Slot(GrammarMatcher m, int64_t owner) : owner(owner), matcher(std::move(m)) {}
    const int64_t owner;  // NewOwner() of the state it belongs to (-1: none, for handles made alone)
    std::mutex mu;        // held by the step that advances / fills this matcher
    GrammarMatcher matcher;
  };

  // A fresh owner id (never reused) for the handles of one batch.
  int64_t NewOwner();
  // Takes ownership of `matcher` and returns its new handle (>= 0), owned by `owner`.
  int32_t Add(GrammarMatcher matcher, int64_t owner = -1);
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
  int64_t next_owner_ = 0;
};

}  // namespace xg
