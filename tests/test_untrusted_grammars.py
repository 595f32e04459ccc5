"""Grammars and usage shaped to break the engine, as an attacker would send them to a serving process.

Each case runs in a fresh subprocess under a time limit and an address-space limit, so a regression
(a stack overflow, a fill that never returns, runaway memory) fails the one test instead of killing
or hanging the whole run. Every case must end in a precise ``ValueError`` naming the limit that
applies, or in a bounded, exact result. The limits are ``xg2jax.Limits`` (docs/limits.md lists each
case with its limit and cost).
"""

from __future__ import annotations

import textwrap
import threading

import pytest

import xg2jax as xgr
from xg2jax.testing import bitmask_to_ids

import bounded_subprocess  # tests/ is on sys.path under pytest (rootdir-relative import)
import real_vocabularies  # tests/ is on sys.path under pytest (rootdir-relative import)

TIME_LIMIT_S = 60
MEMORY_LIMIT_BYTES = 3 << 30  # address space, not resident memory: jax-free imports fit well within it

PRELUDE = """
import xg2jax as xgr
from xg2jax.testing import bitmask_to_ids, oracle_bitmask
def tok(*pieces):
    return xgr.TokenizerInfo([p.encode() for p in pieces] + [b"<eos>"], stop_token_ids=[len(pieces)])
def error_of(f):
    try:
        f()
    except ValueError as e:
        return str(e)
    raise AssertionError("no error")
"""


def run_bounded(body: str) -> str:
    """Runs ``body`` (after PRELUDE) in a subprocess under the limits; returns its stdout."""
    return bounded_subprocess.run_bounded(PRELUDE + textwrap.dedent(body), time_limit_s=TIME_LIMIT_S,
                                          memory_limit_bytes=MEMORY_LIMIT_BYTES)


