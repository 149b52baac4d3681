"""The anchor: the chain's head, signed with a key that lives outside the database.

The hash chain alone shows that the log is consistent with itself; anyone who can write the
database can rewrite an event and recompute every later hash and the head. The anchor closes
that gap: with an Ed25519 key (``tether key init``), the store signs the head (run, seq, hash)
at every run end and every N events. Each signature — a *checkpoint* — is kept twice: in the
database's ``anchors`` table and, appended as one JSON line, in an anchor file outside it.
``log verify`` checks every checkpoint it finds in either place: a signature that does not verify,
or a signed (seq, hash) the log no longer has, fails naming that checkpoint's seq.

Where things live (each overridable; the CLI also takes ``--key``):
  key          $TETHER_KEY, else $XDG_CONFIG_HOME/tether/anchor.key (~/.config/tether/anchor.key), mode 0600
  anchor file  $TETHER_ANCHOR_FILE, else anchors.jsonl next to the key
  every N      $TETHER_ANCHOR_EVERY (default 100 events)

What it does not detect: a rewrite of the events after the last checkpoint when the anchor file
is lost too, or a rewrite by someone who holds the key. Without a key nothing outside the
database records the head, and a full rewrite is undetectable; ``log verify`` says so.
"""

from __future__ import annotations

import os

from tether import disk, jsonc, places
from tether.canonical import sha256_hex
from tether.errors import DiskFull, FileError, LogCorrupt
from tether.records import dataclass

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:  # cryptography and base64: imported where a key is made, loaded or used (a store may have none)
    from collections.abc import Iterable, Sequence
    from pathlib import Path

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

    from tether.disk import StrPath

DEFAULT_EVERY = 100
MAX_ANCHOR_FILE = 256 * 1024 * 1024  # a line per checkpoint; far beyond any real use
NO_KEY_LIMIT = (
    "no anchor key: nothing outside the database records the head, so a full rewrite by someone with write "
    "access to the database (events edited and every later hash and the head recomputed) cannot be detected; "
    "`tether key init` enables signed checkpoints"
)


def config_dir() -> str:
    """``$XDG_CONFIG_HOME/tether`` (``~/.config`` without it), as ``Path`` spells it."""
    base = os.environ.get("XDG_CONFIG_HOME") or places.join(disk.home(), ".config")
    return places.join(disk.text(base), "tether")


def key_file(override: StrPath | None = None) -> str:
    """The anchor key's path as text (``str(key_path(override))``): what a hook call asks the disk about, without
    pathlib."""
    return disk.text(override or os.environ.get("TETHER_KEY") or places.join(config_dir(), "anchor.key"))


def key_path(override: StrPath | None = None) -> Path:
    """The anchor key's path (``$TETHER_KEY``, else ``anchor.key`` in :func:`config_dir`)."""
    from pathlib import Path  # the CLI's and a key's: a hook call asks key_file

    return Path(key_file(override))


def anchor_file_path(key: Path, override: str | Path | None = None) -> Path:
    from pathlib import Path  # where a key signs: not a hook call without one

    return Path(override or os.environ.get("TETHER_ANCHOR_FILE") or key.parent / "anchors.jsonl")


def anchor_every() -> int:
    raw = os.environ.get("TETHER_ANCHOR_EVERY", str(DEFAULT_EVERY))
    if not raw.isdigit() or int(raw) < 1:
        raise FileError(f"$TETHER_ANCHOR_EVERY: found {raw!r}; expected a whole number of events >= 1")
    return int(raw)


def signed_message(run_id: str, seq: int, hash_: str) -> bytes:
    return f"tether-anchor/1\n{run_id}\n{seq}\n{hash_}".encode()


@dataclass(frozen=True)
class Checkpoint:
    """A signed head: the run's event ``seq`` had hash ``hash`` when key ``key_id`` signed it."""

    run_id: str
    seq: int
    hash: str
    key_id: str
    signed_at: str
    signature: str  # base64

    def to_json(self) -> str:
        from dataclasses import asdict  # here: writing an anchor is rare; a hook call reads none

        return jsonc.dumps({"v": 1, **asdict(self)}, sort_keys=True)

    @classmethod
    def from_json(cls, line: str, where: str) -> Checkpoint:
        try:
            d = jsonc.loads(line)
            cp = cls(
                str(d["run_id"]), d["seq"], str(d["hash"]), str(d["key_id"]), str(d["signed_at"]), str(d["signature"])
            )
        except (ValueError, KeyError, TypeError) as e:
            raise FileError(f"{where}: not an anchor checkpoint ({e}); expected one JSON object per line") from e
        if not isinstance(cp.seq, int):
            raise FileError(f"{where}: seq is {cp.seq!r}; expected an integer")
        return cp


