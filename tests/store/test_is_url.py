"""``backends.is_url`` reads a spec's scheme as ``urllib.parse.urlsplit`` does, without importing it for a file's path
(a cold hook call asks on every call): held to ``urlsplit`` by hypothesis, errors included (a bracket or a
non-ASCII character in an authority makes ``urlsplit`` raise ``ValueError``; so does ``is_url``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tether.events import backends
from tether.events.backends import URL_SCHEMES, is_url

PIECES = st.sampled_from(
    [
        "postgresql",
        "postgres",
        "POSTGRES",
        "PostgreSQL",
        "sqlite",
        "p",
        "1",
        "+",
        ".",
        "-",
        ":",
        "/",
        "//",
        "\t",
        "\n",
        "\r",
        " ",
        "\x00",
        "\x1f",
        "[",
        "]",
        "@",
        "?",
        "#",
        "é",
        "\u2100",
        "\ufe6b",
        "~",
        "..",
        "db",
        "%2F",
    ]
)
TEXTS = st.one_of(st.text(), st.lists(PIECES, max_size=10).map("".join))


def expected(spec: str) -> bool | type[Exception]:
    try:
        return urlsplit(spec).scheme.lower() in URL_SCHEMES
    except ValueError:
        return ValueError


def answer(spec: str) -> bool | type[Exception]:
    try:
        return is_url(spec)
    except ValueError:
        return ValueError


@settings(max_examples=3000)
@given(TEXTS)
@example("postgresql://u:p@h/db")
@example("\t p\nostgres://h/db")
@example("//[h/db")
@example("/\t/[h/db")
@example("x://\u2100/db")
@example("postgresql:/x")
@example("1postgres://h")
@example("post gres://h")
@example("")
def test_is_url_answers_as_urlsplit_reads_the_scheme(spec: str) -> None:
    assert answer(spec) == expected(spec)


def test_a_path_object_is_never_a_url() -> None:
    assert not is_url(Path("postgresql:/x")) and not is_url(Path("postgresql://h/db"))


def test_a_file_path_is_told_apart_without_urllib() -> None:
    """A file's path (even one holding ``:`` or ``//`` past its start) needs no ``urllib.parse``: with its import
    made to fail, a path is still no URL; a URL still imports it (and fails here)."""
    code = (
        "import sys; from tether.events.backends import is_url; sys.modules['urllib.parse'] = None; "
        "print(any(is_url(s) for s in ('/tmp/x/.tether/tether.db', 'db:x', 'a//b', 'C:/x', ' x:/y')))\n"
        "try:\n    is_url('postgres://h/db')\nexcept ImportError:\n    print('imports')"
    )
    src = str(Path(backends.__file__).resolve().parents[2])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": src})
    assert out.stdout.split() == ["False", "imports"], out.stderr
