#!/usr/bin/env python3
"""JSON-Schema-Test-Suite per keyword file: xg2jax vs xgrammar 0.2.9 (measured in the same run) vs llguidance
1.9.1 (its published per-test results, and measured here too).

For every required (non-``optional``) keyword file of ``draft2020-12`` and ``draft7`` in
``../shared/data/json-schema-test-suite/tests`` and every test group of it, each engine compiles the group's schema
once (the folder's ``$schema`` dialect injected when the schema has none, as the suite prescribes) and then checks
every test instance, serialised twice (compact ``json.dumps(separators=(",", ":"))`` and ``indent=2``), as a
whole string. A test is

* **correct** when both serialisations are accepted exactly when the test is ``valid``;
* **wrong** when either is accepted although invalid or rejected although valid;
* **error** when the schema does not compile (an explicit error; for xg2jax only ``SchemaError`` is the documented
  explicit error, any other exception is counted as error too and listed apart as ``exception``), or the group
  runs past ``--timeout`` seconds (listed as ``timeout``; each engine runs in a worker process that is killed and
  restarted then).

Engines and options:

* **xg2jax**: exactly as ``tests/test_json_schema_suite.py``: ``xg2jax.Grammar.from_json_schema(schema,
  any_order=True, enforce_formats=False, refs=<the suite's remotes folder>, plain_integers=False)`` and
  ``xg2jax.testing.is_grammar_accept_string`` (free whitespace is the default); ``UnsatisfiableSchemaError`` ("no
  value is valid") rejects every instance.
* **xgrammar**: ``xgrammar.Grammar.from_json_schema(json.dumps(schema), any_whitespace=True, strict_mode=False,
  any_order=True)`` (JSON Schema defaults for additional properties/items, any property order, free whitespace)
  and ``xgrammar.testing._is_grammar_accept_string``. Any exception is an error.
* **llguidance (measured)**: ``LLMatcher.grammar_from_json_schema(schema)`` (defaults: flexible whitespace, strict
  about unimplemented keywords, properties in schema order, which is its only mode) on a 256-token byte tokenizer
  (one token per byte value 0-254, token 255 = EOS: the byte 0xFF never occurs in UTF-8); an instance is accepted
  iff ``consume_tokens(bytes)`` succeeds and the matcher ``is_accepting()``. A matcher in error after construction
  is an error.
* **llguidance (published)**: ``../shared/data/llguidance/json_schema_test_suite/expected_json_schema_test_suite.json``
  (draft2020-12 only), mapped: ``pass`` = correct; ``false_negative``/``false_positive`` = wrong;
  ``compile_error_all_invalid``/``compile_error_valid``/``skip_compile`` = error.

Output: ``results/json_schema_suite.json`` (per keyword and engine counts, every wrong test with its instance),
``results/json_schema_suite.md`` (the per-keyword table) and the table on stdout.
"""

from __future__ import annotations

import argparse
import collections
import datetime as _dt
import json
import logging
import multiprocessing as mp
import os
import platform
import re
import signal
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE.parent))

