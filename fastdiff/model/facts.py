"""The facts fastdiff reports about a pair of buffers, each described once.

``FACTS`` is the one table of them. An entry (``Fact``) says, for one fact:

- ``name``: the field name: the attribute of ``ScanStats`` and
  ``BufferResult`` and the key in the JSON report;
- ``source``: where its value comes from. ``KERNEL``: every engine computes
  it over each piece of a scan, and the pieces' values are merged.
  ``DERIVED``: computed by ``derive(stats, context)`` from the merged
  kernel facts and the buffer's ``Context`` (its common length, kind of
  dtype, shape, named fields and their own stats, the rounding threshold;
  None where there is none, e.g. for ``NOTHING_DIFFERS``).
  ``READ``: read back from the files by the scan stage (the values at the
  first differing index). ``DIGEST``: set when chunk digests alone decide;
- ``merge`` (kernel facts): how the values of two consecutive pieces
  combine. ``SUM``; ``FIRST``: the earliest index, i.e. the first piece's
  unless it has none (-1); ``MAX``: the larger value (None: none), with the
  fact named ``pair`` (its index, if it has one) taken from the same piece,
  the earlier piece on ties; ``AT_MAX``: the index of a ``MAX`` fact, merged
  with it;
  ``HIST``: a histogram (a tuple of counts without trailing zeros), summed
  bin by bin; ``SCALE``: the scale rows of a float buffer (``scale_rows``:
  the first and last rows holding a finite differing pair, each with its
  largest |A-B| and largest |B| among them, and the largest difference in
  ULPs of its row's scale over the rows between), joined where one piece's
  last row continues in the next; ``RUNS``: the first ``LISTED`` maximal runs ``(start, stop)``
  of consecutive differing elements, ``ROWS``: the first ``LISTED``
  distinct row numbers; both join the last entry of one piece to the first
  of the next when they continue it, and keep their total count in the
  fact named ``pair`` and their true last entry (which may lie beyond the
  listed ones) in the fact named ``last``; ``AT_LIST``: such a count or last
  entry, merged with its list;
- ``index``: the value is an element index (or a tuple of them): a piece at
  element offset k shifts it by k, and "none" is -1 in a scan and None in a
  result;
- ``zero``: its value in a scan where nothing differs. A result where nothing
  differs holds counts (``SUM`` facts) as 0 and every other fact as None
  (``NOTHING_DIFFERS``);
- ``only``: a test of the ``Context``; where it fails the result holds None
  (``max_ulp`` only for floats, ``rows`` only for shapes of 2 or more
  dimensions);
- ``anatomy``: one of the facts that describe how a buffer differs (where,
  how much, in which fields): None where nothing differs, counts included,
  and written to a buffer's JSON object only when something in it differs,
  so reports of equal buffers stay as small as they were;
- ``json``: how its value is written to JSON (None: as it is); text
  renderers look facts up by name (``render.text``);
- ``result``: whether results and the JSON report hold it (False: a kernel
  intermediate, such as ``first_any``);
- ``store`` and ``width`` (kernel facts): the output array of the compiled
  engine that holds it and how many words it takes there: ``INT`` (int64
  words: counts, indices, lists, the histogram), ``DELTA`` (float64 for
  float dtypes, uint64 for integers), ``UINT`` (uint64) or ``REAL``
  (float64); ``SLOT`` gives its first index there, a module constant the
  compiled kernels see as a compile-time constant. A ``MAX`` fact is None
  when its index is -1, or, without an index, when its ``UINT`` word is
  ``NO_UINT`` (all ones: no ULP distance is that large).

Adding a fact is one entry here plus the code in each engine that computes
it (plus a text part if the text report shows it, and the fact in the naive
twin ``tests/naive.py``, whose whole result every engine must match). Say
every engine also counted subnormal differing pairs::

    Fact("n_subnormal", merge=SUM, zero=0)

The python and numpy engines pass ``n_subnormal=...`` to ``ScanStats``, the
numba kernels write ``out_i[_N_SUBNORMAL]`` with
``_N_SUBNORMAL = SLOT["n_subnormal"]``; merging, shifting, the result
field, the JSON key and the null/0 convention follow from the entry.
"""

