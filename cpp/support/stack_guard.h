// Stack headroom for the recursive passes over expression trees.
//
// The parsers, printer, normalisation passes and automaton builders recurse once per level of expression
// nesting. Limits::max_nesting_depth bounds the levels, but not the bytes: a frame's size depends on the
// compiler, the optimisation level and sanitizers (in the released build the deepest pass takes ~0.3 KB per
// level, under AddressSanitizer several KB), and the stack depends on the thread (8 MB for a Linux main thread,
// often 2 MB or less for a pool thread; Python's threading.stack_size can set any size). The recursive functions
// keep their frames small for that reason: error messages and leaf cases live in out-of-line functions. So each recursive pass also asks, once
// per level, whether the calling thread has CheckStackHeadroom's reserve left, and raises LimitError naming the
// stack when it has not: a grammar too deep for this thread is an error, never a crash.
//
// Call order: CheckStackHeadroom(what) at the top of each recursive function (one thread-local load and one
// comparison; the thread's stack bounds are read once per thread with pthread_getattr_np). Where the bounds
// cannot be read the check passes and only max_nesting_depth applies.
#pragma once

#include <cstdint>

namespace xg {

// Bytes of stack kept free below the deepest checked frame: room for the frames between two checks, for throwing
// the error and for whatever the caller runs after it (half the stack on a thread whose stack is smaller).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr uintptr_t kStackReserve = 512 * 1024;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr uintptr_t kStackReserve = 512 * 1024;
#else
constexpr uintptr_t kStackReserve = 128 * 1024;
#endif
#else
constexpr uintptr_t kStackReserve = 128 * 1024;
#endif

namespace detail {
// The lowest address a checked frame may use on this thread (stack base + kStackReserve), 0 if unknown.
uintptr_t StackFloor();
[[noreturn]] void ThrowStackExhausted(const char* what);
}  // namespace detail

// Throws LimitError ("... needs more stack than this thread has ...") when the calling thread's stack is within
// kStackReserve of its end. `what`: the pass, for the message ("parsing EBNF", "building rule automata").
inline void CheckStackHeadroom(const char* what) {
  // The frame address, not a local's: under AddressSanitizer's fake stacks locals may live on the heap.
  const uintptr_t here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  if (here < detail::StackFloor()) detail::ThrowStackExhausted(what);
}

}  // namespace xg
