#!/usr/bin/env python3
"""Compile time and time to first mask against a repetition bound B: xg2jax vs xgrammar 0.2.9 (eager and JIT) vs
llguidance 1.9.1.

Grammars, for B in ``--bounds`` (default 10, 100, 1000, 10000, 100000):

* ``json_array``: JSON Schema ``{"type": "array", "items": {"type": "integer"}, "maxItems": B}``;
* ``json_string``: JSON Schema ``{"type": "string", "maxLength": B}``;
* ``ebnf``: ``root ::= "a"{0,B}`` (xgrammar and xg2jax EBNF, the same text); llguidance gets the Lark grammar
  ``start: "a"{0,B}`` (its syntax for the same bounded repetition).

JSON Schema options are ``peers.JSON_SCHEMA_OPTIONS`` (free whitespace, JSON Schema defaults, schema order), the
same for every engine. Per point (grammar x B x engine), in a freshly forked worker process (the vocabulary is
loaded once in the parent; the engine's tokenizer is built in the worker, untimed, and a small grammar of the same
kind is compiled and masked once, untimed, so one-time initialisation is not charged): compile cold (fresh compiler,
caches off, one thread), timed; then create a matcher and fill the first mask, timed: TTFM = compile + matcher +
first fill. This is done ``--repeats`` times (default 5) in the same worker; the medians are reported and every
repeat is kept in the JSON. A point running past ``--timeout`` seconds (compile and first mask together, all
repeats) is killed and recorded as a timeout, and the larger bounds of that grammar x engine are skipped (recorded as
``skipped``).

Correctness spot check (xg2jax only, reported, never fatal): with ``xg2jax.testing.is_grammar_accept_string`` on
the grammar (no vocabulary), ``"a" * n`` (ebnf), ``'"' + "a" * n + '"'`` (json_string) and ``[0,0,...]`` with n
items (json_array) for n = B-1, B, B+1: the first two must be accepted, the last rejected.

Output: ``results/repetition.json`` and ``results/repetition.png`` (log-log compile ms vs bound, one panel per
grammar, one line per engine) and a markdown table on stdout. ``--from-json PATH`` redraws without running.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import logging
import multiprocessing as mp
import os
import platform
import signal
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE.parent))

import peers  # noqa: E402  (one-thread environment)
import workloads  # noqa: E402
from forked_worker import write_results  # noqa: E402

try:
    from tqdm import tqdm
except ImportError:  # pragma: no cover
    def tqdm(it=None, **_kw):
        return it

log = logging.getLogger("repetition")

GRAMMARS = ("json_array", "json_string", "ebnf")
DEFAULT_ENGINES = "xg2jax,xgrammar-eager,xgrammar-dyn,llguidance"
LABELS = {"xgrammar": "xgrammar-eager", "xgrammar-dyn": "xgrammar-jit"}
_VOCAB = None


def grammar_for(kind: str, bound: int, engine: str):
    """(adapter kind, text) for one point."""
    if kind == "json_array":
        return "json_schema", json.dumps({"type": "array", "items": {"type": "integer"}, "maxItems": bound})
    if kind == "json_string":
        return "json_schema", json.dumps({"type": "string", "maxLength": bound})
    if engine == "llguidance":
        return "lark", f'start: "a"{{0,{bound}}}'
    return "ebnf", f'root ::= "a"{{0,{bound}}}'


def spot_strings(kind: str, n: int) -> str:
    if kind == "ebnf":
        return "a" * n
    if kind == "json_string":
        return '"' + "a" * n + '"'
    return "[" + ",".join(["0"] * n) + "]"


def _median(xs):
    xs = sorted(xs)
    return xs[(len(xs) - 1) // 2]


def _point(conn, engine: str, kind: str, bound: int, spot: bool, stderr_path, repeats: int = 1):
    if stderr_path:
        fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 2)
        os.close(fd)
    try:
        eng = peers.make_engine(engine)
        eng.setup(_VOCAB)
        if engine == "llguidance":  # Lark text goes to the matcher as is
            eng.grammar_text = (lambda orig: (lambda k, t: t if k == "lark" else orig(k, t)))(eng.grammar_text)
        akind, text = grammar_for(kind, bound, engine)
        # Untimed warm-up of the same kind (one-time initialisation is not charged to the point).
        warm = {"json_schema": '{"type": "array", "items": {"type": "string", "maxLength": 2}, "maxItems": 2}',
                "ebnf": 'root ::= "b"{0,2}', "lark": 'start: "b"{0,2}'}[akind]
        eng.compile(akind, warm)
        eng.new_matcher()
        eng.fill()
        eng.release_grammar()
        conn.send(("setup",))
        perf = time.perf_counter_ns
        compiles, firsts = [], []
        for rep in range(repeats):
            if rep:
                eng.release_grammar()
            try:
                compile_ms = eng.compile(akind, text)
            except Exception as exc:
                conn.send(("error", f"{type(exc).__name__}: {exc}"[:400]))
                return
            if not rep:
                conn.send(("compiled", compile_ms))
            t0 = perf()
            eng.new_matcher()
            eng.fill()
            compiles.append(compile_ms)
            firsts.append((perf() - t0) / 1e6)
        ttfms = [c + f for c, f in zip(compiles, firsts)]
        conn.send(("ttfm", _median(ttfms), _median(firsts), _median(compiles), compiles, ttfms))
        if spot:
            import xg2jax
            from xg2jax.testing import is_grammar_accept_string

            if akind == "json_schema":
                g = xg2jax.Grammar.from_json_schema(text, **peers.JSON_SCHEMA_OPTIONS)
            else:
                g = text
            checks = {}
            for n in (bound - 1, bound, bound + 1):
                t0 = perf()
                got = bool(is_grammar_accept_string(g, spot_strings(kind, n)))
                checks[str(n)] = {"accepted": got, "expected": n <= bound, "ms": (perf() - t0) / 1e6}
            conn.send(("spot", checks))
    except Exception as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"[:400]))


def run_point(ctx, engine, kind, bound, timeout, spot, stderr_path, repeats=1):
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_point, args=(child, engine, kind, bound, spot, stderr_path, repeats), daemon=True)
    proc.start()
    child.close()
    row = {"engine": engine, "grammar": kind, "bound": bound, "status": None, "compile_ms": None, "ttfm_ms": None,
           "first_fill_ms": None, "error": None}
    try:
        if not parent.poll(600):
            raise TimeoutError("tokenizer setup > 600 s")
        msg = parent.recv()
        if msg[0] == "error":
            row.update(status="error", error=msg[1])
            return row
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if row["status"] == "ok" and spot:
                left = max(left, 0) + timeout  # the spot check gets its own budget
            if left <= 0 or not parent.poll(left):
                if row["status"] is None or row["status"] == "compiled":
                    row.update(status="timeout", error=f"> {timeout:g} s"
                               + (" (compiled; first mask)" if row["status"] == "compiled" else ""))
                else:
                    row["spot_check"] = "timeout"
                return row
            msg = parent.recv()
            if msg[0] == "error":
                if row["status"] == "ok":
                    row["spot_check"] = "error: " + msg[1]
                else:
                    row.update(status="error", error=msg[1])
                return row
            if msg[0] == "compiled":
                row.update(status="compiled", compile_ms=msg[1])
            elif msg[0] == "ttfm":
                row.update(status="ok", ttfm_ms=msg[1], first_fill_ms=msg[2], compile_ms=msg[3],
                           compile_ms_repeats=msg[4], ttfm_ms_repeats=msg[5])
                if not spot:
                    return row
            elif msg[0] == "spot":
                row["spot_check"] = msg[1]
                return row
    except (EOFError, OSError):
        row.update(status=row["status"] if row["status"] == "ok" else "crash",
                   error=f"worker died (exit code {proc.exitcode})")
        return row
    finally:
        if proc.is_alive():
            os.kill(proc.pid, signal.SIGKILL)
        proc.join(10)


def pin_xg2jax():
    """Import xg2jax's modules in the parent before forking, so every worker (restarts included) runs the code that
    was on disk at the start even if the checkout changes during the run."""
    try:
        import importlib

        for mod in ("xg2jax", "xg2jax.json_schema", "xg2jax.compiler", "xg2jax.matcher", "xg2jax.testing"):
            importlib.import_module(mod)
    except Exception as exc:  # not installed: the xg2jax worker reports it
        log.warning("could not import xg2jax up front: %s", exc)


def run(args):
    global _VOCAB
    engines = peers.expand_engines(args.engines)
    grammars = [g for g in args.grammars.split(",") if g]
    bounds = [int(b) for b in args.bounds.split(",") if b]
    _VOCAB = workloads.load_vocab(args.vocab)
    pin_xg2jax()
    ctx = mp.get_context("fork")
    if args.worker_log:
        Path(args.worker_log).write_text("")
    versions = {}
    for e in engines:
        try:
            versions[LABELS.get(e, e)] = peers.make_engine(e).version
        except Exception as exc:
            log.error("engine %s unavailable: %s", e, exc)
    engines = [e for e in engines if LABELS.get(e, e) in versions]
    result = {"meta": {
        "date": _dt.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
        "python": platform.python_version(), "cpu_count": os.cpu_count(), "loadavg_start": list(os.getloadavg()),
        "engines": versions, "vocab": args.vocab, "repeats": args.repeats, "vocab_size": _VOCAB.vocab_size,
        "timeout_s": args.timeout,
        "json_schema_options": dict(peers.JSON_SCHEMA_OPTIONS), "bounds": bounds, "grammars": grammars,
        "xg2jax_revision": workloads.xg2jax_revision(),
        "threads": "1 (max_threads=1, RAYON_NUM_THREADS=1, torch.set_num_threads(1))",
    }, "engines": engines, "rows": []}
    points = [(g, e, b) for g in grammars for e in engines for b in bounds]
    dead = set()
    for g, e, b in tqdm(points, desc="points", disable=args.no_progress):
        if (g, e) in dead:
            result["rows"].append({"engine": e, "grammar": g, "bound": b, "status": "skipped",
                                   "error": "timeout at a smaller bound"})
            continue
        row = run_point(ctx, e, g, b, args.timeout, spot=(e == "xg2jax" and not args.no_spot_check),
                        stderr_path=args.worker_log, repeats=args.repeats)
        if row["status"] == "timeout":
            dead.add((g, e))
        result["rows"].append(row)
        log.info("%-11s %-14s B=%-6d %-7s compile %s ms, TTFM %s ms%s", g, LABELS.get(e, e), b, row["status"],
                 _f(row.get("compile_ms")), _f(row.get("ttfm_ms")), f"  {row['error']}" if row.get("error") else "")
    result["meta"]["loadavg_end"] = list(os.getloadavg())
    result["meta"]["xg2jax_revision_end"] = workloads.xg2jax_revision()
    return result


def _f(x):
    if x is None:
        return "—"
    return f"{x:,.0f}" if x >= 100 else f"{x:.2f}"


def markdown(result) -> str:
    m = result["meta"]
    rows = result["rows"]
    engines = result["engines"]
    L = [f"Engines: {', '.join(f'{k} {v}' for k, v in m['engines'].items())}; xg2jax revision "
         f"{m.get('xg2jax_revision')}; vocabulary {m['vocab']} ({m['vocab_size']:,} ids); timeout "
         f"{m['timeout_s']:g} s per point; load average {m['loadavg_start'][0]:.2f} / "
         f"{m.get('loadavg_end', [0])[0]:.2f}.", "",
         f"Cells: compile ms / TTFM ms (compile + matcher + first mask), medians of {m.get('repeats', 1)} repeats; "
         "`timeout`, `error`, `skipped` (timed out at a "
         "smaller bound).", ""]
    for g in m["grammars"]:
        L.append(f"**{g}**")
        L.append("")
        L.append("| B | " + " | ".join(LABELS.get(e, e) for e in engines) + " | xg2jax spot check (B-1, B, B+1) |")
        L.append("|---:|" + "---:|" * len(engines) + "---|")
        for b in m["bounds"]:
            cells, spot = [], ""
            for e in engines:
                r = next((r for r in rows if r["grammar"] == g and r["engine"] == e and r["bound"] == b), None)
                if r is None:
                    cells.append("")
                elif r["status"] == "ok":
                    cells.append(f"{_f(r['compile_ms'])} / {_f(r['ttfm_ms'])}")
                else:
                    cells.append(r["status"] + (f" ({r['error'][:60]})" if r["status"] in ("error", "crash")
                                                else ""))
                if e == "xg2jax" and r is not None and "spot_check" in r:
                    sc = r["spot_check"]
                    if isinstance(sc, dict):
                        bad = [n for n, c in sc.items() if c["accepted"] != c["expected"]]
                        spot = "ok" if not bad else "WRONG at n=" + ",".join(bad)
                    else:
                        spot = str(sc)[:60]
            L.append(f"| {b:,} | " + " | ".join(cells) + f" | {spot} |")
        L.append("")
    return "\n".join(L)


def plot(result, path: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    m, rows, engines = result["meta"], result["rows"], result["engines"]
    fig, axes = plt.subplots(1, len(m["grammars"]), figsize=(5 * len(m["grammars"]), 4.2), squeeze=False)
    for ax, g in zip(axes[0], m["grammars"]):
        for e in engines:
            pts = [(r["bound"], r["compile_ms"]) for r in rows
                   if r["grammar"] == g and r["engine"] == e and r["status"] == "ok"]
            to = [r["bound"] for r in rows if r["grammar"] == g and r["engine"] == e and r["status"] == "timeout"]
            line = ax.plot([p[0] for p in pts], [max(p[1], 1e-3) for p in pts], marker="o", label=LABELS.get(e, e))
            tt = [(r["bound"], r["ttfm_ms"]) for r in rows
                  if r["grammar"] == g and r["engine"] == e and r["status"] == "ok"]
            ax.plot([p[0] for p in tt], [max(p[1], 1e-3) for p in tt], linestyle="--", linewidth=0.8, alpha=0.7,
                    color=line[0].get_color())
            if to:
                ax.plot(to, [m["timeout_s"] * 1e3] * len(to), marker="x", linestyle="none", markersize=10,
                        color=line[0].get_color())
        ax.axhline(m["timeout_s"] * 1e3, color="grey", linestyle=":", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("bound B")
        ax.set_ylabel("ms (solid: compile, dashed: TTFM)")
        ax.set_title(g)
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"Compile time vs repetition bound ({m['vocab']} vocabulary; x = timeout {m['timeout_s']:g} s)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: gpt2 vocabulary, bounds 10,100,1000, 20 s timeout, 1 repeat; writes "
                         "results/repetition_quick.*")
    ap.add_argument("--vocab", default=None, help="gemma3 (default), qwen2, cl100k, gpt2")
    ap.add_argument("--engines", default=DEFAULT_ENGINES)
    ap.add_argument("--grammars", default=",".join(GRAMMARS))
    ap.add_argument("--bounds", default=None, help="comma list (default 10,100,1000,10000,100000)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per point (default 60)")
    ap.add_argument("--repeats", type=int, default=None,
                    help="compiles per point in the worker, median reported (default 5; --quick 1)")
    ap.add_argument("--no-spot-check", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--worker-log", default="/tmp/repetition_workers.log")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--from-json", default=None, metavar="PATH")
    args = ap.parse_args(argv)
    q = args.quick
    args.vocab = args.vocab or ("gpt2" if q else "gemma3")
    args.bounds = args.bounds or ("10,100,1000" if q else "10,100,1000,10000,100000")
    args.timeout = args.timeout or (20.0 if q else 60.0)
    args.repeats = args.repeats or (1 if q else 5)
    if args.out is None:
        args.out = str(HERE / "results" / ("repetition_quick.json" if q else "repetition.json"))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    if args.from_json:
        result = json.loads(Path(args.from_json).read_text())
        plot(result, Path(args.from_json).with_suffix(".png"))
        print(markdown(result))
        return 0
    write_results(run(args), args.out, plot, markdown, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
