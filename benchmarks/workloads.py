"""Workloads for the mask-time benchmark: vocabularies, grammars and token streams.

Everything here is engine-independent, so every engine sees the same vocabulary and the same token ids.

* Vocabularies come from ``xg2jax.vocab_packages`` (``gemma3()``, ``qwen2()``; PyPI packages, nothing is vendored)
  and are decoded to bytes with ``xg2jax.vocab_decoding.decode_vocab``. Both are pure Python: when the compiled
  core of xg2jax is not built (``import xg2jax`` fails), the two modules are loaded by file path.
* Grammars: the builtin JSON grammar plus EBNF (GBNF) grammars read at run time from the llama.cpp grammar folder in
  ``../shared/data`` (never copied into this repository).
* Token streams: JSON instances marked valid in JSONSchemaBench's maskbench files, and hand-written valid strings
  for each EBNF grammar (below). Each string is tokenized by greedy longest match over the decoded token bytes.
"""

from __future__ import annotations

import dataclasses
import gzip
import importlib
import importlib.util
import json
import os
import random
import re
import sys
import types
from pathlib import Path
from typing import Optional, Sequence

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"

# ----------------------------------------------------------------------------------------------------------------
# Vocabularies
# ----------------------------------------------------------------------------------------------------------------

VOCAB_LOADERS = {"gemma3": "gemma3", "qwen2": "qwen2", "cl100k": "cl100k", "gpt2": "gpt2"}


def _load_pure_module(name: str):
    """Import ``xg2jax.<name>``. When the package cannot be imported (its compiled core is not built yet), load the
    pure-Python module from the source tree under a stand-in package name, so its relative imports still work."""
    try:
        return importlib.import_module(f"xg2jax.{name}")
    except Exception:
        if not (REPO_ROOT / "xg2jax" / f"{name}.py").exists():
            raise
        pkg_name = "_xg2jax_pure_src"
        if pkg_name not in sys.modules:
            pkg = types.ModuleType(pkg_name)
            pkg.__path__ = [str(REPO_ROOT / "xg2jax")]
            sys.modules[pkg_name] = pkg
        return importlib.import_module(f"{pkg_name}.{name}")


@dataclasses.dataclass
class BenchVocab:
    """One vocabulary as every engine sees it."""

    name: str
    loaded: object  # xg2jax.vocab_packages.LoadedVocab
    encoded_vocab: list  # str/bytes per id, as the tokenizer stores it
    vocab_type: int  # 0 RAW, 1 BYTE_FALLBACK, 2 BYTE_LEVEL
    decoded: list[bytes]  # bytes per id
    special_token_ids: list[int]
    stop_token_ids: list[int]
    add_prefix_space: bool

    @property
    def vocab_size(self) -> int:
        return len(self.encoded_vocab)


def load_vocab(name: str) -> BenchVocab:
    packages = _load_pure_module("vocab_packages")
    decoding = _load_pure_module("vocab_decoding")
    loaded = getattr(packages, VOCAB_LOADERS[name])()
    vocab_type = int(loaded.vocab_type)
    if hasattr(loaded, "decoded_vocab"):
        decoded = loaded.decoded_vocab()
    else:
        decoded = decoding.decode_vocab(
            loaded.encoded_vocab, loaded.vocab_type, add_prefix_space=bool(loaded.add_prefix_space)
        )
    decoded = [bytes(b) for b in decoded]
    return BenchVocab(
        name=name,
        loaded=loaded,
        encoded_vocab=list(loaded.encoded_vocab),
        vocab_type=vocab_type,
        decoded=decoded,
        special_token_ids=sorted(set(int(t) for t in loaded.special_token_ids)),
        stop_token_ids=sorted(set(int(t) for t in loaded.stop_token_ids)),
        add_prefix_space=bool(loaded.add_prefix_space),
    )


# ----------------------------------------------------------------------------------------------------------------
# Greedy longest-match tokenization
# ----------------------------------------------------------------------------------------------------------------

