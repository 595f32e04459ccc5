// JSON strings whose text never contains given texts (JsonSchemaOptions::string_excludes: the markers of a
// tool-call format, which a model must not write inside the arguments).
//
// Algorithm: an Aho-Corasick automaton over the texts' code points. Its states are the trie nodes (the prefixes of
// the texts); reading a character follows the trie edge or, failing that, the failure links (the longest proper
// suffix that is again a prefix). A state whose prefix ends with a whole text is dead. The string's characters
// walk the automaton; each live state becomes one grammar rule whose alternatives group the characters by the
// state they lead to: characters in no text lead back to the start state (written as a repetition there), an
// escape sequence too (no text holds a backslash), and the closing quote ends the string in any live state. So the
// exclusion is on the JSON text of the string: an escaped spelling (`\u003c|close|>`) is not the text.
#pragma once

#include <string>
#include <vector>

#include "frontends/json_schema/ebnf_text.h"

namespace xg::json_schema {

// The body of a JSON string (with its quotes) whose text contains none of `texts` (UTF-8, non-empty; a text with
// a control character can never be part of a JSON string's text and is left out). Adds one rule per live state to
// `rules` (named by its prefix). Stops (not handled) for a text with '"' or '\\', whose escapes would make the
// text appear across a character boundary.
std::string JsonStringAvoiding(const std::vector<std::string>& texts, RuleTable* rules);

}  // namespace xg::json_schema
