"""Canary secrets through a real run: bubblewrap, the SQLite log, every CLI view, an export and a trace.

One run (module scope) whose scripted agent does its best to leak two planted secrets — one from tether's
environment, one from a file outside the workspace — raw, in base64 (both alphabets, and inside a longer
stream), hex (both cases), percent-encoded, folded across lines, on stderr, into a workspace file it then
reads back, and typed literally into a command line. Afterwards no form of either value may be anywhere
tether wrote or printed; the tool that is not listed must not have received one; and the log still verifies.
"""

from __future__ import annotations

import base64
import io
import json
import os
import secrets
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tether.cli.demo_cmds import prepare
from tether.envelope import contract_hash
from tether.envelope.schema import Envelope
from tether.events.store import EventStore
from tether.observe import otel

pytestmark = [pytest.mark.bwrap, pytest.mark.slow]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bugfix"
ENV_CANARY = "cnry-env-" + secrets.token_urlsafe(18) + "/+="
FILE_CANARY = "cnry-file-" + secrets.token_hex(16)
B_CANARY = "cnry-b-" + secrets.token_hex(12)

URL_ALL = 'od -An -tx1 | tr -d " \\n" | sed "s/../%&/g"'
COMMANDS = [
    'echo "$CANARY_ENV"; cat /run/secrets/canary.key',
    'printf %s "$CANARY_ENV" | base64; base64 /run/secrets/canary.key',
    'printf %s "$CANARY_ENV" | base64 | tr +/ _.',  # urlsafe-like alphabet is checked below with the real one
    'printf %s "$CANARY_ENV" | od -An -tx1 | tr -d " \\n"; echo; od -An -tx1 /run/secrets/canary.key | tr a-f A-F',
    f'printf %s "$CANARY_ENV" | {URL_ALL}',
    'echo "$CANARY_ENV" | fold -w 7; fold -w 5 /run/secrets/canary.key',
    'echo "$CANARY_ENV" >&2; cat /run/secrets/canary.key >&2; exit 3',
    '(head -c 4001 /dev/zero | tr "\\0" a; printf "xy%s" "$CANARY_ENV") | base64 -w0',
    'echo "$CANARY_ENV $(cat /run/secrets/canary.key)" > src/leak.txt',
    'echo "B=[${CANARY_B:-absent}]"; ls /run/secrets',
]


def forms(value: str) -> list[str]:
    raw = value.encode()
    return [
        value,
        raw.hex(),
        raw.hex().upper(),
        "".join(f"%{b:02x}" for b in raw),
        base64.b64encode(raw).decode().rstrip("="),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        *(base64.b64encode(b"xy" + raw).decode()[4:-4] for _ in [0]),
    ]


def pieces() -> set[bytes]:
    """Every 12-character run of every form of every canary, and every 7-character run of the raw values."""
    out: set[bytes] = set()
    for value in (ENV_CANARY, FILE_CANARY, B_CANARY):
        for form in forms(value):
            out |= {form[i : i + 12].encode() for i in range(len(form) - 11)}
        out |= {value[i : i + 7].encode() for i in range(len(value) - 6)}
    return out


PIECES = pieces()


def leaks(data: bytes) -> list[bytes]:
    return sorted(p for p in PIECES if p in data)


