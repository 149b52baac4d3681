"""What a test needs from the machine, when it is missing: skipped on a developer's machine, a failure in CI."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def unavailable(why: str) -> NoReturn:
    """Skip where the machine lacks what the test needs, except in CI, where ``.ci/run`` provides it (as the
    sandbox, browser and database markers are, in ``tests/conftest.py``): there no test may skip."""
    if os.environ.get("CI"):
        pytest.fail(f"CI must run this test, but: {why}")
    pytest.skip(why)
