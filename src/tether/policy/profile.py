"""The built-in ``coding`` profile: what a coding agent may do without asking.

Judgement calls, written down:

* **Read-only commands are allowed** (``ls``, ``cat``, ``grep``, ``rg``, ``find`` without
  ``-exec``/``-delete``, ``git status|diff|log|show|branch``, ``sed`` without ``-i`` and with a
  script of only print/substitute commands, ``--version`` forms …) and so are pipelines made only
  of them. Credential files stay unreadable whatever the command (the gate checks every path).
* **Working in the workspace is allowed**: a coding agent must edit, build and test. Running the
  project's tests and builds (``python``, ``pytest``, ``make``, ``ruff``, ``mypy``, ``npm test``,
  ``cargo test``, ``go test`` …), ``git add/commit/checkout -b``, ``mkdir``, ``touch``, ``cp``,
  ``mv``, ``rm`` (even ``-r``) of paths *inside the workspace*. Running a script in the workspace
  (``python x.py``, ``bash x.sh``) is allowed: static analysis cannot see into it, and the agent
  could write the same code anyway. The sandbox, not this list, contains what such code does.
  Installing packages from the default index is allowed; custom indexes, URLs and VCS specs ask, written in a
  requirements file (``pip install -r F``, ``uv pip sync F``: :mod:`.requirements`) as well.
* **Inline code**: ``python -c`` is allowed when :mod:`tether.policy.inline` finds it tame;
  other inline code (``node -e``, ``perl -e``) asks. Reverse-shell shapes are denied.
* **Ask** for anything that leaves the machine or changes something shared: ``git push``,
  ``fetch``/``pull``/``clone``, publishing packages, cloud/cluster/infra CLIs, ``ssh``/``scp``,
  ``curl``/``wget``, ``docker run`` (host mounts and privileged flags named as such), ``sudo``,
  system package managers, destructive git (``reset --hard``, ``clean -f``, ``checkout .``).
* **Deny** destructive and escape forms: recursive deletes of ``/``, ``~`` or outside the
  workspace, ``mkfs``/partitioning, ``dd`` to devices, fork bombs, recursive chmod/chown of
  ``/``, power-off, ``kill -1``, reverse shells, exfiltration (environment dumps or dotfiles in the
  same command as a network tool).
* **The agent does not govern itself**: ``tether approve|deny`` (answering its own pending calls), ``tether
  hook`` (installing or removing the hooks that judge it) and ``tether daemon`` (stopping the process that
  decides) are denied however tether is named — on the path, ``.venv/bin/tether`` (which would otherwise be a
  workspace program, allowed), ``python -m tether.cli.main``; a tether command whose words are not all known asks.
* **Everything else asks** (fail closed): an unknown program is never allowed by default.
"""

from __future__ import annotations

import os
import re
from _collections_abc import Callable  # collections.abc's, without the collections package

from tether import places
from tether.memo import cache
from tether.records import dataclass, replace

from . import inline, interp, knowledge, programs, requirements
from .command import SimpleCommand, Word, operands
from .decision import Finding, Layer, Verdict
from .effects import Effects, tar_args, without_exec
from .paths import PathPolicy
from .shell import Analysis

#: What the option tables let the profile allow: read-only programs and programs that work in the workspace.
READ_ONLY = frozenset(n for n, kind in knowledge.SPECS.kinds() if kind == "read")
BUILD = frozenset(n for n, kind in knowledge.SPECS.kinds() if kind == "build") | {"dd"}


@cache
def _vcs_or_url() -> re.Pattern[str]:
    """A package named by where it comes from (compiled at first use: only package installs look)."""
    return re.compile(r"^(git\+|hg\+|svn\+|bzr\+|https?://|ftp://|file://|github:|gitlab:|bitbucket:|[\w.-]+@)")


@cache
def _safe_sed() -> re.Pattern[str]:
    """One sed command that only prints or edits the stream (compiled at first use: only sed is read against it).
    An ``s`` or ``y`` command is read the way sed reads it: each part runs to the next *unescaped* delimiter, so
    ``s/a/b/w/tmp/x`` ends in the flags ``w/tmp/x`` (writes a file: refused) while ``s/x/skip("later")/`` has
    none. Flags are an allowlist."""
    return re.compile(
        r"^\s*(\d+|\$|/[^/]*/)?(,(\d+|\$|/[^/]*/|\+\d+))?\s*!?\s*"
        r"([pdqn=]|s(.)(?:\\.|(?!\5).)*\5(?:\\.|(?!\5).)*\5[gpiImM0-9]*|y(.)(?:\\.|(?!\6).)*\6(?:\\.|(?!\6).)*\6|\{|\})?\s*$"
    )


