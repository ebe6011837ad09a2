"""The ``torch.save`` format: a zip archive of a pickle and its storages.

``torch.save(obj, "x.pt")`` writes a zip archive whose members sit in one
folder (``x/``, named after the file): ``data.pkl``, the pickle of ``obj``
in which each tensor is a rebuild call (``torch._utils._rebuild_tensor_v2``
or ``_v3``) of a view of a storage, named by a persistent id
``('storage', type, key, location, numel)``; ``data/<key>``, each storage's
bytes, stored uncompressed; ``byteorder`` (``little`` or ``big``),
``version`` and a few more records.

fastdiff reads it without torch and without ever running code from the
file: the members are located through the central directory and each local
header (``ziparchive``), and ``data.pkl`` is read by a restricted pickle
interpreter of fastdiff's own (``torchpickle``), which imports and calls
nothing the file names: the tensor rebuilds, storages and containers
``torch.save`` writes, and numpy's arrays, are read as what they are, and
any other class or function is an inert record of its name, arguments and
state (data, as numbers and strings are). Nested dicts, lists, tuples and
records give dotted names (``model.fc.weight``,
``optimizer.state.0.exp_avg``, ``rng_state.np.1``); values that are not
tensors or arrays (an optimizer's ``lr``, a step counter, an
``argparse.Namespace``'s fields) are counted, not compared, and the names
the pickle reads as records are listed (``Archive.names``).

Each tensor is a buffer, its dtype and shape from its rebuild call: a
contiguous tensor is a byte range of its storage's member (from
``storage_offset`` x itemsize); any other view (transposed, sliced with
steps, expanded) is gathered in logical order, strides honoured
(``buffers.Strided``). A wrapper subclass (``DTensor``) is its local tensor.
Tensors that are the very same view of one storage (tied weights) share a
``span``: their bytes are hashed once. A numpy array in the pickle (the
state of ``np.random.get_state()``) is a buffer too, its dtype and shape
from its own record: a byte range of the archive where its bytes lie
verbatim in a stored ``data.pkl`` (protocols 3 to 5), a strided view of it
for a Fortran-order array; else (protocol 2, ``torch.save``'s default,
writes bytes as latin-1 text in UTF-8, so they are in no byte range of
the file; or ``data.pkl`` is compressed) its bytes as decoded from the
pickle, held (``buffers.Inline``: at most the pickle's size, which is read
whole anyway). A ``data.pkl`` over ``MAX_PICKLE`` bytes or that the
interpreter refuses, and every archive ``ziparchive`` refuses, are refused
whole. A tensor whose view reaches past its storage, or whose storage's
member is missing, compressed or not the size the pickle says, and a numpy
array of a type fastdiff does not compare, are an error for that buffer
alone (``Unread``): the archive's other tensors are still compared.
"""

from __future__ import annotations

import os
import zlib

from ..dtypes import DTYPES
from .buffers import BufferRef, Inline, Strided, Unread, Value, step_filter
from .run import RunSource, container_listing, refused
from .torchpickle import MAX_TENSORS, Array, PickleRefused, Storage, leaf_value, load, walk
from .ziparchive import ZipError, read_members

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..dtypes import DType
    from .buffers import Codec, StepFilter
    from .torchpickle import StorageType, Tensor
    from .ziparchive import ZipMember

#: ``data.pkl`` is read whole: at most this many bytes.
MAX_PICKLE = 256 << 20
#: A view that repeats elements (a stride of 0: ``expand``) may hold at
#: most this many times the bytes of storage it spans, or ``MIN_VIEW``
#: bytes: a few bytes of file cannot make terabytes to hash.
MAX_EXPANSION = 1024
MIN_VIEW = 64 << 20
#: An archive holds at most this many members: a storage per tensor, and
#: torch's few records.
MAX_MEMBERS = MAX_TENSORS + 1024
#: The name of a tensor pickled alone (``torch.save(tensor, ...)``).
LONE = "tensor"


class TorchError(ValueError):
    """An archive that is not a usable ``torch.save`` archive: the message says why."""


#: At most this many names of records are listed in a note.
SHOWN_NAMES = 5


class Archive:
    """What one archive holds: its buffers, how many values that are not
    tensors it holds (not compared), and the qualified names its pickle
    reads as records (classes and functions fastdiff does not know, none
    of them run), in the order they first appear. ``root``: what the pickle
    holds, as data (``torchpickle.load``): the values beside the tensors."""

    __slots__ = ("buffers", "left_out", "names", "root")

    def __init__(
        self, buffers: list[BufferRef | Unread], left_out: int, names: tuple[str, ...] = (),
        root: object = None,
    ) -> None:  # fmt: skip
        self.buffers = buffers
        self.left_out = left_out
        self.names = names
        self.root = root


