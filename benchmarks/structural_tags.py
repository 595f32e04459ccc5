"""Structural tags for tool calling: time to first mask and mask time, xg2jax vs xgrammar 0.2.9 (eager and JIT).

Workload: the qwen_3 tool-call format (``triggered_tags`` on ``<tool_call>``; one ``tag`` per tool, its
arguments a ``json_schema``; benchmarks/structural_tag_conformance.py builds it) over the first 20 / 100 / 400
unique BFCL v3 tools (simple, multiple, parallel, parallel_multiple), on the Qwen2 and Gemma 3 vocabularies, one
thread. For each engine:

- cold: a new compiler with its cache off, per tool set (the median of ``--repeats`` such compiles; one for
  xgrammar eager);
- warm: one compiler with its cache on, given the tool sets in increasing size (each extends the one before,
  as a server's tool set grows), so shared tools may come from its caches;
- masks: along free text, then a call of the first tool (its required arguments), token by token (a greedy
  tokenization of the text), each fill timed: free-text steps and in-call steps reported apart.

    python benchmarks/structural_tags.py [--vocabs qwen2,gemma3] [--sizes 20,100,400] [--from-json PATH]

Writes results/structural_tags.{json,png}; prints a table with ratios to xgrammar JIT.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers  # noqa: E402
import workloads  # noqa: E402
from dynamic_tools import convert_bfcl_schema  # noqa: E402
from structural_tag_conformance import FILES, qwen_call, qwen_tag  # noqa: E402

log = logging.getLogger("structural_tags")
RESULTS = Path(__file__).resolve().parent / "results"
ENGINES = ("xg2jax", "xgrammar-jit", "xgrammar-eager")


def unique_tools(data: Path) -> list[dict]:
    tools, seen = [], set()
    for f in FILES:
        for line in (data / f"BFCL_v3_{f}.json").read_text().splitlines():
            for fn in json.loads(line)["function"] if line else []:
                if fn["name"] not in seen:
                    seen.add(fn["name"])
                    tools.append({"name": fn["name"], "schema": convert_bfcl_schema(fn["parameters"], {})})
    return tools


def example_value(schema: dict):
    """A value of `schema` holding only what it requires (enough for the BFCL tools' argument schemas)."""
    if not isinstance(schema, dict):
        return None
    if "enum" in schema:
        return schema["enum"][0]
    t = schema.get("type")
    t = t[0] if isinstance(t, list) else t
    if t == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {k: example_value(props.get(k, {})) for k in schema.get("required", []) if k in props}
    return {"string": "x", "integer": 1, "number": 1.5, "boolean": True, "array": [], "null": None}.get(t, "x")


class Runner:
    """One engine on one vocabulary: compiles structural tags and walks masks."""

    def __init__(self, name: str, vocab):
        self.name = name
        eng = peers.XG2JaxEngine() if name == "xg2jax" else peers.XGrammarEngine(dynamic=name == "xgrammar-jit")
        eng.setup(vocab)
        self.eng = eng
        self.warm_compiler = self.new_compiler(cache=True)

    def new_compiler(self, cache: bool):
        if self.name == "xg2jax":
            return self.eng.x.GrammarCompiler(self.eng.tok, max_threads=1, cache_enabled=cache)
        return self.eng.xgr.GrammarCompiler(self.eng.tok, max_threads=1, cache_enabled=cache,
                                            enable_dynamic_compilation=self.name == "xgrammar-jit")

    def ttfm(self, compiler, tag: dict):
        """(ms to the first mask, the matcher)."""
        t0 = time.perf_counter_ns()
        compiled = compiler.compile_structural_tag(tag if self.name == "xg2jax" else json.dumps(tag))
        lib = self.eng.x if self.name == "xg2jax" else self.eng.xgr
        matcher = lib.GrammarMatcher(compiled)
        matcher.fill_next_token_bitmask(self.eng.bitmask, 0)
        return (time.perf_counter_ns() - t0) / 1e6, matcher

    def walk(self, matcher, tokens: list[int], call_from: int, lengths: list[int]):
        """Fill times (ms) before each token, split at the byte offset where the call starts."""
        free, inside, pos = [], [], 0
        for tok, n in zip(tokens, lengths):
            t0 = time.perf_counter_ns()
            matcher.fill_next_token_bitmask(self.eng.bitmask, 0)
            (free if pos < call_from else inside).append((time.perf_counter_ns() - t0) / 1e6)
            if not matcher.accept_token(tok):
                raise RuntimeError(f"{self.name} rejected token {tok} at byte {pos}")
            pos += n
        return free, inside


TEXT_FREE = "Let me look that up for you, one moment. "


def workload_text(tools: list[dict]) -> str:
    """The text the masks are walked along: free text, a call of the first tool, free text."""
    return TEXT_FREE + qwen_call(tools[0]["name"], example_value(tools[0]["schema"])) + " Done."


def measure(vocab_name: str, name: str, sizes: list[int], repeats: int) -> list[dict]:
    """The rows of one engine on one vocabulary."""
    tools = unique_tools(workloads.default_data_dir() / "bfcl-v3")
    log.info("%s %s: %d unique BFCL tools; sizes %s", vocab_name, name, len(tools), sizes)
    text = workload_text(tools)
    vocab = workloads.load_vocab(vocab_name)
    tokens = workloads.GreedyTokenizer(vocab).encode(text.encode())
    lengths = [len(vocab.decoded[t]) for t in tokens]
    call_from = len(TEXT_FREE.encode())
    runner = Runner(name, vocab)
    # Warm-up (imports, the vocabulary's lazily built tables): a small tag, compiled and walked once.
    _, matcher = runner.ttfm(runner.new_compiler(cache=False), qwen_tag(tools[:3]))
    runner.walk(matcher, tokens, call_from, lengths)
    rows = []
    for n in sizes:
        tag = qwen_tag(tools[:n])
        # Cold: the median of `repeats` new compilers (one for xgrammar eager, seconds per compile).
        runs = [runner.ttfm(runner.new_compiler(cache=False), tag)
                for _ in range(1 if name == "xgrammar-eager" else repeats)]
        cold, matcher = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
        free, inside = runner.walk(matcher, tokens, call_from, lengths)
        warm, _ = runner.ttfm(runner.warm_compiler, tag)
        row = {"vocab": vocab_name, "engine": name, "tools": n, "ttfm_cold_ms": cold, "ttfm_warm_ms": warm,
               "free_text_p50_ms": statistics.median(free), "call_mean_ms": statistics.mean(inside),
               "call_max_ms": max(inside)}
        rows.append(row)
        log.info("%s %s %d tools: cold %.1f ms, warm %.1f ms, free p50 %.3f ms, call mean %.3f max %.2f ms",
                 vocab_name, name, n, cold, warm, row["free_text_p50_ms"], row["call_mean_ms"], row["call_max_ms"])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocabs", default="qwen2,gemma3")
    ap.add_argument("--sizes", default="20,100,400")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--repeats", type=int, default=5, help="cold compiles per cell (median; xgrammar eager: 1)")
    ap.add_argument("--out", type=Path, default=RESULTS / "structural_tags.json")
    ap.add_argument("--from-json", type=Path, help="reprint and redraw an earlier result, no run")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: "vocab,engine" measured in this process
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    if args.from_json:
        rows = json.loads(args.from_json.read_text())["rows"]
        print_table(rows)
        plot(rows, args.from_json.with_suffix(".png"))
        return
    if args.one:  # one (vocabulary, engine) in this process: print its rows as JSON
        vocab_name, name = args.one.split(",")
        print(json.dumps(measure(vocab_name, name, [int(s) for s in args.sizes.split(",")], args.repeats)))
        return
    # Each (vocabulary, engine) runs in a fresh process: an engine's compiled grammars (xgrammar eager's hold
    # gigabytes) would otherwise slow the measurements that follow them in the same process.
    rows = []
    for vocab_name in args.vocabs.split(","):
        for name in args.engines.split(","):
            out = subprocess.run([sys.executable, __file__, "--one", f"{vocab_name},{name}", "--sizes", args.sizes,
                                  "--repeats", str(args.repeats)], check=True, stdout=subprocess.PIPE, text=True)
            rows += json.loads(out.stdout.strip().splitlines()[-1])
    text = workload_text(unique_tools(workloads.default_data_dir() / "bfcl-v3"))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": rows, "text": text}, indent=1))
    print_table(rows)
    plot(rows, args.out.with_suffix(".png"))


def print_table(rows) -> None:
    by = {(r["vocab"], r["engine"], r["tools"]): r for r in rows}
    print("| vocab | tools | engine | TTFM cold ms | TTFM warm ms | free-text mask p50 ms | in-call mask mean / max ms |"
          " cold vs xgrammar JIT |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for (v, e, n), r in sorted(by.items(), key=lambda kv: (kv[0][0], kv[0][2], kv[0][1])):
        ref = by.get((v, "xgrammar-jit", n))
        ratio = f"{r['ttfm_cold_ms'] / ref['ttfm_cold_ms']:.2f}x" if ref else ""
        print(f"| {v} | {n} | {e} | {r['ttfm_cold_ms']:,.1f} | {r['ttfm_warm_ms']:,.1f} | {r['free_text_p50_ms']:.3f} | "
              f"{r['call_mean_ms']:.3f} / {r['call_max_ms']:.2f} | {ratio} |")


def plot(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    vocabs = sorted({r["vocab"] for r in rows})
    fig, axes = plt.subplots(1, len(vocabs), figsize=(6 * len(vocabs), 4), squeeze=False)
    for ax, v in zip(axes[0], vocabs):
        for e in sorted({r["engine"] for r in rows}):
            pts = sorted((r["tools"], r["ttfm_cold_ms"]) for r in rows if r["vocab"] == v and r["engine"] == e)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=e)
        ax.set_xscale("log")
        ax.set_yscale("log")
        sizes = sorted({r["tools"] for r in rows})
        ax.minorticks_off()
        ax.set_xticks(sizes, [str(n) for n in sizes])
        ax.set_xlabel("tools in the structural tag")
        ax.set_ylabel("time to first mask, cold compiler (ms)")
        ax.set_title(f"qwen_3 tool-call format, {v}")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    log.info("wrote %s", path)


if __name__ == "__main__":
    main()
