"""Mask prefetch during prefill: what the first decode steps cost with and without it.

With lazily built masks (JIT, the default), the first time a matcher reaches a state its token-mask entry is
built: for broad states (free text, JSON strings) that walks the whole vocabulary, milliseconds on Gemma 3's
262,144 tokens. ``constrained_sample`` starts building, on host threads, the entries of the most expensive states
each grammar reaches first (``GrammarState.prefetch_masks``) before it dispatches the prefill, so the builds
overlap the prefill forward pass and the first decode steps find them ready.

For each grammar, with a freshly compiled grammar every trial (no entries built), this times the first
``--steps`` grammar steps (advance by a fixed valid token stream + fill, one jitted custom call each):

* ``cold``: no prefetch;
* ``after prefill``: prefetch started, then a Gemma-3-270M-sized prefill stand-in (a jitted chain of matmuls
  with the prefill's FLOPs for 64 tokens on one row, timed and reported), then the steps;
* ``prefetch only``: prefetch awaited before the steps (the best case).

    python benchmarks/prefill_prefetch.py [--vocab gemma3] [--steps 8] [--trials 5] [--prefetch 8]

Writes ``results/prefill_prefetch.json``; prints a table.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from tqdm import tqdm

import xg2jax
import xg2jax.jax as xj
from workloads import GreedyTokenizer, load_vocab

GRAMMARS = {
    "json": (None, '{"name": "Ada Lovelace", "born": 1815, "notes": ["analyst", "poet"], "ok": true}'),
    "free_text_answer": (r'root ::= "Answer: " [^\n]{1,400} "\n" "Confidence: " [0-9]{1,3} "%"',
                         "Answer: the engine computes Bernoulli numbers\nConfidence: 90%"),
    "tool_call": (r'''root ::= "<tool_call>" "{\"name\": \"" [a-z_]{1,32} "\", \"arguments\": " obj "}" "</tool_call>"
obj ::= "{" ( str ": " val ( ", " str ": " val )* )? "}"
val ::= str | [0-9]+ | obj
str ::= "\"" [^"\\]* "\""''', '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}</tool_call>'),
}


def prefill_stand_in(tokens: int = 64, d_model: int = 640, hidden: int = 2048, layers: int = 18):
    """A jitted function with roughly the matmul FLOPs of a Gemma-3-270M prefill of ``tokens`` tokens (layers x
    (attention projections + GeGLU MLP)); the weights are random, only the time matters."""
    key = jax.random.key(0)
    w_attn = jax.random.normal(key, (layers, d_model, 4 * 256 + 2 * 256), jnp.float32) * 0.02
    w_out = jax.random.normal(key, (layers, 4 * 256, d_model), jnp.float32) * 0.02
    w_up = jax.random.normal(key, (layers, d_model, 2 * hidden), jnp.float32) * 0.02
    w_down = jax.random.normal(key, (layers, hidden, d_model), jnp.float32) * 0.02
    x0 = jax.random.normal(key, (tokens, d_model), jnp.float32)

    @jax.jit
    def run(x):
        def layer(x, w):
            a, o, u, d = w
            q = (x @ a)[:, : 4 * 256]
            x = x + q @ o
            g, v = jnp.split(x @ u, 2, axis=-1)
            return x + (jax.nn.gelu(g) * v) @ d, None
        return jax.lax.scan(layer, x, (w_attn, w_out, w_up, w_down))[0]

    run(x0).block_until_ready()
    return lambda: run(x0).block_until_ready()


_STEP = jax.jit(lambda s, t: xj.next_token_mask(s, t, path="ffi"))  # compiled once, by the warm-up


def first_steps_ms(compiled, tokens, *, steps, prefetch, prefill):
    """(ms of the first ``steps`` grammar steps, ms of the prefill or 0)."""
    step = _STEP
    with xj.GrammarState.create([compiled]) as state:
        job = state.prefetch_masks(prefetch) if prefetch else None
        prefill_ms = 0.0
        if prefill is not None:
            t0 = time.perf_counter()
            prefill()
            prefill_ms = 1e3 * (time.perf_counter() - t0)
        elif job is not None:
            job.wait(60)
        feed = [-1] + list(tokens[: steps - 1])
        t0 = time.perf_counter()
        for tok in feed:
            mask, state = step(state, jnp.asarray([tok], jnp.int32))
        mask.block_until_ready()
        elapsed = 1e3 * (time.perf_counter() - t0)
        if job is not None:
            job.wait(60)
    return elapsed, prefill_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", default="gemma3")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--prefetch", type=int, default=8, help="states prefetched per grammar")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "prefill_prefetch.json"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")

    vocab = load_vocab(args.vocab)
    tok = xg2jax.TokenizerInfo.from_loaded_vocab(vocab.loaded)
    greedy = GreedyTokenizer(vocab)
    prefill = prefill_stand_in()
    # Warm up the jitted step on a throwaway grammar so no variant pays the compile.
    warm = xg2jax.GrammarCompiler(tok, cache_enabled=False).compile_grammar('root ::= "a"')
    first_steps_ms(warm, [], steps=1, prefetch=0, prefill=None)

    rows = []
    for name, (ebnf, text) in tqdm(GRAMMARS.items(), desc="grammars"):
        tokens = greedy.encode(text.encode())
        result = {"grammar": name, "cold": [], "after_prefill": [], "prefill": [], "prefetch_only": []}
        for _ in range(args.trials):
            for variant in ("cold", "after_prefill", "prefetch_only"):
                compiler = xg2jax.GrammarCompiler(tok, cache_enabled=False)  # nothing built yet
                compiled = compiler.compile_builtin_json_grammar() if ebnf is None else compiler.compile_grammar(ebnf)
                ms, pre = first_steps_ms(compiled, tokens, steps=args.steps,
                                         prefetch=0 if variant == "cold" else args.prefetch,
                                         prefill=prefill if variant == "after_prefill" else None)
                result[variant].append(ms)
                if variant == "after_prefill":
                    result["prefill"].append(pre)
        rows.append(result)

    med = statistics.median
    print(f"\nFirst {args.steps} grammar steps, ms (median of {args.trials}); {args.vocab} vocabulary, "
          f"{args.prefetch} states prefetched:\n")
    print("| grammar | cold | after prefill (prefill ms) | prefetch only | cold / after prefill |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['grammar']} | {med(r['cold']):.2f} | {med(r['after_prefill']):.2f} ({med(r['prefill']):.0f}) "
              f"| {med(r['prefetch_only']):.2f} | {med(r['cold']) / med(r['after_prefill']):.1f}x |")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": {"vocab": args.vocab, "steps": args.steps, "trials": args.trials,
                                        "prefetch": args.prefetch, "nproc": __import__("os").cpu_count(),
                                        "jax": jax.__version__}, "rows": rows}, indent=1))
    logging.info("wrote %s", out)


if __name__ == "__main__":
    main()
