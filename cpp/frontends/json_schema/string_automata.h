// JSON strings from code-point automata, for the native JSON Schema front end: `pattern` (ECMAScript, search
// semantics) as a DFA over the string's code points (cpp/automata), its length bounds intersected, then spelled
// as grammar rules inside the quotes, one rule per state of the trimmed and merged automaton.
//
// Mirrors xg2jax/json_schema/_automata.py (spelling), _regex_text.py (anchor hoisting) and the key rules of
// _patterns.py, so the text is the Python front end's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "automata/codepoint_dfa.h"
#include "frontends/json_schema/ebnf_text.h"

namespace xg::json_schema {

// How an automaton's strings are written: JSON (quotes, escapes), or raw code points between `open` and `close`
// (EBNF expressions; Gemma's `<|"|>` strings, bare keys).
struct StringSpelling {
  bool raw = false;
  std::string open = "\"\\\"\"";   // the EBNF expression before the content
  std::string close = "\"\\\"\"";  // after it (where the automaton accepts)
};

// `pattern` with a `^` that opens groups at the very start and a `$` that closes groups at the very end moved
// outside those groups (where they mean the same).
std::string HoistAnchors(const std::string& pattern);

// Why the engine's regex parser rejects `pattern` (after HoistAnchors), or nullopt.
std::optional<std::string> RegexSyntaxError(const std::string& pattern);

// A JSON string (with its quotes) whose content matches `pattern` (search semantics) and has `lo` to `hi` code
// points (`hi` < 0: unbounded): rules added to `rules`, the expression returned; "j_never" when no string does.
// Throws (RegexError, LimitError) when the automaton cannot be built within the Python front end's limits.
std::string PatternString(const std::string& pattern, int64_t lo, int64_t hi, RuleTable* rules);

// _string_automaton: a JSON string whose content matches `pattern` (search semantics) and the format's regex (the
// whole string) where not null, is none of `excluded_names`, in which none of `excluded_patterns` finds a match,
// with `lo` to `hi` code points; throws as PatternString does.
std::string StringAutomaton(const std::string* pattern, const std::string* format_regex,
                            const std::vector<std::string>& excluded_names,
                            const std::vector<std::string>& excluded_patterns, int64_t lo, int64_t hi,
                            RuleTable* rules, const StringSpelling& spelling = {});
// A JSON string (with its quotes) whose content the automaton (component 0) accepts: _key_rule's rules, one per
// state of the trimmed, merged automaton; "j_never" when it accepts nothing.
std::string DfaString(const CodepointDfa& dfa, RuleTable* rules, const StringSpelling& spelling = {});
// The keys a `patternProperties` regex matches (search semantics); throws as PatternString does.
CodepointDfa KeyDfa(const std::string& pattern);
// The product of key automata within the Python front end's state limit (_automata.product); throws LimitError.
CodepointDfa KeyProduct(const std::vector<const CodepointDfa*>& dfas);
// One code point inside an EBNF character class, escaped where the class syntax needs it.
void AppendClassChar(uint32_t cp, std::string* out);
// Whether the automaton (component 0) accepts the whole of the UTF-8 text.
bool Matches(const CodepointDfa& dfa, const std::string& text);

}  // namespace xg::json_schema