@dataclass(frozen=True, eq=False, repr=False)
class Context:
    """What the profile judges a command against: the path policy and the workspace."""

    paths: PathPolicy
    workspace: str  # a place as tether.places spells it

    def paths_in_workspace(self, text: str, cwd: str | None) -> str | None:
        """Where ``text`` leads from ``cwd``, when that is in the workspace; else None."""
        path = self.paths.resolve(text, cwd)
        return path if path is not None and self.paths.relative(path) is not None else None


Judge = Callable[[SimpleCommand, Context], list[Finding] | None]


def _f(rule: str, verdict: Verdict, reason: str, *, hard: bool = False) -> Finding:
    layer = Layer.HARD if hard or verdict is Verdict.DENY else Layer.PROFILE
    return Finding.of(layer, f"coding:{rule}", verdict, reason)


def _allow(rule: str, reason: str) -> list[Finding]:
    return [_f(rule, Verdict.ALLOW, reason)]


def _ask(rule: str, reason: str, *, hard: bool = False) -> list[Finding]:
    return [_f(rule, Verdict.ASK, reason, hard=hard)]


def git_words(cmd: SimpleCommand) -> tuple[list[str], bool]:
    """``git -C x -c k=v --no-pager push`` → ``[push]``, and whether options outside git's table were given."""
    parsed = programs.parse(knowledge.GIT, list(cmd.args))
    return [w.text for w in parsed.operands], bool(parsed.code or parsed.unknown)


def findings_for(cmd: SimpleCommand, eff: Effects, ctx: Context) -> list[Finding]:
    """The profile's opinion of one simple command (may be empty: the default then asks)."""
    out: list[Finding] = []
    if set(cmd.wrappers) & knowledge.PRIVILEGED or cmd.name in knowledge.PRIVILEGED:
        out += _ask("ask-privilege", "runs with elevated privileges", hard=True)
    out += _destructive(cmd, eff, ctx) + _governor(cmd)
    verdicts = _classify(cmd, eff, ctx)
    out += verdicts
    if any([f.match.verdict is Verdict.ALLOW for f in verdicts]):  # a list: no generator left open to close
        out += options(cmd) + _scripts(cmd, eff, ctx) + _workdir(cmd, eff, ctx)
    return out


def options(cmd: SimpleCommand) -> list[Finding]:
    """The option table's opinion: every option listed, every argument known, no option that runs code."""
    spec = knowledge.SPECS.get(cmd.name)
    if spec is None:
        return []
    args = list(cmd.args)
    if cmd.name == "find":
        args = without_exec(args)
    elif cmd.name in ("tar", "bsdtar"):
        args = tar_args(args)
    label = cmd.name
    out: list[Finding] = []
    current: programs.Spec | None = spec
    while current is not None:
        parsed = programs.parse(current, args)
        for opt in parsed.code:
            what = current.code[opt]
            out += _ask("ask-exec-option", f"{label} {opt} runs {what}: not a read-only option", hard=True)
        for opt in [] if current.inert else parsed.unknown:
            out += _ask("ask-option", f"{label} {opt}: not an option the profile knows to be safe for {label}")
        unresolved = [w for w in parsed.unresolved if not (cmd.dynamic_tail and w is cmd.argv[-1])]
        if unresolved and not current.inert:  # (xargs' input is taken as operands: see docs/gate.md)
            word = unresolved[0].text
            out += _ask("ask-unresolved-arg", f"{label}: the argument {word!r} is only known at run time")
        if current.subcommands is None:
            break
        sub, current, args = programs.subcommand(current, parsed)
        if sub and current is None:
            out += _ask("ask-subcommand", f"{label} {sub}: not a subcommand the profile knows to be safe")
        label = f"{label} {sub}"
    return out


def _workdir(cmd: SimpleCommand, eff: Effects, ctx: Context) -> list[Finding]:
    """Build tools, git and interpreters load code and configuration from where they run (a Makefile,
    ``.git/config``, ``conftest.py``): they run inside the workspace, or the profile does not allow them."""
    spec = knowledge.SPECS.get(cmd.name)
    if spec is not None and spec.kind == "read" and eff.chdir is None:
        return []
    where = cmd.cwd
    if eff.chdir is not None:
        where = ctx.paths.resolve(eff.chdir.text, cmd.cwd) if eff.chdir.static else None
    resolved = ctx.paths.resolve(str(where), None) if where is not None else None
    if resolved is None or ctx.paths.relative(resolved) is None:
        place = "an unknown directory" if resolved is None else str(resolved)
        return _ask("ask-outside-workspace", f"{cmd.name} would run in {place}, whose files can run code", hard=True)
    return []


