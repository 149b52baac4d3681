"""tether.keptcode: the tables of code kept beside tether's bytecode are trusted as that bytecode is.

Each table (the ``__init__`` code of :mod:`tether.compiled`, the modules' code of :mod:`tether.hooks.modulecode`) is
code every hook process runs: a managed install refuses one another user could write, as it refuses such a ``.pyc``.
The tables' reading and writing are held by ``test_compiled.py`` and ``hooks/test_module_code.py``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tether import compiled, keptcode
from tether.hooks import modulecode

TABLES = {
    "the __init__ code": ("", compiled.table_path()),
    "the modules' code": ("hooks", keptcode.table_path(modulecode.__cached__, "module-code-gate", modulecode.FORMAT)),
}


@pytest.mark.parametrize("kept", TABLES)
def test_a_managed_install_refuses_a_table_another_user_could_write(kept: str) -> None:
    from tether.hooks.trust import changeable_by_others

    folder, path = TABLES[kept]
    assert path is not None
    package = Path(tempfile.mkdtemp(dir="/tmp", prefix="tether-pkg-"))
    try:
        package.chmod(0o755)
        (package / "tether" / "hooks").mkdir(parents=True)
        (package / "tether" / "hooks" / "hook.sh").write_text("")
        cache = package / "tether" / folder / "__pycache__"
        cache.mkdir()
        cache.chmod(0o755)
        table = cache / Path(path).name
        table.write_bytes(b"")
        table.chmod(0o644)
        command = f"/usr/bin/bash {package}/tether/hooks/hook.sh /usr/bin/python3 claude-code || exit 2"
        assert changeable_by_others(command) == []
        table.chmod(0o666)  # any user could put code into every user's hook process
        assert changeable_by_others(command) == [f"{table} (mode -rw-rw-rw-: users other than its owner can change it)"]
        table.chmod(0o644)
        if os.geteuid() == 0:
            os.chown(table, 65534, 65534)
            assert changeable_by_others(command) == [f"{table} (owned by uid 65534, who can change it)"]
    finally:
        shutil.rmtree(package)
