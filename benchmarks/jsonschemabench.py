#!/usr/bin/env python3
"""JSONSchemaBench (maskbench) against xg2jax, xgrammar 0.2.9 (eager and JIT) and llguidance 1.9.1, in one run.

For every sampled schema of every subset and every engine, on one real vocabulary (Gemma 3 by default), one thread:

1. **compile** the schema cold (fresh compiler, caches off; ``peers.JSON_SCHEMA_OPTIONS``: free whitespace, JSON
   Schema defaults for additional properties/items, properties in schema order, each engine's format handling).
   A Python exception is a compile *error*; a compile running longer than ``--compile-timeout`` is a *timeout*
   (every engine runs in a forked worker process, killed and restarted on a timeout or a crash; a (re)started
   worker first compiles a small warm-up schema, untimed, so one-time initialisation is not charged to a schema).
   Every compile starts from cold CPU caches (``evict_caches``), as in serving, where a model step runs between two
   requests' compiles.
2. **time to first mask (TTFM)** = compile + creating a matcher + the first ``fill_next_token_bitmask``. With
   ``--repeats N`` the schema is compiled cold N times in a row and its TTFM is the median (this machine's
   run-to-run noise on one sub-millisecond compile is several percent; the median of 3 steadies the percentiles).
3. **valid instances** (each test with ``valid: true``, ``json.dumps(data, ensure_ascii=False)``, tokenized by
   greedy longest match over the vocabulary's decoded bytes, the same ids for every engine, see workloads.py):
   the first one continues on the TTFM matcher, later ones get a new matcher; per token: fill the mask, check the
   token's bit, accept it; after the last token fill once more and check a stop token's bit. The instance is
   *accepted* iff every token was allowed and accepted and a stop token is allowed at the end.
4. **whole per-schema cost** = compile + every matcher creation + every mask fill along every valid instance (the
   work a server does to decode those instances under the schema). Only schemas whose instance run finished.
5. **invalid instances** (``valid: false``): a new matcher accepts the tokens one by one (no masks); the instance
   is *rejected* iff some token is refused or no stop token is allowed at the end.

Subsampling: ``--per-subset N`` schemas per subset, chosen by ``random.Random(f"{seed}:{subset}")`` (the whole
subset when it has N or fewer), ``--max-instances`` valid and invalid instances per schema (first ones in file
order). Output: a markdown table on stdout, ``results/jsonschemabench.json`` (every per-schema row, the sample,
grouped error messages, rejected valid / accepted invalid instances) and ``results/jsonschemabench.png``.
``--from-json PATH`` reprints and redraws an earlier run without running anything.
"""

from __future__ import annotations

import argparse
import collections
import datetime as _dt
import gzip
import json
import logging
import multiprocessing as mp
import os
import platform
import random
import re
import signal
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE.parent))

import peers  # noqa: E402  (sets the one-thread environment before numpy / engines load)
import numpy as np  # noqa: E402
import workloads  # noqa: E402
from forked_worker import ForkedWorker, write_results  # noqa: E402

try:
    from tqdm import tqdm
except ImportError:  # pragma: no cover
    def tqdm(it=None, **_kw):
        return it

log = logging.getLogger("jsonschemabench")

DEFAULT_ENGINES = "xg2jax,xg2jax-lenient,xgrammar-eager,xgrammar-dyn,llguidance"
ENGINE_LABELS = {"xgrammar": "xgrammar-eager", "xgrammar-dyn": "xgrammar-jit"}


def label(engine: str) -> str:
    return ENGINE_LABELS.get(engine, engine)


# ----------------------------------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------------------------------


def load_sample(data_dir: Path, subsets, per_subset: int, seed: int, max_instances: int, greedy):
    """Returns a list of schema dicts: subset, name, schema (JSON text), valid/invalid token lists."""
    folder = Path(data_dir) / "jsonschemabench" / "maskbench"
    files = sorted(folder.glob("*.jsonl.gz"))
    if not files:
        raise SystemExit(f"no maskbench files in {folder} (pass --data-dir)")
    out, sizes = [], {}
    for f in files:
        subset = f.name[: -len(".jsonl.gz")]
        if subsets and subset not in subsets:
            continue
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh]
        sizes[subset] = len(rows)
        if per_subset and len(rows) > per_subset:
            rng = random.Random(f"{seed}:{subset}")
            idx = sorted(rng.sample(range(len(rows)), per_subset))
            rows = [rows[i] for i in idx]
        for row in rows:
            item = {"subset": subset, "name": row["name"],
                    "schema": json.dumps(row["schema"], ensure_ascii=False), "valid": [], "invalid": [],
                    "untokenizable": 0}
            for t in row.get("tests") or []:
                key = "valid" if t.get("valid") else "invalid"
                if max_instances and len(item[key]) >= max_instances:
                    continue
                try:
                    text = json.dumps(t["data"], ensure_ascii=False, allow_nan=False)
                    item[key].append(greedy.encode(text.encode("utf-8")))
                except ValueError:
                    item["untokenizable"] += 1
            out.append(item)
    return out, sizes


