"""Result types: plain frozen dataclasses, the data every renderer reads.

``BufferResult`` is one buffer at one step; ``Report`` is one run pair. The
field names of ``BufferResult`` are the JSON contract (``render.render_json``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Status = Literal[
    "equal",
    "diverged",
    "within_tolerance",
    "length_mismatch",
    "only_in_a",
    "only_in_b",
    "malformed",
    "error",
]
Verdict = Literal["identical", "diverged", "error"]

#: What a Problem is about (``Problem.kind``):
#: ``missing``    a run folder or manifest that does not exist;
#: ``unreadable`` no permission, an I/O error, a broken link, a FIFO or device;
#: ``changed``    the file changed (or vanished) while fastdiff read it;
#: ``malformed``  a size that is not a whole number of elements, a damaged manifest;
#: ``no_dumps``   a run side that holds no step_<N>_<name>.bin at all;
#: ``name``       a dump name fastdiff cannot use (not UTF-8, a duplicate step);
#: ``mismatch``   digests that cannot be compared (different chunk sizes);
#: ``worker``     a worker process died or failed running a task;
#: ``error``      anything else.
PROBLEM_KINDS = (
    "missing",
    "unreadable",
    "changed",
    "malformed",
    "no_dumps",
    "name",
    "mismatch",
    "worker",
    "error",
)

#: Statuses that make a run pair diverge.
DIVERGENT: frozenset[str] = frozenset({"diverged", "length_mismatch", "only_in_a", "only_in_b"})
#: Statuses that are trouble (exit 2): nothing trustworthy was compared.
TROUBLE: frozenset[str] = frozenset({"malformed", "error"})

Number = int | float

#: The element counts of a buffer. Where elements were compared (the whole
#: buffer, or the common prefix of a length mismatch, decided by digest or by
#: scan) each is an int, 0 when nothing differs; where they were not (a
#: buffer in one run only, malformed, an error, a prefix a manifest's digests
#: cannot decide) each is None.
COUNT_FIELDS = ("n_diff", "n_within_tolerance", "n_nan_mismatch", "n_inf_mismatch")


@dataclass(frozen=True)
class BufferResult:
    step: int
    name: str
    group: str
    dtype: str
    status: Status
    n_elements_a: int | None = None
    n_elements_b: int | None = None
    n_diff: int | None = None
    n_within_tolerance: int | None = None
    first_index: int | None = None
    a: Number | None = None
    b: Number | None = None
    a_bits: str | None = None
    b_bits: str | None = None
    max_abs_delta: Number | None = None
    max_abs_delta_index: int | None = None
    n_nan_mismatch: int | None = None
    n_inf_mismatch: int | None = None
    #: Byte range of the first chunk whose digests differ, when only digests
    #: were compared (a manifest on one side).
    first_divergent_chunk: tuple[int, int] | None = None
    path_a: str | None = None
    path_b: str | None = None
    message: str | None = None


@dataclass(frozen=True)
class GroupVerdict:
    """One group at the first divergent step."""

    key: str
    title: str
    status: Literal["equal", "diverged", "absent", "error"]
    diverged: tuple[str, ...]
    hint: str


@dataclass(frozen=True)
class StepSummary:
    step: int
    counts: tuple[tuple[str, int], ...]  # (status, how many), in a fixed order
    diverged_groups: tuple[str, ...]


@dataclass(frozen=True)
class Skipped:
    """An entry of a run folder that is not compared, and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class Problem:
    """An error about one path: what is wrong and what to do, in one line.

    ``kind`` lets a caller act on it without parsing the message: one of
    ``PROBLEM_KINDS``.
    """

    path: str
    message: str
    kind: str = "error"


@dataclass(frozen=True)
class Work:
    """What the comparison did, for the curious and for benchmarks."""

    files_hashed: int = 0
    bytes_hashed: int = 0
    pairs_scanned: int = 0
    bytes_scanned: int = 0
    engine: str | None = None
    executor: str = "serial"
    jobs: int = 1
    elapsed_s: float = 0.0


@dataclass(frozen=True)
class Report:
    run_a: str
    run_b: str
    schema: str
    verdict: Verdict
    first_divergent_step: int | None
    first_divergent_groups: tuple[str, ...]
    groups: tuple[GroupVerdict, ...]
    steps: tuple[StepSummary, ...]
    buffers: tuple[BufferResult, ...]
    skipped: tuple[Skipped, ...]
    errors: tuple[Problem, ...]
    tolerance: dict[str, object] = field(default_factory=dict)
    work: Work = field(default_factory=Work)
