"""The daemon's full garbage collections run after replies, never inside a call's reply path, and the collector
is left as it was found when the daemon stops (``serve`` runs in this test process)."""

from __future__ import annotations

import gc
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from hookkit import payload, wait_for

from tether.hooks import daemon as daemon_module
from tether.hooks.client import ask
from tether.hooks.daemon import Collections, serve, stop_daemon


def test_full_collections_happen_after_replies_only_and_the_collector_is_restored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = gc.get_threshold()
    gc.set_threshold(50, 1, 1)  # young collections often, and a full one as soon as the interpreter may
    replying = threading.local()
    full: list[bool] = []  # per full collection: was a reply being computed in this thread?

    def watch(phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and info["generation"] == 2:
            full.append(getattr(replying, "on", False))

    real_respond = daemon_module.respond

    def respond(*args: Any) -> Any:
        replying.on = True
        try:
            return real_respond(*args)
        finally:
            replying.on = False

    monkeypatch.setattr(daemon_module, "respond", respond)
    sock = tmp_path / "d" / "hookd.sock"
    sock.parent.mkdir(mode=0o700)
    monkeypatch.setenv("TETHER_HOOK_SOCKET", str(sock))
    gc.callbacks.append(watch)
    thread = threading.Thread(target=serve, args=(str(sock),), kwargs={"idle_s": 60.0}, daemon=True)
    try:
        thread.start()
        wait_for(sock)
        for i in range(40):
            data = payload("claude-code.PreToolUse", tmp_path, tool_input={"command": f"ls d{i}"}, tool_use_id=f"g{i}")
            reply = ask({"agent": "claude-code"}, json.dumps(data).encode())
            assert reply is not None and "allow" in reply.stdout
            if i == 0:  # answered once the daemon had imported its code and taken the collector over
                assert gc.get_threshold() == (50, 1, Collections.NEVER) and gc.get_freeze_count() > 0
        assert stop_daemon(str(sock))
        thread.join(timeout=30)
        assert full, "full collections still happen"
        assert not any(full), f"{full.count(True)} of {len(full)} full collections ran inside a reply"
        assert gc.get_threshold() == (50, 1, 1) and gc.get_freeze_count() == 0, "the collector as it was found"
    finally:
        gc.callbacks.remove(watch)
        gc.set_threshold(*before)
        gc.unfreeze()
        stop_daemon(str(sock))
