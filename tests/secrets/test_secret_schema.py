"""The secret handle in the envelope: what loads, and what is refused with the field and the reason."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from tether.envelope.schema import Environment, Secret, SecretInject


def env(*secrets: dict[str, Any], env_allow: list[str] | None = None) -> Environment:
    return Environment.model_validate({"secrets": list(secrets), "env_allow": env_allow or []})


def test_old_documents_load_and_deliver_as_the_name() -> None:
    data = {"name": "gh", "source": "env:GITHUB_TOKEN", "tools": ["bash"], "hosts": ["api.github.com"]}
    s = Secret.model_validate(data)
    assert s.delivery == SecretInject(env="gh") and s.source_kind == "env" and s.source_ref == "GITHUB_TOKEN"


def test_file_source_and_file_delivery() -> None:
    s = Secret.model_validate({"name": "k", "source": "file:/etc/k", "tools": ["bash"], "inject": {"file": "k.pem"}})
    assert (s.source_kind, s.source_ref, s.delivery.file) == ("file", "/etc/k", "k.pem")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("source", "ghp_literal_value_pasted"),
        ("source", "env:"),
        ("source", "env:A-B"),
        ("source", "file:relative/path"),
        ("source", "https://vault/x"),
        ("name", "my token"),
        ("name", "1st"),
        ("hosts", ["https://api.github.com"]),
        ("hosts", ["api.github.com:443"]),
        ("hosts", ["*.github.com"]),
        ("hosts", ["10.0.0.1"]),
        ("hosts", ["API.GitHub.com"]),
        ("inject", {}),
        ("inject", {"env": "A", "file": "a"}),
        ("inject", {"file": "../../etc/passwd"}),
        ("inject", {"file": "a/b"}),
        ("inject", {"env": "not a name"}),
    ],
)
def test_bad_field_is_named(field: str, value: Any) -> None:
    data: dict[str, Any] = {"name": "gh", "source": "env:GH", "tools": ["bash"], field: value}
    with pytest.raises(ValidationError) as info:
        Secret.model_validate(data)
    assert info.value.errors()[0]["loc"][0] == field


@pytest.mark.parametrize(
    ("secrets", "env_allow", "says"),
    [
        ([{"name": "a", "source": "env:A"}, {"name": "a", "source": "env:B"}], [], "share the name"),
        ([{"name": "a", "source": "env:A"}, {"name": "b", "source": "env:B", "inject": {"env": "a"}}], [], "env a"),
        (
            [
                {"name": "a", "source": "env:A", "inject": {"file": "f"}},
                {"name": "b", "source": "env:B", "inject": {"file": "f"}},
            ],
            [],
            "file f",
        ),
        ([{"name": "a", "source": "env:A", "inject": {"env": "PATH"}}], [], "sandbox sets itself"),
        ([{"name": "a", "source": "env:A", "inject": {"env": "LD_PRELOAD"}}], [], "sandbox sets itself"),
        ([{"name": "a", "source": "env:GH_TOKEN"}], ["GH_TOKEN"], "env_allow lists GH_TOKEN"),
    ],
)
def test_environment_refuses_overlaps(secrets: list[dict[str, Any]], env_allow: list[str], says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        env(*secrets, env_allow=env_allow)


def test_secrets_for_names_only_the_listed_tools() -> None:
    e = env({"name": "a", "source": "env:A", "tools": ["bash"]}, {"name": "b", "source": "env:B", "tools": ["http"]})
    assert [s.name for s in e.secrets_for("bash")] == ["a"] and e.secrets_for("read_file") == []