for _var in ("RAYON_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import workloads  # noqa: E402
from forked_worker import ForkedWorker  # noqa: E402

try:
    from tqdm import tqdm
except ImportError:  # pragma: no cover
    def tqdm(it=None, **_kw):
        return it

log = logging.getLogger("json_schema_suite")

DIALECTS = {"draft2020-12": "https://json-schema.org/draft/2020-12/schema",
            "draft7": "http://json-schema.org/draft-07/schema#"}
ENGINES = ("xg2jax", "xgrammar", "llguidance")
PUBLISHED = "llguidance-published"
PUBLISHED_MAP = {"pass": "correct", "false_negative": "wrong", "false_positive": "wrong",
                 "compile_error_all_invalid": "error", "compile_error_valid": "error", "skip_compile": "error"}


def serialisations(data):
    return (json.dumps(data, separators=(",", ":"), ensure_ascii=False),
            json.dumps(data, indent=2, ensure_ascii=False))


# ----------------------------------------------------------------------------------------------------------------
# Engine checkers: compile(schema) -> handle (raises on error); accepts(handle, text) -> bool
# ----------------------------------------------------------------------------------------------------------------


# The suite's `remotes` folder (served at http://localhost:1234/ by the suite's own runners), set by run() before
# the workers fork; xg2jax takes it as its `refs` registry, as tests/test_json_schema_suite.py does.
_REMOTES: dict = {}
_ACCEPTS_NOTHING = object()


def load_remotes(folder: Path) -> dict:
    return {f"http://localhost:1234/{p.relative_to(folder).as_posix()}": json.loads(p.read_text())
            for p in sorted(folder.rglob("*.json"))} if folder.is_dir() else {}


class XG2Jax:
    def __init__(self):
        import xg2jax
        from xg2jax.json_schema import SchemaError
        from xg2jax.testing import is_grammar_accept_string

        self.x, self.explicit, self.accept = xg2jax, SchemaError, is_grammar_accept_string
        self.version = getattr(xg2jax, "__version__", "?")

    def compile(self, schema):
        from xg2jax.json_schema import UnsatisfiableSchemaError

        try:
            return self.x.Grammar.from_json_schema(schema, any_order=True, enforce_formats=False, refs=_REMOTES,
                                                   plain_integers=False)
        except UnsatisfiableSchemaError:
            return _ACCEPTS_NOTHING  # "no value is valid" is an answer, as in the test runner

    def accepts(self, g, text):
        if g is _ACCEPTS_NOTHING:
            return False
        return bool(self.accept(g, text))


class XGrammar:
    def __init__(self):
        import xgrammar
        from xgrammar.testing import _is_grammar_accept_string
        from importlib.metadata import version

        self.xgr, self.accept = xgrammar, _is_grammar_accept_string
        self.explicit = Exception
        self.version = version("xgrammar")

    def compile(self, schema):
        return self.xgr.Grammar.from_json_schema(json.dumps(schema), any_whitespace=True, strict_mode=False,
                                                 any_order=True)

    def accepts(self, g, text):
        return bool(self.accept(g, text))


class _ByteTok:
    """One token per byte value; byte 0xFF (never in UTF-8) is replaced by the EOS special token."""

    def __init__(self):
        self.tokens = [bytes([i]) for i in range(255)] + [b"\xff<eos>"]
        self.eos_token_id = 255
        self.bos_token_id = None
        self.special_token_ids = [255]

    def __call__(self, text):
        if isinstance(text, str):
            text = text.encode("utf-8")
        return list(text)


class LLGuidance:
    def __init__(self):
        import llguidance

        self.llg = llguidance
        self.explicit = Exception
        self.version = getattr(llguidance, "__version__", "?")
        self.tok = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteTok()), n_vocab=256, eos_token=[255])

    def compile(self, schema):
        g = self.llg.LLMatcher.grammar_from_json_schema(json.dumps(schema))
        m = self.llg.LLMatcher(self.tok, g, log_level=0)
        if m.is_error():
            raise RuntimeError(m.get_error())
        return m

    def accepts(self, m, text):
        mm = m.deep_copy()
        data = list(text.encode("utf-8"))
        if 255 in data:
            return False
        return bool(mm.consume_tokens(data)) and bool(mm.is_accepting())


CHECKERS = {"xg2jax": XG2Jax, "xgrammar": XGrammar, "llguidance": LLGuidance}


# ----------------------------------------------------------------------------------------------------------------
# Worker
# ----------------------------------------------------------------------------------------------------------------


