"""The facts fastdiff reports about a pair of buffers, each described once.

``FACTS`` is the one table of them. An entry (``Fact``) says, for one fact:

- ``name``: the field name: the attribute of ``ScanStats`` and
  ``BufferResult`` and the key in the JSON report;
- ``source``: where its value comes from. ``KERNEL``: every engine computes
  it over each piece of a scan, and the pieces' values are merged.
  ``DERIVED``: computed from the merged kernel facts by ``derive`` (a
  fact that also needs the buffer's length, dtype or shape, such as a
  fraction of differing elements, gets them as a second argument, added
  to ``result_facts`` with the first such fact).
  ``READ``: read back from the files by the scan stage (the values at the
  first differing index). ``DIGEST``: set when chunk digests alone decide;
- ``merge`` (kernel facts): how the values of two consecutive pieces
  combine. ``SUM``; ``FIRST``: the earliest index, i.e. the first piece's
  unless it has none (-1); ``MAX``: the larger value (None: none), with the
  fact named ``pair`` (its index) taken from the same piece, the earlier
  piece on ties; ``AT_MAX``: the index of a ``MAX`` fact, merged with it;
- ``index``: the value is an element index: a piece at element offset k
  shifts it by k, and "none" is -1 in a scan and None in a result;
- ``zero``: its value in a scan where nothing differs (a result holds it
  with -1 as None: counts 0, the rest None; ``NOTHING_DIFFERS``);
- ``json``: how its value is written to JSON (None: as it is); text
  renderers look facts up by name (``render.text``);
- ``result``: whether results and the JSON report hold it (False: a kernel
  intermediate, such as ``first_any``);
- ``store`` (kernel facts): the output array of the compiled engine that
  holds it: ``INT`` (int64 words) or ``DELTA`` (float64 for float dtypes,
  uint64 for integers); ``SLOT`` gives its index there, a module constant
  the compiled kernels see as a compile-time constant.

Adding a fact is one entry here plus the code in each engine that computes
it (plus a text part if the text report shows it, and the fact in the naive
twin ``tests/naive.py``, whose whole result every engine must match). Say
every engine also counted pairs of -0.0 against +0.0::

    Fact("n_signed_zero", merge=SUM, zero=0)

The python and numpy engines pass ``n_signed_zero=...`` to ``ScanStats``, the
numba kernels write ``out_i[_N_SIGNED_ZERO]`` with
``_N_SIGNED_ZERO = SLOT["n_signed_zero"]``; merging, shifting, the result
field, the JSON key and the null/0 convention follow from the entry. Facts
of other shapes fit the same way with their own merge and store kinds: a
histogram merges by elementwise sum (its own array), a list of ranges by
joining the last range of one piece to the first of the next (with its
count as ``pair``, shifted as indices); their values in ``ScanStats`` may be
tuples, and the compiled engine gives each such fact an array of its own.
"""

from __future__ import annotations

import math

from ..record import Record

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
# stores of the compiled engine
INT = "int"
DELTA = "delta"


def json_number(value: Any) -> Any:
    """A number JSON can hold: non-finite floats as the strings "nan", "inf", "-inf"."""
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value):
            return "nan"
        return "inf" if value > 0 else "-inf"
    return value


def json_list(value: Any) -> Any:
    return None if value is None else list(value)


class Fact:
    """One fact about a pair of buffers (see the module docstring)."""

    __slots__ = (
        "derive",
        "index",
        "json",
        "merge",
        "name",
        "pair",
        "result",
        "source",
        "store",
        "zero",
    )

    def __init__(
        self,
        name: str,
        source: str = KERNEL,
        *,
        merge: str | None = None,
        pair: str | None = None,
        index: bool = False,
        zero: object = None,
        json: Callable[[Any], Any] | None = None,
        result: bool = True,
        store: str = INT,
        derive: Callable[[ScanStats], Any] | None = None,
    ) -> None:
        self.name = name
        self.source = source
        self.merge = merge
        self.pair = pair
        self.index = index
        self.zero = -1 if index and source == KERNEL else zero
        self.json = json
        self.result = result
        self.store = store
        self.derive = derive

    def __repr__(self) -> str:
        return f"Fact({self.name!r}, {self.source!r})"


