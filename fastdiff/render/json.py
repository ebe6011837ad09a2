"""The JSON report: a pure function of a Report.

``render_json`` writes the contract users' scripts rely on (strict RFC 8259
JSON: non-finite numbers become the strings "nan", "inf", "-inf"; integers
stay exact; every string valid UTF-8, see ``textkit.escape``). A buffer's
object holds its identity and then every fact of ``model.facts.FACTS``,
in the table's order, converted as the table says; the anatomy facts only
where something in the buffer differs.

Layout: an indented top-level object whose long lists (steps, timeline,
buffers, ...) hold one compact object per line, so a report of 68,000 buffers is written
by the C encoder, line by line, and still reads well and diffs well.
"""

from __future__ import annotations

from itertools import islice

from .hints import buffer_message, group_hint
from .notes import note_json

try:  # CPython's C encoder, as the json package uses it (see _c_dumps)
    from _json import encode_basestring_ascii as _encode_str
    from _json import make_encoder as _make_encoder
except ImportError:  # pragma: no cover (another Python)
    _encode_str = _make_encoder = None  # type: ignore[assignment]

from ..model.facts import NOTHING_DIFFERS, RESULT_FACTS, UNKNOWN, json_number
from ..textkit.escape import json_text, path_record, put_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from ..model.results import BufferResult, Origin, RankReport, Report, Structure

JSON_SCHEMA_VERSION = 1

__all__ = [
    "JSON_SCHEMA_VERSION",
    "buffer_dict",
    "iter_json",
    "json_number",
    "origin_dict",
    "rank_dict",
    "render_json",
    "report_dict",
    "structure_dict",
]

_FACTS = tuple((f.name, f.json, f.anatomy) for f in RESULT_FACTS)
_FIRST_INDEX = [f.name for f in RESULT_FACTS].index("first_index")


def _facts_dict(facts: tuple[Any, ...]) -> dict[str, Any]:
    """A result's facts as JSON values, by name, in ``FACTS`` order; the
    anatomy facts only for a buffer in which something differs."""
    d: dict[str, Any] = {}
    differs = facts[_FIRST_INDEX] is not None
    for (name, to_json, anatomy), value in zip(_FACTS, facts, strict=True):
        if anatomy and not differs:
            continue
        if value is not None:
            if to_json is not None:
                value = to_json(value)
            elif isinstance(value, str):
                value = json_text(value)
        d[name] = value
    return d


#: The JSON of the facts most buffers share (the tuples are kept alive by
#: ``model.facts``, so their ids stay theirs).
_SHARED = {id(facts): _facts_dict(facts) for facts in (NOTHING_DIFFERS, UNKNOWN)}


#: The dtypes of values beside the tensors (``sources.buffers.Value``).
_VALUE_KINDS = frozenset({"value", "label"})


def _plain_json(value: Any) -> Any:
    """A value beside the tensors as JSON: numbers (non-finite ones as
    strings), booleans, null; a string as valid UTF-8 text; bytes as text,
    those that are not UTF-8 as ``\\x`` escapes."""
    if isinstance(value, bytes):
        return json_text(value.decode("utf-8", "backslashreplace"))
    if isinstance(value, str):
        return json_text(value)
    return json_number(value)


def buffer_dict(b: BufferResult) -> dict[str, Any]:
    """A buffer's JSON object: identity (its ``rank`` in a run of several),
    status, role (where the schema declares its inputs), facts (in ``FACTS``
    order), paths, message."""
    d: dict[str, Any] = {"step": b.step} if b.rank is None else {"rank": b.rank, "step": b.step}
    put_text(d, "name", b.name)
    d["group"] = json_text(b.group)
    d["dtype"] = json_text(b.dtype)
    d["status"] = b.status
    role = b.role
    if role is not None:
        d["role"] = role.kind
        d["inputs"] = [json_text(n) for n in role.inputs]
        d["differing_inputs"] = [json_text(n) for n in role.differing_inputs]
        d["undumped_inputs"] = [json_text(n) for n in role.undumped_inputs]
        d["prev_step"] = role.prev_step
    d["n_elements_a"] = b.n_elements_a
    d["n_elements_b"] = b.n_elements_b
    if b.status == "malformed":
        d["size_a"] = b.size_a
        d["size_b"] = b.size_b
    shared = _SHARED.get(id(b.facts))
    d.update(_facts_dict(b.facts) if shared is None else shared)
    if b.dtype in _VALUE_KINDS:  # a value beside the tensors: both values, as JSON holds them
        d["a"], d["b"] = _plain_json(b.a), _plain_json(b.b)
    put_text(d, "path_a", b.path_a)
    put_text(d, "path_b", b.path_b)
    message = buffer_message(b)
    d["message"] = None if message is None else json_text(message)
    if b.change is not None:
        d["change"] = b.change.as_dict()
    return d


