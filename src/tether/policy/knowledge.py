"""What tether knows about programs, as data: which family each belongs to and what its options do.

What the gate knows about named programs is rows here rather than branches in code:

* **families** — sets of program names that are judged alike (wrappers the shell walker sees
  through, fetchers and decoders whose output must not run, remote/network/system tools that
  always ask, package tools, interpreters …). :mod:`.profile` dispatches on them; adding a
  program to a family is adding its name.
* **interpreters** — how each language's command line gets its program (``-c``, ``-e``, a script
  operand, a module), read by :mod:`.interp`.
* **option tables** — one :class:`~.programs.Spec` per program (or per family of programs sharing
  a syntax): the options under which it stays read-only or inside the workspace, which take a value
  and what that value is, which make it recursive and which run code. The syntax is described in
  :mod:`.programs`, which reads a command line against a spec. Each is written ``later(...)``: its
  arguments are kept and the spec is made when a command first needs it (:class:`~.programs.Later`, in
  the lazy tables :class:`~.programs.Specs`), since a hook process decides one command and reading all
  ~100 tables was ~20 M instructions of its cold start; the daemon makes them all at its start
  (:func:`make_all`). Only git's own options (:data:`GIT`, which the gate reads at import) are made at once.

Adding a program: add its name to the family that judges it and, if the profile may allow it, a
spec listing its safe options (see docs/gate.md). Not here: environment variables (:mod:`.envvars`)
and the few command lines that are languages of their own (sed scripts, awk programs, ``dd``'s
``of=``, find's expressions, xargs' replace string), read by small functions where they are used.
"""

from __future__ import annotations

from tether.records import dataclass, replace

from .programs import Later, Role, Specs, later, spec


def _words(text: str) -> list[str]:
    return text.split()


# -- the shell: wrappers and what the walker sees through ------------------------------------------

#: Prefixes that run the rest of the line as a command (``sudo``, ``timeout 5``, ``nice -n 5`` …).
WRAPPERS = frozenset(
    _words(
        "! builtin caffeinate catchsegv chroot chrt command dbus-launch do doas env exec fakeroot flock "
        "ionice ltrace nice nocorrect noglob nohup pkexec proxychains proxychains4 runuser setsid sg stdbuf "
        "strace sudo taskset then time timeout torsocks unbuffer valgrind xvfb-run unshare nsenter setpriv firejail "
        "busybox prlimit systemd-run bwrap"
    )
)
#: A wrapper's own options, in the option-table syntax of :mod:`.programs` (``-u:`` takes a value), so
#: that the wrapped command is found after every spelling of them (``timeout --sig KILL 5 CMD``,
#: ``sudo -uroot CMD``). Options end at the first word that is not one (``+`` in getopt). A wrapper
#: without a row has no options the walker knows: each of them is skipped alone.
_WRAPPER_OPTIONS: dict[str, Later] = {
    "env": later(
        "-i -0 -v --ignore-environment --null --debug --list-signal-handling --block-signal= --default-signal= "
        "--ignore-signal= -u: -C: -S: -a: --unset: --chdir: --split-string: --argv0: --help --version"
    ),
    "sudo": later(
        "-A -b -E -e -H -i -K -k -l -n -P -S -s -V -v -B -N --askpass --background --bell --preserve-env= --edit "
        "--set-home --login --remove-timestamp --reset-timestamp --list --non-interactive --preserve-groups --stdin "
        "--shell --version --validate --no-update -u: -g: -h: -p: -C: -U: -r: -t: -T: -D: -R: --user: --group: "
        "--host: --prompt: --close-from: --other-user: --role: --type: --command-timeout: --chdir: --chroot: --help"
    ),
    "doas": later("-n -s -L -u: -C:"),
    "unshare": later(
        "-m -u -i -n -p -U -C -T -r -c -f --mount= --uts= --ipc= --net= --pid= --user= --cgroup= --time= --fork "
        "--map-root-user --map-current-user --map-auto --mount-proc= --kill-child= --keep-caps -R: -w: -S: -G: "
        "--root: --wd: --setuid: --setgid: --propagation: --setgroups: --map-user: --map-group: --map-users: "
        "--map-groups: --monotonic: --boottime: --load-interp: --help --version"
    ),
    "nsenter": later(
        "-a -m -u -i -n -p -U -C -T -F -Z -r -w --all --mount= --uts= --ipc= --net= --pid= --user= --cgroup= "
        "--time= --root= --wd= --preserve-credentials --no-fork --follow-context -t: -S: -G: --target: --setuid: "
        "--setgid: --help --version"
    ),
    "setpriv": later(
        "-d --dump --nnp --no-new-privs --init-groups --clear-groups --keep-groups --reset-env --reuid: --regid: "
        "--ruid: --rgid: --euid: --egid: --groups: --inh-caps: --ambient-caps: --bounding-set: --securebits: "
        "--pdeathsig: --selinux-label: --apparmor-profile: --landlock-access: --landlock-rule: --help --version"
    ),
    "timeout": later("-v --preserve-status --foreground --verbose -s: -k: --signal: --kill-after: --help --version"),
    "nice": later("-n: --adjustment: --help --version"),
    "time": later("-a -p -q -v --append --portability --quiet --verbose -f: -o: --format: --output: --help --version"),
    "exec": later("-c -l -a:"),
    "ionice": later("-t --ignore -c: -n: -p: -P: -u: --class: --classdata: --pid: --pgid: --uid: --help --version"),
    "stdbuf": later("-i: -o: -e: --input: --output: --error: --help --version"),
    "flock": later(
        "-s -e -x -u -n -o -F -v --shared --exclusive --unlock --nonblock --nb --close --no-fork --verbose -w: -E: "
        "--timeout: --wait: --conflict-exit-code: --help --version"
    ),
    "prlimit": later(
        "-c -d -e -f -i -l -m -n -q -r -s -t -u -v -x -y --core= --data= --nice= --fsize= --sigpending= --memlock= "
        "--rss= --nofile= --msgqueue= --rtprio= --stack= --cpu= --nproc= --as= --locks= --rttime= --noheadings --raw "
        "--verbose -p: -o: --pid: --output: --help --version"
    ),
    "systemd-run": later(
        "-r -d -t -P -q -v -G -S --remain-after-exit --send-sighup --same-dir --pty --pipe --quiet --verbose "
        "--no-block --wait --collect --user --system --scope --shell --no-ask-password --ignore-failure "
        "--on-clock-change --on-timezone-change --slice-inherit -u: -p: -E: -H: -M: --unit: --property: "
        "--description: --slice: --service-type: --uid: --gid: --nice: --working-directory: --setenv: --json: "
        "--on-active: --on-boot: --on-startup: --on-unit-active: --on-unit-inactive: --on-calendar: "
        "--path-property: --socket-property: --timer-property: --host: --machine: --background: --help --version"
    ),
    "watch": later(
        "-b -c -C -d -e -g -p -t -w -x -r --beep --color --no-color --differences= --errexit --chgexit --precise "
        "--no-title --no-wrap --no-rerun --exec --no-linewrap -n: -q: --interval: --equexit: --help --version"
    ),
}
WRAPPER_OPTIONS = Specs(_WRAPPER_OPTIONS)
#: wrapper → how many positional words it consumes before the wrapped command.
WRAPPER_POSITIONALS = {"timeout": 1, "flock": 1, "taskset": 1, "chrt": 1, "chroot": 1, "runuser": 0}
#: bubblewrap's options and how many words each consumes (``--bind SRC DEST``: two); an option not listed
#: hides where the wrapped command starts, so the walker then asks instead of guessing.
BWRAP_ARITY: dict[str, int] = {
    **dict.fromkeys(
        _words(
            "--unshare-all --share-net --unshare-user --unshare-user-try --unshare-ipc --unshare-pid --unshare-net "
            "--unshare-uts --unshare-cgroup --unshare-cgroup-try --die-with-parent --as-pid-1 --new-session "
            "--clearenv --disable-userns --assert-userns-disabled --level-prefix --help --version"
        ),
        0,
    ),
    **dict.fromkeys(
        _words(
            "--args --argv0 --userns --userns2 --pidns --uid --gid --hostname --chdir --unsetenv --lock-file "
            "--sync-fd --remount-ro --exec-label --file-label --proc --dev --tmpfs --mqueue --dir --seccomp "
            "--add-seccomp-fd --block-fd --userns-block-fd --info-fd --json-status-fd --cap-add --cap-drop "
            "--perms --size --overlay-src --tmp-overlay --ro-overlay"
        ),
        1,
    ),
    **dict.fromkeys(
        _words(
            "--setenv --bind --bind-try --dev-bind --dev-bind-try --ro-bind --ro-bind-try --bind-fd --ro-bind-fd "
            "--file --bind-data --ro-bind-data --symlink --chmod"
        ),
        2,
    ),
    "--overlay": 3,
}
#: GNU parallel's options (the command template follows them; ``:::``/``::::`` start its arguments).
PARALLEL = later(
    "-0 -k -q -X -m -u -v -t --null --keep-order --quote --xargs --ungroup --group --line-buffer --verbose --tag "
    "--dry-run --eta --bar --progress --no-notice --will-cite --halt-on-error= --shuf --lb -j: -n: -N: -I: -d: "
    "-a: -L: -E: --jobs: --max-args: --max-replace-args: --delimiter: --arg-file: --colsep: --halt: --timeout: "
    "--joblog: --results: --tmpdir: --tagstring: --retries: --delay: --load: --memfree: --help --version"
)
#: The words that end parallel's command template and begin its argument sources.
PARALLEL_SOURCES = frozenset(_words("::: :::: :::+ ::::+"))
PRIVILEGED = frozenset(
    _words("sudo doas pkexec su runuser chroot sg unshare nsenter setpriv firejail systemd-run bwrap")
)
#: Builtins that assign variables from data or evaluate arithmetic (where ``a[$(cmd)]`` runs cmd).
SETS_VARIABLES = frozenset(
    {
        "read",
        "mapfile",
        "readarray",
        "printf",
        "getopts",
        "let",
        "declare",
        "typeset",
        "local",
        "export",
        "test",
        "wait",
    }
)
#: Of those, the ones that give the variables they name values known only at run time (``read X``, ``printf -v X``,
#: ``getopts o X``, ``let X=…``, ``wait -p X``).
FROM_DATA = frozenset({"read", "mapfile", "readarray", "printf", "getopts", "let", "wait"})
#: POSIX's special builtins: an assignment before one (``X=/ :``) outlives it in a POSIX shell.
SPECIAL_BUILTINS = frozenset(
    {":", ".", "break", "continue", "eval", "exec", "exit", "export", "readonly", "return", "set", "shift"}
    | {"times", "trap", "unset", "source"}
)
#: Project runners whose subcommand runs any command in the project's environment (``uv run CMD``).
RUNNERS = {"uv": "run", "poetry": "run", "pdm": "run", "hatch": "run", "pipenv": "run", "rye": "run", "bundle": "exec"}
RUNNER_OPTIONS = later("-p: -e: --with: --python: --directory: --project: --package: --env-file: --extra: --group:")
#: Programs that fetch bytes from the network (their output executed = remote code).
FETCHERS = frozenset(
    {"curl", "wget", "fetch", "http", "https", "nc", "ncat", "netcat", "socat", "telnet", "aria2c", "lynx", "links"}
)
#: Programs whose output is decoded / deobfuscated text (their output executed = hidden code).
DECODERS = frozenset({"base64", "base32", "xxd", "rev", "openssl", "gpg", "gunzip", "zcat", "uudecode", "tr", "printf"})

