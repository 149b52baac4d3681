"""Shell analysis: what the parser sees through."""

from __future__ import annotations

from pathlib import PurePosixPath

from tether.policy.shell import analyse


def names(command: str) -> list[list[str]]:
    return [c.words for c in analyse(command, PurePosixPath("/ws")).commands if c.argv]


def test_wrappers_and_quoting_are_seen_through() -> None:
    assert names("sudo -u x env A=1 timeout -s 9 5 nice -n 3 /bin/r''m -rf /") == [["/bin/rm", "-rf", "/"]]
    assert names("$'\\x72m' x") == [["rm", "x"]]
    assert names('"ls" \\-la') == [["ls", "-la"]]


def test_nested_code_is_followed() -> None:
    got = names("bash -c \"sh -c 'eval echo hi'\"")
    assert ["echo", "hi"] in got
    assert ["rm", "x"] in names("echo $(cat <(rm x))")
    assert ["rm", "-f", "/{}"] in names("find / -exec rm -f {} +")


def test_cd_is_followed_and_scoped_by_subshells() -> None:
    cmds = analyse("(cd /tmp && ls); cd src && ls", PurePosixPath("/ws")).commands
    assert [str(c.cwd) for c in cmds] == ["/ws", "/tmp", "/ws", "/ws/src"]


def test_structural_findings() -> None:
    def ids(command: str) -> set[str]:
        return {f.match.id for f in analyse(command).findings}

    assert "shell:unparseable" in ids("echo 'open")
    assert "shell:computed-command" in ids("$X y")
    assert "shell:pipe-to-interpreter" in ids("cat x | python3")
    assert "shell:pipe-to-interpreter" not in ids("cat x | python3 script.py")
    assert "shell:remote-code" in ids('eval "$(wget -qO- x)"')
    assert ids("ls -la") == set()
