"""xg2jax.contrib.hf.LogitsProcessor: the transformers processor masks each step's scores to the grammar, accepts
the sampled tokens row by row, and reports a forbidden sampled token or a batch of the wrong size."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is needed for the transformers integration")
pytest.importorskip("transformers", reason="transformers is needed for the transformers integration")

import xg2jax as xgr  # noqa: E402
from xg2jax.contrib.hf import LogitsProcessor  # noqa: E402

VOCAB = [b"</s>", b"yes", b"no", b"maybe", b" ", b"!"]


def compiled(grammar: str):
    tok = xgr.TokenizerInfo(VOCAB, stop_token_ids=[0])
    return xgr.GrammarCompiler(tok).compile_grammar(grammar)


def greedy(processor, steps: int, batch: int = 1, width: int = len(VOCAB), prefer=None):
    """A generate()-like loop: scores favour `prefer` (per row, a token order), the processor masks them."""
    ids = torch.zeros((batch, 1), dtype=torch.long)
    out = [[] for _ in range(batch)]
    for _ in range(steps):
        scores = torch.zeros((batch, width))
        for r in range(batch):
            for rank, t in enumerate(prefer[r]):
                scores[r, t] = 10.0 - rank
        scores = processor(ids, scores)
        nxt = scores.argmax(dim=-1)
        for r in range(batch):
            out[r].append(int(nxt[r]))
        ids = torch.cat([ids, nxt[:, None]], dim=1)
    return out


def test_scores_are_masked_to_the_grammar():
    p = LogitsProcessor(compiled('root ::= "yes" | "no"'))
    scores = p(torch.zeros((1, 3), dtype=torch.long), torch.zeros((1, len(VOCAB))))
    assert torch.isinf(scores[0, [0, 3, 4, 5]]).all() and not torch.isinf(scores[0, [1, 2]]).any()


def test_greedy_generation_follows_each_rows_grammar():
    grammars = [compiled('root ::= "maybe" " " "yes"'), compiled('root ::= "no" "!"+')]
    p = LogitsProcessor(grammars)
    # the scores prefer tokens the grammars forbid first: the processor must steer every step
    out = greedy(p, 3, batch=2, prefer=[[2, 1, 5, 4, 3, 0], [1, 3, 5, 2, 0, 4]])
    assert out[0] == [3, 4, 1] and out[1] == [2, 5, 5]


def test_padded_score_columns_are_masked():
    p = LogitsProcessor(compiled('root ::= "yes"'))
    scores = p(torch.zeros((1, 1), dtype=torch.long), torch.zeros((1, 64)))
    assert torch.isinf(scores[0, len(VOCAB):]).all() and not torch.isinf(scores[0, 1])


def test_a_forbidden_sampled_token_and_a_wrong_batch_raise():
    p = LogitsProcessor(compiled('root ::= "yes"'))
    p(torch.zeros((1, 1), dtype=torch.long), torch.zeros((1, len(VOCAB))))
    with pytest.raises(RuntimeError, match="row 0 sampled token 2, which its grammar forbids"):
        p(torch.tensor([[0, 2]]), torch.zeros((1, len(VOCAB))))
    q = LogitsProcessor(compiled('root ::= "yes"'))
    q(torch.zeros((1, 1), dtype=torch.long), torch.zeros((1, len(VOCAB))))
    with pytest.raises(ValueError, match="the batch has 2 rows, the processor 1"):
        q(torch.zeros((2, 2), dtype=torch.long), torch.zeros((2, len(VOCAB))))
    with pytest.raises(ValueError, match="2 grammars for a batch of 3 rows"):
        LogitsProcessor([compiled('root ::= "yes"')] * 2)(torch.zeros((3, 1), dtype=torch.long),
                                                           torch.zeros((3, len(VOCAB))))
