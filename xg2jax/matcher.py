"""GrammarMatcher and token bitmasks, with xgrammar's names, semantics and layout.

A bitmask row is packed int32: token ``t`` is bit ``t % 32`` of word ``t // 32`` (LSB first),
1 = allowed. ``allocate_token_bitmask(batch, vocab_size)`` makes one; any CPU array that speaks
DLPack (numpy, torch, ...) with dtype int32 works too.
"""

from __future__ import annotations

import math
import os
import sys
import time
from typing import Sequence

import numpy as np

from xg2jax import _core
from xg2jax.compiler import CompiledGrammar, InputError

__all__ = [
    "GrammarMatcher",
    "allocate_token_bitmask",
    "get_bitmask_shape",
    "apply_token_bitmask_inplace",
    "batch_fill_next_token_bitmask",
    "BatchGrammarMatcher",
    "bitmask_dtype",
    "reset_token_bitmask",
]


def get_bitmask_shape(batch_size: int, vocab_size: int) -> tuple[int, int]:
    """Shape of a packed bitmask: ``(batch_size, ceil(vocab_size / 32))``."""
    return (int(batch_size), (int(vocab_size) + 31) // 32)


#: The dtype of a packed bitmask (numpy's; xgrammar's is torch.int32, the same layout).
bitmask_dtype = np.int32


def allocate_token_bitmask(batch_size: int, vocab_size: int) -> np.ndarray:
    """A packed int32 bitmask with every token allowed (all bits 1)."""
    return np.full(get_bitmask_shape(batch_size, vocab_size), -1, dtype=np.int32)


def reset_token_bitmask(bitmask) -> None:
    """Allow every token again (all bits 1), in place: a numpy array, a torch tensor or a DLPack CPU array."""
    if type(bitmask).__module__.split(".")[0] == "torch":
        bitmask.fill_(-1)
        return
    _as_numpy(bitmask, "reset_token_bitmask")[...] = -1


def _as_numpy(bitmask, what: str) -> np.ndarray:
    if isinstance(bitmask, np.ndarray):
        return bitmask
    if hasattr(bitmask, "__dlpack__"):
        try:
            return np.from_dlpack(bitmask)
        except (RuntimeError, BufferError, TypeError) as e:
            raise InputError(f"{what}: the bitmask must be a CPU array (DLPack export failed: {e})") from e
    raise TypeError(f"{what}: expected a numpy array or a DLPack CPU array, got {type(bitmask).__name__}")


def _to_numpy_readonly(a) -> np.ndarray:
    """An index array as numpy: numpy as it is, a torch tensor through CPU, anything else through DLPack or
    np.asarray."""
    if isinstance(a, np.ndarray):
        return a
    if type(a).__module__.split(".")[0] == "torch":
        return a.detach().cpu().numpy()
    if hasattr(a, "__dlpack__"):
        try:
            return np.from_dlpack(a)
        except (RuntimeError, BufferError, TypeError):
            pass
    return np.asarray(a)


def _check_words(num_words: int, vocab_size: int, what: str) -> None:
    need = (vocab_size + 31) // 32
    if num_words < need:
        raise InputError(f"{what}: the bitmask row has {num_words} int32 words, but vocab_size {vocab_size} needs {need}")


def _checked_temperature(value) -> float | None:
    """A temperature as float32 (xgrammar stores them so), or None; raises unless finite and non-negative."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"GrammarMatcher: default_temperature must be a number, got {type(value).__name__}")
    if not (math.isfinite(float(value)) and float(value) >= 0):
        raise InputError(f"GrammarMatcher: default_temperature must be a finite non-negative number, got {value}")
    return float(np.float32(value))


class GrammarMatcher:
    """Matches one generation against a compiled grammar, token by token.

    Parameters
    ----------
    compiled_grammar : CompiledGrammar
        The grammar (shared read-only; any number of matchers may use it).
    override_stop_tokens : int or sequence of int, optional
        Replaces the tokenizer's stop tokens.
    terminate_without_stop_token : bool, optional
        End without a stop token (xgrammar's option): stop tokens are never allowed or accepted, and
        :meth:`is_terminated` is true whenever the output so far is a complete sentence (the same as
        :meth:`is_completed`; the grammar may still continue).
    max_rollback_tokens : int, optional
        How many of the last accepted tokens :meth:`rollback` may undo (as in xgrammar, tokens rolled back
        count against it until new ones are accepted); -1 (default) for unlimited. A bound also
        bounds memory: the parse state older than the rollback window is compacted to what the rest of
        the generation can still read (open brackets, strings, rules), so a long generation holds memory
        in proportion to its nesting rather than its length. With -1 every token boundary is kept.
    default_temperature : float, optional
        The sampling temperature :attr:`temperature` reports (xgrammar's option; stored as float32). Finite and
        non-negative. Default None: no temperature.

    Notes
    -----
    A rejected token leaves the matcher unchanged. Stop tokens are accepted exactly when the output
    so far is a complete sentence and terminate the matcher; a terminated matcher rejects every
    token and its mask allows only the stop tokens. Not thread-safe; use one matcher per thread.
    """

    def __init__(
        self,
        compiled_grammar: CompiledGrammar,
        *,
        override_stop_tokens: int | Sequence[int] | None = None,
        terminate_without_stop_token: bool = False,
        max_rollback_tokens: int = -1,
        default_temperature: float | None = None,
    ) -> None:
        if not isinstance(compiled_grammar, CompiledGrammar):
            raise TypeError(f"GrammarMatcher: expected a CompiledGrammar, got {type(compiled_grammar).__name__}")
        if isinstance(override_stop_tokens, int):
            override_stop_tokens = [override_stop_tokens]
        stops = None if override_stop_tokens is None else [int(t) for t in override_stop_tokens]
        if terminate_without_stop_token:
            stops = []  # no token ends the output: completion does
        self._compiled = compiled_grammar
        self._terminate_without_stop_token = bool(terminate_without_stop_token)
        self._default_temperature = _checked_temperature(default_temperature)
        self._warned_temperatures = False
        self._handle = _core.GrammarMatcher(compiled_grammar._handle, stops, int(max_rollback_tokens))

    @classmethod
    def _wrap(cls, compiled: CompiledGrammar, handle) -> "GrammarMatcher":
        m = cls.__new__(cls)
        m._compiled = compiled
        m._handle = handle
        m._terminate_without_stop_token = False
        m._default_temperature = None
        m._warned_temperatures = False
        return m

    @property
    def temperature(self) -> float | None:
        """The sampling temperature for the next token (xgrammar's per-rule temperatures).

        Each way the next token can be read (a parse path) takes the temperature of the innermost rule around it with
        a ``temperature`` attribute (EBNF ``name[temperature=T] ::= ...``, Lark ``name[temperature=T]: ...``), or
        ``default_temperature`` if it is in none. The result is the largest of the paths' temperatures; None when no
        path has one and there is no default. Paths that name different rule temperatures (an ambiguous prefix)
        print a warning to stderr, once per matcher, as xgrammar does.
        """
        t_max, t_min, untempered = self._handle.next_token_temperatures()
        default = self._default_temperature
        if t_max is None:
            return default
        if t_min != t_max and not self._warned_temperatures:
            self._warned_temperatures = True
            sys.stderr.write(f"xg2jax: Multiple active grammar paths specify different temperatures ({t_min:g} to "
                             f"{t_max:g}); using the largest\n")
        return max(t_max, default) if untempered and default is not None else t_max

    @property
    def compiled_grammar(self) -> CompiledGrammar:
        return self._compiled

    @property
    def vocab_size(self) -> int:
        return self._compiled.tokenizer_info.vocab_size

    @property
    def stop_token_ids(self) -> list[int]:
        return list(self._handle.stop_token_ids)

    @property
    def max_rollback_tokens(self) -> int:
        return self._handle.max_rollback_tokens

    def memory_size_bytes(self) -> int:
        """Bytes this matcher holds for its parse and rollback history (the compiled grammar, shared by
        all its matchers, is :meth:`CompiledGrammar.memory_size_bytes`)."""
        return self._handle.memory_size_bytes()

    def accept_token(self, token_id: int) -> bool:
        """Advance by one token. Returns False (state unchanged) if the grammar forbids it.

        Raises
        ------
        ValueError
            If ``token_id`` is outside ``[0, vocab_size)``.
        """
        if isinstance(token_id, (bool, np.bool_)) or not isinstance(token_id, (int, np.integer)):
            raise TypeError(f"accept_token: token_id must be an int, got {type(token_id).__name__}")
        token_id = int(token_id)
        if not 0 <= token_id < self.vocab_size:
            raise InputError(f"GrammarMatcher.accept_token: token id {token_id} is out of range [0, {self.vocab_size})")
        return self._handle.accept_token(token_id)

    def accept_string(self, input_str: str | bytes) -> bool:
        """Advance by a string (counts as one step for :meth:`rollback`). False = unchanged."""
        data = input_str.encode("utf-8") if isinstance(input_str, str) else bytes(input_str)
        return self._handle.accept_string(data)

    def fill_next_token_bitmask(self, bitmask, index: int = 0) -> None:
        """Write the allowed-token mask into row ``index`` of ``bitmask`` (packed int32).

        Raises
        ------
        ValueError
            On a wrong dtype, shape, index, a row too short for the vocabulary, or a non-CPU array.
        InputError
            (a ``ValueError`` and a ``RuntimeError``) when the matcher has terminated: it accepts no token, so
            there is no next-token mask (as in xgrammar). :func:`batch_fill_next_token_bitmask` and the jitted
            step instead give a terminated row its stop tokens, so a finished sequence in a batch pads with them.
        """
        if self._handle.is_terminated():
            raise InputError("fill_next_token_bitmask: the matcher has terminated (it accepted a stop token, or "
                             "terminate_without_stop_token ended it) and accepts no further token; rollback or "
                             "reset it first")
        if type(bitmask) is not np.ndarray:
            bitmask = _as_numpy(bitmask, "fill_next_token_bitmask")
        self._handle.fill(bitmask, index)  # validates dtype, shape, index, length (ValueError)

    def find_jump_forward_string(self) -> str:
        """The longest string every valid continuation starts with ('' if none), cut at 64 KiB: a forced string
        can be as long as a grammar's counts allow (``"ab"{1000000}``), so accept what it returns and ask again."""
        return self._handle.find_jump_forward_bytes().decode("utf-8")

    def rollback(self, num_tokens: int = 1) -> None:
        """Undo the last ``num_tokens`` accepted tokens (stop tokens included)."""
        self._handle.rollback(int(num_tokens))

    def reset(self) -> None:
        """Back to the start of the grammar."""
        self._handle.reset()

    def fork(self) -> "GrammarMatcher":
        """An independent copy of this matcher's state."""
        forked = GrammarMatcher._wrap(self._compiled, self._handle.fork())
        forked._terminate_without_stop_token = self._terminate_without_stop_token
        forked._default_temperature = self._default_temperature
        forked._warned_temperatures = self._warned_temperatures
        return forked

    def traverse_draft_tree(self, retrieve_next_token, retrieve_next_sibling, draft_tokens, token_bitmask,
                            time_threshold: float = -1.0, temperatures=None) -> bool:
        """Fill one mask per node of a speculative-decoding draft tree (EAGLE / sglang layout).

        Node 0 is the current position: its row is this matcher's mask. Every other node holds a draft token
        after its parent's: where the grammar accepts that token (and does not terminate on it), the node's row
        is the mask after it, and its children are visited; otherwise the node's row and its subtree's rows are
        all zeros. This matcher is left unchanged (the walk runs on forks).

        Parameters
        ----------
        retrieve_next_token, retrieve_next_sibling : int64[N] arrays (numpy, torch or DLPack)
            First child and next sibling of each node, -1 for none; node 0 has no sibling.
        draft_tokens : int64[N] array
            The token of each node (node 0's is not read). Ids outside the vocabulary are rejected tokens.
        token_bitmask : int32[N, words] array
            Filled in place, one row per node.
        time_threshold : float
            Seconds; past it the walk stops and returns False (rows not reached stay zero). <= 0: no limit.
        temperatures : float32[N] array, optional
            Filled with each visited node's effective temperature (:attr:`temperature`), -1 where there is none
            or the node is not reached.

        Returns
        -------
        bool
            True when every node was visited, False on a timeout.

        Raises
        ------
        InputError
            Arrays of the wrong rank, dtype or length, or a root with a sibling.
        """
        from xg2jax.compiler import InputError

        def tree_array(a, what):
            arr = _to_numpy_readonly(a)
            if arr.ndim != 1 or arr.dtype != np.int64:
                raise InputError(f"traverse_draft_tree: {what} must be a 1-D int64 array, got shape {arr.shape} and "
                                 f"dtype {arr.dtype}")
            return arr

        child = tree_array(retrieve_next_token, "retrieve_next_token")
        sibling = tree_array(retrieve_next_sibling, "retrieve_next_sibling")
        tokens = tree_array(draft_tokens, "draft_tokens")
        n = child.shape[0]
        if sibling.shape[0] != n or tokens.shape[0] != n:
            raise InputError(f"traverse_draft_tree: retrieve_next_token, retrieve_next_sibling and draft_tokens must "
                             f"have the same length, got {n}, {sibling.shape[0]} and {tokens.shape[0]}")
        rows = _as_numpy(token_bitmask, "traverse_draft_tree") if type(token_bitmask) is not np.ndarray \
            else token_bitmask
        if rows.ndim != 2 or rows.shape[0] != n or rows.dtype != np.int32:
            raise InputError(f"traverse_draft_tree: token_bitmask must be an int32 array of shape ({n}, words), got "
                             f"shape {rows.shape} and dtype {rows.dtype}")
        if n == 0:
            return True
        if sibling[0] != -1:
            raise InputError("traverse_draft_tree: the root (node 0) cannot have a sibling")
        for name, arr in (("retrieve_next_token", child), ("retrieve_next_sibling", sibling)):
            if ((arr < -1) | (arr >= n)).any() or (arr == 0).any():
                raise InputError(f"traverse_draft_tree: {name} must hold node indices in [1, {n}) or -1")
        if temperatures is not None:
            temps = _as_numpy(temperatures, "traverse_draft_tree")
            if temps.shape != (n,) or temps.dtype != np.float32:
                raise InputError(f"traverse_draft_tree: the temperatures tensor must be a float32 array of shape "
                                 f"({n},), got shape {temps.shape} and dtype {temps.dtype}")
            temps[...] = -1.0
        def temperature_of(m: "GrammarMatcher") -> float:
            t = m.temperature
            return -1.0 if t is None else t

        rows[...] = 0
        deadline = time.perf_counter() + time_threshold if time_threshold > 0 else None
        root = self.fork()
        if not root.is_terminated():
            root.fill_next_token_bitmask(rows, 0)
        if temperatures is not None:
            temps[0] = temperature_of(root)
        stack = [(0, root)]  # (node whose row is filled, the matcher after its token)
        while stack:
            node, matcher = stack.pop()
            c = int(child[node])
            while c != -1:
                if deadline is not None and time.perf_counter() > deadline:
                    return False
                token = int(tokens[c])
                if not matcher.is_terminated() and 0 <= token < self.vocab_size:
                    after = matcher.fork()
                    if after.accept_token(token) and not after.is_terminated():
                        after.fill_next_token_bitmask(rows, c)
                        if temperatures is not None:
                            temps[c] = temperature_of(after)
                        stack.append((c, after))
                c = int(sibling[c])
        return True

    def is_terminated(self) -> bool:
        """True after a stop token was accepted (with ``terminate_without_stop_token``: whenever the output so far
        is a complete sentence)."""
        if self._terminate_without_stop_token:
            return self._handle.is_completed()
        return self._handle.is_terminated()

    def is_completed(self) -> bool:
        """True when the output so far is a complete sentence (a stop token would be accepted)."""
        return self._handle.is_completed()

    def is_in_tag(self) -> bool:
        """True when the output so far is inside a tag of the grammar's ``TagDispatch`` (e.g. a tool call),
        not in free text (:mod:`xg2jax.tag_events`)."""
        return bool(self._handle.tag_status_bits(False) & (1 << 8))

    def get_captures(self, deduplicate: bool = True) -> list[tuple[str, bytes]]:
        """The text captured rules derived in the output so far, as ``(label, bytes)`` pairs.

        A captured rule is written ``name[capture] ::= ...`` (label: the rule's name) or
        ``name[capture="label"] ::= ...`` in EBNF, and likewise in Lark. Each time an accepted token completes a
        captured rule over a span of the output, that span is an event (an inner rule's before the rules around it).
        Events come from every parse of the output, as in xgrammar, so a rule completes once per way of ending it:
        ``v[capture] ::= [0-9]+`` after ``123`` has the events ``1``, ``12`` and ``123``.

        Parameters
        ----------
        deduplicate
            True (default): per label and start, only the longest span (where it was recorded); False: every event.

        Returns
        -------
        list of (str, bytes)
            Oldest first. Special tokens read as their text. Filling masks records nothing; rollback and reset drop
            the events of the tokens they undo; fork copies them.
        """
        return self._handle.captures(bool(deduplicate))

    def take_tag_events(self) -> list["TagEvent"]:
        """The switches between free text and tags since the last call, oldest first (:mod:`xg2jax.tag_events`).

        Events of tokens undone by :meth:`rollback` before they were taken are dropped; taken ones stay
        taken. Empty for a grammar without ``TagDispatch``.
        """
        from xg2jax.tag_events import events_from_engine

        triggers = [t.trigger for t in self._compiled.dispatch_tags] if self._compiled is not None else []
        return events_from_engine(self._handle.take_tag_events(), triggers)


def batch_fill_next_token_bitmask(
    matchers: Sequence[GrammarMatcher], bitmask, indices: Sequence[int] | None = None, *, num_threads: int = 8
) -> None:
    """Fill ``bitmask[indices[i]]`` from ``matchers[i]`` for all i, on up to ``num_threads`` threads.

    The matchers must be distinct objects (each is advanced by one thread only). A terminated matcher's row gets
    its stop tokens (so a finished sequence of the batch pads with them), as in the jitted step.
    """
    arr = _as_numpy(bitmask, "batch_fill_next_token_bitmask")
    if arr.dtype != np.int32:
        raise InputError(f"batch_fill_next_token_bitmask: the bitmask must have dtype int32, got {arr.dtype}")
    idx = list(range(len(matchers))) if indices is None else [int(i) for i in indices]
    if arr.ndim != 2:
        raise InputError(f"batch_fill_next_token_bitmask: the bitmask must be 2-D, got shape {arr.shape}")
    for m in matchers:
        _check_words(arr.shape[1], m.vocab_size, "batch_fill_next_token_bitmask")
    handles = [m._handle for m in matchers]
    if len({id(h) for h in handles}) != len(handles):
        raise InputError("batch_fill_next_token_bitmask: the same matcher appears twice")
    _core.batch_fill(handles, arr, idx, int(num_threads))


class BatchGrammarMatcher:
    """Operations over many matchers at once (xgrammar's ``BatchGrammarMatcher``): a batch fill on a thread pool,
    and batch accept / rollback, one call per row.

    Parameters
    ----------
    max_threads : int or "auto"
        Threads for :meth:`batch_fill_next_token_bitmask` ("auto": the machine's cores, at most 8).
    """

    def __init__(self, max_threads: int | str = "auto") -> None:
        if max_threads == "auto":
            max_threads = min(8, os.cpu_count() or 1)
        if isinstance(max_threads, bool) or not isinstance(max_threads, int) or max_threads < 1:
            raise InputError(f"BatchGrammarMatcher: max_threads must be a positive int or 'auto', got {max_threads!r}")
        self.max_threads = max_threads

    def batch_fill_next_token_bitmask(self, matchers: Sequence[GrammarMatcher], bitmask,
                                      indices: Sequence[int] | None = None, debug_print: bool = False) -> None:
        """Fill ``bitmask[indices[i]]`` (row i without ``indices``) from ``matchers[i]``. ``debug_print`` is
        accepted for xgrammar's signature and prints nothing."""
        batch_fill_next_token_bitmask(matchers, bitmask, indices, num_threads=self.max_threads)

    @staticmethod
    def batch_accept_token(matchers: Sequence[GrammarMatcher], tokens: Sequence[int],
                           debug_print: bool = False) -> list[bool]:
        """``matchers[i].accept_token(tokens[i])`` for every i."""
        if len(matchers) != len(tokens):
            raise InputError(f"batch_accept_token: {len(matchers)} matchers but {len(tokens)} tokens")
        return [m.accept_token(int(t)) for m, t in zip(matchers, tokens)]

    @staticmethod
    def batch_accept_string(matchers: Sequence[GrammarMatcher], strings: Sequence[str | bytes],
                            debug_print: bool = False) -> list[bool]:
        """``matchers[i].accept_string(strings[i])`` for every i."""
        if len(matchers) != len(strings):
            raise InputError(f"batch_accept_string: {len(matchers)} matchers but {len(strings)} strings")
        return [m.accept_string(s) for m, s in zip(matchers, strings)]

    @staticmethod
    def batch_fill_temperature(matchers: Sequence[GrammarMatcher], temperatures,
                               indices: Sequence[int] | None = None) -> None:
        """``temperatures[indices[i]] = matchers[i].temperature`` (entry i without ``indices``), -1 where a matcher
        has none.

        Parameters
        ----------
        temperatures : float32[N] array (numpy, torch CPU tensor or another writable DLPack CPU array)
            Written in place.

        Raises
        ------
        InputError
            A temperatures tensor that is not a 1-D float32 CPU array, indices of another length than
            ``matchers``, or an index out of bounds.
        """
        temps = _as_numpy(temperatures, "batch_fill_temperature")
        if temps.ndim != 1 or temps.dtype != np.float32:
            raise InputError(f"batch_fill_temperature: the temperatures tensor must be a 1-D float32 array, got shape "
                             f"{temps.shape} and dtype {temps.dtype}")
        rows = list(range(len(matchers))) if indices is None else [int(i) for i in indices]
        if len(rows) != len(matchers):
            raise InputError(f"batch_fill_temperature: indices size {len(rows)} differs from the {len(matchers)} "
                             "matchers")
        for i in rows:
            if not 0 <= i < temps.shape[0]:
                raise InputError(f"batch_fill_temperature: index {i} is out of bounds for {temps.shape[0]} entries")
        for m, i in zip(matchers, rows):
            t = m.temperature
            temps[i] = -1.0 if t is None else t

    @staticmethod
    def batch_rollback(matchers: Sequence[GrammarMatcher], num_tokens: Sequence[int] | int = 1) -> None:
        """``matchers[i].rollback(num_tokens[i])`` (or the same count for all)."""
        counts = [int(num_tokens)] * len(matchers) if isinstance(num_tokens, int) else [int(n) for n in num_tokens]
        if len(counts) != len(matchers):
            raise InputError(f"batch_rollback: {len(matchers)} matchers but {len(counts)} counts")
        for m, n in zip(matchers, counts):
            if n:
                m.rollback(n)


def apply_token_bitmask_inplace(logits, bitmask, *, vocab_size: int | None = None,
                                indices: Sequence[int] | None = None) -> None:
    """Set ``logits[i, t] = -inf`` where bit ``t`` of ``bitmask[i]`` is 0, in place (xgrammar's signature).

    Parameters
    ----------
    logits : numpy array, torch tensor (any device, any float dtype) or another writable DLPack CPU array
        ``[batch, n]`` or ``[n]``. JAX arrays are immutable: use :func:`xg2jax.jax.apply_token_bitmask`, which
        returns the masked logits.
    bitmask : int32 array (numpy, torch, or DLPack)
        ``[batch, words]`` or ``[words]``, packed as :func:`allocate_token_bitmask` makes it.
    vocab_size : int, optional
        The real vocabulary size when ``logits`` or ``bitmask`` carry padding: only ``logits[..., :vocab_size]`` is
        masked, columns past it are left as they are (xgrammar's convention). Without it every column of
        ``logits`` is covered and columns past the bitmask's bits are masked (a model's padded, never-trained ids
        can then not be sampled; xgrammar leaves them unmasked with a warning).
    indices : sequence of int, optional
        Only these rows; then ``logits`` and ``bitmask`` need not have the same number of rows.

    Raises
    ------
    TypeError
        On a JAX array or an object that is not an array.
    ValueError
        On a wrong dtype, shape, row index or ``vocab_size``.
    """
    what = "apply_token_bitmask_inplace"
    module = type(logits).__module__.split(".")[0]
    if module in ("jax", "jaxlib"):
        raise TypeError(f"{what}: JAX arrays are immutable; use xg2jax.jax.apply_token_bitmask(logits, bitmask), "
                        "which returns the masked logits")
    if module == "torch":
        _apply_torch(logits, bitmask, vocab_size, indices, what)
        return
    if not isinstance(logits, np.ndarray):
        if not hasattr(logits, "__dlpack__"):
            raise TypeError(f"{what}: logits must be a numpy array, a torch tensor or a DLPack CPU array, got "
                            f"{type(logits).__name__}")
        logits = _as_numpy(logits, what)
    if type(bitmask).__module__.split(".")[0] == "torch":
        bitmask = bitmask.cpu()
    bitmask = _as_numpy(bitmask, what)
    if bitmask.dtype != np.int32:
        raise InputError(f"{what}: the bitmask must have dtype int32, got {bitmask.dtype}")
    if not np.issubdtype(logits.dtype, np.floating):
        raise InputError(f"{what}: logits must be floating point, got {logits.dtype}")
    if not logits.flags.writeable:
        raise InputError(f"{what}: logits are read-only")
    lg = logits[None, :] if logits.ndim == 1 else logits
    bm = bitmask[None, :] if bitmask.ndim == 1 else bitmask
    rows, cols = _apply_plan(lg.shape, bm.shape, vocab_size, indices, what)
    for r in rows:
        bits = np.unpackbits(bm[r].view(np.uint8), bitorder="little")[:cols].astype(bool)
        allowed = np.zeros(cols, dtype=bool)  # columns past the bitmask's bits stay masked
        allowed[: bits.size] = bits
        lg[r, :cols][~allowed] = -np.inf


def _apply_plan(logits_shape, bitmask_shape, vocab_size, indices, what: str) -> tuple[list[int], int]:
    """The rows to mask and how many columns, after checking shapes (both 2-D here)."""
    if len(logits_shape) != 2 or len(bitmask_shape) != 2:
        raise InputError(f"{what}: bad shapes logits {tuple(logits_shape)}, bitmask {tuple(bitmask_shape)}")
    if indices is None:
        if bitmask_shape[0] != logits_shape[0]:
            raise InputError(f"{what}: {logits_shape[0]} logits rows but {bitmask_shape[0]} bitmask rows")
        rows = list(range(logits_shape[0]))
    else:
        rows = [int(i) for i in indices]
        for r in rows:
            if not (0 <= r < logits_shape[0] and r < bitmask_shape[0]):
                raise InputError(f"{what}: index {r} out of range ({logits_shape[0]} logits rows, "
                                 f"{bitmask_shape[0]} bitmask rows)")
    cols = logits_shape[1]
    if vocab_size is not None:
        vocab_size = int(vocab_size)
        if not 0 <= vocab_size <= cols or bitmask_shape[1] * 32 < vocab_size:
            raise InputError(f"{what}: vocab_size {vocab_size} must be at most the logits' {cols} columns and the "
                             f"bitmask's {bitmask_shape[1] * 32} bits")
        cols = vocab_size
    return rows, cols


def _apply_torch(logits, bitmask, vocab_size, indices, what: str) -> None:
    """The torch path: the bits are unpacked and applied with torch ops on the logits' device (no copy of the
    logits, any float dtype)."""
    import torch

    if not logits.is_floating_point():
        raise InputError(f"{what}: logits must be floating point, got {logits.dtype}")
    if not isinstance(bitmask, torch.Tensor):
        bitmask = torch.from_numpy(_as_numpy(bitmask, what))
    if bitmask.dtype != torch.int32:
        raise InputError(f"{what}: the bitmask must have dtype int32, got {bitmask.dtype}")
    lg = logits.unsqueeze(0) if logits.dim() == 1 else logits
    bm = bitmask.unsqueeze(0) if bitmask.dim() == 1 else bitmask
    rows, cols = _apply_plan(tuple(lg.shape), tuple(bm.shape), vocab_size, indices, what)
    if not rows or cols == 0:
        return
    index = torch.tensor(rows, dtype=torch.long, device=logits.device)
    words = bm.to(logits.device).index_select(0, index)
    shifts = torch.arange(32, dtype=torch.int32, device=logits.device)
    bits = ((words.unsqueeze(-1) >> shifts) & 1).reshape(len(rows), -1)[:, :cols].bool()
    allowed = torch.zeros((len(rows), cols), dtype=torch.bool, device=logits.device)
    allowed[:, : bits.shape[1]] = bits  # columns past the bitmask's bits stay masked
    block = lg[index, :cols]
    lg[index, :cols] = block.masked_fill(~allowed, float("-inf"))
