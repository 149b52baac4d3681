"""Event kinds of the pre-flight checks (payloads only; see tether.verify).

- ``preflight.completed``  before the first model call: does the test command collect tests, does every
  required sensor's tool exist? A failed check stops the run at once, naming the fix.

The test-integrity baseline (``tests.baseline``) is in ``kinds_baseline``.
"""

from typing import Literal

from tether.plain import Field

from .payload import Payload, new_list, register


class PreflightCheck(Payload):
    name: str
    ok: bool
    detail: str
    fix: str = ""
    status: Literal["BLOCKED_DEPENDENCY", "NEEDS_INPUT"] | None = Field(
        None, description="How a failure stops the run."
    )


@register("preflight.completed")
class PreflightCompleted(Payload):
    ok: bool
    checks: list[PreflightCheck] = Field(default_factory=new_list)
