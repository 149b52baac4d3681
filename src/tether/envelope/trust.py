"""Whose words a tool's output carries: the contract's ``trust``, or the default table.

A tool's output is *untrusted* when a third party could have written it: a web page, an issue, an e-mail,
a chat message, an MCP server's result. The agent may read such text, but it is data, never instructions:
it reaches the model labelled (``policy/provenance.py``) and a value that first appeared in it cannot steer
a side-effecting call without a human seeing it (docs/trust.md).

Resolution, first answer wins:

1. the contract's own ``trust`` (the envelope's word is final);
2. a built-in workspace tool (files, search, shell, git): ``environment.trust.workspace``, the user's by
   default, since the workspace is the user's;
3. a name from the table below (web fetches, issue trackers, mail, chat, MCP results): untrusted;
4. a tool whose effects reach outside the workspace (network, shared, published, financial, credentialed):
   untrusted, since whatever it returns came from outside;
5. anything else: trusted (a host tool of the user's own).
"""

from __future__ import annotations

import re

from .schema import Envelope, ToolContract, Trust

#: The built-in tools that read or run what is in the workspace; their output is the workspace's.
WORKSPACE_TOOLS = frozenset(
    {"read_file", "list_dir", "search", "write_file", "edit_file", "bash", "git_diff", "run_tests", "finish"}
)

#: The model's own records (plan, hypotheses): its words, checked against the user's elsewhere.
MODEL_TOOLS = frozenset({"plan", "hypothesis"})

#: Name fragments of tools whose output carries third-party content (matched case-insensitively anywhere in
#: the name): web fetches and browsers, issue trackers and code review, mail, chat, feeds, MCP servers.
UNTRUSTED_NAMES = re.compile(
    r"web|fetch|http|url|brows|scrape|crawl|issue|ticket|pull_?request|review_comment|comment|e-?mail|mail|inbox"
    r"|message|slack|chat|channel|feed|rss|^mcp(__|\.|_)",
    re.IGNORECASE,
)


def default_trust(contract: ToolContract) -> Trust:
    """The default table (steps 3-5 of the module docstring) for a tool that is not a built-in workspace tool."""
    if UNTRUSTED_NAMES.search(contract.name) or contract.external_output:
        return Trust.UNTRUSTED
    return Trust.TRUSTED


def trust_of(contract: ToolContract, env: Envelope | None = None) -> Trust:
    """The trust of ``contract``'s output under ``env`` (see the module docstring for the order)."""
    if contract.trust is not None:
        return contract.trust
    if contract.name in WORKSPACE_TOOLS or contract.name in MODEL_TOOLS:
        return env.environment.trust.workspace if env is not None else Trust.TRUSTED
    return default_trust(contract)
