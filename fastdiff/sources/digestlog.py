"""A recorder's digest log: the chunk digests of each dump, written with it.

``fastdiff.Recorder`` appends one line to ``names.DIGEST_LOG`` (a hidden
file in the run folder) per dump it writes: JSON Lines, one self-contained
object a line, so a job killed mid-line leaves a valid prefix. A line holds
the step and buffer name, the dump's file name (None for a dump recorded as
digests only: no file), its dtype, shape and byte size, the chunk size and
chunk digests of its bytes (``stages.hash.chunk_digests``, the very digests
``compare`` computes), where the bytes start in the file, and the file's
identity as ``fstat`` saw it just after the rename that put it in place:
size, mtime_ns, ctime_ns, inode and device. ``check``: the xxh3-64 of the
rest of the line, so a damaged line is refused whole.

**When a logged digest is used.** Only while the file's identity, as the
listing ``stat``\\ s it now, is the logged one in full: (device, inode, size,
mtime_ns, ctime_ns). Any later write, truncation, ``utime`` or ``chmod`` of
the file moves its ctime to the current time, and the kernel offers no way
to set a ctime back; a file replaced by another has another inode (or, if
an inode number is reused, a later ctime); a copy (``cp -a``, ``rsync``)
has a new inode and ctime. A file whose identity changed is hashed again,
as any unrecorded file is. One case no ``stat`` can see: a rewrite within
the same tick of the file system's clock as the recording (timestamps are
coarse on many file systems, up to 1 or 2 s). So a recorder writes a
file's line only once the file system's clock has moved past the file's
ctime (``sealed_ns``: a later timestamp of the same file system, read
after the line's file was in place); a rewrite after that has a later
ctime. (It writes such lines in batches; a line of a digests-only dump,
which is all there is of it, at once.) A line whose ``sealed_ns`` is not
later than its ctime is refused. What is left is a second writer
rewriting the file in place within one clock tick of its creation, while
the recorder still runs: two writers racing on one file, which no
stat-based check (``make``, git's index) sees.

**Trust.** Every line is validated (types, ranges, digests that fit the
size and chunk size, the file name that the step and name give, its check)
and a line that fails is ignored with a note, never trusted; the log is
read up to ``MAX_LOG_BYTES``, a line up to ``MAX_LINE_BYTES``. A log line
cannot make a file compare equal to anything unless the file is still the
very file that was recorded, by the rule above (a log copied from another
folder or machine names other inodes and ctimes). The log is not a
signature: someone who can write the run folder can forge a line for a
file as it is now, as they could change the data itself. A line's dtype and shape
serve a file whose ``.npy`` header cannot name its type (numpy saves
bfloat16 and the 8-bit floats as raw bytes, ``<V2``, ``|V1``) when the
header's width and shape agree with them; that says how values are
printed, never whether bytes are equal.

The newest valid line of each (step, name) describes it when it agrees
with every earlier line of that dump, or says which line it replaces
(``replaces``: that line's check; the recorder writes it when a dump is
recorded again). Two lines of one dump that disagree otherwise (two logs
concatenated, ``cat A/log >> B/log``) are a conflict, and neither is
trusted: a dump that has a file is hashed (with a note), and one recorded
as digests only is an error. Lines of a chunk size other than the newest
line's are not used (their files are hashed).
"""

from __future__ import annotations

import os
from functools import lru_cache

from xxhash import xxh3_64_hexdigest

from ..dtypes import DTYPES
from ..model.findings import Note, NoteKind
from ..model.results import Problem
from ..options import check_chunk_size
from .buffers import BufferDigest, BufferRef, RunListing, step_filter
from .names import DIGEST_LOG, NPY_SUFFIX, dump_name
from .run import RunSource

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from .buffers import StepFilter

