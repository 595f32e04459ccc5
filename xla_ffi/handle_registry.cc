// HandleRegistry: a hash map from handle to shared slot under a reader-writer lock; lookups (one
// per row per step) take the shared lock only.
#include "handle_registry.h"

#include <limits>

#include "support/check.h"

namespace xg {

int64_t HandleRegistry::NewOwner() {
  std::unique_lock lock(mu_);
  return next_owner_++;
}

int32_t HandleRegistry::Add(GrammarMatcher matcher, int64_t owner) {
  auto slot = std::make_shared<Slot>(std::move(matcher), owner);
  std::unique_lock lock(mu_);
  XG_USER_CHECK(next_ < std::numeric_limits<int32_t>::max()) << "grammar handles: all 2^31 handles have been used";
  const int32_t h = next_++;
  slots_.emplace(h, std::move(slot));
  return h;
}

void HandleRegistry::Free(int32_t handle) {
  std::unique_lock lock(mu_);
  XG_USER_CHECK(slots_.erase(handle) == 1) << "grammar handle " << handle << " is unknown or already freed";
}

std::shared_ptr<HandleRegistry::Slot> HandleRegistry::Find(int32_t handle) const {
  std::shared_lock lock(mu_);
  auto it = slots_.find(handle);
  return it == slots_.end() ? nullptr : it->second;
}

GrammarMatcher HandleRegistry::Snapshot(int32_t handle) const {
  std::shared_ptr<Slot> slot = Find(handle);
  XG_USER_CHECK(slot != nullptr) << "grammar handle " << handle << " is unknown or already freed";
  std::lock_guard lock(slot->mu);
  return slot->matcher.Fork();
}

int32_t HandleRegistry::NumLive() const {
  std::shared_lock lock(mu_);
  return static_cast<int32_t>(slots_.size());
}

HandleRegistry& HandleRegistry::Global() {
  static HandleRegistry* registry = new HandleRegistry();  // never destroyed: handlers may run at exit
  return *registry;
}

}  // namespace xg
