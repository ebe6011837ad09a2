"""Whoever can write the digest cache decides the verdict: who fastdiff lets.

The cache is trusted like the fastdiff program itself, so it is made and
checked as ssh makes and checks its files: the folder 0700, the database
0600, and a cache that someone else could write is not used at all. Its
content is taken on trust unless ``--cache-verify`` re-hashes some hits.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import fastdiff as cli

from fastdiff import CompareOptions
from fastdiff.engine.cache import DigestCache
from fastdiff.sources.folder import discover
from fastdiff.sweep import sweep

REPO = Path(__file__).resolve().parents[1]
IS_ROOT = os.geteuid() == 0
NOBODY = 65534
root_only = pytest.mark.skipif(not IS_ROOT, reason="giving a file to another user needs root")
NAMES = ("step_0_x.bin", "step_1_x.bin")


def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    """Two runs whose step-1 dumps differ, with files of equal sizes."""
    a, b = tmp_path / "a", tmp_path / "b"
    for run, tail in ((a, b"\x01"), (b, b"\x02")):
        run.mkdir()
        (run / NAMES[0]).write_bytes(bytes(4096))
        (run / NAMES[1]).write_bytes(bytes(4095) + tail)
    return a, b


def swept(a: Path, b: Path, cache: Path, *more: str) -> tuple[int, str, int, list[str]]:
    """sweep A B with the cache: exit code, verdict, cache hits, warnings."""
    r = cli("sweep", "--baseline", str(a), str(b), "--cache-dir", str(cache),
            "--cache-min-age", "0", "--schema", "raw", "--format", "jsonl", *more)  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    pair, summary = (json.loads(line) for line in r.stdout.splitlines())
    warnings = [line for line in r.stderr.splitlines() if line.startswith("fastdiff: warning:")]
    assert len(warnings) == len(r.stderr.splitlines()), r.stderr  # one line each
    return r.returncode, pair["verdict"], summary["cache_hits"], warnings


def rows(db_path: Path) -> dict[int, bytes]:
    db = sqlite3.connect(db_path)
    try:
        return dict(db.execute("SELECT ino, chunks FROM digests").fetchall())
    finally:
        db.close()


def forge(db_path: Path, blobs: dict[int, bytes]) -> None:
    """Overwrite the digests of the files with these inodes, as an attacker would."""
    db = sqlite3.connect(db_path)
    try:
        for ino, blob in blobs.items():
            db.execute("UPDATE digests SET chunks = ? WHERE ino = ?", (blob, ino))
        db.commit()
    finally:
        db.close()


def ino(path: Path) -> int:
    return path.stat().st_ino


def forged_cache(tmp_path: Path, cache: Path) -> tuple[Path, Path]:
    """The issue's scenario: two different runs swept with the cache, then
    run A's digests copied over run B's rows; with the cache trusted, the
    sweep says identical."""
    a, b = two_runs(tmp_path)
    assert swept(a, b, cache) == (1, "diverged", 0, [])
    db_path = cache / "digests-v2.sqlite3"
    have = rows(db_path)
    assert len(have) == 4
    forge(db_path, {ino(b / n): have[ino(a / n)] for n in NAMES})
    return a, b


# --- who may write the cache -------------------------------------------------------------


def _chmod(mode: int, where: str) -> Callable[[Path], None]:
    def change(cache: Path) -> None:
        os.chmod(cache / where if where else cache, mode)

    return change


def _chown(where: str) -> Callable[[Path], None]:
    def change(cache: Path) -> None:
        path = cache / where if where else cache
        if not path.exists():
            path.write_bytes(b"")  # an empty -wal or -shm left for fastdiff's SQLite to find
        os.chown(path, NOBODY, -1)

    return change


def _symlink_db(cache: Path) -> None:
    db = cache / "digests-v2.sqlite3"
    elsewhere = cache.parent / "elsewhere.sqlite3"
    os.replace(db, elsewhere)
    db.symlink_to(elsewhere)


def _parent_writable(cache: Path) -> None:
    os.chmod(cache.parent, 0o777)


UNSAFE = {
    "database writable by others": (_chmod(0o666, "digests-v2.sqlite3"), "writable by group"),
    "database writable by group": (_chmod(0o620, "digests-v2.sqlite3"), "writable by group"),
    "folder writable by others": (_chmod(0o777, ""), "writable by group"),
    "folder writable by group": (_chmod(0o770, ""), "writable by group"),
    "folder above writable by others": (_parent_writable, "a folder above the cache"),
    "database is a symbolic link": (_symlink_db, "symbolic link"),
    "database of another user": (_chown("digests-v2.sqlite3"), f"owned by uid {NOBODY}"),
    "-wal of another user": (_chown("digests-v2.sqlite3-wal"), f"owned by uid {NOBODY}"),
    "-shm of another user": (_chown("digests-v2.sqlite3-shm"), f"owned by uid {NOBODY}"),
    "folder of another user": (_chown(""), f"owned by uid {NOBODY}"),
}


@pytest.mark.parametrize(
    "how",
    [pytest.param(k, marks=root_only) if "another user" in k else k for k in UNSAFE],
)
def test_a_cache_someone_else_could_write_is_not_used(tmp_path: Path, how: str) -> None:
    """Issue 8, item 14: a forged cache that others can write decided the
    verdict ('identical', exit 0). Now it is refused with one warning, and
    the runs are compared without it."""
    cache = tmp_path / "shared" / "cc"
    a, b = forged_cache(tmp_path, cache)
    change, why = UNSAFE[how]
    change(cache)
    code, verdict, hits, warnings = swept(a, b, cache)
    assert (code, verdict, hits) == (1, "diverged", 0)
    assert len(warnings) == 1 and "not used" in warnings[0] and why in warnings[0], warnings
    # Refused, not repaired or renamed: someone else's files are left alone.
    assert (cache / "digests-v2.sqlite3").exists()
    assert not list(cache.glob("*.bad-*"))


def test_a_sticky_folder_above_the_cache_is_fine(tmp_path: Path) -> None:
    """As in /tmp: others may write the folder above, but not rename our cache out of it."""
    a, b = two_runs(tmp_path)
    cache = tmp_path / "shared" / "cc"
    assert swept(a, b, cache)[:3] == (1, "diverged", 0)
    os.chmod(cache.parent, 0o1777)
    assert swept(a, b, cache) == (1, "diverged", 4, [])


@root_only
def test_folders_above_the_cache_may_be_roots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a user other than root: a cache of one's own, reached through
    folders of root's (/, /tmp, ...), is used; root's own cache is not."""
    user = 1000
    cache = tmp_path / "cc"
    DigestCache(cache).close()
    for path in (cache, *cache.iterdir()):
        os.chown(path, user, -1)
    monkeypatch.setattr(os, "geteuid", lambda: user)
    c = DigestCache(cache)
    c.close()
    assert c.warnings == []
    os.chown(cache, 0, -1)
    c = DigestCache(cache)
    c.close()
    assert (
        len(c.warnings) == 1
        and f"{cache} is owned by uid 0, not by you (uid {user})" in (c.warnings[0])
    )


