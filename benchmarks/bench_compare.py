"""Developer benchmark: fastdiff against the ways users compare dumps today.

Generates synthetic run pairs (fastdiff.synth) in a temporary folder, then
times, side by side in one run, the fastdiff CLI as a cold subprocess, the
reference script, a pure-Python twin of its approach, a naive numpy script,
``cmp`` and ``cat`` (the read floor). Each workload's inputs are read once
before its timing (this VM evicts files idle for about a minute) and the
repetitions are interleaved across tools (fastdiff.timing).

Prints a markdown table (median wall time; GB/s = 10^9 bytes per second over
the bytes of BOTH runs, A + B; and the tool's time over fastdiff's time),
then PASS/FAIL for the performance targets.

    python benchmarks/bench_compare.py [--quick] [--repeat N] [--workdir DIR] [--keep]

Extra fastdiff arguments: ``--fastdiff-args "..."`` or the environment
variable FASTDIFF_BENCH_ARGS.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastdiff import synth, timing

REPO = Path(__file__).resolve().parent.parent
REFERENCE = REPO.parent / "shared" / "reference" / "compare-rl-state.py"
PURE_PYTHON = REPO / "benchmarks" / "pure_python_compare.py"

KEYS = ("rl-identical", "mid-identical", "mid-late-diff", "big-identical", "big-late-diff")
# A big workload's slow baselines may be estimated from its smaller twin.
PILOTS = {"big-identical": "mid-identical", "big-late-diff": "mid-late-diff"}
TOOLS = ("fastdiff", "reference", "pure-python", "numpy-naive", "cmp", "cat")

# np.fromfile both files of each pair, compare unsigned views, first index and count.
NUMPY_NAIVE = """\
import sys, pathlib
import numpy as np
a, b = map(pathlib.Path, sys.argv[1:3])
rc = 0
for pa in sorted(a.glob("step_*_*.bin")):
    x = np.fromfile(pa, dtype=np.uint8)
    y = np.fromfile(b / pa.name, dtype=np.uint8)
    if x.size != y.size:
        print(pa.name, "size", x.size, y.size); rc = 1; continue
    if x.size % 4 == 0:
        x, y = x.view(np.uint32), y.view(np.uint32)
    ne = x != y
    n = int(np.count_nonzero(ne))
    if n:
        print(pa.name, "first", int(np.argmax(ne)), "count", n); rc = 1