_BYTE_TOKEN_RE = re.compile(r"^<0x[0-9A-Fa-f]{2}>$")


class GreedyTokenizer:
    """Deterministic, tokenizer-independent tokenization: at each position take the longest token whose decoded
    bytes match the text there. Special tokens and empty tokens are never used. When several ids decode to the
    same bytes, the lowest id wins, except that byte-fallback tokens (``<0xNN>``) are used only for bytes that no
    ordinary token covers. This is not the model's own tokenization (BPE merges differ), but every id it produces
    decodes to exactly the text, which is all a mask check needs."""

    def __init__(self, vocab: BenchVocab):
        specials = set(vocab.special_token_ids)
        table: dict[bytes, int] = {}
        fallback: dict[bytes, int] = {}
        for tid, b in enumerate(vocab.decoded):
            if tid in specials or not b:
                continue
            enc = vocab.encoded_vocab[tid]
            is_byte_token = (
                vocab.vocab_type == 1 and isinstance(enc, str) and _BYTE_TOKEN_RE.match(enc) is not None
            )
            target = fallback if is_byte_token else table
            if b not in target:
                target[b] = tid
        for b, tid in fallback.items():
            table.setdefault(b, tid)
        self.table = table
        self.lengths = sorted({len(b) for b in table}, reverse=True)

    def encode(self, data: bytes) -> list[int]:
        out: list[int] = []
        pos, n = 0, len(data)
        table, lengths = self.table, self.lengths
        while pos < n:
            rest = n - pos
            for ln in lengths:
                if ln > rest:
                    continue
                tid = table.get(data[pos : pos + ln])
                if tid is not None:
                    out.append(tid)
                    pos += ln
                    break
            else:
                raise ValueError(f"byte {data[pos]:#x} at offset {pos} is covered by no token")
        return out


# ----------------------------------------------------------------------------------------------------------------
# Grammars
# ----------------------------------------------------------------------------------------------------------------

# EBNF grammars from llama.cpp's grammars/ folder (MIT; read at run time from ../shared/data, never copied).
EBNF_GRAMMAR_FILES = {
    "arithmetic": "arithmetic.gbnf",
    "chess": "chess.gbnf",
    "c": "c.gbnf",
    "list": "list.gbnf",
}
DEFAULT_EBNF_GRAMMARS = ("arithmetic", "chess", "c", "list")

