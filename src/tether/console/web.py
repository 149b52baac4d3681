"""What every page of the console shares: the database it serves, the templates (autoescaped), rendering,
form checks and the error page."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from tether.errors import InputError, LogCorrupt
from tether.events.backends import StoreSpec, exists, open_store
from tether.events.protocol import Store

from . import views
from .access import CSRF_COOKIE, CSRF_FIELD, Guard
from .drivers import Drivers

STATIC = Path(__file__).parent / "static"

templates = Environment(
    loader=PackageLoader("tether.console", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
templates.filters.update(is_diff=views.is_diff, diff_class=views.diff_class, visible=views.visible)
templates.tests.update(hiding=views.has_hidden)


@dataclass(frozen=True)
class Console:
    """What one server serves: a database, its access guard, and the runs it resumed."""

    db: StoreSpec
    guard: Guard
    drivers: Drivers

    def has_log(self) -> bool:
        """Whether there may be runs to show: the file exists (the server of a URL answers on open)."""
        return exists(self.db)

    def reader(self) -> Store:
        return open_store(self.db, readonly=True, create=False)

    def writer(self) -> Store:
        from tether.events.anchor import Signer

        return open_store(self.db, create=False, signer=Signer.configured())


def csrf_of(request: Request) -> str:
    return str(request.cookies.get(CSRF_COOKIE) or request.scope.get("state", {}).get("csrf", ""))


def render(request: Request, name: str, code: int = 200, **context: Any) -> HTMLResponse:
    html = templates.get_template(name).render(csrf=csrf_of(request), csrf_field=CSRF_FIELD, **context)
    return HTMLResponse(html, status_code=code)


async def tether_error(request: Request, exc: Exception) -> Response:
    status = 404 if isinstance(exc, InputError) else 409 if isinstance(exc, LogCorrupt) else 503
    return render(request, "message.html", status, title="error", message=str(exc), ok=False)


async def checked_form(request: Request) -> dict[str, str] | Response:
    """The POST's form, once its CSRF token matches the cookie's (else a 403 page)."""
    form = await request.form()
    values = {k: v for k, v in form.items() if isinstance(v, str)}
    if not Guard.csrf_ok(values.get(CSRF_FIELD), request.cookies):
        return render(request, "message.html", 403, title="refused", message="missing or stale CSRF token", ok=False)
    return values


def int_param(value: str | None) -> int | None:
    return int(value) if value is not None and value.lstrip("-").isdigit() else None
