// Prints a Grammar back to EBNF text that ParseEbnf reads to the same grammar:
// for every grammar g, Print(ParseEbnf(Print(g))) == Print(g). Rules are printed in index order.
#pragma once

#include <string>

#include "grammar/grammar.h"

namespace xg {

std::string PrintGrammar(const Grammar& g);
std::string PrintExpr(const Grammar& g, int32_t expr);

}  // namespace xg