# ----------------------------------------------------------------------------------------------------------------
# Worker process (one per engine, forked after the vocabulary is loaded)
# ----------------------------------------------------------------------------------------------------------------

_VOCAB = None  # set in the parent before forking


def _bit(mask, t: int) -> bool:
    return bool((int(mask[t >> 5]) >> (t & 31)) & 1)


def _context(tokens, step, width=40) -> str:
    return b"".join(_VOCAB.decoded[t] for t in tokens[:step])[-width:].decode("utf-8", errors="replace")


def warm_up(eng) -> None:
    """One untimed compile of a small schema after (re)starting a worker, with a mask at every token of a valid
    instance, so one-time initialisation (lazy imports, caches of the engine's front end, xg2jax's per-vocabulary
    token slice of the string-body loop, like llguidance's slices built at its tokenizer setup) is not charged to
    whichever measured schema first needs it. (With only the first mask, the string-body slice, ~20 ms on Gemma 3,
    fell to the first schema with a string value in the shuffled order, every run the same one.)"""
    try:
        eng.compile("json_schema", json.dumps(WARM_UP_SCHEMA))
        eng.new_matcher()
        eng.fill()
        for token in _WARM_UP_TOKENS or []:
            if not eng.accept(token):
                break
            eng.fill()
    except Exception as exc:  # a warm-up is best effort; never lose an engine to it
        log.warning("warm-up failed for %s: %s: %s", eng.name, type(exc).__name__, exc)
    eng.release_grammar()


WARM_UP_SCHEMA = {"type": "object", "properties": {"a": {"type": "string", "pattern": "^[a-z]+$"},
                                                   "b": {"type": "array", "items": {"type": "integer"}},
                                                   "c": {"enum": [1, "x"]}, "d": {"type": "string"}},
                  "required": ["a", "d"]}
WARM_UP_INSTANCE = '{"a": "abc", "b": [1, 2], "c": "x", "d": "Some text, with spaces."}'
_WARM_UP_TOKENS = None  # WARM_UP_INSTANCE's greedy tokens, set in the parent before forking


# Twice the last-level cache of the machines this runs on (32 MiB here); 8-byte words.
_EVICTION_WORDS = (64 << 20) // 8
_eviction_buffer = None


def evict_caches() -> None:
    """Read and write a buffer twice the size of the last-level cache, so the next compile starts cold whichever
    engine ran before it. Without it the order of the workers biases TTFM: forked workers share their library's code
    and read-only pages, so the second worker of one library runs warm (``xg2jax-lenient`` after ``xg2jax`` took
    ~15% less time for identical work)."""
    global _eviction_buffer
    if _eviction_buffer is None:
        _eviction_buffer = np.zeros(_EVICTION_WORDS)
    _eviction_buffer += 1.0


