"""The gate's judgement of a shell call: a command line read (:mod:`.shell`), and each of its simple commands judged
by the envelope's rules, the built-in profile (:mod:`.profile`), the places it touches (:mod:`.paths`) and the scripts
it runs; the parts' decisions taken strictest.

A module of its own, built by :class:`.gate.Gate` at its first shell call: what reads a command line (the parser,
the programs' tables, the profile) is a quarter of the code a hook process would import to decide, and a call of a
tool that runs none (a Read, an Edit: most of an agent's calls) needs none of it.
"""

from __future__ import annotations

import os

from tether import places
from tether.envelope.source import MAX_DOCUMENT_BYTES
from tether.records import replace

from . import archives, gitindex, interp, profile, programs, requirements
from .command import SimpleCommand, Word
from .decision import Decision, Finding, Layer, RuleMatch, Verdict, resolve, strictest
from .effects import FOUND, Effects, Target, Unpack, effects
from .knowledge import COMPILERS, FETCHERS, GIT, GIT_READ, NAME_ONLY, PACKAGE_TOOLS, PIP, SHELLS, SPECS
from .paths import PathPolicy, PlaceVerdict
from .rules import CompiledRule
from .scripts import KEEPS_TEXT, SOURCES, Unreadable, named_script, script_of, script_text
from .shell import Analysis, analyse, left_for

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from . import rewrites

_UNKNOWN_COMMAND = RuleMatch(
    "default:unknown-command", Verdict.ASK, "not a known read-only command and no rule allows it"
)
_REDIRECT_ONLY = RuleMatch("default:redirect-only", Verdict.ALLOW, "only a redirection, its target was checked")
#: Findings that mean "this call runs code the gate cannot see through": a deny rule may match what it runs.
_OPAQUE = frozenset(
    {
        "shell:dynamic-code",
        "shell:computed-command",
        "shell:unparseable",
        "shell:too-deep",
        "shell:unknown-wrapper-option",
        "shell:too-complex",
        "shell:env-code",
        "shell:recursive-function",
        "coding:ask-exec-option",
        "coding:ask-inline-code",
        "coding:ask-awk-program",
        "coding:ask-sed-script",
        "shell:pipe-to-interpreter",
        "shell:remote-code",
    }
)
#: git commands that show file contents they select themselves (with -p for the log family).
_GIT_CONTENT = frozenset(
    {"show", "grep", "cat-file", "archive", "blame", "annotate", "diff", "diff-tree", "diff-index", "diff-files"}
    | {"range-diff", "format-patch", "bundle"}
)
_GIT_PATCH_LOG = frozenset({"log", "whatchanged", "reflog", "stash", "shortlog"})
_WHY_UNKNOWN = " (its directory is unknown after a cd that may fail, or the path is unreadable)"
MAX_SCRIPT_DEPTH = 3
_NO_COMMAND = RuleMatch("default:empty", Verdict.ASK, "no command to run")


