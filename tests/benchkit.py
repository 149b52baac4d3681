"""The benchmarks' workloads for tests that run them (benchmarks/ is no package: loaded from its file)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def bench(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a module, loaded once per call."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