def test_a_new_cache_is_private_whatever_the_umask(tmp_path: Path) -> None:
    a, b = two_runs(tmp_path)
    cache = tmp_path / "new" / "cc"
    r = cli("sweep", "--baseline", str(a), str(b), "--cache-dir", str(cache), "--cache-min-age",
            "0", "--schema", "raw", umask=0)  # fmt: skip
    assert r.returncode == 1 and not r.stderr, r.stderr
    mode = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (cache.parent, cache)}
    assert mode == {"new": 0o755, "cc": 0o700}
    assert stat.S_IMODE((cache / "digests-v2.sqlite3").stat().st_mode) == 0o600
    # The next run, under the same umask, trusts what the first one made.
    r = cli("sweep", "--baseline", str(a), str(b), "--cache-dir", str(cache), "--cache-min-age",
            "0", "--schema", "raw", umask=0)  # fmt: skip
    assert r.returncode == 1 and not r.stderr, r.stderr
    assert json.loads(r.stdout.splitlines()[-1])["cache_hits"] == 4


def test_the_wal_and_shm_files_are_private_too(tmp_path: Path) -> None:
    a, b = two_runs(tmp_path)
    old = os.umask(0)
    try:
        c = DigestCache(tmp_path / "cc", min_age_s=0)
        sweep([(str(a), str(b))], CompareOptions(), cache=c)
        c.flush()
        side = [tmp_path / "cc" / f"digests-v2.sqlite3{s}" for s in ("-wal", "-shm")]
        modes = [stat.S_IMODE(p.stat().st_mode) for p in side]  # while it is open
        c.close()
    finally:
        os.umask(old)
    assert modes == [0o600, 0o600] and c.warnings == []


