"""Environment variables that make a program run code it was not asked to run.

``LD_PRELOAD=/tmp/x.so ls`` is not a listing: the dynamic linker loads ``x.so`` into ``ls``.
``GIT_PAGER='sh -c …' git log`` runs the pager through a shell; ``PYTHONPATH=/tmp/evil pytest``
imports whatever ``/tmp/evil`` holds. Each variable name falls into one :class:`EnvKind`:

* ``CODE``: the value loads or names code or configuration (the dynamic linker's ``LD_*``,
  ``BASH_ENV``/``ENV``, interpreters' option variables, git's ``GIT_DIR``/``GIT_CONFIG*``,
  ``HOME``/``XDG_CONFIG_HOME`` which relocate every configuration file …). Never ALLOW.
* ``COMMAND``: the value is a command line the program starts (pagers, editors, ``GIT_SSH_COMMAND``,
  ``LESSOPEN``, ``CC`` for make …). The shell analysis parses the value as code and judges it.
* ``PATHS``: the value lists directories code is loaded from (``PYTHONPATH``, ``NODE_PATH``,
  ``PATH`` …). Allowed only when every entry is inside the workspace (the agent could run that code
  anyway) or, for ``PATH``, a system binary directory.
* ``PLAIN``: anything else (``CI=1``, ``GIT_AUTHOR_NAME``, ``PYTHONUNBUFFERED``).

Families are matched by prefix, with short lists of harmless exceptions: an unknown ``GIT_*`` or
``PYTHON*`` variable counts as code (fail closed).
"""

from __future__ import annotations

from enum import Enum

from tether.quickenum import Quick


class EnvKind(Enum, metaclass=Quick):
    PLAIN = "plain"
    CODE = "code"
    COMMAND = "command"
    PATHS = "paths"


_COMMAND = frozenset(
    {
        "PAGER",
        "GIT_PAGER",
        "MANPAGER",
        "SYSTEMD_PAGER",
        "EDITOR",
        "VISUAL",
        "FCEDIT",
        "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR",
        "SVN_EDITOR",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "SUDO_ASKPASS",
        "GIT_PROXY_COMMAND",
        "GIT_EXTERNAL_DIFF",
        "LESSOPEN",
        "LESSCLOSE",
        "BROWSER",
        "PROMPT_COMMAND",
        "RSYNC_RSH",
        "CVS_RSH",
        "RUSTC_WRAPPER",
        "RUSTC",
        "RUSTDOC",
        "CARGO_BUILD_RUSTC_WRAPPER",
        "CC",
        "CXX",
        "CPP",
        "LD",
        "AR",
        "AS",
        "FC",
        "MAKE",
        "SHELL",
    }
)
_PATHS = frozenset(
    {"PATH", "PYTHONPATH", "PYTHONPYCACHEPREFIX", "NODE_PATH", "PERL5LIB", "PERLLIB", "RUBYLIB", "CLASSPATH"}
)
_CODE = frozenset(
    {
        "BASH_ENV",
        "ENV",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "CDPATH",
        "HOME",
        "ZDOTDIR",
        "XDG_CONFIG_HOME",
        "XDG_CONFIG_DIRS",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "JDK_JAVA_OPTIONS",
        "MAKEFLAGS",
        "MFLAGS",
        "GNUMAKEFLAGS",
        "MAKEFILES",
        "TAR_OPTIONS",
        "ZIPOPT",
        "UNZIP",
        "GREP_OPTIONS",
        "LESS",
        "LESSKEY",
        "LESSKEYIN",
        "GCONV_PATH",
        "PERL5OPT",
        "PERL5DB",
        "RUBYOPT",
        "NODE_OPTIONS",
        "NODE_REPL_EXTERNAL_MODULE",
    }
)
#: Families whose members count as code unless listed as harmless below.
_CODE_PREFIXES = ("LD_", "DYLD_", "BASH_FUNC_", "GIT_", "PYTHON", "PERL", "RUBY", "NODE_", "NPM_CONFIG_", "npm_config_")
_PLAIN_IN_FAMILY = frozenset(
    {
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_AUTHOR_DATE",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_COMMITTER_DATE",
        "GIT_TERMINAL_PROMPT",
        "GIT_OPTIONAL_LOCKS",
        "GIT_FLUSH",
        "GIT_LITERAL_PATHSPECS",
        "GIT_GLOB_PATHSPECS",
        "GIT_NOGLOB_PATHSPECS",
        "GIT_ICASE_PATHSPECS",
        "GIT_NO_REPLACE_OBJECTS",
        "GIT_MERGE_VERBOSITY",
        "GIT_PROGRESS_DELAY",
        "GIT_DEFAULT_HASH",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONUNBUFFERED",
        "PYTHONHASHSEED",
        "PYTHONIOENCODING",
        "PYTHONUTF8",
        "PYTHONFAULTHANDLER",
        "PYTHONDEVMODE",
        "PYTHONOPTIMIZE",
        "PYTHONNOUSERSITE",
        "PYTHONSAFEPATH",
        "PYTHONTRACEMALLOC",
        "PYTHONWARNDEFAULTENCODING",
        "NODE_ENV",
        "NODE_NO_WARNINGS",
    }
)


def kind(name: str) -> EnvKind:
    """How assigning ``name`` can change what a program runs."""
    if name in _COMMAND:
        return EnvKind.COMMAND
    if name in _PATHS:
        return EnvKind.PATHS
    if name in _CODE:
        return EnvKind.CODE
    if name.startswith("GIT_TRACE") or name in _PLAIN_IN_FAMILY:
        return EnvKind.PLAIN
    if name.startswith(_CODE_PREFIXES):
        return EnvKind.CODE
    return EnvKind.PLAIN


def command_text(name: str, value: str) -> str:
    """The command line a ``COMMAND`` variable's value stands for (``LESSOPEN='|cmd %s'`` → ``cmd file``)."""
    if name in ("LESSOPEN", "LESSCLOSE"):
        value = value.lstrip("|-").replace("%s", "file")
    return value
