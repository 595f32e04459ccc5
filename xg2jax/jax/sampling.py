"""constrained_sample: prefill, then a ``lax.while_loop`` decode whose grammar step is one custom call.

Loop (Gemma's sampler shape: a typed loop state, fixed buffers, the mask applied at one point):

    prefill:  logits, cache = step_fn(params, prompt, cache, positions)   # [B, P]
              mask, grammar = next_token_mask(grammar, -1)                 # first mask, no advance
    each step while some row is active and step < max_new_tokens:
              token  = sample(apply_token_bitmask(logits, mask))          # the one masking point
              mask, grammar = next_token_mask(grammar, token | -1 if done) # advance, next mask
              logits, cache = step_fn(params, token, cache, position)      # independent of the step:
                                                                           # XLA may overlap them
A constrained row finishes when its matcher accepts a stop token (the engine reports TERMINATED); an
unconstrained row when it samples one of ``stop_token_ids``; every row at ``max_new_tokens``. The
grammar step runs exactly ``1 + number of loop iterations`` times.

Tool calls (grammars with a ``TagDispatch``: structural tags, tool-calling formats). Each step's status
says whether a row is in free text or inside a tag and whether its token entered or left one
(``StepStatus.IN_TAG`` / ``TAG_ENTERED`` / ``TAG_LEFT``); the loop records it per step
(``SampleOutput.status``, ``SampleOutput.tag_spans()``). Reactions inside the loop:

    each step:  token = where(in_tag, tag_sampler(...), sampler(...))     # mode from the previous step
                mask, grammar = next_token_mask(grammar, token)
                if any row switched:  io_callback(deliver events)         # lax.cond: no switch, no call
                a row whose token ended a tag stops (stop_after_first_tag)

The callback is ordered (``io_callback(ordered=True)``): events reach ``on_tag_start`` / ``on_tag_end``
in step order, and per row in the order they happened within a token.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import threading
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback

from xg2jax.jax._nucleus import restrict_top_k_top_p
from xg2jax.jax.ops import Path, apply_token_bitmask, next_token_mask, shard_next_token_mask
from xg2jax.jax.state import GrammarState, StepStatus, take_tag_events
from xg2jax.tag_events import TagEvent, TagSpan, tag_spans

__all__ = ["Sampler", "SampleOutput", "constrained_sample", "FinishReason", "last_tag_callback_host_calls"]

# step_fn(params, tokens int32[B, T], cache, positions int32[B, T]) -> (logits float[B, T, V], cache)
StepFn = Callable[[Any, jax.Array, Any, jax.Array], tuple[jax.Array, Any]]


class FinishReason:
    """Values of ``SampleOutput.finish_reason``."""

    RUNNING = 0
    STOP = 1  #: a stop token was sampled (for constrained rows: the grammar terminated)
    LENGTH = 2  #: ``max_new_tokens`` reached first
    TAG_END = 3  #: the row's first tag ended (``stop_after_first_tag=True``)


@dataclasses.dataclass(frozen=True)
class Sampler:
    """Greedy (``temperature == 0``), or temperature sampling restricted by top-k and/or top-p.

    Static (hashable): a different sampler compiles a different loop; the same one never recompiles.
    Top-k and top-p select from the largest logits without sorting the vocabulary
    (:func:`xg2jax.jax._nucleus.restrict_top_k_top_p`: the kept set of a sort, up to float32 rounding of
    a mass that lands on ``top_p`` itself; ~0.6 ms instead of ~60 ms a row at V = 262,144 on a CPU).
    """

    temperature: float = 0.0
    top_k: int = 0  #: 0 = no top-k restriction
    top_p: float = 1.0  #: 1.0 = no nucleus restriction

    def __post_init__(self):
        if self.temperature < 0 or self.top_k < 0 or not 0 < self.top_p <= 1:
            raise ValueError(f"Sampler: need temperature >= 0, top_k >= 0, 0 < top_p <= 1; got {self}")

    def __call__(self, logits: jax.Array, key: jax.Array) -> jax.Array:
        """int32[B] tokens from float[B, V] logits (forbidden tokens are -inf)."""
        if self.temperature == 0.0:
            return jnp.argmax(logits, axis=-1).astype(jnp.int32)
        logits = logits.astype(jnp.float32) / self.temperature
        if self.top_k or self.top_p < 1.0:  # a partial selection, no sort of the vocabulary
            logits = restrict_top_k_top_p(logits, top_k=self.top_k, top_p=self.top_p)
        return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)


@dataclasses.dataclass(frozen=True)
class SampleOutput:
    """What :func:`constrained_sample` returns (arrays on the device)."""

    tokens: jax.Array  #: int32[B, max_new_tokens], ``pad_id`` after each row's end
    lengths: jax.Array  #: int32[B], generated tokens per row, the stop token included
    finish_reason: jax.Array  #: int32[B], :class:`FinishReason`
    grammar_state: GrammarState  #: the handles with the last step's status bits
    status: jax.Array  #: int32[B, max_new_tokens], :class:`StepStatus` after each step's token (0 after the end)

    def tag_spans(self) -> list[list[TagSpan]]:
        """Per row, the tags (tool calls) in its output: tag index, start and end step (host)."""
        return tag_spans(jax.device_get(self.status), jax.device_get(self.lengths))


@dataclasses.dataclass(frozen=True)
class _LoopState:
    step: jax.Array  # int32[]
    tokens: jax.Array  # int32[B, N]
    logits: jax.Array  # float[B, V], logits for the next token
    mask: jax.Array  # int32[B, W], bitmask for the next token
    grammar: GrammarState
    cache: Any
    done: jax.Array  # bool[B]
    lengths: jax.Array  # int32[B]
    finish: jax.Array  # int32[B]
    status: jax.Array  # int32[B, N], grammar status after each step's token
    key: jax.Array


jax.tree_util.register_dataclass(
    _LoopState, data_fields=[f.name for f in dataclasses.fields(_LoopState)], meta_fields=[])


class _TagCallbacks:
    """The host side of ``on_tag_start`` / ``on_tag_end``: a switch step's io_callback takes the switched rows'
    events from their matchers and calls the user's functions, in order."""

    def __init__(self, on_tag_start, on_tag_end):
        self.on_tag_start, self.on_tag_end = on_tag_start, on_tag_end
        self.host_calls = 0  # io_callback invocations (steps where some row switched)

    def deliver(self, events: list[list[TagEvent]]) -> None:
        for row_events in events:
            for e in row_events:
                fn = self.on_tag_start if e.start else self.on_tag_end
                if fn is not None:
                    fn(e)


