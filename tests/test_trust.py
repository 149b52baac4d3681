"""The trust field of a tool contract and its default table (docs/trust.md)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tether.envelope import ToolContract, Trust, trust_of
from tether.envelope.schema import Envelope, PlanRef
from tether.tools.contract import tool


def _contract(name: str, effects: list[str], trust: str | None = None) -> ToolContract:
    return ToolContract.model_validate({"name": name, "purpose": "p", "effects": effects, "trust": trust})


def _env(workspace: str = "trusted") -> Envelope:
    return Envelope(plan=PlanRef(path="p", hash="h"), environment={"trust": {"workspace": workspace}})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "name",
    [
        "web_fetch",
        "WebFetch",
        "get_webpage",
        "fetch_url",
        "list_issues",
        "get_received_emails",
        "read_inbox",
        "read_channel_messages",
        "mcp__github__get_issue",
        "mcp.search",
    ],
)
def test_third_party_tools_are_untrusted_by_default(name: str) -> None:
    assert trust_of(_contract(name, ["read"])) is Trust.UNTRUSTED


def test_a_page_of_an_earlier_result_is_untrusted_whatever_it_pages() -> None:
    assert trust_of(_contract("read_result", ["read"]), _env()) is Trust.UNTRUSTED


def test_a_tool_reaching_outside_is_untrusted_and_a_local_one_trusted() -> None:
    assert trust_of(_contract("lookup", ["network"])) is Trust.UNTRUSTED
    assert trust_of(_contract("lookup", ["read"])) is Trust.TRUSTED


def test_workspace_tools_follow_the_envelope_and_the_contract_wins() -> None:
    assert trust_of(_contract("read_file", ["read"]), _env()) is Trust.TRUSTED
    assert trust_of(_contract("bash", ["exec"]), _env("untrusted")) is Trust.UNTRUSTED
    assert trust_of(_contract("web_fetch", ["read"], "trusted")) is Trust.TRUSTED
    assert trust_of(_contract("read_file", ["read"], "untrusted"), _env()) is Trust.UNTRUSTED


def test_a_bad_trust_value_names_the_field() -> None:
    with pytest.raises(ValidationError) as e:
        _contract("t", ["read"], "maybe")
    assert "trust" in str(e.value) and "untrusted" in str(e.value)


def test_the_decorator_states_trust() -> None:
    @tool(effects=["read"], trust="untrusted")
    def get_page(url: str) -> str:
        """Fetch a page."""
        return url

    assert get_page.contract.trust is Trust.UNTRUSTED
