"""Manifests: a run's file list and chunk digests, to compare without the data.

``fastdiff hash RUN -o run.manifest.json`` writes one; ``compare`` and
``sweep`` accept it wherever they accept a run folder. Two manifests give
the per-buffer verdict and, for each diverged buffer, the first chunk whose
digests differ (a byte range), without reading any dump. A manifest against
a local run tells which local files still match what was hashed.

The format is versioned (``fastdiff_manifest``); a loader refuses versions
it does not know, and any malformed content, with a one-line error. This
module is the format (``manifest_dict``, ``parse_manifest``,
``load_manifest``); hashing a run into one is ``fastdiff.hashrun``'s.

A manifest records the schema it was hashed under (key ``schema``: the
schema as data, in the shape of a TOML schema file) and each file's dtype,
so ``stats`` and ``compare`` see the same groups and dtypes as on the folder
(``sources.schemas`` picks the schema a comparison uses). The key was added within
format 1, which older fastdiffs still read (they ignore it); a manifest
without it, from an older fastdiff, is still read: its schema is unknown
(``Manifest.schema`` is None), and its files' dtypes are kept.

The manifest of a run of several ranks (``sources.ranks``) names each file
by its path below the run, ``rank_<R>/step_<N>_<name>.bin``; a manifest
holds files of ranks or of none, never both.
"""

from __future__ import annotations

import json
import os

from ..dtypes import DTYPES
from ..errors import FastdiffError, SchemaError
from ..model.results import Skipped
from ..options import check_chunk_size
from ..schema import Schema
from ..schemafile import parse_schema
from .buffers import BufferDigest, BufferRef, RunListing, step_filter
from .names import DUMP_PATTERN, DUMPS, MAX_STEP_DIGITS, RAW_SUFFIX, split_name
from .ranks import parse_rank
from .run import RunSource, refused

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .buffers import StepFilter

#: The format written. Version 2 lists buffers (a file's byte range, with
#: the dtype and shape its header gives); version 1 listed whole raw files,
#: and is still read.
MANIFEST_VERSION = 2
READ_VERSIONS = (1, 2)
_HEX = "0123456789abcdef"


#: The dtypes of values beside the tensors (``buffers.Value``), which a
#: manifest records as their digests, as it does a tensor's.
_VALUES = ("value", "label")


def _is_hex32(text: object) -> bool:
    """32 lowercase hex digits: one xxh3-128 digest as a manifest writes it."""
    return isinstance(text, str) and len(text) == 32 and not text.strip(_HEX)


class ManifestError(FastdiffError, ValueError):
    """A manifest that cannot be used; ``kind``: the ``Problem.kind`` it makes
    (``malformed``, or ``unreadable`` when the file cannot be read)."""

    def __init__(self, message: str, kind: str = "malformed") -> None:
        super().__init__(message)
        self.kind = kind


class NotAManifest(ManifestError):
    """The file is not a fastdiff manifest at all."""


class Manifest:
    """A manifest as read: the run it describes, as a listing whose buffers
    carry their digests (``BufferRef.digest``) and no data."""

    __slots__ = ("chunk_size", "digests", "dtypes", "listing", "path", "run", "schema")

    path: str
    run: str
    chunk_size: int
    listing: RunListing
    #: The schema it was hashed under; None for a manifest of an older
    #: fastdiff, which did not record it.
    schema: Schema | None
    #: The dtype recorded for each buffer name (those of its files).
    dtypes: dict[str, str]

    def __init__(
        self,
        path: str,
        run: str,
        chunk_size: int,
        listing: RunListing,
        schema: Schema | None = None,
        dtypes: dict[str, str] | None = None,
    ) -> None:
        self.path = path
        self.run = run
        self.chunk_size = chunk_size
        self.listing = listing
        self.schema = schema
        self.dtypes = {} if dtypes is None else dtypes


def entry_path(manifest_path: str, filename: str) -> str:
    """How a manifest's file is named in reports: ``run.manifest.json:step_0_x.bin``."""
    return f"{manifest_path}:{filename}"


def schema_dict(schema: Schema) -> dict[str, Any]:
    """A schema as data: the keys of a TOML schema file (``parse_schema`` reads it)."""
    groups = []
    for g in schema.groups:
        members: dict[str, Any] = {}
        for m in g.members:
            members.setdefault(m.pattern, m.as_data())  # the first one classifies
        groups.append({"key": g.key, "title": g.title, "hint": g.hint, "members": members})
    d: dict[str, Any] = {"name": schema.name, "default_dtype": schema.default_dtype}
    if schema.inputs_complete:  # absent otherwise: a manifest as it always was
        d["inputs_complete"] = True
    d["group"] = groups
    return d


