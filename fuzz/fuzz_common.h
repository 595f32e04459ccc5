// Shared driver for the libFuzzer targets: compile a Grammar against a small fixed vocabulary, then
// walk a matcher a few steps, comparing every mask with the brute-force oracle.
//
// Expected failures are xg::InputError (and its subclasses LimitError, RegexError): the input is
// rejected. Anything else is a finding: InternalError or another exception aborts with a message, a
// mask that disagrees with the oracle (or AcceptToken disagreeing with a mask bit) aborts too, and
// ASan / UBSan report memory errors and undefined behaviour themselves.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "compiler/compiled_grammar.h"
#include "grammar/grammar.h"
#include "matcher/grammar_matcher.h"
#include "support/check.h"
#include "support/limits.h"
#include "tokenizer/tokenizer_info.h"

namespace xgfuzz {

// Tighter than the defaults so that one input stays well under a second; hitting them is a
// LimitError (expected).
inline const xg::Limits& FuzzLimits() {
  static const xg::Limits limits = [] {
    xg::Limits l;
    l.max_items_per_set = 1 << 14;
    l.max_work_per_byte = 1 << 18;
    return l;
  }();
  return limits;
}

inline std::shared_ptr<const xg::TokenizerInfo> Vocab() {
  static const std::shared_ptr<const xg::TokenizerInfo> tok = [] {
    std::vector<std::string> toks;
    const char* pieces[] = {"a", "b", "c", "x", "0", "1", "9", "\"", "{", "}", "[", "]", ",", ":", " ", "\n",
                            "ab", "abc", "ba", "aa", "aaa", "\"a", "a\"", "\",", "\"}", "},", "}]", "]}", "1,",
                            "12", "0.", "e5", "tru", "true", "null", "\"\"", "{\"", "\":", "-", ".", "\\", "\\n",
                            "\t", "\r", "(", ")", "*", "+", "?", "|", "A", "Z", "_", "\xe4\xb8\xad", "\xe4",
                            "\xb8\xad", "\xc3\xa9", "\xc3", "\xa9", "\xf0\x9f\x98\x80", "\xff", "xyz"};
    for (const char* p : pieces) toks.push_back(p);
    std::string nul(1, '\0');
    toks.push_back(nul);
    toks.push_back("");  // special (empty)
    toks.push_back("<eos>");
    int32_t n = static_cast<int32_t>(toks.size());
    return std::make_shared<xg::TokenizerInfo>(toks, n + 3, std::vector<int32_t>{n - 2}, std::vector<int32_t>{n - 1});
  }();
  return tok;
}

[[noreturn]] inline void Finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "\n==FINDING== %s: %s\n", what, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

inline bool Bit(const std::vector<uint32_t>& m, int32_t t) { return (m[t >> 5] >> (t & 31)) & 1; }

// Compiles `g` and walks a matcher: `choices` (fuzz bytes) pick the tokens and operations.
inline void CompileAndWalk(xg::Grammar g, const uint8_t* choices, size_t nchoices) {
  auto tok = Vocab();
  auto cg = std::make_shared<const xg::CompiledGrammar>(std::move(g), tok, nullptr, FuzzLimits());
  xg::GrammarMatcher m(cg);
  const int32_t words = tok->MaskWords();
  std::vector<uint32_t> mask(words), oracle(words);
  size_t ci = 0;
  auto next = [&]() -> uint32_t { return nchoices ? choices[ci++ % nchoices] : 0; };
  const int steps = 6;
  for (int s = 0; s < steps && !m.IsTerminated(); ++s) {
    m.FillNextTokenBitmask(mask.data(), words);
    m.FillNextTokenBitmaskBruteForce(oracle.data(), words);
    if (mask != oracle) {
      std::string d;
      for (int32_t t = 0; t < tok->VocabSize(); ++t)
        if (Bit(mask, t) != Bit(oracle, t))
          d += "token " + std::to_string(t) + (Bit(mask, t) ? " mask-only; " : " oracle-only; ");
      Finding("mask != oracle", d + "at step " + std::to_string(s));
    }
    uint32_t op = next();
    if (op % 8 == 7 && m.NumAcceptedTokens() > 0) {
      m.Rollback(1);
      continue;
    }
    std::vector<int32_t> allowed;
    for (int32_t t = 0; t < tok->VocabSize(); ++t)
      if (Bit(mask, t)) allowed.push_back(t);
    int32_t t;
    if (op % 8 == 6 || allowed.empty()) {
      t = static_cast<int32_t>(next() % tok->VocabSize());
    } else {
      t = allowed[next() % allowed.size()];
    }
    bool ok = m.AcceptToken(t);
    if (ok != Bit(mask, t))
      Finding("AcceptToken != mask bit", "token " + std::to_string(t) + " accepted=" + std::to_string(ok) +
                                              " at step " + std::to_string(s));
  }
  // Off by default: FindJumpForwardString has no bound on the length of the forced continuation
  // (`root ::= "ab"{1000000}` builds a 2 MB string and one Earley set per byte; see docs/fuzzing.md),
  // so with it on the run stops at the first such input. XG_FUZZ_JUMP_FORWARD=1 turns it on.
  static const bool jump_forward = std::getenv("XG_FUZZ_JUMP_FORWARD") != nullptr;
  if (jump_forward) (void)m.FindJumpForwardString();
}

// Runs `body`, turning the expected exceptions into "rejected" and everything else into a finding.
template <typename F>
inline void Guard(F&& body) {
  try {
    body();
  } catch (const xg::InputError&) {
    // expected: invalid input or a resource limit
  } catch (const xg::InternalError& e) {
    Finding("InternalError", e.what());
  } catch (const std::exception& e) {
    Finding("unexpected exception", e.what());
  }
}

}  // namespace xgfuzz
