#!/usr/bin/env python3
"""Soak test: a long-running serving process stays flat in memory.

One process serves thousands of seeded, mixed requests through the whole public API and samples its resident memory
and the compiler's cache over time. After a warm-up (allocator arenas, JAX's jit compile, the first mask entries of
each grammar family) both must stay flat: a leak anywhere in compile / matcher / rollback / fork / batch fill / JAX
handle registry / error paths shows up as a steady climb.

Request mix (weights: ``--mix``), each with its own random source unless reused (``--reuse``: a source seen among the
last 64 of the same kind, so the grammar-level cache hits):

* ``schema``: a generated JSON Schema (objects with random property names, required subsets, closed or open,
  enums, consts, arrays with min/max items, nested objects, strings with ``pattern`` / lengths / formats, integers
  with bounds, numbers, booleans, nulls, ``anyOf``), compiled with random ``any_whitespace`` / separators;
* ``ebnf``: a generated EBNF grammar from one of several families (lists, key=value lines, arithmetic, commands,
  counted repetitions), with random literals and rule names;
* ``regex``: a generated regular expression (words, classes, counted repetitions, alternations, optional groups);
* ``json``: the builtin JSON grammar;
* ``hostile`` (must raise ``ValueError``; counted): EBNF groups nested past ``Limits.max_nesting_depth``, the
  ambiguous ``root ::= root root | "a" | ...`` fed ``a`` tokens until ``Limits.max_work_per_byte`` trips (then the
  sticky error on fill, ``reset()``, one more token), unsupported regexes (lookaround, backreferences), broken EBNF,
  broken schemas (dangling ``$ref``, unknown type, invalid JSON).

Each non-hostile request compiles its source (a few eagerly, ``precompute_masks=True``), then either

* host path: 1-4 ``GrammarMatcher`` (random ``max_rollback_tokens``) walk up to ``--max-steps`` steps, picking a
  random allowed token from the mask each step (stop tokens taken with some probability once allowed), so every
  path is valid; several matchers use ``batch_fill_next_token_bitmask``. Sometimes the request is cancelled
  mid-walk (the matchers are dropped), sometimes it rolls back k tokens, resets, forks a matcher and walks the fork,
  asks ``find_jump_forward_string``; or
* JAX path (``--jax-fraction``): ``xg2jax.jax.GrammarState.create`` for a fixed batch of 4 rows (the grammar, a
  matcher copy, unconstrained rows), ``jax.jit(next_token_mask)`` steps picking tokens from the device mask, a host
  snapshot now and then, cancelled sometimes, always released (context manager or ``release()``).

Every accepted token was allowed by the mask; a rejected one (or an empty mask) is counted as a disagreement.

Phases (one compiler each, ``Limits(max_work_per_byte=100000)``):

1. ``unlimited``: ``cache_limit_bytes=-1``, ``clear_cache()`` every ``--clear-every`` requests;
2. ``limited``: ``cache_limit_bytes=--cache-limit-mb``, never cleared: ``get_cache_size_bytes()`` must stay within
   the budget (grammars get half, mask entries a quarter, the interned rule structures and rule automata,
   ``cache_info()["structure_bytes"]``, an eighth each: ``cpp/compiler/grammar_compiler.h``); the three parts are
   sampled and plotted apart, so each one's growth shows on its own.

Every ``--sample-every`` requests (and just before / after each clear) after a ``gc.collect()``: RSS
(``psutil`` or ``/proc/self/statm``), glibc heap in use (``mallinfo2``: ``uordblks + hblkhd``; unlike RSS it drops
when memory is freed, so a leak shows as a rising floor after each ``clear_cache()``), Python's allocated blocks,
the cache bytes (total and per part), live JAX grammar handles. Flatness = least-squares slope of RSS (and heap)
over the samples after each phase's warm-up (the first ``--warmup-fraction`` of the phase), in MB per 1000 requests.

Output: a markdown table on stdout and in benchmarks/results/soak.md, benchmarks/results/soak.json (every sample and
counter) and benchmarks/results/soak.png (RSS and cache bytes vs requests, clears marked).
"""

from __future__ import annotations

import argparse
import ctypes
import datetime as _dt
import gc
import json
import logging
import os
import platform
import random
import string
import sys
import time
from collections import Counter, deque
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import numpy as np  # noqa: E402

try:
    from tqdm import tqdm
except ImportError:  # pragma: no cover
    def tqdm(it=None, **_kw):
        return it

log = logging.getLogger("soak")

KINDS = ("schema", "ebnf", "regex", "json", "hostile")
DEFAULT_MIX = "schema=0.38,ebnf=0.2,regex=0.2,json=0.1,hostile=0.12"
JAX_BATCH = 4
FLAT_MB_PER_1000 = 2.0  # the markdown's verdict: |slope| of RSS and heap after warm-up below this
TERMINATED = 4  # xg2jax.jax.StepStatus.TERMINATED


# ----------------------------------------------------------------------------------------------------------------
# Memory probes
# ----------------------------------------------------------------------------------------------------------------

_PAGE = os.sysconf("SC_PAGE_SIZE")
try:
    import psutil

    _PROC = psutil.Process()

    def rss_bytes() -> int:
        return int(_PROC.memory_info().rss)

    RSS_SOURCE = "psutil"
except ImportError:  # pragma: no cover
    def rss_bytes() -> int:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * _PAGE

    RSS_SOURCE = "/proc/self/statm"


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                               "fsmblks", "uordblks", "fordblks", "keepcost")]


try:
    _mallinfo2 = ctypes.CDLL(None).mallinfo2
    _mallinfo2.restype = _Mallinfo2
    _mallinfo2.argtypes = []
except (AttributeError, OSError):  # pragma: no cover (not glibc >= 2.33)
    _mallinfo2 = None


def heap_in_use_bytes() -> int | None:
    """glibc: bytes handed out by malloc and not freed (all arenas, plus mmapped chunks)."""
    if _mallinfo2 is None:
        return None
    mi = _mallinfo2()
    return int(mi.uordblks + mi.hblkhd)