def _file_name(f: BufferRef, root: str) -> str:
    """How a manifest names the file of a buffer: its path below the run."""
    prefix = root.rstrip(os.sep) + os.sep
    return f.path[len(prefix) :] if f.path.startswith(prefix) else os.path.basename(f.path)


def manifest_dict(
    listing: RunListing, digests: dict[BufferRef, BufferDigest], chunk_size: int, schema: Schema
) -> dict[str, Any]:
    """The manifest of a run's listing: each buffer with its digests (by buffer)."""
    from datetime import UTC, datetime

    from ..textkit.escape import path_record, put_text

    buffers = []
    for f in listing.buffers:
        d = digests[f]
        entry: dict[str, Any] = {}
        put_text(entry, "file", _file_name(f, listing.root))
        entry["step"] = f.step
        put_text(entry, "buffer", f.name)
        entry["offset"] = f.offset
        entry["size"] = f.size
        entry["dtype"] = f.dtype or schema.classify(f.name)[1]
        entry["header"] = f.dtype is not None  # the dtype is the file's own, not the schema's
        entry["shape"] = None if f.shape is None else list(f.shape)
        entry["digest"] = d.digest.hex()
        entry["chunks"] = [c.hex() for c in d.chunks]
        buffers.append(entry)
    head: dict[str, Any] = {"fastdiff_manifest": MANIFEST_VERSION}
    put_text(head, "run", os.path.abspath(listing.root))  # valid UTF-8, as every JSON we write
    return {
        **head,
        "created_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "chunk_size": chunk_size,
        "schema": schema_dict(schema),
        "buffers": buffers,
        "skipped": [path_record(s.path, "reason", s.reason) for s in listing.skipped],
    }


def _fail(path: str, what: str) -> ManifestError:
    return ManifestError(f"{path}: {what}; re-create it with 'fastdiff hash RUN -o FILE'")


