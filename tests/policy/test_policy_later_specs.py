"""The option tables made when first used (policy/programs.py ``Later``, ``Specs``): the same specs, the same
decisions, made once even when threads first use one at once, and none made by importing the gate."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tether.policy import knowledge, programs
from tether.policy.programs import Later, Role, Spec, Specs, later, spec

SRC = str(Path(programs.__file__).resolve().parents[2])
CORPUS = Path(__file__).resolve().parents[1] / "data" / "shell_corpus.yaml"


def tables() -> list[tuple[str, Specs]]:
    """Every lazy table of knowledge, with the tables nested in their specs' subcommands."""
    out: list[tuple[str, Specs]] = [("SPECS", knowledge.SPECS), ("WRAPPER_OPTIONS", knowledge.WRAPPER_OPTIONS)]
    i = 0
    while i < len(out):
        where, table = out[i]
        for name, s in table.items():
            if isinstance(s.subcommands, Specs):
                out.append((f"{where}[{name}]", s.subcommands))
        i += 1
    return out


def test_every_kind_known_before_its_spec_is_the_made_specs_kind() -> None:
    assert len(tables()) >= 5  # SPECS, WRAPPER_OPTIONS, git's, ruff's, git bisect's
    for where, table in tables():
        kinds = dict(table.kinds())
        assert list(kinds) == list(table), where
        for name, s in table.items():
            assert isinstance(s, Spec)
            assert kinds[name] == s.kind, f"{where}[{name}]"


def test_a_table_is_the_spec_its_row_names() -> None:
    specs = knowledge.SPECS
    assert specs["grep"] is specs["egrep"] is specs["fgrep"]  # one row, one spec, as when they were built eagerly
    assert specs["git"] is knowledge.GIT
    assert specs["srm"].recursive == frozenset({"*"}) and specs["shred"].recursive == frozenset()
    assert specs["srm"].values == specs["shred"].values and specs["srm"].kind == specs["shred"].kind == "none"
    assert specs.get("no-such-program") is None and "no-such-program" not in specs
    assert specs.get("no-such-program", specs["cat"]) is specs["cat"]
    with pytest.raises(KeyError):
        specs["no-such-program"]
    assert knowledge.WRAPPER_OPTIONS.get("env") is knowledge.WRAPPER_OPTIONS["env"]
    # a later spec is exactly what spec() makes of the same arguments
    args = ("-a -n: --color= --all --max-count:", {"roles": {"-o": Role.WRITE}, "code": {"-x": "x"}, "kind": "build"})
    made, now = later(args[0], **args[1]).made(), spec(args[0], **args[1])  # type: ignore[arg-type]
    assert [getattr(made, f) for f in Spec.__dataclass_fields__] == [getattr(now, f) for f in Spec.__dataclass_fields__]


