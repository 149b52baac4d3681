"""Shared MCP fixtures: the notes server over streamable HTTP on 127.0.0.1, one per module."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from mcpkit import HERE


@pytest.fixture(scope="module")
def notes_url() -> Iterator[str]:
    """The notes server over streamable HTTP, on a port the OS chose; stopped after the module."""
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "notes_server.py"), "--http"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()  # uvicorn would wait for a hung request (the slow tool) to end: not for long
        try:
            proc.wait(2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
