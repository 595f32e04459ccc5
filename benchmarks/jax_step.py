#!/usr/bin/env python3
"""Cost of the grammar step inside a jitted JAX decode loop, against the host-loop alternative and a model step.

Why: ``xg2jax.jax.next_token_mask`` runs the grammar step (advance each row's matcher by its last token, write the
next packed bitmask) as one XLA FFI custom call inside ``jax.jit``; the alternatives are the same C++ step behind
``io_callback`` and what JAX users do today with xgrammar: a Python loop that returns to the host every token. This
script measures what each costs per decode step, with the real Gemma 3 vocabulary (262,144 ids), and puts the cost
next to one decode step of a Gemma-3-270M-shaped model on the same CPU.

What is measured (per batch size B; every variant runs once per trial, interleaved, after one warmup call that
compiles and builds the lazily built masks; medians over trials):

* Token stream: per row a long synthetic JSON document (row-specific values; compact or indented), tokenized by
  greedy longest match over the decoded Gemma 3 token bytes (``workloads.GreedyTokenizer``); its first N tokens are
  a prefix the builtin JSON grammar accepts and never completes, so N steps never reach a stop token.
* Fake model: logits = a fixed random [B, V] array + 1e-6 * previous token (a data dependency, so nothing can be
  hoisted out of the loop) + a bonus of 100 on the stream's token of this step, materialised like a model's output
  (an optimization barrier keeps XLA from fusing it into the sampler). Greedy sampling therefore follows
  the stream, and every variant checks that it produced exactly the stream (so every token was allowed by the mask
  and accepted by the strict step).
* Jitted decode loops, one ``lax.fori_loop`` of N steps per call (per-step time = call time / N; a fresh
  ``GrammarState`` per call, created and released outside the timed region):
  - ``no mask``: fake logits -> greedy sample (``--sampler``: ``jnp.argmax`` as ``xg2jax.jax.Sampler``, or
    ``max-eq``, the same token from two vectorisable reductions).
  - ``ffi`` / ``callback``: ``next_token_mask(state, last_token, path=...)`` (advance + fill, strict) ->
    ``apply_token_bitmask`` -> sample.
* Jitted grammar-step loops (the step's own cost, which the vocabulary-wide logits and sampling above can hide in
  their run-to-run noise): ``ffi step`` / ``callback step`` feed the stream itself to ``next_token_mask`` and check
  the next stream token's bit in the mask; ``empty`` is the same loop without the step.
* Python loops of N steps, what a JAX user does with a host-side grammar engine today:
  - ``host loop``: jitted fake logits, jitted sample, token to the host (no grammar: the round-trip baseline);
  - ``xgrammar host``: xgrammar 0.2.9 ``BatchGrammarMatcher.batch_fill_next_token_bitmask`` into a ``torch.int32``
    bitmask (while the dispatched logits compute), the bitmask to the device, jitted ``apply_token_bitmask`` +
    sample, the token to the host, ``batch_accept_token``;
  - ``xgrammar step``: xgrammar's accept + fill alone, fed the stream, no JAX.
  Same vocabulary (special tokens passed as ``""``, as in ``peers.py``), same builtin JSON grammar, same tokens,
  same host thread count as xg2jax's ``max_threads``.
* Overhead per step = median over trials of (variant - its baseline in the same trial): ``no mask`` for the decode
  loops and the Python loops (their round trips are part of what they cost), ``empty`` for the step loops, nothing
  for ``xgrammar step``.
* Gemma-3-270M-shaped decode step: a plain-JAX forward pass with **random weights** (cost depends only on shapes):
  18 layers, d_model 640, 4 query heads / 1 KV head, head_dim 256, GeGLU MLP 2048, RMSNorm (pre/post attention,
  pre/post MLP, QK norm), RoPE (10k local / 1M global every 6th layer), tied 262,144 x 640 embedding, float32, a
  KV cache of 256 positions (shorter than the 512-token sliding window, so local layers attend to all of it). One
  jitted step (one new token per row) timed over repeats after warmup; overheads are reported as a percentage of
  its fastest repeat (the conservative denominator when other work shares the CPU).

Output: a table on stdout, benchmarks/results/jax_step.json and benchmarks/results/jax_step.png (per-step overhead
per variant and batch, log scale). See benchmarks/README.md ("JAX decode step").
"""

from __future__ import annotations

