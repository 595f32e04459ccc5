"""Tag events inside jax.jit: constrained_sample reports each row's tool calls (status per step, tag spans),
calls on_tag_start / on_tag_end on the host once per switching step, and reacts (a sampler per mode, stop after
the first call). Checked against a re-parse of the output on the host (a regex, independent of the engine)."""

from __future__ import annotations

import dataclasses
import json
import re

import jax
import jax.numpy as jnp
import numpy as np
from absl.testing import absltest

import xg2jax as xgr
import xg2jax.jax as xj
from xg2jax.jax import sampling
from xg2jax.jax.tiny_lm import TinyLMConfig, TinyLMStep, init_cache
from xg2jax.model_formats import MODEL_FORMATS
from xg2jax.tag_events import split_tag_text

EOS = 256
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
    "required": ["city", "unit"]}}}
ADD = {"type": "function", "function": {"name": "add", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}


def byte_tokenizer() -> xgr.TokenizerInfo:
    return xgr.TokenizerInfo([bytes([b]) for b in range(256)] + [b"</s>"], stop_token_ids=[EOS],
                             special_token_ids=[EOS])


@dataclasses.dataclass(frozen=True)
class ScriptedLM:
    """A model that wants to write a fixed text per row: the logits after position p favour the script's byte p
    (params: int32[B, L] bytes, EOS-padded); elsewhere lower bytes first."""

    def __call__(self, params, tokens, cache, positions):
        nxt = jnp.take_along_axis(params, jnp.minimum(positions, params.shape[1] - 1), axis=1)
        return jax.nn.one_hot(nxt, EOS + 1) * 10.0 - jnp.arange(EOS + 1) / 1000.0, cache


@dataclasses.dataclass(frozen=True)
class LeastLikely(xj.Sampler):
    """The allowed token with the lowest logit (a sampler that is easy to tell apart from greedy)."""

    def __call__(self, logits, key):
        return jnp.argmin(jnp.where(jnp.isfinite(logits), logits, jnp.inf), axis=-1).astype(jnp.int32)


def script_array(texts: list[str], length: int) -> jax.Array:
    out = np.full((len(texts), length), EOS, np.int32)
    for i, t in enumerate(texts):
        b = t.encode()
        out[i, :len(b)] = list(b)
    return jnp.asarray(out)


def decoded(out) -> list[bytes]:
    tokens, lengths = np.asarray(out.tokens), np.asarray(out.lengths)
    return [bytes(int(t) for t in tokens[r, :lengths[r]] if t < 256) for r in range(tokens.shape[0])]


def reparse(data: bytes) -> list[tuple[int, int, bytes]]:
    """qwen_3 calls by a regex: (step of the trigger's last byte, step of the call's last byte, call text), with
    one byte per token."""
    out = []
    for m in re.finditer(rb"<tool_call>\n(\{.*?\})\n</tool_call>", data, re.S):
        json.loads(m.group(1))
        out.append((m.start() + len(b"<tool_call>") - 1, m.end() - 1, m.group(0)))
    return out


def calls(model: str, *pairs) -> str:
    return MODEL_FORMATS[model].render_calls(list(pairs))


class TagEventsInJitTest(absltest.TestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tok = byte_tokenizer()
        cls.compiler = xgr.GrammarCompiler(cls.tok)
        cls.tag = xgr.get_model_structural_tag("qwen_3", [WEATHER, ADD], reasoning=False)
        cls.compiled = cls.compiler.compile_structural_tag(cls.tag)

    def sample(self, texts, grammars=None, length=400, **kw):
        state = xj.GrammarState.create(grammars or [self.compiled] * len(texts))
        self.addCleanup(state.release)
        batch = len(texts)
        return xj.constrained_sample(ScriptedLM(), script_array(texts, length), None, jnp.zeros((batch, 1), jnp.int32),
                                     jnp.ones((batch,), jnp.int32), state, max_new_tokens=length, **kw)

    def test_events_equal_a_reparse_and_one_host_call_per_switching_step(self):
        texts = [
            "Checking. " + calls("qwen_3", ("get_weather", {"city": "Paris", "unit": "c"})) + " Also "
            + calls("qwen_3", ("add", {"a": 1, "b": 2}), ("get_weather", {"city": "</tool_call>", "unit": "f"}))
            + "\nDone.",
            "No tools needed.",
            # the script's unit is not in the enum: the mask steers the model to an allowed one
            calls("qwen_3", ("get_weather", {"city": "Oslo", "unit": "kelvin"})),
        ]
        started, ended = [], []
        out = self.sample(texts, on_tag_start=started.append, on_tag_end=ended.append)
        outputs = decoded(out)
        self.assertEqual(outputs[:2], [t.encode() for t in texts[:2]])
        self.assertIn(b'"unit": "c"', outputs[2])
        spans = out.tag_spans()
        expected = [reparse(o) for o in outputs]
        self.assertEqual([len(e) for e in expected], [3, 0, 1])
        self.assertEqual([[(s.start_step, s.end_step, s.tag) for s in row] for row in spans],
                         [[(a, b, 0) for a, b, _ in row] for row in expected])
        # The callbacks: every switch once, in step order (rows in order within a step), the exact text of each call.
        self.assertEqual([(e.step, e.row, e.text) for e in started],
                         sorted((a, r, "<tool_call>") for r, row in enumerate(expected) for a, _, _ in row))
        self.assertEqual([(e.step, e.row, e.text.encode()) for e in ended],
                         sorted((b, r, text) for r, row in enumerate(expected) for _, b, text in row))
        # One host call per step where some row switched, none elsewhere.
        status = np.asarray(out.status)
        switching_steps = np.any(status & (xj.StepStatus.TAG_ENTERED | xj.StepStatus.TAG_LEFT), axis=0).sum()
        self.assertEqual(xj.last_tag_callback_host_calls(), int(switching_steps))
        self.assertEqual(len(started) + len(ended), 8)
        # Which tool, and its arguments.
        tags = self.tag["format"]["tags"]
        row0 = [e for e in ended if e.row == 0]
        names = [tags[split_tag_text(e.text, tags)[0]]["begin"].split('"')[3] for e in row0]
        self.assertEqual(names, ["get_weather", "add", "get_weather"])
        self.assertEqual(json.loads(split_tag_text(row0[1].text, tags)[1]), {"a": 1, "b": 2})
        self.assertEqual(sampling._TAG_CALLBACKS, {})

    def test_a_random_model_forced_to_call(self):
        """A small random transformer under tool_choice="required": whatever it writes, the call the callback
        receives is the call in its output."""
        required = self.compiler.compile_structural_tag(
            xgr.get_model_structural_tag("qwen_3", [ADD], tool_choice="required", reasoning=False))
        config = TinyLMConfig(vocab_size=EOS + 1, max_len=160)
        step_fn = TinyLMStep(config)
        params = step_fn.init(jax.random.key(0), batch=2)
        ended = []
        with xj.GrammarState.create([required, required]) as state:
            out = xj.constrained_sample(step_fn, params, init_cache(config, 2), jnp.zeros((2, 1), jnp.int32),
                                        jnp.ones((2,), jnp.int32), state, max_new_tokens=150,
                                        sampler=xj.Sampler(temperature=1.0, top_k=8), rng=jax.random.key(1),
                                        on_tag_end=ended.append)
        for r, data in enumerate(decoded(out)):
            got = [e.text.encode() for e in ended if e.row == r]
            if int(out.finish_reason[r]) == xj.FinishReason.STOP:
                self.assertEqual(got, [text for _, _, text in reparse(data)])
                self.assertNotEmpty(got)
            else:  # cut by max_new_tokens: the calls it finished
                self.assertEqual(got, [text for _, _, text in reparse(data)][:len(got)])

    def test_a_failing_callback_raises_from_the_call(self):
        def fail(event):
            raise RuntimeError(f"executor down at step {event.step}")

        with self.assertRaisesRegex(Exception, "executor down at step 20"):
            self.sample(["Checking. " + calls("qwen_3", ("add", {"a": 1, "b": 2}))], on_tag_start=fail)
        self.assertEqual(sampling._TAG_CALLBACKS, {})
        out = self.sample(["again " + calls("qwen_3", ("add", {"a": 1, "b": 2}))], on_tag_end=lambda e: None)
        self.assertLen(out.tag_spans()[0], 1)

    def test_a_sampler_per_mode_and_stop_after_the_first_tag(self):
        digits = self.compiler.compile_grammar(
            'root ::= TagDispatch(("<n>", num), loop_after_dispatch=true)\nnum ::= [0-9] [0-9] [0-9] "</n>"')
        text = "a<n>123</n>b<n>456</n>c"
        out = self.sample([text], grammars=[digits], length=40, tag_sampler=LeastLikely())
        # Inside a tag the least likely allowed digit ('9'); the trigger and the free text follow the script.
        self.assertEqual(decoded(out)[0], b"a<n>999</n>b<n>999</n>c")
        out = self.sample([text], grammars=[digits], length=40, stop_after_first_tag=True)
        self.assertEqual(decoded(out)[0], b"a<n>123</n>")
        self.assertEqual(int(out.finish_reason[0]), xj.FinishReason.TAG_END)

    def test_status_bits_mark_the_mode(self):
        out = self.sample(["x" + calls("qwen_3", ("add", {"a": 1, "b": 2})) + "y"])
        status, n = np.asarray(out.status)[0], int(out.lengths[0])
        in_tag = (status[:n] & xj.StepStatus.IN_TAG) != 0
        (start, end), = [(s.start_step, s.end_step) for s in out.tag_spans()[0]]
        self.assertTrue(in_tag[start:end].all() and not in_tag[:start].any() and not in_tag[end:].any())
        self.assertEqual(int(xj.StepStatus.tag_index(status[start])), 0)
        self.assertEqual(int(xj.StepStatus.tag_index(status[0])), -1)

    def test_hlo_calls_the_host_only_under_a_conditional(self):
        state = xj.GrammarState.create([self.compiled])
        self.addCleanup(state.release)
        args = (script_array(["x"], 8), None, jnp.zeros((1, 1), jnp.int32), jnp.ones((1,), jnp.int32), state, None)
        kw = dict(step_fn=ScriptedLM(), max_new_tokens=8, sampler=xj.Sampler(), stop_token_ids=(), pad_id=0,
                  path="ffi", mesh=None, batch_axis=None, max_threads=8)
        plain = sampling._sample_jit.lower(*args, **kw).as_text()
        with_cb = sampling._sample_jit.lower(*args, jnp.int32(0), tag_callbacks=True, **kw).as_text()
        self.assertNotIn("callback", plain)
        self.assertIn("callback", with_cb)
        # The host call sits in a branch of a case (lax.cond) inside the loop body.
        case = with_cb.index("stablehlo.case")
        self.assertGreater(with_cb.index("callback", case), case)

    def test_callbacks_do_not_recompile_and_bad_arguments_are_refused(self):
        self.sample(["a"], length=8, on_tag_end=lambda e: None)
        size = sampling._sample_jit._cache_size()
        self.sample(["b"], length=8, on_tag_end=lambda e: None)  # a new callable: the same program
        self.assertEqual(sampling._sample_jit._cache_size(), size)
        with self.assertRaisesRegex(TypeError, "on_tag_end must be callable"):
            self.sample(["a"], length=8, on_tag_end="print")
        with self.assertRaisesRegex(TypeError, "tag_sampler must be a Sampler"):
            self.sample(["a"], length=8, tag_sampler="greedy")
        with self.assertRaisesRegex(ValueError, "need a grammar_state"):
            xj.constrained_sample(ScriptedLM(), script_array(["a"], 8), None, jnp.zeros((1, 1), jnp.int32),
                                  jnp.ones((1,), jnp.int32), None, max_new_tokens=8, on_tag_end=print)


if __name__ == "__main__":
    absltest.main()


class ToolCallingJaxExampleTest(absltest.TestCase):
    def test_the_example_reports_every_call_of_every_format(self):
        import importlib.util
        import pathlib

        path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "tool_calling_jax.py"
        spec = importlib.util.spec_from_file_location("tool_calling_jax_example", path)
        example = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(example)
        for model in sorted(MODEL_FORMATS):
            with self.subTest(model=model):
                finished = example.main(model)
                self.assertNotEmpty(finished)
                self.assertTrue(all(c["row"] == 0 for c in finished))
                row0 = example.scripts(model)[0]
                self.assertTrue(row0.endswith(finished[-1]["text"]), (finished, row0[-200:]))
                self.assertTrue(all(c["text"] in row0 for c in finished))
