"""The daemon a hook call starts imports what the hook process imports, and nothing from where the agent ran
the hook or from its environment: ``python -m`` would put the working directory (the project, perhaps a cloned
repository) first on the path, ``PYTHONPATH`` and the user site would come next, and the daemon stays resident
as the user's gate for every later call."""

from __future__ import annotations

from pathlib import Path

from hookkit import wait_for

from tether.hooks import client
from tether.hooks.daemon import stop_daemon


def plant(directory: Path, marker: Path) -> None:
    """A ``tether`` package and a ``yaml`` module that leave ``marker`` behind when imported."""
    (directory / "tether").mkdir(parents=True)
    touch = f"open({str(marker)!r}, 'a').write({str(directory)!r} + '\\n')\n"
    (directory / "tether" / "__init__.py").write_text(touch)
    (directory / "yaml.py").write_text(touch)


def test_a_started_daemon_imports_nothing_from_the_project_or_pythonpath(tmp_path: Path, monkeypatch) -> None:
    marker = tmp_path / "ran"
    project, elsewhere = tmp_path / "cloned-repo", tmp_path / "pythonpath"
    plant(project, marker)
    plant(elsewhere, marker)
    monkeypatch.chdir(project)  # where the agent runs its hooks
    monkeypatch.setenv("PYTHONPATH", str(elsewhere))
    sock = tmp_path / "d" / "hookd.sock"
    sock.parent.mkdir(mode=0o700)
    client.spawn(str(sock))
    try:
        wait_for(sock, timeout=30)  # the real daemon, from this tether's directory, serves
    finally:
        stopped = stop_daemon(str(sock))
    assert not marker.exists(), f"the daemon imported planted code from {marker.read_text()}"
    assert stopped


def test_the_daemon_builds_every_kind_module_at_its_start() -> None:
    """A cold call imports only the kind modules of its own kinds (events/payload.py ``LATER``); the daemon, which
    serves many sessions for hours, imports all of them with its other imports (``Collections.take``), so no
    request builds payload classes, and they are frozen with the rest."""
    import json
    import subprocess
    import sys

    probe = (
        "import json, sys\n"
        "from tether.events.payload import LATER\n"
        "from tether.hooks.daemon import Collections\n"
        "taking = Collections()\n"
        "before = [m for m in LATER if 'tether.events.' + m in sys.modules]\n"
        "taking.take()\n"
        "after = sorted(m for m in LATER if 'tether.events.' + m in sys.modules)\n"
        "taking.give_back()\n"
        "print(json.dumps([before, after]))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    from tether.events.payload import LATER

    assert json.loads(out.stdout) == [[], sorted(LATER)]


def test_the_daemon_builds_every_models_validator_at_its_start() -> None:
    """The envelope's and the payload kinds' validators wait for their first use (``defer_build``); the daemon builds
    them all at its start, before it listens, so its first answered call does not build those it meets."""
    import json
    import subprocess
    import sys

    probe = (
        "import json, pydantic\n"
        "from tether.hooks.daemon import Collections\n"
        "def waiting():\n"
        "    found, todo = [], pydantic.BaseModel.__subclasses__()\n"
        "    while todo:\n"
        "        model = todo.pop()\n"
        "        todo.extend(model.__subclasses__())\n"
        "        if model.__module__.startswith('tether.') and not model.__pydantic_complete__:\n"
        "            found.append(model.__qualname__)\n"
        "    return found\n"
        "taking = Collections()\n"
        "import tether.hooks.answer, tether.events.payload as p\n"
        "p.REGISTRY.complete()\n"
        "before = len(waiting())\n"
        "taking.take()\n"
        "after = waiting()\n"
        "taking.give_back()\n"
        "print(json.dumps([before, after]))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    before, after = json.loads(out.stdout)
    assert before > 100, "the kinds' and the envelope's models wait for their first use"
    assert after == [], "all built at the daemon's start"
