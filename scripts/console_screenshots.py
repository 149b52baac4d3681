"""Screenshots of the console's main pages for docs/console/ (run it after changing a page's look).

It makes real runs first — the bugfix demo (the recorded trajectory through the whole kernel) and a run that
waits for an approval (its model proposes ``git push``) — serves the console over them on loopback, and
photographs the pages in headless Chromium (the distribution's ``chromium``).

    .venv/bin/python scripts/console_screenshots.py [OUT_DIR]   # default: docs/console
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from playwright.sync_api import sync_playwright

from tether import Harness
from tether.cli.demo_cmds import prepare
from tether.console.server import Background
from tether.events.store import EventStore
from tether.models.base import Message, ModelResponse, ToolSpec
from tether.models.function import FunctionModel, call, reply

REPO = Path(__file__).resolve().parents[1]


def pusher(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
    return reply("The fix is in; pushing it for review.", [call("bash", command="git push origin main")])


def make_runs(work: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "tether.cli.main", "demo", "--workdir", str(work / "demo")],
        check=True,
        capture_output=True,
    )
    db = work / "demo" / "tether.db"
    waiting = prepare(REPO / "examples" / "bugfix", work / "waiting")
    Harness(waiting / "envelope.yaml", db=db, model=FunctionModel(pusher)).run("Publish the median fix")
    return db


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        db = make_runs(Path(tmp))
        with EventStore.open(db, readonly=True) as store:
            demo = store.runs()[0].run_id
            turns = [e.payload["turn"] for e in store.events(demo) if e.kind == "model.responded"]
            edit = next(
                e for e in store.events(demo) if e.kind == "action.completed" and e.payload["tool"] == "edit_file"
            )
        server = Background(db)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1280, "height": 860})
                shots = {
                    "runs.png": server.url,
                    "run.png": f"{server.url}runs/{demo}",
                    "timeline.png": f"{server.url}runs/{demo}?at={edit.seq - 3}#e{edit.seq - 3}",
                    "loop.png": f"{server.url}runs/{demo}/turns/{turns[3]}",
                    "approvals.png": f"{server.url}approvals",
                }
                for name, url in shots.items():
                    page.goto(url)
                    page.screenshot(path=str(out / name))
                    print(out / name)
                browser.close()
        finally:
            server.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "docs" / "console")
