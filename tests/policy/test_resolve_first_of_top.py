"""``resolve`` picks, in the winning layer, the first finding with the winning verdict: written without a generator
that ``next`` would leave open (closing it throws ``GeneratorExit`` into it, once a decision; issue 18). Held here
to the definition with ``next`` for any findings (several rules of one verdict in a layer, so "first" matters)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tether.policy.decision import Decision, Finding, Layer, RuleMatch, Verdict, resolve

DEFAULT = RuleMatch("default", Verdict.ASK, "nothing spoke")


def reference(found: list[Finding], default: RuleMatch) -> Decision:
    """``resolve``'s rule restated with ``next``: the first match of the top verdict in the first layer that spoke
    (HARD only when its top is above ALLOW), else ``default``, added to the matches."""

    def first_top(matches: list[RuleMatch]) -> RuleMatch:
        top = max(m.verdict for m in matches)
        return next(m for m in matches if m.verdict == top)

    by_layer = {layer: [f.match for f in found if f.layer is layer] for layer in Layer}
    hard = by_layer.pop(Layer.HARD)
    spoke = [matches for matches in by_layer.values() if matches]
    if hard and max(m.verdict for m in hard) > Verdict.ALLOW:
        chosen = first_top(hard)
    else:
        chosen = first_top(spoke[0]) if spoke else default
    every = [f.match for f in found] + ([default] if chosen is default else [])
    return Decision(chosen.verdict, chosen.id, chosen.reason, tuple(dict.fromkeys(every)))


findings = st.lists(
    st.builds(
        Finding,
        st.builds(RuleMatch, st.sampled_from(["a", "b", "c", "d"]), st.sampled_from(list(Verdict)), st.just("r")),
        st.sampled_from(list(Layer)),
    ),
    max_size=8,
)


@given(findings)
def test_resolve_is_its_definition(found: list[Finding]) -> None:
    assert resolve(found, DEFAULT) == reference(found, DEFAULT)


def test_the_first_of_the_top_verdict_decides() -> None:
    first, second = RuleMatch("first", Verdict.ASK, "1"), RuleMatch("second", Verdict.ASK, "2")
    found = [
        Finding(RuleMatch("low", Verdict.ALLOW, "0"), Layer.USER),
        Finding(first, Layer.USER),
        Finding(second, Layer.USER),
    ]
    assert resolve(found, DEFAULT).deciding_rule == "first"