def _scripts(cmd: SimpleCommand, eff: Effects, ctx: Context) -> list[Finding]:
    """Files of code (makefiles, sourced scripts) come from the workspace, never from stdin or elsewhere."""
    for w in eff.scripts:
        if w.text in ("-", "/dev/stdin", "/proc/self/fd/0", "/dev/fd/0"):
            return _ask("ask-exec-option", f"{cmd.name} runs code it reads from standard input", hard=True)
        if not _in_workspace(w, cmd, ctx):
            return _ask("ask-run-outside", f"{cmd.name} runs {w.text}, which is not in the workspace")
    return []


def _targets_home_or_root(eff: Effects, cmd: SimpleCommand, ctx: Context) -> tuple[str, str] | None:
    for t in eff.writes:
        if not (t.recursive or t.delete):
            continue
        text = t.word.text if t.word.static else t.word.prefix
        if text.endswith("/*") or text == "*":
            text = text[:-1] or "."
        path = ctx.paths.resolve(text, cmd.cwd) if text else None
        if path is None:
            continue
        home = places.place(ctx.paths.home)
        if path == "/" or (t.word.static and t.word.text.rstrip("/") in ("/*", "")):
            return "rm-root", f"{cmd.name} of / (the whole file system)"
        if places.within(home, path) or path in ("/home", "/root") or places.parent(path) == "/home":
            return "rm-home", f"{cmd.name} of the home directory {path}"
    return None


def _destructive(cmd: SimpleCommand, eff: Effects, ctx: Context) -> list[Finding]:
    name = cmd.name
    texts = [w.text for w in cmd.args]
    if name in knowledge.DISK or name.startswith(knowledge.DISK_PREFIXES):
        return [_f("deny-mkfs", Verdict.DENY, f"{name} formats or repartitions a disk")]
    if name == "dd" and any(t.startswith("of=/dev/") and t not in ("of=/dev/null",) for t in texts):
        return [_f("deny-dd-device", Verdict.DENY, "dd writes straight to a device")]
    if name in knowledge.POWER or (name == "init" and texts[:1] in (["0"], ["6"])):
        return [_f("deny-power", Verdict.DENY, f"{name} stops or restarts the machine")]
    if name == "systemctl" and set(texts) & knowledge.SYSTEMCTL_POWER:
        return [_f("deny-power", Verdict.DENY, "systemctl stops or restarts the machine")]
    if name == "kill" and any(t in ("-1", "1") for t in texts if t not in ("-9", "-KILL", "-s")):
        return [_f("deny-kill-all", Verdict.DENY, "kill of every process or of init")]
    hit = _targets_home_or_root(eff, cmd, ctx)
    if hit is not None:
        rule, reason = hit
        if name in knowledge.PERMISSIONS:
            rule = "chmod-root"
        return [_f(f"deny-{rule}", Verdict.DENY, reason)]
    if name in knowledge.NETCATS and knowledge.NETCAT_EXEC_OPTIONS & set(texts):
        return [_f("deny-reverse-shell", Verdict.DENY, f"{name} wires a shell to a socket")]
    if name == "socat" and any(re.search(r"(^|[,:])(exec|system):", t, re.IGNORECASE) for t in texts):
        return [_f("deny-reverse-shell", Verdict.DENY, "socat wires a program to a socket")]
    if interp.is_interpreter(name):
        prog = interp.program(name, texts)
        code = texts[prog.index] if prog.kind == "inline" else None
        body = cmd.stdin_body
        if code is None and prog.kind == "stdin" and body is not None and body.body is not None:
            code = body.body
        if code is not None and inline.reverse_shell(code):
            return [_f("deny-reverse-shell", Verdict.DENY, f"{name} code connects a socket to a process")]
    return []


#: tether's commands that answer approvals or change what governs the agent (the hooks, the deciding daemon).
GOVERNING = frozenset({"approve", "deny", "hook", "daemon"})


def _governor(cmd: SimpleCommand) -> list[Finding]:
    """The agent's own governance, through tether's CLI: denied (see the module docstring). Any of its words
    naming a governing command is enough (``tether --db X approve`` as well; a run called "approve" is rare and
    asks nothing worse than a denial), and a word the gate cannot read makes it ask."""
    args = _tether_args(cmd)
    if args is None:
        return []
    if any(w.static and w.text in GOVERNING for w in args):
        return [_f("deny-self-govern", Verdict.DENY, "tether's approve, deny, hook and daemon are the human's")]
    if not all(w.static for w in args):
        return _ask("ask-self-govern", "which tether command this is cannot be told", hard=True)
    return []


