"""Compile and strict validation: the example passes, each broken variant names its path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tether.cli.main import app
from tether.envelope import compile_envelope, contract_hash, load_envelope
from tether.errors import EnvelopeInvalid
from tether.policy.strict import strict_problems

runner = CliRunner()


def reseal(path: Path, mutate: Any) -> None:
    """Edit an envelope and recompute its contract hash, so only the intended problem remains."""
    data = yaml.safe_load(path.read_text())
    mutate(data)
    data["contract_hash"] = ""
    data["contract_hash"] = contract_hash(load_envelope_data(data))
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def load_envelope_data(data: dict[str, Any]) -> Any:
    from tether.envelope.schema import Envelope

    return Envelope.model_validate(data)


def paths(env_path: Path) -> list[str]:
    return [p.path for p in strict_problems(load_envelope(env_path), env_path)]


def test_example_passes_strict(example: Path) -> None:
    assert paths(example / "envelope.yaml") == []


def test_committed_example_is_compiled(example: Path) -> None:
    """The committed envelope equals a fresh compile of the committed plan."""
    env = load_envelope(example / "envelope.yaml")
    fresh = compile_envelope(example / "plan.yaml", example / "recompiled.yaml", example / "envelope.yaml")
    assert fresh.contract_hash == env.contract_hash
    assert fresh.plan.hash == env.plan.hash


def test_compile_keeps_comments_and_binds_hashes(example: Path) -> None:
    out = example / "envelope.yaml"
    compile_envelope(example / "plan.yaml", out)
    text = out.read_text()
    assert "# a recorded trajectory" in text
    assert paths(out) == []


def test_plan_edit_breaks_binding(example: Path) -> None:
    plan = example / "plan.yaml"
    plan.write_text(plan.read_text().replace("Do not edit the tests.", "Edit anything."))
    assert "$.plan.hash" in paths(example / "envelope.yaml")


def test_missing_plan_file(example: Path) -> None:
    (example / "plan.yaml").unlink()
    assert "$.plan.path" in paths(example / "envelope.yaml")


def test_hand_edit_breaks_contract_hash(example: Path) -> None:
    env = example / "envelope.yaml"
    env.write_text(env.read_text().replace("usd: 2.0", "usd: 200.0"))
    assert paths(env) == ["$.contract_hash"]


@pytest.mark.parametrize(
    ("mutate", "expected_path"),
    [
        (lambda d: d.update(tool_execution_owner="model"), "$.tool_execution_owner"),
        (lambda d: d["budgets"].pop("usd"), "$.budgets.usd"),
        (lambda d: d["budgets"].update(wall_s=None), "$.budgets.wall_s"),
        (lambda d: d["environment"].pop("network"), "$.environment.network"),
        (lambda d: d["environment"].pop("filesystem"), "$.environment.filesystem"),
        (lambda d: d["environment"].pop("secrets"), "$.environment.secrets"),
        (
            lambda d: d["environment"].update(secrets=[{"name": "t", "source": "env:T"}]),
            "$.environment.secrets[0].tools",
        ),
        (
            lambda d: d["environment"].update(secrets=[{"name": "t", "source": "env:T", "tools": ["nope"]}]),
            "$.environment.secrets[0].tools[0]",
        ),
        (lambda d: d["approvals"].update(require_for=["irreversible"]), "$.approvals.require_for"),
        (lambda d: d["outputs"].pop("max_external"), "$.outputs.max_external"),
        (lambda d: d["outputs"].pop("no_op"), "$.outputs.no_op"),
        (lambda d: d["outputs"].update(no_op="The tests already pass before any change."), "$.outputs.no_op"),
        (lambda d: d["outputs"].update(no_op="sensor coverage passes"), "$.outputs.no_op"),
        (lambda d: d.update(pricing_file="prices.yaml"), "$.pricing_file"),
        (lambda d: d.pop("audit"), "$.audit.log"),
        (lambda d: d["tools"][6].pop("timeout_s"), "$.tools[6].timeout_s"),
        (lambda d: d["tools"][6].pop("rollback"), "$.tools[6].rollback"),
        (lambda d: d["tools"].append(dict(d["tools"][0])), "$.tools[11].name"),
        (
            lambda d: d["permissions"]["deny"][0].update(match=["git push origin main"]),
            "$.permissions.deny[0].match[0]",
        ),
        (lambda d: d["permissions"]["deny"].append(dict(d["permissions"]["deny"][0])), "$.permissions.deny[1].id"),
    ],
)
def test_broken_variant_is_rejected_with_path(example: Path, mutate: Any, expected_path: str) -> None:
    env = example / "envelope.yaml"
    reseal(env, mutate)
    assert expected_path in paths(env)


def test_all_problems_reported_not_just_first(example: Path) -> None:
    env = example / "envelope.yaml"

    def many(d: dict[str, Any]) -> None:
        d["budgets"].pop("usd")
        d["environment"].pop("network")
        d.pop("audit")

    reseal(env, many)
    found = paths(env)
    assert {"$.budgets.usd", "$.environment.network", "$.audit.log"} <= set(found)


def test_unknown_key_and_wrong_type_are_schema_errors(example: Path) -> None:
    env = example / "envelope.yaml"
    data = yaml.safe_load(env.read_text())
    data["budgetz"] = {}
    data["agent"]["max_turns"] = "many"
    env.write_text(yaml.safe_dump(data))
    with pytest.raises(EnvelopeInvalid) as info:
        load_envelope(env)
    got = {p.path: p for p in info.value.problems}
    assert got["$.budgetz"].found == "unknown key"
    assert "$.agent.max_turns" in got
    assert all(p.file == str(env) for p in info.value.problems)


def test_cli_validate_exit_codes(example: Path, tmp_path: Path) -> None:
    env = example / "envelope.yaml"
    ok = runner.invoke(app, ["validate", str(env), "--strict", "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["valid"] is True
    env.write_text(env.read_text().replace("turns: 30", "turns: 31"))
    bad = runner.invoke(app, ["validate", str(env), "--strict", "--json"])
    assert bad.exit_code == 1
    assert json.loads(bad.output)["problems"][0]["path"] == "$.contract_hash"
    schema_only = runner.invoke(app, ["validate", str(env)])
    assert schema_only.exit_code == 0


def test_cli_bad_input_is_one_paragraph_and_exit_2(tmp_path: Path) -> None:
    import subprocess
    import sys

    broken = tmp_path / "broken.yaml"
    broken.write_text("version: 1\nplan: [unclosed\n")
    for target in (str(broken), str(tmp_path / "missing.yaml")):
        proc = subprocess.run(
            [sys.executable, "-m", "tether.cli.main", "validate", target], capture_output=True, text=True
        )
        assert proc.returncode == 2
        assert "Traceback" not in proc.stderr
        assert target in proc.stderr
    assert (
        "invalid YAML at line"
        in subprocess.run(
            [sys.executable, "-m", "tether.cli.main", "validate", str(broken)], capture_output=True, text=True
        ).stderr
    )


def test_init_then_compile_passes_strict(tmp_path: Path) -> None:
    assert runner.invoke(app, ["init", str(tmp_path)]).exit_code == 0
    assert runner.invoke(app, ["init", str(tmp_path)]).exit_code != 0  # refuses to overwrite
    plan, env = tmp_path / "plan.yaml", tmp_path / "envelope.yaml"
    assert runner.invoke(app, ["compile", str(plan), "-o", str(env)]).exit_code == 0
    result = runner.invoke(app, ["validate", str(env), "--strict"])
    assert result.exit_code == 0, result.output


def test_schema_command_prints_json_schema() -> None:
    result = runner.invoke(app, ["schema", "envelope"])
    schema = json.loads(result.output)
    assert "budgets" in schema["properties"]
    assert schema["additionalProperties"] is False


def test_an_unset_later_field_does_not_change_the_contract_hash() -> None:
    """Envelopes sealed before ``pricing_file`` and ``mcp_servers`` existed keep their hash; setting one is hashed."""
    from tether.canonical import content_hash
    from tether.envelope.hashing import contract_hash
    from tether.envelope.schema import ContextSettings, Skills, Trust, TrustSettings
    from tether.policy.defaults import default_envelope

    env = default_envelope()
    before = env.model_dump(mode="json")
    before.pop("contract_hash")
    before.pop("pricing_file")
    before.pop("mcp_servers")
    before.pop("skills")
    before.pop("memory")
    before["environment"].pop("trust")
    before["agent"].pop("context")
    for t in before["tools"]:
        t.pop("trust")
    assert contract_hash(env) == content_hash(before)
    assert contract_hash(env.model_copy(update={"pricing_file": "p.yaml"})) != contract_hash(env)
    compacting = env.agent.model_copy(update={"context": ContextSettings(keep_turns=5)})
    assert contract_hash(env.model_copy(update={"agent": compacting})) != contract_hash(env)
    assert contract_hash(env.model_copy(update={"skills": Skills(pin=["x"])})) != contract_hash(env)
    untrusting = env.model_copy(
        update={"environment": env.environment.model_copy(update={"trust": TrustSettings(workspace=Trust.UNTRUSTED)})}
    )
    assert contract_hash(untrusting) != contract_hash(env)
    tools = [env.tools[0].model_copy(update={"trust": Trust.UNTRUSTED}), *env.tools[1:]]
    assert contract_hash(env.model_copy(update={"tools": tools})) != contract_hash(env)


def test_the_unset_trust_written_out_is_the_default_trust_settings() -> None:
    """``hashing.LATER_ENVIRONMENT_FIELDS`` spells out what an unset ``environment.trust`` dumps to (not computed
    at import, which built the model's validator in every process): it must stay exactly that dump."""
    from tether.envelope.hashing import LATER_ENVIRONMENT_FIELDS
    from tether.envelope.schema import Environment, TrustSettings

    assert LATER_ENVIRONMENT_FIELDS["trust"] == TrustSettings().model_dump(mode="json")
    assert LATER_ENVIRONMENT_FIELDS["trust"] == Environment().model_dump(mode="json")["trust"]