from __future__ import annotations

import math

from .tolerance import DEFAULT_ROUNDING_ULP
from .value import Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

# sources
KERNEL = "kernel"
DERIVED = "derived"
READ = "read"
DIGEST = "digest"
# merges
SUM = "sum"
FIRST = "first"
MAX = "max"
AT_MAX = "at_max"
HIST = "hist"
SCALE = "scale"
RUNS = "runs"
ROWS = "rows"
AT_LIST = "at_list"
# stores of the compiled engine
INT = "int"
DELTA = "delta"
UINT = "uint"
REAL = "real"
STORES = (INT, DELTA, UINT, REAL)

#: How many runs (``ranges``) and rows a scan lists; it counts them all.
LISTED = 16
#: What a compiled kernel writes for "none" to a ``MAX`` fact of the ``UINT`` store
#: without an index (the largest ULP distance of two floats is below it).
NO_UINT = (1 << 64) - 1
#: Bins of ``ulp_log2_histogram``: bin k counts distances d with 2**k <= d < 2**(k+1).
HIST_BINS = 64
#: Words of ``scale_rows``: (mantissa bits, smallest normal exponent) of the
#: format, (row, largest |A-B|, largest |B|) of the first and of the last row
#: holding a finite differing pair, and the largest difference in ULPs of
#: the scale over the rows between them (-1: none).
SCALE_WORDS = 9


def ulp_at(s: float, p: int, emin: int) -> float:
    """The unit in the last place, in a float format of ``p`` mantissa bits and
    smallest normal exponent ``emin``, of a value of magnitude ``s`` (>= 0)."""
    if s > 0.0 and math.isfinite(s):
        e = math.frexp(s)[1] - 1  # s = m * 2**e, 1 <= m < 2
        if e < emin:
            e = emin
    else:
        e = emin  # zero: the smallest subnormal step
    return math.ldexp(1.0, e - p)


def scale_ulp(d: float, s: float, p: int, emin: int) -> float:
    """A difference ``d`` in units in the last place of a scale ``s``."""
    return d / ulp_at(s, p, emin)


def _scale_edges(v: tuple[Any, ...]) -> list[tuple[int, float, float]]:
    """The first and (when another) the last row of a ``scale_rows`` value."""
    first = (v[2], v[3], v[4])
    return [first] if v[5] == v[2] else [first, (v[5], v[6], v[7])]


def join_scale(x: tuple[Any, ...] | None, y: tuple[Any, ...] | None) -> tuple[Any, ...] | None:
    """The ``scale_rows`` of two consecutive pieces (x before y): a row that
    x ends and y begins is one row (its largest |A-B| and |B| over both);
    rows that are neither first nor last any more count in the inner
    maximum, in ULPs of their own scale."""
    if x is None:
        return y
    if y is None:
        return x
    p, emin = x[0], x[1]
    rows = _scale_edges(x)
    more = _scale_edges(y)
    if rows[-1][0] == more[0][0]:
        r, dx, sx = rows[-1]
        _, dy, sy = more.pop(0)
        rows[-1] = (r, max(dx, dy), max(sx, sy))
    rows += more
    inner = [v for v in (x[8], y[8]) if v is not None]
    inner += [scale_ulp(d, s, p, emin) for _, d, s in rows[1:-1]]
    return (p, emin, *rows[0], *rows[-1], max(inner) if inner else None)


def max_scale_ulp(v: tuple[Any, ...] | None) -> float | None:
    """The largest difference in ULPs of its row's scale of a ``scale_rows`` value."""
    if v is None:
        return None
    p, emin = v[0], v[1]
    found = [scale_ulp(d, s, p, emin) for _, d, s in _scale_edges(v)]
    if v[8] is not None:
        found.append(v[8])
    return max(found)


