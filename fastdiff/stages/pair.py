"""Stage 2: match the dumps of two runs by (step, buffer name).

Each pair carries the group and dtype the schema gives its buffer. Pairs are
ordered by step, then by the group's place in the pipeline, then by name,
so every report lists buffers in the same order however the folders were
listed.
"""

from __future__ import annotations

from ..results import BufferResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..results import Status
    from ..schema import Layout, Schema
    from .discover import DumpFile, RunListing


class Pair:
    """One buffer at one step, as found in run A and run B (an immutable value).

    ``problem``: why this buffer cannot be compared (an entry of that name is
    in a run but could not be read); an error, not a buffer missing from one
    run. ``broken_a``/``broken_b``: the paths of such unreadable entries.
    """

    __slots__ = (
        "a", "b", "broken_a", "broken_b", "dtype", "group", "layout", "name", "problem", "step",
    )  # fmt: skip

    step: int
    name: str
    group: str
    dtype: str
    a: DumpFile | None
    b: DumpFile | None
    problem: str | None
    broken_a: str | None
    broken_b: str | None
    #: The shape and fields the schema declares for this buffer, if any.
    layout: Layout | None

    def __init__(
        self,
        step: int,
        name: str,
        group: str,
        dtype: str,
        a: DumpFile | None,
        b: DumpFile | None,
        problem: str | None = None,
        broken_a: str | None = None,
        broken_b: str | None = None,
        layout: Layout | None = None,
    ) -> None:
        self.step = step
        self.name = name
        self.group = group
        self.dtype = dtype
        self.a = a
        self.b = b
        self.problem = problem
        self.broken_a = broken_a
        self.broken_b = broken_b
        self.layout = layout

    def __repr__(self) -> str:
        return f"Pair(step={self.step}, name={self.name!r}, a={self.a!r}, b={self.b!r})"

    def __reduce__(self) -> tuple[type[Pair], tuple[object, ...]]:
        # Sent to worker processes (in a scan job): slots classes pickle by their fields.
        return Pair, (
            self.step, self.name, self.group, self.dtype, self.a, self.b, self.problem,
            self.broken_a, self.broken_b, self.layout,
        )  # fmt: skip

    def result(self, status: Status, **fields: object) -> BufferResult:
        """A BufferResult for this pair, with its identity filled in."""
        return BufferResult(
            step=self.step,
            name=self.name,
            group=self.group,
            dtype=self.dtype,
            status=status,
            path_a=self.a.path if self.a else self.broken_a,
            path_b=self.b.path if self.b else self.broken_b,
            **fields,  # type: ignore[arg-type]
        )


def pair_runs(run_a: RunListing, run_b: RunListing, schema: Schema) -> tuple[Pair, ...]:
    """Every (step, name) of either run, paired, in report order. One pass over
    each run's files; the schema classifies each buffer name once."""
    order = schema.order
    classified: dict[str, tuple[str, str, int, Layout | None]] = {}

    def classify(name: str) -> tuple[str, str, int, Layout | None]:
        group, dtype = schema.classify(name)
        c = classified[name] = (group, dtype, order[group], schema.layout_of(name))
        return c

    rows: list[tuple[int, int, str, Pair]] = []
    append = rows.append
    if run_a.broken or run_b.broken:
        # Entries in a run that could not be read: their pairs are errors,
        # present in that run, not absent from it.
        files_a, files_b = run_a.by_key(), run_b.by_key()
        broken_a, broken_b = dict(run_a.broken), dict(run_b.broken)
        for key in files_a.keys() | files_b.keys() | broken_a.keys() | broken_b.keys():
            step, name = key
            c = classified.get(name) or classify(name)
            pa, pb = broken_a.get(key), broken_b.get(key)
            problem = pa or pb
            pair = Pair(
                step, name, c[0], c[1], files_a.get(key), files_b.get(key),
                problem.message if problem else None, pa.path if pa else None,
                pb.path if pb else None, c[3],
            )  # fmt: skip
            append((step, c[2], name, pair))
    else:
        take_b = run_b.by_key().pop
        for fa in run_a.files:
            step, name = key = fa.step, fa.name
            c = classified.get(name) or classify(name)
            pair = Pair(step, name, c[0], c[1], fa, take_b(key, None), layout=c[3])
            append((step, c[2], name, pair))
        for fb in run_b.files:
            if take_b((fb.step, fb.name), None) is not None:  # in run B only
                step, name = fb.step, fb.name
                c = classified.get(name) or classify(name)
                append((step, c[2], name, Pair(step, name, c[0], c[1], None, fb, layout=c[3])))
    rows.sort()  # (step, name) is unique, so no two rows tie before the Pair
    return tuple(row[3] for row in rows)