# -- families the profile judges alike --------------------------------------------------------------

REMOTE = frozenset(
    _words(
        "ansible ansible-playbook aws az bq cdk consul doctl eksctl firebase fly flyctl ftp gcloud gh glab "
        "gsutil helm heroku hub kubectl kubectx lftp mosh netlify nomad oc packer pulumi railway sam scp "
        "serverless sftp ssh supabase terraform tofu twine vault vercel wrangler"
    )
)
NETWORK = FETCHERS | frozenset(_words("ping dig nslookup host traceroute mail sendmail mutt whois"))
SYSTEM = frozenset(
    _words(
        "apk apt apt-get aptitude brew chpasswd crontab dnf emerge firewall-cmd hostnamectl insmod ip6tables "
        "iptables launchctl modprobe mount nft pacman passwd port rmmod service setenforce snap swapoff "
        "swapon sysctl systemctl timedatectl ufw umount update-alternatives useradd userdel usermod visudo "
        "yum zypper"
    )
)
DISK = frozenset(_words("mkfs mke2fs mkswap wipefs fdisk sfdisk parted gdisk cfdisk sgdisk"))
DISK_PREFIXES = ("mkfs.", "mke2fs", "mkdosfs")  # mkfs.ext4, mkdosfs …
POWER = frozenset(_words("shutdown reboot halt poweroff"))
SYSTEMCTL_POWER = frozenset(_words("poweroff reboot halt kexec suspend"))
#: netcat's options that wire a program to the socket (a reverse shell).
NETCATS = frozenset(_words("nc ncat netcat"))
NETCAT_EXEC_OPTIONS = frozenset(_words("-e -c --exec --sh-exec --lua-exec"))
#: Programs that change ownership or permissions (a recursive one of / or ~ is denied as such).
PERMISSIONS = frozenset(_words("chmod chown chgrp chattr setfacl"))
CONTAINERS = frozenset(_words("docker podman nerdctl"))
CONTAINER_READ = frozenset(_words("ps images version info logs inspect history top stats port"))
#: Container options that reach the host (a bind mount of a host path is found separately).
CONTAINER_HOST_OPTIONS = frozenset(_words("--privileged --pid=host --net=host --network=host --userns=host --ipc=host"))
#: Programs that download a package and run it.
DOWNLOAD_RUN = frozenset(_words("npx pnpx bunx uvx pipx"))
PIP = frozenset(_words("pip pip3"))
#: pip subcommands that fetch code, and options that install outside the project environment.
PIP_FETCH = frozenset(_words("install download wheel"))
PIP_OUTSIDE_OPTIONS = frozenset(_words("--user --break-system-packages --target --prefix --root"))
#: Package managers: they run the project's own code by design; index, publish and code options are checked.
PACKAGE_TOOLS = frozenset(_words("npm yarn pnpm bun uv poetry pdm hatch cargo go gem bundle"))
#: Options of package tools that run a program or load configuration the project did not write.
PACKAGE_CODE_OPTIONS = {
    "cargo": ("--config", "-Z"),
    "go": ("-exec", "-toolexec", "-overlay", "-modfile"),
    "npm": ("--script-shell", "--node-options", "--userconfig", "--globalconfig", "--prefix", "--call", "-c"),
    "pnpm": ("--script-shell", "--node-options", "--config", "--dir", "-C"),
    "yarn": ("--script-shell", "--cwd", "--use-yarnrc"),
    "uv": ("--config-file", "--with", "--with-requirements", "--directory"),
}
#: Subcommands of package tools that publish to or change a registry.
PUBLISH = frozenset(_words("publish upload push yank login adduser owner unpublish deprecate dist-tag"))
#: Options that name a package index or registry other than the default.
INDEX_OPTIONS = ("--index-url", "-i", "--extra-index-url", "--trusted-host", "-f", "--find-links", "--registry")
#: ``python -m`` modules known to run the project's tools; others must be the project's own.
PYTHON_TOOL_MODULES = frozenset(
    _words("pytest mypy ruff black isort flake8 pylint pyright coverage unittest pyflakes pycodestyle build doctest")
)
#: Programs that only look at names (listing ``~/.ssh`` is not reading a key). Not git: ``git diff --no-index
#: ~/.ssh/id_rsa /dev/null`` prints the key (until 2026-12-04 it was here, and that was allowed).
NAME_ONLY = frozenset(
    _words(
        "[ [[ basename cd chgrp chmod chown command dirname du echo file find ls mkdir printf pushd "
        "readlink realpath rm rmdir stat test touch tree type whereis which"
    )
)

# -- git ------------------------------------------------------------------------------------------

