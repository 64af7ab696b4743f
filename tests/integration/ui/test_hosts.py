"""The web view serves only requests addressed to it by a name it was given (no DNS
rebinding): raw HTTP requests over a socket, against the app served by uvicorn."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from expdna.store import Store
from expdna.store.config import StoreConfig
from tests.factories import EXPDNA
from tests.integration.ui.browser import free_port, serving


def raw_get(port: int, host: str | None, path: str = "/api/runs") -> tuple[int, bytes]:
    """The status and body of one request whose Host header is exactly ``host``."""
    lines = [f"GET {path} HTTP/1.1" if host is not None else f"GET {path} HTTP/1.0"]
    if host is not None:
        lines.append(f"Host: {host}")
    lines += ["Connection: close", "", ""]
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall("\r\n".join(lines).encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


@pytest.fixture
def store(tmp_path: Path) -> StoreConfig:
    root = tmp_path / "store"
    Store.open(root).close()
    return StoreConfig(path=root)


def test_a_foreign_host_gets_400_and_loopback_names_are_served(store: StoreConfig) -> None:
    with serving(store) as base:
        port = int(base.rsplit(":", 1)[1])
        for host in ("evil.example.com", f"evil.example.com:{port}", "127.0.0.1.evil.example"):
            status, body = raw_get(port, host)
            assert (status, body) == (400, b"invalid Host header"), host
        assert raw_get(port, None)[0] == 400  # no Host at all (HTTP/1.0)
        assert raw_get(port, "[::1")[0] == 400  # malformed
        for host in ("localhost", f"127.0.0.1:{port}", f"[::1]:{port}", "LOCALHOST"):
            status, body = raw_get(port, host)
            assert status == 200, (host, body)
            assert body == b"[]"  # the (empty) run list


def test_the_cli_serves_its_host_and_each_allowed_name(store: StoreConfig) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXPDNA_")}
    argv = [EXPDNA, "--store", str(store.path), "ui", "--port", str(port)]
    with subprocess.Popen(
        [*argv, "--allow-host", "trainbox.lab"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    ) as proc:
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    status, _ = raw_get(port, "trainbox.lab")
                    break
                except OSError:
                    assert proc.poll() is None and time.monotonic() < deadline
                    time.sleep(0.2)
            assert status == 200
            assert raw_get(port, f"trainbox.lab:{port}")[0] == 200
            assert raw_get(port, "evil.example.com")[0] == 400
        finally:
            proc.terminate()
            proc.wait(timeout=30)
