"""The ASGI application: routes, templates, security headers and errors in one place.

``create_app(config)`` opens the store read-only (:meth:`Store.from_config` with
``read_only=True``: a missing store is an error, nothing is created or changed) and
returns a Starlette app that only answers GET and HEAD. Handlers are plain functions, run
in Starlette's thread pool, over the same query functions as the CLI.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from expdna.errors import ExpdnaError, InvalidInputError, NotFoundError
from expdna.manifest.display import short
from expdna.store.config import StoreConfig
from expdna.store.entities import iso
from expdna.store.facade import Store

log = logging.getLogger(__name__)

#: No script at all, styles and images only from this server (SVG is inline markup).
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
]


class SecurityHeaders:
    """Adds :data:`HEADERS` to every response, errors and static files included, and a
    ``Server-Timing`` header: the time from the request to the response's first byte
    (benchmarks/ui_bench.py reads it)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        began = time.perf_counter()

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                took = (time.perf_counter() - began) * 1000
                timing = (b"server-timing", f"app;dur={took:.1f}".encode())
                message["headers"] = [*message.get("headers", []), *HEADERS, timing]
            await send(message)

        await self.app(scope, receive, with_headers)


def leaf(value: Any) -> str:
    """A manifest leaf as text: strings as they are, everything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def number(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def query(pairs: Mapping[str, str] | list[tuple[str, str]]) -> str:
    return urlencode(pairs)


def environment() -> Environment:
    # Autoescape everything: every value on a page comes from a manifest someone wrote.
    env = Environment(
        loader=PackageLoader("expdna.ui", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        short=short,
        iso=iso,
        leaf=leaf,
        number=number,
        query=query,
        segment=lambda text: quote(str(text), safe=""),
    )
    return env


templates = Jinja2Templates(env=environment())


def render(
    request: Request, name: str, context: dict[str, Any], *, status_code: int = 200
) -> Response:
    return templates.TemplateResponse(request, name, context, status_code=status_code)


def error_status(exc: ExpdnaError) -> int:
    """The HTTP status of an error: 404 for a negative answer, 400 for bad input."""
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, InvalidInputError) or exc.exit_code == 2:
        return 400
    return 500


def _error(request: Request, status: int, message: str) -> Response:
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": message}, status_code=status)
    return render(request, "error.html", {"status": status, "message": message}, status_code=status)


async def expdna_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ExpdnaError)
    status = error_status(exc)
    if status == 500:
        log.error("%s: %s", request.url.path, exc)
    return _error(request, status, str(exc))


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    message = {404: "no such page", 405: "this view only reads: GET only"}.get(
        exc.status_code, str(exc.detail)
    )
    response = _error(request, exc.status_code, message)
    if exc.headers:
        response.headers.update(exc.headers)
    return response


def create_app(config: StoreConfig, *, hosts: Iterable[str] | None = None) -> Starlette:
    """The web view over the store ``config`` names, opened read-only now.

    Only requests whose ``Host`` is one of ``hosts`` are served (default: the loopback
    names; see :mod:`expdna.ui.hosts`), any other gets 400."""
    from expdna.ui import api, pages
    from expdna.ui.hosts import HostCheck, allowed_hosts

    store = Store.from_config(config, read_only=True)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            store.close()

    static = StaticFiles(packages=[("expdna.ui", "static")])
    app = Starlette(
        routes=[*pages.routes, *api.routes, Mount("/static", app=static, name="static")],
        exception_handlers={ExpdnaError: expdna_error, HTTPException: http_error},
        lifespan=lifespan,
    )
    app.state.store = store
    app.add_middleware(SecurityHeaders)
    # Added last, so outermost: a foreign Host is answered before anything reads the store.
    app.add_middleware(HostCheck, hosts=allowed_hosts() if hosts is None else hosts)
    return app
