"""Program knowledge as data (policy/knowledge.py): every spelling of an option is read as the table
says, and every program a family names is judged by that family.

The tables are read by one parser; these tests derive their cases from the tables themselves, so a
row added later is attacked the same way: abbreviated long options, ``--opt=value`` and ``--opt
value``, short options clustered behind harmless ones, values glued to the option.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tether.envelope.schema import Effect, Envelope, Environment, Filesystem, Permissions, PlanRef, ToolContract
from tether.policy import interp, knowledge, profile
from tether.policy.decision import Verdict
from tether.policy.defaults import default_envelope
from tether.policy.gate import Gate
from tether.policy.programs import Role, Spec

ALLOW, ASK, DENY = Verdict.ALLOW, Verdict.ASK, Verdict.DENY


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> Gate:
    ws = tmp_path_factory.mktemp("ws")
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("x = 1\n")
    return Gate(default_envelope(), ws)


def tables() -> list[tuple[str, Spec]]:
    """Every option table the profile allows a program under: programs and git's subcommands."""
    out = [(n, s) for n, s in knowledge.SPECS.items() if s.kind in ("read", "build") and not s.inert]
    out += [(f"git {sub}", s) for sub, s in (knowledge.GIT.subcommands or {}).items()]
    return [(n, s) for n, s in out if n not in ("find", ".", "source")]  # find -exec is its own command


def options(s: Spec) -> set[str]:
    return set(s.flags) | set(s.values) | set(s.optional) | set(s.code)


def shortest_abbreviation(s: Spec, option: str) -> str | None:
    """The shortest prefix of a long option that names only it (GNU getopt takes it as the option)."""
    others = [o for o in options(s) if o.startswith("--") and o != option]
    for end in range(3, len(option)):
        prefix = option[:end]
        if not any(o.startswith(prefix) for o in others):
            return prefix
    return None


ABBREVIATED_CODE = sorted(
    (name, option, abbrev)
    for name, s in tables()
    for option in s.code
    if option.startswith("--") and (abbrev := shortest_abbreviation(s, option)) is not None
)


@pytest.mark.parametrize(("name", "option", "abbrev"), ABBREVIATED_CODE)
def test_an_abbreviated_code_option_is_the_code_option(gate: Gate, name: str, option: str, abbrev: str) -> None:
    for spelling in (f"{name} {abbrev}='sh -c id' src", f"{name} {abbrev} 'sh -c id' src"):
        d = gate.decide("bash", {"command": spelling})
        assert d.verdict is ASK and d.deciding_rule == "coding:ask-exec-option", (spelling, d.to_dict())
        assert option in d.reason, (spelling, d.reason)


def harmless_short_flag(s: Spec) -> str | None:
    return next((f for f in sorted(s.flags) if len(f) == 2 and f[1].isalpha() and f not in s.code), None)


CLUSTERED_CODE = sorted(
    (name, flag, option)
    for name, s in tables()
    for option in s.code
    if len(option) == 2 and option[0] == "-" and (flag := harmless_short_flag(s)) is not None
)


@pytest.mark.parametrize(("name", "flag", "option"), CLUSTERED_CODE)
def test_a_short_code_option_behind_harmless_flags_is_seen(gate: Gate, name: str, flag: str, option: str) -> None:
    cluster = f"{flag}{option[1]}"
    for spelling in (f"{name} {cluster} 'sh -c id' src", f"{name} {cluster}id src"):
        d = gate.decide("bash", {"command": spelling})
        assert d.verdict is ASK and d.deciding_rule == "coding:ask-exec-option", (spelling, d.to_dict())


def spellings(name: str, s: Spec, wanted: Role, target: str) -> list[str]:
    """Every spelling of every option whose value has the role ``wanted``, naming ``target``."""
    out: list[str] = []
    for option, role in s.values.items():
        if role is not wanted:
            continue
        if option.startswith("--"):
            out += [f"{name} {option}={target} src/a.py", f"{name} {option} {target} src/a.py"]
            abbrev = shortest_abbreviation(s, option)
            if abbrev is not None:
                out.append(f"{name} {abbrev}={target} src/a.py")
        elif len(option) == 2:
            out += [f"{name} {option} {target} src/a.py", f"{name} {option}{target} src/a.py"]
            flag = harmless_short_flag(s)
            if flag is not None:
                out.append(f"{name} {flag}{option[1]}{target} src/a.py")
        else:
            out.append(f"{name} {option} {target} src/a.py")
    return out


