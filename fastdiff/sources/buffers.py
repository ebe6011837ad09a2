"""What a run is made of: buffer references, the listing of a run, digests.

A ``BufferRef`` says where one buffer's bytes are: the file that holds them
(its identity as ``stat`` saw it when the run was listed), the byte offset
and length of the buffer in that file, and what the file's own header says
of it (dtype and shape), if it has one. A raw ``.bin`` dump is a buffer
that is the whole file; a tensor of a safetensors file is a range of it;
a member of a compressed ``.npz`` is a stream (``Codec``); a tensor of a
distributed checkpoint is pieces of several files (``Pieces``); a numpy array
pickled as text inside a ``torch.save`` archive is bytes decoded when the
archive was listed (``Inline``). Every stage
takes buffer references, never paths: digests and cache entries are keyed
by buffer, and chunks are counted from the start of each buffer (the same
tensor may sit at different offsets in two runs).

Nothing here reads a file.
"""

from __future__ import annotations

from xxhash import xxh3_64_hexdigest, xxh3_128_digest

from .names import MAX_STEP_DIGITS, split_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Container, Iterable
    from typing import Any

    from ..model.results import Problem, Skipped

    #: Which steps to list: a set or range of step numbers, or a predicate.
    StepFilter = Container[int] | Callable[[int], bool]


class Codec:
    """How a buffer's bytes are got from its file when they are not a plain
    byte range: the base of ``Deflate`` (a compressed stream), ``Strided``
    (a view with strides) and ``Inline`` (bytes decoded when the file was
    listed). ``key``: what identifies the
    encoding in a digest's key (with the file, offset and length)."""

    __slots__ = ()

    @property
    def key(self) -> tuple[object, ...]:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.key == self.key  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"{type(self).__name__}{self.key[1:]}"


class Deflate(Codec):
    """A raw deflate stream of ``stored`` bytes at the buffer's offset (a
    compressed zip member) whose output, after its first ``skip`` bytes (an
    ``.npy`` header), is the buffer's bytes; ``crc``: the CRC-32 of the
    whole output (None: not known)."""

    __slots__ = ("crc", "skip", "stored")

    def __init__(self, stored: int, crc: int | None = None, skip: int = 0) -> None:
        self.stored = stored
        self.crc = crc
        self.skip = skip

    @property
    def key(self) -> tuple[object, ...]:
        return ("deflate", self.stored, self.crc, self.skip)


class Strided(Codec):
    """A tensor view of a storage: elements of ``itemsize`` bytes at the
    buffer's offset plus ``sum(i_k * strides[k])`` elements, in logical
    (row-major) order of ``shape``. ``extent``: the bytes of the storage
    the view may touch, from the offset."""

    __slots__ = ("extent", "itemsize", "shape", "strides")

    def __init__(
        self, itemsize: int, shape: tuple[int, ...], strides: tuple[int, ...], extent: int
    ) -> None:
        self.itemsize = itemsize
        self.shape = shape
        self.strides = strides
        self.extent = extent

    @property
    def key(self) -> tuple[object, ...]:
        return ("strided", self.itemsize, self.shape, self.strides, self.extent)


class Inline(Codec):
    """A buffer whose bytes are in no byte range of its file, decoded when
    the file was listed and held here: a numpy array in a ``torch.save``
    pickle of protocol 2 (``torch.save``'s default), which writes bytes as
    latin-1 text in UTF-8 (each byte over 0x7f takes two), or in a pickle
    that is itself compressed. ``data``: the buffer's bytes, in logical
    order; the buffer's offset and size say where they were found (what
    its file's identity is checked against when they are read). ``key``:
    their length and xxh3-64 digest, never the bytes."""

    __slots__ = ("data", "digest")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.digest = xxh3_64_hexdigest(data)

    @property
    def key(self) -> tuple[object, ...]:
        return ("inline", len(self.data), self.digest)