def _expect(path: str, obj: dict[str, Any], key: str, kind: type, where: str = "") -> Any:
    if key not in obj:
        raise _fail(path, f"{where}missing key {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _fail(path, f"{where}key {key!r} must be {kind.__name__}, got {type(value).__name__}")
    return value


def _entry_name(path: str, entry: dict[str, Any], version: int, where: str) -> tuple[str, str, int]:
    """(file name, buffer name, step) of an entry, checked. Version 1 names a
    raw dump; version 2 a file below the run (a dump, or a container: a
    checkpoint's tensors) with the buffer and step as keys of their own."""
    key = "name" if version == 1 else "file"
    name = _expect(path, entry, key, str, where)
    if not name or "\0" in name or os.path.isabs(name) or ".." in name.split("/"):
        raise _fail(path, f"{where}{name!r} is not a file name below the run")
    if version == 1:
        parts = split_name(name)
        if parts is None or parts[1] is None or parts[2] != "raw" or "/" in name:
            raise _fail(path, f"{where}{name!r} is not a dump name {DUMP_PATTERN}")
        if len(parts[0]) > MAX_STEP_DIGITS:
            raise _fail(path, f"{where}{name!r} has a step number too long to read")
        return name, parts[1], int(parts[0])
    buffer = _expect(path, entry, "buffer", str, where)
    step = _expect(path, entry, "step", int, where)
    if step < 0:  # a buffer name may be empty: a tensor's key in its file
        raise _fail(path, f"{where}step {step} is negative")
    if step.bit_length() > 3.33 * MAX_STEP_DIGITS:
        raise _fail(path, f"{where}step number too long to read (over {MAX_STEP_DIGITS} digits)")
    return name, buffer, step


def parse_manifest(doc: object, path: str) -> Manifest:
    if not isinstance(doc, dict) or "fastdiff_manifest" not in doc:
        raise NotAManifest(f"{path}: JSON without a 'fastdiff_manifest' version key")
    version = doc["fastdiff_manifest"]
    if type(version) is not int or version not in READ_VERSIONS:
        raise ManifestError(
            f"{path}: manifest format version {version!r} is not supported by this fastdiff "
            f"(it reads versions {', '.join(map(str, READ_VERSIONS))}); re-create it with "
            "this version's 'fastdiff hash', or upgrade fastdiff"
        )
    chunk_size = _expect(path, doc, "chunk_size", int)
    try:
        check_chunk_size(chunk_size)
    except ValueError as exc:
        raise _fail(path, str(exc)) from None
    run = _expect(path, doc, "run", str)
    schema = _parse_schema(path, doc)
    list_key = "files" if version == 1 else "buffers"
    raw_entries = _expect(path, doc, list_key, list)
    buffers: list[BufferRef] = []
    dtypes: dict[str, str] = {}
    seen: set[tuple[int | None, int, str]] = set()
    ranked: bool | None = None  # files below rank_<R>/: a run of several ranks
    for i, entry in enumerate(raw_entries):
        where = f"{list_key}[{i}]: "
        if not isinstance(entry, dict):
            raise _fail(path, f"{where}must be an object")
        name, buffer, step = _entry_name(path, entry, version, where)
        size = _expect(path, entry, "size", int, where)
        chunks = _expect(path, entry, "chunks", list, where)
        digest = _expect(path, entry, "digest", str, where)
        rank = parse_rank(name.split("/", 1)[0]) if "/" in name else None
        if ranked is None:
            ranked = rank is not None
        elif ranked != (rank is not None):
            raise _fail(path, f"{where}{name!r}: files of ranks and files of no rank are mixed")
        if (rank, step, buffer) in seen:
            of = "" if rank is None else f" of rank {rank}"
            raise _fail(path, f"{where}buffer {buffer!r} of step {step}{of} is listed twice")
        seen.add((rank, step, buffer))
        if not 0 <= size < 1 << 62:
            raise _fail(path, f"{where}size {size} is out of range")
        if len(chunks) != (size + chunk_size - 1) // chunk_size:
            raise _fail(
                path, f"{where}{len(chunks)} chunk digests do not fit size {size} "
                f"and chunk size {chunk_size}"
            )  # fmt: skip
        if not all(map(_is_hex32, chunks)):
            raise _fail(path, f"{where}chunk digests must be 32 lowercase hex digits")
        shown = entry_path(path, name)
        d = BufferDigest(shown, size, chunk_size, tuple(bytes.fromhex(c) for c in chunks))
        if not _is_hex32(digest) or d.digest.hex() != digest:
            raise _fail(path, f"{where}file digest does not match its chunk digests (damaged?)")
        dtype = entry.get("dtype")
        header = version == 2 and entry.get("header") is True
        offset, shape = 0, None
        if version == 2:
            offset = _expect(path, entry, "offset", int, where)
            if not 0 <= offset < 1 << 62:
                raise _fail(path, f"{where}offset {offset} is out of range")
            shape = _shape(path, entry.get("shape"), where)
        if header:
            # a value beside the tensors (``buffers.Value``): its digest alone
            if not isinstance(dtype, str) or (dtype not in DTYPES and dtype not in _VALUES):
                raise _fail(path, f"{where}unknown dtype {dtype!r}")
        elif schema is not None:
            want = schema.classify(buffer)[1]
            if dtype != want:
                raise _fail(
                    path, f"{where}dtype {dtype!r} is not the {want!r} its schema "
                    f"{schema.name!r} gives buffer {buffer!r} (damaged?)"
                )  # fmt: skip
        if not header and isinstance(dtype, str) and dtype in DTYPES:
            dtypes.setdefault(buffer, dtype)
        ref = BufferRef(
            shown, step, buffer, size, 0, 0, 0, 0, offset=offset, file_size=offset + size,
            dtype=dtype if header else None, shape=shape, digest=d, has_data=False,
        )  # fmt: skip
        buffers.append(ref)
    raw_skipped = doc.get("skipped", [])
    if not isinstance(raw_skipped, list):
        raise _fail(path, f"key 'skipped' must be list, got {type(raw_skipped).__name__}")
    skipped = [
        Skipped(s["path"], str(s.get("reason", "")))
        for s in raw_skipped
        if isinstance(s, dict) and isinstance(s.get("path"), str)
    ]
    listing = RunListing(path, tuple(buffers), tuple(skipped), ())
    return Manifest(path, run, chunk_size, listing, schema, dtypes)


def _shape(path: str, raw: object, where: str) -> tuple[int, ...] | None:
    if raw is None:
        return None
    ok = isinstance(raw, list) and len(raw) <= 64
    if ok:
        ok = all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 62 for d in raw)
    if not ok:
        raise _fail(path, f"{where}shape must be a list of at most 64 dimensions, each >= 0")
    return tuple(raw)  # type: ignore[arg-type]


def _parse_schema(path: str, doc: dict[str, Any]) -> Schema | None:
    """The schema a manifest records, or None when it records none (an older fastdiff's)."""
    if "schema" not in doc:
        return None
    raw = doc["schema"]
    if not isinstance(raw, dict):
        raise _fail(path, f"key 'schema' must be dict, got {type(raw).__name__}")
    try:
        return parse_schema(raw, "", "schema")
    except SchemaError as exc:
        # parse_schema names "schema:<line>: ..."; a manifest has no lines.
        raise _fail(path, f"key 'schema': {str(exc).split(': ', 1)[-1]}") from None