WRITES = sorted(c for name, s in tables() for c in spellings(name, s, Role.WRITE, "/etc/tether-attack"))
READS = sorted(c for name, s in tables() for c in spellings(name, s, Role.READ, "/etc/shadow"))


@pytest.mark.parametrize("command", WRITES)
def test_a_destination_is_read_in_every_spelling(gate: Gate, command: str) -> None:
    d = gate.decide("bash", {"command": command})
    assert d.verdict is not ALLOW, d.to_dict()
    assert any("/etc/tether-attack" in m.reason for m in d.matches), d.to_dict()


@pytest.mark.parametrize("command", READS)
def test_a_file_read_through_an_option_is_checked_in_every_spelling(gate: Gate, command: str) -> None:
    d = gate.decide("bash", {"command": command})
    assert d.verdict is DENY and d.deciding_rule == "path:credential", d.to_dict()


def test_the_attack_lists_are_not_empty() -> None:
    """The derived cases above must exist, or the tests above would pass by testing nothing."""
    assert len(ABBREVIATED_CODE) >= 10 and len(CLUSTERED_CODE) >= 5 and len(WRITES) >= 30 and len(READS) >= 30
    assert ("sort", "--compress-program", "--co") in ABBREVIATED_CODE
    assert ("tar", "-I") in {(n, o) for n, _, o in CLUSTERED_CODE}


@pytest.mark.parametrize(
    "command",
    [
        "sort --c sh big.txt",  # --check or --compress-program: ambiguous, so not the harmless one
        "tar cf x.tar --checkpoint-a=exec=id src",
        "git grep --op less TODO",
        "ls --h",  # --help, --hide, --human-readable …
        "grep --- x src",
        "grep -- --compress-program=sh src",  # after --, an operand: fine, but never an option the table lacks
    ],
)
def test_ambiguous_or_odd_spellings_are_not_allowed_as_something_harmless(gate: Gate, command: str) -> None:
    d = gate.decide("bash", {"command": command})
    if command.startswith("grep -- "):
        assert d.verdict is ALLOW, d.to_dict()  # a pattern that looks like an option, after --
    else:
        assert d.verdict is not ALLOW, d.to_dict()


# -- interpreters: the program they run, in every spelling ------------------------------------------


@pytest.mark.parametrize(
    ("command", "kind", "index"),
    [
        ("perl -pie 's/a/b/' f", "inline", 1),
        ("perl -lne 'print' f", "inline", 1),
        ("perl -e'print 1'", "inline", 0),
        ("perl -I lib -E 'say 1'", "inline", 3),
        ("ruby -rjson x.rb", "script", 1),
        ("node --require x.js y.js", "script", 2),
        ("node --print 1", "inline", 1),
        ("bun run x.ts", "script", 1),
        ("deno eval 'Deno.exit()'", "inline", 1),
        ("deno eval", "stdin", -1),
        ("php -d x=1 -f x.php", "script", 3),
        ("lua -l mod x.lua", "script", 2),
        ("python3 -Ic 'import os'", "inline", 1),
        ("python3 -W ignore -m pytest", "module", 3),
        ("bash -ec 'git push'", "inline", 1),
        ("bash -o errexit -c 'git push'", "inline", 3),
        ("sh -s", "stdin", -1),
        ("node --inspect app.js -p 3000", "script", 1),  # a known flag: -p 3000 is the script's
        ("node --max-old-space-size=4096 app.js -e x", "script", 1),
        ("node --frob x.mjs -e CODE", "inline", 3),  # --frob may have taken x.mjs: the code is judged
        ("ruby -w x.rb -e 1", "script", 1),
    ],
)
def test_interpreters_find_their_program_in_every_spelling(command: str, kind: str, index: int) -> None:
    name, *words = shlex.split(command)
    found = interp.program(name, words)
    assert (found.kind, found.index) == (kind, index), found


@pytest.mark.parametrize(
    "command",
    ["perl -pie 'system(q(id))' f", "ruby -ne 'exec(\"id\")'", "node -pe 'require(\"child_process\")'", "deno eval"],
)
def test_inline_code_of_other_languages_asks_and_never_crashes(gate: Gate, command: str) -> None:
    d = gate.decide("bash", {"command": command})
    assert d.verdict is ASK and d.deciding_rule != "gate:error", d.to_dict()


# -- families: every name is judged by its family ---------------------------------------------------

