"""String formats as grammars of the characters between the quotes (RFC 3339 dates and times, ISO 8601
durations, RFC 5321-style e-mail addresses, RFC 1123 host names, IPv4 / IPv6, RFC 4122 UUIDs, RFC 3986 URIs and
URI references, RFC 6901 JSON pointers).

Each grammar matches the format's spelling written without JSON escapes (every character these formats use is
printable ASCII that needs no escape, except the ``"`` and ``\\`` that URIs and pointers exclude anyway).
Approximations (documented): dates accept day 31 in every month and February 29 in every year (the calendar check
is left out); e-mail local parts are dot-atoms (no quoted strings); host names check label syntax and lengths per
label, not the 253-character total.
"""

from __future__ import annotations

_DIGIT = "[0-9]"
_HEX = "[0-9a-fA-F]"

_DATE = '[0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] )'
_TIME = ('( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" ( [0-5] [0-9] | "60" ) ( "." [0-9]+ )? '
         '( [Zz] | [+\\-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] )')
_DUR_TIME = '"T" ( [0-9]+ "H" ( [0-9]+ "M" )? ( [0-9]+ "S" )? | [0-9]+ "M" ( [0-9]+ "S" )? | [0-9]+ "S" )'
_DURATION = (f'"P" ( ( [0-9]+ "Y" ( [0-9]+ "M" )? ( [0-9]+ "D" )? | [0-9]+ "M" ( [0-9]+ "D" )? | [0-9]+ "D" ) '
             f'( {_DUR_TIME} )? | {_DUR_TIME} | [0-9]+ "W" )')
_LABEL = '[a-zA-Z0-9] ( [a-zA-Z0-9\\-]{0,61} [a-zA-Z0-9] )?'
_HOSTNAME = f'{_LABEL} ( "." {_LABEL} )*'
_DEC_OCTET = '( "25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9] [0-9] | [0-9] )'
_IPV4 = f'{_DEC_OCTET} "." {_DEC_OCTET} "." {_DEC_OCTET} "." {_DEC_OCTET}'
_H16 = f'{_HEX}{{1,4}}'
_LS32 = f'( {_H16} ":" {_H16} | {_IPV4} )'


def _ipv6() -> str:
    """RFC 3986's IPv6address, alternative by alternative: at most 8 groups, one '::' for one or more zero groups."""
    options = [f'( {_H16} ":" ){{6}} {_LS32}', f'"::" ( {_H16} ":" ){{5}} {_LS32}']
    tails = {0: f'( {_H16} ":" ){{4}} {_LS32}', 1: f'( {_H16} ":" ){{3}} {_LS32}', 2: f'( {_H16} ":" ){{2}} {_LS32}',
             3: f'{_H16} ":" {_LS32}', 4: _LS32, 5: _H16, 6: '""'}
    for k, tail in tails.items():
        head = f'( ( {_H16} ":" ){{0,{k}}} {_H16} )?' if k else f'( {_H16} )?'
        options.append(f'{head} "::" {tail}')
    return "( " + " | ".join(options) + " )"


_UNRESERVED = '[a-zA-Z0-9\\-._~]'
_PCT = f'"%" {_HEX} {_HEX}'
_SUB_DELIMS = "[!$&'()*+,;=]"
_PCHAR = f'( {_UNRESERVED} | {_PCT} | {_SUB_DELIMS} | [:@] )'
_SCHEME = '[a-zA-Z] [a-zA-Z0-9+\\-.]*'
_AUTHORITY = (f'( ( {_UNRESERVED} | {_PCT} | {_SUB_DELIMS} | ":" )* "@" )? '
              f'( "[" ip_v6 "]" | ( {_UNRESERVED} | {_PCT} | {_SUB_DELIMS} )* ) ( ":" [0-9]* )?')
_PATH_ABEMPTY = f'( "/" {_PCHAR}* )*'
_HIER = f'( "//" {_AUTHORITY} {_PATH_ABEMPTY} | "/" ( {_PCHAR}+ ( "/" {_PCHAR}* )* )? | {_PCHAR}+ ( "/" {_PCHAR}* )* )?'
_QUERY = f'( "?" ( {_PCHAR} | [/?] )* )? ( "#" ( {_PCHAR} | [/?] )* )?'
_URI = f'{_SCHEME} ":" {_HIER} {_QUERY}'
_RELATIVE = (f'( "//" {_AUTHORITY} {_PATH_ABEMPTY} | "/" ( {_PCHAR}+ ( "/" {_PCHAR}* )* )? '
             f'| ( {_UNRESERVED} | {_PCT} | {_SUB_DELIMS} | "@" )+ ( "/" {_PCHAR}* )* )? {_QUERY}')

#: format name -> (rule name, EBNF body) of the characters between the quotes.
FORMATS = {
    "date": ("fmt_date", _DATE),
    "time": ("fmt_time", _TIME),
    "date-time": ("fmt_date_time", f'{_DATE} [Tt] {_TIME}'),
    "duration": ("fmt_duration", _DURATION),
    "email": ("fmt_email", f"[a-zA-Z0-9!#$%&'*+/=?^_`{{|}}~\\-]+ ( \".\" [a-zA-Z0-9!#$%&'*+/=?^_`{{|}}~\\-]+ )* \"@\" "
                           f"{_HOSTNAME}"),
    "hostname": ("fmt_hostname", _HOSTNAME),
    "ipv4": ("fmt_ipv4", _IPV4),
    "ipv6": ("ip_v6", _ipv6()),
    "uuid": ("fmt_uuid", f'{_HEX}{{8}} "-" {_HEX}{{4}} "-" {_HEX}{{4}} "-" {_HEX}{{4}} "-" {_HEX}{{12}}'),
    "uri": ("fmt_uri", _URI),
    "uri-reference": ("fmt_uri_reference", f'( {_URI} | {_RELATIVE} )'),
    "json-pointer": ("fmt_json_pointer", '( "/" ( [^/~"\\\\\\x00-\\x1f] | "~" [01] )* )*'),
}
