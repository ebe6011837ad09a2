"""The dump-name rule: which file names are dumps, of which step and buffer.

A run folder holds, per step N (ASCII digits, any number up to
``MAX_STEP_DIGITS``):

- ``step_<N>_<name>.bin``: buffer ``name``, raw little-endian elements
  (their type comes from the schema);
- ``step_<N>_<name>.npy``: buffer ``name``, a numpy array file (its header
  gives dtype and shape);
- ``step_<N>.<ext>`` with ``ext`` one of ``CONTAINER_SUFFIXES``: a container
  file (safetensors, a ``torch.save`` archive, an ``.npz``) whose tensors
  are step N's buffers.

The suffixes, and the format of each, are the format table's
(``formats.FORMATS``): a format added there is listed here too.

``name`` is at least one character, any character (a dot, a newline).
Names starting with ``.`` are hidden: a recorder's temporaries and its
digest log (``DIGEST_LOG``), a tracer's dataflow (``DATAFLOW``) and
sequence log (``SEQUENCE_LOG``); every command passes over them in silence.
This module is the one place that parses or builds such names; it reads no
file.
"""

from __future__ import annotations

from .formats import BUFFER_SUFFIXES, CONTAINER_SUFFIXES
from .formats import suffix as format_suffix

PREFIX = "step_"
#: The suffix of a raw dump (the usual one), and of an ``.npy`` dump.
RAW_SUFFIX = format_suffix("raw")
NPY_SUFFIX = format_suffix("npy")
_RAW_LEN = len(RAW_SUFFIX)
#: Step numbers of more digits are refused (an error, never a skip): below
#: the smallest limit Python may put on int/str conversions (640 digits), and
#: far above the 255 bytes most file systems allow a file name.
MAX_STEP_DIGITS = 600

#: The digest log a recorder keeps in a run folder (``sources.digestlog``).
DIGEST_LOG = ".fastdiff-digests.jsonl"
#: The prefix of a recorder's temporary files (renamed into place once whole).
TEMP_PREFIX = ".fastdiff-tmp-"
#: The dataflow a tracer (``fastdiff.trace``) writes into a run folder: a
#: schema file of every record's inputs (``tracing.dataflow``).
DATAFLOW = ".fastdiff-dataflow.toml"
#: The order of a trace's records, a line per step (``sources.traced``).
SEQUENCE_LOG = ".fastdiff-sequence.jsonl"

#: How messages name a dump.
DUMP_PATTERN = f"{PREFIX}<N>_<name>{RAW_SUFFIX}"
#: How messages name what a run folder holds.
DUMPS = f"{DUMP_PATTERN} dumps"


def split_name(filename: str) -> tuple[str, str | None, str] | None:
    """(step digits, buffer name or None for a container, format) for a dump
    name, else None. The digits are not checked against ``MAX_STEP_DIGITS``."""
    if not filename.startswith(PREFIX):
        return None
    if filename.endswith(RAW_SUFFIX):  # the usual case, first
        end = len(filename) - _RAW_LEN
        sep = filename.find("_", 5)
        if sep <= 5 or sep + 1 >= end:
            return None
        digits = filename[5:sep]
        if not (digits.isascii() and digits.isdigit()):
            return None
        return digits, filename[sep + 1 : end], "raw"
    dot = filename.rfind(".")
    if dot < 0:
        return None
    suffix = filename[dot:]
    fmt = BUFFER_SUFFIXES.get(suffix)
    if fmt is not None:
        sep = filename.find("_", 5)
        # The digits run up to the first "_" after "step_", and a name of at
        # least one character sits between that "_" and the suffix.
        if sep <= 5 or sep + 1 >= dot:
            return None
        digits = filename[5:sep]
        if not (digits.isascii() and digits.isdigit()):
            return None
        return digits, filename[sep + 1 : dot], fmt
    fmt = CONTAINER_SUFFIXES.get(suffix)
    if fmt is None:
        return None
    digits = filename[5:dot]
    if not (digits and digits.isascii() and digits.isdigit()):
        return None
    return digits, None, fmt


def split_dump_name(filename: str) -> tuple[str, str] | None:
    """(step digits, buffer name) for a name shaped ``step_<N>_<name>.bin``, else None."""
    parts = split_name(filename)
    if parts is None or parts[2] != "raw":
        return None
    return parts[0], parts[1]  # type: ignore[return-value]


def parse_dump_name(filename: str) -> tuple[int, str] | None:
    """(step, buffer name) for ``step_<N>_<name>.bin``, else None.

    None also for a step of more than ``MAX_STEP_DIGITS`` digits: callers
    that list folders tell that case apart with ``split_dump_name``.
    """
    parts = split_dump_name(filename)
    if parts is None or len(parts[0]) > MAX_STEP_DIGITS:
        return None
    return int(parts[0]), parts[1]


def step_of(filename: str) -> int | None:
    """The step of any dump name (a buffer's or a container's), else None."""
    parts = split_name(filename)
    if parts is None or len(parts[0]) > MAX_STEP_DIGITS:
        return None
    return int(parts[0])


def is_dump_name(filename: str) -> bool:
    """Whether ``filename`` is named like a dump of any format."""
    return split_name(filename) is not None


def dump_name(step: int, name: str, suffix: str = RAW_SUFFIX) -> str:
    """The file name of buffer ``name`` at ``step`` (``suffix``: ``RAW_SUFFIX``,
    ``NPY_SUFFIX``: one of ``BUFFER_SUFFIXES``)."""
    return f"{PREFIX}{step}_{name}{suffix}"


def container_name(step: int, suffix: str) -> str:
    """The file name of step ``step``'s container (``suffix``: one of ``CONTAINER_SUFFIXES``)."""
    return f"{PREFIX}{step}{suffix}"
