"""tether.canonical's SHA-256: the builtin ``_sha256`` in a process that has not imported ``hashlib`` (a cold hook
call), OpenSSL's otherwise and for a large input (from ``_hashlib``: ``hashlib.sha256`` itself, without
``hashlib.py``); the digests are hashlib's, byte for byte."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

import tether
from tether import canonical

PROBE = """
import json, sys
import tether.canonical as c
data = bytes(range(256)) * 300
out = [c.sha256(b"abc").hexdigest(), c.sha256_hex("h\u00e9"), c.sha256_hex(data), type(c.sha256(b"")).__module__,
       "_hashlib" in sys.modules, "hashlib" in sys.modules]
h = c.sha256(b"ab"); h.update(b"c"); out.insert(5, h.copy().hexdigest())
print(json.dumps(out))
"""


def fresh(*before: str) -> list[object]:
    src = str(__import__("pathlib").Path(tether.__file__).parents[1])
    code = "".join(f"import {m}\n" for m in before) + PROBE
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, env={"PYTHONPATH": src}, check=False
    )
    assert out.returncode == 0, out.stderr
    result: list[object] = json.loads(out.stdout)
    return result


def test_a_process_without_hashlib_hashes_with_the_builtin_to_the_same_digests() -> None:
    data = bytes(range(256)) * 300
    expected = [
        hashlib.sha256(b"abc").hexdigest(),
        hashlib.sha256("h\u00e9".encode()).hexdigest(),
        hashlib.sha256(data).hexdigest(),
    ]
    bare = fresh()
    assert bare[:3] == expected and bare[3] == "_sha256" and bare[5] == expected[0]
    assert bare[4] is True and bare[6] is False  # a large input: OpenSSL's, from _hashlib (not hashlib.py), loaded then
    with_hashlib = fresh("hashlib")
    assert with_hashlib[:3] == expected and with_hashlib[3] == "_hashlib" and with_hashlib[5] == expected[0]


def test_a_small_input_does_not_import_hashlib() -> None:
    src = str(__import__("pathlib").Path(tether.__file__).parents[1])
    code = "import sys, tether.canonical as c; c.sha256_hex('x' * 65535); print('_hashlib' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, env={"PYTHONPATH": src}, check=False
    )
    assert out.stdout.strip() == "False", out.stderr


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=1 << 17) | st.text(max_size=3000))
def test_every_digest_is_hashlibs(data: bytes | str) -> None:
    raw = data.encode() if isinstance(data, str) else data
    assert canonical.sha256_hex(data) == hashlib.sha256(raw).hexdigest()
    assert canonical.sha256(raw).hexdigest() == hashlib.sha256(raw).hexdigest()
