"""Reading dump files: read-only opens, aligned reusable buffers, torn-read checks.

Every read of a dump goes through here. Files are opened read-only (with
``O_NOATIME`` where the kernel allows it, so not even the access time
moves), read with ``preadv`` into page-aligned buffers that each thread
reuses (unaligned buffers read 4x slower; fresh ones pay for page faults),
and checked against what discovery saw: a file whose size, mtime, ctime or
inode changed is reported, never compared.
"""

from __future__ import annotations

import mmap
import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ..stages.discover import DumpFile

#: Bytes per read call. 1 MiB keeps the buffer in cache for the hash that
#: follows and is a multiple of every element size.
READ_SIZE = 1 << 20

_local = threading.local()

#: Set on an interrupt: every read loop stops at its next piece.
CANCEL = threading.Event()


class Cancelled(Exception):
    """The comparison was interrupted."""


def _forget_buffers() -> None:
    _local.bufs = {}


# A forked worker must not reuse the parent's buffers: it gets its own.
os.register_at_fork(after_in_child=_forget_buffers)


class FileChanged(OSError):
    """The file is not what discovery saw, or changed while it was read."""

    kind = "changed"  # its Problem's kind (errors.problem_kind)

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.filename = path

    def __str__(self) -> str:
        return str(self.args[0])


def buffer(slot: int) -> memoryview:
    """This thread's page-aligned buffer number ``slot`` (READ_SIZE bytes)."""
    bufs: dict[int, memoryview] | None = getattr(_local, "bufs", None)
    if bufs is None:
        bufs = _local.bufs = {}
    mv = bufs.get(slot)
    if mv is None:
        # MAP_PRIVATE: Python's default for anonymous maps is MAP_SHARED, which
        # a forked worker would share with its parent and siblings.
        buf = mmap.mmap(-1, READ_SIZE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        mv = bufs[slot] = memoryview(buf)
    return mv


def _open_flags() -> list[int]:
    base = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK
    noatime = getattr(os, "O_NOATIME", 0)
    return [base | noatime, base] if noatime else [base]


def unchanged(f: DumpFile, st: os.stat_result) -> bool:
    return (
        st.st_size == f.size
        and st.st_mtime_ns == f.mtime_ns
        and st.st_ctime_ns == f.ctime_ns
        and st.st_ino == f.ino
        and st.st_dev == f.dev
    )


CHANGED = (
    "changed while fastdiff was comparing it (size, mtime or ctime moved); "
    "is a job still writing this run? Compare again once it is complete"
)


@contextmanager
def open_dump(f: DumpFile) -> Iterator[int]:
    """A read-only descriptor for a dump, checked before and after use."""
    fd = -1
    for flags in _open_flags():
        try:
            fd = os.open(f.path, flags)
            break
        except PermissionError:
            if flags & getattr(os, "O_NOATIME", 0):
                continue  # O_NOATIME needs ownership; retry without it
            raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileChanged(f"is no longer a regular file; {CHANGED}", f.path)
        if not unchanged(f, st):
            raise FileChanged(CHANGED, f.path)
        yield fd
        if not unchanged(f, os.fstat(fd)):
            raise FileChanged(CHANGED, f.path)
    finally:
        os.close(fd)


def read_exact(fd: int, into: memoryview, offset: int, path: str) -> memoryview:
    """Fill ``into`` from ``offset``; a short read means the file shrank."""
    if CANCEL.is_set():
        raise Cancelled("interrupted")
    got = 0
    want = len(into)
    while got < want:
        k = os.preadv(fd, [into[got:]], offset + got)
        if k <= 0:
            raise FileChanged(f"ended early at byte {offset + got}; {CHANGED}", path)
        got += k
    return into


def read_at(fd: int, offset: int, n: int, path: str) -> bytes:
    """A few bytes (one element) at ``offset``."""
    data = os.pread(fd, n, offset)
    if len(data) != n:
        raise FileChanged(f"ended early at byte {offset + len(data)}; {CHANGED}", path)
    return data


def describe_os_error(exc: OSError) -> str:
    """One line for an OSError while reading a dump, with what to do."""
    if isinstance(exc, FileChanged):
        return str(exc)
    if isinstance(exc, PermissionError):
        return "permission denied; fastdiff needs read access to the file"
    if isinstance(exc, FileNotFoundError):
        return "vanished during the comparison; is the run still being written or cleaned up?"
    return f"cannot read: {exc.strerror or exc}"