def first_index(s: ScanStats) -> int | None:
    """The first element beyond tolerance; where all are within, the first that differs."""
    first = s.first_diff if s.n_diff else s.first_any
    return first if first >= 0 else None


#: Every fact, in the order of the JSON report's buffer objects.
FACTS: tuple[Fact, ...] = (
    Fact("n_diff", merge=SUM, zero=0),  # elements that differ beyond tolerance
    Fact("n_within_tolerance", merge=SUM, zero=0),  # elements that differ within it
    Fact("first_diff", merge=FIRST, index=True, result=False),  # first beyond tolerance
    Fact("first_any", merge=FIRST, index=True, result=False),  # first that differs at all
    Fact("first_index", DERIVED, derive=first_index),
    # the values and bit patterns (hex) of A and B at first_index
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
)

KERNEL_FACTS = tuple(f for f in FACTS if f.source == KERNEL)
RESULT_FACTS = tuple(f for f in FACTS if f.result)
RESULT_NAMES = tuple(f.name for f in RESULT_FACTS)
BY_NAME: Mapping[str, Fact] = {f.name: f for f in FACTS}

#: The element counts: 0 wherever elements were compared, None where not.
COUNT_FIELDS = tuple(f.name for f in RESULT_FACTS if f.merge == SUM)


def _slots() -> dict[str, int]:
    slots: dict[str, int] = {}
    used: dict[str, int] = {}
    for f in KERNEL_FACTS:
        slots[f.name] = used.get(f.store, 0)
        used[f.store] = slots[f.name] + 1
    return slots


#: Each kernel fact's index in its store (the compiled engine's output arrays).
SLOT: Mapping[str, int] = _slots()
#: How many words each store needs.
STORE_SIZE: Mapping[str, int] = {
    store: sum(f.store == store for f in KERNEL_FACTS) for store in (INT, DELTA)
}


def layout_fingerprint() -> int:
    """A number that changes whenever a kernel fact moves to another slot (the
    same in every process, unlike ``hash``): compiled kernels write it beside
    their facts, so one loaded from a stale disk cache is caught."""
    text = ";".join(f"{f.store}:{SLOT[f.name]}:{f.name}" for f in KERNEL_FACTS)
    value = 0
    for ch in text:
        value = (value * 131 + ord(ch)) % ((1 << 61) - 1)
    return value


class ScanStats(Record):
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
    def from_slots(cls, words: Any, delta: Any) -> ScanStats:
        """The stats a compiled kernel wrote to its output arrays (by ``SLOT``)."""
        out = cls.__new__(cls)
        for f in KERNEL_FACTS:
            value = words[SLOT[f.name]] if f.store == INT else delta[SLOT[f.name]]
            setattr(out, f.name, value.item())
        for f in KERNEL_FACTS:
            if f.merge == MAX and f.pair is not None and getattr(out, f.pair) < 0:
                setattr(out, f.name, None)
        return out

    def shifted(self, offset: int) -> ScanStats:
        """The same stats with every index moved by ``offset`` elements."""
        out = ScanStats.__new__(ScanStats)
        for f in KERNEL_FACTS:
            value = getattr(self, f.name)
            if f.index and value >= 0:
                value += offset
            setattr(out, f.name, value)
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
            elif f.merge != AT_MAX:  # AT_MAX: set with its MAX
                raise AssertionError(f"fact {f.name}: unknown merge {f.merge!r}")
        return out


def result_facts(stats: ScanStats, **read: Any) -> tuple[Any, ...]:
    """A scan's facts as a result holds them (``RESULT_NAMES`` order): kernel
    facts with -1 as None, derived ones computed, ``read`` ones as given."""
    out = []
    for f in RESULT_FACTS:
        if f.source == KERNEL:
            value = getattr(stats, f.name)
            out.append(None if f.index and value < 0 else value)
        elif f.source == DERIVED:
            assert f.derive is not None
            out.append(f.derive(stats))
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
