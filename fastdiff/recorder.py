"""``Recorder``: a training loop writes a run that ``compare`` reads, digests first.

::

    from fastdiff import Recorder
    with Recorder("runs/a") as rec:            # path defaults to $FASTDIFF_RUN
        for step in range(steps):
            ...
            rec.dump(step, "rewards", rewards)  # numpy, torch (any device), jax, cupy, ...

Each dump is a self-describing ``step_<N>_<name>.npy`` (numpy's format,
byte for byte as ``np.save`` writes it; bfloat16 and the 8-bit floats as
raw bytes of their width, ``<V2`` and ``<V1``, as numpy saves them, their
type in the digest log), written whole under a hidden temporary name
(``names.TEMP_PREFIX``) in the run folder and renamed into place: a reader
never sees a partial dump, and a job killed at any instant leaves whole
dumps and, at worst, one hidden temporary that every command passes over.
A write that fails (a full disk) raises OSError naming the dump, and
leaves nothing under the dump's name.

While writing, the recorder computes the chunk digests ``compare`` computes
(``stages.hash.chunk_digests``; a large array on a second thread while the
main thread writes it, or, recorded as digests only, on several) and
appends them, with the file's identity, to the run's digest log
(``sources.digestlog``, which says when they are trusted). ``data``
chooses the steps written in full; at the others only the digests are
recorded, and ``compare`` still names the first divergent step and
buffers.

For many small buffers recorded as digests only (a tracer's records,
``fastdiff.trace``), ``digests`` hashes an array on the calling thread
and ``record_digests`` writes a batch of them as one step's lines, in one
write: a digests-only ``dump`` hands each array to a hashing thread and
writes its line at once, which costs far more than hashing a small array.

numpy is imported at the first dump, never at import; torch, jax and cupy
never (their arrays are recognised by their type's module).
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import time
from functools import lru_cache

from .model.value import Value
from .options import DEFAULT_CHUNK_SIZE, check_chunk_size
from .sources.names import DIGEST_LOG, TEMP_PREFIX, dump_name, is_dump_name, split_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Container, Iterable, Mapping
    from concurrent.futures import Future, ThreadPoolExecutor
    from typing import Any

    DataSteps = bool | Container[int] | Callable[[int], bool]

__all__ = ["RANK_VARIABLES", "RUN_ENV", "Digested", "Recorder", "launcher_rank"]

#: The environment variable a recorder's run folder defaults to (``fastdiff
#: rerun`` sets it for each arm).
RUN_ENV = "FASTDIFF_RUN"
#: The launchers' variables a default rank is read from, in this order: the
#: process's rank and the number of processes (torchrun and
#: torch.distributed, Open MPI, MPICH and Intel MPI, Slurm's srun).
RANK_VARIABLES = (
    ("RANK", "WORLD_SIZE"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("PMI_RANK", "PMI_SIZE"),
    ("SLURM_PROCID", "SLURM_NTASKS"),
)
#: An array of at least this many bytes written in full is hashed on a
#: second thread while the main thread writes it (xxhash and ``os.write``
#: release the GIL).
OVERLAP_MIN = 4 << 20
#: An array recorded as digests only is hashed on up to ``HASH_THREADS``
#: threads (one core is left to the training loop), each given at least
#: ``PARALLEL_MIN`` bytes of whole chunks, so that each chunk's digest is the
#: one ``chunk_digests`` gives for the whole array.
PARALLEL_MIN = 16 << 20
HASH_THREADS = max(1, min(4, (os.cpu_count() or 1) - 1))
#: The most bytes one ``os.write`` is given.
_WRITE_MAX = 1 << 30
#: Lines of whole dumps, once sealed, are written in batches: when this many
#: bytes are waiting, when the oldest has waited ``BATCH_S`` seconds, with a
#: digests-only line (which is written at once: it is the dump), or at close.
BATCH_BYTES = 64 << 10
BATCH_S = 1.0
#: How long ``close`` waits for the file system's clock to pass the last
#: dump's ctime (``sources.digestlog``): coarse file systems tick every 1-2 s.
SEAL_TIMEOUT_S = 5.0


def launcher_rank(environ: Mapping[str, str] | None = None) -> int | None:
    """The rank a launcher gave this process (``RANK_VARIABLES``, the first
    set), or None when none is set or the job has a single process.
    ValueError names a variable that is not a rank."""
    env = os.environ if environ is None else environ
    for rank_var, size_var in RANK_VARIABLES:
        text = env.get(rank_var)
        if text is None:
            continue
        if not (text.isascii() and text.strip().isdigit()):
            raise ValueError(f"${rank_var} is {text!r}, not a rank (an integer >= 0)")
        size = env.get(size_var, "").strip()
        if size.isascii() and size.isdigit() and int(size) <= 1:
            return None  # one process: the run folder itself
        return int(text)
    return None


def _npy_descr(name: str) -> str:
    """The ``.npy`` descr a recorder writes for fastdiff dtype ``name``: numpy's
    own, or raw bytes of the width for the types numpy cannot name."""
    from .dtypes import DTYPES

    dt = DTYPES[name]
    if name == "bool":
        return "|b1"
    if not dt.numpy:  # bfloat16, the 8-bit floats: what np.save writes for ml_dtypes'
        return f"<V{dt.itemsize}"
    return "|" + dt.numpy[1:] if dt.itemsize == 1 else dt.numpy


@lru_cache(maxsize=256)
def _npy_header(descr: str, shape: tuple[int, ...]) -> bytes:
    """The ``.npy`` header numpy writes for a C-order array (format 1.0)."""
    import io

    from numpy.lib.format import write_array_header_1_0

    out = io.BytesIO()
    write_array_header_1_0(out, {"descr": descr, "fortran_order": False, "shape": shape})
    return out.getvalue()


def host_bytes(array: object) -> tuple[Any, str, tuple[int, ...]]:
    """``array`` on the host: (its bytes in C order, as a flat numpy uint8
    array, a view where it can be; fastdiff's dtype name; its shape). Takes
    numpy arrays, torch tensors (any device: copied to the host once),
    cupy arrays, jax arrays and anything with ``__array__`` or
    ``__dlpack__``, or a Python number or list. TypeError or ValueError
    says what cannot be recorded."""
    import numpy as np

    module = type(array).__module__
    if module.startswith("torch") and hasattr(array, "detach"):
        return _torch_bytes(array)
    if module.startswith("cupy") and hasattr(array, "get"):
        array = array.get()  # one copy to the host
    if isinstance(array, np.ndarray):
        arr = array
    elif hasattr(array, "__array__") or isinstance(array, (int, float, bool, list, tuple)):
        arr = np.asarray(array)
    elif hasattr(array, "__dlpack__"):
        try:
            arr = np.from_dlpack(array)
        except (BufferError, RuntimeError, TypeError, ValueError) as exc:
            raise TypeError(
                f"cannot read this {type(array).__name__} through __dlpack__ ({exc}); "
                "copy it to the host first"
            ) from None
    else:
        raise TypeError(
            f"cannot record a {type(array).__module__}.{type(array).__name__}: give a numpy "
            "array, a torch tensor, a jax or cupy array, or an object with __array__ or "
            "__dlpack__"
        )
    name = _numpy_dtype_name(arr.dtype)
    shape = tuple(arr.shape)
    if not arr.flags.c_contiguous:
        arr = np.array(arr, order="C")
    return arr.reshape(-1).view(np.uint8), name, shape


def _numpy_dtype_name(dt: Any) -> str:
    from .dtypes import _NUMPY_NAMES, from_descr

    if dt.kind == "V" and dt.name in _NUMPY_NAMES:  # ml_dtypes' bfloat16 and 8-bit floats
        return _NUMPY_NAMES[dt.name]
    try:
        return from_descr(dt.str).name
    except ValueError as exc:
        raise ValueError(f"dtype {dt}: {exc}") from None


#: torch dtype -> (fastdiff's name, the torch dtype of the same width numpy
#: can read it as, or None where numpy reads it itself), as met.
_TORCH_TYPES: dict[Any, tuple[str, Any]] = {}


def _torch_type(dtype: Any) -> tuple[str, Any]:
    from .dtypes import TORCH

    torch_name = str(dtype).rpartition(".")[2]
    name = TORCH.get(torch_name)
    if name is None:
        raise ValueError(f"dtype torch.{torch_name} is not one fastdiff compares")
    import torch

    # numpy has no bfloat16 nor 8-bit floats: their bytes, read as integers of their width.
    as_int = {"bf16": torch.int16}.get(name, torch.uint8 if name.startswith("f8") else None)
    _TORCH_TYPES[dtype] = (name, as_int)
    return name, as_int


def _torch_host(tensor: Any) -> tuple[Any, str, tuple[int, ...]]:
    """A torch tensor on the host as a C-order numpy array of its bytes'
    width (not flattened), fastdiff's dtype name, and its shape."""
    t = tensor.detach() if tensor.requires_grad else tensor
    found = _TORCH_TYPES.get(t.dtype)
    name, as_int = found if found is not None else _torch_type(t.dtype)
    if t.layout != _strided():
        raise TypeError(f"a {t.layout} tensor: record t.to_dense()")
    if not t.is_cpu:
        t = t.cpu()  # the one copy to the host
    shape = tuple(t.shape)
    if not t.is_contiguous():
        t = t.contiguous()
    if t.is_neg():
        t = t.resolve_neg()
    if as_int is not None:
        t = t.view(as_int)
    return t.numpy(), name, shape


def _torch_bytes(tensor: Any) -> tuple[Any, str, tuple[int, ...]]:
    import numpy as np

    arr, name, shape = _torch_host(tensor)
    return arr.reshape(-1).view(np.uint8), name, shape


@lru_cache(maxsize=1)
def _strided() -> Any:
    import torch

    return torch.strided


def _wants(data: DataSteps) -> Callable[[int], bool]:
    if data is True or data is False:
        return lambda step: data  # type: ignore[return-value]
    if callable(data):
        return lambda step: bool(data(step))
    if hasattr(data, "__contains__"):
        return data.__contains__  # type: ignore[union-attr]
    raise TypeError(
        f"data must be True, False, a set of steps or a predicate on the step, got {data!r}"
    )


def _xxh3_128(data: Any) -> bytes:
    """xxh3-128 of ``data``; xxhash is imported at the first call, never at import."""
    global _xxh3_128
    from xxhash import xxh3_128_digest

    _xxh3_128 = xxh3_128_digest  # type: ignore[assignment]
    return xxh3_128_digest(data)


@lru_cache(maxsize=1 << 16)
def _fits_name(name: str) -> bool:
    """Whether ``name`` can be a buffer name (as ``dump`` checks it: the rule
    reads the name alone, whatever the step): cached, since a tracer records
    the same names at every step."""
    filename = dump_name(0, name, ".npy")
    return (
        bool(name)
        and "/" not in name
        and "\0" not in name
        and (split_name(filename) == ("0", name, "npy"))
    )


class Digested(Value):
    """An array's chunk digests as a digests-only dump records them (an
    immutable value): fastdiff's dtype name, the shape, the size in bytes
    and the chunk digests at the recorder's chunk size
    (``Recorder.digests``, then ``Recorder.record_digests``)."""

    __slots__ = ("chunk_size", "chunks", "dtype", "shape", "size")

    def __init__(
        self, dtype: str, shape: tuple[int, ...], size: int, chunk_size: int,
        chunks: tuple[bytes, ...],
    ) -> None:  # fmt: skip
        self.dtype = dtype
        self.shape = shape
        self.size = size
        self.chunk_size = chunk_size
        self.chunks = chunks


class _Pending:
    """A dump's log line, held until the file system's clock passes its ctime."""

    __slots__ = ("ctime_ns", "key", "line")

    def __init__(
        self, key: tuple[int, str], ctime_ns: int, line: Callable[[int, str | None], bytes]
    ) -> None:
        self.key = key
        self.ctime_ns = ctime_ns
        self.line = line  # the line, given its sealed_ns and the check of the line it replaces


class Recorder:
    """Writes a run: ``dump(step, name, array)`` per buffer, then ``close()``
    (or use it as a context manager).

    ``path``: the run folder (made if missing; default ``$FASTDIFF_RUN``);
    ``rank``: write under ``rank_<R>/`` of it (default: the rank a launcher
    gives, ``launcher_rank``; none for a job of one process); a folder
    that already holds dumps (or a digest log) raises FileExistsError,
    naming it and how many it holds: a run recorded there would mix with
    them, and their steps show up as in one run only; ``exist_ok=True``
    writes into it all the same (a dump of the same step and name replaces
    the old one). ``data``:
    which steps are written in full: True (all), False (none: digests
    only), a set of steps, or a predicate on the step; the others record
    their digests only. ``chunk_size``: that of the digests (compare hashes
    the other run alike). ``dump`` may be called from any thread: dumps are
    written one at a time.
    """

    __slots__ = (
        "_batch", "_batch_since", "_checks", "_fs_now", "_lock", "_log_fd", "_pending", "_pool",
        "_seq", "_want", "chunk_size", "closed", "path", "rank", "run",
    )  # fmt: skip

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        rank: int | None = None,
        data: DataSteps = True,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        exist_ok: bool = False,
    ) -> None:
        if path is None:
            path = os.environ.get(RUN_ENV)
            if not path:
                raise ValueError(
                    f"Recorder: no path given and ${RUN_ENV} is not set; give the run folder "
                    f"(Recorder('runs/a')) or set {RUN_ENV}"
                )
        self.run = os.fspath(path)
        if rank is None:
            rank = launcher_rank()
        elif type(rank) is not int or rank < 0:
            raise ValueError(f"Recorder: rank must be an integer >= 0, got {rank!r}")
        self.rank = rank
        self.path = self.run if rank is None else os.path.join(self.run, f"rank_{rank}")
        self.chunk_size = check_chunk_size(chunk_size)
        if not exist_ok:
            _refuse_recorded(self.path)
        self._want = _wants(data)
        self._log_fd: int | None = None
        self._pending: list[_Pending] = []
        self._batch: list[bytes] = []  # sealed lines not written yet
        #: The check of the newest line of each dump in the log: a dump
        #: recorded again names it (``replaces``), so that compare tells a
        #: new recording of a dump from two logs joined into one.
        self._checks: dict[tuple[int, str], str] = {}
        self._batch_since = 0.0
        self._fs_now = -(1 << 63)  # the latest timestamp of the run's file system seen
        self._seq = 0
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self.closed = False

    def __repr__(self) -> str:
        return f"Recorder({self.path!r}{', closed' if self.closed else ''})"

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def wants_data(self, step: int) -> bool:
        """Whether ``step`` is written in full (else as digests only)."""
        return self._want(step)

    # --- dumping

    def dump(self, step: int, name: str, array: object) -> None:
        """Record buffer ``name`` at ``step``: the array in full or its digests
        only, as ``data`` says for the step. A dump of a (step, name) already
        recorded replaces it. Raises OSError (naming the dump) when it cannot
        be written, TypeError or ValueError for what cannot be recorded."""
        import operator

        if self.closed:
            raise ValueError(f"{self!r}: dump after close")
        step = operator.index(step)
        if step < 0:
            raise ValueError(f"Recorder.dump: step must be >= 0, got {step}")
        filename = dump_name(step, name, ".npy") if isinstance(name, str) else ""
        if (
            not filename
            or "/" in name
            or "\0" in name
            or split_name(filename) != (str(step), name, "npy")
        ):
            raise ValueError(
                f"Recorder.dump: {name!r} cannot be a buffer name: a name is a str of one or "
                "more characters, any but '/' and NUL (its dump is the file "
                "step_<N>_<name>.npy of the run folder)"
            )
        try:
            flat, dtype, shape = host_bytes(array)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"Recorder.dump(step {step}, {name!r}): {exc}") from None
        with self._lock:
            self._dump(step, name, filename, flat, dtype, shape)

    def digests(self, array: object) -> Digested:
        """The chunk digests ``array`` would be recorded with as digests only,
        hashed here, on the calling thread (no pool, no file): for many small
        arrays, whose ``dump`` each would cost a hand-off to a hashing thread
        and a write to the log, record them with ``record_digests``. Raises
        TypeError or ValueError for what cannot be recorded, as ``dump``."""
        if type(array).__module__.startswith("torch") and hasattr(array, "detach"):
            flat, dtype, shape = _torch_host(array)  # any C-order array: its bytes are hashed
        else:
            flat, dtype, shape = host_bytes(array)
        size = flat.nbytes
        cs = self.chunk_size
        if size > cs:
            from .stages.hash import chunk_digests

            chunks = chunk_digests((memoryview(flat).cast("B"),), cs)
        else:
            chunks = (_xxh3_128(flat),) if size else ()
        return Digested(dtype, shape, size, cs, chunks)

    def record_digests(self, step: int, items: Iterable[tuple[str, Digested]]) -> None:
        """Record buffers as digests only at ``step``, from their ``digests``:
        a log line each, written in one write (a digests-only ``dump`` writes
        one per buffer). A buffer recorded before is replaced, as by ``dump``.
        Raises ValueError for a name that cannot be a buffer name or digests
        of another chunk size (nothing of the batch is then recorded),
        OSError when the log cannot be written."""
        import operator

        from .sources.digestlog import digests_line

        if self.closed:
            raise ValueError(f"{self!r}: record_digests after close")
        step = operator.index(step)
        if step < 0:
            raise ValueError(f"Recorder.record_digests: step must be >= 0, got {step}")
        cs = self.chunk_size
        batch = list(items)
        for name, d in batch:
            if not (isinstance(name, str) and _fits_name(name)):
                raise ValueError(f"Recorder.record_digests: {name!r} cannot be a buffer name")
            if type(d) is not Digested or d.chunk_size != cs:
                raise ValueError(
                    f"Recorder.record_digests(step {step}, {name!r}): not digests of this "
                    f"recorder's chunk size ({cs}): hash it with Recorder.digests"
                )
        if not batch:
            return
        with self._lock:
            first = os.path.join(self.path, dump_name(step, batch[0][0], ".npy"))
            self._open_log(first)
            keys = {(step, name) for name, _ in batch}
            if self._pending:
                self._pending = [p for p in self._pending if p.key not in keys]
            checks = self._checks
            now = time.time_ns()
            if not self._batch:
                self._batch_since = time.monotonic()
            lines = self._batch
            for name, d in batch:
                key = (step, name)
                before = checks.get(key)
                if before is not None:  # recorded before: a file of it is stale
                    self._unlink_stale(os.path.join(self.path, dump_name(step, name, ".npy")))
                line = digests_line(step, name, d.dtype, d.shape, d.size, cs, d.chunks, now, before)
                lines.append(line)  # as _append does, inline: a tracer's hundreds a step
                checks[key] = line[-19:-3].decode()  # its check (digestlog.line_check)
            self._flush(f"the digests of {len(batch)} dumps of step {step}")
            self._seal(os.fstat(self._log_fd).st_mtime_ns)  # type: ignore[arg-type]

    def _dump(
        self, step: int, name: str, filename: str, flat: Any, dtype: str, shape: tuple[int, ...]
    ) -> None:
        from .sources.digestlog import log_line
        from .stages.hash import chunk_digests

        cs = self.chunk_size
        final = os.path.join(self.path, filename)
        key = (step, name)
        size = flat.nbytes
        self._open_log(final)
        # A newer dump of the same buffer replaces any line still held back.
        self._pending = [p for p in self._pending if p.key != key]
        if not self._want(step):
            hashing = self._start_digests(flat, HASH_THREADS)
            chunks = _joined(hashing) if hashing else chunk_digests((memoryview(flat),), cs)
            self._unlink_stale(final)
            line = log_line(
                step, name, dtype, shape, size, cs, chunks, time_ns=time.time_ns(),
                replaces=self._checks.get(key),
            )  # fmt: skip
            self._append(key, line)
            self._flush(f"the digests of {filename}")
            self._seal(os.fstat(self._log_fd).st_mtime_ns)  # type: ignore[arg-type]
            return
        header = _npy_header(_npy_descr(dtype), shape)
        hashing = self._start_digests(flat, 1) if size >= OVERLAP_MIN else []
        try:
            st = self._write(final, header, memoryview(flat), step, name)
        finally:
            # Joined whatever happened: no thread keeps reading the array.
            joined = _joined(hashing) if hashing else None
        chunks = joined if joined is not None else chunk_digests((memoryview(flat),), cs)
        offset = len(header)

        def line(sealed_ns: int, replaces: str | None) -> bytes:
            return log_line(
                step, name, dtype, shape, size, cs, chunks, filename, offset, st, sealed_ns,
                time.time_ns(), replaces,
            )  # fmt: skip

        self._seal(st.st_ctime_ns)
        self._pending.append(_Pending(key, st.st_ctime_ns, line))

    def _start_digests(self, flat: Any, threads: int) -> list[Future[tuple[bytes, ...]]]:
        """The digests of ``flat`` started on ``threads`` hashing threads, one
        task per segment of whole chunks of at least ``PARALLEL_MIN`` bytes;
        none (hash it here) when that makes a single segment of an array
        recorded as digests only (``threads`` > 1)."""
        from .stages.hash import chunk_digests

        size, cs = flat.nbytes, self.chunk_size
        n_chunks = (size + cs - 1) // cs
        parts = max(1, min(threads, size // max(PARALLEL_MIN, 1), n_chunks))
        if size == 0 or (parts == 1 and threads > 1):
            return []
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(
                max(HASH_THREADS, 1), thread_name_prefix="fastdiff-recorder"
            )
        per = (n_chunks + parts - 1) // parts * cs  # bytes per task, whole chunks
        view = memoryview(flat)
        return [
            self._pool.submit(chunk_digests, (view[i : i + per],), cs) for i in range(0, size, per)
        ]

    def _open_log(self, final: str) -> None:
        if self._log_fd is not None:
            return
        log = os.path.join(self.path, DIGEST_LOG)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
        try:
            os.makedirs(self.path, exist_ok=True)
            self._log_fd = os.open(log, flags, 0o666)
        except OSError as exc:
            what = f"{exc.strerror} (fastdiff Recorder: nothing was recorded)"
            raise OSError(exc.errno, what, exc.filename or log) from exc
        if os.fstat(self._log_fd).st_size:
            # Recording into a run recorded before: a dump recorded again
            # names the line it replaces.
            from .sources.digestlog import read_log

            self._checks = {k: e.check for k, e in read_log(log).entries.items()}

    def _write(
        self, final: str, header: bytes, data: memoryview, step: int, name: str
    ) -> os.stat_result:
        """Write ``header`` and ``data`` under a hidden temporary name, rename it
        to ``final``; the file's identity after the rename. On any failure the
        temporary is removed and nothing is left under ``final``."""
        self._seq += 1
        tmp = os.path.join(self.path, f"{TEMP_PREFIX}{os.getpid()}-{self._seq}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        except OSError as exc:
            raise _dump_error(exc, final, step, name) from exc
        try:
            try:
                _write_all(fd, header, data)
                os.replace(tmp, final)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
            return os.fstat(fd)
        except OSError as exc:
            raise _dump_error(exc, final, step, name) from exc
        finally:
            os.close(fd)

    def _unlink_stale(self, final: str) -> None:
        """A dump recorded as digests only replaces a file of an earlier recording."""
        try:
            os.unlink(final)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise OSError(exc.errno, f"{exc.strerror} (fastdiff Recorder: cannot replace the "
                          "earlier dump)", final) from exc  # fmt: skip

    def _flush(self, what: str) -> None:
        """Append the batched lines to the log, whole or not at all (a short
        write is cut off again, so the log keeps only whole lines)."""
        if not self._batch:
            return
        data = b"".join(self._batch)
        self._batch = []
        fd = self._log_fd
        assert fd is not None
        try:
            n = os.write(fd, data)
            if n != len(data):
                end = os.fstat(fd).st_size
                os.ftruncate(fd, end - n)
                raise OSError(28, "No space left on device")
        except OSError as exc:
            log = os.path.join(self.path, DIGEST_LOG)
            why = f"{exc.strerror} (fastdiff Recorder: {what} were not recorded)"
            raise OSError(exc.errno, why, log) from exc

    def _append(self, key: tuple[int, str], line: bytes) -> None:
        """Batch ``line``, the newest of dump ``key``."""
        from .sources.digestlog import line_check

        if not self._batch:
            self._batch_since = time.monotonic()
        self._batch.append(line)
        self._checks[key] = line_check(line)

    def _seal(self, fs_now: int) -> None:
        """Write the held-back lines of dumps whose ctime is earlier than
        ``fs_now``, a timestamp of the same file system read just now."""
        if fs_now > self._fs_now:
            self._fs_now = fs_now
        pending = self._pending
        done = 0
        while done < len(pending) and pending[done].ctime_ns < self._fs_now:
            p = pending[done]
            self._append(p.key, p.line(self._fs_now, self._checks.get(p.key)))
            done += 1
        if done:
            del pending[:done]
        batch = self._batch
        if batch and (
            sum(map(len, batch)) >= BATCH_BYTES or time.monotonic() - self._batch_since >= BATCH_S
        ):
            self._flush(f"the digests of {len(batch)} dumps")

    # --- closing

    def close(self) -> None:
        """Write the lines still held back (waiting, at most ``SEAL_TIMEOUT_S``,
        for the file system's clock to pass the last dump's ctime; lines it
        never passes are left out, and their dumps hashed by compare) and
        close the log. Idempotent."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            try:
                fd = self._log_fd
                if fd is not None and self._pending:
                    deadline = time.monotonic() + SEAL_TIMEOUT_S
                    while self._pending and time.monotonic() < deadline:
                        os.utime(fd)  # the file system's clock, now
                        self._seal(os.fstat(fd).st_mtime_ns)
                        if self._pending:
                            time.sleep(0.001)
                    self._pending = []
                if fd is not None:
                    self._flush(f"the digests of {len(self._batch)} dumps")
            finally:
                if self._pool is not None:
                    self._pool.shutdown()
                    self._pool = None
                if self._log_fd is not None:
                    os.close(self._log_fd)
                    self._log_fd = None


def _refuse_recorded(folder: str) -> None:
    """FileExistsError when ``folder`` already holds dumps: files named like
    dumps, else the lines of a digest log (a run recorded as digests only).
    Names only, and the log's length; a folder that does not exist holds none."""
    try:
        with os.scandir(folder) as it:
            names = [e.name for e in it]
    except (FileNotFoundError, NotADirectoryError):
        return  # made at the first dump; a file there is refused then
    except OSError as exc:
        raise OSError(exc.errno, f"{exc.strerror} (fastdiff Recorder: cannot list the run "
                      "folder)", folder) from exc  # fmt: skip
    files = sum(map(is_dump_name, names))
    if files:
        held = f"{files:,} {'dump' if files == 1 else 'dumps'}"
    elif DIGEST_LOG in names:
        try:
            with open(os.path.join(folder, DIGEST_LOG), "rb") as log:
                logged = sum(chunk.count(b"\n") for chunk in iter(lambda: log.read(1 << 20), b""))
        except OSError:
            logged = -1  # unreadable: it holds something all the same
        if not logged:
            return  # an empty log: nothing was recorded
        held = (
            f"the digests of {logged:,} {'dump' if logged == 1 else 'dumps'} ({DIGEST_LOG})"
            if logged > 0
            else f"a digest log ({DIGEST_LOG})"
        )
    else:
        return
    raise FileExistsError(
        errno.EEXIST,
        f"fastdiff Recorder: the run folder already holds {held}; a run recorded into it "
        "would mix with them (their steps would show up as in one run only): give an empty "
        "or new folder, remove them, or pass exist_ok=True to write into it all the same",
        folder,
    )


def _joined(tasks: list[Future[tuple[bytes, ...]]]) -> tuple[bytes, ...]:
    """The chunk digests of the segments, in order (every task waited for)."""
    out: list[bytes] = []
    error: BaseException | None = None
    for task in tasks:
        try:
            out += task.result()
        except BaseException as exc:  # waited for all the same
            error = error or exc
    if error is not None:
        raise error
    return tuple(out)


def _write_all(fd: int, *parts: bytes | memoryview) -> None:
    """Write ``parts`` in order, in as few ``writev`` calls as the kernel allows."""
    views = [memoryview(p)[:] for p in parts if len(p)]
    while views:
        n = os.writev(fd, [v[:_WRITE_MAX] for v in views])
        if n == 0:
            raise OSError(28, "No space left on device")
        while views and n >= len(views[0]):
            n -= len(views[0])
            views.pop(0)
        if views and n:
            views[0] = views[0][n:]


def _dump_error(exc: OSError, final: str, step: int, name: str) -> OSError:
    return OSError(
        exc.errno,
        f"{exc.strerror} (fastdiff Recorder: step {step}, {name!r} was not written)",
        final,
    )