def test_an_existing_folder_is_used_as_it_is(tmp_path: Path) -> None:
    """A folder of one's own that only its owner can write is used and never chmod-ed."""
    a, b = two_runs(tmp_path)
    cache = tmp_path / "cc"
    cache.mkdir(mode=0o750)
    os.chmod(cache, 0o750)
    assert swept(a, b, cache) == (1, "diverged", 0, [])
    assert swept(a, b, cache) == (1, "diverged", 4, [])
    assert stat.S_IMODE(cache.stat().st_mode) == 0o750


# --- what is in the cache: trusted, unless --cache-verify --------------------------------


def test_forged_content_in_a_safe_cache_is_trusted_without_verify(tmp_path: Path) -> None:
    """The trust boundary, as the README states it: a cache only you can write
    is believed. Whoever forges it could as well replace fastdiff itself."""
    cache = tmp_path / "cc"
    a, b = forged_cache(tmp_path, cache)
    assert swept(a, b, cache) == (0, "identical", 4, [])


def test_cache_verify_catches_forged_content(tmp_path: Path) -> None:
    cache = tmp_path / "cc"
    a, b = forged_cache(tmp_path, cache)
    code, verdict, hits, warnings = swept(a, b, cache, "--cache-verify", "1.0")
    assert (code, verdict, hits) == (1, "diverged", 0)
    assert len(warnings) == 1 and "does not match" in warnings[0], warnings
    assert list(cache.glob("digests-v2.sqlite3.bad-*"))  # set aside, not used again
    assert swept(a, b, cache) == (1, "diverged", 0, [])
    assert swept(a, b, cache) == (1, "diverged", 4, [])


def test_cache_verify_rehashes_at_least_one_hit(tmp_path: Path) -> None:
    """Every digest forged alike (the runs would be 'identical'): even a
    tiny share of the hits re-hashed catches it."""
    cache = tmp_path / "cc"
    a, b = two_runs(tmp_path)
    assert swept(a, b, cache)[:3] == (1, "diverged", 0)
    db_path = cache / "digests-v2.sqlite3"
    forge(db_path, dict.fromkeys(rows(db_path), bytes(16)))
    assert swept(a, b, cache) == (0, "identical", 4, [])
    code, verdict, hits, warnings = swept(a, b, cache, "--cache-verify", "0.001")
    assert (code, verdict, hits) == (1, "diverged", 0)
    assert len(warnings) == 1 and "re-hashed 1 of 4" in warnings[0], warnings


def test_cache_verify_keeps_an_honest_cache(tmp_path: Path) -> None:
    a, b = two_runs(tmp_path)
    cache = tmp_path / "cc"
    swept(a, b, cache)
    assert swept(a, b, cache, "--cache-verify", "1") == (1, "diverged", 4, [])
    assert not list(cache.glob("*.bad-*"))


def test_cache_verify_leaves_out_a_file_it_cannot_rehash(tmp_path: Path) -> None:
    """A file that changed since it was listed is no mismatch of the cache:
    it is left to be hashed (and reported) with the files not cached."""
    a, b = two_runs(tmp_path)
    c = DigestCache(tmp_path / "cc", min_age_s=0)
    sweep([(str(a), str(b))], CompareOptions(), cache=c)
    c.close()
    files = [*discover(a).files, *discover(b).files]
    (a / NAMES[0]).unlink()
    c = DigestCache(tmp_path / "cc", min_age_s=0, verify=1.0)
    hits = c.get_many(files, CompareOptions().chunk_size)
    c.close()
    assert sorted(f.path for f in hits) == sorted(
        f.path for f in files if f.path != str(a / NAMES[0])
    )
    assert c.hits == 3 and c.verified == 3 and c.warnings == []


@pytest.mark.parametrize("bad", ["1.5", "x", "nan"])
def test_cache_verify_takes_a_fraction(tmp_path: Path, bad: str) -> None:
    a, b = two_runs(tmp_path)
    r = cli("sweep", "--baseline", str(a), str(b), "--no-cache", "--cache-verify", bad)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "argument --cache-verify: " in r.stderr  # not "unrecognized arguments"


