#!/usr/bin/env python3
"""End-to-end constrained decoding on Gemma 3 270M: xg2jax inside ``jax.jit`` against host-side grammar loops.

Why: ``jax_step.py`` measures the grammar step next to a Gemma-shaped step with random weights and fake logits. This
script runs the real model (``xg2jax.models.gemma3``, the 270M GGUF weights dequantised to float32) on few-shot
prompts and measures, in one run (ratios matter; absolute times drift on a small shared machine), how fast each way
of constraining the same greedy decode runs:

* ``unconstrained``: no grammar, no mask (greedy sample + forward);
* ``xg2jax FFI``: one jitted step = ``next_token_mask`` (XLA FFI custom call: advance every row's matcher by its
  last token, write the next packed bitmask) + forward + ``apply_token_bitmask`` + greedy sample;
* ``xg2jax callback``: the same step with the grammar step behind ``io_callback`` (``path="callback"``);
* ``host: xgrammar eager`` / ``host: xgrammar JIT`` (``enable_dynamic_compilation``) / ``host: llguidance``: the
  Python loop a JAX user writes today: per step the engine (on the host) accepts the previous token and fills the
  next-token bitmask, ``jax.device_put`` sends it to the device, one jitted call runs forward + mask + greedy sample,
  and the sampled token comes back to the host (``np.asarray``). xgrammar uses ``BatchGrammarMatcher`` and llguidance
  ``LLExecutor`` at batch > 1 (single-matcher calls at batch 1). The engines come from ``peers.py`` (same vocabulary,
  same special-token handling as every other benchmark here).

Every variant is written token-in / token-out: ``step(token) -> next token`` does the grammar work for ``token``,
the forward pass on ``token`` and the masked greedy sample, which is the work of one iteration of
``xg2jax.jax.constrained_sample``'s loop. Per step the script calls the jitted step from Python and waits for it
(``jax.block_until_ready``), so every step is timed on its own (``time.perf_counter``). The variants of one
workload x batch run interleaved, one step each per round (``--block``), in a fresh random order every round, so load
from other jobs hits them alike and no variant always follows the same one; the overhead of a variant is the median
over rounds of its step time / the unconstrained step time of the same round, with a bootstrap 95% interval. Also
reported: median ms per step (one token per row), tokens/s = batch / median step time, and the time to first token
(TTFT: from the compiled grammar(s) and the prompt ids to the first sampled token on the host: grammar-state /
matcher creation, prompt transfer, prefill, first mask, first sample; median of ``--ttft-repeats`` starts, each
with a freshly compiled grammar). JAX compilation is excluded: every jitted function is warmed up once per batch size
with the same shapes (grammar rows unconstrained, all-ones masks), which touches no grammar engine. Each constrained
variant compiles its own grammar (a fresh compiler, caches off), so no engine inherits another variant's built masks;
lazily built masks (xg2jax, xgrammar JIT) are built during TTFT and the first steps, as for a new grammar in serving.

Grammars that finish: when a constrained row samples a stop token, that row restarts outside the timed region: the
model is fed the stop token as usual, but the row's matcher is replaced by a fresh one (host loops: a new matcher;
jitted variants: a new ``GrammarState`` with snapshots of the other rows and ``-1``, "no advance", as that row's
grammar token), so every variant runs the same number of steps. Each row's tokens are then split at stop tokens into
complete outputs and an unfinished tail.

Checks, for every constrained output of every variant: an independent check of the text (JSON: ``json.loads`` +
``jsonschema``; EBNF: a small validator of the program; regex: ``re.fullmatch``) and a fresh xg2jax
``GrammarMatcher`` accepting the tokens and then a stop token (tails: accepted as a prefix). The unconstrained
output's first answer is checked the same way for information. Token streams of every constrained variant are
compared with the FFI variant's (greedy decoding with equal masks gives equal tokens); at the first difference the
two engines' masks after the same prefix are compared and the tokens only one of them allows are reported.

Grammar work alone (``--no-replay`` skips it): after the run each constrained variant's own token stream is replayed
through its engine without the model, on a freshly compiled grammar (cold) and again (warm): ``next_token_mask`` in
one jitted loop per run of steps between restarts for FFI / callback, accept + fill + ``device_put`` per step for
the host loops. Also measured once per batch: the Python dispatch cost of a jitted call that contains the grammar
step (on rows without a grammar) against an empty jitted call; the jitted-step variants pay it per step.

Second view: the whole ``constrained_sample`` loop (one jitted while_loop, ``path="ffi"``, a freshly compiled grammar)
against ``constrained_sample(grammar_state=None)``, ``--sample-view-repeats`` calls each next to a call of the prefill
alone; ms per iteration = (fastest wall - fastest prefill) / iterations.

Output: ``benchmarks/results/e2e_gemma.json`` (every step time, texts, checks, versions, load average),
``benchmarks/results/e2e_gemma.md`` (the table and the headline numbers) and ``benchmarks/results/e2e_gemma.png``
(ms per step per variant, grouped by workload and batch). ``--report`` redraws md + png from the JSON. ``--quick``
(~1-2 min) writes ``results/e2e_gemma_quick.*`` unless ``--out`` says otherwise.

    python benchmarks/e2e_gemma.py                 # default: batch 1 (192 steps) and 8 (96 steps), ~15-20 min here
    python benchmarks/e2e_gemma.py --quick         # smoke run
    python benchmarks/e2e_gemma.py --report        # md + png again from results/e2e_gemma.json, no run
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import logging
import math
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE.parent))

import peers  # noqa: E402  (sets the one-thread environment of the engines' native pools)
import workloads  # noqa: E402
import numpy as np  # noqa: E402

try:
    from tqdm import tqdm
except ImportError:  # pragma: no cover
    def tqdm(it=None, **_kw):
        return it

log = logging.getLogger("e2e_gemma")

RESULTS = HERE / "results"

# ----------------------------------------------------------------------------------------------------------------
# Workloads: few-shot prompts, grammars, checkers
# ----------------------------------------------------------------------------------------------------------------

EMPLOYEE_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "minimum": 16, "maximum": 99},
        "role": {"type": "string", "enum": ["engineer", "scientist", "designer", "manager", "analyst", "other"]},
        "badge": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{4}$"},
        "skills": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 6},
        "office": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
            "required": ["city", "country"],
            "additionalProperties": False,
        },
    },
    "required": ["name", "age", "role", "badge", "skills", "office"],
    "additionalProperties": False,
}


def _employee(name, age, role, badge, skills, city, country):
    return json.dumps({"name": name, "age": age, "role": role, "badge": badge, "skills": skills,
                       "office": {"city": city, "country": country}}, ensure_ascii=False)


PROGRAM_EBNF = r"""root ::= stmt+
stmt ::= name " = " expr "\n"
expr ::= term ((" + " | " - ") term)*
term ::= factor ((" * " | " / ") factor)*
factor ::= number | name | "(" expr ")"
name ::= [a-z] [a-z_]*
number ::= "0" | [1-9] [0-9]*
"""

CONTACT_REGEX = (r"[A-Z][a-z]+ [A-Z][a-z]+ \| [0-9]{4}-[0-9]{2}-[0-9]{2} \| \+[0-9]{1,3} [0-9]{3} [0-9]{3} [0-9]{4}"
                 r" \| [a-z]+\.[a-z]+@[a-z]+\.(com|org|net)")

WORKLOADS = {
    "json": dict(
        kind="json_schema",
        source=json.dumps(EMPLOYEE_SCHEMA),
        description="JSON Schema: employee record (nested object, enum, integer range, array, string pattern)",
        instruction="Extract the employee record from each text as JSON.",
        input_label="Text", output_label="JSON",
        examples=[
            ("Maria Lopez (34) is a data scientist at our Madrid office in Spain; badge ES-4821. She knows Python, "
             "SQL and statistics.",
             _employee("Maria Lopez", 34, "scientist", "ES-4821", ["Python", "SQL", "statistics"], "Madrid",
                       "Spain")),
            ("Badge US-1093 belongs to Tom Becker, 51, an engineering manager based in Austin, United States, who "
             "is good at budgeting and hiring.",
             _employee("Tom Becker", 51, "manager", "US-1093", ["budgeting", "hiring"], "Austin", "United States")),
            ("Our new designer, Aiko Tanaka, 27, works from Osaka, Japan (badge JP-7710) and uses Figma, Blender "
             "and Illustrator.",
             _employee("Aiko Tanaka", 27, "designer", "JP-7710", ["Figma", "Blender", "Illustrator"], "Osaka",
                       "Japan")),
        ],
        inputs=[
            "Lukas Weber, 42, is a backend engineer in our Berlin office, Germany. Badge DE-3307. Skills: Go, "
            "Kubernetes, PostgreSQL.",
            "Priya Nair (29), financial analyst, Bangalore office, India, badge IN-5512, skilled in Excel, "
            "forecasting and SQL.",
            "Badge FR-0086: Chloe Martin, 38, a product designer in Lyon, France, who works with Sketch and user "
            "research.",
            "Samuel Okafor is a 45-year-old research scientist at the Lagos site in Nigeria (badge NG-2290); "
            "expertise: genomics, R, statistics.",
            "Emma Johansson, 31, manages the support team in Stockholm, Sweden. Badge SE-4410. Strengths: coaching, "
            "planning.",
            "Carlos Mendes, engineer, 26, Porto office, Portugal, badge PT-7765; knows Java, Spring and Docker.",
            "Badge CA-1200 is held by Olivia Chen, 36, a data analyst in Toronto, Canada, fluent in Python, Tableau "
            "and statistics.",
            "Ahmed Hassan (53) is an operations manager in Cairo, Egypt, badge EG-9034, experienced in logistics "
            "and negotiation.",
        ],
    ),
    "ebnf": dict(
        kind="ebnf",
        source=PROGRAM_EBNF,
        description="EBNF: arithmetic program (assignments, + - * /, parentheses), one statement per line",
        instruction="Write each word problem as a short arithmetic program, one assignment per line.",
        input_label="Problem", output_label="Program",
        examples=[
            ("Anna buys 3 notebooks at 4 dollars each and a pen for 2 dollars. How much does she spend?",
             "notebooks = 3 * 4\npen = 2\ntotal = notebooks + pen\n"),
            ("A train travels 60 km per hour for 3 hours, then 80 km per hour for 2 hours. How far does it go?",
             "first_leg = 60 * 3\nsecond_leg = 80 * 2\ndistance = first_leg + second_leg\n"),
            ("Ben had 50 stickers, gave 12 to his sister and shared the rest equally among 2 friends. How many did "
             "each friend get?",
             "left = 50 - 12\neach = left / 2\n"),
        ],
        inputs=[
            "A baker makes 12 trays of 24 cookies and sells 150 of them. How many cookies are left?",
            "Lisa saves 15 dollars a week for 8 weeks and then spends 45 dollars on shoes. How much money does she "
            "have?",
            "A garden has 7 rows of 9 tulips and 4 rows of 6 roses. How many flowers are there?",
            "Three friends split a bill of 96 dollars plus a tip of 18 dollars equally. How much does each pay?",
            "A car uses 6 liters of fuel per 100 km. How many liters does it need for a 450 km trip?",
            "A school orders 25 boxes of 40 pencils and gives 30 pencils to each of 20 classes. How many pencils "
            "remain?",
            "Tom reads 35 pages a day for 6 days and 20 pages on the seventh day. How many pages does he read?",
            "A farmer has 120 eggs and packs them into cartons of 12, then sells 4 cartons. How many cartons are "
            "left?",
        ],
    ),
    "regex": dict(
        kind="regex",
        source=CONTACT_REGEX,
        description="Regex: contact line (name | ISO date | phone | email)",
        instruction="Normalize each contact as: Name Surname | birth date YYYY-MM-DD | phone +CC NNN NNN NNNN | "
                    "email in lower case.",
        input_label="Contact", output_label="Normalized",
        examples=[
            ("jane doe, born 12 April 1990, phone (555) 123-4567 (US), mail: Jane.Doe@Example.com",
             "Jane Doe | 1990-04-12 | +1 555 123 4567 | jane.doe@example.com"),
            ("PIERRE DUBOIS - date of birth 3 Nov 1985 - mobile +44 7911 234 567 - pierre.dubois@mail.net",
             "Pierre Dubois | 1985-11-03 | +44 791 123 4567 | pierre.dubois@mail.net"),
            ("Name: Sofia Rossi. Birthday: 7 Jan 1978. Phone: +39 347 555 0192. E-mail: Sofia.Rossi@Posta.org",
             "Sofia Rossi | 1978-01-07 | +39 347 555 0192 | sofia.rossi@posta.org"),
        ],
        inputs=[
            "mark evans; DOB 22 Feb 1969; tel (212) 555-0147 (US); Mark.Evans@Shop.com",
            "Contact Lena Fischer, born 1 September 1993, +49 151 234 5678, lena.fischer@post.org",
            "KENJI SATO / 30 Jun 1981 / phone +81 90 1234 5678 / kenji.sato@tokyo.net",
            "Ana Silva - birthday 15 March 2001 - cell +351 912 345 678 - Ana.Silva@Mail.com",
            "name: omar khalid | born 9 Dec 1975 | +20 100 555 1234 | omar.khalid@cairo.org",
            "Grace Kim, DOB 2 July 1988, mobile (415) 555-0199, US, grace.kim@bay.com",
            "Contact: Ivan Petrov, born 11 November 1979, +7 912 345 6789, Ivan.Petrov@Mail.net",
            "Chloe Dubois; 25 May 1996; +33 612 345 6789; chloe.dubois@paris.org",
        ],
    ),
}

_NAME = r"[a-z][a-z_]*"
_NUMBER = r"(?:0|[1-9][0-9]*)"
_ATOM = rf"(?:{_NUMBER}|{_NAME}|@)"  # @: a parenthesised group already reduced
_FLAT = rf"{_ATOM}(?: [-+*/] {_ATOM})*"


def valid_program(text: str) -> tuple[bool, str]:
    """The EBNF workload's language, checked without any grammar engine (nested parentheses reduced to ``@``)."""
    if not text.endswith("\n") or "@" in text:
        return False, "does not end with a newline" if not text.endswith("\n") else "contains '@'"
    for line in text[:-1].split("\n"):
        m = re.fullmatch(rf"({_NAME}) = (.+)", line)
        if not m:
            return False, f"not an assignment: {line!r}"
        expr = m.group(2)
        while True:
            reduced = re.sub(rf"\(({_FLAT})\)", "@", expr)
            if reduced == expr:
                break
            expr = reduced
        if not re.fullmatch(_FLAT, expr):
            return False, f"bad expression: {line!r}"
    return True, ""


