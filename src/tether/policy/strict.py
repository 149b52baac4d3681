"""Strict validation, whole: the envelope layer's own checks plus those only the policy engine can make.

``tether validate --strict``, the kernel's load and the Python API all call :func:`strict_check`.
The envelope layer (:mod:`tether.envelope.strict`, :mod:`tether.envelope.risks`) checks the binding,
tools, boundaries, budgets and the dangerous settings it can see on its own; the rules are judged
here, by the engine that applies them: each parses and does what its examples show
(:mod:`tether.policy.examples`), and no allow rule lets a shell tool run any program or inline code
(:func:`shell_risks`). Dangerous settings are problems unless the envelope acknowledges them.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from tether.envelope.risks import Risky, risky_settings, takes_command
from tether.envelope.schema import Envelope, Risk
from tether.envelope.strict import Accepted, acknowledged, contract_problems
from tether.errors import EnvelopeInvalid, InputError, Problem
from tether.models.catalog import load_catalog

from .decision import Verdict
from .examples import check_rule_examples
from .rules import RuleSyntaxError, parse
from .shell import analyse

SHELL_PROBES = (
    "tether-probe-any-program --any-option",
    "sh -c tether-probe",
    "bash -c tether-probe",
    "python3 -c pass",
    "python -c pass",
    "perl -e 1",
    "ruby -e 1",
    "node -e 1",
)
"""Commands a narrow shell allow rule never matches: any program at all, or inline code for an interpreter."""


def strict_check(envelope: Envelope, envelope_path: Path) -> tuple[list[Problem], list[Accepted]]:
    """Strict-validation problems, and the risks accepted by acknowledgement, of ``envelope``."""
    f = str(envelope_path)
    workspace = (envelope_path.parent / envelope.environment.workspace).resolve()
    risky = [*risky_settings(envelope, workspace), *shell_risks(envelope, workspace)]
    risk_problems, accepted = acknowledged(envelope, risky, f)
    problems = [*contract_problems(envelope, envelope_path), *check_rule_examples(envelope, f), *risk_problems]
    return [*problems, *price_file_problems(envelope, envelope_path)], accepted


def price_file_problems(envelope: Envelope, envelope_path: Path) -> list[Problem]:
    """The envelope's ``pricing_file`` must read as a price table: its problems name that file and the field."""
    if not envelope.pricing_file:
        return []
    try:
        load_catalog(envelope_path.parent / envelope.pricing_file)
    except EnvelopeInvalid as e:
        return e.problems
    except InputError as e:
        return [
            Problem("$.pricing_file", repr(envelope.pricing_file), f"a readable price file ({e})", str(envelope_path))
        ]
    return []


def strict_problems(envelope: Envelope, envelope_path: Path) -> list[Problem]:
    """All strict-validation problems of ``envelope`` (loaded from ``envelope_path``)."""
    return strict_check(envelope, envelope_path)[0]


def accepted_risks(envelope: Envelope, envelope_path: Path) -> list[Accepted]:
    """The risky settings ``envelope`` accepts by acknowledgement (shown in every run's header)."""
    return strict_check(envelope, envelope_path)[1]


def shell_risks(envelope: Envelope, workspace: Path) -> list[Risky]:
    """Allow rules for a shell tool (see :func:`~tether.envelope.risks.takes_command`) that match any program
    or inline code.

    The rule is compiled and matched as the gate would read it, so every spelling of "anything"
    (``bash``, ``bash(*)``, ``bash(:*)``, ``bash(* *)``, ``bash(python:*)``) is caught. ``when``
    predicates are ignored: a glob on the command text does not narrow what a chained command runs.
    """
    out: list[Risky] = []
    ws = PurePosixPath(os.path.realpath(workspace))
    for i, rule in enumerate(envelope.permissions.allow):
        try:
            compiled = parse(rule, Verdict.ALLOW)
        except RuleSyntaxError:
            continue  # reported by the rule examples check
        contract = envelope.tool(compiled.tool)
        if contract is None or not takes_command(contract):
            continue
        matched = [p for p in SHELL_PROBES if any(compiled.matches_command(c) for c in analyse(p, ws).commands)]
        if matched:
            out.append(
                Risky(
                    f"$.permissions.allow[{i}].rule",
                    f"{rule.rule!r} (allows e.g. {matched[0]!r})",
                    f"rules naming the programs the task needs, e.g. {compiled.tool}(pytest:*)",
                    Risk.SHELL_ANY,
                )
            )
    return out