class AnchorKey:
    """An Ed25519 key: the private half signs (on the writer's machine), the public half verifies."""

    def __init__(self, public: Ed25519PublicKey, private: Ed25519PrivateKey | None, path: Path) -> None:
        self.public, self.private, self.path = public, private, path
        self.key_id = "ed25519:" + sha256_hex(_raw(public))[:16]

    @classmethod
    def generate(cls, path: Path) -> AnchorKey:
        """Write a new private key to ``path`` (mode 0600, directory 0700); never overwrite one."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        private = Ed25519PrivateKey.generate()
        pem = private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise FileError(f"{path}: a key already exists; refusing to overwrite it (move it away first)") from None
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
            f.flush()
            os.fsync(f.fileno())
        pub = path.with_suffix(".pub")
        pub.write_bytes(
            private.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        return cls(private.public_key(), private, path)

    @classmethod
    def load(cls, path: Path) -> AnchorKey:
        """A private key (signs and verifies) or a public one (verifies only)."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

        try:
            if path.stat().st_size > 64 * 1024:
                raise FileError(f"{path}: {path.stat().st_size} bytes; expected a PEM key of a few hundred bytes")
            data = path.read_bytes()
        except OSError as e:
            raise FileError(f"{path}: cannot read the anchor key ({e.strerror})") from e
        if b"PRIVATE KEY" in data:
            if path.stat().st_mode & 0o077:
                raise FileError(
                    f"{path}: a private key readable by others (mode {path.stat().st_mode & 0o777:o}); "
                    f"expected mode 600 (chmod 600 {path})"
                )
            try:
                private = serialization.load_pem_private_key(data, password=None)
            except (ValueError, TypeError) as e:
                raise FileError(f"{path}: not a PEM private key ({e})") from e
            if not isinstance(private, Ed25519PrivateKey):
                raise FileError(f"{path}: a {type(private).__name__}; expected an Ed25519 key")
            return cls(private.public_key(), private, path)
        try:
            public = serialization.load_pem_public_key(data)
        except (ValueError, TypeError) as e:
            raise FileError(f"{path}: not a PEM Ed25519 key ({e})") from e
        if not isinstance(public, Ed25519PublicKey):
            raise FileError(f"{path}: a {type(public).__name__}; expected an Ed25519 key")
        return cls(public, None, path)

    def sign_bytes(self, message: bytes) -> str:
        """A base64 Ed25519 signature of ``message`` (an episode package's manifest, say)."""
        import base64

        if self.private is None:
            raise FileError(f"{self.path}: a public key can verify but not sign; expected the private key")
        return base64.b64encode(self.private.sign(message)).decode()

    def public_b64(self) -> str:
        import base64

        return base64.b64encode(_raw(self.public)).decode()

    @classmethod
    def from_public_b64(cls, raw: str, where: str) -> AnchorKey:
        """A verify-only key from its raw public bytes in base64 (as a package carries it)."""
        import base64

        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        try:
            public = Ed25519PublicKey.from_public_bytes(base64.b64decode(raw, validate=True))
        except ValueError as e:
            raise FileError(f"{where}: not an Ed25519 public key ({e})") from e
        from pathlib import Path  # a package's key: not a hook call's

        return cls(public, None, Path(where))

    def verifies_bytes(self, message: bytes, signature: str) -> bool:
        import base64

        from cryptography.exceptions import InvalidSignature

        try:
            self.public.verify(base64.b64decode(signature, validate=True), message)
        except (InvalidSignature, ValueError):
            return False
        return True

    def verifies(self, cp: Checkpoint) -> bool:
        import base64

        from cryptography.exceptions import InvalidSignature

        try:
            signature = base64.b64decode(cp.signature, validate=True)
            self.public.verify(signature, signed_message(cp.run_id, cp.seq, cp.hash))
        except (InvalidSignature, ValueError):
            return False
        return True


