"""Drives matchers over random grammars and compares every mask with the oracles.

``check_case(text, vocab, seed, ...)`` compiles one grammar for one vocabulary and walks it: at every step
the mask from ``fill_next_token_bitmask`` is compared with the brute-force oracle (every token tried with
accept_token's rules, ``xg2jax.testing.oracle_bitmask``), and on some steps with the independent Python
reference recognizer (random_grammars.Reference). Walks pick allowed tokens (mostly), random tokens (the
answer of accept_token must match the mask bit), roll back and fork. Returns a list of findings (dicts).

``run_isolated(...)`` runs check_case in a forked child with a timeout, so that a grammar that hangs
the engine is recorded (kind "hang") instead of hanging the run.

Command line: ``python tests/random_grammar_driver.py START COUNT`` fuzzes seeds START..START+COUNT-1.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import sys
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import random_grammars as rg  # noqa: E402

import xg2jax as xgr  # noqa: E402
from xg2jax.testing import bitmask_to_ids, oracle_bitmask  # noqa: E402


def _mask_ids(m, vocab_size) -> set[int]:
    bm = xgr.allocate_token_bitmask(1, vocab_size)
    m.fill_next_token_bitmask(bm)
    return set(bitmask_to_ids(bm[0], vocab_size).tolist())


def _trie(vocab: list[bytes], stop_ids) -> dict:
    root: dict = {}
    for tid, t in enumerate(vocab):
        if tid in stop_ids or not t:
            continue
        try:
            text = t.decode()
        except UnicodeDecodeError:
            continue
        node = root
        for ch in text:
            node = node.setdefault(ch, {})
        node.setdefault(None, []).append(tid)
    return root


def reference_mask(ref: rg.Reference, sets, vocab: list[bytes], stop_ids, trie=None) -> set[int]:
    """Token ids the reference recognizer allows after the prefix `sets` (shared token prefixes parsed once)."""
    out = set()
    if ref.complete(sets):
        out |= set(stop_ids)
    trie = trie if trie is not None else _trie(vocab, stop_ids)
    s = list(sets)

    def dfs(node):
        for ch, sub in node.items():
            if ch is None:
                continue
            if ref.step(s, ch):
                out.update(sub.get(None, ()))
                dfs(sub)
                s.pop()

    dfs(trie)
    return out


def check_case(text: str, vocab: list[bytes] | None, seed: int, **kw) -> list[dict]:
    """Walks the grammar; returns findings. vocab[0] is the stop token (or pass a TokenizerInfo `tok`).

    A grammar too ambiguous for the engine's limits (xg2jax.LimitError, from the matcher or the oracle)
    ends the case with a "limit" finding: a bounded refusal, not a disagreement.
    """
    findings: list[dict] = []
    try:
        _check_case(findings, text, vocab, seed, **kw)
    except xgr.LimitError as e:
        findings.append({"kind": "limit", "error": str(e)[:300]})
    return findings


def _check_case(findings: list[dict], text: str, vocab: list[bytes] | None, seed: int, *, steps: int = 30,
                ref_every: int = 1, walks: int = 2, ast: rg.GrammarAst | None = None, compiler=None,
                stop_at_first: bool = True, strings: int = 20, tok=None, max_bytes: int = 60,
                precompute: bool = False) -> list[dict]:
    rng = random.Random(seed)
    if tok is None:
        tok = xgr.TokenizerInfo(vocab, stop_token_ids=[0])
    else:
        vocab = list(tok.decoded_vocab)
    ref = rg.Reference(ast) if ast is not None else None
    if compiler is None:
        compiler = xgr.GrammarCompiler(tok, cache_enabled=False)
    try:
        compiled = compiler.compile_grammar(text, precompute_masks=precompute)
    except xgr.LimitError:
        raise  # a bounded refusal (check_case records it as "limit"), not a compile error
    except Exception as e:  # noqa: BLE001
        if ref is not None and ref.ok:
            findings.append({"kind": "compile_error", "error": str(e)[:300]})
        return findings
    if ref is not None and not ref.ok:
        findings.append({"kind": "compiled_unproductive"})
        return findings
    n = tok.vocab_size
    vocab = vocab + [b""] * (n - len(vocab))
    stop_ids = set(tok.stop_token_ids)
    specials = set(tok.special_token_ids)
    trie = _trie(vocab, stop_ids)

    def diff(m, path, ref_sets):
        got = _mask_ids(m, n)
        want = set(bitmask_to_ids(oracle_bitmask(m), n).tolist())
        out = []
        if got != want:
            out.append({"kind": "mask_vs_accept", "path": list(path),
                        "mask_only": sorted(got - want), "accept_only": sorted(want - got)})
        if ref_sets is not None:
            r = reference_mask(ref, ref_sets, vocab, stop_ids, trie)
            if r != want:
                out.append({"kind": "accept_vs_reference", "path": list(path),
                            "engine_only": sorted(want - r), "reference_only": sorted(r - want)})
        return out, got

    # Random strings through accept_string vs the reference.
    if ref is not None:
        normal = [t for i, t in enumerate(vocab) if t and i not in stop_ids and i not in specials]
        alphabet = sorted({c for t in normal for c in t.decode(errors="ignore")})
        for _ in range(strings):
            s = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 10))) if rng.random() < 0.5 else \
                "".join(rng.choice(normal).decode(errors="ignore") for _ in range(rng.randint(1, 4)))
            m = xgr.GrammarMatcher(compiled)
            got = m.accept_string(s)
            want = ref.accepts_prefix(s)
            if got != want:
                findings.append({"kind": "accept_string_vs_reference", "string": s, "engine": got, "reference": want})
                if stop_at_first:
                    return findings
            elif got and m.is_completed() != ref.accepts(s):
                findings.append({"kind": "completed_vs_reference", "string": s, "engine": m.is_completed(),
                                 "reference": ref.accepts(s)})
                if stop_at_first:
                    return findings

    for w in range(walks):
        m = xgr.GrammarMatcher(compiled, max_rollback_tokens=-1)
        path: list[int] = []
        nbytes = 0
        ref_sets = ref.initial() if ref is not None else None
        history = []  # (mask, ref_sets) before each accepted token
        for step in range(steps):
            if nbytes > max_bytes:
                break
            use_ref = ref is not None and step % ref_every == 0
            out, mask = diff(m, path, ref_sets if use_ref else None)
            if out:
                for f in out:
                    f["walk"] = w
                findings.extend(out)
                if stop_at_first:
                    return findings
            # A random token: accept_token must agree with the mask bit.
            r = rng.random()
            if r < 0.15 and history:
                k = rng.randint(1, min(3, len(history)))
                m.rollback(k)
                del path[-k:]
                old_mask, ref_sets = history[-k][0], history[-k][1]
                del history[-k:]
                now = _mask_ids(m, n)
                if now != old_mask:
                    findings.append({"kind": "rollback_mask", "path": list(path), "now": sorted(now),
                                     "before": sorted(old_mask)})
                    if stop_at_first:
                        return findings
                continue
            if r < 0.22:
                m = m.fork()
            if r < 0.35:
                t = rng.randrange(n)
            else:
                choices = sorted(mask - stop_ids)
                if not choices:
                    break
                # Prefer short tokens a bit (finer progress, more states visited).
                if rng.random() < 0.4:
                    short = [c for c in choices if len(vocab[c]) <= 2]
                    if short:
                        choices = short
                t = rng.choice(choices)
            ok = m.accept_token(t)
            if ok != (t in mask):
                findings.append({"kind": "accept_vs_mask_bit", "path": list(path), "token": t, "accepted": ok})
                if stop_at_first:
                    return findings
            if ok:
                if t in stop_ids:
                    break
                history.append((mask, list(ref_sets) if ref_sets is not None else None))
                path.append(t)
                nbytes += len(vocab[t])
                if ref_sets is not None:
                    ref_sets = list(ref_sets)
                    if not all(ref.step(ref_sets, ch) for ch in vocab[t].decode()):
                        findings.append({"kind": "accept_vs_reference", "path": list(path), "engine_only": [t],
                                         "reference_only": [], "walk": w})
                        if stop_at_first:
                            return findings
                        ref = None
                        ref_sets = None
    return findings


def _child(conn, kwargs):
    try:
        conn.send(check_case(**kwargs))
    except Exception:  # noqa: BLE001
        conn.send([{"kind": "exception", "error": traceback.format_exc()[-800:]}])
    conn.close()


def run_isolated(timeout: float = 20.0, **kwargs) -> list[dict]:
    """check_case in a forked child; a timeout is reported as a 'hang' finding."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child, args=(child, kwargs))
    p.start()
    child.close()
    if parent.poll(timeout):
        try:
            res = parent.recv()
        except EOFError:
            res = [{"kind": "crash", "exitcode": None}]
        p.join(5)
        return res
    p.kill()
    p.join()
    if p.exitcode not in (None, -9):
        return [{"kind": "crash", "exitcode": p.exitcode}]
    return [{"kind": "hang", "timeout": timeout}]


