"""tether.ids: the text of ``uuid.uuid4().hex``, made without importing ``uuid``."""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from pathlib import Path

import tether
from tether.ids import uuid4_hex


def test_an_id_is_a_version_4_uuid_as_uuid_reads_it() -> None:
    ids = [uuid4_hex() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for text in ids:
        assert re.fullmatch(r"[0-9a-f]{32}", text)
        parsed = uuid.UUID(hex=text)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122 and parsed.hex == text
    # every other bit is random: each of the 32 digits but the version's takes many values
    for i in range(32):
        assert len({t[i] for t in ids}) == (1 if i == 12 else 4 if i == 16 else 16), i


def test_making_one_does_not_import_uuid() -> None:
    probe = "import sys; from tether.ids import uuid4_hex; uuid4_hex(); print('uuid' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-S", "-c", probe],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(Path(tether.__file__).parents[1])},
        check=False,
    )
    assert out.stdout.strip() == "False", out.stderr


def test_processes_forked_from_one_parent_make_different_ids() -> None:
    """Two children forked from a parent that made ids already: none of theirs repeats another's (no random state
    kept in the process that a fork would copy, as a buffered generator would)."""
    import os

    uuid4_hex()
    got: list[set[str]] = []
    for _ in range(2):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            os.write(write, " ".join(uuid4_hex() for _ in range(200)).encode())
            os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as f:
            got.append(set(f.read().decode().split()))
        assert os.waitpid(pid, 0)[1] == 0
    assert len(got[0]) == len(got[1]) == 200 and not got[0] & got[1]