ALWAYS_ASK = {
    "ask-remote": knowledge.REMOTE,
    "ask-network": knowledge.NETWORK,
    "ask-system": knowledge.SYSTEM,
    "ask-download-run": knowledge.DOWNLOAD_RUN,
}


@pytest.mark.parametrize(("rule", "name"), sorted((r, n) for r, names in ALWAYS_ASK.items() for n in names))
def test_a_family_that_asks_asks_for_each_of_its_programs(gate: Gate, rule: str, name: str) -> None:
    d = gate.decide("bash", {"command": f"{name} x"})
    assert d.verdict is not ALLOW, d.to_dict()
    assert any(m.id == f"coding:{rule}" for m in d.matches) or d.verdict is DENY, d.to_dict()


def test_no_program_is_both_in_an_asking_family_and_in_an_allowing_table() -> None:
    asking = frozenset().union(*ALWAYS_ASK.values()) | knowledge.CONTAINERS | knowledge.DISK | knowledge.POWER
    assert not asking & (profile.READ_ONLY | profile.BUILD)


def test_a_name_in_two_families_is_judged_by_the_first(gate: Gate) -> None:
    assert "bun" in knowledge.PACKAGE_TOOLS and "bun" in knowledge.INTERPRETERS
    assert gate.decide("bash", {"command": "bun publish"}).deciding_rule == "coding:ask-publish"
    assert gate.decide("bash", {"command": "python3 -m pip install --user x"}).deciding_rule == (
        "coding:ask-system-install"
    )


def deny_push() -> Envelope:
    return Envelope(
        plan=PlanRef(path="plan.yaml", hash="sha256:" + "0" * 64),
        environment=Environment(filesystem=Filesystem(read=["**"], write=["**"])),
        tools=[ToolContract(name="bash", purpose="shell", effects=[Effect.EXEC])],
        permissions=Permissions.model_validate({"deny": [{"id": "no-push", "rule": "bash(git push:*)"}]}),
    )


@pytest.mark.parametrize("wrapper", sorted(knowledge.WRAPPERS - {"then", "do"}))
def test_every_wrapper_is_seen_through(tmp_path: Path, wrapper: str) -> None:
    positionals = " ".join("x" for _ in range(knowledge.WRAPPER_POSITIONALS.get(wrapper, 0)))
    command = " ".join(w for w in (wrapper, positionals, "git push origin main") if w)
    d = Gate(deny_push(), tmp_path).decide("bash", {"command": command})
    assert d.verdict is DENY and d.deciding_rule == "no-push", (command, d.to_dict())


@pytest.mark.parametrize(
    "command",
    [
        "su -c 'git push'",
        "flock /tmp/l -c 'git push'",
        "script -qc 'git push' /dev/null",
        "env -S 'git push'",
        "env --split-string='git push'",
        "env -C src -u X A=1 git push",
        "uv run --with x git push",
        "bundle exec git push",
        "watch -n 1 git push",
        "trap 'git push' EXIT",
        "eval 'git push'",
        "ls | xargs -I{} git push {}",
        "find . -execdir git push \\;",
        "git rebase --exec='git push' main",
        "git bisect run git push",
        # a wrapper's own options in every spelling: the command after them is still found
        "timeout --sig KILL 5 git push",
        "timeout -sKILL 5 git push",
        "timeout --kill-after=1 5 git push",
        "sudo --us root git push",
        "sudo -uroot -g wheel git push",
        "sudo -Eu root git push",
        "nice --adj 5 git push",
        "nice -n5 git push",
        "ionice -c2 -n 7 git push",
        "stdbuf -oL git push",
        "flock -w 5 /tmp/l git push",
        "flock --tim 5 /tmp/l git push",
        "watch -d git push",
        "watch -n1 -d git push",
        "env --uns X git push",
        "env -iS 'git push'",
        "env -iu X A=1 git push",
        "env --ch src git push",
        "env -- git push",
        "ls | xargs --max-a 1 git push",
        "ls | xargs --process-slot-var X git push",
        "ls | xargs -0I{} git push {}",
        "uv run --wi x git push",
        "busybox sh -c 'git push'",
        "busybox git push",
        "prlimit --nofile=10 -n10 git push",
        "prlimit --pid 1 git push",
        "systemd-run --user -p X=1 --unit=a -E A=B git push",
        "bwrap --ro-bind / / --chdir /tmp --unshare-all git push",
        "bwrap --overlay a b c --setenv A B --symlink x y -- git push",
        "bwrap --frobnicate x git push",  # an option it does not know hides the command: a deny rule may match
        "parallel git push ::: a b",
        "parallel 'git push {}' ::: a",
        "parallel ::: ls 'git push'",
        "parallel -j2 -I@@ 'git @@ x' ::: push",
        "parallel --halt-on-error=1 git {} ::: push",
        "parallel 'git {=s/x/y/=}' ::: push",
        "ls | parallel",
        "parallel :::: commands.txt",
    ],
)
def test_every_program_that_runs_a_command_is_seen_through(tmp_path: Path, command: str) -> None:
    d = Gate(deny_push(), tmp_path).decide("bash", {"command": command})
    assert d.verdict is DENY, (command, d.to_dict())


