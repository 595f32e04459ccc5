// Integer ranges as grammars over decimal spellings, for the native JSON Schema front end (mirrors
// integer_range of xg2jax/json_schema/_numbers.py, which explains the construction, so the text is the same).
//
// The integers in [lo, hi] (either end may be open) are split by sign and by number of digits; within one digit
// count, "at least a" and "at most b" are the digit-by-digit constructions; every digit count strictly between
// the ends' is unconstrained. Negative ranges are the positive ranges of the absolute values behind a '-'.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace xg::json_schema {

// An EBNF expression for the spellings of the integers in [lo, hi] (nullopt ends are open), or nullopt if the
// range is empty; `negative_zero`: whether "-0" is one of them.
std::optional<std::string> IntegerRange(std::optional<int64_t> lo, std::optional<int64_t> hi, bool negative_zero);

}  // namespace xg::json_schema
