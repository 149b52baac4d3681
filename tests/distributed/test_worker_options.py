"""``tether worker``'s options that need no server: what the run waits for a lost worker (``--sticky-s``)."""

from __future__ import annotations

import inspect
import os

import clikit
import pytest
from temporalio.worker import Worker

from tether.cli.distributed_cmds import worker_cmd
from tether.distributed.worker import STICKY_S


def test_the_sticky_wait_is_temporals_unless_given() -> None:
    """The CLI's default, the worker's and the SDK's are one value (the CLI does not import the SDK to read it)."""
    sdk = inspect.signature(Worker).parameters["sticky_queue_schedule_to_start_timeout"].default
    cli = inspect.signature(worker_cmd).parameters["sticky"].default.default
    assert sdk.total_seconds() == STICKY_S == cli


@pytest.mark.parametrize("given", ["0", "-1", "0.05", "nan", "soon"])
def test_a_sticky_wait_that_is_not_a_positive_number_is_refused_naming_the_option(given: str) -> None:
    """Refused before any connection (the address is never dialled): a usage error naming ``--sticky-s``."""
    proc = clikit.run(["worker", "--temporal", "127.0.0.1:9", "--sticky-s", given], dict(os.environ), timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--sticky-s" in proc.stderr