def _worker(conn, engine, stderr_path):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if stderr_path:
        fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 2)
        os.close(fd)
    try:
        chk = CHECKERS[engine]()
        conn.send(("ready", chk.version))
    except Exception as exc:
        conn.send(("setup_error", f"{type(exc).__name__}: {exc}"))
        return
    while True:
        job = conn.recv()
        if job is None:
            return
        schema, tests = job
        t0 = time.perf_counter()
        try:
            g = chk.compile(schema)
        except Exception as exc:
            kind = "error" if isinstance(exc, chk.explicit) else "exception"
            conn.send(("done", {"compile": kind, "message": f"{type(exc).__name__}: {exc}"[:400],
                                "compile_ms": (time.perf_counter() - t0) * 1e3}))
            continue
        compile_ms = (time.perf_counter() - t0) * 1e3
        out = []
        for data, valid in tests:
            bad = []
            try:
                for text in serialisations(data):
                    if chk.accepts(g, text) != valid:
                        bad.append(text)
                out.append(("wrong", bad[0][:300]) if bad else ("correct", None))
            except Exception as exc:
                out.append(("exception", f"{type(exc).__name__}: {exc}"[:300]))
        conn.send(("done", {"compile": "ok", "tests": out, "compile_ms": compile_ms}))


class Worker(ForkedWorker):
    """A checker in a forked process (forked_worker.py); its ready message is (version,)."""

    def __init__(self, engine, ctx, stderr_path):
        super().__init__(_worker, engine, ctx, stderr_path)
        self.version = None

    def start(self, timeout=600.0):
        (self.version,) = super().start(timeout)

    def run(self, schema, tests, timeout):
        self.ensure_started()
        self.conn.send((schema, tests))
        msg = self.recv(timeout)
        if msg[0] == "timeout":
            self.kill()
            return {"compile": "timeout", "message": f"group > {timeout:g} s"}
        if msg[0] == "crash":
            code = self.proc.exitcode if self.proc else None
            self.kill()
            return {"compile": "exception", "message": f"worker died (exit code {code})"}
        return msg[1]


# ----------------------------------------------------------------------------------------------------------------
# Runner
# ----------------------------------------------------------------------------------------------------------------


def load_published(path: Path):
    """{draft: {keyword: Counter(correct/error/wrong)}} from llguidance's expected-results file."""
    if not path.exists():
        return {}
    d = json.loads(path.read_text())
    out = {}
    for draft, kws in d.items():
        for kw, groups in kws.items():
            if "/" in kw:  # optional/...
                continue
            c = collections.Counter()
            for tests in groups.values():
                for cat in tests.values():
                    c[PUBLISHED_MAP.get(cat, cat)] += 1
                    if cat == "compile_error_all_invalid":
                        c["error_all_invalid"] += 1
            out.setdefault(draft, {})[kw] = dict(c)
    return out


def pin_xg2jax():
    """Import xg2jax's modules in the parent before forking, so every worker (restarts included) runs the code that
    was on disk at the start even if the checkout changes during the run."""
    try:
        import importlib

        for mod in ("xg2jax", "xg2jax.json_schema", "xg2jax.compiler", "xg2jax.matcher", "xg2jax.testing"):
            importlib.import_module(mod)
    except Exception as exc:  # not installed: the xg2jax worker reports it
        log.warning("could not import xg2jax up front: %s", exc)


