"""Structural tags: does xg2jax accept and reject the same strings as xgrammar 0.2.9?

Tags: a qwen_3-style tool-call format (``triggered_tags`` on ``<tool_call>``, one ``tag`` per tool with its
``json_schema`` arguments) for BFCL v3 requests (simple, multiple, parallel, parallel_multiple; tools converted
to JSON Schema as in dynamic_tools.py), and hand-written tags covering every string-level format type. Strings
per BFCL tag: free text, each ground-truth call (possible_answer) alone and with text around it, the calls back
to back, a call to an unknown tool, a call missing its required arguments, a call with a wrongly typed
argument, and an unterminated call. XML-style arguments (``json_schema`` with ``style``: qwen_xml,
minimax_xml, glm_xml, deepseek_xml, deepseek_v4_1_xml, kimi_k3_xml) and the nested dialects (``gemma``,
``minimax_m3_xml``, ``cohere_xml``) on the same BFCL requests: each ground-truth call's arguments written in the
style, without its required arguments, with a wrongly typed argument, with its strings JSON-quoted (nested
dialects: the plain JSON spelling), and with an undeclared parameter. Each (tag, string) is run through both
engines' grammar-level acceptance (xgrammar: ``testing._is_grammar_accept_string``); the table counts agreements
and lists every difference.

    python benchmarks/structural_tag_conformance.py [--per-file 60]

Writes results/structural_tag_conformance.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dynamic_tools import convert_bfcl_schema  # noqa: E402
from workloads import default_data_dir  # noqa: E402

log = logging.getLogger("structural_tag_conformance")
RESULTS = Path(__file__).resolve().parent / "results"
FILES = ("simple", "multiple", "parallel", "parallel_multiple")


def st(fmt):
    return {"type": "structural_tag", "format": fmt}


def tag(begin, content, end):
    return {"type": "tag", "begin": begin, "content": content, "end": end}


def const(v):
    return {"type": "const_string", "value": v}


def qwen_call(name: str, args) -> str:
    return f'<tool_call>\n{json.dumps({"name": name, "arguments": args})}\n</tool_call>'


def qwen_tag(tools: list[dict]) -> dict:
    tags = [tag(f'<tool_call>\n{{"name": {json.dumps(t["name"])}, "arguments": ',
                {"type": "json_schema", "json_schema": t["schema"]}, "}\n</tool_call>") for t in tools]
    return st({"type": "triggered_tags", "triggers": ["<tool_call>"], "tags": tags})


def _first_values(call_args: dict) -> dict:
    """One acceptable value per argument of a BFCL ground truth ("" = may be left out); nested objects list their
    members' alternatives the same way."""
    out = {}
    for k, options in call_args.items():
        v = next((o for o in options if o != ""), None) if isinstance(options, list) else options
        if v is not None:
            out[k] = _nested_first(v)
    return out


def _schema_order(args: dict, schema: dict) -> dict:
    """The arguments in the order the schema declares them (the order a model writes them in)."""
    order = list(schema.get("properties", {}))
    return dict(sorted(args.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))


def _nested_first(value):
    if isinstance(value, dict):
        return _first_values(value)
    if isinstance(value, list):
        return [_nested_first(v) for v in value]
    return value


def bfcl_cases(data: Path, per_file: int) -> list[tuple[str, dict, list[str]]]:
    cases = []
    stats: dict = {}
    for f in FILES:
        requests = [json.loads(line) for line in (data / f"BFCL_v3_{f}.json").read_text().splitlines() if line]
        answers = {json.loads(line)["id"]: json.loads(line)["ground_truth"]
                   for line in (data / "possible_answer" / f"BFCL_v3_{f}.json").read_text().splitlines() if line}
        for req in requests[:per_file]:
            tools = [{"name": fn["name"], "schema": convert_bfcl_schema(fn["parameters"], stats)}
                     for fn in req["function"]]
            calls = [(name, _first_values(args)) for gt in answers.get(req["id"], []) for name, args in gt.items()]
            strings = ["I can help with that.", "Let me think <tool about it."]
            for name, args in calls:
                strings += [qwen_call(name, args), f"Sure. {qwen_call(name, args)} Anything else?"]
                strings.append(qwen_call(name, {}))  # missing required arguments (valid when none is required)
                if args:
                    k = next(iter(args))
                    strings.append(qwen_call(name, {**args, k: [[{"bad": None}]]}))  # wrongly typed argument
                strings.append(qwen_call(name, args)[:-5])  # unterminated
            if len(calls) > 1:
                strings.append("".join(qwen_call(n, a) for n, a in calls))
            strings.append(qwen_call("not_a_listed_tool", {"x": 1}))
            cases.append((req["id"], qwen_tag(tools), strings))
    return cases


WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
           "additionalProperties": False}
HAND = {
    "const_string": (const("hello"), ["hello", "hell", "hello!", ""]),
    "json_schema": ({"type": "json_schema", "json_schema": WEATHER}, ['{"city": "Paris"}', '{"city": 1}', "{}"]),
    "grammar": ({"type": "grammar", "grammar": 'root ::= "a" b+\nb ::= "b"'}, ["ab", "abbb", "a"]),
    "regex": ({"type": "regex", "pattern": "[a-c]{2,3}"}, ["ab", "abc", "abcd"]),
    "any_text": ({"type": "any_text"}, ["", "anything 好"]),
    "any_text_excludes": ({"type": "any_text", "excludes": ["STOP", "\n\n"]}, ["go on", "STOP", "a\n\nb", "ST OP"]),
    "sequence": ({"type": "sequence", "elements": [const("a"), {"type": "regex", "pattern": "[0-9]+"}]},
                 ["a1", "a", "1"]),
    "or": ({"type": "or", "elements": [const("yes"), const("no")]}, ["yes", "no", "yesno"]),
    "optional": ({"type": "optional", "content": const("x")}, ["", "x", "xx"]),
    "star": ({"type": "star", "content": const("ab")}, ["", "abab", "aba"]),
    "plus": ({"type": "plus", "content": const("ab")}, ["", "ab", "abab"]),
    "repeat": ({"type": "repeat", "min": 2, "max": 3, "content": const("z")}, ["z", "zz", "zzz", "zzzz"]),
    "repeat_unbounded": ({"type": "repeat", "min": 1, "max": -1, "content": const("z")}, ["", "z", "zzzz"]),
    "tag_any_text": (tag("<a>", {"type": "any_text"}, "</a>"), ["<a></a>", "<a>x</a>", "<a>x</a>y</a>", "<a>"]),
    "tag_end_list": (tag("<a>", const("x"), ["</a>", "</A>"]), ["<a>x</a>", "<a>x</A>", "<a>x"]),
    "triggered_tags": ({"type": "triggered_tags", "triggers": ["A"],
                        "tags": [tag("A1", const("L1"), "A"), tag("A2", const("L2"), "A")]},
                       ["textA1L1AtextA2L2AText", "", "AA", "A1L1A2L2A"]),
    "triggered_tags_at_least_one": ({"type": "triggered_tags", "triggers": ["<"],
                                     "tags": [tag("<b>", const("1"), "</b>")], "at_least_one": True},
                                    ["<b>1</b>", "<b>1</b>x<b>1</b>", "", "x<b>1</b>"]),
    "triggered_tags_stop_after_first": ({"type": "triggered_tags", "triggers": ["<"],
                                         "tags": [tag("<b>", const("1"), "</b>")], "stop_after_first": True},
                                        ["x<b>1</b>", "plain", "<b>1</b>x"]),
    "triggered_tags_both": ({"type": "triggered_tags", "triggers": ["<"], "tags": [tag("<b>", const("1"), "</b>")],
                             "stop_after_first": True, "at_least_one": True}, ["<b>1</b>", "x<b>1</b>", ""]),
    "triggered_tags_excludes": ({"type": "triggered_tags", "triggers": ["<"],
                                 "tags": [tag("<b>", const("1"), "</b>")], "excludes": ["END"]},
                                ["x<b>1</b>y", "xENDy"]),
    "tags_with_separator": ({"type": "tags_with_separator", "separator": ",",
                             "tags": [tag("<a>", const("1"), "</a>"), tag("<b>", const("2"), "</b>")]},
                            ["", "<a>1</a>", "<a>1</a>,<b>2</b>", "<a>1</a><b>2</b>", "<a>1</a>,"]),
    "tags_with_separator_flags": ({"type": "tags_with_separator", "separator": "", "at_least_one": True,
                                   "tags": [tag("<a>", const("1"), "</a>")]}, ["", "<a>1</a>", "<a>1</a><a>1</a>"]),
    "dispatch": ({"type": "dispatch", "rules": [["<x>", const("1")], ["<y>", const("2")]], "excludes": ["!"]},
                 ["a<x>1b<y>2", "", "<x>2", "a!b"]),
    "dispatch_no_loop": ({"type": "dispatch", "rules": [["<x>", const("1")]], "loop": False}, ["a<x>1", "a<x>1b"]),
    "end_detection": (tag("<think>", {"type": "sequence", "elements": [{"type": "any_text"}, const("."),
                                                                        {"type": "any_text"}]}, "</think>"),
                      ["<think>a.b</think>", "<think>a</think>.b</think>"]),
    "think_then_answer": ({"type": "sequence", "elements": [tag("<think>", {"type": "any_text"}, "</think>"),
                                                            {"type": "triggered_tags", "triggers": ["<tool_call>"],
                                                             "tags": [tag("<tool_call>", {"type": "json_schema",
                                                                                          "json_schema": WEATHER},
                                                                          "</tool_call>")]}]},
                          ["<think>hmm</think>ok", '<think></think><tool_call>{"city": "x"}</tool_call>',
                           "no think"]),
}