def fuzz_one(seed: int, **kw) -> tuple[str, list[bytes], list[dict]]:
    ast = rg.gen_any(seed)
    vocab = rg.gen_vocab(ast, seed)
    text = ast.text()
    return text, vocab, run_isolated(text=text, vocab=vocab, seed=seed, ast=ast, **kw)


if __name__ == "__main__":
    start, count = int(sys.argv[1]), int(sys.argv[2])
    timeout = float(sys.argv[3]) if len(sys.argv) > 3 else 20.0
    kinds: dict[str, int] = {}
    for seed in range(start, start + count):
        text, vocab, findings = fuzz_one(seed, timeout=timeout)
        for f in findings:
            kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
        if findings:
            f = findings[0]
            print(f"seed {seed}: {f['kind']}  grammar={text!r}", flush=True)
            print("   ", {k: v for k, v in f.items() if k != "kind"}, flush=True)
    print("summary:", kinds, flush=True)


def real_vocab_subset(decoded_vocab, seed: int = 0, other_share: float = 0.002) -> list[bytes]:
    """The tokens of a real vocabulary made only of characters the random grammars use (its JSON-ish pieces,
    literal and class pools: ``true,``, ``"}``, ``null``, ``", "``, words of those letters ...), plus a small random
    share of the rest, after a stop token ``</s>`` (id 0). A few thousand real tokens that straddle the grammars'
    literal boundaries, where the mask cache's context handling is busiest, at a fraction of the oracle's cost on
    the whole vocabulary."""
    chars = set("".join(rg.LITERAL_POOL)) | set(rg.CLASS_POOL) | set("".join(rg.JSONISH))
    rng = random.Random(seed)
    keep = [b"</s>"]
    for t in decoded_vocab:
        try:
            text = t.decode()
        except UnicodeDecodeError:
            continue
        if text and (set(text) <= chars or rng.random() < other_share):
            keep.append(t)
    return list(dict.fromkeys(keep))


