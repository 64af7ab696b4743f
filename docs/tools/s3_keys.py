"""Every key under ``s3://BUCKET/PREFIX/``, sorted, then how many: object-storage.md's
listing of a bucket, with obstore and the standard AWS variables (AWS_ENDPOINT_URL, …).

    python docs/tools/s3_keys.py s3://BUCKET/PREFIX
"""

import os
import sys

import obstore
from obstore.store import S3Store

bucket, _, prefix = sys.argv[1].removeprefix("s3://").partition("/")
store = S3Store(
    bucket,
    config={
        "endpoint": os.environ["AWS_ENDPOINT_URL"],
        "access_key_id": os.environ["AWS_ACCESS_KEY_ID"],
        "secret_access_key": os.environ["AWS_SECRET_ACCESS_KEY"],
        "region": os.environ.get("AWS_REGION", "us-east-1"),
    },
    client_options={"allow_http": True},
)
keys = sorted(
    meta["path"].removeprefix(prefix.strip("/") + "/")
    for batch in obstore.list(store, prefix=prefix.strip("/") or None)
    for meta in batch
)
print("\n".join(keys))
print(f"{len(keys)} keys")