def _tether_args(cmd: SimpleCommand) -> tuple[Word, ...] | None:
    """The arguments of tether's CLI in ``cmd`` (``tether …``, ``/path/to/tether …``, ``python -m tether.cli.main
    …`` or any other of tether's modules run as a program), or None when ``cmd`` does not run it."""
    if cmd.name == "tether":
        return cmd.args
    if not interp.is_python(cmd.name):
        return None
    prog = interp.program(cmd.name, [w.text for w in cmd.args])
    if prog.kind != "module":
        return None
    module = cmd.args[prog.index].text.removeprefix("-m")
    return cmd.args[prog.index + 1 :] if module.partition(".")[0] == "tether" else None


def _in_workspace(word: Word, cmd: SimpleCommand, ctx: Context) -> bool:
    if not word.static:
        return False
    path = ctx.paths.resolve(word.text, cmd.cwd)
    return path is not None and ctx.paths.relative(path) is not None


def _classify(cmd: SimpleCommand, eff: Effects, ctx: Context) -> list[Finding]:
    """The profile's verdict on the program: the generic forms first, then the judge of its family."""
    if not cmd.argv or cmd.computed:
        return []
    found = _generic(cmd, eff, ctx)
    if found is None:
        judge = _JUDGES.get(cmd.name) or (_interpreter if interp.is_python(cmd.name) else None)
        found = judge(cmd, ctx) if judge is not None else None
    if found is not None:
        return found
    if cmd.name in READ_ONLY:
        return _allow("allow-read-only", f"{cmd.name} only reads")
    if cmd.name in BUILD:
        return _allow("allow-workspace-build", f"{cmd.name} works inside the workspace")
    return []


def _generic(cmd: SimpleCommand, eff: Effects, ctx: Context) -> list[Finding] | None:
    """``--version`` forms, programs named by a path, environment dumps: the same for every program."""
    name, head = cmd.name, cmd.argv[0].text
    texts = [w.text for w in cmd.args]
    if texts in (["--version"], ["-V"], ["version"], ["--help"], ["-h"]) and "/" not in head:
        return _allow("allow-version", f"{name} {texts[0]} only prints")
    if "/" in head and not _system_binary(head):
        if _in_workspace(cmd.argv[0], cmd, ctx):
            return _allow("allow-run-workspace", f"runs {head} from the workspace")
        return _ask("ask-run-outside", f"runs {head} from outside the workspace")
    if eff.env_dump:
        return _ask("ask-dump-env", f"{name} prints the whole environment, which may hold secrets")
    return None


def _project_module(mod: str, cmd: SimpleCommand, ctx: Context) -> bool:
    """Does ``mod`` name a module in the workspace (where ``python -m`` would find it first)?"""
    rel = mod.replace(".", "/")
    for base in (".", "src"):
        for candidate in (f"{base}/{rel}.py", f"{base}/{rel}/__main__.py", f"{base}/{rel}/__init__.py"):
            path = ctx.paths.resolve(candidate, cmd.cwd)
            if path is not None and ctx.paths.relative(path) is not None and os.path.isfile(path):
                return True
    return False


def _system_binary(text: str) -> bool:
    return text.rsplit("/", 1)[0] in ("/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin")


def _git(cmd: SimpleCommand, ctx: Context) -> list[Finding]:
    parsed = programs.parse(knowledge.GIT, list(cmd.args))
    if parsed.code:  # -c, --config-env, --exec-path … (spelled in full, abbreviated or clustered)
        opt = parsed.code[0]
        return _ask("ask-exec-option", f"git {opt} runs {knowledge.GIT.code[opt]}: not a read-only option", hard=True)
    if parsed.unknown:
        return _ask("ask-git-config-override", "git options outside its table (-c, --git-dir …) can run programs")
    words = [w.text for w in parsed.operands]
    sub = words[0] if words else ""
    rest = words[1:]
    if sub in knowledge.GIT_REMOTE:
        rule = "ask-git-push" if sub == "push" else "ask-git-remote"
        return _ask(rule, f"git {sub} talks to a remote")
    if sub == "remote":
        if not rest or rest[0] in knowledge.GIT_REMOTE_READ:
            return _allow("allow-read-only", "git remote lists remotes")
        return _ask("ask-git-remote", "git remote changes where code is pushed")
    if sub == "config":
        if any(r in knowledge.GIT_CONFIG_READ for r in rest) or len([r for r in rest if not r.startswith("-")]) <= 1:
            return _allow("allow-read-only", "git config read")
        return _ask("ask-git-config", "git config changes can run programs (hooks, pagers, aliases)")
    if sub == "reset" and "--hard" in rest:
        return _ask("ask-git-discard", "git reset --hard discards uncommitted work")
    if sub == "clean" and any(r.startswith("-") and "f" in r for r in rest):
        return _ask("ask-git-discard", "git clean -f deletes untracked files")
    if sub in ("checkout", "restore") and ("." in rest or "--" in rest) and "-b" not in rest and "--staged" not in rest:
        return _ask("ask-git-discard", f"git {sub} of paths discards uncommitted changes")
    if sub == "stash" and rest[:1] in (["drop"], ["clear"]):
        return _ask("ask-git-discard", "git stash drop/clear discards work")
    if sub in knowledge.GIT_REWRITE:
        return _ask("ask-git-rewrite", f"git {sub} rewrites history")
    if sub in knowledge.GIT_READ or (sub == "tag" and (not rest or rest[0] in ("-l", "--list"))):
        return _allow("allow-read-only", f"git {sub} only reads")
    if sub in knowledge.GIT_WORK:
        return _allow("allow-git-work", f"git {sub} changes only the local repository")
    return []