#: The format of a line (its ``v``): 2 adds ``replaces``; lines of 1 are read too.
LOG_VERSION = 2
#: The formats read.
_VERSIONS = (1, 2)
#: A log is read up to this many bytes; a larger one is not used at all.
MAX_LOG_BYTES = 1 << 30
#: A longer line is refused (at 4 MiB chunks, 35 bytes per chunk digest: a
#: buffer of about 900 GiB).
MAX_LINE_BYTES = 8 << 20
_KEYS = (
    "v", "step", "name", "file", "dtype", "shape", "size", "chunk_size", "chunks", "offset",
    "file_size", "dev", "ino", "mtime_ns", "ctime_ns", "sealed_ns", "time_ns", "replaces",
)  # fmt: skip
#: The keys of a line of each format version.
_KEY_SETS = {2: frozenset(_KEYS), 1: frozenset(_KEYS) - {"replaces"}}
#: The keys of a file's identity: None together in a digests-only line.
_FILE_KEYS = ("offset", "file_size", "dev", "ino", "mtime_ns", "ctime_ns", "sealed_ns")
_CHECK = b',"check":"'
_CHECK_LEN = len(_CHECK) + 16 + 2  # the key, 16 hex digits, '"}'
_HEX = "0123456789abcdef"


class LogLineError(ValueError):
    """A line of a digest log that is not used: the message says why."""


class LogEntry:
    """One valid line of a digest log (an immutable value). ``file``: the
    dump's file name in the run folder, None for digests only; the identity
    fields are None then too. ``lineno``: where it is in the log (1-based);
    ``check``: the line's own check (16 hex digits); ``replaces``: the check
    of the earlier line of the same dump that this one replaces (a dump
    recorded again), or None."""

    __slots__ = (
        "check", "chunk_size", "chunks", "ctime_ns", "dev", "dtype", "file", "file_size", "ino",
        "lineno", "mtime_ns", "name", "offset", "replaces", "sealed_ns", "shape", "size", "step",
    )  # fmt: skip

    step: int
    name: str
    file: str | None
    dtype: str
    shape: tuple[int, ...]
    size: int
    chunk_size: int
    chunks: tuple[bytes, ...]
    offset: int | None
    file_size: int | None
    dev: int | None
    ino: int | None
    mtime_ns: int | None
    ctime_ns: int | None
    sealed_ns: int | None
    lineno: int
    check: str
    replaces: str | None

    def __init__(
        self, fields: dict[str, object], chunks: tuple[bytes, ...], lineno: int, check: str = ""
    ) -> None:
        for key in self.__slots__:
            if key not in ("chunks", "lineno", "check", "replaces"):
                setattr(self, key, fields[key])
        self.shape = tuple(fields["shape"])  # type: ignore[call-overload]
        self.chunks = chunks
        self.lineno = lineno
        self.check = check
        self.replaces = fields.get("replaces")  # type: ignore[assignment]

    @property
    def record(self) -> tuple[object, ...]:
        """What the line says of its dump: two lines of one dump that differ
        here disagree (their times and seals may differ)."""
        return (
            self.file, self.dtype, self.shape, self.size, self.chunk_size, self.chunks,
            self.offset, *self.file_key,
        )  # fmt: skip

    @property
    def file_key(self) -> tuple[object, ...]:
        """The logged identity, in the order of ``BufferRef.file_key``."""
        return (self.dev, self.ino, self.file_size, self.mtime_ns, self.ctime_ns)

    def __repr__(self) -> str:
        return f"LogEntry(step={self.step}, name={self.name!r}, file={self.file!r})"


# --- writing (the recorder's side) ---------------------------------------------------


def log_line(
    step: int,
    name: str,
    dtype: str,
    shape: Sequence[int],
    size: int,
    chunk_size: int,
    chunks: Sequence[bytes],
    file: str | None = None,
    offset: int | None = None,
    identity: os.stat_result | None = None,
    sealed_ns: int | None = None,
    time_ns: int = 0,
    replaces: str | None = None,
) -> bytes:
    """One line of the log, newline included: a dump written as ``file``
    (its data at ``offset``, ``identity`` its ``fstat`` after the rename,
    ``sealed_ns`` a later timestamp of the same file system), or, with
    ``file`` None, a dump recorded as digests only. ``replaces``: the check
    (``line_check``) of the line of an earlier recording of the same dump,
    which this one replaces."""
    import json

    fields: dict[str, object] = dict.fromkeys(_KEYS)
    fields.update(
        v=LOG_VERSION, step=step, name=name, file=file, dtype=dtype, shape=list(shape),
        size=size, chunk_size=chunk_size, chunks=[c.hex() for c in chunks], time_ns=time_ns,
        replaces=replaces,
    )  # fmt: skip
    if file is not None:
        assert identity is not None and offset is not None and sealed_ns is not None
        fields.update(
            offset=offset, file_size=identity.st_size, dev=identity.st_dev,
            ino=identity.st_ino, mtime_ns=identity.st_mtime_ns, ctime_ns=identity.st_ctime_ns,
            sealed_ns=sealed_ns,
        )  # fmt: skip
    body = json.dumps(fields, separators=(",", ":")).encode()  # ASCII: names are escaped
    return body[:-1] + _CHECK + xxh3_64_hexdigest(body).encode() + b'"}\n'


