// oneOf as anyOf for the native JSON Schema front end: proofs that two branches share no value. They are a part
// of what the Python front end proves (xg2jax/json_schema/_disjoint.py), so where they succeed both front ends
// take the anyOf path and write the same text; where they do not, the conversion stops.
#pragma once

#include "support/json_value.h"

namespace xg::json_schema {

// Two branches (bare references already followed) share no value: their types do not meet, or both are objects
// only and a name one of them requires is declared by both with const / enum scalars that have no value in
// common. False means "not shown".
bool DisjointPair(const JsonValue& a, const JsonValue& b);

}  // namespace xg::json_schema