def json_number(value: Any) -> Any:
    """A number JSON can hold: non-finite floats as the strings "nan", "inf", "-inf"."""
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value):
            return "nan"
        return "inf" if value > 0 else "-inf"
    return value


def json_list(value: Any) -> Any:
    return None if value is None else list(value)


def json_pairs(value: Any) -> Any:
    return None if value is None else [list(p) for p in value]


class Context(Value):
    """What derived facts need to know about a buffer besides its kernel facts.

    ``n``: the elements of the common prefix; ``kind``: the dtype's kind
    ("float", "int", "uint"); ``shape``: the declared shape with -1 resolved
    (None: none declared); ``fields``: the named fields as ``(name, start,
    stop)`` in declared order, and ``field_stats`` the ``ScanStats`` of each;
    ``rounding_ulp``: the threshold of ``magnitude``.
    """

    __slots__ = ("field_stats", "fields", "kind", "n", "rounding_ulp", "shape")

    def __init__(
        self,
        n: int,
        kind: str,
        shape: tuple[int, ...] | None = None,
        fields: tuple[tuple[str, int, int], ...] = (),
        field_stats: tuple[ScanStats, ...] = (),
        rounding_ulp: int = DEFAULT_ROUNDING_ULP,
    ) -> None:
        self.n = n
        self.kind = kind
        self.shape = shape
        self.fields = fields
        self.field_stats = field_stats
        self.rounding_ulp = rounding_ulp

    @property
    def row_size(self) -> int:
        return row_size(self.shape)


def row_size(shape: tuple[int, ...] | None) -> int:
    """Elements per row (an index of the first axis) of a shape of 2 or more
    dimensions, else 0: no rows."""
    if shape is None or len(shape) < 2:
        return 0
    return math.prod(shape[1:])


class Fact:
    """One fact about a pair of buffers (see the module docstring)."""

    __slots__ = (
        "anatomy",
        "derive",
        "index",
        "json",
        "last",
        "merge",
        "name",
        "only",
        "pair",
        "result",
        "source",
        "store",
        "width",
        "zero",
    )

    def __init__(
        self,
        name: str,
        source: str = KERNEL,
        *,
        merge: str | None = None,
        pair: str | None = None,
        last: str | None = None,
        index: bool = False,
        zero: object = None,
        json: Callable[[Any], Any] | None = None,
        result: bool = True,
        store: str = INT,
        width: int = 1,
        only: Callable[[Context], bool] | None = None,
        derive: Callable[[ScanStats, Context | None], Any] | None = None,
        anatomy: bool = False,
    ) -> None:
        self.name = name
        self.source = source
        self.merge = merge
        self.pair = pair
        self.last = last
        self.index = index
        scalar_index = index and merge in (FIRST, AT_MAX)
        self.zero = -1 if scalar_index and source == KERNEL else zero
        self.json = json
        self.result = result
        self.store = store
        self.width = width
        self.only = only
        self.derive = derive
        self.anatomy = anatomy

    def __repr__(self) -> str:
        return f"Fact({self.name!r}, {self.source!r})"


# --- derived facts ----------------------------------------------------------------


def first_index(s: ScanStats, ctx: Context | None = None) -> int | None:
    """The first element beyond tolerance; where all are within, the first that differs."""
    first = s.first_diff if s.n_diff else s.first_any
    return first if first >= 0 else None


