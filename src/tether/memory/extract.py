"""Which of a user's sentences are facts worth remembering: a deterministic, lexical rule, not understanding.

Only text a human wrote is read — the task (``run.started``), a note given when continuing a run
(``run.continued``) and the reason a human gave for declining an action (``approval.denied``); never a tool's
output, a model's words or a file from the workspace (:data:`USER_TEXT` is the whole list). From that text,
code blocks are dropped and the rest is cut into sentences (at ``.``, ``!`` or ``?`` before a space, and at
line ends and list bullets). A sentence is kept as a fact when it

- is not a question (does not end with ``?``),
- is a standing rule (starts ``always``, ``never``, ``don't``, ``do not``), or else
- does not start with a request verb (``fix``, ``add``, ``please`` …: :data:`REQUESTS`) — those say what
  to do now, not what is true — and looks like a statement: it starts with a subject word (``the``,
  ``our``, ``we``, ``it`` …: :data:`SUBJECTS`) or has a linking verb or modal after its first word
  (``is``, ``are``, ``must`` …: :data:`LINKING`),
- has 3 to 60 words and at most 400 characters, and is not a heading (ending with ``:``).

So "Our staging server listens on port 8080.", "Python 3.11 is required." and "Never edit the generated
files." are kept; "Fix the parser.", "Carry on with the fix." and "Why does it fail?" are not, and neither
is "Postgres runs on 5432." (no subject word, no linking verb). It keeps some sentences a person would not
call facts and misses others; the user sees every one (``tether memory list``) and can forget it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: Event kind -> the payload field holding text a human wrote, and what to call that source.
USER_TEXT: dict[str, tuple[str, str]] = {
    "run.started": ("task", "task"),
    "run.continued": ("note", "note"),
    "approval.denied": ("reason", "note"),
}
_REQUEST_VERBS = (
    "add build can change check clean could create debug delete do document ensure explain find fix get give go help "
    "implement improve investigate let let's look make move please refactor remove rename replace reproduce "
    "review rewrite run set show start stop tell test try update upgrade verify write"
)
REQUESTS = frozenset(_REQUEST_VERBS.split())
RULES = frozenset({"always", "never", "don't", "dont", "do"})
_SUBJECT_WORDS = (
    "the a an our my your their its his her this that these those we i it they he she there all every each no "
    "some most both none either neither one"
)
SUBJECTS = frozenset(_SUBJECT_WORDS.split())
_LINKING_WORDS = "is are was were am be been isn't aren't wasn't weren't must should shall will cannot can't won't"
LINKING = frozenset(_LINKING_WORDS.split())
MAX_WORDS, MIN_WORDS, MAX_CHARS = 60, 3, 400
MAX_TEXT = 64 * 1024
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_SPLIT = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Stated:
    """A fact as found: its text and the event it was found in."""

    text: str
    seq: int
    source: str


def normal(text: str) -> str:
    """The form two statements of one fact share (case, spacing, final stop): what dedupes and what is forgotten."""
    return " ".join(text.lower().split()).rstrip(".!")


def fact_id(text: str) -> str:
    return "f-" + hashlib.sha256(normal(text).encode()).hexdigest()[:12]


def sentences(text: str) -> list[str]:
    """The sentences of the first :data:`MAX_TEXT` characters (less the one cut there), code blocks dropped."""
    out: list[str] = []
    for line in _FENCE.sub("\n", text[:MAX_TEXT]).splitlines():
        line = _BULLET.sub("", line).strip()
        out += [s.strip() for s in _SPLIT.split(line) if s.strip()]
    return out[:-1] if len(text) > MAX_TEXT else out


def is_fact(sentence: str) -> bool:
    words = sentence.split()
    if not (MIN_WORDS <= len(words) <= MAX_WORDS) or len(sentence) > MAX_CHARS:
        return False
    if sentence.endswith(("?", ":")) or not re.search(r"[A-Za-z]", sentence):
        return False
    lowered = [w.lower().strip(",;:'\"()") for w in words]
    first = lowered[0]
    if first == "do" and lowered[1] != "not":
        return False
    if first in RULES:
        return True
    return first not in REQUESTS and (first in SUBJECTS or not LINKING.isdisjoint(lowered[1:]))


def facts_in(text: str) -> list[str]:
    """The sentences of ``text`` that :func:`is_fact` keeps, each once, in order."""
    seen: dict[str, str] = {}
    for s in sentences(text):
        if is_fact(s):
            seen.setdefault(normal(s), s)
    return list(seen.values())


def stated(events: Sequence[Any]) -> list[Stated]:
    """The facts in the human-written text of ``events`` (objects with ``kind``, ``seq``, ``payload``)."""
    out: list[Stated] = []
    for e in events:
        spec = USER_TEXT.get(e.kind)
        if spec is None:
            continue
        field, source = spec
        text = e.payload.get(field)
        if isinstance(text, str):
            out += [Stated(s, e.seq, source) for s in facts_in(text)]
    return out
