"""The store on S3-compatible storage: ``s3://BUCKET/PREFIX`` holds what a directory holds.

Keys under ``PREFIX/`` are the paths under a store directory: ``objects/<2 hex>/<62 hex>``
by BLAKE3 of the raw bytes, ``objects/store-id``, ``objects/log/<entry>`` and gc's
``objects/trash/``. The client is obstore (Apache Arrow's Rust ``object_store``), chosen
over boto3 for the training hook's sake: on the development VM (loaded) ``import obstore``
took 24 ms against boto3's 2.5 s, and import plus a configured client 0.34 s against 4.2 s;
its requests run in Rust without the GIL. It is imported only when a store is remote.

Writes are create-only: every PUT carries ``If-None-Match: *``, and an object already
there is left as it is (the same name is the same bytes). Not every server honours the
header, and one that ignores it overwrites without a word, so the first write of a process
asks (``auto``): it puts the store id again, create-only, with the bytes it holds; a server
that accepts that put ignores the header (it rewrote the id with the same bytes). Such a
server, one that answers the header with "not implemented", and any store when
``EXPDNA_S3_CONDITIONAL_PUT=off`` gets a *verified HEAD* before each PUT instead: a key there
is never written again, and one whose size or MD5 ETag says it holds other bytes than the
ones its name proves is read and, when it does, refused (:class:`CorruptObjectError`, never
overwritten; ``fsck`` names it). The HEAD cannot settle two writers racing for one new name;
that is harmless for objects and log entries, whose names are their content, and the store
id is read back after it is written. ``EXPDNA_S3_CONDITIONAL_PUT=on`` skips the question.
Reads that matter are verified against the digest. Errors are one line
(:class:`expdna.store.errors.StoreError`, exit 2): a missing bucket, access denied, an
endpoint that does not answer within :data:`TIMEOUT_S`.

A batch's uploads, and the checks the recorder makes after its commit, run in parallel
(:data:`WORKERS` requests at once). gc coordinates with recorders as on a directory
(expdna.store.maintenance): trashing an object is a copy into ``objects/trash/`` and a
delete, putting it back a create-only PUT, and the recorder's HEAD after its commit
rewrites any object gone; this needs only the read-after-write consistency S3 gives.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from expdna.digest import hex_of
from expdna.digest.refs import parse_digest, ref
from expdna.store.errors import (
    CorruptObjectError,
    MissingObjectError,
    StoreError,
    UnreadableObjectError,
)
from expdna.store.objects.awsconfig import AwsSettings, resolve
from expdna.store.objects.directory import TRASH
from expdna.store.objects.idfile import ID_FILE, new_id
from expdna.store.objects.interface import Stat
from expdna.store.objects.log import LOG_DIR, is_entry_name

if TYPE_CHECKING:
    from obstore.store import S3Store

    from expdna.store.objects.readcache import ReadCache
    from expdna.store.objects.s3log import S3Log
    from expdna.store.objects.spool import Spool

log = logging.getLogger(__name__)

T = TypeVar("T")
#: Requests in flight at once for a batch.
WORKERS = 16
#: Seconds to connect, and in all for one request with its retries: an endpoint that does
#: not answer fails within about this long.
CONNECT_TIMEOUT_S = 5
TIMEOUT_S = 30
RETRIES = 2
#: Keys per listing page.
PAGE = 1000
OBJECTS = "objects"
#: Whether PUTs trust ``If-None-Match: *``: ``auto`` (ask the server once per process),
#: ``on`` (trust it), ``off`` (a verified HEAD before each write).
CONDITIONAL_ENV = "EXPDNA_S3_CONDITIONAL_PUT"
CONDITIONAL_MODES = ("auto", "on", "off")
_URL = re.compile(r"s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(/.*)?")
_HEX = frozenset("0123456789abcdef")


def parse_url(url: str) -> tuple[str, str]:
    """(bucket, prefix without slashes at either end) of ``s3://BUCKET[/PREFIX]``."""
    match = _URL.fullmatch(url)
    if match is None:
        raise StoreError(
            f"{url!r} is not a bucket URL: expected s3://BUCKET/PREFIX (a bucket name of "
            "3-63 lower-case letters, digits, dots and dashes)"
        )
    prefix = (match.group(2) or "").strip("/")
    if any(part in (".", "..") for part in prefix.split("/")) or "//" in prefix:
        raise StoreError(f"{url!r}: the prefix may not hold empty, '.' or '..' parts")
    return match.group(1), prefix