GIT_READ = frozenset(
    _words(
        "annotate blame branch cat-file check-ignore cherry count-objects describe diff diff-files diff-index "
        "diff-tree for-each-ref fsck grep help log ls-files ls-tree merge-base name-rev range-diff reflog "
        "rev-list rev-parse shortlog show show-branch show-ref status var version whatchanged"
    )
)
GIT_WORK = frozenset(
    _words(
        "add am apply bisect checkout cherry-pick commit format-patch gc init maintenance merge mergetool mv "
        "notes prune rebase repack reset restore revert rm sparse-checkout stash switch tag worktree"
    )
)
GIT_REMOTE = frozenset(_words("push fetch pull clone ls-remote submodule send-email request-pull svn"))
GIT_REWRITE = frozenset(_words("filter-branch filter-repo update-ref replace"))
#: ``git remote`` and ``git config`` words that only read.
GIT_REMOTE_READ = frozenset(_words("-v --verbose show get-url"))
GIT_CONFIG_READ = frozenset(_words("--get --list -l --get-all --get-regexp --show-origin"))

# -- interpreters: where the program they run comes from (read by .interp) ------------------------

#: Readers that follow symbolic links inside the trees they read, under these options (``*``: always).
LINK_FOLLOWERS: dict[str, frozenset[str]] = {
    **{n: frozenset({"-R", "--dereference-recursive"}) for n in ("grep", "egrep", "fgrep")},
    "rg": frozenset({"-L", "--follow"}),
    "tar": frozenset({"-h", "--dereference"}),
    "bsdtar": frozenset({"-L"}),
    "find": frozenset({"-L", "-follow"}),
    "cp": frozenset({"-L", "--dereference"}),
    "zip": frozenset({"*"}),
}
#: Programs that read options from a file named ``@FILE`` (a response file).
RESPONSE_FILES = frozenset(_words("gcc g++ cc c++ clang clang++ ld ld.gold ld.lld ar javac java"))
SHELLS = frozenset(_words("sh bash dash zsh ksh mksh ash fish csh tcsh rbash yash"))
#: Programs whose output file is a compiled program, never shell code a later ``./out`` would run as such.
COMPILERS = frozenset(_words("gcc g++ cc c++ clang clang++ ld ld.gold ld.lld rustc go cargo javac zig tcc"))
#: Shell options that take a value (``bash -o errexit``, ``bash --rcfile F``).
SHELL_VALUE_FLAGS = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
#: Interpreter names that are Python (``python3.12``, ``pypy3``, ``ipython``): ``.interp.is_python`` reads them.
PYTHON_PREFIXES = ("python", "pypy")
IPYTHON = frozenset({"ipython", "ipython3"})
PYTHON_VALUE_FLAGS = frozenset({"-W", "-X", "-Q", "--check-hash-based-pycs"})


@dataclass(frozen=True, eq=False, repr=False)
class Interpreter:
    """How one language's command line names its program; anything else is a script operand or stdin."""

    inline: tuple[str, ...] = ()  # options whose value is code (``-e CODE``)
    values: frozenset[str] = frozenset()  # other options that take a value
    flags: frozenset[str] = frozenset()  # options known to take none (any other may have taken the next word)
    bundled: frozenset[str] = frozenset()  # letters that, inside a cluster of short flags, start inline code (-pe)
    script: frozenset[str] = frozenset()  # options whose value is the script file (``php -f F``)
    code_words: frozenset[str] = frozenset()  # subcommands whose next word is code (``deno eval CODE``)
    skip_words: frozenset[str] = frozenset()  # subcommands before the script (``deno run F``, ``bun test``)


_NODE = Interpreter(
    inline=("-e", "--eval", "-p", "--print"),
    values=frozenset(
        _words(
            "-r --require --import --loader --experimental-loader --input-type -C --conditions --env-file "
            "--inspect-port --title --redirect-warnings --report-dir --report-directory --report-filename "
            "--test-name-pattern --test-reporter --test-reporter-destination --watch-path --disable-warning "
            "--icu-data-dir --openssl-config --diagnostic-dir --unhandled-rejections --dns-result-order"
        )
    ),
    flags=frozenset(
        _words(
            "--inspect --inspect-brk --watch --test --check -c -i --interactive --trace-warnings --enable-source-maps "
            "--no-warnings --no-deprecation --trace-deprecation --trace-uncaught --expose-gc --preserve-symlinks "
            "--experimental-strip-types --experimental-vm-modules --abort-on-uncaught-exception"
        )
    ),
    bundled=frozenset("ep"),
)
_PWSH = Interpreter(inline=("-c", "-command", "-Command", "-EncodedCommand", "-enc", "-e"))
_E = Interpreter(inline=("-e",))
#: Every interpreter other than the shells and Python.
INTERPRETERS: dict[str, Interpreter] = {
    "perl": Interpreter(
        inline=("-e", "-E"),
        values=frozenset({"-I", "-M", "-m"}),
        flags=frozenset(_words("-w -W -X -c -n -p -a -s -t -T -U -v -V -S -l -0")),
        bundled=frozenset("eE"),
    ),
    "ruby": Interpreter(
        inline=("-e",),
        values=frozenset({"-I", "-r", "-C", "-F", "-x"}),
        flags=frozenset(_words("-w -W -v -d -c -l -n -p -a -s -S -y -U --verbose --disable-gems --yjit --jit")),
        bundled=frozenset("eE"),
    ),
    "irb": _E,
    "node": _NODE,
    "nodejs": _NODE,
    "ts-node": _NODE,
    "tsx": _NODE,
    "bun": replace(_NODE, skip_words=frozenset({"run", "test", "x"})),
    "deno": Interpreter(code_words=frozenset({"eval"}), skip_words=frozenset({"run", "test", "x"})),
    "php": Interpreter(  # -B/-R/-E: code run before, for each line of and after the input
        inline=("-r", "-B", "-R", "-E"),
        values=frozenset({"-c", "-d", "-z", "-t", "-S"}),
        script=frozenset({"-f", "-F"}),
        bundled=frozenset("rBRE"),
    ),
    "lua": Interpreter(inline=("-e",), values=frozenset({"-l"})),
    "luajit": _E,
    "Rscript": _E,
    "R": _E,
    "osascript": _E,
    "pwsh": _PWSH,
    "powershell": _PWSH,
    "expect": Interpreter(inline=("-c",)),
    "julia": Interpreter(inline=("-e", "--eval")),
    "groovy": _E,
    "guile": Interpreter(inline=("-c",)),
    "racket": _E,
    "tclsh": Interpreter(),
    "wish": Interpreter(),
    "jshell": Interpreter(),
}

# -- option tables: one spec per program (syntax in .programs) -----------------------------------

R, W, D, N, T, C, S = Role.READ, Role.WRITE, Role.DELETE, Role.NAME, Role.TEXT, Role.CHDIR, Role.SCRIPT
_HELP = "--help --version"
_INERT = later(inert=True, operands=T)