def test_threads_first_using_a_spec_at_once_get_one_spec_made_once() -> None:
    made: list[Spec] = []
    started = threading.Event()

    def make() -> Spec:
        started.set()
        time.sleep(0.2)  # a slow first making: every other thread arrives while it runs
        made.append(Spec(flags=frozenset({"-a"})))
        return made[-1]

    one = Later(make, "read")
    variant = one.but(recursive=frozenset({"*"}))
    table = Specs({"a": one, "b": one, "v": variant})
    barrier = threading.Barrier(8)
    got: list[Spec] = []

    def use(name: str) -> None:
        barrier.wait()
        got.append(table[name] if name != "b" else table.get(name, Spec()))

    threads = [threading.Thread(target=use, args=("ab"[i % 2] if i < 6 else "v",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert started.is_set() and len(made) == 1, "made once"
    base = [s for s in got if s.recursive != frozenset({"*"})]
    assert len(base) == 6 and all(s is made[0] for s in base), "every thread got the one spec, whole"
    assert {id(s) for s in got if s not in base} == {id(table["v"])}
    assert table["v"].flags == frozenset({"-a"}) and table["v"].recursive == frozenset({"*"})


def test_a_making_that_fails_is_made_by_the_next_use() -> None:
    calls: list[int] = []

    def make() -> Spec:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("first")
        return Spec()

    table = Specs({"x": Later(make, "read")})
    with pytest.raises(RuntimeError):
        table["x"]
    assert table["x"] is table.get("x") and len(calls) == 2


def run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=SRC)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


COUNT = """
import sys
sys.path.insert(0, {src!r})
from tether.policy import programs
made = []
real = programs.spec
def counted(*a, **kw):
    made.append(a[:1])
    return real(*a, **kw)
programs.spec = counted
"""


def test_importing_the_shell_gate_makes_only_gits_own_table() -> None:
    code = COUNT.format(src=SRC) + "import tether.policy.shellgate\nprint(len(made))"
    assert run(code).split() == ["1"]  # GIT itself: the shell gate and the profile read it at import


def test_the_daemon_makes_every_table_at_its_start() -> None:
    """A cold call makes the tables its command reads; the daemon (``Collections.take``) makes all of them with
    its other imports, so no request makes one, and they are frozen with the rest."""
    code = COUNT.format(src=SRC) + (
        "from tether.hooks.daemon import Collections\nfrom tether.policy import knowledge\n"
        "taking = Collections(); taking.take(); taking.give_back()\nn = len(made)\n"
        "knowledge.make_all()\nfor t in (knowledge.SPECS, knowledge.WRAPPER_OPTIONS): [t[k] for k in t]\n"
        "print(n, len(made))"
    )
    n, after = run(code).split()
    assert int(n) > 90 and n == after  # every spec() row (96 today), and none made later


def test_real_tables_raced_in_a_fresh_process_are_one_spec() -> None:
    code = COUNT.format(src=SRC) + (
        "import threading\nfrom tether.policy import knowledge\n"
        "b = threading.Barrier(6); got = []\n"
        "def use(n):\n    b.wait(); got.append(knowledge.SPECS.get(n) if n != 'sed' else knowledge.SPECS[n])\n"
        "ts = [threading.Thread(target=use, args=(n,)) for n in ('grep', 'egrep', 'fgrep', 'sed', 'sed', 'grep')]\n"
        "[t.start() for t in ts]; [t.join() for t in ts]\n"
        "print(len(made) - 1, len({id(s) for s in got}))"
    )
    assert run(code).split() == ["2", "2"]  # grep's and sed's rows, each made once


def corpus_workspace(tmp_path: Path) -> None:
    """The directories and script the corpus's commands name."""
    for d in ("src", "scripts", "build", "tests"):
        (tmp_path / d).mkdir()
    (tmp_path / "scripts" / "run.sh").write_text("#!/bin/sh\necho ok\n")


def test_decisions_are_the_same_made_lazily_or_all_at_once(tmp_path: Path) -> None:
    """The corpus decided in a fresh process that makes each table when a command first needs it, and in one
    that made every table first: the same decisions, rules and reasons."""
    corpus_workspace(tmp_path)
    decide = (
        "import json, sys, yaml\nsys.path.insert(0, {src!r})\nfrom pathlib import Path\n"
        "from tether.policy import knowledge\nfrom tether.policy.gate import shell_decision\n"
        "{first}\n"
        "cases = yaml.safe_load(Path({corpus!r}).read_text())['cases']\n"
        "print(json.dumps([shell_decision(c['command'], workspace=Path({ws!r})).to_dict() for c in cases]))"
    )
    every = "assert knowledge.make_all() == 5"
    fill = {"src": SRC, "corpus": str(CORPUS), "ws": str(tmp_path)}
    pid = re.compile(r"/proc/\d+/")  # the corpus reads its own process's files ($$)
    lazily = json.loads(pid.sub("/proc/PID/", run(decide.format(first="", **fill))))
    at_once = json.loads(pid.sub("/proc/PID/", run(decide.format(first=every, **fill))))
    assert len(lazily) >= 150 and lazily == at_once


def test_patterns_only_some_commands_need_are_compiled_at_their_first_use() -> None:
    """A command that needs none of them (a grep) compiles none; sed, pip, parallel, inline code, an envelope's
    rule conditions and a receipt's comparison compile theirs when they first read it, with the same answers as ever
    (a rule's ``Tool(specifier)`` compiles none at all: tests/policy/test_rule_split.py)."""
    code = (
        f"import sys\nsys.path.insert(0, {SRC!r})\nfrom pathlib import Path\n"
        "from tether.control import receipts\nfrom tether.policy import inline, profile, rules, shell\n"
        "from tether.policy.gate import shell_decision\n"
        "lazy = [profile._safe_sed, profile._vcs_or_url, shell._parallel_replacement, inline._reverse,\n"
        "        rules._tainted_condition, receipts._volatile]\n"
        "sizes = lambda: [f.cache_info().currsize for f in lazy]\n"
        "print(sizes()); shell_decision('grep -n needle3 src/app.py', workspace=Path('.')); print(sizes())\n"
        "shell_decision(\"sed -n 's/a/b/p' x.txt\", workspace=Path('.'))\n"
        "print(shell_decision('pip install git+https://x.example/p', workspace=Path('.')).deciding_rule)\n"
        "print(inline.reverse_shell('import socket, subprocess'), receipts.normalise_text('took 1.5s'))\n"
        "print(sizes())"
    )
    lines = run(code).splitlines()
    assert lines[0] == lines[1] == "[0, 0, 0, 0, 0, 0]"
    assert lines[2].endswith("ask-custom-index") and lines[3] == "True took #"
    assert lines[4] == "[1, 1, 0, 1, 0, 1]"


@pytest.mark.parametrize("seed", [1, 2])
def test_decisions_in_a_random_first_use_order_and_racing_threads_match_all_made(tmp_path: Path, seed: int) -> None:
    """In one fresh process: the corpus decided in a random order (each table made by whichever command first
    needs it), then, in another fresh process, by eight threads at once (each table made by whichever
    thread gets there first), then again once every table is made: the same decisions, rules and reasons."""
    corpus_workspace(tmp_path)
    code = (
        "import json, random, sys, threading, yaml\nsys.path.insert(0, {src!r})\nfrom pathlib import Path\n"
        "from tether.policy import knowledge\nfrom tether.policy.gate import shell_decision\n"
        "cases = [c['command'] for c in yaml.safe_load(Path({corpus!r}).read_text())['cases']]\n"
        "def one(c):\n    return json.dumps(shell_decision(c, workspace=Path({ws!r})).to_dict(), sort_keys=True)\n"
        "order = list(range(len(cases))); random.Random({seed}).shuffle(order)\n"
        "{first}\n"
        "knowledge.make_all()\n"
        "print(json.dumps([got, [one(c) for c in cases]]))"
    )
    shuffled = "got = [None] * len(cases)\nfor i in order:\n    got[i] = one(cases[i])"
    racing = (
        "got = [None] * len(cases); b = threading.Barrier(8)\n"
        "def part(k):\n    b.wait()\n    for i in order[k::8]:\n        got[i] = one(cases[i])\n"
        "ts = [threading.Thread(target=part, args=(k,)) for k in range(8)]\n"
        "[t.start() for t in ts]; [t.join() for t in ts]"
    )
    pid = re.compile(r"/proc/\d+/")
    for first in (shuffled, racing):
        fill = {"src": SRC, "corpus": str(CORPUS), "ws": str(tmp_path), "seed": seed, "first": first}
        lazily, made = json.loads(pid.sub("/proc/PID/", run(code.format(**fill))))
        assert len(lazily) >= 150 and lazily == made