try:  # the C encoder of JSON strings, which json.dumps uses
    from _json import encode_basestring_ascii as _json_str
except ImportError:  # pragma: no cover (another Python)
    from json.encoder import py_encode_basestring_ascii as _json_str


@lru_cache(maxsize=1 << 14)
def _digests_middle(name: str, dtype: str, shape: tuple[int, ...], size: int, cs: int) -> str:
    """What a digests-only line of a dump says between its step and its
    chunks: the same at every step a tracer records the dump at."""
    dims = ",".join([str(int(d)) for d in shape])
    return (
        f',"name":{_json_str(name)},"file":null,"dtype":{_json_str(dtype)},"shape":[{dims}],'
        f'"size":{size:d},"chunk_size":{cs:d},"chunks":['
    )


_DIGESTS_TAIL = (
    '],"offset":null,"file_size":null,"dev":null,"ino":null,"mtime_ns":null,"ctime_ns":null,'
    '"sealed_ns":null,"time_ns":'
)


def digests_line(
    step: int,
    name: str,
    dtype: str,
    shape: Sequence[int],
    size: int,
    chunk_size: int,
    chunks: Sequence[bytes],
    time_ns: int = 0,
    replaces: str | None = None,
) -> bytes:
    """The line ``log_line`` writes for a dump recorded as digests only, byte
    for byte, formatted without building a dict to encode (the part that
    names the dump is kept per dump): a tracer writes one per record,
    hundreds per step."""
    hexes = ",".join([f'"{c.hex()}"' for c in chunks])
    tail = "null" if replaces is None else _json_str(replaces)
    middle = _digests_middle(name, dtype, tuple(shape), size, chunk_size)
    body = (
        f'{{"v":{LOG_VERSION},"step":{step:d}{middle}{hexes}{_DIGESTS_TAIL}{time_ns:d},'
        f'"replaces":{tail}}}'
    ).encode()
    return body[:-1] + _CHECK + xxh3_64_hexdigest(body).encode() + b'"}\n'


def line_check(line: bytes) -> str:
    """The check of a line ``log_line`` wrote (what a later line's ``replaces`` names)."""
    return line.rstrip(b"\n")[-18:-2].decode()


# --- reading -----------------------------------------------------------------------


def _int(fields: dict[str, object], key: str, low: int = 0, high: int = 1 << 62) -> int:
    value = fields[key]
    if type(value) is not int or not low <= value < high:
        raise LogLineError(f"{key} must be an integer in [{low}, {high})")
    return value