def tether(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tether.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def envelope_with_secrets(path: Path, key_file: Path) -> None:
    data = yaml.safe_load(path.read_text())
    environment = data["environment"]
    environment["sandbox"] = {"backend": "bwrap", "required": True}
    environment["secrets"] = [
        {"name": "CANARY_ENV", "source": "env:TETHER_TEST_CANARY", "tools": ["bash"], "hosts": ["api.example.com"]},
        {"name": "CANARY_FILE", "source": f"file:{key_file}", "tools": ["bash"], "inject": {"file": "canary.key"}},
        {"name": "CANARY_B", "source": "env:TETHER_TEST_CANARY_B", "tools": ["run_tests"]},
    ]
    data["contract_hash"] = ""
    data["contract_hash"] = contract_hash(Envelope.model_validate(data))
    path.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.fixture(scope="module")
def leaky(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("secrets")
    example = prepare(EXAMPLE, root)
    key_file = root / "keys" / "canary.key"
    key_file.parent.mkdir()
    key_file.write_text(FILE_CANARY + "\n")
    key_file.chmod(0o600)
    envelope_with_secrets(example / "envelope.yaml", key_file)
    turns: list[dict[str, Any]] = [{"tool_calls": [{"name": "bash", "args": {"command": c}}]} for c in COMMANDS]
    turns += [
        {"tool_calls": [{"name": "read_file", "args": {"path": "src/leak.txt"}}]},
        {
            "text": f"I found the token: {ENV_CANARY}",  # the model's own words are logged too
            "tool_calls": [{"name": "bash", "args": {"command": f"echo typed {ENV_CANARY} into the command"}}],
        },
    ]  # then the script ends: the run stops NEEDS_INPUT, with no sensor run to wait for
    (example / "trajectory.yaml").write_text(yaml.safe_dump({"turns": turns}, sort_keys=False))
    env = {
        **os.environ,
        "TETHER_TEST_CANARY": ENV_CANARY,
        "TETHER_TEST_CANARY_B": B_CANARY,
        "XDG_CONFIG_HOME": str(root / "xdg-config"),
        "XDG_STATE_HOME": str(root / "xdg-state"),
    }
    db = root / "tether.db"
    run = tether(
        "run", "leak it", "-e", str(example / "envelope.yaml"), "--headless", "--json", "--db", str(db), env=env
    )
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    run_id = next((line["run_id"] for line in lines if line.get("run_id")), None)
    assert run_id, run.stdout[-3000:] + run.stderr[-3000:]
    outputs = {"run --json": run.stdout + run.stderr}
    for args in (["log", "show", run_id], ["log", "show", run_id, "--json"], ["show", run_id], ["runs"]):
        proc = tether(*args, "--db", str(db), env=env)
        outputs[" ".join(args[:2])] = proc.stdout + proc.stderr
    package = root / "episode.tar.gz"
    exported = tether("export", run_id, "-o", str(package), "--db", str(db), env=env)
    verified = tether("log", "verify", run_id, "--db", str(db), env=env)
    local = tether(  # the task carries a value: learnt before the first event, though no call ever resolves it
        "run", f"use {ENV_CANARY}", "-e", str(example / "envelope.yaml"), "--sandbox", "local", "--headless", "--json",
        "--db", str(root / "local.db"), env=env,
    )  # fmt: skip
    unset = {k: v for k, v in env.items() if k != "TETHER_TEST_CANARY"}
    missing = tether(
        "run", "x", "-e", str(example / "envelope.yaml"), "--headless", "--json", "--db", str(root / "m.db"), env=unset
    )  # fmt: skip
    return {
        "missing": missing,
        "local": local,
        "local_db": root / "local.db",
        "run": run,
        "lines": lines,
        "run_id": run_id,
        "db": db,
        "outputs": outputs,
        "package": package,
        "exported": exported,
        "verified": verified,
        "workspace": example / "project",
    }


def completed(leaky: dict[str, Any]) -> list[dict[str, Any]]:
    return [e["payload"] for e in leaky["lines"] if e.get("kind") == "action.completed"]


def test_the_tools_really_received_and_printed_the_secrets(leaky: dict[str, Any]) -> None:
    """The attack is real: the listed tool got both values (redacted in every result), the run went on."""
    results = completed(leaky)
    assert len(results) == len(COMMANDS) + 2, leaky["run"].stdout[-3000:] + leaky["run"].stderr[-3000:]
    out = [r["result"].get("data", {}) for r in results]
    assert out[0]["stdout"].split() == ["[secret:CANARY_ENV]", "[secret:CANARY_FILE]"]
    assert out[6]["stderr"].split() == ["[secret:CANARY_ENV]", "[secret:CANARY_FILE]"] and out[6]["exit_code"] == 3
    for i in range(1, 8):  # each encoding: the marker, and the call really ran
        assert "[secret:CANARY_ENV]" in out[i]["stdout"] + out[i]["stderr"], (COMMANDS[i], out[i])
    assert out[7]["stdout"].startswith("YWFh")  # the 4,001-byte stream before the value is still there
    # the workspace file holds the real values (the tool wrote them); what tether read back is redacted
    assert ENV_CANARY in (leaky["workspace"] / "src" / "leak.txt").read_text()
    read_back = next(r for r in results if r["tool"] == "read_file")
    assert "[secret:CANARY_ENV] [secret:CANARY_FILE]" in json.dumps(read_back)


def test_a_tool_not_listed_gets_nothing(leaky: dict[str, Any]) -> None:
    b = completed(leaky)[COMMANDS.index('echo "B=[${CANARY_B:-absent}]"; ls /run/secrets')]["result"]["data"]
    assert "B=[absent]" in b["stdout"] and "canary.key" in b["stdout"]  # bash has its file, not run_tests' B


def test_no_form_of_any_canary_in_the_database_files(leaky: dict[str, Any]) -> None:
    db: Path = leaky["db"]
    files = [p for p in db.parent.iterdir() if p.name.startswith(db.name)]  # the db, its -wal and -shm
    assert db in files
    for f in files:
        assert leaks(f.read_bytes()) == [], f.name


def test_no_form_of_any_canary_in_any_cli_output(leaky: dict[str, Any]) -> None:
    for name, text in leaky["outputs"].items():
        assert text.strip(), name
        assert leaks(text.encode()) == [], name
    assert "[secret:CANARY_ENV]" in leaky["outputs"]["log show"]


def test_no_form_of_any_canary_in_the_export(leaky: dict[str, Any]) -> None:
    assert leaky["exported"].returncode == 0, leaky["exported"].stderr
    with tarfile.open(leaky["package"]) as tar:
        for member in tar.getmembers():
            f = tar.extractfile(member)
            if f is not None:
                assert leaks(f.read()) == [], member.name
    assert leaks(leaky["package"].read_bytes()) == []


def test_no_form_of_any_canary_in_an_opentelemetry_trace(leaky: dict[str, Any]) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with EventStore.open(leaky["db"], readonly=True) as store:
        otel.trace_events(store.events(leaky["run_id"]), provider.get_tracer("t"))
    provider.shutdown()
    spans = exporter.get_finished_spans()
    assert spans
    dumped = io.StringIO()
    for span in spans:
        dumped.write(span.to_json())
    assert leaks(dumped.getvalue().encode()) == []


def test_the_log_still_verifies(leaky: dict[str, Any]) -> None:
    assert leaky["verified"].returncode == 0, leaky["verified"].stdout + leaky["verified"].stderr


def test_the_local_sandbox_is_refused_and_nothing_runs(leaky: dict[str, Any]) -> None:
    local = leaky["local"]
    lines = [json.loads(line) for line in local.stdout.splitlines() if line.startswith("{")]
    kinds = [e.get("kind") for e in lines]
    assert local.returncode == 4 and "sandbox.failed" in kinds and "action.started" not in kinds, local.stdout
    failed = next(e["payload"] for e in lines if e.get("kind") == "sandbox.failed")
    assert "declares secrets (CANARY_ENV, CANARY_FILE, CANARY_B)" in failed["error"]
    assert leaks(local.stdout.encode() + local.stderr.encode() + leaky["local_db"].read_bytes()) == []


def test_a_missing_source_fails_the_call_closed_naming_secret_and_source(leaky: dict[str, Any]) -> None:
    missing = leaky["missing"]
    lines = [json.loads(line) for line in missing.stdout.splitlines() if line.startswith("{")]
    failed = [e["payload"] for e in lines if e.get("kind") == "action.failed"]
    assert missing.returncode == 4 and len(failed) == 1 and failed[0]["dependency"], missing.stdout[-2000:]
    assert "secret 'CANARY_ENV' (source env:TETHER_TEST_CANARY)" in failed[0]["error"]
    assert "action.completed" not in [e.get("kind") for e in lines]  # the command never ran
    assert leaks(missing.stdout.encode() + missing.stderr.encode()) == []
