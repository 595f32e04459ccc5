"""atheris target: matcher operation sequences on random grammars.

The input seeds tests/random_grammars.py's generators (grammar + vocabulary) and then drives a sequence of
fill / accept_token / rollback / fork / reset / accept_string on one or more matchers. Checks, at every step:
  * fill_next_token_bitmask == the brute-force oracle (xg2jax.testing.mask_oracle_diff);
  * accept_token(t) == the mask bit of t;
  * after rollback(k), the mask equals the mask recorded k tokens earlier;
  * optionally, the oracle mask == the independent Python reference recognizer's mask (random_grammars.Reference);
  * an accepted token keeps the text a prefix of a sentence for the reference.
Expected: xg2jax.LimitError (grammar too ambiguous for the engine's limits). A grammar the reference
considers productive must compile. Any other exception or a failed check is a finding.

Run: fuzz/run.sh matcher_ops <seconds>  (or python fuzz/matcher_ops_fuzzer.py [libFuzzer args] [corpus dirs]).
Reproduce: python fuzz/matcher_ops_fuzzer.py <crash file>
"""

import os
import sys

import atheris

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

if True:  # instrumented below with atheris.instrument_all() (the editable install's loader defeats instrument_imports)
    import random_grammars as rg
    import xg2jax as xgr
    from xg2jax.testing import bitmask_to_ids, mask_oracle_diff, oracle_bitmask

import numpy as np  # noqa: E402
import random_grammar_driver as drv  # noqa: E402

LimitError = getattr(xgr, "LimitError", None)
TRACE = bool(os.environ.get("XG_FUZZ_TRACE"))  # print every operation (for reproducing a finding)


def is_limit(e: BaseException) -> bool:
    if LimitError is not None and isinstance(e, LimitError):
        return True
    # "grammar too large: the automata exceed the state limit" is a bounded refusal too, though raised as a
    # plain ValueError (see docs/fuzzing.md, findings).
    return isinstance(e, ValueError) and ("(Limits." in str(e) or str(e).startswith("grammar too large"))


class Finding(AssertionError):
    pass


def mask_ids(m, n):
    bm = xgr.allocate_token_bitmask(1, n)
    m.fill_next_token_bitmask(bm)
    return set(bitmask_to_ids(bm[0], n).tolist())


