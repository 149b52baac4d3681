"""The libraries a cold plain-path PreToolUse does not need stay off its path (issue 15).

A real hook process through the launcher (``python -I -S launch.py claude-code --no-daemon``) in a session whose
envelope is kept, its modules printed at exit. Each library named here cost every cold call its import and the
decision used none of it: pathspec (+ typing_extensions; imported only to match a pattern tether.wildmatch does not
match itself: policy/globs.py, control/risk.py), hashlib (OpenSSL's libcrypto; tether.canonical hands out the
builtin SHA-256), uuid (+ platform; tether.ids), decimal and unicodedata (policy/provenance.py, envelope/trust.py:
imported where a text is folded or a number read), dataclasses (+ inspect, dis, tokenize: tether.recordmaker
makes tether's classes on 3.11), ast (policy/inline.py), copy and weakref (plainrecord.py), threading (the locks
are ``_thread``'s; events/lease.py imports it where a heartbeat starts), signal (its three enums: the trial's kill
takes ``_signal``'s ``SIGKILL``, guard/cachefile.py), ahocorasick_rs (events/redact.py: imported where a run
has a secret to redact), shlex (policy/rules.py, policy/shell.py: imported where a rule's specifier or ``env -S``'s
string is split), base64 (+ struct: events/anchor.py, guard/cachefile.py, events/redact.py, imported where a key
signs or verifies, or a secret's forms are made), datetime (tether.clock hands out ``_datetime``'s classes),
sqlite3's package (its dbapi2 imports datetime: events/store.py uses ``_sqlite3``), typing (tether.typeless gives
the four names the modules use at run time; the model modules take ``Any`` and ``Literal`` from tether.plain;
policy/grammar.py loads tree_sitter's extension module without the package, whose ``__init__`` imports typing),
contextlib (tether.scoped) and importlib.util (which imports it), the importlib package itself (tether.exports
imports a lazy name's home with ``__import__``; the rest take importlib's objects from the frozen
``_frozen_importlib`` and ``_frozen_importlib_external``), pathlib with what it imports (urllib.parse,
ipaddress, ntpath, warnings: the cold path's paths are strings, tether.disk and tether.places answering as ``Path``
does; a ``Path`` is made where a caller off the path asks for one) and json's Python modules (json.decoder
and json.scanner import re; tether.jsonc runs ``_json`` as json does), and the C unpickler (guard/envcache.py: a plain
process validates the kept envelope's dump). One coming back fails here, named.
"""

from __future__ import annotations

import ast
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hookkit import Hook, payload

import tether.hooks.launch as launch
from tether.guard import log as guard_log