class Value(Inline):
    """A value beside the tensors of a checkpoint (a number, a boolean, None,
    a string, bytes: an optimizer's ``lr``, a step counter, a path), held as
    it was read: ``kind`` is ``"value"`` (state: a difference is a
    divergence) or ``"label"`` (a string or bytes: a difference is listed,
    never a divergence), ``value`` the plain value; its bytes (``data``) are
    its type and ``repr``, so two values are equal when their types and
    values are (``1`` is not ``1.0`` nor ``True``; a NaN equals a NaN)."""

    __slots__ = ("kind", "value")

    def __init__(self, kind: str, value: object) -> None:
        super().__init__(value_bytes(value))
        self.kind = kind
        self.value = value


def value_bytes(value: object) -> bytes:
    """A plain value's bytes as ``Value`` holds them: its type's name and its
    ``repr`` (bytes as themselves, after the type's name)."""
    if type(value) is bytes:
        return b"bytes:" + value
    return f"{type(value).__name__}:{value!r}".encode("utf-8", "surrogatepass")


class Piece:
    """One piece of a buffer that spans several files (``Pieces``): a byte
    range of a file that holds the box of the buffer's elements from
    ``start`` (the global index of its first element) of extent ``shape``,
    in row-major order. ``path`` and ``dev``, ``ino``, ``file_size``,
    ``mtime_ns``, ``ctime_ns``: its file, as ``stat`` saw it when the run
    was listed (a reader checks it is still that file, as it does a
    buffer's own); ``offset``, ``size``: the range."""

    __slots__ = (
        "ctime_ns", "dev", "file_size", "ino", "mtime_ns", "offset", "path", "shape", "size",
        "start",
    )  # fmt: skip

    def __init__(
        self, path: str, dev: int, ino: int, file_size: int, mtime_ns: int, ctime_ns: int,
        offset: int, size: int, start: tuple[int, ...], shape: tuple[int, ...],
    ) -> None:  # fmt: skip
        self.path = path
        self.dev = dev
        self.ino = ino
        self.file_size = file_size
        self.mtime_ns = mtime_ns
        self.ctime_ns = ctime_ns
        self.offset = offset
        self.size = size
        self.start = start
        self.shape = shape

    @property
    def key(self) -> tuple[object, ...]:
        """Its identity: its file's (as ``BufferRef.file_key``), its range and its box."""
        return (
            self.dev, self.ino, self.file_size, self.mtime_ns, self.ctime_ns, self.offset,
            self.size, self.start, self.shape,
        )  # fmt: skip

    def __repr__(self) -> str:
        return f"Piece({self.path!r}, offset={self.offset}, size={self.size}, start={self.start})"

    def __reduce__(self) -> tuple[type[Piece], tuple[object, ...]]:
        return Piece, (
            self.path, self.dev, self.ino, self.file_size, self.mtime_ns, self.ctime_ns,
            self.offset, self.size, self.start, self.shape,
        )  # fmt: skip


class Pieces(Codec):
    """A buffer assembled from pieces of several files (a tensor of a
    ``torch.distributed.checkpoint``, saved as one chunk per rank): its
    bytes are the elements of ``itemsize`` bytes of the global ``shape`` in
    row-major order, each in exactly one ``Piece`` (boxes that tile the
    global shape, checked when the run was listed). Every stage reads the
    buffer in global order, so every index is the global one. ``key``: each
    piece's identity (``Piece.key``): a digest cached for the buffer is
    used only while every piece is still the file it was."""

    __slots__ = ("itemsize", "pieces", "shape")

    def __init__(self, itemsize: int, shape: tuple[int, ...], pieces: tuple[Piece, ...]) -> None:
        self.itemsize = itemsize
        self.shape = shape
        self.pieces = pieces

    @property
    def key(self) -> tuple[object, ...]:
        return ("pieces", self.itemsize, self.shape, tuple(p.key for p in self.pieces))

    def __repr__(self) -> str:
        return f"Pieces{self.key[1:]}"