def _digest_of(key: str) -> str | None:
    """The digest a key ``objects/ab/<62 hex>`` names, else None."""
    parts = key.rsplit("/", 2)
    if len(parts) != 3 or len(parts[1]) != 2 or len(parts[2]) != 62:
        return None
    digest = parts[1] + parts[2]
    return digest if _HEX.issuperset(digest) else None


def _checked(expected: str, data: bytes) -> bytes:
    actual = hex_of(data)
    if actual != expected:
        raise CorruptObjectError(expected, actual, None)
    return data


class S3Objects:
    """A store's objects, id, log and trash in ``s3://BUCKET/PREFIX``."""

    def __init__(
        self,
        url: str,
        *,
        environ: Mapping[str, str] = os.environ,
        spool: Spool | None = None,
        cache: ReadCache | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.bucket, self.prefix = parse_url(self.url)
        self.settings: AwsSettings = resolve(environ)
        #: this machine's uploads not made yet (expdna.store.objects.spool), if any
        self.spool = spool
        #: verified copies of objects read before (expdna.store.objects.readcache), if any
        self.cache = cache
        self._store: S3Store | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        mode = (environ.get(CONDITIONAL_ENV) or "auto").strip().lower()
        if mode not in CONDITIONAL_MODES:
            raise StoreError(
                f"{CONDITIONAL_ENV}={mode!r}: expected one of {', '.join(CONDITIONAL_MODES)}"
            )
        #: Whether PUTs carry If-None-Match; None until the server was asked (``auto``).
        self.conditional: bool | None = None if mode == "auto" else mode == "on"
        self._asking = threading.Lock()
        self._id: str | None = None  # the store id, once read (it never changes)

    @property
    def location(self) -> str:
        return f"{self.url}/{OBJECTS}"

    @property
    def store(self) -> S3Store:
        with self._lock:
            if self._store is None:
                self._store = self._connect()
            return self._store

    def _connect(self) -> S3Store:
        from obstore.store import S3Store  # only for a remote store

        endpoint = self.settings.endpoint
        return S3Store(
            self.bucket,
            prefix=self.prefix or None,
            config=self.settings.client_config(),  # type: ignore[arg-type]
            client_options={
                "allow_http": bool(endpoint and endpoint.startswith("http://")),
                "connect_timeout": timedelta(seconds=CONNECT_TIMEOUT_S),
                "timeout": timedelta(seconds=TIMEOUT_S),
            },
            retry_config={
                "max_retries": RETRIES,
                "retry_timeout": timedelta(seconds=TIMEOUT_S),
            },
        )

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    # -- requests ------------------------------------------------------------------

    def _failed(self, exc: Exception, doing: str) -> StoreError:
        """One line for a failed request: what failed, and what to check."""
        from obstore import exceptions as errors

        text = str(exc)
        if isinstance(exc, errors.PermissionDeniedError | errors.UnauthenticatedError):
            return StoreError(
                f"{self.url}: access denied ({doing}): check the credentials "
                "(AWS_ACCESS_KEY_ID / AWS_PROFILE) and the bucket's policy"
            )
        if "NoSuchBucket" in text:
            return StoreError(f"{self.url}: bucket {self.bucket} does not exist")
        if "error sending request" in text or "timed out" in text or "connect" in text.lower():
            where = self.settings.endpoint or "the AWS endpoint"
            return StoreError(
                f"{self.url}: endpoint {where} does not answer ({doing}; gave up within "
                f"{TIMEOUT_S} s): check AWS_ENDPOINT_URL and the network"
            )
        first = text.splitlines()[0] if text else type(exc).__name__
        return StoreError(f"{self.url}: {doing} failed: {first[:300]}")

    def _call(self, doing: str, request: Callable[[], T]) -> T:
        from obstore import exceptions as errors

        try:
            return request()
        except FileNotFoundError:
            raise
        except (errors.AlreadyExistsError, errors.PreconditionError, errors.NotSupportedError):
            raise
        except errors.BaseError as exc:
            raise self._failed(exc, doing) from None

    def _parallel(self, work: Callable[[T], Any], items: Sequence[T]) -> list[Any]:
        if len(items) <= 1:
            return [work(item) for item in items]
        with self._lock:  # the recorder's upload thread and its own thread share the pool
            if self._pool is None:
                self._pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="expdna-s3")
            pool = self._pool
        return list(pool.map(work, items))

    def _get(self, key: str) -> bytes:
        import obstore

        return self._call(f"reading {key}", lambda: bytes(obstore.get(self.store, key).bytes()))

    def _head(self, key: str) -> Stat | None:
        meta = self._head_meta(key)
        if meta is None:
            return None
        return Stat(size=int(meta["size"]), mtime=meta["last_modified"].timestamp())

    def _create(self, key: str, data: bytes, *, verify: bool = True) -> bool:
        """Write ``key`` unless it exists; True when this call wrote it. Without
        If-None-Match (see the module doc) a key found there is checked against ``data``
        (``verify``) and never written again."""
        import obstore
        from obstore import exceptions as errors

        doing = f"writing {key}"
        if self._conditional():
            try:
                self._call(doing, lambda: obstore.put(self.store, key, data, mode="create"))
                return True
            except (errors.AlreadyExistsError, errors.PreconditionError):
                return False
            except errors.NotSupportedError:
                log.warning("%s ignores If-None-Match; a HEAD precedes each write", self.url)
                self.conditional = False
        found = self._head_meta(key)
        if found is not None:
            if verify:
                self._same_bytes(key, found, data)
            return False
        self._call(doing, lambda: obstore.put(self.store, key, data, mode="overwrite"))
        return True

    def _conditional(self) -> bool:
        """Whether to trust If-None-Match; asked of the server once (``auto``), by a
        create-only PUT of the store id with the bytes it holds, once there is one."""
        if self.conditional is None:
            with self._asking:  # one question, whichever thread writes first
                self.conditional = self._ask() if self.conditional is None else self.conditional
        return True if self.conditional is None else self.conditional

    def _ask(self) -> bool | None:
        import obstore
        from obstore import exceptions as errors

        key = f"{OBJECTS}/{ID_FILE}"
        try:
            held = self._get(key)
        except FileNotFoundError:
            return None  # a new store: asked once its id is written
        try:
            self._call(
                "checking If-None-Match", lambda: obstore.put(self.store, key, held, mode="create")
            )
        except (errors.AlreadyExistsError, errors.PreconditionError):
            return True
        except errors.NotSupportedError:
            pass
        log.warning("%s ignores If-None-Match; a HEAD precedes each write", self.url)
        return False

    def _head_meta(self, key: str) -> dict[str, Any] | None:
        import obstore

        try:
            return dict(self._call(f"looking up {key}", lambda: obstore.head(self.store, key)))
        except FileNotFoundError:
            return None

    def _same_bytes(self, key: str, found: Mapping[str, Any], data: bytes) -> None:
        """Refuse a key that holds other bytes than ``data`` (named by their digest): told
        by its size, or by an ETag that is a plain MD5; read to be sure before refusing."""
        name = key.rsplit("/", 1)[-1]
        if name == ID_FILE:  # the first writer's id stands, whatever it is
            return
        tag = str(found.get("e_tag") or "").strip('"')
        md5 = hashlib.md5(data, usedforsecurity=False).hexdigest()
        plain_md5 = len(tag) == 32 and _HEX.issuperset(tag)
        if int(found["size"]) == len(data) and (not plain_md5 or tag == md5):
            return
        there = self._get(key)
        if there == data:
            return
        digest = _digest_of(key)
        if digest is not None:
            raise CorruptObjectError(digest, hex_of(there), None)
        what = "log entry" if is_entry_name(name) else "key"
        raise StoreError(
            f"{self.url}: {what} {key} holds other bytes than its name says; not rewritten "
            "(`expdna fsck` names it)"
        )

    def _delete(self, key: str) -> None:
        import obstore

        with contextlib.suppress(FileNotFoundError):
            self._call(f"deleting {key}", lambda: obstore.delete(self.store, key))

    def _list(self, prefix: str) -> Iterator[tuple[str, Stat]]:
        """(key, stat) of every key under ``prefix``, a page at a time."""
        import obstore

        pages = self._call(
            f"listing {prefix}", lambda: obstore.list(self.store, prefix, chunk_size=PAGE)
        )
        while True:
            try:
                page = self._call(f"listing {prefix}", lambda: next(pages))
            except StopIteration:
                return
            for meta in page:
                stat = Stat(size=int(meta["size"]), mtime=meta["last_modified"].timestamp())
                yield str(meta["path"]), stat

    def _first_key(self, prefix: str) -> str | None:
        return next((key for key, _ in self._list(prefix)), None)

    @staticmethod
    def key(digest: str) -> str:
        hex_digest = parse_digest(digest)
        return f"{OBJECTS}/{hex_digest[:2]}/{hex_digest[2:]}"

    # -- objects -------------------------------------------------------------------

    def has(self, digest: str) -> bool:
        return self._head(self.key(digest)) is not None

    def put(self, data: bytes) -> str:
        return self.put_many([data])[0]

    def put_many(self, blobs: Iterable[bytes]) -> list[str]:
        digests: list[str] = []
        todo: dict[str, bytes] = {}
        for data in blobs:
            digest = hex_of(data)
            digests.append(digest)
            todo.setdefault(digest, data)
        self._parallel(lambda item: self._create(self.key(item[0]), item[1]), list(todo.items()))
        return digests

    def rewrite(self, blobs: Iterable[bytes]) -> None:
        """Write ``blobs`` where missing; an object there with other bytes (written by
        something else under its name) is replaced by the bytes its name proves."""
        import obstore

        def one(item: tuple[str, bytes]) -> None:
            digest, data = item
            key = self.key(digest)
            if self._create(key, data, verify=False) or self.holds(digest, data):
                return
            log.warning("%s: object %s held other bytes; writing the right ones", self.url, key)
            self._call(f"writing {key}", lambda: obstore.put(self.store, key, data))

        self._parallel(one, list({hex_of(b): b for b in blobs}.items()))

    def read(self, digest: str, *, max_bytes: int | None = None) -> bytes:
        if max_bytes is not None:
            found = self._head(self.key(digest))
            if found is not None and found.size > max_bytes:
                raise UnreadableObjectError(
                    f"object {ref(parse_digest(digest))} holds {found.size} bytes, over the "
                    f"{max_bytes}-byte cap for what it is read as; not loaded"
                )
        try:
            data = self._get(self.key(digest))
        except FileNotFoundError:
            raise MissingObjectError(parse_digest(digest), None) from None
        if max_bytes is not None and len(data) > max_bytes:  # it grew since the HEAD
            raise UnreadableObjectError(
                f"object {ref(parse_digest(digest))} is over the {max_bytes}-byte cap; not loaded"
            )
        return data

    def read_verified(self, digest: str, *, max_bytes: int | None = None) -> bytes:
        """The object's bytes, checked against its name: from this machine's read cache
        when a copy there still hashes to it, else from the bucket (then cached)."""
        expected = parse_digest(digest)
        if self.cache is not None:
            cached = self.cache.get(expected, max_bytes)
            if cached is not None:
                return cached
        data = _checked(expected, self.read(digest, max_bytes=max_bytes))
        if self.cache is not None:
            self.cache.put(expected, data)
        return data

    def verify(self, digest: str) -> None:
        """Re-hash the bucket's bytes (never a cached copy: fsck asks the bucket)."""
        _checked(parse_digest(digest), self.read(digest))

    def holds(self, digest: str, data: bytes) -> bool:
        try:
            return self._get(self.key(digest)) == data
        except FileNotFoundError:
            return False

    def present(self, digest: str, size: int) -> bool:
        found = self._head(self.key(digest))
        return found is not None and found.size == size

    def present_many(self, wanted: Mapping[str, int]) -> set[str]:
        """Those of ``wanted`` (digest -> size) present with that size, asked in parallel."""
        items = list(wanted.items())
        there = self._parallel(lambda item: self.present(item[0], item[1]), items)
        return {digest for (digest, _), ok in zip(items, there, strict=True) if ok}

    def stat(self, digest: str) -> Stat | None:
        return self._head(self.key(digest))

    def irregular(self) -> Iterator[tuple[str, str]]:
        return iter(())

    def listing(self, fan: str) -> dict[str, Stat]:
        found: dict[str, Stat] = {}
        for key, stat in self._list(f"{OBJECTS}/{fan}/"):
            digest = _digest_of(key)
            if digest is not None:
                found[digest] = stat
        return found

    def __iter__(self) -> Iterator[str]:
        for key, _ in self._list(f"{OBJECTS}/"):
            digest = _digest_of(key)
            if digest is not None:
                yield digest

    def remove(self, digest: str) -> None:
        self._delete(self.key(digest))

    def temp_files(self) -> Iterator[str]:
        return iter(())  # a PUT is atomic: nothing is left half-written

    # -- gc's trash ------------------------------------------------------------------

    def trash(self, digest: str) -> str | None:
        import obstore

        key = self.key(digest)
        where = f"{OBJECTS}/{TRASH}/{digest}.{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            self._call(f"moving {key} to the trash", lambda: obstore.copy(self.store, key, where))
        except FileNotFoundError:
            return None
        self._delete(key)
        return where

    def untrash(self, digest: str, where: str) -> None:
        data = self._get(where)
        if hex_of(data) == parse_digest(digest):
            self._create(self.key(digest), data)
        self._delete(where)

    def purge(self, where: str) -> None:
        self._delete(where)

    def trashed(self) -> dict[str, str]:
        left = {}
        for key, _ in self._list(f"{OBJECTS}/{TRASH}/"):
            digest = key.rsplit("/", 1)[-1].split(".", 1)[0]
            if len(digest) == 64 and _HEX.issuperset(digest):
                left[digest] = key
        return left

    # -- the store's id and log -------------------------------------------------------

    def read_id(self) -> str | None:
        if self._id is not None:
            return self._id
        try:
            text = self._get(f"{OBJECTS}/{ID_FILE}").decode("utf-8", "replace").strip()
        except FileNotFoundError:
            return None
        self._id = text or None
        return self._id

    def create_id(self) -> str:
        found = self.read_id()
        if found is not None:
            return found
        self._create(f"{OBJECTS}/{ID_FILE}", (new_id() + "\n").encode())
        found = self.read_id()  # the first writer's id, whoever that was
        assert found is not None
        return found

    def holds_objects(self) -> bool:
        # keys list in order: a fan-out key ("objects/0f/...") comes before "objects/log/"
        first = self._first_key(f"{OBJECTS}/")
        if first is not None and _digest_of(first) is not None:
            return True
        return self._first_key(f"{OBJECTS}/{LOG_DIR}/") is not None

    def exists(self) -> bool:
        return self.read_id() is not None or self.holds_objects()

    def ensure(self) -> None:
        if self._id is None:  # an id read says the bucket answers; else one request says why
            self._first_key(f"{OBJECTS}/{LOG_DIR}/")

    def open_log(self) -> S3Log:
        from expdna.store.objects.s3log import S3Log

        return S3Log(self)
