"""Reading dump files: read-only opens, memory maps or aligned reusable buffers,
and the checks that a file is still what discovery saw.

Every read of a dump goes through here. Files are opened read-only (with
``O_NOATIME`` where the kernel allows it, so not even the access time
moves) and read one of two ways:

- ``read_exact``: ``preadv`` into a page-aligned buffer that each thread
  reuses (unaligned buffers read 4x slower; fresh ones pay for page faults).
  Small files take one such read: a map costs more than it saves below
  ``MAP_MIN`` bytes.
- ``views(..., use_mmap=True)``: read-only memory maps of at most ``WINDOW``
  bytes, each unmapped before the next is made (mapped pages of the page
  cache count in the process's resident memory, so it stays bounded). No
  copy at all: xxhash reads the page cache directly, 1.4-1.8x faster than
  ``preadv`` on this machine kind. Where a file cannot be mapped (a file
  system without ``mmap``, an address-space limit), the rest of it is read
  with ``preadv`` instead.

A file whose size, mtime, ctime or inode changed since discovery is
reported, never compared: ``check_unchanged`` (one ``fstat``) runs after a
file is read, and before each window is mapped, so a window never reaches
past the end of the file. What cannot be checked: a file truncated by
another process *while* a window of it is being hashed. Touching a mapped
page past the new end raises SIGBUS, which no Python code can catch; the
process dies (exit status 135), which is trouble, never a wrong verdict.
Callers that read files a writer may truncate (a run still being written)
pass ``use_mmap=False``.
"""

from __future__ import annotations

import mmap
import os
from _thread import _local
from stat import S_ISREG

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from types import TracebackType
    from typing import TypeVar

    from .buffers import BufferRef

    T = TypeVar("T")

#: Bytes per read call. 1 MiB keeps the buffer in cache for the hash that
#: follows and is a multiple of every element size.
READ_SIZE = 1 << 20
#: Bytes per memory map. Measured (two threads hashing a 512 MiB identical
#: pair, page cache warm): 4 MiB windows 64 ms, 8 MiB 57 ms, 16 MiB 52 ms,
#: 32 MiB 48 ms, against 92 ms through ``preadv``; 16 MiB keeps the mapped
#: pages of a thread under 16 MiB of resident memory. A multiple of the map
#: offset granularity (``mmap.ALLOCATIONGRANULARITY``).
WINDOW = 16 << 20
#: Files of at least this many bytes are mapped. Measured (one file hashed
#: at a time, page cache warm): 64 KiB reads in 6.4 us and maps in 17 us,
#: 256 KiB takes 24 us either way, 1 MiB reads in 117 us and maps in 81 us.
MAP_MIN = 256 << 10

#: Map offsets are multiples of this.
PAGE = mmap.ALLOCATIONGRANULARITY
_BASE_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK
_NOATIME = getattr(os, "O_NOATIME", 0)

_local_state = _local()


class _Flag:
    """A flag any thread may set and every read loop looks at (a bool under the
    GIL; ``threading.Event`` would import ``threading`` on every run)."""

    __slots__ = ("_set",)

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def clear(self) -> None:
        self._set = False

    def is_set(self) -> bool:
        return self._set


#: Set on an interrupt: every read loop stops at its next piece.
CANCEL = _Flag()


class Cancelled(Exception):
    """The comparison was interrupted."""


