"""Episode packages: one run, its evidence and its starting workspace in one file, checked before it is trusted.

Why: "can I hand it to a colleague" — a run must move to another machine and still verify there, byte
for byte, and replay from its own starting files. The package is a gzip-compressed tar (one stream,
standard tools can list it) holding only regular files with fixed names:

  manifest.json   format, tether version, run id, head (seq, hash), event count, start snapshot,
                  sha256 and size of every other member, blobs withheld (and why), Ed25519 signature
  events.jsonl    the run's log, one event per line, each payload as the exact stored text (so every
                  hash re-verifies); a fork's log starts with its parent's events up to the fork point
  runs.json       the runs those events belong to (a fork's lineage), each with the head the package holds
  envelope.json   the envelope the run went on under, and plan.json its intent plan (for a reader)
  blobs/<hex>     every blob the events name: the start snapshot's manifest and file contents, later
                  checkpoints, undo and test-surface images. A snapshot's unchanged files share one blob,
                  so a package grows with the bytes the run changed, not with the workspace.

Import (:func:`read_package`, :func:`import_package`) trusts nothing until everything is checked, in
memory: member names (no ``..``, no absolute path, nothing but the names above), member types (no
links, devices or directories), duplicates, sizes (each member, the total and the member count are
bounded while decompressing, so a zip bomb stops at the limit), the manifest's hashes, the signature,
every blob's name against its content, the chain from genesis to the manifest's head, and that the
envelope and start snapshot agree with the log. Only then is the run added to the store, in one
transaction that re-verifies the chain before it commits: nothing is ever half-imported.

Secrets: a value tether passed into the sandbox from the host (``environment.env_allow`` and
``environment.secrets`` sources ``env:NAME``, as set in the exporting process) never enters a package.
The runtime masks such values in every tool result before it is logged (``[$NAME]``), so a log written
since holds none. An event that still contains one (an older log) refuses the export: its bytes are
hashed, so it cannot be redacted and still verify. A blob that contains one — a file a command wrote it
into — is withheld and named in the manifest; a workspace rebuilt from the package lacks that content.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import tarfile
import tempfile
import zlib
from collections.abc import Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from tether.canonical import canonical_json, sha256_hex
from tether.errors import FileError, InputError, LogCorrupt, TetherError
from tether.events.anchor import AnchorKey
from tether.events.kinds import Checkpoint, RunForked, RunStarted
from tether.events.protocol import Store
from tether.events.store import Event, RunInfo, now_iso, verify_rows
from tether.sandbox.environment import passed_values
from tether.snapshot import Manifest, SnapshotError
from tether.state import RunState

FORMAT = "tether-episode/1"
SIGNED_PREFIX = FORMAT.encode() + b"\n"
MAX_BYTES = 2 * 1024**3  # decompressed, all members together
MAX_MEMBERS = 500_000
FIXED_MEMBERS = ("manifest.json", "events.jsonl", "runs.json", "envelope.json", "plan.json")
BLOB_MEMBER = re.compile(r"blobs/([0-9a-f]{64})")
HASH_IN_TEXT = re.compile(r"sha256:[0-9a-f]{64}")


class PackageInvalid(InputError):
    """A package that is malformed, tampered with or unsafe: refused whole, nothing imported."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"{path}: package refused: {reason}")


@dataclass(frozen=True)
class Limits:
    """What an import reads at most, decompressed: the package is refused at the first excess."""

    max_bytes: int = MAX_BYTES
    max_members: int = MAX_MEMBERS


@dataclass
class Package:
    """A package read and verified in memory (:func:`read_package`)."""

    manifest: dict[str, Any]
    runs: list[RunInfo]
    rows: list[tuple[Any, ...]]
    blobs: dict[str, bytes]
    signed_by: str | None = None
    signature_note: str = ""
    warnings: list[str] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return str(self.manifest["run_id"])


# ---- export --------------------------------------------------------------------------------------