# Live calls' callbacks by id: the jitted loop passes the id as a traced scalar, so new callbacks never recompile.
_TAG_CALLBACKS: dict[int, _TagCallbacks] = {}
_TAG_CALLBACK_IDS = itertools.count()
_TAG_CALLBACKS_LOCK = threading.Lock()


def _deliver_tag_events(call_id, handles, switched, step):
    """io_callback target: the events of the rows with a switch at this step."""
    callbacks = _TAG_CALLBACKS[int(call_id)]
    callbacks.host_calls += 1
    handles = np.where(np.asarray(switched), np.asarray(handles), -1)
    callbacks.deliver(take_tag_events([int(h) for h in handles], step=int(step)))


def _grammar_step(mesh, batch_axis, path, max_threads):
    kw = dict(strict=True, path=path, max_threads=max_threads)
    if mesh is None:
        return functools.partial(next_token_mask, **kw)
    return shard_next_token_mask(mesh, batch_axis, **kw)


@functools.partial(jax.jit, static_argnames=("step_fn", "max_new_tokens", "sampler", "stop_token_ids", "pad_id",
                                             "path", "mesh", "batch_axis", "max_threads", "tag_sampler",
                                             "stop_after_first_tag", "tag_callbacks"))
def _sample_jit(params, cache, prompt_tokens, prompt_lengths, grammar, key, callback_id=None, *, step_fn,
                max_new_tokens, sampler, stop_token_ids, pad_id, path, mesh, batch_axis, max_threads, tag_sampler=None,
                stop_after_first_tag=False, tag_callbacks=False):
    batch, prompt_len = prompt_tokens.shape
    key = jax.random.key(0) if key is None else key
    grammar_step = _grammar_step(mesh, batch_axis, path, max_threads)
    positions = jnp.broadcast_to(jnp.arange(prompt_len, dtype=jnp.int32), (batch, prompt_len))
    if hasattr(step_fn, "prefill"):  # logits after each row's last prompt token only
        last, cache = step_fn.prefill(params, prompt_tokens, cache, positions, prompt_lengths)
    else:
        logits, cache = step_fn(params, prompt_tokens, cache, positions)
        last = jnp.take_along_axis(logits, (prompt_lengths - 1)[:, None, None], axis=1)[:, 0, :]
    if grammar is None:  # unconstrained: no grammar step and no mask at all (the baseline to compare with)
        mask = jnp.zeros((batch, 0), jnp.int32)
        constrained = jnp.zeros((batch,), bool)
    else:
        mask, grammar = grammar_step(grammar, jnp.full((batch,), -1, jnp.int32))
        constrained = grammar.handles >= 0
    stops = jnp.asarray(stop_token_ids if stop_token_ids else (-2,), jnp.int32)

    def body(s: _LoopState) -> _LoopState:
        key, sub = jax.random.split(s.key)
        if s.grammar is None:
            masked = s.logits
        else:
            masked = apply_token_bitmask(s.logits, s.mask, constrained=constrained)  # the one masking point
        token = sampler(masked, sub)
        if tag_sampler is not None:  # the mode the previous step left each row in picks its sampler
            in_tag = (s.grammar.status & StepStatus.IN_TAG) != 0
            token = jnp.where(in_tag, tag_sampler(masked, sub), token)
        token = jnp.where(s.done, pad_id, token)
        tokens = s.tokens.at[:, s.step].set(token)
        lengths = s.lengths + (~s.done).astype(jnp.int32)
        if s.grammar is None:
            mask, g = s.mask, None
            terminated = jnp.zeros((batch,), bool)
            row_status = jnp.zeros((batch,), jnp.int32)
        else:
            mask, g = grammar_step(s.grammar, jnp.where(s.done, -1, token))
            terminated = (g.status & StepStatus.TERMINATED) != 0
            row_status = jnp.where(s.done, 0, g.status)
        switched = (row_status & (StepStatus.TAG_ENTERED | StepStatus.TAG_LEFT)) != 0
        if tag_callbacks:  # one host call on a step where some row switched; none otherwise
            jax.lax.cond(jnp.any(switched),
                         lambda: io_callback(_deliver_tag_events, None, callback_id, g.handles, switched, s.step,
                                             ordered=True),
                         lambda: None)
        stopped = jnp.where(constrained, terminated, jnp.isin(token, stops))
        tag_end = ((row_status & StepStatus.TAG_LEFT) != 0) if stop_after_first_tag else jnp.zeros((batch,), bool)
        at_limit = s.step + 1 >= max_new_tokens
        finish = jnp.where(s.done, s.finish,
                           jnp.where(stopped, FinishReason.STOP,
                                     jnp.where(tag_end, FinishReason.TAG_END,
                                               jnp.where(at_limit, FinishReason.LENGTH, 0))))
        done = s.done | stopped | tag_end | at_limit
        status = s.status.at[:, s.step].set(row_status)
        logits, cache = step_fn(params, token[:, None], s.cache, (prompt_lengths + s.step)[:, None])
        return _LoopState(s.step + 1, tokens, logits[:, 0, :], mask, g, cache, done, lengths, finish, status, key)

    init = _LoopState(jnp.int32(0), jnp.full((batch, max_new_tokens), pad_id, jnp.int32), last, mask, grammar, cache,
                      jnp.zeros((batch,), bool), jnp.zeros((batch,), jnp.int32), jnp.zeros((batch,), jnp.int32),
                      jnp.zeros((batch, max_new_tokens), jnp.int32), key)
    out = jax.lax.while_loop(lambda s: (s.step < max_new_tokens) & ~jnp.all(s.done), body, init)
    return SampleOutput(out.tokens, out.lengths, out.finish, out.grammar, out.status)


