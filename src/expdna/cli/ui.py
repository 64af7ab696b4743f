"""``expdna ui``: serve the read-only web view (:mod:`expdna.ui`) with uvicorn."""

from __future__ import annotations

import errno
import importlib.util
import ipaddress
import os
import socket
import threading
import webbrowser

import click

from expdna.cli.store import StoreConfig, pass_config
from expdna.errors import InvalidInputError

#: What the ``ui`` extra installs; checked before anything imports them.
NEEDS = ("starlette", "jinja2", "uvicorn")


def missing_modules() -> list[str]:
    return [name for name in NEEDS if importlib.util.find_spec(name) is None]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@click.command("ui")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=5310, show_default=True, help="Port."
)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a browser.")
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="Also serve requests addressed to NAME (repeatable), e.g. this machine's name.",
)
@pass_config
def ui_command(
    config: StoreConfig, host: str, port: int, open_browser: bool, allow_hosts: tuple[str, ...]
) -> None:
    """Serve a read-only web view of the store: runs, DNAs, diffs, the fleet.

    Needs the ui extra (pip install 'expdna[ui]'). Binds 127.0.0.1 unless --host says
    otherwise. No page or API call writes to the store. Only requests addressed to
    localhost, 127.0.0.1, [::1], the --host value or an --allow-host NAME are served;
    any other Host header gets 400 (a DNS-rebinding page cannot read the store).
    """
    missing = missing_modules()
    if missing:
        raise InvalidInputError(
            f"expdna ui needs the ui extra ({', '.join(missing)} not installed): "
            "pip install 'expdna[ui]'"
        )
    import uvicorn

    from expdna.ui.app import create_app
    from expdna.ui.hosts import allowed_hosts

    # Opens the store read-only: a missing store is exit 2 here.
    app = create_app(config, hosts=allowed_hosts(host, allow_hosts))
    if not is_loopback(host):
        click.echo(
            f"expdna: warning: binding {host}: the page is reachable from other machines "
            "and has no login; every recorded manifest is readable there",
            err=True,
        )
    listening = _bind(host, port)  # before "serving": a busy port is one line, exit 2
    port = listening.getsockname()[1]
    url = f"http://{'localhost' if host in ('127.0.0.1', '::1') else host}:{port}/"
    click.echo(f"expdna ui: serving {app.state.store.root} (read-only) at {url}", err=True)
    if open_browser:  # once the server is listening, which uvicorn.run does next
        threading.Timer(1.0, webbrowser.open, [url]).start()
    server = uvicorn.Server(
        uvicorn.Config(app, host=host, port=port, log_level="warning", server_header=False)
    )
    server.run(sockets=[listening])


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``; a port in use or an address not here is
    :class:`InvalidInputError` (exit 2) naming it."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        return socket.create_server((host, port), family=family, backlog=2048)
    except OSError as exc:
        raise InvalidInputError(
            f"expdna ui cannot listen on {host}:{port}: "
            f"{os.strerror(exc.errno) if exc.errno else exc}"
            + (" (pick another with --port)" if exc.errno == errno.EADDRINUSE else "")
        ) from None
