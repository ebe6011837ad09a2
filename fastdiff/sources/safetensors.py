"""The safetensors format: one file of tensors, and checkpoint folders of them.

A file is an 8-byte little-endian header length N, N bytes of JSON (each
tensor's ``dtype``, ``shape`` and ``data_offsets`` [begin, end) in the data
that follows, and an optional ``__metadata__`` of strings), then the data.
A checkpoint folder, as exporters write it, holds ``model.safetensors``, or
shards with ``model.safetensors.index.json`` (its ``weight_map`` names the
shard of each tensor): one step (0) whose buffers are every tensor of every
shard. DCP's ``HuggingFaceStorageWriter`` writes a folder of
``shard-<R>-model-<K>-of-<N>.safetensors`` files, one per rank, whose
``__metadata__`` holds ``DCP_SHARDING_INFO`` (each chunk's
``saved_offsets``): its tensors are assembled from their chunks into global
tensors, as DCP's ``.distcp`` chunks are (``buffers.tiling_problem`` checks
that they tile the shape).

The header is checked as safetensors' own reader checks it
(``safetensors/src/tensor.rs``), and a file that fails a check is refused
with a one-line message, never read: a header length beyond the file or
over ``MAX_HEADER_SIZE``; a header that lists over ``MAX_TENSORS`` tensors
(counted before the JSON is parsed, and as it is); a header that is not a
JSON object of UTF-8 text, or holds a key twice; an unknown dtype; a shape that is not a list of
non-negative integers; offsets that are not sorted, contiguous from 0,
non-overlapping, that disagree with dtype x shape, or do not end exactly
at the end of the file (trailing bytes, or a truncated file). Arithmetic is
on Python integers (no overflow); no tensor is loaded: a buffer is a byte
range of the file, hashed through memory maps.
"""

from __future__ import annotations

import os

from ..dtypes import from_safetensors, get_dtype
from ..model.results import Problem
from .buffers import BufferRef, RunListing, step_filter
from .formats import suffix
from .run import RunSource, refused

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from .buffers import StepFilter

#: How a safetensors file is named (``formats.FORMATS``).
SUFFIX = suffix("safetensors")
#: safetensors' own cap on a header (``MAX_HEADER_SIZE`` in tensor.rs).
MAX_HEADER_SIZE = 100_000_000
#: A file lists at most this many tensors (each costs about a kilobyte to
#: read, list and compare: a 100 MB header could list 1.4 million).
MAX_TENSORS = 1 << 18
#: The file an exporter writes for a checkpoint in one file, and its index
#: for a checkpoint in shards.
SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"
#: An index file is read whole: at most this many bytes.
MAX_INDEX_SIZE = 64 << 20
#: The ``__metadata__`` key in which ``torch.distributed.checkpoint``'s
#: ``HuggingFaceStorageWriter`` puts each tensor's place in the global one
#: (``{name: {"saved_offsets": [...]}}``), and how it names the file of a
#: rank (``shard-<R>-model-<K>-of-<N>.safetensors``, ``save_distributed``).
DCP_SHARDING = "DCP_SHARDING_INFO"
DCP_SHARD = "shard-"


class SafetensorsError(ValueError):
    """A file or folder that is not a usable safetensors checkpoint."""


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in pairs:
        if k in out:
            raise SafetensorsError(f"the header holds key {k!r} twice")
        if not k.isascii():
            _text(k)
        out[k] = v
    return out


def _too_many() -> SafetensorsError:
    return SafetensorsError(
        f"the header lists over {MAX_TENSORS:,} tensors, more than fastdiff reads from one "
        "file (save the checkpoint in shards)"
    )


def _counted(pairs: list[tuple[str, object]], seen: list[int]) -> dict[str, object]:
    """``_no_duplicates``, counting the objects the header has made in
    ``seen``: past a tensor per object over ``MAX_TENSORS`` (with the
    header itself and its ``__metadata__``), refused before more are made."""
    seen[0] += 1
    if seen[0] > MAX_TENSORS + 2:
        raise _too_many()
    return _no_duplicates(pairs)


