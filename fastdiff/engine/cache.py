"""A per-user cache of chunk digests, so repeated sweeps rehash only what changed.

An entry is keyed by the buffer: its file's identity as ``stat`` sees it
(device, inode, size, mtime_ns, ctime_ns), the buffer's offset, length and
codec in that file, and the chunk size; a write moves the file's
ctime, so a stale entry is not found, let alone used. One kind of write
need not move the times at once: stores through a shared memory map into
pages that are already dirty. So only files unchanged for a while (one
minute by default) have their digests kept: a run still being written is
always hashed afresh. The cache lives
in ``$XDG_CACHE_HOME/fastdiff`` (else ``~/.cache/fastdiff``), never in a run
folder. It is SQLite in WAL mode, safe with several fastdiff processes at
once. A cache file that is corrupt or not ours is set aside and rebuilt,
with one warning, and is never trusted.

Whoever can write the cache decides verdicts, so it is trusted like the
fastdiff program itself, and checked as ssh checks its files: the folder is
created 0700 and the database 0600 (its ``-wal`` and ``-shm`` files take the
database's mode), and a cache whose folder or files belong to another user,
or are writable by group or others, whose database is a symbolic link, or
whose folder sits in a folder that others could rename it out of, is not
used at all (one warning; the comparison runs without it). Its content is
not checked unless asked: ``verify`` re-hashes a random share of the hits
before any is used, and one mismatch sets the whole cache aside.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import time

from ..sources.buffers import BufferDigest
from ..stages.hash import hash_batch
from ..textkit.escape import display_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterable, Sequence
    from pathlib import Path

    from ..sources.buffers import BufferRef

# sqlite3, pathlib, math and random are imported when a cache is opened:
# importing this module costs a command that never opens one nothing.

#: Digests of files changed more recently than this are not cached.
DEFAULT_MIN_AGE_S = 60.0
#: Bumped whenever the table layout or the digest definition changes
#: (2: entries are buffers, a file's byte range, not whole files).
CACHE_VERSION = 2
#: The file of this version's cache: versions of fastdiff that share a cache
#: folder (two environments) keep their own files, never each other's.
CACHE_FILE = f"digests-v{CACHE_VERSION}.sqlite3"
_APP_ID = 0x66646966  # "fdif": marks the file as fastdiff's
_DIGEST = 16


def default_cache_dir() -> Path:
    from pathlib import Path

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fastdiff"


class _Untrusted(Exception):
    """The cache could be written by someone other than this user: not used."""


def _unsafe(path: str | os.PathLike[str], st: os.stat_result, me: int, above: bool) -> str:
    """Why someone else could change ``path`` (empty if no one can).

    The cache folder and its files must be this user's and writable by no
    one else. A folder ``above`` it may also be root's, and writable by
    others if sticky (as /tmp is): they cannot rename what is not theirs.
    """
    what = f"{os.fspath(path)}{', a folder above the cache,' if above else ''}"
    if st.st_uid != me and not (above and st.st_uid == 0):
        return f"{what} is owned by uid {st.st_uid}, not by you (uid {me})"
    if st.st_mode & 0o022 and not (above and st.st_mode & stat.S_ISVTX):
        return f"{what} is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    return ""


def _check_trusted(folder: str | os.PathLike[str], names: Iterable[str]) -> None:
    """Raise ``_Untrusted`` unless only this user can change the cache: the
    ``folder``, the files ``names`` in it that exist (plain files, not
    links), and the folders it is reached through (also root)."""
    me = os.geteuid()
    # Whoever can rename entries in a folder above could swap in a cache of
    # their own between this check and the open.
    from pathlib import Path

    lexical, real = Path(os.path.abspath(folder)), Path(os.path.realpath(folder))
    for above in dict.fromkeys([*lexical.parents, *real.parents]):
        why = _unsafe(above, os.stat(above), me, above=True)
        if why:
            raise _Untrusted(why)
    st = os.stat(folder)
    why = _unsafe(folder, st, me, above=False)
    if not why and not stat.S_ISDIR(st.st_mode):
        why = f"{os.fspath(folder)} is not a folder"
    if why:
        raise _Untrusted(why)
    for name in names:
        path = os.path.join(folder, name)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            raise _Untrusted(f"{path} is a symbolic link")
        if not stat.S_ISREG(st.st_mode):
            raise _Untrusted(f"{path} is not a regular file")
        why = _unsafe(path, st, me, above=False)
        if why:
            raise _Untrusted(why)


def _key(f: BufferRef, chunk_size: int) -> tuple[object, ...]:
    """An entry's key, as the table's columns hold it: the buffer's identity
    (``BufferRef.key``: its file's, its offset and length, its codec's key,
    stored as its ``repr``, "" for none) and the chunk size."""
    *where, codec = f.key
    return (*where, "" if codec is None else repr(codec), chunk_size)


class DigestCache:
    """Look up and store chunk digests; every failure degrades to 'not cached'."""

    __slots__ = (
        "_db",
        "_queued",
        "folder",
        "hits",
        "last_verified",
        "min_age_ns",
        "path",
        "verified",
        "verify",
        "warnings",
    )

    def __init__(
        self,
        folder: str | os.PathLike[str] | None = None,
        min_age_s: float = DEFAULT_MIN_AGE_S,
        verify: float = 0.0,
    ) -> None:
        if not 0.0 <= verify <= 1.0:
            raise ValueError(f"the share of cache hits to verify must be 0..1, got {verify}")
        import sqlite3
        from pathlib import Path

        self.folder = Path(folder) if folder is not None else default_cache_dir()
        self.min_age_ns = int(min_age_s * 1e9)
        self.verify = verify
        self.path = self.folder / CACHE_FILE
        self.warnings: list[str] = []
        self.hits = 0
        self.verified = 0
        #: The buffers the last ``get_many`` re-hashed to verify its hits
        #: (whether they matched or not): reads a caller may count.
        self.last_verified: list[BufferRef] = []
        self._queued: list[tuple[object, ...]] = []
        self._db: sqlite3.Connection | None = None
        try:
            self._db = self._open()
        except _Untrusted as exc:
            self._refuse(exc)
        except (sqlite3.Error, OSError) as exc:
            self._discard(f"cannot use digest cache {self.path} ({exc}); rebuilding it")
            try:
                self._db = self._open()
            except _Untrusted as exc2:
                self._refuse(exc2)
            except (sqlite3.Error, OSError) as exc2:
                self._warn(f"digest cache disabled: {self.path}: {exc2}")
                self._db = None

    def _refuse(self, exc: _Untrusted) -> None:
        self._warn(
            f"digest cache {self.folder} not used: {exc}; whoever can write the cache decides "
            "verdicts, so fastdiff uses only one that no one else can change (make it yours "
            "alone, e.g. chmod go-w, or choose another --cache-dir); comparing without it"
        )

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        print(f"fastdiff: warning: {message}", file=sys.stderr)

    def _discard(self, message: str) -> None:
        self._warn(message)
        tag = f"bad-{os.getpid()}-{time.time_ns()}"
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.replace(f"{self.path}{suffix}", f"{self.path}{suffix}.{tag}")

    def _make_folder(self) -> None:
        """The cache folder, created 0700 if missing, and the folders above it
        that are missing 0755 (less if the umask says so), so that no one else
        can write them; a folder that exists is never changed."""
        if self.folder.is_dir():
            return
        missing = [d for d in (*reversed(self.folder.parents), self.folder) if not d.is_dir()]
        for d in missing:
            try:
                os.mkdir(d, 0o700 if d == self.folder else 0o755)
            except FileExistsError:
                continue
            if d == self.folder:
                os.chmod(d, 0o700)  # whatever the umask left

    def _make_database(self) -> None:
        """An empty database file, 0600 whatever the umask, if there is none;
        SQLite gives its -wal and -shm files the database's mode."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(self.path, flags, 0o600)
        except FileExistsError:
            return
        try:
            os.fchmod(fd, 0o600)
        finally:
            os.close(fd)

    def _open(self) -> sqlite3.Connection:
        import sqlite3

        self._make_folder()
        try:
            _check_trusted(self.folder, [f"{self.path.name}{s}" for s in ("", "-wal", "-shm")])
        except OSError as exc:
            raise _Untrusted(f"cannot check who can write it ({exc})") from exc
        self._make_database()
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            # One read transaction: another fastdiff may be creating the cache
            # right now, and three separate reads could see its table but not
            # yet its application id (and set aside a good cache).
            db.execute("BEGIN")
            app_id = db.execute("PRAGMA application_id").fetchone()[0]
            version = db.execute("PRAGMA user_version").fetchone()[0]
            tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            db.execute("COMMIT")
            if tables and app_id == _APP_ID and version != CACHE_VERSION:
                raise sqlite3.DatabaseError(
                    f"a digest cache of format {version}, from another fastdiff version; "
                    f"this one uses format {CACHE_VERSION}"
                )
            if tables and app_id != _APP_ID:
                raise sqlite3.DatabaseError(
                    f"not a fastdiff digest cache of version {CACHE_VERSION}"
                )
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            if not tables:
                # Marked and laid out in one transaction, so nobody sees it half made.
                db.execute("BEGIN IMMEDIATE")
                db.execute(f"PRAGMA application_id={_APP_ID}")
                db.execute(f"PRAGMA user_version={CACHE_VERSION}")
                db.execute(
                    "CREATE TABLE IF NOT EXISTS digests ("
                    " dev INTEGER, ino INTEGER, size INTEGER, mtime_ns INTEGER,"
                    " ctime_ns INTEGER, offset INTEGER, length INTEGER, codec TEXT,"
                    " chunk_size INTEGER, chunks BLOB NOT NULL,"
                    " PRIMARY KEY (dev, ino, size, mtime_ns, ctime_ns, offset, length, codec,"
                    " chunk_size))"
                )
                db.execute("COMMIT")
            db.execute("PRAGMA quick_check").fetchone()
        except BaseException:
            db.close()
            raise
        return db

    def get_many(
        self, files: Sequence[BufferRef], chunk_size: int
    ) -> dict[BufferRef, BufferDigest]:
        """Cached digests of ``files`` (buffers), in a few queries (one per 500 files)."""
        import sqlite3

        out: dict[BufferRef, BufferDigest] = {}
        self.last_verified = []
        if self._db is None:
            return out
        wanted: dict[tuple[object, ...], list[BufferRef]] = {}
        by_dev: dict[int, dict[int, None]] = {}  # the inodes of each device, once each
        for f in files:
            wanted.setdefault(_key(f, chunk_size), []).append(f)
            by_dev.setdefault(f.dev, {})[f.ino] = None
        rows = []
        try:
            for dev, unique in by_dev.items():
                inos = list(unique)
                for k in range(0, len(inos), 500):
                    part = inos[k : k + 500]
                    rows += self._db.execute(
                        "SELECT dev, ino, size, mtime_ns, ctime_ns, offset, length, codec,"
                        " chunk_size, chunks FROM digests"
                        f" WHERE dev=? AND ino IN ({','.join('?' * len(part))}) AND chunk_size=?",
                        (dev, *part, chunk_size),
                    ).fetchall()
        except sqlite3.Error as exc:
            self._broken(exc)
            return {}
        for *key, blob in rows:
            refs = wanted.get(tuple(key))
            if refs is None:
                continue  # the same inode with another size or time: stale, never used
            size = refs[0].size
            n_chunks = (size + chunk_size - 1) // chunk_size
            if not isinstance(blob, bytes) or len(blob) != n_chunks * _DIGEST:
                continue  # damaged entry: ignored; the fresh hash replaces it
            chunks = tuple(blob[i : i + _DIGEST] for i in range(0, len(blob), _DIGEST))
            for f in refs:
                out[f] = BufferDigest(f.path, size, chunk_size, chunks)
        if out and self.verify > 0:
            out = self._verified(out, chunk_size)
        self.hits += len(out)
        return out

    def _verified(
        self, hits: dict[BufferRef, BufferDigest], chunk_size: int
    ) -> dict[BufferRef, BufferDigest]:
        """The ``hits``, after re-hashing a random share of them (at least one).

        One digest that does not match its file means the cache cannot be
        trusted: it is set aside and no hit is used, so every file is hashed
        afresh. A file that cannot be re-hashed now is left out of the hits,
        to be hashed (and its trouble reported) with the files not cached.
        """
        from math import ceil
        from random import SystemRandom

        n = len(hits)
        k = min(n, max(1, ceil(self.verify * n)))
        keys = sorted(hits, key=lambda f: (f.path, f.offset, f.name))
        sample = SystemRandom().sample(keys, k)
        if len(sample) == 1:
            fresh = hash_batch(sample, chunk_size)
        else:
            from concurrent.futures import ThreadPoolExecutor

            # xxhash releases the GIL: threads re-hash files side by side.
            with ThreadPoolExecutor(min(k, os.cpu_count() or 1)) as pool:
                done = pool.map(hash_batch, [[f] for f in sample], [chunk_size] * k)
                fresh = [r for batch in done for r in batch]
        self.last_verified = [f for f, got in zip(sample, fresh, strict=True)
                              if isinstance(got, BufferDigest)]  # fmt: skip
        for f, got in zip(sample, fresh, strict=True):
            if not isinstance(got, BufferDigest):
                del hits[f]
            elif got.chunks != hits[f].chunks:
                self._broken_content(f.path, k, n)
                return {}
            else:
                self.verified += 1
        return hits

    def _broken_content(self, path: str, checked: int, hits: int) -> None:
        self._set_aside(
            f"digest cache {self.path} holds a digest that does not match "
            f"{display_path(path)} (re-hashed {checked} of {hits} cache hits): the cache is "
            "set aside (renamed *.bad-*), none of it is used, and every file is hashed afresh"
        )

    def put_many(self, entries: Iterable[tuple[BufferRef, BufferDigest]]) -> None:
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
        import sqlite3

        rows, self._queued = self._queued, []
        if self._db is None or not rows:
            return
        try:
            self._db.execute("BEGIN")
            self._db.executemany(
                "INSERT OR REPLACE INTO digests VALUES (?,?,?,?,?,?,?,?,?,?)", rows
            )
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            self._broken(exc)

    def _broken(self, exc: sqlite3.Error) -> None:
        self._set_aside(f"digest cache {self.path} is damaged ({exc}); set aside, to be rebuilt")

    def _set_aside(self, message: str) -> None:
        """Stop using the cache, and rename its files so that the next run rebuilds it."""
        import sqlite3

        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None
        self._queued = []
        self._discard(message)

    def close(self) -> None:
        self.flush()
        if self._db is not None:
            self._db.close()
            self._db = None
