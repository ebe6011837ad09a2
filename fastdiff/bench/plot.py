"""The ``fastdiff bench`` plot: GB/s against size, a line per case and way fastdiff ran,
each case's floor drawn in, and the load average when it makes the timings noisy.

matplotlib is the optional extra ``plot`` (``fastdiff-dumps[plot]``); it is imported here
only, inside the functions, and drawn with the Agg backend through the
object API (no pyplot, no global state, no display needed).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..errors import FastdiffError
from ..model.bench import BenchCase, BenchShape, noisy_load
from ..render.bench import format_size, jobs_label

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..model.bench import BenchResult, Measurement


def write_plot(result: BenchResult, path: str | os.PathLike[str]) -> None:
    """Write the plot of ``result`` as a PNG file."""
    fig = draw(result)
    try:
        fig.savefig(os.fspath(path), format="png", dpi=100)
    except OSError as exc:
        raise FastdiffError(f"--plot {path}: cannot write ({exc.strerror or exc})") from exc


def _configuration(m: Measurement) -> tuple[str, int]:
    """A line of the plot: what ran (serial: whatever the jobs value)."""
    return (m.executor, 0 if m.executor == "serial" else m.jobs)


def _configuration_label(ms: list[Measurement]) -> str:
    """``jobs 2, thread``; ``jobs 1-2, serial`` where the rows say so alike, else
    ``serial`` (the jobs values that run serially can change with the size)."""
    labels = {jobs_label(m) for m in ms}
    if ms[0].executor == "serial" and len(labels) > 1:
        return "serial"
    return f"jobs {labels.pop()}, {ms[0].executor}"


def load_note(result: BenchResult) -> str | None:
    """What the plot says of the load average when it makes timings noisy, else None."""
    mc = result.machine
    if mc.load_average is None or not noisy_load(mc.load_average, mc.cpus):
        return None
    return (
        f"load average {mc.load_average:.2f} on {mc.cpus} CPUs at start: other work was "
        "running, timings are noisy"
    )


def draw(result: BenchResult) -> Figure:
    """The figure: one line per case and way fastdiff ran (serial, or jobs N on a
    pool), one floor line per case, a like run as stars; the load average when
    it is high. Nothing is written."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import FuncFormatter, NullLocator
    except ImportError:
        from ..render.plot import MISSING

        raise FastdiffError(MISSING) from None
    fig = Figure(figsize=(9, 5.5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ladder = [m for m in result.measurements if m.shape is BenchShape.LADDER]
    # Rows of jobs values that ran alike are one row already; across sizes, the
    # same way of running (serial) is one line.
    keys = sorted({_configuration(m) for m in result.measurements}, key=lambda k: (k[1], k[0]))
    colors = {key: f"C{i}" for i, key in enumerate(keys)}
    labels = {
        key: _configuration_label([m for m in result.measurements if _configuration(m) == key])
        for key in keys
    }
    styles = {BenchCase.IDENTICAL: "-", BenchCase.LATE_DIFF: "--"}
    markers = {BenchCase.IDENTICAL: "o", BenchCase.LATE_DIFF: "s"}
    for case in BenchCase.ALL:
        for key in keys:
            ms = sorted((m for m in ladder if m.case is case and _configuration(m) == key),
                        key=lambda m: m.size)  # fmt: skip
            if ms:
                ax.plot(
                    [m.size for m in ms],
                    [m.gbs for m in ms],
                    styles[case],
                    marker=markers[case],
                    color=colors[key],
                    label=f"{case}, {labels[key]}",
                )
    # The floor of each case: the faster way of reading both files once (readinto,
    # or mmap+xxh3), timed in the same rounds as the case; the same for all its rows.
    floor_styles = {BenchCase.IDENTICAL: ":", BenchCase.LATE_DIFF: "-."}
    floor_colors = {BenchCase.IDENTICAL: "black", BenchCase.LATE_DIFF: "dimgray"}
    for case in BenchCase.ALL:
        floors = {m.size: m.floor_gbs for m in ladder if m.case is case}
        if floors:
            sizes = sorted(floors)
            ax.plot(
                sizes,
                [floors[s] for s in sizes],
                floor_styles[case],
                color=floor_colors[case],
                linewidth=2.5,
                label=f"floor, {case}: read both files",
            )
    for m in result.measurements:
        if m.shape is BenchShape.LIKE:
            ax.plot(
                [m.size],
                [m.gbs],
                marker="*" if m.case is BenchCase.IDENTICAL else "X",
                markersize=13,
                linestyle="none",
                color=colors[_configuration(m)],
                label=f"like run, {m.case}, {labels[_configuration(m)]}",
            )
    for case in BenchCase.ALL:
        like = [m for m in result.measurements if m.shape is BenchShape.LIKE and m.case is case]
        if like:
            ax.plot([like[0].size], [like[0].floor_gbs], marker="_", markersize=16,
                    markeredgewidth=2, linestyle="none", color=floor_colors[case],
                    label=f"floor of the like run, {case}")  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ticks = sorted({m.size for m in ladder}) or sorted({m.size for m in result.measurements})
    if ticks:
        ax.set_xticks(ticks, [format_size(t) for t in ticks])
        ax.xaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: f"{y:g}"))
    ax.set_xlabel("bytes per run (the ladder: one file per run)")
    ax.set_ylabel("GB/s (10^9 bytes of both runs per second)")
    mc = result.machine
    title = (
        f"fastdiff compare_runs, in-process, median of {result.plan.repeat}: "
        f"{mc.cpus} CPUs, {mc.python}"
    )
    note = load_note(result)
    ax.set_title(title if note is None else f"{title}\n{note}", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    return fig
