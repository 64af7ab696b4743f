"""The object store a :class:`~expdna.store.config.StoreConfig` names: a directory, or a
bucket on S3-compatible storage (whose client is imported only then) with this machine's
spool of uploads still to make (expdna.store.objects.spool) and its verified copies of
objects read before (expdna.store.objects.readcache)."""

from __future__ import annotations

from expdna.store.config import StoreConfig
from expdna.store.objects.directory import ObjectDir
from expdna.store.objects.interface import ObjectStore

OBJECTS = "objects"


def open_objects(config: StoreConfig) -> ObjectStore:
    """``<store>/objects``, or the bucket and prefix of ``s3://BUCKET/PREFIX``."""
    if config.remote is not None:
        from expdna.store.objects.readcache import BLOBS, ReadCache
        from expdna.store.objects.s3 import S3Objects
        from expdna.store.objects.spool import SPOOL, Spool

        root = config.root
        return S3Objects(config.remote, spool=Spool(root / SPOOL), cache=ReadCache(root / BLOBS))
    return ObjectDir(config.root / OBJECTS)