# Hand-written valid strings for each EBNF grammar (written for this benchmark; checked against every engine at
# run time: a string an engine rejects is reported as a disagreement).
EBNF_STRINGS: dict[str, list[str]] = {
    # root ::= (expr "=" ws term "\n")+ : an expression, then one term; spaces only where ident/num/")" end.
    "arithmetic": [
        "x = 3\n",
        "(a+b)*12 = c_1\n",
        "price*quantity+tax_rate*price = total\n(alpha-beta)/(gamma+delta) = ratio\n",
        "m*x1+b = y1\nm*x2+b = y2\n(y2-y1)/(x2-x1) = slope\n",
        "(width*height)/2 = area\n2*(width+height) = perimeter\nw*w+h*h = (diag*diag)\n",
        "value_0*weight_0+value_1*weight_1+value_2*weight_2+value_3*weight_3 = acc\n",
        "1 = n0\nn0*2 = n1\nn1*2+1 = n2\n(n2-n1)*(n2+n1)/7 = n3\n((n3+n2)*(n1+n0))/42 = n4\n",
    ],
    # root ::= "1. " move " " move "\n" ([1-9] [0-9]? ". " move " " move "\n")+
    "chess": [
        "1. e4 e5\n2. Nf3 Nc6\n3. Bb5 a6\n4. Ba4 Nf6\n5. O-O Be7\n6. Re1 b5\n7. Bb3 d6\n8. c3 O-O\n",
        "1. d4 d5\n2. c4 e6\n3. Nc3 Nf6\n4. Bg5 Be7\n5. e3 O-O\n6. Nf3 h6\n7. Bh4 b6\n8. cxd5 Nxd5\n"
        "9. Bxe7 Qxe7\n10. Nxd5 exd5\n11. Rc1 Be6\n12. Qa4 c5\n",
        "1. e4 c5\n2. Nf3 d6\n3. d4 cxd4\n4. Nxd4 Nf6\n5. Nc3 a6\n6. Be3 e5\n7. Nb3 Be6\n8. f3 Be7\n"
        "9. Qd2 O-O\n10. O-O-O Nbd7\n11. g4 b5\n12. g5 b4\n13. Ne2 Ne8\n14. f4 a5\n15. f5 a4\n",
        "1. f3 e5\n2. g4 Qh4#\n",
        "1. e4 e5\n2. Qh5 Nc6\n3. Bc4 Nf6\n4. Qxf7# a6\n",
        "1. d4 Nf6\n2. c4 g6\n3. Nc3 Bg7\n4. e4 d6\n5. f3 O-O\n6. Be3 e5\n7. d5 Nh5\n8. Qd2 f5\n"
        "9. O-O-O a6\n10. Bd3 c5\n11. dxc6 bxc6\n12. Nge2 Rb8\n13. c5 d5\n14. exd5 cxd5\n15. Nxd5 e4\n"
        "16. fxe4 fxe4\n17. Bxe4 Rf7\n18. g4 Nf6\n19. Nxf6+ Bxf6\n20. c6 Qa5\n21. a3 Be6\n22. c7 Rxc7\n",
        "1. e4 d5\n2. exd5 Qxd5\n3. Nc3 Qa5\n4. d4 Nf6\n5. Nf3 Bf5\n6. Bc4 e6\n7. Bd2 c6\n8. Nd5 Qd8\n"
        "9. Nxf6+ gxf6\n10. Bb3 Nd7\n11. Qe2 Qc7\n12. O-O-O O-O-O\n13. Rhe1 Rg8\n",
        "1. a4 h5\n2. a5 h4\n3. a6 h3\n4. axb7 hxg2\n5. bxa8=Q gxh1=N\n6. Qxb8 Rxh2\n",
    ],
    # C-like: statements follow each other without separators; ws ::= [ \t\n]+ is required where it appears
    # (even inside a parenthesised expression).
    "c": [
        "int main(){return 0;}",
        "int add(int a){int b = a+1;return b*2;}",
        "int square(int x){return x*x;}float half(float y){return y/2;}",
        "int sum(int n){int s = 0;for(int i = 0; i<n; i = i+1){s = s+i;}return s;}",
        "int fib(int n){if(n<2){return n;}return fib(n-1)+fib(n-2);}",
        "int gcd(int a){int b = 36;while(b!=0){int t = b;b = a-( a/b )*b;a = t;}return a;}",
        "char grade(int score){// map a score to a letter\nif(score>=90){return 65;}else{"
        "if(score>=80){return 66;}else{return 70;}}}",
        "int main(){/* count to ten */int i = 0;while(i<10){print (i, i*i);i = i+1;}"
        "for(int j = 10; j>0; j = j-1){total = total+j*j;}return total;}"
        "float mean(int n){float acc = 0;for(int k = 0; k<n; k = k+1){acc = acc+value(k);}return acc/n;}",
    ],
    # root ::= item+ ; item ::= "- " [^\r\n\x0b\x0c\x85\u2028\u2029]+ "\n"
    "list": [
        "- buy milk\n- call Alice about the quarterly report\n- water the plants\n",
        "- café crème ☕\n- naïve résumé\n- 東京へ行く\n- ¡Hola, señor!\n",
        "- [x] write tests\n- [ ] ship v0.1 (target: Friday)\n- {\"json\": true}\n- 100% done? not yet...\n",
    ],
}


def read_ebnf_grammar(name: str, data_dir: Path) -> str:
    path = Path(data_dir) / "llama-cpp-grammars" / "grammars" / EBNF_GRAMMAR_FILES[name]
    if not path.exists():
        raise FileNotFoundError(
            f"{path} is missing: the EBNF grammars are read from the shared data folder (pass --data-dir)"
        )
    return path.read_text(encoding="utf-8")