def check_text(workload: str, text: str) -> tuple[bool, str]:
    """Independent check of one complete output (no grammar engine involved)."""
    if workload == "json":
        try:
            obj = json.loads(text)
        except ValueError as exc:
            return False, f"json.loads: {exc}"
        try:
            import jsonschema
        except ImportError:  # pragma: no cover
            return True, "parsed (jsonschema not installed: schema not checked)"
        errors = sorted(jsonschema.Draft202012Validator(EMPLOYEE_SCHEMA).iter_errors(obj), key=str)
        return (not errors), ("; ".join(e.message for e in errors[:3]) if errors else "")
    if workload == "ebnf":
        return valid_program(text)
    if workload == "regex":
        ok = re.fullmatch(CONTACT_REGEX, text) is not None
        return ok, "" if ok else "re.fullmatch failed"
    raise ValueError(workload)


def first_answer(workload: str, text: str) -> str:
    """The first answer of an unconstrained continuation: up to the few-shot separator (a blank line)."""
    cut = text.split("\n\n")[0]
    if workload == "ebnf":
        return cut if cut.endswith("\n") else cut + "\n"
    return cut.strip()


def build_prompt(w: dict, row_input: str) -> str:
    shots = "".join(f"{w['input_label']}: {i}\n{w['output_label']}:\n{o}{'' if o.endswith(chr(10)) else chr(10)}\n"
                    for i, o in w["examples"])
    return f"{w['instruction']}\n\n{shots}{w['input_label']}: {row_input}\n{w['output_label']}:\n"


# ----------------------------------------------------------------------------------------------------------------
# Engines (peers.py adapters) and grammar compilation
# ----------------------------------------------------------------------------------------------------------------

VARIANTS = ("unconstrained", "ffi", "callback", "xgrammar", "xgrammar-dyn", "llguidance")
LABELS = {
    "unconstrained": "unconstrained (no grammar, no mask)",
    "ffi": "xg2jax FFI (in jit)",
    "callback": "xg2jax io_callback (in jit)",
    "xgrammar": "host loop: xgrammar eager",
    "xgrammar-dyn": "host loop: xgrammar JIT",
    "llguidance": "host loop: llguidance",
}
SHORT = {"unconstrained": "unconstrained", "ffi": "xg2jax FFI", "callback": "xg2jax callback",
         "xgrammar": "xgrammar eager (host)", "xgrammar-dyn": "xgrammar JIT (host)",
         "llguidance": "llguidance (host)"}
HOST_VARIANTS = ("xgrammar", "xgrammar-dyn", "llguidance")
JIT_VARIANTS = ("ffi", "callback")
COLORS = {"unconstrained": "#7f7f7f", "ffi": "#d62728", "callback": "#ff9896", "xgrammar": "#1f77b4",
          "xgrammar-dyn": "#aec7e8", "llguidance": "#2ca02c"}


def make_engines(vocab) -> tuple[dict, dict]:
    """peers.py adapters, set up on the Gemma 3 vocabulary: xg2jax, xgrammar (eager, JIT), llguidance.

    JSON: compact output (``any_whitespace=False``; separators ", " and ": " for every engine), so a small model
    cannot run away in free whitespace between tokens and all engines accept the same strings."""
    engines, setup_ms = {}, {}
    for name in ("xg2jax", "xgrammar", "xgrammar-dyn", "llguidance"):
        eng = peers.make_engine(name)
        setup_ms[name] = eng.setup(vocab)
        eng.json_options["any_whitespace"] = False
        engines[name] = eng
    return engines, setup_ms


def compile_grammar(eng, kind: str, source: str) -> tuple[object, float]:
    """Compile ``source`` cold with a peers.py adapter; returns (compiled grammar or llguidance template, ms).
    ``regex`` (not a peers.py kind) and llguidance's JSON separators are handled here, the rest by the adapter."""
    name = eng.name
    t0 = time.perf_counter_ns()
    if name.startswith("xgrammar") and kind == "regex":
        compiler = eng.xgr.GrammarCompiler(eng.tok, max_threads=1, cache_enabled=False,
                                           enable_dynamic_compilation=eng.dynamic)
        out = compiler.compile_regex(source)
    elif name.startswith("xg2jax") and kind == "regex":
        compiler = eng.x.GrammarCompiler(eng.tok, max_threads=1, cache_enabled=False)
        out = compiler.compile_regex(source)
    elif name == "llguidance" and kind in ("regex", "json_schema"):
        llg = eng.llg
        if kind == "regex":
            grammar = llg.grammar_from("regex", source)
        else:  # xgrammar's / xg2jax's compact separators
            grammar = llg.LLMatcher.grammar_from_json_schema(
                source, overrides={"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "})
        out = llg.LLMatcher(eng.tok, grammar, log_level=0)
        if out.is_error():
            raise RuntimeError(f"llguidance: {out.get_error()}")
    else:
        eng.compile(kind, source)
        out = eng.template if name == "llguidance" else eng.compiled
    return out, (time.perf_counter_ns() - t0) / 1e6


# ----------------------------------------------------------------------------------------------------------------
# Jitted pieces (one set per process; jit caches per shape)
# ----------------------------------------------------------------------------------------------------------------


class Fns:
    """The jitted functions of every variant. ``first_*``: prefill + [first mask +] greedy sample -> first token;
    ``step_*``: token in, next token out (grammar step for the token, forward on it, masked greedy sample)."""

    def __init__(self, step, threads: int):
        import functools

        import jax
        import jax.numpy as jnp
        import xg2jax.jax as xj

        self.jax, self.jnp, self.xj = jax, jnp, xj

        def greedy(logits):
            return jnp.argmax(logits, axis=-1).astype(jnp.int32)

        def prefill(params, prompt, cache, lengths):
            positions = jnp.broadcast_to(jnp.arange(prompt.shape[1], dtype=jnp.int32), prompt.shape)
            return step.prefill(params, prompt, cache, positions, lengths)

        def forward(params, token, cache, pos):
            logits, cache = step(params, token[:, None], cache, pos[:, None])
            return logits[:, 0, :], cache

        jit = functools.partial(jax.jit, donate_argnames=("cache",))

        @jit
        def first_plain(params, prompt, cache, lengths):
            logits, cache = prefill(params, prompt, cache, lengths)
            return greedy(logits), cache

        @jit
        def step_plain(params, token, cache, pos):
            logits, cache = forward(params, token, cache, pos)
            return greedy(logits), cache, pos + 1

        def make_grammar_fns(path):
            @jit
            def first(params, prompt, cache, lengths, state):
                logits, cache = prefill(params, prompt, cache, lengths)
                mask, state = xj.next_token_mask(state, jnp.full(state.handles.shape, -1, jnp.int32), path=path,
                                                 max_threads=threads)
                token = greedy(xj.apply_token_bitmask(logits, mask, constrained=state.handles >= 0))
                return token, state, cache

            @jit
            def step_(params, token, grammar_token, state, cache, pos):
                mask, state = xj.next_token_mask(state, grammar_token, path=path, max_threads=threads)
                logits, cache = forward(params, token, cache, pos)
                token = greedy(xj.apply_token_bitmask(logits, mask, constrained=state.handles >= 0))
                return token, state, cache, pos + 1

            return first, step_

        @jit
        def first_host(params, prompt, cache, lengths, mask):
            logits, cache = prefill(params, prompt, cache, lengths)
            return greedy(xj.apply_token_bitmask(logits, mask)), cache

        @jit
        def step_host(params, token, mask, cache, pos):
            logits, cache = forward(params, token, cache, pos)
            return greedy(xj.apply_token_bitmask(logits, mask)), cache, pos + 1

        self.mask_only = {p: jax.jit(functools.partial(xj.next_token_mask, path=p, max_threads=threads))
                          for p in JIT_VARIANTS}

        @jax.jit
        def mask_empty(state, tokens):  # same inputs and output shapes as next_token_mask, no grammar work
            return jnp.zeros((tokens.shape[0], state.mask_words), jnp.int32) + tokens[:, None] * 0, state

        def make_mask_loop(path):
            @jax.jit
            def mask_loop(state, grammar_tokens, start, stop):
                """next_token_mask for steps start..stop-1 of grammar_tokens [S, B], in one jitted loop."""
                def body(i, carry):
                    st, acc = carry
                    mask, st = xj.next_token_mask(st, grammar_tokens[i], path=path, max_threads=threads)
                    return st, acc ^ mask[:, 0]

                acc = jnp.zeros(grammar_tokens.shape[1:], jnp.int32)
                return jax.lax.fori_loop(start, stop, body, (state, acc))

            return mask_loop

        self.mask_empty = mask_empty
        self.mask_loop = {p: make_mask_loop(p) for p in JIT_VARIANTS}
        self.first_plain, self.step_plain = first_plain, step_plain
        self.grammar = {p: make_grammar_fns(p) for p in JIT_VARIANTS}
        self.first_host, self.step_host = first_host, step_host


class Ctx:
    """What every runner shares: model, jitted functions, shapes, vocabulary facts."""

    def __init__(self, *, params, config, fns, gemma3, prompt_len, cache_len, vocab_size, stop_ids, threads):
        self.params, self.config, self.fns, self.gemma3 = params, config, fns, gemma3
        self.prompt_len, self.cache_len, self.vocab_size = prompt_len, cache_len, vocab_size
        self.stop_ids = set(stop_ids)
        self.threads = threads
        self.words = (vocab_size + 31) // 32

    def new_cache(self, batch):
        return self.fns.jax.block_until_ready(self.gemma3.init_cache(self.config, batch, self.cache_len))


# ----------------------------------------------------------------------------------------------------------------
# Runners: one per variant; start() = TTFT, step() = one timed step (then record(): untimed bookkeeping)
# ----------------------------------------------------------------------------------------------------------------