CASES = {
    # 10^4 nested groups: the parser recursed once per group and overflowed the stack.
    "nested_groups": """
        n = 10_000
        with xgr.max_recursion_depth(1000):
            e = error_of(lambda: xgr.Grammar.from_ebnf("root ::= " + "(" * n + '"a"' + ")" * n))
        assert e.startswith("EBNF parser error at line 1, column 1010: groups nest more than 1000 deep (Limits.max_nesting_depth)"), e
        excerpt, caret = e.split("\\n")[1:]
        assert len(excerpt) < 110 and excerpt.startswith("  ..."), excerpt  # a window of a 20 kB line
        assert excerpt[len(caret) - 1] == "(", (excerpt, caret)
        print("ok")
    """,
    # TagDispatch: an Aho-Corasick automaton past the state limit, a chain of 2x10^4 dispatching rules, and a
    # long free text of near-miss triggers.
    "tag_dispatch": """
        pairs = ", ".join(f'("<tool_{i}>", r)' for i in range(100_000))
        e = error_of(lambda: xgr.GrammarCompiler(tok("a")).compile_grammar(f'root ::= TagDispatch({pairs})\\nr ::= "x"'))
        assert "a TagDispatch(...) automaton would exceed 524288 states (Limits.max_automaton_states" in e, e
        n = 20_000
        text = "".join(f'r{i} ::= TagDispatch(("a", r{i + 1}), loop_after_dispatch=false)\\n' for i in range(n))
        text = "root ::= r0\\n" + text + f'r{n} ::= "b"\\n'
        m = xgr.GrammarMatcher(xgr.GrammarCompiler(tok("a", "b", "<to")).compile_grammar(text))
        assert m.accept_string("a" * 300 + "b") and m.is_completed()
        c = xgr.GrammarCompiler(tok("a", "<to", "ol_", "<tool_1>", "x")).compile_grammar(
            'root ::= TagDispatch(("<tool_1>", r), excludes=("<tool_2"))\\nr ::= "x"')
        m = xgr.GrammarMatcher(c)
        for _ in range(5000):
            assert m.accept_token(1) and m.accept_token(2)
        bm = xgr.allocate_token_bitmask(1, 6)
        m.fill_next_token_bitmask(bm)
        assert set(bitmask_to_ids(bm[0], 6)) == set(bitmask_to_ids(oracle_bitmask(m), 6))
        print("ok")
    """,
    # 3x10^4 stacked `?` once parsed, then overflowed the stack in printing and compiling: a second quantifier is
    # now an error at once; repetitions nested through groups are bounded by the nesting limit.
    "stacked_operators": """
        e = error_of(lambda: xgr.Grammar.from_ebnf('root ::= "a"' + "?" * 30_000))
        assert "line 1, column 14: Expect element, but got ?" in e, e
        nested = '"a"'
        for _ in range(60):
            nested = "(" + nested + ")?"
        c = xgr.GrammarCompiler(tok("a"), limits=xgr.Limits(max_nesting_depth=50))
        e = error_of(lambda: c.compile_grammar("root ::= " + nested))
        assert "groups nest more than 50 deep (Limits.max_nesting_depth)" in e, e
        print("ok")
    """,
    # Within max_recursion_depth (10000 by default, as xgrammar) but deeper than a thread's stack holds: the recursive
    # passes check the stack they have left, so a 256 KB thread gets a LimitError, not a crash.
    "deeper_than_the_thread_stack": """
        import threading
        text = "root ::= " + "(" * 9000 + '"a"' + ")?" * 9000
        results = {}
        def run(key):
            try:
                results[key] = xgr.GrammarMatcher(xgr.GrammarCompiler(tok("a", "b")).compile_grammar(text)).accept_string("a")
            except xgr.LimitError as e:
                results[key] = str(e)
        threading.stack_size(256 * 1024)
        t = threading.Thread(target=run, args=("small",))
        t.start()
        t.join()
        threading.stack_size(0)
        assert "needs more stack than this thread has left" in results["small"], results
        run("main")  # 8 MB: room for it, except in a sanitizer build, where frames are larger
        assert results["main"] is True or "needs more stack" in results["main"], results
        print("ok")
    """,
    # 4x10^4 chained rules overflowed the stack while normalising: now linear, and exact.
    "rule_chain": """
        n = 40_000
        text = "root ::= r0\\n" + "".join(f'r{i} ::= "a" r{i + 1}\\n' for i in range(n)) + f'r{n} ::= "b"\\n'
        t = tok("a", "b", "ab")
        m = xgr.GrammarMatcher(xgr.GrammarCompiler(t).compile_grammar(text))
        assert not m.accept_token(1)
        assert m.accept_string("a" * (n - 1))
        bm = xgr.allocate_token_bitmask(1, t.vocab_size)
        m.fill_next_token_bitmask(bm)
        assert list(bitmask_to_ids(bm[0], t.vocab_size)) == [0, 2], bitmask_to_ids(bm[0], t.vocab_size)
        assert m.accept_token(2) and m.is_completed()
        print("ok")
    """,
    # A unit cycle with a token that reads past the sentence: the fill never returned.
    "unit_cycle": """
        t = tok("a", "x", "ax", "axy", "y")
        for grammar in ['root ::= root | "ax"', 'root ::= b | "ax"\\nb ::= c | "x"\\nc ::= root | b "a"']:
            m = xgr.GrammarMatcher(xgr.GrammarCompiler(t).compile_grammar(grammar))
            for step in range(3):
                bm = xgr.allocate_token_bitmask(1, t.vocab_size)
                m.fill_next_token_bitmask(bm)
                allowed = list(bitmask_to_ids(bm[0], t.vocab_size))
                assert (bm[0] == oracle_bitmask(m)).all(), (grammar, step, allowed)
                if not allowed or not m.accept_token(allowed[0]):
                    break
        print("ok")
    """,
    # A random 269-character regex: nested bounded repetitions of ambiguous bodies. Its DFA states stay under
    # the state limit while their subsets grew to 4 GiB (std::bad_alloc after minutes): Limits.max_subset_members.
    "nested_bounded_repetitions": r"""
        import time
        p = (r"(\d)*([0-9]){3}((((\d){1,20}((ab|ba)){0,50}[a-z]a){1,20}){0,50}|[a-z])(ab|ba)((((\w[^ab][0-9]){1,20})"
             r"{1,20}){10,}|(((ab|ba)){10,}|(\d){10,}|(.)?)((ab|ba)\w[0-9]\d){10,}(([0-9]){1,20})+(a)+[0-9])((((a[a-z]ab)*)"
             r"{2,5})?|a)(((a){2,5}b)*)?[^ab][^ab](((\d(\w\d)*)?){0,50}|\d)")
        cases = [(xgr.Limits(max_subset_members=1 << 20), 5), (xgr.Limits(), 40)]
        if "asan" in os.environ.get("LD_PRELOAD", ""):  # several times slower: the small limit only
            cases = cases[:1]
        for limits, seconds in cases:
            t = time.perf_counter()
            try:
                xgr.GrammarCompiler(tok("a", "b", "0"), cache_enabled=False, limits=limits).compile_regex(p)
                raise AssertionError("compiled")
            except xgr.LimitError as e:
                assert "(Limits.max_subset_members)" in str(e), e
            assert time.perf_counter() - t < seconds, (limits, time.perf_counter() - t)
        print("ok")
    """,
    # `root ::= root root | "a"` grows its work per byte without bound: a LimitError, then sticky.
    "ambiguous_work": """
        c = xgr.GrammarCompiler(tok("a"), limits=xgr.Limits(max_work_per_byte=50_000))
        m = xgr.GrammarMatcher(c.compile_grammar('root ::= root root | "a"'))
        n = 0
        try:
            while n < 10_000:
                assert m.accept_token(0)
                n += 1
        except xgr.LimitError as e:
            assert isinstance(e, ValueError)
            assert "(Limits.max_work_per_byte)" in str(e), e
        assert 10 < n < 10_000, n
        bm = xgr.allocate_token_bitmask(1, 2)
        try:
            m.fill_next_token_bitmask(bm)
            raise AssertionError("a failed matcher filled a mask")
        except xgr.LimitError as e:
            assert "stays failed until reset()" in str(e), e
        m.reset()
        assert m.accept_token(0)
        print("ok")
    """,
    # The matcher_ops fuzzer's timeout: a first fill built mask entries for hundreds of states of a grammar
    # whose unrolled nullable repetitions give states hundreds of rule edges; every byte stayed under
    # max_work_per_byte (which did not count rule edges then) and the fill ran for minutes. Rule edges count
    # now, and Limits.max_fill_work bounds everything one fill parses.
    "fill_of_costly_entries": """
        import time
        t = tok(" ", '"', ",", "a", "b", "c", "abc", "ab", "bc", "abcabc", "cabc", "ca", "cab", "abca", "bca")
        for g in ['root ::= br\\nbr ::= br br | (root{0,34} | "abc"){1,31} | ""',
                  'root ::= (root | "") ar\\nar ::= br | ""\\nbr ::= br br | (root{0,34} | br{3,6} | ar "abc" ar){1,31} | ""']:
            m = xgr.GrammarMatcher(xgr.GrammarCompiler(t, cache_enabled=False).compile_grammar(g))
            bm = xgr.allocate_token_bitmask(1, t.vocab_size)
            start = time.monotonic()
            e = error_of(lambda: m.fill_next_token_bitmask(bm))
            assert "(Limits.max_fill_work" in e or "(Limits.max_work_per_byte)" in e, e
            assert time.monotonic() - start < 20, time.monotonic() - start
            assert "stays failed until reset()" in error_of(lambda: m.accept_token(4))
        print("ok")
    """,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_is_bounded(name):
    assert run_bounded(CASES[name]).strip().endswith("ok")


def test_unit_cycle_on_a_real_vocabulary():
    """The fill that never returned on Qwen2's vocabulary: now the exact mask, the tokens that are
    non-empty prefixes of "ax"."""
    loaded = real_vocabularies.require("qwen2")
    tok = xgr.TokenizerInfo.from_loaded_vocab(loaded)
    m = xgr.GrammarMatcher(xgr.GrammarCompiler(tok).compile_grammar('root ::= root | "ax"'))
    bm = xgr.allocate_token_bitmask(1, tok.vocab_size)
    m.fill_next_token_bitmask(bm)
    specials = set(tok.special_token_ids)
    expected = sorted(i for i, b in enumerate(tok.decoded_vocab) if b and b"ax".startswith(b) and i not in specials)
    assert list(bitmask_to_ids(bm[0], tok.vocab_size)) == expected


def test_a_matcher_shared_by_threads_raises_and_stays_consistent():
    """Many threads accept tokens on one matcher at once. An overlapping call raises a precise
    ValueError and changes nothing, so the matcher ends having accepted exactly the calls that
    returned True (whatever the interleaving), and the process lives."""
    tok = xgr.TokenizerInfo([bytes([c]) for c in range(97, 123)])
    m = xgr.GrammarMatcher(xgr.GrammarCompiler(tok).compile_grammar("root ::= [a-z]*"))
    start = threading.Barrier(4, timeout=5)
    accepted = [0] * 4
    errors: list[str] = []

    def work(k):
        start.wait()
        for _ in range(3000):
            try:
                accepted[k] += bool(m.accept_token(0))
            except ValueError as e:
                errors.append(str(e))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive()
    msg = ("GrammarMatcher.accept_token: called while another thread is using the same matcher; a GrammarMatcher "
           "is not thread-safe (give each thread its own, e.g. with fork())")
    assert all(e == msg for e in errors), set(errors) - {msg}
    assert m._handle.num_accepted_tokens == sum(accepted)
    assert sum(accepted) + len(errors) == 4 * 3000


def test_limits_are_validated():
    tok = xgr.TokenizerInfo([b"a"])
    for field in ("max_items_per_set", "max_work_per_byte", "max_automaton_states", "max_subset_members",
                  "max_fill_work"):
        with pytest.raises(ValueError, match="every limit must be positive"):
            xgr.GrammarCompiler(tok, limits=xgr.Limits(**{field: 0}))
    with pytest.raises(ValueError, match="every limit must be positive"):  # (0 follows the process-wide depth)
        xgr.GrammarCompiler(tok, limits=xgr.Limits(max_nesting_depth=-1))
    with pytest.raises(TypeError, match="limits must be an xg2jax.Limits"):
        xgr.GrammarCompiler(tok, limits={"max_nesting_depth": 3})
    with pytest.raises(TypeError):
        xgr.Limits(5)  # keyword-only
    assert xgr.GrammarCompiler(tok).limits.max_nesting_depth == 10000
    assert xgr.Limits(max_subset_members=7).max_subset_members == 7
    assert "max_subset_members=16777216" in repr(xgr.Limits())


def test_automaton_size_is_a_limit_error():
    tok = xgr.TokenizerInfo([b"a"])
    compiler = xgr.GrammarCompiler(tok, cache_enabled=False, limits=xgr.Limits(max_automaton_states=10))
    with pytest.raises(xgr.LimitError, match=r"would exceed 10 states \(Limits.max_automaton_states"):
        compiler.compile_grammar('root ::= "abcdefghijklmnopqrstuvwxyz"')


def test_jump_forward_string_is_cut_and_leaves_the_matcher_unchanged():
    """`"ab"{1000000}` forces two million bytes: the answer stops at 64 KiB (one parser set per byte is held
    while it is computed), and asking again after accepting it goes on."""
    m = xgr.GrammarMatcher(xgr.GrammarCompiler(xgr.TokenizerInfo([b"a", b"b"]), cache_enabled=False)
                           .compile_grammar('root ::= "ab"{1000000}'))
    first = m.find_jump_forward_string()
    assert first == "ab" * (1 << 15)
    assert m.find_jump_forward_string() == first  # nothing was consumed
    assert m.accept_string(first)
    assert m.find_jump_forward_string() == first


@pytest.mark.parametrize("ebnf,text,ok", [
    ('root ::= ("b"?){1000000}', "b" * 5000, True),
    ('root ::= "[" ( | "bc"){5,10000} "]"', "[]", True),
    ('root ::= "[" ( | "bc"){5,10000} "]"', "[" + "bc" * 10000 + "]", True),
    ('root ::= "[" ( | "bc"){5,10000} "]"', "[" + "bc" * 10001 + "]", False),
])
def test_counted_repetition_of_an_optional_body_is_linear(ebnf, text, ok):
    """The fuzzer's quadratic case: `X?{m,n}` and `( | X){m,n}` are `X{0,n}`, counted, not unrolled into n
    nullable copies (5.6 s for ("b"?){10000} when unrolled; now instant at any bound)."""
    import time

    tok = xgr.TokenizerInfo([b"</s>", b"b", b"bc", b"[", b"]"], stop_token_ids=[0])
    t = time.monotonic()
    compiled = xgr.GrammarCompiler(tok, cache_enabled=False).compile_grammar(ebnf)
    assert time.monotonic() - t < 2  # a bound, not a benchmark (milliseconds here)
    m = xgr.GrammarMatcher(compiled)
    assert (m.accept_string(text) and m.is_completed()) == ok


def test_fill_work_limit_is_sticky_and_leaves_the_parse_unchanged():
    """An ambiguous grammar whose fill checks uncertain tokens against the live parser: with a tiny
    ``max_fill_work`` the fill raises LimitError naming it, the matcher keeps the error until ``reset()``, and
    after the reset the same steps run normally under the default limits' twin."""
    vocab = ["</s>", "a", "aa", "a)", "))", "(", "(a", "a))", ")", "b", "ab", "ba"]
    tok = xgr.TokenizerInfo(vocab, stop_token_ids=[0])
    grammar = 'root ::= root root | "a" | "(" root ")"'
    tight = xgr.GrammarMatcher(xgr.GrammarCompiler(tok, limits=xgr.Limits(max_fill_work=1)).compile_grammar(grammar))
    roomy = xgr.GrammarMatcher(xgr.GrammarCompiler(tok).compile_grammar(grammar))
    bm = xgr.allocate_token_bitmask(1, tok.vocab_size)
    for m in (tight, roomy):
        assert m.accept_string("((a")
    with pytest.raises(xgr.LimitError, match=r"Limits.max_fill_work"):
        tight.fill_next_token_bitmask(bm)
    with pytest.raises(xgr.LimitError, match=r"Limits.max_fill_work"):
        tight.accept_token(1)  # sticky
    tight.reset()
    assert tight.accept_string("((a")
    roomy.fill_next_token_bitmask(bm)
    assert roomy.accept_token(vocab.index("a))"))


def _nested(depth: int) -> str:
    """A rule whose body nests `depth` levels (each group with a `?` adds one; the literal is level 1)."""
    body = '"a"'
    for _ in range(depth - 1):
        body = f"({body})?"
    return f"root ::= {body}"


def test_process_wide_recursion_depth():
    """xgrammar's get/set_max_recursion_depth and max_recursion_depth(): the nesting depth every Limits follows
    unless it sets its own, read when a grammar is parsed or compiled."""
    assert xgr.get_max_recursion_depth() == 10000  # xgrammar's default
    tok = xgr.TokenizerInfo([b"a"])
    deep = _nested(60)
    xgr.Grammar.from_ebnf(deep)
    compiler = xgr.GrammarCompiler(tok)  # made before the change: its default limits follow the setting too
    own = xgr.GrammarCompiler(tok, limits=xgr.Limits(max_nesting_depth=100))
    with xgr.max_recursion_depth(50):
        assert xgr.get_max_recursion_depth() == 50
        assert xgr.Limits().max_nesting_depth == 50
        assert compiler.limits.max_nesting_depth == 50
        with pytest.raises(xgr.InputError, match="groups nest more than 50 deep"):
            xgr.Grammar.from_ebnf(deep)
        with pytest.raises(xgr.InputError, match="groups nest more than 50 deep"):
            compiler.compile_grammar(deep)
        xgr.Grammar.from_ebnf(_nested(50))
        assert own.limits.max_nesting_depth == 100  # a Limits with its own depth keeps it
        own.compile_grammar(deep)
    assert xgr.get_max_recursion_depth() == 10000
    compiler.compile_grammar(deep)
    xgr.Grammar.from_ebnf(_nested(2000))
    try:
        xgr.set_max_recursion_depth(1000)
        assert xgr.get_max_recursion_depth() == 1000
        with pytest.raises(xgr.InputError, match="groups nest more than 1000 deep"):
            xgr.Grammar.from_ebnf(_nested(2000))
    finally:
        xgr.set_max_recursion_depth(10000)


@pytest.mark.parametrize("bad", [0, -1, 10001, 100000000, 2**70])
def test_process_wide_recursion_depth_is_bounded(bad):
    with pytest.raises(xgr.InputError, match="max recursion depth must be between 1 and 10000") as e:
        xgr.set_max_recursion_depth(bad)
    assert isinstance(e.value, RuntimeError)  # as xgrammar raises
    assert xgr.get_max_recursion_depth() == 10000
    with pytest.raises(TypeError, match="expected an int"):
        xgr.set_max_recursion_depth(True)
    with pytest.raises(xgr.InputError):
        with xgr.max_recursion_depth(bad):
            pass
    assert xgr.get_max_recursion_depth() == 10000
