"""The ``fastdiff bench`` plot: GB/s against size, one line per case, the floor drawn in.

matplotlib is the optional extra ``plot`` (``fastdiff-dumps[plot]``); it is imported here
only, inside the functions, and drawn with the Agg backend through the
object API (no pyplot, no global state, no display needed).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..errors import FastdiffError

if TYPE_CHECKING:
    from .run import BenchResult

MISSING = (
    "--plot needs matplotlib, the optional extra 'plot': pip install 'fastdiff-dumps[plot]' "
    "(in a checkout of fastdiff: pip install '.[plot]')"
)


def require_matplotlib(path: str | os.PathLike[str]) -> None:
    """Fail early, before a long benchmark, if the plot cannot be written."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise FastdiffError(MISSING) from None
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FastdiffError(f"--plot {path}: folder {folder} does not exist")


def write_plot(result: BenchResult, path: str | os.PathLike[str]) -> None:
    """Write the plot of ``result`` as a PNG file."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import FuncFormatter, NullLocator
    except ImportError:
        raise FastdiffError(MISSING) from None
    from .run import format_size

    fig = Figure(figsize=(9, 5.5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ladder = [m for m in result.measurements if m.shape == "ladder"]
    colors = {j: f"C{i}" for i, j in enumerate(result.plan.jobs)}
    styles = {"identical": "-", "late-diff": "--"}
    markers = {"identical": "o", "late-diff": "s"}
    for case in ("identical", "late-diff"):
        for jobs in result.plan.jobs:
            ms = sorted((m for m in ladder if m.case == case and m.jobs == jobs),
                        key=lambda m: m.size)  # fmt: skip
            if ms:
                ax.plot(
                    [m.size for m in ms],
                    [m.gbs for m in ms],
                    styles[case],
                    marker=markers[case],
                    color=colors[jobs],
                    label=f"{case}, jobs {jobs}",
                )
    # The floor: the faster way of reading both files once (readinto, or mmap+xxh3),
    # measured with every case; its median per size.
    floors: dict[int, list[float]] = {}
    for m in ladder:
        floors.setdefault(m.size, []).append(m.floor_gbs)
    if floors:
        sizes = sorted(floors)
        ys = [sorted(floors[s])[len(floors[s]) // 2] for s in sizes]
        ax.plot(sizes, ys, ":", color="black", linewidth=2.5, label="floor: read both files")
    like_floor = "floor of the like run"
    for m in result.measurements:
        if m.shape == "like":
            ax.plot(
                [m.size],
                [m.gbs],
                marker="*" if m.case == "identical" else "X",
                markersize=13,
                linestyle="none",
                color=colors[m.jobs],
                label=f"like run, {m.case}, jobs {m.jobs}",
            )
            ax.plot([m.size], [m.floor_gbs], marker="_", markersize=16, markeredgewidth=2,
                    linestyle="none", color="black", label=like_floor)  # fmt: skip
            like_floor = "_nolegend_"
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
    ax.set_title(
        f"fastdiff compare_runs, in-process, median of {result.plan.repeat}: "
        f"{mc.cpus} CPUs, {mc.python}",
        fontsize=10,
    )
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    try:
        fig.savefig(os.fspath(path), format="png", dpi=100)
    except OSError as exc:
        raise FastdiffError(f"--plot {path}: cannot write ({exc.strerror or exc})") from exc
