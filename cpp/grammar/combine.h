// Grammars combined into one (xgrammar's Grammar.union / Grammar.concat): the root of the result
// matches any one of the grammars, or all of them in order. Each grammar's rules are copied with
// their expressions re-indexed; a rule whose name is already taken gets the first free `name_k`
// (the i-th grammar's `root` becomes `root_i`), so every grammar keeps its own namespace.
#pragma once

#include <string>
#include <vector>

#include "grammar/grammar.h"

namespace xg {

enum class Combination { kUnion, kConcat };

// Throws InputError when `grammars` is empty.
Grammar CombineGrammars(const std::vector<const Grammar*>& grammars, Combination how);

// A copy of `g` whose rule names start with `prefix` (a name's start: a letter or '_'), except those in `keep`,
// so that its printed EBNF can sit beside other rules without a clash (the structural-tag front end embeds
// grammars so, keeping the JSON lexical rules that several embedded schemas share).
Grammar WithRulePrefix(const Grammar& g, const std::string& prefix, const std::vector<std::string>& keep = {});

}  // namespace xg
