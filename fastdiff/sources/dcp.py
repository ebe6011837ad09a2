"""``torch.distributed.checkpoint`` (DCP) folders as runs.

A DCP folder holds a ``.metadata`` file (a pickle of DCP's ``Metadata``:
each item's global shape and dtype, its chunks as offsets and sizes in
global coordinates, and each chunk's ``_StorageInfo``: a file, an offset
and a length) and the ``__<rank>_<n>.distcp`` files the ranks wrote, in
which each chunk is a complete ``torch.save`` archive at that offset. A
folder is a run of one step (0); a root holding ``step-<N>/`` DCP folders
(torchtitan's ``checkpoint/``) is a root of step folders (``stepfolders``,
the one place that spells such names), each step opened by this module.

``.metadata`` is read by the restricted pickle interpreter
(``torchpickle``): DCP's classes are inert records, and one that is not
DCP's ``Metadata`` of the expected shape is refused with one line naming
the file. Nothing of the file is ever run.

A tensor is one buffer in global coordinates, whatever the sharding: its
chunks are the pieces (``buffers.Pieces``) of one buffer, read in global
row-major order (``access``): every index a report gives is the global
one, and two runs saved with different layouts (2 ranks against 4, rows
against columns) compare as the same tensors. The chunks must tile the
global shape exactly (within it, disjoint, covering it), and each must be
a ``torch.save`` archive of one contiguous tensor of the chunk's shape
and the tensor's dtype; a tensor of which one is not is an error for
that tensor alone. Saved with ``SerializationFormat.SAFETENSORS``, a
rank's chunks are one safetensors blob after its values (each chunk's
``_StorageInfo`` offset is the blob's): the blob's header is checked as
a safetensors file's is (``safetensors.parse_header_meta``), and the
tensor of the item's name must be the chunk ``.metadata`` says (dtype,
shape, ``saved_offsets``, length).

A ``BYTE_IO`` item (a value that is not a tensor: the step, the learning
rate) is a ``torch.save`` archive of it, read as data: its tensors and its
values (numbers, booleans, None: state; strings, bytes: labels) are
buffers named by the item (``lr``) or below it (``extra.seed``), compared
as the values of any checkpoint are.
Megatron-LM's ``torch_dist`` format is a DCP folder with a ``common.pt``
(a ``torch.save`` archive of what every rank shares) and a
``metadata.json``: its tensors and values are read as well.
"""

from __future__ import annotations

import os
import stat

from .buffers import MAX_CHUNKS, BufferRef, Piece, Pieces, Unread, step_filter, tiling_problem
from .formats import ZIP_MAGIC
from .run import RunSource, container_listing, refused
from .safetensors import DCP_SHARDING, SafetensorsError, parse_header_meta, saved_offsets

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..model.results import Skipped
    from .buffers import StepFilter
    from .safetensors import Tensor

#: The file that makes a folder a DCP checkpoint.
METADATA = ".metadata"
#: Megatron-LM ``torch_dist``'s shared state, beside the DCP files.
COMMON = "common.pt"
#: DCP's classes, as ``.metadata`` names them.
_DCP = "torch.distributed.checkpoint.metadata."
_METADATA = _DCP + "Metadata"
_TENSOR = _DCP + "TensorStorageMetadata"
_BYTES = _DCP + "BytesStorageMetadata"
_PROPERTIES = _DCP + "TensorProperties"
_CHUNK = _DCP + "ChunkStorageMetadata"
_INDEX = _DCP + "MetadataIndex"
_STORAGE_INFO = "torch.distributed.checkpoint.filesystem._StorageInfo"


class DcpError(ValueError):
    """A ``.metadata`` (or its layout) that is refused: the message says why."""


def is_dcp_folder(names: list[str]) -> bool:
    """Whether a folder with the entries ``names`` is a DCP checkpoint: its
    ``.metadata``. (A root of ``step-<N>`` DCP folders is a root of step
    folders, ``stepfolders``, each step opened as what it is: this.)"""
    return METADATA in names


# --- .metadata ----------------------------------------------------------------------


