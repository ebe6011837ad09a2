"""What the stages find beyond the facts of a buffer, as data.

A stage says *what it found* (a structural change with both sides, what
makes a group's differences rounding-size or large, the pattern of the
ranks' first origins, where a divergence was born, the kind of a timeline
cell, a remark on how the runs were read); only ``render`` knows the words,
so the text, the JSON and the HTML report agree, and a wording change
touches one renderer (ruff's diagnostics and their emitters are the model).

Every finding is an immutable ``Value`` of plain fields: ``as_dict`` gives
the JSON's form of it.
"""

from __future__ import annotations

from .statuses import Member, Status
from .value import Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

__all__ = [
    "Born",
    "BufferKey",
    "Cause",
    "CauseKind",
    "Cell",
    "ChangeKind",
    "HeaderChange",
    "LargeCauses",
    "Note",
    "NoteKind",
    "OriginAgreement",
    "PatternKind",
    "RankPattern",
    "Reproduction",
    "ReproductionKind",
    "StructuralChange",
    "Unclassified",
]


# --- a buffer's structure ------------------------------------------------------------


class HeaderChange(Value):
    """Two files of one buffer whose headers disagree: the dtype and shape of
    each side (``header_a``/``header_b`` False: a file without a header, a raw
    dump read as the schema's dtype, with no shape). The buffers differ,
    whatever their bytes; nothing more was compared."""

    __slots__ = ("dtype_a", "dtype_b", "header_a", "header_b", "shape_a", "shape_b")

    def __init__(
        self,
        dtype_a: str,
        shape_a: tuple[int, ...] | None,
        dtype_b: str,
        shape_b: tuple[int, ...] | None,
        header_a: bool = True,
        header_b: bool = True,
    ) -> None:
        self.dtype_a = dtype_a
        self.shape_a = shape_a
        self.dtype_b = dtype_b
        self.shape_b = shape_b
        self.header_a = header_a
        self.header_b = header_b


class ChangeKind(Member):
    """What a buffer changed in its structure between the runs."""

    __slots__ = ()
    ONLY_IN_A: ClassVar[ChangeKind]
    ONLY_IN_B: ClassVar[ChangeKind]
    LENGTH: ClassVar[ChangeKind]
    SIZE: ClassVar[ChangeKind]
    HEADER: ClassVar[ChangeKind]


ChangeKind.ONLY_IN_A = ChangeKind("only_in_a")  # present in one run only
ChangeKind.ONLY_IN_B = ChangeKind("only_in_b")
ChangeKind.LENGTH = ChangeKind("length")  # elements: a, b
ChangeKind.SIZE = ChangeKind("size")  # bytes of a malformed buffer: a, b (None: no file)
ChangeKind.HEADER = ChangeKind("header")  # dtype or shape in the files' headers: header


class StructuralChange(Value):
    """A diverging buffer that changed its structure (``kind``): ``a`` and
    ``b`` its element counts (``length``) or byte sizes (``size``);
    ``header`` the headers' change. No rounding: the runs took other paths."""

    __slots__ = ("a", "b", "header", "kind", "name")

    def __init__(
        self,
        name: str,
        kind: ChangeKind,
        a: int | None = None,
        b: int | None = None,
        header: HeaderChange | None = None,
    ) -> None:
        self.name = name
        self.kind = kind
        self.a = a
        self.b = b
        self.header = header


# --- what a group's differences point at ----------------------------------------------


class CauseKind(Member):
    """What the size of a group's differences at the first divergent step
    points at."""

    __slots__ = ()
    ROUNDING: ClassVar[CauseKind]
    CANCELLATION: ClassVar[CauseKind]
    LARGE: ClassVar[CauseKind]
    STRUCTURAL: ClassVar[CauseKind]
    BYTES: ClassVar[CauseKind]