import argparse
import datetime as _dt
import functools
import json
import logging
import os
import platform
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import peers  # noqa: E402  (sets the one-thread environment of the peers' native pools)
import workloads  # noqa: E402
import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import xg2jax.jax as xj  # noqa: E402

try:
    from tqdm import tqdm
except ImportError:  # pragma: no cover
    def tqdm(it=None, **_kw):
        return it

log = logging.getLogger("jax_step")

BONUS = 100.0  # added to the stream token's logit: argmax follows the stream
DECODE_LOOPS = ("no mask", "ffi", "callback")  # jitted decode loops: fake logits, [mask,] argmax
STEP_LOOPS = ("empty", "ffi step", "callback step")  # jitted loops of the grammar step alone
HOST_LOOPS = ("host loop", "xgrammar host", "xgrammar step")  # Python loops
#: What each variant's overhead is measured against (None: its own time is the overhead).
BASELINE = {"ffi": "no mask", "callback": "no mask", "host loop": "no mask", "xgrammar host": "no mask",
            "ffi step": "empty", "callback step": "empty", "xgrammar step": None}

# ----------------------------------------------------------------------------------------------------------------
# Token streams
# ----------------------------------------------------------------------------------------------------------------


def json_document(row: int, records: int) -> str:
    """A valid JSON object with row-specific content: strings, numbers, booleans, null, nested arrays/objects."""
    items = [{"id": row * 1000 + i, "name": f"item-{row}-{i} «ünïcode»", "price": round(3.25 * (i + 1) + row, 2),
              "tags": ["alpha", f"t{i % 7}", "beta gamma"], "in_stock": (i + row) % 2 == 0, "note": None,
              "dims": {"w": i + 1, "h": 2 * i + row, "unit": "cm"}} for i in range(records)]
    doc = {"request": f"batch row {row}", "version": 3, "items": items}
    return json.dumps(doc, ensure_ascii=False, indent=2 if row % 2 else None)


def token_streams(greedy: workloads.GreedyTokenizer, batch: int, steps: int) -> np.ndarray:
    """int32[batch, steps]: per row the first ``steps`` tokens of a document long enough never to be completed."""
    rows = []
    for r in range(batch):
        records = 2
        while len(toks := greedy.encode(json_document(r, records).encode("utf-8"))) < steps + 16:
            records *= 2
        rows.append(toks[:steps])
    return np.asarray(rows, np.int32)


# ----------------------------------------------------------------------------------------------------------------
# Jitted decode loops (variants 1-3)
# ----------------------------------------------------------------------------------------------------------------


def fake_logits(base: jax.Array, seq: jax.Array, t: jax.Array, token: jax.Array) -> jax.Array:
    """The model stand-in: fixed logits, a dependency on the previous token, a bonus on the stream's token.
    Materialised like a model's output: the barrier keeps XLA from fusing it into the sampler of the jitted loops
    (which the host loops, with logits and sampling in two calls, could not do)."""
    logits = base + (token.astype(base.dtype) * 1e-6)[:, None]
    return jax.lax.optimization_barrier(logits.at[jnp.arange(base.shape[0]), seq[:, t]].add(BONUS))


def argmax(logits: jax.Array) -> jax.Array:
    """Greedy sampling as ``xg2jax.jax.Sampler()`` does it (on XLA:CPU a scalar variadic reduce)."""
    return jnp.argmax(logits, axis=-1).astype(jnp.int32)


def max_eq(logits: jax.Array) -> jax.Array:
    """The same token (lowest index of the maximum) from two plain reductions, which XLA:CPU vectorises."""
    top = jnp.max(logits, axis=-1, keepdims=True)
    ids = jnp.arange(logits.shape[-1], dtype=jnp.int32)
    return jnp.min(jnp.where(logits == top, ids, logits.shape[-1]), axis=-1)


SAMPLERS = {"argmax": argmax, "max-eq": max_eq}


def make_decode_loop(variant: str, threads: int, sample=argmax):
    """Jitted ``run(base, seq, state) -> (tokens int32[B, N], state)``: ``no mask``, ``ffi`` or ``callback``."""

    def run(base, seq, state):
        batch, steps = seq.shape

        def body(t, carry):
            token, state, out = carry
            logits = fake_logits(base, seq, t, token)
            if variant != "no mask":
                mask, state = xj.next_token_mask(state, token, path=variant, max_threads=threads)
                logits = xj.apply_token_bitmask(logits, mask, constrained=state.handles >= 0)
            token = sample(logits)
            return token, state, out.at[:, t].set(token)

        init = (jnp.full((batch,), -1, jnp.int32), state, jnp.zeros((batch, steps), jnp.int32))
        _, state, out = jax.lax.fori_loop(0, steps, body, init)
        return out, state

    return jax.jit(run)


