"""The sizes of one run's dumps, as ``stats`` gives them (``fastdiff.stats``
computes them; ``render.stats`` words them): per step and group, totals,
the largest buffers, the gaps, the malformed files, and what a folder
occupies on disk."""

from __future__ import annotations

from .statuses import SourceKind
from .value import Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .findings import Note
    from .results import Problem, Skipped

__all__ = [
    "BufferStats",
    "Disk",
    "GroupStats",
    "Malformed",
    "MissingBuffer",
    "RunStats",
    "StepStats",
    "Tally",
]


class Tally(Value):
    """Files, elements and bytes of a set of dumps, and their dtypes."""

    __slots__ = ("bytes", "dtypes", "elements", "files", "malformed")

    def __init__(
        self,
        files: int = 0,
        elements: int = 0,
        bytes: int = 0,
        dtypes: tuple[str, ...] = (),
        malformed: int = 0,
    ) -> None:
        self.files = files
        self.elements = elements
        self.bytes = bytes
        self.dtypes = dtypes  # in the order of dtypes.DTYPES
        self.malformed = malformed  # files counted in bytes but not in elements


class StepStats(Value):
    __slots__ = ("groups", "step", "total")

    def __init__(self, step: int, total: Tally, groups: tuple[tuple[str, Tally], ...]) -> None:
        self.step = step
        self.total = total
        self.groups = groups  # (group key, tally), pipeline order, groups present


class GroupStats(Value):
    """One group over every step."""

    __slots__ = ("buffers", "key", "steps", "title", "total")

    def __init__(self, key: str, title: str, total: Tally, buffers: int, steps: int) -> None:
        self.key = key
        self.title = title
        self.total = total
        self.buffers = buffers  # distinct buffer names
        self.steps = steps  # steps holding at least one of its buffers


class BufferStats(Value):
    """One buffer name over every step."""

    __slots__ = ("bytes", "dtype", "elements", "group", "name", "steps", "total_bytes")

    def __init__(
        self,
        name: str,
        group: str,
        dtype: str,
        bytes: int,
        elements: int | None,
        steps: int,
        total_bytes: int,
    ) -> None:
        self.name = name
        self.group = group
        self.dtype = dtype
        self.bytes = bytes  # its largest file
        self.elements = elements  # elements of that file (None if it is malformed)
        self.steps = steps  # steps it is dumped at
        self.total_bytes = total_bytes  # over every step


class MissingBuffer(Value):
    """A buffer dumped at some steps of the run but not at others."""

    __slots__ = ("group", "missing_steps", "name", "present_steps")

    def __init__(
        self, name: str, group: str, missing_steps: tuple[int, ...], present_steps: int
    ) -> None:
        self.name = name
        self.group = group
        self.missing_steps = missing_steps
        self.present_steps = present_steps


class Malformed(Value):
    """A file whose size is not a whole number of its dtype's elements;
    ``path``: the file (in a manifest: ``MANIFEST:NAME``)."""

    __slots__ = ("bytes", "dtype", "group", "message", "name", "path", "step")

    def __init__(
        self,
        step: int,
        name: str,
        group: str,
        dtype: str,
        bytes: int,
        message: str,
        path: str | None = None,
    ) -> None:
        self.step = step
        self.name = name
        self.group = group
        self.dtype = dtype
        self.bytes = bytes
        self.message = message
        self.path = path


class Disk(Value):
    """What a run folder's dumps occupy on disk, against what they stand for:
    the distinct files that hold dumps' data and their bytes (headers
    included: an ``.npy``'s, a container's), and the dumps a recorder's
    digest log holds as digests only (their data was never written) with
    the bytes they stand for."""

    __slots__ = ("bytes", "digests_only", "digests_only_bytes", "files")

    def __init__(self, files: int, bytes: int, digests_only: int, digests_only_bytes: int) -> None:
        self.files = files
        self.bytes = bytes
        self.digests_only = digests_only
        self.digests_only_bytes = digests_only_bytes


class RunStats(Value):
    """The sizes of one run. ``disk``: what a folder's dumps occupy on disk
    (None for a manifest, which holds digests only). ``notes``: about the
    schema used, for stderr (``note: ...``/``warning: ...``, see
    ``sources.schemas.choose_schema``); not part of the JSON."""

    __slots__ = (
        "disk",
        "errors",
        "groups",
        "largest",
        "malformed",
        "missing",
        "n_buffers",
        "n_steps",
        "notes",
        "run",
        "schema",
        "skipped",
        "source",
        "steps",
        "total",
    )

    def __init__(
        self,
        run: str,
        source: SourceKind,
        schema: str,
        total: Tally,
        n_steps: int,
        n_buffers: int,
        steps: tuple[StepStats, ...],
        groups: tuple[GroupStats, ...],
        largest: tuple[BufferStats, ...],
        missing: tuple[MissingBuffer, ...],
        malformed: tuple[Malformed, ...],
        skipped: tuple[Skipped, ...],
        errors: tuple[Problem, ...],
        notes: tuple[Note, ...] = (),
        disk: Disk | None = None,
    ) -> None:
        self.run = run
        self.source = source
        self.schema = schema
        self.total = total
        self.n_steps = n_steps
        self.n_buffers = n_buffers
        self.steps = steps
        self.groups = groups
        self.largest = largest
        self.missing = missing
        self.malformed = malformed
        self.skipped = skipped
        self.errors = errors
        self.notes = notes
        self.disk = disk

    @property
    def bytes_per_step(self) -> tuple[int, int]:
        """The fewest and the most bytes a step holds ((0, 0) without steps)."""
        per_step = [st.total.bytes for st in self.steps]
        return min(per_step, default=0), max(per_step, default=0)
