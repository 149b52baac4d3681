"""How long the console takes to open a run's page, a 5,000-event run against a 50-event one in the same run.

Prints the median time of ``GET /runs/{id}`` over loopback (server in this process, uvicorn) for each and
their ratio; where the long page's time goes (reading the log, verifying the chain, the fold behind the
header, rendering its one page — and, for contrast, rendering all of its events); with chromium installed,
the time until a headless browser has loaded each page. The page holds at most ``views.PAGE_SIZE`` events
whatever the run's length; what grows with the log is reading, verifying and folding it.

    .venv/bin/python benchmarks/console.py
"""

from __future__ import annotations

import http.client
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "console"))

from consolekit import write_run

from tether.console import views, web
from tether.console.server import Background
from tether.events.kinds import RunFinished
from tether.events.store import EventStore
from tether.status import RunStatus

TRIALS = 9


def get(server: Background, path: str) -> float:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=30)
    start = time.perf_counter()
    conn.request("GET", path)
    body = conn.getresponse().read()
    elapsed = time.perf_counter() - start
    conn.close()
    assert b'ol class="events"' in body
    return elapsed


def median(fn: object, *args: object) -> float:
    return statistics.median(fn(*args) for _ in range(TRIALS))  # type: ignore[operator]


def breakdown(db: Path, run_id: str) -> dict[str, float]:
    """Where the long run's page spends its time, step by step in this process (median of TRIALS each)."""
    with EventStore.open(db, readonly=True) as store:
        info = store.run(run_id)
        events = store.events(run_id)
        template = web.templates.get_template("_item.html")

        def timed(fn: Callable[[], object]) -> float:
            def once() -> float:
                start = time.perf_counter()
                fn()
                return time.perf_counter() - start

            return statistics.median(once() for _ in range(TRIALS))

        return {
            "read the log": timed(lambda: store.events(run_id)),
            "verify the chain": timed(lambda: store.verify(run_id)),
            "fold the header (status, usage, control)": timed(lambda: views.run_row(info, store.events(run_id), None)),
            "render one page of the timeline": timed(
                lambda: [template.render(it=it, run_id=run_id) for it in views.page(events, None).items]
            ),
            "render the whole timeline (no pagination)": timed(
                lambda: [template.render(it=it, run_id=run_id) for it in views.page(events, 0, len(events)).items]
            ),
        }


def browser_open(server: Background, path: str) -> float | None:
    executable = shutil.which("chromium")
    if executable is None:
        return None
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto(server.url)  # warm
        times = []
        for _ in range(5):
            start = time.perf_counter()
            page.goto(server.url + path.lstrip("/"), wait_until="load")
            times.append(time.perf_counter() - start)
        browser.close()
    return statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "tether.db"
        with EventStore.open(db) as store:
            short = write_run(store, "short", 5)
            long = write_run(store, "long", 560)
            for run_id in (short, long):  # finished: the pages measured are not following a live log
                store.append(run_id, RunFinished(status=RunStatus.NO_PROGRESS, result="benchmark"))
            sizes = {short: len(store.events(short)), long: len(store.events(long))}
        server = Background(db)
        try:
            get(server, f"/runs/{short}")  # warm
            t_short = median(get, server, f"/runs/{short}")
            t_long = median(get, server, f"/runs/{long}")
            steps = breakdown(db, long)
            b_short = browser_open(server, f"/runs/{short}")
            b_long = browser_open(server, f"/runs/{long}")
        finally:
            server.stop()
    print(f"GET /runs/ID, {sizes[short]:>5} events: {t_short * 1000:7.1f} ms (baseline)")
    print(
        f"GET /runs/ID, {sizes[long]:>5} events: {t_long * 1000:7.1f} ms  ({t_long / t_short:.1f}x the baseline; "
        f"{views.PAGE_SIZE} events on the page)"
    )
    for step, seconds in steps.items():
        print(f"  {step:<45} {seconds * 1000:7.1f} ms")
    if b_short is not None and b_long is not None:
        print(
            f"headless chromium, page loaded: {b_short * 1000:.0f} ms ({sizes[short]} events), "
            f"{b_long * 1000:.0f} ms ({sizes[long]} events; {b_long / b_short:.1f}x)"
        )
    else:
        print("headless chromium: not installed, browser timing skipped")


if __name__ == "__main__":
    main()