def _worker(conn, engine_name: str, stderr_path) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if stderr_path:  # the engines' native warnings (xgrammar logs every approximation it makes) go to a file
        fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 2)
        os.close(fd)
    try:
        eng = peers.make_engine(engine_name)
        setup_ms = eng.setup(_VOCAB)
        warm_up(eng)
        conn.send(("ready", setup_ms, eng.version))
    except Exception as exc:
        conn.send(("setup_error", f"{type(exc).__name__}: {exc}"))
        return
    stop_ids = list(_VOCAB.stop_token_ids)
    perf = time.perf_counter_ns
    while True:
        job = conn.recv()
        if job is None:
            return
        try:
            evict_caches()
            compile_ms = eng.compile("json_schema", job["schema"])
        except Exception as exc:
            conn.send(("compile_error", f"{type(exc).__name__}: {exc}"[:600]))
            continue
        conn.send(("compiled", compile_ms))
        res = {"compile_ms": compile_ms, "valid": [], "invalid": [], "run_error": None}
        try:
            mask = eng.mask
            t0 = perf()
            eng.new_matcher()
            t1 = perf()
            eng.fill()
            t2 = perf()
            res["matcher_ms"] = (t1 - t0) / 1e6
            res["first_fill_ms"] = (t2 - t1) / 1e6
            res["ttfm_ms"] = compile_ms + (t2 - t0) / 1e6
            if job.get("repeats", 1) > 1:
                # More cold compiles of the same schema (time to first mask each); the schema's TTFM is their
                # median, so one disturbed compile does not move a percentile. The instances below run on the last.
                ttfms, compiles = [res["ttfm_ms"]], [compile_ms]
                for _ in range(job["repeats"] - 1):
                    eng.release_grammar()
                    evict_caches()
                    c_ms = eng.compile("json_schema", job["schema"])
                    t0 = perf()
                    eng.new_matcher()
                    eng.fill()
                    ttfms.append(c_ms + (perf() - t0) / 1e6)
                    compiles.append(c_ms)
                res["ttfm_repeats_ms"] = ttfms
                res["ttfm_ms"] = float(np.median(ttfms))
                res["compile_ms"] = compile_ms = float(np.median(compiles))
                t0 = perf()
                eng.new_matcher()
                eng.fill()
                t2 = perf()
            overhead_ns = t2 - t0  # matcher creations + fills along the valid instances
            n_fills = 1
            for i, toks in enumerate(job["valid"]):
                if i > 0:
                    t0 = perf()
                    eng.new_matcher()
                    eng.fill()
                    overhead_ns += perf() - t0
                    n_fills += 1
                fail = None
                for step, tok in enumerate(toks):
                    if not _bit(mask, tok):
                        fail = {"kind": "forbidden", "step": step}
                        break
                    if not eng.accept(tok):
                        fail = {"kind": "accept_failed", "step": step}
                        break
                    t0 = perf()
                    eng.fill()
                    overhead_ns += perf() - t0
                    n_fills += 1
                if fail is None and not any(_bit(mask, s) for s in stop_ids):
                    fail = {"kind": "no_stop_at_end", "step": len(toks)}
                if fail is not None:
                    fail["token"] = repr(_VOCAB.decoded[toks[fail["step"]]]) if fail["step"] < len(toks) else None
                    fail["context"] = _context(toks, fail["step"])
                res["valid"].append(fail)
            res["cost_ms"] = compile_ms + overhead_ns / 1e6
            res["n_fills"] = n_fills
            for toks in job["invalid"]:
                eng.new_matcher()
                rejected = None
                for step, tok in enumerate(toks):
                    if not eng.accept(tok):
                        rejected = {"kind": "refused", "step": step}
                        break
                if rejected is None:
                    eng.fill()
                    if not any(_bit(mask, s) for s in stop_ids):
                        rejected = {"kind": "no_stop_at_end", "step": len(toks)}
                res["invalid"].append(rejected)
        except Exception as exc:
            res["run_error"] = f"{type(exc).__name__}: {exc}"[:600]
            res["run_traceback"] = traceback.format_exc()[-1500:]
        eng.release_grammar()
        conn.send(("done", res))


class Worker(ForkedWorker):
    """An engine in a forked process (forked_worker.py); its ready message is (setup ms, version)."""

    def __init__(self, engine: str, ctx, stderr_path=None):
        super().__init__(_worker, engine, ctx, stderr_path)
        self.setup_ms = []
        self.version = None

    def start(self, timeout=600.0):
        setup_ms, self.version = super().start(timeout)
        self.setup_ms.append(setup_ms)

    def run(self, job, compile_timeout, run_timeout) -> dict:
        self.ensure_started()
        self.conn.send(job)
        msg = self.recv(compile_timeout)
        if msg[0] == "compile_error":
            return {"status": "error", "error": msg[1]}
        if msg[0] in ("timeout", "crash"):
            code = self.proc.exitcode if msg[0] == "crash" else None
            self.kill()
            if msg[0] == "timeout":
                return {"status": "timeout", "error": f"compile > {compile_timeout:g} s"}
            return {"status": "crash", "error": f"worker died while compiling (exit code {code})"}
        compile_ms = msg[1]
        msg = self.recv(run_timeout)
        if msg[0] != "done":
            code = self.proc.exitcode if msg[0] == "crash" else None
            self.kill()
            what = f"instances > {run_timeout:g} s" if msg[0] == "timeout" else f"worker died (exit code {code})"
            return {"status": "run_" + msg[0], "compile_ms": compile_ms, "error": what}
        res = msg[1]
        res["status"] = "run_error" if res.get("run_error") else "ok"
        if res.get("run_error"):
            res["error"] = res["run_error"]
        return res


# ----------------------------------------------------------------------------------------------------------------
# Aggregation
# ----------------------------------------------------------------------------------------------------------------


def pct(vals, q):
    return float(np.percentile(np.asarray(vals, dtype=np.float64), q)) if vals else None


