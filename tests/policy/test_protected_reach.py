"""A command never reaches ``.git``, ``.tether`` or a hook directory by naming a place that holds them.

``rm -rf .tether`` and ``rm -rf sub/.git`` were denied, but the gate judged a written place by its own text: a tree
changed as a whole was checked against the deny list only, and a glob by its last part. So, with the hook envelope:

- ``find . -name '*.db' -delete`` was allowed as "find only reads", and deletes ``.tether/tether.db``, the log;
- ``rm -rf sub``, ``mv sub``, ``chmod -R`` and ``find sub -delete`` were allowed where ``sub/.git`` is a repository;
- ``rm -f ?tether/tether.db``, ``[.]tether``, ``*/envelope.yaml``, ``**/tether.db`` were allowed, and name the log and
  the envelope when the shell's ``dotglob`` is set (a ``shopt`` before them, or the user's start-up files);
- a written glob was never expanded at all: ``rm secre?s/key.txt`` and ``cp x s*/key.txt`` were allowed where
  ``rm secrets/key.txt`` is denied by ``filesystem.deny``, with no shell option needed.

Each test here failed on the code before (the tests of bash and find themselves show the spellings do what is said).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tether.envelope.schema import Envelope
from tether.hooks.calls import hook_envelope
from tether.policy.decision import Verdict
from tether.policy.gate import Gate
from tether.policy.paths import PathPolicy


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A project: tether's folder, a repository with a hook, a nested repository, and folders that hold neither."""
    for name, text in {
        ".tether/tether.db": "log",
        ".tether/envelope.yaml": "policy",
        ".git/config": "[core]",
        ".git/hooks/pre-commit": "#!/bin/sh",
        "sub/.git/config": "[core]",
        "sub/lib.py": "",
        "src/app.py": "",
        "src/app.pyc": "",
        "dist/bundle.js": "",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def decided(ws: Path, command: str) -> tuple[str, str, str]:
    d = Gate(hook_envelope(), ws).decide("bash", {"command": command})
    return d.verdict.name, d.deciding_rule, d.reason


TREES = [  # every entry of a folder that holds a protected one: denied, as the protected entry itself is
    "rm -rf sub",
    "rm -r sub/",
    "mv sub elsewhere",
    "chmod -R 000 sub",
    "chown -R nobody sub",
    "find sub -delete",
    "find . -delete",
    "find -delete",
    "find . -maxdepth 1 -delete",
    "find -L . -delete",
    "cd sub/.. && find . -delete",
]


@pytest.mark.parametrize("command", TREES)
def test_a_tree_that_holds_a_protected_entry_is_denied(ws: Path, command: str) -> None:
    verdict, rule, reason = decided(ws, command)
    assert (verdict, rule) == ("DENY", "path:protected"), reason
    assert "(version control, log or hooks)" in reason


FILTERED = [  # find -delete with filters: whether they choose the protected entries is not judged: a person is asked
    "find . -name '*.db' -delete",
    "find . -name tether.db -delete",
    "find . -type f -name '*.yaml' -delete",
    "find . -path '*/.tether/*' -delete",
    "find . -iname 'ENVELOPE.yaml' -delete",
    "find . -regex '.*db' -delete",
    "find . -newer src/app.py -delete",
    "find . -empty -delete",
    "find . -name '*.pyc' -delete",
    "find sub -name config -delete",
]


@pytest.mark.parametrize("command", FILTERED)
def test_find_delete_with_filters_over_a_protected_entry_asks(ws: Path, command: str) -> None:
    verdict, rule, reason = decided(ws, command)
    assert (verdict, rule) == ("ASK", "path:protected"), reason
    assert "which its filters may choose" in reason


GLOBS = [  # a wildcard matches a leading dot where dotglob is set: the pattern may name a protected entry
    "rm -f ?tether/tether.db",
    "shopt -s dotglob; rm -f ?tether/tether.db",
    "rm -f [.]tether/tether.db",
    "rm -f *tether/tether.db",
    "shopt -s dotglob; rm -f */tether.db",
    "shopt -s globstar dotglob; rm -rf **/tether.db",
    "rm -rf */",
    "rm -rf ?git",
    "rm -f ?git/hooks/pre-commit",
    "rm -f sub/?git/config",
    "cat > ?tether/envelope.yaml",
    "echo x > */envelope.yaml",
    "cp src/app.py */envelope.yaml",
    "chmod 777 [.]g*/hooks/*",
    # letters in either case where nocaseglob is set: ?TETHER names .tether (with dotglob for its dot)
    "shopt -s nocaseglob dotglob; rm -rf ?TETHER",
    "rm -f ?TETHER/tether.db",
    "rm -f [.]GI[T]/hooks/pre-commit",
]


@pytest.mark.parametrize("command", GLOBS)
def test_a_glob_that_may_name_a_protected_entry_asks(ws: Path, command: str) -> None:
    verdict, rule, reason = decided(ws, command)
    assert verdict != "ALLOW", reason
    assert rule == "path:protected", reason


STILL_ALLOWED = [  # folders and globs that hold or name no protected entry: as before
    ("rm -rf dist", "coding:allow-workspace-build"),
    ("rm -rf src", "coding:allow-workspace-build"),
    ("rm -rf dist/*", "coding:allow-workspace-build"),
    ("rm -f src/*.pyc", "coding:allow-workspace-build"),
    ("chmod -R u+w src", "coding:allow-workspace-build"),
    ("find src -name '*.pyc' -delete", "coding:allow-workspace-build"),
    ("find dist -delete", "coding:allow-workspace-build"),
    ("find . -name '*.pyc'", "coding:allow-read-only"),
    ("find . -name '*.pyc' -exec echo {} +", "coding:allow-read-only"),
]


@pytest.mark.parametrize(("command", "rule"), STILL_ALLOWED)
def test_places_without_a_protected_entry_are_judged_as_before(ws: Path, command: str, rule: str) -> None:
    verdict, deciding, reason = decided(ws, command)
    assert (verdict, deciding) == ("ALLOW", rule), reason


def test_find_delete_is_not_called_a_reader(ws: Path) -> None:
    """It was allowed as "find only reads"; the reason now says what it does."""
    _, _, reason = decided(ws, "find dist -name '*.js' -delete")
    assert reason == "find -delete deletes what it finds in the workspace"
    _, _, reason = decided(ws, "find src -fprint src/list.txt")
    assert reason == "find writes its list into a file in the workspace"


def test_the_spellings_do_what_is_said(ws: Path) -> None:
    """What the gate now refuses is real: bash with dotglob expands these patterns to tether's files, and find's
    filters choose the log at the top of the project. Run on a copy."""
    bash = shutil.which("bash")
    assert bash is not None
    copy = ws.parent / "copy"
    shutil.copytree(ws, copy)
    out = subprocess.run(
        [bash, "-c", "shopt -s dotglob globstar; echo ?tether/tether.db; echo [.]tether/envelope.yaml; echo */config"],
        cwd=copy,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert (
        {".tether/tether.db", ".tether/envelope.yaml", ".git/config", "sub/config"}
        >= set(out)
        >= {
            ".tether/tether.db",
            ".tether/envelope.yaml",
            ".git/config",
        }
    )
    subprocess.run(["find", ".", "-name", "*.db", "-delete"], cwd=copy, check=True)
    assert not (copy / ".tether" / "tether.db").exists()


def test_a_tree_too_large_to_look_at_asks_but_its_own_entries_are_always_seen(ws: Path) -> None:
    """Past its limit the walk cannot say: ASK. A protected entry among the folder's own entries is always seen,
    however many there are (the walk is breadth first), and a deep one within the limit is found."""
    paths = PathPolicy(ws, hook_envelope().environment.filesystem)
    deep = ws / "big" / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (deep / ".git").write_text("gitdir: ../../../../.git/modules/c")  # a submodule's .git is a file
    for i in range(50):
        (ws / "big" / f"f{i}").write_text("")
    found = paths.protected_within(str(ws / "big"), limit=10)
    assert found is not None and found.verdict is Verdict.ASK and "not known" in found.reason
    found = paths.protected_within(str(ws / "big"), limit=1000)
    assert found is not None and found.verdict is Verdict.DENY and "big/a/b/c/.git" in found.reason
    for i in range(50):
        (ws / "sub" / f"f{i}").write_text("")
    found = paths.protected_within(str(ws / "sub"), limit=10)
    assert found is not None and found.verdict is Verdict.DENY and "sub/.git" in found.reason
    assert paths.protected_within(str(ws / "dist"), limit=10) is None


def with_deny(*patterns: str) -> Envelope:
    env = hook_envelope()
    fs = env.environment.filesystem
    assert fs is not None
    fs = fs.model_copy(update={"deny": list(patterns)})
    return env.model_copy(update={"environment": env.environment.model_copy(update={"filesystem": fs})})


DENIED_BY_A_GLOB = [  # each names a file of filesystem.deny as it is now, outright: denied as that file is
    "rm secre?s/key.txt",
    "rm -f s*/key.txt",
    "rm -rf secre?s",
    "rm -rf [s]ecrets",
    "echo x > secre*/key.txt",
    "cp src/app.py secre?s/key.txt",
    "chmod 777 s?crets/key.txt",
    "truncate -s0 */key.txt",
    "shopt -s globstar; rm **/key.txt",
]


@pytest.mark.parametrize("command", DENIED_BY_A_GLOB)
def test_a_glob_that_names_a_denied_file_is_denied(ws: Path, command: str) -> None:
    (ws / "secrets").mkdir()
    (ws / "secrets" / "key.txt").write_text("s3cret")
    (ws / "conf").mkdir()
    (ws / "conf" / ".env").write_text("TOKEN=x")
    d = Gate(with_deny("secrets/", ".env"), ws).decide("bash", {"command": command})
    assert (d.verdict.name, d.deciding_rule) == ("DENY", "path:denied"), d.reason
    assert "it names secrets" in d.reason, d.reason
    d = Gate(with_deny("secrets/", ".env"), ws).decide("bash", {"command": "rm -f conf/?env"})
    assert (d.verdict.name, d.deciding_rule) == ("ASK", "path:denied"), d.reason  # .env: only under dotglob
    assert "where the shell's dotglob or nocaseglob is set, it names conf/.env" in d.reason


def test_a_glob_that_names_nothing_yet_is_judged_by_its_text(ws: Path) -> None:
    """The shell names only what exists: ``?tether/new.yaml`` names nothing, and a write to it creates no file under
    .tether (bash keeps the unmatched pattern, a folder named ``?tether`` that does not exist). Too many names to
    judge asks."""
    assert decided(ws, "echo x > ?tether/new.yaml")[0] == "ALLOW"
    for i in range(30):
        (ws / "dist" / f"f{i}.js").write_text("")
    paths = PathPolicy(ws, hook_envelope().environment.filesystem)
    assert isinstance(paths.glob_names("dist/*.js", str(ws), limit=10), str)
    named = paths.glob_names("dist/*.js", str(ws))
    assert not isinstance(named, str) and len(named) == 31 and not any(dot for _, dot in named)


def test_globstar_names_every_entry_below_when_last_and_folders_when_not(ws: Path) -> None:
    (ws / "conf" / "deep").mkdir(parents=True)
    (ws / "conf" / ".env").write_text("TOKEN=x")
    (ws / "conf" / "deep" / "a.yaml").write_text("")
    paths = PathPolicy(ws, hook_envelope().environment.filesystem)
    named = paths.glob_names("conf/**", str(ws))
    assert not isinstance(named, str)
    rel = {str(Path(p).relative_to(ws)): dot for p, dot in named}
    assert rel == {"conf": False, "conf/.env": True, "conf/deep": False, "conf/deep/a.yaml": False}
    named = paths.glob_names("conf/**/a.yaml", str(ws))
    assert not isinstance(named, str)
    assert [str(Path(p).relative_to(ws)) for p, _ in named] == ["conf/deep/a.yaml"]


GIT_ELSEWHERE = [  # git -C DIR works in DIR: its paths are read from there (they were read from the shell's directory)
    ("git -C .tether rm tether.db", "DENY"),
    ("git -C .tether rm --cached envelope.yaml", "DENY"),
    ("git -C .tether mv envelope.yaml x.yaml", "DENY"),
    ("git -C src rm ../.tether/tether.db", "DENY"),
    ("git -C src -C .. rm .tether/tether.db", "DENY"),
    ("git -C .git rm config", "DENY"),
    ("git -C .tether restore .", "DENY"),
]


@pytest.mark.parametrize(("command", "verdict"), GIT_ELSEWHERE)
def test_git_in_another_directory_is_judged_there(ws: Path, command: str, verdict: str) -> None:
    d = Gate(hook_envelope(), ws).decide("bash", {"command": command})
    assert (d.verdict.name, d.deciding_rule) == (verdict, "path:protected"), d.reason


def test_git_in_another_directory_of_the_workspace_is_allowed_as_before(ws: Path) -> None:
    for command in ("git -C src rm app.py", "git -C src mv app.py main.py", "git -C src add ."):
        d = Gate(hook_envelope(), ws).decide("bash", {"command": command})
        assert d.verdict.name == "ALLOW", (command, d.reason)


UNLISTED = [  # an archive or patch whose names cannot be read may write anything under where it goes: .tether too
    "cat archive.tar | tar x",
    "tar x < /dev/stdin",
    "cp archive.tar z.tar && tar xf z.tar",
    "printf x > x.patch && git apply x.patch",
    "cat x.patch | git apply",
    "git apply < missing.patch",
    "cat x.patch | patch -p1",
]


@pytest.mark.parametrize("command", UNLISTED)
def test_an_archive_whose_names_are_not_known_asks_over_a_protected_entry(ws: Path, command: str) -> None:
    d = Gate(hook_envelope(), ws).decide("bash", {"command": command})
    assert (d.verdict.name, d.deciding_rule) == ("ASK", "path:protected"), d.reason
    assert "whose names the gate cannot read" in d.reason


def test_a_listed_archive_is_judged_by_its_names(ws: Path) -> None:
    """A tar the gate can read is judged name by name, as before: into dist, allowed; naming .tether, denied."""
    import tarfile

    for name, member in (("ok.tar", "dist/new.js"), ("evil.tar", ".tether/envelope.yaml")):
        src = ws / "payload"
        src.write_text("x")
        with tarfile.open(ws / name, "w") as tar:
            tar.add(src, arcname=member)
    assert Gate(hook_envelope(), ws).decide("bash", {"command": "tar xf ok.tar"}).verdict.name == "ALLOW"
    d = Gate(hook_envelope(), ws).decide("bash", {"command": "tar xf evil.tar"})
    assert (d.verdict.name, d.deciding_rule) == ("DENY", "path:protected"), d.reason


@pytest.mark.parametrize("command", ["cd ?tether && rm tether.db", "cd [.]tether && rm tether.db", "cd *ether; rm x"])
def test_a_cd_to_a_glob_leaves_the_directory_unknown(ws: Path, command: str) -> None:
    """The shell expands it (to .tether where dotglob is set); it was taken for a folder named as the pattern."""
    d = Gate(hook_envelope(), ws).decide("bash", {"command": command})
    assert d.verdict.name != "ALLOW", d.reason


BUILD_OUTPUTS = [  # a build or package tool writes where its options say, which no table lists
    "go build -o .tether/envelope.yaml ./...",
    "go test -coverprofile=.tether/x ./...",
    "cargo build --target-dir .tether",
    "npm pack --pack-destination .tether",
    "pip download -d .tether requests",
    "pytest --cov --cov-report=xml:.tether/envelope.yaml",
    "pytest --basetemp=.git/x",
    "cd .tether && go build -o x ./...",
]


@pytest.mark.parametrize("command", BUILD_OUTPUTS)
def test_a_build_tools_output_in_a_protected_place_is_denied(ws: Path, command: str) -> None:
    d = Gate(hook_envelope(), ws).decide("bash", {"command": command})
    assert (d.verdict.name, d.deciding_rule) == ("DENY", "path:protected"), d.reason


@pytest.mark.parametrize(
    "command",
    ["go build -o dist/app ./...", "pytest --cov --cov-report=xml:dist/cov.xml", "cargo build", "black --check src"],
)
def test_a_build_tools_output_in_the_workspace_is_allowed_as_before(ws: Path, command: str) -> None:
    d = Gate(hook_envelope(), ws).decide("bash", {"command": command})
    assert d.verdict.name == "ALLOW", d.reason