def _container(cmd: SimpleCommand, ctx: Context) -> list[Finding]:
    texts = [w.text for w in cmd.args]
    sub = next((t for t in texts if not t.startswith("-")), "")
    if sub in knowledge.CONTAINER_READ:
        return _allow("allow-read-only", f"{cmd.name} {sub} only reads")
    risky = [
        t
        for i, t in enumerate(texts)
        if t in knowledge.CONTAINER_HOST_OPTIONS
        or (i > 0 and texts[i - 1] in ("-v", "--volume", "--mount") and not t.startswith(("./", "$PWD", ".:")))
        or t.startswith(("--volume=/", "-v/", "--mount=type=bind"))
    ]
    if risky:
        return _ask("ask-docker-host-mount", f"{cmd.name} {sub} with host access ({risky[0]})")
    return _ask("ask-containers", f"{cmd.name} {sub} starts or changes containers")


def _custom_index(texts: list[str]) -> bool:
    """An index or registry other than the default (``-i URL``, ``--index-url=URL``, ``--registry URL``)."""
    prefixes = tuple(f + "=" for f in knowledge.INDEX_OPTIONS)
    return any(t in knowledge.INDEX_OPTIONS or t.startswith(prefixes) for t in texts)


def _pip(texts: list[str], cmd: SimpleCommand, ctx: Context) -> list[Finding]:
    sub = next((t for t in texts if not t.startswith("-")), "")
    if sub not in knowledge.PIP_FETCH and sub != "sync":  # uv pip sync FILE… installs what its files name
        return _allow("allow-workspace-build", f"pip {sub} does not fetch code")
    if _custom_index(texts):
        return _ask("ask-custom-index", "install from a custom index")
    if any(_vcs_or_url().match(t) for t in texts):
        return _ask("ask-custom-index", "install from a URL or VCS")
    if any(t in knowledge.PIP_OUTSIDE_OPTIONS for t in texts):
        return _ask("ask-system-install", "install outside the project environment")
    files = requirements.files_named(texts)
    if sub == "sync":
        files += [t for t in texts[texts.index("sync") + 1 :] if not t.startswith("-") and t not in files]
    for name in files:
        why = requirements.objection(name, ctx.paths_in_workspace, cmd.cwd, lambda w: bool(_vcs_or_url().match(w)))
        if why is not None:
            return _ask("ask-custom-index", why)
    return _allow("allow-install", "install from the default index into the project environment")


def _package_tool(cmd: SimpleCommand, ctx: Context) -> list[Finding]:
    name, texts = cmd.name, [w.text for w in cmd.args]
    sub = next((t for t in texts if not t.startswith("-")), "")
    code = [t for t in texts if t.split("=", 1)[0] in knowledge.PACKAGE_CODE_OPTIONS.get(name, ())]
    if code:
        return _ask("ask-exec-option", f"{name} {code[0]} runs a program or configuration from elsewhere", hard=True)
    if sub in knowledge.PUBLISH:
        return _ask("ask-publish", f"{name} {sub} publishes or changes a registry")
    if _custom_index(texts) or any(t in ("--git", "--index") for t in texts):
        return _ask("ask-custom-index", f"{name} {sub} from a custom registry or index")
    if sub in ("install", "i", "add") and any(_vcs_or_url().match(t) for t in texts[1:]):
        return _ask("ask-custom-index", f"{name} {sub} from a URL or VCS")
    if name == "uv" and sub == "pip":
        return _pip(texts[texts.index("pip") + 1 :], cmd, ctx)
    if name in ("cargo", "go") and sub == "install":
        return _ask("ask-system-install", f"{name} install writes outside the workspace")
    if name == "gem" and sub == "install":
        return _ask("ask-system-install", "gem install writes outside the workspace")
    if name in ("npm", "pnpm", "yarn", "bun") and sub in ("exec", "dlx", "x", "create", "init") and name != "npm":
        return _ask("ask-download-run", f"{name} {sub} downloads and runs a package")
    if sub in ("config", "set") or (name == "npm" and sub == "exec"):
        return _ask("ask-package-config", f"{name} {sub}")
    if "-g" in texts or "--global" in texts:
        return _ask("ask-system-install", f"{name} global install")
    return _allow("allow-workspace-build", f"{name} {sub} builds, tests or installs for the project")