class Runner:
    constrained = True

    def __init__(self, name: str, ctx: Ctx, batch: int):
        self.name, self.ctx, self.batch = name, ctx, batch
        self.tokens: list[np.ndarray] = []  # host copy of every sampled token, [B] per step (TTFT's first)
        self.step_ms: list[float] = []
        self.restarts = 0
        self.restart_steps: list[list[int]] = [[] for _ in range(batch)]
        self.errors: list[str] = []
        self.failed = False
        self.ttft_parts: dict = {}

    def _stop_rows(self, host: np.ndarray) -> list[int]:
        if not self.constrained:
            return []
        return [r for r in range(self.batch) if int(host[r]) in self.ctx.stop_ids]

    def record(self, host: np.ndarray) -> None:
        self.tokens.append(np.array(host, np.int32))
        rows = self._stop_rows(host)
        if rows:
            for r in rows:
                self.restart_steps[r].append(len(self.tokens) - 1)
            self.restarts += len(rows)
            self.restart(rows, host)

    def restart(self, rows, host):
        pass

    def release(self):
        pass


class PlainRunner(Runner):
    constrained = False

    def start(self, prompt, lengths) -> float:
        jax, jnp, fns = self.ctx.fns.jax, self.ctx.fns.jnp, self.ctx.fns
        cache = self.ctx.new_cache(self.batch)
        t0 = time.perf_counter()
        token, cache = fns.first_plain(self.ctx.params, jnp.asarray(prompt), cache, jnp.asarray(lengths))
        host = np.asarray(jax.block_until_ready(token))
        ttft = time.perf_counter() - t0
        self.token, self.cache, self.pos = token, cache, jnp.asarray(lengths)
        self.record(host)
        return ttft * 1e3

    def step(self) -> None:
        jax, fns = self.ctx.fns.jax, self.ctx.fns
        t0 = time.perf_counter()
        out = jax.block_until_ready(fns.step_plain(self.ctx.params, self.token, self.cache, self.pos))
        self.step_ms.append((time.perf_counter() - t0) * 1e3)
        self.token, self.cache, self.pos = out
        self.record(np.asarray(self.token))


class JitGrammarRunner(Runner):
    """xg2jax in the jitted step (path ``ffi`` or ``callback``)."""

    def __init__(self, name, ctx, batch, compiled):
        super().__init__(name, ctx, batch)
        self.compiled = compiled
        self.state = None

    def start(self, prompt, lengths) -> float:
        jax, jnp, xj = self.ctx.fns.jax, self.ctx.fns.jnp, self.ctx.fns.xj
        first, _ = self.ctx.fns.grammar[self.name]
        cache = self.ctx.new_cache(self.batch)
        t0 = time.perf_counter()
        state = xj.GrammarState.create([self.compiled] * self.batch, vocab_size=self.ctx.vocab_size)
        t1 = time.perf_counter()
        token, state, cache = first(self.ctx.params, jnp.asarray(prompt), cache, jnp.asarray(lengths), state)
        host = np.asarray(jax.block_until_ready(token))
        ttft = time.perf_counter() - t0
        self.ttft_parts = {"state_create_ms": (t1 - t0) * 1e3}
        self.state, self.token, self.grammar_token, self.cache = state, token, token, cache
        self.pos = jnp.asarray(lengths)
        self.record(host)
        return ttft * 1e3

    def step(self) -> None:
        jax = self.ctx.fns.jax
        _, step = self.ctx.fns.grammar[self.name]
        t0 = time.perf_counter()
        out = jax.block_until_ready(step(self.ctx.params, self.token, self.grammar_token, self.state, self.cache,
                                         self.pos))
        self.step_ms.append((time.perf_counter() - t0) * 1e3)
        self.token, self.state, self.cache, self.pos = out
        self.grammar_token = self.token
        self.record(np.asarray(self.token))

    def restart(self, rows, host):
        """Fresh matchers for ``rows`` (their stop token goes to the model, not to the grammar); the other rows
        keep their matchers (snapshots); untimed."""
        xj, jnp = self.ctx.fns.xj, self.ctx.fns.jnp
        rows = set(rows)
        grammars = [self.compiled if r in rows else self.state.matcher(r) for r in range(self.batch)]
        new = xj.GrammarState.create(grammars, vocab_size=self.ctx.vocab_size)
        self.state.release()
        self.state = new
        self.grammar_token = jnp.asarray(np.where([r in rows for r in range(self.batch)], -1, host).astype(np.int32))

    def release(self):
        if self.state is not None:
            self.state.release()
            self.state = None


class HostRunner(Runner):
    """A Python decode loop with a host-side engine (xgrammar eager / JIT, llguidance)."""

    def __init__(self, name, ctx, batch, engine, compiled):
        super().__init__(name, ctx, batch)
        self.engine, self.compiled = engine, compiled
        self.is_llg = name == "llguidance"
        if self.is_llg:
            self.bitmask = np.zeros((batch, ctx.words), np.int32)
            self.np_mask = self.bitmask
            self.nbytes = ctx.words * 4
            self.executor = engine.llg.LLExecutor(num_threads=ctx.threads) if batch > 1 else None
        else:
            xgr = engine.xgr
            self.bitmask = xgr.allocate_token_bitmask(batch, ctx.vocab_size)  # torch.int32 [B, W]
            self.np_mask = self.bitmask.numpy()
            self.batcher = xgr.BatchGrammarMatcher(max_threads=ctx.threads) if batch > 1 else None
        self.skip_accept = [False] * batch
        self.matchers = None

    def _new_matcher(self):
        if self.is_llg:
            return self.compiled.deep_copy()
        return self.engine.xgr.GrammarMatcher(self.compiled)

    def _fill(self):
        if self.is_llg:
            if self.batch == 1:
                self.matchers[0].unsafe_compute_mask_ptr(self.bitmask.ctypes.data, self.nbytes)
            else:
                self.executor.unsafe_compute_mask_ptr([(m, i) for i, m in enumerate(self.matchers)],
                                                      self.bitmask.ctypes.data, self.nbytes, self.batch)
        elif self.batch == 1:
            self.matchers[0].fill_next_token_bitmask(self.bitmask, 0)
        else:
            self.batcher.batch_fill_next_token_bitmask(self.matchers, self.bitmask)

    def _accept(self, host):
        rows = [r for r in range(self.batch) if not self.skip_accept[r]]
        if self.is_llg:
            oks = [bool(self.matchers[r].consume_token(int(host[r]))) for r in rows]
        elif self.batch == 1:
            oks = [bool(self.matchers[0].accept_token(int(host[0])))] if rows else []
        else:
            oks = self.engine.xgr.BatchGrammarMatcher.batch_accept_token(
                [self.matchers[r] for r in rows], [int(host[r]) for r in rows])
        self.skip_accept = [False] * self.batch
        return [r for r, ok in zip(rows, oks) if not ok]

    def start(self, prompt, lengths) -> float:
        jax, jnp, fns = self.ctx.fns.jax, self.ctx.fns.jnp, self.ctx.fns
        cache = self.ctx.new_cache(self.batch)
        t0 = time.perf_counter()
        self.matchers = [self._new_matcher() for _ in range(self.batch)]
        t1 = time.perf_counter()
        self._fill()
        t2 = time.perf_counter()
        mask = jax.device_put(self.np_mask)
        token, cache = fns.first_host(self.ctx.params, jnp.asarray(prompt), cache, jnp.asarray(lengths), mask)
        host = np.asarray(jax.block_until_ready(token))
        ttft = time.perf_counter() - t0
        self.ttft_parts = {"matcher_create_ms": (t1 - t0) * 1e3, "first_fill_ms": (t2 - t1) * 1e3}
        self.token, self.cache, self.pos, self.host = token, cache, jnp.asarray(lengths), host
        self.record(host)
        return ttft * 1e3

    def step(self) -> None:
        jax, fns = self.ctx.fns.jax, self.ctx.fns
        t0 = time.perf_counter()
        rejected = self._accept(self.host)
        self._fill()
        mask = jax.device_put(self.np_mask)
        out = jax.block_until_ready(fns.step_host(self.ctx.params, self.token, mask, self.cache, self.pos))
        host = np.asarray(out[0])
        self.step_ms.append((time.perf_counter() - t0) * 1e3)
        self.token, self.cache, self.pos = out
        self.host = host
        if rejected:  # the engine refused a token its own mask allowed: record, restart the row, go on
            self.errors.append(f"step {len(self.tokens)}: rows {rejected} rejected their sampled token")
            for r in rejected:
                self.matchers[r] = self._new_matcher()
        self.record(host)

    def restart(self, rows, host):
        for r in rows:
            self.matchers[r] = self._new_matcher()
            self.skip_accept[r] = True

    def release(self):
        self.matchers = None


# ----------------------------------------------------------------------------------------------------------------
# Grammar work alone: replay a variant's token streams through its engine, no model
# ----------------------------------------------------------------------------------------------------------------


def replay_grammar(ctx: Ctx, v: str, batch: int, engines: dict, compiled, tokens: list[np.ndarray]) -> dict:
    """The grammar work alone on the variant's own token stream (restarts where the run restarted; ``compiled``
    from :func:`compile_grammar`), without the model. The first mask (no token yet) is not counted.

    * ``ffi`` / ``callback``: ``next_token_mask`` inside one jitted ``fori_loop`` per run of steps between restarts
      (as inside the model's step: no Python between steps); per segment its wall time minus that of a
      zero-iteration call (the dispatch). Gives ``mean_us`` over all steps.
    * host loops: per step accept + fill + ``jax.device_put`` of the mask, waited for (all of it is part of their
      loop). Gives ``us`` per step, ``median_us`` and ``mean_us``.
    """
    jax, jnp, xj = ctx.fns.jax, ctx.fns.jnp, ctx.fns.xj
    out: list[float] = []
    if v in JIT_VARIANTS:
        loop = ctx.fns.mask_loop[v]
        steps = len(tokens) - 1
        grammar_tokens = np.zeros((max(1, steps), batch), np.int32)
        boundaries = []  # steps before which some row restarts
        for k, prev in enumerate(tokens[:-1]):
            stop = [int(t) in ctx.stop_ids for t in prev]
            grammar_tokens[k] = np.where(stop, -1, prev)
            if any(stop):
                boundaries.append((k, stop))
        g_dev = jnp.asarray(grammar_tokens)
        state = xj.GrammarState.create([compiled] * batch, vocab_size=ctx.vocab_size)
        try:
            _, state = jax.block_until_ready(ctx.fns.mask_only[v](state, jnp.full((batch,), -1, jnp.int32)))
            zero = []
            for _ in range(5):
                t0 = time.perf_counter()
                jax.block_until_ready(loop(state, g_dev, 0, 0))
                zero.append(time.perf_counter() - t0)
            dispatch = statistics.median(zero)
            cuts = [0] + [k for k, _ in boundaries if k > 0] + [steps]
            restart_at = dict(boundaries)
            total, segments = 0.0, 0
            for a, b in zip(cuts[:-1], cuts[1:]):
                if a in restart_at:
                    stop = restart_at[a]
                    new = xj.GrammarState.create([compiled if stop[r] else state.matcher(r) for r in range(batch)],
                                                 vocab_size=ctx.vocab_size)
                    state.release()
                    state = new
                if b <= a:
                    continue
                t0 = time.perf_counter()
                state, _ = jax.block_until_ready(loop(state, g_dev, a, b))
                total += time.perf_counter() - t0 - dispatch
                segments += 1
        finally:
            state.release()
        return {"mean_us": total / max(1, steps) * 1e6, "segments": segments, "dispatch_us": dispatch * 1e6,
                "steps": steps}
    runner = HostRunner(v, ctx, batch, engines[v], compiled)
    runner.matchers = [runner._new_matcher() for _ in range(batch)]
    runner._fill()
    for prev in tokens[:-1]:
        for r in range(batch):  # the run restarted these rows right after sampling the stop token
            if int(prev[r]) in ctx.stop_ids:
                runner.matchers[r] = runner._new_matcher()
                runner.skip_accept[r] = True
        t0 = time.perf_counter()
        rejected = runner._accept(prev)
        runner._fill()
        jax.block_until_ready(jax.device_put(runner.np_mask))
        out.append((time.perf_counter() - t0) * 1e6)
        for r in rejected:
            runner.matchers[r] = runner._new_matcher()
    return {"us": out, "median_us": statistics.median(out) if out else None,
            "mean_us": statistics.fmean(out) if out else None, "steps": len(out)}


# ----------------------------------------------------------------------------------------------------------------
# Output checks
# ----------------------------------------------------------------------------------------------------------------