def test_a_cache_created_meanwhile_by_another_fastdiff_is_used_not_set_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two fastdiffs opening a new cache at once: the second reads the cache's
    marks while the first creates it; it must never see a half-made cache
    (its table, but not yet its application id) and set it aside."""
    folder = tmp_path / "cache"
    real_connect = sqlite3.connect
    other: list[threading.Thread] = []

    class _Rows:
        def __init__(self, rows: list[tuple[object, ...]]) -> None:
            self.rows = rows

        def fetchone(self) -> tuple[object, ...]:
            return self.rows[0]

    class Racing:
        """Our connection; the other fastdiff creates the cache right after
        our first read."""

        def __init__(self, *args: object, **kwargs: object) -> None:
            self.db = real_connect(*args, **kwargs)

        def execute(self, sql: str, *args: object) -> object:
            cur = self.db.execute(sql, *args)
            if sql == "PRAGMA application_id" and not other:
                # Finish our statement first: only an open transaction of ours
                # may hold the other fastdiff off now.
                rows = cur.fetchall()
                monkeypatch.setattr(sqlite3, "connect", real_connect)
                t = threading.Thread(target=lambda: DigestCache(folder).close())
                other.append(t)
                t.start()
                t.join(timeout=0.5)  # done at once, unless our reads hold it off
                return _Rows(rows)
            return cur

        def __getattr__(self, name: str) -> object:
            return getattr(self.db, name)

    monkeypatch.setattr(sqlite3, "connect", Racing)
    c = DigestCache(folder)
    c.close()
    other[0].join()
    assert c.warnings == []
    assert capsys.readouterr().err == ""
    assert not list(folder.glob("*.bad-*"))


def test_work_counts_only_the_files_it_read_to_hash(tmp_path: Path) -> None:
    """work.files_hashed: files read to hash them; digests a manifest or the
    cache supplies are not counted (they were counted as hashed)."""
    a, b = tmp_path / "a", tmp_path / "b"
    for run in (a, b):
        run.mkdir()
        for step in range(3):
            (run / f"step_{step}_rewards.bin").write_bytes(bytes(range(64)))
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}

    def work(*args: str | Path) -> dict:
        p = cli(*args, "--format", "json", env=env)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)["work"]

    assert (work("compare", a, b, "--no-cache")["files_hashed"]) == 6
    manifest = tmp_path / "a.json"
    h = cli("hash", a, "-o", manifest, "--no-cache", env=env)
    assert h.returncode == 0, h.stderr
    w = work("compare", manifest, b, "--no-cache")
    assert (w["files_hashed"], w["bytes_hashed"]) == (3, 3 * 64)  # only run B's files


def test_cache_verification_reads_are_counted_apart(tmp_path: Path) -> None:
    """--cache-verify re-hashes cache hits: work.files_verified and
    bytes_verified count those reads (files_hashed does not), and -v says so."""
    a, b = tmp_path / "a", tmp_path / "b"
    for run in (a, b):
        run.mkdir()
        for step in range(3):
            (run / f"step_{step}_rewards.bin").write_bytes(bytes(range(64)))
    cache = ("--cache", "--cache-dir", str(tmp_path / "cache"), "--cache-min-age", "0")

    def work(*more: str) -> dict:
        p = cli("compare", a, b, *cache, *more, "--format", "json")
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)["work"]

    w = work()  # fills the cache
    assert (w["files_hashed"], w["files_verified"], w["bytes_verified"]) == (6, 0, 0)
    w = work()  # hits, none verified
    assert (w["files_hashed"], w["files_verified"], w["bytes_verified"]) == (0, 0, 0)
    w = work("--cache-verify", "1")
    assert (w["files_hashed"], w["bytes_hashed"]) == (0, 0)
    assert (w["files_verified"], w["bytes_verified"]) == (6, 6 * 64)
    w = work("--cache-verify", "0.5")
    assert (w["files_verified"], w["bytes_verified"]) == (3, 3 * 64)
    p = cli("compare", a, b, *cache, "--cache-verify", "1", "-v")
    assert p.returncode == 0
    assert p.stdout.splitlines()[-1] == (
        "cache: 6 hits verified by hashing again (384 bytes read, besides 0 hashed)"
    )
    assert "cache:" not in cli("compare", a, b, *cache, "-v").stdout
