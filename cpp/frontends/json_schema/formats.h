// String formats as ECMAScript regexes of the characters between the quotes (RFC 3339 dates and times, ISO 8601
// durations, RFC 5321-style e-mail addresses, RFC 1123 host names, IPv4 / IPv6, RFC 4122 UUIDs, RFC 3986 URIs and
// URI references, RFC 6901 JSON pointers): the one table both JSON Schema front ends read.
//
// One spelling per format, used two ways: alone, as the grammar rule `Regex("...", json_string=true)`; together
// with `minLength` / `maxLength`, `pattern`, or constants and patterns to exclude, as one code-point automaton
// intersected with the others. Every character these formats use is printable ASCII that needs no JSON escape,
// except in JSON pointers (the rule form excludes `"`, `\` and control characters there; the automaton form
// accepts them escaped). Approximations (documented in docs/json_schema.md): dates accept day 31 in every month
// and February 29 in every year; e-mail local parts are dot-atoms; host names check label syntax and lengths per
// label, not the 253-character total.
#pragma once

#include <string>
#include <vector>

namespace xg::json_schema {

struct StringFormat {
  std::string name;   // the `format` value, e.g. "date-time"
  std::string rule;   // the grammar rule it becomes, e.g. "fmt_date_time"
  std::string regex;  // ECMAScript, matched against the whole string
};

// In a fixed order (the table's order is part of no output: look formats up by name).
const std::vector<StringFormat>& StringFormats();
// The format named `name`, or nullptr.
const StringFormat* FindStringFormat(const std::string& name);

}  // namespace xg::json_schema