CauseKind.ROUNDING = CauseKind("rounding")  # within the line: the order of operations
CauseKind.CANCELLATION = CauseKind("cancellation")  # within it against the buffers' scale
CauseKind.LARGE = CauseKind("large")  # beyond it, NaN or inf, integers: logic
CauseKind.STRUCTURAL = CauseKind("structural")  # a dtype, shape, length or presence changed
CauseKind.BYTES = CauseKind("bytes")  # raw bytes: their size says nothing


class LargeCauses(Value):
    """What makes differences large: ``beyond`` the rounding line (and
    ``of_scale``: in ULPs of their scale too), NaN and inf mismatches,
    ``integers`` that differ. None of them known: ``unknown``."""

    __slots__ = ("beyond", "integers", "n_inf", "n_nan", "of_scale")

    def __init__(
        self, beyond: bool, of_scale: bool, n_nan: int, n_inf: int, integers: bool
    ) -> None:
        self.beyond = beyond
        self.of_scale = of_scale
        self.n_nan = n_nan
        self.n_inf = n_inf
        self.integers = integers

    @property
    def unknown(self) -> bool:
        return not (self.beyond or self.n_nan or self.n_inf or self.integers)


class Cause(Value):
    """What a diverged group's differences point at (``kind``), with what
    shows it: ``rounding_ulp`` (the line), ``max_ulp`` (the largest own-ULP
    distance of a group rounding-size by cancellation), ``large`` (why
    large), ``changes`` (structural changes); for a structural group, the
    size of its other buffers' differences: ``others`` (their names),
    ``others_magnitude``, ``others_large``, ``others_cancellation``."""

    __slots__ = (
        "changes",
        "kind",
        "large",
        "max_ulp",
        "others",
        "others_cancellation",
        "others_large",
        "others_magnitude",
        "rounding_ulp",
    )

    def __init__(
        self,
        kind: CauseKind,
        rounding_ulp: int,
        max_ulp: int | None = None,
        large: LargeCauses | None = None,
        changes: tuple[StructuralChange, ...] = (),
        others: tuple[str, ...] = (),
        others_magnitude: str | None = None,
        others_large: LargeCauses | None = None,
        others_cancellation: bool = False,
    ) -> None:
        self.kind = kind
        self.rounding_ulp = rounding_ulp
        self.max_ulp = max_ulp
        self.large = large
        self.changes = changes
        self.others = others
        self.others_magnitude = others_magnitude
        self.others_large = others_large
        self.others_cancellation = others_cancellation


# --- where it was born ------------------------------------------------------------------


class BufferKey(Value):
    """Which buffer: step, group, name and rank (None: a run of one)."""

    __slots__ = ("group", "name", "rank", "step")

    def __init__(self, step: int, group: str, name: str, rank: int | None = None) -> None:
        self.step = step
        self.group = group
        self.name = name
        self.rank = rank

    @classmethod
    def of(cls, b: Any) -> BufferKey:
        """The key of a buffer result (anything with its step, group, name, rank)."""
        return cls(b.step, b.group, b.name, b.rank)


class Born(Value):
    """Where a divergence was born, summed up: ``step``, the first step with
    an origin (None: none found: ``declared`` says whether a buffer that
    diverged declares inputs at all); ``origins`` there; ``received``: the
    names of the receivers there; ``undetermined``: buffers left
    undetermined up to that step (or to the first divergent step);
    ``later``: the origins after it. The buffers' roles say the rest."""

    __slots__ = ("declared", "later", "origins", "received", "step", "undetermined")

    def __init__(
        self,
        step: int | None,
        origins: tuple[BufferKey, ...] = (),
        received: tuple[str, ...] = (),
        undetermined: tuple[BufferKey, ...] = (),
        later: tuple[BufferKey, ...] = (),
        declared: bool = True,
    ) -> None:
        self.step = step
        self.origins = origins
        self.received = received
        self.undetermined = undetermined
        self.later = later
        self.declared = declared