def _sed(cmd: SimpleCommand, ctx: Context) -> list[Finding]:
    spec = knowledge.SPECS["sed"]
    parsed = programs.parse(spec, list(cmd.args))
    scripts = [v.text for n, v in parsed.options if n in ("-e", "--expression") and v is not None]
    if parsed.has("-f", "--file"):
        return _ask("ask-sed-script", "sed runs a script file")
    if not scripts:
        scripts = [w.text for w in parsed.operands[:1]]
    for script in scripts:
        for part in re.split(r"[;\n]", script):
            if not _safe_sed().match(part):
                return _ask("ask-sed-script", f"sed script {part.strip()!r} may write files or run commands")
    if programs.in_place(parsed):
        return _allow("allow-workspace-build", "sed -i edits files in place")
    return _allow("allow-read-only", "sed prints edited text")


def _interpreter(cmd: SimpleCommand, ctx: Context) -> list[Finding]:
    name, texts = cmd.name, [w.text for w in cmd.args]
    if interp.is_python(name) and texts[:2] == ["-m", "pip"]:
        return _pip(texts[2:], cmd, ctx)
    prog = interp.program(name, texts)
    if prog.kind == "none":
        return _allow("allow-version", f"{name} only prints")
    if prog.kind == "module":
        return _python_module(cmd, prog.index, ctx)
    if prog.kind == "script":
        word = cmd.args[prog.index]
        if _in_workspace(word, cmd, ctx):
            return _allow("allow-run-workspace", f"{name} runs {word.text} from the workspace")
        return _ask("ask-run-outside", f"{name} runs {word.text}, which is not in the workspace")
    if name in knowledge.SHELLS and (prog.kind == "inline" or cmd.stdin_body is not None):
        how = "-c" if prog.kind == "inline" else "here-document"
        return _allow("allow-shell-inline", f"{name} {how}: the inner commands are judged themselves")
    if prog.kind == "inline":
        code = texts[prog.index] if cmd.args[prog.index].static else None
    else:
        body = cmd.stdin_body
        if body is None:  # piped: the gate's shell:pipe-to-interpreter decides
            return [] if cmd.piped else _ask("ask-interactive", f"{name} without a program waits for input")
        code = body.body if not body.body_dynamic else None
    if code is not None and interp.is_python(name):
        tame, why = inline.python_is_tame(code)
        if tame:
            return _allow("allow-python-inline", "inline Python names no process, file or network capability")
        return _ask("ask-inline-code", why)
    return _ask("ask-inline-code", f"{name} inline code cannot be checked")


def _python_module(cmd: SimpleCommand, index: int, ctx: Context) -> list[Finding]:
    """``python -m MOD``: a known project tool (judged by its own table) or a module of the project."""
    mod = cmd.args[index].text
    mod = mod[2:] if mod.startswith("-m") else mod
    if mod in knowledge.PYTHON_TOOL_MODULES:
        tool = replace(cmd, argv=(Word.lit(mod), *cmd.args[index + 1 :]))
        return _allow("allow-workspace-build", f"python -m {mod}") + options(tool)
    if _project_module(mod, cmd, ctx):
        return _allow("allow-run-workspace", f"python -m {mod} runs the project's own module")
    return _ask("ask-python-module", f"python -m {mod}: not a module of the project or a known project tool")


def _awk(cmd: SimpleCommand, ctx: Context) -> list[Finding]:
    texts = [w.text for w in cmd.args]
    prog = next((t for t in texts if not t.startswith("-")), "")
    if re.search(r"system|\||>|getline|close|fflush", prog) or "-f" in texts:
        return _ask("ask-awk-program", f"{cmd.name} program can run commands or write files")
    return _allow("allow-read-only", f"{cmd.name} filters text")


def _find(cmd: SimpleCommand, ctx: Context) -> list[Finding] | None:
    """find only lists, but for ``-delete`` and the actions that write their list into a file (each place is judged
    by the gate: the tree ``-delete`` reaches, the file ``-fprint`` names)."""
    texts = {w.text for w in cmd.args}
    if "-delete" in texts:
        return _allow("allow-workspace-build", "find -delete deletes what it finds in the workspace")
    if _FIND_WRITES & texts:
        return _allow("allow-workspace-build", "find writes its list into a file in the workspace")
    if {"-exec", "-execdir", "-ok", "-okdir"} & texts:
        return _allow("allow-read-only", "find itself only lists; its -exec command is judged separately")
    return None