XML_STYLES = ("qwen_xml", "minimax_xml", "glm_xml", "deepseek_xml", "deepseek_v4_1_xml", "kimi_k3_xml")


def xml_params(style: str, schema: dict, args: dict, quote_strings: bool = False) -> str:
    """`args` written as `style`'s parameter list (strings raw unless `quote_strings`, other values JSON)."""
    out = []
    for k, v in args.items():
        raw = isinstance(v, str) and not quote_strings
        text = v if raw else json.dumps(v)
        declared = (schema.get("properties", {}).get(k) or {}).get("type")
        if style == "qwen_xml":
            out.append(f"<parameter={k}>{text}</parameter>")
        elif style == "minimax_xml":
            out.append(f'<parameter name="{k}">{text}</parameter>')
        elif style == "glm_xml":
            out.append(f"<arg_key>{k}</arg_key><arg_value>{text}</arg_value>")
        elif style in ("deepseek_xml", "deepseek_v4_1_xml"):
            sp = " " if style == "deepseek_v4_1_xml" else ""
            out.append(f'<\uff5cDSML\uff5c{sp}parameter name="{k}" string="{"true" if raw else "false"}">{text}'
                       f"</\uff5cDSML\uff5c{sp}parameter>")
        else:
            kind = declared if isinstance(declared, str) else ("string" if isinstance(v, str) else "object")
            out.append(f'<|open|>argument key="{k}" type="{ {"integer": "number"}.get(kind, kind)}"<|sep|>{text}'
                       "<|close|>argument<|sep|>")
    return "\n".join(out)