def _text(s: str) -> None:
    """Refuse a string JSON gave that is no Unicode text: a lone surrogate
    escape (``\\ud800``), which safetensors' own reader refuses."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise SafetensorsError(
            f"the header holds {s!r}, not valid text (a lone surrogate escape)"
        ) from None


class Tensor:
    """One tensor of a header: name, dtype (fastdiff's name), shape, and its
    byte range in the file."""

    __slots__ = ("begin", "dtype", "end", "name", "shape")

    def __init__(self, name: str, dtype: str, shape: tuple[int, ...], begin: int, end: int) -> None:
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.begin = begin
        self.end = end


def sniff(head: bytes, fd: int, size: int) -> bool:
    """Whether a file of ``size`` bytes whose first bytes ``head`` put ``{``
    after 8 bytes (its magic in ``formats.FORMATS``) is a safetensors file:
    those 8 bytes, a little-endian header length, fit in the file. Its
    reader checks the rest."""
    n = int.from_bytes(head[:8], "little")
    return 2 <= n <= size - 8


def parse_header(fd: int, file_size: int) -> list[Tensor]:
    """The tensors of an open safetensors file, in file order, checked
    (module docstring); raises SafetensorsError."""
    return parse_header_meta(fd, file_size)[0]


def parse_header_meta(
    fd: int, file_size: int, start: int = 0
) -> tuple[list[Tensor], dict[str, str]]:
    """``parse_header``'s tensors and the header's ``__metadata__`` (strings
    to strings; empty when it has none). ``start``: where the safetensors
    data begins in the file (a blob that runs from there to the end, as
    DCP writes them after a rank's values); the tensors' offsets are the
    file's."""
    if file_size - start < 8:
        raise SafetensorsError(f"{file_size - start} bytes: too short for a safetensors header")
    n = int.from_bytes(os.pread(fd, 8, start), "little")
    if n > MAX_HEADER_SIZE:
        raise SafetensorsError(
            f"header length {n:,} is over the {MAX_HEADER_SIZE:,} bytes safetensors allows"
        )
    if start + n + 8 > file_size:
        raise SafetensorsError(
            f"header length {n:,} runs past the end of the file ({file_size:,} bytes)"
        )
    raw = os.pread(fd, n, start + 8)
    if len(raw) != n:
        raise SafetensorsError("the file ended while its header was read (truncated?)")
    # Each tensor has its data_offsets key: more of them than the cap is
    # refused at once. (Spelt with escapes, the key is not seen here, but
    # then the objects are counted as they are parsed.)
    if raw.count(b'"data_offsets"') > MAX_TENSORS:
        raise _too_many()
    import json

    seen = [0]
    try:
        text = raw.decode("utf-8")
        doc = json.loads(text, object_pairs_hook=lambda pairs: _counted(pairs, seen))
    except UnicodeDecodeError:
        raise SafetensorsError("the header is not UTF-8 text") from None
    except RecursionError:
        raise SafetensorsError("the header is nested too deeply to be a header") from None
    except ValueError as exc:
        if isinstance(exc, SafetensorsError):
            raise
        raise SafetensorsError(f"the header is not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise SafetensorsError("the header is not a JSON object")
    base = start + 8 + n
    data_size = file_size - base
    tensors = []
    meta: dict[str, str] = {}
    for name, info in doc.items():
        if name == "__metadata__":
            if not isinstance(info, dict) or not all(isinstance(v, str) for v in info.values()):
                raise SafetensorsError("__metadata__ must map strings to strings")
            for v in info.values():
                _text(v)
            meta = info
            continue
        tensors.append(_tensor(name, info, base))
    if len(tensors) > MAX_TENSORS:
        raise _too_many()
    tensors.sort(key=lambda t: (t.begin, t.end))
    pos = base
    for t in tensors:
        if t.begin != pos:
            what = "overlaps the one before" if t.begin < pos else "leaves a hole before it"
            raise SafetensorsError(
                f"tensor {t.name!r}: its data at offsets [{t.begin - base}, {t.end - base}) {what}"
            )
        pos = t.end
    if pos != file_size:
        if pos > file_size:
            raise SafetensorsError(
                f"the tensors' data runs {pos - file_size:,} bytes past the end of the file "
                "(truncated?)"
            )
        raise SafetensorsError(
            f"{file_size - pos:,} bytes after the last tensor's data (of {data_size:,}); "
            "a safetensors file ends where its last tensor does"
        )
    return tensors, meta


def _tensor(name: str, info: object, base: int) -> Tensor:
    if not isinstance(info, dict):
        raise SafetensorsError(f"tensor {name!r}: not an object")
    for key in info:
        if key not in ("dtype", "shape", "data_offsets"):
            raise SafetensorsError(f"tensor {name!r}: unknown key {key!r}")
    try:
        dt = from_safetensors(info.get("dtype"))
    except ValueError as exc:
        raise SafetensorsError(f"tensor {name!r}: {exc}") from None
    shape = info.get("shape")
    if not isinstance(shape, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 62 for d in shape
    ):
        raise SafetensorsError(f"tensor {name!r}: shape must be a list of integers >= 0")
    offsets = info.get("data_offsets")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
    ):
        raise SafetensorsError(f"tensor {name!r}: data_offsets must be [begin, end]")
    begin, end = offsets
    if not 0 <= begin <= end:
        raise SafetensorsError(f"tensor {name!r}: data_offsets [{begin}, {end}] are not in order")
    count = 1
    for d in shape:
        count *= d
    if (end - begin) != count * dt.itemsize:
        raise SafetensorsError(
            f"tensor {name!r}: {end - begin:,} bytes of data, but its {dt.name} shape "
            f"{tuple(shape)} needs {count * dt.itemsize:,}"
        )
    return Tensor(name, dt.name, tuple(shape), base + begin, base + end)


def file_buffers(path: str, step: int, fd: int, st: os.stat_result) -> list[BufferRef]:
    """The buffers of one safetensors file (at ``step``); raises SafetensorsError."""
    return _file_buffers(path, step, fd, st)[0]


def _file_buffers(
    path: str, step: int, fd: int, st: os.stat_result
) -> tuple[list[BufferRef], dict[str, str]]:
    """``file_buffers`` and the header's ``__metadata__``."""
    tensors, meta = parse_header_meta(fd, st.st_size)
    dev, ino, mtime, ctime = st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns
    size = st.st_size
    out = []
    for t in tensors:
        ref = BufferRef(
            path, step, t.name, t.end - t.begin, dev, ino, mtime, ctime, offset=t.begin,
            file_size=size, dtype=t.dtype, shape=t.shape,
        )  # fmt: skip
        out.append(ref)
    return out, meta


def read_file(path: str, step: int) -> list[BufferRef]:
    """The buffers of the safetensors file at ``path``; raises OSError or
    SafetensorsError."""
    return _read_shard(path, step)[0]


def _read_shard(path: str, step: int) -> tuple[list[BufferRef], dict[str, str]]:
    """``read_file``'s buffers and the header's ``__metadata__``."""
    from .reader import read_regular

    return read_regular(path, lambda fd, st: _file_buffers(path, step, fd, st), SafetensorsError)


def _read_index(folder: str) -> dict[str, str]:
    """tensor name -> shard file name, from a checkpoint's index; checked."""
    import json

    path = os.path.join(folder, INDEX)
    with open(path, "rb") as fh:
        raw = fh.read(MAX_INDEX_SIZE + 1)
    if len(raw) > MAX_INDEX_SIZE:
        raise SafetensorsError(f"{INDEX} is over {MAX_INDEX_SIZE:,} bytes")
    try:
        doc = json.loads(raw, object_pairs_hook=_no_duplicates)
    except (ValueError, RecursionError) as exc:
        if isinstance(exc, SafetensorsError):
            raise SafetensorsError(f"{INDEX}: {exc}") from None
        raise SafetensorsError(f"{INDEX} is not valid JSON ({exc})") from None
    weight_map = doc.get("weight_map") if isinstance(doc, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise SafetensorsError(f"{INDEX} has no weight_map of tensor names to shard files")
    for tensor, shard in weight_map.items():
        if (
            not isinstance(shard, str)
            or not shard.endswith(SUFFIX)
            or "/" in shard
            or "\\" in shard
            or "\0" in shard
            or shard in (".", "..")
        ):
            raise SafetensorsError(
                f"{INDEX}: tensor {tensor!r} points at {shard!r}, not a .safetensors file in "
                "the checkpoint folder"
            )
    return weight_map


def _shard_of(name: str) -> tuple[str, str] | None:
    """``(model, total)`` of a shard's name as exporters write it
    (``model-00001-of-00003.safetensors``), else None."""
    parts = name[: -len(SUFFIX)].rsplit("-", 3)
    if len(parts) != 4 or parts[2] != "of" or not (parts[1].isdigit() and parts[3].isdigit()):
        return None
    return parts[0], parts[3]


def _absent_shards(files: list[str]) -> list[str]:
    """The shards that shards of one model (``model-0000K-of-0000N``) say
    exist but ``files`` lacks, named as their siblings are."""
    found: dict[tuple[str, str], set[int]] = {}
    widths: dict[tuple[str, str], int] = {}
    for name in files:
        of = _shard_of(name)
        if of is None:
            continue
        number = name[: -len(SUFFIX)].rsplit("-", 3)[1]
        found.setdefault(of, set()).add(int(number))
        widths[of] = len(number)
    absent = []
    for (model, total), numbers in found.items():
        if int(total) > 100_000:
            continue  # no exporter writes so many: not a count to enumerate
        width = widths[(model, total)]
        absent += [
            f"{model}-{k:0{width}d}-of-{total}{SUFFIX}"
            for k in range(1, int(total) + 1)
            if k not in numbers
        ]
    return sorted(absent)


def _dcp_shard(name: str) -> bool:
    """Whether ``name`` is a rank's file as DCP's ``HuggingFaceStorageWriter``
    names it (``shard-00002-model-00001-of-00001.safetensors``)."""
    rank, _, rest = name[len(DCP_SHARD) :].partition("-")
    return name.startswith(DCP_SHARD) and rank.isdigit() and _shard_of(rest) is not None


def is_checkpoint_folder(names: Iterable[str]) -> bool:
    """Whether a folder's entry names are a safetensors checkpoint's: its
    index (``model.safetensors.index.json``), one ``*.safetensors`` file,
    shards of one model (``model-0000K-of-0000N.safetensors``, one model and
    one N), or the files of DCP's ranks (``shard-<R>-model-<K>-of-<N>``,
    each its rank's shards). Several other ``.safetensors`` files are no
    checkpoint: they may be anything (two exports side by side), and are
    left to be named."""
    files = []
    for n in names:
        if n == INDEX:
            return True
        if n.endswith(SUFFIX):
            files.append(n)
    if len(files) <= 1:
        return bool(files)
    if all(_dcp_shard(n) for n in files):
        return True
    return len({_shard_of(n) for n in files}) == 1 and _shard_of(files[0]) is not None


def folder_listing(folder: str, names: list[str]) -> RunListing:
    """A checkpoint folder as one step (0) of buffers: the shards its index
    names (or every ``*.safetensors`` file when there is no index); each
    tensor must be in the shard the index says, and in one shard only.

    A shard that is missing or refused leaves its tensors unknown, not
    absent: those the index puts in it are broken entries (errors where
    the other run holds them), and without an index every tensor of the
    step is unknown (``RunListing.lost``). So is a tensor the index puts
    in another shard than the one holding it."""
    from ..model.results import Skipped

    errors: list[Problem] = []
    skipped: list[Skipped] = []
    lost: list[tuple[int, Problem]] = []
    if INDEX in names:
        try:
            weight_map = _read_index(folder)
        except (OSError, SafetensorsError) as exc:
            message = getattr(exc, "strerror", None) or str(exc)
            return RunListing(folder, (), (), (Problem(folder, message, "malformed"),), False)
        shards = sorted(set(weight_map.values()))
    else:
        weight_map = {}
        shards = sorted(n for n in names if n.endswith(SUFFIX))
        for shard in _absent_shards(shards):
            path = os.path.join(folder, shard)
            problem = Problem(
                path,
                "missing: the other shards' names say the checkpoint has it, and without "
                f"{INDEX} no tensor of the checkpoint is known to be complete; copy the shard",
                "missing",
            )
            errors.append(problem)
            lost[:1] = [(0, problem)]
    listed = set(shards) | {INDEX}
    skipped += [
        Skipped(os.path.join(folder, n), "not a tensor file of this checkpoint")
        for n in sorted(names)
        if n not in listed
    ]
    buffers: list[BufferRef] = []
    seen: dict[str, str] = {}
    broken: dict[tuple[int, str], Problem] = {}

    def unknown(shard: str, problem: Problem) -> None:
        """The tensors of a shard that could not be read are unknown."""
        errors.append(problem)
        if not weight_map:
            lost[:1] = [(0, problem)]
        for tensor, where in weight_map.items():
            if where == shard:
                broken.setdefault((0, tensor), problem)

    chunks: dict[str, list[tuple[BufferRef, tuple[int, ...]]]] = {}
    for shard in shards:
        path = os.path.join(folder, shard)
        try:
            refs, meta = _read_shard(path, 0)
            shapes = {r.name: r.shape for r in refs}
            saved = saved_offsets(meta, shapes) if DCP_SHARDING in meta else None
        except FileNotFoundError:
            why = (
                f"named in {INDEX} but missing"
                if weight_map
                else "listed in the folder but missing (a link to nothing, or removed as "
                "the run was read)"
            )
            unknown(shard, Problem(path, why, "missing"))
            continue
        except OSError as exc:
            unknown(shard, Problem(path, f"cannot read: {exc.strerror}", "unreadable"))
            continue
        except SafetensorsError as exc:
            unknown(shard, Problem(path, f"{exc}; nothing of it was compared", "malformed"))
            continue
        for ref in refs:
            if saved is None and ref.name in seen:
                problem = Problem(path, f"tensor {ref.name!r} is also in {seen[ref.name]}",
                                  "malformed")  # fmt: skip
                errors.append(problem)
                broken.setdefault((0, ref.name), problem)
                continue
            if weight_map and weight_map.get(ref.name) != shard:
                where = weight_map.get(ref.name)
                said = f"{INDEX} puts it in {where}" if where else f"{INDEX} does not list it"
                problem = Problem(path, f"tensor {ref.name!r}: {said}", "malformed")
                errors.append(problem)
                broken.setdefault((0, ref.name), problem)
                continue
            if saved is not None:  # a chunk of a DCP tensor: assembled below
                chunks.setdefault(ref.name, []).append((ref, saved[ref.name]))
                continue
            seen[ref.name] = shard
            buffers.append(ref)
    for name, parts in chunks.items():
        got = _assembled(folder, name, parts, seen.get(name))
        if isinstance(got, Problem):
            errors.append(got)
            broken.setdefault((0, name), got)
        else:
            seen[name] = os.path.basename(parts[0][0].path)
            buffers.append(got)
    # A tensor held twice is kept from its first shard, yet is not known
    # to be that one: an error wherever it is paired.
    buffers = [f for f in buffers if (0, f.name) not in broken]
    if lost:
        # Without an index, a shard missing or refused leaves every tensor of
        # the step unknown: none is compared (each is an error where the other
        # run holds it), so a checkpoint short of a shard is never "identical".
        buffers = []
    missing = sorted(set(weight_map) - set(seen) - {name for _, name in broken})
    if missing:
        problem = Problem(
            folder,
            f"{INDEX} lists {len(missing)} tensors no shard holds ({', '.join(missing[:3])}"
            f"{' ...' if len(missing) > 3 else ''})",
            "malformed",
        )
        errors.append(problem)
        broken.update(((0, name), problem) for name in missing)
    return RunListing(
        folder, tuple(buffers), tuple(skipped), tuple(errors), True, tuple(sorted(broken.items())),
        tuple(lost),
    )  # fmt: skip


def saved_offsets(
    meta: dict[str, str], shapes: dict[str, tuple[int, ...]]
) -> dict[str, tuple[int, ...]]:
    """Each tensor's offsets in its global tensor, from a header's
    ``DCP_SHARDING_INFO`` (zeros for a tensor it does not name, as torch
    reads it; ``shapes``: the header's tensors); checked: SafetensorsError
    for one that is not JSON, names a tensor the file does not hold, or
    gives offsets that are not one integer >= 0 for each dimension."""
    import json

    try:
        doc = json.loads(meta[DCP_SHARDING], object_pairs_hook=_no_duplicates)
    except (ValueError, RecursionError) as exc:
        if isinstance(exc, SafetensorsError):
            raise SafetensorsError(f"{DCP_SHARDING}: {exc}") from None
        raise SafetensorsError(f"{DCP_SHARDING} is not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise SafetensorsError(f"{DCP_SHARDING} is not a JSON object")
    out = {name: (0,) * len(shape) for name, shape in shapes.items()}
    for name, info in doc.items():
        if name not in shapes:
            raise SafetensorsError(
                f"{DCP_SHARDING} names {name!r}, a tensor the file does not hold"
            )
        offsets = info.get("saved_offsets") if isinstance(info, dict) else None
        if (
            not isinstance(info, dict)
            or set(info) != {"saved_offsets"}
            or not isinstance(offsets, list)
            or len(offsets) != len(shapes[name])
            or not all(
                isinstance(o, int) and not isinstance(o, bool) and 0 <= o < 1 << 62 for o in offsets
            )
        ):
            raise SafetensorsError(
                f'{DCP_SHARDING}: tensor {name!r}: not {{"saved_offsets": [...]}} of '
                f"{len(shapes[name])} integers >= 0"
            )
        out[name] = tuple(offsets)
    return out


def _assembled(
    folder: str, name: str, parts: list[tuple[BufferRef, tuple[int, ...]]], whole: str | None
) -> BufferRef | Problem:
    """One tensor of a DCP checkpoint in safetensors files, from its chunks
    (each a tensor of a rank's file and its offsets in the global tensor):
    one buffer in global coordinates (``Pieces``; a lone chunk at the origin
    is the tensor itself), or the Problem of chunks that do not tile their
    global shape. The global shape is where the chunks end, as torch's
    reader takes it (no file says it)."""
    from .buffers import MAX_CHUNKS, Piece, Pieces, tiling_problem

    def problem(why: str) -> Problem:
        return Problem(folder, f"tensor {name!r}: {why}; this tensor was not compared", "malformed")

    first = parts[0][0]
    if whole is not None:
        return problem(f"it is both whole in {whole} and a chunk in {os.path.basename(first.path)}")
    kinds = sorted({(r.dtype, len(r.shape)) for r, _ in parts}, key=str)
    if len(kinds) > 1:
        said = ", ".join(f"{dt} of {n} dimensions" for dt, n in kinds)
        return problem(f"its chunks are not all of one dtype and rank ({said})")
    if len(parts) > MAX_CHUNKS:
        return problem(f"{len(parts):,} chunks, over the {MAX_CHUNKS:,} fastdiff assembles")
    ndim = len(first.shape)
    shape = tuple(max(o[d] + r.shape[d] for r, o in parts) for d in range(ndim))
    why = tiling_problem(shape, [(o, r.shape) for r, o in parts])
    if why is not None:
        return problem(why)
    if len(parts) == 1:
        return first  # the tensor whole, at the origin (it tiles its shape)
    total = 1
    for d in shape:
        total *= d
    w = get_dtype(first.dtype).itemsize
    pieces = tuple(
        Piece(
            r.path, r.dev, r.ino, r.file_size, r.mtime_ns, r.ctime_ns, r.offset, r.size, o, r.shape
        )
        for r, o in sorted(parts, key=lambda p: p[1])
        if r.size
    )
    return BufferRef(
        first.path, 0, name, total * w, first.dev, first.ino, first.mtime_ns, first.ctime_ns,
        offset=0, file_size=first.file_size, dtype=first.dtype, shape=shape,
        codec=Pieces(w, shape, pieces),
    )  # fmt: skip


def open_source(spec: str, steps: StepFilter | None = None) -> RunSource:
    """A safetensors file (one step, 0) or checkpoint folder as a run source."""
    want = step_filter(steps)
    if os.path.isdir(spec):
        try:
            names = sorted(os.listdir(spec))
        except OSError as exc:
            return refused(spec, f"cannot list run folder: {exc.strerror}", "unreadable")
        listing = folder_listing(spec, names)
    else:
        try:
            refs = read_file(spec, 0)
        except OSError as exc:
            return refused(spec, f"cannot read: {exc.strerror}", "unreadable")
        except SafetensorsError as exc:
            return refused(spec, f"not a usable safetensors file: {exc}", "malformed")
        listing = RunListing(spec, tuple(refs), (), ())
    if want is not None and not want(0):
        listing = RunListing(spec, (), (), listing.errors, listing.readable)
    return RunSource(spec, listing, steps=steps, kind="safetensors")
