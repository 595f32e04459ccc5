#!/usr/bin/env python3
"""Per-request grammar compilation for agent requests whose tool set changes every request (BFCL v3).

Every request of an agent server brings its own tools, so its grammar (a tool call to one of *these* tools, or a
free-text reply) is new and must be compiled before the first token. This benchmark replays a seeded sample of
BFCL v3 requests, in one fixed order, and per request times, for every engine/mode:

* ``compile``: ``compile_json_schema(schema)`` alone;
* ``ttfm`` (time to first mask): compile + ``GrammarMatcher(compiled)`` + the first ``fill_next_token_bitmask``.

Engines/modes (one thread each, the same schema string, ``any_whitespace=False``, ``separators=(",", ":")``,
``strict_mode=True`` for every engine):

* ``xg2jax-cold-eager``: a fresh ``xg2jax.GrammarCompiler`` per request, ``precompute_masks=True`` (every mask entry
  is built during compile);
* ``xg2jax-warm-eager``: one compiler for the whole sequence, ``precompute_masks=True``; its rule-level cache shares
  mask entries between grammars whose rules have the same structure (the same tool in two requests), so it builds
  only new structures' masks. Per request: the rule-level hit share, cache bytes, and the unique tools seen so far;
* ``xg2jax-cold-jit`` / ``xg2jax-warm-jit``: the same with ``precompute_masks=False`` (automata only, masks built on
  first use);
* ``xgrammar-cold-eager`` / ``xgrammar-warm-eager``: xgrammar 0.2.9 default compile (precomputes masks), a fresh
  compiler per request / one compiler for the sequence (``cache_enabled=True``);
* ``xgrammar-warm-jit``: one xgrammar compiler with ``cache_enabled=True, enable_dynamic_compilation=True``.

Within a request the modes run back to back in the order above (interleaved, so machine noise hits every mode
alike). The grammar of a request is JSON Schema
``{"anyOf": [<per tool: {"type": "object", "properties": {"name": {"const": NAME}, "arguments": PARAMS}, "required":
["name", "arguments"], "additionalProperties": false}>..., {"type": "object", "properties": {"content": {"type":
"string"}}, "required": ["content"], "additionalProperties": false}]}`` where PARAMS is the tool's BFCL parameter
schema converted to JSON Schema by ``convert_bfcl_schema`` (below).

Output: a markdown table on stdout, benchmarks/results/dynamic_tools.json (every per-request number, versions,
settings, sampling) and benchmarks/results/dynamic_tools.png. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import logging
import os
import platform
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE.parent))

import peers  # noqa: E402  (sets the one-thread environment before numpy / engines load)
import numpy as np  # noqa: E402
import workloads  # noqa: E402

try:
    from tqdm import tqdm
except ImportError:  # pragma: no cover
    def tqdm(it=None, **_kw):
        return it

log = logging.getLogger("dynamic_tools")

MODES = (
    "xg2jax-cold-eager",
    "xg2jax-warm-eager",
    "xg2jax-cold-jit",
    "xg2jax-warm-jit",
    "xgrammar-cold-eager",
    "xgrammar-warm-eager",
    "xgrammar-warm-jit",
)
ALL_CATEGORIES = ("simple", "multiple", "parallel", "parallel_multiple", "irrelevance", "java", "javascript",
                  "multi_turn_base")
MULTI_TURN_DOCS = {
    "GorillaFileSystem": "gorilla_file_system.json", "MathAPI": "math_api.json", "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json", "TicketAPI": "ticket_api.json", "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json", "VehicleControlAPI": "vehicle_control.json",
}

# ----------------------------------------------------------------------------------------------------------------
# BFCL -> JSON Schema
# ----------------------------------------------------------------------------------------------------------------

BFCL_TYPES = {"dict": "object", "float": "number", "tuple": "array", "integer": "integer", "string": "string",
              "boolean": "boolean", "array": "array", "number": "number", "object": "object", "null": "null"}


def convert_bfcl_schema(s, stats: dict, language: str | None = None, closed: bool = True):
    """BFCL parameter schema -> JSON Schema.

    * ``type``: ``dict`` -> ``object``, ``float`` -> ``number``, ``tuple`` -> ``array``, ``any`` -> no ``type``
      (no constraint); ``integer``/``string``/``boolean``/``array`` as they are. Any other type name is dropped
      (no constraint) and counted in ``stats["unknown_types"]``.
    * Java / JavaScript requests (``language``): BFCL's own convention (``func_doc_language_specific_pre_processing``)
      is that every top-level argument is passed as a string holding the Java/JS value, so each top-level property
      becomes ``{"type": "string", "description": ...}``.
    * ``properties`` values, ``items`` (a schema or a list of schemas), ``additionalProperties`` (a schema) and
      ``anyOf``/``oneOf``/``allOf`` members are converted recursively. Every other key (``description``,
      ``default``, ``enum``, ``required``, BFCL's ``optional``, ...) is kept as is: both engines compile with them
      (unknown keywords are annotations).
    * ``closed`` (default; ``--open-objects`` turns it off): every schema with ``properties`` and no
      ``additionalProperties`` gets ``"additionalProperties": false``. The engines' ``strict_mode=True`` differs
      here: xgrammar's defaults ``additionalProperties`` to false, xg2jax's does not (it only turns unenforceable
      keywords into errors), so without an explicit value the same schema string is a different language per engine.
      Schemas without ``properties`` (free-form BFCL ``dict``) are left open (any object) for xg2jax; xgrammar
      strict mode would accept only ``{}`` there, so they get ``"additionalProperties": true`` explicitly.
    """
    if isinstance(s, list):
        return [convert_bfcl_schema(x, stats, None, closed) for x in s]
    if not isinstance(s, dict):
        return s
    out = {}
    for k, v in s.items():
        if k == "type":
            if isinstance(v, list):
                mapped = [BFCL_TYPES.get(t) for t in v]
                if all(mapped):
                    out[k] = mapped
                else:
                    stats.setdefault("unknown_types", {})
                    stats["unknown_types"][str(v)] = stats["unknown_types"].get(str(v), 0) + 1
            elif v == "any":
                stats["any"] = stats.get("any", 0) + 1
            elif isinstance(v, str) and v in BFCL_TYPES:
                out[k] = BFCL_TYPES[v]
            else:
                stats.setdefault("unknown_types", {})
                stats["unknown_types"][str(v)] = stats["unknown_types"].get(str(v), 0) + 1
        elif k == "properties" and isinstance(v, dict):
            if language:
                props = {}
                for name, p in v.items():
                    desc = p.get("description", "") if isinstance(p, dict) else ""
                    props[name] = {"type": "string", "description": desc}
                    stats["language_string"] = stats.get("language_string", 0) + 1
                out[k] = props
            else:
                out[k] = {name: convert_bfcl_schema(p, stats, None, closed) for name, p in v.items()}
        elif k in ("items", "additionalProperties", "anyOf", "oneOf", "allOf") and isinstance(v, (dict, list)):
            out[k] = convert_bfcl_schema(v, stats, None, closed)
        else:
            out[k] = v
    if closed and out.get("type") == "object" and "additionalProperties" not in out:
        out["additionalProperties"] = "properties" not in out
        stats["closed" if "properties" in out else "open"] = stats.get(
            "closed" if "properties" in out else "open", 0) + 1
    return out


def request_schema(tools: list[dict], stats: dict, language: str | None, closed: bool = True) -> str:
    branches = []
    for t in tools:
        params = t.get("parameters") or {"type": "dict", "properties": {}}
        branches.append({
            "type": "object",
            "properties": {"name": {"const": t["name"]},
                           "arguments": convert_bfcl_schema(params, stats, language, closed)},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        })
    branches.append({"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"],
                     "additionalProperties": False})
    return json.dumps({"anyOf": branches}, ensure_ascii=False)


def tool_key(t: dict) -> str:
    return t["name"] + "\x00" + json.dumps(t.get("parameters"), sort_keys=True, ensure_ascii=False)


def load_requests(data_dir: Path, categories, n: int, seed: int) -> tuple[list[dict], dict]:
    folder = Path(data_dir) / "bfcl-v3"
    if not folder.exists():
        raise SystemExit(f"{folder} is missing (pass --data-dir)")
    docs = {}
    pool = []
    for cat in categories:
        with open(folder / f"BFCL_v3_{cat}.json", encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                if cat.startswith("multi_turn"):
                    tools = []
                    for cls in row["involved_classes"]:
                        if cls not in docs:
                            with open(folder / "multi_turn_func_doc" / MULTI_TURN_DOCS[cls], encoding="utf-8") as f:
                                docs[cls] = [json.loads(x) for x in f if x.strip()]
                        tools += [{k: d[k] for k in ("name", "description", "parameters")} for d in docs[cls]]
                else:
                    tools = row["function"]
                pool.append({"id": row["id"], "category": cat, "tools": tools})
    rng = random.Random(seed)
    picked = rng.sample(pool, min(n, len(pool)))
    info = {"pool_size": len(pool), "categories": list(categories), "seed": seed, "n_requested": n,
            "pool_by_category": {c: sum(1 for p in pool if p["category"] == c) for c in categories}}
    return picked, info


# ----------------------------------------------------------------------------------------------------------------
# Measurement
# ----------------------------------------------------------------------------------------------------------------


def _ms(t0: int, t1: int) -> float:
    return (t1 - t0) / 1e6


def normal_token_words(vocab) -> np.ndarray:
    bits = np.ones(((vocab.vocab_size + 31) // 32) * 32, dtype=np.uint8)
    bits[vocab.vocab_size:] = 0
    bits[np.asarray(vocab.special_token_ids, dtype=np.int64)] = 0
    return np.packbits(bits, bitorder="little").view(np.int32)


class Runner:
    def __init__(self, vocab, args):
        import xg2jax
        import xgrammar

        self.x, self.g, self.vocab, self.args = xg2jax, xgrammar, vocab, args
        self.kw = dict(any_whitespace=False, separators=(",", ":"), strict_mode=True)
        xe = peers.XG2JaxEngine()
        self.setup_ms = {"xg2jax": xe.setup(vocab)}
        self.xtok, self.xbm = xe.tok, xe.bitmask
        ge = peers.XGrammarEngine()
        self.setup_ms["xgrammar"] = ge.setup(vocab)
        self.gtok, self.gbm = ge.tok, ge.bitmask
        self.gmask = self.gbm.numpy()[0]
        self.warm = {
            "xg2jax-warm-eager": xg2jax.GrammarCompiler(self.xtok, max_threads=1, cache_enabled=True),
            "xg2jax-warm-jit": xg2jax.GrammarCompiler(self.xtok, max_threads=1, cache_enabled=True),
            "xgrammar-warm-eager": xgrammar.GrammarCompiler(self.gtok, max_threads=1, cache_enabled=True),
            "xgrammar-warm-jit": xgrammar.GrammarCompiler(self.gtok, max_threads=1, cache_enabled=True,
                                                          enable_dynamic_compilation=True),
        }

    def compiler(self, mode):
        if mode in self.warm:
            return self.warm[mode]
        if mode.startswith("xg2jax"):
            return self.x.GrammarCompiler(self.xtok, max_threads=1, cache_enabled=True)
        return self.g.GrammarCompiler(self.gtok, max_threads=1, cache_enabled=True)

    def run(self, mode, schema):
        """Returns (compile_ms, ttfm_ms, construct_ms, first mask copy, compiled grammar). For cold modes the fresh
        compiler's construction is timed and included in compile_ms (xgrammar's constructor leaves ~60 ms of work
        that the first compile waits for, so timing only the compile call would depend on when it is called)."""
        perf = time.perf_counter_ns
        t0 = perf()
        comp = self.compiler(mode)
        construct_ms = _ms(t0, perf()) if mode not in self.warm else 0.0
        if mode.startswith("xg2jax"):
            pre = mode.endswith("eager")
            if mode in self.warm:
                t0 = perf()
            cg = comp.compile_json_schema(schema, precompute_masks=pre, **self.kw)
            t1 = perf()
            m = self.x.GrammarMatcher(cg)
            m.fill_next_token_bitmask(self.xbm, 0)
            t2 = perf()
            mask = np.asarray(self.xbm[0]).copy()
        else:
            if mode in self.warm:
                t0 = perf()
            cg = comp.compile_json_schema(schema, **self.kw)
            t1 = perf()
            m = self.g.GrammarMatcher(cg)
            m.fill_next_token_bitmask(self.gbm, 0)
            t2 = perf()
            mask = self.gmask.copy()
        return _ms(t0, t1), _ms(t0, t2), construct_ms, mask, cg


def walk_masks(runner, compiled: dict, text: str, greedy, normal):
    """Feed the tokens of ``text`` (a valid prefix) to a matcher of each compiled grammar; compare the masks at every
    step (xg2jax grammars bit for bit, xgrammar over non-special tokens). Returns a dict of findings."""
    tokens = greedy.encode(text.encode("utf-8"))
    out = {"prefix": text, "steps": len(tokens) + 1, "xg2jax_identical_steps": 0, "xgrammar_identical_steps": 0,
           "errors": []}
    matchers = {}
    for mode, cg in compiled.items():
        matchers[mode] = (runner.x if mode.startswith("xg2jax") else runner.g).GrammarMatcher(cg)
    for step in range(len(tokens) + 1):
        masks = {}
        for mode, m in matchers.items():
            if mode.startswith("xg2jax"):
                m.fill_next_token_bitmask(runner.xbm, 0)
                masks[mode] = np.asarray(runner.xbm[0]).copy()
            else:
                m.fill_next_token_bitmask(runner.gbm, 0)
                masks[mode] = runner.gmask.copy()
        xs = [v for k, v in masks.items() if k.startswith("xg2jax")]
        if all(np.array_equal(xs[0], v) for v in xs[1:]):
            out["xg2jax_identical_steps"] += 1
        gs = [v for k, v in masks.items() if k.startswith("xgrammar")]
        if gs and xs and np.array_equal(xs[0] & normal, gs[0] & normal):
            out["xgrammar_identical_steps"] += 1
        if step < len(tokens):
            for mode, m in matchers.items():
                if not m.accept_token(tokens[step]):
                    out["errors"].append(f"{mode} rejected token {step} of the prefix")
    return out


def _dist_version(name):
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return "?"


def pct(vals, q):
    vals = [v for v in vals if v is not None]
    return float(np.percentile(vals, q)) if vals else None


def run(args) -> dict:
    data_dir = Path(args.data_dir)
    categories = [c.strip() for c in args.categories.split(",") if c.strip()]
    picked, sampling = load_requests(data_dir, categories, args.requests, args.seed)
    t0 = time.perf_counter()
    vocab = workloads.load_vocab(args.vocab)
    log.info("vocab %s: %d tokens (%.1fs)", args.vocab, vocab.vocab_size, time.perf_counter() - t0)
    greedy = workloads.GreedyTokenizer(vocab)
    normal = normal_token_words(vocab)
    runner = Runner(vocab, args)
    import xg2jax

    result = {
        "meta": {
            "date": _dt.datetime.now().isoformat(timespec="seconds"),
            "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
            "python": platform.python_version(), "machine": platform.machine(), "cpu_count": os.cpu_count(),
            "loadavg_start": list(os.getloadavg()),
            "versions": {"xg2jax": getattr(xg2jax, "__version__", "?"),
                         "xgrammar": _dist_version("xgrammar")},
            "xg2jax_revision": workloads.xg2jax_revision(),
            "vocab": {"name": args.vocab, "size": vocab.vocab_size, "n_special": len(vocab.special_token_ids)},
            "tokenizer_setup_ms": runner.setup_ms,
            "threads": "1 (max_threads=1, RAYON_NUM_THREADS=OMP_NUM_THREADS=1, torch.set_num_threads(1))",
            "compile_kwargs": {"any_whitespace": False, "separators": [",", ":"], "strict_mode": True},
            "closed_objects": not args.open_objects,
            "modes": list(MODES),
            "sampling": sampling,
            "budget_minutes": args.budget_min,
        },
        "requests": [],
        "errors": [],
        "walks": [],
    }
    seen_tools: set[str] = set()
    first_mask_agree = {"xg2jax_all_modes": 0, "xgrammar_vs_xg2jax_nonspecial": 0, "compared": 0}
    prev_info = runner.warm["xg2jax-warm-eager"].cache_info()
    prev_jit = runner.warm["xg2jax-warm-jit"].cache_info()
    start = time.perf_counter()
    bar = tqdm(picked, desc="requests", unit="req", disable=args.no_progress)
    for i, req in enumerate(bar):
        if args.budget_min and time.perf_counter() - start > args.budget_min * 60:
            log.warning("time budget of %.1f min reached after %d requests: stopping", args.budget_min, i)
            result["meta"]["stopped_after_budget"] = i
            break
        stats: dict = {}
        lang = req["category"] if req["category"] in ("java", "javascript") else None
        schema = request_schema(req["tools"], stats, lang, not args.open_objects)
        keys = [tool_key(t) for t in req["tools"]]
        new_tools = len(set(keys) - seen_tools)
        seen_tools.update(keys)
        rec = {"i": i, "id": req["id"], "category": req["category"], "n_tools": len(req["tools"]),
               "distinct_tools": len(set(keys)), "new_tools": new_tools, "unique_tools_seen": len(seen_tools), "schema_bytes": len(schema),
               "conversion": stats, "compile_ms": {}, "ttfm_ms": {}}
        masks, compiled = {}, {}
        for mode in MODES:
            try:
                c_ms, t_ms, k_ms, mask, cg = runner.run(mode, schema)
            except Exception as exc:
                rec["compile_ms"][mode] = rec["ttfm_ms"][mode] = None
                result["errors"].append({"i": i, "id": req["id"], "mode": mode,
                                         "error": f"{type(exc).__name__}: {str(exc)[:400]}"})
                log.error("%s %s: %s", req["id"], mode, exc)
                continue
            rec["compile_ms"][mode], rec["ttfm_ms"][mode] = c_ms, t_ms
            if "cold" in mode:
                rec.setdefault("construct_ms", {})[mode] = k_ms
            masks[mode] = mask
            if mode == "xg2jax-cold-eager":
                rec["num_scannable_states"] = int(cg.num_scannable_states)
            if i < args.walk_requests and mode in ("xg2jax-cold-eager", "xg2jax-warm-eager", "xgrammar-warm-eager"):
                compiled[mode] = cg
            del cg
        # warm caches after this request
        info = runner.warm["xg2jax-warm-eager"].cache_info()
        d_hit = info["rule_hits"] - prev_info["rule_hits"]
        d_miss = info["rule_misses"] - prev_info["rule_misses"]
        rec["warm_eager_cache"] = {
            "rule_hit_share": d_hit / (d_hit + d_miss) if d_hit + d_miss else None,
            "rule_hits": d_hit, "rule_misses": d_miss,
            "grammar_hit": info["grammar_hits"] - prev_info["grammar_hits"],
            "cache_size_bytes": int(runner.warm["xg2jax-warm-eager"].get_cache_size_bytes()),
            "rule_bytes": int(info["rule_bytes"]), "grammar_bytes": int(info["grammar_bytes"]),
            "structure_bytes": int(info["structure_bytes"]), "num_structures": int(info["num_structures"]),
            "rule_entries": len(info["rule_entry_sizes"]),
        }
        prev_info = info
        jinfo = runner.warm["xg2jax-warm-jit"].cache_info()
        jh, jm = jinfo["rule_hits"] - prev_jit["rule_hits"], jinfo["rule_misses"] - prev_jit["rule_misses"]
        rec["warm_jit_cache"] = {"rule_hit_share": jh / (jh + jm) if jh + jm else None,
                                 "cache_size_bytes": int(runner.warm["xg2jax-warm-jit"].get_cache_size_bytes())}
        prev_jit = jinfo
        rec["xgrammar_cache_size_bytes"] = {}
        for mode in ("xgrammar-warm-eager", "xgrammar-warm-jit"):
            try:
                rec["xgrammar_cache_size_bytes"][mode] = int(runner.warm[mode].get_cache_size_bytes())
            except Exception:  # pragma: no cover
                rec["xgrammar_cache_size_bytes"][mode] = None
        # sanity: first-step masks
        xm = [m for k, m in masks.items() if k.startswith("xg2jax")]
        gm = masks.get("xgrammar-warm-eager")
        if len(xm) == 4:
            first_mask_agree["compared"] += 1
            if all(np.array_equal(xm[0], m) for m in xm[1:]):
                first_mask_agree["xg2jax_all_modes"] += 1
            if gm is not None and np.array_equal(xm[0] & normal, gm & normal):
                first_mask_agree["xgrammar_vs_xg2jax_nonspecial"] += 1
        if compiled.get("xg2jax-cold-eager") is not None and compiled.get("xg2jax-warm-eager") is not None:
            t = req["tools"][0]
            prefix = '{"name":' + json.dumps(t["name"], ensure_ascii=False) + ',"arguments":{'
            w = walk_masks(runner, compiled, prefix, greedy, normal)
            w["i"], w["id"] = i, req["id"]
            result["walks"].append(w)
        compiled.clear()
        result["requests"].append(rec)
        if hasattr(bar, "set_postfix"):
            bar.set_postfix(cold=f"{rec['compile_ms'].get('xg2jax-cold-eager') or 0:.0f}ms",
                            warm=f"{rec['compile_ms'].get('xg2jax-warm-eager') or 0:.0f}ms",
                            hit=f"{(rec['warm_eager_cache']['rule_hit_share'] or 0):.2f}")
    result["meta"]["loadavg_end"] = list(os.getloadavg())
    result["meta"]["xg2jax_revision_end"] = workloads.xg2jax_revision()
    result["meta"]["elapsed_s"] = time.perf_counter() - start
    result["first_mask_agreement"] = first_mask_agree
    result["summary"] = summarize(result)
    return result


def summarize(result) -> dict:
    reqs = result["requests"]
    s = {"n_requests": len(reqs), "modes": {}}
    for mode in MODES:
        c = [r["compile_ms"].get(mode) for r in reqs]
        t = [r["ttfm_ms"].get(mode) for r in reqs]
        s["modes"][mode] = {"compile_p50": pct(c, 50), "compile_p90": pct(c, 90), "compile_mean": (
            float(np.mean([v for v in c if v is not None])) if any(v is not None for v in c) else None),
            "ttfm_p50": pct(t, 50), "ttfm_p90": pct(t, 90), "n_ok": sum(v is not None for v in c)}
    m = s["modes"]

    def ratio(a, b, key):
        return m[a][key] / m[b][key] if m[a][key] and m[b][key] else None

    s["ratios"] = {
        "xg2jax_cold_over_warm_eager_compile_p50": ratio("xg2jax-cold-eager", "xg2jax-warm-eager", "compile_p50"),
        "xg2jax_cold_over_warm_eager_compile_p90": ratio("xg2jax-cold-eager", "xg2jax-warm-eager", "compile_p90"),
        "xg2jax_cold_over_warm_jit_ttfm_p50": ratio("xg2jax-cold-jit", "xg2jax-warm-jit", "ttfm_p50"),
        "xgrammar_eager_over_xg2jax_warm_eager_compile_p50": ratio("xgrammar-warm-eager", "xg2jax-warm-eager",
                                                                   "compile_p50"),
        "xgrammar_jit_over_xg2jax_warm_jit_ttfm_p50": ratio("xgrammar-warm-jit", "xg2jax-warm-jit", "ttfm_p50"),
        "xgrammar_jit_over_xg2jax_warm_eager_ttfm_p50": ratio("xgrammar-warm-jit", "xg2jax-warm-eager", "ttfm_p50"),
        "xgrammar_eager_over_xg2jax_warm_eager_ttfm_p50": ratio("xgrammar-warm-eager", "xg2jax-warm-eager",
                                                                "ttfm_p50"),
    }
    if reqs:
        last = reqs[-1]
        s["unique_tools"] = last["unique_tools_seen"]
        s["tool_uses"] = sum(r["n_tools"] for r in reqs)
        s["final_cache"] = last["warm_eager_cache"]
        s["rule_bytes_per_unique_tool"] = last["warm_eager_cache"]["rule_bytes"] / max(1, last["unique_tools_seen"])
        shares = [r["warm_eager_cache"]["rule_hit_share"] for r in reqs[1:]
                  if r["warm_eager_cache"]["rule_hit_share"] is not None]
        s["rule_hit_share_p50_after_first"] = pct(shares, 50)
        for mode in ("xg2jax-cold-eager", "xg2jax-warm-eager", "xg2jax-warm-jit", "xgrammar-warm-eager",
                     "xgrammar-warm-jit"):
            key = "compile_ms" if "eager" in mode else "ttfm_ms"
            seen = [r[key].get(mode) for r in reqs if r["new_tools"] == 0]
            new = [r[key].get(mode) for r in reqs if r["new_tools"] > 0]
            s.setdefault("split_by_new_tools", {})[mode] = {
                "metric": key, "all_tools_seen_before_n": len(seen), "all_tools_seen_before_p50": pct(seen, 50),
                "some_new_tools_n": len(new), "some_new_tools_p50": pct(new, 50)}
        # What a cache keyed on anything a request's tools contain can save: nothing, for a request whose
        # tools are all new. The cold/warm ratio per group shows what the sub-structure sharing gives there.
        groups = {"all_tools_seen_before": lambda r: r["new_tools"] == 0,
                  "some_tools_new": lambda r: 0 < r["new_tools"] < r.get("distinct_tools", r["n_tools"]),
                  "all_tools_new": lambda r: r["new_tools"] > 0 and r["new_tools"] == r.get("distinct_tools", r["n_tools"])}
        s["by_request_novelty"] = {}
        for g, pick in groups.items():
            rs = [r for r in reqs if pick(r)]
            cold = pct([r["compile_ms"].get("xg2jax-cold-eager") for r in rs], 50)
            warm = pct([r["compile_ms"].get("xg2jax-warm-eager") for r in rs], 50)
            s["by_request_novelty"][g] = {"n": len(rs), "cold_eager_compile_p50": cold, "warm_eager_compile_p50": warm,
                                          "cold_over_warm": cold / warm if cold and warm else None}
        s["tools_per_request_p50"] = pct([r["n_tools"] for r in reqs], 50)
        s["rule_kb_per_unique_tool_at"] = {
            f"{q}%": reqs[max(0, int(len(reqs) * q / 100) - 1)]["warm_eager_cache"]["rule_bytes"] / 1e3
            / max(1, reqs[max(0, int(len(reqs) * q / 100) - 1)]["unique_tools_seen"]) for q in (10, 25, 50, 75, 100)}
        s["grammar_hits_warm_eager"] = sum(r["warm_eager_cache"]["grammar_hit"] for r in reqs)
        s["requests_with_rule_hits"] = sum(1 for r in reqs if r["warm_eager_cache"]["rule_hits"] > 0)
        s["scannable_states_p50"] = pct([r.get("num_scannable_states") for r in reqs], 50)
        s["scannable_states_max"] = max((r.get("num_scannable_states") or 0) for r in reqs)
    return s


# ----------------------------------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------------------------------


def fmt(x, d=1):
    if x is None:
        return "—"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{d}f}"


def markdown(result) -> str:
    s = result["summary"]
    meta = result["meta"]
    lines = [f"{s['n_requests']} BFCL v3 requests ({meta['vocab']['name']}, {meta['vocab']['size']:,} tokens), "
             f"{s.get('tool_uses', 0)} tool uses, {s.get('unique_tools', 0)} unique tools; ms per request", "",
             "| engine / mode | compile p50 | compile p90 | compile mean | TTFM p50 | TTFM p90 | ok |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for mode, r in s["modes"].items():
        lines.append(f"| {mode} | {fmt(r['compile_p50'])} | {fmt(r['compile_p90'])} | {fmt(r['compile_mean'])} | "
                     f"{fmt(r['ttfm_p50'])} | {fmt(r['ttfm_p90'])} | {r['n_ok']}/{s['n_requests']} |")
    lines.append("")
    for k, v in s["ratios"].items():
        lines.append(f"- {k}: {fmt(v, 2)}")
    if "final_cache" in s:
        fc = s["final_cache"]
        reqs = result["requests"]
        xc = reqs[-1].get("xgrammar_cache_size_bytes", {})
        jit_mb = reqs[-1]["warm_jit_cache"]["cache_size_bytes"] / 1e6
        lines.append(f"- cache bytes at the end: xg2jax warm JIT {jit_mb:.1f} MB; xgrammar warm eager {(xc.get('xgrammar-warm-eager') or 0) / 1e6:.1f} MB, xgrammar warm "
                     f"JIT {(xc.get('xgrammar-warm-jit') or 0) / 1e6:.1f} MB")
        lines.append(f"- warm eager cache at the end: {fc['cache_size_bytes'] / 1e6:.1f} MB total, rule "
                     f"{fc['rule_bytes'] / 1e6:.1f} MB ({s['rule_bytes_per_unique_tool'] / 1e3:.0f} kB per unique "
                     f"tool), grammar {fc['grammar_bytes'] / 1e6:.1f} MB; rule-level hit share p50 (requests 2..n) "
                     f"{fmt(s['rule_hit_share_p50_after_first'], 3)}")
        lines.append(f"- scannable states per grammar: p50 {fmt(s['scannable_states_p50'], 0)}, "
                     f"max {s['scannable_states_max']:,}")
    for mode, d in s.get("split_by_new_tools", {}).items():
        lines.append(f"- {mode} {d['metric']} p50: requests whose tools were all seen before "
                     f"{fmt(d['all_tools_seen_before_p50'])} (n={d['all_tools_seen_before_n']}), requests with new "
                     f"tools {fmt(d['some_new_tools_p50'])} (n={d['some_new_tools_n']})")
    if "by_request_novelty" in s:
        lines.append(f"- tools per request p50: {fmt(s['tools_per_request_p50'], 0)}; xg2jax eager compile p50 cold / "
                     "warm by what the request brings: " + "; ".join(
                         f"{g.replace('_', ' ')} (n={d['n']}) {fmt(d['cold_eager_compile_p50'], 2)} / "
                         f"{fmt(d['warm_eager_compile_p50'], 2)} ms = {fmt(d['cold_over_warm'], 2)}x"
                         for g, d in s["by_request_novelty"].items()))
    if "rule_kb_per_unique_tool_at" in s:
        lines.append("- rule kB per unique tool at 10/25/50/75/100% of the requests: " + " / ".join(
            f"{v:.0f}" for v in s["rule_kb_per_unique_tool_at"].values()))
    if "grammar_hits_warm_eager" in s:
        lines.append(f"- xg2jax warm eager: {s['grammar_hits_warm_eager']} grammar-level hits; "
                     f"{s['requests_with_rule_hits']} requests with any rule-level hit")
    fa = result["first_mask_agreement"]
    lines.append(f"- first-step masks: xg2jax cold/warm x eager/JIT identical on {fa['xg2jax_all_modes']}/"
                 f"{fa['compared']} requests; xgrammar = xg2jax (non-special tokens) on "
                 f"{fa['xgrammar_vs_xg2jax_nonspecial']}/{fa['compared']}")
    for w in result["walks"]:
        lines.append(f"- walk {w['id']} `{w['prefix'][:60]}`: xg2jax cold = warm on {w['xg2jax_identical_steps']}/"
                     f"{w['steps']} steps, xgrammar = xg2jax on {w['xgrammar_identical_steps']}/{w['steps']}"
                     + (f"; errors: {w['errors']}" if w["errors"] else ""))
    if result["errors"]:
        lines.append(f"- errors: {len(result['errors'])}")
        for e in result["errors"][:10]:
            lines.append(f"  - {e['id']} {e['mode']}: {e['error'][:200]}")
    return "\n".join(lines)


def plot(result, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    reqs = result["requests"]
    fig, axes = plt.subplots(1, 4, figsize=(23, 5.2))
    ax = axes[0]
    data, labels = [], []
    for mode in MODES:
        key = "ttfm_ms"
        vals = [r[key][mode] for r in reqs if r[key].get(mode) is not None]
        if vals:
            data.append(vals)
            labels.append(mode)
    ax.boxplot(data, orientation="horizontal", showfliers=True, whis=(10, 90), flierprops={"markersize": 2})
    ax.set_yticks(range(1, len(labels) + 1), labels)
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_xlabel("time to first mask per request, ms (log; whiskers p10-p90)")
    ax.set_title("compile + first mask per request")
    ax.grid(axis="x", alpha=0.3)

    uniq = [r["unique_tools_seen"] for r in reqs]
    idx = [r["i"] + 1 for r in reqs]
    c = [r["warm_eager_cache"] for r in reqs]
    ax = axes[1]
    ax.plot(uniq, [x["cache_size_bytes"] / 1e6 for x in c], "o-", ms=3, label="get_cache_size_bytes()")
    ax.plot(uniq, [x["rule_bytes"] / 1e6 for x in c], "s-", ms=3, label="rule_bytes")
    ax.plot(uniq, [x["grammar_bytes"] / 1e6 for x in c], "^-", ms=3, label="grammar_bytes")
    xg = [(r.get("xgrammar_cache_size_bytes") or {}).get("xgrammar-warm-eager") for r in reqs]
    if any(v is not None for v in xg):
        ax.plot(uniq, [(v or 0) / 1e6 for v in xg], "k-", lw=1, label="xgrammar warm eager (get_cache_size_bytes)")
    ax.set_xlabel("unique tools seen")
    ax.set_ylabel("MB (xg2jax warm eager compiler)")
    ax.set_title("cache bytes vs unique tools")
    ax.legend()
    ax.grid(alpha=0.3)

    ax = axes[2]
    ax.plot(idx, [x["cache_size_bytes"] / 1e6 for x in c], "o-", ms=3, label="total MB")
    ax.plot(idx, [x["rule_bytes"] / 1e6 for x in c], "s-", ms=3, label="rule MB")
    ax.plot(idx, uniq, "k--", lw=1, label="unique tools seen")
    ax.set_xlabel("requests")
    ax.set_ylabel("MB / tools")
    ax2 = ax.twinx()
    ax2.plot(idx, [x["rule_bytes"] / 1e3 / max(1, u) for x, u in zip(c, uniq)], "r:", lw=1.5,
             label="rule kB per unique tool")
    ax2.set_ylabel("rule kB per unique tool", color="r")
    ax2.set_ylim(bottom=0)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, loc="upper left")
    ax.set_title("cache bytes vs requests")
    ax.grid(alpha=0.3)
    ax = axes[3]
    nov = result["summary"].get("by_request_novelty", {})  # (absent from results written before the split)
    names = list(nov)
    xs = np.arange(len(names))
    cold = [nov[g]["cold_eager_compile_p50"] or 0 for g in names]
    warm = [nov[g]["warm_eager_compile_p50"] or 0 for g in names]
    ax.bar(xs - 0.2, cold, 0.4, label="xg2jax cold eager")
    ax.bar(xs + 0.2, warm, 0.4, label="xg2jax warm eager")
    for x, g in zip(xs, names):
        r = nov[g]["cold_over_warm"]
        ax.annotate(f"{r:.1f}x" if r else "", (x, max(cold[x], warm[x])), ha="center", va="bottom")
    ax.set_xticks(xs, [f"{g.replace('_', ' ')}\n(n={nov[g]['n']})" for g in names])
    ax.set_yscale("log")
    ax.set_ylabel("compile p50, ms (log)")
    ax.set_title("cold vs warm by what the request's tools are")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    meta = result["meta"]
    fig.suptitle(f"Per-request compilation, {len(reqs)} BFCL v3 requests, {meta['vocab']['name']} vocabulary, one "
                 f"thread (xg2jax {meta['versions']['xg2jax']} @ {meta.get('xg2jax_revision')}, xgrammar "
                 f"{meta['versions']['xgrammar']})")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", "--requests", type=int, default=None, help="requests sampled (default 800; 4 with --quick)")
    ap.add_argument("--categories", default=",".join(ALL_CATEGORIES),
                    help="BFCL v3 categories in the sampling pool (default: all eight)")
    ap.add_argument("--vocab", default="gemma3", help="gemma3 or qwen2 (xg2jax.vocab_packages)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget-min", type=float, default=None,
                    help="stop starting new requests after this many minutes (default 13; 0 = no limit)")
    ap.add_argument("--walk-requests", type=int, default=3,
                    help="for the first K requests, compare masks along a valid tool-call prefix (untimed)")
    ap.add_argument("--open-objects", action="store_true",
                    help="do not add additionalProperties to converted objects (engines then compile different "
                         "languages: see convert_bfcl_schema)")
    ap.add_argument("--quick", action="store_true", help="4 requests, results/dynamic_tools_quick.*")
    ap.add_argument("--data-dir", default=str(workloads.default_data_dir()))
    ap.add_argument("--out", default=None)
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--from-json", default=None, metavar="PATH", help="reprint + redraw an earlier result, no run")
    args = ap.parse_args(argv)
    if args.requests is None:
        args.requests = 4 if args.quick else 800
    if args.budget_min is None:
        args.budget_min = 13.0
    if args.out is None:
        args.out = str(HERE / "results" / ("dynamic_tools_quick.json" if args.quick else "dynamic_tools.json"))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    if args.from_json:
        result = json.loads(Path(args.from_json).read_text())
        result["summary"] = summarize(result)
        plot(result, Path(args.from_json).with_suffix(".png"))
        print(markdown(result))
        return 0
    result = run(args)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False))
    png = out.with_suffix(".png")
    try:
        plot(result, png)
    except Exception as exc:
        log.error("plot failed: %s: %s", type(exc).__name__, exc)
    print(markdown(result))
    log.info("wrote %s and %s", out, png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
