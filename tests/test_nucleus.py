"""restrict_top_k_top_p against the sort-based top-k/top-p filter of ``Sampler.__call__`` (copied below):
the kept sets must be equal, on random rows of several scales and vocabulary sizes, on rows built to be
awkward (ties at the cutoff, mostly or wholly masked rows, signed zeros), and on the bisection fallback
(flat rows whose nucleus is larger than the candidate set, and tiny candidate sets).

Random continuous rows are compared exactly except at knife edges: both filters accumulate the mass in
float32, in different orders, so a token whose exclusive mass is within a few ulps of ``top_p`` may be
decided differently by the two (at V = 262,144 and top_p = 0.99 the boundary token carries ~3e-7, about
five ulps of 0.99, so this is not rare there). Every such disagreement must be one where the float64 mass
is within ``KNIFE_EDGE`` of ``top_p``; the constructed rows allow none at all.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from xg2jax.jax._nucleus import restrict_top_k_top_p

KNIFE_EDGE = 2.0**-20  # ~16 float32 ulps of a mass near 1; observed disagreements stay below 3e-7

restrict = jax.jit(restrict_top_k_top_p, static_argnames=("top_k", "top_p", "candidates"))


@functools.partial(jax.jit, static_argnames=("top_k", "nucleus"))
def _reference(logits, top_p, *, top_k, nucleus):
    # Sampler.__call__ after the temperature division, verbatim; top_p is traced so that one compile
    # serves every top_p (the comparison is with float32(top_p) either way).
    logits = logits.astype(jnp.float32)
    neg_inf = jnp.asarray(-jnp.inf, logits.dtype)
    if top_k:
        kth = jax.lax.top_k(logits, top_k)[0][..., -1:]
        logits = jnp.where(logits < kth, neg_inf, logits)
    if nucleus:
        sorted_logits = jnp.sort(logits, axis=-1)[..., ::-1]
        probs = jax.nn.softmax(sorted_logits, axis=-1)
        keep = jnp.cumsum(probs, axis=-1) - probs < top_p
        cutoff = jnp.min(jnp.where(keep, sorted_logits, jnp.inf), axis=-1, keepdims=True)
        logits = jnp.where(logits < cutoff, neg_inf, logits)
    return logits


def reference(logits, *, top_k, top_p):
    return _reference(logits, jnp.float32(top_p), top_k=top_k, nucleus=top_p < 1.0)


def _is_knife_edge(row, lo, hi, top_k, top_p):
    """Whether every logit value in [lo, hi) has a float64 exclusive mass within KNIFE_EDGE of top_p."""
    x = row.astype(np.float64)
    if top_k:
        x = np.where(x < np.sort(x)[::-1][top_k - 1], -np.inf, x)
    probs = np.exp(x - x.max())
    probs /= probs.sum()
    target = float(np.float32(top_p))
    return all(abs(probs[x > v].sum() - target) <= KNIFE_EDGE for v in np.unique(x[(x >= lo) & (x < hi)]))


def assert_same_kept(logits, got, want, *, top_k, top_p, knife_edges=True):
    logits, got, want = np.asarray(logits), np.asarray(got), np.asarray(want)
    assert got.shape == logits.shape and got.dtype == np.float32
    kept, ref_kept = np.isfinite(got), np.isfinite(want)
    np.testing.assert_array_equal(got[kept], logits[kept])  # kept logits are untouched
    assert np.all(got[~kept] == -np.inf)
    for r in np.ndindex(logits.shape[:-1]):
        if np.array_equal(kept[r], ref_kept[r]):
            continue
        assert knife_edges and kept[r].any() and ref_kept[r].any(), (
            f"row {r}: kept {kept[r].sum()} tokens, the reference {ref_kept[r].sum()}")
        cut, ref_cut = got[r][kept[r]].min(), want[r][ref_kept[r]].min()
        np.testing.assert_array_equal(kept[r], logits[r] >= cut)  # still everything down to a cutoff
        assert _is_knife_edge(logits[r], min(cut, ref_cut), max(cut, ref_cut), top_k, top_p), (
            f"row {r}: cutoff {cut} vs the reference's {ref_cut}, and not within {KNIFE_EDGE} of top_p")


def check(logits, *, top_k, top_p, candidates=256, knife_edges=True):
    got = restrict(logits, top_k=top_k, top_p=top_p, candidates=candidates)
    want = reference(logits, top_k=top_k, top_p=top_p)
    assert_same_kept(logits, got, want, top_k=top_k, top_p=top_p, knife_edges=knife_edges)
    return np.asarray(got)


def normal_rows(seed, batch, vocab, scales):
    """Standard normal rows, row r scaled by scales[r % len(scales)]: small scales are flat, large peaked."""
    x = np.random.default_rng(seed).standard_normal((batch, vocab), dtype=np.float32)
    return x * np.resize(np.asarray(scales, np.float32), batch)[:, None]


def awkward_rows(vocab):
    """Eight rows on which the kept set is determined by ties and masking, not by rounding."""
    rng = np.random.default_rng(7)
    rows = np.full((8, vocab), -np.inf, np.float32)
    rows[0] = np.where(rng.random(vocab) < 0.95, -np.inf, 2 * rng.standard_normal(vocab))  # 95% masked
    rows[1, vocab // 3] = 1.5  # a single finite logit
    rows[2, [5, vocab - 1]] = [0.0, -1.0]  # two finite logits
    rows[3] = rng.integers(0, 5, vocab)  # five values, hundreds of ties each: cutoffs fall inside tie groups
    rows[4] = 0.0  # uniform: everything ties with the best token
    rows[5] = rng.choice(np.array([-0.0, 0.0, -1.0, 1.0], np.float32), vocab)  # ties between +0.0 and -0.0
    # row 6 stays all -inf
    rows[7] = -8 + rng.standard_normal(vocab)  # peaked, with a tie group around the nucleus boundary
    rows[7, :6] = [4.0, 2.0, 2.0, 2.0, 2.0, 2.0]
    return rows


@pytest.mark.parametrize("top_p", [1.0, 0.9, 0.5, 0.99])
@pytest.mark.parametrize("top_k", [0, 1, 40, 300])
def test_grid(top_k, top_p):
    # V = 1000 with the default 256 candidates: the flat rows need the fallback, the peaked ones not.
    check(normal_rows(0, 8, 1000, [0.1, 0.5, 1, 2, 3, 5, 10, 30]), top_k=top_k, top_p=top_p)
    check(awkward_rows(1000), top_k=top_k, top_p=top_p, knife_edges=False)


@pytest.mark.parametrize("vocab, batch", [(1000, 1), (50_000, 8), (262_144, 1), (262_144, 8)])
@pytest.mark.parametrize("top_k, top_p", [(0, 0.9), (40, 0.99)])
def test_vocabulary_sizes(vocab, batch, top_k, top_p):
    check(normal_rows(vocab + batch, batch, vocab, [3, 0.5, 10, 1, 30, 2, 0.2, 5]), top_k=top_k, top_p=top_p)


@pytest.mark.parametrize("top_p", [0.5, 0.9, 0.99])
@pytest.mark.parametrize("candidates", [1, 4])
def test_fallback_with_tiny_candidate_sets(candidates, top_p):
    # Almost every row runs the bisection here, including those where the cutoff lies inside a tie
    # group, rows with a single finite logit, and signed zeros.
    check(normal_rows(1, 8, 1000, [0.3, 1, 2, 4, 8, 16, 0.05, 3]), top_k=0, top_p=top_p, candidates=candidates)
    check(awkward_rows(1000), top_k=0, top_p=top_p, candidates=candidates, knife_edges=False)


def test_fallback_at_full_vocabulary():
    # Flat rows at top_p = 0.99 need tens of thousands of tokens: far more than the 256 candidates.
    logits = normal_rows(2, 8, 262_144, [0.3, 1, 3, 0.3, 1, 3, 0.3, 1])
    got = check(logits, top_k=0, top_p=0.99)
    assert np.all(np.isfinite(got).sum(-1) > 10_000)
    ties = np.round(logits * 4) / 4  # ~40 distinct values: the cutoff is a tie group, no knife edges
    got = check(ties, top_k=0, top_p=0.99, knife_edges=False)
    assert np.all(np.isfinite(got).sum(-1) > 256)


def test_samples_match_the_reference():
    logits = normal_rows(3, 8, 50_000, [3, 5, 10, 2, 30, 4, 8, 1])
    draw = jax.jit(lambda x: jax.random.categorical(jax.random.key(11), x, axis=-1, shape=(4, 8)))
    for top_k, top_p in [(0, 0.9), (40, 0.99)]:
        got = restrict(logits, top_k=top_k, top_p=top_p)
        want = reference(logits, top_k=top_k, top_p=top_p)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        np.testing.assert_array_equal(np.asarray(draw(got)), np.asarray(draw(want)))


def test_leading_axes_and_identity():
    logits = normal_rows(4, 8, 1000, [0.5, 3])
    flat = restrict(logits, top_k=0, top_p=0.9)
    np.testing.assert_array_equal(np.asarray(restrict(logits.reshape(2, 4, 1000), top_k=0, top_p=0.9)),
                                  np.asarray(flat).reshape(2, 4, 1000))
    np.testing.assert_array_equal(np.asarray(restrict(logits, top_k=0, top_p=1.0)), logits)
    np.testing.assert_array_equal(np.asarray(restrict(logits, top_k=5000, top_p=1.0)), logits)


def test_bad_arguments():
    x = jnp.zeros((1, 10))
    for kw in [dict(top_k=-1, top_p=0.9), dict(top_k=0, top_p=0.0), dict(top_k=0, top_p=1.5),
               dict(top_k=0, top_p=0.9, candidates=0)]:
        with pytest.raises(ValueError, match="top_k >= 0"):
            restrict_top_k_top_p(x, **kw)
