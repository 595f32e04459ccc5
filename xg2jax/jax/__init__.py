"""xg2jax.jax: grammar-constrained decoding inside ``jax.jit``.

Map of the key pieces, in the order a user meets them:

- :class:`GrammarState` (``StepStatus``): one matcher per batch row, as a pytree of int32 engine
  handles (-1 = unconstrained row). Created on the host from compiled grammars; ``release()`` frees.
- :func:`next_token_mask`: the fused grammar step (advance by the last token, write the next packed
  bitmask) as one XLA custom call with ``has_side_effect=True``; on TPU an ``io_callback`` into the
  same C++ step (:func:`step_path` chooses by backend).
- :func:`apply_token_bitmask`: device-side masking of logits (forbidden -> -inf).
- :func:`constrained_sample` (``Sampler``, ``SampleOutput``, ``FinishReason``): prefill plus a
  ``lax.while_loop`` decode for any ``step_fn(params, tokens, cache, positions)`` model.
- Tool calls: each step's status says whether a row is in free text or inside a tag (``StepStatus``);
  ``constrained_sample`` records it (``SampleOutput.tag_spans()``), calls ``on_tag_start`` / ``on_tag_end``
  on the host at a switch, and can sample tags differently or stop after the first
  (:mod:`xg2jax.tag_events`).
- :func:`shard_next_token_mask`: the step under ``jax.shard_map`` for batches over many devices and
  hosts (plain jit over sharded inputs raises instead of advancing matchers twice).
- :mod:`xg2jax.jax.flax_adapter`: drop the mask into a Gemma-style sampler.

Importing this module registers the FFI targets (``registrations()``) once.
"""

from xg2jax.jax._registration import REGISTERED_PLATFORMS, registrations
from xg2jax.jax.ops import apply_token_bitmask, next_token_mask, shard_next_token_mask, step_path
from xg2jax.jax.sampling import FinishReason, SampleOutput, Sampler, constrained_sample, last_tag_callback_host_calls
from xg2jax.jax.state import GrammarState, MaskPrefetch, StepStatus

__all__ = [
    "GrammarState",
    "StepStatus",
    "MaskPrefetch",
    "next_token_mask",
    "shard_next_token_mask",
    "apply_token_bitmask",
    "step_path",
    "constrained_sample",
    "Sampler",
    "SampleOutput",
    "FinishReason",
    "last_tag_callback_host_calls",
    "registrations",
    "REGISTERED_PLATFORMS",
]