class ShellGate:
    """Judges a gate's shell calls: what it reads of the gate (its place policy, whether its profile is ``coding``,
    its deny rules, and its rules' findings on a call) is given at its making."""

    def __init__(
        self,
        paths: PathPolicy,
        *,
        coding: bool,
        deny: Sequence[CompiledRule],
        rules: Callable[[str, Mapping[str, Any], Callable[[CompiledRule], bool]], list[Finding]],
    ) -> None:
        self.paths = paths
        self.workspace = paths.workspace
        self.coding = coding
        self.deny = deny
        self._rules = rules
        self.context = profile.Context(paths, self.workspace)

    def decide(self, tool: str, command: str, args: Mapping[str, Any]) -> tuple[Decision, bool]:
        """The decision on a call of ``tool`` running ``command``, and whether what it runs only reads (which the
        control state lets through)."""
        analysis = analyse(command, self._start(args))
        known: dict[int, Effects] = {}  # each top-level command's effects, worked out once for both uses
        decision = self._shell(tool, analysis, args, known=known)
        if args.get("unsandboxed") is True:
            decision = _unsandboxed(decision)
        return decision, decision.verdict is Verdict.ALLOW and _read_only(analysis, known)

    def _start(self, args: Mapping[str, Any]) -> str | None:
        """Where a shell call's relative paths start: the workspace, or the directory the call names for itself
        (``cwd``: the agent's shell, which a ``cd`` in an earlier call moved; a tool that takes one runs there).
        A ``cwd`` that is not an absolute path leaves them unknown (each one then asks), never the workspace."""
        if "cwd" not in args:
            return self.workspace
        cwd = args["cwd"]
        if not isinstance(cwd, str) or not cwd.startswith("/") or "\0" in cwd:
            return None
        return places.place(os.path.normpath(cwd))

    def _shell(
        self,
        tool: str,
        analysis: Analysis,
        args: Mapping[str, Any],
        depth: int = 0,
        known: dict[int, Effects] | None = None,
    ) -> Decision:
        """``known``: filled with each command's effects by ``id`` (the caller keeps ``analysis`` alive)."""
        parts: list[Decision] = []
        secret_reads = False
        earlier: list[tuple[SimpleCommand, Effects]] = []  # what ran before: an archive it wrote is not read now
        for cmd in analysis.commands:
            parts += self._script(tool, cmd, args, depth, earlier, analysis.commands) + self._requirements(cmd, earlier)
            findings, secret, eff = self._command_findings(tool, cmd, args, earlier)
            earlier.append((cmd, eff))
            if known is not None:
                known[id(cmd)] = eff
            secret_reads = secret_reads or secret
            default = _REDIRECT_ONLY if not cmd.argv else _UNKNOWN_COMMAND
            parts.append(_output_named(resolve(findings, default), cmd, eff))
        whole = list(analysis.findings)
        if self.coding:
            whole += profile.analysis_findings(analysis, secret_reads)
        if whole:
            parts.append(resolve(whole, _UNKNOWN_COMMAND))
        parts += self._deny_may_match(tool, args, parts)
        return strictest(parts, _NO_COMMAND)

    def _script(
        self,
        tool: str,
        cmd: SimpleCommand,
        args: Mapping[str, Any],
        depth: int,
        earlier: Sequence[tuple[SimpleCommand, Effects]] = (),
        line: Sequence[SimpleCommand] = (),
    ) -> list[Decision]:
        """A workspace shell script that ``cmd`` runs is judged like the commands written in it; one a command
        before it in the line may write (``echo 'rm -rf /' > x.sh; sh x.sh``) cannot be read now: it asks. A
        compiler's output (``cc -o app x.c && ./app``) is a program, not shell code, and ``chmod +x x.sh`` leaves
        its text as it is: neither is counted. A sourced script runs in this shell: what it leaves there (a directory,
        a variable, a function or alias) the ``line``'s other commands were not judged with: one they meet asks."""
        named = named_script(cmd, self.paths)
        keep = KEEPS_TEXT if cmd.name in SHELLS | SOURCES else KEEPS_TEXT | COMPILERS
        if named is not None and self._rewritten(named, [e for e in earlier if e[0].name not in keep]):
            why = f"{self.paths.relative(named)}: a command before it in this line may write it; its text is not known"
            m = RuleMatch("shell:script-unchecked", Verdict.ASK, why)
            return [Decision(m.verdict, m.id, m.reason, (m,))]
        path = script_of(cmd, self.paths)
        if path is None:
            return []
        where = self.paths.relative(path)
        hidden = self.paths.read(path, shell=True)
        if hidden is not None and hidden.verdict is Verdict.DENY:
            return []  # never read to be judged: running it reads it, which _code_reads refuses
        try:
            if depth >= MAX_SCRIPT_DEPTH:
                raise Unreadable(f"scripts run scripts more than {MAX_SCRIPT_DEPTH} deep")
            text = script_text(path)
        except (Unreadable, OSError) as e:
            m = RuleMatch("shell:script-unchecked", Verdict.ASK, f"{where}: {e}")
            return [Decision(m.verdict, m.id, m.reason, (m,))]
        analysis = analyse(text, cmd.cwd)
        inner = self._shell(tool, analysis, args, depth + 1)
        out = []
        if inner.verdict is not Verdict.ALLOW:  # an allowed one: what runs it decides (allow-run-workspace)
            out.append(
                Decision(inner.verdict, inner.deciding_rule, f"in the script {where}: {inner.reason}", inner.matches)
            )
        if cmd.name in ("source", ".") and any(c.name in ("cd", "pushd", "popd") for c in analysis.commands):
            # sourced, it runs in this shell: the command line goes on from wherever it leaves the directory
            m = RuleMatch(
                "shell:sourced-cd", Verdict.ASK, f"{where} is sourced and moves the shell: what follows runs elsewhere"
            )
            out.append(Decision(m.verdict, m.id, m.reason, (m,)))
        left = left_for(analysis, [c for c in line if c is not cmd]) if cmd.name in ("source", ".") else []
        if left:
            why = f"{where} is sourced and sets {', '.join(left[:5])}: the line's other commands were judged without it"
            m = RuleMatch("shell:sourced-state", Verdict.ASK, why)
            out.append(Decision(m.verdict, m.id, m.reason, (m,)))
        return out

    def _requirements(self, cmd: SimpleCommand, earlier: Sequence[tuple[SimpleCommand, Effects]]) -> list[Decision]:
        """A pip requirements file is read now (:mod:`.requirements`); one a command before it in the line may
        write (``cp other.txt requirements.txt && pip install -r requirements.txt``) is not what pip will read."""
        texts = [w.text for w in cmd.args]
        if not earlier or not (cmd.name in PIP or "pip" in texts[:2]):
            return []
        writers = [e for e in earlier if e[0].name not in KEEPS_TEXT]
        for name in requirements.files_named(texts):
            path = self.paths.resolve(name, cmd.cwd)
            if path is not None and self._rewritten(path, writers):
                why = f"the requirements file {name!r}: a command before it in this line may write it; not known now"
                m = RuleMatch("coding:ask-custom-index", Verdict.ASK, why)
                return [Decision(m.verdict, m.id, m.reason, (m,))]
        return []

    def _deny_may_match(self, tool: str, args: Mapping[str, Any], parts: list[Decision]) -> list[Decision]:
        """Deny means deny: code the gate cannot see through may be exactly what a deny rule forbids."""
        opaque = next((m for d in parts for m in d.matches if m.id in _OPAQUE), None)
        if opaque is None:
            return []
        may = [
            Finding.of(
                Layer.HARD,
                r.id,
                Verdict.DENY,
                f"{r.reason or f'deny rule {r.id}'}: may match, since {opaque.reason}",
            )
            for r in self.deny
            if r.specifier is not None and r.applies(tool, args)
        ]
        return [resolve(may, _UNKNOWN_COMMAND)] if may else []

    def _command_findings(
        self,
        tool: str,
        cmd: SimpleCommand,
        args: Mapping[str, Any],
        earlier: Sequence[tuple[SimpleCommand, Effects]] = (),
    ) -> tuple[list[Finding], bool, Effects]:
        out: list[Finding] = []
        eff = effects(cmd) if cmd.argv else Effects()
        secret = self._places(cmd, eff, out, earlier)
        if self.coding and cmd.argv:
            out = profile.findings_for(cmd, eff, self.context) + out
        if cmd.argv:
            out += self._rules(tool, args, lambda r: r.matches_command(cmd))
        return out, secret, eff

    def _places(
        self, cmd: SimpleCommand, eff: Effects, out: list[Finding], earlier: Sequence[tuple[SimpleCommand, Effects]]
    ) -> bool:
        """Judge every place the command touches (``earlier``: the commands before it in the line); return whether
        it reads a secret. The program's own places are read from where it works (``git -C DIR``), its redirections'
        from the shell's directory."""
        moved = self._worked_in(cmd, eff)
        writes = [(t, moved) for t in eff.writes]
        reads = [(t, moved) for t in eff.reads]
        for r in cmd.redirects:
            if r.target is None:
                continue
            if r.writes:
                writes.append((Target(r.target), cmd))
            if r.op.startswith("<") or r.op == "<>":
                reads.append((Target(r.target), cmd))
        for name, value in cmd.env:
            if not name.startswith("GIT_"):  # git's own (code, asked by the walker) are kept for _git_rewrites
                self._code_path(name, value, cmd, out)
        if cmd.name == "git":
            hides = self.paths.filesystem is not None and bool(self.paths.filesystem.deny)
            if hides:
                self._git_reads(cmd, out)
            self._git_rewrites(cmd, out, hides)
        for t, where in writes:
            self._write_place(t, where, out)
        for u in eff.unpacks:
            self._unpack(u, cmd, out, earlier)
        secret = False
        for t, where in reads:
            secret = self._read_place(t, where, out) or secret
        if self.paths.filesystem is not None and self.paths.filesystem.deny:
            self._code_reads(cmd, eff, out)
        if cmd.name not in NAME_ONLY:
            secret = self._loose(cmd, moved, {id(t.word) for t, _ in (*reads, *writes)}, out) or secret
        return secret

    def _loose(self, cmd: SimpleCommand, moved: SimpleCommand, listed: set[int], out: list[Finding]) -> bool:
        """The arguments no table placed (``listed``: the words read or written): each may read a credential, and a
        build tool's may be where it writes (:meth:`_build_output`); whether one reads a secret."""
        secret = False
        builds = _builds(cmd)
        for w in cmd.args:
            if id(w) not in listed:
                secret = self._loose_read(w, cmd, out) or secret
                if builds:
                    self._build_output(w, moved, out)
        return secret

    def _worked_in(self, cmd: SimpleCommand, eff: Effects) -> SimpleCommand:
        """``cmd`` where its program works: moved by ``git -C DIR`` (each in turn) or a build tool's ``-C DIR``, its
        directory unknown when that is. Until 2026-12-04 a program's own places were read from the shell's directory,
        so ``git -C .tether rm tether.db`` was ``git rm tether.db`` at the workspace's top, allowed."""
        if cmd.name == "git":
            here = _git_dir(programs.parse(GIT, list(cmd.args)), cmd.cwd)
        elif eff.chdir is not None:
            here = self.paths.resolve(eff.chdir.text, cmd.cwd) if eff.chdir.static else None
        else:
            return cmd
        return cmd if here == cmd.cwd else replace(cmd, cwd=here)

    def _code_reads(self, cmd: SimpleCommand, eff: Effects, out: list[Finding]) -> None:
        """A program reads the code it runs: a script given to an interpreter or named as the command, a module of
        ``python -m``, a file of code (``make -f``, ``awk -f``, ``source``; from where ``-C`` moves the program)
        and a build tool's files where it works (``make -C secrets`` reads secrets/Makefile). Each is judged
        against ``filesystem.deny`` as a read: ``bash secrets/x.sh`` shows the hidden text in its output."""
        moved = self._worked_in(cmd, eff)
        here = moved.cwd
        for w in (*eff.scripts, *_code_words(cmd)):
            self._read_place(Target(w), moved, out)
        spec = SPECS.get(cmd.name)
        if here is not None and spec is not None and spec.kind == "build" and self.paths.hides(places.join(here, "_")):
            why = f"{cmd.name} works in {here} and reads its files there, which filesystem.deny hides"
            out.append(Finding.of(Layer.HARD, "path:denied", Verdict.DENY, why))

    def _may_read_denied(self, t: Target, text: str, cmd: SimpleCommand, out: list[Finding]) -> None:
        """A reader whose files are chosen at run time (a tree, a glob, ``$X``) may read what the deny list hides."""
        if not text:
            base: str | None = self.workspace  # could be any file
        elif t.word.static and not _has_glob(text):
            base = self.paths.resolve(text, cmd.cwd)
        else:
            base = self._known_dir(text, cmd)
        reach = self.paths.deny_reach(base if base is not None else self.workspace)
        glob = t.word.static and _has_glob(text)
        if reach is None and base is not None and (t.follows or glob or not t.recursive):
            # the files it reads may be links under base that lead to a hidden place: a glob's only as deep as its
            # own components, a name known at run time (find -exec cat {}) or a reader that follows links, any
            link = self.paths.hidden_link(base, _glob_depth(text) if glob else None)
            reach = None if link is None else f"(through the link {link})"
        if reach is not None:
            where = f"under {base}" if base is not None else "in an unknown place"
            out.append(
                Finding.of(
                    Layer.HARD,
                    "path:denied",
                    Verdict.DENY,
                    f"{cmd.name} reads files chosen at run time {where}; filesystem.deny {reach!r} may match them",
                )
            )

    def _known_dir(self, text: str, cmd: SimpleCommand) -> str | None:
        """The directory a partly known word certainly lies under: ``src/$X`` → src, ``*.py`` → the cwd."""
        cut = min((text.find(c) for c in "*?[$`{" if c in text), default=len(text))
        known = text[:cut]
        base = known.rsplit("/", 1)[0] + "/" if "/" in known else "."
        return self.paths.resolve(base, cmd.cwd)

    def _git_reads(self, cmd: SimpleCommand, out: list[Finding]) -> None:
        """``git show HEAD:path``, ``git grep``, ``git diff``: contents chosen by git, checked against the deny list."""
        parsed = programs.parse(GIT, list(cmd.args))
        sub, spec, rest = programs.subcommand(GIT, parsed)
        if spec is None and sub not in _GIT_CONTENT:
            return
        inner = programs.parse(spec or programs.Spec(operands=programs.Role.TEXT), rest)
        patch = _shows_patch(inner) or (sub == "stash" and "-p" in [w.text for w in rest])
        if sub not in _GIT_CONTENT and not (sub in _GIT_PATCH_LOG and patch):
            return
        chosen: list[str] = []
        here = _git_dir(parsed, cmd.cwd)
        for w in inner.operands:
            if not w.static or here is None:
                chosen = [self.workspace]
                break
            if ":" in w.text:  # REV:path, :N:path (a stage of the index): each text after a colon may be the path
                for i, c in enumerate(w.text):
                    chosen += self._rev_paths(w.text[i + 1 :], here) if c == ":" else []
                continue
            path = self.paths.resolve(w.text, here)
            if path is not None and os.path.lexists(path):
                chosen.append(path)
        for place in chosen or [self.workspace]:
            reach = self.paths.deny_reach(place)
            if reach is not None:
                out.append(
                    Finding.of(
                        Layer.HARD,
                        "path:denied",
                        Verdict.DENY,
                        f"git {sub} shows contents under {place}; filesystem.deny {reach!r} may match them"
                        " (name the paths it may show after --)",
                    )
                )
                return

    def _git_rewrites(self, cmd: SimpleCommand, out: list[Finding], hides: bool) -> None:
        """git commands that rewrite tracked files of the work tree (``stash``, ``reset --hard``, ``checkout -- .``,
        ``checkout BRANCH``, ``merge`` …) may change any tracked file under their pathspecs: DENY when the index
        lists one the deny list hides (an index the gate cannot read: when the deny list may reach one), or one in
        ``.tether`` (:meth:`_tracked_log`). ``clean`` and ``stash -u`` delete untracked files: DENY when one the deny
        list hides, or a ``.tether``, lies under their pathspecs on disk (:meth:`_untracked_log`). ``hides``: the
        envelope has a deny list (else only ``.tether`` is judged, and only where the workspace holds one)."""
        parsed = programs.parse(GIT, list(cmd.args))
        sub, _, rest = programs.subcommand(GIT, parsed)
        words = [w.text if w.static else "*" for w in rest]
        scope = _rewrite_scope(sub, words)
        if scope is None or not (hides or os.path.isdir(places.join(self.workspace, _LOG))):
            return
        here = _git_dir(parsed, cmd.cwd)
        from . import rewrites  # a rewrite is judged: only now (see the module)

        # git's directory, work tree or configuration moved (--git-dir, -c core.worktree=, GIT_INDEX_FILE=): the index
        # and commits the gate would read are not those git uses
        moved = bool(parsed.code) or parsed.has("--namespace") or any(n[:4] == "GIT_" for n, _ in cmd.env)
        top = gitindex.top(here, self.workspace) if here is not None and not moved else None
        if top is None and here is not None and not moved and not hides:  # only the log is judged: its repository
            top = gitindex.top(here, "/")  # may hold the workspace (a project in a monorepo), as git finds it
        top = top if top is None or gitindex.own(top) else None  # core.worktree elsewhere: any of the workspace
        # a pathspec with a glob or magic (:(glob), :/) may name any file: the whole work tree
        exact = here is not None and not any(_has_glob(p) or p.startswith(":") for p in scope)
        found_roots = [self.paths.resolve(p, here) for p in scope] if exact and here is not None else []
        roots = [r for r in found_roots if r is not None]
        if top is None or not roots or len(roots) < len(scope):
            roots = [top or self.workspace]
        found = None
        if sub == "clean" or (sub == "stash" and rewrites.stashes_untracked(words)):
            held = next((v for v in map(self._untracked_log, roots) if v is not None), None)
            what = "deletes untracked files of the work tree"
            if hides:
                found = next((repr(h) for r in roots for h in [self._hidden_within(r)] if h is not None), None)
        else:
            sources = rewrites.sources(sub, words)
            if sources is not None and sub == "checkout" and here is not None and top is not None:
                sources = (rewrites.revisions_only(sources[0], here, top), *sources[1:])
            resumed = sources is None and bool(_RESUMES & set(words))  # from commits judged when it began
            emptied = sub == "switch" and "--orphan" in words  # deletes what it does not write back
            held = self._tracked_log(top, roots, ([], False, None) if resumed else sources, emptied)
            what = "writes the work tree's tracked files"
            if hides:
                found = self._tracked_hidden(top, roots, sources)
        if held is not None:
            why = f"git {sub} {what}, and {held.reason}" + (" (name others after --)" if "untracked" in what else "")
            out.append(Finding.of(Layer.HARD, held.rule_id, held.verdict, why))
        if found is not None:
            why = f"git {sub} rewrites files of the work tree, and filesystem.deny hides {found} among them"
            out.append(Finding.of(Layer.HARD, "path:denied", Verdict.DENY, why))

    def _tracked_log(
        self, top: str | None, roots: list[str], sources: rewrites.Sources | None, emptied: bool = False
    ) -> PlaceVerdict | None:
        """Whether a rewrite under ``roots`` writes the workspace's ``.tether`` from the index or from the commits it
        writes from (``sources``): git puts back their copy of the log (the events since are gone, and the shorter
        chain still verifies) or of the envelope. DENY when the index or one of the commits holds one (but a copy of
        the envelope as it is: a project that ships its envelope); ASK when that cannot be read (no repository of
        the workspace's found, a revision that does not resolve). ``emptied``: the rewrite deletes what the index
        lists (``switch --orphan``): an envelope as it is too."""
        log = places.join(self.workspace, _LOG)
        if not any(places.within(log, r) for r in roots) or (top is not None and not places.within(log, top)):
            return None  # out of its pathspecs, or a repository inside the workspace: the log is not among its files
        copies = None if top is None or sources is None else _log_copies(top, log, sources)
        if copies is None or top is None:
            return PlaceVerdict("path:protected", Verdict.ASK, f"whether git holds a copy of {_LOG}/ is not known")
        changed = [n for n, blob in copies if emptied or not _same_envelope(places.join(top, n), blob)]
        held = next((n for n in changed if any(places.within(places.join(top, n), r) for r in roots)), None)
        if held is None:
            return None
        why = f"git holds a copy of {held}, which it would put back over tether's log or envelope (untrack {_LOG}/)"
        return PlaceVerdict("path:protected", Verdict.DENY, why)

    def _untracked_log(self, root: str) -> PlaceVerdict | None:
        """Whether ``git clean`` or ``git stash -u`` under ``root`` reaches a ``.tether``: ``root`` inside one, or a
        folder holding one (DENY), or that is not known (ASK); a ``root`` above the workspace reaches the workspace's.
        The repositories in it are not looked into: git leaves them alone."""
        rel = self.paths.relative(root)
        if rel is None:  # the repository above the workspace, or a folder beside it
            return self._untracked_log(self.workspace) if places.within(self.workspace, root) else None
        if _LOG in rel.split("/"):
            return PlaceVerdict("path:protected", Verdict.DENY, f"{rel} is inside {_LOG}/ (tether's log)")
        return self.paths.protected_within(root, names=(_LOG,)) if os.path.isdir(root) else None

    def _tracked_hidden(self, top: str | None, roots: list[str], sources: rewrites.Sources | None) -> str | None:
        """A file the index of ``top`` tracks, or a commit the command writes from holds (``sources``), under one of
        ``roots`` that the deny list hides (as a quoted path); or the pattern that may reach one when the index or
        the commits cannot be read."""
        listed = gitindex.tracked(top) if top is not None and sources is not None else None
        if listed is not None and top is not None and sources is not None and (sources[0] or sources[2]):
            reached = top

            def descend(name: str) -> bool:  # a folder the deny list cannot reach holds nothing it hides: not read
                return self.paths.deny_reach(places.join(reached, name)) is not None

            more = gitindex.committed(top, sources[0], parents=sources[1], replays=sources[2], descend=descend)
            listed = None if more is None else list(dict.fromkeys(listed + more))
        if listed is None:
            reach = next((r for r in map(self.paths.deny_reach, roots) if r is not None), None)
            return None if reach is None else f"{reach!r} (the index could not be read)"
        assert top is not None
        for name in listed:
            path = places.join(top, name)
            if not any(places.within(path, r) for r in roots):
                continue
            if self.paths.hides(path):
                return repr(self.paths.relative(path))
            if os.path.isdir(path) and not os.path.islink(path):  # a file or link where a directory is: git empties
                hidden = self._hidden_within(path)  # it, an ignored file in it is expendable (a link at secrets)
                if hidden is not None:
                    return repr(hidden)
        return None

    def _rev_paths(self, path: str, here: str) -> list[str]:
        """Where ``REV:path`` may lie: ``./`` and ``../`` start from git's directory (gitrevisions), any other path
        from the top of the repository, which is git's directory or one above it (a repository nested in the
        workspace, or one that holds it): each is a candidate."""
        if path.startswith(("./", "../")) or path in (".", ".."):
            found = self.paths.resolve(path, here)
            return [self.workspace] if found is None else [found]
        path = path.lstrip("/")
        tops = [here]
        while places.parent(tops[-1]) != tops[-1]:
            tops.append(places.parent(tops[-1]))
        return [places.join(top, path) for top in tops]

    def _code_path(self, name: str, value: Word, cmd: SimpleCommand, out: list[Finding]) -> None:
        """``PYTHONPATH=src``: code from the workspace is fine (the agent could run it anyway); not from elsewhere."""
        for entry in value.text.split(":"):
            if name == "PATH" and entry in ("$PATH", "${PATH}"):
                continue
            path = self.paths.resolve(entry, cmd.cwd) if entry and "$" not in entry and "`" not in entry else None
            if path is None or not (self.paths.relative(path) is not None or (name == "PATH" and _system_dir(path))):
                out.append(Finding.of(Layer.HARD, "shell:env-code", Verdict.ASK, f"{name} loads code from {entry!r}"))
                return

    def _write_place(self, t: Target, cmd: SimpleCommand, out: list[Finding]) -> None:
        w = t.word
        text = w.text if w.static else w.prefix
        what = "delete" if t.delete else "write"
        if not w.static:
            # only the known prefix: judge the directory it names, then ask at least
            base = text.rsplit("/", 1)[0] if "/" in text else ""
            path = self.paths.resolve(base or "/", cmd.cwd) if base or text.startswith("/") else None
            verdict = self.paths.write(places.place(f"{path}/_")) if path is not None else None
            if verdict is not None and verdict.verdict is Verdict.DENY:
                out.append(verdict.finding(f"{what} under {text!r}: "))
            out.append(
                Finding.of(
                    Layer.HARD, "path:unknown", Verdict.ASK, f"{what} target {w.text!r} is only known at run time"
                )
            )
            return
        path = self.paths.resolve(text, cmd.cwd)
        if path is None:
            out.append(
                Finding.of(
                    Layer.HARD, "path:unknown", Verdict.ASK, f"{what} target {text!r} cannot be resolved{_WHY_UNKNOWN}"
                )
            )
            return
        if path == self.workspace and not (t.delete or t.recursive):
            path = places.join(path, "_")  # writing *into* the workspace (cp x ., tar -x), not replacing it
        verdict = self.paths.write(path)
        chosen = places.name(path) in (FOUND, "*")  # find -delete: what it finds under its root
        base = places.parent(path) if chosen and t.delete else path
        if verdict is None and (t.delete or t.recursive) and os.path.isdir(base):  # a file: judged as itself
            verdict = self._reach(base, f"{cmd.name} changes the whole tree under {base}")
            if verdict is None and not (chosen and cmd.name != "find"):  # a shell glob's names: _glob_write
                verdict = self._protected_tree(base, filtered=cmd.name == "find" and places.name(path) == FOUND)
        elif verdict is None and os.path.isdir(path) and path != self.workspace:
            inside = self.paths.write(places.join(path, "_"))  # cp x DIR, unzip -d DIR: a new file inside it
            verdict = inside if inside is not None and inside.rule_id == "path:denied" else None
        if verdict is None and _has_glob(text):
            verdict = self._glob_write(text, cmd, t)
        if verdict is None:
            verdict = self.paths.dotfile(path)
        if verdict is not None:
            out.append(verdict.finding(f"{what} {text!r}: "))

    def _unpack(
        self, u: Unpack, cmd: SimpleCommand, out: list[Finding], earlier: Sequence[tuple[SimpleCommand, Effects]]
    ) -> None:
        """An archive or patch written out under a directory writes what it names (``tar xf x.tar`` with a member
        ``secrets/key.txt``): each name is judged as a write, read from the archive now (:mod:`.archives`).
        One it cannot list (a pipe, a run-time name, too big, links, one a command before it in the line may have
        written: ``cp evil.tar ok.tar && tar xf ok.tar``) may write anything under the directory: DENY when the
        deny list may reach under it."""
        into = self.paths.resolve(u.into.text, cmd.cwd) if u.into.static else None
        archive = u.archive
        if archive.static and archive.text == "-":  # standard input: a file redirected in, else a pipe
            archive = next((r.target for r in cmd.redirects if r.op == "<" and r.target is not None), archive)
        path = self.paths.resolve(archive.text, cmd.cwd) if archive.static and archive.text != "-" else None
        names = _names(u, path) if into is not None and not self._rewritten(path, earlier) else None
        if names is None or into is None:
            where = into if into is not None else self.workspace
            reach = self.paths.deny_reach(where)
            why = f"{cmd.name} writes out {archive.text or 'an archive'!r}, whose names the gate cannot read,"
            if reach is not None:
                out.append(Finding.of(Layer.HARD, "path:denied", Verdict.DENY, f"{why} under {where}; {reach!r}"))
                return
            # it may name .git/hooks or .tether/envelope.yaml: ask (a git patch's names are from the top)
            held = self.paths.protected_within(self.workspace if u.kind == "patch" else where)
            if held is not None:
                out.append(Finding.of(Layer.HARD, "path:protected", Verdict.ASK, f"{why} under {where}: {held.reason}"))
            return
        tops = [into]  # a git patch's names are from the repository's top: git's directory or one above it
        while u.kind == "patch" and places.parent(tops[-1]) != tops[-1] and self.paths.relative(tops[-1]) != ".":
            tops.append(places.parent(tops[-1]))
        for top in tops:
            for name in names:
                verdict = self._unpacked(top, name, u.kind in ("patch", "diff"))
                if verdict is not None:
                    out.append(verdict.finding(f"{cmd.name} writes {name!r} out of {archive.text!r}: "))
                    return

    def _rewritten(self, path: str | None, earlier: Sequence[tuple[SimpleCommand, Effects]]) -> bool:
        """Whether a command before, in the same line, may have written ``path`` (the gate reads it before any of
        them runs): a file or folder it names as written holding it, one not known, or a program whose writes the
        tables do not name (an interpreter, a build tool, git)."""
        if path is None or not earlier:
            return False
        from . import rewrites  # an archive after other commands: only now (see the module)

        for cmd, eff in earlier:
            spec = SPECS.get(cmd.name)
            if cmd.argv and cmd.name not in rewrites.NAMED_WRITERS and (spec is None or spec.kind != "read"):
                return True
            words = [t.word for t in eff.writes] + [u.into for u in eff.unpacks]
            words += [r.target for r in cmd.redirects if r.writes and r.target is not None]
            for w in words:
                place = self.paths.resolve(w.text, cmd.cwd) if w.static else None
                if place is None or places.within(path, place):
                    return True
        return False

    def _unpacked(self, top: str, name: str, guessed: bool) -> PlaceVerdict | None:
        """The verdict on one name an archive writes under ``top`` (a leading / is dropped, as tar and unzip do);
        a patch's names are guesses at its strip level, so only what no level may write counts for them."""
        path = self.paths.resolve(name.lstrip("/") or ".", top)
        if path is None or path == top:
            return None
        verdict = self.paths.write(path)
        if verdict is None or verdict.verdict is not Verdict.DENY:
            return None
        if guessed and verdict.rule_id in ("path:not-writable", "path:write-outside", "path:workspace-root"):
            return None
        return verdict

    def _reach(self, path: str, what: str) -> PlaceVerdict | None:
        """A directory deleted, moved or changed as a whole (``rm -r``, ``mv DIR``, ``chmod -R``) changes every file
        under it: DENY when ``filesystem.deny`` matches one of them (as they are now; a tree too big to look at, or
        one that cannot be read: when it may match one)."""
        reach = self._hidden_within(path)
        if reach is None:
            return None
        return PlaceVerdict("path:denied", Verdict.DENY, f"{what}; filesystem.deny matches {reach!r} under it")

    def _hidden_within(self, path: str) -> str | None:
        """A file under ``path`` the deny list hides now, or (too many to look at, unreadable) a pattern that may."""
        try:
            return self.paths.deny_within(path)
        except OSError:  # a folder that cannot be read: what it holds is not known
            return self.paths.deny_reach(path)

    def _protected_tree(self, base: str, filtered: bool) -> PlaceVerdict | None:
        """A tree changed as a whole that holds what :meth:`.PathPolicy.write` protects (``.git``, ``.tether``, hooks):
        DENY, or ASK when that is not known. ``filtered``: ``find -delete`` with filters deletes only what they choose,
        which is not judged here: ASK."""
        found = self.paths.protected_within(base)
        if found is None or not filtered or found.verdict is not Verdict.DENY:
            return found
        return PlaceVerdict(found.rule_id, Verdict.ASK, f"{found.reason}, which its filters may choose")

    def _glob_write(self, text: str, cmd: SimpleCommand, t: Target) -> PlaceVerdict | None:
        """A written glob: refused by its text (dotfiles, the whole workspace), else judged by each place it names
        now as a written place is (:meth:`.PathPolicy.glob_names`): the first it names outright that is refused
        decides; one it names only where the shell's dotglob (a leading dot matched by a wildcard) or nocaseglob (a
        letter in the other case) is set asks."""
        last = text.rstrip("/").rsplit("/", 1)[-1]
        if last.startswith("."):
            return PlaceVerdict("path:dotfile", Verdict.DENY, "a glob over dotfiles (and, in some shells, '..')")
        base = text.rsplit("/", 1)[0] if "/" in text else "."
        base_path = self.paths.resolve(base, cmd.cwd)
        if base_path is not None and base_path == self.workspace and last in ("*", "**"):
            return PlaceVerdict("path:workspace-root", Verdict.ASK, "a glob over the whole workspace")
        named = self.paths.glob_names(self.paths.expand_user(text), cmd.cwd)
        if isinstance(named, str):
            return PlaceVerdict("path:unknown", Verdict.ASK, f"the places the glob names are not known: {named}")
        asked: PlaceVerdict | None = None
        for place, dotglob in named:
            found = self._named_place(places.place(os.path.realpath(place)), cmd, t)
            if found is None:
                continue
            rel = self.paths.relative(places.place(place)) or place
            if not dotglob:
                return PlaceVerdict(found.rule_id, found.verdict, f"it names {rel}: {found.reason}")
            why = f"where the shell's dotglob or nocaseglob is set, it names {rel}: {found.reason}"
            asked = asked or PlaceVerdict(found.rule_id, Verdict.ASK, why)
        return asked

    def _named_place(self, path: str, cmd: SimpleCommand, t: Target) -> PlaceVerdict | None:
        """A place a glob names, judged as the same place written by name: the place, the tree a delete or recursive
        change reaches, a dotfile."""
        verdict = self.paths.write(path)
        if verdict is None and (t.delete or t.recursive) and os.path.isdir(path):
            verdict = self._reach(path, f"{cmd.name} changes the whole tree under {path}")
            verdict = verdict or self._protected_tree(path, filtered=False)
        return verdict or self.paths.dotfile(path)

    def _read_place(self, t: Target, cmd: SimpleCommand, out: list[Finding]) -> bool:
        w = t.word
        text = w.text if w.static else w.prefix
        if not w.static or t.recursive or _has_glob(text):
            self._may_read_denied(t, text, cmd, out)
        if not text:
            return False
        path = self.paths.resolve(text, cmd.cwd)
        if path is None:
            out.append(
                Finding.of(
                    Layer.HARD, "path:unknown", Verdict.ASK, f"reads {text!r}, which cannot be resolved{_WHY_UNKNOWN}"
                )
            )
            return False
        if str(path).startswith(("/dev/tcp/", "/dev/udp/")):
            out.append(Finding.of(Layer.HARD, "shell:dev-tcp", Verdict.DENY, f"{path} opens a network connection"))
            return True
        if not w.static:
            if self.paths.is_credential(path) or self.paths.is_credential(places.place(f"{path}/_")):
                out.append(
                    Finding.of(Layer.HARD, "path:credential", Verdict.DENY, f"reads under {text!r} (credentials)")
                )
                return True
            return False
        verdict = self.paths.read(path, shell=True)
        if verdict is None and _has_glob(text) and self.paths.glob_may_hit_credential(self.paths.expand_user(text)):
            verdict = PlaceVerdict("path:credential", Verdict.DENY, f"the glob {text!r} can name a credential file")
        if verdict is None and t.recursive and self.paths.holds_credentials(path):
            verdict = PlaceVerdict("path:credential", Verdict.DENY, f"reads the whole of {path}, credentials included")
        if verdict is not None:
            out.append(verdict.finding())
            return verdict.rule_id == "path:credential"
        uploads_outside = cmd.name in FETCHERS and self.paths.relative(path) is None
        return uploads_outside or self._secretish(path)

    def _loose_read(self, w: Word, cmd: SimpleCommand, out: list[Finding]) -> bool:
        """Any argument of any program that names a credential file is a read of it."""
        secret = False
        for piece in {w.text, w.text.split("=", 1)[-1], w.text.lstrip("@")}:
            if not piece or not (piece.startswith(("/", "~", ".")) or "/" in piece):
                continue
            text = piece if w.static else (w.prefix.split("=", 1)[-1] if w.prefix else "")
            if not text:
                continue
            path = self.paths.resolve(text, cmd.cwd)
            if path is None:
                out.append(
                    Finding.of(Layer.HARD, "path:unknown", Verdict.ASK, f"{piece!r} cannot be resolved{_WHY_UNKNOWN}")
                )
                continue
            hit = self.paths.is_credential(path) or (
                _has_glob(text) and self.paths.glob_may_hit_credential(self.paths.expand_user(text))
            )
            if hit:
                out.append(Finding.of(Layer.HARD, "path:credential", Verdict.DENY, f"{piece!r} is a credential file"))
                return True
            secret = secret or self._secretish(path)
        return secret

    def _build_output(self, w: Word, cmd: SimpleCommand, out: list[Finding]) -> None:
        """A build or package tool writes where its options say (``go build -o F``, ``cargo build --target-dir D``,
        ``pip download -d D``, ``pytest --cov-report=xml:F``), which no table lists: a word of one naming a place
        :meth:`.PathPolicy.write` protects is taken for a write there. Until 2026-12-04 each of those was allowed into
        ``.tether/``, ``--cov-report=xml:.tether/envelope.yaml`` over the envelope."""
        if not w.static:
            return
        pieces = {w.text, w.text.split("=", 1)[-1]}
        pieces |= {p.rsplit(":", 1)[-1] for p in list(pieces) if ":" in p and "://" not in p}
        for piece in sorted(pieces):
            path = self.paths.resolve(piece, cmd.cwd) if piece and not piece.startswith("-") else None
            found = self.paths.write(path) if path is not None else None
            if found is not None and found.rule_id == "path:protected":
                out.append(found.finding(f"{cmd.name} may write {piece!r}: "))
                return

    def _secretish(self, path: str) -> bool:
        """Dotfiles in the home directory and ``.env`` files: not credentials, but not for sending."""
        home = places.place(self.paths.home)
        name = places.name(path)
        rel = places.relative(path, home) if path != home else None  # under home, not home itself
        in_home_dot = rel is not None and any(p.startswith(".") for p in places.parts(rel))
        return in_home_dot or (name.startswith(".env") and name not in (".env.example", ".env.sample"))


