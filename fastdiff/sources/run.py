"""``RunSource``: one side of a comparison as the scheduler sees it."""

from __future__ import annotations

from ..results import Problem
from .buffers import RunListing, Unread

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..results import Skipped
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
    notes: tuple[str, ...]
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
        notes: tuple[str, ...] = (),
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
        return RunSource(
            self.spec, self.listing.select(steps), self.chunk_size, self.schema, self.dtypes,
            steps, self.kind, self.notes, self.dataflow, self.sequence,
        )  # fmt: skip

    def traced(
        self, dataflow: Schema | None, sequence: str | None, notes: tuple[str, ...] = ()
    ) -> RunSource:
        """This source with what a tracer wrote beside its records, and ``notes`` added."""
        return RunSource(
            self.spec, self.listing, self.chunk_size, self.schema, self.dtypes, self.steps,
            self.kind, (*self.notes, *notes), dataflow, sequence,
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
    refused (``Unread``), the rest of the container still compared."""
    refs: list[BufferRef] = []
    errors: list[Problem] = []
    broken: list[tuple[tuple[int, str], Problem]] = []
    for item in items:
        if isinstance(item, Unread):
            problem = Problem(spec, item.reason, kind="malformed")
            errors.append(problem)
            broken.append(((item.step, item.name), problem))
        else:
            refs.append(item)
    broken.sort(key=lambda item: item[0])
    return RunListing(spec, tuple(refs), skipped, tuple(errors), True, tuple(broken))
