"""Hostile documents: duplicate keys, alias bombs, cycles, deep nesting, huge or odd files.

Each is refused with a problem naming the JSON path, through the loader and through the CLI, and
nothing is half-parsed into an envelope.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from machinekit import unavailable
from typer.testing import CliRunner

from tether.cli.main import app, main
from tether.envelope import load_envelope
from tether.envelope.document import MAX_ALIAS_NODES, MAX_DEPTH, MAX_DOCUMENT_BYTES, parse_json, parse_yaml
from tether.envelope.source import read_bytes
from tether.errors import EnvelopeInvalid, FileError, ParseError

runner = CliRunner()

LAUGHS = "\n".join(
    [f"a0: &a0 [{', '.join(['x'] * 9)}]"] + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
)
"""Nine levels of nine-fold aliases: 387 million nodes once expanded, 80 lines of text."""


def problems(text: str) -> list[tuple[str, str]]:
    with pytest.raises(EnvelopeInvalid) as e:
        parse_yaml(text, "doc.yaml")
    return [(p.path, p.found) for p in e.value.problems]


def test_duplicate_key_names_path_and_both_lines() -> None:
    got = problems("environment:\n  filesystem:\n    write: []\n    read: ['**']\n    write: ['**']\n")
    assert got == [("$.environment.filesystem.write", "key 'write' again at line 5 (first at line 3)")]


@pytest.mark.parametrize(
    "text",
    [
        "{a: 1, a: 2}",  # flow style, same line
        "x: {yes: 1, true: 2}",  # two spellings of one boolean key
        "x: {1: a, 0x1: b}",  # two spellings of one integer key
        "list:\n  - {id: r, id: s}\n",  # inside a sequence
    ],
)
def test_duplicate_key_spellings(text: str) -> None:
    assert len(problems(text)) == 1


def test_every_duplicate_is_reported() -> None:
    got = problems("a: 1\na: 2\nb: {c: 1, c: 2}\n")
    assert [p for p, _ in got] == ["$.a", "$.b.c"]


def test_merge_key_override_is_not_a_duplicate() -> None:
    assert parse_yaml("base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  x: 3\n", "d.yaml")["d"] == {"x": 3, "y": 2}


def test_billion_laughs_is_refused_quickly() -> None:
    got = problems(LAUGHS)
    assert len(got) == 1
    assert f"more than {MAX_ALIAS_NODES} extra nodes" in got[0][1]


def test_aliases_within_the_limit_are_fine() -> None:
    text = "a: &a [1, 2, 3]\n" + "".join(f"b{i}: *a\n" for i in range(100))
    assert parse_yaml(text, "ok.yaml")["b99"] == [1, 2, 3]


def test_recursive_alias_is_refused() -> None:
    assert problems("a: &x [1, *x]") == [("$.a[1]", "an alias to a node that contains it")]


def test_depth_limit() -> None:
    ok = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert parse_yaml(ok, "ok.yaml") is not None
    got = problems("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    assert got[0][1] == f"nesting deeper than {MAX_DEPTH} levels"


def test_nesting_beyond_the_parser_is_an_error_not_a_crash() -> None:
    got = problems("[" * 50_000 + "]" * 50_000)
    assert got == [("$", "nesting too deep to parse")]


def test_syntax_error_names_line() -> None:
    with pytest.raises(ParseError, match=r"doc.yaml: invalid YAML at line 2"):
        parse_yaml("a: 1\n b: [\n", "doc.yaml")


def test_unsafe_tag_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        parse_yaml("a: !!python/object/apply:os.system ['true']", "doc.yaml")


def test_json_duplicates_and_depth() -> None:
    with pytest.raises(EnvelopeInvalid) as e:
        parse_json('{"a": [{"x": 1, "x": 2}], "b": 1, "b": 2}', "d.json")
    assert sorted(p.path for p in e.value.problems) == ["$.a[0].x", "$.b"]
    with pytest.raises(EnvelopeInvalid, match="nesting"):
        parse_json("[" * (MAX_DEPTH + 2) + "]" * (MAX_DEPTH + 2), "d.json")
    with pytest.raises(EnvelopeInvalid, match="nesting too deep"):
        parse_json("[" * 100_000 + "]" * 100_000, "d.json")


def test_size_cap(tmp_path: Path) -> None:
    big = tmp_path / "envelope.yaml"
    big.write_text("# padding\n" * (MAX_DOCUMENT_BYTES // 10 + 1))
    with pytest.raises(EnvelopeInvalid) as e:
        load_envelope(big)
    (p,) = e.value.problems
    assert p.path == "$" and p.found == f"{big.stat().st_size} bytes" and str(MAX_DOCUMENT_BYTES) in p.expected


@pytest.mark.parametrize("extra", [-1, 0, 1, 70_000])
def test_the_bounded_read_reads_whole_files_up_to_the_limit_and_refuses_one_byte_more(
    tmp_path: Path, extra: int
) -> None:
    """Read in steps (the file's size and one byte more first): a file at the limit is read whole, one over it
    (or far over) is refused, whatever ``fstat`` said."""
    limit = 100_000
    f = tmp_path / "e.yaml"
    f.write_bytes(bytes(range(256)) * ((limit + extra) // 256) + b"z" * ((limit + extra) % 256))
    if extra <= 0:
        assert read_bytes(f, limit) == f.read_bytes()
    else:
        with pytest.raises(EnvelopeInvalid, match=f"at most {limit} bytes"):
            read_bytes(f, limit)


def test_a_file_that_reports_no_size_is_read_to_its_end() -> None:
    status = Path("/proc/self/status")  # a regular file whose size fstat says is 0
    if not status.exists() or status.stat().st_size != 0:
        unavailable("no /proc here")
    data = read_bytes(status)
    assert data.startswith(b"Name:") and b"\nPid:" in data and data.endswith(b"\n")


def test_fifo_and_device_are_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "envelope.yaml"
    os.mkfifo(fifo)  # nobody writes to it: reading it would block forever
    with pytest.raises(FileError, match="not a regular file"):
        load_envelope(fifo)
    with pytest.raises(FileError, match="not a regular file"):
        load_envelope(Path("/dev/zero"))
    with pytest.raises(FileError, match="a directory"):
        load_envelope(tmp_path)


def test_not_utf8(tmp_path: Path) -> None:
    bad = tmp_path / "e.yaml"
    bad.write_bytes(b"a: \xff\xfe\n")
    with pytest.raises(FileError, match="not UTF-8 at byte 3"):
        load_envelope(bad)


def test_validate_cli_reports_duplicate_key_as_invalid(example: Path) -> None:
    env = example / "envelope.yaml"
    env.write_text(env.read_text() + "\nbudgets:\n  usd: 1000\n")
    result = runner.invoke(app, ["validate", str(env), "--strict", "--json"])
    assert result.exit_code == 1, result.output
    out = json.loads(result.output)
    assert out["valid"] is False
    assert [p["path"] for p in out["problems"]] == ["$.budgets"]


def test_compile_refuses_duplicate_key_in_template(example: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = example / "envelope.yaml"
    before = env.read_text()
    env.write_text(before + "\nagent:\n  model: openai:gpt-4.1\n")
    with pytest.raises(SystemExit) as exit_:
        main(["compile", str(example / "plan.yaml"), "-o", str(env)])
    assert exit_.value.code == 2
    assert "$.agent: found key 'agent' again" in capsys.readouterr().err
    assert env.read_text() == before + "\nagent:\n  model: openai:gpt-4.1\n"  # nothing rewritten