def _member_bytes(fd: int, m: ZipMember, cap: int) -> bytes:
    """A small member's bytes (stored, or deflated: inflated piece by piece,
    never past its listed size), its CRC-32 checked (torch writes 0 when
    told not to compute it)."""
    if m.size > cap:
        raise TorchError(f"member {m.name!r} is {m.size:,} bytes, over the {cap:,} fastdiff reads")
    if m.method == 0:
        raw = os.pread(fd, m.size, m.data_offset)
    else:
        z = zlib.decompressobj(-15)
        parts, got, pos, end = [], 0, m.data_offset, m.data_offset + m.stored
        try:
            while pos < end and got <= m.size and not z.eof:
                piece = os.pread(fd, min(1 << 20, end - pos), pos)
                if not piece:
                    break
                pos += len(piece)
                parts.append(z.decompress(piece, m.size + 1 - got))
                got += len(parts[-1])
        except zlib.error as exc:
            raise TorchError(f"member {m.name!r} is not a valid deflate stream ({exc})") from None
        raw = b"".join(parts)
    if len(raw) != m.size:
        raise TorchError(f"member {m.name!r} holds {len(raw):,} bytes, not the {m.size:,} listed")
    if m.crc and zlib.crc32(raw) != m.crc:
        raise TorchError(f"member {m.name!r} fails its CRC-32 check (damaged)")
    return raw


def _prefix(members: list[ZipMember]) -> str:
    """The folder of the archive's records (where ``data.pkl`` is)."""
    pickles = [m.name[:-9] for m in members if m.name.endswith("/data.pkl")]
    pickles = [p for p in pickles if p and "/" not in p]
    if not pickles:
        raise TorchError("no <name>/data.pkl member: not a torch.save archive")
    if len(pickles) > 1:
        raise TorchError(f"{len(pickles)} data.pkl members (in {', '.join(pickles[:3])}); "
                         "a torch.save archive holds one")  # fmt: skip
    prefix = pickles[0]
    names = {m.name for m in members}
    if f"{prefix}/constants.pkl" in names or any(n.startswith(f"{prefix}/code/") for n in names):
        raise TorchError(
            "a TorchScript archive (torch.jit.save), not torch.save: fastdiff reads the "
            "tensors torch.save writes (save the model's state_dict())"
        )
    return prefix


def _byte_order(fd: int, members: dict[str, ZipMember], prefix: str) -> bool:
    """Whether the storages are big-endian (the ``byteorder`` record; when
    there is none, torch reads them as little-endian)."""
    m = members.get(f"{prefix}/byteorder")
    if m is None:
        return False
    order = _member_bytes(fd, m, 16)
    if order not in (b"little", b"big"):
        raise TorchError(f"byteorder record {order[:16]!r} is neither 'little' nor 'big'")
    return order == b"big"


def _view(t: Tensor, name: str, dt: DType) -> tuple[int, int, Strided | None]:
    """(byte offset in the storage, logical bytes, codec) of a tensor,
    checked against its storage."""
    w = dt.itemsize
    s = t.storage
    numel = 1
    for d in t.shape:
        numel *= d
    start = t.offset * w
    if numel == 0:
        return min(start, s.nbytes), 0, None
    expected = 1
    contiguous = True
    for d, stride in zip(reversed(t.shape), reversed(t.strides), strict=True):
        if d != 1:
            if stride != expected:
                contiguous = False
            expected *= d
    if contiguous:
        extent = numel * w
        codec = None
    else:
        extent = (sum((d - 1) * st for d, st in zip(t.shape, t.strides, strict=True)) + 1) * w
        if numel * w > max(MIN_VIEW, MAX_EXPANSION * extent):
            raise TorchError(
                f"tensor {name!r}: a view of {numel * w:,} bytes that repeats {extent:,} bytes "
                "of its storage, more than fastdiff expands (a view bomb?)"
            )
        strides = tuple(0 if d == 1 else st for d, st in zip(t.shape, t.strides, strict=True))
        codec = Strided(w, t.shape, strides, extent)
    if start + extent > s.nbytes:
        raise TorchError(
            f"tensor {name!r}: its view (element {t.offset:,} on, shape {t.shape}, strides "
            f"{t.strides}) reaches byte {start + extent:,} of storage data/{s.key}, which "
            f"holds {s.nbytes:,}"
        )
    return start, numel * w, codec


