// Grammars the library ships.
#pragma once

#include <string>

namespace xg {

// Any JSON object or array (RFC 8259), whitespace allowed between tokens but not around the
// document: the standard "any JSON" grammar, as in xgrammar's builtin JSON grammar.
const std::string& BuiltinJsonGrammarEbnf();

}  // namespace xg