def split_row(tokens: list[int], stop_ids) -> tuple[list[list[int]], list[int]]:
    """Complete outputs (each ended by a stop token, the stop token dropped) and the unfinished tail."""
    done, cur = [], []
    for t in tokens:
        if t in stop_ids:
            done.append(cur)
            cur = []
        else:
            cur.append(t)
    return done, cur


def matcher_accepts(check_grammar, tokens: list[int], complete: bool, stop_id: int) -> bool:
    """A fresh xg2jax matcher accepts ``tokens`` (then ``stop_id`` and terminates, when ``complete``)."""
    from xg2jax.testing import first_rejected_token

    ids = list(tokens) + [stop_id] if complete else list(tokens)
    return first_rejected_token(check_grammar, ids, require_termination=complete) is None


def check_outputs(workload: str, rows: list[list[int]], tok, check_grammar, stop_ids, constrained: bool) -> dict:
    """Per-variant summary of every row's outputs (see the module docstring)."""
    stop_id = min(stop_ids)
    res = {"complete": 0, "valid_text": 0, "valid_matcher": 0, "tails": 0, "tails_ok": 0, "failures": [],
           "texts": []}
    for r, row in enumerate(rows):
        res["texts"].append(tok.decode(row, skip_special=False))
        if not constrained:
            continue
        done, tail = split_row(row, stop_ids)
        for seg in done:
            res["complete"] += 1
            text = tok.decode(seg)
            ok_text, why = check_text(workload, text)
            ok_matcher = matcher_accepts(check_grammar, seg, True, stop_id)
            res["valid_text"] += ok_text
            res["valid_matcher"] += ok_matcher
            if not (ok_text and ok_matcher):
                res["failures"].append({"row": r, "text": text, "check": why, "matcher_ok": ok_matcher})
        if tail:
            res["tails"] += 1
            ok = matcher_accepts(check_grammar, tail, False, stop_id)
            res["tails_ok"] += ok
            if not ok:
                res["failures"].append({"row": r, "text": tok.decode(tail), "check": "unfinished tail",
                                        "matcher_ok": False})
            text = tok.decode(tail)
            if workload == "ebnf" and "\n" in text:  # the tail's finished statements, checked independently
                ok_lines, why = check_text(workload, text[:text.rfind("\n") + 1])
                res["tails_lines_checked"] = res.get("tails_lines_checked", 0) + 1
                res["tails_lines_ok"] = res.get("tails_lines_ok", 0) + ok_lines
                if not ok_lines:
                    res["failures"].append({"row": r, "text": text, "check": f"tail statements: {why}",
                                            "matcher_ok": ok})
    if not constrained:  # for information: would plain decoding's first answer pass the same check?
        firsts = []
        for row in rows:
            done, tail = split_row(row, stop_ids)
            firsts.append(first_answer(workload, tok.decode(done[0] if done else tail)))
        res["unconstrained_first_answer_valid"] = sum(check_text(workload, t)[0] for t in firsts)
        res["unconstrained_first_answers"] = firsts
    res["all_valid"] = (constrained and not res["failures"] and res["valid_text"] == res["complete"]
                        and res["valid_matcher"] == res["complete"] and res["tails_ok"] == res["tails"])
    return res


def allowed_ids(name: str, engines: dict, kind: str, source: str, prefix: list[int], vocab_size: int) -> set | None:
    """The token ids engine ``name`` allows after ``prefix`` (a fresh matcher; None if it rejects the prefix)."""
    eng = engines["xg2jax" if name in JIT_VARIANTS else name]
    comp, _ = compile_grammar(eng, kind, source)
    words = (vocab_size + 31) // 32
    if name == "llguidance":
        m = comp.deep_copy()
        if not all(m.consume_token(int(t)) for t in prefix):
            return None
        mask = np.zeros(words, np.int32)
        m.unsafe_compute_mask_ptr(mask.ctypes.data, mask.nbytes)
    elif name in JIT_VARIANTS:
        import xg2jax

        m = xg2jax.GrammarMatcher(comp)
        if not all(m.accept_token(int(t)) for t in prefix):
            return None
        bm = np.asarray(xg2jax.allocate_token_bitmask(1, vocab_size))
        m.fill_next_token_bitmask(bm, 0)
        mask = bm[0]
    else:
        m = eng.xgr.GrammarMatcher(comp)
        if not all(m.accept_token(int(t)) for t in prefix):
            return None
        bm = eng.xgr.allocate_token_bitmask(1, vocab_size)
        m.fill_next_token_bitmask(bm, 0)
        mask = bm.numpy()[0]
    bits = np.unpackbits(np.ascontiguousarray(mask).view(np.uint8), bitorder="little")[:vocab_size]
    return set(np.nonzero(bits)[0].tolist())


def explain_divergence(v: str, engines: dict, kind: str, source: str, ffi_row: list[int], step: int, tok,
                       stop_ids, vocab_size: int) -> dict:
    """At the first step where variant ``v``'s row left the FFI variant's row: compare the two engines' masks
    after the same prefix (since the row's last restart). Equal masks mean the logits differed (rounding in two
    differently fused programs)."""
    last = max([i for i, t in enumerate(ffi_row[:step]) if t in stop_ids], default=-1)
    prefix = ffi_row[last + 1:step]
    ours = allowed_ids("ffi", engines, kind, source, prefix, vocab_size)
    theirs = allowed_ids(v, engines, kind, source, prefix, vocab_size)
    out = {"step": step, "prefix_text": tok.decode(prefix)[-60:]}
    if ours is None or theirs is None:
        out["note"] = "a matcher rejected the common prefix"
        return out
    show = lambda ids: [[t, tok.decode([t], skip_special=False)] for t in sorted(ids)[:12]]  # noqa: E731
    out.update(masks_equal=ours == theirs, only_xg2jax=show(ours - theirs), only_peer=show(theirs - ours),
               n_only_xg2jax=len(ours - theirs), n_only_peer=len(theirs - ours))
    return out


def first_divergence(a: list[list[int]], b: list[list[int]]) -> list[int | None]:
    """Per row: the first step where two token streams differ (None: identical)."""
    out = []
    for ra, rb in zip(a, b):
        n = min(len(ra), len(rb))
        d = next((i for i in range(n) if ra[i] != rb[i]), None)
        out.append(d if d is not None or len(ra) == len(rb) else n)
    return out


# ----------------------------------------------------------------------------------------------------------------
# The run
# ----------------------------------------------------------------------------------------------------------------


def summarize_steps(ms: list[float]) -> dict:
    s = sorted(ms)
    q = lambda p: s[min(len(s) - 1, int(round(p * (len(s) - 1))))]  # noqa: E731
    return {"median_ms": statistics.median(s), "mean_ms": statistics.fmean(s), "p10_ms": q(0.1), "p90_ms": q(0.9),
            "min_ms": s[0], "max_ms": s[-1], "n": len(s)}


def warmup(ctx: Ctx, batch: int, variants, prompt, lengths) -> float:
    """Compile every jitted function of the chosen variants at this batch's shapes (no grammar engine involved)."""
    jax, jnp, xj, fns = ctx.fns.jax, ctx.fns.jnp, ctx.fns.xj, ctx.fns
    t0 = time.perf_counter()
    p, ln, pos = jnp.asarray(prompt), jnp.asarray(lengths), jnp.asarray(lengths)
    if "unconstrained" in variants:
        token, cache = fns.first_plain(ctx.params, p, ctx.new_cache(batch), ln)
        jax.block_until_ready(fns.step_plain(ctx.params, token, cache, pos))
    for path in JIT_VARIANTS:
        if path in variants:
            first, step = fns.grammar[path]
            with xj.GrammarState.create([None] * batch, vocab_size=ctx.vocab_size) as state:
                token, state2, cache = first(ctx.params, p, ctx.new_cache(batch), ln, state)
                jax.block_until_ready(step(ctx.params, token, token, state2, cache, pos))
                jax.block_until_ready(fns.mask_only[path](state2, token))
                jax.block_until_ready(fns.mask_empty(state2, token))
    if any(v in HOST_VARIANTS for v in variants):
        mask = jax.device_put(np.full((batch, ctx.words), -1, np.int32))
        token, cache = fns.first_host(ctx.params, p, ctx.new_cache(batch), ln, mask)
        jax.block_until_ready(fns.step_host(ctx.params, token, mask, cache, pos))
    return time.perf_counter() - t0


def make_runner(v: str, ctx: Ctx, batch: int, engines: dict, kind: str, source: str) -> tuple[Runner, float | None]:
    """A runner for variant ``v`` with its own freshly compiled grammar (compile ms, or None)."""
    if v == "unconstrained":
        return PlainRunner(v, ctx, batch), None
    if v in JIT_VARIANTS:
        compiled, ms = compile_grammar(engines["xg2jax"], kind, source)
        return JitGrammarRunner(v, ctx, batch, compiled), ms
    compiled, ms = compile_grammar(engines[v], kind, source)
    return HostRunner(v, ctx, batch, engines[v], compiled), ms


def dispatch_cost(ctx: Ctx, batch: int, calls: int = 40) -> dict:
    """Median µs of a jitted ``next_token_mask`` call from Python on rows without a grammar (no grammar work: the
    cost of dispatching an executable with the custom call / io_callback) against an empty jitted call with the
    same inputs and outputs, interleaved. The jitted-step variants pay this per step; ``constrained_sample`` once."""
    jax, jnp, xj = ctx.fns.jax, ctx.fns.jnp, ctx.fns.xj
    times = {"empty": [], **{p: [] for p in JIT_VARIANTS}}
    tok = jnp.full((batch,), -1, jnp.int32)
    with xj.GrammarState.create([None] * batch, vocab_size=ctx.vocab_size) as state:
        for i in range(calls + 2):
            for name in times:
                fn = ctx.fns.mask_empty if name == "empty" else ctx.fns.mask_only[name]
                t0 = time.perf_counter()
                jax.block_until_ready(fn(state, tok))
                if i >= 2:
                    times[name].append((time.perf_counter() - t0) * 1e6)
    return {k: statistics.median(v) for k, v in times.items()}