def _array_view(arr: Array, member: ZipMember) -> tuple[int, Codec | None]:
    """(offset in the archive, codec) of a numpy array of the pickle (its
    ``member``): a range of the archive when its bytes lie there verbatim,
    else its bytes held (``Inline``); raises TorchError for one that is not
    compared."""
    if arr.problem is not None:
        raise TorchError(arr.problem)
    assert arr.dtype is not None
    w = arr.dtype.itemsize
    shape = arr.shape
    count = 1
    for d in shape:
        count *= d
    fortran = arr.fortran and len(shape) > 1 and count > 1
    if arr.at >= 0 and member.method == 0:
        if not fortran:
            return member.data_offset + arr.at, None
        strides = []
        step = 1
        for d in shape:  # column-major: the first index varies fastest
            strides.append(step)
            step *= d
        return member.data_offset + arr.at, Strided(w, shape, tuple(strides), count * w)
    raw = arr.raw
    if fortran:  # in logical (C) order, once: it is held anyway
        import numpy as np

        dims = len(shape)
        cells = np.frombuffer(raw, dtype=np.uint8).reshape(*reversed(shape), w)
        raw = cells.transpose(*reversed(range(dims)), dims).tobytes()
    return member.data_offset + max(arr.at, 0), Inline(raw)


def _storage_problem(m: ZipMember | None, key: str, kind: StorageType, numel: int) -> str | None:
    """What is wrong with storage ``key``'s record ``m`` (None: nothing)."""
    if m is None:
        return f"its storage's member data/{key} is not in the archive"
    if m.method != 0:
        return (
            f"its storage data/{key} is compressed (torch.save stores storages uncompressed; "
            "fastdiff reads those: was the archive zipped again?)"
        )
    nbytes = numel * kind.dtype.itemsize
    if m.size != nbytes:
        return (
            f"its storage data/{key} holds {m.size:,} bytes, but the pickle says {numel:,} "
            f"elements of {kind.name} ({nbytes:,} bytes)"
        )
    return None


def read_archive(
    path: str,
    step: int,
    fd: int,
    st: os.stat_result,
    base: int = 0,
    size: int | None = None,
    lone: str | None = None,
) -> Archive:
    """The buffers of an open ``torch.save`` archive (at ``step``); raises
    TorchError. ``base``, ``size``: where the archive lies in the file, when
    it is inside another (a distributed checkpoint's chunk); the whole file
    by default. ``lone``: the name of the value the pickle is, when it is
    one value alone (a distributed checkpoint's ``lr``), compared as the
    values in a container are; None: such a value has no name and is
    counted as left out."""
    try:
        members = read_members(fd, st.st_size if size is None else size, MAX_MEMBERS, base=base)
    except ZipError as exc:
        from .formats import LEGACY_TORCH

        if os.pread(fd, len(LEGACY_TORCH), base) == LEGACY_TORCH:
            raise TorchError(
                "a torch.save file of the legacy format (torch before 1.6, or "
                "_use_new_zipfile_serialization=False): fastdiff reads the zip format torch.save "
                "writes by default; load and save it again with a newer torch"
            ) from None
        raise TorchError(str(exc)) from None
    prefix = _prefix(members)
    by_name = {m.name: m for m in members}
    big = _byte_order(fd, by_name, prefix)
    pkl = by_name[f"{prefix}/data.pkl"]
    data = _member_bytes(fd, pkl, MAX_PICKLE)
    storages: dict[str, tuple[StorageType, int, Storage]] = {}

    def storage(key: str, kind: StorageType, location: str, numel: int) -> Storage:
        seen = storages.get(key)
        if seen is not None:
            if seen[0].dtype is not kind.dtype or seen[1] != numel:
                raise TorchError(f"storage {key!r} is named twice, as two different storages")
            return seen[2]
        nbytes = numel * kind.dtype.itemsize
        problem = _storage_problem(by_name.get(f"{prefix}/data/{key}"), key, kind, numel)
        if problem is not None:  # its tensors are errors; the rest of the archive is read
            s = Storage(key, kind.dtype, nbytes, -1, problem)
        else:
            s = Storage(key, kind.dtype, nbytes, by_name[f"{prefix}/data/{key}"].data_offset)
        storages[key] = (kind, numel, s)
        return s

    names: list[str] = []
    leaves: list[tuple[str, object]] = []
    try:
        root = load(data, storage, names)
        found, left_out = walk(root, leaves)
        if lone is not None and left_out == 1 and not found and not leaves:
            leaves.append((lone, root))  # the pickle is this one value
            left_out = 0
    except PickleRefused as exc:
        raise TorchError(f"data.pkl: {exc}") from None
    placed = []
    unread: list[Unread] = []
    count: dict[tuple[object, ...], int] = {}
    for name, t in found:
        try:
            if type(t) is Array:
                what = "numpy array"
                offset, codec = _array_view(t, pkl)
                assert t.dtype is not None
                dt, nbytes, shape = t.dtype, len(t.raw), t.shape
            else:
                what = "tensor"
                dt = t.dtype
                if big and dt.itemsize > 1:
                    dt = DTYPES[dt.name + "be"]
                if t.storage.problem is not None:
                    raise TorchError(t.storage.problem)
                start, nbytes, codec = _view(t, name, dt)
                offset, shape = t.storage.data_offset + start, t.shape
        except TorchError as exc:
            why = str(exc).removeprefix(f"tensor {name!r}: ")
            unread.append(
                Unread(step, name, f"{what} {name!r}: {why}; this {what} was not compared")
            )
            continue
        view = (offset, nbytes, dt.name, shape, codec)
        count[view] = count.get(view, 0) + 1
        placed.append((name, shape, dt.name, view))
    dev, ino, mtime, ctime, size = st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size
    out: list[BufferRef | Unread] = []
    # Views that are the very same bytes are hashed once, as the first of them.
    first: dict[tuple[object, ...], BufferRef] = {}
    for name, shape, dtype, view in placed:
        ref = BufferRef(
            path, step, name, view[1], dev, ino, mtime, ctime, offset=view[0], file_size=size,
            dtype=dtype, shape=shape, codec=view[4], span=first.get(view),
        )  # fmt: skip
        if count[view] > 1:
            first.setdefault(view, ref)
        out.append(ref)
    out += value_refs(leaves, path, step, st, pkl.data_offset)
    return Archive(out + unread, left_out, tuple(names), root)


