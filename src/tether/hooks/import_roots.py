"""Where a hook process imports code from: its interpreter's import roots, found the way the hook starts.

A hook command runs ``PYTHON -I -S …/tether/hooks/launch.py`` (the bash client execs the same when the daemon
cannot answer): no ``site``, no ``PYTHON*`` variables, no user site, no script directory on the path. The
launcher appends the directory tether's package sits in, and before it decides in-process
(:func:`tether.hooks.entry.full_path`) it loads ``site``: the venv's (or the prefix's) site-packages join the
path, every ``.pth`` file in them is read (a line naming a directory adds it; a line starting ``import`` is code
that runs at every start-up), and ``sitecustomize`` is imported from the path. Whatever lies under those roots —
pydantic, yaml, the Bash grammar, a ``.pth`` file, a ``sitecustomize`` — is code every user of a managed hook
runs.

:func:`import_roots` asks the hook's own interpreter for that path (``-I -S``, then ``site`` loaded as the hook
loads it, except that no ``.pth`` line of code and no ``sitecustomize`` runs: the probe reads each ``.pth`` for
its directories only). The interpreter is run only when named like a Python interpreter, from ``/``.
:func:`loose_under` walks the roots (files and directories, links followed to where they lead, each directory
once) for entries a user other than root (or the one installing) could change. Once all of that is vouched for
(so the ``.pth`` code is root's), :func:`loaded_roots` runs the interpreter with ``site`` loaded whole and
finds what that code added: path entries, the places an import finder maps modules to, the shared libraries
the process mapped; those are walked and judged too.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

PROBE_TIMEOUT_S = 30
PYTHON_NAME = re.compile(r"(python|pypy)[0-9.]*t?\Z")
#: Entries walked under the roots at most: past it the walk fails closed (a venv with tether's dependencies and
#: its test tools holds ~34,000; CPython's standard library ~9,000).
MAX_ENTRIES = 400_000
#: Offenders named at most, the rest counted.
SHOWN = 3
#: ``site`` loaded as a hook process loads it (:func:`tether.hooks.entry.full_path`, after ``-I -S``), except
#: that no code of a ``.pth`` file runs: ``site.addpackage`` (which runs a ``.pth`` file's ``import`` lines) is
#: replaced by one that only adds the directories a ``.pth`` names (and lists each in ``named``, there or not
#: yet: one not there yet joins the path once it is), and ``sitecustomize`` / ``usercustomize`` are not
#: imported. Only the standard library runs.
SITE = """
import json, os, site, sys
named = []
def addpackage(sitedir, name, known_paths):
    try:
        f = open(os.path.join(sitedir, name), encoding="locale")
    except OSError:
        return known_paths
    with f:
        for line in f:
            if line.startswith("#") or not line.strip() or line.startswith(("import ", "import\\t")):
                continue
            found = os.path.abspath(os.path.join(sitedir, line.rstrip()))
            named.append(found)
            if os.path.exists(found):
                sys.path.append(found)
    return known_paths
site.addpackage = addpackage
site.execsitecustomize = site.execusercustomize = lambda: None
site.main()
"""
#: The hook process's path, and every directory a ``.pth`` names.
PROBE = SITE + "print(json.dumps(sys.path + named))\n"
#: Where the hook process's path holds tether: the file, found and not imported (no code of it runs).
FIND_TETHER = (
    SITE + "import importlib.util\nspec = importlib.util.find_spec('tether')\nprint(json.dumps(spec and spec.origin))\n"
)

#: Run only once every root is vouched for (:func:`loaded_roots`): ``site`` loaded as the hook loads it, a
#: ``.pth`` file's ``import`` lines and ``sitecustomize`` included (code no one but root could have written),
#: then what that code added: entries of the path, and import finders or path hooks beyond the interpreter's
#: own, each with the places it says it maps modules to (setuptools' editable finder: its module's ``MAPPING``
#: and ``NAMESPACES``), null when it says none; and the files mapped into the process then (Linux's
#: ``/proc/self/maps``): the interpreter, ``libpython``, the C library, each extension module and shared library
#: loaded so far, wherever they lie.
LOADED = """
import json, sys
def name(f):
    return getattr(f, "__module__", "?") + "." + getattr(f, "__qualname__", type(f).__qualname__)
own = {name(f) for f in [*sys.meta_path, *sys.path_hooks]}
import site
site.main()
added = []
for f in [*sys.meta_path, *sys.path_hooks]:
    if name(f) in own:
        continue
    module = sys.modules.get(getattr(f, "__module__", None) or "")
    mapping, spaces = getattr(module, "MAPPING", None), getattr(module, "NAMESPACES", None)
    places = [v for v in (mapping or {}).values() if isinstance(v, str)]
    places += [p for v in (spaces or {}).values() if isinstance(v, list) for p in v if isinstance(p, str)]
    said = isinstance(mapping, dict) or isinstance(spaces, dict)
    added.append([name(f), places if said else None])