#: At most this many pieces per buffer.
MAX_CHUNKS = 1 << 14
#: Chunks are checked to be disjoint on the grid their boundaries make when
#: it has at most this many cells (two bytes each), else pair by pair, at
#: most ``_PAIRS`` pairs for each chunk (or ``_MIN_PAIRS``) before the
#: tensor is refused as too irregular to check.
_CELLS = 1 << 22
#: Up to this many chunks, pair by pair at once (no numpy to import).
_FEW = 64
_PAIRS = 64
_MIN_PAIRS = 1 << 16


def tiling_problem(
    shape: tuple[int, ...], boxes: list[tuple[tuple[int, ...], tuple[int, ...]]]
) -> str | None:
    """Why chunks ``boxes`` (offsets, sizes) do not tile ``shape`` exactly
    (within it, disjoint, covering every element); None when they do.

    Within the shape and holding its number of elements, the chunks tile it
    if and only if no two overlap. That is checked on the grid of the
    chunks' boundaries (each chunk marks its cells; a cell marked twice is
    an overlap), in time proportional to the cells; where that grid is too
    large (chunks of many different boundaries in every dimension), pair by
    pair, sorted along the dimension of the most boundaries, within a
    bounded number of pairs: never in time quadratic in the chunks."""
    total = 1
    for d in shape:
        total *= d
    volume = 0
    live = []
    for start, size in boxes:
        if any(s + n > d for s, n, d in zip(start, size, shape, strict=True)):
            return f"a chunk at {start} of {size} reaches past its shape {shape}"
        n = 1
        for d in size:
            n *= d
        volume += n
        if n:
            live.append((start, size))
    if volume != total:
        return f"its chunks hold {volume:,} elements, not its {total:,}"
    if len(live) < 2:
        return None
    cuts = [
        sorted({s[k] for s, _ in live} | {s[k] + z[k] for s, z in live}) for k in range(len(shape))
    ]
    if len(live) <= _FEW:
        return _overlap_by_pairs(live, cuts)
    cells = 1
    for c in cuts:
        cells *= len(c) - 1
    if cells <= _CELLS:
        return _overlap_on_grid(live, cuts)
    return _overlap_by_pairs(live, cuts)


def _overlap_on_grid(
    live: list[tuple[tuple[int, ...], tuple[int, ...]]], cuts: list[list[int]]
) -> str | None:
    """``tiling_problem``'s overlap check on the grid ``cuts`` make."""
    import numpy as np

    at = [{x: i for i, x in enumerate(c)} for c in cuts]
    label = np.uint16 if len(live) < 1 << 16 else np.uint32
    grid = np.zeros([len(c) - 1 for c in cuts], dtype=label)
    for i, (start, size) in enumerate(live):
        box = tuple(
            slice(at[k][s], at[k][s + z]) for k, (s, z) in enumerate(zip(start, size, strict=True))
        )
        seen = grid[box]
        if seen.any():
            other = live[int(seen[seen != 0].flat[0]) - 1][0]
            return f"its chunks at {other} and {start} overlap"
        grid[box] = i + 1
    return None


def _overlap_by_pairs(
    live: list[tuple[tuple[int, ...], tuple[int, ...]]], cuts: list[list[int]]
) -> str | None:
    """``tiling_problem``'s overlap check pair by pair: sorted along the
    dimension of the most boundaries, each chunk against those after it
    that start before it ends there, at most a bounded number of pairs."""
    k = max(range(len(cuts)), key=lambda d: len(cuts[d]))
    live = sorted(live, key=lambda b: b[0][k])
    budget = max(_MIN_PAIRS, _PAIRS * len(live))
    for i, (a, sa) in enumerate(live):
        end = a[k] + sa[k]
        for b, sb in live[i + 1 :]:
            if b[k] >= end:
                break  # sorted along k: none after overlaps
            budget -= 1
            if budget < 0:
                return (
                    f"its {len(live):,} chunks are laid out too irregularly to check that "
                    "they tile its shape"
                )
            if all(max(x, y) < min(x + m, y + n) for x, m, y, n in zip(a, sa, b, sb, strict=True)):
                return f"its chunks at {a} and {b} overlap"
    return None