def one(data: bytes):
    fdp = atheris.FuzzedDataProvider(data)
    seed = fdp.ConsumeIntInRange(0, 1 << 20)
    vocab_size = fdp.ConsumeIntInRange(20, 120)
    use_ref = fdp.ConsumeBool()
    # One grammar in five is a chain grammar (short repetitions of wide classes a rule can leave part-way).
    ast = rg.gen_chain_grammar(seed) if seed % 5 == 4 else rg.gen_any(seed)
    vocab = rg.gen_vocab(ast, seed, size=vocab_size)
    text = ast.text()
    ref = rg.Reference(ast) if use_ref else None
    tok = xgr.TokenizerInfo(vocab, stop_token_ids=[0])
    compiler = xgr.GrammarCompiler(tok, cache_enabled=False)
    try:
        compiled = compiler.compile_grammar(text)
    except ValueError as e:
        if is_limit(e):
            return
        if ref is not None and ref.ok:
            raise Finding(f"compile error on a productive grammar: {e}\n{text}") from None
        return
    if ref is not None and not ref.ok:
        raise Finding(f"compiled an unproductive grammar:\n{text}")
    n = tok.vocab_size
    vocab = vocab + [b""] * (n - len(vocab))
    stop_ids = set(tok.stop_token_ids)
    trie = drv._trie(vocab, stop_ids)

    # Each live matcher: [matcher, history of (mask before token, ref sets before token)], current ref sets.
    lives = [[xgr.GrammarMatcher(compiled, max_rollback_tokens=-1), [], ref.initial() if ref else None]]
    cur = 0
    for step in range(fdp.ConsumeIntInRange(1, 24)):
        live = lives[cur]
        m, hist, sets = live
        op = fdp.ConsumeIntInRange(0, 15)
        if TRACE:
            print(f"step {step} matcher {cur} op {op} path {[h[2] for h in hist]}", file=sys.stderr)
        ctx = f"grammar:\n{text}vocab={vocab!r}\nstep {step} op {op} path {[h[2] for h in hist]}"
        if op <= 1:  # fill + oracle (+ reference)
            extra, missing = mask_oracle_diff(m)
            if len(extra) or len(missing):
                raise Finding(f"mask != oracle: mask-only {extra.tolist()} oracle-only {missing.tolist()}\n{ctx}")
            if ref is not None and sets is not None and op == 1:
                want = set(bitmask_to_ids(oracle_bitmask(m), n).tolist())
                r = drv.reference_mask(ref, sets, vocab, stop_ids, trie)
                if r != want:
                    raise Finding(f"oracle != reference: engine-only {sorted(want - r)} reference-only "
                                  f"{sorted(r - want)}\n{ctx}")
        elif op <= 9:  # accept_token: an allowed token (mostly) or any token
            mask = mask_ids(m, n)
            if op <= 7 and mask - stop_ids:
                choices = sorted(mask - stop_ids)
                t = choices[fdp.ConsumeIntInRange(0, len(choices) - 1)]
            else:
                t = fdp.ConsumeIntInRange(0, n - 1)
            # A terminated matcher rejects every token while its mask allows the stop tokens (xgrammar's
            # convention, documented in GrammarMatcher): there the expected answer is False.
            want = (t in mask) and not m.is_terminated()
            ok = m.accept_token(t)
            if TRACE:
                print(f"  accept_token({t} {vocab[t]!r}) -> {ok}", file=sys.stderr)
            if ok != want:
                raise Finding(f"accept_token({t}) = {ok} but mask bit = {t in mask} (terminated: {not want})\n{ctx}")
            if ok:  # a stop token counts too: rollback(k) undoes it like any token
                new_sets = None  # terminated: no reference comparison until rolled back or reset
                if sets is not None and t not in stop_ids:
                    new_sets = list(sets)
                    if not all(ref.step(new_sets, ch) for ch in vocab[t].decode()):
                        raise Finding(f"engine accepted token {t} {vocab[t]!r}; reference rejects the prefix\n{ctx}")
                hist.append((mask, sets, t))
                live[2] = new_sets
        elif op <= 11:  # rollback k
            if hist:
                k = fdp.ConsumeIntInRange(1, min(4, len(hist)))
                m.rollback(k)
                old_mask, old_sets, _ = hist[-k]
                del hist[-k:]
                live[2] = old_sets
                if not m.is_terminated():
                    now = mask_ids(m, n)
                    if now != old_mask:
                        raise Finding(f"rollback({k}) mask {sorted(now)} != before {sorted(old_mask)}\n{ctx}")
        elif op == 12:  # fork: continue on either copy
            if len(lives) < 4:
                lives.append([m.fork(), list(hist), list(sets) if sets is not None else None])
            cur = fdp.ConsumeIntInRange(0, len(lives) - 1)
        elif op == 13:  # reset
            m.reset()
            live[1] = []
            live[2] = ref.initial() if ref else None
        elif op == 14:  # switch matcher
            cur = fdp.ConsumeIntInRange(0, len(lives) - 1)
        else:  # completion / jump-forward consistency
            done = m.is_completed()
            if sets is not None and not m.is_terminated() and done != ref.complete(list(sets)):
                raise Finding(f"is_completed {done} != reference {not done} (reference)\n{ctx}")
            m.find_jump_forward_string()


def TestOneInput(data: bytes):
    try:
        one(data)
    except Finding:
        raise
    except ValueError as e:
        if is_limit(e):
            return
        raise


if __name__ == "__main__":
    atheris.instrument_all()
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
