"""A transformers ``LogitsProcessor`` that keeps ``model.generate()`` inside a grammar (as xgrammar's
``contrib.hf.LogitsProcessor``).

Usage::

    tok_info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=model.config.vocab_size)
    compiled = xgr.GrammarCompiler(tok_info).compile_json_schema(schema)
    out = model.generate(**inputs, logits_processor=[xg2jax.contrib.hf.LogitsProcessor(compiled)])

Each call accepts the token sampled at the previous step (the last column of ``input_ids``) in every row's
matcher, fills the rows' masks on the engine's thread pool and masks the scores in place of disallowed tokens
(-inf). One processor serves one ``generate()`` call: the matchers start with the first call and cannot be reset
in between (transformers does not call the processor after a row's stop token).
"""

from __future__ import annotations

from typing import Sequence

try:
    import torch
    import transformers
except ImportError as exc:  # an optional integration: say what to install
    raise ImportError("xg2jax.contrib.hf needs torch and transformers (pip install torch transformers)") from exc

import xg2jax as xgr

__all__ = ["LogitsProcessor"]


class LogitsProcessor(transformers.LogitsProcessor):
    """Masks the scores of ``model.generate()`` to the tokens a grammar allows.

    Parameters
    ----------
    compiled_grammar : CompiledGrammar or sequence of CompiledGrammar
        One grammar for every row, or one per row of the batch.
    """

    def __init__(self, compiled_grammar: xgr.CompiledGrammar | Sequence[xgr.CompiledGrammar]):
        grammars = [compiled_grammar] if isinstance(compiled_grammar, xgr.CompiledGrammar) else list(compiled_grammar)
        if not grammars or not all(isinstance(g, xgr.CompiledGrammar) for g in grammars):
            raise TypeError("LogitsProcessor: expected a CompiledGrammar or a non-empty sequence of them")
        self.compiled_grammars = grammars
        self.full_vocab_size = grammars[0].tokenizer_info.vocab_size
        self.matchers: list[xgr.GrammarMatcher] = []
        self.token_bitmask = None
        self._batch = xgr.BatchGrammarMatcher()

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        batch = input_ids.shape[0]
        if not self.matchers:  # the first step: nothing sampled yet
            grammars = self.compiled_grammars * batch if len(self.compiled_grammars) == 1 else self.compiled_grammars
            if len(grammars) != batch:
                raise ValueError(f"LogitsProcessor: {len(self.compiled_grammars)} grammars for a batch of {batch} rows")
            self.matchers = [xgr.GrammarMatcher(g) for g in grammars]
            self.token_bitmask = xgr.allocate_token_bitmask(batch, self.full_vocab_size)
        else:
            if batch != len(self.matchers):
                raise ValueError(f"LogitsProcessor: the batch has {batch} rows, the processor {len(self.matchers)}; "
                                 "use a new processor per generate() call")
            for i, token in enumerate(input_ids[:, -1].tolist()):
                m = self.matchers[i]
                if not m.is_terminated() and not m.accept_token(token):
                    raise RuntimeError(f"LogitsProcessor: row {i} sampled token {token}, which its grammar forbids "
                                       "(were the scores changed after this processor ran?)")
        self._batch.batch_fill_next_token_bitmask(self.matchers, self.token_bitmask)
        # Columns past the vocabulary (a model's padded ids) are masked too; scores narrower than the vocabulary
        # are masked over their own width.
        width = scores.shape[-1]
        xgr.apply_token_bitmask_inplace(scores, self.token_bitmask,
                                        vocab_size=None if width >= self.full_vocab_size else width)
        return scores