OFF_THE_PLAIN_PATH = (
    (
        "pathspec",
        "typing_extensions",
        "hashlib",
        "_hashlib",
        "uuid",
        "_uuid",
        "platform",
        "decimal",
        "_decimal",
        "unicodedata",
        "ast",  # policy/inline.py: imported where inline Python code is parsed
        "copy",  # plainrecord.py: where a record is copied
        "weakref",  # with copy; tether.recordmaker keeps its classes in a plain dict
        "threading",  # _thread's locks (records, recordmaker, the stores, the sessions, programs)
        "signal",  # guard/cachefile.py: _signal's SIGKILL
        "ahocorasick_rs",  # events/redact.py: a run without secrets
        "tether.events.redact_forms",  # likewise: a secret's forms, read only by a redactor that holds one
        "shlex",  # policy/rules.py, policy/shell.py: no rule specifier, no env -S
        "base64",  # events/anchor.py, guard/cachefile.py, events/redact.py: no anchor key, no secret
        "struct",  # with base64
        "datetime",  # tether.clock: _datetime's classes
        "sqlite3",  # events/store.py: _sqlite3, the package's very classes
        "sqlite3.dbapi2",
        "typing",  # tether.typeless; tether.plain's Any and Literal; policy/grammar.py: tree_sitter's extension module
        "_typing",  # with typing
        "tree_sitter",  # its package __init__ (imports typing): policy/grammar.py loads tree_sitter._binding alone
        "contextlib",  # tether.scoped's contextmanager and suppress
        "importlib.util",  # imports contextlib: policy/grammar.py asks the finders itself
        "pathlib",  # tether.disk and tether.places: Path's answers on strings; Path where a caller off the path asks
        "urllib.parse",  # pathlib's; events/backends.is_url reads the scheme itself, redact and provenance import it
        "ipaddress",  # urllib.parse's
        "ntpath",  # pathlib's
        "warnings",  # pathlib's too
        "importlib",  # tether.exports' __import__; the frozen modules' ModuleSpec, PathFinder, MAGIC_NUMBER
        "importlib.machinery",
        "json",  # tether.jsonc: _json's encoder and scanner, run as json.dumps and json.loads run them
        "json.decoder",
        "json.scanner",
        "json.encoder",
        "_pickle",  # guard/envcache.py: a plain process reads the kept envelope's dump, not its pickle
        "_compat_pickle",  # _pickle's
    )
    + (("dataclasses", "inspect", "dis", "tokenize") if sys.version_info[:2] == (3, 11) else ())
)  # tether.recordmaker
#: The shell's reading (policy/shellgate.py and what it imports: the command line's parser and tree-sitter's binding,
#: the programs' tables, the profile): a quarter of the code a cold PreToolUse would import, which only a call that
#: runs a command line reads; a Write's or an Edit's gate imports none of it (policy/gate.py ``_shell_gate``).
SHELL_READING = frozenset(
    {
        "tether.policy.shellgate",
        "tether.policy.shell",
        "tether.policy.grammar",
        "tether.policy.profile",
        "tether.policy.programs",
        "tether.policy.knowledge",
        "tether.policy.effects",
        "tether.policy.scripts",
    }
)
SESSION = "5c2a7e1b-cold-libraries"
#: The launcher run as the installed hook runs it (``-I -S``, as ``__main__``), the modules it imported printed at exit,
#: and then what the process handed to ``compile()`` (the first 80 characters of each source).
WATCHED = """
import atexit, builtins, sys
compiled = []
def compile_watched(source, *args, _compile=builtins.compile, **kwargs):
    compiled.append(str(source)[:80])
    return _compile(source, *args, **kwargs)
def restored():  # whether each guard the call opened was restored from a fold checkpoint (its log a guard.log.Log)
    cache = getattr(sys.modules.get("tether.hooks.session"), "_CACHE", {})
    return [type(v.events).__name__ == "Log" for k, v in cache.items() if k[0] == "guard"]
atexit.register(lambda: print("\\n".join(map(repr, (sorted(sys.modules), compiled, restored())))))  # not json
sys.argv = sys.argv[1:]
with open(sys.argv[0]) as f:  # as the interpreter runs a script: not runpy, whose pkgutil imports weakref
    code = compile(f.read(), sys.argv[0], "exec")
builtins.compile = compile_watched
exec(code, {"__name__": "__main__", "__file__": sys.argv[0], "__builtins__": __builtins__})
"""


def call(project: Path, event: str, **fields: object) -> tuple[str, set[str]]:
    answer, modules, _ = watched(project, event, **fields)
    return answer, modules


def watched(project: Path, event: str, **fields: object) -> tuple[str, set[str], list[str]]:
    """One call through the launcher: its answer, the modules it imported, the sources it compiled."""
    answer, modules, compiled, _ = restoring(project, event, **fields)
    return answer, modules, compiled


