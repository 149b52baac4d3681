"""A throwaway PostgreSQL for tests: the distribution's server, a fresh cluster in a temporary directory.

Why the distribution's binaries (Debian's ``postgresql``, which .ci/run installs) and not the ``pgserver``
wheel: pgserver's last release (0.1.4, 2024) bundles PostgreSQL 16.2, and run as root it creates a login
user ``pgserver`` on the host with ``useradd`` and makes every parent directory of its data world-readable.
Here nothing outside the temporary directory changes: as root the server runs as the unprivileged
``tether-sandbox`` user (PostgreSQL refuses to run as root), which .ci/run creates for the sandbox anyway.

The server listens on a Unix socket in its own directory and on no TCP port at all (``listen_addresses=''``),
so any number of them (one per xdist worker) run side by side without choosing ports, and nothing on the
network can reach them.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

UNPRIVILEGED = "tether-sandbox"
SUPERUSER = "tether"
OWNER, APP = "tether_owner", "tether_app"  # the tables' owner (makes them) and the store's insert-only role
STORES = "tether_stores"  # the database holding the tests' stores, a schema each
START_TIMEOUT_S = 60.0


def server_bin() -> Path | None:
    """The directory holding ``initdb`` and ``postgres``: on PATH, else Debian's newest /usr/lib/postgresql/N/bin."""
    found = shutil.which("initdb")
    if found and (Path(found).resolve().parent / "postgres").exists():
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    return Path(versions[-1]).parent if versions else None


def why_not() -> str | None:
    """Why no throwaway PostgreSQL can start here (None if it can): the reason a test skips, or CI fails."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install -e '.[postgres]', which `make` does)"
    if server_bin() is None:
        return "no PostgreSQL server binaries (apt-get install postgresql, which .ci/run does)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(UNPRIVILEGED)
        except KeyError:
            return f"running as root and PostgreSQL refuses root, but there is no user {UNPRIVILEGED} (.ci/run adds it)"
    return None


@dataclass
class Postgres:
    """A running server: connect with ``psycopg.connect(pg.conninfo())``."""

    socket_dir: Path
    process: subprocess.Popen[bytes]
    log: Path

    def conninfo(self, dbname: str = "postgres") -> str:
        return f"host={self.socket_dir} port=5432 user={SUPERUSER} dbname={dbname}"

    def url(self, dbname: str = "postgres", user: str = SUPERUSER, schema: str | None = None) -> str:
        """The same as a ``postgresql://`` URL (the form ``--db`` and ``TETHER_DB`` take)."""
        search = f"&options=-csearch_path%3D{schema}" if schema else ""
        return f"postgresql://{user}@/{dbname}?host={self.socket_dir}{search}"

    def tether_store(self) -> str:
        """A new, empty PostgreSQL schema holding tether's tables, made by their owner role (``tether db init``):
        the URL of the application role, which may only read and insert the log. Each call a schema of its own
        (``search_path`` in the URL) in one database per server, which is far cheaper than a database each."""
        import psycopg
        from psycopg import sql

        from tether.events.pgstore import init

        self.stores_database()
        schema = f"s_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.conninfo(STORES), autocommit=True) as conn:
            conn.execute(
                sql.SQL("CREATE SCHEMA {} AUTHORIZATION {}").format(sql.Identifier(schema), sql.Identifier(OWNER))
            )
        init(self.url(STORES, OWNER, schema), app_role=APP)
        return self.url(STORES, APP, schema)

    def stores_database(self) -> None:
        """The owner and application roles and the database of the stores' schemas, made on first use."""
        import psycopg

        with psycopg.connect(self.conninfo(), autocommit=True) as conn:
            if conn.execute("SELECT 1 FROM pg_roles WHERE rolname=%s", (OWNER,)).fetchone() is None:
                conn.execute(f"CREATE ROLE {OWNER} LOGIN")
                conn.execute(f"CREATE ROLE {APP} LOGIN")
                conn.execute(f"CREATE DATABASE {STORES} OWNER {OWNER}")

    def create_database(self, name: str, owner: str = SUPERUSER) -> str:
        """A new, empty database (a test's own): its conninfo."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.conninfo(), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(name), sql.Identifier(owner)))
        return self.conninfo(name)


def _as_unprivileged() -> dict[str, object]:
    """subprocess arguments that run a command as the unprivileged user when we are root."""
    if os.geteuid() != 0:
        return {}
    entry = pwd.getpwnam(UNPRIVILEGED)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


@contextlib.contextmanager
def running(*, durable: bool = False) -> Iterator[Postgres]:
    """initdb a fresh cluster in a temporary directory, start it, yield it; stop it and delete everything.

    Not ``durable`` (tests): no fsync, which nothing a test checks can observe, since no test crashes the
    machine. A benchmark of durable appends passes ``durable=True``, or it would measure a server that lies.
    """
    bindir = server_bin()
    assert bindir is not None, why_not()
    # Not under pytest's tmp_path: its parents are private to root, and the server's user must reach its socket.
    root = Path(tempfile.mkdtemp(prefix="tether-pg-"))
    data, log = root / "data", root / "server.log"
    if os.geteuid() == 0:
        entry = pwd.getpwnam(UNPRIVILEGED)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    env = {"PATH": os.environ.get("PATH", ""), "LC_ALL": "C.UTF-8", "TZ": "UTC"}
    process: subprocess.Popen[bytes] | None = None
    try:
        init = [str(bindir / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--no-sync"]
        done = subprocess.run(init, capture_output=True, env=env, cwd=root, **_as_unprivileged())
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed ({done.returncode}): {done.stderr.decode(errors='replace')[-2000:]}")
        serve = [str(bindir / "postgres"), "-D", str(data), "-k", str(root), "-c", "listen_addresses="]
        if not durable:
            serve += ["-c", "fsync=off", "-c", "full_page_writes=off"]
        with log.open("wb") as out:
            process = subprocess.Popen(
                serve, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=root, **_as_unprivileged()
            )
        pg = Postgres(root, process, log)
        _wait_ready(pg)
        yield pg
    finally:
        if process is not None:
            _stop(process)
        shutil.rmtree(root, ignore_errors=True)


def _wait_ready(pg: Postgres) -> None:
    import psycopg

    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if pg.process.poll() is not None:
            raise RuntimeError(
                f"postgres exited ({pg.process.returncode}): {pg.log.read_text(errors='replace')[-2000:]}"
            )
        try:
            psycopg.connect(pg.conninfo(), connect_timeout=2).close()
            return
        except psycopg.OperationalError as e:
            if time.monotonic() > deadline:
                raise RuntimeError(f"postgres did not accept connections in {START_TIMEOUT_S:g}s: {e}") from e
            time.sleep(0.05)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Immediate shutdown (SIGQUIT: no checkpoint, the cluster is deleted next); SIGKILL after 15 s."""
    if process.poll() is None:
        process.send_signal(signal.SIGQUIT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