class PatternKind(Member):
    """What the ranks' first origins point at."""

    __slots__ = ()
    KERNEL: ClassVar[PatternKind]
    SOME_RANKS: ClassVar[PatternKind]
    ONE_RANK: ClassVar[PatternKind]
    NOT_KNOWN: ClassVar[PatternKind]


PatternKind.KERNEL = PatternKind("kernel")  # every rank diverged with the same first origin
PatternKind.SOME_RANKS = PatternKind("some_ranks")  # a rank without divergence, or other origins
PatternKind.ONE_RANK = PatternKind("one_rank")  # one rank: nothing to set it against
PatternKind.NOT_KNOWN = PatternKind("not_known")  # a rank not compared, or an origin not found


class RankPattern(Value):
    """The pattern of the first origins over the ranks (``kind``): ``firsts``,
    each first origin with the ranks it is first on; ``unfound``: diverging
    ranks with no origin found; ``quiet``: ranks compared without
    divergence; ``uncompared``: ranks with errors and no divergence."""

    __slots__ = ("firsts", "kind", "quiet", "uncompared", "unfound")

    def __init__(
        self,
        kind: PatternKind,
        firsts: tuple[tuple[BufferKey, tuple[int, ...]], ...],
        unfound: tuple[int, ...] = (),
        quiet: tuple[int, ...] = (),
        uncompared: tuple[int, ...] = (),
    ) -> None:
        self.kind = kind
        self.firsts = firsts
        self.unfound = unfound
        self.quiet = quiet
        self.uncompared = uncompared

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "firsts": [{"origin": o.as_dict(), "ranks": list(r)} for o, r in self.firsts],
            "unfound": list(self.unfound),
            "quiet": list(self.quiet),
            "uncompared": list(self.uncompared),
        }


# --- the timeline --------------------------------------------------------------------------


class Cell(Member):
    """What a timeline cell (a group at a step) shows."""

    __slots__ = ()
    ROUNDING: ClassVar[Cell]
    DELTA: ClassVar[Cell]
    NAN_INF: ClassVar[Cell]
    MISSING: ClassVar[Cell]
    LENGTH: ClassVar[Cell]
    DIFFERS: ClassVar[Cell]
    MALFORMED: ClassVar[Cell]


Cell.ROUNDING = Cell("rounding")  # its largest ULP distance: rounding-size
Cell.DELTA = Cell("delta")  # its largest |A-B|
Cell.NAN_INF = Cell("nan_inf")  # large through a NaN or an infinity
Cell.MISSING = Cell("missing")  # a buffer of it is in one run only
Cell.LENGTH = Cell("length")  # lengths differ over an equal prefix
Cell.DIFFERS = Cell("differs")  # known to differ by digests only
Cell.MALFORMED = Cell("malformed")  # sizes differ, not whole elements


def cell_of(
    statuses: set[str],
    magnitude: str | None,
    max_ulp: int | None,
    max_abs_delta: int | float | None,
    n_diff: int | None,
    rounding_ulp: int,
) -> Cell:
    """What the timeline cell of a group at a step shows, from its buffers that
    are not equal (their ``statuses``) and its row's figures: a buffer in one
    run only makes it ``missing``, whatever the others show. The verdict stage
    names each row's cell with it; a renderer that draws one buffer's own cell
    (the HTML heatmap's buffer columns) names it by the same rule."""
    if Status.ONLY_IN_A in statuses or Status.ONLY_IN_B in statuses:
        return Cell.MISSING  # a buffer absent from a run outweighs any value shown beside it
    if magnitude == "rounding":
        return Cell.ROUNDING
    if magnitude == "large" and max_ulp is not None and max_ulp <= rounding_ulp:
        return Cell.NAN_INF  # large through a NaN or infinity, not through its |A-B|
    if max_abs_delta is not None:
        return Cell.DELTA
    if magnitude == "large":
        return Cell.NAN_INF
    if n_diff is not None:
        return Cell.LENGTH
    # No element was compared: missing from a run, or known to differ by
    # digests only (a manifest holds no data).
    kinds = {_FACTLESS.get(s, Cell.DIFFERS) for s in statuses}
    return kinds.pop() if len(kinds) == 1 else Cell.DIFFERS


