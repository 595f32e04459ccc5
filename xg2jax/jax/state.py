"""GrammarState: the grammar side of a batched decode loop, as a pytree of matcher handles.

The matchers themselves live in the C++ engine's handle registry (``xla_ffi/handle_registry.h``); the
pytree carries only their int32 handles (-1 for a row without a grammar) and the status bits of the
last step, so it can flow through ``jax.jit``, ``lax.while_loop`` and ``jax.shard_map``. Handles are
created on the host with :meth:`GrammarState.create` and must be freed with :meth:`GrammarState.release`
(or by using the state as a context manager); a freed handle is an error in any later step, never
another row's matcher.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from xg2jax import _core
from xg2jax.compiler import CompiledGrammar
from xg2jax.matcher import GrammarMatcher
from xg2jax.tag_events import TagEvent, events_from_engine

__all__ = ["GrammarState", "StepStatus"]


class StepStatus:
    """Bits of ``GrammarState.status`` (one int32 per row), as written by each step."""

    ADVANCED = 1  #: the row's last token was accepted this step
    REJECTED = 2  #: the row's last token was rejected (``strict=False`` only); the matcher is unchanged
    TERMINATED = 4  #: the matcher accepted a stop token
    COMPLETED = 8  #: the output so far is a complete sentence (a stop token is allowed now)
    UNCONSTRAINED = 16  #: the row has no grammar
    # TagDispatch mode (tool-calling grammars, structural tags): see docs/tool_calling.md.
    IN_TAG = 1 << 8  #: after this step the row is inside a tag (e.g. a tool call), not in free text
    TAG_ENTERED = 1 << 9  #: the row's token began a tag (its trigger completed)
    TAG_LEFT = 1 << 10  #: the row's token ended a tag (both bits: it closed one and opened the next)
    TAG_INDEX_SHIFT = 16  #: bits 16..30: the current tag's index + 1 (the tag just left if none is open)

    @staticmethod
    def tag_index(status):
        """The tag index in ``status`` (int or array): an index into ``CompiledGrammar.dispatch_tags``,
        -1 in free text. Saturates at 32766 (the events name every tag exactly)."""
        return ((status >> StepStatus.TAG_INDEX_SHIFT) & 0x7FFF) - 1


# Host-side bookkeeping: handle -> the CompiledGrammar wrapper (for snapshots as GrammarMatcher).
_GRAMMAR_OF_HANDLE: dict[int, CompiledGrammar] = {}


@dataclasses.dataclass(frozen=True)
class GrammarState:
    """Matcher handles and per-row status of a batch (a pytree).

    Attributes
    ----------
    handles : int32[B]
        Engine handles, -1 for rows without a grammar.
    status : int32[B]
        :class:`StepStatus` bits from the last step (0 before the first).
    mask_words : int
        Static: int32 words per bitmask row, ``ceil(vocab_size / 32)``.
    """

    handles: jax.Array
    status: jax.Array
    mask_words: int

    @staticmethod
    def create(
        grammars: Sequence[CompiledGrammar | GrammarMatcher | None],
        *,
        vocab_size: int | None = None,
        override_stop_tokens: Sequence[int] | None = None,
        max_rollback_tokens: int = -1,
        sharding: jax.sharding.Sharding | None = None,
    ) -> "GrammarState":
        """One matcher per row, created on the host.

        Parameters
        ----------
        grammars : sequence of CompiledGrammar, GrammarMatcher or None
            Per row: a compiled grammar (a fresh matcher), a matcher (its current state is copied),
            or None (the row is unconstrained: its mask allows every token).
        vocab_size : int, optional
            Width of the masks in tokens (the model's logits width is a good choice). Defaults to the
            largest vocabulary among the grammars; required when every row is None.
        override_stop_tokens, max_rollback_tokens
            As for :class:`xg2jax.GrammarMatcher`, for rows given as a CompiledGrammar.
        sharding : jax.sharding.Sharding, optional
            Lay the batch out with this sharding (e.g. ``NamedSharding(mesh, P("batch"))``). Under
            ``jax.distributed`` each process passes only the grammars of its own rows: the matchers
            live in that process, and the global arrays are assembled with
            ``jax.make_array_from_process_local_data``.
        """
        for g in grammars:
            if g is not None and not isinstance(g, (CompiledGrammar, GrammarMatcher)):
                raise TypeError(f"GrammarState.create: expected CompiledGrammar, GrammarMatcher or None, "
                                f"got {type(g).__name__}")
        sizes = [g.tokenizer_info.vocab_size if isinstance(g, CompiledGrammar) else g.vocab_size
                 for g in grammars if g is not None]
        if vocab_size is None:
            if not sizes:
                raise ValueError("GrammarState.create: vocab_size is required when no row has a grammar")
            vocab_size = max(sizes)
        if sizes and vocab_size < max(sizes):
            raise ValueError(f"GrammarState.create: vocab_size {vocab_size} is smaller than a grammar's "
                             f"vocabulary ({max(sizes)})")
        stops = None if override_stop_tokens is None else [int(t) for t in override_stop_tokens]
        handles = []
        owner = _core.handle_new_owner()  # a step refuses to mix these handles with another state's
        try:
            for g in grammars:
                if g is None:
                    handles.append(-1)
                    continue
                if isinstance(g, CompiledGrammar):
                    h = _core.handle_add(g._handle, stops, int(max_rollback_tokens), owner)
                    _GRAMMAR_OF_HANDLE[h] = g
                else:
                    h = _core.handle_add_matcher(g._handle, owner)
                    _GRAMMAR_OF_HANDLE[h] = g.compiled_grammar
                handles.append(h)
        except BaseException:
            _free([h for h in handles if h >= 0])
            raise
        local = np.array(handles, np.int32)
        words = (int(vocab_size) + 31) // 32
        if sharding is None:
            return GrammarState(jnp.asarray(local), jnp.zeros(local.shape, jnp.int32), words)
        make = jax.make_array_from_process_local_data
        return GrammarState(make(sharding, local), make(sharding, np.zeros_like(local)), words)

    @property
    def batch_size(self) -> int:
        return int(self.handles.shape[0])

    def host_handles(self) -> list[int]:
        """This process's handles as Python ints (all of them on one host; under ``jax.distributed``
        the rows whose matchers this process owns, in shard order)."""
        if self.handles.is_fully_addressable:
            return [int(h) for h in np.asarray(jax.device_get(self.handles)).reshape(-1)]
        seen, out = set(), []
        for shard in sorted(self.handles.addressable_shards, key=lambda s: s.index[0].start or 0):
            key = tuple((sl.start, sl.stop) for sl in shard.index)
            if key in seen:  # replicated copies of the same rows
                continue
            seen.add(key)
            out.extend(int(h) for h in np.asarray(shard.data).reshape(-1))
        return out

    def matcher(self, row: int) -> GrammarMatcher | None:
        """A host copy of row ``row``'s matcher (None for an unconstrained row), taken after every
        dispatched computation with side effects has finished (``jax.effects_barrier``)."""
        jax.effects_barrier()
        h = self.host_handles()[row]
        if h < 0:
            return None
        if h not in _GRAMMAR_OF_HANDLE:
            raise ValueError(f"GrammarState.matcher: grammar handle {h} (row {row}) is unknown or already freed")
        return GrammarMatcher._wrap(_GRAMMAR_OF_HANDLE[h], _core.handle_snapshot(h))

    def take_tag_events(self) -> list[list["TagEvent"]]:
        """Per row, the switches between free text and tags its matcher made since the last take (oldest
        first; an unconstrained row has none), after every dispatched computation with side effects has
        finished. See :class:`xg2jax.jax.TagEvent`."""
        jax.effects_barrier()
        return take_tag_events(self.host_handles())

    def prefetch_masks(self, num_states: int = 8, *, max_threads: int = 2) -> "MaskPrefetch":
        """Start building, on host threads, the masks of the ``num_states`` most expensive states each
        grammar will reach first (cost estimated by the engine). Returns at once; a later step waits
        only for the entries it needs."""
        job, states, costs = _core.prefetch_masks(self.host_handles(), int(num_states), int(max_threads))
        return MaskPrefetch(job, states, costs)

    def release(self) -> None:
        """Free the matchers (host). First waits for every dispatched computation with side effects
        (``jax.effects_barrier``: JAX dispatches asynchronously, so a decode loop may still be using
        them). Any step dispatched later with these handles raises."""
        jax.effects_barrier()
        _free([h for h in self.host_handles() if h >= 0])

    def __enter__(self) -> "GrammarState":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


@dataclasses.dataclass(frozen=True)
class MaskPrefetch:
    """A running mask prefetch (see :meth:`GrammarState.prefetch_masks`)."""

    _job: object
    states: list[int]  #: the states being built, most expensive first
    costs: list[int]  #: their estimated cost, in vocabulary tokens walked

    def wait(self, timeout_s: float = 60.0) -> bool:
        """Wait up to ``timeout_s`` seconds; True when every entry is built (re-raises a build error)."""
        return bool(self._job.wait(float(timeout_s)))


def take_tag_events(handles: Sequence[int], *, step: int = -1) -> list[list[TagEvent]]:
    """Per handle (-1: none), the tag events its matcher made since the last take, as :class:`TagEvent`
    with ``row`` = the position in ``handles`` and the given ``step``."""
    raw = _core.handle_take_tag_events([int(h) for h in handles])
    out = []
    for row, (h, events) in enumerate(zip(handles, raw)):
        if not events:
            out.append([])
            continue
        grammar = _GRAMMAR_OF_HANDLE.get(int(h))
        triggers = [t.trigger for t in grammar.dispatch_tags] if grammar is not None else []
        out.append(events_from_engine(events, triggers, row=row, step=step))
    return out


def _free(handles: list[int]) -> None:
    for h in handles:
        _GRAMMAR_OF_HANDLE.pop(h, None)
        _core.handle_free(h)


jax.tree_util.register_dataclass(GrammarState, data_fields=["handles", "status"], meta_fields=["mask_words"])
