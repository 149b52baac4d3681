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


def cwds(command: str) -> list[str]:
    moves = ("cd", "pushd", "popd")
    return [str(c.cwd) for c in analyse(command, PurePosixPath("/ws")).commands if c.argv and c.name not in moves]


def test_the_working_directory_is_tracked_as_the_shell_moves() -> None:
    assert cwds("cd src && ls") == ["/ws/src"]
    assert cwds("cd src && cd .. && cd /tmp && ls") == ["/tmp"]
    assert cwds("pushd /tmp && pushd /etc && popd && ls") == ["/tmp"]
    assert cwds("cd /a && cd /b && cd - && ls") == ["/a"]
    assert cwds("cd /tmp || exit 1; ls") == ["None", "/tmp"]  # exit runs only where the cd failed
    assert cwds("set -e; cd /tmp; ls") == ["/ws", "/tmp"]
    assert cwds("env -C /tmp ls; ls") == ["/tmp", "/ws"]


def test_places_the_shell_may_or_may_not_be_in_are_unknown() -> None:
    assert cwds("cd /tmp; ls") == ["None"]  # the cd may have failed
    assert cwds("cd /tmp && ls; ls") == ["/tmp", "None"]
    assert cwds('cd "$D" && ls') == ["None"]
    assert cwds("if true; then cd /tmp; fi; ls") == ["/ws", "None"]
    assert cwds("for i in 1 2; do ls; cd ..; done")[-1] == "None"  # the second round starts elsewhere
    assert cwds("CDPATH=/etc; cd x && ls") == ["None"]


def test_subshells_pipelines_and_background_jobs_do_not_move_the_shell() -> None:
    assert cwds("(cd /tmp); ls") == ["/ws"]
    assert cwds("cd /tmp | cat; ls") == ["/ws", "/ws"]
    assert cwds("cd /tmp & ls") == ["/ws"]
    assert cwds("echo $(cd /tmp); ls") == ["/ws", "/ws"]


def test_a_redirection_after_a_list_belongs_to_its_last_command() -> None:
    cmds = analyse("cd /tmp && echo x > f.py", PurePosixPath("/ws")).commands
    echo = next(c for c in cmds if c.name == "echo")
    assert echo.cwd == "/tmp" and echo.redirects[0].target is not None


def test_functions_run_where_they_are_called() -> None:
    cmds = analyse("f() { touch x; }; cd /tmp && f", PurePosixPath("/ws")).commands
    assert [str(c.cwd) for c in cmds if c.name == "touch"] == ["/tmp"]
