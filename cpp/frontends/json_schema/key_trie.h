// Undeclared object keys for the native JSON Schema front end (mirrors _objects._key_except of the Python front
// end): a JSON string key spelled differently from every declared name, compared unit by unit (a unit is a
// character or an escape sequence of the name's JSON spelling), as a trie of the names' units written as nested
// alternatives of one rule, each node deviating into the shared string tails j_key_rest / j_key_wide.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "frontends/json_schema/ebnf_text.h"

namespace xg::json_schema {

// The expression (with the opening quote) for keys other than `names`; "j_string" when there are none. Adds the
// trie's rules (and the shared tails, once) to `rules`.
std::string KeyExcept(const std::vector<std::string_view>& names, RuleTable* rules);

// Defines the shared string tails j_key_rest / j_key_wide in `rules` unless already there.
void DefineKeyTails(RuleTable* rules);

}  // namespace xg::json_schema