def run_workload(ctx: Ctx, args, wname: str, batch: int, variants, engines, tok, check_grammar, prompt, lengths,
                 progress: bool) -> dict:
    """TTFT (``args.ttft_repeats`` starts per variant, interleaved, each with a freshly compiled grammar; the last
    start's runners go on decoding), then ``args.steps`` timed steps per variant, interleaved."""
    w = WORKLOADS[wname]
    kind, source = w["kind"], w["source"]
    runners: dict[str, Runner] = {}
    compile_ms: dict[str, list] = {v: [] for v in variants}
    ttft: dict[str, list] = {v: [] for v in variants}
    ttft_parts: dict[str, list] = {v: [] for v in variants}
    failed_start: dict[str, list] = {}
    repeats = max(1, args.ttft_repeats)
    try:
        for rep in range(repeats):
            k = rep % len(variants)
            for v in variants[k:] + variants[:k]:
                runner, ms = make_runner(v, ctx, batch, engines, kind, source)
                compile_ms[v].append(ms)
                try:
                    ttft[v].append(runner.start(prompt, lengths))
                    ttft_parts[v].append(runner.ttft_parts)
                except Exception as exc:  # noqa: BLE001 - a variant that fails is reported, the others go on
                    runner.failed = True
                    failed_start.setdefault(v, []).append(f"start: {type(exc).__name__}: {exc}")
                    log.error("%s B=%d %s: start failed: %s", wname, batch, v, exc)
                if rep < repeats - 1:
                    runner.release()
                else:
                    runners[v] = runner
        for v, errs in failed_start.items():
            runners[v].errors += errs
            runners[v].failed = True
        runners = {v: runners[v] for v in variants}
        order = [v for v in variants if not runners[v].failed]
        rounds = math.ceil(args.steps / args.block)
        rng = np.random.default_rng(args.seed + batch * 1000 + sorted(WORKLOADS).index(wname))
        round_orders = []
        bar = tqdm(total=rounds * len(order) * args.block, desc=f"{wname} B={batch}", leave=False,
                   disable=not progress, unit="step")
        for rnd in range(rounds):
            n = min(args.block, args.steps - rnd * args.block)
            # A fresh random order every round: no variant always follows the same one (what ran just before a
            # step can change its time by a few percent on this machine).
            perm = [order[i] for i in rng.permutation(len(order))]
            round_orders.append(perm)
            for v in perm:
                runner = runners[v]
                if runner.failed:
                    continue
                for _ in range(n):
                    try:
                        runner.step()
                    except Exception as exc:  # noqa: BLE001
                        runner.failed = True
                        runner.errors.append(f"step {len(runner.step_ms)}: {type(exc).__name__}: {exc}")
                        log.error("%s B=%d %s: step failed: %s", wname, batch, v, exc)
                        break
                if hasattr(bar, "update"):
                    bar.update(n)
        if hasattr(bar, "close"):
            bar.close()
    finally:
        for runner in runners.values():
            runner.release()

    out = {"workload": wname, "batch": batch, "steps": args.steps, "round_orders": round_orders,
           "prompt_tokens": [int(x) for x in lengths], "variants": {}}
    streams = {v: [[int(t[r]) for t in r_.tokens] for r in range(batch)] for v, r_ in runners.items()}
    for v, runner in runners.items():
        row = {"label": LABELS[v], "failed": runner.failed, "errors": runner.errors, "restarts": runner.restarts,
               "restart_steps": runner.restart_steps,
               "tokens": streams[v],
               "ttft_ms": statistics.median(ttft[v]) if ttft[v] else None, "ttft_repeats_ms": ttft[v],
               "ttft_parts": ttft_parts[v], "compile_ms": compile_ms[v],
               "step_ms": runner.step_ms}
        if runner.step_ms:
            row.update(summarize_steps(runner.step_ms))
            row["tokens_per_s"] = batch / (row["median_ms"] / 1e3)
        row["check"] = check_outputs(wname, streams[v], tok, check_grammar, ctx.stop_ids, runner.constrained)
        if runner.constrained and not runner.failed and args.replay:
            try:  # twice on one freshly compiled grammar: cold (masks built on first visit, as in the run), warm
                compiled, _ = compile_grammar(engines["xg2jax" if v in JIT_VARIANTS else v], kind, source)
                for tag in ("cold", "warm"):
                    row[f"grammar_alone_{tag}"] = replay_grammar(ctx, v, batch, engines, compiled, runner.tokens)
            except Exception as exc:  # noqa: BLE001
                row["errors"].append(f"replay: {type(exc).__name__}: {exc}")
        if runner.constrained and "ffi" in streams and v != "ffi":
            row["first_divergence_vs_ffi"] = first_divergence(streams[v], streams["ffi"])
            row["divergence_explained"] = []
            for r, d in enumerate(row["first_divergence_vs_ffi"]):
                if d is not None and len(row["divergence_explained"]) < 3:
                    try:
                        ex = explain_divergence(v, engines, kind, source, streams["ffi"][r], d, tok, ctx.stop_ids,
                                                ctx.vocab_size)
                    except Exception as exc:  # noqa: BLE001
                        ex = {"step": d, "note": f"{type(exc).__name__}: {exc}"}
                    row["divergence_explained"].append(dict(ex, row=r))
        out["variants"][v] = row
    return out


def run_sample_view(ctx: Ctx, args, wname: str, batch: int, engines, tok, check_grammar, prompt, lengths,
                    ffi_streams=None) -> dict:
    """The whole ``constrained_sample`` loop (ffi, a freshly compiled grammar each time) against
    ``constrained_sample(grammar_state=None)``, ``args.sample_view_repeats`` times each, alternating the order."""
    jax, jnp, xj = ctx.fns.jax, ctx.fns.jnp, ctx.fns.xj
    w = WORKLOADS[wname]
    kw = dict(max_new_tokens=args.steps, max_threads=ctx.threads)
    p, ln = jnp.asarray(prompt), jnp.asarray(lengths)
    res = {"plain_wall_ms": [], "ffi_wall_ms": [], "prefill_ms": [], "repeats": args.sample_view_repeats}
    out_ffi = None
    for rep in range(args.sample_view_repeats):
        for mode in (("prefill", "plain", "ffi") if rep % 2 == 0 else ("ffi", "plain", "prefill")):
            cache = ctx.new_cache(batch)
            if mode == "prefill":  # the prefill alone (+ greedy sample), to subtract from the loops' wall time
                t0 = time.perf_counter()
                jax.block_until_ready(ctx.fns.first_plain(ctx.params, p, cache, ln))
                res["prefill_ms"].append((time.perf_counter() - t0) * 1e3)
                continue
            if mode == "plain":
                t0 = time.perf_counter()
                out = xj.constrained_sample(ctx.fns_step, ctx.params, cache, p, ln, None, **kw)
                jax.block_until_ready(out.tokens)
                res["plain_wall_ms"].append((time.perf_counter() - t0) * 1e3)
                res["plain_iterations"] = int(np.max(np.asarray(out.lengths)))
                continue
            compiled, _ = compile_grammar(engines["xg2jax"], w["kind"], w["source"])
            state = xj.GrammarState.create([compiled] * batch, vocab_size=ctx.vocab_size)
            try:
                t0 = time.perf_counter()
                out_ffi = xj.constrained_sample(ctx.fns_step, ctx.params, cache, p, ln, state, path="ffi", **kw)
                jax.block_until_ready(out_ffi.tokens)
                res["ffi_wall_ms"].append((time.perf_counter() - t0) * 1e3)
            finally:
                state.release()
    toks, lens, fin = np.asarray(out_ffi.tokens), np.asarray(out_ffi.lengths), np.asarray(out_ffi.finish_reason)
    res["ffi_iterations"] = int(lens.max())
    res["ffi_finish"] = [int(f) for f in fin]
    rows = [[int(t) for t in toks[r, :lens[r]]] for r in range(batch)]
    res["check"] = check_outputs(wname, rows, tok, check_grammar, ctx.stop_ids, True)
    if ffi_streams is not None:  # the same greedy decode as the jitted-step FFI variant, up to the first output's end
        res["same_tokens_as_ffi_variant"] = [row == s_[:len(row)] for row, s_ in zip(rows, ffi_streams)]
    return res


def finish_sample_view(res: dict) -> None:
    """Per-iteration times: (fastest wall time of the repeats - fastest prefill alone) / loop iterations."""
    pre = min(res["prefill_ms"]) if res.get("prefill_ms") else 0.0
    res["prefill_ms_subtracted"] = pre
    for k in ("plain", "ffi"):
        it = res.get(f"{k}_iterations") or 0
        walls = res.get(f"{k}_wall_ms") or []
        res[f"{k}_ms_per_iteration"] = (min(walls) - pre) / it if it and walls else None
    a, b = res.get("ffi_ms_per_iteration"), res.get("plain_ms_per_iteration")
    res["ffi_overhead_pct"] = 100.0 * (a / b - 1.0) if a and b else None


def sample_view_warmup(ctx: Ctx, args, batch: int, engines, prompt, lengths) -> float:
    """Compile constrained_sample at this batch's shapes: the plain loop (runs all its steps once) and the ffi loop
    with a grammar that ends after one character (two iterations)."""
    jax, jnp, xj = ctx.fns.jax, ctx.fns.jnp, ctx.fns.xj
    t0 = time.perf_counter()
    kw = dict(max_new_tokens=args.steps, max_threads=ctx.threads)
    p, ln = jnp.asarray(prompt), jnp.asarray(lengths)
    jax.block_until_ready(xj.constrained_sample(ctx.fns_step, ctx.params, ctx.new_cache(batch), p, ln, None,
                                                **kw).tokens)
    tiny, _ = compile_grammar(engines["xg2jax"], "regex", "a")
    with xj.GrammarState.create([tiny] * batch, vocab_size=ctx.vocab_size) as state:
        jax.block_until_ready(xj.constrained_sample(ctx.fns_step, ctx.params, ctx.new_cache(batch), p, ln, state,
                                                    path="ffi", **kw).tokens)
    return time.perf_counter() - t0


def run(args) -> dict:
    t_start = time.perf_counter()
    import jax

    import xg2jax
    import xg2jax.vocab_packages
    from xg2jax.models import gemma3

    progress = not args.no_progress
    meta = {
        "date": _dt.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join(["benchmarks/e2e_gemma.py"] + sys.argv[1:]),
        "python": platform.python_version(), "machine": platform.machine(), "nproc": os.cpu_count(),
        "jax": jax.__version__, "jax_backend": jax.default_backend(),
        "xg2jax": getattr(xg2jax, "__version__", "?"), "xg2jax_revision": workloads.xg2jax_revision(),
        "loadavg_start": list(os.getloadavg()), "steps": {str(b): args.steps_for[b] for b in args.batches},
        "block": args.block, "threads": args.threads,
        "ttft_repeats": {str(b): n for b, n in args.ttft_repeats_for.items()}, "batches": args.batches,
        "workloads": args.workloads,
        "variants": args.variants, "quick": args.quick,
        "model": "Gemma 3 270M (GGUF Q4_K_M weights dequantised to float32), xg2jax.models.gemma3",
        "sampling": "greedy",
        "json_options": "any_whitespace=False (compact, separators ', ' and ': '), properties in schema order",
    }
    log.info("loading Gemma 3 270M")
    t0 = time.perf_counter()
    config, params = gemma3.load_params(progress=progress)
    params = jax.device_put(params)
    tok = gemma3.Gemma3Tokenizer.from_gguf(xg2jax.vocab_packages.gemma3_gguf_path())
    step = gemma3.Gemma3Step(config)
    meta["model_load_s"] = time.perf_counter() - t0
    log.info("engine setup (xg2jax, xgrammar eager + JIT, llguidance) on the Gemma 3 vocabulary")
    vocab = workloads.load_vocab("gemma3")
    engines, setup_ms = make_engines(vocab)
    meta["engine_setup_ms"] = setup_ms
    meta["versions"] = {n: e.version for n, e in engines.items()}
    try:
        from importlib.metadata import version

        meta["versions"]["llguidance"] = version("llguidance")
    except Exception:  # noqa: BLE001
        pass
    stop_ids = sorted(vocab.stop_token_ids)
    meta["stop_token_ids"] = stop_ids

    prompts = {wn: [tok.encode(build_prompt(WORKLOADS[wn], x)) for x in WORKLOADS[wn]["inputs"]]
               for wn in args.workloads}
    longest = max(len(p) for ps in prompts.values() for p in ps)
    prompt_len = 32 * math.ceil(longest / 32)
    meta.update(prompt_len_bucket=prompt_len, cache_len={}, prompt_tokens={wn: [len(p) for p in ps]
                                                                          for wn, ps in prompts.items()})
    fns = Fns(step, args.threads)
    ctx = Ctx(params=params, config=config, fns=fns, gemma3=gemma3, prompt_len=prompt_len, cache_len=0,
              vocab_size=config.vocab_size, stop_ids=stop_ids, threads=args.threads)
    ctx.fns_step = step
    check_grammars = {}
    for wn in args.workloads:
        check_grammars[wn], _ = compile_grammar(engines["xg2jax"], WORKLOADS[wn]["kind"], WORKLOADS[wn]["source"])

    result = {"meta": meta, "runs": [], "sample_view": [], "timings_s": {"setup": time.perf_counter() - t_start}}
    for b in args.batches:
        steps = args.steps_for[b]
        bargs = argparse.Namespace(**{**vars(args), "steps": steps, "ttft_repeats": args.ttft_repeats_for[b]})
        ctx.cache_len = prompt_len + steps + 8
        meta["cache_len"][str(b)] = ctx.cache_len
        prompt, lengths = pad_prompts(prompts[args.workloads[0]], b, prompt_len)
        log.info("batch %d: compiling the jitted steps (%s)", b, ", ".join(args.variants))
        result["timings_s"][f"warmup_b{b}"] = warmup(ctx, b, args.variants, prompt, lengths)
        if any(v in JIT_VARIANTS for v in args.variants):
            result.setdefault("dispatch_us", {})[str(b)] = dispatch_cost(ctx, b)
        sv_workloads = [wn for wn in args.workloads if wn in args.sample_view_workloads]
        if sv_workloads:
            log.info("batch %d: compiling constrained_sample (the plain loop runs its %d steps once)", b, steps)
            result["timings_s"][f"sample_view_warmup_b{b}"] = sample_view_warmup(ctx, bargs, b, engines, prompt,
                                                                                 lengths)
        for wn in args.workloads:
            prompt, lengths = pad_prompts(prompts[wn], b, prompt_len)
            vs = args.variants_for[wn]
            log.info("%s, batch %d: %s; TTFT x%d, then %d steps each, interleaved in blocks of %d", wn, b,
                     ", ".join(vs), bargs.ttft_repeats, steps, args.block)
            t0 = time.perf_counter()
            res = run_workload(ctx, bargs, wn, b, vs, engines, tok, check_grammars[wn], prompt, lengths, progress)
            result["timings_s"][f"{wn}_b{b}"] = time.perf_counter() - t0
            result["runs"].append(res)
            log.info("  median ms/step: %s", "; ".join(
                f"{v} {r.get('median_ms', float('nan')):.1f}" for v, r in res["variants"].items()))
            if wn in sv_workloads:
                t0 = time.perf_counter()
                sv = run_sample_view(ctx, bargs, wn, b, engines, tok, check_grammars[wn], prompt, lengths,
                                     res["variants"].get("ffi", {}).get("tokens"))
                finish_sample_view(sv)
                sv.update(workload=wn, batch=b, max_new_tokens=steps)
                result["sample_view"].append(sv)
                result["timings_s"][f"sample_view_{wn}_b{b}"] = time.perf_counter() - t0
                log.info("  constrained_sample: plain %s ms/iteration, ffi %s ms/iteration (%d iterations)",
                         _f(sv["plain_ms_per_iteration"]), _f(sv["ffi_ms_per_iteration"]), sv["ffi_iterations"])
    meta["loadavg_end"] = list(os.getloadavg())
    result["timings_s"]["total"] = time.perf_counter() - t_start
    result["summary"] = summarize(result)
    return result


