"""The terminals of Lark's ``common`` module (``%import common.NAME``), each written here as one regex (the engine's
dialect; ``.`` excludes only ``\\n``). Their languages follow Lark's documented definitions: numbers in Python's
spellings, C / shell / SQL comments, whitespace classes."""

from __future__ import annotations

_INT = r"[0-9]+"
_DECIMAL = rf"(?:{_INT}\.(?:{_INT})?|\.{_INT})"
_EXP = rf"[eE][+\-]?{_INT}"
_FLOAT = rf"(?:{_INT}{_EXP}|{_DECIMAL}(?:{_EXP})?)"
_NUMBER = rf"(?:{_FLOAT}|{_INT})"

#: common name -> regex of the whole terminal.
COMMON_TERMINALS = {
    "DIGIT": r"[0-9]",
    "HEXDIGIT": r"[0-9a-fA-F]",
    "INT": _INT,
    "SIGNED_INT": rf"[+\-]?{_INT}",
    "DECIMAL": _DECIMAL,
    "_EXP": _EXP,
    "FLOAT": _FLOAT,
    "SIGNED_FLOAT": rf"[+\-]?{_FLOAT}",
    "NUMBER": _NUMBER,
    "SIGNED_NUMBER": rf"[+\-]?{_NUMBER}",
    "ESCAPED_STRING": r'"(?:[^"\\\n]|\\.)*"',
    "LCASE_LETTER": r"[a-z]",
    "UCASE_LETTER": r"[A-Z]",
    "LETTER": r"[a-zA-Z]",
    "WORD": r"[a-zA-Z]+",
    "CNAME": r"[_a-zA-Z][_a-zA-Z0-9]*",
    "WS_INLINE": r"[ \t]+",
    "WS": r"[ \t\f\r\n]+",
    "CR": r"\r",
    "LF": r"\n",
    "NEWLINE": r"(?:\r?\n)+",
    "SH_COMMENT": r"#[^\n]*",
    "CPP_COMMENT": r"//[^\n]*",
    "C_COMMENT": r"/\*(?:[^*]|\*+[^*/])*\*+/",
    "SQL_COMMENT": r"--[^\n]*",
}
