// Checks in three tiers, as in xgrammar:
//   XG_USER_CHECK  - bad input from the user (grammar text, token ids, shapes). Throws InputError,
//                    which the bindings turn into a Python ValueError with the message unchanged.
//   XG_ICHECK      - an internal invariant. Throws InternalError (a RuntimeError in Python): a bug in
//                    xg2jax, never the user's fault, but still never a crash.
//   XG_DCHECK      - expensive invariants checked only in debug builds (NDEBUG unset).
// Usage: XG_USER_CHECK(ok) << "grammar: rule " << name << " is undefined";
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace xg {

class InputError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A resource limit (support/limits.h) was exceeded: the input is valid but too costly to serve.
// An InputError, so a ValueError in Python; a matcher that meets one keeps it as a sticky error.
class LimitError : public InputError {
 public:
  using InputError::InputError;
};

class InternalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
// Collects the streamed message and throws from its destructor's caller (ThrowNow) so that
// `XG_USER_CHECK(x) << a << b;` reads naturally.
template <typename E>
class Thrower {
 public:
  template <typename T>
  Thrower& operator<<(const T& v) {
    os_ << v;
    return *this;
  }
  [[noreturn]] ~Thrower() noexcept(false) { throw E(os_.str()); }

 private:
  std::ostringstream os_;
};
}  // namespace detail

}  // namespace xg

#define XG_USER_CHECK(cond) \
  if (cond) {               \
  } else                    \
    ::xg::detail::Thrower<::xg::InputError>()
#define XG_ICHECK(cond)                              \
  if (cond) {                                        \
  } else                                             \
    ::xg::detail::Thrower<::xg::InternalError>()     \
        << "internal error (" << __FILE__ << ":" << __LINE__ << ", " #cond "): "
#define XG_USER_ERROR() ::xg::detail::Thrower<::xg::InputError>()
// A resource limit (support/limits.h): the input is valid but too costly; a LimitError (xg2jax.LimitError).
#define XG_LIMIT_CHECK(cond) \
  if (cond) {                \
  } else                     \
    ::xg::detail::Thrower<::xg::LimitError>()
#ifdef NDEBUG
#define XG_DCHECK(cond) \
  if (true) {           \
  } else                \
    ::xg::detail::Thrower<::xg::InternalError>()
#else
#define XG_DCHECK(cond) XG_ICHECK(cond)
#endif
