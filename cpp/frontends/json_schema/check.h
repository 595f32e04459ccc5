// Pass 1 of the native JSON Schema front end: every keyword the Python front end recognises must be one this
// front end handles, with a value of the shape it expects, wherever it is (as the Python front end checks the
// whole document before converting); anything else stops the conversion (Stop) with the reason.
#pragma once

#include "support/json_value.h"

namespace xg::json_schema {

// The dialect from a root `$schema` (2020 without one, or for a dialect Check rejects).
int Draft(const JsonValue& root);

// Checks the schema `s` (a `$ref` target too) in dialect `draft`; `is_root`: `s` is the document.
void Check(const JsonValue& s, int draft, bool is_root = false);

}  // namespace xg::json_schema