def _output_named(decision: Decision, cmd: SimpleCommand, eff: Effects) -> Decision:
    """``echo x > f`` is allowed as a program that only reads, but it writes ``f``: the reason says so, and that
    ``filesystem.write`` let it (a target it refuses decides on its own, as a hard finding). So does a reader's own
    output file (``sort -o f``, ``uniq IN f``, ``xxd IN f``: "uniq only reads" was all it said)."""
    if decision.deciding_rule != "coding:allow-read-only":
        return decision
    written = [r.target.text for r in cmd.redirects if r.writes and r.target and not r.target.text.startswith("/dev/")]
    written = [t.word.text for t in eff.writes] + written
    if not written:
        return decision
    where = ", ".join(repr(t) for t in written)
    reason = f"{decision.reason}, and its output goes to {where}, which filesystem.write allows"
    return Decision(decision.verdict, decision.deciding_rule, reason, decision.matches, decision.taints)


def _read_only(analysis: Analysis, known: Mapping[int, Effects]) -> bool:
    """Only read-only programs, no writes: what a CAUTIOUS or BLOCKED run may still do (``known``: the effects
    already worked out, by the command's ``id``)."""
    for cmd in analysis.commands:
        eff = known.get(id(cmd))
        if eff is None:
            eff = effects(cmd)
        if eff.writes or any(r.writes for r in cmd.redirects):
            return False
        if cmd.name == "git":
            words, _ = profile.git_words(cmd)
            if not words or words[0] not in GIT_READ:
                return False
        elif cmd.name not in profile.READ_ONLY:
            return False
    return True


