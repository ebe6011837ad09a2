"""The HTML report: one self-contained page, a pure function of the results.

``render_html`` (compare), ``render_watch_html`` (watch, at its end),
``render_sweep_html`` and ``render_rerun_html`` each return a whole page:
inline CSS and script (``render/htmlfiles``), no network (a
Content-Security-Policy that allows nothing to load, and only the page's own
style and script to run), works from a file URL, and prints.

The page is built from the same findings and words the text report uses
(coverage.py's HTML report is the model): every sentence is the text
report's (``render.text``, ``render.hints``, ``render.notes``,
``render.words``); the HTML only lays them out. Its parts:

- the verdict, the first divergent step, where the divergence was born, the
  groups at that step and the next-step hints;
- a heatmap of the timeline, steps x groups, each cell the timeline row of
  that group at that step (``report.timeline``: its largest ULP distance
  where rounding-size, else its largest |A-B|, both on a log scale, or a
  word), equal, within tolerance, missing, error and absent told apart; a
  group opens into a column per buffer (each buffer's own cell, from its
  facts through the verdict stage's ``cell``). The data is one JSON block
  read by the script, which draws only the rows in view and folds runs of
  equal steps, so 2,000 steps x 40 buffers stay light;
- the dataflow around each origin: its inputs (matched, differing, not
  compared) and the buffers that received the divergence from it, as a
  small SVG graph;
- each buffer the text report lists: its line, shape, ranges, rows, fields,
  ULP histogram, largest |A-B| and where;
- runs of several ranks: the rank table and the pattern of their first
  origins, and a heatmap per rank; a sweep: the pair matrix and the classes.

Every name, path and message goes through ``display_path`` (as in the text
report) and then HTML escaping; in the JSON block ``<``, ``>`` and ``&`` are
escaped too, and the script only ever sets text, never markup, so no name
can add markup or script to the page.
"""

from __future__ import annotations

import hashlib
import json
import math
from html import escape as _escape

from ..model.findings import Cell, cell_of
from ..model.inputs import split_input
from ..model.results import TimelineRow
from ..model.statuses import TROUBLE, GroupStatus, Status
from ..model.tolerance import DEFAULT_ROUNDING_ULP
from ..textkit.escape import display_path
from ..textkit.fmt import plural
from .hints import buffer_message, group_hint
from .htmlfiles import SCRIPT, STYLE
from .text import (
    TEXT_PARTS,
    born_lines,
    cell_text,
    format_buffer,
    legend_text,
    listed_buffers,
    note_lines,
    origin_at,
    rank_list,
    rank_pattern,
    rank_table,
    ranks_verdict_lines,
    role_text,
    selection_line,
    status_counts,
    structure_lines,
    verdict_lines,
)
from .words import (
    EQUAL,
    ERROR,
    GROUP_STATUS,
    LENGTH_MISMATCH,
    ROLE,
    STATUS,
    VERDICT,
    WITHIN_TOLERANCE,
    verdict_word,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

    from ..model.findings import BufferKey
    from ..model.rerun import RerunResult
    from ..model.results import BufferResult, Report
    from ..model.sweep import SweepSummary
    from ..model.watch import WatchSummary

__all__ = [
    "MAX_CARDS",
    "MAX_GRAPHS",
    "render_html",
    "render_rerun_html",
    "render_sweep_html",
    "render_watch_html",
]

#: How many buffers the page describes one by one (the text report's list,
#: from its start); the heatmap still shows every buffer at every step.
MAX_CARDS = 300
#: How many dataflow graphs the page draws (the first origins first).
MAX_GRAPHS = 8
#: Inputs or receivers a graph names before "+N more".
GRAPH_NODES = 10
#: How many pairs of a sweep the page lists with their verdict.
MAX_PAIRS = 500
#: How many runs a sweep's matrix shows (rows and columns each).
MATRIX_RUNS = 60
#: Shades of the heatmap: rounding-size ULP distances, large |A-B|.
ULP_SHADES = 5
DELTA_SHADES = 8

# --- cell codes: one character per cell, in the order a bin of steps shows the worst --
ABSENT, QUIET, CLOSE, ERR = " ", ".", "t", "e"
ROUNDING_CODES = "12345"
DELTA_CODES = "ABCDEFGH"
WORD_CODES = {
    Cell.NAN_INF: "n",
    Cell.DIFFERS: "d",
    Cell.LENGTH: "l",
    Cell.MALFORMED: "x",
    Cell.MISSING: "m",
}
#: From the least to the most telling, as a cell that sums several up (a bin of
#: steps in the overview, a buffer over ranks) shows the worst: a divergence
#: outranks an error beside it (the heatmap is of the divergence; the
#: verdict and the problems say the rest).
SEVERITY = ABSENT + QUIET + CLOSE + ERR + ROUNDING_CODES + DELTA_CODES + "ndlxm"
_RANK = {c: i for i, c in enumerate(SEVERITY)}


# --- escaping ---------------------------------------------------------------------


def _t(text: str) -> str:
    """A name, path or message as HTML text: escaped as the text report shows
    it (``display_path``: no control character, no bidi override), then as HTML."""
    return _escape(display_path(text), quote=True)


def _h(line: str) -> str:
    """A line of the text report's (its names already through ``display_path``)."""
    return _escape(line, quote=True)


def _json_block(data: Any) -> str:
    """``data`` as JSON safe inside ``<script type="application/json">``: no
    ``<``, ``>`` or ``&`` (so no ``</script>``), ASCII only."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False, ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _csp_hash(source: str) -> str:
    import base64

    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode() + "'"


#: Nothing loads from anywhere (no network, not even a file beside the page);
#: only the page's own style and script run: an injected one would not.
_CSP = (
    f"default-src 'none'; style-src {_csp_hash(STYLE)}; script-src {_csp_hash(SCRIPT)}; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)


def _page(title: str, body: str, data: dict[str, Any], verdict: str, version: str = "") -> str:
    """The whole page; ``version``: fastdiff's, as the caller gives it (the
    page names it in its footer and generator tag)."""
    made_by = f"fastdiff {version}" if version else "fastdiff"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="{_h(made_by)}">\n'
        f"<title>{_h(title)}</title>\n<style>{STYLE}</style>\n</head>\n"
        f'<body class="v-{_h(verdict)}">\n{body}\n'
        f"<footer>{_h(made_by)}: a page built from the report's findings "
        "alone; it loads nothing from the network.</footer>\n"
        f'<script type="application/json" id="fd-data">{_json_block(data)}</script>\n'
        f"<script>{SCRIPT}</script>\n</body>\n</html>\n"
    )


# --- the heatmap's data ---------------------------------------------------------------


def _rounding_ulp(report: Report) -> int:
    ulp = report.tolerance.get("rounding_ulp", DEFAULT_ROUNDING_ULP)
    return ulp if isinstance(ulp, int) else DEFAULT_ROUNDING_ULP


def _ulp_code(ulp: int | None, line: int) -> str:
    """A rounding-size ULP distance's shade, log2-scaled up to the rounding line."""
    if not ulp or ulp <= 1:
        return ROUNDING_CODES[0]
    level = int((ULP_SHADES - 1) * math.log2(ulp) / math.log2(max(line, 2)))
    return ROUNDING_CODES[min(ULP_SHADES - 1, level)]