class BufferRef:
    """One buffer of a run, as the listing saw it (an immutable value).

    ``path``: the file holding the bytes (for a manifest, how the manifest
    names the entry); ``step``, ``name``: who the buffer is; ``offset`` and
    ``size``: where its bytes lie in the file and how many there are (the
    buffer's own bytes, decompressed or gathered where a ``codec`` says
    how); ``file_size``, ``dev``, ``ino``, ``mtime_ns``, ``ctime_ns``: the
    file as ``stat`` saw it (a reader checks it is still that file);
    ``dtype`` and ``shape``: what the file's header says (None: the schema
    decides); ``digest``: the chunk digests known in advance (a manifest's,
    a recorder's digest log), if any; ``has_data``: whether the bytes can be
    read (False for a manifest's entries: only digests); ``span``: the
    first ``BufferRef`` of a group of buffers that are the very same bytes
    (tied views of one storage), whose digest they all take, so they are
    hashed once; None: the buffer itself.

    Equality is identity: the scheduler keys digests by the very buffer a
    listing holds, so a run listed afresh is read afresh.
    """

    __slots__ = (
        "codec", "ctime_ns", "dev", "digest", "dtype", "file_size", "has_data", "ino",
        "mtime_ns", "name", "offset", "path", "shape", "size", "span", "step",
    )  # fmt: skip

    path: str
    step: int
    name: str
    size: int
    dev: int
    ino: int
    mtime_ns: int
    ctime_ns: int
    offset: int
    file_size: int
    dtype: str | None
    shape: tuple[int, ...] | None
    codec: Codec | None
    digest: BufferDigest | None
    has_data: bool
    span: object

    def __init__(
        self, path: str, step: int, name: str, size: int, dev: int, ino: int,
        mtime_ns: int, ctime_ns: int, offset: int = 0, file_size: int | None = None,
        dtype: str | None = None, shape: tuple[int, ...] | None = None,
        codec: Codec | None = None, digest: BufferDigest | None = None,
        has_data: bool = True, span: object = None,
    ) -> None:  # fmt: skip
        self.path = path
        self.step = step
        self.name = name
        self.size = size
        self.dev = dev
        self.ino = ino
        self.mtime_ns = mtime_ns
        self.ctime_ns = ctime_ns
        self.offset = offset
        self.file_size = size if file_size is None else file_size
        self.dtype = dtype
        self.shape = shape
        self.codec = codec
        self.digest = digest
        self.has_data = has_data
        self.span = span

    def __repr__(self) -> str:
        where = f", offset={self.offset}" if self.offset or self.file_size != self.size else ""
        return (
            f"BufferRef({self.path!r}, step={self.step}, name={self.name!r}, "
            f"size={self.size}{where})"
        )

    def __reduce__(self) -> tuple[type[BufferRef], tuple[object, ...]]:
        # Sent to worker processes: slots classes pickle by their fields, all
        # but the span (an identity within one listing: the copy is its own).
        return BufferRef, (*_ref_fields(self)[:-1], None)

    @property
    def whole_file(self) -> bool:
        """The buffer is its file's every byte (a raw dump)."""
        return self.codec is None and self.offset == 0 and self.size == self.file_size

    @property
    def file_key(self) -> tuple[int, int, int, int, int]:
        """The file's identity: (device, inode, size, mtime_ns, ctime_ns)."""
        return (self.dev, self.ino, self.file_size, self.mtime_ns, self.ctime_ns)

    @property
    def key(self) -> tuple[object, ...]:
        """The buffer's identity, where its bytes are: its file's
        (``file_key``), with the offset, the length and the codec's key (None:
        a plain byte range). The digest cache keys an entry by it
        (``engine.cache``); two buffers of one key are the same bytes."""
        codec = None if self.codec is None else self.codec.key
        return (*self.file_key, self.offset, self.size, codec)

    def replace(self, **changes: Any) -> BufferRef:
        """A copy with the given fields changed (by their names, those of
        ``__init__``); every other field, the span among them, is kept."""
        fields = dict(zip(REF_FIELDS, _ref_fields(self), strict=True))
        fields.update(changes)
        return BufferRef(**fields)

    def with_digest(self, digest: BufferDigest | None) -> BufferRef:
        """This buffer with ``digest`` known in advance."""
        return self.replace(digest=digest)


