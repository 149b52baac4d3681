"""What a known program does with its arguments: which words it reads, writes or deletes.

This is the knowledge that turns ``cp a /etc/x`` into "writes /etc/x" so the gate can judge the
place, whatever rule allowed ``cp``. It is deliberately approximate in the safe direction:
when unsure whether a word is a path, it is treated as one for credential checks; unknown
programs get only that generic check.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .shell import SimpleCommand, Word


@dataclass(frozen=True)
class Target:
    word: Word
    recursive: bool = False
    delete: bool = False


@dataclass
class Effects:
    reads: list[Target] = field(default_factory=list)  # file contents read (recursive: a whole tree)
    writes: list[Target] = field(default_factory=list)  # created, changed, moved away or deleted
    env_dump: bool = False


#: Programs that only look at names (listing ``~/.ssh`` is not reading a key).
NAME_ONLY = frozenset(
    {
        "ls",
        "find",
        "du",
        "tree",
        "stat",
        "test",
        "[",
        "[[",
        "which",
        "type",
        "realpath",
        "readlink",
        "basename",
        "dirname",
        "echo",
        "printf",
        "cd",
        "pushd",
        "file",
        "mkdir",
        "touch",
        "rm",
        "rmdir",
        "chmod",
        "chown",
        "chgrp",
        "git",
        "command",
        "whereis",
    }
)
#: Programs whose first operand is a pattern / script, not a file.
_PATTERN_FIRST = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack", "sed", "awk", "gawk", "mawk", "jq", "yq"})
_RECURSIVE_READERS = frozenset({"rg", "ag", "ack"})
_FIND_FILTERS = frozenset(
    {"-name", "-iname", "-path", "-ipath", "-regex", "-iregex", "-newer", "-mtime", "-mmin", "-empty", "-size", "-user"}
)


def _flags(words: list[str]) -> set[str]:
    """Single-letter flags (bundled ``-rf`` → r, f) and long options."""
    out: set[str] = set()
    for w in words:
        if w == "--":
            break
        if w.startswith("--"):
            out.add(w.split("=", 1)[0])
        elif w.startswith("-") and len(w) > 1:
            out.update(w[1:])
    return out


def operands(cmd: SimpleCommand, value_flags: frozenset[str] = frozenset()) -> list[Word]:
    out: list[Word] = []
    args = cmd.args
    i = 0
    dashdash = False
    while i < len(args):
        t = args[i].text
        if not dashdash and t == "--":
            dashdash = True
        elif not dashdash and t.startswith("-") and len(t) > 1:
            if t in value_flags:
                i += 1
        else:
            out.append(args[i])
        i += 1
    return out


def _option_value(cmd: SimpleCommand, names: tuple[str, ...]) -> list[Word]:
    out: list[Word] = []
    args = cmd.args
    for i, w in enumerate(args):
        for n in names:
            if w.text == n and i + 1 < len(args):
                out.append(args[i + 1])
            elif n.startswith("--") and w.text.startswith(n + "="):
                out.append(Word(w.text[len(n) + 1 :], w.static, w.prefix[len(n) + 1 :]))
            elif not n.startswith("--") and w.text.startswith(n) and len(w.text) > len(n) and len(n) == 2:
                out.append(Word(w.text[2:], w.static, w.prefix[2:]))
    return out


def effects(cmd: SimpleCommand) -> Effects:
    """The file effects of one simple command (redirections are handled by the gate)."""
    e = Effects()
    name = cmd.name
    texts = [w.text for w in cmd.args]
    flags = _flags(texts)
    recursive = bool({"r", "R", "--recursive", "a", "--archive"} & flags)
    if name in ("rm", "unlink", "shred", "srm", "rmdir"):
        e.writes += [Target(w, recursive or name == "srm", True) for w in operands(cmd)]
    elif name == "mv":
        ops = operands(cmd, frozenset({"-t", "--target-directory", "-S", "--suffix"}))
        dest = _option_value(cmd, ("-t", "--target-directory"))
        if not dest and ops:
            dest, ops = [ops[-1]], ops[:-1]
        e.writes += [Target(w, True, True) for w in ops] + [Target(w) for w in dest]
    elif name in ("cp", "install", "ln", "rsync", "scp"):
        ops = operands(cmd, frozenset({"-t", "--target-directory", "-m", "--mode", "-o", "-g", "-S", "-e", "-P"}))
        ops = [w for w in ops if not _remote(w.text)]
        dest = _option_value(cmd, ("-t", "--target-directory"))
        if not dest and len(ops) >= 2:
            dest, ops = [ops[-1]], ops[:-1]
        elif not dest and name == "ln" and ops:
            dest = [Word(ops[0].text.rsplit("/", 1)[-1], ops[0].static, "")]
        e.reads += [Target(w, recursive) for w in ops if name != "ln"]
        e.writes += [Target(w) for w in dest]
    elif name in ("touch", "mkdir", "truncate", "mkfifo", "mknod"):
        e.writes += [Target(w) for w in operands(cmd, frozenset({"-s", "--size", "-m", "--mode", "-r", "-d", "-t"}))]
    elif name in ("chmod", "chown", "chgrp", "chattr", "setfacl"):
        ops = operands(cmd)
        if ops and not any(t.startswith("--reference") for t in texts):
            ops = ops[1:]
        e.writes += [Target(w, recursive) for w in ops]
    elif name == "tee":
        e.writes += [Target(w) for w in operands(cmd)]
    elif name == "dd":
        for w in cmd.args:
            if w.text.startswith("of="):
                e.writes.append(Target(Word(w.text[3:], w.static, w.prefix[3:])))
            if w.text.startswith("if="):
                e.reads.append(Target(Word(w.text[3:], w.static, w.prefix[3:])))
    elif name in ("sed", "perl", "ruby") and any(t == "-i" or t.startswith(("-i", "--in-place")) for t in texts):
        ops = operands(cmd, frozenset({"-e", "-f", "-E" if name == "perl" else "-e"}))
        if name == "sed" and "-e" not in texts and "-f" not in texts and ops:
            ops = ops[1:]
        elif name != "sed" and ops:
            ops = ops[1:] if not any(t in ("-e", "-E") or t.endswith("e") for t in texts if t.startswith("-")) else ops
        e.writes += [Target(w) for w in ops]
    elif name == "sort":
        e.writes += [Target(w) for w in _option_value(cmd, ("-o", "--output"))]
        e.reads += [Target(w) for w in operands(cmd, frozenset({"-o", "--output", "-k", "-t", "-S", "-T"}))]
    elif name == "uniq":
        ops = operands(cmd, frozenset({"-f", "-s", "-w"}))
        e.reads += [Target(w) for w in ops[:1]]
        e.writes += [Target(w) for w in ops[1:2]]
    elif name == "find":
        roots = []
        for w in cmd.args:
            if w.text.startswith("-") or w.text in ("(", "!"):
                break
            roots.append(w)
        roots = roots or [Word.lit(".")]
        if "-delete" in texts:
            # find deletes what is *under* its roots; without a filter that is everything
            filtered = bool(set(texts) & _FIND_FILTERS)
            leaf = "_found_" if filtered else "*"
            e.writes += [Target(Word(f"{w.text.rstrip('/')}/{leaf}", w.static, w.prefix), True, True) for w in roots]
        e.writes += [Target(w) for w in _option_value(cmd, ("-fprint", "-fprint0", "-fprintf", "-fls"))]
    elif name in ("tar", "bsdtar"):
        _tar(cmd, texts, e)
    elif name in ("zip",):
        ops = operands(cmd, frozenset({"-x", "-i", "-P"}))
        e.writes += [Target(w) for w in ops[:1]]
        e.reads += [Target(w, recursive) for w in ops[1:]]
    elif name in ("unzip",):
        dest = _option_value(cmd, ("-d",))
        e.writes += [Target(w) for w in dest] or [Target(Word.lit("."))]
        e.reads += [Target(w) for w in operands(cmd, frozenset({"-d", "-x"}))[:1]]
    elif name in ("curl", "wget"):
        e.writes += [Target(w) for w in _option_value(cmd, ("-o", "--output", "-O", "--output-document"))]
        e.writes += [Target(w) for w in _option_value(cmd, ("-P", "--directory-prefix"))]
        e.reads += [Target(w) for w in _option_value(cmd, ("-T", "--upload-file", "-K", "--config", "--post-file"))]
        for w in cmd.args:
            at = w.text.find("@")
            if at >= 0 and (w.text.startswith("@") or "=@" in w.text):
                e.reads.append(Target(Word(w.text[at + 1 :], w.static, w.prefix[at + 1 :] if w.static else "")))
    elif name in ("cat", "head", "tail", "less", "more", "wc", "base64", "base32", "xxd", "od", "hexdump", "strings"):
        e.reads += [Target(w) for w in operands(cmd, frozenset({"-n", "-c", "-w", "-s", "-l"}))]
    elif name in ("md5sum", "sha1sum", "sha256sum", "sha512sum", "b2sum", "cksum", "nl", "tac", "rev", "diff"):
        e.reads += [Target(w, name == "diff" and recursive) for w in operands(cmd)]
    elif name in _PATTERN_FIRST:
        value_flags = frozenset({"-e", "-f", "-m", "-A", "-B", "-C", "-g", "-t", "--type", "--glob", "-F", "-v"})
        ops = operands(cmd, value_flags - ({"-F", "-v"} if name not in ("awk", "gawk", "mawk") else frozenset()))
        if not ({"-e", "-f", "--regexp", "--file"} & set(texts)) and ops:
            ops = ops[1:]
        deep = name in _RECURSIVE_READERS or bool({"r", "R", "--recursive", "--dereference-recursive"} & flags)
        e.reads += [Target(w, deep) for w in ops]
        if name in _RECURSIVE_READERS and not ops:
            e.reads.append(Target(Word.lit("."), True))
    if name in ("env", "printenv", "set", "export", "declare", "typeset") and not _sets_something(name, texts):
        e.env_dump = True
    return e


def _sets_something(name: str, texts: list[str]) -> bool:
    if name == "printenv":
        return bool(texts)
    if name == "set":
        return bool(texts)
    if name in ("export", "declare", "typeset"):
        return (bool(texts) and not any(t in ("-p", "-x") for t in texts)) or any("=" in t for t in texts)
    return False


def _remote(text: str) -> bool:
    head = text.split("/", 1)[0]
    return (":" in head and not text.startswith(("/", ".", "~"))) or "://" in text


def _tar(cmd: SimpleCommand, texts: list[str], e: Effects) -> None:
    if not texts:
        return
    first = texts[0]
    modes = set(first.lstrip("-")) if not first.startswith("--") else set()
    modes |= {t[1] for t in texts if t.startswith("-") and not t.startswith("--") and len(t) > 1}
    for t in texts:
        if t.startswith("--"):
            modes |= {"x"} if t in ("--extract", "--get") else {"c"} if t == "--create" else set()
    archive: list[Word] = []
    if "f" in modes:
        for i, t in enumerate(texts):
            if (t == first and "f" in t and not t.startswith("--")) or (t.startswith("-") and "f" in t[1:]):
                if i + 1 < len(cmd.args):
                    archive = [cmd.args[i + 1]]
                break
    archive += _option_value(cmd, ("--file",))
    chdir = _option_value(cmd, ("-C", "--directory"))
    rest = [w for w in cmd.args[1:] if not w.text.startswith("-") and w not in archive and w not in chdir]
    if "x" in modes:
        e.writes += [Target(w) for w in chdir] or [Target(Word.lit("."))]
        e.reads += [Target(w) for w in archive]
    elif "c" in modes or "r" in modes or "u" in modes:
        e.writes += [Target(w) for w in archive if w.text != "-"]
        e.reads += [Target(w, True) for w in rest]