#: A timeline cell without element facts, by the statuses of its buffers.
_FACTLESS = {
    Status.LENGTH_MISMATCH: Cell.LENGTH,
    Status.MALFORMED: Cell.MALFORMED,
}


# --- a rerun ---------------------------------------------------------------------------------


class ReproductionKind(Member):
    """Whether the divergence of a rerun shows in every arm, at one place."""

    __slots__ = ()
    UNKNOWN: ClassVar[ReproductionKind]
    INTERMITTENT: ClassVar[ReproductionKind]
    SAME_PLACE: ClassVar[ReproductionKind]
    SAME_STEP: ClassVar[ReproductionKind]
    OTHER_STEPS: ClassVar[ReproductionKind]


ReproductionKind.UNKNOWN = ReproductionKind("unknown")  # one arm against arm 1
ReproductionKind.INTERMITTENT = ReproductionKind("intermittent")  # some arms matched arm 1
ReproductionKind.SAME_PLACE = ReproductionKind("same_place")  # every arm, same step and buffers
ReproductionKind.SAME_STEP = ReproductionKind("same_step")  # every arm, same step
ReproductionKind.OTHER_STEPS = ReproductionKind("other_steps")  # every arm, other steps


class Reproduction(Value):
    """How a rerun's divergence reproduces (``kind``) over ``others`` arms
    compared with arm 1, ``diverging`` of which diverge, first at ``steps``."""

    __slots__ = ("diverging", "kind", "others", "steps")

    def __init__(
        self, kind: ReproductionKind, diverging: int, others: int, steps: tuple[int, ...]
    ) -> None:
        self.kind = kind
        self.diverging = diverging
        self.others = others
        self.steps = steps


class OriginAgreement(Member):
    """Whether the diverging arms of a rerun share their first origin."""

    __slots__ = ()
    SAME: ClassVar[OriginAgreement]
    DIFFERS: ClassVar[OriginAgreement]
    NOT_EVERYWHERE: ClassVar[OriginAgreement]


OriginAgreement.SAME = OriginAgreement("same")  # one first origin in every diverging arm
OriginAgreement.DIFFERS = OriginAgreement("differs")  # arms' first origins differ
OriginAgreement.NOT_EVERYWHERE = OriginAgreement("not_everywhere")  # an arm has none


# --- a sweep ---------------------------------------------------------------------------------


class Unclassified(Member):
    """Why a run of a sweep is in no identity class (``model.sweep.UnclassifiedRun``)."""

    __slots__ = ()
    NO_PAIR: ClassVar[Unclassified]
    EVERY_PAIR_ERROR: ClassVar[Unclassified]
    PAIR_ERROR: ClassVar[Unclassified]


Unclassified.NO_PAIR = Unclassified("no_pair")  # in no pair of the sweep
Unclassified.EVERY_PAIR_ERROR = Unclassified("every_pair_error")  # every pair with it failed
# Its pair with another classified run ended in error (``UnclassifiedRun.failed``):
Unclassified.PAIR_ERROR = Unclassified("pair_error")


# --- notes --------------------------------------------------------------------------------


