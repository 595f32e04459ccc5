"""Grammar-constrained decoding inside jax.jit over the real Gemma 3 vocabulary.

A small random Flax transformer (``xg2jax.jax.tiny_lm``; the Gemma 3 270M model is the next main job)
decodes a batch of 8 rows with mixed constraints (builtin JSON, EBNF grammars, unconstrained rows) in one
jitted ``lax.while_loop``; the grammar step is one XLA custom call per iteration. Each constrained row is
re-checked with a fresh host matcher. Prints the outputs, the handler call count, and the time per step
with and without compilation.

    python examples/jax_demo.py [--vocab gemma3|qwen2|gpt2] [--max-new-tokens 48] [--path auto|ffi|callback]
"""

from __future__ import annotations

import argparse
import logging
import time

import jax
import jax.numpy as jnp
import numpy as np

import xg2jax
import xg2jax.jax as xj
from xg2jax import _core, vocab_packages
from xg2jax.jax.tiny_lm import TinyLMConfig, TinyLMStep, init_cache
from xg2jax.testing import first_rejected_token

GRAMMARS = {
    "person": r"""root ::= "{\"name\": \"" [A-Z] [a-z]{1,8} "\", \"age\": " [1-9] [0-9]? "}" """,
    "yes_no": r"""root ::= ("Yes" | "No") "."  """,
    "arithmetic": r"""root ::= [0-9]{1,3} (("+" | "*") [0-9]{1,3}){1,3} " = " [0-9]{1,4} """,
    "json": None,
}
ROWS = ["person", "json", None, "yes_no", "arithmetic", "person", None, "json"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", default="gemma3", choices=["gemma3", "qwen2", "gpt2"])
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--path", default="auto", choices=["auto", "ffi", "callback"])
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("jax").setLevel(logging.WARNING)  # not its backend probing ("no libtpu") at INFO

    logging.info("loading the %s vocabulary", args.vocab)
    tok = xg2jax.TokenizerInfo.from_loaded_vocab(getattr(vocab_packages, args.vocab)())
    compiler = xg2jax.GrammarCompiler(tok)
    compiled = {n: compiler.compile_builtin_json_grammar() if g is None else compiler.compile_grammar(g)
                for n, g in GRAMMARS.items()}
    rows = [None if n is None else compiled[n] for n in ROWS]

    config = TinyLMConfig(vocab_size=tok.vocab_size, max_len=16 + args.max_new_tokens)
    model = TinyLMStep(config)
    params = model.init(jax.random.key(0))
    # Random weights know nothing about JSON; a bias towards closing tokens keeps free JSON short.
    vocab = tok.decoded_vocab
    bias = np.zeros(tok.vocab_size, np.float32)
    bias[[i for i, t in enumerate(vocab) if t in (b"}", b"]", b'"', b'"}', b":", b"0")]] = 20.0
    bias[tok.stop_token_ids] = 22.0
    params = dict(params, out_bias=jnp.asarray(bias))
    prompt = np.random.RandomState(0).randint(1000, 20000, size=(len(rows), 8)).astype(np.int32)
    lengths = np.full(len(rows), 8, np.int32)
    stops = tok.stop_token_ids

    for label in ("first call (compiles)", "second call (compiled)"):
        before = _core.step_call_count("cpu_ffi") + _core.step_call_count("host")
        with xj.GrammarState.create(rows, vocab_size=tok.vocab_size) as state:
            t0 = time.perf_counter()
            out = xj.constrained_sample(model, params, init_cache(config, len(rows)), prompt, lengths, state,
                                        max_new_tokens=args.max_new_tokens, stop_token_ids=stops, path=args.path)
            tokens, out_lengths = np.asarray(out.tokens), np.asarray(out.lengths)
            elapsed = time.perf_counter() - t0
        calls = _core.step_call_count("cpu_ffi") + _core.step_call_count("host") - before
        logging.info("%s: %.2f s for %d loop iterations (%.1f ms/step), grammar-step calls: %d", label, elapsed,
                     out_lengths.max(), 1e3 * elapsed / out_lengths.max(), calls)

    ok = True
    for r, name in enumerate(ROWS):
        ids = tokens[r, :out_lengths[r]].tolist()
        text = b"".join(vocab[t] for t in ids).decode("utf-8", "replace")
        if rows[r] is None:
            verdict = "unconstrained"
        else:
            stopped = int(out.finish_reason[r]) == xj.FinishReason.STOP
            at = first_rejected_token(rows[r], ids, require_termination=stopped)
            if at is not None:
                verdict = f"REJECTED at token {at}"
            elif stopped:
                verdict = "accepted by a fresh matcher, terminated"
            else:
                verdict = "a valid prefix, cut by --max-new-tokens"
            ok &= at is None
        print(f"row {r} [{name or 'free'}] ({verdict}): {text!r}")
    if not ok:
        raise SystemExit("a constrained row was not accepted by a fresh matcher")


if __name__ == "__main__":
    main()
