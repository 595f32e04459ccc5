#!/usr/bin/env python3
"""What tag callbacks cost in a jitted decode loop: nothing on a step without a switch, one host call per switch.

``constrained_sample(..., on_tag_start=..., on_tag_end=...)`` calls Python when a row enters or leaves a tag (a
tool call). The call is an ordered ``io_callback`` under ``lax.cond(any row switched)``, so a step where no row
switches should cost what it costs without callbacks, and a switching step one host round trip more.

Workload: the ``qwen_3`` tool-calling format (``get_model_structural_tag``, two tools, no reasoning) on a byte
vocabulary (257 tokens, so the model and the mask are cheap and the callback's cost is not hidden under them), a
scripted model (logits favour the next byte of a per-row script; greedy sampling follows it), batch B, N steps:

* ``free``: every row writes N bytes of free text (no switch);
* ``calls``: every row writes free text with ``--calls`` qwen_3 tool calls (2 switches each).

Each is decoded without callbacks and with both callbacks registered (they append the event to a list), in
interleaved trials after a warmup call per variant (compile, masks built); a fresh ``GrammarState`` per call,
made outside the timed region. Reported per variant: median time per decode step; the overhead of callbacks on the
``free`` script per step (should be ~0: within noise); and on the ``calls`` script per switching step (the cost of
one switch: the host call, taking the events from the matchers, the Python callbacks).

Output: a table on stdout, benchmarks/results/tag_events.json and .png.

    python benchmarks/tag_events.py [--batch 8] [--steps 400] [--calls 4] [--trials 15]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import platform
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import xg2jax as xgr
import xg2jax.jax as xj
from xg2jax.model_formats import MODEL_FORMATS

EOS = 256
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
log = logging.getLogger("tag_events")

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}},
]


@dataclasses.dataclass(frozen=True)
class ScriptedLM:
    """Logits after position p favour byte p of the row's script (params: int32[B, L])."""

    def __call__(self, params, tokens, cache, positions):
        nxt = jnp.take_along_axis(params, jnp.minimum(positions, params.shape[1] - 1), axis=1)
        return jax.nn.one_hot(nxt, EOS + 1) * 10.0 - jnp.arange(EOS + 1) / 1000.0, cache


def scripts(batch: int, steps: int, calls: int) -> dict[str, np.ndarray]:
    """Per workload an int32[B, steps + 1] script: free text only, or free text with `calls` calls per row."""
    fmt = MODEL_FORMATS["qwen_3"]
    out = {}
    for name in ("free", "calls"):
        rows = []
        for r in range(batch):
            text = ""
            for c in range(calls if name == "calls" else 0):
                text += f"Step {c} of row {r}. " + fmt.render_calls([("add", {"a": r, "b": c})])
            filler = f" free text of row {r}." * steps
            data = (text + filler).encode()[:steps + 1]
            rows.append(list(data))
        out[name] = np.asarray(rows, np.int32)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--calls", type=int, default=4)
    ap.add_argument("--trials", type=int, default=15)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    tok = xgr.TokenizerInfo([bytes([b]) for b in range(256)] + [b"</s>"], stop_token_ids=[EOS],
                            special_token_ids=[EOS])
    compiled = xgr.GrammarCompiler(tok).compile_structural_tag(
        xgr.get_model_structural_tag("qwen_3", TOOLS, reasoning=False))
    B, N = args.batch, args.steps
    prompt, lengths = jnp.zeros((B, 1), jnp.int32), jnp.ones((B,), jnp.int32)
    work = {k: jnp.asarray(v) for k, v in scripts(B, N, args.calls).items()}
    events: list = []

    def run(script, callbacks: bool) -> tuple[float, xj.SampleOutput]:
        state = xj.GrammarState.create([compiled] * B)
        kw = dict(on_tag_start=events.append, on_tag_end=events.append) if callbacks else {}
        try:
            t0 = time.perf_counter()
            out = xj.constrained_sample(ScriptedLM(), script, None, prompt, lengths, state, max_new_tokens=N,
                                        prefetch_states=0, **kw)
            jax.block_until_ready(out.tokens)
            return time.perf_counter() - t0, out
        finally:
            state.release()

    variants = [(w, cb) for w in ("free", "calls") for cb in (False, True)]
    switching = {}
    for w, cb in variants:  # warmup: compile, build the masks; check the workload
        _, out = run(work[w], cb)
        status = np.asarray(out.status)
        switching[w] = int(np.any(status & (xj.StepStatus.TAG_ENTERED | xj.StepStatus.TAG_LEFT), axis=0).sum())
        assert int(np.asarray(out.lengths).min()) == N, "every row must run all steps"
        if cb:
            assert xj.last_tag_callback_host_calls() == switching[w]
    times = {v: [] for v in variants}
    for t in range(args.trials):
        for v in variants:
            events.clear()
            dt, _ = run(work[v[0]], v[1])
            times[v].append(dt)
        log.info("trial %d/%d", t + 1, args.trials)

    med = {v: statistics.median(ts) for v, ts in times.items()}
    # Paired per trial: the callback variant minus the plain one in the same trial.
    free_over = statistics.median(a - b for a, b in zip(times[("free", True)], times[("free", False)])) / N
    calls_over = statistics.median(a - b for a, b in zip(times[("calls", True)], times[("calls", False)]))
    per_switch = calls_over / max(1, switching["calls"])
    free_noise = statistics.pstdev(times[("free", False)]) / N
    rows = [{"workload": w, "callbacks": cb, "median_s": med[(w, cb)], "per_step_us": med[(w, cb)] / N * 1e6,
             "switching_steps": switching[w]} for w, cb in variants]
    print(f"\nbatch {B}, {N} steps, {args.trials} trials (medians)")
    print(f"{'workload':<8} {'callbacks':>9} {'per step (us)':>14} {'switching steps':>16}")
    for r in rows:
        print(f"{r['workload']:<8} {str(r['callbacks']):>9} {r['per_step_us']:>14.1f} {r['switching_steps']:>16}")
    print(f"\ncallbacks on steps without a switch: {free_over * 1e6:+.2f} us per step "
          f"(run-to-run noise of a step: {free_noise * 1e6:.2f} us)")
    print(f"one switching step (host call + events + Python callbacks): {per_switch * 1e6:.0f} us")

    os.makedirs(OUT, exist_ok=True)
    result = {"machine": platform.platform(), "cpus": os.cpu_count(), "jax": jax.__version__, "batch": B, "steps": N,
              "calls_per_row": args.calls, "trials": args.trials, "rows": rows,
              "no_switch_overhead_us_per_step": free_over * 1e6, "step_noise_us": free_noise * 1e6,
              "per_switching_step_us": per_switch * 1e6}
    with open(os.path.join(OUT, "tag_events.json"), "w") as f:
        json.dump(result, f, indent=1)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log.warning("matplotlib missing: no plot")
        return
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    labels = [f"{w}\n{'callbacks' if cb else 'none'}" for w, cb in variants]
    ax.bar(labels, [med[v] / N * 1e6 for v in variants], color=["#8aa", "#4aa", "#a88", "#a44"])
    for i, v in enumerate(variants):
        ax.text(i, med[v] / N * 1e6, f"{med[v] / N * 1e6:.0f}", ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("decode step, median (us)")
    ax.set_title(f"Tag callbacks: {free_over * 1e6:+.1f} us/step without a switch, "
                 f"{per_switch * 1e6:.0f} us per switching step\n(batch {B}, byte vocabulary, qwen_3 format)",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "tag_events.png"), dpi=120)


if __name__ == "__main__":
    main()
