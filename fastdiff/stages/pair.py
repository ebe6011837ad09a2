"""Stage 2: match the buffers of two runs by (step, buffer name).

Each pair carries the group the schema gives its buffer, and its dtype and
layout: those a file's own header gives (an ``.npy``, a safetensors
tensor), else the schema's. Two headers that disagree on dtype or shape
make the pair differ (``Pair.differs``) without reading it. Pairs are
ordered by step, then by the group's place in the pipeline, then by name,
so every report lists buffers in the same order however the runs were
listed.
"""

from __future__ import annotations

from ..model.findings import HeaderChange
from ..model.results import BufferResult
from ..schema import Layout

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..model.results import Status
    from ..schema import Schema
    from ..sources.buffers import BufferRef, RunListing


class Pair:
    """One buffer at one step, as found in run A and run B (an immutable value).

    ``problem``: why this buffer cannot be compared (an entry of that name is
    in a run but could not be read); an error, not a buffer missing from one
    run. ``broken_a``/``broken_b``: the paths of such unreadable entries.
    ``differs``: how the two files' headers disagree (a ``HeaderChange``:
    dtype or shape): the buffers differ, whatever their bytes.
    """

    __slots__ = (
        "a", "b", "broken_a", "broken_b", "differs", "dtype", "group", "layout", "name",
        "problem", "rank", "step",
    )  # fmt: skip

    step: int
    name: str
    group: str
    dtype: str
    a: BufferRef | None
    b: BufferRef | None
    problem: str | None
    broken_a: str | None
    broken_b: str | None
    #: The shape and fields the schema declares for this buffer, if any.
    layout: Layout | None
    #: The rank of a run of several (``sources.ranks``); None: a run of one.
    rank: int | None

    def __init__(
        self,
        step: int,
        name: str,
        group: str,
        dtype: str,
        a: BufferRef | None,
        b: BufferRef | None,
        problem: str | None = None,
        broken_a: str | None = None,
        broken_b: str | None = None,
        layout: Layout | None = None,
        differs: HeaderChange | None = None,
        rank: int | None = None,
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
        self.differs = differs
        self.rank = rank

    def __repr__(self) -> str:
        return f"Pair(step={self.step}, name={self.name!r}, a={self.a!r}, b={self.b!r})"

    def __reduce__(self) -> tuple[type[Pair], tuple[object, ...]]:
        # Sent to worker processes (in a scan job): slots classes pickle by their fields.
        return Pair, (
            self.step, self.name, self.group, self.dtype, self.a, self.b, self.problem,
            self.broken_a, self.broken_b, self.layout, self.differs, self.rank,
        )  # fmt: skip

    def result(self, status: Status, **fields: object) -> BufferResult:
        """A BufferResult for this pair, with its identity filled in; a buffer
        of a declared shape that no scan described (equal, or decided by
        digests alone, its sides of one length) holds it too (``-v`` shows
        it, as on the lines of buffers a scan described)."""
        layout = self.layout
        if layout is not None and layout.shape is not None and "facts" not in fields:
            n = fields.get("n_elements_a")
            if isinstance(n, int) and n == fields.get("n_elements_b", n):
                fields["shape"] = layout.resolve(n)
        return BufferResult(
            step=self.step,
            name=self.name,
            group=self.group,
            dtype=self.dtype,
            status=status,
            path_a=self.a.path if self.a else self.broken_a,
            path_b=self.b.path if self.b else self.broken_b,
            rank=self.rank,
            **fields,  # type: ignore[arg-type]
        )


def pair_runs(
    run_a: RunListing, run_b: RunListing, schema: Schema, rank: int | None = None
) -> tuple[Pair, ...]:
    """Every (step, name) of either run, paired, in report order. One pass over
    each run's buffers; the schema classifies each buffer name once. ``rank``:
    the rank both runs are of (a run of several), carried to each result."""
    order = schema.order
    classified: dict[str, tuple[str, str, int, Layout | None]] = {}

    def classify(name: str) -> tuple[str, str, int, Layout | None]:
        group, dtype = schema.classify(name)
        c = classified[name] = (group, dtype, order[group], schema.layout_of(name))
        return c

    rows: list[tuple[int, int, str, Pair]] = []
    append = rows.append

    def make(
        step: int, name: str, c: tuple[str, str, int, Layout | None], fa: BufferRef | None,
        fb: BufferRef | None, problem: str | None = None, broken_a: str | None = None,
        broken_b: str | None = None,
    ) -> Pair:  # fmt: skip
        dtype, layout, differs = c[1], c[3], None
        ha = fa.dtype if fa is not None else None
        hb = fb.dtype if fb is not None else None
        if ha is not None or hb is not None:
            # The files' own headers win over the schema.
            head = fa if ha is not None else fb
            assert head is not None
            dtype = head.dtype  # type: ignore[assignment]
            if head.shape is not None:
                fields = layout.fields if layout is not None else ()
                layout = Layout(tuple(head.shape), fields)
            if fa is not None and fb is not None:
                if ha is not None and hb is not None:
                    if ha != hb or fa.shape != fb.shape:
                        differs = HeaderChange(ha, fa.shape, hb, fb.shape)
                elif (hb if ha is None else ha) != c[1]:
                    # A file without a header (a raw dump, read as the schema's
                    # dtype) beside one whose header gives another dtype: the
                    # runs wrote different things, never one read as the other.
                    raw_a = ha is None
                    differs = HeaderChange(
                        c[1] if raw_a else ha, fa.shape, hb if raw_a else c[1], fb.shape,  # type: ignore[arg-type]
                        header_a=ha is not None or fa.shape is not None,
                        header_b=hb is not None or fb.shape is not None,
                    )  # fmt: skip
        elif (fa is not None and fa.shape is not None) or (fb is not None and fb.shape is not None):
            # Headers that give a shape but no dtype (numpy's raw bytes of a
            # type it cannot name, bf16 as <V2): the schema's dtype, the
            # header's shape, as for every .npy.
            sa = fa.shape if fa is not None else None
            sb = fb.shape if fb is not None else None
            shape = sa if sa is not None else sb
            assert shape is not None
            layout = Layout(tuple(shape), layout.fields if layout is not None else ())
            if sa is not None and sb is not None and sa != sb:
                differs = HeaderChange(dtype, sa, dtype, sb)
        return Pair(
            step, name, c[0], dtype, fa, fb, problem, broken_a, broken_b, layout, differs, rank
        )

    if run_a.broken or run_b.broken or run_a.lost or run_b.lost:
        # Entries in a run that could not be read: their pairs are errors,
        # present in that run, not absent from it; so are the other run's
        # buffers at a step whose container could not be read.
        files_a, files_b = run_a.by_key(), run_b.by_key()
        broken_a, broken_b = dict(run_a.broken), dict(run_b.broken)
        lost_a, lost_b = dict(run_a.lost), dict(run_b.lost)
        for key in files_a.keys() | files_b.keys() | broken_a.keys() | broken_b.keys():
            step, name = key
            c = classified.get(name) or classify(name)
            pa, pb = broken_a.get(key), broken_b.get(key)
            if pa is None and key not in files_a:
                pa = lost_a.get(step)
            if pb is None and key not in files_b:
                pb = lost_b.get(step)
            problem = pa or pb
            pair = make(
                step, name, c, files_a.get(key), files_b.get(key),
                problem.message if problem else None, pa.path if pa else None,
                pb.path if pb else None,
            )  # fmt: skip
            append((step, c[2], name, pair))
        rows.sort()
        return tuple(row[3] for row in rows)
    take_b = run_b.by_key().pop
    for fa in run_a.buffers:
        step, name = key = fa.step, fa.name
        c = classified.get(name) or classify(name)
        fb = take_b(key, None)
        if (
            fa.dtype is None
            and fa.shape is None
            and (fb is None or (fb.dtype is None and fb.shape is None))
        ):
            pair = Pair(step, name, c[0], c[1], fa, fb, layout=c[3], rank=rank)  # the usual case
        else:
            pair = make(step, name, c, fa, fb)
        append((step, c[2], name, pair))
    for fb in run_b.buffers:
        if take_b((fb.step, fb.name), None) is not None:  # in run B only
            step, name = fb.step, fb.name
            c = classified.get(name) or classify(name)
            if fb.dtype is None and fb.shape is None:
                pair = Pair(step, name, c[0], c[1], None, fb, layout=c[3], rank=rank)
            else:
                pair = make(step, name, c, None, fb)
            append((step, c[2], name, pair))
    rows.sort()  # (step, name) is unique, so no two rows tie before the Pair
    return tuple(row[3] for row in rows)
