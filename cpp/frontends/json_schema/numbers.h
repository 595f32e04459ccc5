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

#include "frontends/json_schema/ebnf_text.h"

namespace xg::json_schema {

// An EBNF expression for the spellings of the integers in [lo, hi] (nullopt ends are open), or nullopt if the
// range is empty; `negative_zero`: whether "-0" is one of them.
std::optional<std::string> IntegerRange(std::optional<int64_t> lo, std::optional<int64_t> hi, bool negative_zero);

// A bound of `minimum` / `maximum` read exactly: sign, integer part, fraction digits (no trailing zeros). Only
// literals the Python front end reads exactly too: integers of up to 18 digits (Python ints), other numbers of
// at most 15 significant digits and an integer part below 10^17 (floats whose repr is the same decimal).
struct Decimal {
  bool negative = false;  // never for zero
  int64_t whole = 0;      // the integer part of the absolute value
  std::string fraction;   // its fraction digits, no trailing zeros
  static std::optional<Decimal> Parse(const std::string& literal);
  Decimal Negated() const;
  int64_t Floor() const;
  int64_t Ceil() const;
  bool IsZero() const { return whole == 0 && fraction.empty(); }
};
int Compare(const Decimal& a, const Decimal& b);  // -1, 0, 1

// str() of the number Python's json module reads from this literal (an int, or a float's repr, which is also
// json.dumps' spelling): the text the Python front end writes for it; nullopt when the literal is not read
// exactly (Decimal::Parse).
std::optional<std::string> PythonNumberText(const std::string& literal);

// number_range of _numbers.py: spellings -?I(.F)? (no exponent) of the numbers x with lo <(=) x <(=) hi (nullopt
// ends are open), adding its fraction rules to `rules`; nullopt if the range is empty.
std::optional<std::string> NumberRange(const std::optional<Decimal>& lo, bool lo_strict,
                                       const std::optional<Decimal>& hi, bool hi_strict, RuleTable* rules);

}  // namespace xg::json_schema