def parse_line(raw: bytes, lineno: int = 0) -> LogEntry:
    """A line of the log (without its newline) as an entry; LogLineError says
    what is wrong with it."""
    import json

    if len(raw) > MAX_LINE_BYTES:
        raise LogLineError(f"longer than {MAX_LINE_BYTES:,} bytes")
    if len(raw) < _CHECK_LEN or raw[-_CHECK_LEN:][: len(_CHECK)] != _CHECK or raw[-2:] != b'"}':
        raise LogLineError("damaged or cut short (no check at its end)")
    body = raw[:-_CHECK_LEN] + b"}"
    check = raw[-_CHECK_LEN + len(_CHECK) : -2]
    if xxh3_64_hexdigest(body).encode() != check:
        raise LogLineError("damaged (its check does not match its content)")
    try:
        fields = json.loads(body)
    except (ValueError, RecursionError):
        raise LogLineError("not JSON") from None
    if not isinstance(fields, dict) or "v" not in fields:
        raise LogLineError("not a digest log line (other keys)")
    version = fields["v"]
    if type(version) is not int or version not in _VERSIONS:
        raise LogLineError(f"format version {version!r}, not {LOG_VERSION} (a newer fastdiff?)")
    if fields.keys() != _KEY_SETS[version]:
        raise LogLineError("not a digest log line (other keys)")
    replaces = fields.get("replaces")
    if replaces is not None and not (
        isinstance(replaces, str) and len(replaces) == 16 and not replaces.strip(_HEX)
    ):
        raise LogLineError("replaces must be the check of a line, 16 lowercase hex digits")
    step = _int(fields, "step", 0, 1 << 2000)
    name, file, dtype = fields["name"], fields["file"], fields["dtype"]
    if not isinstance(name, str) or not name or "/" in name or "\0" in name:
        raise LogLineError("name must be a buffer name")
    if file is not None and file != dump_name(step, name, NPY_SUFFIX):
        raise LogLineError("file is not the dump name of its step and name")
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise LogLineError(f"unknown dtype {dtype!r}")
    size = _int(fields, "size")
    shape = fields["shape"]
    if not isinstance(shape, list) or len(shape) > 64:
        raise LogLineError("shape must be a list of at most 64 dimensions")
    count = 1
    for d in shape:
        if type(d) is not int or not 0 <= d < 1 << 62:
            raise LogLineError("shape must be a list of dimensions >= 0")
        count *= d
    if count * DTYPES[dtype].itemsize != size:
        raise LogLineError(f"size {size} is not shape {tuple(shape)} of {dtype}")
    chunk_size = _int(fields, "chunk_size")
    try:
        check_chunk_size(chunk_size)
    except ValueError as exc:
        raise LogLineError(str(exc)) from None
    chunks = fields["chunks"]
    if not isinstance(chunks, list) or len(chunks) != (size + chunk_size - 1) // chunk_size:
        raise LogLineError(f"chunk digests do not fit size {size} and chunk size {chunk_size}")
    if not all(isinstance(c, str) and len(c) == 32 and not c.strip(_HEX) for c in chunks):
        raise LogLineError("chunk digests must be 32 lowercase hex digits")
    _int(fields, "time_ns", 0, 1 << 64)
    if file is None:
        if any(fields[k] is not None for k in _FILE_KEYS):
            raise LogLineError("a digests-only line has no file identity")
    else:
        offset = _int(fields, "offset")
        if _int(fields, "file_size") != offset + size:
            raise LogLineError("file_size is not offset + size")
        for key in ("dev", "ino"):
            _int(fields, key, 0, 1 << 64)
        for key in ("mtime_ns", "ctime_ns", "sealed_ns"):
            _int(fields, key, -(1 << 63), 1 << 63)
        if fields["sealed_ns"] <= fields["ctime_ns"]:  # type: ignore[operator]
            raise LogLineError("written before the clock passed its file's ctime (not sealed)")
    chunk_bytes = tuple(bytes.fromhex(c) for c in chunks)
    return LogEntry(fields, chunk_bytes, lineno, check.decode())  # type: ignore[arg-type]


class LogContents:
    """What a log holds for the steps asked: the newest valid entry of each
    (step, name), the chunk size of the newest, and what was wrong (one
    line each: ``line N: why``; ``unusable``: why the whole log was not used).
    ``conflicts``: the dumps two of whose lines disagree (neither replacing
    the other), with the numbers of the first two such lines; they are not
    in ``entries``."""

    __slots__ = ("bad", "chunk_size", "conflicts", "entries", "unusable")

    def __init__(
        self,
        entries: dict[tuple[int, str], LogEntry],
        chunk_size: int | None,
        bad: list[str],
        unusable: str | None = None,
        conflicts: dict[tuple[int, str], tuple[int, int]] | None = None,
    ) -> None:
        self.entries = entries
        self.chunk_size = chunk_size
        self.bad = bad
        self.unusable = unusable
        self.conflicts = {} if conflicts is None else conflicts


