"""Tool-call formats of model families as structural tags: ``get_model_structural_tag(model, tools, ...)``, with
xgrammar 0.2.9's signature, model keys and OpenAI-style tools.

Usage::

    tag = get_model_structural_tag("qwen_3", tools, tool_choice="auto", reasoning="enabled")
    compiled = compiler.compile_structural_tag(tag)

Tools are OpenAI Chat Completions tools, ``{"type": "function", "function": {"name": ..., "parameters": {...}}}``
(pydantic objects with ``model_dump()`` too); a tool without ``parameters`` takes any arguments. Builtin tools
(``{"type": "web_search_preview", "name": "browser.search", "parameters": {...}}``) are called in Harmony and
left out of the other formats, as in xgrammar.

Assembly. A format is a reasoning part, then a tool part:

- reasoning ``"enabled"``: the reasoning text up to its end marker (the chat template usually opened it), then
  the format's separator; ``"auto"``: that block, opened by the model, or nothing; ``"disabled"``: nothing
  (booleans mean enabled / disabled, as in xgrammar);
- tool choice ``"auto"``: free text in which each call is triggered by its opening marker (``triggered_tags``;
  with ``parallel_tool_calls=False`` at most one call); ``"required"``: at least one call (formats with a calls
  section: the section, opened right away); a named tool: exactly that call; ``"none"``, or no function tools:
  free text; ``{"type": "allowed_tools", ...}`` narrows the tools, then applies its mode;
- free text never contains the format's special markers (``exclude_special_tokens=True``).

Each format's markers are in :data:`MODEL_FORMATS`; ``register_model_structural_tag(name, fn)`` adds a builder.
``harmony`` (gpt-oss) has its own layout: assistant messages on channels, builtin tools included (``_harmony``);
so have ``kimi_k3`` (a message of reasoning, response and tools sections: ``_kimi_k3``) and ``minimax_m3``
(calls as nested XML elements: ``_minimax_m3``). ``cohere`` numbers its calls (``<cofl:tool_call id="N"
name="NAME">``) and writes arguments as ``cohere_xml`` elements (``xg2jax.xml_values``). With
``token_markers=True`` (qwen_3, qwen_3_5, qwen_3_coder, glm_4_7, as xgrammar) the markers are special tokens.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Callable

from xg2jax.xml_values import MINIMAX_M3_MARKER

__all__ = ["KIMI_K3_CALLS", "MINIMAX_M3_CALLS", "MODEL_FORMATS", "SUPPORTED_MODELS", "TOKEN_MARKER_MODELS", "ModelFormat",
           "get_model_structural_tag",
           "register_model_structural_tag"]

_THINK = ("<think>", "</think>")


@dataclasses.dataclass(frozen=True)
class ModelFormat:
    """The markers of one model family's output. Strings with ``{name}`` take the tool's name."""

    trigger: str  # the text that opens a call (or the calls section) in free text
    call_begin: str  # e.g. '<tool_call>\n{"name": "{name}", "arguments": '
    call_end: str
    style: str = "json"  # the arguments' style (xg2jax.xml_styles)
    # Formats whose calls sit in one section: (section begin, section end) and the text between calls.
    section: tuple[str, str] | None = None
    separator: str = ""
    # Text before the section when a call is required (the section opens right after the reasoning).
    required_prefix: str = ""
    one_section: bool = False  # at most one calls section, however many calls it holds
    call_index: str | None = None  # a regex between the call's begin and its arguments (a call id)
    call_index_end: str = ""  # the text after that id (may hold {name}: the name comes after the id)
    think: tuple[str, str] | None = _THINK  # (begin when the model opens it, end); None: no reasoning block
    think_enabled_begin: str = ""  # what the model writes to open reasoning when the prompt did not
    think_excludes: tuple[str, ...] = _THINK
    think_auto_excludes: tuple[str, ...] | None = None  # default: think_excludes
    after_think: str = ""
    disabled_prefix: str = ""  # what the model writes with reasoning disabled (an empty block)
    text_excludes: tuple[str, ...] = _THINK
    none_excludes: tuple[str, ...] | None = None  # free text under tool_choice "none" (default: text_excludes)
    args_excludes: tuple[str, ...] = ()  # texts no string in the arguments may contain (json_schema excludes)

    def render_calls(self, calls: list[tuple[str, dict]]) -> str:
        """(tool name, arguments) calls as the model writes them (in its calls section, if it has one): for
        examples and tests; calls are numbered from 0 where the format numbers them."""
        from xg2jax.xml_styles import render_arguments

        texts = []
        for i, (name, args) in enumerate(calls):
            body = json.dumps(args) if self.style == "json" else render_arguments(self.style, args)
            index = f"{i}{self.call_index_end.replace('{name}', name)}" if self.call_index else ""
            texts.append(self.call_begin.replace("{name}", name) + index + body + self.call_end)
        if self.section is None:
            return "".join(texts)
        return self.section[0] + self.separator.join(texts) + self.section[1]


_SPECIAL_GLM = ("<think>", "</think>", "<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>",
                "</arg_value>")
_GEMMA_4_MARKERS = ("<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>")
_SPECIAL_MIMO = ("<tool_call>", "<think>", "</think>", "</tool_call>", "<function=")
_COHERE_THINK = ("<|START_THINKING|>", "<|END_THINKING|>")

MODEL_FORMATS: dict[str, ModelFormat] = {
    "llama": ModelFormat('{"name": ', '{"name": "{name}", "parameters": ', "}", think=None),
    "qwen_3": ModelFormat("<tool_call>", '<tool_call>\n{"name": "{name}", "arguments": ', "}\n</tool_call>",
                          after_think="\n\n"),
    "qwen_3_5": ModelFormat("<tool_call>\n<function=", "<tool_call>\n<function={name}>\n",
                            "\n</function>\n</tool_call>", style="qwen_xml", after_think="\n\n"),
    "qwen_3_coder": ModelFormat("<tool_call>\n<function=", "<tool_call>\n<function={name}>\n",
                                "\n</function>\n</tool_call>", style="qwen_xml", after_think="\n\n"),
    "exaone": ModelFormat("<tool_call>", '<tool_call>{"name": "{name}", "arguments": ', "}</tool_call>",
                          think_excludes=(), think_auto_excludes=_THINK, after_think="\n\n"),
    "mimo": ModelFormat("<tool_call>", "<tool_call><function={name}>", "</function></tool_call>", style="qwen_xml",
                        think_enabled_begin="<think>", think_excludes=_SPECIAL_MIMO,
                        text_excludes=("<think>", "</think>", "</tool_call>", "<function=")),
    "glm_4_7": ModelFormat("<tool_call>", "<tool_call>{name}", "</tool_call>", style="glm_xml",
                           think_excludes=_SPECIAL_GLM, text_excludes=tuple(x for x in _SPECIAL_GLM
                                                                            if x != "<tool_call>")),
    "deepseek_r1": ModelFormat("<\uff5ctool\u2581calls\u2581begin\uff5c>",
                               "<\uff5ctool\u2581call\u2581begin\uff5c>function<\uff5ctool\u2581sep\uff5c>{name}\n```json\n",
                               "\n```<\uff5ctool\u2581call\u2581end\uff5c>",
                               section=("<\uff5ctool\u2581calls\u2581begin\uff5c>", "<\uff5ctool\u2581calls\u2581end\uff5c>"),
                               separator="\n"),
    "deepseek_v3_1": ModelFormat("<\uff5ctool\u2581calls\u2581begin\uff5c>",
                                 "<\uff5ctool\u2581call\u2581begin\uff5c>{name}<\uff5ctool\u2581sep\uff5c>",
                                 "<\uff5ctool\u2581call\u2581end\uff5c>",
                                 section=("<\uff5ctool\u2581calls\u2581begin\uff5c>",
                                          "<\uff5ctool\u2581calls\u2581end\uff5c>")),
    "deepseek_v3_2": ModelFormat("<\uff5cDSML\uff5cfunction_calls>", '<\uff5cDSML\uff5cinvoke name="{name}">\n',
                                 "</\uff5cDSML\uff5cinvoke>\n", style="deepseek_xml",
                                 section=("<\uff5cDSML\uff5cfunction_calls>\n", "</\uff5cDSML\uff5cfunction_calls>"),
                                 required_prefix="\n\n"),
    "deepseek_v4": ModelFormat("<\uff5cDSML\uff5ctool_calls>", '<\uff5cDSML\uff5cinvoke name="{name}">\n',
                               "</\uff5cDSML\uff5cinvoke>\n", style="deepseek_xml",
                               section=("<\uff5cDSML\uff5ctool_calls>\n", "</\uff5cDSML\uff5ctool_calls>"),
                               required_prefix="\n\n", one_section=True),
    "deepseek_v4_1": ModelFormat("<\uff5cDSML\uff5c calls>", '<\uff5cDSML\uff5c invoke name="{name}">\n',
                                 "</\uff5cDSML\uff5c invoke>\n", style="deepseek_v4_1_xml",
                                 section=("<\uff5cDSML\uff5c calls>\n", "</\uff5cDSML\uff5c calls>"),
                                 required_prefix="\n\n", one_section=True,
                                 none_excludes=_THINK + ("<\uff5cDSML\uff5c calls>",)),
    "kimi": ModelFormat("<|tool_calls_section_begin|>", "<|tool_call_begin|>functions.{name}:", "<|tool_call_end|>",
                        section=("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"),
                        call_index="\\d+", call_index_end="<|tool_call_argument_begin|>", think_excludes=(),
                        think_auto_excludes=_THINK,
                        text_excludes=("<think>", "</think>", "<|tool_call_begin|>"), none_excludes=_THINK),
    "gemma_4": ModelFormat("<|tool_call>", "<|tool_call>call:{name}", "<tool_call|>", style="gemma",
                           think=("<|channel>thought\n", "<channel|>"), think_enabled_begin="<|channel>thought\n",
                           think_excludes=_GEMMA_4_MARKERS[:3], text_excludes=_GEMMA_4_MARKERS[:2],
                           none_excludes=_GEMMA_4_MARKERS[:3], args_excludes=_GEMMA_4_MARKERS),
    "minimax": ModelFormat("<minimax:tool_call>", '<invoke name="{name}">\n', "</invoke>\n", style="minimax_xml",
                           section=("<minimax:tool_call>\n", "</minimax:tool_call>"), required_prefix="\n",
                           think_excludes=(),
                           think_auto_excludes=_THINK, after_think="\n\n", disabled_prefix="\n</think>\n\n"),
    # Cohere (Command): a <cofl:tool_calls> section of calls numbered by id, the arguments as cohere_xml elements.
    "cohere": ModelFormat("<cofl:tool_calls>", '<cofl:tool_call id="', "</cofl:tool_call>", style="cohere_xml",
                          section=("<cofl:tool_calls>", "</cofl:tool_calls>"), call_index="\\d+",
                          call_index_end='" name="{name}">', think=_COHERE_THINK, think_excludes=(),
                          think_auto_excludes=_COHERE_THINK, text_excludes=_COHERE_THINK),
}
_REGISTRY: dict[str, Callable[..., dict]] = {}
#: Every model key built here: the MODEL_FORMATS ones, and Harmony, Kimi K3 and MiniMax M3 (their own builders).
SUPPORTED_MODELS = tuple(sorted([*MODEL_FORMATS, "harmony", "kimi_k3", "minimax_m3"]))


def register_model_structural_tag(name: str, fn: Callable[..., dict] | None = None):
    """Register a builder ``fn(tools, tool_choice, reasoning, **options) -> structural tag`` under ``name`` (usable
    as a decorator). A registered name takes precedence over the built-in formats."""
    def register(f):
        _REGISTRY[name] = f
        return f

    return register(fn) if fn is not None else register


def get_model_structural_tag(model: str, tools: list | None = None, tool_choice: Any = "auto",
                             reasoning: bool | str = "enabled", force_reasoning: bool = False, any_order: bool = False,
                             exclude_special_tokens: bool = True, max_whitespace_cnt: int | None = None,
                             parallel_tool_calls: bool = True, token_markers: bool = False) -> dict:
    """The structural tag (a dict in xgrammar's JSON format) of ``model``'s reasoning and tool-call output.

    Parameters
    ----------
    model : str
        A key of :data:`MODEL_FORMATS` or a name given to :func:`register_model_structural_tag`.
    tools : list, optional
        OpenAI-style function tools (dicts or pydantic objects); builtin tools are left out.
    tool_choice : str or dict
        ``"auto"`` (or None), ``"none"``, ``"required"``, ``{"type": "function", "function": {"name": ...}}``, or
        ``{"type": "allowed_tools", "allowed_tools": {"mode": "auto" | "required", "tools": [...]}}``.
    reasoning : {"enabled", "disabled", "auto"} or bool
        The reasoning block (module docstring); True / False mean enabled / disabled.
    force_reasoning : bool
        Accepted for compatibility (deprecated in xgrammar): the reasoning mode decides.
    any_order, max_whitespace_cnt : optional
        Passed to every tool's ``json_schema`` format.
    exclude_special_tokens : bool
        Keep the format's markers out of free text and reasoning (default True).
    parallel_tool_calls : bool
        False: at most one call (exactly one where a call is required).
    token_markers : bool
        Write the format's markers (``<think>``, ``<tool_call>``, ...) as special tokens: token ``begin`` / ``end``,
        ``token_triggered_tags``, reasoning as ``any_tokens`` (:data:`TOKEN_MARKER_MODELS`; others raise).

    Raises
    ------
    ValueError
        An unknown model, ``token_markers=True`` for another model, a required call without tools, a
        named tool that is not in ``tools``, or a malformed tool / tool choice.
    """
    del force_reasoning  # deprecated in xgrammar; the reasoning mode decides
    reasoning = _reasoning_mode(reasoning)
    entries = [_tool_entry(t, i) for i, t in enumerate(tools or [])]
    function_tools = [(t.name, t.params) for t in entries if t.builtin_type is None]
    options = dict(any_order=any_order, exclude_special_tokens=exclude_special_tokens,
                   max_whitespace_cnt=max_whitespace_cnt, parallel_tool_calls=parallel_tool_calls)
    if model in _REGISTRY:
        if token_markers:
            raise ValueError(f"get_model_structural_tag: token_markers=True is not supported for the registered "
                             f"builder {model!r}")
        return _REGISTRY[model](function_tools, tool_choice, reasoning, **options)
    if model not in MODEL_FORMATS and model not in ("harmony", "kimi_k3", "minimax_m3"):
        raise ValueError(f"get_model_structural_tag: unknown model {model!r}; supported: "
                         f"{', '.join(sorted(set(SUPPORTED_MODELS) | set(_REGISTRY)))}")
    if token_markers and model not in TOKEN_MARKER_MODELS:
        raise ValueError(f"get_model_structural_tag: token_markers is not supported for model {model!r} (supported "
                         f"models: {', '.join(TOKEN_MARKER_MODELS)})")
    if model == "harmony":
        mode, chosen = _tool_choice(tool_choice, entries)
        return {"type": "structural_tag", "format": _harmony(chosen, mode, reasoning, **options)}
    mode, chosen = _tool_choice(tool_choice, [t for t in entries if t.builtin_type is None])
    chosen_pairs = [(t.name, t.params) for t in chosen]
    if model == "kimi_k3":
        return {"type": "structural_tag", "format": _kimi_k3(chosen_pairs, mode, reasoning, **options)}
    if model == "minimax_m3":
        return {"type": "structural_tag", "format": _minimax_m3(chosen_pairs, mode, reasoning, **options)}
    if token_markers:
        # Free text where no call can begin keeps every special marker out, <tool_call> included (as xgrammar).
        spec = dataclasses.replace(MODEL_FORMATS[model], none_excludes=MODEL_FORMATS[model].think_excludes)
        fmt = _assemble(spec, chosen_pairs, mode, reasoning, nest_reasoning=True, **options)
        return {"type": "structural_tag", "format": _with_token_markers(fmt, TOKEN_MARKER_MODELS[model])}
    return {"type": "structural_tag",
            "format": _assemble(MODEL_FORMATS[model], chosen_pairs, mode, reasoning, **options)}


def _assemble(spec: ModelFormat, tools: list[tuple[str, Any]], mode: str, reasoning: str, *, any_order: bool,
              exclude_special_tokens: bool, max_whitespace_cnt: int | None, parallel_tool_calls: bool,
              nest_reasoning: bool = False) -> dict:
    def excl(x):
        return list(x) if exclude_special_tokens else []

    def call(name: str, params: Any) -> dict:
        content = {"type": "json_schema", "json_schema": params, "style": spec.style, "any_order": any_order,
                   "max_whitespace_cnt": max_whitespace_cnt, "excludes": excl(spec.args_excludes)}
        if spec.call_index is not None:
            content = {"type": "sequence", "elements": [{"type": "regex", "pattern": spec.call_index},
                                                        _const(spec.call_index_end.replace("{name}", name)),
                                                        content]}
        return {"type": "tag", "begin": spec.call_begin.replace("{name}", name), "content": content,
                "end": spec.call_end}

    calls = [call(n, p) for n, p in tools]
    if mode == "none" or not calls:
        body = {"type": "any_text",
                "excludes": excl(spec.text_excludes if spec.none_excludes is None else spec.none_excludes)}
    elif spec.section is None:
        if mode == "forced":
            body = calls[0]
        else:
            body = {"type": "triggered_tags", "triggers": [spec.trigger], "tags": calls,
                    "at_least_one": mode == "required", "stop_after_first": not parallel_tool_calls,
                    "excludes": excl(spec.text_excludes)}
    else:
        begin, end = spec.section
        inner = calls[0] if mode == "forced" else {
            "type": "tags_with_separator", "tags": calls, "separator": spec.separator, "at_least_one": True,
            "stop_after_first": not parallel_tool_calls}
        if mode == "auto":
            body = {"type": "triggered_tags", "triggers": [spec.trigger],
                    "tags": [{"type": "tag", "begin": begin, "content": inner, "end": end}], "at_least_one": False,
                    "stop_after_first": spec.one_section or not parallel_tool_calls,
                    "excludes": excl(spec.text_excludes)}
        else:
            body = {"type": "sequence", "elements": [_const(spec.required_prefix + begin), inner, _const(end)]}
    prefix = _reasoning_prefix(spec, reasoning, excl)
    if nest_reasoning and len(prefix) > 1:  # the reasoning block and its separator as one element
        prefix = [{"type": "sequence", "elements": prefix}]
    return {"type": "sequence", "elements": prefix + [body]} if prefix else body


#: The formats whose markers ``token_markers=True`` writes as special tokens, and those markers (as xgrammar).
TOKEN_MARKER_MODELS = dict.fromkeys(("qwen_3_coder", "qwen_3_5", "qwen_3", "glm_4_7"),
                                    ("<think>", "</think>", "<tool_call>", "</tool_call>"))


def _with_token_markers(fmt: Any, markers: tuple[str, ...]) -> Any:
    """The format with its markers as special tokens (``token_markers=True``): a tag that a marker opens or closes
    has a token ``begin`` / ``end`` and the rest of the text in its content; its free text (``any_text``) becomes
    ``any_tokens``; ``triggered_tags`` triggered by a marker become ``token_triggered_tags``. The free text outside
    tags stays text."""
    if isinstance(fmt, list):
        return [_with_token_markers(f, markers) for f in fmt]
    if not isinstance(fmt, dict):
        return fmt
    kind = fmt.get("type")
    if kind == "tag":
        begin, end = fmt["begin"], fmt["end"]
        content = _with_token_markers(fmt["content"], markers)
        head = next((m for m in markers if isinstance(begin, str) and begin.startswith(m)), None)
        tail = next((m for m in markers if isinstance(end, str) and end.endswith(m)), None)
        if tail is not None and content.get("type") == "any_text":
            content = {"type": "any_tokens", "exclude_tokens": content["excludes"]}
        parts = ([_const(begin[len(head):])] if head is not None and begin != head else []) + [content] + \
            ([_const(end[:-len(tail)])] if tail is not None and end != tail else [])
        return {"type": "tag",
                "begin": {"type": "token", "token": head} if head is not None else begin,
                "content": parts[0] if len(parts) == 1 else {"type": "sequence", "elements": parts},
                "end": {"type": "token", "token": tail} if tail is not None else end}
    if kind == "triggered_tags":
        heads = [next((m for m in markers if t.startswith(m)), None) for t in fmt["triggers"]]
        if None not in heads:
            return {"type": "token_triggered_tags", "trigger_tokens": list(dict.fromkeys(heads)),
                    "tags": _with_token_markers(fmt["tags"], markers), "exclude_tokens": fmt.get("excludes", []),
                    "at_least_one": fmt.get("at_least_one", False),
                    "stop_after_first": fmt.get("stop_after_first", False)}
    return {k: _with_token_markers(v, markers) if k in ("content", "elements", "tags") else v
            for k, v in fmt.items()}


_HARMONY_SEPARATOR = "<|start|>assistant"
_HARMONY_TEXT_END = ["<|end|>", "<|return|>"]


def _harmony(tools: list[_Tool], mode: str, reasoning: str, *, any_order: bool, exclude_special_tokens: bool,
             max_whitespace_cnt: int | None, parallel_tool_calls: bool) -> dict:
    """OpenAI Harmony (gpt-oss): assistant messages separated by ``<|start|>assistant``, each a channel: a call
    (``commentary to=functions.NAME``, three spellings; builtin tools ``to=NAME ... code``, two), the ``final``
    answer, or ``analysis`` (reasoning). Tool choice "required" or a named tool leaves out ``final``; reasoning
    "disabled" leaves out ``analysis``; parallel_tool_calls=False allows one call message, after the text
    messages. ``exclude_special_tokens`` has nothing to exclude here."""
    del exclude_special_tokens

    def message(begin: str, content: dict, end) -> dict:
        return {"type": "tag", "begin": begin, "content": content, "end": end}

    calls = []
    for t in tools if mode != "none" else []:
        args = {"type": "json_schema", "json_schema": t.params, "style": "json", "any_order": any_order,
                "max_whitespace_cnt": max_whitespace_cnt}
        if t.builtin_type is None:
            begins = [f"<|channel|>commentary to=functions.{t.name}<|constrain|>json<|message|>",
                      f" to=functions.{t.name}<|channel|>commentary <|constrain|>json<|message|>",
                      f" to=functions.{t.name}<|channel|>commentary json<|message|>"]
        else:
            begins = [f"<|channel|>commentary to={t.name} code<|message|>",
                      f" to={t.name}<|channel|>commentary code<|message|>"]
        calls += [message(b, args, "<|call|>") for b in begins]
    text = {"type": "any_text", "excludes": []}
    texts = ([message("<|channel|>final<|message|>", text, _HARMONY_TEXT_END)] if mode in ("auto", "none") else []) + \
        ([message("<|channel|>analysis<|message|>", text, _HARMONY_TEXT_END)] if reasoning != "disabled" else [])

    def messages(tags: list, at_least_one: bool = False, stop_after_first: bool = False) -> dict:
        return {"type": "tags_with_separator", "tags": tags, "separator": _HARMONY_SEPARATOR,
                "at_least_one": at_least_one, "stop_after_first": stop_after_first}

    if parallel_tool_calls or not calls:
        return messages(calls + texts) if calls + texts else _const("")
    one_call = messages(calls, at_least_one=True, stop_after_first=True)
    if not texts:
        return {"type": "optional", "content": one_call}
    return {"type": "or", "elements": [
        messages(texts), one_call,
        {"type": "sequence", "elements": [messages(texts, at_least_one=True), _const(_HARMONY_SEPARATOR), one_call]}]}


_KIMI_K3_MARKERS = ("<|open|>", "<|close|>")
#: Kimi K3's calls (the ``tools`` section of its message; the rest of the layout is ``_kimi_k3``).
KIMI_K3_CALLS = ModelFormat("<|open|>tools<|sep|>", '<|open|>call tool="{name}" index="', "<|close|>call<|sep|>",
                            style="kimi_k3_xml", section=("<|open|>tools<|sep|>", "<|close|>tools<|sep|>"),
                            call_index="\\d+", call_index_end='"<|sep|>', think=None, text_excludes=_KIMI_K3_MARKERS)


def _kimi_k3(tools: list[tuple[str, Any]], mode: str, reasoning: str, *, any_order: bool,
             exclude_special_tokens: bool, max_whitespace_cnt: int | None, parallel_tool_calls: bool) -> dict:
    """Kimi K3: one message of sections, each opened by ``<|open|>NAME<|sep|>`` and closed by
    ``<|close|>NAME<|sep|>``: ``think`` (reasoning; under "enabled" the prompt opened it, under "auto" the model
    may write it, under "disabled" it is absent and the prompt opened ``response``), ``response`` (the text), then
    ``tools`` with the calls (:data:`KIMI_K3_CALLS`: ``<|open|>call tool="NAME" index="N"<|sep|>`` and the
    arguments as ``kimi_k3_xml``), then ``<|close|>message<|sep|>``. Texts never hold ``<|open|>`` /
    ``<|close|>``, and argument strings not even ``<|sep|>`` (the json_schema format's ``excludes``)."""
    spec = KIMI_K3_CALLS
    text = {"type": "any_text", "excludes": list(spec.text_excludes) if exclude_special_tokens else []}

    def section(name: str, content: dict, opened: bool = False) -> dict:
        return {"type": "tag", "begin": "" if opened else f"<|open|>{name}<|sep|>", "content": content,
                "end": f"<|close|>{name}<|sep|>"}

    def call(name: str, params: Any) -> dict:
        args = {"type": "json_schema", "json_schema": params, "style": spec.style, "any_order": any_order,
                "max_whitespace_cnt": max_whitespace_cnt,
                "excludes": [*spec.text_excludes, "<|sep|>"] if exclude_special_tokens else []}
        return {"type": "tag", "begin": spec.call_begin.replace("{name}", name),
                "content": {"type": "sequence", "elements": [{"type": "regex", "pattern": spec.call_index},
                                                             _const(spec.call_index_end), args]},
                "end": spec.call_end}

    elements = []
    if reasoning == "enabled":
        elements.append(section("think", text, opened=True))
    elif reasoning == "auto":
        elements.append({"type": "optional", "content": section("think", text)})
    elements.append(section("response", text, opened=reasoning == "disabled"))
    calls = [call(n, p) for n, p in tools] if mode != "none" else []
    if calls:
        if mode == "forced":
            body = calls[0]
        else:
            body = {"type": "tags_with_separator", "tags": calls, "separator": "", "at_least_one": True,
                    "stop_after_first": not parallel_tool_calls}
        begin, end = spec.section
        if mode == "auto":
            elements.append({"type": "optional", "content": {"type": "tag", "begin": begin, "content": body,
                                                             "end": end}})
        else:
            elements.append({"type": "sequence", "elements": [_const(begin), body, _const(end)]})
    elements.append(_const("<|close|>message<|sep|>"))
    return {"type": "sequence", "elements": elements}


_MM = MINIMAX_M3_MARKER
_MINIMAX_M3_MARKERS = (_MM + "<tool_call>", "<mm:think>", "</mm:think>", _MM + "</tool_call>", _MM + "<invoke",
                       _MM + "</invoke>")
#: MiniMax M3's calls: a ``<tool_call>`` section of ``<invoke name="...">`` elements whose arguments are
#: ``minimax_m3_xml`` elements (the rest of the layout is ``_minimax_m3``).
MINIMAX_M3_CALLS = ModelFormat(_MM + "<tool_call>", _MM + '<invoke name="{name}">', _MM + "</invoke>\n",
                               style="minimax_m3_xml", section=(_MM + "<tool_call>\n", _MM + "</tool_call>"),
                               think=("<mm:think>", "</mm:think>"), think_excludes=_MINIMAX_M3_MARKERS,
                               text_excludes=_MINIMAX_M3_MARKERS[1:], none_excludes=_MINIMAX_M3_MARKERS)


def _minimax_m3(tools: list[tuple[str, Any]], mode: str, reasoning: str, *, any_order: bool,
                exclude_special_tokens: bool, max_whitespace_cnt: int | None, parallel_tool_calls: bool) -> dict:
    """MiniMax M3: reasoning up to ``</mm:think>`` (under "auto" a ``<mm:think>`` block or its bare end), then
    free text in which a ``<tool_call>`` section (:data:`MINIMAX_M3_CALLS`) holds the calls; a required call is
    triggered like an optional one, but at least once; a named tool is its section alone."""
    del max_whitespace_cnt  # nothing in the elements takes whitespace counts
    spec = MINIMAX_M3_CALLS

    def excl(x):
        return list(x) if exclude_special_tokens else []

    def call(name: str, params: Any) -> dict:
        return {"type": "tag", "begin": spec.call_begin.replace("{name}", name),
                "content": {"type": "json_schema", "json_schema": params, "style": spec.style,
                            "any_order": any_order, "excludes": []},
                "end": spec.call_end}

    think_text = {"type": "any_text", "excludes": excl(spec.think_excludes)}
    prefix = []
    if reasoning == "enabled":
        prefix = [{"type": "tag", "begin": "", "content": think_text, "end": spec.think[1]}]
    elif reasoning == "auto":
        prefix = [{"type": "optional", "content": {"type": "or", "elements": [
            {"type": "tag", "begin": spec.think[0], "content": think_text, "end": spec.think[1]},
            _const(spec.think[1])]}}]
    calls = [call(n, p) for n, p in tools] if mode != "none" else []
    begin, end = spec.section
    if not calls:
        body = {"type": "any_text", "excludes": excl(spec.none_excludes)}
    elif mode == "forced":
        body = {"type": "tag", "begin": begin, "content": calls[0], "end": end}
    else:
        section = {"type": "tag", "begin": begin, "end": end, "content": {
            "type": "tags_with_separator", "tags": calls, "separator": "", "at_least_one": True,
            "stop_after_first": not parallel_tool_calls}}
        body = {"type": "triggered_tags", "triggers": [spec.trigger], "tags": [section],
                "at_least_one": mode == "required", "stop_after_first": not parallel_tool_calls,
                "excludes": excl(spec.text_excludes)}
    return {"type": "sequence", "elements": prefix + [body]} if prefix else body


def _reasoning_prefix(spec: ModelFormat, reasoning: str, excl) -> list[dict]:
    if spec.think is None:
        return []
    if reasoning == "disabled":
        return [_const(spec.disabled_prefix + spec.after_think)] if spec.disabled_prefix else []
    begin, end = spec.think
    if reasoning == "enabled":
        block = {"type": "tag", "begin": spec.think_enabled_begin, "end": end,
                 "content": {"type": "any_text", "excludes": excl(spec.think_excludes)}}
        return [block] + ([_const(spec.after_think)] if spec.after_think else [])
    auto_excludes = spec.think_excludes if spec.think_auto_excludes is None else spec.think_auto_excludes
    block = {"type": "tag", "begin": begin, "end": end,
             "content": {"type": "any_text", "excludes": excl(auto_excludes)}}
    if spec.after_think:
        block = {"type": "sequence", "elements": [block, _const(spec.after_think)]}
    return [{"type": "optional", "content": block}]


def _const(text: str) -> dict:
    return {"type": "const_string", "value": text}


def _reasoning_mode(reasoning: bool | str) -> str:
    if reasoning is True:
        return "enabled"
    if reasoning is False:
        return "disabled"
    if reasoning not in ("enabled", "disabled", "auto"):
        raise ValueError(f"get_model_structural_tag: reasoning must be 'enabled', 'disabled', 'auto' or a bool, "
                         f"got {reasoning!r}")
    return reasoning


def _plain(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return json.loads(value.model_dump_json()) if hasattr(value, "model_dump_json") else value.model_dump()
    return value


@dataclasses.dataclass(frozen=True)
class _Tool:
    name: str  # the name the model writes (a builtin tool's ``name``, or its ``type``)
    params: Any  # the arguments' JSON Schema (True: any)
    builtin_type: str | None = None  # None for a function tool


def _tool_entry(tool: Any, index: int) -> _Tool:
    tool = _plain(tool)
    if not isinstance(tool, dict) or not isinstance(tool.get("type"), str):
        raise ValueError(f"get_model_structural_tag: tools[{index}] must be an object with a string 'type'")
    if tool["type"] == "function":
        fn = tool.get("function")
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise ValueError(f"get_model_structural_tag: tools[{index}].function must be an object with a non-empty "
                             f"string 'name'")
        params, where, name, builtin = fn.get("parameters", True), f"tools[{index}].function.parameters", fn["name"], None
    else:
        name = tool.get("name") or tool["type"]
        if not isinstance(name, str):
            raise ValueError(f"get_model_structural_tag: tools[{index}].name must be a string")
        params, where, builtin = tool.get("parameters", True), f"tools[{index}].parameters", tool["type"]
    if params is None:
        params = True
    if not isinstance(params, (dict, bool)):
        raise ValueError(f"get_model_structural_tag: {where} must be a JSON Schema object or boolean")
    return _Tool(name, params, builtin)


def _tool_choice(choice: Any, tools: list[_Tool]) -> tuple[str, list[_Tool]]:
    """(mode: none / auto / required / forced, the tools it leaves)."""
    choice = _plain(choice)
    if choice is None or choice == "auto":
        return "auto", tools
    if choice == "none":
        return "none", []
    if choice == "required":
        if not tools:
            raise ValueError("get_model_structural_tag: tool_choice 'required' needs at least one tool")
        return "required", tools
    if isinstance(choice, dict) and choice.get("type") == "allowed_tools":
        allowed = choice.get("allowed_tools") or {}
        mode = allowed.get("mode", "auto")
        if mode not in ("auto", "required"):
            raise ValueError(f"get_model_structural_tag: allowed_tools mode must be 'auto' or 'required', "
                             f"got {mode!r}")
        refs = [r for r in (_plain(r) for r in allowed.get("tools", [])) if isinstance(r, dict)]
        known = {t.name for t in tools if t.builtin_type is None}
        unknown = sorted({(r.get("function") or {}).get("name") for r in refs if r.get("type") == "function"} - known,
                         key=str)
        if unknown:  # a typo in the allowed list would otherwise silently narrow the tools (xgrammar refuses too)
            raise ValueError(f"get_model_structural_tag: allowed_tools names function tools that are not in tools: "
                             f"{', '.join(map(repr, unknown))}")
        keep = [t for t in tools if any(_names(r, t) for r in refs)]
        return _tool_choice(mode, keep)
    if isinstance(choice, dict) and isinstance(choice.get("type"), str):
        match = [t for t in tools if _names(choice, t)]
        if len(match) != 1:
            what = (choice.get("function") or {}).get("name") if choice["type"] == "function" else choice["type"]
            raise ValueError(f"get_model_structural_tag: tool_choice names the tool {what!r}, which is not exactly "
                             f"one of the tools this format can call")
        return "forced", match
    raise ValueError(f"get_model_structural_tag: tool_choice must be 'auto', 'none', 'required' or a tool choice "
                     f"object, got {choice!r}")


def _names(ref: dict, tool: _Tool) -> bool:
    """Whether a tool reference (a function by name, a builtin by type) names `tool`."""
    if ref.get("type") == "function":
        return tool.builtin_type is None and (ref.get("function") or {}).get("name") == tool.name
    return tool.builtin_type is not None and ref.get("type") == tool.builtin_type