class NoteKind(Member):
    """What a note says (its fields, by kind, are in ``render.notes``)."""

    __slots__ = ()
    RAW_BYTES: ClassVar[NoteKind]
    DTYPE_UNSET: ClassVar[NoteKind]
    UNDECIDED: ClassVar[NoteKind]
    HEADER_DTYPE: ClassVar[NoteKind]
    RERECORD: ClassVar[NoteKind]
    NO_RECORDED_SCHEMA: ClassVar[NoteKind]
    MANIFEST_SCHEMAS_DIFFER: ClassVar[NoteKind]
    MANIFEST_DTYPES_DIFFER: ClassVar[NoteKind]
    MANIFEST_READ_AS: ClassVar[NoteKind]
    SWEEP_SCHEMA: ClassVar[NoteKind]
    LOG_UNUSABLE: ClassVar[NoteKind]
    LOG_LINES_IGNORED: ClassVar[NoteKind]
    LOG_DUMPS_CHANGED: ClassVar[NoteKind]
    LOG_DUMPS_COPIED: ClassVar[NoteKind]
    LOG_CONFLICT: ClassVar[NoteKind]
    LOG_BESIDE_FILE: ClassVar[NoteKind]
    LOG_HEADER_DISAGREES: ClassVar[NoteKind]
    LOG_OTHER_CHUNK_SIZE: ClassVar[NoteKind]
    TRACE_DATAFLOW: ClassVar[NoteKind]
    DATAFLOW_DIFFERS: ClassVar[NoteKind]
    DATAFLOW_UNUSABLE: ClassVar[NoteKind]
    SEQUENCE_UNUSABLE: ClassVar[NoteKind]
    SEQUENCE_LINES_IGNORED: ClassVar[NoteKind]
    IGNORED: ClassVar[NoteKind]


# how buffers were read (stages.verdict, stages.prepare)
NoteKind.IGNORED = NoteKind("ignored")  # n: buffers left out, patterns: the globs (--ignore)
NoteKind.RAW_BYTES = NoteKind("raw_bytes")  # names: buffers in no group compared as raw bytes
NoteKind.DTYPE_UNSET = NoteKind("dtype_unset")  # schema, unset: ((name, dtype read as), ...)
NoteKind.UNDECIDED = NoteKind(
    "undecided"
)  # n: buffers whose differing bits a tolerance could not judge
NoteKind.HEADER_DTYPE = NoteKind(
    "header_dtype"
)  # schema, buffers: ((name, the schema's, the file's), ...)
NoteKind.RERECORD = NoteKind("rerecord")  # step, sides: ((side, spec), ...), names
# the schema chosen (sources.schemas, sweep)
NoteKind.NO_RECORDED_SCHEMA = NoteKind("no_recorded_schema")  # spec, schema, sweep
NoteKind.MANIFEST_SCHEMAS_DIFFER = NoteKind(
    "manifest_schemas_differ"
)  # spec_a, spec_b, name_a, name_b
NoteKind.MANIFEST_DTYPES_DIFFER = NoteKind(
    "manifest_dtypes_differ"
)  # name, dtype_a, spec_a, dtype_b, spec_b, read_as
NoteKind.MANIFEST_READ_AS = NoteKind(
    "manifest_read_as"
)  # spec, given, recorded, chosen, buffers: ((name, recorded, read), ...)
NoteKind.SWEEP_SCHEMA = NoteKind(
    "sweep_schema"
)  # schema, whence, alone: ((schema, pairs), ...), recorded: ((spec, schema), ...)
# a recorder's digest log (sources.digestlog)
NoteKind.LOG_UNUSABLE = NoteKind("log_unusable")  # path, why
NoteKind.LOG_LINES_IGNORED = NoteKind("log_lines_ignored")  # path, lines: ("line N: why", ...)
NoteKind.LOG_DUMPS_CHANGED = NoteKind("log_dumps_changed")  # spec, files
NoteKind.LOG_DUMPS_COPIED = NoteKind("log_dumps_copied")  # spec, files
NoteKind.LOG_CONFLICT = NoteKind("log_conflict")  # path, files
NoteKind.LOG_BESIDE_FILE = NoteKind("log_beside_file")  # path, files
NoteKind.LOG_HEADER_DISAGREES = NoteKind("log_header_disagrees")  # path, files
NoteKind.LOG_OTHER_CHUNK_SIZE = NoteKind("log_other_chunk_size")  # path, n, chunk_size