_GREP = later(
    f"-E -F -G -P -i -y -v -w -x -c -L -l -o -q -s -b -H -h -n -T -Z -z -a -I -r -R -U --no-ignore-case "
    "--extended-regexp --fixed-strings --basic-regexp --perl-regexp --ignore-case --invert-match --word-regexp "
    "--line-regexp --count --files-without-match --files-with-matches --only-matching --quiet --silent "
    "--no-messages --byte-offset --with-filename --no-filename --line-number --initial-tab --null --null-data "
    "--text --recursive --dereference-recursive --binary --line-buffered "
    f"-m: -A: -B: -C: -NUM --max-count: --after-context: --before-context: --context: --label: --color= --colour= "
    f"--include: --exclude: --exclude-dir: --binary-files: --devices: -d: --directories: {_HELP}",
    roles={"-e": T, "--regexp": T, "-f": R, "--file": R, "--exclude-from": R},
    first=T,
    first_unless="-e --regexp -f --file",
    recursive="-r -R --recursive --dereference-recursive -d=recurse --directories=recurse",
    default_read=".",
    numeric=True,
)
_RG = later(
    "-i -s -S -v -w -x -c -l -o -n -N -H -I -F -P -z -u -uu -uuu -L -U -a -0 -q --hidden --no-ignore "
    "--ignore-case --case-sensitive --smart-case --invert-match --word-regexp --line-regexp --count "
    "--count-matches --files-with-matches --files-without-match --only-matching --line-number --no-line-number "
    "--with-filename --no-filename --no-heading --heading --fixed-strings --pcre2 --multiline --follow --text "
    "--search-zip --json --vimgrep --files --stats --trim --column --no-messages --quiet --sort-files "
    "-m: -A: -B: -C: -g: -t: -T: -M: -j: --max-count: --after-context: --before-context: --context: --glob: "
    "--iglob: --type: --type-not: --max-columns: --max-depth: --sort: --sortr: --color: --colors: --threads: "
    f"--max-filesize: --type-add: --encoding: -E: --engine: {_HELP}",
    roles={"-e": T, "--regexp": T, "-f": R, "--file": R, "--ignore-file": R},
    first=T,
    first_unless="-e --regexp -f --file",
    recursive="*",
    default_read=".",
)
_HEAD = later(f"-q -v -z --quiet --silent --verbose --zero-terminated -n: -c: --lines: --bytes: {_HELP}", numeric=True)
_TAIL = later(
    f"-f -F -q -v -z -r --follow= --retry --quiet --silent --verbose --zero-terminated -n: -c: -s: --lines: "
    f"--bytes: --sleep-interval: --pid: --max-unchanged-stats: {_HELP}",
    numeric=True,
)
_LS = later(
    "-a -A -b -B -c -C -d -f -F -g -G -h -H -i -k -l -L -m -n -N -o -p -q -Q -r -R -s -S -t -u -U -v -x -X -Z -1 "
    "--all --almost-all --author --escape --ignore-backups --directory --classify= --file-type --full-time "
    "--no-group --human-readable --si --dereference-command-line --dereference-command-line-symlink-to-dir "
    "--hide-control-chars --show-control-chars --inode --kibibytes --dereference --numeric-uid-gid --literal "
    "--indicator-style: --hyperlink= --group-directories-first --quote-name --reverse --recursive --size "
    "--context --zero -I: -T: -w: --ignore: --hide: --sort: --time: --time-style: --color= --format: --width: "
    f"--tabsize: --block-size: --quoting-style: {_HELP}",
    operands=N,
)
_CAT = later(
    f"-A -b -e -E -n -s -t -T -u -v --show-all --number-nonblank --number --squeeze-blank --show-ends "
    f"--show-tabs --show-nonprinting {_HELP}"
)
_WC = later(f"-c -m -l -L -w --bytes --chars --lines --max-line-length --words --total: {_HELP}")
_SORT = later(
    "-b -d -f -g -h -i -M -n -R -r -V -c -C -m -s -u -z --ignore-leading-blanks --dictionary-order --ignore-case "
    "--general-numeric-sort --human-numeric-sort --ignore-nonprinting --month-sort --numeric-sort --random-sort "
    "--reverse --version-sort --check= --merge --stable --unique --zero-terminated --debug "
    f"-k: -t: -S: --key: --field-separator: --buffer-size: --parallel: --sort: --random-source: {_HELP}",
    roles={"-o": W, "--output": W, "-T": W, "--temporary-directory": W, "--files0-from": R},
    code={"--compress-program:": "a compression program"},
)
_UNIQ = later(
    "-c -d -D -i -u -z --count --repeated --all-repeated= --ignore-case --unique --zero-terminated --group= "
    f"-f: -s: -w: --skip-fields: --skip-chars: --check-chars: {_HELP}",
    last=W,
)
_DIFF = later(
    "-q -s -c -u -e -n -y -l -t -T -r -N -a -b -B -E -i -w -Z -d -p --brief --report-identical-files --context= "
    "--unified= --ed --normal --rcs --side-by-side --left-column --suppress-common-lines --expand-tabs "
    "--initial-tab --paginate --recursive --new-file --unidirectional-new-file --text --ignore-space-change "
    "--ignore-blank-lines --ignore-case --ignore-all-space --ignore-tab-expansion --ignore-trailing-space "
    "--minimal --show-c-function --speed-large-files --strip-trailing-cr --no-dereference "
    "-C: -U: -W: -x: -S: -I: -F: -D: --color= --width: --exclude: --show-function-line: "
    "--label: --ignore-matching-lines: --ifdef: --horizon-lines: --tabsize: --palette: --to-file: --from-file: "
    f"--line-format: --old-line-format: --new-line-format: --unchanged-line-format: {_HELP}",
    roles={"-X": R, "--exclude-from": R},
    recursive="-r --recursive",
)
_CHECKSUM = later(
    f"-b -c -t -z --binary --check --tag --text --zero --ignore-missing --quiet --status --strict -w {_HELP}"
)
_STAT = later(f"-L -f -t --dereference --file-system --terse -c: --format: --printf: --cached: {_HELP}", operands=N)
_FILE = later(
    "-b -c -E -h -i -k -l -L -N -n -p -r -s -S -z -Z -0 --brief --mime --mime-type --mime-encoding "
    f"--no-dereference --dereference --keep-going --raw --special-files --uncompress -F: -e: -P: {_HELP}",
    roles={"-f": R, "--files-from": R, "-m": R, "--magic-file": R},
    operands=N,
)
_DU = later(
    "-0 -a -b -c -D -h -H -k -l -L -m -P -s -S -x --null --all --apparent-size --bytes --total "
    "--dereference-args --human-readable --si --count-links --dereference --no-dereference --summarize "
    "--separate-dirs --one-file-system --inodes -B: -d: -t: --block-size: --max-depth: --threshold: --time= "
    f"--time-style: --exclude: {_HELP}",
    roles={"-X": R, "--exclude-from": R, "--files0-from": R},
    operands=N,
)
_TREE = later(
    "-a -d -l -f -x -q -N -Q -p -u -g -s -h -D -F -v -t -c -U -r -i -A -S -n -C -J -X --noreport --dirsfirst "
    f"--du --si --prune --gitignore --filesfirst --inodes --device -L: -P: -I: --filelimit: --charset: --sort: {_HELP}",
    operands=N,
)
_CUT = later(
    f"-n -s -z --complement --only-delimited --zero-terminated -b: -c: -d: -f: --bytes: --characters: "
    f"--delimiter: --fields: --output-delimiter: {_HELP}"
)
_TR = later(f"-c -C -d -s -t --complement --delete --squeeze-repeats --truncate-set1 {_HELP}", operands=T)
_TEXT_FILTER = later(
    "-b -c -d -i -n -r -s -t -u -v -w -z -l -e -f -h -p -a -S --body-numbering: --section-delimiter: "
    "--header-numbering: --footer-numbering: --line-increment: --join-blank-lines: --number-format: "
    "--no-renumber --number-separator: --starting-line-number: --number-width: --before --regex --separator: "
    f"--serial --delimiters: --zero-terminated --width: --bytes --spaces --tabs: --initial --all --first-only {_HELP}"
)
_OD = later(
    "-a -b -c -d -f -i -l -o -s -v -x -A: -j: -N: -S: -t: -w= --address-radix: --skip-bytes: --read-bytes: "
    f"--strings= --format: --output-duplicates --width= --traditional --endian: -C -e -n: -s: {_HELP}"
)
_XXD = later(
    f"-a -b -C -E -e -i -p -ps -u -r -autoskip -bits -capitalize -EBCDIC -include -plain -postscript -revert "
    f"-uppercase -c: -g: -l: -n: -o: -s: -cols: -groupsize: -len: -name: -seek: {_HELP} -h -v",
    last=W,
)
_STRINGS = later(f"-a -d -f -w -e: -n: -t: -s: -T: --all --data --print-file-name --bytes: --radix: {_HELP}")
_BASE64 = later(f"-d -i -w: --decode --ignore-garbage --wrap: {_HELP}")
_JQ = later(
    "-c -n -e -s -r -j -a -S -C -M -R --compact-output --null-input --exit-status --slurp --raw-output "
    "--join-output --ascii-output --sort-keys --color-output --monochrome-output --raw-input --tab --indent: "
    f"--seq --stream --arg: --argjson: --jsonargs --args {_HELP} --raw-output0",
    roles={"--slurpfile": R, "--rawfile": R, "-f": R, "--from-file": R, "-L": R},
    first=T,
    first_unless="-f --from-file",
)
_YQ = later(
    "-e -i -M -C -N -P -r -j -o: -p: -I: --exit-status --no-colors --colors --no-doc --prettyPrint "
    f"--output-format: --input-format: --indent: --unwrapScalar --null-input -n {_HELP}",
    first=T,
    code={"-i": "an in-place rewrite", "--inplace": "an in-place rewrite"},
)
_LESS = later(
    "-N -S -R -r -F -X -i -I -n -s -M -m -Q -q -K -e -E -f -g -G -w -W -J -L -c -C -a -B -j: -x: -y: -z: -h: "
    f"-b: -P: -T: -# --LINE-NUMBERS --chop-long-lines --RAW-CONTROL-CHARS --quit-if-one-screen --no-init {_HELP}",
    roles={"-o": W, "-O": W, "--log-file": W, "--LOG-FILE": W, "-k": R},
    patterns=(r"\+\d+",),
    plus=True,
)
_MORE = later(f"-d -l -f -p -c -s -u -n: {_HELP}", patterns=(r"\+\d+",), plus=True)
_FIND = later(
    "-H -L -P -O1 -O2 -O3 -depth -d -mount -xdev -noleaf -ignore_readdir_race -noignore_readdir_race -daystart "
    "-follow -true -false -print -print0 -ls -prune -quit -empty -readable -writable -executable -nouser "
    "-nogroup -delete ( ) ! -not -a -and -o -or , "
    "-maxdepth: -mindepth: -name: -iname: -path: -ipath: -wholename: -iwholename: -regex: -iregex: "
    "-regextype: -type: -xtype: -size: -mtime: -mmin: -atime: -amin: -ctime: -cmin: -newer: -anewer: -cnewer: "
    "-newermt: -newerct: -newerat: -newermm: -user: -group: -uid: -gid: -perm: -links: -inum: -samefile: "
    "-lname: -ilname: -fstype: -used: -printf: -context: -files0-from: --help --version",
    roles={"-fprint": W, "-fprint0": W, "-fls": W, "-fprintf": W},
    operands=N,
    code={"-exec": "(judged as its own command)", "-execdir": "(judged)", "-ok": "(judged)", "-okdir": "(judged)"},
)
_SED_OPTS = (
    "-n -E -r -s -u -z --quiet --silent --regexp-extended --separate --unbuffered --null-data --posix --debug "
    f"--sandbox -l: --line-length: --in-place= {_HELP}"  # --in-place is listed so that --in-pl means it
)
_SED = later(
    _SED_OPTS,
    roles={"-e": T, "--expression": T, "-f": S, "--file": S},
    patterns=(r"-i\S*", r"-[nErsuz]+i\S*", r"--in-place(=\S*)?"),
    first=T,
    first_unless="-e --expression -f --file",
)
_AWK = later(
    f"-F: -v: --field-separator: --assign: -b -c -C -d= -e: -g -l: -M -N -O -P -r -s -S -t -V --posix "
    f"--re-interval --traditional --characters-as-bytes --sandbox {_HELP}",
    roles={"-f": S, "--file": S},
    first=T,
    first_unless="-f --file",
)
_CMP = later(f"-b -l -s --print-bytes --verbose --quiet --silent -i: -n: --ignore-initial: --bytes: {_HELP}")
_COMM = later(f"-1 -2 -3 -i -z --check-order --nocheck-order --total --zero-terminated --output-delimiter: {_HELP}")
_DATE = later(
    f"-u -R --utc --universal --rfc-email --debug -d: -I= --date: --iso-8601= --rfc-3339: {_HELP}",
    roles={"-r": N, "--reference": N, "-f": R, "--file": R},
    operands=T,
)
_READLINK = later(
    f"-e -f -m -n -q -s -v -z -L -P --canonicalize --canonicalize-existing --canonicalize-missing "
    f"--no-newline --quiet --silent --verbose --zero --logical --physical --strip --no-symlinks -s "
    f"--relative-to: --relative-base: {_HELP}",
    operands=N,
)
_ECHO = later("-n -e -E", operands=T, inert=True)
_XARGS = later(
    "-0 -r -t -p -x -o --null --no-run-if-empty --verbose --interactive --exit --open-tty --process-slot-var: "
    "-n: -P: -L: -d: -E: -s: -I: -i= -l= -e= --max-args: --max-procs: --max-lines: --delimiter: --eof= "
    f"--replace= --max-chars: --show-limits {_HELP}",
    roles={"-a": R, "--arg-file": R},
    operands=T,
)
_HASH = later("-r -t -l -d", operands=T, code={"-p": "a program under a command's name"})
_SOURCE = later(operands=S)
_BUILTIN_INERT = {
    name: _INERT
    for name in _words(
        "pwd true false test [ [[ basename dirname which whereis type whoami id uname nproc uptime ps seq sleep "
        "wait groups locale tty lsb_release free getconf expr factor tput clear shopt unset read shift exit return "
        "break continue : let umask ulimit jobs getopts local readonly cal arch logname users w who last lscpu "
        "lsblk pgrep pstree vmstat iostat printenv numfmt fold fmt expand unexpand column join pr rev tac paste nl "
        "printf dirs cd pushd popd env set export declare typeset alias trap eval command bc top htop lsof"
    )
}