#: A buffer reference's fields, in the order of ``BufferRef.__init__``.
REF_FIELDS = (
    "path", "step", "name", "size", "dev", "ino", "mtime_ns", "ctime_ns", "offset", "file_size",
    "dtype", "shape", "codec", "digest", "has_data", "span",
)  # fmt: skip


def _ref_fields(ref: BufferRef) -> tuple[object, ...]:
    """``ref``'s fields, in the order of ``REF_FIELDS``."""
    return (
        ref.path, ref.step, ref.name, ref.size, ref.dev, ref.ino, ref.mtime_ns, ref.ctime_ns,
        ref.offset, ref.file_size, ref.dtype, ref.shape, ref.codec, ref.digest, ref.has_data,
        ref.span,
    )  # fmt: skip


class Unread:
    """A buffer that a container names but whose own bytes are refused (an
    ``.npz`` member whose ``.npy`` header is refused, a tensor whose storage
    record is missing): an error for that buffer alone, while the rest of
    the container is compared. ``reason``: the one line that says which
    member and what is wrong (from the format's reader)."""

    __slots__ = ("name", "reason", "step")

    def __init__(self, step: int, name: str, reason: str) -> None:
        self.step = step
        self.name = name
        self.reason = reason

    def __repr__(self) -> str:
        return f"Unread({self.step}, {self.name!r}, {self.reason!r})"


class BufferDigest:
    """The chunk digests of one buffer (an immutable value): the xxh3-128 of
    each ``chunk_size`` bytes from the buffer's start (the last may be
    shorter). ``digest``: the xxh3-128 of its size and its chunk digests, so
    two buffers with equal digests at one chunk size are (barring a 128-bit
    collision) identical."""

    __slots__ = ("chunk_size", "chunks", "path", "size")

    def __init__(self, path: str, size: int, chunk_size: int, chunks: tuple[bytes, ...]) -> None:
        self.path = path
        self.size = size
        self.chunk_size = chunk_size
        self.chunks = chunks

    @property
    def digest(self) -> bytes:
        return xxh3_128_digest(self.size.to_bytes(8, "little") + b"".join(self.chunks))

    def _fields(self) -> tuple[str, int, int, tuple[bytes, ...]]:
        return (self.path, self.size, self.chunk_size, self.chunks)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not BufferDigest:
            return NotImplemented
        return self._fields() == other._fields()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (
            f"BufferDigest(path={self.path!r}, size={self.size}, "
            f"chunk_size={self.chunk_size}, chunks=<{len(self.chunks)} digests>)"
        )

    def __reduce__(self) -> tuple[type[BufferDigest], tuple[str, int, int, tuple[bytes, ...]]]:
        return (BufferDigest, self._fields())


def step_filter(steps: StepFilter | None) -> Callable[[int], bool] | None:
    """A predicate for ``steps`` (a set, a range or a predicate); None for all steps."""
    if steps is None or callable(steps):
        return steps
    return steps.__contains__


