#!/usr/bin/env python3
"""Compile throughput with several Python threads on one GrammarCompiler: does a compile hold the GIL?

A serving process compiles the grammars of concurrent requests on its request threads. With the GIL held during a
compile, two threads take as long as one. This benchmark compiles a fixed set of distinct JSONSchemaBench schemas
(maskbench, every subset, deduplicated, seeded sample; Gemma 3 vocabulary) on one warm ``GrammarCompiler`` from
1, 2, 4 and 8 threads (each takes the next schema when free; a barrier starts them together) and reports schemas
per second, and its ratio to one thread. Per schema: ``compile_json_schema`` (JIT, the default) + a matcher + the
first ``fill_next_token_bitmask`` (the time to first mask a request waits for).

Two front ends, each on a fresh compiler per thread count (warmed on other schemas first, so per-vocabulary work
is not charged to the first count):

* ``native``: the schemas the native (C++) JSON Schema front end converts, through ``compile_json_schema`` as a
  user calls it: conversion and compile both run with the GIL released.
* ``python``: the same schemas converted by the Python front end (``python_json_schema_to_ebnf``, which holds the
  GIL), then ``compile_grammar``: what every schema cost before the native front end.

The machine's cores bound the ratio (2 here). Output: a table on stdout, ``results/compile_threads.json`` and
``results/compile_threads.png``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import os
import queue
import random
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE.parent))

import peers  # noqa: E402,F401  (one-thread environment for numpy before engines load)
import numpy as np  # noqa: E402
import workloads  # noqa: E402

log = logging.getLogger("compile_threads")


def load_schemas(data_dir: Path, n: int, seed: int) -> list[str]:
    """Distinct maskbench schema texts that the native front end converts, a seeded sample of ``n`` + 50 (the first
    50 warm the compilers up)."""
    from xg2jax import _core

    folder = data_dir / "jsonschemabench" / "maskbench"
    texts = []
    for path in sorted(folder.glob("*.jsonl.gz")):
        for line in gzip.open(path, "rt"):
            s = json.loads(line)["schema"]
            texts.append(s if isinstance(s, str) else json.dumps(s, ensure_ascii=False))
    if not texts:
        raise SystemExit(f"no maskbench files in {folder} (pass --data-dir)")
    texts = sorted(set(texts))
    random.Random(seed).shuffle(texts)
    out = []
    for t in texts:
        if _core.json_schema_to_ebnf_native(t.encode(), True, None, None, True, True)[0] is not None:
            out.append(t)
            if len(out) == n + 50:
                break
    return out


def run_threads(compile_one, schemas: list[str], threads: int) -> float:
    """Seconds for ``threads`` threads to run ``compile_one`` over ``schemas``, each thread taking the next schema
    when it is free (as request threads take requests; a fixed deal would leave a thread idle at the end)."""
    work_queue = queue.SimpleQueue()
    for s in schemas:
        work_queue.put(s)
    start = threading.Barrier(threads + 1, timeout=60)
    errors = []

    def work():
        start.wait()
        try:
            while True:
                try:
                    s = work_queue.get_nowait()
                except queue.Empty:
                    return
                compile_one(s)
        except Exception as e:  # reported after the join
            errors.append(e)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    start.wait()
    t0 = time.perf_counter()
    for w in workers:
        w.join(timeout=600)
        if w.is_alive():
            raise RuntimeError("a compile thread did not finish within 600 s")
    elapsed = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return elapsed


def make_compile(x, compiler, vocab_size: int, front_end: str):
    from xg2jax.json_schema import python_json_schema_to_ebnf

    local = threading.local()

    def compile_one(schema: str):
        if not hasattr(local, "bitmask"):
            local.bitmask = np.asarray(x.allocate_token_bitmask(1, vocab_size))
        if front_end == "native":
            compiled = compiler.compile_json_schema(schema)
        else:
            compiled = compiler.compile_grammar(python_json_schema_to_ebnf(schema))
        x.GrammarMatcher(compiled).fill_next_token_bitmask(local.bitmask, 0)

    return compile_one


def run(args) -> dict:
    import xg2jax as x

    vocab = workloads.load_vocab(args.vocab)
    engine = peers.XG2JaxEngine()
    engine.setup(vocab)
    schemas = load_schemas(Path(args.data_dir), args.schemas, args.seed)
    warm, measured = schemas[:50], schemas[50:]
    log.info("%d schemas (+%d warm-up), vocabulary %s (%d tokens), %d cores", len(measured), len(warm), args.vocab,
             vocab.vocab_size, os.cpu_count())
    rows = []
    for front_end in ("native", "python"):
        for threads in args.threads:
            times = []
            for trial in range(args.trials):
                compiler = x.GrammarCompiler(engine.tok, max_threads=1, cache_enabled=True)
                compile_one = make_compile(x, compiler, vocab.vocab_size, front_end)
                run_threads(compile_one, warm, 1)
                times.append(run_threads(compile_one, measured, threads))
            seconds = float(np.median(times))
            rows.append({"front_end": front_end, "threads": threads, "seconds": seconds, "trials": times,
                         "schemas_per_s": len(measured) / seconds})
            log.info("%s, %d thread(s): %.2f s (%.0f schemas/s)", front_end, threads, seconds, len(measured) / seconds)
    for r in rows:
        one = next(o for o in rows if o["front_end"] == r["front_end"] and o["threads"] == 1)
        r["speedup"] = r["schemas_per_s"] / one["schemas_per_s"]
    return {"vocab": args.vocab, "schemas": len(measured), "cores": os.cpu_count(), "trials": args.trials,
            "xg2jax": getattr(x, "__version__", "?"), "rows": rows}


def markdown(result: dict) -> str:
    lines = [f"{result['schemas']} distinct JSONSchemaBench schemas, {result['vocab']}, {result['cores']} cores, "
             f"median of {result['trials']} trials", "",
             "| front end | threads | seconds | schemas / s | vs 1 thread |", "|---|---:|---:|---:|---:|"]
    for r in result["rows"]:
        lines.append(f"| {r['front_end']} | {r['threads']} | {r['seconds']:.2f} | {r['schemas_per_s']:.0f} | "
                     f"{r['speedup']:.2f}x |")
    return "\n".join(lines)


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for front_end, color in (("native", "tab:blue"), ("python", "tab:gray")):
        rows = [r for r in result["rows"] if r["front_end"] == front_end]
        ax.plot([r["threads"] for r in rows], [r["speedup"] for r in rows], "o-", color=color,
                label=f"{front_end} front end")
    ax.axhline(result["cores"], color="tab:red", ls=":", label=f"cores ({result['cores']})")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("Python threads compiling on one GrammarCompiler")
    ax.set_ylabel("throughput / one thread")
    ax.set_title(f"Compile + first mask, {result['schemas']} JSONSchemaBench schemas ({result['vocab']})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--schemas", type=int, default=300)
    ap.add_argument("--threads", type=lambda s: [int(t) for t in s.split(",")], default=[1, 2, 4, 8])
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab", default="gemma3")
    ap.add_argument("--data-dir", default=os.environ.get("XG2JAX_DATA_DIR", str(HERE.parent.parent / "shared" / "data")))
    ap.add_argument("--out", default=str(HERE / "results" / "compile_threads.json"))
    ap.add_argument("--from-json", default=None, help="reprint and redraw an earlier run")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    if args.from_json:
        result = json.loads(Path(args.from_json).read_text())
        out = Path(args.from_json)
    else:
        result = run(args)
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1))
    print(markdown(result))
    plot(result, out.with_suffix(".png"))
    log.info("wrote %s and %s", out, out.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