def export_run(
    store: Store,
    run_id: str,
    out: Path,
    *,
    key: AnchorKey | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Write ``run_id``'s package to ``out`` (atomically: a temp file renamed); return its manifest."""
    info = store.run(run_id)
    store.verify_run(info.run_id)  # a log that does not verify is not handed on
    rows = store.rows(info.run_id)
    events = store.events(info.run_id)
    state = RunState.from_events(events)
    environment = state.envelope.get("environment") or {}
    sources = [str(s.get("source", "")) for s in environment.get("secrets") or []]
    secrets = passed_values(os.environ if environ is None else environ, environment.get("env_allow") or [], sources)
    _refuse_secret_events(rows, secrets, info.run_id)
    blobs, missing = _referenced_blobs(store, rows, events)
    withheld = {h: reason for h, data in blobs.items() if (reason := _secret_in(data, secrets))}
    members: dict[str, bytes] = {
        "events.jsonl": b"".join(_event_line(r) for r in rows),
        "runs.json": _json_bytes([_run_dict(r) for r in _lineage_heads(store, info.run_id, rows)]),
        "envelope.json": _json_bytes(state.envelope),
        "plan.json": _json_bytes(_plan(events)),
    }
    members.update({f"blobs/{h.removeprefix('sha256:')}": d for h, d in sorted(blobs.items()) if h not in withheld})
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "tether_version": tether_version(),
        "run_id": info.run_id,
        "head": {"seq": info.head_seq, "hash": info.head_hash},
        "events": len(rows),
        "exported_at": now_iso(),
        "start_snapshot": state.baseline,
        "files": {name: {"sha256": sha256_hex(data), "size": len(data)} for name, data in sorted(members.items())},
        "withheld_blobs": withheld,
        "missing_blobs": sorted(missing),
        "secrets_checked": sorted(secrets),
    }
    if key is not None and key.private is not None:
        manifest["signature"] = {
            "key_id": key.key_id,
            "public_key": key.public_b64(),
            "value": key.sign_bytes(_signed_message(manifest)),
        }
    _write_atomically(out, {"manifest.json": _json_bytes(manifest), **members})
    return manifest


def tether_version() -> str:
    try:
        return version("tether")
    except PackageNotFoundError:
        return "unknown"


def _refuse_secret_events(rows: Iterable[tuple[Any, ...]], secrets: Mapping[str, str], run_id: str) -> None:
    hits: dict[str, list[int]] = {}
    for row in rows:
        for name, value in secrets.items():
            if value in row[4] or json.dumps(value)[1:-1] in row[4]:
                hits.setdefault(name, []).append(int(row[1]))
    if hits:
        where = "; ".join(f"${name} in event seq {', '.join(map(str, seqs))}" for name, seqs in sorted(hits.items()))
        raise InputError(
            f"run {run_id}: refusing to export: the log holds the value of a host variable passed to the sandbox "
            f"({where}). An event's bytes are hashed, so it cannot be redacted and still verify; the value must "
            "not leave this machine in a package"
        )


def _secret_in(data: bytes, secrets: Mapping[str, str]) -> str:
    names = [n for n, v in sorted(secrets.items()) if v.encode() in data]
    return f"contains the value of ${', $'.join(names)}" if names else ""


def _referenced_blobs(
    store: Store, rows: Iterable[tuple[Any, ...]], events: Iterable[Any]
) -> tuple[dict[str, bytes], set[str]]:
    """Every blob an event names (any ``sha256:`` text that is a stored blob), and each snapshot's contents."""
    wanted = {h for row in rows for h in HASH_IN_TEXT.findall(row[4])}
    manifests = {
        snap
        for e in events
        if e.kind in (Checkpoint.KIND, RunForked.KIND) and isinstance(snap := e.payload.get("snapshot"), str)
    }
    blobs: dict[str, bytes] = {}
    missing: set[str] = set()
    for h in sorted(wanted | manifests):
        data = _blob(store, h)
        if data is not None:
            blobs[h] = data
        elif h in manifests:
            missing.add(h)
    for h in sorted(manifests & blobs.keys()):
        try:
            entries = Manifest.from_json(blobs[h]).entries.values()
        except SnapshotError:
            continue
        for entry in entries:
            if entry.digest not in blobs:
                data = _blob(store, entry.digest)
                if data is None:
                    missing.add(entry.digest)  # a file larger than the snapshot stores: hashed, not kept
                else:
                    blobs[entry.digest] = data
    return blobs, missing


def _blob(store: Store, h: str) -> bytes | None:
    try:
        return store.get_blob(h)
    except TetherError:
        return None


def _lineage_heads(store: Store, run_id: str, rows: list[tuple[Any, ...]]) -> list[RunInfo]:
    """The lineage's runs, each with the head the package holds of it (a parent's is the fork point)."""
    last: dict[str, tuple[int, str]] = {}
    for row in rows:
        last[row[0]] = (int(row[1]), str(row[6]))
    out = []
    for rid, _, _ in store.lineage(run_id):
        if rid in last:
            info = store.run(rid)
            out.append(RunInfo(rid, info.created_at, info.task, info.parent_run, *last[rid]))
    return out