sys.exit(rc)
"""

# Per pair of files: cmp -s, in a shell loop (one cmp process per pair).
CMP_LOOP = 'r=0; for f in {a}/step_*_*.bin; do cmp -s "$f" {b}/"${{f##*/}}" || r=1; done; exit $r'


@dataclass
class Workload:
    key: str
    title: str
    a: Path
    b: Path
    identical: bool
    rl_layout: bool
    nbytes: int = 0  # both runs, A + B
    files: int = 0  # per run


@dataclass
class Cell:
    """One tool on one workload: timings, or why there are none."""

    times: list[float] = field(default_factory=list)
    estimate: float | None = None  # seconds, extrapolated
    note: str = ""

    @property
    def seconds(self) -> float | None:
        return timing.median(self.times) if self.times else self.estimate


@dataclass(frozen=True)
class Target:
    label: str
    workload: str
    baseline: str
    factor: float  # pass when baseline time / fastdiff time >= factor


TARGETS = (
    Target(
        "reference layout identical: fastdiff >= 2x faster than the reference script",
        workload="rl-identical",
        baseline="reference",
        factor=2.0,
    ),
    Target(
        "16 MiB late difference: fastdiff >= 5x faster than the reference approach",
        workload="mid-late-diff",
        baseline="pure-python",
        factor=5.0,
    ),
    Target(
        "512 MiB identical: fastdiff at least as fast as cat A B > /dev/null",
        workload="big-identical",
        baseline="cat",
        factor=1.0,
    ),
    Target(
        "512 MiB late difference: fastdiff >= 5x faster than numpy-naive",
        workload="big-late-diff",
        baseline="numpy-naive",
        factor=5.0,
    ),
)


def _mib(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def make_workloads(root: Path, quick: bool, wanted: set[str]) -> list[Workload]:
    """Write the dumps of the wanted workloads under ``root``; return them."""
    batch = 512 if quick else 4096
    mid = (1 if quick else 16) << 20
    big = (8 if quick else 512) << 20
    late = 4096  # the difference sits this many bytes before the end
    workloads = []
    if "rl-identical" in wanted:
        rl = root / "rl-identical"
        synth.write_rl_run(rl / "a", batch=batch, steps=4, seed=0)
        synth.write_rl_run(rl / "b", batch=batch, steps=4, seed=0)
        files = len(synth.RL_STATE_MEMBERS) * 4
        workloads.append(
            Workload(
                "rl-identical",
                f"reference layout, batch {batch}, 4 steps, {files} files/run, identical",
                rl / "a",
                rl / "b",
                identical=True,
                rl_layout=True,
            )
        )
    for key, size in (("mid", mid), ("big", big)):
        for suffix, diff_at in (("identical", None), ("late-diff", -late)):
            if f"{key}-{suffix}" not in wanted:
                continue
            folder = root / f"{key}-{suffix}"
            synth.write_pair(folder / "a", folder / "b", "activations", "f32", size, diff_at)
            what = "identical" if diff_at is None else f"1 element differs {late} B from the end"
            workloads.append(
                Workload(
                    f"{key}-{suffix}",
                    f"{_mib(size)} float32 pair, {what}",
                    folder / "a",
                    folder / "b",
                    identical=diff_at is None,
                    rl_layout=False,
                )
            )
    for w in workloads:
        w.nbytes = synth.folder_bytes(w.a) + synth.folder_bytes(w.b)
        w.files = len(list(w.a.glob("step_*_*.bin")))
    return workloads


def commands_for(w: Workload, fastdiff_args: list[str]) -> dict[str, timing.Command]:
    """The command of every tool that applies to this workload."""
    a, b = str(w.a), str(w.b)
    qa, qb = shlex.quote(a), shlex.quote(b)
    py = sys.executable
    # The float32 pairs' buffer name is in no schema group: say its dtype.
    dtype_args = [] if w.rl_layout else ["--default-dtype", "f32"]
    fastdiff = [py, "-m", "fastdiff", "compare", a, b, "--format", "json", *dtype_args]
    commands: dict[str, timing.Command] = {"fastdiff": [*fastdiff, *fastdiff_args]}
    if w.rl_layout and REFERENCE.is_file():
        commands["reference"] = [py, str(REFERENCE), a, b]
    commands["pure-python"] = [py, str(PURE_PYTHON), a, b]
    commands["numpy-naive"] = [py, "-c", NUMPY_NAIVE, a, b]
    if w.files == 1:
        (name,) = (p.name for p in w.a.glob("step_*_*.bin"))
        commands["cmp"] = ["cmp", "-s", str(w.a / name), str(w.b / name)]
    else:
        commands["cmp"] = CMP_LOOP.format(a=qa, b=qb)
    commands["cat"] = f"cat {qa}/* {qb}/* > /dev/null"
    return commands


def run_workload(
    w: Workload,
    commands: dict[str, timing.Command],
    args: argparse.Namespace,
    pilot: tuple[Workload, dict[str, Cell]] | None = None,
) -> dict[str, Cell]:
    """Time the tools on one workload.

    With a pilot (the same kind of workload, smaller, already timed), a
    baseline whose run here would take more than ``--max-run`` seconds,
    scaling its pilot time by bytes, is estimated that way instead (a lower
    bound: the pure-Python loop slows down further on big lists).
    """
    cells: dict[str, Cell] = {}
    ok = {name: (0,) if w.identical or name == "cat" else (1,) for name in commands}
    chosen: dict[str, timing.Command] = {}
    for name, command in commands.items():
        measured = pilot[1].get(name) if pilot and name != "fastdiff" else None
        if measured and measured.times:
            guess = timing.median(measured.times) * w.nbytes / pilot[0].nbytes
            if guess > args.max_run:
                cells[name] = Cell(estimate=guess, note=f"~est (from {pilot[0].key}), not run")
                continue
        chosen[name] = command
    timing.read_once([w.a, w.b])
    for name in list(chosen):  # the check run doubles as the first warm-up
        problem = verify(name, chosen[name], ok[name], args.timeout)
        if problem:
            cells[name] = Cell(note=f"failed: {problem}")
            chosen.pop(name)
    while chosen:
        try:
            times = timing.time_commands(
                chosen, args.repeat, max(args.warmup - 1, 0), ok, args.timeout
            )
        except timing.CommandFailed as exc:
            cells[exc.name] = Cell(note=f"failed: {short(exc)}")
            print(f"  {exc}", file=sys.stderr)
            chosen.pop(exc.name)
            timing.read_once([w.a, w.b])
            continue
        for name, values in times.items():
            cells[name] = Cell(times=values)
        break
    return cells


def short(exc: timing.CommandFailed) -> str:
    """A table-sized reason: the exit status and the last line of stderr."""
    status = exc.status if exc.returncode is None else f"exit {exc.returncode}"
    last = last_line(exc.detail)
    return f"{status}, {last}" if last else status


def last_line(text: str, width: int = 80) -> str:
    """The last line of a tool's stderr, shortened for a table cell."""
    lines = text.strip().splitlines()
    if not lines:
        return ""
    line = lines[-1].strip().replace(sys.executable, "python").replace("|", "/")
    return line if len(line) <= width else line[: width - 3] + "..."