def _attrs(rec: object, name: str, what: str) -> dict[object, object]:
    """The attributes of a record of class ``name``; DcpError for anything else."""
    from .torchpickle import Record, _what

    if type(rec) is not Record or rec.name != name:  # type: ignore[attr-defined]
        raise DcpError(f"{what} is {_what(rec)}, not a {name.rsplit('.', 1)[-1]} (nothing was run)")
    attrs = rec.attributes  # type: ignore[attr-defined]
    if attrs is None:
        raise DcpError(f"{what} has no attributes")
    return attrs


def _ints(value: object, what: str, dims: int | None = None) -> tuple[int, ...]:
    if type(value) is not tuple or not all(type(v) is int and 0 <= v < 1 << 62 for v in value):
        raise DcpError(f"{what} is not a tuple of sizes")
    if dims is not None and len(value) != dims:
        raise DcpError(f"{what} has {len(value)} dimensions, not {dims}")
    return value  # type: ignore[return-value]


class Item:
    """One item of a checkpoint, as ``.metadata`` lays it out: its name
    (``fqn``); for a tensor, its dtype (a ``dtypes`` name), global shape
    and chunks, each ``(offsets, sizes, (file, offset, length))``; for a
    value (``BYTE_IO``), ``dtype`` None and its one ``(file, offset,
    length)``."""

    __slots__ = ("chunks", "dtype", "fqn", "itemsize", "shape", "value")

    def __init__(
        self, fqn: str, dtype: str | None, itemsize: int, shape: tuple[int, ...],
        chunks: list[tuple[tuple[int, ...], tuple[int, ...], tuple[str, int, int]]],
        value: tuple[str, int, int] | None = None,
    ) -> None:  # fmt: skip
        self.fqn = fqn
        self.dtype = dtype
        self.itemsize = itemsize
        self.shape = shape
        self.chunks = chunks
        self.value = value


def _storage_info(rec: object, what: str) -> tuple[str, int, int]:
    info = _attrs(rec, _STORAGE_INFO, what)
    path, offset, length = info.get("relative_path"), info.get("offset"), info.get("length")
    if type(path) is not str or not path or "/" in path or "\\" in path or path in (".", ".."):
        raise DcpError(f"{what} names a file that is not one of the folder's ({path!r})")
    if type(offset) is not int or type(length) is not int or offset < 0 or length < 0:
        raise DcpError(f"{what}'s offset and length are not sizes")
    if info.get("transform_descriptors"):
        raise DcpError(
            f"{what} is stored transformed ({info['transform_descriptors']!r}); fastdiff "
            "reads chunks saved as torch.save archives (DCP's default)"
        )
    return path, offset, length


def parse_metadata(data: bytes) -> list[Item]:
    """The items of a ``.metadata`` pickle; raises DcpError (or PickleRefused)."""
    from .torchpickle import Record, TorchDType, load

    def no_storage(*_: object) -> object:
        raise DcpError("the pickle holds a storage (a .metadata holds none)")

    root = _attrs(load(data, no_storage), _METADATA, "the pickle")
    items_of, storage = root.get("state_dict_metadata"), root.get("storage_data")
    if type(items_of) is not dict or type(storage) is not dict:
        raise DcpError("its state_dict_metadata or storage_data is not a dict")
    where: dict[tuple[str, tuple[int, ...] | None], tuple[str, int, int]] = {}
    for key, rec in storage.items():
        index = _attrs(key, _INDEX, "a storage_data key")
        fqn, offset = index.get("fqn"), index.get("offset")
        if type(fqn) is not str:
            raise DcpError("a storage_data key's fqn is not a str")
        at = None if offset is None else _ints(offset, f"the offset of a chunk of {fqn!r}")
        where[(fqn, at)] = _storage_info(rec, f"the storage of {fqn!r}")
    items: list[Item] = []
    for fqn, rec in items_of.items():
        if type(fqn) is not str or not fqn:
            raise DcpError("a state_dict_metadata key is not a name")
        if type(rec) is Record and rec.name == _BYTES:
            info = where.get((fqn, None))
            if info is None:
                raise DcpError(f"value {fqn!r} has no storage")
            items.append(Item(fqn, None, 0, (), [], info))
            continue
        attrs = _attrs(rec, _TENSOR, f"item {fqn!r}")
        shape = _ints(attrs.get("size"), f"the size of {fqn!r}")
        props = attrs.get("properties")
        state = props.state if type(props) is Record and props.name == _PROPERTIES else None
        dtype = state.get("dtype") if type(state) is dict else None
        if type(state) is tuple and state:
            dtype = state[0]
        if type(dtype) is not TorchDType:
            raise DcpError(f"tensor {fqn!r} has no dtype among its properties")
        chunks = attrs.get("chunks")
        if type(chunks) is not list:
            raise DcpError(f"the chunks of {fqn!r} are not a list")
        if len(chunks) > MAX_CHUNKS:
            raise DcpError(f"tensor {fqn!r} has {len(chunks):,} chunks, over {MAX_CHUNKS:,}")
        laid = []
        for c in chunks:
            ca = _attrs(c, _CHUNK, f"a chunk of {fqn!r}")
            offsets = _ints(ca.get("offsets"), f"a chunk's offsets of {fqn!r}", len(shape))
            sizes = _ints(ca.get("sizes"), f"a chunk's sizes of {fqn!r}", len(shape))
            info = where.get((fqn, offsets))
            if info is None:
                raise DcpError(f"the chunk of {fqn!r} at {offsets} has no storage")
            laid.append((offsets, sizes, info))
        dt = dtype.dtype
        items.append(Item(fqn, dt.name, dt.itemsize, shape, laid))
    return items