try:
    with open("/proc/self/maps") as f:
        mapped = sorted({line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6})
except OSError:
    mapped = []
print(json.dumps([sys.path, added, [m for m in mapped if m.startswith("/")]]))
"""
#: Import finders a ``.pth`` file installs that find modules only under the roots already walked:
#: setuptools' ``distutils-precedence.pth`` (it serves ``distutils`` from setuptools' own copy).
KNOWN_FINDERS = ("_distutils_hack.DistutilsMetaFinder",)


class ProbeError(ValueError):
    """Why an interpreter could not be asked (its message follows the interpreter's path)."""


def ask(python: str, code: str) -> object:
    """The JSON the interpreter ``python`` prints last running ``code`` as a hook starts it (``-I -S``, from
    ``/``, no environment). Only a program named like a Python interpreter, as written and as resolved, is
    run: the name comes from a settings file, and ``-I -S -c CODE`` means other things to other programs."""
    if not all(PYTHON_NAME.match(os.path.basename(p)) for p in (python, os.path.realpath(python))):
        raise ProbeError("does not look like a Python interpreter (python3, python3.12, pypy3…): not run")
    try:
        done = subprocess.run(
            [python, "-I", "-S", "-c", code],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
            cwd="/",
            env={},
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise ProbeError(f"does not run ({e})") from e
    if done.returncode != 0:
        raise ProbeError(f"fails ({(done.stderr.strip().splitlines() or ['no output'])[-1]})")
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError) as e:
        raise ProbeError(f"printed no answer ({e})") from e


def import_roots(python: str, package_parent: Path, walked: Iterable[Path] = ()) -> Roots | str:
    """The directories (and zip files) the hook process of ``python`` imports from, tether's
    ``package_parent`` among them (the launcher appends it), and the entries of its path that are not there
    yet (whoever can make one imports first: a ``python311.zip`` comes before the standard library); or why
    they cannot be known (then nothing can be vouched for: the caller refuses). What lies in the roots already
    ``walked`` (the standard library, judged before the interpreter ran) is left out."""
    try:
        paths = ask(python, PROBE)
    except ProbeError as e:
        return f"{python} (what it imports cannot be asked: it {e})"
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        return f"{python} (what it imports cannot be asked: it printed {str(paths)[:80]})"
    return located([*paths, str(package_parent)], walked)


def loaded_roots(python: str, walked: list[Path]) -> Roots | str:
    """Where the hook process of ``python`` imports from that only running its ``.pth`` files' code (and
    ``sitecustomize``) shows, beyond the ``walked`` roots: entries that code put on the path, places an import
    finder it installed maps modules to; and the entries not there yet. Called once every root is vouched for.
    A finder or path hook that does not say where it finds modules (and is none of :data:`KNOWN_FINDERS`) is
    a refusal: what it imports cannot be checked."""
    try:
        answer = ask(python, LOADED)
    except ProbeError as e:
        return f"{python} (what its .pth files add cannot be asked: it {e})"
    if not (isinstance(answer, list) and len(answer) == 3 and all(isinstance(a, list) for a in answer)):
        return f"{python} (what its .pth files add cannot be asked: it printed {str(answer)[:80]})"
    paths, added, files = answer
    places = [p for p in paths if isinstance(p, str)]
    for finder in added:
        name, mapped = finder if isinstance(finder, list) and len(finder) == 2 else (str(finder), None)
        if not isinstance(mapped, list) and name not in KNOWN_FINDERS:
            return (
                f"{python} (a .pth file or sitecustomize installs an import finder, {name}, that does not say"
                " where it finds modules: what it imports cannot be checked)"
            )
        places += [p for p in mapped or [] if isinstance(p, str)]
    found = located(places, walked)
    libraries = [Path(f) for f in files if isinstance(f, str) and os.path.isfile(f)]  # not "… (deleted)"
    return replace(found, libraries=[p for p in libraries if not any(p.is_relative_to(w) for w in walked)])


@dataclass(frozen=True)
class Roots:
    """Where a hook process imports from: ``walk``, the real paths (none inside another), walked whole;
    ``written``, those the path names through a link (the directories above them as named are judged too:
    whoever may rename in one swaps the link); ``missing``, entries not there yet; ``libraries``, files the
    process mapped (shared libraries) outside the roots, each judged with the directories above it."""

    walk: list[Path]
    written: list[Path]
    missing: list[Path]
    libraries: list[Path] = field(default_factory=list)


def located(places: list[str], walked: Iterable[Path] = ()) -> Roots:
    """:class:`Roots` of the path entries ``places`` (relative ones from ``/``), but for what lies inside the
    roots already ``walked``."""
    walked = list(walked)
    written = [Path(os.path.abspath(os.path.join("/", p))) for p in places]
    pairs = list(dict.fromkeys((w, Path(os.path.realpath(w))) for w in written))
    there = [(w, r) for w, r in pairs if os.path.exists(r) and not any(r.is_relative_to(k) for k in walked)]
    return Roots(
        walk=outermost(r for _, r in there),
        written=[w for w, r in there if w != r],
        missing=list(dict.fromkeys(p for w, r in pairs if not os.path.exists(r) for p in (w, r))),
    )


def outermost(paths: Iterable[Path]) -> list[Path]:
    """``paths`` without those inside another of them (lib-dynload under the standard library), each once, the
    outer first and otherwise in the order given: never a set's order, which changes with the hash seed from one
    run to the next, and with it which offenders a refusal names first."""
    kept: list[Path] = []
    for path in sorted(dict.fromkeys(paths), key=lambda p: len(p.parts)):
        if not any(path.is_relative_to(k) for k in kept):
            kept.append(path)
    return kept


def loose_under(
    found: Roots, loose: Callable[[Path, os.stat_result], str | None], chain: Callable[[Path], str | None]
) -> list[str]:
    """What under the roots ``found`` a user other than root (or the one installing) could change: each root (and
    each library mapped from elsewhere) by ``chain`` (it and every directory above it, as the path names it and
    where it leads), then every entry
    below by ``loose`` (its owner and write permission); a link by ``chain`` on where it leads, a directory it
    leads to outside the roots walked too; a missing entry of the path by ``chain`` on the nearest directory
    above it that is there (whoever may write there can make it). A directory that cannot be listed, or more
    than :data:`MAX_ENTRIES` entries, fails closed. The first :data:`SHOWN` offenders are named, the rest
    counted."""
    problems = _chained(found, chain)
    walk = _Walk(found.walk, loose, chain, problems)
    if walk.over():
        return [*shown(problems), f"more than {MAX_ENTRIES} files under {', '.join(map(str, found.walk))}"]
    return shown(problems)


def _chained(found: Roots, chain: Callable[[Path], str | None]) -> list[str]:
    """What ``chain`` finds on each root, each path as written and each library; on a missing entry, on the nearest
    directory above it that is there."""
    problems = [p for p in map(chain, [*found.walk, *found.written, *found.libraries]) if p]
    for path in found.missing:
        there = next(p for p in path.parents if os.path.exists(p))
        problem = chain(there)
        if problem:
            problems.append(f"{path} (not there yet, and whoever can make it there adds to the path: {problem})")
    return problems


@dataclass
class _Walk:
    """The walk below ``roots`` (each directory once), adding to ``problems`` what ``loose`` finds on an entry and
    ``chain`` on where a link leads."""

    roots: list[Path]
    loose: Callable[[Path, os.stat_result], str | None]
    chain: Callable[[Path], str | None]
    problems: list[str]

    def over(self) -> bool:
        """Walk it all; True (and the walk stopped) past :data:`MAX_ENTRIES` entries."""
        stack = [root for root in self.roots if root.is_dir()]
        seen, count = set(stack), 0
        while stack:
            top = stack.pop()
            try:
                entries = list(os.scandir(top))
            except OSError as e:
                self.problems.append(f"{top} (cannot be listed to check it: {e.strerror})")
                continue
            for entry in entries:
                count += 1
                if count > MAX_ENTRIES:
                    return True
                below = self.entry(entry, seen)
                if below is not None:
                    stack.append(below)
        return False

    def entry(self, entry: os.DirEntry[str], seen: set[Path]) -> Path | None:
        """Judge one entry; the directory to walk below it, if any: a directory, or where a link leads when that is
        a directory outside the roots not walked yet."""
        path = Path(entry.path)
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            return None  # gone meanwhile
        if stat.S_ISLNK(info.st_mode):
            real = Path(os.path.realpath(path))
            problem = self.chain(real)
            if problem:
                self.problems.append(f"{path} (a link to {problem})")
            elif real.is_dir() and real not in seen and not any(real.is_relative_to(r) for r in self.roots):
                seen.add(real)
                return real
            return None
        problem = self.loose(path, info)
        if problem:
            self.problems.append(problem)
        return path if stat.S_ISDIR(info.st_mode) else None


def shown(problems: list[str]) -> list[str]:
    """The first :data:`SHOWN` of ``problems``, the rest counted."""
    if len(problems) <= SHOWN:
        return problems
    return [*problems[:SHOWN], f"and {len(problems) - SHOWN} more like them"]
