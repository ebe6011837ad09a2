"""A per-user cache of chunk digests, so repeated sweeps rehash only what changed.

An entry is keyed by the file's identity as ``stat`` sees it (device, inode,
size, mtime_ns, ctime_ns) and the chunk size; a write moves the file's
ctime, so a stale entry is not found, let alone used. One kind of write
need not move the times at once: stores through a shared memory map into
pages that are already dirty. So only files unchanged for a while (one
minute by default) have their digests kept: a run still being written is
always hashed afresh. The cache lives
in ``$XDG_CACHE_HOME/fastdiff`` (else ``~/.cache/fastdiff``), never in a run
folder. It is SQLite in WAL mode, safe with several fastdiff processes at
once. A cache file that is corrupt or not ours is set aside and rebuilt,
with one warning, and is never trusted.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from .discover import DumpFile
from .hash import FileDigest

#: Digests of files changed more recently than this are not cached.
DEFAULT_MIN_AGE_S = 60.0
#: Bumped whenever the table layout or the digest definition changes.
CACHE_VERSION = 1
_APP_ID = 0x66646966  # "fdif": marks the file as fastdiff's
_DIGEST = 16


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fastdiff"


def _key(f: DumpFile, chunk_size: int) -> tuple[int, int, int, int, int, int]:
    return (f.dev, f.ino, f.size, f.mtime_ns, f.ctime_ns, chunk_size)


class DigestCache:
    """Look up and store chunk digests; every failure degrades to 'not cached'."""

    def __init__(
        self, folder: str | os.PathLike[str] | None = None, min_age_s: float = DEFAULT_MIN_AGE_S
    ) -> None:
        self.folder = Path(folder) if folder is not None else default_cache_dir()
        self.min_age_ns = int(min_age_s * 1e9)
        self.path = self.folder / "digests.sqlite3"
        self.warnings: list[str] = []
        self.hits = 0
        self._queued: list[tuple[object, ...]] = []
        self._db: sqlite3.Connection | None = None
        try:
            self._db = self._open()
        except (sqlite3.Error, OSError) as exc:
            self._discard(f"cannot use digest cache {self.path} ({exc}); rebuilding it")
            try:
                self._db = self._open()
            except (sqlite3.Error, OSError) as exc2:
                self._warn(f"digest cache disabled: {self.path}: {exc2}")
                self._db = None

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        print(f"fastdiff: warning: {message}", file=sys.stderr)

    def _discard(self, message: str) -> None:
        self._warn(message)
        tag = f"bad-{os.getpid()}-{time.time_ns()}"
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.replace(f"{self.path}{suffix}", f"{self.path}{suffix}.{tag}")

    def _open(self) -> sqlite3.Connection:
        self.folder.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            app_id = db.execute("PRAGMA application_id").fetchone()[0]
            version = db.execute("PRAGMA user_version").fetchone()[0]
            tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if tables and (app_id != _APP_ID or version != CACHE_VERSION):
                raise sqlite3.DatabaseError(
                    f"not a fastdiff digest cache of version {CACHE_VERSION}"
                )
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            if not tables:
                db.execute(f"PRAGMA application_id={_APP_ID}")
                db.execute(f"PRAGMA user_version={CACHE_VERSION}")
                db.execute(
                    "CREATE TABLE IF NOT EXISTS digests ("
                    " dev INTEGER, ino INTEGER, size INTEGER, mtime_ns INTEGER,"
                    " ctime_ns INTEGER, chunk_size INTEGER, chunks BLOB NOT NULL,"
                    " PRIMARY KEY (dev, ino, size, mtime_ns, ctime_ns, chunk_size))"
                )
            db.execute("PRAGMA quick_check").fetchone()
        except BaseException:
            db.close()
            raise
        return db

    def get_many(self, files: Sequence[DumpFile], chunk_size: int) -> dict[str, FileDigest]:
        """Cached digests of ``files`` by path, in a few queries (one per 500 files)."""
        out: dict[str, FileDigest] = {}
        if self._db is None:
            return out
        wanted = {_key(f, chunk_size): f for f in files}
        by_dev: dict[int, list[int]] = {}
        for f in files:
            by_dev.setdefault(f.dev, []).append(f.ino)
        rows = []
        try:
            for dev, inos in by_dev.items():
                for k in range(0, len(inos), 500):
                    part = inos[k : k + 500]
                    rows += self._db.execute(
                        "SELECT dev, ino, size, mtime_ns, ctime_ns, chunk_size, chunks FROM digests"
                        f" WHERE dev=? AND ino IN ({','.join('?' * len(part))}) AND chunk_size=?",
                        (dev, *part, chunk_size),
                    ).fetchall()
        except sqlite3.Error as exc:
            self._broken(exc)
            return {}
        for *key, blob in rows:
            f = wanted.get(tuple(key))  # type: ignore[arg-type]
            if f is None:
                continue  # the same inode with another size or time: stale, never used
            n_chunks = (f.size + chunk_size - 1) // chunk_size
            if not isinstance(blob, bytes) or len(blob) != n_chunks * _DIGEST:
                continue  # damaged entry: ignored; the fresh hash replaces it
            chunks = tuple(blob[i : i + _DIGEST] for i in range(0, len(blob), _DIGEST))
            out[f.path] = FileDigest(f.path, f.size, chunk_size, chunks)
        self.hits += len(out)
        return out

    def put_many(self, entries: Iterable[tuple[DumpFile, FileDigest]]) -> None:
        """Queue entries; they are written in one transaction by ``flush`` (or ``close``)."""
        if self._db is None:
            return
        # A file changed less than min_age ago may still be being written, in
        # ways that need not move its times (stores through a shared memory
        # map into pages already dirty): its digest is not kept.
        settled = time.time_ns() - self.min_age_ns
        self._queued += [
            (*_key(f, d.chunk_size), b"".join(d.chunks))
            for f, d in entries
            if max(f.mtime_ns, f.ctime_ns) <= settled
        ]
        if len(self._queued) >= 50_000:
            self.flush()

    def flush(self) -> None:
        rows, self._queued = self._queued, []
        if self._db is None or not rows:
            return
        try:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO digests VALUES (?,?,?,?,?,?,?)", rows)
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._broken(exc)

    def _broken(self, exc: sqlite3.Error) -> None:
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None
        self._discard(f"digest cache {self.path} is damaged ({exc}); set aside, to be rebuilt")

    def close(self) -> None:
        self.flush()
        if self._db is not None:
            self._db.close()
            self._db = None
