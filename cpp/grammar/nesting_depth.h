// Expression nesting depth of a grammar, measured without recursion, and the check that bounds it.
//
// Every recursive walk over an expression tree (the passes, the printer, the automaton builder) uses
// stack in proportion to the tree's depth, so a grammar with 10^4 nested groups or 3x10^4 stacked
// `?` would overflow the stack. CheckNestingDepth runs before any of them: on every parsed grammar
// (ParseEbnf, RegexToGrammar) and on every grammar a CompiledGrammar is built from.
#pragma once

#include <cstdint>

#include "grammar/grammar.h"

namespace xg {

// The depth of rule `rule`'s body (and lookahead): a leaf is 1, a node one more than its deepest
// child. Iterative; linear in the nodes reachable from the rule.
int32_t RuleNestingDepth(const Grammar& g, int32_t rule);

// Throws InputError naming the first rule deeper than `limit` (Limits::max_nesting_depth).
void CheckNestingDepth(const Grammar& g, int32_t limit);

}  // namespace xg