# -- build tools: work inside the workspace --------------------------------------------------------

_CP = later(
    "-a -b -d -f -i -H -l -L -n -P -p -R -r -s -T -u -v -x --archive --attributes-only --backup= --copy-contents "
    "--force --interactive --link --dereference --no-clobber --no-dereference --preserve= --no-preserve: --parents "
    "--recursive --reflink= --remove-destination --sparse: --strip-trailing-slashes --symbolic-link "
    f"--no-target-directory --update= --verbose --one-file-system --debug -S: --suffix: {_HELP}",
    roles={"-t": W, "--target-directory": W},
    last=W,
    recursive="-a -r -R --archive --recursive",
    kind="build",
)
_MV = later(
    "-b -f -i -n -T -u -v --backup= --force --interactive --no-clobber --strip-trailing-slashes "
    f"--no-target-directory --update= --verbose --no-copy --exchange -S: --suffix: {_HELP}",
    roles={"-t": W, "--target-directory": W},
    operands=D,
    last=W,
    recursive="*",
    kind="build",
)
_LN = later(
    "-b -d -F -f -i -L -n -P -r -s -T -v --backup= --directory --force --interactive --logical --no-dereference "
    f"--physical --relative --symbolic --no-target-directory --verbose -S: --suffix: {_HELP}",
    roles={"-t": W, "--target-directory": W},
    operands=N,
    last=W,
    kind="build",
)
_RM = later(
    "-f -i -I -r -R -d -v --force --interactive= --one-file-system --no-preserve-root --preserve-root= "
    f"--recursive --dir --verbose {_HELP}",
    operands=D,
    recursive="-r -R --recursive",
    kind="build",
)
_MKDIR = later(f"-p -v -Z --parents --verbose -m: --mode: --context= {_HELP}", operands=W, kind="build")
_TOUCH = later(
    f"-a -c -f -h -m --no-create --no-dereference --time: -d: -t: --date: {_HELP}",
    roles={"-r": N, "--reference": N},
    operands=W,
    kind="build",
)
_CHMOD = later(
    f"-c -f -v -R --changes --silent --quiet --verbose --no-preserve-root --preserve-root --recursive {_HELP}",
    roles={"--reference": N},
    operands=W,
    first=T,
    recursive="-R --recursive",
    kind="build",
)
_TEE = later(f"-a -i -p --append --ignore-interrupts --output-error= {_HELP}", operands=W, kind="build")
_TRUNCATE = later(
    f"-c -o --no-create --io-blocks -s: --size: {_HELP}", roles={"-r": N, "--reference": N}, operands=W, kind="build"
)
_RMDIR = later(f"-p -v --ignore-fail-on-non-empty --parents --verbose {_HELP}", operands=D, kind="build")
_MKFIFO = later(f"-Z -m: --mode: --context= {_HELP}", operands=W, kind="build")
_INSTALL = later(
    "-b -C -d -D -p -T -v -c --backup= --compare --directory --preserve-timestamps --no-target-directory "
    f"--verbose -m: -o: -g: -S: --mode: --owner: --group: --suffix: {_HELP}",
    roles={"-t": W, "--target-directory": W},
    last=W,
    code={"-s": "the strip program", "--strip": "the strip program", "--strip-program:": "a program"},
    kind="build",
)
_SPLIT = later(
    "-d -e -u -x --numeric-suffixes= --hex-suffixes= --elide-empty-files --unbuffered --verbose --separator: "
    f"-a: -b: -C: -l: -n: -t: --suffix-length: --additional-suffix: --bytes: --line-bytes: --lines: --number: {_HELP}",
    last=W,
    code={"--filter:": "a shell command"},
    kind="build",
)
_CSPLIT = later(
    f"-k -s -q -z --keep-files --suppress-matched --quiet --silent --elide-empty-files -b: -n: --suffix-format: "
    f"--digits: {_HELP}",
    roles={"-f": W, "--prefix": W},
    operands=T,
    first=R,
    kind="build",
)
_COMPRESS = later(
    "-c -d -f -k -l -n -N -q -r -t -v -1 -2 -3 -4 -5 -6 -7 -8 -9 -z -T -e -F -M -s -L -V --stdout --to-stdout "
    "--decompress --uncompress --force --keep --list --no-name --name --quiet --recursive --test --verbose --fast "
    f"--best --rsyncable --synchronous --threads: --format: -S: --suffix: -T: --memory: {_HELP}",
    roles={"-o": W, "--output": W},
    operands=W,
    recursive="-r --recursive",
    kind="build",
)
_ZIP = later(
    "-r -q -v -j -D -y -9 -8 -7 -6 -5 -4 -3 -2 -1 -0 -u -f -d -m -o -g -l -ll -X -k -T -e --recurse-paths "
    f"--quiet --verbose --junk-paths --symlinks --no-dir-entries -x: -i: -n: -t: -tt: -b: {_HELP}",
    roles={"-@": R},
    first=W,
    recursive="-r --recurse-paths -R",
    code={"-TT:": "a test command", "--unzip-command:": "a test command"},
    kind="build",
)
_UNZIP = later(
    f"-l -t -v -z -o -n -q -qq -j -C -L -X -a -aa -b -u -f -p -c -Z -K -M -V {_HELP}",
    roles={"-d": W},
    first=R,
    operands=T,
    default_write=".",
    kind="build",
)
_MAKE = later(
    "-B -d -e -i -k -n -q -r -R -s -S -t -w --always-make --environment-overrides --ignore-errors --keep-going "
    "--just-print --dry-run --recon --question --no-builtin-rules --no-builtin-variables --silent --quiet "
    "--no-keep-going --stop --touch --trace --print-directory --no-print-directory --warn-undefined-variables "
    f"-j= -l= --jobs= --load-average= --max-load= --output-sync= -O= --debug= {_HELP} -j: -l: -O",
    roles={"-C": C, "--directory": C, "-f": S, "--file": S, "--makefile": S, "-o": T, "-W": T},
    operands=T,
    code={"--eval:": "make code", "-E:": "make code", "-I:": "makefiles from elsewhere", "--include-dir:": "makefiles"},
    kind="build",
    patterns=(),
)
_PYTEST = later(
    "-q -v -x -s -l -r: -k: -m: -n: -W: -vv -vvv -qq --quiet --verbose --exitfirst --lf --last-failed --ff "
    "--failed-first --nf --new-first --sw --stepwise --co --collect-only --no-header --no-summary --showlocals "
    "--strict-markers --strict-config --tb: --maxfail: --durations: --durations-min: --color: --capture: "
    "--disable-warnings --import-mode: --doctest-modules --runxfail --cov= --cov-report: --cov-branch "
    "--no-cov --timeout: --dist: --setup-show --fixtures --markers --full-trace --lfnf: --deselect: --ignore: "
    f"--ignore-glob: -ra -rA -rs -rf {_HELP}",
    operands=R,
    kind="build",
)
_LINTER = later(
    "--check --diff --fix --no-fix --unsafe-fixes --show-fixes --quiet -q --verbose -v --strict --statistics "
    "--watch --exit-zero --exit-non-zero-on-fix --no-cache --show-source --show-error-codes --pretty "
    "--ignore-missing-imports --no-error-summary --select: --ignore: --extend-select: --extend-ignore: "
    "--line-length: -l: --target-version: --output-format: --python-version: --exclude: --extend-exclude: "
    "--per-file-ignores: --max-line-length: --max-complexity: --profile: -m: -p: --module: --package: "
    f"--follow-imports: --show-column-numbers --no-incremental --format: --preview --stdin-filename: {_HELP}",
    operands=R,
    kind="build",
)
_LINTER_SUBS = Specs({sub: _LINTER for sub in ("check", "format", "rule", "linter", "version")})
_RUFF = later(f"{_HELP} -V", kind="build", subcommands=_LINTER_SUBS)


