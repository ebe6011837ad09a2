"""The JSON report: a pure function of a Report.

``render_json`` writes the contract users' scripts rely on (strict RFC 8259
JSON: non-finite numbers become the strings "nan", "inf", "-inf"; integers
stay exact; every string valid UTF-8, see ``render.escape``). A buffer's
object holds its identity and then every fact of ``kernels.facts.FACTS``,
in the table's order, converted as the table says.

Layout: an indented top-level object whose long lists (steps, buffers, ...)
hold one compact object per line, so a report of 68,000 buffers is written
by the C encoder, line by line, and still reads well and diffs well.
"""

from __future__ import annotations

import json

from ..kernels.facts import RESULT_FACTS, json_number
from .escape import json_text, path_record, put_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from ..results import BufferResult, Report

JSON_SCHEMA_VERSION = 1

__all__ = ["JSON_SCHEMA_VERSION", "buffer_dict", "json_number", "render_json", "report_dict"]

_FACTS = tuple((f.name, f.json) for f in RESULT_FACTS)


def buffer_dict(b: BufferResult) -> dict[str, Any]:
    """A buffer's JSON object: identity, facts (in ``FACTS`` order), paths, message."""
    d: dict[str, Any] = {"step": b.step}
    put_text(d, "name", b.name)
    d["group"] = json_text(b.group)
    d["dtype"] = json_text(b.dtype)
    d["status"] = b.status
    d["n_elements_a"] = b.n_elements_a
    d["n_elements_b"] = b.n_elements_b
    for (name, to_json), value in zip(_FACTS, b.facts, strict=True):
        if value is not None:
            if to_json is not None:
                value = to_json(value)
            elif isinstance(value, str):
                value = json_text(value)
        d[name] = value
    put_text(d, "path_a", b.path_a)
    put_text(d, "path_b", b.path_b)
    d["message"] = None if b.message is None else json_text(b.message)
    return d


def _report_items(report: Report) -> Iterator[tuple[str, Any, bool]]:
    """(key, value, is a list of records) of the report's object, in order;
    the lists come as iterators, so no caller holds them all at once."""
    head: dict[str, Any] = {"schema_version": JSON_SCHEMA_VERSION}
    put_text(head, "run_a", report.run_a)
    put_text(head, "run_b", report.run_b)
    for k, v in head.items():
        yield k, v, False
    yield "schema", json_text(report.schema), False
    yield "verdict", report.verdict, False
    yield "first_divergent_step", report.first_divergent_step, False
    yield "first_divergent_groups", [json_text(k) for k in report.first_divergent_groups], False
    groups = (
        {
            "key": json_text(g.key),
            "title": json_text(g.title),
            "status": g.status,
            "diverged": [json_text(n) for n in g.diverged],
            "hint": json_text(g.hint),
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
    yield "buffers", map(buffer_dict, report.buffers), True
    yield "skipped", (path_record(s.path, "reason", s.reason) for s in report.skipped), True
    yield "errors", (path_record(e.path, "message", e.message) for e in report.errors), True
    yield "tolerance", {k: json_number(v) for k, v in report.tolerance.items()}, False
    yield "work", report.work.as_dict(), False


def report_dict(report: Report) -> dict[str, Any]:
    """The JSON report as a dict."""
    return {k: list(v) if rows else v for k, v, rows in _report_items(report)}


def _dumps(value: Any) -> str:
    return json.dumps(value, allow_nan=False)


def iter_json(report: Report, indent: int = 2) -> Iterator[str]:
    """The lines of ``render_json(report, indent)``, each ending in a newline."""
    pad = " " * indent
    items = list(_report_items(report))
    yield "{\n"
    for i, (key, value, rows) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        name = _dumps(key)
        if not rows:
            yield f"{pad}{name}: {_dumps(value)}{comma}\n"
            continue
        first = True
        for row in value:
            yield (f"{pad}{name}: [\n" if first else ",\n") + f"{pad}{pad}{_dumps(row)}"
            first = False
        yield f"{pad}{name}: []{comma}\n" if first else f"\n{pad}]{comma}\n"
    yield "}\n"


def render_json(report: Report, indent: int | None = 2) -> str:
    """The JSON report: with ``indent``, one top-level key and one record of
    each list per line; with None, all on one line."""
    if indent is None:
        return _dumps(report_dict(report)) + "\n"
    return "".join(iter_json(report, indent))
