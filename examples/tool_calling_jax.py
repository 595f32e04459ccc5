"""Tool calls inside a jitted decode loop: the host hears about each call as it happens.

A model family's tool-calling format (``get_model_structural_tag``) compiled for the vocabulary, one
``constrained_sample`` call (prefill + ``lax.while_loop``, the grammar step a custom call): whenever a row starts a
call, ``on_tag_start`` runs on the host; when it finishes one, ``on_tag_end`` gets the call's exact text, split
into the tool and its arguments, ready for an executor. Rows inside a call are sampled greedily (``tag_sampler``),
free text with a temperature. ``out.tag_spans()`` lists every call per row afterwards.

The "model" is scripted (per row, the logits favour the next byte of a text it wants to write) so the example runs
anywhere in seconds; a real model plugs in as ``step_fn`` unchanged (README, "Use in JAX").

    python examples/tool_calling_jax.py [--model qwen_3 | kimi | deepseek_v3_2 | ...]
"""

from __future__ import annotations

import argparse
import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np

import xg2jax as xgr
import xg2jax.jax as xj
from xg2jax.model_formats import MODEL_FORMATS

EOS = 256
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city.",
                                      "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                     "required": ["city"]}}},
    {"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}},
]


@dataclasses.dataclass(frozen=True)
class ScriptedLM:
    """step_fn(params, tokens, cache, positions) -> (logits, cache): after position p, row r's logits favour byte p
    of its script (params: int32[B, L]). Frozen, so it is a hashable static argument."""

    def __call__(self, params, tokens, cache, positions):
        nxt = jnp.take_along_axis(params, jnp.minimum(positions, params.shape[1] - 1), axis=1)
        return jax.nn.one_hot(nxt, EOS + 1) * 12.0 - jnp.arange(EOS + 1) / 1000.0, cache


def scripts(model: str) -> list[str]:
    """Two rows: one that calls both tools (one call each time the format allows more), one that only talks."""
    spec = MODEL_FORMATS[model]
    think = "" if spec.think is None else (spec.think_enabled_begin + "The user wants weather and a sum." +
                                           spec.think[1] + spec.after_think)
    calls = spec.render_calls([("get_weather", {"city": "Paris"}), ("add", {"a": 2, "b": 3})])
    return [think + "Let me check. " + calls, think + "Hello! No tools needed for this."]


def main(model: str = "qwen_3", max_new_tokens: int = 700) -> list[dict]:
    tok = xgr.TokenizerInfo([bytes([b]) for b in range(256)] + [b"</s>"], stop_token_ids=[EOS],
                            special_token_ids=[EOS])
    compiled = xgr.GrammarCompiler(tok).compile_structural_tag(xgr.get_model_structural_tag(model, TOOLS))
    texts = scripts(model)
    script = np.full((len(texts), max_new_tokens + 1), EOS, np.int32)
    for r, t in enumerate(texts):
        data = t.encode()[:max_new_tokens]
        script[r, :len(data)] = list(data)

    finished_calls = []

    def on_tag_start(event):
        print(f"  step {event.step:3d}  row {event.row}: a call begins ({event.trigger!r})")

    def on_tag_end(event):
        print(f"  step {event.step:3d}  row {event.row}: a call ends: {event.text!r}")
        finished_calls.append({"row": event.row, "step": event.step, "text": event.text})

    batch = len(texts)
    print(f"decoding {batch} rows in the {model} format under jax.jit")
    with xj.GrammarState.create([compiled] * batch) as state:
        out = xj.constrained_sample(
            ScriptedLM(), jnp.asarray(script), None, jnp.zeros((batch, 1), jnp.int32), jnp.ones((batch,), jnp.int32),
            state, max_new_tokens=max_new_tokens, sampler=xj.Sampler(temperature=0.3), rng=jax.random.key(0),
            tag_sampler=xj.Sampler(), on_tag_start=on_tag_start, on_tag_end=on_tag_end)
    tokens, lengths = np.asarray(out.tokens), np.asarray(out.lengths)
    for r, spans in enumerate(out.tag_spans()):
        text = bytes(int(t) for t in tokens[r, :lengths[r]] if t < 256).decode()
        print(f"row {r}: {len(spans)} tag(s) at steps {[(s.start_step, s.end_step) for s in spans]}")
        print("   " + json.dumps(text)[:300])
    print(f"host calls: {xj.last_tag_callback_host_calls()} (one per step where some row switched)")
    return finished_calls


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen_3", choices=sorted(MODEL_FORMATS))
    main(ap.parse_args().model)