_FIND_WRITES = frozenset({"-fprint", "-fprint0", "-fprintf", "-fls"})


def _xxd(cmd: SimpleCommand, ctx: Context) -> list[Finding] | None:
    if "-r" in [w.text for w in cmd.args]:
        return _allow("allow-workspace-build", "xxd -r decodes hex")
    return None


_LINK_VALUES = frozenset({"-t", "--target-directory", "-S", "--suffix"})


def _ln(cmd: SimpleCommand, ctx: Context) -> list[Finding] | None:
    long, short = _flags(cmd)
    symbolic = "--symbolic" in long or "s" in short
    return _link(cmd, ctx, symbolic=symbolic, verbatim=symbolic and not ("--relative" in long or "r" in short))


def _cp(cmd: SimpleCommand, ctx: Context) -> list[Finding] | None:
    """``cp -l`` / ``cp -s`` make links, not copies: judged as ``ln`` is; any other copy by the option tables."""
    long, short = _flags(cmd)
    symbolic = "--symbolic-link" in long or "s" in short
    return (
        _link(cmd, ctx, symbolic=symbolic, verbatim=symbolic) if symbolic or "--link" in long or "l" in short else None
    )


def _flags(cmd: SimpleCommand) -> tuple[set[str], set[str]]:
    """A command's long options (without their ``=value``) and the letters of its short ones (``-sf``: s, f)."""
    long: set[str] = set()
    short: set[str] = set()
    for w in cmd.args:
        if w.text == "--":
            break
        if w.text.startswith("--"):
            long.add(w.text.split("=", 1)[0])
        elif w.text.startswith("-") and len(w.text) > 1:
            short.update(w.text[1:])
    return long, short


def _link(cmd: SimpleCommand, ctx: Context, *, symbolic: bool, verbatim: bool) -> list[Finding] | None:
    """A link is a way to write where it leads. A link out of the workspace asks (later writes and deletes inside
    the workspace would escape). A hard link to a place the agent may not write is that file itself: writing it
    later, in this command or in the next call, writes the file, and the next call's write looks like any write in
    the workspace; so making it is judged as writing the file. A symbolic one leads a write later in the same
    command there before the gate could see the link (a later call's write is judged where the link leads): it
    asks. ``verbatim``: the link holds the operand as written, read from the link's own directory (``ln -s``
    without ``-r``, ``cp -s``); else the operand is read from the command's directory."""
    sources, where = _link_operands(cmd)
    hidden = _links_hidden(sources, cmd, ctx, where, verbatim) if symbolic else None
    if hidden is not None:
        why = f"{cmd.name} links {hidden}, which filesystem.deny hides: a reader later in this command line reads"
        return [Finding.of(Layer.HARD, "path:denied", Verdict.DENY, f"{why} through the link before the gate sees it")]
    for src in sources:
        if not _in_workspace(src, cmd, ctx):
            return _ask("ask-link-outside", f"{cmd.name} points into {src.text!r}, outside the workspace", hard=True)
    for src in sources:
        for path in _link_places(src, cmd, ctx, where) if verbatim else [ctx.paths.resolve(src.text, cmd.cwd)]:
            if path is None:
                return _ask("ask-link-unknown", f"{cmd.name} links {src.text!r} from a place unknown", hard=True)
            place = ctx.paths.write(path) or ctx.paths.dotfile(path)
            if place is None:
                continue
            what = f"{cmd.name} links {src.text!r}: {place.reason}"
            if symbolic:
                return _ask("ask-link-protected", f"{what}; a write through the link writes there", hard=True)
            layer = Layer.PROFILE if place.rule_id == "path:dotfile" else Layer.HARD
            return [Finding.of(layer, place.rule_id, place.verdict, f"{what}; a hard link is the file itself")]
    return None


def _links_hidden(
    sources: list[Word], cmd: SimpleCommand, ctx: Context, where: tuple[Word | None, ...], verbatim: bool
) -> str | None:
    """A place a symbolic link would lead to that the deny list hides, or a folder holding such a file now (the
    pattern, when too many to look at): ``ln -s secrets l && cat l/key.txt`` reads secrets/key.txt through ``l``."""
    for src in sources:
        for path in _link_places(src, cmd, ctx, where) if verbatim else [ctx.paths.resolve(src.text, cmd.cwd)]:
            if path is None:
                continue
            if ctx.paths.hides(path):
                return repr(ctx.paths.relative(path))
            if os.path.isdir(path):
                try:
                    found = ctx.paths.deny_within(path)
                except OSError:  # a folder that cannot be read: it may hold one
                    found = ctx.paths.deny_reach(path)
                if found is not None:
                    return f"{path} ({found!r} under it)"
    return None


