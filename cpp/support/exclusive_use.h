// ExclusiveUse: detects an object used from two threads at once, and refuses the second use.
//
// A GrammarMatcher is not thread-safe (one generation is one sequence of steps), but a serving
// process that shares one by mistake must get an error, not a corrupted parse or an abort. Each
// public entry point opens a Scope; a Scope that finds the object already in use throws InputError
// and touches nothing. One relaxed compare-exchange and one release store per call: the cost of an
// uncontended atomic. It detects overlap, not ordering: two threads that take turns (each call
// finished before the other starts) are not misuse and pass.
//
// Copies (GrammarMatcher::Fork) start out unused whatever the state of the original.
#pragma once

#include <atomic>

#include "support/check.h"

namespace xg {

class ExclusiveUse {
 public:
  ExclusiveUse() = default;
  ExclusiveUse(const ExclusiveUse&) {}
  ExclusiveUse& operator=(const ExclusiveUse&) { return *this; }

  class Scope {
   public:
    // `what` names the object and the call for the error message.
    Scope(const ExclusiveUse& use, const char* what) : use_(use) {
      bool expected = false;
      if (!use_.busy_.compare_exchange_strong(expected, true, std::memory_order_acquire)) {
        XG_USER_ERROR() << what
                        << ": called while another thread is using the same matcher; a GrammarMatcher is not "
                           "thread-safe (give each thread its own, e.g. with fork())";
      }
    }
    ~Scope() { use_.busy_.store(false, std::memory_order_release); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    const ExclusiveUse& use_;
  };

 private:
  mutable std::atomic<bool> busy_{false};
};

}  // namespace xg