def shared_vocab(seed: int, size: int = 200) -> list[bytes]:
    """One vocabulary for many grammars (the pools' pieces and JSON-ish tokens); size 0: the JSON-ish list."""
    if size == 0:
        return [b"</s>"] + [t.encode() for t in rg.JSONISH]
    pool = rg.GrammarAst({"root": ("alt", [("lit", s) for s in rg.LITERAL_POOL] +
                                   [("cls", frozenset(rg.CLASS_POOL), False)])})
    v = rg.gen_vocab(pool, seed, size=max(size, 80))
    if size < len(v):  # keep the stop token and every single character, drop random others
        rng = random.Random(seed)
        singles = [t for t in v[1:] if len(t) == 1]
        multi = [t for t in v[1:] if len(t) > 1]
        v = [v[0]] + singles + rng.sample(multi, max(0, size - 1 - len(singles)))
    return v


def _batch_child(conn, seeds, vocab_seed, kw):
    kw = dict(kw)
    use_ref = kw.pop("use_ref", True)
    gen = kw.pop("gen", rg.gen_any)
    vocab = shared_vocab(vocab_seed, kw.pop("vocab_size", 200))
    tok = xgr.TokenizerInfo(vocab, stop_token_ids=[0])
    compiler = xgr.GrammarCompiler(tok, cache_enabled=True)
    for seed in seeds:
        ast = gen(seed)
        try:
            res = check_case(ast.text(), vocab, seed, ast=ast if use_ref else None, compiler=compiler, **kw)
        except Exception:  # noqa: BLE001
            res = [{"kind": "exception", "error": traceback.format_exc()[-800:]}]
        conn.send((seed, res))
    conn.send(None)
    conn.close()


def run_shared_batch(seeds, vocab_seed: int = 0, timeout: float = 20.0, **kw):
    """Grammars of `seeds` compiled by one GrammarCompiler (cross-grammar caches on), one vocabulary.
    Yields (seed, findings); a seed that runs past `timeout` is reported as a hang and the batch goes on
    in a fresh child from the next seed."""
    seeds = list(seeds)
    ctx = mp.get_context("fork")
    while seeds:
        parent, child = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_batch_child, args=(child, seeds, vocab_seed, kw))
        p.start()
        child.close()
        while True:
            if not parent.poll(timeout):
                p.kill()
                p.join()
                yield seeds[0], [{"kind": "hang", "timeout": timeout}]
                seeds = seeds[1:]
                break
            try:
                msg = parent.recv()
            except EOFError:
                p.join()
                yield seeds[0], [{"kind": "crash", "exitcode": p.exitcode}]
                seeds = seeds[1:]
                break
            if msg is None:
                p.join()
                seeds = []
                break
            seed, res = msg
            seeds = seeds[seeds.index(seed) + 1:]
            yield seed, res