def _link_operands(cmd: SimpleCommand) -> tuple[list[Word], tuple[Word | None, ...]]:
    """The files a link command links and where its links go: with ``-t DIR`` every operand into DIR, else each
    operand but the last into the last (a directory, or the link's own name), or a lone operand into the cwd."""
    ops = operands(cmd, _LINK_VALUES)
    args = list(cmd.args)
    for i, w in enumerate(args):
        if w.text.startswith("--target-directory="):
            return ops, (Word(w.text.split("=", 1)[1], w.static),)
        if w.text in ("-t", "--target-directory"):
            return ops, (args[i + 1] if i + 1 < len(args) else None,)
    return (ops[:-1], (ops[-1],)) if len(ops) > 1 else (ops, ())


def _link_places(src: Word, cmd: SimpleCommand, ctx: Context, where: tuple[Word | None, ...]) -> list[str | None]:
    """Where a symbolic link holding ``src`` as written leads: read from the directory the link is made in —
    ``where`` itself when it is a directory, else the one holding it; the command's directory for a lone operand."""
    if not src.static:
        return [None]
    if src.text.startswith(("/", "~")) or not where:
        return [ctx.paths.resolve(src.text, cmd.cwd)]
    found: list[str | None] = []
    for w in where:
        base = ctx.paths.resolve(w.text, cmd.cwd) if w is not None and w.static else None
        if base is None:
            return [None]
        found.append(ctx.paths.resolve(src.text, base if os.path.isdir(base) else places.parent(base)))
    return found


def _make(cmd: SimpleCommand, ctx: Context) -> list[Finding] | None:
    if any(w.text in ("install", "uninstall") for w in cmd.args):
        return _ask("ask-make-install", "make install writes outside the workspace")
    return None


def _rsync(cmd: SimpleCommand, ctx: Context) -> list[Finding] | None:
    if any(":" in w.text.split("/", 1)[0] for w in cmd.args if not w.text.startswith("-")):
        return _ask("ask-remote", "rsync changes or reads remote systems")
    return None


def _pip_cmd(cmd: SimpleCommand, ctx: Context) -> list[Finding]:
    return _pip([w.text for w in cmd.args], cmd, ctx)


def _asks(rule: str, what: str) -> Judge:
    """A family that always asks: ``what`` completes the sentence after the program's name."""
    return lambda cmd, ctx: _ask(rule, f"{cmd.name} {what}")


#: Which judge a program's family gets, in order: a name in two families gets the first (``bun`` is a
#: package tool before an interpreter). Python interpreters, named by a pattern, get ``_interpreter``.
#: A judge returning None leaves the verdict to the option tables (READ_ONLY, BUILD).
_FAMILIES: tuple[tuple[frozenset[str], Judge], ...] = (
    (frozenset({"git"}), _git),
    (knowledge.CONTAINERS, _container),
    (knowledge.REMOTE, _asks("ask-remote", "changes or reads remote systems")),
    (frozenset({"rsync"}), _rsync),
    (knowledge.NETWORK, _asks("ask-network", "talks to the network")),
    (knowledge.SYSTEM, _asks("ask-system", "changes the machine's configuration or packages")),
    (knowledge.DOWNLOAD_RUN, _asks("ask-download-run", "downloads and runs a package")),
    (knowledge.PIP, _pip_cmd),
    (knowledge.PACKAGE_TOOLS, _package_tool),
    (frozenset({"sed"}), _sed),
    (frozenset({"awk", "gawk", "mawk"}), _awk),
    (frozenset({"find"}), _find),
    (frozenset({"xxd"}), _xxd),
    (frozenset({"ln"}), _ln),
    (frozenset({"cp"}), _cp),
    (frozenset({"make"}), _make),
    (knowledge.SHELLS | frozenset(knowledge.INTERPRETERS), _interpreter),
)
_JUDGES: dict[str, Judge] = {}
for _names, _judge in _FAMILIES:
    for _name in _names:
        _JUDGES.setdefault(_name, _judge)


def analysis_findings(analysis: Analysis, secret_reads: bool) -> list[Finding]:
    """Whole-command findings: exfiltration needs a secret source *and* a network sink."""
    names = analysis.names
    sends = bool(names & (knowledge.NETWORK | knowledge.REMOTE | {"rsync"})) or any(
        r.target is not None and r.target.text.startswith(("/dev/tcp/", "/dev/udp/"))
        for c in analysis.commands
        for r in c.redirects
    )
    dumps = any(
        c.name in ("env", "printenv", "set", "export", "declare") and len(c.argv) == 1 for c in analysis.commands
    )
    if sends and (dumps or secret_reads):
        return [_f("deny-exfiltration", Verdict.DENY, "environment or dotfiles sent over the network")]
    return []
