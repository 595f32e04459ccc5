"""atheris target: the JSON Schema front end.

An input that starts with '{' and parses as JSON is the schema itself (the seed corpus is JSON text);
anything else drives a structured builder (atheris.FuzzedDataProvider) that assembles a JSON-ish schema from
the keywords the converter knows, with odd values mixed in (wrong types, huge / negative / fractional numbers,
dangling $refs, empty combinators). Each schema goes through
  xg2jax.json_schema.json_schema_to_ebnf (options drawn from the input) ->
  GrammarCompiler.compile_grammar on a small JSON-ish vocabulary -> a few fills checked against the oracle.
Expected: xg2jax.json_schema.SchemaError and other ValueError subclasses from the conversion; LimitError.
Findings: any other exception (RecursionError, MemoryError, TypeError, KeyError, ...), a conversion or
compile taking more than 5 s, converter output that the EBNF parser rejects, a mask != the oracle.

Run: fuzz/run.sh json_schema <seconds>.  Reproduce: python fuzz/json_schema_fuzzer.py <crash file>
"""

import json
import os
import sys
import time

import atheris

if True:  # instrumented below with atheris.instrument_all() (the editable install's loader defeats instrument_imports)
    import xg2jax as xgr
    from xg2jax.json_schema import SchemaError, json_schema_to_ebnf
    from xg2jax.testing import bitmask_to_ids, mask_oracle_diff

# The work budget (json_schema/_limits.py MAX_WORK, which grows with the schema) stops a combinatorial conversion of
# a fuzzer-sized schema after 2-5 s of CPU uninstrumented, several times that under atheris; a conversion or compile
# past SLOW_S seconds of this process's CPU time (not wall time, which other processes on the machine stretch)
# means some cost the budgets do not bound.
SLOW_S = 30.0
# With XG_FUZZ_SLOW_LOG=<file>, a slow schema is appended to the file and the run goes on (a known slow
# family would otherwise stop every run at once); without it, a slow schema is a finding that stops the run.
SLOW_LOG = os.environ.get("XG_FUZZ_SLOW_LOG")


def slow(msg: str):
    if SLOW_LOG:
        with open(SLOW_LOG, "a") as f:
            f.write(msg.replace("\n", " ") + "\n")
        return
    raise Finding(msg)
LimitError = getattr(xgr, "LimitError", None)

VOCAB = [b"</s>"] + [t.encode() for t in [
    "{", "}", "[", "]", ",", ":", " ", "\n", "\"", "\"\"", "{\"", "\":", "\",", "\"}", "true", "false", "null",
    "0", "1", "-", ".", "e", "E", "+", "12", "9", "0.5", "-1", "a", "b", "c", "x", "ab", "name", "id", "\\",
    "\\n", "\\u", "00", "41", "\"a\"", "é", "中", "T", "Z", "@", "/", "_", "  ", ", ", ": "]]
TOK = xgr.TokenizerInfo(VOCAB, stop_token_ids=[0])
COMPILER = xgr.GrammarCompiler(TOK, cache_enabled=False)

TYPES = ["string", "number", "integer", "boolean", "null", "object", "array"]
FORMATS = ["date", "time", "date-time", "email", "uuid", "ipv4", "ipv6", "uri", "hostname", "duration",
           "uri-reference", "regex", "bogus"]
PATTERNS = ["^a+$", "[0-9]{2,4}", "^(ab|cd)*$", "a|b", "^\\d+(\\.\\d+)?$", "(?:x)?y", "[^\"]*", "^.{3}$",
            "(a)\\1", "\\p{L}", "^$", ".*", "[a-", "a{2,1}", "(?=a)", "\\w+@\\w+"]
NAMES = ["a", "b", "name", "id", "x", "", "a b", "\"q\"", "\\", "é"]


def num(fdp):
    k = fdp.ConsumeIntInRange(0, 7)
    if k == 0:
        return fdp.ConsumeIntInRange(-5, 20)
    if k == 1:
        return fdp.ConsumeIntInRange(-(10 ** 6), 10 ** 6)
    if k == 2:
        return round(fdp.ConsumeFloatInRange(-100.0, 100.0), fdp.ConsumeIntInRange(0, 4))
    if k == 3:
        return fdp.ConsumeIntInRange(0, 1 << 62) * (10 ** fdp.ConsumeIntInRange(0, 30))
    if k == 4:
        return [0.1, 0.01, 1e-7, 2.5, 3, 7, 1e308, -0.0, 1e-320][fdp.ConsumeIntInRange(0, 8)]
    if k == 5:
        return fdp.ConsumeIntInRange(0, 1100000)
    if k == 6:
        return "3"  # wrong type
    return fdp.ConsumeIntInRange(0, 3)


