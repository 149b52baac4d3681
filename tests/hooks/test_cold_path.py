"""The cold path: a tool call decided in a fresh process (``--no-daemon``) imports only what deciding needs.

Each module the decision does not need costs every cold call its import (and pydantic models their class
construction), so a module that creeps back onto the path fails here, named. The probe is a real
``tether hook claude-code --no-daemon`` entry in a new interpreter, on a session whose run exists (its first
call, which takes the test baseline, is made before).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from hookkit import payload

#: Not imported to decide a PreToolUse: the CLI and its libraries, the YAML loader, signing, the kernel's
#: runtime and strict loader, sensors and the test surface (a stop's), sandboxes, model adapters, the event
#: kinds of graphs/schedules/workers/egress/MCP, the daemon's and installer's modules, observability.
NOT_ON_THE_COLD_PATH = (
    "typer",
    "rich",
    "yaml",
    "cryptography",
    "httpx",
    "mcp",
    "tether.cli",
    "tether.console",
    "tether.observe",
    "tether.graph",
    "tether.distributed",
    "tether.sandbox",
    "tether.kernel.runtime",
    "tether.kernel.session",
    "tether.verify.cascade",
    "tether.verify.testsurface",
    "tether.hooks.integrity",
    "tether.hooks.install",
    "tether.hooks.daemon",
    "tether.events.kinds_graph",
    "tether.events.kinds_schedule",
    "tether.events.kinds_egress",
    "tether.events.kinds_mcp",
    "tether.events.kinds_distributed",
    "tether.models.anthropic",
    "tether.models.openai",
)

PROBE = """
import json, sys
from tether.hooks.entry import main
code = main(["claude-code", "--no-daemon"])
print(json.dumps({"exit": code, "modules": sorted(sys.modules)}))
"""


def cold(data: dict[str, object], env: dict[str, str]) -> tuple[str, dict[str, Any]]:
    """The hook's answer (its stdout) and what the probe saw, from one call in a new interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE], input=json.dumps(data), capture_output=True, text=True, env=env, timeout=120
    )
    answer, _, probe = out.stdout.rstrip("\n").rpartition("\n")
    assert probe.startswith("{"), out.stdout + out.stderr
    return answer, json.loads(probe)


def test_a_cold_tool_call_imports_only_what_deciding_needs(tmp_path: Path) -> None:
    env = {**os.environ, "TETHER_HOOK_DAEMON": "0", "CLAUDE_PROJECT_DIR": str(tmp_path)}
    env.pop("TETHER_DB", None)
    env.pop("TETHER_ENVELOPE", None)
    _, started = cold(payload("claude-code.SessionStart", tmp_path), env)  # creates the run: its baseline
    assert started["exit"] == 0
    answer, probe = cold(payload("claude-code.PreToolUse", tmp_path, tool_input={"command": "ls"}), env)
    assert json.loads(answer)["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert probe["exit"] == 0
    modules = set(probe["modules"])
    loaded = sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in NOT_ON_THE_COLD_PATH))
    assert loaded == [], f"imported on the cold path: {loaded}"
    assert "tether.guard.session" in modules and "pydantic" in modules  # the probe did decide in-process
