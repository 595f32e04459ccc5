// Divisibility automata for `multipleOf`, written as EBNF rules for the native JSON Schema front end. Function for
// function the constructions of xg2jax/json_schema/_numbers.py (multiple_of, multiple_of_at_least,
// decimal_multiple_of, scaled_multiples), rule names and order included, so both front ends write the same text.
//
// The idea throughout: a number's decimal digits are read left to right, and the state is the remainder modulo the
// divisor of what has been read so far (a digit g turns r into (10 r + g) mod k). One rule per reachable state,
// an empty alternative where the remainder is 0. Bounds add, along the bounds' own digits, whether the digits so
// far equal a bound's (then the next digit may not pass it), as the ranges of numbers.h do.
//
// Every construction estimates its rule count first and stops the conversion (NotHandled: the Python front end
// then raises its UnsupportedSchemaError) beyond kMaxMultipleOfRules, before building anything large.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "frontends/json_schema/ebnf_text.h"
#include "frontends/json_schema/numbers.h"

namespace xg::json_schema {

// MAX_MULTIPLE_OF_RULES of _limits.py: the rules one divisibility automaton may take.
constexpr int64_t kMaxMultipleOfRules = 10000;
// MAX_LISTED_MULTIPLES: a bounded range with at most this many multiples is listed, not an automaton.
constexpr int64_t kMaxListedMultiples = 500;

// MAX_LISTED_NON_MULTIPLES: likewise for the complement of multipleOf within bounds.
constexpr int64_t kMaxListedNonMultiples = 2000;
// Past this lcm of a multipleOf step and the excluded divisors, the native front end stops (the Python one goes on).
constexpr int64_t kMaxNotMultipleModulus = 1000000000000000;  // 10^15

enum class MultipleSign { kAny, kNonNegative, kNegative };

// Which remainders modulo the divisor end a number: empty for "divisible" (remainder 0); the complement of
// multipleOf passes another test (divisible by the step, by none of the excluded divisors).
using RemainderTest = std::function<bool(int64_t)>;

// multiple_of: the spellings of the integers divisible by k (k >= 1) of the given sign (with `ok`: whose
// remainder modulo k passes it); `negative_zero`: whether "-0" spells 0 (with kAny).
std::string MultipleOf(int64_t k, RuleTable* rules, MultipleSign sign, bool negative_zero,
                       const RemainderTest& ok = {});

// multiple_of_at_least: the spellings of the integers >= a (a >= 1) divisible by k (or passing `ok`).
std::string MultipleOfAtLeast(int64_t k, int64_t a, RuleTable* rules, const RemainderTest& ok = {});

// decimal_multiple_of: numbers spelled without an exponent that are multiples of p / 10^d (later fraction digits
// zeros only).
std::string DecimalMultipleOf(int64_t p, int d, RuleTable* rules, MultipleSign sign);

// scaled_multiples: spellings I(.F)? (no sign) of x = N / 10^d with lo <= N <= hi (0 <= lo; hi nullopt:
// unbounded) and p dividing N (or N mod p passing `ok`); nullopt when none qualifies. N must stay below 10^17.
std::optional<std::string> ScaledMultiples(int64_t p, int d, int64_t lo, std::optional<int64_t> hi,
                                           RuleTable* rules, const RemainderTest& ok = {});

// The scalars' part (_scalars.py), on top of the constructions above.

// _decimal_lcm (allOf merging two multipleOf): the JSON number text of the least common multiple of two positive
// decimals (an integer's digits when it is one, as Python's int; else the decimal, as the float Python writes),
// or nullopt when this front end does not write it exactly.
std::optional<std::string> DecimalLcm(const Decimal& a, const Decimal& b);

// multipleOf read exactly as p / 10^d (d minimal): decimal_step.
struct DecimalStep {
  int64_t p = 1;
  int d = 0;
};
DecimalStep StepOf(const Decimal& k);
// The integers that are multiples of k: those divisible by p / gcd(p, 10^d).
int64_t IntegerStep(const DecimalStep& k);

// _integer_multiples: the integers in [lo, hi] (nullopt ends are open) divisible by k >= 1 (or whose remainder
// modulo k passes `ok`); throws Unsatisfiable when there are none. `negative_zero`: whether "-0" spells 0
// (unbounded ranges).
std::string IntegerMultiples(int64_t k, std::optional<int64_t> lo, std::optional<int64_t> hi, RuleTable* rules,
                             bool negative_zero, const RemainderTest& ok = {});

// _bounded_decimal_multiples: the multiples of a non-integral k within bounds (at least one end given), per
// sign listed when few, else by ScaledMultiples / DecimalMultipleOf; the rule's name. Throws Unsatisfiable when
// there are none.
std::string BoundedDecimalMultiples(const DecimalStep& k, const std::optional<Decimal>& lo, bool lo_strict,
                                    const std::optional<Decimal>& hi, bool hi_strict, RuleTable* rules);

}  // namespace xg::json_schema