def revision() -> str | None:
    """``$XG2JAX_REVISION``, or the commit in the checkout's .git (read as files: no git process)."""
    if os.environ.get("XG2JAX_REVISION"):
        return os.environ["XG2JAX_REVISION"]
    try:
        git = HERE.parent / ".git"
        if git.is_file():
            git = (git.parent / git.read_text().split(":", 1)[1].strip()).resolve()
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head[:7]
        ref = head.split(None, 1)[1]
        common = git
        if (git / "commondir").exists():
            common = (git / (git / "commondir").read_text().strip()).resolve()
        for base in (git, common):
            if (base / ref).exists():
                return (base / ref).read_text().strip()[:7]
        packed = common / "packed-refs"
        if packed.exists():
            for line in packed.read_text().splitlines():
                if line.endswith(" " + ref):
                    return line[:7]
    except Exception:
        pass
    return None


# ----------------------------------------------------------------------------------------------------------------
# Request sources
# ----------------------------------------------------------------------------------------------------------------

WORDS = ("alpha", "beta", "gamma", "delta", "omega", "red", "green", "blue", "north", "south", "east", "west", "open",
         "close", "take", "drop", "move", "look", "cat", "dog", "fish", "tree", "rock", "wind", "fire", "ice", "x",
         "yes", "no", "maybe", "start", "stop", "left", "right", "up", "down", "zero", "one", "two", "three")
FORMATS = ("date-time", "date", "time", "email", "uuid", "ipv4", "uri")


class Gen:
    """Seeded random grammars of every kind."""

    def __init__(self, rng: random.Random):
        self.r = rng

    def name(self, lo=3, hi=10) -> str:
        r = self.r
        s = r.choice(string.ascii_lowercase) + "".join(
            r.choice(string.ascii_lowercase + string.digits + "_") for _ in range(r.randint(lo, hi) - 1))
        return s

    def word(self) -> str:
        return self.r.choice(WORDS) + (str(self.r.randint(0, 99)) if self.r.random() < 0.3 else "")

    # -- JSON Schema --------------------------------------------------------------------------------------------
    def schema(self, depth: int = 0) -> dict:
        r = self.r
        if depth == 0:
            return self.obj(depth)
        kinds = ["string", "integer", "number", "boolean", "enum", "const", "null", "pattern", "array", "anyof"]
        weights = [5, 3, 1, 1, 2, 1, 0.5, 1.5, 1.5, 0.7]
        if depth < 3:
            kinds.append("object")
            weights.append(1.5)
        k = r.choices(kinds, weights)[0]
        if k == "object":
            return self.obj(depth)
        if k == "string":
            s: dict = {"type": "string"}
            if r.random() < 0.3:
                s["maxLength"] = r.randint(1, 24)
                if r.random() < 0.5:
                    s["minLength"] = r.randint(0, s["maxLength"])
            elif r.random() < 0.15:
                s["format"] = r.choice(FORMATS)
            return s
        if k == "integer":
            s = {"type": "integer"}
            if r.random() < 0.5:
                lo = r.randint(-1000, 1000)
                s["minimum"] = lo
                if r.random() < 0.7:
                    s["maximum"] = lo + r.randint(0, 5000)
            return s
        if k == "number":
            return {"type": "number"}
        if k == "boolean":
            return {"type": "boolean"}
        if k == "null":
            return {"type": "null"}
        if k == "enum":
            vals = list({self.word() for _ in range(r.randint(1, 6))})
            if r.random() < 0.3:
                vals.append(r.randint(-50, 50))
            return {"enum": vals}
        if k == "const":
            return {"const": r.choice([self.word(), r.randint(0, 9), True, None])}
        if k == "pattern":
            return {"type": "string", "pattern": "^" + self.regex(simple=True) + "$"}
        if k == "array":
            s = {"type": "array", "items": self.schema(depth + 1)}
            if r.random() < 0.5:
                s["minItems"] = r.randint(0, 2)
            if r.random() < 0.5:
                s["maxItems"] = s.get("minItems", 0) + r.randint(0, 4)
            return s
        return {"anyOf": [self.schema(depth + 1) for _ in range(r.randint(2, 3))]}

    def obj(self, depth: int) -> dict:
        r = self.r
        props = {}
        for _ in range(r.randint(1, 7 if depth == 0 else 4)):
            props[self.name()] = self.schema(depth + 1)
        s = {"type": "object", "properties": props}
        req = [p for p in props if r.random() < 0.6]
        if req:
            s["required"] = req
        if r.random() < 0.75:
            s["additionalProperties"] = False
        return s

    def schema_source(self) -> tuple:
        r = self.r
        opts = {"any_whitespace": r.random() < 0.3}
        if not opts["any_whitespace"] and r.random() < 0.5:
            opts["separators"] = (",", ":")
        as_text = r.random() < 0.5
        s = self.schema()
        return ("schema", json.dumps(s) if as_text else s, tuple(sorted(opts.items())))

    # -- EBNF ---------------------------------------------------------------------------------------------------
    def ebnf(self) -> str:
        r = self.r
        fam = r.randrange(5)
        a, b, c = (f"{p}_{self.name(3, 7)}" for p in ("ra", "rb", "rc"))  # distinct, never "root"
        lits = list({self.word() for _ in range(r.randint(2, 6))})
        alt = " | ".join(json.dumps(w) for w in lits)
        if fam == 0:  # a list
            return (f'root ::= "[" {a} ("," " "? {a})* "]"\n'
                    f'{a} ::= {b} | [0-9]+ | "\\"" [a-z]+ "\\""\n'
                    f'{b} ::= {alt}\n')
        if fam == 1:  # key = value lines
            return (f"root ::= {a}+\n"
                    f'{a} ::= {b} " = " {c} "\\n"\n'
                    f"{b} ::= {alt}\n"
                    f'{c} ::= [0-9]+ | "\\"" [^"\\n]* "\\"" | "true" | "false"\n')
        if fam == 2:  # arithmetic
            return (f"root ::= {a}\n"
                    f'{a} ::= {b} (("+" | "-") {b})*\n'
                    f'{b} ::= {c} (("*" | "/") {c})*\n'
                    f'{c} ::= [0-9]+ | "(" {a} ")" | {alt}\n')
        if fam == 3:  # commands
            lo = r.randint(0, 2)
            return (f'root ::= {a} (";" " "? {a}){{{lo},{lo + r.randint(1, 4)}}}\n'
                    f'{a} ::= {b} " " {c}\n'
                    f"{b} ::= {alt}\n"
                    f"{c} ::= [a-z]+ | [A-Z][a-z]* | [0-9]{{1,3}}\n")
        n = r.randint(1, 4)  # counted repetitions
        return (f'root ::= [a-z]{{{n},{n + r.randint(0, 5)}}} "-" [0-9]{{{r.randint(1, 4)}}} ({a})?\n'
                f'{a} ::= "." ({alt}) | "#" [A-F0-9]{{2,6}}\n')

    # -- regex --------------------------------------------------------------------------------------------------
    def regex(self, simple: bool = False) -> str:
        r = self.r
        pieces = []
        for _ in range(r.randint(1, 3 if simple else 5)):
            k = r.randrange(8)
            if k == 0:
                pieces.append(self.word())
            elif k == 1:
                lo = r.randint(0, 3)
                pieces.append(f"[a-z]{{{lo},{lo + r.randint(1, 6)}}}")
            elif k == 2:
                pieces.append(f"\\d{{1,{r.randint(1, 5)}}}")
            elif k == 3:
                pieces.append("(" + "|".join(sorted({self.word() for _ in range(r.randint(2, 4))})) + ")")
            elif k == 4:
                pieces.append("[A-Z][a-z]*")
            elif k == 5:
                pieces.append("-?\\d+(\\.\\d+)?")
            elif k == 6:
                pieces.append("[a-z0-9._]+@[a-z]+\\.(com|org|net)")
            else:
                pieces.append("(" + self.word() + "[0-9a-f]{2})?")
        sep = r.choice(["", "-", " ", "_", ":", "/"])
        return sep.join(pieces)

    # -- hostile ------------------------------------------------------------------------------------------------
    def hostile(self) -> tuple:
        r = self.r
        k = r.choices(["nested_ebnf", "ambiguous_work", "bad_regex", "bad_ebnf", "bad_schema"], [2, 2, 1, 1, 1])[0]
        if k == "nested_ebnf":
            d = r.randint(1_100, 4_000)
            return (k, "root ::= " + "(" * d + json.dumps(self.word()) + ")" * d)
        if k == "ambiguous_work":
            return (k, f'root ::= root root | "a" | "{r.choice("bcdefg")}{self.name(2, 5)}"')
        if k == "bad_regex":
            w = self.word()
            return (k, r.choice([f"{w}(?=x)", f"(?<!{w})y", f"({w})\\1", f"\\b{w}\\b", f"(?i){w}", f"{w}{{3,2}}"]))
        if k == "bad_ebnf":
            a = self.name()
            return (k, r.choice([f'root ::= ( "{a}"', f"root ::= {a}", f'root ::= "{a}" |* "x"', f'{a} ::= "x"']))
        a = self.name()
        return (k, r.choice([{"type": "object", "properties": {a: {"$ref": f"#/$defs/{a}"}}},
                             {"type": "object", "properties": {a: {"type": "frob"}}},
                             '{"type": "object", "properties": {"' + a + '": ']))