_TAR = later(
    "-c -x -t -r -u -A -d -z -j -J -Z -a -v -k -p -h -O -m -o -S -W -w -B -G -i -l -M -n -R -s --create --extract "
    "--get --list --append --update --concatenate --diff --compare --delete --gzip --gunzip --ungzip --bzip2 --xz "
    "--lzma --zstd --auto-compress --verbose --keep-old-files --skip-old-files --overwrite --preserve-permissions "
    "--same-permissions --dereference --to-stdout --touch --no-same-owner --no-same-permissions --numeric-owner "
    "--sparse --verify --wildcards --no-wildcards --anchored --exclude-vcs --exclude-vcs-ignores --totals "
    "--one-file-system --show-transformed-names --no-recursion --recursion --null --checkpoint= --warning: "
    "--strip-components: --exclude: --owner: --group: --mode: --mtime: --sort: --format: -H: -b: "
    f"--blocking-factor: -V: --label: {_HELP}",
    roles={
        "-f": T,
        "--file": T,
        "-C": T,
        "--directory": T,
        "-T": R,
        "--files-from": R,
        "-X": R,
        "--exclude-from": R,
        "-g": W,
        "--listed-incremental": W,
        "--index-file": W,
    },
    code={
        "--checkpoint-action:": "a checkpoint action",
        "--to-command:": "a command per member",
        "-I:": "a compression program",
        "--use-compress-program:": "a compression program",
        "--rsh-command:": "a remote shell",
        "--rmt-command:": "a remote tape program",
        "-F:": "a volume script",
        "--info-script:": "a volume script",
        "--new-volume-script:": "a volume script",
    },
    operands=T,
    kind="build",
)
_CC = later(
    "-c -S -E -v -w -pedantic -pedantic-errors -pthread -shared -static -pipe -MMD -MD -MP -M -MM -ansi -s -rdynamic "
    f"-I: -D: -U: -L: -l: -x: -MT: -MQ: -isystem: -iquote: {_HELP}",
    roles={"-o": W, "-MF": W, "-include": R},
    patterns=(
        r"-O([0-3sgz]|fast)?",
        r"-W(?![lap],)[\w=+-]*",
        r"-f(?!plugin)[\w=+.-]*",
        r"-m[\w=+.-]*",
        r"-std=\S+",
        r"-g\w*",
    ),
    code={"-wrapper:": "a wrapper program", "-B:": "compiler programs from elsewhere", "-specs=": "a specs file"},
    kind="build",
)
_FORMATTER = later(f"-l -d -w -s -e -r -i: -ln: --check --write --list {_HELP}", kind="build")
_JS_TOOL = later(
    "--watch --ci --coverage --runInBand --passWithNoTests --silent --verbose --noEmit --pretty --fix --check "
    "--write --list-different --cache --quiet --max-warnings: --format: --ext: -t: --testNamePattern: --reporter: "
    f"--project: -p: --run --bail --color --no-color {_HELP}",
    kind="build",
)
_OWNER = later(
    "-R -c -f -v -h --recursive --changes --silent --quiet --verbose --dereference --no-dereference",
    operands=W,
    first=T,
    first_unless="--reference",
    recursive="-R --recursive",
    kind="none",
)
_SHRED = later("-f -u -v -z -n: -s: --force --remove= --verbose --zero --iterations: --size:", operands=D, kind="none")

# -- transfer tools: never allowed by a table (they talk to the network); their tables say which of
# their option values are files, so a download or an upload is checked in every spelling (-sLo F).

