"""The envelope: the compiled, versioned runtime contract.

Pydantic models with unknown keys rejected. Fields that strict validation
requires to be *stated* (boundaries, budgets) are optional here so that a
schema-only validation can still load a draft; ``strict.py`` insists on them.
"""

import re
from enum import StrEnum

from tether.plain import Any, BaseModel, ConfigDict, Field, Literal, field_validator, model_validator  # typing's
from tether.quickenum import Quick


def new_list() -> list[Any]:
    """A fresh ``[]``, as a field's default factory (why not ``list``: :func:`tether.events.payload.new_dict`)."""
    return []


def new_dict() -> dict[Any, Any]:
    """A fresh ``{}``, as a field's default factory (why not ``dict``: :func:`tether.events.payload.new_dict`)."""
    return {}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Effect(StrEnum, metaclass=Quick):
    """What a tool may do to the world. Anything beyond ``read`` needs a full contract."""

    READ = "read"
    WRITE = "write"
    EXEC = "exec"
    NETWORK = "network"
    EXTERNAL = "external"
    IRREVERSIBLE = "irreversible"
    FINANCIAL = "financial"
    CREDENTIALED = "credentialed"
    PUBLISHED = "published"


class ApprovalClass(StrEnum, metaclass=Quick):
    """Effect classes that may require a human. ``shared`` covers the ``external`` effect."""

    IRREVERSIBLE = "irreversible"
    SHARED = "shared"
    FINANCIAL = "financial"
    PUBLISHED = "published"
    CREDENTIALED = "credentialed"


EFFECT_APPROVAL_CLASS: dict[Effect, ApprovalClass] = {
    Effect.IRREVERSIBLE: ApprovalClass.IRREVERSIBLE,
    Effect.EXTERNAL: ApprovalClass.SHARED,
    Effect.FINANCIAL: ApprovalClass.FINANCIAL,
    Effect.PUBLISHED: ApprovalClass.PUBLISHED,
    Effect.CREDENTIALED: ApprovalClass.CREDENTIALED,
}


EXTERNAL_OUTPUT_EFFECTS = frozenset(
    {Effect.NETWORK, Effect.EXTERNAL, Effect.PUBLISHED, Effect.FINANCIAL, Effect.CREDENTIALED}
)
"""Effects that reach beyond the workspace: a call with any of them is an external output (``outputs.max_external``)."""


class PlanRef(Strict):
    path: str = Field(description="Intent plan path, relative to the envelope file.")
    hash: str = Field(description="sha256:<hex> of the plan's canonical JSON.")


ProviderProfile = Literal["openai", "anthropic", "llama.cpp", "vllm", "ollama", "lmstudio", "litellm", "local"]


class ContextSettings(Strict):
    """When and how the model's context is compacted (docs/context.md)."""

    compact_at: float = Field(
        0.7, gt=0, le=1, description="Compact when the prompt exceeds this fraction of the model's window."
    )
    keep_turns: int = Field(3, ge=1, description="The last turns kept whole by a compaction.")
    summary: Literal["model", "digest"] = Field(
        "model", description="Who summarises older turns: the model (digest when it cannot), or always the digest."
    )
    summary_tokens: int = Field(1024, ge=64, description="The output budget of the model's summary.")


class Agent(Strict):
    model: str = Field("scripted:trajectory.yaml", description="scripted:FILE | openai:MODEL | anthropic:MODEL")
    instructions: str = ""
    max_turns: int = Field(30, ge=1)
    max_output_tokens: int | None = Field(
        None, ge=1, description="Output tokens per call; default: the model's limit, capped by what fits."
    )
    context_window: int | None = Field(
        None, ge=1, description="The model's context window in tokens; default: the model table (local: unknown)."
    )
    request_timeout_s: float = Field(120, gt=0, description="Seconds one model request may take, all of it.")
    provider_profile: ProviderProfile | None = Field(
        None, description="What the server accepts (docs/providers.md); default: detected from the base URL."
    )
    context: ContextSettings | None = Field(None, description="Compaction settings; default: ContextSettings().")


class Sandbox(Strict):
    backend: Literal["bwrap", "local"] = "bwrap"
    required: bool = True


class Filesystem(Strict):
    read: list[str] = Field(description="Globs (relative to the workspace) the agent may read.")
    write: list[str] = Field(description="Globs the agent may write.")
    deny: list[str] = Field(default_factory=new_list, description="Globs never read or written.")