def run(args):
    suite = Path(args.data_dir) / "json-schema-test-suite" / "tests"
    drafts = [d for d in args.drafts.split(",") if d]
    engines = [e for e in args.engines.split(",") if e]
    if args.worker_log:
        Path(args.worker_log).write_text("")
    _REMOTES.update(load_remotes(suite.parent / "remotes"))
    pin_xg2jax()
    ctx = mp.get_context("fork")
    workers = {}
    for e in engines:
        w = Worker(e, ctx, args.worker_log)
        try:
            w.start()
            workers[e] = w
        except Exception as exc:
            log.error("engine %s unavailable: %s", e, exc)
    engines = list(workers)
    published = load_published(Path(args.data_dir) / "llguidance" / "json_schema_test_suite"
                               / "expected_json_schema_test_suite.json")
    result = {"meta": {
        "date": _dt.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
        "python": platform.python_version(), "cpu_count": os.cpu_count(),
        "engines": {e: w.version for e, w in workers.items()}, "drafts": drafts, "timeout_s": args.timeout,
        "xg2jax_revision": workloads.xg2jax_revision(),
        "published": "llguidance/json_schema_test_suite/expected_json_schema_test_suite.json (draft2020-12 only)",
    }, "drafts": {}, "wrong": [], "errors": {}}
    t_start = time.perf_counter()
    try:
        for draft in drafts:
            files = sorted((suite / draft).glob("*.json"))
            if args.keywords:
                files = [f for f in files if f.stem in args.keywords.split(",")]
            table = collections.defaultdict(lambda: collections.defaultdict(collections.Counter))
            errs = {e: collections.Counter() for e in engines}
            for path in tqdm(files, desc=draft, disable=args.no_progress):
                kw = path.stem
                for group in json.loads(path.read_text()):
                    schema = group["schema"]
                    if isinstance(schema, dict) and "$schema" not in schema:
                        schema = {"$schema": DIALECTS[draft], **schema}
                    tests = [(t["data"], bool(t["valid"])) for t in group["tests"]]
                    for e in engines:
                        res = workers[e].run(schema, tests, args.timeout)
                        if res["compile"] != "ok":
                            table[kw][e]["error"] += len(tests)
                            if not any(v for _, v in tests):  # every instance invalid: rejecting all is right
                                table[kw][e]["error_all_invalid"] += len(tests)
                            if res["compile"] != "error":
                                table[kw][e][res["compile"]] += len(tests)
                            msg = res["message"].splitlines()[0] if res["message"] else ""
                            msg = re.sub(r"\[\d\d:\d\d:\d\d\] \S+:\d+: ", "", msg)  # xgrammar's log prefix
                            errs[e][f"[{res['compile']}] {msg[:140]}"] += len(tests)
                            continue
                        for t, (outcome, detail) in zip(group["tests"], res["tests"]):
                            if outcome == "exception":
                                table[kw][e]["error"] += 1
                                table[kw][e]["exception"] += 1
                                errs[e][f"[exception while matching] {detail[:140]}"] += 1
                                continue
                            table[kw][e][outcome] += 1
                            if outcome == "wrong":
                                result["wrong"].append({"draft": draft, "keyword": kw, "engine": e,
                                                        "group": group["description"], "test": t["description"],
                                                        "valid": t["valid"], "instance": detail})
                    if PUBLISHED not in table[kw] and kw in published.get(draft, {}):
                        table[kw][PUBLISHED].update(published[draft][kw])
            result["drafts"][draft] = {kw: {e: dict(c) for e, c in v.items()} for kw, v in sorted(table.items())}
            result["errors"][draft] = {e: [{"count": n, "group": g} for g, n in c.most_common(15)]
                                       for e, c in errs.items()}
    finally:
        for w in workers.values():
            w.stop()
    result["meta"]["elapsed_s"] = time.perf_counter() - t_start
    result["meta"]["xg2jax_revision_end"] = workloads.xg2jax_revision()
    result["meta"]["worker_restarts"] = {e: w.restarts for e, w in workers.items()}
    return result


# ----------------------------------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------------------------------


def columns(result):
    cols = list(result["meta"]["engines"])
    if any(PUBLISHED in v for d in result["drafts"].values() for v in d.values()):
        cols.append(PUBLISHED)
    return cols


def cell(c):
    if not c:
        return "—"
    s = f"{c.get('correct', 0)} / {c.get('error', 0)} / {c.get('wrong', 0)}"
    names = {"error_all_invalid": "on all-invalid groups", "timeout": "timeout", "exception": "exception"}
    extra = [f"{c[k]} {names[k]}" for k in names if c.get(k)]
    return s + (f" ({', '.join(extra)})" if extra else "")


