"""GlobSet answers exactly what ``fnmatch.fnmatchcase`` answers, for the gate's own globs and generated ones.

The gate's credential and start-up checks went from one compiled regular expression to string matching; a glob
that the new matcher reads differently would let a credential read through. So the matcher is compared with
``fnmatchcase`` on the real lists, on paths made from them (``*`` filled with slashes, dots, newlines, nothing),
and on random globs and strings over an alphabet dense in the characters that matter.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tether.policy.globs import GlobSet
from tether.policy.paths import PathPolicy

SETTINGS = settings(max_examples=400, deadline=None, derandomize=True, database=None)
FILLS = ("", "x", "/", "a/b", ".ssh", "\n", "*", "/home/u/.ssh/")


def expected(globs: tuple[str, ...], s: str) -> bool:
    return any(fnmatchcase(s, g) for g in globs)


def probes(globs: tuple[str, ...]) -> list[str]:
    out = []
    for g in globs:
        out += [g.replace("*", fill) for fill in FILLS]
        out += [g.replace("*", "x") + tail for tail in ("", "/", "x", "/id_rsa")]
        out += [g[:cut] for cut in range(0, len(g), 3)]
    return out


def test_the_gates_own_globs_match_as_fnmatch_matches(tmp_path: Path) -> None:
    policy = PathPolicy(tmp_path, None)
    for globs in (policy._credential, policy._startup):
        matcher = GlobSet(globs)
        extra = ["/etc/shadow", "/root/.ssh/id_rsa", "/home/a/b/.ssh", "/proc/1/environ", "/etc/ssh/ssh_host_key"]
        for s in probes(globs) + extra:
            assert matcher.match(s) == expected(globs, s), s


def test_the_policy_still_finds_credentials_and_startup_files(tmp_path: Path) -> None:
    policy = PathPolicy(tmp_path, None)
    home = policy.home
    assert policy.is_credential(f"{home}/.ssh/id_ed25519")
    assert policy.is_credential("/home/alice/.aws/credentials")
    assert policy.is_credential("/proc/12/environ")
    assert not policy.is_credential(f"{tmp_path}/src/app.py")
    assert policy.is_startup(f"{home}/.bashrc")
    assert policy.is_startup("/etc/profile.d/evil.sh")
    assert not policy.is_startup(f"{home}/.bashrc.bak")


GLOB = st.text(alphabet="ab/.*?[]!\\\n", max_size=8)
TEXT = st.text(alphabet="ab/.*?[]!\\\n", max_size=10)


@SETTINGS
@given(st.lists(GLOB, min_size=1, max_size=4), TEXT)
def test_any_globs_match_as_fnmatch_matches(globs: list[str], s: str) -> None:
    assert GlobSet(globs).match(s) == expected(tuple(globs), s)


@SETTINGS
@given(st.lists(st.text(alphabet="ab/.*", max_size=8), min_size=1, max_size=4), st.data())
def test_star_globs_match_the_strings_made_from_them(globs: list[str], data: st.DataObject) -> None:
    g = data.draw(st.sampled_from(globs))
    s = "".join(part + data.draw(st.text(alphabet="ab/.\n", max_size=4)) for part in g.split("*"))
    assert GlobSet(globs).match(s) == expected(tuple(globs), s)