# --- a DCP folder -------------------------------------------------------------------


class StepRead:
    """What one DCP folder holds: its buffers (and unread ones), the count
    of values not compared, the names its pickles read as records, and the
    values themselves (``values``: name -> what the pickle holds, as data:
    the hook for comparing them)."""

    __slots__ = ("items", "left_out", "names", "values")

    def __init__(self) -> None:
        self.items: list[BufferRef | Unread] = []
        self.left_out = 0
        self.names: list[str] = []
        self.values: dict[str, object] = {}


def read_step(folder: str, step: int) -> StepRead:
    """The buffers of DCP folder ``folder`` (at ``step``); raises OSError for
    a ``.metadata`` that cannot be read, DcpError (or PickleRefused) for one
    that is refused. A chunk file missing or refused is an error for the
    tensors with a chunk in it."""
    from .reader import open_fd
    from .torchzip import MAX_PICKLE, TorchError, read_archive

    meta_path = os.path.join(folder, METADATA)
    meta_fd = open_fd(meta_path)
    try:
        meta_st = os.fstat(meta_fd)
        if not stat.S_ISREG(meta_st.st_mode):
            raise DcpError("it is not a regular file")
        if meta_st.st_size > MAX_PICKLE:
            raise DcpError(f"{meta_st.st_size:,} bytes, over the {MAX_PICKLE:,} fastdiff reads")
        data = os.pread(meta_fd, meta_st.st_size, 0)
    finally:
        os.close(meta_fd)
    items = parse_metadata(data)
    out = StepRead()
    files: dict[str, tuple[int, os.stat_result] | str] = {}

    def opened(name: str) -> tuple[int, os.stat_result]:
        got = files.get(name)
        if got is None:
            path = os.path.join(folder, name)
            try:
                fd = open_fd(path)
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    os.close(fd)
                    raise DcpError(f"{name} is not a regular file")
                got = (fd, st)
            except OSError as exc:
                got = f"{name}: cannot read: {exc.strerror}"
            except DcpError as exc:
                got = str(exc)
            files[name] = got
        if isinstance(got, str):
            raise DcpError(got)
        return got

    def archive(info: tuple[str, int, int], lone: str | None = None) -> object:
        name, offset, length = info
        fd, st = opened(name)
        if offset + length > st.st_size:
            raise DcpError(
                f"{name} holds {st.st_size:,} bytes; its chunk ends at {offset + length:,}"
            )
        try:
            return read_archive(os.path.join(folder, name), step, fd, st, offset, length, lone)
        except TorchError as exc:
            raise DcpError(f"{name} at {offset:,}: {exc}") from None

    blobs: dict[tuple[str, int], dict[str, tuple[Tensor, tuple[int, ...]]] | str | None] = {}

    def blob(name: str, offset: int) -> dict[str, tuple[Tensor, tuple[int, ...]]] | None:
        """The tensors of the safetensors blob at ``offset`` of ``name``
        (DCP's ``SerializationFormat.SAFETENSORS``: a rank's chunks in one
        blob after its values), each with its offsets in the global tensor;
        None when a ``torch.save`` archive is there."""
        key = (name, offset)
        if key not in blobs:
            fd, st = opened(name)
            head = os.pread(fd, 9, offset)
            got: dict[str, tuple[Tensor, tuple[int, ...]]] | str | None = None
            # a torch.save archive is a zip (its magic is the table's)
            if all(head[:4] != m for _, m in ZIP_MAGIC) and head[8:9] == b"{":
                try:
                    tensors, meta = parse_header_meta(fd, st.st_size, offset)
                    shapes = {t.name: t.shape for t in tensors}
                    if DCP_SHARDING in meta:
                        saved = saved_offsets(meta, shapes)
                    else:
                        saved = {n: (0,) * len(shape) for n, shape in shapes.items()}
                    got = {t.name: (t, saved[t.name]) for t in tensors}
                except SafetensorsError as exc:
                    got = f"{name} at {offset:,}: a safetensors blob refused: {exc}"
            blobs[key] = got
        got = blobs[key]
        if isinstance(got, str):
            raise DcpError(got)
        return got

    try:
        for item in items:
            try:
                if item.dtype is None:
                    _value(out, item, archive(item.value, item.fqn))  # type: ignore[arg-type]
                else:
                    out.items.append(
                        _tensor(folder, step, item, archive, blob, opened, meta_st, meta_path)
                    )
            except DcpError as exc:
                what = "value" if item.dtype is None else "tensor"
                out.items.append(
                    Unread(
                        step, item.fqn, f"{what} {item.fqn!r}: {exc}; this {what} was not compared"
                    )
                )
    finally:
        for got in files.values():
            if not isinstance(got, str):
                os.close(got[0])
    common = os.path.join(folder, COMMON)
    if os.path.isfile(common):
        _common(out, common, step)
    return out