def normalize_error(msg: str) -> str:
    """Group error messages: first line, quoted text / numbers / JSON pointers replaced."""
    m = (msg or "").strip().splitlines()[0] if msg else ""
    m = re.sub(r"^(\w+: )\[\d\d:\d\d:\d\d\] \S+:\d+: ", r"\1", m)  # xgrammar's log prefix
    m = re.sub(r"at '/[^']*'", "at '…'", m)  # JSON pointers
    m = re.sub(r"(regex|pattern|patternProperty regexes) (\"[^\"]*\"|/[^/]*/)", r"\1 …", m)
    m = re.sub(r'"(?![A-Za-z_$@]+")[^"]*"', '"…"', m)  # quoted data, keeping quoted names
    m = re.sub(r"#/[^\s,;:)]*", "#/…", m)
    m = re.sub(r"\b\d+(\.\d+)?\b", "N", m)
    return m[:160]


def aggregate(rows, engines, subsets):
    """rows: per-schema x engine dicts. Returns {"per_subset": {subset: {engine: stats}}, "overall": {...},
    "common": {...}, "pairwise_vs_llguidance": {...}}."""

    def stats(rs):
        n = len(rs)
        c = collections.Counter(r["status"] for r in rs)
        compiled = [r for r in rs if r["status"] not in ("error", "timeout", "crash")]
        ok = [r for r in rs if r["status"] == "ok"]
        v_tot = sum(r.get("n_valid", 0) for r in ok)
        v_acc = sum(r.get("valid_accepted", 0) for r in ok)
        i_tot = sum(r.get("n_invalid", 0) for r in ok)
        i_rej = sum(r.get("invalid_rejected", 0) for r in ok)
        ttfm = [r["ttfm_ms"] for r in ok]
        cost = [r["cost_ms"] for r in ok]
        return {
            "schemas": n, "compiled": len(compiled), "error": c["error"], "timeout": c["timeout"],
            "crash": c["crash"], "run_timeout": c["run_timeout"], "run_crash": c["run_crash"],
            "run_error": c["run_error"], "compiled_share": len(compiled) / n if n else None,
            "valid": v_tot, "valid_accepted": v_acc, "invalid": i_tot, "invalid_rejected": i_rej,
            "schemas_valid_rejected": sum(1 for r in ok if r.get("valid_accepted", 0) < r.get("n_valid", 0)),
            "schemas_invalid_accepted": sum(1 for r in ok if r.get("invalid_rejected", 0) < r.get("n_invalid", 0)),
            "ttfm_p50_ms": pct(ttfm, 50), "ttfm_p90_ms": pct(ttfm, 90),
            "cost_p50_ms": pct(cost, 50), "cost_p90_ms": pct(cost, 90),
            "compile_p50_ms": pct([r["compile_ms"] for r in ok], 50),
        }

    by = collections.defaultdict(list)
    for r in rows:
        by[(r["subset"], r["engine"])].append(r)
    per_subset = {s: {e: stats(by[(s, e)]) for e in engines} for s in subsets}
    overall = {e: stats([r for r in rows if r["engine"] == e]) for e in engines}
    # Schemas every engine finished (status ok): the like-for-like timing comparison.
    status = collections.defaultdict(dict)
    for r in rows:
        status[(r["subset"], r["name"])][r["engine"]] = r
    common_keys = [k for k, d in status.items() if all(d.get(e, {}).get("status") == "ok" for e in engines)]
    common = {e: {"schemas": len(common_keys),
                  "ttfm_p50_ms": pct([status[k][e]["ttfm_ms"] for k in common_keys], 50),
                  "ttfm_p90_ms": pct([status[k][e]["ttfm_ms"] for k in common_keys], 90),
                  "ttfm_mean_ms": (sum(status[k][e]["ttfm_ms"] for k in common_keys) / len(common_keys)
                                   if common_keys else None),
                  "cost_p50_ms": pct([status[k][e]["cost_ms"] for k in common_keys], 50),
                  "cost_p90_ms": pct([status[k][e]["cost_ms"] for k in common_keys], 90)} for e in engines}
    pair = {}
    if "xg2jax" in engines and "llguidance" in engines:
        keys = [k for k, d in status.items()
                if d.get("xg2jax", {}).get("status") == "ok" and d.get("llguidance", {}).get("status") == "ok"]
        pair = {"schemas": len(keys)}
        for e in ("xg2jax", "llguidance"):
            for m in ("ttfm", "cost"):
                vals = [status[k][e][m + "_ms"] for k in keys]
                pair[f"{e}_{m}_p50_ms"] = pct(vals, 50)
                pair[f"{e}_{m}_p90_ms"] = pct(vals, 90)
        pair["xg2jax_ttfm_faster_share"] = (
            sum(status[k]["xg2jax"]["ttfm_ms"] <= status[k]["llguidance"]["ttfm_ms"] for k in keys) / len(keys)
            if keys else None)
        pair["xg2jax_cost_faster_share"] = (
            sum(status[k]["xg2jax"]["cost_ms"] <= status[k]["llguidance"]["cost_ms"] for k in keys) / len(keys)
            if keys else None)
    return {"per_subset": per_subset, "overall": overall, "common": common, "pairwise_vs_llguidance": pair}