def _raw(public: Ed25519PublicKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


class Signer:
    """Signs heads for the store and appends each checkpoint to the anchor file."""

    def __init__(self, key: AnchorKey, anchor_file: Path, every: int = DEFAULT_EVERY) -> None:
        if key.private is None:
            raise FileError(f"{key.path}: a public key can verify but not sign; expected the private key")
        self.key, self.anchor_file, self.every = key, anchor_file, every
        self._private = key.private

    @classmethod
    def configured(cls, key: StrPath | None = None) -> Signer | None:
        """The signer the environment configures, or None when no key exists (anchoring is opt-in; a hook call
        without a key asks the disk about its text, without pathlib)."""
        found = key_file(key)
        if not disk.exists(found):
            if key is not None:
                raise FileError(f"{found}: no such key (create one with `tether key init`)")
            return None
        path = key_path(found)
        loaded = AnchorKey.load(path)
        return cls(loaded, anchor_file_path(path), anchor_every()) if loaded.private is not None else None

    def due(self, before_seq: int, after_seq: int, kinds: Iterable[str]) -> bool:
        return "run.finished" in kinds or after_seq // self.every > before_seq // self.every

    def sign(self, run_id: str, seq: int, hash_: str, signed_at: str) -> Checkpoint:
        import base64

        sig = self._private.sign(signed_message(run_id, seq, hash_))
        return Checkpoint(run_id, seq, hash_, self.key.key_id, signed_at, base64.b64encode(sig).decode())

    def record(self, checkpoint: Checkpoint) -> None:
        """Append one line (one write, O_APPEND) and sync it."""
        self.anchor_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(self.anchor_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, (checkpoint.to_json() + "\n").encode())
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as e:
            if e.errno == 28:  # ENOSPC
                raise DiskFull(f"disk full: {self.anchor_file} (the checkpoint is in the database)") from e
            raise FileError(f"{self.anchor_file}: cannot append the checkpoint ({e.strerror})") from e


def read_anchor_file(path: Path, run_id: str) -> list[Checkpoint]:
    """The run's checkpoints in the anchor file (none if the file does not exist)."""
    if not path.exists():
        return []
    if path.stat().st_size > MAX_ANCHOR_FILE:
        raise FileError(f"{path}: {path.stat().st_size} bytes; expected at most {MAX_ANCHOR_FILE} (rotate it)")
    out = []
    with path.open(encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            if run_id in line and line.strip():
                cp = Checkpoint.from_json(line, f"{path}:{n}")
                if cp.run_id == run_id:
                    out.append(cp)
    return out


@dataclass(frozen=True)
class AnchorReport:
    """What the signed anchors of a run say: the key, the checkpoints checked, the last signed seq."""

    key_id: str | None
    checkpoints: int  # checked against the log with our key
    last_signed_seq: int | None
    other_keys: tuple[str, ...]  # checkpoints signed by keys we do not hold: not checked
    limits: tuple[str, ...]  # what this verification could not establish, in plain words

    def to_dict(self) -> dict[str, object]:
        return {
            "key_id": self.key_id,
            "checkpoints": self.checkpoints,
            "last_signed_seq": self.last_signed_seq,
            "other_keys": list(self.other_keys),
            "limits": list(self.limits),
        }


def check_anchor(
    run_id: str, hashes: Sequence[str], checkpoints: Iterable[Checkpoint], key: AnchorKey | None
) -> AnchorReport:
    """Check every checkpoint against the (already chain-verified) event hashes; raise at the first bad one.

    ``hashes[seq]`` is the hash of event ``seq``. Checkpoints are checked in seq order, so the error names
    the first signed checkpoint that no longer matches.
    """
    if key is None:
        return AnchorReport(None, 0, None, (), (NO_KEY_LIMIT,))
    seen: set[tuple[int, str, str]] = set()
    others: set[str] = set()
    last: int | None = None
    count = 0
    for cp in sorted(checkpoints, key=lambda c: c.seq):
        if (cp.seq, cp.hash, cp.signature) in seen:
            continue
        seen.add((cp.seq, cp.hash, cp.signature))
        if cp.key_id != key.key_id:
            others.add(cp.key_id)
            continue
        if cp.run_id != run_id or not key.verifies(cp):
            raise LogCorrupt(run_id, cp.seq, "signed checkpoint's signature does not verify (forged or altered)")
        if cp.seq >= len(hashes):
            raise LogCorrupt(
                run_id, cp.seq, f"signed checkpoint at seq {cp.seq} is beyond the log's end (seq {len(hashes) - 1})"
            )
        if hashes[cp.seq] != cp.hash:
            raise LogCorrupt(
                run_id,
                cp.seq,
                f"first signed checkpoint that no longer matches: seq {cp.seq} was signed with hash "
                f"{cp.hash[:16]}…, the log now has {hashes[cp.seq][:16]}… (rewritten)",
            )
        count += 1
        last = cp.seq
    limits = []
    if last is None:
        limits.append(
            "no checkpoint signed by this key covers this run (it ran before the key existed, or its "
            "checkpoints were removed from both the database and the anchor file): a full rewrite is not detectable"
        )
    elif last < len(hashes) - 1:
        limits.append(
            f"events after seq {last} are covered only by the hash chain until the next checkpoint "
            "(a rewrite of them alone by someone with write access is not detectable)"
        )
    if others:
        limits.append(f"checkpoints signed by other keys were not checked: {', '.join(sorted(others))}")
    return AnchorReport(key.key_id, count, last, tuple(sorted(others)), tuple(limits))