#: A manifest is read whole, so files larger than this are refused. At about
#: 37 bytes per chunk digest and 250 per file, 1 GiB describes millions of
#: files, tens of TiB at the default chunk size.
MAX_MANIFEST_BYTES = 1 << 30
#: Bytes read first to tell a manifest (JSON, starting with ``{``) from other files.
_SNIFF_BYTES = 4096
_BLANK = b" \t\r\n"
_BOM = b"\xef\xbb\xbf"
#: Bytes a JSON text may start with (after blanks), besides ``{``.
_JSON_STARTS = b'["-0123456789tfn'


def _not_a_manifest(path: str, head: bytes) -> NotAManifest:
    """Why a file whose first non-blank byte is not ``{`` is no manifest."""
    start = head.lstrip(_BLANK)
    if not head:
        why = "not JSON: the file is empty"
    elif not start:
        blank = "the file is" if len(head) < _SNIFF_BYTES else f"its first {len(head):,} bytes are"
        why = f"not JSON: {blank} blank"
    else:
        first = start[:1]
        shown = repr(first.decode()) if 0x20 < first[0] < 0x7F else f"byte 0x{first[0]:02x}"
        kind = "not a JSON object" if first in _JSON_STARTS else "not JSON"
        why = f"{kind}: it starts with {shown}, a manifest with '{{'"
    return NotAManifest(f"{path}: {why}")


def load_manifest(path: str | os.PathLike[str]) -> Manifest:
    """Read a manifest file; ManifestError (NotAManifest for other files) on any problem.

    Only the first bytes are read to tell a manifest from other files, and at
    most ``MAX_MANIFEST_BYTES`` in all, whatever the file: memory stays bounded.
    """
    p = os.fspath(path)
    too_big = (
        f"more than a manifest may have (at most {MAX_MANIFEST_BYTES:,} bytes, 1 GiB); "
        "compare the run folder itself, or hash it with a larger --chunk-size"
    )
    try:
        with open(p, "rb") as fh:
            head = fh.read(_SNIFF_BYTES)
            if not head.removeprefix(_BOM).lstrip(_BLANK).startswith(b"{"):
                raise _not_a_manifest(p, head.removeprefix(_BOM))
            size = os.fstat(fh.fileno()).st_size
            if size > MAX_MANIFEST_BYTES:
                raise ManifestError(f"{p}: {size:,} bytes, {too_big}")
            raw = bytearray(head)
            while len(raw) <= MAX_MANIFEST_BYTES:  # in pieces: the file may grow meanwhile
                piece = fh.read(min(1 << 24, MAX_MANIFEST_BYTES + 1 - len(raw)))
                if not piece:
                    break
                raw += piece
    except OSError as exc:
        kind = "missing" if isinstance(exc, FileNotFoundError) else "unreadable"
        raise ManifestError(f"{p}: cannot read manifest: {exc.strerror}", kind) from exc
    if len(raw) > MAX_MANIFEST_BYTES:
        raise ManifestError(f"{p}: grew while it was read, {too_big}")
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise NotAManifest(f"{p}: not JSON ({exc})") from None
    return parse_manifest(doc, p)


def open_source(spec: str, steps: StepFilter | None = None) -> RunSource:
    """A manifest file as a run source (``sources.FORMATS``): digests only.
    A file that is no manifest, or a damaged one, is a source whose
    listing holds the error."""

    base = os.path.basename(spec)
    try:
        m = load_manifest(spec)
    except ManifestError as exc:
        msg = str(exc).removeprefix(f"{spec}: ")
        if isinstance(exc, NotAManifest) and base.lower().endswith(RAW_SUFFIX):
            msg = (
                f"not a run folder, nor a fastdiff manifest ({msg}); a {RAW_SUFFIX} file is data: "
                f"pass the run folder that holds the {DUMP_PATTERN} dumps"
            )
        elif isinstance(exc, NotAManifest):
            msg = (
                f"not a run folder, nor a fastdiff manifest ({msg}); give the folder that "
                f"holds the {DUMPS}, or a file written by 'fastdiff hash'"
            )
        return refused(spec, msg, exc.kind)
    src = RunSource(spec, m.listing, m.chunk_size, m.schema, m.dtypes, kind="manifest")
    return src if step_filter(steps) is None else src.select(steps)  # type: ignore[arg-type]