def error_groups(rows, engines, top=15):
    out = {}
    for e in engines:
        c = collections.Counter()
        ex = {}
        for r in rows:
            if r["engine"] == e and r["status"] != "ok":
                key = f"[{r['status']}] " + normalize_error(r.get("error") or "")
                c[key] += 1
                ex.setdefault(key, f"{r['name']}: {(r.get('error') or '')[:300]}")
        out[e] = [{"count": n, "group": k, "example": ex[k]} for k, n in c.most_common(top)]
    return out


def wrong_answers(rows, engines, limit=40):
    out = {}
    for e in engines:
        lst = []
        for r in rows:
            if r["engine"] != e or r["status"] != "ok":
                continue
            for f in r.get("valid_failures", []):
                lst.append({"schema": r["name"], "what": "valid rejected", **f})
            if r.get("invalid_accepted_idx"):
                lst.append({"schema": r["name"], "what": "invalid accepted",
                            "instances": r["invalid_accepted_idx"]})
        out[e] = {"count": len(lst), "examples": lst[:limit]}
    return out


# ----------------------------------------------------------------------------------------------------------------
# Main loop
# ----------------------------------------------------------------------------------------------------------------


def pin_xg2jax():
    """Import xg2jax's modules in the parent before forking, so every worker (restarts included) runs the code that
    was on disk at the start even if the checkout changes during the run."""
    try:
        import importlib

        for mod in ("xg2jax", "xg2jax.json_schema", "xg2jax.compiler", "xg2jax.matcher", "xg2jax.testing"):
            importlib.import_module(mod)
    except Exception as exc:  # not installed: the xg2jax worker reports it
        log.warning("could not import xg2jax up front: %s", exc)


def run(args) -> dict:
    global _VOCAB, _WARM_UP_TOKENS
    engines = peers.expand_engines(args.engines)
    subsets = [s for s in (args.subsets or "").split(",") if s]
    t0 = time.perf_counter()
    _VOCAB = workloads.load_vocab(args.vocab)
    greedy = workloads.GreedyTokenizer(_VOCAB)
    _WARM_UP_TOKENS = greedy.encode(WARM_UP_INSTANCE.encode("utf-8"))
    log.info("vocab %s: %d tokens (%.1f s)", args.vocab, _VOCAB.vocab_size, time.perf_counter() - t0)
    sample, sizes = load_sample(Path(args.data_dir), subsets, args.per_subset, args.seed, args.max_instances, greedy)
    subsets = sorted({s["subset"] for s in sample})
    log.info("%d schemas sampled from %d subsets (%s per subset, seed %d); %d valid, %d invalid instances",
             len(sample), len(subsets), args.per_subset or "all", args.seed,
             sum(len(s["valid"]) for s in sample), sum(len(s["invalid"]) for s in sample))

    if args.worker_log:
        Path(args.worker_log).write_text("")
    pin_xg2jax()
    ctx = mp.get_context("fork")
    workers = {}
    for e in engines:
        w = Worker(e, ctx, args.worker_log)
        try:
            w.start()
            workers[e] = w
            log.info("  %s: %s, tokenizer setup %.0f ms", label(e), w.version, w.setup_ms[-1])
        except Exception as exc:
            for w2 in workers.values():
                w2.stop()
            raise SystemExit(f"engine {e} unavailable: {exc} (drop it with --engines to run without it)")
    engines = list(workers)

    meta = {
        "date": _dt.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
        "python": platform.python_version(), "machine": platform.machine(), "cpu_count": os.cpu_count(),
        "loadavg_start": list(os.getloadavg()),
        "engines": {label(e): w.version for e, w in workers.items()},
        "xg2jax_source": "xg2jax" if "xg2jax" in workers else None,
        "xg2jax_revision": workloads.xg2jax_revision(),
        "vocab": args.vocab, "vocab_size": _VOCAB.vocab_size,
        "json_schema_options": dict(peers.JSON_SCHEMA_OPTIONS),
        "threads": "1 (max_threads=1, RAYON_NUM_THREADS=1, torch.set_num_threads(1))",
        "tokenization": "greedy longest match over decoded token bytes, special tokens skipped; "
                        "json.dumps(data, ensure_ascii=False)",
        "seed": args.seed, "per_subset": args.per_subset, "max_instances": args.max_instances,
        "repeats": args.repeats,
        "compile_timeout_s": args.compile_timeout, "run_timeout_s": args.run_timeout,
        "subset_sizes": sizes, "sample": {s: [x["name"] for x in sample if x["subset"] == s] for s in subsets},
        "untokenizable_instances": sum(x["untokenizable"] for x in sample),
    }
    rows = []
    order = list(sample)
    random.Random(args.seed).shuffle(order)  # mix subsets so load drift spreads over all of them
    t_start = time.perf_counter()
    try:
        for item in tqdm(order, desc="schemas", disable=args.no_progress, smoothing=0.05):
            job = {"schema": item["schema"], "valid": item["valid"], "invalid": item["invalid"], "repeats": args.repeats}
            for e in engines:
                res = workers[e].run(job, args.compile_timeout, args.run_timeout)
                row = {"subset": item["subset"], "name": item["name"], "engine": e, "status": res["status"],
                       "error": res.get("error"), "compile_ms": res.get("compile_ms"),
                       "ttfm_ms": res.get("ttfm_ms"), "ttfm_repeats_ms": res.get("ttfm_repeats_ms"),
                       "cost_ms": res.get("cost_ms"), "n_fills": res.get("n_fills"),
                       "n_valid": len(item["valid"]), "n_invalid": len(item["invalid"])}
                if res["status"] == "ok":
                    fails = [(i, f) for i, f in enumerate(res["valid"]) if f is not None]
                    row["valid_accepted"] = len(item["valid"]) - len(fails)
                    row["valid_failures"] = [{"instance": i, **f} for i, f in fails]
                    acc = [i for i, r in enumerate(res["invalid"]) if r is None]
                    row["invalid_rejected"] = len(item["invalid"]) - len(acc)
                    row["invalid_accepted_idx"] = acc
                rows.append(row)
    finally:
        for w in workers.values():
            w.stop()
    meta["elapsed_s"] = time.perf_counter() - t_start
    meta["xg2jax_revision_end"] = workloads.xg2jax_revision()  # checkout moved?
    meta["loadavg_end"] = list(os.getloadavg())
    meta["tokenizer_setup_ms"] = {label(e): w.setup_ms for e, w in workers.items()}
    meta["worker_restarts"] = {label(e): w.restarts for e, w in workers.items()}
    return finish({"meta": meta, "engines": engines, "subsets": subsets, "rows": rows})