def unravel(index: int | None, shape: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """A flat element index as an index into ``shape`` (C order), torch style."""
    if index is None or shape is None:
        return None
    if not shape:
        return ()  # a 0-d tensor: its one element has the empty index
    out = []
    for dim in reversed(shape[1:]):
        index, at = divmod(index, dim)
        out.append(at)
    out.append(index)  # the first axis takes what is left
    return tuple(reversed(out))


def _shape(s: ScanStats, ctx: Context | None) -> tuple[int, ...] | None:
    return None if ctx is None else ctx.shape


def _first_nd(s: ScanStats, ctx: Context | None) -> tuple[int, ...] | None:
    return unravel(first_index(s), _shape(s, ctx))


def _max_nd(s: ScanStats, ctx: Context | None) -> tuple[int, ...] | None:
    index = s.max_abs_delta_index
    return unravel(index if index >= 0 else None, _shape(s, ctx))


def _diff_fraction(s: ScanStats, ctx: Context | None) -> float | None:
    return s.n_diff / ctx.n if ctx is not None and ctx.n else None


class FieldDiff(Value):
    """A named field of a buffer that holds a difference: its element range
    ``[start, stop)`` and what differs in it (beyond tolerance: ``n_diff``;
    ``first_index``, ``max_abs_delta`` and ``max_ulp`` as for a buffer)."""

    __slots__ = ("first_index", "max_abs_delta", "max_ulp", "n_diff", "name", "start", "stop")

    def __init__(
        self,
        name: str,
        start: int,
        stop: int,
        n_diff: int,
        first_index: int | None,
        max_abs_delta: float | int | None,
        max_ulp: int | None,
    ) -> None:
        self.name = name
        self.start = start
        self.stop = stop
        self.n_diff = n_diff
        self.first_index = first_index
        self.max_abs_delta = max_abs_delta
        self.max_ulp = max_ulp

    def json(self) -> dict[str, Any]:
        d = self.as_dict()
        d["max_abs_delta"] = json_number(self.max_abs_delta)
        return d


def _fields(s: ScanStats, ctx: Context | None) -> tuple[FieldDiff, ...] | None:
    if ctx is None or not ctx.fields:
        return None
    out = []
    stats = ctx.field_stats or (ScanStats(),) * len(ctx.fields)
    for (name, start, stop), fs in zip(ctx.fields, stats, strict=True):
        if fs.first_any < 0:
            continue  # nothing differs in it
        ulp = fs.max_ulp if ctx.kind == "float" else None
        out.append(FieldDiff(name, start, stop, fs.n_diff, first_index(fs), fs.max_abs_delta, ulp))
    return tuple(out)


def _outside_fields(s: ScanStats, ctx: Context | None) -> int | None:
    if ctx is None or not ctx.fields:
        return None
    return s.n_diff - sum(fs.n_diff for fs in ctx.field_stats)  # () when none differs


def _magnitude(s: ScanStats, ctx: Context | None) -> str | None:
    """Rounding-size: no NaN or infinity mismatch, and every difference at
    most ``rounding_ulp`` ULP apart, in its elements' own ULPs or in ULPs of
    its row's (1-D: the buffer's) scale, its largest |B| among the differing
    pairs (``_cancellation``); else large."""
    if ctx is None:
        return None
    if ctx.kind != "float" or s.n_nan_mismatch or s.n_inf_mismatch or s.max_ulp is None:
        return "large"
    if s.max_ulp <= ctx.rounding_ulp:
        return "rounding"
    return "rounding" if _cancellation(s, ctx) else "large"


def _cancellation(s: ScanStats, ctx: Context | None) -> bool | None:
    """Floats: whether the differences are rounding-size only against their
    scale: some elements further than ``rounding_ulp`` ULP apart in their own
    ULPs (values small against their row's largest |B|, as where terms of a
    sum cancel), but every difference within ``rounding_ulp`` ULP of that
    scale, with no NaN or infinity mismatch."""
    if ctx is None or ctx.kind != "float" or s.max_ulp is None:
        return None
    if s.n_nan_mismatch or s.n_inf_mismatch or s.max_ulp <= ctx.rounding_ulp:
        return False
    scaled = max_scale_ulp(s.scale_rows)
    return scaled is not None and scaled <= ctx.rounding_ulp


def _max_scale_ulp(s: ScanStats, ctx: Context | None) -> float | None:
    return max_scale_ulp(s.scale_rows)


def _is_float(ctx: Context) -> bool:
    return ctx.kind == "float"


def _has_rows(ctx: Context) -> bool:
    return ctx.row_size > 0


def _json_fields(value: Any) -> Any:
    return None if value is None else [f.json() for f in value]


#: Every fact, in the order of the JSON report's buffer objects.
FACTS: tuple[Fact, ...] = (
    Fact("n_diff", merge=SUM, zero=0),  # elements that differ beyond tolerance
    Fact("n_within_tolerance", merge=SUM, zero=0),  # elements that differ within it
    Fact("first_diff", merge=FIRST, index=True, result=False),  # first beyond tolerance
    Fact("first_any", merge=FIRST, index=True, result=False),  # first that differs at all
    Fact("first_index", DERIVED, derive=first_index),
    # the values and bit patterns (hex) of A and B at first_index; for a value
    # beside the tensors (dtype "value" or "label"), its value in each run,
    # equal or not (bytes as text, undecodable bytes as \x escapes)
    Fact("a", READ, json=json_number),
    Fact("b", READ, json=json_number),
    Fact("a_bits", READ),
    Fact("b_bits", READ),
    # the largest |A-B| over differing pairs where both are finite (float64 for
    # floats, an exact int for integers), and the first index where it occurs
    Fact("max_abs_delta", merge=MAX, pair="max_abs_delta_index", json=json_number, store=DELTA),
    Fact("max_abs_delta_index", merge=AT_MAX, index=True),
    Fact("n_nan_mismatch", merge=SUM, zero=0),  # differing pairs with a NaN (not forgiven)
    Fact("n_inf_mismatch", merge=SUM, zero=0),  # differing pairs with an inf and no NaN
    # the byte range [lo, hi) of the first chunk whose digests differ, when
    # only digests were compared (a manifest on one side)
    Fact("first_divergent_chunk", DIGEST, json=json_list),
    # --- the anatomy of a differing buffer (None where nothing differs) ---
    # the declared shape, -1 resolved over the common prefix, and the indices in it
    Fact("shape", DERIVED, derive=_shape, json=json_list, anatomy=True),
    Fact("first_index_nd", DERIVED, derive=_first_nd, json=json_list, anatomy=True),
    Fact("max_abs_delta_index_nd", DERIVED, derive=_max_nd, json=json_list, anatomy=True),
    Fact("diff_fraction", DERIVED, derive=_diff_fraction, anatomy=True),  # n_diff / common length
    # maximal runs [start, stop) of consecutive elements whose bits differ
    Fact(
        "ranges",
        merge=RUNS,
        pair="n_ranges",
        last="last_range",
        index=True,
        zero=(),
        json=json_pairs,
        width=2 * LISTED,
        anatomy=True,
    ),
    Fact("n_ranges", merge=AT_LIST, zero=0, anatomy=True),
    Fact("last_range", merge=AT_LIST, index=True, result=False, width=2, anatomy=True),
    # rows (first-axis indices) holding a differing element, for 2 or more dimensions;
    # absolute row numbers (the kernels are told the piece's origin), never shifted
    Fact(
        "rows",
        merge=ROWS,
        pair="n_rows",
        last="last_row",
        zero=(),
        json=json_list,
        width=LISTED,
        only=_has_rows,
        anatomy=True,
    ),
    Fact("n_rows", merge=AT_LIST, zero=0, only=_has_rows, anatomy=True),
    Fact("last_row", merge=AT_LIST, zero=-1, result=False, anatomy=True),
    # the named fields of the schema that hold a difference, and the rest
    Fact("fields", DERIVED, derive=_fields, json=_json_fields, anatomy=True),
    Fact("n_diff_outside_fields", DERIVED, derive=_outside_fields, anatomy=True),
    # the largest |A-B|/|B| over differing pairs, both finite and B != 0 (float64)
    Fact(
        "max_rel_delta",
        merge=MAX,
        pair="max_rel_delta_index",
        json=json_number,
        store=REAL,
        anatomy=True,
    ),
    Fact("max_rel_delta_index", merge=AT_MAX, index=True, anatomy=True),
    # floats: the largest distance in units in the last place over finite differing
    # pairs, and the log2 histogram of those distances (-0.0 vs +0.0, at 0, apart)
    Fact("max_ulp", merge=MAX, store=UINT, only=_is_float, anatomy=True),
    Fact(
        "ulp_log2_histogram",
        merge=HIST,
        zero=(),
        json=json_list,
        width=HIST_BINS,
        only=_is_float,
        anatomy=True,
    ),
    Fact("n_signed_zero", merge=SUM, zero=0, anatomy=True),  # differing pairs -0.0 against +0.0
    # floats: each row's (1-D: the buffer's) scale, its largest |B| among the finite
    # differing pairs, and the largest difference in ULPs of its row's scale
    Fact("scale_rows", merge=SCALE, store=REAL, width=SCALE_WORDS, only=_is_float, result=False),
    Fact(
        "max_ulp_of_scale",
        DERIVED,
        derive=_max_scale_ulp,
        json=json_number,
        only=_is_float,
        anatomy=True,
    ),
    Fact("magnitude", DERIVED, derive=_magnitude, anatomy=True),  # "rounding" or "large"
    # rounding-size only against the scale (elements near zero, where sums cancel)
    Fact("cancellation", DERIVED, derive=_cancellation, anatomy=True),
)

KERNEL_FACTS = tuple(f for f in FACTS if f.source == KERNEL)
RESULT_FACTS = tuple(f for f in FACTS if f.result)
RESULT_NAMES = tuple(f.name for f in RESULT_FACTS)
BY_NAME: Mapping[str, Fact] = {f.name: f for f in FACTS}

#: The element counts: 0 wherever elements were compared, None where not.
COUNT_FIELDS = tuple(f.name for f in RESULT_FACTS if f.merge == SUM and not f.anatomy)
#: The anatomy of a differing buffer: None where nothing differs, and in the JSON
#: only for a buffer in which something differs (its first_index is set).
ANATOMY_NAMES = tuple(f.name for f in RESULT_FACTS if f.anatomy)


def _slots() -> tuple[dict[str, int], dict[str, int]]:
    slots: dict[str, int] = {}
    used = dict.fromkeys(STORES, 0)
    for f in KERNEL_FACTS:
        slots[f.name] = used[f.store]
        used[f.store] += f.width
    return slots, used


#: Each kernel fact's first index in its store (the compiled engine's output arrays).
SLOT: Mapping[str, int]
#: How many words each store needs.
STORE_SIZE: Mapping[str, int]
SLOT, STORE_SIZE = _slots()

# How ``ScanStats.from_slots`` reads each kernel fact back (worked out once).
_WORD, _STORE, _MAX_AT, _PAIR, _HIST, _RUNS, _ROWS, _SCALE = (
    "word",
    "store",
    "max_at",
    "pair",
    "hist",
    "runs",
    "rows",
    "scale",
)


def _decode_plan() -> tuple[tuple[str, str, int, Any], ...]:
    plan = []
    for f in KERNEL_FACTS:
        at = SLOT[f.name]
        if f.merge == HIST:
            plan.append((f.name, _HIST, at, None))
        elif f.merge == SCALE:
            plan.append((f.name, _SCALE, at, f.store))
        elif f.merge in (RUNS, ROWS):
            plan.append((f.name, _RUNS if f.merge == RUNS else _ROWS, at, SLOT[f.pair or ""]))
        elif f.width == 2:  # the last run, with the count of runs
            runs = next(g for g in KERNEL_FACTS if g.last == f.name)
            plan.append((f.name, _PAIR, at, SLOT[runs.pair or ""]))
        elif f.merge == MAX and f.pair is not None:
            plan.append((f.name, _MAX_AT, at, (f.store, SLOT[f.pair])))
        elif f.store != INT:
            plan.append((f.name, _STORE, at, f.store))
        else:
            plan.append((f.name, _WORD, at, None))
    return tuple(plan)


_DECODE = _decode_plan()


def layout_fingerprint() -> int:
    """A number that changes whenever a kernel fact moves to another slot (the
    same in every process, unlike ``hash``): compiled kernels write it beside
    their facts, so one loaded from a stale disk cache is caught."""
    text = ";".join(f"{f.store}:{SLOT[f.name]}:{f.width}:{f.name}" for f in KERNEL_FACTS)
    text += f";{LISTED};{HIST_BINS}"
    value = 0
    for ch in text:
        value = (value * 131 + ord(ch)) % ((1 << 61) - 1)
    return value


def _shift(value: Any, offset: int) -> Any:
    """An index, a pair of them or a tuple of pairs, moved by ``offset`` (-1 and None stay)."""
    if value is None:
        return None
    if isinstance(value, int):
        return value + offset if value >= 0 else value
    return tuple(_shift(v, offset) for v in value)


def _sum_hist(x: tuple[int, ...], y: tuple[int, ...]) -> tuple[int, ...]:
    if len(x) < len(y):
        x, y = y, x
    return tuple(a + b for a, b in zip(x, y, strict=False)) + x[len(y) :]


def _join_lists(f: Fact, x: ScanStats, y: ScanStats) -> tuple[tuple[Any, ...], int, Any]:
    """(listed, count, last) of a ``RUNS`` or ``ROWS`` fact over x then y."""
    assert f.pair is not None and f.last is not None
    xs, xn, xl = getattr(x, f.name), getattr(x, f.pair), getattr(x, f.last)
    ys, yn, yl = getattr(y, f.name), getattr(y, f.pair), getattr(y, f.last)
    if not yn:
        return xs, xn, xl
    if not xn:
        return ys, yn, yl
    if f.merge == RUNS:
        join = xl[1] == ys[0][0]  # x's last run ends where y's first begins
        if join:
            listed = (*xs[:-1], (xs[-1][0], ys[0][1]), *ys[1:]) if xn <= LISTED else xs
            last = (xl[0], yl[1]) if yn == 1 else yl
        else:
            listed, last = xs + ys, yl
    else:
        join = xl == ys[0]  # the same row, seen by both
        listed = xs + (ys[1:] if join else ys) if xn < LISTED else xs
        last = yl
    return listed[:LISTED], xn + yn - join, last


class ScanStats(Value):
    """What one scan found: the kernel facts, by name. Indices are element
    indices, -1 for none; ``max_abs_delta`` is None when no differing pair is
    finite on both sides. Facts not given are their ``zero``.
    """

    __slots__ = tuple(f.name for f in KERNEL_FACTS)
    _fields = __slots__

    def __init__(self, **values: Any) -> None:
        for f in KERNEL_FACTS:
            setattr(self, f.name, values.pop(f.name, f.zero))
        if values:
            raise TypeError(f"ScanStats: no such kernel fact: {', '.join(values)}")

    @classmethod
    def from_slots(cls, stores: Mapping[str, Any]) -> ScanStats:
        """The stats a compiled kernel wrote to its output arrays (by ``SLOT``),
        given by store."""
        out = cls.__new__(cls)
        words = stores[INT][: STORE_SIZE[INT]].tolist()
        for name, how, at, other in _DECODE:
            if how is _WORD:
                value: Any = words[at]
            elif how is _STORE:  # a word of another store; NO_UINT is None in UINT's
                value = stores[other][at].item()
                if other == UINT and value == NO_UINT:
                    value = None
            elif how is _MAX_AT:  # None when its index is -1
                value = stores[other[0]][at].item() if words[other[1]] >= 0 else None
            elif how is _PAIR:
                value = (words[at], words[at + 1]) if words[other] else None
            elif how is _HIST:
                value = tuple(words[at : at + HIST_BINS])
                top = len(value)
                while top and not value[top - 1]:
                    top -= 1
                value = value[:top]
            elif how is _SCALE:  # None when it has no first row
                w = stores[other][at : at + SCALE_WORDS].tolist()
                if w[2] < 0:
                    value = None
                else:
                    p, emin, r1, r2 = int(w[0]), int(w[1]), int(w[2]), int(w[5])
                    value = (p, emin, r1, w[3], w[4], r2, w[6], w[7], w[8] if w[8] >= 0 else None)
            elif how is _RUNS:
                n = min(words[other], LISTED)
                pairs = words[at : at + 2 * n]
                value = tuple(zip(pairs[::2], pairs[1::2], strict=True))
            else:  # _ROWS
                value = tuple(words[at : at + min(words[other], LISTED)])
            setattr(out, name, value)
        return out

    def shifted(self, offset: int) -> ScanStats:
        """The same stats with every index moved by ``offset`` elements."""
        out = ScanStats.__new__(ScanStats)
        for f in KERNEL_FACTS:
            value = getattr(self, f.name)
            setattr(out, f.name, _shift(value, offset) if f.index else value)
        return out

    def merged(self, later: ScanStats) -> ScanStats:
        """Combine with the stats of a range that comes after this one."""
        out = ScanStats.__new__(ScanStats)
        for f in KERNEL_FACTS:
            x, y = getattr(self, f.name), getattr(later, f.name)
            if f.merge == SUM:
                setattr(out, f.name, x + y)
            elif f.merge == FIRST:
                setattr(out, f.name, x if x >= 0 else y)
            elif f.merge == MAX:
                winner = later if y is not None and (x is None or y > x) else self
                setattr(out, f.name, getattr(winner, f.name))
                if f.pair is not None:
                    setattr(out, f.pair, getattr(winner, f.pair))
            elif f.merge == HIST:
                setattr(out, f.name, _sum_hist(x, y))
            elif f.merge == SCALE:
                setattr(out, f.name, join_scale(x, y))
            elif f.merge in (RUNS, ROWS):
                assert f.pair is not None and f.last is not None
                listed, count, last = _join_lists(f, self, later)
                setattr(out, f.name, listed)
                setattr(out, f.pair, count)
                setattr(out, f.last, last)
            elif f.merge not in (AT_MAX, AT_LIST):  # those: set with their MAX or list
                raise AssertionError(f"fact {f.name}: unknown merge {f.merge!r}")
        return out


def result_facts(stats: ScanStats, context: Context | None = None, **read: Any) -> tuple[Any, ...]:
    """A scan's facts as a result holds them (``RESULT_NAMES`` order): kernel
    facts with -1 as None, derived ones computed with ``context``, ``read``
    ones as given. Where nothing differs, every fact but the counts is None."""
    out = []
    differs = stats.first_any >= 0
    for f in RESULT_FACTS:
        if f.source == KERNEL:
            value = getattr(stats, f.name)
            if f.merge != SUM or f.anatomy:
                applies = f.only is None or (context is not None and f.only(context))
                if not (differs and applies) or (f.index and value == -1):
                    value = None
            out.append(value)
        elif f.source == DERIVED:
            assert f.derive is not None
            out.append(f.derive(stats, context) if differs else None)
        else:
            out.append(read.pop(f.name, None))
    if read:
        raise TypeError(f"not a fact read back or given: {', '.join(read)}")
    return tuple(out)


#: A result's facts where elements were compared and nothing differs.
NOTHING_DIFFERS = result_facts(ScanStats())
#: A result's facts where nothing was compared.
UNKNOWN: tuple[None, ...] = (None,) * len(RESULT_FACTS)


_POSITION = {name: i for i, name in enumerate(RESULT_NAMES)}


def named_facts(values: dict[str, Any]) -> tuple[Any, ...]:
    """Result facts from keyword values (the others None). Raises TypeError
    for a name that is no result fact."""
    facts = list(UNKNOWN)
    for name, value in values.items():
        if name not in _POSITION:
            raise TypeError(f"no such fact: {name!r}")
        facts[_POSITION[name]] = value
    if facts == _NOTHING_DIFFERS:
        return NOTHING_DIFFERS  # shared: most buffers are equal
    return UNKNOWN if facts == _UNKNOWN else tuple(facts)


_NOTHING_DIFFERS, _UNKNOWN = list(NOTHING_DIFFERS), list(UNKNOWN)