def value_refs(
    leaves: list[tuple[str, object]], path: str, step: int, st: os.stat_result, at: int
) -> list[BufferRef]:
    """The values beside the tensors (``walk``'s leaves) as buffers of their
    file: dtype ``value`` or ``label``, shape ``()``, their bytes held
    (``buffers.Value``), found at offset ``at`` (the pickle that holds
    them: what the file's identity is checked against)."""
    dev, ino, mtime, ctime, file_size = (
        st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size
    )  # fmt: skip
    refs = []
    for name, leaf in leaves:
        kind, value = leaf_value(leaf)
        codec = Value(kind, value)
        refs.append(BufferRef(
            path, step, name, len(codec.data), dev, ino, mtime, ctime, offset=at,
            file_size=file_size, dtype=kind, shape=(), codec=codec,
        ))  # fmt: skip
    return refs


def names_note(names: tuple[str, ...]) -> str:
    """What a report says of the names a pickle reads as records."""
    shown = ", ".join(names[:SHOWN_NAMES])
    if len(names) > SHOWN_NAMES:
        shown += f" and {len(names) - SHOWN_NAMES:,} more"
    return f"the pickle names {shown}, read as records of data: nothing of them was run"


def archive_buffers(path: str, step: int, fd: int, st: os.stat_result) -> list[BufferRef | Unread]:
    """The buffers of an open ``torch.save`` archive (at ``step``); raises TorchError."""
    return read_archive(path, step, fd, st).buffers


def read_file(path: str, step: int) -> Archive:
    """The archive at ``path``; raises OSError or TorchError."""
    from .reader import read_regular

    return read_regular(path, lambda fd, st: read_archive(path, step, fd, st), TorchError)


def open_source(spec: str, steps: StepFilter | None = None) -> RunSource:
    """A ``torch.save`` archive as a run source: one step (0) of buffers."""
    from ..model.results import Skipped

    try:
        archive = read_file(spec, 0)
    except OSError as exc:
        return refused(spec, f"cannot read: {exc.strerror}", "unreadable")
    except TorchError as exc:
        return refused(spec, f"not a usable torch.save archive: {exc}", "malformed")
    refs = archive.buffers
    want = step_filter(steps)
    if want is not None and not want(0):
        refs = []
    skipped: tuple[Skipped, ...] = ()
    said = []
    if archive.left_out:
        n = archive.left_out
        what = (
            "value that is not a tensor (a number, string, ...) is"
            if n == 1
            else ("values that are not tensors (numbers, strings, ...) are")
        )
        said.append(f"{n:,} {what} not compared")
    if archive.names:
        said.append(names_note(archive.names))
    if said:
        skipped = (Skipped(spec, "; ".join(said)),)
    listing = container_listing(spec, refs, skipped)
    return RunSource(spec, listing, steps=steps, kind="torch")