def finish(result):
    engines, subsets, rows = result["engines"], result["subsets"], result["rows"]
    result["summary"] = aggregate(rows, engines, subsets)
    result["error_groups"] = error_groups(rows, engines)
    result["wrong_answers"] = wrong_answers(rows, engines)
    result["targets"] = targets(result)
    return result


def targets(result):
    s = result["summary"]
    ov = s["overall"]
    out = []
    if "xg2jax" in ov and "xgrammar-dyn" in ov:
        a, b = ov["xg2jax"]["compiled"], ov["xgrammar-dyn"]["compiled"]
        out.append({"target": "xg2jax compiles at least as many schemas as xgrammar-JIT",
                    "met": a >= b, "detail": f"{a} vs {b} of {ov['xg2jax']['schemas']}"})
    if "xg2jax-lenient" in ov and "xgrammar-dyn" in ov:
        # strict_mode=False: what no grammar can enforce is approximated (documented), as xgrammar approximates.
        a, b = ov["xg2jax-lenient"]["compiled"], ov["xgrammar-dyn"]["compiled"]
        out.append({"target": "xg2jax with strict_mode=False compiles at least as many schemas as xgrammar-JIT",
                    "met": a >= b, "detail": f"{a} vs {b} of {ov['xg2jax-lenient']['schemas']}"})
    if "xg2jax" in ov:
        o = ov["xg2jax"]
        out.append({"target": "zero valid instances rejected (compiled schemas)",
                    "met": o["valid_accepted"] == o["valid"],
                    "detail": f"{o['valid'] - o['valid_accepted']} of {o['valid']} rejected "
                              f"({o['schemas_valid_rejected']} schemas)"})
        out.append({"target": "every invalid instance rejected (compiled schemas)",
                    "met": o["invalid_rejected"] == o["invalid"],
                    "detail": f"{o['invalid'] - o['invalid_rejected']} of {o['invalid']} accepted "
                              f"({o['schemas_invalid_accepted']} schemas)"})
    c = s.get("common") or {}
    if all(e in c for e in ("xg2jax", "xgrammar-dyn", "llguidance")) and c["xg2jax"]["schemas"]:
        # Against the faster of xgrammar's JIT and llguidance, statistic by statistic, over the schemas every engine
        # of the run finished: p50 at most half of it, p90 and mean at most it.
        for q, factor in (("p50", 0.5), ("p90", 1.0), ("mean", 1.0)):
            a = c["xg2jax"][f"ttfm_{q}_ms"]
            b = min(c["xgrammar-dyn"][f"ttfm_{q}_ms"], c["llguidance"][f"ttfm_{q}_ms"])
            out.append({"target": f"TTFM {q} at most {factor:g}x the faster of xgrammar-JIT and llguidance",
                        "met": a <= factor * b,
                        "detail": f"{a:.3f} vs {b:.3f} ms ({a / b:.2f}x) over {c['xg2jax']['schemas']} schemas"})
    p = s.get("pairwise_vs_llguidance") or {}
    if p.get("schemas"):
        for m, name in (("ttfm", "TTFM"), ("cost", "whole per-schema cost")):
            for q in ("p50", "p90") if m == "cost" else ("p50",):
                a, b = p[f"xg2jax_{m}_{q}_ms"], p[f"llguidance_{m}_{q}_ms"]
                out.append({"target": f"{name} {q} at most llguidance's (schemas both ran)",
                            "met": a <= b, "detail": f"{a:.2f} vs {b:.2f} ms over {p['schemas']} schemas"})
    return out