def read_log(path: str, want: Callable[[int], bool] | None = None) -> LogContents:
    """Read a digest log: every line validated, at most ``MAX_LOG_BYTES``;
    ``want``: the steps to keep (None: all). Never raises for bad content."""
    from .reader import open_fd

    try:
        fd = open_fd(path)
        try:
            size = os.fstat(fd).st_size
            if size > MAX_LOG_BYTES:
                return LogContents({}, None, [], f"{size:,} bytes, more than {MAX_LOG_BYTES:,}")
            raw = bytearray()
            while len(raw) <= MAX_LOG_BYTES:
                piece = os.read(fd, min(1 << 24, MAX_LOG_BYTES + 1 - len(raw)))
                if not piece:
                    break
                raw += piece
        finally:
            os.close(fd)
    except OSError as exc:
        return LogContents({}, None, [], f"cannot be read ({exc.strerror or exc})")
    if len(raw) > MAX_LOG_BYTES:
        return LogContents({}, None, [], f"grew past {MAX_LOG_BYTES:,} bytes while it was read")
    lines = bytes(raw).split(b"\n")
    torn = lines.pop()  # after the last newline: empty, unless a writer was cut short
    entries: dict[tuple[int, str], LogEntry] = {}
    conflicts: dict[tuple[int, str], tuple[int, int]] = {}
    bad: list[str] = []
    newest: LogEntry | None = None
    for lineno, line in enumerate(lines, 1):
        try:
            entry = parse_line(line, lineno)
        except LogLineError as exc:
            bad.append(f"line {lineno}: {exc}")
            continue
        newest = entry
        if want is not None and not want(entry.step):
            continue
        key = (entry.step, entry.name)
        if key in conflicts:
            continue  # once two lines disagree, no later line settles it
        before = entries.get(key)
        if (
            before is None
            or entry.replaces == before.check  # a dump recorded again
            or entry.record == before.record  # the same record twice
        ):
            entries[key] = entry
        else:
            conflicts[key] = (before.lineno, entry.lineno)
            del entries[key]
    if torn:
        bad.append(f"line {len(lines) + 1}: cut short (the job stopped while writing it)")
    cs = newest.chunk_size if newest is not None else None
    return LogContents(entries, cs, bad, conflicts=conflicts)


def _listed_npy_header(ref: BufferRef) -> tuple[int, tuple[int, ...]] | None:
    """(element width, shape) from the ``.npy`` header of ``ref``'s file, read
    again; None when it cannot be read or is no longer what was listed."""
    from .npy import MAX_HEADER_SIZE, PREAMBLE, parse_header
    from .reader import open_fd

    try:
        fd = open_fd(ref.path)
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) != ref.file_key:
                return None
            h = parse_header(os.pread(fd, PREAMBLE + MAX_HEADER_SIZE, 0), st.st_size)
        finally:
            os.close(fd)
    except (OSError, ValueError):
        return None
    return h.itemsize, h.dims


def _described(ref: BufferRef, e: LogEntry) -> tuple[str | None, tuple[int, ...] | None] | None:
    """The dtype and shape ``ref`` takes from entry ``e`` (its header's when
    it names its type; the entry's for a ``.npy`` of raw bytes whose width
    and shape agree), or None when the entry disagrees with the header."""
    if ref.dtype is not None:
        if ref.dtype != e.dtype or ref.shape != e.shape:
            return None
        return ref.dtype, ref.shape
    if not ref.path.endswith(NPY_SUFFIX):
        return None, None
    head = _listed_npy_header(ref)
    if head is None or head != (DTYPES[e.dtype].itemsize, e.shape):
        return None
    return e.dtype, e.shape