def _unsandboxed(decision: Decision) -> Decision:
    """A command the agent asks to run outside its own sandbox (Claude Code's ``dangerouslyDisableSandbox``, Codex's
    escalated permissions: ``unsandboxed`` in a hook's call, hooks/calls.py): a floor of ASK, as an approval class is.
    The agent's sandbox is what contains the code the gate cannot see into (a script, a build); a command that failed
    there and is run again outside it is exactly the silent fallback a human must see. A DENY stays DENY."""
    m = RuleMatch("shell:unsandboxed", Verdict.ASK, "the agent asks to run this command outside its sandbox")
    matches = (*decision.matches, m)
    if decision.verdict is not Verdict.ALLOW:
        return Decision(decision.verdict, decision.deciding_rule, decision.reason, matches)
    return Decision(Verdict.ASK, m.id, m.reason, matches)


def _builds(cmd: SimpleCommand) -> bool:
    """A package manager or a build tool: it writes where its options say, which the tables do not list."""
    spec = SPECS.get(cmd.name)
    return cmd.name in PACKAGE_TOOLS or cmd.name in PIP or (spec is not None and spec.kind == "build")


def _system_dir(path: str) -> bool:
    return path in ("/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin")


def _git_dir(parsed: programs.Parsed, cwd: str | None) -> str | None:
    """The directory git works in: the command's, moved by each ``-C DIR`` in turn (``-C a -C b`` is ``a/b``);
    None when it is not known (an unknown cwd, a ``-C`` only known at run time)."""
    here = cwd
    for name, value in parsed.options:
        if name == "-C" and value is not None:
            if here is None or not value.static or value.text.startswith("~"):
                return None
            here = places.place(os.path.normpath(places.join(here, value.text)))
    return here