# ----------------------------------------------------------------------------------------------------------------
# The server
# ----------------------------------------------------------------------------------------------------------------


class Soak:
    def __init__(self, args, tok, a_token: int):
        import xg2jax as xgr

        self.xgr, self.args, self.tok, self.a_token = xgr, args, tok, a_token
        self.V = tok.vocab_size
        self.stops = set(int(t) for t in tok.stop_token_ids)
        self.bitmask = xgr.allocate_token_bitmask(4, self.V)
        self.fork_mask = xgr.allocate_token_bitmask(1, self.V)
        self.limits = xgr.Limits(max_work_per_byte=args.max_work_per_byte)
        self.compiler = None
        self._jax = None
        self.counters: Counter = Counter()
        self.errors: list[dict] = []  # unexpected ones (first few kept)

    def new_compiler(self, cache_limit_bytes: int):
        self.compiler = None
        gc.collect()
        self.compiler = self.xgr.GrammarCompiler(self.tok, max_threads=1, cache_limit_bytes=cache_limit_bytes,
                                                 limits=self.limits)

    # -- tokens -------------------------------------------------------------------------------------------------
    def pick(self, row: np.ndarray, rng: random.Random) -> int | None:
        ids = np.flatnonzero(np.unpackbits(row.view(np.uint8), bitorder="little")[: self.V])
        if ids.size == 0:
            return None
        stops = [int(t) for t in self.stops if row[t >> 5] >> (t & 31) & 1]
        if stops and (rng.random() < self.args.p_stop or ids.size == len(stops)):
            return rng.choice(stops)
        while True:
            t = int(ids[rng.randrange(ids.size)])
            if t not in self.stops:
                return t

    # -- compile ------------------------------------------------------------------------------------------------
    def compile(self, src: tuple, rng: random.Random):
        c = self.compiler
        eager = src[0] in ("ebnf", "regex") and rng.random() < self.args.p_eager
        if eager:
            self.counters["eager_compiles"] += 1
        if src[0] == "schema":
            return c.compile_json_schema(src[1], **dict(src[2]))
        if src[0] == "ebnf":
            return c.compile_grammar(src[1], precompute_masks=eager)
        if src[0] == "regex":
            return c.compile_regex(src[1], precompute_masks=eager)
        return c.compile_builtin_json_grammar()

    # -- host path ----------------------------------------------------------------------------------------------
    def host_walk(self, cg, rng: random.Random) -> None:
        xgr, a, cnt = self.xgr, self.args, self.counters
        n = 1 if rng.random() < 0.6 else rng.randint(2, 4)
        rb = rng.choice([-1, 8, 16])
        ms = [xgr.GrammarMatcher(cg, max_rollback_tokens=rb) for _ in range(n)]
        hist = [0] * n  # tokens accepted since the last reset (rollback bound)
        steps = rng.randint(1, a.max_steps)
        cancel_at = rng.randrange(steps) if rng.random() < a.p_cancel else None
        rollback_at = rng.randrange(steps) if rng.random() < a.p_rollback else None
        reset_at = rng.randrange(steps) if rng.random() < a.p_reset else None
        fork_at = rng.randrange(steps) if rng.random() < a.p_fork else None
        jump_at = rng.randrange(steps) if rng.random() < 0.1 else None
        cnt["matchers"] += n
        for s in range(steps):
            if s == cancel_at:
                cnt["cancelled"] += 1
                return  # the matchers are dropped mid-generation
            live = [i for i in range(n) if not ms[i].is_terminated()]
            if not live:
                break
            if len(live) > 1:
                xgr.batch_fill_next_token_bitmask([ms[i] for i in live], self.bitmask, list(range(len(live))),
                                                  num_threads=2)
                cnt["batch_fills"] += 1
            else:
                ms[live[0]].fill_next_token_bitmask(self.bitmask, 0)
                cnt["fills"] += 1
            for row, i in enumerate(live):
                t = self.pick(self.bitmask[row], rng)
                if t is None:
                    cnt["empty_masks"] += 1
                    continue
                if ms[i].accept_token(t):
                    hist[i] += 1
                    cnt["tokens"] += 1
                else:
                    cnt["disagreements"] += 1
            if s == jump_at:
                ms[0].find_jump_forward_string()
                cnt["jump_forward"] += 1
            if s == rollback_at:
                for i in range(n):
                    k = min(hist[i], rb if rb > 0 else hist[i], rng.randint(1, 6))
                    if k:
                        ms[i].rollback(k)
                        hist[i] -= k
                cnt["rollbacks"] += 1
            if s == reset_at:
                for i in range(n):
                    ms[i].reset()
                    hist[i] = 0
                cnt["resets"] += 1
            if s == fork_at:
                f = ms[0].fork()
                for _ in range(rng.randint(1, 8)):
                    if f.is_terminated():
                        break
                    f.fill_next_token_bitmask(self.fork_mask, 0)
                    t = self.pick(self.fork_mask[0], rng)
                    if t is None or not f.accept_token(t):
                        cnt["disagreements" if t is not None else "empty_masks"] += 1
                        break
                cnt["forks"] += 1
        cnt["completed_walks"] += sum(1 for m in ms if m.is_terminated())

    # -- JAX path -----------------------------------------------------------------------------------------------
    def jax_step(self):
        if self._jax is None:
            import jax
            import jax.numpy as jnp

            import xg2jax.jax as xj

            self._jax = (jax, jnp, xj, jax.jit(xj.next_token_mask))
        return self._jax

    def jax_walk(self, cg, rng: random.Random) -> None:
        jax, jnp, xj, step = self.jax_step()
        cnt = self.counters
        rows: list = [cg]
        if rng.random() < 0.3:  # a row copied from a host matcher a few tokens in
            m = self.xgr.GrammarMatcher(cg)
            for _ in range(rng.randint(0, 4)):
                m.fill_next_token_bitmask(self.fork_mask, 0)
                t = self.pick(self.fork_mask[0], rng)
                if t is None or t in self.stops or not m.accept_token(t):
                    break
            rows.append(m)
        while len(rows) < JAX_BATCH:
            rows.append(cg if rng.random() < 0.5 else None)
        rng.shuffle(rows)
        steps = rng.randint(1, self.args.max_steps)
        cancel_at = rng.randrange(steps) if rng.random() < self.args.p_cancel else None
        snap_at = rng.randrange(steps) if rng.random() < 0.2 else None
        state = xj.GrammarState.create(rows, max_rollback_tokens=rng.choice([-1, 8]))
        cnt["jax_rows"] += sum(r is not None for r in rows)
        try:
            last = np.full(JAX_BATCH, -1, np.int32)
            done = [g is None for g in rows]
            for s in range(steps):
                if s == cancel_at:
                    cnt["jax_cancelled"] += 1
                    break
                mask, state = step(state, jnp.asarray(last))
                mask = np.asarray(mask)
                status = np.asarray(state.status)
                for r in range(JAX_BATCH):
                    done[r] = done[r] or bool(status[r] & TERMINATED)
                    if done[r]:
                        last[r] = -1
                        continue
                    t = self.pick(mask[r], rng)
                    if t is None:
                        cnt["empty_masks"] += 1
                    last[r] = -1 if t is None else t
                    cnt["jax_tokens"] += t is not None
                cnt["jax_steps"] += 1
                if s == snap_at:
                    row = next(i for i, g in enumerate(rows) if g is not None)
                    snap = state.matcher(row)
                    snap.fill_next_token_bitmask(self.fork_mask, 0)
                    cnt["jax_snapshots"] += 1
        finally:
            state.release()

    # -- one request --------------------------------------------------------------------------------------------
    def hostile(self, src: tuple) -> None:
        kind, payload = src
        cnt, c = self.counters, self.compiler
        try:
            if kind == "ambiguous_work":
                m = self.xgr.GrammarMatcher(c.compile_grammar(payload))
                n = 0
                try:
                    while n < 20_000:
                        if not m.accept_token(self.a_token):
                            raise AssertionError("'a' rejected")
                        n += 1
                except ValueError:
                    cnt["ambiguous_tokens_before_limit"] += n
                    try:  # the error is sticky until reset()
                        m.fill_next_token_bitmask(self.fork_mask, 0)
                        cnt["hostile_sticky_missing"] += 1
                    except ValueError:
                        cnt["hostile_sticky_raised"] += 1
                    m.reset()
                    if not m.accept_token(self.a_token):
                        cnt["hostile_after_reset_rejected"] += 1
                    raise
            elif kind == "nested_ebnf" or kind == "bad_ebnf":
                c.compile_grammar(payload)
            elif kind == "bad_regex":
                c.compile_regex(payload)
            else:
                c.compile_json_schema(payload)
        except ValueError:
            cnt["errors_raised"] += 1
            cnt[f"raised_{kind}"] += 1
            return
        cnt["hostile_not_raised"] += 1
        cnt[f"not_raised_{kind}"] += 1

    def request(self, src: tuple, rng: random.Random, use_jax: bool) -> None:
        cnt = self.counters
        cnt["requests"] += 1
        if src[0] in Gen.HOSTILE:
            cnt["hostile"] += 1
            return self.hostile(src)
        cnt[f"kind_{src[0]}"] += 1
        try:
            cg = self.compile(src, rng)
            if use_jax:
                cnt["jax_requests"] += 1
                self.jax_walk(cg, rng)
            else:
                self.host_walk(cg, rng)
        except Exception as exc:  # noqa: BLE001 (counted and reported, the soak goes on)
            cnt["unexpected_errors"] += 1
            if len(self.errors) < 20:
                self.errors.append({"kind": src[0], "jax": use_jax, "source": str(src[1])[:300],
                                    "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
            log.error("unexpected %s on %s: %s", type(exc).__name__, src[0], str(exc)[:200])


Gen.HOSTILE = ("nested_ebnf", "ambiguous_work", "bad_regex", "bad_ebnf", "bad_schema")


# ----------------------------------------------------------------------------------------------------------------
# Run
# ----------------------------------------------------------------------------------------------------------------


def parse_mix(spec: str) -> dict:
    out = {}
    for part in spec.split(","):
        k, _, w = part.partition("=")
        k = k.strip()
        if k not in KINDS:
            raise SystemExit(f"--mix: unknown kind {k!r} (known: {', '.join(KINDS)})")
        out[k] = float(w)
    if not any(out.values()):
        raise SystemExit("--mix: every weight is 0")
    return out


def load_tokenizer(name: str):
    import xg2jax as xgr
    from xg2jax import vocab_packages

    loaded = getattr(vocab_packages, name)()
    tok = xgr.TokenizerInfo.from_loaded_vocab(loaded)
    dec = tok.decoded_vocab
    dec = dec() if callable(dec) else dec
    a = next(i for i, s in enumerate(dec) if s in (b"a", "a") and i not in set(tok.special_token_ids))
    return tok, a


def run(args) -> dict:
    import xg2jax

    t0 = time.perf_counter()
    tok, a_token = load_tokenizer(args.vocab)
    log.info("vocab %s: %d tokens (%.1fs)", args.vocab, tok.vocab_size, time.perf_counter() - t0)
    mix = parse_mix(args.mix)
    kinds, weights = list(mix), list(mix.values())
    soak = Soak(args, tok, a_token)
    n_limited = int(round(args.requests * args.limited_fraction))
    phases = [
        {"name": "unlimited", "requests": args.requests - n_limited, "cache_limit_bytes": -1,
         "clear_every": args.clear_every},
        {"name": "limited", "requests": n_limited, "cache_limit_bytes": int(args.cache_limit_mb * 2**20),
         "clear_every": 0},
    ]
    phases = [p for p in phases if p["requests"] > 0]
    result = {
        "meta": {
            "date": _dt.datetime.now().isoformat(timespec="seconds"),
            "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
            "python": platform.python_version(), "machine": platform.machine(), "cpu_count": os.cpu_count(),
            "loadavg_start": list(os.getloadavg()),
            "versions": {"xg2jax": getattr(xg2jax, "__version__", "?")},
            "xg2jax_revision": revision(),
            "vocab": {"name": args.vocab, "size": tok.vocab_size},
            "rss_source": RSS_SOURCE, "heap_source": "glibc mallinfo2" if _mallinfo2 else None,
            "settings": {k: v for k, v in vars(args).items() if k not in ("from_json", "out", "no_progress")},
            "mix": mix,
        },
        "phases": [],
        "samples": [],
        "clears": [],
    }
    rng = random.Random(args.seed)
    gen = Gen(rng)
    recent: dict[str, deque] = {k: deque(maxlen=64) for k in KINDS}
    samples = result["samples"]
    seen_handles = None
    try:
        import xg2jax._core as core
        import xg2jax.jax.state as jstate

        def handle_counts():
            return int(core.handle_num_live()), len(jstate._GRAMMAR_OF_HANDLE)

        seen_handles = handle_counts
    except Exception:  # pragma: no cover
        pass

    gidx = 0  # requests served so far, all phases
    start = time.perf_counter()

    def sample(phase: str, event: str | None = None) -> dict:
        gc.collect()
        s = {"req": gidx, "phase": phase, "t_s": round(time.perf_counter() - start, 2),
             "rss_mb": rss_bytes() / 2**20, "heap_mb": (heap_in_use_bytes() or 0) / 2**20,
             "cache_bytes": int(soak.compiler.get_cache_size_bytes())}
        info = soak.compiler.cache_info()
        for k in ("grammar_bytes", "rule_bytes", "structure_bytes", "num_structures"):
            s[k] = int(info.get(k, 0))
        s["py_blocks"] = sys.getallocatedblocks()
        if seen_handles:
            s["live_handles"], s["py_handle_map"] = seen_handles()
        if event:
            s["event"] = event
        samples.append(s)
        return s

    for ph in phases:
        soak.new_compiler(ph["cache_limit_bytes"])
        soak.counters = Counter()
        ph_start = gidx
        t_ph = time.perf_counter()
        sample(ph["name"], "start")
        bar = tqdm(range(ph["requests"]), desc=ph["name"], unit="req", disable=args.no_progress,
                   mininterval=1.0)
        for j in bar:
            kind = rng.choices(kinds, weights)[0]
            if kind == "hostile":
                src = gen.hostile()
            elif recent[kind] and rng.random() < args.reuse:
                src = rng.choice(recent[kind])
                soak.counters["reused_sources"] += 1
            else:
                src = (gen.schema_source() if kind == "schema" else ("ebnf", gen.ebnf()) if kind == "ebnf"
                       else ("regex", gen.regex()) if kind == "regex" else ("json",))
                recent[kind].append(src)
            use_jax = kind != "hostile" and rng.random() < args.jax_fraction
            soak.request(src, rng, use_jax)
            gidx += 1
            if ph["clear_every"] and (j + 1) % ph["clear_every"] == 0 and j + 1 < ph["requests"]:
                before = sample(ph["name"], "before_clear")
                soak.compiler.clear_cache()
                after = sample(ph["name"], "after_clear")
                result["clears"].append({"req": gidx, "phase": ph["name"], "cache_bytes_before": before["cache_bytes"],
                                         "cache_bytes_after": after["cache_bytes"], "rss_mb_before": before["rss_mb"],
                                         "rss_mb_after": after["rss_mb"]})
            elif (j + 1) % args.sample_every == 0 or j + 1 == ph["requests"]:
                s = sample(ph["name"])
                if hasattr(bar, "set_postfix"):
                    bar.set_postfix(rss=f"{s['rss_mb']:.0f}MB", cache=f"{s['cache_bytes'] / 2**20:.1f}MB")
        ph["start_req"], ph["end_req"] = ph_start, gidx
        ph["warmup_end_req"] = ph_start + int(round(ph["requests"] * args.warmup_fraction))
        ph["seconds"] = round(time.perf_counter() - t_ph, 1)
        ph["counters"] = dict(sorted(soak.counters.items()))
        ph["cache_info_end"] = {k: v for k, v in soak.compiler.cache_info().items()
                                if not k.endswith("entry_sizes")}
        ph["unexpected_errors"] = soak.errors
        soak.errors = []
        result["phases"].append(ph)
        log.info("%s: %d requests in %.0fs", ph["name"], ph["requests"], ph["seconds"])
    result["meta"]["loadavg_end"] = list(os.getloadavg())
    result["meta"]["seconds"] = round(time.perf_counter() - start, 1)
    return result


# ----------------------------------------------------------------------------------------------------------------
# Summary, markdown, plot
# ----------------------------------------------------------------------------------------------------------------


def _slope_per_1000(xs, ys):
    if len(xs) < 3 or max(xs) == min(xs):
        return None
    return float(np.polyfit(np.asarray(xs, float) / 1000.0, np.asarray(ys, float), 1)[0])


def summarize(result: dict) -> list[dict]:
    out = []
    samples = result["samples"]
    for ph in result["phases"]:
        ss = [s for s in samples if s["phase"] == ph["name"]]
        post = [s for s in ss if s["req"] >= ph["warmup_end_req"]]
        w = post[0] if post else ss[-1]
        floors = [s for s in post if s.get("event") == "after_clear"]
        c = ph["counters"]
        lim = ph["cache_limit_bytes"]
        row = {
            "phase": ph["name"], "requests": ph["requests"], "seconds": ph["seconds"],
            "errors_raised": c.get("errors_raised", 0), "hostile": c.get("hostile", 0),
            "hostile_not_raised": c.get("hostile_not_raised", 0),
            "unexpected_errors": c.get("unexpected_errors", 0), "disagreements": c.get("disagreements", 0),
            "empty_masks": c.get("empty_masks", 0), "jax_requests": c.get("jax_requests", 0),
            "tokens": c.get("tokens", 0) + c.get("jax_tokens", 0),
            "warmup_end_req": ph["warmup_end_req"],
            "rss_mb_start": ss[0]["rss_mb"], "rss_mb_warmup_end": w["rss_mb"], "rss_mb_end": ss[-1]["rss_mb"],
            "rss_mb_max": max(s["rss_mb"] for s in ss),
            "rss_mb_max_after_warmup": max((s["rss_mb"] for s in post), default=None),
            "rss_slope_mb_per_1000": _slope_per_1000([s["req"] for s in post], [s["rss_mb"] for s in post]),
            "heap_mb_warmup_end": w["heap_mb"], "heap_mb_end": ss[-1]["heap_mb"],
            "heap_slope_mb_per_1000": _slope_per_1000([s["req"] for s in post], [s["heap_mb"] for s in post]),
            "rss_floor_slope_mb_per_1000": _slope_per_1000([s["req"] for s in floors], [s["rss_mb"] for s in floors]),
            "heap_floor_after_clears_mb": [round(s["heap_mb"], 1) for s in floors],
            "py_blocks_warmup_end": w.get("py_blocks"), "py_blocks_end": ss[-1].get("py_blocks"),
            "cache_bytes_end": ss[-1]["cache_bytes"], "cache_bytes_max": max(s["cache_bytes"] for s in ss),
            "cache_limit_bytes": lim,
            "live_handles_end": ss[-1].get("live_handles"),
        }
        for k in ("grammar_bytes", "rule_bytes", "structure_bytes"):
            row[f"{k}_end"] = ss[-1].get(k)
            row[f"{k}_max"] = max((s.get(k) or 0) for s in ss)
            row[f"{k}_slope_mb_per_1000"] = _slope_per_1000([s["req"] for s in post],
                                                            [(s.get(k) or 0) / 2**20 for s in post])
        if lim > 0:
            row["cache_within_limit"] = row["cache_bytes_max"] <= lim
        out.append(row)
    return out


def _mb(b):
    return f"{b / 2**20:.1f}"


def markdown(result: dict) -> str:
    meta = result["meta"]
    rows = result["summary"]
    lines = [
        f"# Soak: {sum(r['requests'] for r in rows)} mixed requests, {meta['vocab']['name']} vocabulary "
        f"({meta['vocab']['size']} ids)",
        "",
        f"xg2jax {meta['versions']['xg2jax']} @ {meta.get('xg2jax_revision')}, {meta['date']}, "
        f"{meta['cpu_count']} CPUs, load average {meta['loadavg_start'][0]:.1f} -> {meta['loadavg_end'][0]:.1f}, "
        f"{meta['seconds']:.0f} s. `{meta['command']}`. RSS from {meta['rss_source']}, heap = glibc in-use bytes. "
        f"Slopes: least squares over the samples after the warm-up (first "
        f"{meta['settings']['warmup_fraction']:.0%} of each phase).",
        "",
        "| phase | requests | errors raised (hostile) | unexpected errors / disagreements | RSS MB warm-up end "
        "-> end | RSS max MB (after warm-up) | RSS slope MB/1000 req | heap MB warm-up end -> end (slope) | "
        "cache MB end (max) | cache limit MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def f(v, fmt="{:+.2f}"):
        return "n/a" if v is None else fmt.format(v)

    for r in rows:
        lim = r["cache_limit_bytes"]
        lines.append(
            f"| {r['phase']} | {r['requests']} | {r['errors_raised']} / {r['hostile']} | "
            f"{r['unexpected_errors']} / {r['disagreements']} | "
            f"{r['rss_mb_warmup_end']:.1f} -> {r['rss_mb_end']:.1f} | "
            f"{r['rss_mb_max']:.1f} ({f(r['rss_mb_max_after_warmup'], '{:.1f}')}) | "
            f"{f(r['rss_slope_mb_per_1000'])} | {r['heap_mb_warmup_end']:.1f} -> {r['heap_mb_end']:.1f} "
            f"({f(r['heap_slope_mb_per_1000'])}) | {_mb(r['cache_bytes_end'])} ({_mb(r['cache_bytes_max'])}) | "
            f"{'none (clear every %d)' % meta['settings']['clear_every'] if lim < 0 else _mb(lim)} |")
    lines.append("")
    for r in rows:
        def verdict(v):
            return "n/a" if v is None else "**flat**" if abs(v) < FLAT_MB_PER_1000 else "**grows**"

        rs, hs = r["rss_slope_mb_per_1000"], r["heap_slope_mb_per_1000"]
        lines.append(f"- {r['phase']}, after warm-up: heap in use {verdict(hs)} ({f(hs)} MB per 1000 requests), RSS "
                     f"{verdict(rs)} ({f(rs)} MB per 1000 requests); flat = within +-{FLAT_MB_PER_1000} MB per 1000. "
                     f"The heap counts live allocations; RSS also keeps what the allocator retains.")
    lines.append("")
    for ph, r in zip(result["phases"], rows):
        c = ph["counters"]
        kinds = ", ".join(f"{k[5:]} {v}" for k, v in c.items() if k.startswith("kind_"))
        raised = ", ".join(f"{k[7:]} {v}" for k, v in c.items() if k.startswith("raised_"))
        lines.append(
            f"- **{ph['name']}** ({ph['seconds']:.0f} s): {kinds}, hostile {c.get('hostile', 0)} ({raised}; "
            f"not raised: {c.get('hostile_not_raised', 0)}, sticky error after the work limit: "
            f"{c.get('hostile_sticky_raised', 0)}/{c.get('raised_ambiguous_work', 0)}); "
            f"{c.get('jax_requests', 0)} through the jitted JAX step ({c.get('jax_steps', 0)} steps); "
            f"{r['tokens']} tokens accepted, {c.get('cancelled', 0) + c.get('jax_cancelled', 0)} cancelled, "
            f"{c.get('rollbacks', 0)} rollbacks, {c.get('resets', 0)} resets, {c.get('forks', 0)} forks, "
            f"{c.get('batch_fills', 0)} batch fills, {c.get('reused_sources', 0)} reused sources, "
            f"{c.get('eager_compiles', 0)} eager compiles; live JAX handles at the end: {r['live_handles_end']}; "
            f"Python allocated blocks warm-up end -> end: {r.get('py_blocks_warmup_end')} -> {r.get('py_blocks_end')}.")
        if r["heap_floor_after_clears_mb"]:
            lines.append(f"  Heap MB right after each clear_cache(): {r['heap_floor_after_clears_mb']} "
                         f"(RSS floor slope {f(r['rss_floor_slope_mb_per_1000'])} MB/1000 req).")
        if r.get("structure_bytes_end") is not None:
            lines.append(
                f"  Cache at the end: grammars {_mb(r['grammar_bytes_end'])} MB (max {_mb(r['grammar_bytes_max'])}), "
                f"mask entries {_mb(r['rule_bytes_end'])} MB (max {_mb(r['rule_bytes_max'])}), structures + "
                f"automata {_mb(r['structure_bytes_end'])} MB; slopes after warm-up, MB/1000 req: grammars "
                f"{f(r['grammar_bytes_slope_mb_per_1000'])}, entries {f(r['rule_bytes_slope_mb_per_1000'])}, "
                f"structures {f(r['structure_bytes_slope_mb_per_1000'])}.")
        if "cache_within_limit" in r:
            lim = r["cache_limit_bytes"]
            lines.append(f"  Limit {_mb(lim)} MB: get_cache_size_bytes() max {_mb(r['cache_bytes_max'])} MB "
                         f"{'<=' if r['cache_within_limit'] else '>'} limit (grammars max "
                         f"{_mb(r.get('grammar_bytes_max') or 0)}, mask entries max {_mb(r.get('rule_bytes_max') or 0)}, "
                         f"structures + automata max {_mb(r.get('structure_bytes_max') or 0)} MB).")
        for e in ph.get("unexpected_errors", [])[:5]:
            lines.append(f"  - unexpected: {e['kind']} (jax={e['jax']}): {e['error'][:200]}")
    return "\n".join(lines)


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples = result["samples"]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(12, 8), sharex=True)
    colors = {"unlimited": "tab:blue", "limited": "tab:orange"}
    for ph, r in zip(result["phases"], result["summary"]):
        ss = [s for s in samples if s["phase"] == ph["name"]]
        x = [s["req"] for s in ss]
        col = colors.get(ph["name"], None)
        ax1.plot(x, [s["rss_mb"] for s in ss], "-", color=col, lw=1.5, label=f"RSS ({ph['name']})")
        ax1.plot(x, [s["heap_mb"] for s in ss], "--", color=col, lw=1, alpha=0.7, label=f"heap in use ({ph['name']})")
        ax2.plot(x, [s["cache_bytes"] / 2**20 for s in ss], "-", color=col, lw=1.8,
                 label=f"get_cache_size_bytes() ({ph['name']})")
        if "structure_bytes" in ss[0]:
            for k, ls, lab in (("grammar_bytes", "--", "grammars"), ("rule_bytes", "-.", "mask entries"),
                               ("structure_bytes", ":", "structures + automata")):
                ax2.plot(x, [s[k] / 2**20 for s in ss], ls, color=col, lw=1, alpha=0.8,
                         label=f"{lab} ({ph['name']})")
        for ax in (ax1, ax2):
            ax.axvspan(ph["start_req"], ph["warmup_end_req"], color="0.9", zorder=0)
            ax.axvline(ph["start_req"], color="k", lw=1)
        ax1.annotate(f"{ph['name']}: slope {r['rss_slope_mb_per_1000'] or 0:+.2f} MB/1000 req", (ph["start_req"], 0),
                     xycoords=("data", "axes fraction"), xytext=(4, 4), textcoords="offset points", fontsize=8)
        lim = ph["cache_limit_bytes"]
        if lim > 0:
            ax2.hlines([lim / 2**20], ph["start_req"], ph["end_req"], colors=["r"], linestyles=["--"], lw=1)
            ax2.annotate("cache_limit_bytes", (ph["start_req"], lim / 2**20), color="r", fontsize=8,
                         xytext=(4, 3), textcoords="offset points")
    for i, c in enumerate(result["clears"]):
        for ax in (ax1, ax2):
            ax.axvline(c["req"], color="tab:green", lw=0.8, ls=":", label="clear_cache()" if i == 0 else None)
    ax1.set_ylabel("MB")
    ax1.set_title("resident memory (RSS) and glibc heap in use; grey = warm-up, black line = new phase/compiler")
    ax1.set_ylim(bottom=0)
    ax1.legend(loc="center right", fontsize=8)
    ax1.grid(alpha=0.3)
    ax2.set_ylabel("MB")
    ax2.set_xlabel("requests served")
    ax2.set_title("compiler cache bytes")
    ax2.set_ylim(bottom=0)
    ax2.legend(loc="upper left", fontsize=7, ncol=2)
    ax2.grid(alpha=0.3)
    meta = result["meta"]
    fig.suptitle(f"Soak: {sum(p['requests'] for p in result['phases'])} mixed requests, {meta['vocab']['name']} "
                 f"vocabulary (xg2jax {meta['versions']['xg2jax']} @ {meta.get('xg2jax_revision')})")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", "--requests", type=int, default=6000,
                    help="requests in all phases (default 6000: ~2.5 min on an idle 2-core machine)")
    ap.add_argument("--limited-fraction", type=float, default=1 / 3,
                    help="share of the requests run in the cache-limited phase (default 1/3; 0 = unlimited only)")
    ap.add_argument("--cache-limit-mb", type=float, default=8.0,
                    help="cache_limit_bytes of the limited phase, MiB (default 8: every part of the cache reaches its share within the "
                         "default run's warm-up)")
    ap.add_argument("--clear-every", type=int, default=250, help="clear_cache() every K requests (unlimited phase)")
    ap.add_argument("--sample-every", type=int, default=25, help="sample memory every M requests")
    ap.add_argument("--warmup-fraction", type=float, default=0.25, help="share of each phase counted as warm-up")
    ap.add_argument("--vocab", default="qwen2", help="qwen2 or gpt2 (also gemma3, cl100k; xg2jax.vocab_packages)")
    ap.add_argument("--mix", default=DEFAULT_MIX, help=f"request kind weights (default {DEFAULT_MIX})")
    ap.add_argument("--jax-fraction", type=float, default=0.1, help="share of requests through the jitted JAX step")
    ap.add_argument("--reuse", type=float, default=0.25, help="probability a request reuses a recent source")
    ap.add_argument("--max-steps", type=int, default=48, help="most decode steps per request")
    ap.add_argument("--p-stop", type=float, default=0.25, help="probability of taking a stop token once allowed")
    ap.add_argument("--p-cancel", type=float, default=0.15)
    ap.add_argument("--p-rollback", type=float, default=0.25)
    ap.add_argument("--p-reset", type=float, default=0.1)
    ap.add_argument("--p-fork", type=float, default=0.1)
    ap.add_argument("--p-eager", type=float, default=0.03, help="share of EBNF/regex compiles with precompute_masks")
    ap.add_argument("--max-work-per-byte", type=int, default=100_000, help="xg2jax.Limits(max_work_per_byte=...)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="JSON path (default results/soak.json; .md and .png next to it)")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--from-json", default=None, metavar="PATH", help="reprint + redraw an earlier result, no run")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    if args.from_json:
        result = json.loads(Path(args.from_json).read_text())
        out = Path(args.from_json)
    else:
        random.seed(args.seed)
        np.random.seed(args.seed)
        result = run(args)
        out = Path(args.out) if args.out else HERE / "results" / "soak.json"
    result["summary"] = summarize(result)
    out.parent.mkdir(parents=True, exist_ok=True)
    if not args.from_json:
        out.write_text(json.dumps(result, indent=1, ensure_ascii=False, default=str))
    md = markdown(result)
    out.with_suffix(".md").write_text(md + "\n")
    png = out.with_suffix(".png")
    try:
        plot(result, png)
    except Exception as exc:
        log.error("plot failed: %s: %s", type(exc).__name__, exc)
    print(md)
    log.info("wrote %s, %s and %s", out, out.with_suffix(".md"), png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