def markdown(result) -> str:
    m = result["meta"]
    cols = columns(result)
    L = [f"Engines: {', '.join(f'{k} {v}' for k, v in m['engines'].items())}; xg2jax revision "
         f"{m.get('xg2jax_revision')}; llguidance published = {m['published']}. "
         f"Per-group timeout {m['timeout_s']:g} s.",
         "", "Cells: correct / error / wrong tests (a test = one instance, checked compact and indented; "
         "correct = both answers right; error = schema not compiled; timeouts and non-explicit exceptions are "
         "included in error and named; 'on all-invalid groups' counts errors on groups whose instances are all "
         "invalid, e.g. an unsatisfiable schema, where an error rejects everything as it should).", ""]
    for draft, table in result["drafts"].items():
        tot = {e: collections.Counter() for e in cols}
        for kws in table.values():
            for e in cols:
                tot[e].update(kws.get(e, {}))
        L.append(f"### {draft}")
        L.append("")
        L.append("| keyword | tests | " + " | ".join(cols) + " |")
        L.append("|---|---:|" + "---|" * len(cols))
        for kw, row in table.items():
            n = sum(v for k, v in row.get(cols[0], {}).items() if k in ("correct", "error", "wrong"))
            L.append(f"| {kw} | {n} | " + " | ".join(cell(row.get(e)) for e in cols) + " |")
        n = sum(v for k, v in tot[cols[0]].items() if k in ("correct", "error", "wrong"))
        L.append(f"| **total** | {n} | " + " | ".join(
            f"**{cell(tot[e])}**" + (f" ({100 * tot[e]['correct'] / n:.1f}% correct)" if n and tot[e] else "")
            for e in cols) + " |")
        L.append("")
        errs = result["errors"].get(draft, {})
        for e, groups in errs.items():
            if groups:
                L.append(f"- {e}, most frequent errors (tests): " + "; ".join(
                    f"{g['count']} × `{g['group'][:110]}`" for g in groups[:6]))
        L.append("")
    wrong = collections.Counter((w["engine"], w["draft"]) for w in result["wrong"])
    if wrong:
        L.append("Wrong answers: " + ", ".join(f"{e} {d}: {n}" for (e, d), n in sorted(wrong.items())) +
                 " (every one is listed in the JSON).")
        for w in [w for w in result["wrong"] if w["engine"] == "xg2jax"][:20]:
            L.append(f"- xg2jax {w['draft']}/{w['keyword']}: {w['group']} / {w['test']} "
                     f"({'valid rejected' if w['valid'] else 'invalid accepted'}): `{w['instance'][:80]}`")
    return "\n".join(L)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: a few keyword files only; writes results/json_schema_suite_quick.*")
    ap.add_argument("--drafts", default="draft2020-12,draft7")
    ap.add_argument("--engines", default=",".join(ENGINES), help="xg2jax,xgrammar,llguidance")
    ap.add_argument("--keywords", default=None, help="comma list of keyword files (default all required ones)")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per test group and engine")
    ap.add_argument("--data-dir", default=str(workloads.default_data_dir()))
    ap.add_argument("--out", default=None)
    ap.add_argument("--worker-log", default="/tmp/json_schema_suite_workers.log",
                    help="file for the engines' stderr; empty = terminal")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--from-json", default=None, metavar="PATH", help="reprint an earlier result, no run")
    args = ap.parse_args(argv)
    if args.quick and not args.keywords:
        args.keywords = "const,enum,maxLength,oneOf,ref,uniqueItems"
    if args.out is None:
        args.out = str(HERE / "results" / ("json_schema_suite_quick.json" if args.quick else "json_schema_suite.json"))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    if args.from_json:
        result = json.loads(Path(args.from_json).read_text())
    else:
        result = run(args)
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1, ensure_ascii=False))
    md = markdown(result)
    md_path = Path(args.from_json or args.out).with_suffix(".md")
    md_path.write_text("# JSON-Schema-Test-Suite per keyword\n\nGenerated by `benchmarks/json_schema_suite.py` "
                       f"({result['meta']['date']}).\n\n" + md + "\n")
    print(md)
    log.info("wrote %s", md_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