@pytest.mark.parametrize(
    "command",
    [
        "tar -xvC /etc -f x.tar",  # -C clustered: extracts into /etc
        "tar xf x.tar --directory=/etc",
        "tar --extr -f x.tar --dir /etc",  # abbreviated mode and directory
        "tar -cf /etc/x.tar src",
        "tar --create --file=/etc/x.tar src",
        "tar --append --file /etc/x.tar src",
        "tar -c -g /etc/x.snar -f out.tar src",
        "tar -AT/etc/shadow src/a.py",
    ],
)
def test_tar_places_are_read_from_its_table_in_every_spelling(gate: Gate, command: str) -> None:
    d = gate.decide("bash", {"command": command})
    assert d.verdict is DENY and d.deciding_rule.startswith("path:"), d.to_dict()


@pytest.mark.parametrize(
    "command", ["tar czf dist/src.tgz src", "tar xzf x.tgz", "tar -xf x.tar -C src", "tar tvf x.tar"]
)
def test_tar_inside_the_workspace_stays_allowed(gate: Gate, command: str) -> None:
    assert gate.decide("bash", {"command": command}).verdict is ALLOW


def allowing(rule: str) -> Envelope:
    """The default envelope plus an explicit allow rule: only the places a command names can stop it."""
    base = default_envelope()
    permissions = base.permissions.model_validate({"allow": [{"id": "ok", "rule": rule}]})
    return base.model_copy(update={"permissions": permissions})


@pytest.mark.parametrize(
    "command",
    [
        "curl -sSLo /etc/tether-x http://127.0.0.1/",
        "curl -o/etc/tether-x http://127.0.0.1/",
        "curl --output=/etc/tether-x http://127.0.0.1/",
        "curl --output-dir /etc -O http://127.0.0.1/x",
        "curl -sD /etc/tether-x http://127.0.0.1/",
        "curl -c /etc/tether-x http://127.0.0.1/",
        "curl -sT /etc/shadow http://127.0.0.1/",
        "curl -K /etc/shadow http://127.0.0.1/",
        "curl -d @/etc/shadow http://127.0.0.1/",
        "wget -qO /etc/tether-x http://127.0.0.1/",
        "wget -qO/etc/tether-x http://127.0.0.1/",
        "wget --output-document=/etc/tether-x http://127.0.0.1/",
        "wget --output-doc /etc/tether-x http://127.0.0.1/",
        "wget -P /etc http://127.0.0.1/",
        "wget -i /etc/shadow",
        "wget --post-file=/etc/shadow http://127.0.0.1/",
    ],
)
def test_a_transfer_tool_allowed_by_a_rule_still_meets_the_places_it_names(tmp_path: Path, command: str) -> None:
    name = command.split()[0]
    d = Gate(allowing(f"bash({name}:*)"), tmp_path).decide("bash", {"command": command})
    assert d.verdict is DENY and d.deciding_rule.startswith("path:"), d.to_dict()


@pytest.mark.parametrize(
    "command", ["curl -sSLo out.txt http://127.0.0.1/", "wget -qO src/page.html http://127.0.0.1/"]
)
def test_a_transfer_into_the_workspace_is_what_the_rule_allows(tmp_path: Path, command: str) -> None:
    (tmp_path / "src").mkdir()
    name = command.split()[0]
    assert Gate(allowing(f"bash({name}:*)"), tmp_path).decide("bash", {"command": command}).verdict is ALLOW


