"""Gate throughput: decisions per second over the shell corpus.

Usage: ``python benchmarks/gate.py [--rounds N]``. Prints decisions/s for the full gate and, as a
baseline measured in the same run, for the tree-sitter parse alone, and their ratio: what the
gate adds on top of parsing. No timing thresholds; figures only.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from tether.policy.defaults import default_envelope
from tether.policy.gate import Gate
from tether.policy.shell import _PARSER

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "shell_corpus.yaml"


def rate(fn: Callable[[str], object], commands: list[str], rounds: int) -> float:
    for c in commands:  # warm up
        fn(c)
    start = time.perf_counter()
    for _ in range(rounds):
        for c in commands:
            fn(c)
    return rounds * len(commands) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    rounds = parser.parse_args().rounds
    commands = [c["command"] for c in yaml.safe_load(CORPUS.read_text())["cases"]]
    with tempfile.TemporaryDirectory() as ws:
        gate = Gate(default_envelope(), Path(ws))
        gate_rate = rate(lambda c: gate.decide("bash", {"command": c}), commands, rounds)
        parse_rate = rate(lambda c: _PARSER.parse(c.encode()), commands, rounds)
    print(f"corpus: {len(commands)} commands x {rounds} rounds")
    print(f"parse only (baseline): {parse_rate:12,.0f} commands/s")
    print(f"gate.decide:           {gate_rate:12,.0f} decisions/s  ({1e6 / gate_rate:.1f} us each)")
    print(f"ratio gate/parse time: {parse_rate / gate_rate:12.1f}x")


if __name__ == "__main__":
    main()