#: tether's folder in a workspace: the log and the envelope (hooks/session.py).
_LOG = ".tether"
#: What resumes or ends a rebase, merge, cherry-pick, revert or am in progress: it writes from the commits (or
#: patches) named when the operation began, which were judged then, or puts HEAD's files back.
_RESUMES = frozenset({"--continue", "--skip", "--abort", "--quit"})
#: git subcommands that may rewrite any tracked file of the work tree (HEAD moves, or the index is checked out).
_GIT_REWRITES_ALL = frozenset({"merge", "rebase", "pull", "cherry-pick", "revert", "am", "bisect", "read-tree"})
_GIT_REWRITES_ALL |= {"checkout-index", "sparse-checkout"}
_STASH_KEEPS = frozenset({"list", "show", "drop", "clear", "create", "store"})


def _rewrite_scope(sub: str, rest: list[str]) -> list[str] | None:
    """The pathspecs under which ``git SUB REST`` may rewrite (or, ``clean``, delete) files of the work tree: [] for
    all of it, None when it rewrites none (``reset`` without ``--hard``, ``stash list``, a new branch at HEAD, a dry
    run). A pathspec only known at run time is ``*``: all of it."""
    ops = [w for w in rest if not w.startswith("-")]
    paths = rest[rest.index("--") + 1 :] if "--" in rest else None
    if sub in _GIT_REWRITES_ALL:
        return []
    if sub == "reset":
        return [] if {"--hard", "--merge", "--keep"} & set(rest) else None
    if sub == "stash":  # push's pathspecs after --; save's words after -- are its message
        if rest[:1] and rest[0] in _STASH_KEEPS:
            return None
        return paths if paths and rest[:1] != ["save"] else []
    if sub == "clean":
        return None if {"-n", "--dry-run"} & set(rest) else (paths if paths is not None else ops)
    if sub == "restore":
        return paths if paths is not None else ops
    if sub in ("checkout", "switch"):
        if paths is not None:
            return paths
        if sub == "switch" and "--orphan" in rest:
            return []  # it empties the work tree of every tracked file (checkout --orphan keeps them)
        new = {"-b", "-B", "-c", "-C", "--orphan"} & set(rest)
        return None if new and len(ops) <= 1 else []
    return None