def _value(out: StepRead, item: Item, arch: object) -> None:
    """A ``BYTE_IO`` item: its value held, its tensors and values as buffers
    below its name (a lone tensor or value: its name)."""
    from .torchzip import Archive

    assert isinstance(arch, Archive)
    out.values[item.fqn] = arch.root
    out.left_out += arch.left_out
    out.names.extend(n for n in arch.names if n not in out.names)
    for ref in arch.buffers:
        lone = ref.name == "tensor" or (
            ref.name == item.fqn and getattr(ref, "dtype", None) in ("value", "label")
        )
        name = item.fqn if lone else f"{item.fqn}.{ref.name}"
        if isinstance(ref, Unread):
            out.items.append(Unread(ref.step, name, ref.reason))
        else:
            out.items.append(ref.replace(name=name, span=None))


def _tensor(
    folder: str, step: int, item: Item, archive: object, blob: object, opened: object,
    meta_st: os.stat_result, meta_path: str,
) -> BufferRef:  # fmt: skip
    """A tensor: one buffer of the pieces its chunks are (each a
    ``torch.save`` archive, or a tensor of a safetensors blob)."""
    from .torchzip import Archive

    problem = tiling_problem(item.shape, [(o, s) for o, s, _ in item.chunks])
    if problem is not None:
        raise DcpError(problem)
    w = item.itemsize
    pieces = []
    for offsets, sizes, info in item.chunks:
        n = 1
        for d in sizes:
            n *= d
        if not n:
            continue
        found = blob(info[0], info[1])  # type: ignore[operator]
        if found is not None:
            begin = _blob_chunk(item, offsets, sizes, info, found)
        else:
            arch = archive(info)  # type: ignore[operator]
            assert isinstance(arch, Archive)
            refs = [r for r in arch.buffers if isinstance(r, BufferRef)]
            if len(arch.buffers) != 1 or len(refs) != 1:
                raise DcpError(f"the chunk at {offsets} in {info[0]} is not one tensor")
            ref = refs[0]
            if ref.dtype != item.dtype or ref.shape != sizes or ref.codec is not None:
                raise DcpError(
                    f"the chunk at {offsets} in {info[0]} is a tensor of {ref.dtype} {ref.shape}"
                    f"{' (a view)' if ref.codec is not None else ''}, not the {item.dtype} "
                    f"{sizes} .metadata says"
                )
            begin = ref.offset
        _, st = opened(info[0])  # type: ignore[operator]
        pieces.append(
            Piece(
                os.path.join(folder, info[0]),
                st.st_dev,
                st.st_ino,
                st.st_size,
                st.st_mtime_ns,
                st.st_ctime_ns,
                begin,
                n * w,
                offsets,
                sizes,
            )
        )
    total = 1
    for d in item.shape:
        total *= d
    st = meta_st
    return BufferRef(
        meta_path,
        step,
        item.fqn,
        total * w,
        st.st_dev,
        st.st_ino,
        st.st_mtime_ns,
        st.st_ctime_ns,
        offset=0,
        file_size=st.st_size,
        dtype=item.dtype,
        shape=item.shape,
        codec=Pieces(w, item.shape, tuple(pieces)),
    )


