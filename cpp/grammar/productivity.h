// Productive rules: which rules can match some finite string. A rule whose every alternative
// recurses into itself forever (`root ::= root`, or a JSON Schema `{"$ref": "#"}`) matches nothing;
// front ends use this to report an empty language before compiling, and the FSM builder's own
// check (fsm/grammar_fsm.h) stays the last word.
//
// Algorithm: the least fixpoint of "a rule is productive when its body is", where literals, classes
// that match something and repetitions that may be empty are productive, a sequence when all its
// items are and a choice when one is. Computed as Horn-clause propagation over the expression
// graph (a counter of unproven children per sequence node, a worklist of nodes proven), so it takes
// time linear in the grammar's size and no recursion on its shape.
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/grammar.h"

namespace xg {

// For each rule, whether it can match some finite string.
std::vector<uint8_t> ProductiveRules(const Grammar& g);

}  // namespace xg
