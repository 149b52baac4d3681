"""Which store a spec names, and opening it: a SQLite file path, or a ``postgresql://`` URL.

One function opens a store for every caller (the CLI's ``--db`` and ``$TETHER_DB``, ``Harness(db=…)``, the
console), so a new backend is added here and nowhere else. A spec stays a ``str`` until it is known to be a
file: a URL made into a :class:`~pathlib.Path` would lose the ``//`` of its authority.

A PostgreSQL-backed workspace still has local files: the memory database (``memory.db``) and nothing else
that a store writes. They live in ``local`` (the workspace's ``.tether/`` directory); the store's ``path``
names a place in that directory (``.tether/postgresql``) where no file is written, so that every caller that
finds the memory "beside the log" (``path.parent``) finds it there. See docs/store.md.
"""

from __future__ import annotations

import os

from tether import disk

from .anchor import Signer
from .redact import url_without_password
from .store import LOCK_TIMEOUT_S, EventStore

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from pathlib import Path
    from typing import TypeAlias

    from tether.disk import StrPath

    from .protocol import Store  # the store surface, for the type checker: a hook call does not import it

#: A SQLite database file (a ``Path``, or a text that :func:`is_url` says is no URL: a hook call's, without
#: pathlib), or a postgresql:// URL. A string, so that pathlib is not imported to make the union.
StoreSpec: TypeAlias = "str | Path"
URL_SCHEMES = ("postgresql", "postgres")
LOCAL_DIR = ".tether"
DB_FILE = f"{LOCAL_DIR}/tether.db"  # in the workspace, as Path(LOCAL_DIR) / "tether.db" spells it


#: What ``urlsplit`` drops before it reads a URL: C0 controls and the space at the start, tabs and line ends anywhere.
_LEADING = "".join(map(chr, range(33)))
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.")


def is_url(spec: StoreSpec) -> bool:
    """Whether ``spec`` is a PostgreSQL URL (``postgresql://…`` or ``postgres://…``) rather than a file: as
    ``urlsplit(spec).scheme.lower()`` reads the scheme, without ``urllib.parse`` (which imports ``ipaddress``) on
    every hook call. A text with an authority (``//`` after the scheme, once ``urlsplit`` has dropped what it
    drops), where ``urlsplit`` may raise (a bracket, a non-ASCII host), and a PostgreSQL scheme are read by
    ``urlsplit`` itself: the same answer and the same error (held to ``urlsplit`` by hypothesis in
    ``tests/store/test_is_url.py``)."""
    if not isinstance(spec, str):
        return False
    text = spec.lstrip(_LEADING).replace("\t", "").replace("\r", "").replace("\n", "")
    i = text.find(":")
    scheme = text[:i] if i > 0 and text[0].isascii() and text[0].isalpha() else ""
    if not _SCHEME_CHARS.issuperset(scheme):
        scheme = ""
    rest = text[i + 1 :] if scheme else text
    if rest.startswith("//") or scheme.lower() in URL_SCHEMES:
        from urllib.parse import urlsplit  # a URL, or a text whose authority urlsplit checks

        return urlsplit(spec).scheme.lower() in URL_SCHEMES
    return False


def spec_of(value: str | Path) -> StoreSpec:
    """A ``--db`` or ``$TETHER_DB`` value as a spec: a URL kept as text, anything else a file path."""
    from pathlib import Path  # the CLI's and the harness's: a hook call's spec is the client's text

    return value if is_url(value) else Path(value)


def default_spec(workspace: Path) -> StoreSpec:
    """Where a workspace's log is: ``$TETHER_DB`` (a file or a URL), else ``<workspace>/.tether/tether.db``."""
    env = os.environ.get("TETHER_DB")
    return spec_of(env) if env else workspace / DB_FILE


def describe(spec: StoreSpec) -> str:
    """The spec for messages and pages: a file's path, or the URL with any password replaced by ``***``."""
    return url_without_password(spec) if isinstance(spec, str) and is_url(spec) else str(spec)


def exists(spec: StoreSpec) -> bool:
    """Whether there may be a log to read: a file that exists; a URL always (the server answers on open)."""
    return is_url(spec) or disk.exists(spec)


def local_dir(spec: StoreSpec, workspace: StrPath | None = None) -> Path:
    """The directory of the workspace's local files (memory.db): a file's own directory; for a URL, the
    workspace's ``.tether/`` (the current directory's when no workspace is known)."""
    from pathlib import Path  # a URL's store (a hook call on a file never asks)

    if is_url(spec):
        return (Path(workspace) if workspace else Path.cwd()) / LOCAL_DIR
    return Path(spec).parent


def open_store(
    spec: StoreSpec,
    *,
    create: bool = True,
    readonly: bool = False,
    signer: Signer | None = None,
    local: Path | None = None,
    lock_timeout_s: float = LOCK_TIMEOUT_S,
) -> Store:
    """Open the store ``spec`` names (see :func:`spec_of`); ``create`` makes a new one (a file, or the schema
    in an empty PostgreSQL database); ``readonly`` never writes; ``signer`` signs checkpoints. ``local`` is
    the directory of a PostgreSQL-backed workspace's local files (:func:`local_dir`). A write that waits for
    another process's lock (SQLite's writer lock, a PostgreSQL run's) longer than ``lock_timeout_s`` fails
    with :class:`~tether.errors.DatabaseLocked`."""
    if is_url(spec):
        try:
            from .pgstore import PgStore
        except ImportError as e:
            from tether.errors import InputError

            raise InputError(
                f"{describe(spec)}: a PostgreSQL store needs psycopg ({e}); pip install 'tether[postgres]'"
            ) from e
        return PgStore.open(
            str(spec), create=create, readonly=readonly, signer=signer, local=local, lock_timeout_s=lock_timeout_s
        )
    return EventStore.open(spec, create=create, readonly=readonly, signer=signer, lock_timeout_s=lock_timeout_s)