class RunListing:
    """What listing a run found (a folder's, a container's, a manifest's).

    ``buffers``: every buffer found; ``readable`` is False when the run
    itself could not be read (missing, not a folder): its buffers are
    unknown, not absent, so nothing is paired against it. ``broken``:
    buffers named in the run that could not be compared (a FIFO, a broken
    link, a container whose header is refused, ...), by (step, name), with
    the problem: present, not absent. ``lost``: steps whose buffers are
    unknown (their container file could not be read), with the problem: a
    buffer the other run holds at such a step is an error, not a
    divergence. ``files`` is ``buffers`` (the older name).
    """

    __slots__ = ("broken", "buffers", "errors", "lost", "readable", "root", "skipped")

    root: str
    buffers: tuple[BufferRef, ...]
    skipped: tuple[Skipped, ...]
    errors: tuple[Problem, ...]
    readable: bool
    broken: tuple[tuple[tuple[int, str], Problem], ...]
    lost: tuple[tuple[int, Problem], ...]

    def __init__(
        self,
        root: str,
        buffers: tuple[BufferRef, ...],
        skipped: tuple[Skipped, ...],
        errors: tuple[Problem, ...],
        readable: bool = True,
        broken: tuple[tuple[tuple[int, str], Problem], ...] = (),
        lost: tuple[tuple[int, Problem], ...] = (),
    ) -> None:
        self.root = root
        self.buffers = buffers
        self.skipped = skipped
        self.errors = errors
        self.readable = readable
        self.broken = broken
        self.lost = lost

    @property
    def files(self) -> tuple[BufferRef, ...]:
        return self.buffers

    def __repr__(self) -> str:
        return (
            f"RunListing({self.root!r}, {len(self.buffers)} buffers, {len(self.skipped)} "
            f"skipped, {len(self.errors)} errors)"
        )

    def by_key(self) -> dict[tuple[int, str], BufferRef]:
        return {(f.step, f.name): f for f in self.buffers}

    def _step_of(self, problem: Problem) -> int | None:
        """The step an error of this listing is about: None when it is about
        the run itself, -1 when about no step (a step number too long to read)."""
        import os

        parts = split_name(os.path.basename(problem.path))
        if parts is None:
            return None if problem.path == self.root or not self.readable else -1
        return int(parts[0]) if len(parts[0]) <= MAX_STEP_DIGITS else -1

    def select(self, steps: StepFilter) -> RunListing:
        """This listing restricted to ``steps``, as listing the run with
        ``steps`` would list it: the buffers and broken entries of those
        steps, the errors about them and about the run itself; nothing
        skipped."""
        want = step_filter(steps)
        assert want is not None

        def kept(problem: Problem) -> bool:
            step = self._step_of(problem)
            return step is None or (step >= 0 and want(step))

        return RunListing(
            self.root,
            tuple(f for f in self.buffers if want(f.step)),
            (),
            tuple(e for e in self.errors if kept(e)),
            self.readable,
            tuple(item for item in self.broken if want(item[0][0])),
            tuple(item for item in self.lost if want(item[0])),
        )

    def select_names(self, wants: Callable[[str], bool]) -> RunListing:
        """This listing restricted to the buffers whose name ``wants`` takes:
        their buffers and broken entries, and every error but those about a
        broken entry of another name only; skipped entries and lost steps
        (which are about no one name) are kept."""
        kept = {id(p) for (_, name), p in self.broken if wants(name)}
        dropped = {id(p) for (_, name), p in self.broken if not wants(name)} - kept
        return RunListing(
            self.root,
            tuple(f for f in self.buffers if wants(f.name)),
            self.skipped,
            tuple(e for e in self.errors if id(e) not in dropped),
            self.readable,
            tuple(item for item in self.broken if wants(item[0][1])),
            self.lost,
        )

    def split(self, steps: Iterable[int]) -> dict[int, RunListing]:
        """``{n: self.select({n}) for n in steps}``, in one pass over the
        listing (``watch`` lists the steps complete at the same time together)."""
        parts: dict[int, tuple[list[Any], list[Problem], list[Any], list[Any]]] = {
            n: ([], [], [], []) for n in steps
        }
        for f in self.buffers:
            if (p := parts.get(f.step)) is not None:
                p[0].append(f)
        for e in self.errors:
            step = self._step_of(e)
            if step is None:  # about the run itself: in every step's
                for p in parts.values():
                    p[1].append(e)
            elif (p := parts.get(step)) is not None:
                p[1].append(e)
        for item in self.broken:
            if (p := parts.get(item[0][0])) is not None:
                p[2].append(item)
        for lost in self.lost:
            if (p := parts.get(lost[0])) is not None:
                p[3].append(lost)
        return {
            n: RunListing(self.root, tuple(b), (), tuple(e), self.readable, tuple(k), tuple(lo))
            for n, (b, e, k, lo) in parts.items()
        }
