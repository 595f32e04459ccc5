#!/usr/bin/env python3
"""Mask time per token and compile time: xg2jax vs xgrammar 0.2.9 vs llguidance 1.9.1, in one run.

Same vocabulary, same token streams, one thread each. For every vocabulary x grammar x engine:

1. compile the grammar cold (fresh compiler, cache off where the engine has a switch), timed;
2. for every valid string of the grammar (its greedy longest-match token ids, see workloads.py): start a matcher,
   then per token: fill the next-token bitmask (timed, only this call), check that the token is allowed, accept it;
   after the last token fill once more (timed) and check that a stop token is allowed.
   A token of a valid string that an engine forbids, or whose accept fails, is a disagreement: that stream stops
   for that engine. A missing stop token at the end is recorded too (the stream still counts).
3. the masks of all engines at the same step are compared over the non-special tokens; a step where one engine
   allows a token that another forbids is recorded with examples.

Output: a markdown table on stdout, JSON in benchmarks/results/mask_time.json and a bar plot of mean mask time in
benchmarks/results/mask_time.png. See benchmarks/README.md for commands and caveats.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import logging
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# An installed xg2jax wins; otherwise the checkout's (with its compiled core built in place).
sys.path.append(str(HERE.parent))

import peers  # noqa: E402  (sets the one-thread environment before numpy / engines load)
import numpy as np  # noqa: E402
import workloads  # noqa: E402

try:
    from tqdm import tqdm
except ImportError:  # pragma: no cover
    def tqdm(it=None, **_kw):
        return it

log = logging.getLogger("mask_time")


def _repo_relative(path):
    """A path inside the repository as repo-relative text (no machine paths in results); else its name."""
    if path is None:
        return None
    p = Path(path).resolve()
    root = Path(__file__).resolve().parents[1]
    try:
        return str(p.relative_to(root))
    except ValueError:
        return p.name

# ----------------------------------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------------------------------


def bit_is_set(mask: np.ndarray, token: int) -> bool:
    return bool((int(mask[token >> 5]) >> (token & 31)) & 1)


def allowed_ids(mask: np.ndarray, vocab_size: int) -> np.ndarray:
    bits = np.unpackbits(mask.view(np.uint8), bitorder="little")[:vocab_size]
    return np.flatnonzero(bits)


def normal_token_words(vocab) -> np.ndarray:
    """int32 words with a bit set for every non-special token id < vocab_size (the bits masks are compared on)."""
    bits = np.ones(((vocab.vocab_size + 31) // 32) * 32, dtype=np.uint8)
    bits[vocab.vocab_size :] = 0
    bits[np.asarray(vocab.special_token_ids, dtype=np.int64)] = 0
    return np.packbits(bits, bitorder="little").view(np.int32)


def stats_us(ns: list[int]) -> dict:
    if not ns:
        return {"n": 0, "mean_us": None, "p50_us": None, "p99_us": None, "max_us": None}
    a = np.asarray(ns, dtype=np.float64) / 1e3
    return {
        "n": int(a.size),
        "mean_us": float(a.mean()),
        "p50_us": float(np.percentile(a, 50)),
        "p99_us": float(np.percentile(a, 99)),
        "max_us": float(a.max()),
    }


def fmt(x, digits=1) -> str:
    if x is None:
        return "—"
    if isinstance(x, float) and x >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}f}"


def context(tokens, decoded, step, width=40) -> str:
    text = b"".join(decoded[t] for t in tokens[:step])[-width:]
    return text.decode("utf-8", errors="replace")


# ----------------------------------------------------------------------------------------------------------------
# Running one stream
# ----------------------------------------------------------------------------------------------------------------


def run_stream(engine, tokens, vocab, keep_masks: bool):
    """Returns (fill_ns list, masks list or None, event dict or None, eos_ok)."""
    stop_ids = vocab.stop_token_ids
    engine.new_matcher()
    fill, accept, mask = engine.fill, engine.accept, engine.mask
    perf = time.perf_counter_ns
    times: list[int] = []
    masks = [] if keep_masks else None
    event = None
    for step, tok in enumerate(tokens):
        t0 = perf()
        fill()
        times.append(perf() - t0)
        if keep_masks:
            masks.append(mask.copy())
        if not bit_is_set(mask, tok):
            event = {"step": step, "token": int(tok), "kind": "forbidden"}
            return times, masks, event, None
        if not accept(tok):
            event = {"step": step, "token": int(tok), "kind": "accept_failed"}
            return times, masks, event, None
    t0 = perf()
    fill()
    times.append(perf() - t0)
    if keep_masks:
        masks.append(mask.copy())
    eos_ok = any(bit_is_set(mask, s) for s in stop_ids)
    return times, masks, event, eos_ok


def compare_masks(per_engine_masks: dict, vocab, normal_words, tokens, summary: dict, max_examples=3):
    """Compare the engines' masks step by step over the steps every engine reached (non-special tokens only).

    Returns (records of differing steps, steps compared) and adds to ``summary``, a dict keyed by
    (token bytes, engines allowing it, engines forbidding it) counting the steps where that split happened."""
    names = [n for n, m in per_engine_masks.items() if m]
    if len(names) < 2:
        return [], 0
    steps = min(len(per_engine_masks[n]) for n in names)
    diffs = []
    for step in range(steps):
        ms = [per_engine_masks[n][step] & normal_words for n in names]
        union = ms[0].copy()
        inter = ms[0].copy()
        for m in ms[1:]:
            union |= m
            inter &= m
        disputed_words = union & ~inter
        if not disputed_words.any():
            continue
        disputed = allowed_ids(disputed_words, vocab.vocab_size)
        examples = []
        for t in disputed.tolist():
            allowed_by = tuple(n for n, m in zip(names, ms) if bit_is_set(m, t))
            forbidden_by = tuple(n for n in names if n not in allowed_by)
            key = (t, allowed_by, forbidden_by)
            entry = summary.get(key)
            if entry is None:
                summary[key] = [1, context(tokens, vocab.decoded, step)]
            else:
                entry[0] += 1
            if len(examples) < max_examples:
                examples.append({"token": t, "bytes": repr(vocab.decoded[t]),
                                 "allowed_by": list(allowed_by), "forbidden_by": list(forbidden_by)})
        diffs.append({
            "step": step,
            "context": context(tokens, vocab.decoded, step),
            "n_disputed": int(disputed.size),
            "n_allowed": {n: int(np.unpackbits(m.view(np.uint8)).sum()) for n, m in zip(names, ms)},
            "examples": examples,
        })
    return diffs, steps


# ----------------------------------------------------------------------------------------------------------------
# Main loop
# ----------------------------------------------------------------------------------------------------------------


def run(args) -> dict:
    engine_names = peers.expand_engines(args.engines)
    grammars = ["json"] + [g for g in args.grammars.split(",") if g and g != "json"]
    data_dir = Path(args.data_dir)
    n_json = args.instances if args.instances is not None else (4 if args.quick else 30)
    n_ebnf = args.ebnf_strings if args.ebnf_strings is not None else (2 if args.quick else None)

    engines = {}
    for name in engine_names:
        try:
            engines[name] = peers.make_engine(name)
        except Exception as exc:  # engine not installed / not built
            log.error("engine %s unavailable: %s: %s", name, type(exc).__name__, exc)
    if not engines:
        raise SystemExit("no engine available")

    work = workloads.build_workloads(grammars, data_dir, n_json, n_ebnf, seed=args.seed)
    result = {
        "meta": {
            "date": _dt.datetime.now().isoformat(timespec="seconds"),
            "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpu_count": os.cpu_count(),
            "loadavg_start": list(os.getloadavg()),
            "engines": {n: e.version for n, e in engines.items()},
            "xg2jax_source": _repo_relative(next((getattr(e, "source", None) for e in engines.values()
                                                  if hasattr(e, "source")), None)),
            "xg2jax_revision": os.environ.get("XG2JAX_REVISION"),
            "threads": "1 (max_threads=1, RAYON_NUM_THREADS=1, torch.set_num_threads(1))",
            "tokenization": "greedy longest match over decoded token bytes, special tokens skipped",
            "seed": args.seed,
            "json_instances": n_json,
            "trials": args.trials,
            "workloads": {w.grammar: [label for label, _ in w.strings] for w in work},
        },
        "vocabs": {},
        "rows": [],
        "disagreements": [],
        "mask_differences": [],
    }

    for vname in [v.strip() for v in args.vocab.split(",") if v.strip()]:
        t0 = time.perf_counter()
        vocab = workloads.load_vocab(vname)
        greedy = workloads.GreedyTokenizer(vocab)
        normal_words = normal_token_words(vocab)
        log.info("vocab %s: %d tokens, %d special, loaded in %.1fs", vname, vocab.vocab_size,
                 len(vocab.special_token_ids), time.perf_counter() - t0)
        vinfo = {"vocab_size": vocab.vocab_size, "vocab_type": vocab.vocab_type,
                 "n_special": len(vocab.special_token_ids), "stop_token_ids": vocab.stop_token_ids,
                 "tokenizer_setup_ms": {}}
        result["vocabs"][vname] = vinfo
        active = {}
        for name, eng in engines.items():
            try:
                ms = eng.setup(vocab)
                vinfo["tokenizer_setup_ms"][name] = ms
                active[name] = eng
                log.info("  %s tokenizer setup %.0f ms", name, ms)
            except Exception as exc:
                log.error("  %s tokenizer setup failed: %s: %s", name, type(exc).__name__, exc)

        for w in work:
            streams = [(label, greedy.encode(s.encode("utf-8"))) for label, s in w.strings]
            n_tok = sum(len(t) for _, t in streams)
            log.info("[%s] %s: %d strings, %d tokens", vname, w.grammar, len(streams), n_tok)
            diff_summary: dict = {}
            diff_steps = [0, 0]  # differing, compared
            diff_examples = []
            trials = []  # per trial: {engine: row}
            for trial in range(args.trials):
                check = trial == 0  # correctness checks and mask comparison on the first trial only
                rows = {}
                for name, eng in active.items():
                    row = {"vocab": vname, "grammar": w.grammar, "engine": name, "compile_ms": None,
                           "error": None, "streams": len(streams), "streams_completed": 0, "eos_missing": 0,
                           "ttfm_ms": None, "_ns": []}
                    try:
                        row["compile_ms"] = eng.compile(w.kind, w.text)
                    except Exception as exc:
                        row["error"] = f"compile: {type(exc).__name__}: {exc}"[:500]
                        if check:
                            log.error("  %s: %s", name, row["error"])
                    rows[name] = row
                desc = f"{vname}/{w.grammar}" + (f" trial {trial + 1}/{args.trials}" if args.trials > 1 else "")
                for si, (label, tokens) in enumerate(tqdm(streams, desc=desc, leave=False,
                                                          disable=args.no_progress)):
                    per_masks = {}
                    for name, eng in active.items():
                        row = rows[name]
                        if row["error"]:
                            continue
                        try:
                            times, masks, event, eos_ok = run_stream(eng, tokens, vocab,
                                                                     check and args.compare_masks)
                        except Exception as exc:
                            row["error"] = f"run: {type(exc).__name__}: {exc}"[:500]
                            log.error("  %s: %s", name, row["error"])
                            continue
                        if si == 0 and row["compile_ms"] is not None and times:
                            row["ttfm_ms"] = row["compile_ms"] + times[0] / 1e6
                        row["_ns"].extend(times)
                        per_masks[name] = masks
                        if event is None:
                            row["streams_completed"] += 1
                            if not eos_ok:
                                row["eos_missing"] += 1
                        if not check:
                            continue
                        if event is None and not eos_ok:
                            result["disagreements"].append({
                                "vocab": vname, "grammar": w.grammar, "engine": name, "string": label,
                                "kind": "no_stop_token_at_end", "step": len(tokens)})
                        elif event is not None:
                            tok = event["token"]
                            rec = {"vocab": vname, "grammar": w.grammar, "engine": name, "string": label,
                                   **event, "bytes": repr(vocab.decoded[tok]),
                                   "context": context(tokens, vocab.decoded, event["step"])}
                            result["disagreements"].append(rec)
                            log.warning("  disagreement: %s", rec)
                    if check and args.compare_masks:
                        diffs, steps = compare_masks(per_masks, vocab, normal_words, tokens, diff_summary)
                        diff_steps[0] += len(diffs)
                        diff_steps[1] += steps
                        for d in diffs[: max(0, args.max_diff_examples - len(diff_examples))]:
                            d["string"] = label
                            diff_examples.append(d)
                    del per_masks
                for name, row in rows.items():
                    row.update(stats_us(row.pop("_ns")))
                    active[name].release_grammar()
                trials.append(rows)
            rows = {}
            for name in active:
                rows[name] = pick_median_trial([t[name] for t in trials])
            if args.compare_masks:
                top = sorted(diff_summary.items(), key=lambda kv: -kv[1][0])
                # One line per split pattern (who allows / who forbids): steps, tokens, first context.
                patterns: dict = {}
                for (t, a, f), (c, ctx) in top:
                    pat = patterns.setdefault((a, f), {"allowed_by": list(a), "forbidden_by": list(f),
                                                       "token_steps": 0, "tokens": [], "first_context": ctx})
                    pat["token_steps"] += c
                    if len(pat["tokens"]) < 8:
                        pat["tokens"].append(repr(vocab.decoded[t]))
                result["mask_differences"].append({
                    "vocab": vname, "grammar": w.grammar, "engines": [n for n in active if not rows[n]["error"]],
                    "steps_compared": diff_steps[1], "steps_differing": diff_steps[0],
                    "distinct_disputed_tokens": len({k[0] for k in diff_summary}),
                    "patterns": list(patterns.values()),
                    "top_splits": [{"token": t, "bytes": repr(vocab.decoded[t]), "allowed_by": list(a),
                                    "forbidden_by": list(f), "steps": c, "first_context": ctx}
                                   for (t, a, f), (c, ctx) in top[: args.max_diff_examples]],
                    "examples": diff_examples,
                })
            for name, row in rows.items():
                result["rows"].append(row)
                log.info("  %-13s compile %9s ms  mask mean %7s us  p50 %7s  p99 %8s  (%d masks, %d/%d streams)%s",
                         name, fmt(row["compile_ms"]), fmt(row["mean_us"]), fmt(row["p50_us"]),
                         fmt(row["p99_us"]), row["n"], row["streams_completed"], row["streams"],
                         f"  ERROR {row['error']}" if row["error"] else "")
    add_ratios(result)
    result["meta"]["loadavg_end"] = list(os.getloadavg())
    return result


def pick_median_trial(rows: list[dict]) -> dict:
    """Combine the trials of one engine: mask statistics from the trial with the median mean; compile and TTFM
    the medians over trials; the per-trial means and compile times are kept."""
    ok = [r for r in rows if r["mean_us"] is not None]
    if not ok:
        return rows[0]
    ok.sort(key=lambda r: r["mean_us"])
    best = dict(ok[(len(ok) - 1) // 2])
    compiles = sorted(r["compile_ms"] for r in rows if r["compile_ms"] is not None)
    if compiles:
        best["compile_ms"] = compiles[(len(compiles) - 1) // 2]
    ttfms = sorted(r["ttfm_ms"] for r in rows if r["ttfm_ms"] is not None)
    if ttfms:
        best["ttfm_ms"] = ttfms[(len(ttfms) - 1) // 2]
    best["trials"] = len(rows)
    best["mean_us_trials"] = [r["mean_us"] for r in rows]
    best["compile_ms_trials"] = [r["compile_ms"] for r in rows]
    best["streams_completed"] = rows[0]["streams_completed"]
    best["eos_missing"] = rows[0]["eos_missing"]
    best["error"] = rows[0]["error"] or best["error"]
    return best


def add_ratios(result: dict) -> None:
    by_key: dict = {}
    for r in result["rows"]:
        by_key.setdefault((r["vocab"], r["grammar"]), {})[r["engine"]] = r
    for (_v, _g), rows in by_key.items():
        peer_means = [r["mean_us"] for n, r in rows.items() if n in peers.PEERS and r["mean_us"] is not None]
        peer_compile = [r["compile_ms"] for n, r in rows.items() if n in peers.PEERS and r["compile_ms"] is not None]
        for n, r in rows.items():
            ours = n.startswith("xg2jax")
            r["mask_ratio_vs_best_peer"] = (
                r["mean_us"] / min(peer_means) if ours and peer_means and r["mean_us"] else None)
            r["compile_ratio_vs_best_peer"] = (
                r["compile_ms"] / min(peer_compile) if ours and peer_compile and r["compile_ms"] else None)


# ----------------------------------------------------------------------------------------------------------------
# Reporting
# ----------------------------------------------------------------------------------------------------------------


def markdown(result: dict) -> str:
    lines = []
    m = result["meta"]
    lines.append("Engines: " + ", ".join(f"{k} {v}" for k, v in m["engines"].items()))
    lines.append(f"Trials: {m['trials']} (compile, TTFM = medians; mask statistics from the trial with the median "
                 "mean). "
                 f"Threads: {m['threads']}. Tokenization: {m['tokenization']}. "
                 f"Load average at start/end: {m['loadavg_start'][0]:.2f} / {m.get('loadavg_end', [0])[0]:.2f} "
                 f"on {m['cpu_count']} CPUs.")
    lines.append("")
    lines.append("| vocab | grammar | engine | compile ms | TTFM ms | mask µs mean | p50 | p99 | max | masks | "
                 "streams ok | mask mean / best peer | compile / best peer |")
    lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in result["rows"]:
        ratio = r.get("mask_ratio_vs_best_peer")
        cratio = r.get("compile_ratio_vs_best_peer")
        ok = f"{r['streams_completed']}/{r['streams']}"
        if r["error"]:
            ok += " (error)"
        lines.append(
            f"| {r['vocab']} | {r['grammar']} | {r['engine']} | {fmt(r['compile_ms'])} | {fmt(r['ttfm_ms'])} | "
            f"{fmt(r['mean_us'])} | {fmt(r['p50_us'])} | {fmt(r['p99_us'])} | {fmt(r['max_us'])} | {r['n']} | "
            f"{ok} | {fmt(ratio, 2) if ratio is not None else ''} | {fmt(cratio, 2) if cratio is not None else ''} |")
    lines.append("")
    lines.append("Tokenizer setup ms: " + "; ".join(
        f"{v}: " + ", ".join(f"{e} {fmt(ms, 0)}" for e, ms in info["tokenizer_setup_ms"].items())
        for v, info in result["vocabs"].items()))
    errs = [r for r in result["rows"] if r["error"]]
    if errs:
        lines.append("")
        lines.append("Errors:")
        for r in errs:
            lines.append(f"- {r['vocab']}/{r['grammar']}/{r['engine']}: {r['error']}")
    lines.append("")
    dis = result["disagreements"]
    lines.append(f"Disagreements on valid strings (token forbidden / accept failed / no stop token at the end): "
                 f"{len(dis)}")
    for d in dis[:30]:
        lines.append(f"- {d['vocab']}/{d['grammar']}/{d['engine']} {d['string']}: {d['kind']} at step {d['step']}"
                     + (f", token {d['token']} {d['bytes']} after {d['context']!r}" if "token" in d else ""))
    lines.append("")
    lines.append("Mask differences on non-special tokens (steps every engine reached; a token one engine allows "
                 "and another forbids):")
    for d in result["mask_differences"]:
        lines.append(f"- {d['vocab']}/{d['grammar']}: {d['steps_differing']}/{d['steps_compared']} steps differ, "
                     f"{d['distinct_disputed_tokens']} distinct tokens disputed")
        for p in d["patterns"]:
            lines.append(f"  - allowed by {','.join(p['allowed_by'])}, forbidden by {','.join(p['forbidden_by'])}: "
                         f"{len(p['tokens'])}{'+' if len(p['tokens']) >= 8 else ''} tokens, e.g. "
                         f"{' '.join(p['tokens'][:4])}; first after {p['first_context']!r}")
        if d["examples"]:
            e = d["examples"][0]
            lines.append(f"  - first differing step: after {e['context']!r} ({d['examples'][0]['string']}): "
                         f"allowed counts {e['n_allowed']}")
    return "\n".join(lines)


def _short(val: float) -> str:
    if val >= 10000:
        return f"{val / 1000:.0f}k"
    if val >= 1000:
        return f"{val / 1000:.1f}k"
    return f"{val:.0f}" if val >= 10 else f"{val:.1f}"


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    vocabs = list(result["vocabs"])
    rows = result["rows"]
    engines = list(dict.fromkeys(r["engine"] for r in rows))
    grammars = list(dict.fromkeys(r["grammar"] for r in rows))
    fig, axes = plt.subplots(1, len(vocabs), figsize=(6.5 * len(vocabs), 4.6), squeeze=False, sharey=True)
    width = 0.8 / max(len(engines), 1)
    colors = {"xg2jax": "#d62728", "xg2jax-eager": "#ff9896", "xgrammar": "#1f77b4", "xgrammar-dyn": "#9ecae1", "llguidance": "#2ca02c"}
    for ax, v in zip(axes[0], vocabs):
        for k, e in enumerate(engines):
            vals, partial = [], []
            for g in grammars:
                r = next((r for r in rows if r["vocab"] == v and r["grammar"] == g and r["engine"] == e), None)
                vals.append(r["mean_us"] if r and r["mean_us"] else 0.0)
                partial.append(bool(r and r["streams_completed"] < r["streams"]))
            xs = np.arange(len(grammars)) + (k - (len(engines) - 1) / 2) * width
            bars = ax.bar(xs, vals, width, label=e, color=colors.get(e))
            for b, val, part in zip(bars, vals, partial):
                if val:
                    label = _short(val) + ("*" if part else "")
                    ax.annotate(label, (b.get_x() + b.get_width() / 2, val), ha="center", va="bottom", fontsize=7)
        ax.set_xticks(np.arange(len(grammars)))
        ax.set_xticklabels(grammars)
        ax.set_yscale("log")
        ax.set_title(f"{v} ({result['vocabs'][v]['vocab_size']:,} tokens)")
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("mean mask time per token (µs, log)")
    axes[0][0].legend(fontsize=8)
    fig.suptitle("Mask fill time per token, one thread, same vocabulary and token streams")
    if any(r["streams_completed"] < r["streams"] for r in rows):
        fig.text(0.01, 0.01, "* the engine rejected some valid strings: mean over the steps it reached",
                 fontsize=7, ha="left", va="bottom")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab", default="gemma3,qwen2", help="comma list of gemma3, qwen2, cl100k, gpt2")
    ap.add_argument("--engines", default="xg2jax,xgrammar,llguidance",
                    help="comma list of xg2jax, xg2jax-eager, xgrammar (= eager + dyn), xgrammar-eager, "
                         "xgrammar-dyn, llguidance")
    ap.add_argument("--grammars", default=",".join(("json",) + workloads.DEFAULT_EBNF_GRAMMARS),
                    help="json plus EBNF grammars from: " + ", ".join(workloads.EBNF_GRAMMAR_FILES))
    ap.add_argument("--instances", type=int, default=None, help="JSON instances (default 30; 4 with --quick)")
    ap.add_argument("--ebnf-strings", type=int, default=None, help="strings per EBNF grammar (default all)")
    ap.add_argument("--trials", type=int, default=None,
                    help="compile + run all streams this many times from scratch; report the median trial "
                         "(default 3; 1 with --quick)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="small run for smoke tests")
    ap.add_argument("--data-dir", default=str(workloads.default_data_dir()))
    ap.add_argument("--out", default=None,
                    help="result JSON (default benchmarks/results/mask_time.json, or mask_time_quick.json with "
                         "--quick so a smoke test never overwrites a full run)")
    ap.add_argument("--plot", default=None, help="PNG path (default: --out with .png)")
    ap.add_argument("--no-compare-masks", dest="compare_masks", action="store_false",
                    help="skip the step-by-step mask comparison between engines")
    ap.add_argument("--max-diff-examples", type=int, default=12,
                    help="examples of differing masks kept per vocab x grammar")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--from-json", default=None, metavar="PATH",
                    help="do not run: print the table and redraw the plot of an earlier result file")
    args = ap.parse_args(argv)
    if args.trials is None:
        args.trials = 1 if args.quick else 3
    if args.out is None:
        args.out = str(HERE / "results" / ("mask_time_quick.json" if args.quick else "mask_time.json"))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")

    if args.from_json:  # re-render the table and the plot of an earlier run
        result = json.loads(Path(args.from_json).read_text())
        png = Path(args.plot) if args.plot else Path(args.from_json).with_suffix(".png")
        plot(result, png)
        print(markdown(result))
        return 0
    result = run(args)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False))
    png = Path(args.plot) if args.plot else out.with_suffix(".png")
    try:
        plot(result, png)
    except Exception as exc:  # plotting is a convenience
        log.error("plot failed: %s: %s", type(exc).__name__, exc)
    print(markdown(result))
    log.info("wrote %s and %s", out, png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