def _ulp_floor(k: int, line: int) -> int:
    """The smallest ULP distance of shade ``k`` (0-based)."""
    return 1 if k == 0 else math.ceil(max(line, 2) ** (k / (ULP_SHADES - 1)))


class _Scale:
    """The log10 span of the large |A-B| a page shows, cut into DELTA_SHADES."""

    __slots__ = ("hi", "lo")

    def __init__(self, values: Iterable[float | int]) -> None:
        logs = [math.log10(v) for v in values if v and v > 0 and math.isfinite(v)]
        self.lo = min(logs, default=0.0)
        self.hi = max(logs, default=0.0)

    def code(self, d: float | int | None) -> str:
        if d is None or not d > 0 or not math.isfinite(d):
            return DELTA_CODES[0]
        if self.hi <= self.lo:
            return DELTA_CODES[-1]
        k = int(DELTA_SHADES * (math.log10(d) - self.lo) / (self.hi - self.lo))
        return DELTA_CODES[max(0, min(DELTA_SHADES - 1, k))]

    def floor(self, k: int) -> float:
        return 10 ** (self.lo + k * (self.hi - self.lo) / DELTA_SHADES)


def _row_code(row: TimelineRow, line: int, scale: _Scale) -> str:
    if row.cell == Cell.ROUNDING:
        return _ulp_code(row.max_ulp, line)
    if row.cell == Cell.DELTA:
        return scale.code(row.max_abs_delta)
    return WORD_CODES.get(row.cell, "d")  # type: ignore[arg-type]


def _buffer_row(b: BufferResult, line: int) -> TimelineRow:
    """A buffer's own cell: the timeline row of a group holding only it."""
    kind = cell_of({b.status}, b.magnitude, b.max_ulp, b.max_abs_delta, b.n_diff, line)
    return TimelineRow(b.step, b.group, 1, b.n_diff, b.max_abs_delta, b.max_ulp,
                       b.magnitude, kind)  # fmt: skip


def _buffer_cell(b: BufferResult, line: int, scale: _Scale) -> tuple[str, str | None]:
    """(code, text) of a buffer at a step in the heatmap."""
    status = b.status
    if status == Status.EQUAL:
        return QUIET, None
    if not b.diverges and status in TROUBLE:
        return ERR, STATUS[status].phrase
    row = _buffer_row(b, line)
    if status == Status.WITHIN_TOLERANCE:
        return CLOSE, f"{cell_text(row)} ({WITHIN_TOLERANCE.phrase})"
    return _row_code(row, line, scale), cell_text(row)


class _Column:
    """One column of the heatmap: a code per step, the text of each cell that
    is neither equal nor absent, origins, links to the buffers' cards."""

    __slots__ = ("cards", "codes", "origins", "texts")

    def __init__(self, n: int) -> None:
        self.codes = [ABSENT] * n
        self.texts: dict[int, str] = {}
        self.origins: set[int] = set()
        self.cards: dict[int, str] = {}

    def put(self, i: int, code: str, text: str | None) -> None:
        if _RANK[code] > _RANK[self.codes[i]]:
            self.codes[i] = code
            if text is not None:
                self.texts[i] = text
        elif code == QUIET and self.codes[i] == ABSENT:
            self.codes[i] = QUIET

    def data(self) -> dict[str, Any]:
        codes = "".join(self.codes)
        d: dict[str, Any] = {
            "cells": codes,
            "texts": [self.texts.get(i, "") for i, c in enumerate(codes) if c not in " ."],
        }
        if self.origins:
            d["o"] = sorted(self.origins)
        if self.cards:
            d["k"] = {str(i): card for i, card in self.cards.items()}
        return d


def _group_order(report: Report) -> list[str]:
    order = [g.key for g in report.groups]
    seen = set(order)
    for b in report.buffers:
        if b.group not in seen:
            seen.add(b.group)
            order.append(b.group)
    return order


#: A buffer's identity (step, group, name, rank): what a card is found by.
Key = tuple[int, str, str, "int | None"]


def _key(b: BufferResult | BufferKey) -> Key:
    return (b.step, b.group, b.name, b.rank)