def attach_log(spec: str, listing: RunListing, steps: StepFilter | None = None) -> RunSource:
    """The run folder ``spec`` (listed as ``listing``) as a source, with what
    its digest log says: digests attached to the dumps still as recorded,
    the buffers recorded as digests only added, the log's chunk size, and
    notes on what was not used."""
    log_path = os.path.join(spec, DIGEST_LOG)
    log = read_log(log_path, step_filter(steps))
    notes: list[Note] = []
    if log.unusable is not None:
        notes.append(Note.of(NoteKind.LOG_UNUSABLE, path=log_path, why=log.unusable, warning=True))
    if log.bad:
        ignored = Note.of(NoteKind.LOG_LINES_IGNORED, path=log_path, lines=log.bad, warning=True)
        notes.append(ignored)
    cs = log.chunk_size
    entries = log.entries
    conflicts = log.conflicts
    if not (entries or conflicts) or cs is None:
        return RunSource(spec, listing, steps=steps, notes=tuple(notes))
    buffers: list[BufferRef] = []
    changed: list[str] = []
    copied: list[str] = []
    disagree: list[str] = []
    beside: list[str] = []  # files of dumps the log recorded as digests only
    hashed: list[str] = []  # files of dumps whose lines conflict
    used = False
    for ref in listing.buffers:
        key = (ref.step, ref.name)
        e = entries.get(key)
        if e is None or e.file is None or os.path.basename(ref.path) != e.file:
            buffers.append(ref)  # not recorded, or a data file beside a digests-only line
            if key in conflicts:
                hashed.append(os.path.basename(ref.path))
            elif e is not None and e.file is None:
                beside.append(os.path.basename(ref.path))
            continue
        described = _described(ref, e)
        if described is None:
            disagree.append(e.file)
            buffers.append(ref)
            continue
        dtype, shape = described
        digest = None
        same = ref.codec is None and ref.offset == e.offset and ref.size == e.size
        if same and ref.file_key == e.file_key:
            if e.chunk_size == cs:
                digest = BufferDigest(ref.path, ref.size, cs, e.chunks)
                used = True
        elif (ref.dev, ref.ino) != (e.dev, e.ino):  # another file: a copy (cp -r), a replacement
            copied.append(e.file)
        else:  # the very file, written, truncated or touched since
            changed.append(e.file)
        buffers.append(ref.replace(dtype=dtype, shape=shape, digest=digest))
    present = {(f.step, f.name) for f in listing.buffers}
    present.update(key for key, _ in listing.broken)
    lost = {step for step, _ in listing.lost}
    errors = list(listing.errors)
    broken = list(listing.broken)
    for key, (first, second) in conflicts.items():
        if key in present or key[0] in lost:
            continue
        where = f"{log_path}:{dump_name(key[0], key[1], NPY_SUFFIX)}"
        problem = Problem(
            where,
            f"lines {first} and {second} of the digest log record this dump differently and "
            "neither replaces the other (two logs joined into one?), and it has no file to "
            "hash: it cannot be compared; record it again, or restore the run's own log",
            kind="malformed",
        )
        errors.append(problem)
        broken.append((key, problem))
    other_cs = 0
    for key, e in entries.items():
        if e.file is not None or key in present or e.step in lost:
            continue
        if e.chunk_size != cs:
            other_cs += 1
            continue
        path = f"{log_path}:{dump_name(e.step, e.name, NPY_SUFFIX)}"
        digest = BufferDigest(path, e.size, cs, e.chunks)
        only = BufferRef(
            path, e.step, e.name, e.size, 0, 0, 0, 0, dtype=e.dtype, shape=e.shape, digest=digest,
            has_data=False,
        )  # fmt: skip
        buffers.append(only)
        used = True
    if changed:
        notes.append(Note.of(NoteKind.LOG_DUMPS_CHANGED, spec=spec, files=changed))
    if copied:
        notes.append(Note.of(NoteKind.LOG_DUMPS_COPIED, spec=spec, files=copied))
    if hashed:
        notes.append(Note.of(NoteKind.LOG_CONFLICT, path=log_path, files=hashed, warning=True))
    if beside:
        notes.append(Note.of(NoteKind.LOG_BESIDE_FILE, path=log_path, files=beside, warning=True))
    if disagree:
        notes.append(
            Note.of(NoteKind.LOG_HEADER_DISAGREES, path=log_path, files=disagree, warning=True)
        )
    if other_cs:
        other = Note.of(
            NoteKind.LOG_OTHER_CHUNK_SIZE, path=log_path, n=other_cs, chunk_size=cs, warning=True
        )
        notes.append(other)
    # In the order the recorder wrote them (its log's, step by step), not the
    # file names': groups found by name come in that order (sources.schemas).
    written = {key: i for i, key in enumerate(entries)}
    buffers.sort(key=lambda f: written.get((f.step, f.name), len(written)))
    out = RunListing(
        listing.root, tuple(buffers), listing.skipped, tuple(errors), listing.readable,
        tuple(sorted(broken, key=lambda item: item[0])), listing.lost,
    )  # fmt: skip
    return RunSource(spec, out, cs if used else None, steps=steps, notes=tuple(notes))