def gemma_params(value) -> str:
    """Arguments as Gemma 4 writes them: JSON with strings between <|"|> markers (raw) and bare keys."""
    if isinstance(value, str):
        return '<|"|>' + value + '<|"|>'
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{gemma_params(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(gemma_params(v) for v in value) + "]"
    return json.dumps(value)


def minimax_m3_params(value) -> str:
    """Arguments as MiniMax M3 writes them: an element per member, <item> elements per array item, raw strings."""
    m = "]<]minimax[>["
    if isinstance(value, dict):
        return "".join(f"{m}<{k}>{minimax_m3_params(v)}{m}</{k}>" for k, v in value.items())
    if isinstance(value, list):
        return "".join(f"{m}<item>{minimax_m3_params(v)}{m}</item>" for v in value)
    return value if isinstance(value, str) else json.dumps(value)


def cohere_params(value) -> str:
    """Arguments as Cohere writes them: typed <cofl:value> elements (xg2jax.xml_values.render_cohere_value)."""
    from xg2jax.xml_values import render_cohere_value

    return render_cohere_value(value)


NESTED = {"gemma": gemma_params, "minimax_m3_xml": minimax_m3_params, "cohere_xml": cohere_params}


def xml_cases(data: Path, per_file: int) -> list[tuple[str, dict, list[str]]]:
    """One tag per (BFCL request, style): the request's first tool's arguments in the style."""
    cases, stats = [], {}
    for f in FILES:
        requests = [json.loads(line) for line in (data / f"BFCL_v3_{f}.json").read_text().splitlines() if line]
        answers = {json.loads(line)["id"]: json.loads(line)["ground_truth"]
                   for line in (data / "possible_answer" / f"BFCL_v3_{f}.json").read_text().splitlines() if line}
        for req in requests[:per_file]:
            fn = req["function"][0]
            schema = convert_bfcl_schema(fn["parameters"], stats)
            calls = [_first_values(a) for gt in answers.get(req["id"], []) for n, a in gt.items() if n == fn["name"]]
            for style in XML_STYLES + tuple(NESTED):
                strings = []
                for args in calls[:1]:
                    if style in NESTED:  # nested values: the JSON spelling must not pass
                        render = NESTED[style]
                        strings += [render(args), render({}), json.dumps(args), render({**args, "zz_undeclared": "x"})]
                    else:
                        strings += [xml_params(style, schema, args), xml_params(style, schema, {}),
                                    xml_params(style, schema, args, quote_strings=True),
                                    xml_params(style, schema, {**args, "zz_undeclared": "x"})]
                    if args:
                        k = next(iter(args))
                        bad = {**args, k: [[{"bad": None}]]}
                        strings.append(NESTED[style](bad) if style in NESTED else xml_params(style, schema, bad))
                content = {"type": "json_schema", "json_schema": schema, "style": style}
                cases.append((f"{req['id']}:{style}", st(tag("<args>", content, "</args>")),
                              [f"<args>{x}</args>" for x in strings]))
    return cases


MODEL_VARIANTS = ({}, {"reasoning": "disabled"}, {"reasoning": "auto"}, {"tool_choice": "required"},
                  {"parallel_tool_calls": False}, {"tool_choice": "none"}, {"tool_choice": "forced"})


def model_outputs(spec, variant: dict, calls: list[tuple[str, dict, dict]]) -> list[tuple[str, str | None]]:
    """Candidate outputs of a model format (its markers, from xg2jax.model_formats) for a variant, each with its
    role in the per-format check (``gt``: the ground-truth call after reasoning; ``unknown``: a call to an unknown
    tool; ``bad_args``: a wrongly typed argument; None: other): reasoning spellings x bodies (free text, one call,
    text then a call, two calls, an unknown tool, a wrongly typed argument, a call cut short)."""
    def args_text(schema, args):
        if spec.style in NESTED:
            return NESTED[spec.style](args)
        return json.dumps(args) if spec.style == "json" else xml_params(spec.style, schema, args)

    def call(name, schema, args):
        index = "0" + spec.call_index_end.replace("{name}", name) if spec.call_index else ""
        return spec.call_begin.replace("{name}", name) + index + args_text(schema, args) + spec.call_end

    def calls_text(cs):
        if spec.section is None:
            return "".join(cs)
        return spec.section[0] + spec.separator.join(cs) + spec.section[1]

    name, schema, args = calls[0]
    one = call(name, schema, args)
    bodies = [("Plain answer.", None), (calls_text([one]), "gt"), ("Let me check. " + calls_text([one]), None),
              (calls_text([one]) + " Done.", None), (calls_text([call(n, s, a) for n, s, a in calls[:2]]), None),
              (calls_text([one, one]), None), (calls_text([call("not_a_listed_tool", {}, {})]), "unknown"),
              (calls_text([one])[:-3], None)]
    # A wrongly typed value: any argument in JSON; in an XML style one that is not a string (raw text is a string)
    typed = [k for k in args if spec.style in ("json", *NESTED) or
             (schema.get("properties", {}).get(k) or {}).get("type") not in ("string", None)]
    if typed:
        bodies.append((calls_text([call(name, schema, {**args, typed[0]: [[{"bad": None}]]})]), "bad_args"))
    if spec.section is not None:
        bodies += [("\n\n" + calls_text([one]), None), (one, None)]
    after = spec.after_think
    begin, end = spec.think or ("<think>", "</think>")
    enabled = spec.think_enabled_begin + "I should call a tool." + end + after
    thinks = _unique_list(["", enabled, begin + "hmm" + end + after, spec.think_enabled_begin + "ok" + end + after,
                           spec.disabled_prefix + after])
    checked = not variant and spec.think is not None
    return [(t + b, role if checked and t == enabled else
             role if not variant and spec.think is None and t == "" else None)
            for t in thinks for b, role in bodies]


def harmony_outputs(variant: dict, calls: list[tuple[str, dict, dict]]) -> list[tuple[str, str | None]]:
    """Candidate Harmony outputs: messages (analysis, final, calls in each spelling, an unknown tool, a wrongly
    typed argument) alone and joined by <|start|>assistant, with the same roles as model_outputs."""
    name, schema, args = calls[0]
    analysis, final = "<|channel|>analysis<|message|>Let me think.<|end|>", "<|channel|>final<|message|>Done.<|return|>"

    def call(n, a, spelling=0):
        heads = [f"<|channel|>commentary to=functions.{n}<|constrain|>json<|message|>",
                 f" to=functions.{n}<|channel|>commentary <|constrain|>json<|message|>",
                 f" to=functions.{n}<|channel|>commentary json<|message|>"]
        return heads[spelling] + json.dumps(a) + "<|call|>"

    sep = "<|start|>assistant"
    bad = [k for k in args]
    out = [(analysis + sep + call(name, args), "gt"), (analysis + sep + call("not_a_listed_tool", {}), "unknown")]
    if bad:
        out.append((analysis + sep + call(name, {**args, bad[0]: [[{"bad": None}]]}), "bad_args"))
    others = [final, analysis, call(name, args, 1), call(name, args, 2), call(name, args)[:-4],
              analysis + sep + final, final + sep + call(name, args), call(name, args) + sep + call(name, args),
              analysis + sep + call(name, args) + sep + final, "", "plain text", call(name, args) + final]
    if len(calls) > 1:
        others.append(call(name, args) + sep + call(calls[1][0], calls[1][2]))
    checked = not variant
    return [(s, role if checked else None) for s, role in out] + [(s, None) for s in others]


def kimi_k3_outputs(variant: dict, calls: list[tuple[str, dict, dict]]) -> list[tuple[str, str | None]]:
    """Candidate Kimi K3 messages (think / response / tools sections; calls from KIMI_K3_CALLS) with the same roles
    as model_outputs: the ground-truth call after reasoning and a response, an unknown tool, a wrongly typed
    argument, and messages without a section, with markers inside texts, and cut short."""
    from xg2jax.model_formats import KIMI_K3_CALLS as spec

    name, schema, args = calls[0]

    def call(n, s, a, index=0):
        return (spec.call_begin.replace("{name}", n) + f"{index}{spec.call_index_end}" +
                xml_params(spec.style, s, a) + spec.call_end)

    def tools(cs):
        return spec.section[0] + "".join(cs) + spec.section[1]

    think, end = "Need a tool.<|close|>think<|sep|>", "<|close|>message<|sep|>"
    response = "<|open|>response<|sep|>Checking.<|close|>response<|sep|>"
    typed = [k for k in args if (schema.get("properties", {}).get(k) or {}).get("type") not in ("string", None)]
    checked = not variant
    out = [(think + response + tools([call(name, schema, args)]) + end, "gt"),
           (think + response + tools([call("not_a_listed_tool", {}, {})]) + end, "unknown")]
    if typed:
        out.append((think + response + tools([call(name, schema, {**args, typed[0]: [[{"bad": None}]]})]) + end,
                    "bad_args"))
    body = tools([call(n, s, a, i) for i, (n, s, a) in enumerate(calls[:2])])
    others = [think + response + end, response + end, "Checking.<|close|>response<|sep|>" + end,
              "Checking.<|close|>response<|sep|>" + tools([call(name, schema, args)]) + end,
              "<|open|>think<|sep|>hm<|close|>think<|sep|>" + response + end, think + response + body + end,
              think + response + tools([call(name, schema, args)] * 2) + end, think + response + tools([]) + end,
              think + response + tools([call(name, schema, args)]), think + "a<|open|>b" + response + end,
              think + response + tools([call(name, schema, args)])[:-5] + end,
              think + response + tools([call(name, schema, {**args, "zz_undeclared": "x"})]) + end]
    return [(x, role if checked else None) for x, role in out] + [(x, None) for x in others]


def _unique_list(items):
    return list(dict.fromkeys(items))


def model_format_cases(data: Path, per_file: int | None, variants=MODEL_VARIANTS,
                       checks_only: bool = False, models=None) -> list[tuple[str, Any, Any, list]]:
    """(name, xg2jax tag, xgrammar tag or an error, strings) per (BFCL request, model format, variant); every
    request when `per_file` is None; with `checks_only`, only the strings of the per-format checks."""
    from xgrammar.builtin_structural_tag import get_model_structural_tag as xgr_tag

    from xg2jax.model_formats import MINIMAX_M3_CALLS, MODEL_FORMATS, SUPPORTED_MODELS, get_model_structural_tag

    cases, stats = [], {}
    for f in FILES:
        requests = [json.loads(line) for line in (data / f"BFCL_v3_{f}.json").read_text().splitlines() if line]
        answers = {json.loads(line)["id"]: json.loads(line)["ground_truth"]
                   for line in (data / "possible_answer" / f"BFCL_v3_{f}.json").read_text().splitlines() if line}
        for req in requests[:per_file] if per_file is not None else requests:
            schemas = {fn["name"]: convert_bfcl_schema(fn["parameters"], stats) for fn in req["function"]}
            tools = [{"type": "function", "function": {"name": n, "parameters": sc}} for n, sc in schemas.items()]
            calls = [(n, schemas[n], _schema_order(_first_values(a), schemas[n]))
                     for gt in answers.get(req["id"], []) for n, a in gt.items() if n in schemas]
            if not calls:
                continue
            for model in models or SUPPORTED_MODELS:
                for variant in variants:
                    kw = dict(variant)
                    if kw.get("tool_choice") == "forced":
                        kw["tool_choice"] = {"type": "function", "function": {"name": calls[0][0]}}
                    try:
                        theirs = xgr_tag(model, tools, **kw).model_dump_json()
                    except Exception as exc:  # noqa: BLE001 (recorded)
                        theirs = exc
                    try:
                        mine = get_model_structural_tag(model, tools, **kw)
                    except Exception as exc:  # noqa: BLE001 (recorded)
                        mine = exc
                    strings = (harmony_outputs(variant, calls) if model == "harmony" else
                               kimi_k3_outputs(variant, calls) if model == "kimi_k3" else
                               model_outputs({**MODEL_FORMATS, "minimax_m3": MINIMAX_M3_CALLS}[model], variant, calls))
                    strings = [x for x in strings if x[1]] if checks_only else [(x, None) for x, _ in strings]
                    cases.append((f"{req['id']}:{model}:{json.dumps(variant)}", mine, theirs, strings))
    return cases


def group_summary(rows: list[dict]) -> dict:
    """Counts per group of tags (hand-written, qwen_3 tool sets, each arguments style, each model format); per
    model format also the BFCL checks, as (strings where both engines give the expected verdict, strings)."""
    groups: dict = {}
    for r in rows:
        parts = r["tag"].split(":")
        g = ("hand-written" if parts[0] == "hand" else "BFCL tool sets, qwen_3 JSON" if len(parts) == 1
             else f"arguments style {parts[1]}" if len(parts) == 2 else f"model {parts[1]}")
        c = groups.setdefault(g, {"strings": 0, "agree": 0, "accepted": 0, "rejected": 0, "gt": [0, 0],
                                  "unknown": [0, 0], "bad_args": [0, 0]})
        c["strings"] += 1
        c["agree"] += r["xg2jax"] == r["xgrammar"]
        c["accepted"] += r["xg2jax"] == r["xgrammar"] == "accept"
        c["rejected"] += r["xg2jax"] == r["xgrammar"] == "reject"
        if r.get("role"):
            want = "accept" if r["role"] == "gt" else "reject"
            c[r["role"]][0] += r["xg2jax"] == r["xgrammar"] == want
            c[r["role"]][1] += 1
    return groups


def _raise_error(value):
    if isinstance(value, Exception):
        raise value
    return value


def verdict(fn, *args, **kwargs):
    try:
        return "accept" if fn(*args, **kwargs) else "reject"
    except Exception as exc:  # noqa: BLE001 (either engine may refuse a tag; recorded, not hidden)
        return f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=default_data_dir())
    ap.add_argument("--per-file", type=int, default=60, help="BFCL requests per file (4 files)")
    ap.add_argument("--models", type=int, default=8, help="BFCL requests per file for the model formats (0: none)")
    ap.add_argument("--model-keys", type=lambda v: [k for k in v.split(",") if k], default=None,
                    help="comma-separated model keys (default: every supported one)")
    ap.add_argument("--model-checks", type=int, default=1, help="1: the per-format checks on every BFCL request")
    ap.add_argument("--out", type=Path, default=RESULTS / "structural_tag_conformance.json")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    import xgrammar
    from xgrammar.testing import _is_grammar_accept_string

    import xg2jax
    from xg2jax.testing import is_grammar_accept_string

    cases = [(f"hand:{k}", st(fmt), json.dumps(st(fmt)), strings) for k, (fmt, strings) in HAND.items()]
    cases += [(n, t, json.dumps(t), s) for n, t, s in bfcl_cases(args.data_dir / "bfcl-v3", args.per_file)]
    cases += [(n, t, json.dumps(t), s) for n, t, s in xml_cases(args.data_dir / "bfcl-v3", args.per_file)]
    if args.models:
        cases += model_format_cases(args.data_dir / "bfcl-v3", args.models, models=args.model_keys)
    if args.model_checks:  # every BFCL request, default options: the ground-truth call, an unknown tool, a bad value
        cases += [(n.replace(":{}", ":checks"), t, x, s) for n, t, x, s in
                  model_format_cases(args.data_dir / "bfcl-v3", None, variants=({},), checks_only=True,
                                     models=args.model_keys)]
    cases = [(n, t, x, [(s, None) if isinstance(s, str) else s for s in strings]) for n, t, x, strings in cases]
    log.info("%d structural tags, %d strings", len(cases), sum(len(c[3]) for c in cases))
    rows, t0 = [], time.perf_counter()
    for n, (name, tag_value, text, strings) in enumerate(cases):
        ours = verdict(lambda: xg2jax.Grammar.from_structural_tag(_raise_error(tag_value)))
        theirs = verdict(lambda: xgrammar.Grammar.from_structural_tag(_raise_error(text)))
        g_ours = xg2jax.Grammar.from_structural_tag(tag_value) if ours == "accept" else None
        g_theirs = xgrammar.Grammar.from_structural_tag(text) if theirs == "accept" else None
        for s, role in strings:
            a = verdict(is_grammar_accept_string, g_ours, s) if g_ours else "error (tag)"
            b = verdict(_is_grammar_accept_string, g_theirs, s) if g_theirs else "error (tag)"
            rows.append({"tag": name, "string": s, "role": role, "xg2jax": a, "xgrammar": b,
                         "tag_error": None if g_ours and g_theirs else {"xg2jax": ours, "xgrammar": theirs}})
        if (n + 1) % 50 == 0:
            log.info("%d / %d tags (%.0f s)", n + 1, len(cases), time.perf_counter() - t0)
    agree = sum(r["xg2jax"] == r["xgrammar"] for r in rows)
    diffs = [r for r in rows if r["xg2jax"] != r["xgrammar"]]
    summary = {"tags": len(cases), "strings": len(rows), "agree": agree, "differ": len(diffs),
               "accepted_by_both": sum(r["xg2jax"] == r["xgrammar"] == "accept" for r in rows),
               "rejected_by_both": sum(r["xg2jax"] == r["xgrammar"] == "reject" for r in rows)}
    groups = group_summary(rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"summary": summary, "groups": groups, "differences": diffs}, indent=1,
                                   ensure_ascii=False))
    lines = ["# Structural tags: xg2jax vs xgrammar 0.2.9", "",
             f"{summary['tags']} tags, {summary['strings']} strings: **{agree} agree** "
             f"({summary['accepted_by_both']} accepted and {summary['rejected_by_both']} rejected by both), "
             f"{len(diffs)} differ.", "", "| group | strings | agree | accepted by both | rejected by both | "
             "BFCL ground-truth calls accepted | unknown tools rejected | wrongly typed arguments rejected |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for g, c in groups.items():
        checks = [f"{c[k][0]} / {c[k][1]}" if c[k][1] else "" for k in ("gt", "unknown", "bad_args")]
        lines.append(f"| {g} | {c['strings']} | {c['agree']} | {c['accepted']} | {c['rejected']} | "
                     + " | ".join(checks) + " |")
    lines += ["", "Differences:", "", "| tag | string | xg2jax | xgrammar |", "|---|---|---|---|"]
    lines += [f"| {r['tag']} | `{json.dumps(r['string'], ensure_ascii=False)[:90]}` | {r['xg2jax']} | {r['xgrammar']} |"
              for r in diffs]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:3 + len(groups) + 6 + min(len(diffs), 40)]))
    log.info("wrote %s and %s", args.out, args.out.with_suffix(".md"))


if __name__ == "__main__":
    main()