_CURL = later(
    "-# -0 -1 -2 -3 -4 -6 -a -B -f -g -G -h -i -I -j -J -k -l -L -M -n -N -O -p -q -R -s -S -v -V -Z "
    "--fail --fail-with-body --silent --show-error --location --insecure --include --head --verbose --remote-name "
    "--remote-name-all --remote-header-name --create-dirs --compressed --globoff --get --next --parallel "
    "--progress-bar "
    "--http1.1 --http2 --ipv4 --ipv6 --no-buffer --no-keepalive --raw --anyauth --basic --digest --ntlm --negotiate "
    "-A: -C: -d: -e: -H: -m: -P: -Q: -r: -t: -u: -U: -w: -x: -X: -y: -Y: -z: --user-agent: --continue-at: "
    "--data: --data-ascii: --data-binary: --data-raw: --data-urlencode: --json: --referer: --header: --max-time: "
    "--connect-timeout: --ftp-port: --quote: --range: --telnet-option: --user: --proxy-user: --write-out: --proxy: "
    "--request: --speed-time: --speed-limit: --time-cond: --retry: --retry-delay: --retry-max-time: --url: "
    "--limit-rate: --max-filesize: --interface: --resolve: --connect-to: --ciphers: --oauth2-bearer: --proto: "
    "--proto-redir: --variable: --url-query: --max-redirs: --local-port: --dns-servers: --form-string: "
    f"--expect100-timeout: --keepalive-time: --happy-eyeballs-timeout-ms: {_HELP}",
    roles={
        "-o": W,
        "--output": W,
        "--output-dir": W,
        "-D": W,
        "--dump-header": W,
        "-c": W,
        "--cookie-jar": W,
        "--trace": W,
        "--trace-ascii": W,
        "--stderr": W,
        "--libcurl": W,
        "--etag-save": W,
        "-T": R,
        "--upload-file": R,
        "-K": R,
        "--config": R,
        "-b": R,
        "--cookie": R,
        "--netrc-file": R,
        "--cacert": R,
        "-E": R,
        "--cert": R,
        "--key": R,
        "--etag-compare": R,
        "--hsts": R,
        "--alt-svc": R,
        "-F": T,
        "--form": T,
    },
    operands=T,
    kind="none",
)
_WGET = later(
    "-V -h -b -d -q -v -F -c -N -S -4 -6 -x -E -k -K -m -r -H -L -p --version --help --background --debug --quiet "
    "--verbose --no-verbose --force-html --continue --timestamping --server-response --spider --no-clobber "
    "--no-directories --force-directories --no-host-directories --adjust-extension --convert-links --backup-converted "
    "--mirror --recursive --span-hosts --relative --page-requisites --no-parent --no-check-certificate --inet4-only "
    "--inet6-only --content-disposition --trust-server-names --no-cookies --keep-session-cookies --ignore-case "
    "-e: -t: -T: -w: -Q: -l: -A: -R: -D: -I: -X: -U: -B: -n: --execute: --tries: --timeout: --wait: --quota: "
    "--level: --accept: --reject: --domains: --include-directories: --exclude-directories: --user-agent: --base: "
    "--user: --password: --http-user: --http-password: --header: --referer: --post-data: --body-data: --method: "
    "--limit-rate: --dns-timeout: --connect-timeout: --read-timeout: --waitretry: --random-wait --cut-dirs: "
    "--restrict-file-names: --default-page: --max-redirect: --local-encoding: --remote-encoding: --progress:",
    roles={
        "-O": W,
        "--output-document": W,
        "-o": W,
        "--output-file": W,
        "-a": W,
        "--append-output": W,
        "-P": W,
        "--directory-prefix": W,
        "--save-cookies": W,
        "--warc-file": W,
        "--rejected-log": W,
        "-i": R,
        "--input-file": R,
        "--post-file": R,
        "--body-file": R,
        "--load-cookies": R,
        "--config": R,
        "--ca-certificate": R,
        "--certificate": R,
        "--private-key": R,
    },
    operands=T,
    kind="none",
)


def _git_history() -> Later:
    """git's subcommands that read history and diffs (log, diff, show, blame …)."""
    log = (
        "-p -u -s --patch --no-patch --stat --shortstat --numstat --name-only --name-status --oneline --graph "
        "--decorate= --no-decorate --all --branches= --tags= --remotes= --reverse --merges --no-merges --first-parent "
        "--abbrev-commit --no-abbrev-commit --full-history --follow --raw --cc --summary --color= --no-color "
        "--date-order --topo-order --relative-date --source --left-right --cherry-pick "
        "--boundary --no-walk= --word-diff= --ignore-all-space -w --ignore-space-change -b --no-renames "
        "--find-renames= --find-copies= --full-index --binary --abbrev= --exit-code --quiet --check --minimal "
        "--histogram --patience "
        "-n: --max-count: --skip: --since: --after: --until: --before: --author: --committer: --grep: "
        "--format: --pretty= --date: -L: -S: -G: --diff-filter: --stat= -U: --unified: --relative= --dirstat= "
        "--submodule= --no-ext-diff --no-textconv --text -a -R --cached --staged --no-index --merge-base "
        "--show-current --list -l -a -r -v -vv --contains: --no-contains: --merged= --no-merged= --sort: "
        "--points-at: --ignore-submodules= --exclude: --output-indicator-new: -z -NUM --name-only -i --invert-grep "
        "--all-match -E -F -P --regexp-ignore-case --basic-regexp --extended-regexp --fixed-strings --perl-regexp"
    )
    return later(
        log,
        roles={"--output": W},
        operands=T,
        numeric=True,
        patterns=(r"-[MCB]\d*%?",),
        code={"--ext-diff": "a diff program", "--textconv": "conversion filters"},
    )


def _git_grep() -> Later:
    """``git grep``: its patterns are data, its ``-O`` opens a pager."""
    return later(
        "-i -v -w -a -I -l -L -n -c -h -H -o -q -E -F -G -P -z -r --cached --untracked --no-index "
        "--recurse-submodules "
        "--ignore-case --invert-match --word-regexp --text --files-with-matches --files-without-match --line-number "
        "--column --count --full-name --heading --break --all-match --and --or --not ( ) --show-function -p -W "
        "--function-context --threads: -A: -B: -C: -m: --max-depth: --max-count: -NUM --color= --no-color",
        roles={"-f": R, "-e": T},
        operands=T,
        numeric=True,
        code={"-O": "a pager", "--open-files-in-pager=": "a pager"},
    )


def _git_query() -> Later:
    """git's subcommands that only report on the repository (status, branch, rev-parse …)."""
    return later(
        "-s -b --short --branch --porcelain= --long -v --verbose -u= --untracked-files= --ignored= -z --column= "
        "--ahead-behind --no-ahead-behind --renames --no-renames --show-stash --tags --all --always --dirty= "
        "--long --abbrev= --match: --exclude: --contains --first-parent --show-toplevel --show-prefix --show-cdup "
        "--git-dir --absolute-git-dir --is-inside-work-tree --is-bare-repository --abbrev-ref= --short= --verify "
        "--symbolic-full-name --symbolic --quiet -q --cached -c --deleted -d --modified -m --others -o --ignored -i "
        "--stage -t --exclude-standard --directory --error-unmatch --full-name -r -l --name-only --name-status -n "
        "--heads --head --dereference --hash= -e -p --batch= --batch-check= --batch-all-objects --filters --textconv "
        "--count --date: --format: --sort: --points-at: --merged= --no-merged= --contains: --merges -h -H -a "
        "--no-index --stdin --non-matching --all-match --ours --theirs --fork-point --is-ancestor --octopus "
        "--independent --list --name-only --max-count: -NUM",
        operands=T,
        numeric=True,
    )


def _git_work() -> Later:
    """git's subcommands that change the work tree, index or refs (add, commit, rebase, stash …)."""
    return later(
        "-a -A -u -p -n -v -q -f -m: -F: -C: -c: --all --update --patch --dry-run --verbose --quiet --force "
        "--message: --amend --no-edit --allow-empty --allow-empty-message --signoff -s --no-verify --reset-author "
        "--author: --date: --fixup: --squash: --intent-to-add -N --ignore-errors --cached -r --no-ff --ff --ff-only "
        "--abort --continue --skip --quit --onto: --autosquash --no-autosquash --autostash --no-autostash "
        "--keep-index --include-untracked -k --staged -b -B --track= --no-track --detach --orphan: -c: --create: "
        "--force-create: --theirs --ours --merge --conflict: --source: --worktree -W -S --staged --index --3way "
        "--check --stat --numstat --summary --reverse -R --whitespace: -l -d -D --list --delete --annotate -a "
        "--mixed --soft --keep --hard --no-commit --mainline: -x --edit -e --strategy: -X: --strategy-option: "
        "--no-stat --log= --no-log --squash --rebase-merges= --root --empty: --update-refs --fork-point "
        "--pathspec-from-file: --start-number: --numbered -o: --output-directory: --stdout --cover-letter "
        "--no-renames --3way --directory: --exclude: --include: --apply --pop --drop --show -M --move -m",
        roles={"-F": R, "--file": R, "-o": W, "--output-directory": W, "--pathspec-from-file": R},
        operands=T,
        code={
            "--exec": "a command after each commit",
            "-x": "a command after each commit",
            "-i": "an editor",
            "--interactive": "an editor",
            "--edit": "an editor",
            "-e": "an editor",
            "--gpg-sign": "gpg",
            "-S": "gpg",
            "--separate-git-dir": "another repository",
            "--tool": "a merge tool",
        },
    )


