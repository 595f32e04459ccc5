// EBNF front end: the dialect of xgrammar and llama.cpp's GBNF.
//
//   rule      ::= NAME "::=" choice ( "(=" choice ")" )?        a trailing "(= ...)" is a lookahead
//   choice    ::= sequence ( "|" sequence )*
//   sequence  ::= postfix*
//   postfix   ::= primary ( "*" | "+" | "?" | "{" m "}" | "{" m "," "}" | "{" m "," n "}" )*
//   primary   ::= STRING | CLASS | NAME | "(" choice ")" | "." | "Regex(" STRING ")"
//               | "Substring(" STRING ("," STRING)* ")"
//               | "AnyOrder(" arg ("," arg)* ")"       arg ::= choice | "separator=" choice
//               | "TagDispatch(" ( "(" (STRING | ID) "," NAME ")" "," )* named* ")"    ID: a special token trigger
//                     named ::= "loop_after_dispatch=" ("true" | "false") | "excludes=(" STRING ("," STRING)* ")"
//               | "TokenTagDispatch(" as TagDispatch with token ids for the strings ")"
//               | "Token(" ID ("," ID)* ")"                       special tokens by id (grammar.h)
//               | "ExcludeToken(" ( ID ("," ID)* )? ")"          any one token but these (grammar.h)
//
// Whitespace and newlines are insignificant; a rule ends where the next `NAME ::=` begins. `#`
// starts a comment to the end of the line. Strings take \n \t \r \" \' \\ \xHH \uHHHH \UHHHHHHHH
// (\x is a code point, as in GBNF); classes take the same plus \] \[ \- \^ and ranges over code
// points, negation with a leading ^. `Regex("...")` (xgrammar's builtin) embeds a regex
// (frontends/regex.h) after decoding the string's escapes; as in xgrammar, its `.` matches any code
// point. `AnyOrder(a, b?, c*, separator=s)` is xg2jax's any-order construct (grammar.h): a exactly
// once, b at most once, c any number of times, in any order, s between neighbours; a `?` or `*` on a
// whole argument is its role. `TagDispatch(...)` is xgrammar's (grammar.h), with token ids allowed beside
// string triggers (a model may write a marker as text or as its special token); the other xgrammar builtins
// (JSONSchema, ...) are rejected. Errors are
// InputError with "line:column" and the offending line with a caret.
#pragma once

#include <string>

#include "grammar/grammar.h"
#include "support/limits.h"

namespace xg {

// Parses EBNF text; the rule named root_rule_name becomes Grammar::root. Every rule reference is
// resolved; unknown names, duplicate rules, and an unknown root are errors, and so is an expression
// nested deeper than limits.max_nesting_depth (support/limits.h).
Grammar ParseEbnf(const std::string& text, const std::string& root_rule_name = "root",
                  const Limits& limits = DefaultLimits());

}  // namespace xg
