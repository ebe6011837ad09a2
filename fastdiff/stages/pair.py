"""Stage 2: match the dumps of two runs by (step, buffer name).

Each pair carries the group and dtype the schema gives its buffer. Pairs are
ordered by step, then by the group's place in the pipeline, then by name,
so every report lists buffers in the same order however the folders were
listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..results import BufferResult, Status
from ..schema import Layout, Schema
from .discover import DumpFile, RunListing


@dataclass(frozen=True)
class Pair:
    step: int
    name: str
    group: str
    dtype: str
    a: DumpFile | None
    b: DumpFile | None
    #: Why this buffer cannot be compared (an entry of that name is in a run
    #: but could not be read); an error, not a buffer missing from one run.
    problem: str | None = None
    #: The paths of such unreadable entries, in run A and run B.
    broken_a: str | None = None
    broken_b: str | None = None
    #: The shape and fields the schema declares for this buffer, if any.
    layout: Layout | None = None

    def result(self, status: Status, **fields: Any) -> BufferResult:
        """A BufferResult for this pair, with its identity filled in."""
        return BufferResult(
            step=self.step,
            name=self.name,
            group=self.group,
            dtype=self.dtype,
            status=status,
            path_a=self.a.path if self.a else self.broken_a,
            path_b=self.b.path if self.b else self.broken_b,
            **fields,
        )


def pair_runs(run_a: RunListing, run_b: RunListing, schema: Schema) -> tuple[Pair, ...]:
    files_a = run_a.by_key()
    files_b = run_b.by_key()
    broken_a, broken_b = dict(run_a.broken), dict(run_b.broken)
    order = schema.order
    pairs = []
    for key in files_a.keys() | files_b.keys() | broken_a.keys() | broken_b.keys():
        step, name = key
        group, dtype = schema.classify(name)
        pa, pb = broken_a.get(key), broken_b.get(key)
        problem = pa or pb
        pairs.append(
            Pair(
                step,
                name,
                group,
                dtype,
                files_a.get(key),
                files_b.get(key),
                problem.message if problem else None,
                pa.path if pa else None,
                pb.path if pb else None,
                schema.layout_of(name),
            )
        )
    pairs.sort(key=lambda p: (p.step, order[p.group], p.name))
    return tuple(pairs)