def _git_specs() -> dict[str, Later]:
    read, grep, plain, work = _git_history(), _git_grep(), _git_query(), _git_work()
    subs = {s: read for s in ("diff", "log", "show", "whatchanged", "shortlog", "reflog", "range-diff", "diff-tree")}
    subs |= {s: read for s in ("diff-files", "diff-index", "blame", "annotate", "format-patch", "cherry")}
    subs |= {s: plain for s in ("status", "branch", "ls-files", "rev-parse", "describe", "cat-file", "ls-tree")}
    subs |= {s: plain for s in ("show-ref", "merge-base", "rev-list", "name-rev", "version", "help", "var")}
    subs |= {s: plain for s in ("count-objects", "for-each-ref", "check-ignore", "show-branch", "tag")}
    subs["grep"] = grep
    # the paths git mv and git rm name are moved or deleted (the whole tree under a directory), as mv's and rm's
    subs["mv"] = later(f"-f -k -n -v --force --dry-run --verbose --sparse {_HELP}", operands=D, last=W, recursive="*")
    subs["rm"] = later(
        "-f -n -r -q --force --dry-run --cached --ignore-unmatch --sparse --quiet --pathspec-file-nul "
        f"--pathspec-from-file: {_HELP}",
        operands=D,
        recursive="-r",
    )
    subs |= {s: work for s in ("add", "commit", "merge", "rebase", "cherry-pick", "revert", "stash")}
    subs |= {s: work for s in ("init", "switch", "checkout", "reset", "notes", "gc")}
    subs |= {s: work.but(operands=R) for s in ("apply", "am")}  # the patches they read (and write out: effects)
    subs["restore"] = work.but(operands=W)  # the paths it names are written back from the index or a commit
    subs |= {s: work for s in ("prune", "repack", "sparse-checkout")}
    step = later(operands=T)
    bisect = Specs({s: step for s in _words("start bad good new old skip reset log terms view")})
    subs["bisect"] = later(subcommands=bisect)
    subs["fsck"] = plain
    return subs


GIT = spec(
    "--no-pager -P --no-replace-objects --literal-pathspecs --glob-pathspecs --noglob-pathspecs --icase-pathspecs "
    "--no-optional-locks --no-lazy-fetch --bare -p --paginate --version --help",
    roles={"-C": C},
    code={
        "-c:": "configuration (pagers, hooks, aliases)",
        "--config-env:": "configuration",
        "--exec-path=": "git programs from elsewhere",
        "--git-dir:": "another repository's configuration",
        "--work-tree:": "another work tree",
        "--namespace:": "another namespace",
        "--super-prefix:": "internal",
        "--attr-source:": "attributes (filters run programs)",
    },
    subcommands=Specs(_git_specs()),
    kind="build",
)

#: Every git command git itself provides; any other word after ``git`` may be an alias for any of them.
GIT_COMMANDS = frozenset(GIT.subcommands or {}) | frozenset(
    _words(
        "push fetch pull clone ls-remote submodule send-email request-pull svn remote config worktree mergetool "
        "filter-branch update-ref replace archive bundle daemon instaweb clean fast-export fast-import gui "
        "difftool credential hash-object update-index write-tree read-tree commit-tree mktag mktree pack-objects "
        "unpack-objects index-pack verify-pack symbolic-ref check-attr check-ref-format column interpret-trailers "
        "mailinfo mailsplit merge-file merge-tree rerere shortlog stripspace maintenance p4 cvsimport quiltimport "
        "send-pack receive-pack upload-pack upload-archive http-push http-fetch backfill lfs"
    )
)

_SPECS: dict[str, Later] = {
    **_BUILTIN_INERT,
    "echo": _ECHO,
    "ls": _LS,
    "cat": _CAT,
    "head": _HEAD,
    "tail": _TAIL,
    "wc": _WC,
    "grep": _GREP,
    "egrep": _GREP,
    "fgrep": _GREP,
    "rg": _RG,
    "find": _FIND,
    "sort": _SORT,
    "uniq": _UNIQ,
    "diff": _DIFF,
    "cmp": _CMP,
    "comm": _COMM,
    "stat": _STAT,
    "file": _FILE,
    "du": _DU,
    "df": later(
        "-a -h -H -i -k -l -P -T --all --human-readable --si --inodes --local --portability --total "
        f"--print-type -B: -t: -x: --block-size: --output= --type: --exclude-type: {_HELP}",
        operands=N,
    ),
    "tree": _TREE,
    "date": _DATE,
    "realpath": _READLINK,
    "readlink": _READLINK,
    "cut": _CUT,
    "tr": _TR,
    "nl": _TEXT_FILTER,
    "fold": _TEXT_FILTER,
    "fmt": _TEXT_FILTER,
    "expand": _TEXT_FILTER,
    "unexpand": _TEXT_FILTER,
    "paste": _TEXT_FILTER,
    "column": _TEXT_FILTER,
    "rev": _TEXT_FILTER,
    "tac": _TEXT_FILTER,
    "join": _TEXT_FILTER,
    "pr": _TEXT_FILTER,
    "od": _OD,
    "hexdump": later(f"-b -c -C -d -o -x -v -e: -n: -s: {_HELP}", roles={"-f": R}),
    "xxd": _XXD,
    "strings": _STRINGS,
    **{n: _CHECKSUM for n in ("md5sum", "sha1sum", "sha256sum", "sha512sum", "b2sum", "cksum")},
    "base64": _BASE64,
    "base32": _BASE64,
    "jq": _JQ,
    "yq": _YQ,
    "less": _LESS,
    "more": _MORE,
    "xargs": _XARGS,
    "hash": _HASH,
    "source": _SOURCE,
    ".": _SOURCE,
    "sed": _SED,
    "awk": _AWK,
    "gawk": _AWK,
    "mawk": _AWK,
    "cp": _CP,
    "mv": _MV,
    "ln": _LN,
    "rm": _RM,
    "unlink": later(_HELP, operands=D, kind="build"),
    "mkdir": _MKDIR,
    "touch": _TOUCH,
    "chmod": _CHMOD,
    "tee": _TEE,
    "truncate": _TRUNCATE,
    "rmdir": _RMDIR,
    "mkfifo": _MKFIFO,
    "install": _INSTALL,
    "split": _SPLIT,
    "csplit": _CSPLIT,
    **{n: _COMPRESS for n in ("gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd")},
    "zip": _ZIP,
    "unzip": _UNZIP,
    "make": _MAKE,
    "pytest": _PYTEST,
    "py.test": _PYTEST,
    "ruff": _RUFF,
    **{n: _LINTER for n in ("mypy", "black", "isort", "flake8", "pylint", "pyright", "shellcheck", "yamllint")},
    "git": Later.known(GIT),
    "tar": _TAR,
    **{n: _CC for n in ("gcc", "g++", "cc", "c++", "clang", "clang++")},
    **{n: _FORMATTER for n in ("rustfmt", "gofmt", "shfmt")},
    **{n: _JS_TOOL for n in ("tsc", "eslint", "prettier", "jest", "vitest", "mocha")},
    **{n: _OWNER for n in ("chown", "chgrp", "chattr", "setfacl")},
    "shred": _SHRED,
    "curl": _CURL,
    "wget": _WGET,
    "srm": _SHRED.but(recursive=frozenset({"*"})),
    "ag": _RG,
    "ack": _RG,
    "iconv": later(f"-c -s -l --list --silent -f: -t: --from-code: --to-code: {_HELP}", roles={"-o": W, "--output": W}),
}
SPECS = Specs(_SPECS)


def make_all() -> int:
    """Make every lazy spec now (the daemon, at its start, so no request makes one); returns how many tables."""
    tables: list[Specs] = [SPECS, WRAPPER_OPTIONS]
    done = 0
    while tables:
        table = tables.pop()
        done += 1
        for made in table.values():
            if isinstance(made.subcommands, Specs):
                tables.append(made.subcommands)
    PARALLEL.made()
    RUNNER_OPTIONS.made()
    return done
