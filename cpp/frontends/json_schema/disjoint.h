// oneOf as anyOf for the native JSON Schema front end: proofs that two branches share no value. They are a part
// of what the Python front end proves (xg2jax/json_schema/_disjoint.py), so where they succeed both front ends
// take the anyOf path and write the same text; where they do not, the conversion stops.
#pragma once

#include "support/json_value.h"

namespace xg::json_schema {

// Two branches (bare references already followed) share no value. Proofs, each one _disjoint_pair makes too:
// their types do not meet; both list scalars (const / enum) and no value is in both lists; or on every type both
// allow: strings / arrays whose length ranges do not meet; objects where a name one side requires is one the
// other forbids (its property schema is false, or it is undeclared and additionalProperties is false), a name
// one side requires has disjoint property schemas on both sides (recursively, as deep as the Python front end
// looks), or the property count ranges do not meet. False means "not shown".
bool DisjointPair(const JsonValue& a, const JsonValue& b, int depth = 0);

}  // namespace xg::json_schema
