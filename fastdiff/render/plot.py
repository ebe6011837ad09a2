"""The timeline of a divergence as a picture: ``fastdiff compare --plot FILE.png``.

Step on x; the top panel shows, per group, the largest |A-B| among its
buffers at each step (log scale: filled markers for large differences,
hollow ones for rounding-size ones), the bottom panel how many elements
differ (log scale); the first divergent step is marked in both, its label
on the side of the line where the panel has room. Steps where a group's
differences have no |A-B| > 0 to draw on a log scale (NaN or infinity
only, -0.0 against 0.0 or NaN payloads only, a buffer missing from a run,
differences known by digests only) are marked at the top edge of the top
panel. Where the schema declares inputs, each origin (where a divergence
was born, ``Report.origins``) is a star on its group's line at its step.
The step axis has integer ticks, one step alone included.

``timeline_figure`` is a pure function of a ``Report`` (its ``timeline``
and ``origins``): the figure, drawn nowhere; ``write_timeline_plot``
writes it as a PNG. matplotlib is the optional extra ``plot``
(``fastdiff-dumps[plot]``); it is imported here only, inside the
functions, and drawn with the Agg backend through the object API (no
pyplot, no global state, no display needed).
"""

from __future__ import annotations

import os

from ..textkit.escape import display_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..model.results import Report, TimelineRow

MISSING = (
    "--plot needs matplotlib, the optional extra 'plot': pip install 'fastdiff-dumps[plot]' "
    "(in a checkout of fastdiff: pip install '.[plot]')"
)


def _short(text: str, width: int = 48) -> str:
    """A run's name for the title: escaped, and its middle cut when long."""
    text = display_path(text)
    if len(text) <= width:
        return text
    keep = (width - 3) // 2
    return text[:keep] + "..." + text[-keep:]


def _group_order(report: Report) -> list[str]:
    order = [g.key for g in report.groups]
    seen = dict.fromkeys(r.group for r in report.timeline)
    return [k for k in order if k in seen] + [k for k in seen if k not in order]


def write_timeline_plot(report: Report, path: str | os.PathLike[str], dpi: int = 100) -> None:
    """Write the timeline of ``report`` as a PNG file; OSError when it cannot
    be written, ImportError (its message ``MISSING``, what to install)
    without matplotlib."""
    timeline_figure(report).savefig(os.fspath(path), format="png", dpi=dpi)


def timeline_figure(report: Report) -> Figure:
    """The timeline of ``report`` as a matplotlib ``Figure`` (Agg canvas)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter
        from matplotlib.transforms import blended_transform_factory
    except ImportError:
        raise ImportError(MISSING) from None

    fig = Figure(figsize=(8, 5.6), layout="constrained")
    FigureCanvasAgg(fig)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    rounding = report.tolerance.get("rounding_ulp")
    by_group: dict[str, list[TimelineRow]] = {}
    for row in report.timeline:
        by_group.setdefault(row.group, []).append(row)
    born: dict[str, set[int]] = {}
    for o in report.origins or ():
        born.setdefault(o.group, set()).add(o.step)
    edge = blended_transform_factory(top.transData, top.transAxes)
    marked_edge = False
    for i, key in enumerate(_group_order(report)):
        rows = by_group[key]
        color = f"C{i % 10}"
        label = display_path(key)
        drawn = [r for r in rows if r.max_abs_delta is not None and r.max_abs_delta > 0]
        top.plot([r.step for r in drawn], [float(r.max_abs_delta or 0) for r in drawn], "-",
                 color=color, linewidth=1.5, label=label)  # fmt: skip
        for magnitude, face in (("large", color), ("rounding", "white")):
            pts = [r for r in drawn if r.magnitude == magnitude]
            top.plot([r.step for r in pts], [float(r.max_abs_delta or 0) for r in pts], "o",
                     color=color, markerfacecolor=face, markersize=6)  # fmt: skip
        unplotted = [r for r in rows if r not in drawn]
        if unplotted:
            marked_edge = True
            top.plot([r.step for r in unplotted], [0.97] * len(unplotted), "x", color=color,
                     markersize=7, transform=edge, clip_on=False)  # fmt: skip
        steps = born.get(key, set())
        starred = [r for r in drawn if r.step in steps]
        star = {"color": color, "markeredgecolor": "black", "markersize": 14, "zorder": 3}
        if starred:  # over the step's marker, the group's colour inside a dark edge
            top.plot([r.step for r in starred], [float(r.max_abs_delta or 0) for r in starred],
                     "*", **star)  # fmt: skip
        at_edge = sorted(steps - {r.step for r in starred})  # no |A-B| to draw: at the top
        if at_edge:
            top.plot(at_edge, [0.97] * len(at_edge), "*", transform=edge, clip_on=False, **star)
        counted = [r for r in rows if r.n_diff]
        bottom.plot([r.step for r in counted], [r.n_diff for r in counted], "o-", color=color,
                    markersize=4, linewidth=1)  # fmt: skip
    first = report.first_divergent_step
    for ax in (top, bottom):
        if first is not None:
            ax.axvline(first, color="crimson", linestyle="--", linewidth=1)
        ax.grid(True, which="major", alpha=0.3)
    if any(r.max_abs_delta for r in report.timeline):
        top.set_yscale("log")
    if any(r.n_diff for r in report.timeline):
        bottom.set_yscale("log")
        # Counts, as counts: 1, 2, 5, 10, 20, ... (not 2x10^0, 6x10^0 on a short range).
        bottom.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        bottom.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        bottom.yaxis.set_minor_formatter(NullFormatter())
    lo = hi = first
    if report.steps:
        lo, hi = report.steps[0].step, report.steps[-1].step
        pad = max(0.5, (hi - lo) * 0.02)
        bottom.set_xlim(lo - pad, hi + pad)
    # Steps are integers: one tick at least (one step alone: its own, not -0.4, -0.2, ...).
    bottom.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    top.set_ylabel("largest |A-B|")
    bottom.set_ylabel("differing elements")
    bottom.set_xlabel("step")
    if first is not None:
        # On the side of the line with room: left of it past the middle of the steps.
        left = lo is not None and hi is not None and hi > lo and first > (lo + hi) / 2
        top.annotate(
            f"first divergent step {first} " if left else f" first divergent step {first}",
            xy=(first, 0.92),
            xycoords=edge,
            color="crimson",
            fontsize=8,
            ha="right" if left else "left",
        )
    keys = ", ".join(display_path(k) for k in report.first_divergent_groups)
    verdict = (
        f"first divergent step {first}: {keys}"
        if first is not None
        else f"verdict: {report.verdict}, nothing diverged"
    )
    fig.suptitle(
        f"fastdiff: {_short(report.run_a)} vs {_short(report.run_b)}\n{verdict}", fontsize=10
    )
    notes = ["filled: large, hollow: rounding-size"]
    if isinstance(rounding, int):
        notes[0] += f" (at most {rounding} ULP)"
    if born:
        notes.append("star: an origin, where a divergence was born")
    if marked_edge:
        notes.append(
            "x at the top: no |A-B| > 0 (NaN/inf, -0.0 or NaN payload, missing, digests only)"
        )
    top.set_title("; ".join(notes), fontsize=8, loc="left")
    if report.timeline:
        top.legend(fontsize=8, loc="best", title="group", title_fontsize=8)
    else:
        top.text(0.5, 0.5, "no step differs", ha="center", va="center", transform=top.transAxes)
    return fig