def make_step_loop(variant: str, threads: int):
    """Jitted ``run(base, seq, state) -> (tokens, state)`` that runs only the grammar step (``ffi step``,
    ``callback step``) or nothing (``empty``), fed the stream itself: the step's own cost, without the
    vocabulary-wide logits and argmax. Each step checks the stream's next token against the mask; the
    returned tokens are the stream where the mask allowed it, -1 where it did not."""
    path = variant.split()[0]

    def run(base, seq, state):
        batch, steps = seq.shape

        def body(t, carry):
            state, out = carry
            last = jnp.where(t == 0, -1, seq[:, jnp.maximum(t - 1, 0)])
            if variant == "empty":
                mask = jnp.full((batch, state.mask_words), -1, jnp.int32) + (last[:, None] & 0)
            else:
                mask, state = xj.next_token_mask(state, last, path=path, max_threads=threads)
            want = seq[:, t]
            word = jnp.take_along_axis(mask, (want >> 5)[:, None], axis=1)[:, 0]
            allowed = (jnp.right_shift(word, want & 31) & 1) == 1
            return state, out.at[:, t].set(jnp.where(allowed, want, -1))

        state, out = jax.lax.fori_loop(0, steps, body, (state, jnp.zeros((batch, steps), jnp.int32)))
        return out, state

    return jax.jit(run)


def time_jit_loop(loop, base, seq, compiled, grammar: bool) -> tuple[float, bool]:
    """One call on a fresh GrammarState: (seconds, produced exactly the stream [and advanced every row])."""
    state = xj.GrammarState.create([compiled] * seq.shape[0])
    try:
        jax.block_until_ready(state)
        t0 = time.perf_counter()
        out, state_out = jax.block_until_ready(loop(base, seq, state))
        dt = time.perf_counter() - t0
        ok = bool(np.array_equal(np.asarray(out), np.asarray(seq)))
        if grammar and seq.shape[1] > 1:
            ok &= bool(np.all(np.asarray(state_out.status) & xj.StepStatus.ADVANCED))
        return dt, ok
    finally:
        state.release()


# ----------------------------------------------------------------------------------------------------------------
# Host loops (variant 4)
# ----------------------------------------------------------------------------------------------------------------


class HostLoop:
    """A Python decode loop around jitted pieces; with ``xgr`` given, xgrammar runs on the host every token."""

    def __init__(self, xgr=None, compiled=None, threads: int = 1, sample=argmax):
        self.xgr, self.compiled = xgr, compiled
        self.batcher = xgr.BatchGrammarMatcher(max_threads=threads) if xgr else None
        self.logits_fn = jax.jit(fake_logits)
        self.sample = jax.jit(sample)
        self.masked_sample = jax.jit(lambda logits, mask: sample(xj.apply_token_bitmask(logits, mask)))

    def _grammar(self, batch: int, vocab_size: int):
        if self.xgr is None:
            return None, None
        matchers = [self.xgr.GrammarMatcher(self.compiled) for _ in range(batch)]
        return matchers, self.xgr.allocate_token_bitmask(batch, vocab_size)

    def __call__(self, base, seq) -> tuple[float, bool]:
        """Decode N steps: (seconds, produced exactly the stream and every token was accepted)."""
        batch, steps = seq.shape
        matchers, bitmask = self._grammar(batch, base.shape[1])
        out = np.empty((batch, steps), np.int32)
        token, ok = np.full((batch,), -1, np.int32), True
        t0 = time.perf_counter()
        for t in range(steps):
            if matchers is not None and t:
                ok &= all(self.batcher.batch_accept_token(matchers, token.tolist()))
            logits = self.logits_fn(base, seq, np.int32(t), token)  # dispatched; computes while the host fills
            if matchers is not None:
                self.batcher.batch_fill_next_token_bitmask(matchers, bitmask)
                token = np.asarray(self.masked_sample(logits, jax.device_put(bitmask.numpy())))
            else:
                token = np.asarray(self.sample(logits))
            out[:, t] = token
        dt = time.perf_counter() - t0
        return dt, ok and bool(np.array_equal(out, np.asarray(seq)))

    def grammar_only(self, base, seq) -> tuple[float, bool]:
        """xgrammar alone, fed the stream: accept + fill per step, no JAX (its engine and binding cost)."""
        batch, steps = seq.shape
        matchers, bitmask = self._grammar(batch, base.shape[1])
        seq_np = np.asarray(seq)
        words, ok = bitmask.numpy(), True
        t0 = time.perf_counter()
        for t in range(steps):
            if t:
                ok &= all(self.batcher.batch_accept_token(matchers, seq_np[:, t - 1].tolist()))
            self.batcher.batch_fill_next_token_bitmask(matchers, bitmask)
        dt = time.perf_counter() - t0
        last = seq_np[:, -1]
        ok &= bool(np.all((words[np.arange(batch), last >> 5] >> (last & 31)) & 1))
        return dt, ok