def origin_dict(o: Origin) -> dict[str, Any]:
    d: dict[str, Any] = {} if o.rank is None else {"rank": o.rank}
    d["step"] = o.step
    put_text(d, "name", o.name)
    d["group"] = json_text(o.group)
    return d


def structure_dict(s: Structure) -> dict[str, Any]:
    """How two traces' sequences compare: ``parted``, then where (nulls when
    they do not part), with the ``rank`` first in a run of several."""
    d: dict[str, Any] = {} if s.rank is None else {"rank": s.rank}
    d["parted"] = s.parted
    d["step"] = s.step
    for key in ("after", "a", "b", "a_record", "b_record"):
        put_text(d, key, getattr(s, key))
    return d


def rank_dict(r: RankReport) -> dict[str, Any]:
    """One rank's verdict, first divergent step and groups, and origins (null
    where the schema declares no inputs, as the top level has none)."""
    rep = r.report
    return {
        "rank": r.rank,
        "verdict": rep.verdict,
        "first_divergent_step": rep.first_divergent_step,
        "first_divergent_groups": [json_text(k) for k in rep.first_divergent_groups],
        "origins": None if rep.origins is None else [origin_dict(o) for o in rep.origins],
    }


#: ``selection.buffers``: what the list ``buffers`` holds.
ALL_BUFFERS, FIRST_DIVERGENT_STEP = "all", "first_divergent_step"


def selection_dict(report: Report, first: bool = False) -> dict[str, Any]:
    """What was compared (``steps``: half-open ``[start, stop)`` spans, stop
    null for no end; ``names``: globs; null: every one) and what the list
    ``buffers`` holds (``first``: the first divergent step's buffers only)."""
    sel = report.selection
    steps = None if sel is None or sel.steps is None else [list(s) for s in sel.steps]
    names = None if sel is None or sel.names is None else [json_text(n) for n in sel.names]
    return {
        "steps": steps,
        "names": names,
        "buffers": FIRST_DIVERGENT_STEP if first else ALL_BUFFERS,
    }


def first_step_buffers(report: Report) -> Iterator[BufferResult]:
    """The buffers of the first divergent step (of each rank's own, for runs
    of several ranks): none without a divergence."""
    if report.ranks is not None:
        firsts = {rr.rank: rr.report.first_divergent_step for rr in report.ranks}
        return (b for b in report.buffers if b.step == firsts.get(b.rank, -1))
    step = report.first_divergent_step
    return (b for b in report.buffers if b.step == step)


def _report_items(report: Report, first: bool = False) -> Iterator[tuple[str, Any, bool]]:
    """(key, value, is a list of records) of the report's object, in order;
    the lists come as iterators, so no caller holds them all at once."""
    head: dict[str, Any] = {"schema_version": JSON_SCHEMA_VERSION}
    put_text(head, "run_a", report.run_a)
    put_text(head, "run_b", report.run_b)
    for k, v in head.items():
        yield k, v, False
    yield "schema", json_text(report.schema), False
    if first or report.selection is not None:  # else the object is as it always was
        yield "selection", selection_dict(report, first), False
    yield "notes", [json_text(note_json(n)) for n in report.notes], False
    yield "verdict", report.verdict, False
    yield "first_divergent_step", report.first_divergent_step, False
    yield "first_divergent_groups", [json_text(k) for k in report.first_divergent_groups], False
    if report.origins is not None:  # the schema declares inputs
        yield "origins", [origin_dict(o) for o in report.origins], False
    if report.structure is not None:  # two traces
        yield "structure", structure_dict(report.structure), False
    if report.born is not None:  # declared inputs, and a divergence
        yield "born", report.born.as_dict(), False
    if report.rank_pattern is not None:  # ranks, one of which diverged, with declared inputs
        yield "rank_pattern", report.rank_pattern.as_dict(), False
    if report.ranks is not None:  # a run of several ranks
        yield "ranks", map(rank_dict, report.ranks), True
    groups = (
        {
            "key": json_text(g.key),
            "title": json_text(g.title),
            "status": g.status,
            "diverged": [json_text(n) for n in g.diverged],
            "hint": json_text(group_hint(g)),
            "magnitude": g.magnitude,
            "cause": None if g.cause is None else g.cause.as_dict(),
        }
        for g in report.groups
    )
    yield "groups", groups, True
    steps = (
        {
            "step": s.step,
            "counts": dict(s.counts),
            "diverged_groups": [json_text(k) for k in s.diverged_groups],
        }
        for s in report.steps
    )
    yield "steps", steps, True
    timeline = (
        {
            "step": r.step,
            "group": json_text(r.group),
            "n_buffers": r.n_buffers,
            "n_diff": r.n_diff,
            "max_abs_delta": json_number(r.max_abs_delta),
            "max_ulp": r.max_ulp,
            "magnitude": r.magnitude,
            "cell": r.cell,
        }
        for r in report.timeline
    )
    yield "timeline", timeline, True
    listed = first_step_buffers(report) if first else report.buffers
    yield "buffers", map(buffer_dict, listed), True
    yield "skipped", (path_record(s.path, "reason", s.reason) for s in report.skipped), True
    yield "errors", (path_record(e.path, "message", e.message) for e in report.errors), True
    yield "tolerance", {k: json_number(v) for k, v in report.tolerance.items()}, False
    yield "work", report.work.as_dict(), False