# a tracer's files (sources.traced, sources.schemas)
NoteKind.TRACE_DATAFLOW = NoteKind("trace_dataflow")  # spec, file: read with the dataflow recorded
# owner, other, differ, only_owner, only_other
NoteKind.DATAFLOW_DIFFERS = NoteKind("dataflow_differs")
NoteKind.DATAFLOW_UNUSABLE = NoteKind("dataflow_unusable")  # path, why
NoteKind.SEQUENCE_UNUSABLE = NoteKind("sequence_unusable")  # path, why
NoteKind.SEQUENCE_LINES_IGNORED = NoteKind("sequence_lines_ignored")  # path, lines


class Note(Value):
    """A remark on how runs were read, as data: ``kind`` (a ``NoteKind``),
    ``warning`` (something disagrees; else a plain note) and ``fields``, the
    values its words are made of, as ``(name, value)`` pairs of plain data
    (``note["names"]`` reads one). Notes are equal when all of that is, so a
    remark several pairs share is said once."""

    __slots__ = ("fields", "kind", "warning")

    def __init__(
        self,
        kind: NoteKind,
        fields: tuple[tuple[str, Any], ...] = (),
        warning: bool = False,
    ) -> None:
        self.kind = kind
        self.fields = fields
        self.warning = warning

    @classmethod
    def of(cls, kind: NoteKind, *, warning: bool = False, **fields: Any) -> Note:
        """A note of ``kind`` with ``fields`` by name (lists become tuples)."""
        return cls(kind, tuple((k, _frozen(v)) for k, v in fields.items()), warning)

    def __getitem__(self, name: str) -> Any:
        for k, v in self.fields:
            if k == name:
                return v
        raise KeyError(name)

    def as_dict(self) -> dict[str, Any]:
        from .value import plain

        return {"kind": self.kind, "warning": self.warning, **{k: plain(v) for k, v in self.fields}}


def _frozen(value: Any) -> Any:
    """``value`` hashable: lists and tuples (nested) as tuples, dicts as their items."""
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, _frozen(v)) for k, v in value.items())
    return value


# --- the parallel ranks a checkpoint's names give ------------------------------------

#: The kinds of parallel rank (``parallel_ranks``), in the order names give them.
TENSOR, PIPELINE, EXPERT, DATA, MODEL = "tensor", "pipeline", "expert", "data", "model"


def parallel_ranks(name: str) -> tuple[tuple[str, int], ...]:
    """The parallel ranks the first part of a buffer's name (its file or
    folder in a training checkpoint) gives, as (kind, rank) pairs; () for
    none. Megatron-LM's ``mp_rank_<TT>[_<PPP>][_<EEE>]`` folders: tensor,
    pipeline, expert; DeepSpeed's ``mp_rank_<M>_model_states``: model;
    ``zero_pp_rank_<D>_mp_rank_<M>_optim_states``: data, model."""
    parts = name.split(".", 1)[0].split("_")
    digits = [p for p in parts if p.isascii() and p.isdigit()]
    if parts[:2] == ["mp", "rank"] and len(parts) > 2:
        rest = parts[2:]
        n = next((i for i, p in enumerate(rest) if not (p.isascii() and p.isdigit())), len(rest))
        if n == 0 or n > 3:
            return ()
        if n < len(rest):  # a DeepSpeed file: mp_rank_<M>_model_states
            return ((MODEL, int(rest[0])),) if n == 1 else ()
        return tuple(zip((TENSOR, PIPELINE, EXPERT), map(int, rest[:n]), strict=False))
    if parts[:3] == ["zero", "pp", "rank"] and len(digits) == 2 and parts[4:6] == ["mp", "rank"]:
        return ((DATA, int(digits[0])), (MODEL, int(digits[1])))
    return ()
