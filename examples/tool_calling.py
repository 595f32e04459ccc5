"""Tool calling with a model family's format: get_model_structural_tag -> compile -> a decode loop whose masks
keep every call well formed.

The "model" here is scripted (it wants to write a fixed text, byte by byte) so the example runs anywhere in a
second; with a real model the loop is the same (docs/tool_calling.md; xg2jax.jax.constrained_sample inside
jax.jit). The scripted text calls the tool with an argument the schema forbids ("kelvin"): the mask steers it to an
allowed value, and the call that comes out is valid.

    python examples/tool_calling.py [--model qwen_3 | qwen_3_coder | deepseek_v3_2 | ...]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

import xg2jax as xgr
from xg2jax.testing import is_grammar_accept_string

TOOLS = [{"type": "function", "function": {
    "name": "get_weather",
    "description": "Current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"]}}}]
EOS = 256  # the byte vocabulary's stop token
# The scripted model's own ranking, used where the mask overrules its script: letters and digits first (lower
# byte values first), then punctuation, whitespace last.
PREFERENCE = np.array([-(b / 256) - (0 if chr(b).isalnum() else 1 if b < 128 and not chr(b).isspace() else 2)
                       for b in range(256)] + [-3.0], dtype=np.float32)


def byte_vocabulary() -> xgr.TokenizerInfo:
    """Tokens 0..255 are single bytes, 256 ends the output."""
    return xgr.TokenizerInfo([bytes([b]) for b in range(256)] + [b"</s>"], stop_token_ids=[EOS],
                             special_token_ids=[EOS])


def scripted_call(model: str) -> str:
    """What the scripted model wants to write: reasoning, then a call in `model`'s format (from its markers)."""
    spec = xgr.model_formats.MODEL_FORMATS[model]
    call = spec.render_calls([("get_weather", {"city": "Paris", "unit": "kelvin"})])
    think = "" if spec.think is None else spec.think_enabled_begin + "The user asked for the weather." + \
        spec.think[1] + spec.after_think
    return think + "Let me check. " + call


def decode(compiled: xgr.CompiledGrammar, wanted: bytes, max_tokens: int = 400) -> bytes:
    """Greedy decoding of a scripted model: at each step it prefers the next byte of `wanted` (then the end), else
    the allowed byte it ranks highest (PREFERENCE). When the mask overrules the script, the script
    skips the rest of the word it was writing and resumes after it."""
    matcher = xgr.GrammarMatcher(compiled)
    bitmask = xgr.allocate_token_bitmask(1, compiled.tokenizer_info.vocab_size)
    out, at = bytearray(), 0
    for _ in range(max_tokens):
        matcher.fill_next_token_bitmask(bitmask)
        scores = PREFERENCE.copy()[None]  # the model's own preference
        scores[0, wanted[at] if at < len(wanted) else EOS] = 10.0  # what the script wants now
        xgr.apply_token_bitmask_inplace(scores, bitmask)  # the one point where the grammar acts
        token = int(scores[0].argmax())
        assert matcher.accept_token(token)
        if token == EOS:
            break
        out.append(token)
        if at < len(wanted) and token == wanted[at]:
            at += 1
        else:  # overruled: drop the rest of the scripted word
            while at < len(wanted) and chr(wanted[at]).isalnum():
                at += 1
    return bytes(out)


def main(model: str = "qwen_3") -> str:
    tok = byte_vocabulary()
    tag = xgr.get_model_structural_tag(model, TOOLS, tool_choice="auto", reasoning="enabled")
    compiled = xgr.GrammarCompiler(tok).compile_structural_tag(tag)
    wanted = scripted_call(model).encode()
    text = decode(compiled, wanted).decode()
    print(f"model format: {model}\nscripted:  {wanted.decode()!r}\ngenerated: {text!r}")
    assert is_grammar_accept_string(xgr.Grammar.from_structural_tag(tag), text)
    return text


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen_3", choices=sorted(xgr.model_formats.MODEL_FORMATS))
    main(ap.parse_args().model)