jax.tree_util.register_dataclass(
    SampleOutput, data_fields=["tokens", "lengths", "finish_reason", "grammar_state", "status"], meta_fields=[])


def constrained_sample(
    step_fn: StepFn,
    params: Any,
    cache: Any,
    prompt_tokens: jax.Array,
    prompt_lengths: jax.Array,
    grammar_state: GrammarState | None,
    *,
    max_new_tokens: int,
    sampler: Sampler = Sampler(),
    rng: jax.Array | None = None,
    stop_token_ids: Sequence[int] = (),
    pad_id: int = 0,
    path: Path = "auto",
    mesh: jax.sharding.Mesh | None = None,
    batch_axis: str | None = None,
    prefetch_states: int = 8,
    max_threads: int = 8,
    tag_sampler: Sampler | None = None,
    stop_after_first_tag: bool = False,
    on_tag_start: Callable[[TagEvent], None] | None = None,
    on_tag_end: Callable[[TagEvent], None] | None = None,
) -> SampleOutput:
    """Grammar-constrained generation for a batch, as one jitted program.

    Parameters
    ----------
    step_fn : callable
        ``step_fn(params, tokens int32[B, T], cache, positions int32[B, T]) -> (logits float[B, T, V], cache)``:
        a forward pass that writes the cache at ``positions`` and attends causally by position, so any
        Flax model fits. Must be hashable (a function or a frozen object): it is a static argument.
        If it has a ``prefill(params, tokens, cache, positions, lengths) -> (logits float[B, V], cache)``
        method, the prompt goes through that instead and only the logits after each row's last prompt
        token are computed (a large vocabulary's [B, P, V] prefill logits need not fit in memory).
    params, cache
        The model's parameters and its (pre-allocated, fixed-size) cache.
    prompt_tokens : int32[B, P]
        Prompts, right-padded to a fixed P (bucket P so requests do not recompile).
    prompt_lengths : int32[B]
        Real prompt lengths (>= 1).
    grammar_state : GrammarState or None
        One matcher per row (-1: unconstrained). Advanced in place on the host. ``None``: no grammar
        step and no masking at all (plain decoding, the baseline to compare constrained runs with).
    max_new_tokens : int
        Size of the output buffer; static.
    sampler : Sampler
        Greedy by default.
    stop_token_ids : sequence of int
        Stop tokens of unconstrained rows (constrained rows stop when their grammar terminates).
    path : {"auto", "ffi", "callback"}
        Grammar-step implementation (see :func:`xg2jax.jax.step_path`).
    mesh, batch_axis
        Shard the grammar step over ``batch_axis`` of ``mesh`` with ``jax.shard_map`` (inputs should be
        sharded the same way); required when the batch spans several devices.
    prefetch_states : int
        Before the prefill is dispatched, start building on host threads the masks of this many of the
        most expensive states each grammar reaches first (0: off).
    tag_sampler : Sampler, optional
        The sampler for rows inside a tag (a tool call) of a ``TagDispatch`` grammar, e.g. greedy arguments
        while ``sampler`` samples the free text. Static. Both samplers run each step.
    stop_after_first_tag : bool
        A row finishes when its first tag ends (``FinishReason.TAG_END``), e.g. to run the tool call.
    on_tag_start, on_tag_end : callable, optional
        Called on the host with a :class:`xg2jax.tag_events.TagEvent` when a row enters a tag (``text``: the
        trigger) and when it leaves one (``text``: the whole tag, exactly as generated, e.g.
        ``<tool_call>{...}</tool_call>``; :func:`xg2jax.tag_events.split_tag_text` splits it). One ordered
        ``io_callback`` per step where some row switched, under ``lax.cond``: a step without a switch makes no
        host call. An exception in a callback is raised by this call. Switches the rows' matchers made
        before this call are delivered first, with ``step = -1``. Not with ``mesh``.

    Returns
    -------
    SampleOutput
        Also ``status`` per step and ``tag_spans()``, the tags of each row's output.
    """
    if max_new_tokens < 1:
        raise ValueError(f"constrained_sample: max_new_tokens must be >= 1, got {max_new_tokens}")
    if not isinstance(prompt_tokens, jax.Array):
        prompt_tokens = jnp.asarray(prompt_tokens)
    if not isinstance(prompt_lengths, jax.Array):
        prompt_lengths = jnp.asarray(prompt_lengths)
    if prompt_tokens.dtype != jnp.int32 or prompt_tokens.ndim != 2:
        raise TypeError(f"constrained_sample: prompt_tokens must be int32[B, P], got "
                        f"{prompt_tokens.dtype}{list(prompt_tokens.shape)}")
    if prompt_lengths.dtype != jnp.int32 or prompt_lengths.shape != prompt_tokens.shape[:1]:
        raise TypeError(f"constrained_sample: prompt_lengths must be int32[{prompt_tokens.shape[0]}], got "
                        f"{prompt_lengths.dtype}{list(prompt_lengths.shape)}")
    if grammar_state is not None and grammar_state.batch_size != prompt_tokens.shape[0]:
        raise ValueError(f"constrained_sample: {grammar_state.batch_size} grammar rows for a batch of "
                         f"{prompt_tokens.shape[0]}")
    if (mesh is None) != (batch_axis is None):
        raise ValueError("constrained_sample: give both mesh and batch_axis, or neither")
    if sampler.temperature > 0 and rng is None:
        raise ValueError("constrained_sample: a sampling temperature > 0 needs rng")
    if tag_sampler is not None and not isinstance(tag_sampler, Sampler):
        raise TypeError(f"constrained_sample: tag_sampler must be a Sampler, got {type(tag_sampler).__name__}")
    if tag_sampler is not None and tag_sampler.temperature > 0 and rng is None:
        raise ValueError("constrained_sample: a tag_sampler temperature > 0 needs rng")
    for name, fn in (("on_tag_start", on_tag_start), ("on_tag_end", on_tag_end)):
        if fn is not None and not callable(fn):
            raise TypeError(f"constrained_sample: {name} must be callable, got {type(fn).__name__}")
    with_callbacks = on_tag_start is not None or on_tag_end is not None
    if with_callbacks and grammar_state is None:
        raise ValueError("constrained_sample: on_tag_start / on_tag_end need a grammar_state")
    if with_callbacks and mesh is not None:
        raise NotImplementedError("constrained_sample: on_tag_start / on_tag_end with mesh= (a sharded loop): read "
                                  "SampleOutput.tag_spans() and GrammarState.take_tag_events() after the call")
    if grammar_state is not None and prefetch_states > 0 and jax.process_count() == 1:
        grammar_state.prefetch_masks(prefetch_states, max_threads=max(1, max_threads // 2))
    callbacks = _TagCallbacks(on_tag_start, on_tag_end) if with_callbacks else None
    with _TAG_CALLBACKS_LOCK:
        call_id = next(_TAG_CALLBACK_IDS) % (1 << 31)
        if callbacks is not None:
            _TAG_CALLBACKS[call_id] = callbacks
    try:
        if callbacks is not None:  # switches made before this call (e.g. a matcher given mid-output)
            jax.effects_barrier()
            callbacks.deliver(take_tag_events(grammar_state.host_handles()))
        out = _sample_jit(params, cache, prompt_tokens, prompt_lengths, grammar_state, rng, jnp.int32(call_id),
                          step_fn=step_fn, max_new_tokens=int(max_new_tokens), sampler=sampler,
                          stop_token_ids=tuple(int(t) for t in stop_token_ids), pad_id=int(pad_id), path=path,
                          mesh=mesh, batch_axis=batch_axis, max_threads=int(max_threads), tag_sampler=tag_sampler,
                          stop_after_first_tag=bool(stop_after_first_tag), tag_callbacks=with_callbacks)
        if callbacks is not None:
            jax.block_until_ready(out)  # every callback has run (and raised here if one failed)
            jax.effects_barrier()
            _LAST_HOST_CALLS[0] = callbacks.host_calls
        return out
    finally:
        with _TAG_CALLBACKS_LOCK:
            _TAG_CALLBACKS.pop(call_id, None)


# Host calls the last constrained_sample with callbacks made (tests and benchmarks count them).
_LAST_HOST_CALLS = [0]


def last_tag_callback_host_calls() -> int:
    """How many host calls (``io_callback`` runs) the last :func:`constrained_sample` with tag callbacks made:
    one per step where some row entered or left a tag."""
    return _LAST_HOST_CALLS[0]
