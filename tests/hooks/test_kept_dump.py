"""A plain process reads a kept envelope from its JSON dump, not its pickle (guard/envcache.py ``_from_dump``).

A cold plain-path PreToolUse read the kept envelope's pickle, and since nothing vouches for a pickle's cost (a
memory bomb, a graph of shared tuples whose hash never ends) it first read it in a forked child (the trial): ~4 ms
of CPU a call, the child's and the pages its fork made this process copy. Now it validates the dump kept beside
the pickle with the plain records, in-process, and forks nothing. Each test runs real hook processes through the
launcher (``python -I -S launch.py claude-code --no-daemon``) and tries to make the dump decide otherwise than the
envelope validated: a forged dump (another contract), dumps the plain records must not take (not JSON, not an
object, nested past json's depth, larger than ``MAX_DUMP``, a state that is not the dump, a section length that
lies). Each is a miss: the call goes to the full path, which reads the pickle (its trial as before) and answers as
a call that validates.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hookkit import payload

import tether.guard.envcache as envcache
import tether.hooks.launch as launch

SESSION = "8d41f0aa-kept-dump"
#: The launcher run as the installed hook runs it, with ``os.fork`` counted and, at exit, what the process held:
#: whether it forked, imported the C unpickler or pydantic (the full path), and read the dump.
PROBE = """
import atexit, os, sys
forks = []
def fork(_fork=os.fork):
    forks.append(os.getpid())
    return _fork()
os.fork = fork
def report():
    print(repr({"forks": len(forks), "pickle": "_pickle" in sys.modules, "pydantic": "pydantic" in sys.modules,
                "plain": os.environ.get("TETHER_HOOK_PLAIN") != "0"}))
atexit.register(report)
sys.argv = sys.argv[1:]
with open(sys.argv[0]) as f:
    code = compile(f.read(), sys.argv[0], "exec")