# ----------------------------------------------------------------------------------------------------------------
# Gemma-3-270M-shaped decode step (variant 5), random weights
# ----------------------------------------------------------------------------------------------------------------

GEMMA = dict(layers=18, d_model=640, heads=4, kv_heads=1, head_dim=256, hidden=2048, vocab=262_144,
             global_every=6, rope_local=10_000.0, rope_global=1_000_000.0)


def gemma_params(key: jax.Array, cfg: dict) -> dict:
    """Random float32 weights of the Gemma 3 270M shapes (layers stacked for ``lax.scan``)."""
    L, d, h, kv, hd, f = (cfg[k] for k in ("layers", "d_model", "heads", "kv_heads", "head_dim", "hidden"))
    shapes = {"q": (L, d, h * hd), "k": (L, d, kv * hd), "v": (L, d, kv * hd), "o": (L, h * hd, d),
              "gate": (L, d, f), "up": (L, d, f), "down": (L, f, d)}
    keys = jax.random.split(key, len(shapes) + 1)
    params = {n: 0.02 * jax.random.normal(k, s, jnp.float32) for (n, s), k in zip(shapes.items(), keys[1:])}
    params["embed"] = 0.02 * jax.random.normal(keys[0], (cfg["vocab"], d), jnp.float32)
    for n, width in (("pre_attn", d), ("post_attn", d), ("pre_mlp", d), ("post_mlp", d), ("q_norm", hd),
                     ("k_norm", hd)):
        params[n] = jnp.zeros((L, width), jnp.float32)
    params["final_norm"] = jnp.zeros((d,), jnp.float32)
    return params


def rms_norm(x: jax.Array, scale: jax.Array) -> jax.Array:
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * (1.0 + scale)