class Network(Strict):
    allow: list[str] = Field(
        description="Host names reachable through the egress proxy (HOST, HOST:PORT, *.DOMAIN; see docs/egress.md); "
        "empty means none."
    )
    allow_loopback: bool = Field(
        False,
        description="For local servers and tests only: a listed name may resolve to a loopback address "
        "(127.0.0.0/8, ::1). Every other private or special address stays refused.",
    )


SECRET_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
"""A secret's handle and an environment variable's name: an identifier (so the name can be the default variable)."""

RESERVED_ENV = frozenset(
    {"PATH", "HOME", "TMPDIR", "USER", "LOGNAME", "LANG", "SHELL", "PYTHONPATH", "PYTHONHOME", "BASH_ENV", "ENV"}
)
"""Variables a secret may not be injected as: the sandbox sets them, or they make a shell or loader run code."""

SECRET_FILE = r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$"
HOST_NAME = r"^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$"


class SecretInject(Strict):
    """How a secret reaches the tool's sandbox: exactly one of an environment variable or a file.

    ``file`` names a file on a private tmpfs inside the sandbox, ``/run/secrets/<file>``, mode 0400: the value
    is then never in the command's environment, which child processes inherit and ``env`` prints.
    """

    env: str | None = Field(None, pattern=SECRET_NAME, description="The environment variable that holds the value.")
    file: str | None = Field(None, pattern=SECRET_FILE, description="A file name under /run/secrets in the sandbox.")

    @model_validator(mode="after")
    def _one(self) -> "SecretInject":
        if (self.env is None) == (self.file is None):
            raise ValueError("exactly one of 'env' (a variable name) or 'file' (a file name under /run/secrets)")
        return self


SECRETS_DIR = "/run/secrets"
"""Where ``inject: {file: …}`` puts a secret inside the sandbox (a private tmpfs)."""


class Secret(Strict):
    """A brokered credential: the host resolves ``source`` only when one of ``tools`` is about to run and hands
    the value to that call's sandbox alone (docs/secrets.md). The model only ever sees ``[secret:NAME]``."""

    name: str = Field(pattern=SECRET_NAME, description="Handle the agent refers to; never the literal value.")
    source: str = Field(description="Where the host reads it: env:VAR (its environment) or file:/ABSOLUTE/PATH.")
    tools: list[str] = Field(default_factory=new_list, description="Tools whose calls receive it; no other call does.")
    hosts: list[str] = Field(default_factory=new_list, description="Host names it may be sent to (the egress proxy).")
    inject: SecretInject | None = Field(None, description="How the tool receives it; default: env var NAME.")

    @field_validator("source")
    @classmethod
    def _source(cls, value: str) -> str:
        scheme, _, rest = value.partition(":")
        if scheme == "env" and re.fullmatch(SECRET_NAME, rest):
            return value
        if scheme == "file" and rest.startswith(("/", "~/")) and "\0" not in rest:
            return value
        raise ValueError(
            "a handle 'env:VARIABLE' (a host environment variable) or 'file:/absolute/path' (or file:~/path), "
            "never a literal value"
        )

    @field_validator("hosts")
    @classmethod
    def _hosts(cls, value: list[str]) -> list[str]:
        bad = [h for h in value if not re.fullmatch(HOST_NAME, h) or h.rsplit(".", 1)[-1].isdigit()]
        if bad:
            raise ValueError(f"host names (lower case; no IP literal, scheme, port, path or wildcard); got {bad}")
        return value

    @property
    def delivery(self) -> SecretInject:
        """How the value is handed over: as stated, else the environment variable named like the secret."""
        return self.inject or SecretInject(env=self.name)

    @property
    def source_kind(self) -> Literal["env", "file"]:
        return "env" if self.source.startswith("env:") else "file"

    @property
    def source_ref(self) -> str:
        """The variable name or the path, without the scheme."""
        return self.source.partition(":")[2]


class Trust(StrEnum, metaclass=Quick):
    """Whose words a tool's output carries: the user's (``trusted``) or a third party's (``untrusted``).

    Untrusted output reaches the model labelled as data, and a value that first appeared in it cannot steer
    a side-effecting call without a human seeing it (docs/trust.md).
    """

    TRUSTED = "trusted"
    UNTRUSTED = "untrusted"


class TrustSettings(Strict):
    workspace: Trust = Field(
        Trust.TRUSTED,
        description="Trust of the built-in workspace tools' output (files, search, shell): the user's by default.",
    )


