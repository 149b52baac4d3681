"""Binding skills to a task: the few whose name and description match it best, by BM25.

The model is shown only the bound skills' names and descriptions (it loads a body when it needs
one), so binding keeps the prompt small however many skills are installed. Scoring is Okapi BM25's
"plus" variant (``rank_bm25.BM25Plus``), whose term weights stay positive in a catalog of two or three
skills (plain Okapi gives a term found in half the documents a weight of zero or less). A skill that shares
no word with the task is never bound by score, however the ranking falls. The envelope's ``pin``
binds a skill whatever its score; ``forbid`` keeps one out whatever its score or pin.

Words are lower-cased runs of letters and digits, less a short list of English function words, with
a plural ``s`` dropped; it is lexical matching, not understanding.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tether.errors import Problem

from .catalog import Catalog, Skill

_FUNCTION_WORDS = (
    "a an and are as at be by can do does for from has have how i in into is it its me my of on or our so that the "
    "their them then there these this to use used uses using was we when where which while who will with you your"
)
STOPWORDS = frozenset(_FUNCTION_WORDS.split())
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Bound:
    """A skill bound to the run, and why: ``pinned``, or its score and the task words it matched."""

    skill: Skill
    score: float
    why: str


@dataclass(frozen=True)
class Binding:
    bound: tuple[Bound, ...]
    ranked: tuple[tuple[str, float, tuple[str, ...]], ...]
    """Every skill considered, best first: name, score, the task words it shares."""
    problems: tuple[Problem, ...]


def words(text: str) -> list[str]:
    out = []
    for w in _WORD.findall(text.lower()):
        if w in STOPWORDS:
            continue
        out.append(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w)
    return out


def _document(skill: Skill) -> list[str]:
    return words(skill.name.replace("-", " ") + " " + skill.description)


def rank(catalog: Catalog, task: str) -> list[tuple[Skill, float, tuple[str, ...]]]:
    """Every skill with its BM25 score for ``task`` and the task words it contains, best first (ties by name)."""
    from rank_bm25 import BM25Plus  # numpy underneath: imported when skills are ranked, not with the CLI

    skills = list(catalog.skills)
    if not skills:
        return []
    docs = [_document(s) for s in skills]
    query = list(dict.fromkeys(words(task)))
    scores = BM25Plus(docs).get_scores(query) if query else [0.0] * len(skills)
    rows = []
    for skill, doc, score in zip(skills, docs, scores, strict=True):
        shared = tuple(w for w in query if w in set(doc))
        rows.append((skill, round(float(score), 4) if shared else 0.0, shared))
    return sorted(rows, key=lambda r: (-r[1], r[0].name))


def bind(
    catalog: Catalog,
    task: str,
    *,
    limit: int,
    pin: Sequence[str] = (),
    forbid: Sequence[str] = (),
    field: str = "$.skills",
) -> Binding:
    """The pinned skills, then the best-scoring ones sharing a word with the task, up to ``limit`` in all.

    A pinned or forbidden name that no skill has is a problem (a typo in the envelope should show).
    """
    problems = list(catalog.problems)
    for key, names in (("pin", pin), ("forbid", forbid)):
        for i, name in enumerate(names):
            if catalog.named(name) is None:
                problems.append(Problem(f"{field}.{key}[{i}]", repr(name), "the name of a skill that was found"))
    ranked = rank(catalog, task)
    bound: list[Bound] = []
    for name in pin:
        skill = catalog.named(name)
        if skill is not None and name not in forbid and all(b.skill.name != name for b in bound):
            bound.append(Bound(skill, next(r[1] for r in ranked if r[0].name == name), "pinned by the envelope"))
    for skill, score, shared in ranked:
        if len(bound) >= limit:
            break
        if score <= 0 or skill.name in forbid or any(b.skill.name == skill.name for b in bound):
            continue
        bound.append(Bound(skill, score, f"BM25 {score:.2f} on: {', '.join(shared)}"))
    return Binding(tuple(bound), tuple((s.name, score, shared) for s, score, shared in ranked), tuple(problems))
