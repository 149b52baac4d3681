"""Model adapters: the one place that knows how each provider talks.

Public surface (see ``__all__``): the provider-neutral types in
:mod:`~tether.models.base`, :func:`load_model` for spec strings,
:func:`complete_with_retries` for the retry policy, :func:`cost_usd` and
:func:`price_known` for pricing, and the offline models.

The SDK adapters (:mod:`~tether.models.openai_adapter`,
:mod:`~tether.models.anthropic_adapter`) are deliberately *not* imported here:
the two SDKs take over a second to import, and a scripted run, the kernel's
tests and the CLI's startup should not pay for them. ``load_model`` imports an
adapter only when its spec names it. Test servers live in
:mod:`tether.models.testing`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether.exports import lazy

if TYPE_CHECKING:
    from tether.models.base import (
        TERMINATIONS,
        Message,
        Model,
        ModelResponse,
        Termination,
        ToolCall,
        ToolSpec,
        Usage,
    )
    from tether.models.function import FunctionModel, call, reply
    from tether.models.pricing import cost_usd, price_for, price_known
    from tether.models.registry import load_model
    from tether.models.retry import complete_with_retries
    from tether.models.scripted import ScriptedModel, ScriptInvalid

#: Where each public name lives. Each is imported on first use (PEP 562): importing one module of the
#: package does not import all of them (a governed session's budget check reads the window's constants).
_HOMES = {
    "TERMINATIONS": "tether.models.base",
    "Message": "tether.models.base",
    "Model": "tether.models.base",
    "ModelResponse": "tether.models.base",
    "Termination": "tether.models.base",
    "ToolCall": "tether.models.base",
    "ToolSpec": "tether.models.base",
    "Usage": "tether.models.base",
    "FunctionModel": "tether.models.function",
    "call": "tether.models.function",
    "reply": "tether.models.function",
    "cost_usd": "tether.models.pricing",
    "price_for": "tether.models.pricing",
    "price_known": "tether.models.pricing",
    "load_model": "tether.models.registry",
    "complete_with_retries": "tether.models.retry",
    "ScriptedModel": "tether.models.scripted",
    "ScriptInvalid": "tether.models.scripted",
}


__getattr__ = lazy(globals(), _HOMES)


__all__ = [
    "TERMINATIONS",
    "FunctionModel",
    "Message",
    "Model",
    "ModelResponse",
    "ScriptInvalid",
    "ScriptedModel",
    "Termination",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "call",
    "complete_with_retries",
    "cost_usd",
    "load_model",
    "price_for",
    "price_known",
    "reply",
]