class Environment(Strict):
    workspace: str = "."
    trust: TrustSettings = Field(default_factory=TrustSettings)
    sandbox: Sandbox = Field(default_factory=Sandbox)
    filesystem: Filesystem | None = None
    network: Network | None = None
    secrets: list[Secret] | None = None
    env_allow: list[str] = Field(default_factory=new_list, description="Extra host env vars passed to commands.")

    def secrets_for(self, tool: str) -> list[Secret]:
        """The secrets a call of ``tool`` carries (declared with it in ``tools``); no other call gets any."""
        return [s for s in self.secrets or () if tool in s.tools]

    @model_validator(mode="after")
    def _secrets_apart(self) -> "Environment":
        """Each secret has its own name and its own place in the sandbox, and never also rides ``env_allow``
        (which hands a variable to every command, in the clear, whichever tool runs)."""
        seen: dict[str, str] = {}
        for s in self.secrets or ():
            d = s.delivery
            where = f"env {d.env}" if d.env is not None else f"file {d.file}"
            for key, what in ((f"name {s.name}", "name"), (where, "delivery")):
                if key in seen:
                    raise ValueError(f"secrets {seen[key]!r} and {s.name!r} share the {what} ({key})")
                seen[key] = s.name
            if d.env is not None and (d.env in RESERVED_ENV or d.env.startswith("LD_")):
                raise ValueError(f"secret {s.name!r}: inject.env {d.env} is a variable the sandbox sets itself")
            if s.source_kind == "env" and s.source_ref in self.env_allow:
                raise ValueError(
                    f"env_allow lists {s.source_ref}, the source of secret {s.name!r}: it would reach every command "
                    f"unbrokered; remove it from env_allow (the secret reaches the tools it names)"
                )
        return self


class OnFailure(StrEnum, metaclass=Quick):
    RETURN_ERROR = "return_error"
    RETRY = "retry"
    STOP = "stop"


class ToolContract(Strict):
    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.-]*$")
    purpose: str
    effects: list[Effect] = Field(min_length=1)
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    timeout_s: float | None = Field(None, gt=0)
    idempotent: bool | None = None
    on_failure: OnFailure | None = None
    evidence: list[str] | None = None
    rollback: str | None = Field(None, description="How to undo: 'none' only for irreversible tools.")
    trust: Trust | None = Field(
        None, description="Does the output carry third-party content? Unset: the default table (docs/trust.md)."
    )

    @property
    def external_output(self) -> bool:
        """Does a call reach the world outside the workspace (network, shared, published, financial, credentialed)?"""
        return not EXTERNAL_OUTPUT_EFFECTS.isdisjoint(self.effects)

    @property
    def retry_safe(self) -> bool:
        """May a call be run again after a crash left it unfinished? As stated; unstated: only a tool that only reads.

        Reading twice changes nothing, so a read-only tool (read_file, list, search …) is idempotent by
        default; anything with another effect must say so.
        """
        return self.idempotent if self.idempotent is not None else set(self.effects) == {Effect.READ}


#: An MCP tool's name in the envelope: ``mcp__<server>__<tool>`` (the convention Claude Code uses too), so a
#: server's tool can never take the name of a built-in or of another server's tool.
MCP_PREFIX = "mcp__"


def mcp_tool_name(server: str, tool: str) -> str:
    """The envelope's name for ``tool`` of MCP server ``server``."""
    return f"{MCP_PREFIX}{server}__{tool}"


def split_mcp_tool(name: str) -> tuple[str, str] | None:
    """``(server, tool)`` of an envelope tool named ``mcp__<server>__<tool>``; None for any other name."""
    if not name.startswith(MCP_PREFIX):
        return None
    server, sep, tool = name[len(MCP_PREFIX) :].partition("__")
    return (server, tool) if sep and server and tool else None


class McpServer(Strict):
    """An MCP server whose tools the envelope may offer (docs/mcp.md).

    Only the tools the envelope also declares as contracts, named ``mcp__<name>__<tool>``, are offered,
    gated and run; the server's other tools are never shown to the model.
    """

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9-]*$", description="Letters, digits and '-' (no '_').")
    command: list[str] | None = Field(
        None, min_length=1, description="stdio: the server's argv, started in the workspace (in the sandbox)."
    )
    url: str | None = Field(None, pattern=r"^https?://", description="Streamable HTTP: the server's endpoint.")
    env: dict[str, str] = Field(default_factory=new_dict, description="Extra environment for a stdio server.")
    startup_timeout_s: float = Field(30, gt=0, description="Seconds to start, connect and list its tools.")

    @model_validator(mode="after")
    def _one_transport(self) -> "McpServer":
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of command (a stdio server) or url (a streamable HTTP server)")
        return self