def _view(report: Report, label: str, cards: dict[Key, str], scale: _Scale) -> dict[str, Any]:
    """The heatmap data of one report (a run pair, or one rank of it)."""
    line = _rounding_ulp(report)
    steps = [s.step for s in report.steps]
    index = {s: i for i, s in enumerate(steps)}
    n = len(steps)
    order = _group_order(report)
    titles = {g.key: g.title for g in report.groups}
    groups = {k: _Column(n) for k in order}
    buffers: dict[str, dict[str, _Column]] = {k: {} for k in order}
    several = report.ranks is not None
    trouble: set[tuple[str, int]] = set()
    for b in report.buffers:
        i = index.get(b.step)
        if i is None:
            continue
        col = buffers[b.group].get(b.name)
        if col is None:
            col = buffers[b.group][b.name] = _Column(n)
        code, text = _buffer_cell(b, line, scale)
        if several and text is not None:
            text = f"{text} ({rank_list([b.rank])})"  # type: ignore[list-item]
        col.put(i, code, text)
        g = groups[b.group]
        if g.codes[i] == ABSENT:
            g.codes[i] = QUIET
        if code == ERR:
            trouble.add((b.group, i))
        if b.role is not None and b.role.kind == "origin":
            col.origins.add(i)
        card = cards.get(_key(b)) if cards else None
        if card is not None and i not in col.cards:
            col.cards[i] = card
    diverged = {index[s.step]: set(s.diverged_groups) for s in report.steps}
    for row in report.timeline:
        i = index.get(row.step)
        if i is None or row.group not in groups:
            continue
        if row.group in diverged.get(i, ()):
            code, text = _row_code(row, line, scale), cell_text(row)
        else:
            code, text = CLOSE, f"{cell_text(row)} ({WITHIN_TOLERANCE.phrase})"
        groups[row.group].put(i, code, text)
    for key, i in trouble:
        groups[key].put(i, ERR, ERROR.phrase)
    for o in report.origins or ():
        i = index.get(o.step)
        if i is not None and o.group in groups:
            groups[o.group].origins.add(i)
    first = report.first_divergent_step
    return {
        "label": label,
        "steps": steps,
        "first": None if first is None else index.get(first),
        "firstGroups": [display_path(k) for k in report.first_divergent_groups],
        "groups": [
            {
                "key": display_path(k),
                "title": display_path(titles.get(k, "")),
                **groups[k].data(),
                "buffers": [
                    {"name": display_path(name), **col.data()} for name, col in buffers[k].items()
                ],
            }
            for k in order
        ],
    }


def _deltas(report: Report) -> Iterable[float | int]:
    """The |A-B| of every cell the heatmap shows as one (a row's or a
    buffer's, of every rank): the span its shades cut."""
    line = _rounding_ulp(report)
    for row in report.timeline:
        if row.cell == Cell.DELTA and row.max_abs_delta is not None:
            yield row.max_abs_delta
    for rr in report.ranks or ():
        for row in rr.report.timeline:
            if row.cell == Cell.DELTA and row.max_abs_delta is not None:
                yield row.max_abs_delta
    for b in report.buffers:
        shown = b.status != Status.EQUAL and b.max_abs_delta is not None
        if shown and _buffer_row(b, line).cell == Cell.DELTA:
            yield b.max_abs_delta


def _words() -> dict[str, str]:
    """The words the script shows for cells without a text of their own."""
    return {
        ABSENT: GROUP_STATUS[GroupStatus.ABSENT].phrase,
        QUIET: EQUAL.phrase,
        "step": "step",
        "origin": ROLE["origin"].phrase,
    }


# --- the parts of a report's page --------------------------------------------------------


def _lines(lines: Iterable[str], cls: str = "") -> str:
    """Lines of the text report, each a paragraph."""
    attr = f' class="{cls}"' if cls else ""
    return "".join(f"<p{attr}>{_h(line.strip())}</p>" for line in lines if line.strip())


def _header(report: Report, what: str) -> str:
    rows = [
        ("A", _t(report.run_a)),
        ("B", _t(report.run_b)),
        ("schema", _t(report.schema)),
    ]
    out = [f'<header><p class="what">{_h(what)}</p><dl class="runs">']
    out += [f"<dt>{k}</dt><dd><code>{v}</code></dd>" for k, v in rows]
    out.append("</dl>")
    if report.selection is not None:
        out.append(f'<p class="sel">{_h(selection_line(report.selection))}</p>')
    notes = note_lines(report)
    if notes:
        out.append('<ul class="notes">')
        for note, text in zip(report.notes, notes, strict=True):
            cls = "warning" if note.warning else "note"
            out.append(f'<li class="{cls}">{_h(text)}</li>')
        out.append("</ul>")
    out.append("</header>")
    return "".join(out)


def _verdict(report: Report, born: list[str]) -> str:
    """The verdict block: the text report's verdict line, where the divergence
    was born, the groups at the first divergent step and the hints."""
    word = verdict_word(report)
    lines = ranks_verdict_lines(report) if report.ranks is not None else verdict_lines(report)
    head = lines[0].removeprefix("VERDICT: ")
    step = report.first_divergent_step
    out = [
        '<section id="verdict" class="card">',
        f'<h1><span class="badge v-{_h(report.verdict)}">{_h(word.phrase)}</span> '
        f'<span class="headline">{_h(head)}</span></h1>',
    ]
    if step is not None:
        groups = " ".join(f"<code>{_t(k)}</code>" for k in report.first_divergent_groups)
        out.append(
            f'<p class="first">first divergent step <b id="first-step">{step}</b>'
            f'<span class="groups">{groups}</span></p>'
        )
    out.append(_lines(born, "born"))
    out.append(_lines(structure_lines(report), "structure"))
    if report.groups:
        out.append('<table class="groups"><tbody>')
        for g in report.groups:
            diverged = ", ".join(map(_t, g.diverged))
            out.append(
                f'<tr class="g-{_h(g.status)}"><th><code>{_t(g.key)}</code></th>'
                f"<td>{_t(g.title)}</td><td>{_h(GROUP_STATUS[g.status].label)}</td>"
                f"<td>{diverged}</td></tr>"
            )
        out.append("</tbody></table>")
    hinted = set(report.next_groups)
    for g in report.groups:
        if g.key in hinted and g.status == "diverged" and group_hint(g):
            out.append(
                f'<p class="hint"><b>next, <code>{_t(g.key)}</code>:</b> {_t(group_hint(g))}</p>'
            )
    out.append("</section>")
    return "".join(out)