# ----------------------------------------------------------------------------------------------------------------
# JSON instances from JSONSchemaBench maskbench
# ----------------------------------------------------------------------------------------------------------------


def _render_json(data, style: int) -> Optional[str]:
    try:
        if style == 0:
            return json.dumps(data, ensure_ascii=False, allow_nan=False)
        return json.dumps(data, ensure_ascii=False, allow_nan=False, indent=2)
    except (ValueError, TypeError):
        return None


def json_instances(
    n: int,
    data_dir: Path,
    *,
    seed: int = 0,
    min_bytes: int = 40,
    max_bytes: int = 3000,
) -> list[tuple[str, str]]:
    """Pick ``n`` valid instances from the maskbench subsets, round-robin over subsets (sorted by name), each pick
    a seeded random valid instance of a random schema. Only objects and arrays (the builtin JSON grammar's roots),
    serialised with ``json.dumps`` (even picks compact ``", "``/``": "``, odd picks ``indent=2``), between
    ``min_bytes`` and ``max_bytes`` long. Returns (label, text) pairs."""
    folder = Path(data_dir) / "jsonschemabench" / "maskbench"
    files = sorted(folder.glob("*.jsonl.gz"))
    if not files:
        raise FileNotFoundError(f"no maskbench files in {folder} (pass --data-dir)")
    rng = random.Random(seed)
    pools: dict[str, list[tuple[str, object]]] = {}
    for f in files:
        subset = f.name[: -len(".jsonl.gz")]
        pool = []
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                for k, t in enumerate(row.get("tests") or []):
                    if t.get("valid") and isinstance(t.get("data"), (dict, list)):
                        pool.append((f"{subset}/{row.get('name')}#{k}", t["data"]))
        if pool:
            pools[subset] = pool
    subsets = sorted(pools)
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    attempts = 0
    while len(out) < n and attempts < 200 * max(n, 1):
        subset = subsets[attempts % len(subsets)]
        attempts += 1
        label, data = rng.choice(pools[subset])
        text = _render_json(data, len(out) % 2)
        if text is None or label in seen or not (min_bytes <= len(text.encode("utf-8")) <= max_bytes):
            continue
        seen.add(label)
        out.append((label, text))
    return out


# ----------------------------------------------------------------------------------------------------------------
# Workload assembly
# ----------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Workload:
    grammar: str  # "json" or an EBNF grammar name
    kind: str  # "builtin_json" or "ebnf"
    text: Optional[str]  # grammar text (EBNF), None for builtin JSON
    strings: list[tuple[str, str]]  # (label, valid string)


def build_workloads(
    grammars: Sequence[str],
    data_dir: Path,
    n_json: int,
    n_ebnf: Optional[int] = None,
    seed: int = 0,
) -> list[Workload]:
    out = []
    for g in grammars:
        if g == "json":
            out.append(Workload("json", "builtin_json", None, json_instances(n_json, data_dir, seed=seed)))
        else:
            strings = [(f"{g}#{i}", s) for i, s in enumerate(EBNF_STRINGS[g])]
            if n_ebnf is not None:
                strings = strings[:n_ebnf]
            out.append(Workload(g, "ebnf", read_ebnf_grammar(g, data_dir), strings))
    return out


def default_data_dir() -> Path:
    return Path(os.environ.get("XG2JAX_DATA_DIR", DEFAULT_DATA_DIR))


def xg2jax_revision():
    """The revision of the checkout the imported xg2jax comes from (short commit, "+dirty" with uncommitted changes),
    ``$XG2JAX_REVISION`` when set, or None. Benchmarks record it at the start and at the end of a run."""
    import os
    import subprocess

    if os.environ.get("XG2JAX_REVISION"):
        return os.environ["XG2JAX_REVISION"]
    try:
        import xg2jax

        src = Path(xg2jax.__file__).resolve().parent
        rev = subprocess.run(["git", "-C", str(src), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(src), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return (rev + ("+dirty" if dirty else "")) or None
    except Exception:
        return None