def value(fdp, depth):
    k = fdp.ConsumeIntInRange(0, 6)
    if k == 0:
        return num(fdp)
    if k == 1:
        return NAMES[fdp.ConsumeIntInRange(0, len(NAMES) - 1)]
    if k == 2:
        return fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 6))
    if k == 3:
        return [True, False, None][fdp.ConsumeIntInRange(0, 2)]
    if k == 4 and depth < 3:
        return [value(fdp, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 3))]
    if k == 5 and depth < 3:
        return {NAMES[fdp.ConsumeIntInRange(0, len(NAMES) - 1)]: value(fdp, depth + 1)
                for _ in range(fdp.ConsumeIntInRange(0, 2))}
    return 0


def pick(fdp, xs):
    return xs[fdp.ConsumeIntInRange(0, len(xs) - 1)]


def schema(fdp, depth, defs):
    if depth > 5 or fdp.remaining_bytes() == 0:
        return pick(fdp, [{"type": "string"}, {}, True, {"type": "integer"}])
    r = fdp.ConsumeIntInRange(0, 15)
    if r == 0:
        return fdp.ConsumeBool()
    if r == 1:
        return {"$ref": pick(fdp, ["#", "#/$defs/" + pick(fdp, defs or ["d0"]), "#/properties/a", "#/$defs/nope",
                                   "other.json", "#/definitions/d0", "#a"])}
    s = {}
    for _ in range(fdp.ConsumeIntInRange(0, 5)):
        kw = fdp.ConsumeIntInRange(0, 40)
        if kw == 0:
            s["type"] = pick(fdp, TYPES) if fdp.ConsumeBool() else [pick(fdp, TYPES) for _ in range(fdp.ConsumeIntInRange(0, 3))]
        elif kw == 1:
            s["properties"] = {pick(fdp, NAMES): schema(fdp, depth + 1, defs) for _ in range(fdp.ConsumeIntInRange(0, 3))}
        elif kw == 2:
            s["required"] = [pick(fdp, NAMES) for _ in range(fdp.ConsumeIntInRange(0, 3))]
        elif kw == 3:
            s["additionalProperties"] = schema(fdp, depth + 1, defs)
        elif kw == 4:
            s["items"] = schema(fdp, depth + 1, defs)
        elif kw == 5:
            s["prefixItems"] = [schema(fdp, depth + 1, defs) for _ in range(fdp.ConsumeIntInRange(0, 3))]
        elif kw in (6, 7, 8, 9):
            s[pick(fdp, ["minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties",
                         "minContains", "maxContains"])] = num(fdp)
        elif kw == 10:
            s["pattern"] = pick(fdp, PATTERNS) if fdp.ConsumeBool() else fdp.ConsumeUnicodeNoSurrogates(8)
        elif kw == 11:
            s["format"] = pick(fdp, FORMATS)
        elif kw == 12:
            s["enum"] = [value(fdp, 0) for _ in range(fdp.ConsumeIntInRange(0, 4))]
        elif kw == 13:
            s["const"] = value(fdp, 0)
        elif kw in (14, 15, 16):
            s[pick(fdp, ["anyOf", "oneOf", "allOf"])] = [schema(fdp, depth + 1, defs)
                                                          for _ in range(fdp.ConsumeIntInRange(0, 3))]
        elif kw == 17:
            s["not"] = schema(fdp, depth + 1, defs)
        elif kw in (18, 19, 20, 21):
            s[pick(fdp, ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"])] = num(fdp)
        elif kw == 22:
            s["patternProperties"] = {pick(fdp, PATTERNS): schema(fdp, depth + 1, defs)}
        elif kw == 23:
            s["propertyNames"] = schema(fdp, depth + 1, defs)
        elif kw == 24:
            s["contains"] = schema(fdp, depth + 1, defs)
        elif kw == 25:
            s["uniqueItems"] = fdp.ConsumeBool()
        elif kw == 26:
            s["if"] = schema(fdp, depth + 1, defs)
            if fdp.ConsumeBool():
                s["then"] = schema(fdp, depth + 1, defs)
            if fdp.ConsumeBool():
                s["else"] = schema(fdp, depth + 1, defs)
        elif kw == 27:
            s["dependentRequired"] = {pick(fdp, NAMES): [pick(fdp, NAMES)]}
        elif kw == 28:
            s["dependentSchemas"] = {pick(fdp, NAMES): schema(fdp, depth + 1, defs)}
        elif kw == 29:
            s["unevaluatedProperties"] = schema(fdp, depth + 1, defs)
        elif kw == 30:
            s["unevaluatedItems"] = schema(fdp, depth + 1, defs)
        elif kw == 31:
            name = "d%d" % len(defs)
            defs.append(name)
            s.setdefault("$defs", {})[name] = schema(fdp, depth + 1, defs)
        elif kw == 32:
            s["$ref"] = "#/$defs/" + pick(fdp, defs or ["d0"])
        elif kw == 33:
            s["additionalItems"] = schema(fdp, depth + 1, defs)
        elif kw == 34:
            s["$id"] = pick(fdp, ["http://x/a.json", "b.json", "#x", "urn:x"])
        elif kw == 35:
            s["$anchor"] = pick(fdp, ["a", "x", "1bad"])
        elif kw == 36:
            s["contentEncoding"] = "base64"
        elif kw == 37:
            s["default"] = value(fdp, 0)
        elif kw == 38:
            s[pick(fdp, NAMES + ["$dynamicRef", "$recursiveRef", "definitions"])] = value(fdp, 1)
        elif kw == 39:
            s["type"] = pick(fdp, TYPES)
            s["nullable"] = True
        else:
            s["description"] = "d"
    return s


class Finding(AssertionError):
    pass


def is_limit(e: BaseException) -> bool:
    return (LimitError is not None and isinstance(e, LimitError)) or "(Limits." in str(e)


def TestOneInput(data: bytes):
    sch = None
    opts = {}
    if data[:1] == b"{":
        try:
            sch = json.loads(data.decode("utf-8"))
            opts = {"any_whitespace": len(data) % 3 != 0, "any_order": len(data) % 5 == 0,
                    "strict_mode": len(data) % 7 != 0}
        except (ValueError, RecursionError):
            sch = None
    if sch is None:
        fdp = atheris.FuzzedDataProvider(data)
        opts = {"any_whitespace": fdp.ConsumeBool(), "any_order": fdp.ConsumeBool(),
                "strict_mode": fdp.ConsumeBool(), "enforce_formats": fdp.ConsumeBool()}
        if fdp.ConsumeIntInRange(0, 5) == 0:
            opts["max_whitespace_cnt"] = fdp.ConsumeIntInRange(0, 3)
        sch = schema(fdp, 0, [])
        if fdp.ConsumeBool():
            sch = json.dumps(sch)  # the text path too
    t0 = time.process_time()
    try:
        ebnf = json_schema_to_ebnf(sch, **opts)
    except ValueError:  # SchemaError / UnsupportedSchemaError / UnsatisfiableSchemaError / LimitError
        dt = time.process_time() - t0
        if dt > SLOW_S:
            slow(f"conversion took {dt:.1f} s before raising; options {opts} schema {json.dumps(sch)[:4000]}")
        return
    dt = time.process_time() - t0
    if dt > SLOW_S:
        slow(f"conversion took {dt:.1f} s; options {opts} schema {json.dumps(sch)[:4000]}")
    t0 = time.process_time()
    try:
        cg = COMPILER.compile_grammar(ebnf)
    except ValueError as e:
        # Expected: a limit, or a schema with no finite instance ({"$ref": "#"}) that the converter passes on
        # and the grammar check rejects (a ValueError either way).
        if is_limit(e) or "cannot match any finite string" in str(e):
            return
        raise Finding(f"the converter's EBNF does not compile: {e}\nschema {json.dumps(sch)[:2000]}") from None
    try:
        m = xgr.GrammarMatcher(cg)
        n = TOK.vocab_size
        for step in range(4):
            extra, missing = mask_oracle_diff(m)
            if len(extra) or len(missing):
                raise Finding(f"mask != oracle at step {step}: {extra.tolist()} {missing.tolist()}\n"
                              f"schema {json.dumps(sch)[:2000]}")
            bm = xgr.allocate_token_bitmask(1, n)
            m.fill_next_token_bitmask(bm)
            allowed = [t for t in bitmask_to_ids(bm[0], n).tolist() if t != 0]
            if not allowed:
                break
            m.accept_token(allowed[(len(data) + step * 7) % len(allowed)])
    except ValueError as e:
        if not is_limit(e):
            raise
    dt = time.process_time() - t0
    if dt > SLOW_S:
        slow(f"compile + fills took {dt:.1f} s; options {opts} schema {json.dumps(sch)[:4000]}")


if __name__ == "__main__":
    atheris.instrument_all()
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