def _blob_chunk(
    item: Item, offsets: tuple[int, ...], sizes: tuple[int, ...], info: tuple[str, int, int],
    found: dict[str, tuple[Tensor, tuple[int, ...]]],
) -> int:  # fmt: skip
    """Where a chunk's bytes begin in a safetensors blob's file: the blob's
    tensor of the item's name, checked to be the chunk ``.metadata`` says
    (dtype, shape, offsets in the global tensor, length)."""
    got = found.get(item.fqn)
    if got is None:
        raise DcpError(f"the safetensors blob at {info[1]:,} in {info[0]} holds no {item.fqn!r}")
    t, at = got
    if t.dtype != item.dtype or t.shape != sizes or at != offsets or t.end - t.begin != info[2]:
        raise DcpError(
            f"the chunk at {offsets} in {info[0]} is a tensor of {t.dtype} {t.shape} at {at} "
            f"({t.end - t.begin:,} bytes), not the {item.dtype} {sizes} at {offsets} "
            f"({info[2]:,} bytes) .metadata says"
        )
    return t.begin


def _common(out: StepRead, path: str, step: int) -> None:
    """Megatron ``torch_dist``'s ``common.pt``: its tensors (named as its
    pickle names them) and values, beside the DCP items."""
    from .torchzip import TorchError, read_file

    try:
        arch = read_file(path, step)
    except (OSError, TorchError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else str(exc)
        out.items.append(Unread(step, COMMON, f"{COMMON}: {why}; its tensors were not compared"))
        return
    taken = {i.name for i in out.items}
    out.values[COMMON] = arch.root
    out.left_out += arch.left_out
    out.names.extend(n for n in arch.names if n not in out.names)
    for ref in arch.buffers:
        if ref.name in taken:
            out.items.append(
                Unread(
                    step,
                    ref.name,
                    f"{ref.name!r} is both in {COMMON} and a DCP item; neither was compared",
                )
            )
        else:
            out.items.append(ref)


def step_values(folder: str) -> dict[str, object]:
    """The values of a DCP folder that are not tensors (its ``BYTE_IO``
    items, and ``common.pt``'s pickle), by name, as data: what a
    comparison of values reads. Raises as ``read_step``."""
    return read_step(folder, 0).values


# --- runs ---------------------------------------------------------------------------


def _skipped(spec: str, read: StepRead) -> tuple[Skipped, ...]:
    from ..model.results import Skipped
    from .torchzip import names_note

    said = []
    if read.left_out:
        n = read.left_out
        what = (
            "value that is not a tensor (a number, string, ...) is"
            if n == 1
            else "values that are not tensors (numbers, strings, ...) are"
        )
        said.append(f"{n:,} {what} not compared")
    if read.names:
        said.append(names_note(tuple(read.names)))
    return (Skipped(spec, "; ".join(said)),) if said else ()


def _refusal(folder: str, exc: Exception) -> tuple[str, str]:
    """(message, kind) of a DCP folder that cannot be read."""
    meta = os.path.join(folder, METADATA)
    if isinstance(exc, OSError):
        return f"cannot read {meta}: {exc.strerror}", "unreadable"
    return f"not a usable distributed checkpoint: {meta}: {exc}", "malformed"


def open_source(spec: str, steps: StepFilter | None = None) -> RunSource:
    """A DCP folder as a run source of one step, 0 (a root of ``step-<N>``
    ones is ``stepfolders``': each step folder opened by this)."""
    from .torchpickle import PickleRefused

    want = step_filter(steps)
    try:
        read = read_step(spec, 0)
    except (OSError, DcpError, PickleRefused) as exc:
        return refused(spec, *_refusal(spec, exc))
    items = read.items if want is None or want(0) else []
    listing = container_listing(spec, items, _skipped(spec, read))
    return RunSource(spec, listing, steps=steps, kind="dcp")
