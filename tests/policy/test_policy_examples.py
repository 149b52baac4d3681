"""Rules test themselves: examples that do not hold are problems with exact JSON paths."""

from __future__ import annotations

from tether.envelope.schema import Effect, Envelope, Permissions, PlanRef, ToolContract
from tether.policy.examples import check_rule_examples


def env(**perms: object) -> Envelope:
    return Envelope(
        plan=PlanRef(path="p", hash="sha256:" + "0" * 64),
        tools=[
            ToolContract(name="bash", purpose="s", effects=[Effect.EXEC]),
            ToolContract(name="write_file", purpose="w", effects=[Effect.WRITE]),
        ],
        permissions=Permissions.model_validate(perms),
    )


def test_examples_that_hold_give_no_problems() -> None:
    e = env(
        deny=[
            {
                "id": "no-push",
                "rule": "bash(git push:*)",
                "match": ["git push", "cd x && /usr/bin/git -C . push origin", {"command": "bash -c 'git push'"}],
                "not_match": ["git status", "echo git push"],
            }
        ],
        allow=[{"id": "src", "rule": "write_file(src/**)", "match": ["src/a/b.py"], "not_match": ["docs/x.md"]}],
    )
    assert check_rule_examples(e, "env.yaml") == []


def test_examples_that_fail_are_reported_with_paths() -> None:
    e = env(
        ask=[
            {"id": "a", "rule": "bash(npm publish)", "match": ["npm publish --tag beta"], "not_match": ["npm publish"]}
        ],
        deny=[
            {"id": "ok", "rule": "bash"},
            {"id": "bad", "rule": "bash(", "match": ["x"]},
            {"id": "ghost", "rule": "deploy(prod)"},
            {"id": "weird", "rule": "bash(ls)", "match": [3]},
        ],
    )
    problems = check_rule_examples(e, "env.yaml")
    paths = [p.path for p in problems]
    assert paths == [
        "$.permissions.deny[1].rule",
        "$.permissions.deny[2].rule",
        "$.permissions.deny[3].match[0]",
        "$.permissions.ask[0].match[0]",
        "$.permissions.ask[0].not_match[0]",
    ]
    assert all(p.file == "env.yaml" for p in problems)
