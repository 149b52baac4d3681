"""A plain process (tether/plain.py) never removes a fold checkpoint: the full path decides that (redteam5).

Found: a checkpoint's trial runs in a forked child of the deciding process (guard/checkpoint.py); in a plain
process that child loads plain records, and whatever a plain record is unsure of there (an Unsure, a
BaseException: the child left with code 3), or fails where pydantic does not, fails the trial — and the parent
removed the file as a forgery (65e53d5), a file the full path might load and keep. Here: a body holding a set of an
envelope rule whose pickled state lacks its list fields passes its trial under pydantic (which hashes such a state)
and fails it in a plain process; a plain process that would remove the file is now Unsure instead (the call goes
to the full path, which tries the body itself).
"""

from __future__ import annotations

import base64
import pickle
from pathlib import Path

from test_plain_records import in_plain

from tether.envelope.schema import Rule
from tether.guard import checkpoint as ck

PLAIN = """
import base64, json, os, sys
from tether import plain
assert plain.choose()
import tether.envelope.schema
from tether.guard import checkpoint as ck
from tether.plainrecord import Unsure
job = json.load(sys.stdin)
body = base64.b64decode(job["body"])
out = {"tried": ck.tried(body)}
st = os.stat(job["path"])
pending = ck.Pending(b"", None, (st.st_ino, st.st_size, st.st_mtime_ns))
try:
    pending.discard(job["path"])
    out["discard"] = "done"
except Unsure:
    out["discard"] = "unsure"
out["kept"] = os.path.exists(job["path"])
out["pydantic"] = sorted(m for m in sys.modules if m.startswith("pydantic"))
print(json.dumps(out))
"""


def lacking_body() -> bytes:
    state = Rule(id="r", rule="allow", reason="x").__getstate__()
    state["__dict__"] = {k: v for k, v in state["__dict__"].items() if k in ("id", "rule", "reason")}
    lacking = Rule.__new__(Rule)
    lacking.__setstate__(state)
    return pickle.dumps({"beside": frozenset({lacking})}, protocol=5)


def test_a_plain_process_leaves_a_checkpoint_it_doubts_to_the_full_path(tmp_path: Path) -> None:
    body = lacking_body()
    assert ck.tried(body), "pydantic loads and walks it"
    path = tmp_path / "session.ckpt"
    path.write_bytes(ck.MAGIC + b"{}\n" + body)
    got = in_plain({"body": base64.b64encode(body).decode(), "path": str(path)}, PLAIN)
    assert got["tried"] is False, "a plain record doubts its hash: the plain trial fails where pydantic's passes"
    assert got == {"tried": False, "discard": "unsure", "kept": True, "pydantic": []}
    assert path.exists()
