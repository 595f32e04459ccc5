// Token budgets: xgrammar's `name[max_tokens=n] ::= ...` (grammar.h, Rule::max_tokens).
//
// An occurrence of a budgeted rule is a (rule, origin set) pair of the parse: the rule's derivation that began at
// that set. It has read as many tokens as accepted tokens ended after its first byte (a token it begins inside
// counts; strings given to AcceptString do not count, as in xgrammar). Once an occurrence has read n tokens or more
// and can end at the current token boundary (an item of its rule at a final state, with its origin, is in the last
// set), it ends there: the parses that continue inside it are dropped from the last set. If it cannot end yet (the
// text is in the middle of a word its body must finish), the budget waits: the occurrence goes on, and ends at the
// first token boundary where it can. Nested budgets combine (an outer occurrence that ends takes its inner ones with
// it), and a budget follows the derivation, not the rule: a rule used both inside and outside a budgeted one keeps
// its other uses.
//
// "Inside an occurrence" is decided on the parent relation over (rule, origin set) nodes (as for rule
// temperatures, matcher/path_temperature.h): a node is kept when some chain of parents reaches a node without
// parents (the root, whose derivation is the whole output) without passing through an occurrence that must end.
// An ambiguous prefix where one rule instance is both inside and outside such an occurrence keeps it, and its
// later completion may also resume the occurrence's own items in their (older) set: the budget then applies to the
// parses built from the last set, which is what both masks and AcceptToken read, so they stay equal.
//
// The set positions (EarleyParser::SetPosition) are offsets in the output, written by the matcher on every set of
// an accepted step; the tracker keeps the offset where each counted token ended. The matcher checkpoints it with
// each step.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "parser/earley_parser.h"

namespace xg {

class TokenBudgets {
 public:
  struct Checkpoint {
    size_t tokens;
  };
  Checkpoint Save() const { return {token_ends_.size()}; }
  void Restore(const Checkpoint& c) { token_ends_.resize(c.tokens); }
  void Clear() { token_ends_.clear(); }

  // A counted token (AcceptToken) ended at output offset `end`.
  void CountToken(int64_t end) { token_ends_.push_back(end); }
  // Counted tokens that ended after output offset `position`.
  int64_t TokensAfter(int64_t position) const {
    return token_ends_.end() - std::upper_bound(token_ends_.begin(), token_ends_.end(), position);
  }
  // Ends the occurrences of `parser`'s last set whose budget is spent and that can end there (see the file
  // comment): replaces the last set by its items outside them. Returns whether the set changed.
  bool CloseSpentOccurrences(EarleyParser* parser) const;

  size_t MemoryBytes() const { return token_ends_.capacity() * sizeof(int64_t); }

 private:
  std::vector<int64_t> token_ends_;  // ascending
};

}  // namespace xg
