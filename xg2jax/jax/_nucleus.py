"""Top-k / top-p (nucleus) restriction of logits without sorting the vocabulary.

The textbook nucleus filter sorts the whole row, takes a cumulative sum of the sorted softmax and cuts
where it reaches ``top_p``. On CPU that sort dominates a decode step at modern vocabulary sizes
(262,144 entries: ~50 ms per row on two cores). :func:`restrict_top_k_top_p` gives the same kept set
from a partial selection and linear passes over the row, and sorts nothing.

What has to be computed is one number per row, the *cutoff*: the smallest logit ``c`` present in the
row whose exclusive mass ``mass(logits > c)`` is still below ``top_p``. Every token with a logit
``>= c`` is kept, so ties at the cutoff are kept together, exactly as the sort-based filter does.

Fast path. ``lax.top_k`` yields the ``m`` largest logits in descending order (``m = top_k``, or
``candidates`` without top-k): the first ``m`` entries of the sorted row. Their probabilities use the
softmax normaliser of the *whole* row (a linear-time sum over the vocabulary), and the prefix sums over
them are the sorted filter's first ``m`` prefix sums, since later entries never enter a prefix. Hence
if the nucleus closes inside the candidates (the last candidate is not kept), the cutoff found among
them is the cutoff of the full row. With top-k on, no fallback is needed either way: if all ``k``
candidates are kept the cutoff is the k-th value, and every token outside the candidates is a tie of
that value (kept by ``>= cutoff`` anyway) or masked.

Fallback. Without top-k, a flat distribution can need more than ``candidates`` tokens to reach
``top_p``. Then (under ``lax.cond``, so only when some row of the batch needs it) the cutoff is found
by bisection on the float32 bit pattern: finite floats map to unsigned 32-bit keys in the same order,
``mass(logits > t)`` is non-increasing in ``t``, and the smallest key whose exclusive mass is below
``top_p`` is exactly the cutoff (the mass only changes at values that occur in the row, so the first
key where the test passes is such a value). The search starts between the last candidate and a lower
bound from the mass argument (the cutoff's probability exceeds ``(1 - top_p) / V``), and takes at most
32 masked sums over the row -- about 22 when both ends have the same sign -- in place of the sort.

Exactness. Both paths decide with the same quantities as the sort-based filter: probabilities
``exp(x - max) / sum`` and the test ``mass before the token < top_p``. The only difference is the
order in which float32 sums are accumulated (the normaliser; the masses in the fallback), so a token
is decided differently only when its exclusive mass is within float32 rounding of ``top_p`` -- a knife
edge that the sort-based filter, too, decides by rounding. Masked (``-inf``) tokens have probability 0
and are never revived; a row that is all ``-inf`` stays all ``-inf``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

__all__ = ["restrict_top_k_top_p"]

# uint32 constants: Python ints above 2**31 would not convert to JAX's weak int32.
_SIGN = np.uint32(0x80000000)
_MAGNITUDE = np.uint32(0x7FFFFFFF)
_KEY_NEG_INF = np.uint32(0x007FFFFF)  # _ordered_key(-inf): the smallest key of a non-NaN float


def _ordered_key(x: jax.Array) -> jax.Array:
    """uint32 keys in the order of the float32 values (non-negatives above negatives)."""
    bits = lax.bitcast_convert_type(x, jnp.uint32)
    return jnp.where(bits >= _SIGN, ~bits, bits | _SIGN)


def _from_ordered_key(key: jax.Array) -> jax.Array:
    bits = jnp.where(key >= _SIGN, key & _MAGNITUDE, ~key)
    return lax.bitcast_convert_type(bits, jnp.float32)


def _bisect_cutoff(x: jax.Array, probs: jax.Array, lower: jax.Array, upper: jax.Array, top_p: float) -> jax.Array:
    """Smallest value ``c`` in ``(lower, upper]`` (per row) with ``sum(probs[x > c]) < top_p``, else ``upper``.

    Invariant: the answer's key lies in ``(lo, hi]``. ``hi`` starts at ``upper`` (a candidate the fast
    path already keeps), ``lo`` at ``lower`` (or just below -inf), which is never evaluated: ``mid > lo``.
    """
    hi = _ordered_key(upper)
    lo = jnp.where(lower < upper, _ordered_key(lower), _KEY_NEG_INF - np.uint32(1))

    def body(state):
        lo, hi = state
        mid = lo + (hi - lo) // 2
        t = _from_ordered_key(mid)
        passes = jnp.sum(jnp.where(x > t, probs, 0.0), axis=-1, keepdims=True) < top_p
        return jnp.where(passes, lo, mid), jnp.where(passes, mid, hi)

    # At most 32 halvings (fewer when lower and upper share a sign and so are fewer keys apart); the
    # loop stops as soon as every row has converged.
    _, hi = lax.while_loop(lambda s: jnp.any(s[1] - s[0] > 1), body, (lo, hi))
    return _from_ordered_key(hi)


def restrict_top_k_top_p(logits: jax.Array, *, top_k: int, top_p: float, candidates: int = 256) -> jax.Array:
    """Set the logits outside the top-k and outside the top-p nucleus to ``-inf``.

    Same kept set as sorting each row: top-k keeps every logit ``>=`` the k-th largest (ties at the
    k-th value included); top-p then takes the softmax of what is left, keeps the shortest
    descending prefix whose mass reaches ``top_p`` (always at least the best token) and widens it to
    every token whose logit equals the smallest kept one.

    Parameters
    ----------
    logits : jax.Array
        float ``[..., V]``, already divided by the temperature; forbidden tokens are ``-inf``. Other
        float dtypes are cast to float32, as :class:`~xg2jax.jax.sampling.Sampler` does.
    top_k : int
        Static. ``0`` disables top-k; values above ``V`` keep the whole row.
    top_p : float
        Static, in ``(0, 1]``. ``1.0`` disables the nucleus.
    candidates : int
        Static. Without top-k, how many leading logits the fast path examines; rows whose nucleus
        needs this many tokens or more (very flat distributions) take the exact bisection fallback.
        With top-k the candidates are the top-k logits and no fallback exists.

    Returns
    -------
    jax.Array
        float32, the shape of ``logits``: each entry either unchanged or ``-inf``.

    Notes
    -----
    Jit-able with the static arguments above, for any batch shape, on every backend (no host
    callbacks). The fallback sits under ``lax.cond`` on "any row needs it"; under ``jax.vmap`` the
    cond becomes a select and the fallback runs on every call, so batch along the leading axes
    instead of vmapping.
    """
    if top_k < 0 or not 0.0 < top_p <= 1.0 or candidates < 1:
        raise ValueError(f"need top_k >= 0, 0 < top_p <= 1, candidates >= 1; got {top_k=}, {top_p=}, {candidates=}")
    x = jnp.asarray(logits).astype(jnp.float32)
    vocab = x.shape[-1]
    top_k = min(top_k, vocab)
    if top_k == 0 and top_p == 1.0:
        return x
    neg_inf = jnp.float32(-jnp.inf)
    m = top_k if top_k else min(candidates, vocab)
    # Descending. The barrier is needed for speed on CPU: XLA there turns TopK into a sort plus a
    # leading slice and re-forms TopK only if that slice is the sort's sole user; the slices taken
    # below would otherwise merge into it, leaving the full-row sort this function exists to avoid.
    values = lax.optimization_barrier(lax.top_k(x, m)[0])
    if top_k:
        x = jnp.where(x < values[..., -1:], neg_inf, x)
    if top_p == 1.0:
        return x

    # The sorted filter's probabilities: exp(v - max) / sum over the (top-k restricted) row. The
    # normaliser must cover the whole row, not just the candidates, or the masses would be inflated.
    row_max = values[..., :1]
    total = jnp.sum(jnp.exp(x - row_max), axis=-1, keepdims=True)
    probs = jnp.exp(values - row_max) / total
    # Same test, same prefix sums as the sorted filter over its first m positions.
    keep = jnp.cumsum(probs, axis=-1) - probs < top_p
    cutoff = jnp.min(jnp.where(keep, values, jnp.inf), axis=-1, keepdims=True)

    if not top_k and m < vocab:
        # The nucleus may extend past the candidates only if the last one is kept; a -inf last
        # candidate means nothing beyond it is finite, so the cutoff cannot matter there.
        last = values[..., -1:]
        open_rows = keep[..., -1:] & (last > neg_inf)

        def fallback(cutoff):
            full_probs = jnp.exp(x - row_max) / total
            # The tokens at or below the cutoff, at most V of them, carry more than 1 - top_p, so the
            # cutoff's probability exceeds (1 - top_p) / V: a lower bound on its logit. The margin
            # covers the rounding of this float32 arithmetic many times over.
            lower = row_max + jnp.log(total) + float(np.log1p(-top_p) - np.log(vocab))
            lower = lower - 1e-3 * (1.0 + jnp.abs(lower))
            exact = _bisect_cutoff(x, full_probs, lower, last, top_p)
            return jnp.where(open_rows, jnp.minimum(exact, cutoff), cutoff)

        cutoff = lax.cond(jnp.any(open_rows), fallback, lambda c: c, cutoff)

    return jnp.where(x < cutoff, neg_inf, x)