def _plan(events: list[Any]) -> Any:
    plan = None
    for e in events:
        if e.kind == RunStarted.KIND or (e.kind == RunForked.KIND and e.payload.get("envelope") is not None):
            plan = e.payload.get("plan")
    return plan


def _event_line(row: tuple[Any, ...]) -> bytes:
    keys = ("run_id", "seq", "ts", "kind", "payload", "prev_hash", "hash")
    return (canonical_json(dict(zip(keys, row, strict=True))) + "\n").encode("utf-8")


def _run_dict(info: RunInfo) -> dict[str, Any]:
    return {
        "run_id": info.run_id,
        "created_at": info.created_at,
        "task": info.task,
        "parent_run": info.parent_run,
        "head_seq": info.head_seq,
        "head_hash": info.head_hash,
    }


def _json_bytes(value: Any) -> bytes:
    return canonical_json(value).encode("utf-8")


def _signed_message(manifest: Mapping[str, Any]) -> bytes:
    return SIGNED_PREFIX + _json_bytes({k: v for k, v in manifest.items() if k != "signature"})


def _write_atomically(out: Path, members: Mapping[str, bytes]) -> None:
    out = out.resolve()
    if out.is_dir():
        raise FileError(f"{out}: is a directory; expected the package file to write")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    except OSError as e:
        raise FileError(f"{out.parent}: cannot write the package here ({e.strerror})") from e
    try:
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
            for name, data in members.items():  # the manifest first: a reader sees what to expect
                member = tarfile.TarInfo(name)
                member.size, member.mode, member.mtime = len(data), 0o644, 0
                tar.addfile(member, io.BytesIO(data))
        os.replace(tmp, out)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


# ---- import --------------------------------------------------------------------------------------


def read_package(path: Path, *, trusted: AnchorKey | None = None, limits: Limits = Limits()) -> Package:
    """Read and verify a package entirely in memory; raise :class:`PackageInvalid` at the first problem.

    ``trusted``: the signature must be by this key (and verify). Without it, a signature is checked
    against the public key the package carries: that shows the manifest is intact and who signed it,
    not that the signer is someone you trust.
    """
    members = _read_members(path, limits)
    manifest = _manifest(path, members)
    signed_by, note = _check_signature(path, manifest, trusted)
    files = manifest["files"]
    for name, data in members.items():
        if name == "manifest.json":
            continue
        meta = files.get(name)
        if meta is None:
            raise PackageInvalid(path, f"member {name} is not listed in the manifest")
        if meta != {"sha256": sha256_hex(data), "size": len(data)}:
            raise PackageInvalid(path, f"member {name} does not match its sha256 in the manifest (edited)")
    absent = sorted((set(files) | set(FIXED_MEMBERS)) - set(members))
    if absent:
        raise PackageInvalid(path, f"the archive lacks {', '.join(absent[:5])}")
    blobs = _blobs(path, members)
    runs = _runs(path, members["runs.json"])
    rows = _rows(path, members["events.jsonl"])
    _check_chain(path, manifest, runs, rows)
    package = Package(manifest, runs, rows, blobs, signed_by, note)
    _check_contents(path, package, members)
    return package


def _read_members(path: Path, limits: Limits) -> dict[str, bytes]:
    members: dict[str, bytes] = {}
    total = 0
    try:
        with gzip.open(path, "rb") as gz, tarfile.open(fileobj=gz, mode="r|") as tar:
            for n, member in enumerate(tar, 1):
                name = member.name
                if n > limits.max_members:
                    raise PackageInvalid(path, f"more than {limits.max_members} members")
                if not (name in FIXED_MEMBERS or BLOB_MEMBER.fullmatch(name)):
                    raise PackageInvalid(path, f"unexpected member {name!r} (a package holds only its fixed names)")
                if not member.isreg():
                    raise PackageInvalid(path, f"member {name!r} is a {_type_name(member)}, not a regular file")
                if name in members:
                    raise PackageInvalid(path, f"member {name!r} appears twice")
                total += member.size
                if total > limits.max_bytes:
                    raise PackageInvalid(path, f"more than {limits.max_bytes} bytes decompressed (limit)")
                f = tar.extractfile(member)
                data = f.read(member.size + 1) if f is not None else b""
                if len(data) != member.size:
                    raise PackageInvalid(path, f"member {name!r} is cut short (truncated archive)")
                members[name] = data
            while chunk := gz.read(1 << 16):  # to the gzip trailer, whose CRC and length prove the end is there
                total += len(chunk)
                if total > limits.max_bytes:
                    raise PackageInvalid(path, f"more than {limits.max_bytes} bytes decompressed (limit)")
    except FileNotFoundError:
        raise FileError(f"{path}: no such file") from None
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile, OSError) as e:
        raise PackageInvalid(path, f"not a complete tar.gz package (truncated or corrupt: {e})") from None
    return members