def _legend_word(word: str) -> str:
    """What a factless word of the timeline means, as the text's legend says it."""
    return legend_text([[word]]).partition(": ")[2]


def _heatmap(views: list[dict[str, Any]], line: int, scale: _Scale, used: set[str]) -> str:
    out = [
        '<section id="heatmap" class="card"><h2>Timeline</h2>',
        '<p class="lead">per group, the largest |A-B| at each step that is not all equal '
        "(rounding-size differences in ULP, larger ones as |A-B|, both on a log scale); "
        "runs of equal steps are folded. Open a group to see its buffers; pick a cell for "
        "what it holds.</p>",
        '<div class="controls">',
    ]
    if len(views) > 1:
        out.append('<label>ranks <select id="hm-view">')
        out += [f'<option value="{i}">{_h(v["label"])}</option>' for i, v in enumerate(views)]
        out.append("</select></label>")
    out.append(
        '<button type="button" data-act="open">open every group</button>'
        '<button type="button" data-act="close">close every group</button>'
    )
    if any(v["first"] is not None for v in views):
        out.append('<button type="button" data-act="first">the first divergent step</button>')
    out.append(
        '</div><canvas id="hm-overview" height="48" aria-label="every step at a glance: pick '
        'one to go there"></canvas>'
        '<div id="hm" class="hm" role="grid" aria-label="steps by groups"></div>'
        '<div id="hm-print" class="print-note"></div>'
        '<div id="hm-detail" class="detail" aria-live="polite"></div>'
        "<noscript><p>The heatmap needs JavaScript; everything else on the page is "
        "there without it.</p></noscript>"
    )
    out.append(_legend_html(line, scale, used))
    out.append("</section>")
    return "".join(out)


def _swatch(code: str, label: str) -> str:
    return f'<li><span class="c {_code_class(code)}"></span>{_h(label)}</li>'


#: The CSS class of each cell code (the script has the same table).
CODE_CLASS = {
    ABSENT: "c-abs",
    QUIET: "c-eq",
    CLOSE: "c-tol",
    ERR: "c-err",
    "n": "c-nan",
    "d": "c-dif",
    "l": "c-len",
    "x": "c-mal",
    "m": "c-mis",
    **{c: f"c-r{i}" for i, c in enumerate(ROUNDING_CODES, 1)},
    **{c: f"c-d{i}" for i, c in enumerate(DELTA_CODES, 1)},
}


def _code_class(code: str) -> str:
    return CODE_CLASS[code]


def _legend_html(line: int, scale: _Scale, used: set[str]) -> str:
    items = [
        _swatch(QUIET, EQUAL.phrase),
        _swatch(CLOSE, WITHIN_TOLERANCE.phrase),
    ]
    out = ['<div class="legend"><ul>', *items]
    rounding = [c for c in ROUNDING_CODES if c in used]
    if rounding:
        out.append('<li class="sep">rounding-size:</li>')
        for c in rounding:
            k = ROUNDING_CODES.index(c)
            lo = _ulp_floor(k, line)
            hi = _ulp_floor(k + 1, line) - 1 if k < ULP_SHADES - 1 else None
            span = f"{lo:,}" if hi == lo else f"{lo:,}-{hi:,}" if hi is not None else f">= {lo:,}"
            out.append(_swatch(c, f"{span} ulp"))
    large = [c for c in DELTA_CODES if c in used]
    if large:
        out.append('<li class="sep">|A-B|:</li>')
        for c in large:
            out.append(_swatch(c, f">= {scale.floor(DELTA_CODES.index(c)):.3g}"))
    words = {
        "n": ("nan/inf", _legend_word("nan/inf")),
        "m": ("missing", _legend_word("missing")),
        "l": ("length", LENGTH_MISMATCH.phrase),
        "d": ("differs", _legend_word("differs")),
        "x": ("malformed", _legend_word("malformed")),
    }
    for code, (word, meaning) in words.items():
        if code in used:
            out.append(_swatch(code, f"{word}: {meaning}"))
    out.append(_swatch(ERR, ERROR.phrase))
    out.append(_swatch(ABSENT, GROUP_STATUS[GroupStatus.ABSENT].phrase))
    out.append(
        f'<li><span class="c c-eq o"></span>{_h(ROLE["origin"].phrase)}</li>'
        '<li><span class="c c-eq first"></span>first divergent step</li></ul></div>'
    )
    return "".join(out)


# --- the dataflow around each origin ---------------------------------------------------------

_NODE_W, _NODE_H, _GAP, _COL = 200, 24, 8, 280


def _short(text: str, most: int = 28) -> str:
    return text if len(text) <= most else text[: most - 1] + "\u2026"


def _node(x: int, y: int, label: str, cls: str, title: str) -> str:
    return (
        f'<g class="node {cls}"><title>{_h(title)}</title>'
        f'<rect x="{x}" y="{y}" width="{_NODE_W}" height="{_NODE_H}" rx="5"></rect>'
        f'<text x="{x + 8}" y="{y + 16}">{_h(_short(label))}</text></g>'
    )


def _edge(x1: int, y1: int, x2: int, y2: int, cls: str) -> str:
    mid = (x1 + x2) // 2
    return f'<path class="edge {cls}" d="M{x1},{y1} C{mid},{y1} {mid},{y2} {x2},{y2}"></path>'