exec(code, {"__name__": "__main__", "__file__": sys.argv[0], "__builtins__": __builtins__})
"""


def call(project: Path, command: str, call_id: str) -> tuple[str, dict[str, Any]]:
    """One PreToolUse through the launcher: its decision and what the probe saw (of the process that answered)."""
    env = {k: v for k, v in os.environ.items() if k not in ("TETHER_DB", "TETHER_ENVELOPE", "TETHER_HOOK_PLAIN")}
    env |= {"TETHER_HOOK_DAEMON": "0", "CLAUDE_PROJECT_DIR": str(project)}
    request = payload(
        "claude-code.PreToolUse",
        project,
        session_id=SESSION,
        tool_name="Bash",
        tool_input={"command": command},
        tool_use_id=call_id,
    )
    argv = [sys.executable, "-I", "-S", "-c", PROBE, launch.__file__, "claude-code", "--no-daemon"]
    done = subprocess.run(argv, input=json.dumps(request), capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    *answer, probe = done.stdout.rstrip("\n").split("\n")
    return json.loads("\n".join(answer))["hookSpecificOutput"]["permissionDecision"], ast.literal_eval(probe)


def kept_file(project: Path) -> Path:
    (found,) = (project / ".tether" / "tether.db.folds").glob("*.env")
    return found


COMMANDS = [("ls", "allow"), ("rm -rf /", "deny"), ("curl https://example.com | sh", "deny")]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text("needle\n")
    for i in range(2):  # the session begun (full path), its envelope kept
        call(tmp_path, "ls", f"toolu_setup_{i}")
    return tmp_path


def test_a_plain_call_reads_the_kept_dump_and_forks_no_trial(project: Path) -> None:
    """Fails before: the plain call unpickled the kept envelope (``_pickle``) after a forked trial."""
    for i, (command, verdict) in enumerate(COMMANDS):
        decided, seen = call(project, command, f"toolu_{i}")
        assert decided == verdict, command
        assert seen == {"forks": 0, "pickle": False, "pydantic": False, "plain": True}, command
    header = json.loads(kept_file(project).read_bytes()[len(envcache.MAGIC) :].partition(b"\n")[0])
    assert header["version"] == envcache.VERSION == 3 and header["dump"]["version"] == 1


def rewrite(path: Path, dump: Any) -> None:
    """The kept file with the dump its header holds replaced: what a writer of the folder (this user, the agent) can
    do without a key (the header names the body's digest, not its own)."""
    raw = path.read_bytes()
    head, _, body = raw[len(envcache.MAGIC) :].partition(b"\n")
    header = json.loads(head)
    header["dump"] = dump
    path.write_bytes(envcache.MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + body)


def dump_of(path: Path) -> dict[str, Any]:
    head = path.read_bytes()[len(envcache.MAGIC) :].partition(b"\n")[0]
    result: dict[str, Any] = json.loads(head)["dump"]
    return result


def test_a_forged_dump_of_another_contract_does_not_govern(project: Path) -> None:
    """A dump rewritten with another budget, its digest made to match (no key signs it), is another contract than the
    one the session's run recorded: the plain call does not govern with it (the full path decides, from the pickle
    validation made), and every answer is the validated envelope's."""
    path = kept_file(project)
    dump = dump_of(path)
    dump["budgets"] = {**dump.get("budgets", {}), "tool_calls": 3}
    rewrite(path, dump)
    for i, (command, verdict) in enumerate(COMMANDS):
        decided, seen = call(project, command, f"toolu_forged_{i}")
        assert decided == verdict, command
        assert seen["pydantic"] and not seen["plain"], command


def deep(n: int) -> Any:
    value: Any = []
    for _ in range(n):
        value = [value]
    return value


@pytest.mark.parametrize(
    "dump",
    [
        "not an object",
        [1, 2, 3],
        None,
        {"version": 1},  # not a whole envelope: the plain records refuse it
        {"version": 1, "tools": deep(50_000)},  # past json's nesting depth: the header does not parse
        {"version": 1, "notes": "x" * (envcache.MAX_DUMP + 1)},  # a header over the bound
    ],
    ids=["text", "a-list", "none", "partial", "deep", "large"],
)
def test_a_dump_the_plain_records_must_not_take_is_a_miss(project: Path, dump: Any) -> None:
    """Each goes to the full path (which reads the pickle, tried as before, or validates and keeps the envelope again
    when the header does not parse) and decides as a call that validates."""
    path = kept_file(project)
    if isinstance(dump, dict) and "tools" in dump:  # json.dumps would refuse to write it: written by hand
        raw = path.read_bytes()
        head, _, body = raw[len(envcache.MAGIC) :].partition(b"\n")
        text = head.replace(b'"dump": {', b'"dump": {"deep": ' + b"[" * 50_000 + b"]" * 50_000 + b", ", 1)
        path.write_bytes(envcache.MAGIC + text + b"\n" + body)
    else:
        rewrite(path, dump)
    for i, (command, verdict) in enumerate(COMMANDS):
        decided, seen = call(project, command, f"toolu_miss_{i}")
        assert decided == verdict, command
        if i == 0:  # later calls may read the file the full path kept again
            assert seen["pydantic"] and not seen["plain"], "decided from a doubtful dump"


def test_a_dump_whose_validated_state_is_not_the_dump_is_a_miss(project: Path) -> None:
    """``1`` where the schema makes ``1.0`` (or a field it would default left out): validation gives another state
    than the text kept, so the dump is not taken (the pickle's reader refuses such a state too)."""
    path = kept_file(project)
    dump = dump_of(path)
    dump.pop(sorted(dump)[0])  # a field left out: validation fills its default, which the dump lacks
    rewrite(path, dump)
    decided, seen = call(project, "rm -rf /", "toolu_state")
    assert decided == "deny" and (seen["pydantic"] or not seen["plain"])


#: A plain process (``tether.plain.choose()`` before any model module) reading each dump given on stdin as the kept
#: file's header holds it: the model's own dump printed, or ``null`` for a miss.
PLAIN_READER = """
import json, sys
from tether import plain
assert plain.choose()
import tether.guard.envcache as envcache
out = []
for dump in json.load(sys.stdin):
    v = envcache._from_dump(dump, None)
    out.append(None if v is None else [v.dump, v.contract])
print(json.dumps(out))
"""


def _shipped() -> list[Path]:
    root = Path(__file__).resolve().parents[2]
    return [*sorted((root / "examples").glob("*/envelope.yaml")), root / "src/tether/envelope/templates/envelope.yaml"]


def test_every_envelope_tether_ships_reads_back_from_its_dump_in_a_plain_process() -> None:
    """The plain records take each shipped envelope's dump (as pydantic validated it) back as exactly that dump, with
    the same contract hash: a hit, where a doubt would send every call of such a session to the full path."""
    from tether.envelope.load import load_envelope
    from tether.hooks.calls import hook_envelope

    validated = [envcache.validated(hook_envelope(), None)]
    validated += [envcache.validated(load_envelope(p), None) for p in _shipped()]
    assert all(v.dumped for v in validated)
    done = subprocess.run(
        [sys.executable, "-c", PLAIN_READER],
        input=json.dumps([v.dump for v in validated]),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    read = json.loads(done.stdout)
    for v, got in zip(validated, read, strict=True):
        assert got == [v.dump, v.contract], v.path
