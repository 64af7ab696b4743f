"""Serve only requests addressed to this server by a name it was given: no DNS rebinding.

A page on ``evil.example.com`` whose name is re-pointed at 127.0.0.1 reaches a local
server from the browser of anyone running ``expdna ui``, with ``Host: evil.example.com``;
answering it would hand the whole store to that page. So only ``localhost``,
``127.0.0.1``, ``[::1]``, the ``--host`` the server binds and each ``--allow-host NAME``
are served; any other ``Host`` (or none) gets 400. Starlette's ``TrustedHostMiddleware``
does the same, but its older releases cut an IPv6 ``Host`` at the first colon.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

#: Names a server on this machine answers to whatever it binds.
LOOPBACK_HOSTS: tuple[str, ...] = ("localhost", "127.0.0.1", "[::1]")


def host_name(value: str) -> str:
    """A host as the ``Host`` header writes it: lower case, IPv6 literals in brackets."""
    name = value.strip().lower().rstrip(".")
    try:
        if ipaddress.ip_address(name.strip("[]")).version == 6:
            return f"[{name.strip('[]')}]"
    except ValueError:
        pass
    return name


def header_host(header: str) -> str | None:
    """The host part of a ``Host`` header (its port dropped), or None when malformed."""
    text = header.strip()
    if text.startswith("["):
        end = text.find("]")
        after = text[end + 1 :] if end >= 0 else None
        if after is None or (after and not after.startswith(":")):
            return None
        host, port = text[: end + 1], text[end + 2 :]
    else:
        host, _, port = text.partition(":")
    if not host or (port and not port.isdigit()):
        return None
    return host_name(host)


def allowed_hosts(bound: str | None = None, extra: Iterable[str] = ()) -> frozenset[str]:
    """The names served: loopback, the address bound (unless a wildcard) and ``extra``."""
    names = {*LOOPBACK_HOSTS, *(host_name(name) for name in extra)}
    if bound and bound not in ("0.0.0.0", "::", "[::]"):
        names.add(host_name(bound))
    return frozenset(names)


class HostCheck:
    """ASGI middleware: 400 unless the request's ``Host`` is one of ``hosts``."""

    def __init__(self, app: ASGIApp, hosts: Iterable[str]) -> None:
        self.app = app
        self.hosts = frozenset(host_name(h) for h in hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        header = Headers(scope=scope).get("host")
        host = header_host(header) if header is not None else None
        if host is None or host not in self.hosts:
            response = PlainTextResponse("invalid Host header", status_code=400)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