def _log_copies(top: str, log: str, sources: rewrites.Sources) -> list[tuple[str, str]] | None:
    """The paths under ``log`` (relative to ``top``) that the index of ``top`` lists or the commits of ``sources``
    hold, each with the id of its contents there; None when either cannot be read. Only the folders on the way to
    ``log`` and in it are read of the commits, and an index whose bytes name nothing there is not parsed
    (:func:`gitindex.may_list`)."""
    inside = f"{places.relative(log, top)}/"
    listed = gitindex.tracked_blobs(top, inside) if gitindex.may_list(top, inside) else []
    if listed is not None and (sources[0] or sources[2]):

        def descend(name: str) -> bool:
            return inside.startswith(f"{name}/") or f"{name}/".startswith(inside)

        more = gitindex.committed_blobs(top, sources[0], parents=sources[1], replays=sources[2], descend=descend)
        listed = None if more is None else listed + more
    return None if listed is None else [(n, b) for n, b in listed if n.startswith(inside)]


def _same_envelope(path: str, blob: str) -> bool:
    """Whether git's copy (the blob ``blob``, SHA-1 or SHA-256 by its length) of the envelope at ``path`` holds what
    the file holds now: writing it back changes nothing. The envelope only: tether writes the log on every call,
    this decision's too, so no copy of it stays the log's."""
    if places.name(path) != "envelope.yaml" or len(blob) not in (40, 64):
        return False
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_DOCUMENT_BYTES + 1)
    except OSError:
        return False
    if len(data) > MAX_DOCUMENT_BYTES:
        return False
    import hashlib  # not on a plain call's path (tests/hooks/test_cold_libraries.py)

    digest = hashlib.sha1 if len(blob) == 40 else hashlib.sha256
    return digest(b"blob %d\0%s" % (len(data), data)).hexdigest() == blob