def restoring(project: Path, event: str, **fields: object) -> tuple[str, set[str], list[str], list[bool]]:
    """:func:`watched`, and whether each guard the call opened was restored from a fold checkpoint."""
    env = {k: v for k, v in os.environ.items() if k not in ("TETHER_DB", "TETHER_ENVELOPE", "TETHER_HOOK_PLAIN")}
    env |= {"TETHER_HOOK_DAEMON": "0", "CLAUDE_PROJECT_DIR": str(project)}
    request = payload(f"claude-code.{event}", project, **{"session_id": SESSION, **fields})  # fields may name another
    argv = [sys.executable, "-I", "-S", "-c", WATCHED, launch.__file__, "claude-code", "--no-daemon"]
    done = subprocess.run(argv, input=json.dumps(request), capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    *answer, modules, compiled, restored = done.stdout.rstrip("\n").split("\n")
    return "\n".join(answer), set(ast.literal_eval(modules)), ast.literal_eval(compiled), ast.literal_eval(restored)


def test_a_plain_call_imports_none_of_the_libraries_it_does_not_need(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("needle\n")
    call(tmp_path, "SessionStart")
    for i, command in enumerate(("ls", "grep -n needle README.md", "cat README.md", "git status")):
        out, modules = call(
            tmp_path, "PreToolUse", tool_name="Bash", tool_input={"command": command}, tool_use_id=f"toolu_{i}"
        )
        assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "allow"
        assert "tether.guard.session" in modules and "pydantic" not in modules  # decided here, on the plain path
        assert sorted(set(OFF_THE_PLAIN_PATH) & modules) == [], command
        assert modules >= SHELL_READING, command
    for i, (tool, args) in enumerate(file_tool_calls(tmp_path)):
        out, modules = call(tmp_path, "PreToolUse", tool_name=tool, tool_input=args, tool_use_id=f"toolu_w{i}")
        assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "allow", out
        assert "tether.review.execution" in modules and "pydantic" not in modules  # reviewed, on the plain path
        assert "tether.control.fold" not in modules  # from the run state: no plan was made (state.py ``planned``)
        assert sorted(set(OFF_THE_PLAIN_PATH) & modules) == [], tool
        assert sorted(SHELL_READING & modules) == [], tool  # no command line: none of the shell's reading
    out, modules = call(tmp_path, "PostToolUse", **RECEIPT)
    assert "tether.control.loop" in modules and "pydantic" not in modules, out  # the receipt's view, plain
    assert sorted(set(OFF_THE_PLAIN_PATH) & modules) == [], "PostToolUse"


def test_a_belief_on_anything_but_the_failing_tests_builds_no_control_model(tmp_path: Path) -> None:
    """The run state keeps the latest belief on the failing tests, which a write's review reads (state.py
    ``_belief``); folding a belief on anything else (a Read's receipt gives one: the file exists) reads its key
    only. A cold PreToolUse after it builds no model of the control kinds, nor imports their module (~0.8 ms)."""
    (tmp_path / "README.md").write_text("needle\n")
    call(tmp_path, "SessionStart")
    given = {"file_path": str(tmp_path / "README.md")}
    call(tmp_path, "PreToolUse", tool_name="Read", tool_input=given, tool_use_id="toolu_r")
    response = {"type": "text", "file": {"filePath": given["file_path"], "content": "needle\n", "numLines": 1}}
    call(tmp_path, "PostToolUse", tool_name="Read", tool_input=given, tool_use_id="toolu_r", tool_response=response)
    with sqlite3.connect(tmp_path / ".tether" / "tether.db") as db:
        keys = [
            json.loads(p)["key"] for (p,) in db.execute("SELECT payload FROM events WHERE kind = 'belief.recorded'")
        ]
    assert keys and "tests.failing" not in keys, keys
    out, modules = call(tmp_path, "PreToolUse", tool_name="Bash", tool_input={"command": "ls"}, tool_use_id="toolu_2")
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "allow", out
    assert "tether.guard.session" in modules and "tether.events.kinds_control" not in modules


def test_a_git_rewrite_in_a_plain_repository_is_judged_without_dulwich(tmp_path: Path) -> None:
    """A ``git stash`` is judged for a copy of the log that git may hold (policy/shellgate.py ``_tracked_log``). In a
    repository as ``git init`` writes it, whose index names nothing in ``.tether/``, that is read without dulwich:
    its import was ~40 ms of a cold call's ~50 (policy/gitindex.py ``own``, ``may_list``)."""
    (tmp_path / "README.md").write_text("needle\n")
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    for args in (["init", "-q"], ["add", "README.md"], ["commit", "-qm", "init"]):
        subprocess.run([*git, *args], cwd=tmp_path, check=True)
    call(tmp_path, "SessionStart")
    out, modules = call(
        tmp_path, "PreToolUse", tool_name="Bash", tool_input={"command": "git stash"}, tool_use_id="toolu_stash"
    )
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "allow", out
    assert "tether.policy.rewrites" in modules and (tmp_path / ".tether").is_dir()  # judged, with a log to keep
    assert sorted(m for m in modules if m.split(".")[0] == "dulwich") == []
    assert sorted(set(OFF_THE_PLAIN_PATH) & modules) == []


#: A command's receipt: its PostToolUse adds the control layer's view of it (``tether.control.loop``).
RECEIPT = {
    "tool_name": "Bash",
    "tool_input": {"command": "ls"},
    "tool_use_id": "toolu_0",
    "tool_response": {"stdout": "", "stderr": "", "interrupted": False},
}


def file_tool_calls(project: Path) -> list[tuple[str, dict[str, str]]]:
    """A Write and an Edit: each reviewed (the write set; the plan's active task and the failing tests the beliefs
    name, which the run state holds where no plan was made: no control module is imported for them)."""
    (project / "app.py").write_text("x = 1\n")
    return [
        ("Write", {"file_path": str(project / "new.py"), "content": "y = 1\n"}),
        ("Edit", {"file_path": str(project / "app.py"), "old_string": "x = 1", "new_string": "x = 2"}),
    ]


#: What a plain call that reads a fold checkpoint imports beyond an early call's: the C unpickler that loads the body
#: (guard/cachefile.py ``unpickler``). Not OpenSSL's libcrypto (``_hashlib``, ~3.3 ms to load): without a key the
#: body is checked by its CRC-32 (guard/checkpoint.py ``intact``), and the audit of the events after its head hashes
#: them with the builtin SHA-256 (events/store.py ``chain_sha256``).
READING_A_CHECKPOINT = frozenset({"_pickle", "_compat_pickle"})


def test_a_plain_call_that_reads_a_checkpoint_imports_only_what_reading_it_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold call late in a long session restores its guard from the fold checkpoint: reading it imported
    ``dataclasses`` (with inspect, ast, dis, tokenize: asking a record class for ``__dataclass_fields__`` makes the
    standard fields), ``typing``, ``json``, ``pickle``, ``copy``, ``contextlib``, ``datetime`` and ``importlib``,
    ~13 ms of every such call, for the checkpoint's writer and for names a reader does not need."""
    (tmp_path / "README.md").write_text("needle\n")
    monkeypatch.setattr(guard_log, "EVERY", 8)  # in this process: the seeding calls leave a checkpoint
    hook = Hook(tmp_path)
    for i in range(12):
        hook("PreToolUse", session_id=SESSION, tool_input={"command": f"grep -n n{i} README.md"}, tool_use_id=f"t{i}")
    assert list((tmp_path / ".tether" / "tether.db.folds").glob("*.ckpt"))
    out, modules, _, restored = restoring(
        tmp_path, "PreToolUse", tool_name="Bash", tool_input={"command": "ls"}, tool_use_id="toolu_late"
    )
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert "tether.guard.checkpoint" in modules and "pydantic" not in modules  # decided here, plain
    assert restored == [True], "the guard was restored from the checkpoint"
    assert sorted(set(OFF_THE_PLAIN_PATH) & modules - READING_A_CHECKPOINT) == []


def test_a_plain_call_compiles_nothing(tmp_path: Path) -> None:
    """The first ``compile()`` of a process makes the interpreter's AST node classes (``PyAST_Check``: 119 of them,
    ~10 M instructions, 4 % of a cold PreToolUse); a ``TypeVar`` bound by a string compiles it (``ForwardRef``), as
    events/storebase.py's did. A plain call compiles no source at all."""
    call(tmp_path, "SessionStart")
    for event in ("PreToolUse", "PostToolUse"):
        fields = {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1"}
        if event == "PostToolUse":
            fields["tool_response"] = {"stdout": "", "stderr": "", "interrupted": False}
        out, modules, compiled = watched(tmp_path, event, **fields)
        assert "tether.guard.session" in modules and "pydantic" not in modules, out  # decided here, plain
        assert compiled == [], (event, compiled)


def test_an_envelope_pattern_decides_and_only_one_that_is_not_simple_imports_pathspec(tmp_path: Path) -> None:
    """A project envelope whose ``filesystem`` lists patterns: they decide (a write outside ``write`` is refused);
    simple ones are matched without pathspec, a list that holds another (``gen?/``) imports it to match."""
    (tmp_path / ".tether").mkdir()
    for n, write in enumerate(('["out/**"]', '["out/**", "gen?/"]')):
        (tmp_path / ".tether" / "envelope.yaml").write_text(
            "version: 1\n"
            'plan: {path: plan.yaml, hash: "sha256:' + "0" * 64 + '"}\n'
            f'environment:\n  filesystem: {{read: ["**"], write: {write}}}\n'
            "tools:\n  - {name: bash, purpose: Run a command., effects: [exec]}\n"
        )
        call(tmp_path, "SessionStart", session_id=f"s{n}")
        for command, verdict in (("touch out/a", "allow"), ("touch src/a", "deny")):
            out, modules = call(
                tmp_path,
                "PreToolUse",
                session_id=f"s{n}",
                tool_name="Bash",
                tool_input={"command": command},
                tool_use_id=f"toolu_{n}_{verdict}",
            )
            assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == verdict
            assert ("pathspec" in modules) is (n == 1), (write, command)


def test_a_command_under_another_name_is_still_judged_as_one(tmp_path: Path) -> None:
    """A hook process loads the shell's reading up front by the tool's name (hooks/wire.py ``SHELL_TOOLS``); an MCP
    tool the envelope gives ``exec`` runs a command too, under a name that is not a shell's. The gate judges it as a
    command all the same, importing the shell gate at that call: the name picks what is loaded first, never how a
    call is judged."""
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether" / "envelope.yaml").write_text(
        "version: 1\n"
        'plan: {path: plan.yaml, hash: "sha256:' + "0" * 64 + '"}\n'
        'environment:\n  filesystem: {read: ["**"], write: ["out/**"]}\n'
        "tools:\n  - {name: bash, purpose: Run a command., effects: [exec]}\n"
        "  - {name: mcp__box__run, purpose: Run a command in a box., effects: [exec]}\n"
    )
    call(tmp_path, "SessionStart")
    for n, (command, verdict) in enumerate((("touch out/a", "allow"), ("touch src/a", "deny"), ("rm -rf ~", "deny"))):
        out, modules = call(
            tmp_path, "PreToolUse", tool_name="mcp__box__run", tool_input={"command": command}, tool_use_id=f"t{n}"
        )
        assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == verdict, (command, out)
        assert "pydantic" not in modules and modules >= SHELL_READING, command  # plain, the shell gate loaded late


@pytest.mark.parametrize("name", [["Bash"], {"Bash": 1}, 7, None, ""])
def test_a_tool_name_that_is_not_a_string_is_refused_before_it_picks_what_is_loaded(
    tmp_path: Path, name: object
) -> None:
    """The launcher's process looks the tool's name up among the shell tools before it imports the gate
    (hooks/entry.py ``decide``); a name that is not a string (a list is not even hashable) is refused first, naming the
    field, by the wire's reading (exit 2, nothing recorded), never a crash."""
    env = {k: v for k, v in os.environ.items() if k not in ("TETHER_DB", "TETHER_ENVELOPE", "TETHER_HOOK_PLAIN")}
    env |= {"TETHER_HOOK_DAEMON": "0", "CLAUDE_PROJECT_DIR": str(tmp_path)}
    request = payload("claude-code.PreToolUse", tmp_path, tool_name=name, tool_input={"command": "ls"})
    argv = [sys.executable, "-I", "-S", launch.__file__, "claude-code", "--no-daemon"]
    done = subprocess.run(argv, input=json.dumps(request), capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2 and "hook input field 'tool_name'" in done.stderr, done
    assert "Traceback" not in done.stderr and not (tmp_path / ".tether" / "tether.db").exists()


#: Standard modules no tether module on a plain call's path imports (outside ``if TYPE_CHECKING:``), though some
#: still come in through another library (``re`` and ``enum`` import ``functools``, ``collections`` and
#: ``operator``): tether.typeless, tether.scoped, tether.memo, ``_collections_abc``'s and ``_operator``'s own
#: names stand in.
NOT_IMPORTED_BY_TETHER = frozenset({"typing", "contextlib", "collections", "collections.abc", "functools", "operator"})
#: Imports that a plain call on this interpreter does not run: tether.plain's typing names in a pydantic process,
#: tether.memo's fallback where ``_functools`` has no C cache wrapper.
ELSEWHERE = {"tether.plain": ["typing"], "tether.memo": ["functools"]}


def _runtime_imports(source: str) -> set[str]:
    """The modules ``source`` imports at run time: every ``import`` and ``from … import``, in functions too, but
    not under ``if TYPE_CHECKING:`` (the type checker's only)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return found


def test_no_tether_module_on_the_plain_path_imports_typing_or_its_companions(tmp_path: Path) -> None:
    call(tmp_path, "SessionStart")
    out, modules = call(tmp_path, "PreToolUse", tool_name="Bash", tool_input={"command": "ls"}, tool_use_id="toolu_1")
    assert "tether.guard.session" in modules and "pydantic" not in modules, out  # decided here, plain
    for i, (tool, args) in enumerate(file_tool_calls(tmp_path)):
        out, more = call(tmp_path, "PreToolUse", tool_name=tool, tool_input=args, tool_use_id=f"toolu_w{i}")
        assert "tether.review.execution" in more and "pydantic" not in more, out  # reviewed
        modules |= more
    out, more = call(tmp_path, "PostToolUse", **{**RECEIPT, "tool_use_id": "toolu_1"})
    assert "tether.control.loop" in more and "pydantic" not in more, out
    modules |= more
    # a Read's receipt gives a belief: the control kinds' models (events/kinds_control.py), which every receipt and
    # write after it then reads in the control layer's fold; they took typing's names, a cold receipt imported typing
    read = {"tool_name": "Read", "tool_input": {"file_path": str(tmp_path / "app.py")}, "tool_use_id": "toolu_r"}
    call(tmp_path, "PreToolUse", **read)
    response = {"type": "text", "file": {"filePath": str(tmp_path / "app.py"), "content": "x = 2\n", "numLines": 1}}
    out, more = call(tmp_path, "PostToolUse", **read, tool_response=response)
    assert "tether.events.kinds_control" in more and "pydantic" not in more, out
    modules |= more
    src = Path(launch.__file__).resolve().parents[2]
    importers = {}
    for name in sorted(m for m in modules if m == "tether" or m.startswith("tether.")):
        path = src.joinpath(*name.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        bad = _runtime_imports(path.read_text()) & NOT_IMPORTED_BY_TETHER
        if bad:
            importers[name] = sorted(bad)
    assert len([m for m in modules if m.startswith("tether.")]) > 60
    assert importers == ELSEWHERE


def test_the_import_reader_sees_imports_and_skips_the_type_checkers() -> None:
    """The reader the test above relies on: an import in a function counts, one under TYPE_CHECKING does not."""
    source = (
        "import os\nfrom typing import Any\nif TYPE_CHECKING:\n    import operator\nelse:\n    import functools\n"
        "def f():\n    import contextlib\n    from . import sibling\n"
    )
    assert _runtime_imports(source) == {"os", "typing", "functools", "contextlib"}
