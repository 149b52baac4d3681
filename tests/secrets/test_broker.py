"""The broker: who gets a secret, what happens when a source is missing, which sandboxes may carry one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tether.envelope.schema import Environment
from tether.errors import SandboxUnavailable, SecretUnavailable
from tether.events.kinds import SandboxFailed
from tether.events.store import EventStore
from tether.sandbox.broker import Broker
from tether.sandbox.bwrap import BwrapSandbox
from tether.sandbox.local import LocalSandbox

VALUE = "tok-" + "q" * 20


def broker(tmp_path: Path, *secrets: dict[str, Any], host: dict[str, str] | None = None) -> tuple[Broker, list[Any]]:
    seen: list[Any] = []
    env = Environment.model_validate({"secrets": list(secrets)})
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return Broker(env, seen.append, workspace=ws, host={"TOK": VALUE} if host is None else host), seen


def test_a_tool_not_listed_gets_the_very_same_sandbox(tmp_path: Path) -> None:
    b, seen = broker(tmp_path, {"name": "T", "source": "env:TOK", "tools": ["bash"]})
    box = LocalSandbox()
    assert b.sandbox_for(box, "read_file") is box and b.sandbox_for(box, "run_tests") is box
    assert seen == []  # nothing was even read


def test_a_listed_tool_refuses_a_sandbox_that_is_not_bubblewrap(tmp_path: Path) -> None:
    b, seen = broker(tmp_path, {"name": "T", "source": "env:TOK", "tools": ["bash"]})
    with pytest.raises(SandboxUnavailable, match="carries secrets \\(T\\)") as info:
        b.sandbox_for(LocalSandbox(), "bash")
    assert VALUE not in str(info.value) and seen == []


@pytest.mark.bwrap
def test_values_are_registered_for_redaction_before_the_sandbox_is_handed_out(tmp_path: Path) -> None:
    b, seen = broker(tmp_path, {"name": "T", "source": "env:TOK", "tools": ["bash"]})
    box = BwrapSandbox(tmp_path / "ws")
    carrying = b.sandbox_for(box, "bash")
    assert seen == [{"T": VALUE}]
    assert isinstance(carrying, BwrapSandbox) and carrying.carried.env == {"T": VALUE}
    assert box.carried.env == {}  # the shared sandbox itself carries nothing


@pytest.mark.parametrize(
    ("source", "host", "says"),
    [
        ("env:MISSING", {}, "variable MISSING is not set"),
        ("env:TOK", {"TOK": "short"}, "5 characters"),
        ("file:/nonexistent/tether-test/key", {}, "cannot read /nonexistent/tether-test/key"),
    ],
)
def test_a_source_that_fails_names_the_secret_and_source_never_a_value(
    tmp_path: Path, source: str, host: dict[str, str], says: str
) -> None:
    b, seen = broker(tmp_path, {"name": "T", "source": source, "tools": ["bash"]}, host=host)
    with pytest.raises(SecretUnavailable) as info:
        b.resolve(b.secrets_for("bash"))
    message = str(info.value)
    assert f"secret 'T' (source {source})" in message and says in message
    assert "short" not in message.replace("5 characters", "") and seen == []


def test_file_sources_inside_the_workspace_binary_or_huge_are_refused(tmp_path: Path) -> None:
    inside = tmp_path / "ws" / "key"
    cases = {inside: (b"x" * 20, "inside the workspace"), tmp_path / "bin": (b"\xff" * 20, "not UTF-8")}
    cases[tmp_path / "big"] = (b"x" * 70_000, "larger than")
    for path, (data, says) in cases.items():
        b, _ = broker(tmp_path, {"name": "T", "source": f"file:{path}", "tools": ["bash"]})
        path.write_bytes(data)
        with pytest.raises(SecretUnavailable, match=says):
            b.resolve(b.secrets_for("bash"))


def test_a_symlink_out_of_the_workspace_is_judged_by_its_target(tmp_path: Path) -> None:
    b, _ = broker(tmp_path, {"name": "T", "source": f"file:{tmp_path}/link", "tools": ["bash"]})
    (tmp_path / "ws" / "key").write_text("x" * 20)
    (tmp_path / "link").symlink_to(tmp_path / "ws" / "key")
    with pytest.raises(SecretUnavailable, match="inside the workspace"):
        b.resolve(b.secrets_for("bash"))


def test_a_file_value_loses_its_final_newline_for_redaction(tmp_path: Path) -> None:
    (tmp_path / "key").write_text(VALUE + "\n")
    b, seen = broker(tmp_path, {"name": "T", "source": f"file:{tmp_path}/key", "tools": ["bash"]})
    assert b.resolve(b.secrets_for("bash")) == {"T": VALUE} and seen == [{"T": VALUE}]


def test_the_store_redacts_events_blobs_and_the_task_once_told(tmp_path: Path) -> None:
    with EventStore.open(tmp_path / "t.db") as store:
        store.redact_also({"T": VALUE})
        run = store.create_run(f"use {VALUE}")
        e = store.append(run, SandboxFailed(error=f"x {VALUE} y"))
        h = store.put_blob(f"file with {VALUE}\n".encode())
        assert e.payload["error"] == "x [secret:T] y" and e.data_as(SandboxFailed).error == "x [secret:T] y"
        assert store.get_blob(h) == b"file with [secret:T]\n" and store.run(run).task == "use [secret:T]"
        assert store.verify(run) >= 1
    assert VALUE.encode() not in (tmp_path / "t.db").read_bytes()


@pytest.mark.bwrap
def test_a_file_the_sandbox_mounts_and_its_user_can_read_is_refused(tmp_path: Path) -> None:
    """A key under a directory the sandbox mounts (here an extra read-only path, like tether's interpreter or
    /etc) is no secret when the sandbox user can read it: every command, listed or not, could."""
    (tmp_path / "ws").mkdir()
    ro = tmp_path / "ro"
    ro.mkdir()
    key = ro / "key"
    key.write_text(VALUE)
    box = BwrapSandbox(tmp_path / "ws", ro_paths=[ro])
    b, seen = broker(tmp_path, {"name": "T", "source": f"file:{key}", "tools": ["bash"]})
    key.chmod(0o644)
    with pytest.raises(SecretUnavailable, match="mounted in the sandbox and readable by its user"):
        b.sandbox_for(box, "bash")
    assert seen == []
    key.chmod(0o600)
    if box.privileged:  # root's 0600 file: the sandbox user cannot read it, so it may be brokered
        assert b.sandbox_for(box, "bash") is not box
        assert box.run(["cat", str(key)], cwd=tmp_path / "ws", timeout_s=30).exit_code != 0
    else:  # the sandbox runs as its owner
        with pytest.raises(SecretUnavailable, match="readable by its user"):
            b.sandbox_for(box, "bash")


def test_learn_registers_every_readable_value_and_skips_a_missing_one(tmp_path: Path) -> None:
    """A resumed driver must redact what an earlier process handed out (a file a call wrote the value into,
    read back by a tool that carries no secret), so every readable value is learnt at start; nothing is
    handed to a sandbox, and a missing source is left to fail the call that needs it."""
    b, seen = broker(
        tmp_path,
        {"name": "T", "source": "env:TOK", "tools": ["bash"]},
        {"name": "GONE", "source": "env:MISSING", "tools": ["bash"]},
    )
    b.learn()
    assert seen == [{"T": VALUE}]