#: Options of git's log family that print a patch (the file contents it changes): -U and --unified imply -p.
_PATCH_OPTIONS = frozenset({"-p", "-u", "--patch", "-L", "-U", "--unified", "-c", "--cc", "--dd", "--binary"})
_PATCH_OPTIONS |= {"--patch-with-stat", "--patch-with-raw", "--remerge-diff"}


def _shows_patch(parsed: programs.Parsed) -> bool:
    """Whether a log-family command prints patches: a patch option in any spelling, or an option its table does not
    know (it may be one: ``git log --cc`` was allowed and printed a hidden file), unless a ``-s``/``--no-patch``
    comes after the last of them (git: the last one wins; ``git log -p --no-patch`` prints none, run for real).
    The unknown ones' places are not kept: one of them is a patch option wherever ``-s`` stands."""
    if {u.split("=", 1)[0] for u in parsed.unknown} & _PATCH_OPTIONS:
        return True
    shown = False
    for name, _ in parsed.options:
        if name in ("-s", "--no-patch"):
            shown = False
        elif name in _PATCH_OPTIONS or name.startswith("-U"):
            shown = True
    return shown


def _code_words(cmd: SimpleCommand) -> list[Word]:
    """The files of code ``cmd`` runs that its option tables do not name: the command itself when a path, an
    interpreter's script, and for ``python -m A.B`` each file the import may run (A/__init__.py, A/B.py,
    A/B/__init__.py, A/B/__main__.py)."""
    out = [cmd.argv[0]] if cmd.argv and "/" in cmd.argv[0].text else []
    if not interp.is_interpreter(cmd.name):
        return out
    prog = interp.program(cmd.name, [w.text for w in cmd.args])
    if prog.kind == "script":
        out.append(cmd.args[prog.index])
    elif prog.kind == "module" and cmd.args[prog.index].static:
        text = cmd.args[prog.index].text
        parts = (text[2:] if text.startswith("-m") else text).split(".")
        heads = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        out += [Word.lit(f"{h}/__init__.py") for h in heads] + [Word.lit(f"{heads[-1]}{t}") for t in _MODULE_FILES]
    return out


_MODULE_FILES = (".py", "/__main__.py")


def _glob_depth(text: str) -> int:
    """How many levels below its known directory a glob reaches: ``build/*/*`` two, ``src/*.py`` one."""
    cut = min((text.find(c) for c in "*?[" if c in text), default=len(text))
    return text[text.rfind("/", 0, cut) + 1 :].count("/") + 1


def _names(u: Unpack, path: str | None) -> list[str] | None:
    """The names ``u`` writes, read from the archive at ``path`` as the command renames them; None when unknown."""
    names = archives.members(path, u.kind) if path is not None and not u.renamed else None
    if names is not None and u.strip:
        names = archives.stripped(names, u.strip)
    if names is not None and u.prefix:
        names = [f"{u.prefix}/{n}" for n in names]
    return names


def _has_glob(text: str) -> bool:
    return any(c in text for c in "*?[")
