"""String formats as ECMAScript regexes of the characters between the quotes (RFC 3339 dates and times, ISO 8601
durations, RFC 5321-style e-mail addresses, RFC 1123 host names, IPv4 / IPv6, RFC 4122 UUIDs, RFC 3986 URIs and
URI references, RFC 6901 JSON pointers).

One spelling per format, used two ways: alone, as the grammar rule ``Regex("...", json_string=true)``; together with
``minLength`` / ``maxLength``, ``pattern``, or constants and patterns to exclude, as one code-point automaton
intersected with the others (``_automata``). Every character these formats use is printable ASCII that needs no
JSON escape, except in JSON pointers (the rule form excludes ``"``, ``\\\\`` and control characters there; the
automaton form accepts them escaped). Approximations (documented): dates accept day 31 in every month and February
29 in every year (the calendar check is left out); e-mail local parts are dot-atoms (no quoted strings); host names
check label syntax and lengths per label, not the 253-character total.
"""

from __future__ import annotations

_DATE = r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
_TIME = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\.[0-9]+)?(?:[Zz]|[+\-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
_DUR_TIME = r"T(?:[0-9]+H(?:[0-9]+M)?(?:[0-9]+S)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)"
_DURATION = (rf"P(?:(?:[0-9]+Y(?:[0-9]+M)?(?:[0-9]+D)?|[0-9]+M(?:[0-9]+D)?|[0-9]+D)(?:{_DUR_TIME})?|{_DUR_TIME}"
             r"|[0-9]+W)")
_LABEL = r"[a-zA-Z0-9](?:[a-zA-Z0-9\-]{0,61}[a-zA-Z0-9])?"
_HOSTNAME = rf"{_LABEL}(?:\.{_LABEL})*"
_DEC_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"
_IPV4 = rf"{_DEC_OCTET}\.{_DEC_OCTET}\.{_DEC_OCTET}\.{_DEC_OCTET}"
_H16 = r"[0-9a-fA-F]{1,4}"
_LS32 = rf"(?:{_H16}:{_H16}|{_IPV4})"


def _ipv6() -> str:
    """RFC 3986's IPv6address, alternative by alternative: at most 8 groups, one '::' for one or more zero groups."""
    options = [rf"(?:{_H16}:){{6}}{_LS32}", rf"::(?:{_H16}:){{5}}{_LS32}"]
    tails = {0: rf"(?:{_H16}:){{4}}{_LS32}", 1: rf"(?:{_H16}:){{3}}{_LS32}", 2: rf"(?:{_H16}:){{2}}{_LS32}",
             3: rf"{_H16}:{_LS32}", 4: _LS32, 5: _H16, 6: ""}
    for k, tail in tails.items():
        head = rf"(?:(?:{_H16}:){{0,{k}}}{_H16})?" if k else rf"(?:{_H16})?"
        options.append(rf"{head}::{tail}")
    return "(?:" + "|".join(options) + ")"


_IPV6 = _ipv6()
_UNRESERVED = r"[a-zA-Z0-9\-._~]"
_PCT = r"%[0-9a-fA-F]{2}"
_SUB_DELIMS = r"[!$&'()*+,;=]"
_PCHAR = rf"(?:{_UNRESERVED}|{_PCT}|{_SUB_DELIMS}|[:@])"
_SCHEME = r"[a-zA-Z][a-zA-Z0-9+\-.]*"
_AUTHORITY = (rf"(?:(?:{_UNRESERVED}|{_PCT}|{_SUB_DELIMS}|:)*@)?"
              rf"(?:\[{_IPV6}\]|(?:{_UNRESERVED}|{_PCT}|{_SUB_DELIMS})*)(?::[0-9]*)?")
_PATH_ABEMPTY = rf"(?:/{_PCHAR}*)*"
_HIER = rf"(?://{_AUTHORITY}{_PATH_ABEMPTY}|/(?:{_PCHAR}+(?:/{_PCHAR}*)*)?|{_PCHAR}+(?:/{_PCHAR}*)*)?"
_QUERY = rf"(?:\?(?:{_PCHAR}|[/?])*)?(?:#(?:{_PCHAR}|[/?])*)?"
_URI = rf"{_SCHEME}:{_HIER}{_QUERY}"
_RELATIVE = (rf"(?://{_AUTHORITY}{_PATH_ABEMPTY}|/(?:{_PCHAR}+(?:/{_PCHAR}*)*)?"
             rf"|(?:{_UNRESERVED}|{_PCT}|{_SUB_DELIMS}|@)+(?:/{_PCHAR}*)*)?{_QUERY}")
_ATEXT = r"[a-zA-Z0-9!#$%&'*+/=?^_`{|}~\-]"

#: format name -> (rule name, ECMAScript regex of the characters between the quotes, to match in full).
FORMATS = {
    "date": ("fmt_date", _DATE),
    "time": ("fmt_time", _TIME),
    "date-time": ("fmt_date_time", rf"{_DATE}[Tt]{_TIME}"),
    "duration": ("fmt_duration", _DURATION),
    "email": ("fmt_email", rf"{_ATEXT}+(?:\.{_ATEXT}+)*@{_HOSTNAME}"),
    "hostname": ("fmt_hostname", _HOSTNAME),
    "ipv4": ("fmt_ipv4", _IPV4),
    "ipv6": ("fmt_ipv6", _IPV6),
    "uuid": ("fmt_uuid", r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"),
    "uri": ("fmt_uri", _URI),
    "uri-reference": ("fmt_uri_reference", rf"(?:{_URI}|{_RELATIVE})"),
    "json-pointer": ("fmt_json_pointer", r"(?:/(?:[^/~]|~[01])*)*"),
}


def format_search_pattern(fmt: str) -> str:
    """The format's regex anchored for JSON Schema ``pattern`` (search) semantics: the whole string must match."""
    return f"^(?:{FORMATS[fmt][1]})$"
