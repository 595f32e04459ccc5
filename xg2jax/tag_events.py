"""Tag events: where an output switches between free text and a tag (a tool call).

A tool-calling grammar (a structural tag's ``triggered_tags``, :func:`xg2jax.get_model_structural_tag`,
an EBNF ``TagDispatch``) is free text in which a completed trigger must go on with its tag. The matcher
follows the switches as it accepts tokens, from its Earley sets (exact at the byte: a token may hold
text and the start of a tag, or the end of a tag and more text):

- :class:`TagEvent`: one switch, with the text the user sees: the trigger when a tag begins, the whole
  tag (trigger through its last byte, e.g. ``<tool_call>{...}</tool_call>``) when it ends. Taken from a
  matcher with :meth:`xg2jax.GrammarMatcher.take_tag_events`, from a decode loop's rows with
  :meth:`xg2jax.jax.GrammarState.take_tag_events`, or delivered to ``constrained_sample``'s callbacks.
- :class:`TagSpan` and :func:`tag_spans`: per row, the steps where each tag began and ended, from the
  per-step status bits a jitted loop records (:class:`xg2jax.jax.StepStatus`).

A tag is identified by its index into ``CompiledGrammar.dispatch_tags`` (one entry per trigger: a
``triggered_tags`` with one trigger and 400 tools has one tag; which tool was called is in the tag's
text, see :func:`split_tag_text`).
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

__all__ = ["TagEvent", "TagSpan", "tag_spans", "split_tag_text"]

# StepStatus bits (xla_ffi/grammar_step.h; xg2jax.jax.StepStatus names them for users).
_IN_TAG, _ENTERED, _LEFT, _INDEX_SHIFT = 1 << 8, 1 << 9, 1 << 10, 16


@dataclasses.dataclass(frozen=True)
class TagEvent:
    """One switch between free text and a tag."""

    start: bool  #: True: the tag began (its trigger completed); False: it ended
    tag: int  #: index into ``CompiledGrammar.dispatch_tags``
    trigger: str  #: that tag's trigger text
    token_index: int  #: 0-based index, among the matcher's accepted tokens, of the token that made the switch
    text: str  #: start: the trigger as written; end: the whole tag, trigger included, exactly as generated
    row: int = -1  #: the batch row (decode loops), else -1
    step: int = -1  #: the decode step whose token made the switch (decode loops; -1 before the loop)


@dataclasses.dataclass(frozen=True)
class TagSpan:
    """A tag in one row's output: the steps of the tokens that began and ended it."""

    tag: int  #: index into ``CompiledGrammar.dispatch_tags``
    start_step: int  #: the step whose token completed the trigger
    end_step: int  #: the step whose token completed the tag; -1 if the output ended inside it


def events_from_engine(raw: Sequence[tuple], triggers: Sequence[str], *, row: int = -1,
                       step: int = -1) -> list[TagEvent]:
    """TagEvents from the engine's (start, tag, token_index, text bytes) tuples."""
    out = []
    for start, tag, token_index, text in raw:
        trigger = triggers[tag] if 0 <= tag < len(triggers) else ""
        out.append(TagEvent(bool(start), int(tag), trigger, int(token_index),
                            text.decode("utf-8", errors="replace"), row, step))
    return out


def tag_spans(status, lengths) -> list[list[TagSpan]]:
    """Per row, the tags of its output from a loop's per-step status bits.

    Parameters
    ----------
    status : int32[B, N]
        The status after each step's token (``SampleOutput.status``).
    lengths : int32[B]
        Tokens generated per row (steps past a row's length are ignored).

    A token that closes one tag and opens the next (both switch bits) ends the open span and starts a
    new one; a token that holds a whole tag gives a span with ``start_step == end_step``.
    """
    status = np.asarray(status)
    lengths = np.asarray(lengths)
    if status.ndim != 2 or lengths.shape != status.shape[:1]:
        raise ValueError(f"tag_spans: need status [B, N] and lengths [B], got {status.shape} and {lengths.shape}")
    out = []
    for row in range(status.shape[0]):
        spans, open_tag, open_step = [], None, -1
        for step in range(int(min(lengths[row], status.shape[1]))):
            s = int(status[row, step])
            index = ((s >> _INDEX_SHIFT) & 0x7FFF) - 1
            in_tag, entered, left = bool(s & _IN_TAG), bool(s & _ENTERED), bool(s & _LEFT)
            if left and open_tag is not None:
                spans.append(TagSpan(open_tag, open_step, step))
                open_tag = None
            if entered:
                if in_tag:
                    open_tag, open_step = index, step
                else:  # the whole tag in this token
                    spans.append(TagSpan(index, step, step))
        if open_tag is not None:
            spans.append(TagSpan(open_tag, open_step, -1))
        out.append(spans)
    return out


def split_tag_text(text: str, tags: Sequence[dict]) -> tuple[int, str]:
    """Which tag of a structural tag a tag event's text is, and its content.

    Parameters
    ----------
    text : str
        A ``TagEvent.text`` of an ended tag (trigger through end).
    tags : sequence of dict
        The ``{"begin": ..., "end": ...}`` tags the trigger may open, e.g. the ``tags`` of the structural
        tag's ``triggered_tags`` (for :func:`xg2jax.get_model_structural_tag`, one per tool).

    Returns
    -------
    (index, content)
        The tag whose ``begin`` is the longest prefix of ``text`` and whose ``end`` ends it, and the text
        between them (a tool call's arguments). ``ValueError`` if none fits.
    """
    best = -1
    for i, t in enumerate(tags):
        begin, end = t.get("begin", ""), t.get("end", "")
        if text.startswith(begin) and text.endswith(end) and len(text) >= len(begin) + len(end):
            if best < 0 or len(begin) > len(tags[best].get("begin", "")):
                best = i
    if best < 0:
        raise ValueError(f"split_tag_text: no tag's begin/end fits {text[:80]!r}")
    begin, end = tags[best].get("begin", ""), tags[best].get("end", "")
    return best, text[len(begin):len(text) - len(end)]