def report_dict(report: Report, first: bool = False) -> dict[str, Any]:
    """The JSON report as a dict (``first``: as ``render_json``'s)."""
    return {k: list(v) if rows else v for k, v, rows in _report_items(report, first)}


def _not_json(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _c_dumps(value: Any) -> str:
    """``json.dumps(value, allow_nan=False)`` without importing the json
    package, whose decoder and encoder import ``re`` (5 ms of a 25 ms small
    comparison): the same C encoder json.dumps uses, set up as it sets it up."""
    encode = _make_encoder({}, _not_json, _encode_str, None, ": ", ", ", False, False, False)
    return "".join(encode(value, 0))


def _json_dumps(value: Any) -> str:
    import json

    return json.dumps(value, allow_nan=False)


#: A value and what json.dumps makes of it: the C encoder is used only when
#: it gives exactly that (its signature is CPython's own, not a promise).
_PROBE = ({"a": [1, -2.5, 1e300, '\u00e9\n"', None, True, 2**70, {}]}, None)
_PROBE_JSON = (
    '[{"a": [1, -2.5, 1e+300, "\\u00e9\\n\\"", null, true, 1180591620717411303424, {}]}, null]'
)


def _choose_dumps() -> Callable[[Any], str]:
    try:
        if _c_dumps(_PROBE) == _PROBE_JSON:
            return _c_dumps
    except Exception:  # another signature, or no _json: the json package
        pass
    return _json_dumps


_dumps = _choose_dumps()


#: Records encoded per call of the encoder (bounds the dicts alive at once).
_BATCH = 512


def _encoded(rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    """Each record as compact JSON. A batch of records is encoded in one call
    (setting the encoder up costs about as much as encoding a small record)
    and cut at ``}, {``, where each record meets the next. The cut is right
    when those are the only places it occurs, i.e. when the parts number
    the records; otherwise (a string, or a list of objects in a record,
    holding ``}, {``) the batch is encoded record by record."""
    while batch := list(islice(rows, _BATCH)):
        parts = _dumps(batch)[1:-1].split("}, {")
        if len(parts) != len(batch):
            yield from map(_dumps, batch)
            continue
        last = len(parts) - 1
        for i, part in enumerate(parts):
            yield ("{" if i else "") + part + ("}" if i < last else "")


def iter_json(report: Report, indent: int = 2, first: bool = False) -> Iterator[str]:
    """The lines of ``render_json(report, indent, first)``, each ending in a
    newline: write them as they come to stream a large report."""
    pad = " " * indent
    items = list(_report_items(report, first))
    yield "{\n"
    for i, (key, value, rows) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        name = _dumps(key)
        if not rows:
            yield f"{pad}{name}: {_dumps(value)}{comma}\n"
            continue
        first = True
        for row in _encoded(value):
            yield (f"{pad}{name}: [\n" if first else ",\n") + f"{pad}{pad}{row}"
            first = False
        yield f"{pad}{name}: []{comma}\n" if first else f"\n{pad}]{comma}\n"
    yield "}\n"


def render_json(report: Report, indent: int | None = 2, first: bool = False) -> str:
    """The JSON report: with ``indent``, one top-level key and one record of
    each list per line; with None, all on one line. ``first``: ``buffers``
    holds the first divergent step's buffers only (``selection.buffers``
    says so); every other field is the whole report's."""
    if indent is None:
        return _dumps(report_dict(report, first)) + "\n"
    return "".join(iter_json(report, indent, first))
