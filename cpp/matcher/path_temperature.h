// Rule temperatures at a parse position: xgrammar's `name[temperature=T] ::= ...` (grammar.h, Rule::temperature).
//
// The temperature for the next token is that of the innermost rule with one around the place where the token is
// read. In an Earley parse the next byte is read by the scannable items of the last set, each a path through the
// grammar: an item's innermost tempered rule is its own rule if that has a temperature, else the innermost one of
// the items that wait on its rule in its origin set (its parents), up to the root. Paths differ where the grammar
// is ambiguous so far (`left | right`), and a path outside every tempered rule has none; the caller combines them
// (xgrammar: the largest temperature, the default temperature for a path without one).
#pragma once

#include "parser/earley_parser.h"

namespace xg {

struct PathTemperatures {
  float max = -1.0f;        // the largest temperature of a path (< 0: no path is in a tempered rule)
  float min = -1.0f;        // the smallest (to tell whether the paths disagree)
  bool untempered = false;  // some path is in no tempered rule
};

// The paths of the scannable items of `parser`'s last set (lineage 0). No item: no path (all fields as default).
PathTemperatures CurrentPathTemperatures(const EarleyParser& parser);

}  // namespace xg