def _capped(items: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    if len(items) <= GRAPH_NODES:
        return items
    more = len(items) - GRAPH_NODES + 1
    return [*items[: GRAPH_NODES - 1], (f"+{more} more", "more", f"and {more} more")]


def _graph(b: BufferResult, receivers: list[BufferResult]) -> str:
    """An SVG: the buffer's inputs (left), the buffer, its receivers (right)."""
    r = b.role
    assert r is not None
    differing, open_ = set(r.differing_inputs), set(r.undumped_inputs)
    inputs = []
    for name in r.inputs:
        state = ("differing", "in-diff") if name in differing else (
            ("not compared", "in-open") if name in open_ else ("matched", "in-ok")
        )  # fmt: skip
        _, prev = split_input(name)
        at = r.prev_step if prev and r.prev_step is not None else b.step
        inputs.append((f"{display_path(name)}: {state[0]}", state[1],
                       f"{display_path(name)} at step {at}: {state[0]}"))  # fmt: skip
    outs = [
        (f"{display_path(x.name)} at step {x.step}", "recv",
         f"{display_path(x.group)} {display_path(x.name)} at step {x.step}: "
         f"{ROLE['receiver'].phrase}")
        for x in receivers
    ]  # fmt: skip
    inputs, outs = _capped(inputs), _capped(outs)
    rows = max(len(inputs), len(outs), 1)
    height = 22 + rows * (_NODE_H + _GAP)
    mid_y = 22 + (rows * (_NODE_H + _GAP) - _GAP) // 2 - _NODE_H // 2
    width = 2 * _COL + _NODE_W
    parts = [
        f'<svg class="flow" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{_h(role_text(b) or "")}">',
        '<text class="col" x="0" y="12">inputs</text>',
        f'<text class="col" x="{_COL}" y="12">{_h(ROLE[r.kind].phrase)}</text>',
        f'<text class="col" x="{2 * _COL}" y="12">{_h(ROLE["receiver"].phrase)}s</text>'
        if outs
        else "",
    ]

    def ys(k: int) -> list[int]:
        top = 22 + (rows - k) * (_NODE_H + _GAP) // 2
        return [top + i * (_NODE_H + _GAP) for i in range(k)]

    for (label, cls, title), y in zip(inputs, ys(len(inputs)), strict=True):
        parts.append(_edge(_NODE_W, y + _NODE_H // 2, _COL, mid_y + _NODE_H // 2, cls))
        parts.append(_node(0, y, label, cls, title))
    if not inputs:
        parts.append(f'<text class="none" x="0" y="{mid_y + 16}">none declared</text>')
    for (label, cls, title), y in zip(outs, ys(len(outs)), strict=True):
        parts.append(_edge(_COL + _NODE_W, mid_y + _NODE_H // 2, 2 * _COL, y + _NODE_H // 2, cls))
        parts.append(_node(2 * _COL, y, label, cls, title))
    name = f"{display_path(b.group)} {display_path(b.name)}"
    parts.append(_node(_COL, mid_y, name, f"self r-{r.kind}", role_text(b) or name))
    parts.append("</svg>")
    return "".join(parts)


def _dataflow(report: Report, cards: dict[Key, str], born: list[str]) -> str:
    """The dataflow around each origin (then what stayed undetermined, then
    later origins), under the text's lines of where it was born (``born``):
    none without declared inputs or a divergence."""
    found = report.born
    if found is None or not found.declared:
        return ""
    keys = [_key(k) for k in [*found.origins, *found.undetermined, *found.later][:MAX_GRAPHS]]
    wanted = set(keys)
    by_key: dict[Key, BufferResult] = {}
    received: dict[tuple[int | None, int, str], list[BufferResult]] = {}
    for b in report.buffers:
        r = b.role
        if r is None:
            continue
        k = _key(b)
        if k in wanted:
            by_key[k] = b
        if r.kind == "receiver":
            for name in r.differing_inputs:
                base, prev = split_input(name)
                at = r.prev_step if prev else b.step
                if at is not None:
                    received.setdefault((b.rank, at, base), []).append(b)
    out = ['<section id="dataflow" class="card"><h2>Where it was born</h2>', _lines(born, "born")]
    for k in keys:
        b = by_key.get(k)
        if b is None or b.role is None:
            continue
        rank = "" if b.rank is None else f" ({rank_list([b.rank])})"
        card = cards.get(k)
        name = f"{display_path(b.group)} {display_path(b.name)} at step {b.step}{rank}"
        link = f'<a href="#{card}">{_h(name)}</a>' if card else _h(name)
        out.append(
            f'<figure class="flow"><figcaption>{link}: {_h(role_text(b) or "")}</figcaption>'
            f"{_graph(b, received.get((b.rank, b.step, b.name), []))}</figure>"
        )
    more = len(found.origins) + len(found.undetermined) + len(found.later) - len(keys)
    if more > 0:
        out.append(f'<p class="more">{_h(plural(more, "more buffer"))} in the lines above</p>')
    out.append("</section>")
    return "".join(out)


# --- the buffers ------------------------------------------------------------------------------


def _histogram(b: BufferResult) -> str:
    """The ULP distances of the finite differing pairs, a bar per log2 bin
    (0: -0.0 against +0.0; k: 2**k to 2**(k+1) - 1 ULP)."""
    hist = b.ulp_log2_histogram
    if not hist:
        return ""
    counts = [b.n_signed_zero or 0, *hist]
    top = max(counts) or 1
    w, h = 12, 60
    bars = []
    for k, n in enumerate(counts):
        lo = 0 if k == 0 else 1 << (k - 1)
        hi = 0 if k == 0 else (1 << k) - 1
        span = f"{lo:,}" if lo == hi else f"{lo:,}-{hi:,}"
        bh = 0 if not n else max(2, round(h * math.log1p(n) / math.log1p(top)))
        bars.append(
            f'<rect x="{k * w}" y="{h - bh}" width="{w - 2}" height="{bh}">'
            f"<title>{span} ULP: {plural(n, 'pair')}</title></rect>"
        )
    width = len(counts) * w
    caption = TEXT_PARTS["ulp_log2_histogram"](b) or "ULP distances"
    return (
        f'<figure class="hist"><figcaption>{_t(caption)} (log2 bins, bar height log)'
        f'</figcaption><svg viewBox="0 0 {width} {h + 14}" width="{width}" height="{h + 14}">'
        + "".join(bars)
        + f'<text x="0" y="{h + 12}">0</text><text x="{width - 2}" y="{h + 12}" '
        f'text-anchor="end">{(1 << len(hist)) - 1:,}</text></svg></figure>'
    )


def _facts(b: BufferResult) -> str:
    rows: list[tuple[str, str]] = []
    kind = b.dtype if b.shape is None else f"{b.dtype}, {tuple(b.shape)}"
    rows.append(("dtype, shape", _t(kind)))
    n = [("-" if x is None else f"{x:,}") for x in (b.n_elements_a, b.n_elements_b)]
    rows.append(("elements", f"A {n[0]}, B {n[1]}"))
    for name, label in (
        ("n_diff", "differ"),
        ("first_index", "first"),
        ("max_abs_delta", "max |A-B|"),
        ("n_nan_mismatch", "NaN"),
        ("n_inf_mismatch", "inf"),
        ("first_divergent_chunk", "chunk"),
        ("n_signed_zero", "signed zeros"),
    ):
        text = TEXT_PARTS[name](b)
        if text is not None:
            rows.append((label, _t(text)))
    if b.ranges:
        more = f" of {b.n_ranges:,}" if b.n_ranges and b.n_ranges > len(b.ranges) else ""
        shown = " ".join(f"[{lo}, {hi})" for lo, hi in b.ranges)  # indices: no separators
        rows.append((f"ranges ({len(b.ranges):,}{more})", shown))
    if b.rows:
        more = f" of {b.n_rows:,}" if b.n_rows and b.n_rows > len(b.rows) else ""
        rows.append((f"rows ({len(b.rows):,}{more})", ", ".join(map(str, b.rows))))
    role = role_text(b)
    if role:
        rows.append(("role", _h(role)))
    message = buffer_message(b)
    if message:
        rows.append(("message", _t(message)))
    for side, path in (("A", b.path_a), ("B", b.path_b)):
        if path is not None:
            rows.append((f"file {side}", f"<code>{_t(path)}</code>"))
    return '<dl class="facts">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows) + "</dl>"


def _fields(b: BufferResult) -> str:
    if not b.fields:
        return ""
    out = ['<table class="fields"><thead><tr><th>field</th><th>elements</th><th>differ</th>'
           "<th>max ULP</th><th>max |A-B|</th></tr></thead><tbody>"]  # fmt: skip
    for f in b.fields:
        ulp = "-" if f.max_ulp is None else f"{f.max_ulp:,}"
        d = f.max_abs_delta
        delta = "-" if d is None else (f"{d:.6g}" if isinstance(d, float) else str(d))
        out.append(
            f"<tr><td><code>{_t(f.name)}</code></td><td>[{f.start}, {f.stop})</td>"
            f"<td>{f.n_diff:,}</td><td>{ulp}</td><td>{delta}</td></tr>"
        )
    out.append("</tbody></table>")
    if b.n_diff_outside_fields:
        out.append(f"<p>{b.n_diff_outside_fields:,} outside fields</p>")
    return "".join(out)


def _card(b: BufferResult, card: str, open_: bool) -> str:
    word = STATUS[b.status]
    rank = "" if b.rank is None else f" <span>{_h(rank_list([b.rank]))}</span>"
    kind = b.dtype if b.shape is None else f"{b.dtype}, {tuple(b.shape)}"
    role = (
        ""
        if b.role is None
        else f' <span class="role r-{_h(b.role.kind)}">{_h(ROLE[b.role.kind].phrase)}</span>'
    )
    return (
        f'<details class="buf s-{_h(b.status)}" id="{card}"{" open" if open_ else ""}>'
        f'<summary><span class="st">{_h(word.label)}</span> step {b.step}{rank} '
        f"<code>{_t(b.group)}</code> <code>{_t(b.name)}</code> "
        f'<span class="dt">[{_t(kind)}]</span>{role}</summary>'
        f'<pre class="line">{_h(format_buffer(b).strip())}</pre>'
        f"{_facts(b)}{_fields(b)}{_histogram(b)}</details>"
    )


def _listed_buffers(report: Report, verbose: bool, first: bool) -> list[BufferResult]:
    """The buffers the text report lists, in its order (each rank's, rank after rank)."""
    reports = [rr.report for rr in report.ranks] if report.ranks is not None else [report]
    out: list[BufferResult] = []
    for rep in reports:
        shown, _ = listed_buffers(rep, verbose)
        at = rep.first_divergent_step
        for step in sorted(shown):
            if not first or step == at:
                out += shown[step]
    return out


def _buffers_section(report: Report, listed: list[BufferResult], cards: dict[Key, str]) -> str:
    if not listed:
        return ""
    firsts = (
        {rr.rank: rr.report.first_divergent_step for rr in report.ranks}
        if report.ranks is not None
        else {None: report.first_divergent_step}
    )
    out = [
        '<section id="buffers" class="card"><h2>Buffers</h2>',
        '<p class="lead">the buffers the text report lists: up to the first divergent step '
        "every one that is not equal, after it those that diverge for the first time; "
        "open one for its anatomy.</p>",
    ]
    for b in listed[:MAX_CARDS]:
        card = cards[_key(b)]
        out.append(_card(b, card, b.step == firsts.get(b.rank) and b.diverges))
    if len(listed) > MAX_CARDS:
        out.append(
            f'<p class="more">and {plural(len(listed) - MAX_CARDS, "more buffer")} the text '
            "report lists (fastdiff compare, or --format json, has every one)</p>"
        )
    out.append("</section>")
    return "".join(out)


def _problems(report: Report) -> str:
    out = []
    if report.skipped:
        out.append(f"<h3>skipped {plural(len(report.skipped), 'entry', 'entries')}</h3><ul>")
        out += [f"<li><code>{_t(s.path)}</code>: {_t(s.reason)}</li>" for s in report.skipped]
        out.append("</ul>")
    if report.errors:
        out.append(f"<h3>{plural(len(report.errors), 'error')}</h3><ul>")
        out += [f"<li><code>{_t(e.path)}</code>: {_t(e.message)}</li>" for e in report.errors]
        out.append("</ul>")
    if not out:
        return ""
    return '<section id="problems" class="card"><h2>Problems</h2>' + "".join(out) + "</section>"


def _ranks(report: Report) -> str:
    if report.ranks is None:
        return ""
    table = rank_table(report)
    head = [w for w in table[1].strip().split("  ") if w]  # the text table's header words
    out = ['<section id="ranks" class="card"><h2>Ranks</h2><table class="ranks"><thead><tr>']
    out += [f"<th>{_h(w)}</th>" for w in head]
    out.append("</tr></thead><tbody>")
    origins = report.origins is not None
    for rr in report.ranks:
        rep = rr.report
        step = rep.first_divergent_step
        cells = [
            str(rr.rank),
            _h(verdict_word(rep).phrase),
            "-" if step is None else str(step),
            " ".join(map(_t, rep.first_divergent_groups)) or "-",
        ] + ([_h(origin_at(rr.first_origin))] if origins else [])
        out.append(f'<tr class="v-{_h(rep.verdict)}">' + "".join(f"<td>{c}</td>" for c in cells))
        out.append("</tr>")
    out.append("</tbody></table>")
    out.append(_lines(rank_pattern(report), "pattern"))
    out.append("</section>")
    return "".join(out)


def _steps(report: Report) -> str:
    """A step's counts, for the page's contents line."""
    n_buffers = len(report.buffers)
    return f"{plural(n_buffers, 'buffer')} over {plural(len(report.steps), 'step')}"


def _report_parts(
    report: Report, verbose: bool = False, first: bool = False
) -> tuple[str, dict[str, Any]]:
    """The body of a run pair's page and its script data."""
    listed = _listed_buffers(report, verbose, first)
    cards = {_key(b): f"b{i}" for i, b in enumerate(listed[:MAX_CARDS])}
    born = born_lines(report, verbose)
    scale = _Scale(_deltas(report))
    views = [_view(report, "every rank" if report.ranks is not None else "", cards, scale)]
    for rr in report.ranks or ():
        views.append(_view(rr.report, rank_list([rr.rank]), cards, scale))
    used = {c for v in views for g in v["groups"] for c in g["cells"]}
    used |= {c for v in views for g in v["groups"] for b in g["buffers"] for c in b["cells"]}
    body = "".join(
        [
            _verdict(report, born),
            _heatmap(views, _rounding_ulp(report), scale, used),
            _dataflow(report, cards, born),
            _ranks(report),
            _buffers_section(report, listed, cards),
            _problems(report),
        ]
    )
    counts = status_counts(
        (s, sum(dict(st.counts).get(s, 0) for st in report.steps)) for s in STATUS
    )
    body += f'<p class="counts">{_h(_steps(report))}: {_h(counts)}</p>'
    return body, {"views": views, "words": _words(), "severity": SEVERITY, "classes": CODE_CLASS}


def _title(report: Report) -> str:
    return (
        f"fastdiff: {verdict_word(report).phrase}: "
        f"{display_path(report.run_a)} vs {display_path(report.run_b)}"
    )


def render_html(
    report: Report, verbose: bool = False, first: bool = False, version: str = ""
) -> str:
    """The page of one run pair (``compare --format html``). ``verbose``:
    where the divergence was born in full, and every buffer in the list
    (equal ones too); ``first``: the list holds the first divergent step's
    buffers only (the heatmap and verdict stay the whole comparison's);
    ``version``: fastdiff's, for the footer."""
    body, data = _report_parts(report, verbose, first)
    page = _header(report, "fastdiff compare") + f"<main>{body}</main>"
    return _page(_title(report), page, data, report.verdict, version)


def render_watch_html(summary: WatchSummary, version: str = "") -> str:
    """The page of a watch once it ended: why it stopped, then the report of
    the steps compared, as compare's page."""
    from .watch import stop_line

    report = summary.report
    body, data = _report_parts(report)
    stop = f'<p class="stop">{_h(stop_line(summary))}</p>'
    page = _header(report, "fastdiff watch") + f"<main>{stop}{body}</main>"
    return _page(_title(report), page, data, report.verdict, version)


# --- a sweep -----------------------------------------------------------------------------------


def _pair_word(report: Report) -> str:
    """The verdict of a pair as the sweep's text row says it."""
    from .sweep import pair_verdict

    return pair_verdict(report)


def _pair_mark(report: Report) -> tuple[str, str]:
    """(class, what the matrix cell shows) of a pair."""
    if report.verdict == "error":
        step = report.first_divergent_step
        return "v-error", "!" if step is None else f"!{step}"
    if report.first_divergent_step is not None:
        return "v-diverged", str(report.first_divergent_step)
    if report.bit_identical:
        return "v-identical", "="
    return "v-close", "\u2248"


def _axes(reports: Sequence[Report]) -> tuple[list[str], list[str], dict[str, int]]:
    """The matrix's rows (runs A) and columns (runs B), and each run's number
    (``R1``, ...) in the list of runs beside it."""
    rows = list(dict.fromkeys(r.run_a for r in reports))[:MATRIX_RUNS]
    cols = list(dict.fromkeys(r.run_b for r in reports))[:MATRIX_RUNS]
    runs = list(dict.fromkeys([*rows, *cols]))
    return rows, cols, {run: i + 1 for i, run in enumerate(runs)}


def _matrix(reports: Sequence[Report], classes: dict[str, int]) -> str:
    """The pair matrix, then the list of its runs: the one place a run's
    path is written (the classes name runs by their number)."""
    rows, cols, number = _axes(reports)
    runs = list(number)
    pair = {(r.run_a, r.run_b): (i, r) for i, r in enumerate(reports)}
    out = ['<table class="matrix"><thead><tr><th>A \\ B</th>']
    out += [f'<th title="{_t(c)}">R{number[c]}</th>' for c in cols]
    out.append("</tr></thead><tbody>")
    for a in rows:
        out.append(f'<tr><th title="{_t(a)}">R{number[a]}</th>')
        for b in cols:
            found = pair.get((a, b))
            if found is None:
                out.append('<td class="none"></td>')
                continue
            i, rep = found
            cls, mark = _pair_mark(rep)
            out.append(
                f'<td class="{cls}"><a href="#pair-{i}" title="{_h(_pair_word(rep))}">'
                f"{_h(mark)}</a></td>"
            )
        out.append("</tr>")
    out.append("</tbody></table>")
    out.append('<ol class="runs">')
    for run in runs:
        cls = f' <span class="class">class {classes[run]}</span>' if run in classes else ""
        out.append(f'<li value="{number[run]}"><code>{_t(run)}</code>{cls}</li>')
    out.append("</ol>")
    legend = [
        ("v-identical", "=", VERDICT["identical"].phrase),
        ("v-close", "\u2248", "identical within tolerance"),
        ("v-diverged", "N", f"{VERDICT['diverged'].phrase} at step N"),
        ("v-error", "!", VERDICT["error"].phrase),
    ]
    out.append('<ul class="legend mlegend">')
    out += [f'<li><span class="m {c}">{_h(m)}</span>{_h(w)}</li>' for c, m, w in legend]
    out.append("</ul>")
    return "".join(out)


def render_sweep_html(
    reports: Sequence[Report],
    summary: SweepSummary,
    pairs: Sequence[tuple[str, str]] = (),
    version: str = "",
) -> str:
    """The page of a sweep: its summary (the text's), the pair matrix (a
    cell per pair: its first divergent step, or = identical), the classes of
    bit-identical runs, and each pair's verdict block."""
    from .sweep import render_sweep_summary_text

    # The classes have a section of their own: the summary's text without them.
    text = render_sweep_summary_text(summary.replace(classes=None), pairs)
    classes = {run: i for i, c in enumerate(summary.classes or (), 1) for run in c}
    out = [
        '<header><p class="what">fastdiff sweep</p></header><main>',
        '<section id="verdict" class="card">',
        f'<h1><span class="badge v-{_h(summary.verdict)}">{_h(VERDICT[summary.verdict].phrase)}'
        f'</span> <span class="headline">{_h(text.splitlines()[0])}</span></h1>',
        f'<pre class="line">{_h(chr(10).join(text.splitlines()[1:]))}</pre>'
        if len(text.splitlines()) > 1
        else "",
        "</section>",
        '<section id="matrix" class="card"><h2>Pairs</h2>',
        _matrix(reports, classes),
        "</section>",
    ]
    if summary.classes:
        out.append('<section id="classes" class="card"><h2>Classes of bit-identical runs</h2><ol>')
        number = _axes(reports)[2]
        for c in summary.classes:
            named = [
                f'<code title="{_t(r)}">R{number[r]}</code>'
                if r in number
                else f"<code>{_t(r)}</code>"
                for r in c
            ]
            out.append("<li>" + " ".join(named) + "</li>")
        out.append("</ol></section>")
    out.append('<section id="pairs" class="card"><h2>Each pair</h2>')
    for i, rep in enumerate(reports[:MAX_PAIRS]):
        cls, _ = _pair_mark(rep)
        lines = verdict_lines(rep)
        out.append(
            f'<details class="pair {cls}" id="pair-{i}"><summary><code>{_t(rep.run_a)}</code> '
            f"<code>{_t(rep.run_b)}</code> {_h(_pair_word(rep))}</summary>"
            f'<pre class="line">{_h(chr(10).join(lines))}</pre></details>'
        )
    if len(reports) > MAX_PAIRS:
        out.append(f'<p class="more">and {plural(len(reports) - MAX_PAIRS, "more pair")}</p>')
    out.append("</section></main>")
    title = f"fastdiff sweep: {text.splitlines()[0]}"
    return _page(title, "".join(out), {"views": []}, summary.verdict, version)


# --- a rerun -----------------------------------------------------------------------------------


def render_rerun_html(result: RerunResult, version: str = "") -> str:
    """The page of a rerun: the text's lines of the arms and the verdict, then
    the page of arm 1 against the first arm that diverges from it."""
    from .rerun import against_title, summary_lines

    lines = summary_lines(result)
    while lines and not lines[-1]:
        lines.pop()
    verdict = result.verdict
    cls = {"deterministic": "identical", "nondeterministic": "diverged"}.get(verdict, "error")
    out = [
        '<header><p class="what">fastdiff rerun</p></header><main>',
        '<section id="verdict" class="card">',
        f'<h1><span class="badge v-{cls}">{_h(verdict)}</span></h1>',
        f'<pre class="line">{_h(chr(10).join(lines))}</pre></section>',
    ]
    data: dict[str, Any] = {"views": []}
    found = result.findings
    compared = not result.interrupted and result.failed is None
    if compared and found is not None and found.first is not None and not found.errors:
        report = result.reports[found.first - 2]
        body, data = _report_parts(report)
        title = against_title(found.first)
        out.append(f'<h2 class="part">{_h(title)}</h2>{body}')
    out.append("</main>")
    return _page(f"fastdiff rerun: {verdict}", "".join(out), data, cls, version)