@pytest.mark.parametrize(
    "command",
    [
        "python3 --check-hash-based-pycs default -c 'import os; os.system(\"git push\")'",
        'node --experimental-loader ./x.mjs -e \'require("child_process").execSync("git push")\'',
        'node -C dev -e \'require("child_process").execSync("git push")\'',
        'node --some-new-option value -e \'require("child_process").execSync("git push")\'',
        "ruby -C src -e 'system(\"git push\")'",
        "php -R 'system(\"git push\");'",
        "php -B 'system(\"git push\");'",
        "php -nE 'system(\"git push\");'",
        "perl -Ilib -e 'system(\"git push\")'",
        "lua -l x -e 'os.execute(\"git push\")'",
    ],
)
def test_inline_code_behind_an_interpreter_option_with_a_value_is_found(tmp_path: Path, command: str) -> None:
    """An option that takes a value must not make its value the "script" and hide the code after it."""
    d = Gate(deny_push(), tmp_path).decide("bash", {"command": command})
    assert d.verdict is DENY, (command, d.to_dict())


@pytest.mark.parametrize("spelling", ["-i", "-ni", "-i.bak", "--in-place", "--in-place=.bak", "--in-pl", "--in-p=.b"])
def test_sed_in_place_is_a_write_in_every_spelling(tmp_path: Path, spelling: str) -> None:
    d = Gate(allowing("bash(sed:*)"), tmp_path).decide("bash", {"command": f"sed {spelling} s/a/b/ /etc/hosts"})
    assert d.verdict is DENY and d.deciding_rule == "path:write-outside", d.to_dict()


@pytest.mark.parametrize(
    "command",
    [
        "unshare -r git push",
        "nsenter -t 1 -m git push",
        "setpriv --reuid 0 git push",
        "firejail git push",
        "systemd-run --scope git push",
        "bwrap --bind / / git push",
    ],
)
def test_namespace_and_privilege_wrappers_are_seen_through_and_never_allowed(tmp_path: Path, command: str) -> None:
    assert Gate(deny_push(), tmp_path).decide("bash", {"command": command}).verdict is DENY
    inner = command.replace("git push", "ls")
    d = Gate(default_envelope(), tmp_path).decide("bash", {"command": inner})
    assert d.verdict is ASK and d.deciding_rule == "coding:ask-privilege", d.to_dict()


def test_a_bwrap_option_the_walker_does_not_know_asks_instead_of_guessing_the_command(tmp_path: Path) -> None:
    d = Gate(default_envelope(), tmp_path).decide("bash", {"command": "bwrap --frobnicate ls rm -rf /"})
    assert d.verdict is ASK and "shell:unknown-wrapper-option" in [r["id"] for r in d.to_dict()["rules"]]


@pytest.mark.parametrize(
    "command", ["parallel rm -rf {} ::: /", "parallel 'rm -rf' ::: /etc", "parallel ::: 'rm -rf /'"]
)
def test_parallel_never_runs_a_destructive_template_without_a_human(tmp_path: Path, command: str) -> None:
    assert Gate(default_envelope(), tmp_path).decide("bash", {"command": command}).verdict is not ALLOW


def test_no_program_whose_every_operand_it_writes_is_called_a_reader(tmp_path: Path) -> None:
    """``truncate -s0 src/app.py`` was allowed as ``coding:allow-read-only``, "truncate only reads": its table wrote
    its operands (the place was judged) but left its kind at the default, and the reason said the opposite of what
    it does. A program whose operands are all written or deleted is a writer (``build``)."""
    readers = [n for n, kind in knowledge.SPECS.kinds() if kind == "read"]
    assert [n for n in readers if knowledge.SPECS[n].operands in (Role.WRITE, Role.DELETE)] == []
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    d = Gate(default_envelope(), tmp_path).decide("bash", {"command": "truncate -s0 src/app.py"})
    assert d.deciding_rule != "coding:allow-read-only" and "only reads" not in d.reason, d.to_dict()


@pytest.mark.parametrize(
    ("command", "output"),
    [("uniq in.txt out.txt", "out.txt"), ("xxd in.txt out.hex", "out.hex"), ("sort -o out.txt in.txt", "out.txt")],
)
def test_a_readers_own_output_file_is_named_in_its_reason(command: str, output: str, tmp_path: Path) -> None:
    """A reader that writes a file it is given (not a redirection) was explained as "uniq only reads"."""
    (tmp_path / "in.txt").write_text("a\n")
    d = Gate(default_envelope(), tmp_path).decide("bash", {"command": command})
    assert d.deciding_rule == "coding:allow-read-only" and f"its output goes to {output!r}" in d.reason, d.to_dict()