def _type_name(member: tarfile.TarInfo) -> str:
    if member.issym():
        return f"symlink to {member.linkname!r}"
    if member.islnk():
        return f"hard link to {member.linkname!r}"
    return "directory" if member.isdir() else "special file"


def _manifest(path: Path, members: Mapping[str, bytes]) -> dict[str, Any]:
    if "manifest.json" not in members:
        raise PackageInvalid(path, "no manifest.json")
    try:
        manifest = json.loads(members["manifest.json"])
    except ValueError as e:
        raise PackageInvalid(path, f"manifest.json is not JSON ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else manifest
        raise PackageInvalid(path, f"manifest.json format is {found!r}; expected {FORMAT!r}")
    expect = {
        "run_id": str,
        "head": dict,
        "events": int,
        "files": dict,
        "withheld_blobs": dict,
        "missing_blobs": list,
        "tether_version": str,
    }
    for name, kind in expect.items():
        if not isinstance(manifest.get(name), kind):
            raise PackageInvalid(path, f"manifest.json field {name}: expected {kind.__name__}")
    return manifest


def _check_signature(path: Path, manifest: Mapping[str, Any], trusted: AnchorKey | None) -> tuple[str | None, str]:
    sig = manifest.get("signature")
    if sig is None:
        if trusted is not None:
            raise PackageInvalid(path, f"unsigned, but a signature by {trusted.key_id} is required (--key)")
        return None, "unsigned"
    if not (isinstance(sig, dict) and all(isinstance(sig.get(k), str) for k in ("key_id", "public_key", "value"))):
        raise PackageInvalid(path, "manifest.json field signature: expected {key_id, public_key, value}")
    carried = AnchorKey.from_public_b64(sig["public_key"], f"{path}: manifest signature.public_key")
    if carried.key_id != sig["key_id"]:
        raise PackageInvalid(path, "the signature's key_id is not its public key's")
    if trusted is not None and trusted.key_id != carried.key_id:
        raise PackageInvalid(path, f"signed by {carried.key_id}, not by the required key {trusted.key_id}")
    if not (trusted or carried).verifies_bytes(_signed_message(manifest), sig["value"]):
        raise PackageInvalid(path, f"the manifest's signature by {carried.key_id} does not verify (edited)")
    if trusted is not None:
        return carried.key_id, f"signed by {carried.key_id} (your key)"
    return carried.key_id, f"signed by {carried.key_id} (the key the package carries; pass --key to require yours)"


def _blobs(path: Path, members: Mapping[str, bytes]) -> dict[str, bytes]:
    blobs = {}
    for name, data in members.items():
        m = BLOB_MEMBER.fullmatch(name)
        if m is not None:
            if sha256_hex(data) != m.group(1):
                raise PackageInvalid(path, f"blob {name} does not hash to its name (edited)")
            blobs["sha256:" + m.group(1)] = data
    return blobs


def _runs(path: Path, data: bytes) -> list[RunInfo]:
    try:
        doc = json.loads(data)
        runs = [
            RunInfo(
                str(r["run_id"]),
                str(r["created_at"]),
                str(r["task"]),
                r["parent_run"],
                int(r["head_seq"]),
                str(r["head_hash"]),
            )
            for r in doc
        ]
    except (ValueError, TypeError, KeyError) as e:
        raise PackageInvalid(path, f"runs.json: expected a list of runs ({e})") from None
    if not runs or any(r.parent_run is not None and not isinstance(r.parent_run, str) for r in runs):
        raise PackageInvalid(path, "runs.json: expected a non-empty list of runs")
    return runs


def _rows(path: Path, data: bytes) -> list[tuple[Any, ...]]:
    rows = []
    keys = ("run_id", "seq", "ts", "kind", "payload", "prev_hash", "hash")
    for n, line in enumerate(data.split(b"\n")[:-1], 1):
        try:
            d = json.loads(line)
            row = tuple(d[k] for k in keys)
        except (ValueError, TypeError, KeyError) as e:
            raise PackageInvalid(path, f"events.jsonl line {n}: expected an event object ({e})") from None
        if not isinstance(d, dict) or set(d) != set(keys):
            raise PackageInvalid(path, f"events.jsonl line {n}: expected exactly the fields {', '.join(keys)}")
        rows.append(row)
    if not data.endswith(b"\n") and data:
        raise PackageInvalid(path, "events.jsonl does not end with a newline (truncated)")
    return rows


def _check_chain(path: Path, manifest: Mapping[str, Any], runs: list[RunInfo], rows: list[tuple[Any, ...]]) -> None:
    main = runs[-1]
    head = manifest["head"]
    if manifest["run_id"] != main.run_id or (head.get("seq"), head.get("hash")) != (main.head_seq, main.head_hash):
        raise PackageInvalid(path, "runs.json does not end with the manifest's run and head")
    if manifest["events"] != len(rows):
        raise PackageInvalid(path, f"the manifest says {manifest['events']} events; events.jsonl has {len(rows)}")
    known = {r.run_id for r in runs}
    if any(row[0] not in known for row in rows):
        raise PackageInvalid(path, "events.jsonl holds an event of a run runs.json does not list")
    try:
        verify_rows(main, rows)
    except LogCorrupt as e:
        raise PackageInvalid(path, f"the chain does not verify: {e}") from None
    for info in runs[:-1]:  # each parent's head in runs.json is one of the verified events
        if not any((row[0], row[1], row[6]) == (info.run_id, info.head_seq, info.head_hash) for row in rows):
            raise PackageInvalid(path, f"runs.json head of {info.run_id} is not an event of the package")


def _check_contents(path: Path, package: Package, members: Mapping[str, bytes]) -> None:
    """What the log says agrees with the reader's copies: the envelope, the start snapshot and its blobs."""
    try:
        events = [Event(r[0], r[1], r[2], r[3], json.loads(r[4]), r[5], r[6]) for r in package.rows]
        state = RunState.from_events(events)
    except (TetherError, ValueError, KeyError) as e:
        raise PackageInvalid(path, f"the log cannot be read: {e}") from None
    for name, recorded in (("envelope.json", state.envelope), ("plan.json", _plan(events))):
        try:
            same = json.loads(members[name]) == recorded
        except ValueError:
            same = False
        if not same:
            raise PackageInvalid(path, f"{name} is not what the log records")
    if package.manifest.get("start_snapshot") != state.baseline:
        raise PackageInvalid(path, "the manifest's start_snapshot is not the one the log records")
    withheld, missing = package.manifest["withheld_blobs"], set(package.manifest["missing_blobs"])
    if state.baseline is not None:
        data = package.blobs.get(state.baseline)
        if data is None:
            raise PackageInvalid(path, f"the start snapshot {state.baseline} is not in the package")
        try:
            start = Manifest.from_json(data)
        except SnapshotError as e:
            raise PackageInvalid(path, f"the start snapshot is malformed: {e}") from None
        lacking = [e.path for e in start.entries.values() if e.digest not in package.blobs]
        undeclared = [p for p in lacking if start.entries[p].digest not in withheld | missing]
        if undeclared:
            raise PackageInvalid(path, f"the start snapshot's content of {', '.join(undeclared[:5])} is missing")
        if lacking:
            package.warnings.append(
                f"{len(lacking)} file(s) of the starting workspace are not in the package "
                f"(withheld or too large to store): {', '.join(sorted(lacking)[:5])}"
            )
    if withheld:
        package.warnings.append(f"{len(withheld)} blob(s) were withheld on export (they held a host secret)")


def import_package(store: Store, path: Path, *, trusted: AnchorKey | None = None, limits: Limits = Limits()) -> Package:
    """Verify ``path`` whole, then add its run (and the parent prefix it shares) to ``store`` in one transaction."""
    package = read_package(path, trusted=trusted, limits=limits)
    try:
        origin = f"the package {Path(path).name}, {package.signature_note}"
        store.adopt(package.runs, package.rows, package.blobs.values(), origin=origin)
    except LogCorrupt as e:
        raise PackageInvalid(path, f"the chain does not verify in the store: {e}") from None
    return package
