"""What a tracer (``fastdiff.trace``) writes into a run folder besides its
records: the dataflow and the order of the records.

- ``names.DATAFLOW``: a schema file (``schemafile``) whose members are the
  run's records, each with the ``inputs`` it read (``tracing.dataflow``).
  ``compare`` reads the runs with it when no schema is given
  (``sources.schemas.choose_schema``): it says where a divergence was born.
- ``names.SEQUENCE_LOG``: JSON Lines, one line per step, the records in the
  order they were made: ``{"v": 1, "level": "op", "step": 3, "records":
  [...], "check": "..."}`` (``check``: the xxh3-64 of the rest of the line,
  as in the digest log, so a damaged line is refused whole). A step
  recorded again (a run traced again into its folder) is the newest line's.
  Two traces' sequences say where they part (``stages.structure``).

Both are hidden files: every listing passes over them, and a copy of the
run folder carries them. Reading never raises for bad content: what cannot
be used is a ``warning:`` note, and is not used.
"""

from __future__ import annotations

import os

from xxhash import xxh3_64_hexdigest

from ..model.findings import Note, NoteKind
from .names import DATAFLOW, SEQUENCE_LOG

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..schema import Schema

__all__ = [
    "LEVELS", "Sequences", "read_dataflow", "read_sequences", "sequence_line", "sequence_notes",
]  # fmt: skip

#: The format of a sequence line (its ``v``).
SEQUENCE_VERSION = 1
#: The levels a trace records at.
LEVELS = ("module", "op")
#: A sequence log is read up to this many bytes; a larger one is not used.
MAX_SEQUENCE_BYTES = 1 << 30
_CHECK = b',"check":"'
_CHECK_LEN = len(_CHECK) + 16 + 2
_KEYS = frozenset({"v", "level", "step", "records"})


def sequence_line(level: str, step: int, records: Sequence[str]) -> bytes:
    """The line of step ``step``'s records, in order, newline included."""
    import json

    body = json.dumps(
        {"v": SEQUENCE_VERSION, "level": level, "step": step, "records": list(records)},
        separators=(",", ":"),
    ).encode()
    return body[:-1] + _CHECK + xxh3_64_hexdigest(body).encode() + b'"}\n'


class Sequences:
    """A sequence log's contents (an immutable value): the level, each step's
    records in order (by step), and what was wrong (``bad``: one line each,
    ``line N: why``; ``unusable``: why none of it was used)."""

    __slots__ = ("bad", "level", "steps", "unusable")

    def __init__(
        self,
        level: str | None,
        steps: dict[int, tuple[str, ...]],
        bad: tuple[str, ...] = (),
        unusable: str | None = None,
    ) -> None:
        self.level = level
        self.steps = steps
        self.bad = bad
        self.unusable = unusable


def _parse(raw: bytes) -> tuple[str, int, tuple[str, ...]]:
    """(level, step, records) of a line without its newline; ValueError says why not."""
    import json

    if len(raw) < _CHECK_LEN or raw[-_CHECK_LEN:][: len(_CHECK)] != _CHECK or raw[-2:] != b'"}':
        raise ValueError("damaged or cut short (no check at its end)")
    body = raw[:-_CHECK_LEN] + b"}"
    if xxh3_64_hexdigest(body).encode() != raw[-_CHECK_LEN + len(_CHECK) : -2]:
        raise ValueError("damaged (its check does not match its content)")
    try:
        fields = json.loads(body)
    except (ValueError, RecursionError):
        raise ValueError("not JSON") from None
    if not isinstance(fields, dict) or fields.keys() != _KEYS:
        raise ValueError("not a sequence line (other keys)")
    if fields["v"] != SEQUENCE_VERSION or type(fields["v"]) is not int:
        raise ValueError(f"format version {fields['v']!r}, not {SEQUENCE_VERSION}")
    level, step, records = fields["level"], fields["step"], fields["records"]
    if level not in LEVELS:
        raise ValueError(f"level {level!r} is none of {', '.join(LEVELS)}")
    if type(step) is not int or step < 0:
        raise ValueError("step must be an integer >= 0")
    if not isinstance(records, list) or not all(isinstance(r, str) and r for r in records):
        raise ValueError("records must be a list of record names")
    return level, step, tuple(records)


def read_sequences(path: str, want: Callable[[int], bool] | None = None) -> Sequences:
    """Read a sequence log (``want``: the steps to keep; None: all)."""
    from .reader import open_fd

    try:
        fd = open_fd(path)
        try:
            size = os.fstat(fd).st_size
            if size > MAX_SEQUENCE_BYTES:
                return Sequences(None, {}, (), f"{size:,} bytes, more than {MAX_SEQUENCE_BYTES:,}")
            pieces, offset = [], 0
            while offset < size:
                piece = os.pread(fd, min(1 << 24, size - offset), offset)
                if not piece:
                    break
                pieces.append(piece)
                offset += len(piece)
            raw = b"".join(pieces)
        finally:
            os.close(fd)
    except OSError as exc:
        return Sequences(None, {}, (), f"cannot be read ({exc.strerror or exc})")
    lines = raw.split(b"\n")
    torn = lines.pop()
    steps: dict[int, tuple[str, ...]] = {}
    bad: list[str] = []
    level = None
    for lineno, line in enumerate(lines, 1):
        try:
            line_level, step, records = _parse(line)
        except ValueError as exc:
            bad.append(f"line {lineno}: {exc}")
            continue
        if level is not None and line_level != level:
            bad.append(f"line {lineno}: level {line_level!r}, not the lines' before ({level!r})")
            continue
        level = line_level
        if want is None or want(step):
            steps[step] = records
    if torn:
        bad.append(f"line {len(lines) + 1}: cut short (the job stopped while writing it)")
    return Sequences(level, steps, tuple(bad))


def sequence_notes(paths: Sequence[str], read: Sequence[Sequences]) -> list[Note]:
    """What of the sequence logs at ``paths`` (as ``read``) was not used."""
    out = []
    for path, seq in zip(paths, read, strict=True):
        if seq.unusable is not None:
            why = seq.unusable
            out.append(Note.of(NoteKind.SEQUENCE_UNUSABLE, path=path, why=why, warning=True))
        elif seq.bad:
            out.append(
                Note.of(NoteKind.SEQUENCE_LINES_IGNORED, path=path, lines=seq.bad, warning=True)
            )
    return out


def read_dataflow(folder: str) -> tuple[Schema | None, Note | None]:
    """The dataflow a tracer wrote into ``folder`` (None: there is none) and,
    when there is one that cannot be used, a warning saying why."""
    path = os.path.join(folder, DATAFLOW)
    try:
        os.stat(path)
    except OSError:
        return None, None
    from ..errors import SchemaError
    from ..schemafile import load_schema

    try:
        return load_schema(path), None
    except SchemaError as exc:
        return None, Note.of(NoteKind.DATAFLOW_UNUSABLE, path=path, why=str(exc), warning=True)


def trace_files(folder: str) -> tuple[Schema | None, str | None, tuple[Note, ...]]:
    """The dataflow of run folder ``folder``, the path of its sequence log
    (None: none), and notes on what could not be used."""
    dataflow, note = read_dataflow(folder)
    sequence: str | None = os.path.join(folder, SEQUENCE_LOG)
    try:
        os.stat(sequence)  # type: ignore[arg-type]
    except OSError:
        sequence = None
    return dataflow, sequence, () if note is None else (note,)