def rope(x: jax.Array, pos: jax.Array, base: jax.Array) -> jax.Array:
    """Rotary embedding of x [B, H, D] at integer position ``pos`` with frequency base ``base``."""
    half = x.shape[-1] // 2
    freq = base ** (-jnp.arange(half, dtype=jnp.float32) / half)
    angle = pos.astype(jnp.float32) * freq
    sin, cos = jnp.sin(angle), jnp.cos(angle)
    x1, x2 = x[..., :half], x[..., half:]
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def gemma_decode_step(params: dict, cache: dict, tokens: jax.Array, pos: jax.Array, cfg: dict):
    """One new token per row at position ``pos``: (logits float32[B, V], updated cache)."""
    h, kv, hd = cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
    batch, cache_len = tokens.shape[0], cache["k"].shape[2]
    x = params["embed"][tokens] * jnp.sqrt(jnp.float32(cfg["d_model"]))
    layer_ids = jnp.arange(cfg["layers"])
    valid = jnp.arange(cache_len) <= pos

    def layer(x, lp):
        p, k_cache, v_cache, i = lp
        y = rms_norm(x, p["pre_attn"])
        q = rms_norm((y @ p["q"]).reshape(batch, h, hd), p["q_norm"])
        k = rms_norm((y @ p["k"]).reshape(batch, kv, hd), p["k_norm"])
        v = (y @ p["v"]).reshape(batch, kv, hd)
        base = jnp.where((i + 1) % cfg["global_every"] == 0, cfg["rope_global"], cfg["rope_local"])
        q, k = rope(q, pos, base), rope(k, pos, base)
        k_cache = jax.lax.dynamic_update_slice(k_cache, k[:, None], (0, pos, 0, 0))
        v_cache = jax.lax.dynamic_update_slice(v_cache, v[:, None], (0, pos, 0, 0))
        qg = q.reshape(batch, kv, h // kv, hd)
        scores = jnp.einsum("bkgd,bskd->bkgs", qg, k_cache) / jnp.sqrt(jnp.float32(hd))
        probs = jax.nn.softmax(jnp.where(valid, scores, -jnp.inf), axis=-1)
        attn = jnp.einsum("bkgs,bskd->bkgd", probs, v_cache).reshape(batch, h * hd)
        x = x + rms_norm(attn @ p["o"], p["post_attn"])
        y = rms_norm(x, p["pre_mlp"])
        mlp = (jax.nn.gelu(y @ p["gate"], approximate=True) * (y @ p["up"])) @ p["down"]
        return x + rms_norm(mlp, p["post_mlp"]), (k_cache, v_cache)

    per_layer = {n: v for n, v in params.items() if n not in ("embed", "final_norm")}
    x, (k_new, v_new) = jax.lax.scan(layer, x, (per_layer, cache["k"], cache["v"], layer_ids))
    logits = rms_norm(x, params["final_norm"]) @ params["embed"].T
    return logits, {"k": k_new, "v": v_new}


def time_gemma_step(params: dict, batch: int, cache_len: int, repeats: int, cfg: dict) -> dict:
    """Milliseconds of one jitted decode step at ``batch`` (cache half full) over repeats after two warmup steps."""
    shape = (cfg["layers"], batch, cache_len, cfg["kv_heads"], cfg["head_dim"])
    cache = {"k": jnp.zeros(shape, jnp.float32), "v": jnp.zeros(shape, jnp.float32)}
    step = jax.jit(lambda p, c, t, pos: gemma_decode_step(p, c, t, pos, cfg), donate_argnums=(1,))
    tokens = jnp.arange(batch, dtype=jnp.int32) + 1000
    times = []
    for i in tqdm(range(repeats + 2), desc=f"gemma step B={batch}", leave=False):
        pos = jnp.int32(cache_len // 2 + i)
        t0 = time.perf_counter()
        logits, cache = jax.block_until_ready(step(params, cache, tokens, pos))
        if i >= 2:
            times.append(time.perf_counter() - t0)
        tokens = jnp.argmax(logits, axis=-1).astype(jnp.int32)
    return {"median_ms": statistics.median(times) * 1e3, "min_ms": min(times) * 1e3,
            "trials_ms": [t * 1e3 for t in times]}


# ----------------------------------------------------------------------------------------------------------------
# The run
# ----------------------------------------------------------------------------------------------------------------


def setup_grammars(vocab) -> tuple:
    """(xg2jax CompiledGrammar, xgrammar module, xgrammar CompiledGrammar): the builtin JSON grammar, same vocab."""
    ours, theirs = peers.XG2JaxEngine(), peers.XGrammarEngine()
    for eng in (ours, theirs):
        eng.setup(vocab)
        eng.compile("builtin_json", None)
    return ours.compiled, theirs.xgr, theirs.compiled


def measure_batch(batch: int, args, greedy, grammars, threads: int) -> dict:
    """Every variant at one batch size: a warmup call (compiles, builds lazy masks), then interleaved trials."""
    compiled, xgr, xgr_compiled = grammars
    seq_np = token_streams(greedy, batch, args.steps)
    seq = jax.device_put(seq_np)
    base = jax.random.normal(jax.random.key(batch), (batch, args.vocab_size), jnp.float32)
    sample = SAMPLERS[args.sampler]
    plain, xgrammar = HostLoop(sample=sample), HostLoop(xgr, xgr_compiled, threads, sample)
    runners = {v: functools.partial(time_jit_loop, make_decode_loop(v, threads, sample), base, seq, compiled,
                                    v != "no mask") for v in DECODE_LOOPS}
    runners.update({v: functools.partial(time_jit_loop, make_step_loop(v, threads), base, seq, compiled,
                                         v != "empty") for v in STEP_LOOPS})
    runners["host loop"] = functools.partial(plain, base, seq)
    runners["xgrammar host"] = functools.partial(xgrammar, base, seq)
    runners["xgrammar step"] = functools.partial(xgrammar.grammar_only, base, seq)

    times = {v: [] for v in runners}
    ok = dict.fromkeys(runners, True)
    for trial in tqdm(range(args.trials + 1), desc=f"B={batch} trials", leave=False):
        for v, run_once in runners.items():
            dt, good = run_once()
            ok[v] &= good
            if trial:  # trial 0 is the warmup
                times[v].append(dt / args.steps * 1e6)
    rows = {}
    for v in runners:
        if not ok[v]:
            log.error("B=%d %s: the loop did not reproduce the token stream (mask or acceptance problem)", batch, v)
        rows[v] = {"median_us": statistics.median(times[v]), "min_us": min(times[v]), "trials_us": times[v],
                   "stream_ok": ok[v]}
    for v, ref in BASELINE.items():  # paired: trial i of the variant minus trial i of its baseline
        diffs = [a - (b if ref else 0.0) for a, b in zip(times[v], times[ref] if ref else times[v])]
        rows[v].update(baseline=ref, overhead_us=statistics.median(diffs), overhead_trials_us=diffs,
                       overhead_min_us=rows[v]["min_us"] - (rows[ref]["min_us"] if ref else 0.0))
    return {"batch": batch, "tokens_per_row": int(seq_np.shape[1]), "variants": rows}


def ratio(a, b):
    return a / b if b and b > 0 else None


def add_summary(result: dict) -> None:
    """Ratios between variants of the same run and the overhead as a share of the Gemma-shaped step."""
    gemma = result["gemma_step"]
    for row in result["batches"]:
        v = row["variants"]
        ffi, cb = v["ffi"]["overhead_us"], v["callback"]["overhead_us"]
        ffi_step = v["ffi step"]["overhead_us"]
        row["ratios"] = {
            "callback_over_ffi": ratio(cb, ffi),
            "callback_step_over_ffi_step": ratio(v["callback step"]["overhead_us"], ffi_step),
            "xgrammar_host_over_ffi": ratio(v["xgrammar host"]["overhead_us"], ffi),
            "xgrammar_step_over_ffi_step": ratio(v["xgrammar step"]["overhead_us"], ffi_step),
        }
        g = gemma.get(str(row["batch"]))
        if g:
            step_us = g["min_ms"] * 1e3  # the fastest repeat: the conservative denominator on a shared machine
            row["pct_of_gemma_step"] = {n: 100.0 * v[n]["overhead_us"] / step_us
                                        for n in ("ffi", "ffi step", "callback", "xgrammar host")}
    result["targets"] = targets(result)


def targets(result: dict) -> dict:
    """The two goals, per batch: callback overhead >= 20x ffi's (the decode loop's overhead, and the step alone);
    ffi overhead (advance + fill + apply, decode loop) <= 2% of the Gemma-shaped step at batch 8. A ratio over a
    non-positive ffi overhead (within the noise) is None."""
    def at_least(x, bound):
        return None if x is None else x >= bound

    out = {"callback_over_ffi_ge_20x": {r["batch"]: at_least(r["ratios"]["callback_over_ffi"], 20)
                                        for r in result["batches"]},
           "callback_step_over_ffi_step_ge_20x": {r["batch"]: at_least(r["ratios"]["callback_step_over_ffi_step"], 20)
                                                  for r in result["batches"]}}
    b8 = next((r for r in result["batches"] if r["batch"] == 8 and "pct_of_gemma_step" in r), None)
    out["ffi_overhead_b8_le_2pct_of_gemma_step"] = None if b8 is None else b8["pct_of_gemma_step"]["ffi"] <= 2.0
    return out


def run(args) -> dict:
    threads = args.threads
    vocab = workloads.load_vocab("gemma3")
    args.vocab_size = vocab.vocab_size
    greedy = workloads.GreedyTokenizer(vocab)
    log.info("gemma3 vocabulary: %d tokens; compiling the builtin JSON grammar (xg2jax, xgrammar)", vocab.vocab_size)
    grammars = setup_grammars(vocab)
    result = {"meta": {
        "date": _dt.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
        "python": platform.python_version(), "machine": platform.machine(), "nproc": os.cpu_count(),
        "jax": jax.__version__, "jax_backend": jax.default_backend(), "xgrammar": peers.XGrammarEngine().version,
        "loadavg_start": list(os.getloadavg()), "vocab": "gemma3", "vocab_size": vocab.vocab_size,
        "grammar": "builtin JSON", "sampler": args.sampler, "steps": args.steps, "trials": args.trials,
        "grammar_threads": threads,
        "gemma_cache_len": args.cache_len, "gemma_weights": "random (cost depends only on shapes)",
        "gemma_config": GEMMA}, "batches": [], "gemma_step": {}}
    for b in tqdm(args.batches, desc="batches"):
        log.info("batch %d: %d variants, %d steps, %d trials", b,
                 len(DECODE_LOOPS) + len(STEP_LOOPS) + len(HOST_LOOPS), args.steps, args.trials)
        result["batches"].append(measure_batch(b, args, greedy, grammars, threads))
    if args.gemma_batches:
        log.info("Gemma-3-270M-shaped step: random weights, batches %s", args.gemma_batches)
        params = jax.block_until_ready(gemma_params(jax.random.key(0), GEMMA))
        for b in args.gemma_batches:
            result["gemma_step"][str(b)] = time_gemma_step(params, b, args.cache_len, args.gemma_repeats, GEMMA)
        del params
    result["meta"]["loadavg_end"] = list(os.getloadavg())
    add_summary(result)
    return result


# ----------------------------------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------------------------------


def _f(x, digits=1) -> str:
    if x is None:
        return "—"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.{digits}f}"


def _cell(v: dict) -> str:
    return f"{_f(v['median_us'])} (+{_f(v['overhead_us'])})" if v.get("baseline") else _f(v["median_us"])


def _table(result: dict, header: list[str], names: list[str], ratios: list[str]) -> list[str]:
    lines = ["| B | " + " | ".join(header) + " |", "|---:|" + "---:|" * len(header)]
    for row in result["batches"]:
        cells = [_cell(row["variants"][n]) for n in names] + [_f(row["ratios"][r], 2) for r in ratios]
        lines.append(f"| {row['batch']} | " + " | ".join(cells) + " |")
    return lines


def markdown(result: dict) -> str:
    m = result["meta"]
    lines = [f"gemma3 vocabulary ({m['vocab_size']:,} ids), builtin JSON grammar, {m['steps']} steps per loop, "
             f"median of {m['trials']} trials, {m['nproc']} CPUs, jax {m['jax']}, grammar threads "
             f"{m['grammar_threads']}. µs per step (+ overhead over the baseline).", "",
             f"Decode loop (fake logits -> [mask] -> {m.get('sampler', 'argmax')}); overhead vs the jitted no-mask "
             "loop (median of paired trial differences):", ""]
    lines += _table(result, ["no mask", "ffi", "callback", "host loop", "xgrammar host", "callback/ffi",
                             "xgrammar host/ffi"],
                    ["no mask", "ffi", "callback", "host loop", "xgrammar host"],
                    ["callback_over_ffi", "xgrammar_host_over_ffi"])
    lines += ["", "Grammar step alone (advance + fill, fed the stream); overhead vs the empty jitted loop; "
                  "xgrammar step = host accept + fill, no JAX:", ""]
    lines += _table(result, ["empty", "ffi step", "callback step", "xgrammar step", "callback step/ffi step",
                             "xgrammar step/ffi step"],
                    ["empty", "ffi step", "callback step", "xgrammar step"],
                    ["callback_step_over_ffi_step", "xgrammar_step_over_ffi_step"])
    if result["gemma_step"]:
        lines += ["", f"Gemma-3-270M-shaped decode step (random weights, float32, KV cache {m['gemma_cache_len']}) "
                      "and each overhead as % of its fastest repeat:", "",
                  "| B | step ms, median (min) | ffi | ffi step | callback | xgrammar host |",
                  "|---:|---:|---:|---:|---:|---:|"]
        for b, g in result["gemma_step"].items():
            pct = next((r["pct_of_gemma_step"] for r in result["batches"]
                        if str(r["batch"]) == b and "pct_of_gemma_step" in r), {})
            cells = [f"{_f(pct.get(n), 2)}%" if n in pct else "—" for n in ("ffi", "ffi step", "callback",
                                                                            "xgrammar host")]
            lines.append(f"| {b} | {_f(g['median_ms'], 1)} ({_f(g['min_ms'], 1)}) | " + " | ".join(cells) + " |")
    bad = [f"B={r['batch']} {n}" for r in result["batches"] for n, v in r["variants"].items() if not v["stream_ok"]]
    lines += ["", f"Targets: {result['targets']}",
              "Token streams reproduced by every variant: " + ("yes" if not bad else "NO: " + ", ".join(bad)),
              f"Load average: start {m['loadavg_start']}, end {m.get('loadavg_end')}"]
    return "\n".join(lines)


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["ffi step", "callback step", "xgrammar step", "ffi", "callback", "host loop", "xgrammar host"]
    colors = ["#ff9896", "#9edae5", "#aec7e8", "#d62728", "#17becf", "#c7c7c7", "#1f77b4"]
    batches = [r["batch"] for r in result["batches"]]
    fig, ax = plt.subplots(figsize=(10, 5))
    width = 0.84 / len(names)
    for k, (name, color) in enumerate(zip(names, colors)):
        vals = [r["variants"][name]["overhead_us"] for r in result["batches"]]
        xs = np.arange(len(batches)) + (k - (len(names) - 1) / 2) * width
        bars = ax.bar(xs, [max(v, 1.0) for v in vals], width, label=name, color=color,
                      hatch="//" if name.endswith("step") else None, edgecolor="white")
        for bar, val in zip(bars, vals):  # a non-positive overhead (within noise) is labelled, not drawn
            ax.annotate(_f(val, 1 if abs(val) < 10 else 0) + (" (≤0)" if val <= 0 else ""),
                        (bar.get_x() + bar.get_width() / 2, max(val, 1.0)), ha="center", va="bottom", fontsize=6,
                        rotation=90 if val <= 0 else 0)
    for i, b in enumerate(batches):
        g = result["gemma_step"].get(str(b))
        if g:
            us = g["min_ms"] * 1e3
            ax.hlines([us, 0.02 * us], i - 0.45, i + 0.45, colors="k", linestyles=["-", ":"], linewidth=1)
            ax.annotate(f"Gemma-270M-shaped step {g['min_ms']:.0f} ms (fastest)", (i, us), ha="center",
                        va="bottom", fontsize=7)
            ax.annotate("2% of it", (i + 0.45, 0.02 * us), ha="right", va="bottom", fontsize=7)
    ax.set_xticks(np.arange(len(batches)))
    ax.set_xticklabels([f"batch {b}" for b in batches])
    ax.set_yscale("log")
    ax.set_ylim(bottom=1.0)
    ax.set_ylabel("per-step overhead (µs, log)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, ncol=len(names), loc="upper center", bbox_to_anchor=(0.5, -0.07))
    m = result["meta"]
    ax.set_title(f"Grammar cost per decode step: gemma3 vocab ({m['vocab_size']:,}), JSON, {m['nproc']} CPUs "
                 "(hatched: grammar step alone; solid: whole decode loop vs no mask)", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _int_list(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=_int_list, default=[1, 8, 32], help="comma list of batch sizes")
    ap.add_argument("--steps", type=int, default=None, help="decode steps per loop (default 64; 16 with --quick)")
    ap.add_argument("--trials", type=int, default=None,
                    help="timed trials after one warmup (default 7: the overheads are differences of noisy times; "
                         "1 with --quick)")
    ap.add_argument("--sampler", choices=sorted(SAMPLERS), default="argmax",
                    help="greedy sampler of the decode loops: jnp.argmax (as xg2jax.jax.Sampler) or max-eq "
                         "(same token, vectorised on XLA:CPU: less baseline, so the masking cost shows)")
    ap.add_argument("--threads", type=int, default=1,
                    help="grammar host threads, the same for xg2jax (max_threads) and xgrammar (BatchGrammarMatcher); "
                         "default 1, as in mask_time.py: on a small shared machine more threads mostly add "
                         "wake-up latency")
    ap.add_argument("--gemma-batches", type=_int_list, default=[1, 8],
                    help="batch sizes of the Gemma-3-270M-shaped step ('' to skip)")
    ap.add_argument("--gemma-repeats", type=int, default=None, help="timed Gemma steps (default 10; 3 quick)")
    ap.add_argument("--cache-len", type=int, default=256, help="Gemma KV cache positions")
    ap.add_argument("--quick", action="store_true", help="smoke test: fewer steps and trials")
    ap.add_argument("--out", default=None,
                    help="result JSON (default benchmarks/results/jax_step.json, jax_step_quick.json with --quick)")
    ap.add_argument("--from-json", default=None, metavar="PATH", help="reprint and redraw an earlier result")
    args = ap.parse_args(argv)
    args.steps = args.steps or (16 if args.quick else 64)
    args.trials = args.trials or (1 if args.quick else 7)
    args.gemma_repeats = args.gemma_repeats or (3 if args.quick else 10)
    out = Path(args.out) if args.out else HERE / "results" / ("jax_step_quick.json" if args.quick else "jax_step.json")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    if args.from_json:
        result = json.loads(Path(args.from_json).read_text())
        plot(result, Path(args.from_json).with_suffix(".png"))
        print(markdown(result))
        return 0
    result = run(args)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False))
    plot(result, out.with_suffix(".png"))
    print(markdown(result))
    log.info("wrote %s and %s", out, out.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