def pad_prompts(prompts: list[list[int]], batch: int, prompt_len: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``batch`` prompts (cycled if there are fewer), right-padded to ``prompt_len``."""
    rows = [prompts[i % len(prompts)] for i in range(batch)]
    out = np.zeros((batch, prompt_len), np.int32)
    for r, p in enumerate(rows):
        out[r, :len(p)] = p
    return out, np.asarray([len(p) for p in rows], np.int32)


# ----------------------------------------------------------------------------------------------------------------
# Summary, report, plot
# ----------------------------------------------------------------------------------------------------------------


def paired(a: list[float], b: list[float], seed: int = 0) -> dict:
    """Steps i of two variants ran in the same round, next to each other: the median of the per-round ratios
    a_i / b_i and of the differences a_i - b_i (ms), each with a bootstrap 95% interval of that median."""
    n = min(len(a), len(b))
    if n == 0:
        return {"ratio": None, "ratio_ci95": [None, None], "median_ms": None, "ci95_ms": [None, None], "n": 0}
    a_, b_ = np.asarray(a[:n], float), np.asarray(b[:n], float)
    idx = np.random.default_rng(seed).integers(0, n, size=(2000, n))
    out = {"n": n}
    for key, ci_key, x in (("ratio", "ratio_ci95", a_ / b_), ("median_ms", "ci95_ms", a_ - b_)):
        lo, hi = np.percentile(np.median(x[idx], axis=1), [2.5, 97.5])
        out[key], out[ci_key] = float(np.median(x)), [float(lo), float(hi)]
    return out


def summarize(result: dict) -> dict:
    """Overheads vs unconstrained (paired), FFI's speed-up over callback and each host loop, where xg2jax is slower,
    failed checks."""
    per_run, slower = [], []
    for run_ in result["runs"]:
        v = run_["variants"]
        base = v.get("unconstrained", {})
        for name, r in v.items():
            if name == "unconstrained" or not base.get("step_ms") or not r.get("step_ms"):
                continue
            pd = paired(r["step_ms"], base["step_ms"])
            r["overhead_paired"] = pd
            r["overhead_ms"] = pd["median_ms"]
            r["overhead_pct"] = 100.0 * (pd["ratio"] - 1.0)
            r["overhead_ci95_pct"] = [100.0 * (x - 1.0) for x in pd["ratio_ci95"]]
            r["overhead_pct_of_medians"] = 100.0 * (r["median_ms"] / base["median_ms"] - 1.0)
        entry = {"workload": run_["workload"], "batch": run_["batch"],
                 "ffi_overhead_pct": v.get("ffi", {}).get("overhead_pct"),
                 "ffi_overhead_ci95_pct": v.get("ffi", {}).get("overhead_ci95_pct"),
                 "ffi_overhead_ms": v.get("ffi", {}).get("overhead_ms"), "speedup_ffi_over": {},
                 "paired_other_minus_ffi": {}}
        ffi = v.get("ffi", {})
        for other in ("callback",) + HOST_VARIANTS:
            o = v.get(other, {})
            if not ffi.get("step_ms") or not o.get("step_ms"):
                continue
            pd = paired(o["step_ms"], ffi["step_ms"])
            entry["speedup_ffi_over"][other] = pd["ratio"]
            entry["paired_other_minus_ffi"][other] = pd
            if pd["ratio"] < 1.0:
                slower.append({"workload": run_["workload"], "batch": run_["batch"], "metric": "ms/step",
                               "xg2jax": "ffi", "peer": other, "xg2jax_value": ffi["median_ms"],
                               "peer_value": o["median_ms"], "paired": pd, "significant": pd["ratio_ci95"][1] < 1.0})
        cb = v.get("callback", {})
        for other in HOST_VARIANTS:
            o = v.get(other, {})
            if cb.get("step_ms") and o.get("step_ms"):
                pd = paired(o["step_ms"], cb["step_ms"])
                if pd["ratio"] < 1.0:
                    slower.append({"workload": run_["workload"], "batch": run_["batch"], "metric": "ms/step",
                                   "xg2jax": "callback", "peer": other, "xg2jax_value": cb["median_ms"],
                                   "peer_value": o["median_ms"], "paired": pd,
                                   "significant": pd["ratio_ci95"][1] < 1.0})
        for tag in ("cold", "warm"):
            label = f"grammar µs/step ({tag})"
            g_ours = _gmean(ffi, tag)
            for other in HOST_VARIANTS:
                g_o = _gmean(v.get(other, {}), tag)
                if g_ours is not None and g_o is not None and g_o < g_ours:
                    slower.append({"workload": run_["workload"], "batch": run_["batch"], "metric": label,
                                   "xg2jax": "ffi", "peer": other, "xg2jax_value": g_ours, "peer_value": g_o})
        for ours in JIT_VARIANTS:
            t_ours = v.get(ours, {}).get("ttft_ms")
            for other in HOST_VARIANTS:
                t_o = v.get(other, {}).get("ttft_ms")
                if t_ours and t_o and t_o < t_ours:
                    slower.append({"workload": run_["workload"], "batch": run_["batch"], "metric": "TTFT ms",
                                   "xg2jax": ours, "peer": other, "xg2jax_value": t_ours, "peer_value": t_o,
                                   "samples": len(v[ours].get("ttft_repeats_ms") or [])})
        per_run.append(entry)
    invalid = [{"workload": r["workload"], "batch": r["batch"], "variant": n, "failures": len(x["check"]["failures"]),
                "failed": bool(x.get("failed"))}
               for r in result["runs"] for n, x in r["variants"].items()
               if x["check"].get("failures") or x.get("failed")]
    for sv in result.get("sample_view", []):
        if sv["check"].get("failures"):
            invalid.append({"workload": sv["workload"], "batch": sv["batch"], "variant": "constrained_sample",
                            "failures": len(sv["check"]["failures"]), "failed": False})
    return {"per_run": per_run, "xg2jax_slower": slower, "invalid": invalid}


def _f(x, digits=1) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return f"{x:,.{digits}f}"


def _pct(x) -> str:
    return "—" if x is None else f"{x:+.1f}%"


def _valid_cell(check: dict, failed: bool) -> str:
    if failed:
        return "✗ variant failed"
    if "unconstrained_first_answer_valid" in check:
        return f"n/a (first answer passes: {check['unconstrained_first_answer_valid']}/{len(check['texts'])})"
    mark = "✓" if check.get("all_valid") else "✗"
    text = f"{mark} {check['valid_text']}/{check['complete']} complete"
    if check["valid_matcher"] != check["complete"]:
        text += f" (matcher {check['valid_matcher']}/{check['complete']})"
    if check["tails"]:
        text += f", tails {check['tails_ok']}/{check['tails']}"
        if check.get("tails_lines_checked"):
            text += f" (their finished lines {check['tails_lines_ok']}/{check['tails_lines_checked']})"
    return text


def _uncon_range(result: dict) -> dict:
    out = {}
    for b in sorted({r["batch"] for r in result["runs"]}):
        ms = [t for r in result["runs"] if r["batch"] == b
              for t in r["variants"].get("unconstrained", {}).get("step_ms", [])]
        if ms:
            out[b] = (float(np.percentile(ms, 10)), float(np.percentile(ms, 90)))
    return out


def _host_vs_loop(result: dict, sv: dict) -> str:
    """The fastest host loop's median step (Python-stepped) over the whole-loop FFI ms per iteration."""
    run_ = next((r for r in result["runs"] if r["workload"] == sv["workload"] and r["batch"] == sv["batch"]), None)
    hosts = [(run_["variants"][h]["median_ms"], h) for h in HOST_VARIANTS
             if run_ and run_["variants"].get(h, {}).get("median_ms")]
    if not hosts or not sv.get("ffi_ms_per_iteration"):
        return "—"
    best, name = min(hosts)
    return f"{best / sv['ffi_ms_per_iteration']:.2f}x ({SHORT[name]} {_f(best)})"


def _range(xs, digits: int, pct: bool = False) -> str:
    lo, hi = min(xs), max(xs)
    fmt = (lambda x: f"{x:+.{digits}f}%") if pct else (lambda x: _f(x, digits))
    return fmt(lo) if abs(hi - lo) < 10 ** -digits else f"{fmt(lo)} to {fmt(hi)}" if pct else f"{fmt(lo)}-{fmt(hi)}"


def _compile_cell(r: dict) -> str:
    ms = [x for x in r.get("compile_ms") or [] if x is not None]
    return _f(statistics.median(ms), 1) if ms else "—"


def _gmean(r: dict, tag: str):
    return (r.get(f"grammar_alone_{tag}") or {}).get("mean_us")


def _gcell(r: dict) -> str:
    if _gmean(r, "cold") is None:
        return "—"
    return f"{_f(_gmean(r, 'cold'), 0)} / {_f(_gmean(r, 'warm'), 0)}"


def _ci3(ci) -> str:
    if not ci or ci[0] is None:
        return ""
    return f" [{ci[0]:.3f}, {ci[1]:.3f}]"


def _ci(ci) -> str:
    if not ci or ci[0] is None:
        return ""
    return f" [{ci[0]:+.1f}, {ci[1]:+.1f}]"


def markdown(result: dict) -> str:
    m = result["meta"]
    s = result["summary"]
    load_end = (m.get("loadavg_end") or [None])[0]
    lines = [
        "# End-to-end constrained decoding on Gemma 3 270M (CPU)", "",
        f"`python {m['command']}` ({m['date']}; {m['nproc']} CPUs, {m['machine']}; jax {m['jax']} "
        f"({m['jax_backend']}); " + ", ".join(f"{k} {v}" for k, v in m.get("versions", {}).items()) + ").",
        "Gemma 3 270M, float32 weights dequantised from the Q4_K_M GGUF, greedy decoding, few-shot prompts "
        f"(padded to {m['prompt_len_bucket']} tokens). Timed steps per variant: "
        + ", ".join(f"{n} at batch {b}" for b, n in m["steps"].items())
        + ", the variants of one workload x batch interleaved "
        + ("step by step" if m["block"] == 1 else f"in blocks of {m['block']} steps")
        + " (a fresh random order every round); "
        f"grammar threads {m['threads']} for every engine. Load average {_f(m['loadavg_start'][0], 2)} at start, "
        f"{_f(load_end, 2)} at end (this run included; **other jobs may share the 2 CPUs**), so absolute times "
        f"drift (unconstrained steps, p10-p90: " + "; ".join(
            f"batch {b} {lo:.0f}-{hi:.0f} ms" for b, (lo, hi) in _uncon_range(result).items())
        + "); read the paired overheads and ratios within one workload x batch. Run time "
        f"{_f(result['timings_s'].get('total', 0) / 60, 1)} min.",
        "",
        "* ms/token = median time of one decode step (one token per row: mask + sample + grammar step + forward, "
        "or the host loop's accept + fill + device_put + jitted step + token to host); tokens/s = batch / that.",
        "* overhead = median over rounds of (this variant's step / the unconstrained step of the same round) - 1, "
        "with a bootstrap 95% interval in brackets (the rounds pair steps that ran within a second of each other, "
        "so load from other jobs mostly cancels).",
        "* TTFT = compiled grammar + prompt ids -> first sampled token on the host (grammar state / matchers, "
        "prompt transfer, prefill, first mask, sample); median of "
        + ", ".join(f"{n} start(s) at batch {b}" for b, n in m.get("ttft_repeats", {}).items())
        + ", each with a freshly compiled grammar; the prefill dominates it.",
        "* output valid = complete outputs (ended by a stop token) passing the independent check (json.loads + "
        "jsonschema / the program validator / re.fullmatch) and a fresh xg2jax matcher (incl. the stop token), "
        "and unfinished tails accepted as a prefix (ebnf: their finished statements also pass the validator, when "
        "checked). When a row's grammar finished, the row went on with a fresh matcher (restart outside the timed "
        "region), so each row can hold several outputs.",
        "",
        "* grammar µs/step = the variant's grammar work replayed alone on its own tokens after the run, without the "
        "model, mean over the steps: on a freshly compiled grammar (cold: masks that an engine builds lazily are "
        "built on first visit, as in the run) and again on the same grammar (warm). FFI / callback: "
        "`next_token_mask` inside one jitted loop per run of steps between restarts (as inside the model's step), "
        "minus a zero-step call's dispatch; host loops: accept + fill + `device_put` of the mask per step (all of it "
        "is in their loop). What the grammar itself adds per step, measured without the model's noise. compile ms "
        "= the variant's grammar compile (median over its TTFT starts; not part of TTFT).",
        "",
        "| workload | batch | variant | ms/token (median) | tokens/s | overhead vs unconstrained [95% CI] | "
        "TTFT ms | grammar µs/step, cold / warm | compile ms | output valid |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for run_ in result["runs"]:
        for name, r in run_["variants"].items():
            over = "(reference)" if name == "unconstrained" else _pct(r.get("overhead_pct")) + _ci(
                r.get("overhead_ci95_pct"))
            lines.append(
                f"| {run_['workload']} | {run_['batch']} | {LABELS[name]} | {_f(r.get('median_ms'))} | "
                f"{_f(r.get('tokens_per_s'), 2)} | {over} | {_f(r.get('ttft_ms'), 0)} | "
                f"{_gcell(r)} | {_compile_cell(r)} | "
                f"{_valid_cell(r['check'], r.get('failed'))} |")
    disp = result.get("dispatch_us") or {}
    if disp:
        lines += ["", "Calling a jitted function that contains the grammar step from Python costs more than the same "
                  "call without it (JAX dispatches an executable with a side-effecting custom call or io_callback on "
                  "its slower path). Median µs per call, `next_token_mask` on rows without a grammar (no grammar "
                  "work) vs an empty jitted call with the same inputs: " + "; ".join(
                      f"batch {b}: FFI {_f(d.get('ffi'), 0)}, callback {_f(d.get('callback'), 0)}, empty "
                      f"{_f(d.get('empty'), 0)}" for b, d in disp.items())
                  + ". The jitted-step variants below pay this once per step; `constrained_sample`'s while_loop "
                  "once per call."]
    lines += ["", "## Headline", ""]
    per_run = [e for e in s["per_run"] if e["ffi_overhead_pct"] is not None]
    by_batch: dict[int, list] = {}
    for e in per_run:
        by_batch.setdefault(e["batch"], []).append(e)
    for b, entries in sorted(by_batch.items()):
        parts = [f"{e['workload']} {_pct(e['ffi_overhead_pct'])}{_ci(e['ffi_overhead_ci95_pct'])} "
                 f"({e['ffi_overhead_ms']:+.2f} ms/step)" for e in entries]
        lines.append(f"* **Overhead of xg2jax FFI vs unconstrained decoding, batch {b}**: " + "; ".join(parts) + ".")
    if per_run:
        inside = all(e["ffi_overhead_ci95_pct"][0] <= 0 <= e["ffi_overhead_ci95_pct"][1] for e in per_run)
        worst = max(abs(x) for e in per_run for x in e["ffi_overhead_ci95_pct"])
        if inside:
            lines.append(f"  Every 95% interval contains 0: within this run's precision (|bound| <= {worst:.1f}%) the "
                         "FFI grammar step adds nothing measurable to a Gemma 3 270M decode step on this CPU.")
        else:
            lines.append("  Not every 95% interval contains 0 (see the table).")
    hosts = [h for h in ("callback",) + HOST_VARIANTS if any(h in e["speedup_ffi_over"] for e in per_run)]
    if hosts:
        lines += ["", "xg2jax FFI speed-up per step over each other variant: median over rounds of (other step / "
                      "FFI step) [95% CI]; > 1 = FFI faster.", "",
                  "| workload | batch | " + " | ".join(SHORT[h] for h in hosts) + " |",
                  "|---|---:|" + "---:|" * len(hosts)]
        for e in per_run:
            if not e["paired_other_minus_ffi"]:
                continue
            cells = []
            for h in hosts:
                pd = e["paired_other_minus_ffi"].get(h)
                cells.append("—" if not pd else f"{pd['ratio']:.3f}{_ci3(pd['ratio_ci95'])}")
            lines.append(f"| {e['workload']} | {e['batch']} | " + " | ".join(cells) + " |")
        lines.append("")
    grammar_rows = []
    for run_ in result["runs"]:
        v = run_["variants"]
        ffi_w, ffi_c = _gmean(v.get("ffi", {}), "warm"), _gmean(v.get("ffi", {}), "cold")
        peers_w = {h: _gmean(v.get(h, {}), "warm") for h in HOST_VARIANTS if _gmean(v.get(h, {}), "warm")}
        if ffi_w is not None and peers_w:
            grammar_rows.append((run_, ffi_w, ffi_c, peers_w))
    if grammar_rows:
        lo = min(min(p.values()) / max(fw, 1e-9) for _, fw, _, p in grammar_rows)
        hi = max(max(p.values()) / max(fw, 1e-9) for _, fw, _, p in grammar_rows)
        lines.append(f"* **Grammar work per step, replayed alone (warm)**: xg2jax FFI "
                     + _range([g[1] for g in grammar_rows], 0) + " µs vs the host loops' accept + fill + device_put "
                     + _range([x for *_, p in grammar_rows for x in p.values()], 0)
                     + f" µs ({_range([lo, hi], 0)}x more); "
                     "against a model step of tens to hundreds of ms on this CPU both are below the per-step noise, "
                     "which is why the end-to-end ratios above sit at ~1.0. The gap matters where the model step is "
                     "short (accelerators, smaller models).")
    if disp:
        lines.append("* **Dispatch**: a jitted step containing the FFI call costs "
                     + ", ".join(f"{_f(d['ffi'] - d['empty'], 0)} µs (batch {b})" for b, d in disp.items())
                     + " more to call from Python than one without it (io_callback: "
                     + ", ".join(f"{_f(d['callback'] - d['empty'], 0)} µs" for b, d in disp.items())
                     + "); `constrained_sample` pays it once per call, not per token.")
    svs = result.get("sample_view") or []
    ratios = []
    for sv in svs:
        txt = _host_vs_loop(result, sv)
        if txt != "—":
            ratios.append(float(txt.split("x")[0]))
    if ratios:
        over = [sv["ffi_overhead_pct"] for sv in svs if sv.get("ffi_overhead_pct") is not None]
        text = (f"* **Whole loop**: the fastest host loop's Python-stepped step / one iteration of "
                f"`constrained_sample` (FFI, one jitted while_loop): {_range(ratios, 2)}x (second table below)")
        if min(ratios) > 1:
            text += (". Most of that gain is the loop staying in one executable, which the plain loop "
                     "(`grammar_state=None`) gets too; a host-side engine rules it out")
        lines.append(text + f". The grammar's cost inside the loop, FFI vs plain while_loop: "
                     f"{_range(over, 1, pct=True)} (fastest of {svs[0].get('repeats', 1)} call(s) per mode: "
                     "indicative).")
    slow_ffi = [x for x in s["xg2jax_slower"] if x["metric"] == "ms/step" and x["xg2jax"] == "ffi"]
    slow_cb = [x for x in s["xg2jax_slower"] if x["metric"] == "ms/step" and x["xg2jax"] == "callback"]
    slow_ttft = [x for x in s["xg2jax_slower"] if x["metric"] == "TTFT ms"]
    slow_grammar = [x for x in s["xg2jax_slower"] if x["metric"].startswith("grammar")]
    lines += ["", "**Where xg2jax is slower than a peer in this run**:", ""]
    if not slow_ffi:
        lines.append("* FFI, per step: nowhere.")
    for x in slow_ffi:
        hi = x["paired"]["ratio_ci95"][1]
        sig = ("within the noise" if not x["significant"] else
               "at the edge of the noise (interval just below 1)" if hi > 0.995 else "outside the noise")
        lines.append(f"* FFI per step, {x['workload']} batch {x['batch']}: {SHORT[x['peer']]} / FFI = "
                     f"{x['paired']['ratio']:.3f}{_ci3(x['paired']['ratio_ci95'])} "
                     f"({x['paired']['median_ms']:+.2f} ms per step), {sig}.")
    if slow_cb:
        rs = [x["paired"]["ratio"] for x in slow_cb]
        cb_over = [r["variants"]["callback"]["overhead_pct"] for r in result["runs"]
                   if r["variants"].get("callback", {}).get("overhead_pct") is not None]
        n_runs = len({(x["workload"], x["batch"]) for x in slow_cb})
        lines.append(f"* io_callback per step: slower than host loops on {n_runs} of {len(per_run)} workload x batch "
                     f"rows ({len(slow_cb)} comparisons; peer / callback {min(rs):.3f}-{max(rs):.3f}). Its step costs "
                     "far more than the callback's own time (grammar µs/step and dispatch above): the io_callback "
                     f"inside the model's executable slows the whole step ({min(cb_over):+.1f}% to "
                     f"{max(cb_over):+.1f}% "
                     "over unconstrained here). Use the FFI path.")
    for x in slow_grammar:
        lines.append(f"* {x['metric']}, replayed alone, {x['workload']} batch {x['batch']}: FFI "
                     f"{_f(x['xg2jax_value'], 0)} µs vs {SHORT[x['peer']]} {_f(x['peer_value'], 0)} µs.")
    if slow_ttft:
        gaps = []  # per workload x batch where the FFI TTFT is above the fastest host loop's
        for run_ in result["runs"]:
            v = run_["variants"]
            t = v.get("ffi", {}).get("ttft_ms")
            hs = [v[h]["ttft_ms"] for h in HOST_VARIANTS if v.get(h, {}).get("ttft_ms")]
            if t and hs and t > min(hs):
                gaps.append((t - min(hs), 100 * (t / min(hs) - 1), run_["workload"], run_["batch"]))
        spreads = [max(r["ttft_repeats_ms"]) - min(r["ttft_repeats_ms"]) for run_ in result["runs"]
                   for r in run_["variants"].values() if len(r.get("ttft_repeats_ms") or []) > 1]
        setup = [sum(p.values()) for run_ in result["runs"] for r in run_["variants"].values()
                 for p in (r.get("ttft_parts") or [])]
        cb_rows = {(x["workload"], x["batch"]) for x in slow_ttft if x["xg2jax"] == "callback"}
        text = (f"* TTFT: xg2jax FFI above the fastest host loop on {len(gaps)} of {len(per_run)} workload x batch "
                f"rows" + (f" (by up to {max(g[0] for g in gaps):.0f} ms, {max(g[1] for g in gaps):.1f}%, "
                           f"{max(gaps)[2]} batch {max(gaps)[3]})" if gaps else "")
                + f"; io_callback on {len(cb_rows)}."
                " TTFT is one prefill plus a small grammar set-up (state / matcher creation + first host fill: "
                f"at most {max(setup):.1f} ms in any start here; xg2jax's first mask runs inside the jitted prefill "
                "call)")
        if spreads:
            text += (f", and one variant's own starts spread by {min(spreads):.0f}-{max(spreads):.0f} ms where "
                     "repeated (batch 8: a single start)")
        cold = [_gmean(r_["variants"].get("ffi", {}), "cold") for r_ in result["runs"]]
        cold = [c for c in cold if c is not None]
        lines.append(text + ": most likely prefill noise rather than grammar cost" + (
            f" (xg2jax's cold replays average at most {max(cold) / 1e3:.2f} ms of grammar work per step)" if cold
            else "") + ".")
    lines += ["", "Correctness: " + ("every constrained output of every variant passed its checks."
                                     if not s["invalid"] else "**FAILURES**: " + "; ".join(
        f"{x['workload']} B={x['batch']} {x['variant']} ({x['failures']} outputs"
        f"{', variant failed' if x['failed'] else ''})" for x in s["invalid"]))]
    diverged = []
    for run_ in result["runs"]:
        for name, r in run_["variants"].items():
            d = r.get("first_divergence_vs_ffi")
            if d and any(x is not None for x in d):
                diverged.append(f"{run_['workload']} B={run_['batch']} {SHORT[name]}: "
                                + ", ".join(f"row {i} from step {x}" for i, x in enumerate(d) if x is not None))
    lines.append("Greedy token streams identical to xg2jax FFI's: " + (
        "every constrained variant, every row." if not diverged else "all except " + "; ".join(diverged) + "."))
    for run_ in result["runs"]:
        for name, r in run_["variants"].items():
            for ex in r.get("divergence_explained") or []:
                if "masks_equal" not in ex:
                    why = ex.get("note", "?")
                elif ex["masks_equal"]:
                    why = "both engines allow the same tokens there: the logits differed (rounding)"
                else:
                    fmt = lambda xs: ", ".join(repr(t) for _, t in xs)  # noqa: E731
                    where = f"after {ex['prefix_text']!r}" if ex["prefix_text"] else "at the start of an output"
                    why = (f"the masks differ {where}: only xg2jax allows "
                           f"{ex['n_only_xg2jax']} token(s) [{fmt(ex['only_xg2jax'])}], only {SHORT[name]} allows "
                           f"{ex['n_only_peer']} [{fmt(ex['only_peer'])}]")
                lines.append(f"  * {run_['workload']} B={run_['batch']} {SHORT[name]}, row {ex['row']}, step "
                             f"{ex['step']}: {why}.")
    restarts = [f"{r['workload']} B={r['batch']}: {r['variants']['ffi']['restarts']}" for r in result["runs"]
                if "ffi" in r["variants"]]
    if restarts:
        lines.append("Row restarts (outputs finished, FFI variant): " + ", ".join(restarts) + ".")
    if result.get("sample_view"):
        lines += ["", "## Second view: the whole `constrained_sample` loop (one jitted while_loop, path=\"ffi\")", "",
                  "`max_new_tokens` = the step count above; each mode called "
                  + ", ".join(f"{n}x" for n in sorted({sv.get('repeats', 1) for sv in result['sample_view']}))
                  + " (alternating order, next to a call of the prefill alone; the fastest of each counts). ms per "
                  "loop iteration = (wall time - the prefill) / iterations. The constrained "
                  "loop ends when every row's grammar has finished (finished rows pad); the plain loop "
                  "(`grammar_state=None`, no stop tokens) runs all iterations. The grammar is compiled fresh for "
                  "each call: its masks are built during the call (`constrained_sample` prefetches the first ones "
                  "during the prefill). Few whole-loop calls on a shared machine: indicative only; the paired table "
                  "above is the precise comparison. \"same tokens\" = the rows' tokens equal the jitted-step FFI "
                  "variant's up to the first output's end (same greedy decode).", "",
                  "| workload | batch | plain ms/iter | FFI ms/iter | FFI overhead | fastest host loop ms/step "
                  "(table above) / FFI ms/iter | iterations (FFI / plain) | same tokens | output valid |",
                  "|---|---:|---:|---:|---:|---:|---|---|---|"]
        for sv in result["sample_view"]:
            same = sv.get("same_tokens_as_ffi_variant")
            same_txt = "—" if same is None else f"{sum(same)}/{len(same)} rows"
            lines.append(f"| {sv['workload']} | {sv['batch']} | {_f(sv['plain_ms_per_iteration'])} | "
                         f"{_f(sv['ffi_ms_per_iteration'])} | {_pct(sv['ffi_overhead_pct'])} | "
                         f"{_host_vs_loop(result, sv)} | "
                         f"{sv['ffi_iterations']} / {sv['plain_iterations']} | {same_txt} | "
                         f"{_valid_cell(sv['check'], False)} |")
    lines += ["", "Phase times (s): " + ", ".join(f"{k} {_f(v, 0)}" for k, v in result["timings_s"].items()), ""]
    return "\n".join(lines)


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    batches = sorted({r["batch"] for r in result["runs"]})
    fig, axes = plt.subplots(1, len(batches), figsize=(max(9.0, 6.5 * len(batches)), 5.2), squeeze=False)
    for ax, b in zip(axes[0], batches):
        runs = [r for r in result["runs"] if r["batch"] == b]
        names = [v for v in VARIANTS if any(v in r["variants"] for r in runs)]
        width = 0.84 / max(1, len(names))
        for k, name in enumerate(names):
            xs = np.arange(len(runs)) + (k - (len(names) - 1) / 2) * width
            vals = [r["variants"].get(name, {}).get("median_ms") or 0.0 for r in runs]
            bars = ax.bar(xs, vals, width, label=LABELS[name], color=COLORS[name], edgecolor="white",
                          hatch="//" if name == "unconstrained" else None)
            for bar, r in zip(bars, runs):
                pct = r["variants"].get(name, {}).get("overhead_pct")
                if pct is not None and name != "unconstrained":
                    ax.annotate(f"{pct:+.1f}%", (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center",
                                va="bottom", fontsize=6, rotation=90)
        svs = {(x["workload"], x["batch"]): x for x in result.get("sample_view", [])}
        for i, r in enumerate(runs):
            base = r["variants"].get("unconstrained", {}).get("median_ms")
            if base:
                ax.hlines(base, i - 0.45, i + 0.45, colors="k", linestyles=":", linewidth=1)
            sv = svs.get((r["workload"], b))
            if sv and sv.get("ffi_ms_per_iteration") and sv.get("plain_ms_per_iteration"):
                ax.plot([i + 0.47], [sv["plain_ms_per_iteration"]], marker="o", mfc="none", mec="k", ms=6, ls="none",
                        label="constrained_sample, grammar_state=None (ms/iteration)" if i == 0 else None)
                ax.plot([i + 0.47], [sv["ffi_ms_per_iteration"]], marker="*", color="#d62728", mec="k", ms=9, ls="none",
                        label="constrained_sample, xg2jax FFI (ms/iteration)" if i == 0 else None)
        ax.set_xticks(np.arange(len(runs)))
        ax.set_xticklabels([r["workload"] for r in runs])
        ax.set_ylabel("median ms per decode step (one token per row)")
        ax.set_title(f"batch {b}")
        ax.grid(axis="y", alpha=0.3)
        top = max((v.get("median_ms") or 0) for r in runs for v in r["variants"].values())
        ax.set_ylim(0, top * 1.18 if top else 1)
    seen = {}
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    fig.legend(list(seen.values()), list(seen.keys()), loc="lower center", ncol=3, fontsize=7)
    m = result["meta"]
    fig.suptitle(f"Gemma 3 270M greedy decoding, {m['nproc']} shared CPUs\nbars: median ms per step called from "
                 f"Python (% = paired overhead vs unconstrained, dotted); markers: whole jitted constrained_sample "
                 f"loop, ms/iteration", fontsize=9)
    fig.tight_layout(rect=(0, 0.12, 1, 0.93))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_outputs(result: dict, out: Path, md: Path, png: Path, write_json: bool = True) -> None:
    if write_json:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1, ensure_ascii=False))
    text = markdown(result)
    md.parent.mkdir(parents=True, exist_ok=True)
    md.write_text(text)
    plot(result, png)
    print(text)


def _list(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="smoke run (~2 min): batch 1, 24 steps; json with every variant, ebnf and regex with "
                         "unconstrained + xg2jax FFI; constrained_sample view on json; writes "
                         "results/e2e_gemma_quick.*")
    ap.add_argument("--batches", default=None, help="comma list (default 1,8; 1 with --quick)")
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help="comma list of " + ", ".join(WORKLOADS))
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma list of " + ", ".join(VARIANTS))
    ap.add_argument("--steps", type=int, default=None,
                    help="timed decode steps per variant (default 192 at batch 1 and 96 at batch 8, see "
                         "--steps-large; 24 with --quick)")
    ap.add_argument("--steps-large", type=int, default=None,
                    help="steps at batch > 1 (default 96: a batch-8 step is ~3x a batch-1 step here)")
    ap.add_argument("--block", type=int, default=1,
                    help="steps per variant before switching to the next (default 1: every round runs one step of "
                         "each variant, so each step has a same-round unconstrained step to be paired with)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the per-round random variant order")
    ap.add_argument("--ttft-repeats", default=None,
                    help="starts per variant for the TTFT median, as BATCH:N,... (default 1:3,8:1 - a batch-8 "
                         "prefill of ~350 tokens takes seconds here; 1 everywhere with --quick)")
    ap.add_argument("--threads", type=int, default=1,
                    help="grammar threads for every engine (xg2jax max_threads, xgrammar BatchGrammarMatcher, "
                         "llguidance LLExecutor); default 1 as in the other benchmarks")
    ap.add_argument("--sample-view", default=None,
                    help="workloads for the constrained_sample view (default all; json with --quick; 'none' = off)")
    ap.add_argument("--no-replay", dest="replay", action="store_false",
                    help="skip the replay of each constrained variant's tokens through its grammar engine alone "
                         "(the grammar work per step without the model)")
    ap.add_argument("--sample-view-repeats", type=int, default=None,
                    help="constrained_sample calls per mode, alternating (default 2; 1 with --quick); the fastest "
                         "counts")
    ap.add_argument("--out", default=None, help="JSON path (default results/e2e_gemma.json or _quick)")
    ap.add_argument("--md", default=None, help="markdown path (default: --out with .md)")
    ap.add_argument("--plot", default=None, help="PNG path (default: --out with .png)")
    ap.add_argument("--report", action="store_true", help="only regenerate md + png from the JSON (--out)")
    ap.add_argument("--from-json", default=None, metavar="PATH", help="same as --report --out PATH")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")

    default_name = "e2e_gemma_quick" if args.quick else "e2e_gemma"
    if args.from_json:
        args.out, args.report = args.from_json, True
    out = Path(args.out) if args.out else RESULTS / f"{default_name}.json"
    md = Path(args.md) if args.md else out.with_suffix(".md")
    png = Path(args.plot) if args.plot else out.with_suffix(".png")
    if args.report:
        result = json.loads(out.read_text())
        result["summary"] = summarize(result)
        write_outputs(result, out, md, png, write_json=False)
        return 0

    args.workloads = _list(args.workloads)
    args.variants = [v for v in VARIANTS if v in _list(args.variants)]
    unknown = set(args.workloads) - set(WORKLOADS)
    if unknown:
        raise SystemExit(f"unknown workloads: {sorted(unknown)}")
    args.batches = [int(x) for x in _list(args.batches)] if args.batches else ([1] if args.quick else [1, 8])
    steps_small = args.steps or (24 if args.quick else 192)
    steps_large = args.steps_large or args.steps or (24 if args.quick else 96)
    args.steps_for = {b: steps_small if b == 1 else steps_large for b in args.batches}
    reps = dict(x.split(":") for x in _list(args.ttft_repeats)) if args.ttft_repeats else {}
    args.ttft_repeats_for = {b: int(reps.get(str(b), 1 if args.quick or b > 1 else 3)) for b in args.batches}
    args.variants_for = {wn: list(args.variants) for wn in args.workloads}
    if args.quick and args.variants == list(VARIANTS):
        for wn in args.workloads[1:]:
            args.variants_for[wn] = ["unconstrained", "ffi"]
    args.sample_view_repeats = args.sample_view_repeats or (1 if args.quick else 2)
    sv = args.sample_view or ("json" if args.quick else ",".join(args.workloads))
    args.sample_view_workloads = [] if sv == "none" else _list(sv)
    result = run(args)
    write_outputs(result, out, md, png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
