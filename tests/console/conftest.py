"""Console fixtures: tether databases written through the real store, the console served on loopback, and
one headless Chromium (the distribution's, never a downloaded one) for the whole session."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether.console.server import Background
from tether.events.store import EventStore


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "tether.db"


@pytest.fixture
def served(db: Path) -> Iterator[Background]:
    """The console over ``db`` (created empty first), on a free loopback port."""
    EventStore.open(db).close()
    server = Background(db)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One browser per module, closed after it: while sync Playwright runs, its event loop is this thread's,
    so a later test's ``asyncio.run`` (``Harness.arun``) would fail if it stayed open for the session."""
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium")
    assert executable, "the browser marker's skip rule (tests/conftest.py) lets no test here run without chromium"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser context (own cookies) that fails the test on any script error."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_default_timeout(15_000)
    yield page
    context.close()
    assert not errors, f"script errors in the console: {errors}"