class Rule(Strict):
    id: str = Field(pattern=r"^[A-Za-z0-9_.:-]+$")
    rule: str = Field(description="Tool or Tool(specifier), e.g. bash(git push:*), write_file(src/**).")
    reason: str = ""
    when: dict[str, Any] | str = Field(
        default_factory=new_dict,
        description="Argument predicates: {arg: glob}; or tainted(args.NAME, ...) / tainted(args): the argument holds "
        "a value that first appeared in untrusted output (deny and ask rules; docs/trust.md).",
    )
    match: list[Any] = Field(default_factory=new_list, description="Calls this rule must match.")
    not_match: list[Any] = Field(default_factory=new_list, description="Calls it must not match.")


class Permissions(Strict):
    profile: Literal["coding", "none"] = "coding"
    allow: list[Rule] = Field(default_factory=new_list)
    ask: list[Rule] = Field(default_factory=new_list)
    deny: list[Rule] = Field(default_factory=new_list)


class Budgets(Strict):
    usd: float | None = Field(None, ge=0)
    tokens: int | None = Field(None, ge=0)
    turns: int | None = Field(None, ge=0)
    tool_calls: int | None = Field(None, ge=0)
    wall_s: float | None = Field(None, ge=0)
    churn_pct: float | None = Field(
        None, ge=0, description="Changed lines as a share of the touched files' lines (old and new), in percent."
    )
    churn_lines: int | None = Field(None, ge=0, description="Changed lines (inserted + deleted), in all files.")


class Approvals(Strict):
    require_for: list[ApprovalClass] = Field(default_factory=new_list)
    timeout_s: float = Field(3600, gt=0)
    on_timeout: Literal["deny", "stop"] = "deny"


class Outputs(Strict):
    allowed_types: list[str] = Field(default_factory=lambda: ["patch", "report"])
    max_external: int | None = Field(None, ge=0)
    no_op: str | None = Field(
        None, description="When finishing without change is the right answer: a condition (docs/outputs.md)."
    )


class SensorSpec(Strict):
    name: Literal["syntax", "lint", "types", "scoped_tests", "tests", "policy"]
    required: bool = False


class Verification(Strict):
    sensors: list[SensorSpec] = Field(default_factory=new_list)
    test_command: str = "python -m pytest -q"
    tools: dict[str, str] = Field(
        default_factory=new_dict,
        description="Sensor tools by name (ruff, mypy, pyright, the test runner): a path, or a name looked up on "
        "PATH. Unnamed tools are looked for beside tether's own Python, then in the workspace's virtualenv, then PATH.",
    )
    max_refusals: int = Field(2, ge=0, description="Refused completion claims before VERIFY_FAILED.")
    must_fix: Literal["failing", "none"] | list[str] = Field(
        "failing",
        description="Tests that must pass at completion: those failing at the baseline, none, or these node ids.",
    )
    tests_may_change: bool | None = Field(
        None,
        description="May the agent change test files and test configuration? Unset: no when the plan's "
        "constraints forbid editing tests, else yes (a change is then shown, not refused).",
    )
    reviewer_model: str | None = Field(
        None, description="Optional model-based reviewer (scripted:FILE | openai:MODEL | anthropic:MODEL)."
    )


class Retry(Strict):
    max_attempts: int = Field(3, ge=1)
    backoff_s: float = Field(0.5, ge=0)
    backoff_max_s: float = Field(8.0, ge=0)


class Audit(Strict):
    log: str = Field(description="Event store path, relative to the workspace.")


class RecoveryBudget(Strict):
    """What must be left before the recovery ladder may switch to its next strategy."""

    plan_revisions: int = Field(30, ge=0, description="Plan revisions allowed in a run.")
    min_tool_calls: int = Field(3, ge=0, description="Tool calls a new strategy needs left.")
    min_turns: int = Field(2, ge=0, description="Turns a new strategy needs left.")
    min_share: float = Field(0.05, ge=0, le=1, description="Share of the usd and wall-time budgets it needs left.")


class Control(Strict):
    """Diagnostic thresholds for the control-state resolver, and the recovery budget."""

    critical: float = Field(0.15, ge=0, le=1)
    warning: float = Field(0.4, ge=0, le=1)
    recovery: RecoveryBudget = Field(default_factory=RecoveryBudget)


class Risk(StrEnum, metaclass=Quick):
    """A risky setting that strict validation refuses unless the envelope acknowledges it by name."""

    NETWORK_ANY = "network-any"
    """``environment.network.allow`` reaches any host."""
    SHELL_ANY = "shell-any"
    """An allow rule lets the shell tool run any program or inline interpreter code."""
    GIT_WRITABLE = "git-writable"
    """``environment.filesystem.write`` reaches ``.git/`` (hooks and config run code)."""
    NETWORK_LOOPBACK = "network-loopback"
    """``environment.network.allow_loopback``: a listed name may lead to this machine's own services."""