def _forget_buffers() -> None:
    _local_state.bufs = {}


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
    bufs: dict[int, memoryview] | None = getattr(_local_state, "bufs", None)
    if bufs is None:
        bufs = _local_state.bufs = {}
    mv = bufs.get(slot)
    if mv is None:
        # MAP_PRIVATE: Python's default for anonymous maps is MAP_SHARED, which
        # a forked worker would share with its parent and siblings.
        buf = mmap.mmap(-1, READ_SIZE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        mv = bufs[slot] = memoryview(buf)
    return mv


CHANGED = (
    "changed while fastdiff was comparing it (size, mtime or ctime moved); "
    "is a job still writing this run? Compare again once it is complete"
)


def check_unchanged(fd: int, f: BufferRef) -> None:
    """Raise FileChanged unless the open file is still what discovery saw.

    One ``fstat``: the same device and inode (so still the regular file
    discovery listed), the same size, mtime and ctime. Run after a file is
    read, it proves the bytes read are the bytes discovery listed: any write
    since then moved the ctime.
    """
    st = os.fstat(fd)
    if (
        st.st_size != f.file_size
        or st.st_mtime_ns != f.mtime_ns
        or st.st_ctime_ns != f.ctime_ns
        or st.st_ino != f.ino
        or st.st_dev != f.dev
    ):
        if not S_ISREG(st.st_mode):
            raise FileChanged(f"is no longer a regular file; {CHANGED}", f.path)
        raise FileChanged(CHANGED, f.path)


def open_fd(path: str) -> int:
    """A read-only descriptor (``O_NOATIME`` where allowed; never blocks on a FIFO)."""
    if _NOATIME:
        try:
            return os.open(path, _BASE_FLAGS | _NOATIME)
        except PermissionError:
            pass  # O_NOATIME needs ownership; retry without it
    return os.open(path, _BASE_FLAGS)


def read_regular(
    path: str,
    read: Callable[[int, os.stat_result], T],
    error: Callable[[str], Exception] = ValueError,
    what: str = "not a regular file",
) -> T:
    """``read(fd, st)`` over a read-only descriptor of ``path`` and its
    ``fstat``, the descriptor closed after; raises ``error(what)`` when
    ``path`` is not a regular file (a FIFO, a device, a folder), OSError when
    it cannot be opened."""
    fd = open_fd(path)
    try:
        st = os.fstat(fd)
        if not S_ISREG(st.st_mode):
            raise error(what)
        return read(fd, st)
    finally:
        os.close(fd)


class open_dump:  # used as a function: ``with open_dump(f) as fd``
    """A read-only descriptor for a dump, checked when opened and after use.

    The check after use runs only when the block ends normally; the
    descriptor is closed either way.
    """

    __slots__ = ("f", "fd")

    def __init__(self, f: BufferRef) -> None:
        self.f = f
        self.fd = -1

    def __enter__(self) -> int:
        self.fd = fd = open_fd(self.f.path)
        try:
            check_unchanged(fd, self.f)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if exc_type is None:
                check_unchanged(self.fd, self.f)
        finally:
            os.close(self.fd)


def read_exact(fd: int, into: memoryview, offset: int, path: str) -> memoryview:
    """Fill ``into`` from ``offset``; a short read means the file shrank."""
    if CANCEL._set:
        raise Cancelled("interrupted")
    got = 0
    want = len(into)
    while got < want:
        k = os.preadv(fd, [into[got:] if got else into], offset + got)
        if k <= 0:
            raise FileChanged(f"ended early at byte {offset + got}; {CHANGED}", path)
        got += k
    return into


try:  # how many buffers one preadv fills (Linux: 1024)
    _IOV_MAX = max(16, min(1024, os.sysconf("SC_IOV_MAX")))
except (AttributeError, ValueError, OSError):  # pragma: no cover - no sysconf
    _IOV_MAX = 16


def read_scattered(fd: int, parts: list[memoryview], offset: int, path: str) -> None:
    """Fill ``parts``, in order, from the consecutive bytes at ``offset``,
    as ``read_exact`` fills one: the kernel puts each part in its place
    (``preadv`` of up to ``_IOV_MAX`` buffers, the GIL released). A short
    read goes on where it stopped; an end of file means the file shrank."""
    if CANCEL._set:
        raise Cancelled("interrupted")
    i, pos = 0, offset
    while i < len(parts):
        batch = parts[i : i + _IOV_MAX]
        want = 0
        for p in batch:
            want += len(p)
        k = os.preadv(fd, batch, pos)
        if k <= 0:
            raise FileChanged(f"ended early at byte {pos}; {CHANGED}", path)
        pos += k
        if k == want:
            i += len(batch)
            continue
        while k >= len(parts[i]):  # on from the first part not filled
            k -= len(parts[i])
            i += 1
        parts = [*parts[:i], parts[i][k:], *parts[i + 1 :]] if k else parts


def read_at(fd: int, offset: int, n: int, path: str) -> bytes:
    """A few bytes (one element) at ``offset``."""
    data = os.pread(fd, n, offset)
    if len(data) != n:
        raise FileChanged(f"ended early at byte {offset + len(data)}; {CHANGED}", path)
    return data


def map_window(fd: int, f: BufferRef, offset: int, length: int) -> mmap.mmap:
    """A read-only map of ``length`` bytes of an open dump from ``offset`` (a
    multiple of the page size), made only after ``check_unchanged``: the
    window lies within the file as it is now. Raises OSError if the file
    cannot be mapped at all.
    """
    if CANCEL._set:
        raise Cancelled("interrupted")
    check_unchanged(fd, f)
    try:
        return mmap.mmap(fd, length, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ, offset=offset)
    except ValueError:
        # Python's own size check: the file shrank since the fstat above.
        raise FileChanged(CHANGED, f.path) from None


def _unmap(maps: list[mmap.mmap]) -> None:
    for m in maps:
        try:  # noqa: SIM105 - contextlib is not otherwise imported on this path
            m.close()
        except BufferError:  # a consumer kept a view: unmapped when it goes
            pass


def _windows(
    files: tuple[tuple[int, BufferRef], ...],
    start: int,
    end: int,
    use_mmap: bool,
    slots: tuple[int, ...],
) -> Iterator[tuple[memoryview, ...]]:
    """Views of bytes ``start:end`` of each open dump in ``files``, side by
    side (``views`` says how), read into this thread's buffers ``slots``
    where they are read."""
    pos = start
    while use_mmap and pos < end:
        base = pos - pos % PAGE
        length = min(WINDOW, end - base)
        maps: list[mmap.mmap] = []
        try:
            for fd, f in files:
                maps.append(map_window(fd, f, base, length))
        except BaseException as exc:
            _unmap(maps)
            if isinstance(exc, OSError) and not isinstance(exc, FileChanged):
                break  # cannot be mapped (here, now): read the rest
            raise
        try:
            yield tuple(memoryview(m)[pos - base :] for m in maps)
        finally:
            _unmap(maps)
        pos = base + length
    if pos < end:
        bufs = [buffer(slot) for slot in slots]
        while pos < end:
            n = min(READ_SIZE, end - pos)
            yield tuple(
                read_exact(fd, buf[:n], pos, f.path)
                for (fd, f), buf in zip(files, bufs, strict=True)
            )
            pos += n
    for fd, f in files:
        check_unchanged(fd, f)


def views(
    fd: int, f: BufferRef, start: int, end: int, use_mmap: bool = True
) -> Iterator[memoryview]:
    """Consecutive views of bytes ``start:end`` of an open buffer (counted
    from the buffer's start), in order; once the last is consumed, the file
    is checked (``check_unchanged``).

    Each view is valid only until the next is asked for: a consumer must not
    keep one (or a slice of one) beyond that, and should ``release()`` it
    when done, so that its window is unmapped at once. With ``use_mmap``,
    windows of at most ``WINDOW`` bytes are mapped one at a time, each after
    a check of the file, and unmapped before the next; should mapping fail,
    the rest is read, as it all is without ``use_mmap``, into this thread's
    buffer 0. Only for a buffer that is a plain byte range of its file
    (``access.buffer_views`` reads any buffer).
    """
    base = f.offset
    for (view,) in _windows(((fd, f),), base + start, base + end, use_mmap, (0,)):
        yield view


def describe_os_error(exc: OSError) -> str:
    """One line for an OSError while reading a dump, with what to do."""
    if isinstance(exc, FileChanged) or getattr(exc, "kind", None) == "malformed":
        return str(exc)
    if isinstance(exc, PermissionError):
        return "permission denied; fastdiff needs read access to the file"
    if isinstance(exc, FileNotFoundError):
        return "vanished during the comparison; is the run still being written or cleaned up?"
    return f"cannot read: {exc.strerror or exc}"