# ----------------------------------------------------------------------------------------------------------------
# Reporting
# ----------------------------------------------------------------------------------------------------------------


def f(x, d=1):
    if x is None:
        return "—"
    if x >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{d}f}"


def markdown(result) -> str:
    m, s = result["meta"], result["summary"]
    engines, L = result["engines"], []
    L.append("Engines: " + ", ".join(f"{k} {v}" for k, v in m["engines"].items()))
    L.append(f"Vocabulary {m['vocab']} ({m['vocab_size']:,} ids). Options {m['json_schema_options']}. "
             f"Sample: {m['per_subset'] or 'all'} schemas per subset (seed {m['seed']}), at most "
             f"{m['max_instances'] or 'all'} valid + invalid instances each; timeouts compile "
             f"{m['compile_timeout_s']:g} s, "
             f"instances {m['run_timeout_s']:g} s. Elapsed {m.get('elapsed_s', 0) / 60:.1f} min, load average "
             f"{m['loadavg_start'][0]:.2f} / {m.get('loadavg_end', [0])[0]:.2f} on {m['cpu_count']} CPUs.")
    L.append("")
    L.append("Overall (compiled = no error/timeout/crash at compile; valid/invalid over schemas whose instances ran; "
             "TTFM and cost percentiles over those schemas):")
    L.append("")
    L.append("| engine | schemas | compiled | error | timeout | crash | run t/o+err | valid accepted "
             "| invalid rejected "
             "| TTFM p50 ms | TTFM p90 | cost p50 ms | cost p90 |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for e in engines:
        o = s["overall"][e]
        L.append(f"| {label(e)} | {o['schemas']} | {o['compiled']} ({100 * (o['compiled_share'] or 0):.1f}%) | "
                 f"{o['error']} | {o['timeout']} | {o['crash']} | "
                 f"{o['run_timeout'] + o['run_crash'] + o['run_error']} | "
                 f"{o['valid_accepted']}/{o['valid']} | {o['invalid_rejected']}/{o['invalid']} | "
                 f"{f(o['ttfm_p50_ms'], 2)} | {f(o['ttfm_p90_ms'], 2)} | {f(o['cost_p50_ms'], 2)} | "
                 f"{f(o['cost_p90_ms'], 2)} |")
    c = s["common"]
    if engines and c[engines[0]]["schemas"]:
        L.append("")
        L.append(f"Like for like: the {c[engines[0]]['schemas']} schemas every engine compiled and ran:")
        L.append("")
        L.append("| engine | TTFM p50 ms | TTFM p90 | cost p50 ms | cost p90 |")
        L.append("|---|---:|---:|---:|---:|")
        for e in engines:
            x = c[e]
            L.append(f"| {label(e)} | {f(x['ttfm_p50_ms'], 2)} | {f(x['ttfm_p90_ms'], 2)} | {f(x['cost_p50_ms'], 2)} | "
                     f"{f(x['cost_p90_ms'], 2)} |")
    L.append("")
    L.append("Per subset: compiled / schemas, valid accepted / valid, invalid rejected / invalid, TTFM p50 ms:")
    L.append("")
    L.append("| subset | " + " | ".join(label(e) for e in engines) + " |")
    L.append("|---|" + "---|" * len(engines))
    for sub in result["subsets"]:
        cells = []
        for e in engines:
            x = s["per_subset"][sub][e]
            cells.append(f"{x['compiled']}/{x['schemas']}, {x['valid_accepted']}/{x['valid']}, "
                         f"{x['invalid_rejected']}/{x['invalid']}, {f(x['ttfm_p50_ms'], 2)}")
        L.append(f"| {sub} | " + " | ".join(cells) + " |")
    L.append("")
    L.append("Targets (xg2jax):")
    for t in result["targets"]:
        L.append(f"- [{'x' if t['met'] else ' '}] {t['target']}: {t['detail']}")
    L.append("")
    L.append("Most frequent failures (status, normalised message):")
    for e in engines:
        g = result["error_groups"][e]
        if not g:
            continue
        L.append(f"- {label(e)}:")
        for x in g[:8]:
            L.append(f"  - {x['count']} × {x['group']}")
    L.append("")
    for e in engines:
        w = result["wrong_answers"][e]
        if w["count"]:
            L.append(f"- {label(e)}: {w['count']} wrong answers, e.g. " + "; ".join(
                f"{x['schema']} {x['what']}" + (f" ({x.get('kind')} at {x.get('token')} after {x.get('context')!r})"
                                                  if x["what"] == "valid rejected" else "")
                for x in w["examples"][:4]))
    return "\n".join(L)


def plot(result, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    engines, subsets, s = result["engines"], result["subsets"], result["summary"]
    x = np.arange(len(subsets))
    w = 0.8 / max(1, len(engines))
    fig, axes = plt.subplots(2, 1, figsize=(max(10, 0.7 * len(subsets) + 2), 9), sharex=True)
    for i, e in enumerate(engines):
        share = [100 * (s["per_subset"][sub][e]["compiled_share"] or 0) for sub in subsets]
        ttfm = [s["per_subset"][sub][e]["ttfm_p50_ms"] or np.nan for sub in subsets]
        axes[0].bar(x + i * w - 0.4 + w / 2, share, w, label=label(e))
        axes[1].bar(x + i * w - 0.4 + w / 2, ttfm, w, label=label(e))
    axes[0].set_ylabel("schemas compiled (%)")
    axes[0].set_ylim(0, 105)
    axes[0].legend(ncol=len(engines), fontsize=8, loc="lower left")
    axes[1].set_yscale("log")
    axes[1].set_ylabel("TTFM p50 (ms, log)")
    axes[1].set_xticks(x)
    axes[1].set_xticklabels(subsets, rotation=45, ha="right", fontsize=8)
    m = result["meta"]
    fig.suptitle(f"JSONSchemaBench, {m['vocab']} vocabulary, {m['per_subset'] or 'all'} schemas/subset, one thread")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: gpt2 vocabulary, 2 schemas per subset, 2 instances, 10 s timeouts; writes "
                         "results/jsonschemabench_quick.*")
    ap.add_argument("--vocab", default=None, help="gemma3 (default), qwen2, cl100k, gpt2")
    ap.add_argument("--engines", default=DEFAULT_ENGINES,
                    help=f"comma list (default {DEFAULT_ENGINES}; xgrammar-dyn = xgrammar's JIT mode)")
    ap.add_argument("--subsets", default=None, help="comma list of maskbench subsets (default all)")
    ap.add_argument("--per-subset", type=int, default=None, help="schemas sampled per subset (0 = all; default 10)")
    ap.add_argument("--max-instances", type=int, default=None,
                    help="valid and invalid instances per schema, each (0 = all; default 3)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compile-timeout", type=float, default=None, help="seconds (default 10)")
    ap.add_argument("--run-timeout", type=float, default=None,
                    help="seconds for one schema's instances after compiling (default 20)")
    ap.add_argument("--worker-log", default="/tmp/jsonschemabench_workers.log",
                    help="file for the engines' stderr (warnings); empty = leave on the terminal")
    ap.add_argument("--data-dir", default=str(workloads.default_data_dir()))
    ap.add_argument("--out", default=None, help="JSON path (PNG next to it)")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--from-json", default=None, metavar="PATH", help="reprint + redraw an earlier result, no run")
    ap.add_argument("--repeats", type=int, default=1,
                    help="cold compiles per schema and engine; a schema's TTFM is their median (default 1)")
    ap.add_argument("--any-order", action="store_true",
                    help="compile with any_order=True (xg2jax, xgrammar; llguidance has only schema order) and "
                         "write results/jsonschemabench_any_order.*")
    args = ap.parse_args(argv)
    q = args.quick
    if args.any_order:
        peers.JSON_SCHEMA_OPTIONS["any_order"] = True  # read by every adapter (and the forked workers)
    args.vocab = args.vocab or ("gpt2" if q else "gemma3")
    args.per_subset = args.per_subset if args.per_subset is not None else (2 if q else 10)
    args.max_instances = args.max_instances if args.max_instances is not None else (2 if q else 3)
    args.compile_timeout = args.compile_timeout or 10.0
    args.run_timeout = args.run_timeout or (10.0 if q else 20.0)
    if args.out is None:
        stem = "jsonschemabench_quick" if q else "jsonschemabench"
        args.out = str(HERE / "results" / (stem + ("_any_order" if args.any_order else "") + ".json"))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    if args.from_json:
        result = finish(json.loads(Path(args.from_json).read_text()))
        plot(result, Path(args.from_json).with_suffix(".png"))
        print(markdown(result))
        return 0
    write_results(run(args), args.out, plot, markdown, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
