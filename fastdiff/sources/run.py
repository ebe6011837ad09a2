"""``RunSource``: one side of a comparison as the scheduler sees it."""

from __future__ import annotations

from collections import Counter

from ..model.results import Problem
from .buffers import RunListing, Unread

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from ..model.findings import Note
    from ..model.results import Skipped
    from ..schema import Schema
    from .buffers import BufferRef, StepFilter


class RunSource:
    """A run as the scheduler sees it: its format, its listing, and the chunk
    size of the digests its buffers carry in advance.

    ``kind``: the format's name (``FORMATS``); ``chunk_size`` is set when
    the buffers carry digests known in advance (a manifest's: local files
    are hashed alike to be compared with them); ``schema`` is the schema a
    manifest records (None: a folder, or an older manifest); ``dtypes`` a
    manifest's dtype per buffer name; ``steps`` the step filter the listing
    was made with; ``notes``: remarks on how the run was read (a recorder's
    digest log: lines ignored, dumps changed since they were recorded),
    which every report on it carries. A run a tracer wrote
    (``fastdiff.trace``) holds its ``dataflow`` (a schema of every record's
    inputs) and ``sequence``, the path of its sequence log
    (``sources.traced``); None for any other run.
    """

    __slots__ = (
        "chunk_size", "dataflow", "dtypes", "kind", "listing", "notes", "schema", "sequence",
        "spec", "steps",
    )  # fmt: skip

    spec: str
    listing: RunListing
    chunk_size: int | None
    schema: Schema | None
    dtypes: dict[str, str]
    steps: StepFilter | None
    kind: str
    notes: tuple[Note, ...]
    dataflow: Schema | None
    sequence: str | None

    def __init__(
        self,
        spec: str,
        listing: RunListing,
        chunk_size: int | None = None,
        schema: Schema | None = None,
        dtypes: dict[str, str] | None = None,
        steps: StepFilter | None = None,
        kind: str = "folder",
        notes: tuple[Note, ...] = (),
        dataflow: Schema | None = None,
        sequence: str | None = None,
    ) -> None:
        self.spec = spec
        self.listing = listing
        self.chunk_size = chunk_size
        self.schema = schema
        self.dtypes = {} if dtypes is None else dtypes
        self.steps = steps
        self.kind = kind
        self.notes = notes
        self.dataflow = dataflow
        self.sequence = sequence

    def __repr__(self) -> str:
        return f"RunSource({self.spec!r}, {self.kind}, {self.listing!r})"

    @property
    def is_manifest(self) -> bool:
        """A manifest: digests only, no data."""
        return self.kind == "manifest"

    def select(self, steps: StepFilter) -> RunSource:
        """This source restricted to ``steps``, without reading anything again
        (a manifest's digests are shared, not copied)."""
        return self.replace(listing=self.listing.select(steps), steps=steps)

    def traced(
        self, dataflow: Schema | None, sequence: str | None, notes: tuple[Note, ...] = ()
    ) -> RunSource:
        """This source with what a tracer wrote beside its records, and ``notes`` added."""
        return self.replace(notes=(*self.notes, *notes), dataflow=dataflow, sequence=sequence)

    def replace(self, **changes: object) -> RunSource:
        """A copy with the given fields changed (by their names)."""
        fields = {k: getattr(self, k) for k in _SOURCE_FIELDS}
        return RunSource(**{**fields, **changes})  # type: ignore[arg-type]

    def select_names(self, wants: Callable[[str], bool]) -> RunSource:
        """This source restricted to the buffers whose name ``wants`` takes,
        without reading anything again (its step filter kept; listed afresh,
        ``sources.reopen``, it holds every name again)."""
        return self.replace(listing=self.listing.select_names(wants))

    def split(self, steps: Iterable[int]) -> dict[int, RunSource]:
        """``{n: self.select((n,)) for n in steps}``, in one pass over the listing."""
        return {
            n: self.replace(listing=listing, steps=(n,))
            for n, listing in self.listing.split(steps).items()
        }


_SOURCE_FIELDS = (
    "spec", "listing", "chunk_size", "schema", "dtypes", "steps", "kind", "notes", "dataflow",
    "sequence",
)  # fmt: skip


def refused(spec: str, message: str, kind: str) -> RunSource:
    """A run that cannot be used at all: its listing holds the one problem."""
    problem = Problem(spec, message, kind=kind)
    return RunSource(spec, RunListing(spec, (), (), (problem,), readable=False))


def container_listing(
    spec: str, items: Iterable[BufferRef | Unread], skipped: tuple[Skipped, ...] = ()
) -> RunListing:
    """The listing of a container file given as a run: its buffers, and an
    error (and a broken buffer) for each buffer whose bytes its reader
    refused (``Unread``), the rest of the container still compared. A name
    given to more than one item is an error of its own: were one of them
    paired, the other would be lost unseen."""
    items = list(items)
    count = Counter((item.step, item.name) for item in items)
    refs: list[BufferRef] = []
    errors: list[Problem] = []
    broken: list[tuple[tuple[int, str], Problem]] = []
    said: set[tuple[int, str]] = set()
    for item in items:
        key = (item.step, item.name)
        if count[key] > 1:
            # Two things of one name (a tensor, and a part of a value named
            # like it): one of them would hide the other, so neither is
            # compared; the first reason an Unread of that name gave wins.
            if key in said:
                continue
            reason = next(
                (i.reason for i in items if isinstance(i, Unread) and (i.step, i.name) == key),
                f"{item.name!r} names {count[key]} buffers of this run (a key spelt like "
                "the path of another, as 'o.0' beside a list 'o'); none of them was compared",
            )
            item = Unread(item.step, item.name, reason)
            said.add(key)
        if isinstance(item, Unread):
            problem = Problem(spec, item.reason, kind="malformed")
            errors.append(problem)
            broken.append(((item.step, item.name), problem))
        else:
            refs.append(item)
    broken.sort(key=lambda item: item[0])
    return RunListing(spec, tuple(refs), skipped, tuple(errors), True, tuple(broken))


def file_source(
    spec: str,
    steps: StepFilter | None,
    kind: str,
    read: Callable[[], Iterable[BufferRef | Unread]],
    error: type[Exception],
    what: str,
) -> RunSource:
    """A file given as a run, of one step (0): the buffers ``read()`` finds
    (``container_listing``); an OSError makes it unreadable, ``error`` (its
    format's refusal) malformed, said as "not a usable WHAT"."""
    from .buffers import step_filter

    try:
        items = read()
    except OSError as exc:
        return refused(spec, f"cannot read: {exc.strerror}", "unreadable")
    except error as exc:
        return refused(spec, f"not a usable {what}: {exc}", "malformed")
    want = step_filter(steps)
    if want is not None and not want(0):
        items = []
    return RunSource(spec, container_listing(spec, items), steps=steps, kind=kind)