class Acknowledgement(Strict):
    """An explicit, named acceptance of one risk, with the reason; shown in every run's header."""

    risk: Risk
    reason: str = Field(pattern=r"\S", description="Why this contract accepts the risk (not blank).")


class Price(Strict):
    """One model's entry in the model table (docs/providers.md): its price and, when stated, its limits.

    A limit left unset falls through to the next table down (price file, then the built-in one)."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    context_window: int | None = Field(None, gt=0, description="Tokens the model reads and writes in one call.")
    max_output_tokens: int | None = Field(None, gt=0, description="The most tokens it writes in one reply.")


class Skills(Strict):
    """Which skills a run may bind (docs/knowledge.md). Skills are bound when the envelope declares ``load_skill``."""

    dirs: list[str] = Field(
        default_factory=new_list, description="Extra skill directories, relative to the envelope; searched first."
    )
    user: bool = Field(True, description="Search the user's skills ($XDG_CONFIG_HOME/tether/skills).")
    pin: list[str] = Field(default_factory=new_list, description="Skills bound whatever their relevance.")
    forbid: list[str] = Field(default_factory=new_list, description="Skills never bound.")
    max_bound: int = Field(3, ge=0, le=8, description="How many skills a run binds (pinned ones count).")


class Memory(Strict):
    """What a run takes from and gives to the project's memory (docs/knowledge.md)."""

    remember: bool = Field(True, description="Store facts the user states in the task and in human notes.")
    recall: bool = Field(True, description="Offer the project's remembered facts to the model.")
    max_facts: int = Field(20, ge=0, le=200, description="How many remembered facts (the newest) are offered.")


_TOOL_INDEX = "_tool_index"


class Envelope(Strict):
    version: Literal[1] = 1
    plan: PlanRef
    contract_hash: str = ""
    tool_execution_owner: str = "host"
    agent: Agent = Field(default_factory=Agent)
    environment: Environment = Field(default_factory=Environment)
    tools: list[ToolContract] = Field(default_factory=new_list)
    mcp_servers: list[McpServer] = Field(
        default_factory=new_list, description="MCP servers whose declared tools (mcp__<server>__<tool>) are offered."
    )
    permissions: Permissions = Field(default_factory=Permissions)
    budgets: Budgets = Field(default_factory=Budgets)
    approvals: Approvals = Field(default_factory=Approvals)
    outputs: Outputs = Field(default_factory=Outputs)
    verification: Verification = Field(default_factory=Verification)
    retry: Retry = Field(default_factory=Retry)
    audit: Audit | None = None
    control: Control = Field(default_factory=Control)
    pricing: dict[str, Price] = Field(
        default_factory=new_dict,
        description="The model table's entries by model name: USD per million tokens, and optionally the context "
        "window and output limit; wins over pricing_file and the built-in table.",
    )
    pricing_file: str | None = Field(
        None,
        description="A YAML or JSON file of model entries ({model: {input_per_mtok, output_per_mtok, context_window?, "
        "max_output_tokens?}}), relative to the "
        "envelope; it overrides the built-in table, and `pricing` overrides it. Read when the run starts.",
    )
    acknowledge: list[Acknowledgement] = Field(
        default_factory=new_list, description="Risky settings this contract accepts on purpose (see docs/envelope.md)."
    )
    skills: Skills | None = Field(None, description="Skill directories, pins and bans (default: the usual places).")
    memory: Memory | None = Field(None, description="Project memory (default: remember and recall).")

    def tool(self, name: str) -> ToolContract | None:
        """The first declared tool named ``name``. Asked several times a step (the gate, the decider, the runtime, the
        folds): the tools are indexed by name once, and the index is used while the list holds the very same tools
        (checked on each call, in C: a copy or an update that changed them is indexed again)."""
        tools = tuple(self.tools)
        index = self.__dict__.get(_TOOL_INDEX)  # not a field: equality, dumps and the schema never see it
        if index is None or index[0] != tools:
            by_name: dict[str, ToolContract] = {}
            for t in tools:
                by_name.setdefault(t.name, t)
            index = self.__dict__[_TOOL_INDEX] = (tools, by_name)
        return index[1].get(name)


class IntentPlan(Strict):
    """The human-reviewable source an envelope is compiled from."""

    goal: str
    steps: list[str] = Field(default_factory=new_list)
    constraints: list[str] = Field(default_factory=new_list)
    non_goals: list[str] = Field(default_factory=new_list)
    owner: str
    approver: str | None = None
