// See stack_guard.h. The bounds come from pthread_getattr_np, which for the main thread reports the stack the
// RLIMIT_STACK allows (its growth limit) and for other threads the stack they were created with.
#include "support/stack_guard.h"

#include <pthread.h>

#include <algorithm>
#include <string>

#include "support/check.h"
#include "support/limits.h"

namespace xg {
namespace detail {
namespace {

uintptr_t ReadStackFloor() {
  uintptr_t low = 0, size = 0;
#if defined(__linux__)
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return 0;
  void* base = nullptr;
  size_t bytes = 0;
  const int rc = pthread_attr_getstack(&attr, &base, &bytes);
  pthread_attr_destroy(&attr);
  if (rc != 0) return 0;
  low = reinterpret_cast<uintptr_t>(base), size = bytes;
#elif defined(__APPLE__)
  size = pthread_get_stacksize_np(pthread_self());  // the address it gives is the stack's top
  low = reinterpret_cast<uintptr_t>(pthread_get_stackaddr_np(pthread_self())) - size;
#endif
  if (low == 0 || size == 0) return 0;
  return low + std::min<uintptr_t>(kStackReserve, size / 2);
}

}  // namespace

uintptr_t StackFloor() {
  thread_local const uintptr_t floor = ReadStackFloor();
  return floor;
}

void ThrowStackExhausted(const char* what) {
  XG_LIMIT_CHECK(false) << "grammar nesting: " << what << " needs more stack than this thread has left (each level "
                        << "of expression nesting takes a stack frame); nest the grammar less, run it on a thread "
                        << "with a larger stack, or lower max_recursion_depth (Limits.max_nesting_depth, now "
                        << ProcessNestingDepth() << " process-wide) so it is refused up front";
  __builtin_unreachable();
}

}  // namespace detail
}  // namespace xg
