// See limits.h: the process-wide nesting depth, one atomic (read on every grammar parse and check; set rarely).
#include "support/limits.h"

#include <atomic>
#include <string>

#include "support/check.h"

namespace xg {
namespace {

std::atomic<int32_t> process_nesting_depth{kDefaultProcessNestingDepth};

}  // namespace

int32_t ProcessNestingDepth() { return process_nesting_depth.load(std::memory_order_relaxed); }

void SetProcessNestingDepth(int64_t depth) {
  XG_USER_CHECK(depth >= 1 && depth <= kMaxProcessNestingDepth)
      << "max recursion depth must be between 1 and " << kMaxProcessNestingDepth << ", got " << depth;
  process_nesting_depth.store(static_cast<int32_t>(depth), std::memory_order_relaxed);
}

}  // namespace xg