def verify(name: str, command: timing.Command, ok: tuple[int, ...], timeout: float) -> str:
    """Run a tool once, checking its output too; return a problem or ''.

    An exit code alone can mislead: Python exits 1 on an uncaught exception,
    the code a comparison tool uses for "different".
    """
    try:
        proc = timing.run_captured(name, command, ok, timeout)
    except timing.CommandFailed as exc:
        print(f"  {exc}", file=sys.stderr)
        return short(exc)
    problem = ""
    if b"Traceback (most recent call last)" in proc.stderr:
        problem = "Python traceback"
    elif name == "fastdiff":
        try:
            json.loads(proc.stdout)
        except ValueError:
            problem = "stdout is not JSON"
    if problem:
        detail = timing.tail(proc.stderr) or timing.tail(proc.stdout)
        print(f"  {name}: {problem} (exit {proc.returncode})\n{detail}", file=sys.stderr)
        last = last_line(detail)
        problem = f"{problem}, exit {proc.returncode}" + (f", {last}" if last else "")
    return problem


def format_table(workloads: list[Workload], results: dict[str, dict[str, Cell]]) -> list[str]:
    """The results as markdown table lines, one row per workload and tool."""
    lines = [
        "| workload | tool | median s | min-max s | GB/s | x vs fastdiff | note |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for w in workloads:
        cells = results[w.key]
        base = cells.get("fastdiff", Cell()).seconds
        for tool in TOOLS:
            cell = cells.get(tool)
            if cell is None:
                continue
            s = cell.seconds
            tilde = "~" if cell.estimate is not None else ""
            sec = f"{tilde}{s:.3f}" if s is not None else "-"
            gbs = f"{tilde}{w.nbytes / s / 1e9:.2f}" if s else "-"
            ratio = f"{tilde}{s / base:.2f}x" if s is not None and base else "-"
            spread = f"{min(cell.times):.3f}-{max(cell.times):.3f}" if cell.times else "-"
            row = (w.key, tool, sec, spread, gbs, ratio, cell.note)
            lines.append("| " + " | ".join(row) + " |")
    return lines


def format_targets(results: dict[str, dict[str, Cell]], quick: bool) -> list[str]:
    """One PASS/FAIL line per performance target."""
    lines = []
    for t in TARGETS:
        if t.workload not in results:
            lines.append(f"- n/a {t.label}: workload {t.workload} not run")
            continue
        cells = results[t.workload]
        fd = cells.get("fastdiff", Cell())
        other = cells.get(t.baseline, Cell())
        if not fd.times:
            verdict, detail = "FAIL", f"no fastdiff timing ({fd.note or 'not run'})"
        elif other.seconds is None:
            verdict, detail = "n/a", f"no {t.baseline} timing ({other.note or 'not run'})"
        else:
            ratio = other.seconds / timing.median(fd.times)
            verdict = "PASS" if ratio >= t.factor else "FAIL"
            est = " (estimated)" if other.estimate is not None else ""
            detail = (
                f"fastdiff {timing.median(fd.times):.3f} s, {t.baseline} "
                f"{other.seconds:.3f} s{est}: {ratio:.2f}x (need >= {t.factor:g}x)"
            )
        lines.append(f"- {verdict} {t.label}: {detail}")
    if quick:
        lines.append("- (--quick: sizes are smaller than the targets assume; indicative only)")
    return lines


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = timing.command_benchmark_parser(
        __doc__.splitlines()[0], "small sizes, for a smoke run", "dumps"
    )
    p.add_argument(
        "--max-run",
        type=float,
        default=10.0,
        help="a baseline whose run on a 512 MiB workload would take more than this many "
        "seconds (its 16 MiB time scaled by bytes) is estimated, not run (default 10)",
    )
    p.add_argument(
        "--workloads", help="comma-separated keys to run (default all): " + ", ".join(KEYS)
    )
    return timing.parse_benchmark_args(p, argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    wanted = set(args.workloads.split(",")) if args.workloads else set(KEYS)
    if unknown := wanted - set(KEYS):
        print(
            f"error: unknown --workloads {sorted(unknown)}; use {', '.join(KEYS)}", file=sys.stderr
        )
        return 2
    fastdiff_args = shlex.split(args.fastdiff_args)
    startup = timing.prepare_cli(REPO)
    load = timing.warn_if_busy()
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="fastdiff-bench-", dir=args.workdir))
    try:
        start = time.perf_counter()
        print(f"generating dumps in {root} ...", file=sys.stderr)
        workloads = make_workloads(root, args.quick, wanted)
        print(f"  done in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        if not REFERENCE.is_file():
            print(f"note: {REFERENCE} is absent: no reference column", file=sys.stderr)
        results: dict[str, dict[str, Cell]] = {}
        for w in workloads:
            print(f"timing {w.key}: {w.title} ...", file=sys.stderr)
            pilot = next((p for p in workloads if p.key == PILOTS.get(w.key)), None)
            known = (pilot, results[pilot.key]) if pilot and pilot.key in results else None
            results[w.key] = run_workload(w, commands_for(w, fastdiff_args), args, known)
    finally:
        if args.keep:
            print(f"dumps kept in {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)

    print(f"# fastdiff compare benchmark{' (--quick)' if args.quick else ''}")
    print()
    print(
        f"Floor of every Python tool here: a bare interpreter start (`python -c pass`) "
        f"takes {startup * 1000:.0f} ms on this machine."
    )
    print()
    print(
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average {load:.2f} at start, "
        f"median of {args.repeat} interleaved runs after "
        f"{max(args.warmup, 1)} warm-up, inputs read into the page cache before each workload."
    )
    print(
        "GB/s: 10^9 bytes per second over the bytes of both runs (A + B). "
        "x vs fastdiff: the tool's median time / fastdiff's (>1: fastdiff is faster). "
        "~: estimated, the tool's 16 MiB time scaled by bytes (a lower bound), not run."
    )
    extra = f" {shlex.join(fastdiff_args)}" if fastdiff_args else ""
    print(
        f"fastdiff: `python -m fastdiff compare A B --format json{extra}` as a cold process "
        "(plus `--default-dtype f32` on the float32 pairs)."
    )
    print()
    for w in workloads:
        print(f"- {w.key}: {w.title}; {w.nbytes / 1e6:.1f} MB in both runs")
    print()
    print("\n".join(format_table(workloads, results)))
    print()
    print("Targets:")
    print("\n".join(format_targets(results, args.quick)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
