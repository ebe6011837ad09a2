"""Developer benchmark: fastdiff against the ways users compare dumps today.

Installs this checkout into a venv as users do (``pip install .``, not
editable; the venv is built once under ~/.cache/fastdiff-bench and reused),
then, workload by workload, writes synthetic run pairs (fastdiff.bench.synth) in a
temporary folder and times, side by side as cold processes, the fastdiff CLI,
the reference script, a pure-Python twin of its approach, a naive numpy
script, floor scripts (the least a comparison process can do), ``python -c
pass``, ``cmp`` and ``cat``. Every Python tool runs with the venv's
interpreter (``--python PATH``: with that one, fastdiff from this checkout).
Each workload's inputs are read once before its timing (this VM evicts files
idle for about a minute), the repetitions are interleaved across tools
(harness.py), and the dumps are removed before the next workload.

Prints a markdown table (median wall time; GB/s = 10^9 bytes per second over
the bytes of BOTH runs, A + B; and the tool's time over fastdiff's time), the
peak memory (ru_maxrss) of fastdiff and of a bare interpreter, then the
performance targets with their measured ratios, met or not.

    python benchmarks/bench_compare.py [--quick] [--repeat N] [--python PATH] [--keep]

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
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import harness
import venvs

from fastdiff.bench import synth

REPO = Path(__file__).resolve().parent.parent
# The reference script sits beside the main checkout; a worktree is one folder deeper.
_REFERENCES = [d / "shared" / "reference" / "compare-rl-state.py" for d in REPO.parents[:2]]
REFERENCE = next((p for p in _REFERENCES if p.is_file()), _REFERENCES[0])
PURE_PYTHON = REPO / "benchmarks" / "pure_python_compare.py"
FLOOR = REPO / "benchmarks" / "floor_compare.py"

KEYS = (
    "tiny",
    "rl-identical",
    "mid-identical",
    "mid-late-diff",
    "big-identical",
    "big-late-diff",
    "long-1x",
    "long-8x",
    "sparse",
)
# A big workload's slow baselines may be estimated from its smaller twin.
PILOTS = {"big-identical": "mid-identical", "big-late-diff": "mid-late-diff"}
TOOLS = (
    "fastdiff",
    "fastdiff text",
    "fastdiff json",
    "python -c pass",
    "floor read+xxh3",
    "floor mmap+xxh3",
    "reference",
    "pure-python",
    "numpy-naive",
    "cmp",
    "cat",
)
#: Tools whose stdout must be a JSON document.
JSON_TOOLS = ("fastdiff", "fastdiff json")
#: The tools that turn whole files into Python lists and loop over them:
#: bytes of memory per byte compared (about 32 bytes per 4-byte element, both
#: files at once). Only these may be estimated from a pilot: their time grows
#: with the elements, where the others' time on a 16 MiB pilot is mostly
#: their start-up (numpy's import), which no scaling by bytes predicts.
LIST_MEMORY = {"reference": 8, "pure-python": 8}
#: The buffer every pair workload holds: a float32 name of the reference
#: layout, so the reference script compares it too (at step 0).
PAIR_NAME = "rewards"
#: Peak memory allowed above a bare interpreter's (the issue's RSS target).
RSS_ALLOWANCE = 64 << 20
#: Disk left free beyond what a workload takes.
SPARE_DISK = 1 << 30
#: A workload of this many files per run or more is removed at the very end,
#: after the report: on a disk mounted with ``discard`` (this VM), removing
#: small files already written back costs milliseconds each.
MANY_FILES = 10_000

# np.fromfile both files of each pair, != on unsigned views (bitwise), then
# first index, count and max |A-B| (float32, over the whole arrays), as a
# user would write it: np.abs(a - b).max().
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
        d = np.abs(x.view(np.float32) - y.view(np.float32)).max() if x.itemsize == 4 else "-"
        print(pa.name, "first", int(np.argmax(ne)), "count", n, "max", d); rc = 1
sys.exit(rc)
"""

# Per pair of files: cmp -s, in a shell loop (one cmp process per pair).
CMP_LOOP = 'r=0; for f in {a}/step_*_*.bin; do cmp -s "$f" {b}/"${{f##*/}}" || r=1; done; exit $r'


@dataclass(frozen=True)
class Sizes:
    tiny: int = 4 << 10
    batch: int = 4096  # reference layout: 16 KiB per file
    mid: int = 16 << 20
    big: int = 512 << 20
    long_batch: int = 4  # 34 small buffers a step
    long_steps: int = 250  # and 8x that
    sparse: int = 4 << 30


QUICK = Sizes(batch=512, mid=1 << 20, big=8 << 20, long_steps=5, sparse=64 << 20)


@dataclass
class Workload:
    key: str
    title: str
    kind: str  # tiny, rl, pair, long, sparse: which tools apply
    identical: bool
    write: Callable[[Path, Path], None]  # writes runs A and B
    disk: int  # bytes it takes on disk (whole 4 KiB blocks)
    timed: bool = True  # False: peak memory only
    rss: bool = False  # also the peak memory of fastdiff and of a bare interpreter
    a: Path = Path()
    b: Path = Path()
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
        return harness.median(self.times) if self.times else self.estimate


@dataclass(frozen=True)
class Interpreter:
    """The interpreter of every Python tool, and how fastdiff is started with it."""

    python: str
    fastdiff: tuple[str, ...]  # the command before ``compare``
    label: str  # for the header


@dataclass(frozen=True)
class Target:
    """A ratio of two median times: ``ratio_of`` over ``over``, bounded."""

    label: str
    ratio_of: tuple[str, str]  # (workload, tool)
    over: tuple[str, str]
    at_least: float | None = None
    at_most: float | None = None

    @property
    def need(self) -> str:
        return f">= {self.at_least:g}x" if self.at_least is not None else f"<= {self.at_most:g}x"

    def met(self, ratio: float) -> bool:
        if self.at_least is not None:
            return ratio >= self.at_least
        return self.at_most is not None and ratio <= self.at_most


TARGETS = (
    Target(
        "tiny compare: fastdiff over a bare interpreter (`python -c pass`)",
        ("tiny", "fastdiff"),
        ("tiny", "python -c pass"),
        at_most=2.0,
    ),
    Target(
        "reference layout, identical: the reference script over fastdiff",
        ("rl-identical", "reference"),
        ("rl-identical", "fastdiff"),
        at_least=1.5,
    ),
    Target(
        "16 MiB late difference: the reference script over fastdiff",
        ("mid-late-diff", "reference"),
        ("mid-late-diff", "fastdiff"),
        at_least=15.0,
    ),
    Target(
        "512 MiB identical: fastdiff over the mmap+xxh3 floor (2 threads)",
        ("big-identical", "fastdiff"),
        ("big-identical", "floor mmap+xxh3"),
        at_most=1.1,
    ),
    Target(
        "512 MiB late difference: fastdiff over the mmap+xxh3 floor (2 threads)",
        ("big-late-diff", "fastdiff"),
        ("big-late-diff", "floor mmap+xxh3"),
        at_most=1.3,
    ),
    Target(
        "512 MiB late difference: naive numpy over fastdiff",
        ("big-late-diff", "numpy-naive"),
        ("big-late-diff", "fastdiff"),
        at_least=10.0,
    ),
    Target(
        "long run, text: fastdiff on 8x the steps over fastdiff on 1x",
        ("long-8x", "fastdiff text"),
        ("long-1x", "fastdiff text"),
        at_most=10.0,
    ),
    Target(
        "long run, JSON: fastdiff on 8x the steps over fastdiff on 1x",
        ("long-8x", "fastdiff json"),
        ("long-1x", "fastdiff json"),
        at_most=10.0,
    ),
    Target(
        "long run, text: fastdiff over the scandir+read+xxh3 floor (8x steps)",
        ("long-8x", "fastdiff text"),
        ("long-8x", "floor read+xxh3"),
        at_most=2.0,
    ),
    Target(
        "long run, JSON: fastdiff over the scandir+read+xxh3 floor (8x steps)",
        ("long-8x", "fastdiff json"),
        ("long-8x", "floor read+xxh3"),
        at_most=2.0,
    ),
)


def _size(n: int) -> str:
    if n >= 1 << 30:
        return f"{n >> 30} GiB"
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def _decimal(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.1f} kB"


def _blocks(n: int) -> int:
    """Bytes a file of ``n`` bytes takes on disk: whole 4 KiB blocks."""
    return -(-n // 4096) * 4096


def _write_rl(batch: int, steps: int) -> Callable[[Path, Path], None]:
    def write(a: Path, b: Path) -> None:
        synth.write_rl_run(a, batch=batch, steps=steps, seed=0)
        shutil.copytree(a, b)  # the same bytes as writing it again, faster

    return write


def _write_pair(size: int, diff_at: int | None) -> Callable[[Path, Path], None]:
    def write(a: Path, b: Path) -> None:
        synth.write_pair(a, b, PAIR_NAME, "f32", size, diff_at)

    return write


def _write_sparse(size: int) -> Callable[[Path, Path], None]:
    def write(a: Path, b: Path) -> None:
        harness.write_sparse_pair(a, b, PAIR_NAME, size)

    return write


def plan_workloads(sizes: Sizes, wanted: set[str]) -> list[Workload]:
    """The wanted workloads, in the order they run (a pilot before its big twin)."""
    rl_disk = sum(
        _blocks(synth.rl_elements(n, sizes.batch) * synth.ITEMSIZE[d])
        for n, d in synth.RL_STATE_MEMBERS
    )
    long_disk = sum(
        _blocks(synth.rl_elements(n, sizes.long_batch) * synth.ITEMSIZE[d])
        for n, d in synth.RL_STATE_MEMBERS
    )
    late = 4096  # the difference sits this many bytes before the end
    rl_files = len(synth.RL_STATE_MEMBERS) * 4
    out = [
        Workload(
            "tiny",
            f"one {_size(sizes.tiny)} float32 file per run, identical",
            "tiny",
            True,
            _write_pair(sizes.tiny, None),
            2 * _blocks(sizes.tiny),
        ),
        Workload(
            "rl-identical",
            f"reference layout, batch {sizes.batch}, 4 steps, {rl_files} files/run, identical",
            "rl",
            True,
            _write_rl(sizes.batch, 4),
            2 * 4 * rl_disk,
        ),
    ]
    for key, size in (("mid", sizes.mid), ("big", sizes.big)):
        for suffix, diff_at in (("identical", None), ("late-diff", -late)):
            what = "identical" if diff_at is None else f"1 element differs {late} B from the end"
            out.append(
                Workload(
                    f"{key}-{suffix}",
                    f"one {_size(size)} float32 file per run, {what}",
                    "pair",
                    diff_at is None,
                    _write_pair(size, diff_at),
                    2 * _blocks(size),
                    rss=key == "big" and diff_at is None,
                )
            )
    for key, steps in (("long-1x", sizes.long_steps), ("long-8x", 8 * sizes.long_steps)):
        files = len(synth.RL_STATE_MEMBERS) * steps
        out.append(
            Workload(
                key,
                f"reference layout, batch {sizes.long_batch}, {steps} steps, "
                f"{files} files/run, identical",
                "long",
                True,
                _write_rl(sizes.long_batch, steps),
                2 * steps * long_disk,
            )
        )
    out.append(
        Workload(
            "sparse",
            f"one {_size(sizes.sparse)} sparse file of zeros per run, identical (peak memory only)",
            "sparse",
            True,
            _write_sparse(sizes.sparse),
            2 * 4096,
            timed=False,
            rss=True,
        )
    )
    return [w for w in out if w.key in wanted]


def commands_for(
    w: Workload, py: Interpreter, fastdiff_args: list[str]
) -> dict[str, harness.Command]:
    """The command of every tool that applies to this workload."""
    a, b = str(w.a), str(w.b)
    qa, qb = shlex.quote(a), shlex.quote(b)
    fastdiff = [*py.fastdiff, "compare", a, b]
    if w.kind == "long":  # the reference knows steps 0-3 only; cat's glob is too long
        return {
            "fastdiff text": [*fastdiff, *fastdiff_args],
            "fastdiff json": [*fastdiff, "--format", "json", *fastdiff_args],
            "floor read+xxh3": [py.python, str(FLOOR), a, b],
        }
    commands: dict[str, harness.Command] = {
        "fastdiff": [*fastdiff, "--format", "json", *fastdiff_args]
    }
    if w.kind == "sparse":  # peak memory only (measure_rss)
        return commands
    if w.kind == "tiny":
        commands["python -c pass"] = [py.python, "-c", "pass"]
    if w.kind in ("tiny", "rl"):
        commands["floor read+xxh3"] = [py.python, str(FLOOR), a, b]
    if REFERENCE.is_file():
        commands["reference"] = [py.python, str(REFERENCE), a, b]
    if w.kind == "tiny":
        return commands
    if w.kind == "pair":
        commands["floor mmap+xxh3"] = [py.python, str(FLOOR), "--mmap", a, b]
    commands["pure-python"] = [py.python, str(PURE_PYTHON), a, b]
    commands["numpy-naive"] = [py.python, "-c", NUMPY_NAIVE, a, b]
    if w.files == 1:
        (name,) = (p.name for p in w.a.glob("step_*_*.bin"))
        commands["cmp"] = ["cmp", "-s", str(w.a / name), str(w.b / name)]
    else:
        commands["cmp"] = CMP_LOOP.format(a=qa, b=qb)
    commands["cat"] = f"cat {qa}/* {qb}/* > /dev/null"
    return commands


def ok_codes(w: Workload, commands: dict[str, harness.Command]) -> dict[str, tuple[int, ...]]:
    always_0 = ("cat", "python -c pass")
    return {name: (0,) if w.identical or name in always_0 else (1,) for name in commands}


def run_workload(
    w: Workload,
    commands: dict[str, harness.Command],
    args: argparse.Namespace,
    pilot: tuple[Workload, dict[str, Cell]] | None = None,
) -> dict[str, Cell]:
    """Time the tools on one workload.

    With a pilot (the same kind of workload, smaller, already timed), a
    pure-Python baseline (:data:`LIST_MEMORY`) whose run here would take
    more than ``--max-run`` seconds, scaling its pilot time by bytes, is
    estimated that way instead (a lower bound: the loop slows down further
    on big lists). So is one that would need more than half of the
    available memory. Every other tool is measured.
    """
    cells: dict[str, Cell] = {}
    ok = ok_codes(w, commands)
    memory = available_memory()
    chosen: dict[str, harness.Command] = {}
    for name, command in commands.items():
        hungry = name in LIST_MEMORY and LIST_MEMORY[name] * w.nbytes > memory / 2
        measured = pilot[1].get(name) if pilot and name in LIST_MEMORY else None
        if measured and measured.times:
            guess = harness.median(measured.times) * w.nbytes / pilot[0].nbytes
            if guess > args.max_run or hungry:
                cells[name] = Cell(estimate=guess, note=f"~est (from {pilot[0].key}), not run")
                continue
        if hungry:
            need = LIST_MEMORY[name] * w.nbytes / 1e9
            cells[name] = Cell(note=f"not run: needs about {need:.0f} GB of memory")
            continue
        chosen[name] = command
    harness.read_once([w.a, w.b])
    for name in list(chosen):  # the check run doubles as the first warm-up
        problem = verify(name, chosen[name], ok[name], args.timeout)
        if problem:
            cells[name] = Cell(note=f"failed: {problem}")
            chosen.pop(name)
    while chosen:
        try:
            times = harness.time_commands(
                chosen, args.repeat, max(args.warmup - 1, 0), ok, args.timeout
            )
        except harness.CommandFailed as exc:
            cells[exc.name] = Cell(note=f"failed: {short(exc)}")
            print(f"  {exc}", file=sys.stderr)
            chosen.pop(exc.name)
            harness.read_once([w.a, w.b])
            continue
        for name, values in times.items():
            cells[name] = Cell(times=values)
        break
    return cells


def measure_rss(
    w: Workload,
    commands: dict[str, harness.Command],
    py: Interpreter,
    args: argparse.Namespace,
    check: bool,
) -> dict[str, harness.RunStats | str]:
    """Peak memory (and wall time) of one run of fastdiff and of a bare
    interpreter; a failure is a string saying why."""
    out: dict[str, harness.RunStats | str] = {}
    commands = {"fastdiff": commands["fastdiff"], "python -c pass": [py.python, "-c", "pass"]}
    ok = ok_codes(w, commands)
    harness.read_once([w.a, w.b])
    for name in ("fastdiff", "python -c pass"):
        if check and (problem := verify(name, commands[name], ok[name], args.timeout)):
            out[name] = f"failed: {problem}"
            continue
        try:
            out[name] = harness.peak_rss(name, commands[name], ok[name], args.timeout)
        except harness.CommandFailed as exc:
            print(f"  {exc}", file=sys.stderr)
            out[name] = f"failed: {short(exc)}"
    return out


def available_memory() -> float:
    """MemAvailable in bytes (infinite where the kernel does not say)."""
    from fastdiff.bench.run import memory_available

    mem = memory_available()
    return float("inf") if mem is None else float(mem)


def short(exc: harness.CommandFailed) -> str:
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


def verify(name: str, command: harness.Command, ok: tuple[int, ...], timeout: float) -> str:
    """Run a tool once, checking its output too; return a problem or ''.

    An exit code alone can mislead: Python exits 1 on an uncaught exception,
    the code a comparison tool uses for "different".
    """
    try:
        proc = harness.run_captured(name, command, ok, timeout)
    except harness.CommandFailed as exc:
        print(f"  {exc}", file=sys.stderr)
        return short(exc)
    problem = ""
    if b"Traceback (most recent call last)" in proc.stderr:
        problem = "Python traceback"
    elif name in JSON_TOOLS:
        try:
            json.loads(proc.stdout)
        except ValueError:
            problem = "stdout is not JSON"
    if problem:
        detail = harness.tail(proc.stderr) or harness.tail(proc.stdout)
        print(f"  {name}: {problem} (exit {proc.returncode})\n{detail}", file=sys.stderr)
        last = last_line(detail)
        problem = f"{problem}, exit {proc.returncode}" + (f", {last}" if last else "")
    return problem


def base_tool(cells: dict[str, Cell]) -> str:
    """The fastdiff column the ratios of a workload are against."""
    return "fastdiff" if "fastdiff" in cells else "fastdiff text"


def format_table(workloads: list[Workload], results: dict[str, dict[str, Cell]]) -> list[str]:
    """The results as markdown table lines, one row per workload and tool."""
    lines = [
        "| workload | tool | median s | min-max s | GB/s | x vs fastdiff | note |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for w in workloads:
        if w.key not in results:
            continue
        cells = results[w.key]
        base = cells.get(base_tool(cells), Cell()).seconds
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


def format_rss(rss: dict[str, dict[str, harness.RunStats | str]]) -> list[str]:
    """Peak memory per workload: fastdiff against a bare interpreter."""
    lines = [
        "| workload | tool | peak RSS MiB | over `python -c pass` MiB | wall s | note |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for key, stats in rss.items():
        bare = stats.get("python -c pass")
        for tool, st in stats.items():
            if isinstance(st, str):
                lines.append(f"| {key} | {tool} | - | - | - | {st} |")
                continue
            over = (
                f"{(st.max_rss - bare.max_rss) / (1 << 20):+.1f}"
                if isinstance(bare, harness.RunStats)
                else "-"
            )
            mib = st.max_rss / (1 << 20)
            lines.append(f"| {key} | {tool} | {mib:.1f} | {over} | {st.seconds:.3f} |  |")
    return lines


def format_targets(
    results: dict[str, dict[str, Cell]],
    rss: dict[str, dict[str, harness.RunStats | str]],
    titles: dict[str, str],
) -> list[str]:
    """One row per performance target: the measured ratio, met or not."""
    lines = ["| target | measured | need | |", "| --- | --- | --- | --- |"]
    for t in TARGETS:
        not_run = sorted({w for w, _ in (t.ratio_of, t.over) if w not in results})
        if not_run:
            lines.append(f"| {t.label} | not run: {', '.join(not_run)} | {t.need} | n/a |")
            continue
        cells = [results[w].get(tool) for w, tool in (t.ratio_of, t.over)]
        missing = [
            f"no {tool} timing on {w}" + (f" ({c.note})" if c and c.note else "")
            for (w, tool), c in zip((t.ratio_of, t.over), cells, strict=True)
            if c is None or c.seconds is None
        ]
        if missing:  # fastdiff that did not run misses the target; a baseline leaves it open
            fastdiff_failed = any(
                c is None or c.seconds is None
                for (_, tool), c in zip((t.ratio_of, t.over), cells, strict=True)
                if tool.startswith("fastdiff")
            )
            verdict = "not met" if fastdiff_failed else "n/a"
            lines.append(f"| {t.label} | {'; '.join(missing)} | {t.need} | {verdict} |")
            continue
        num, den = (c.seconds for c in cells if c is not None)
        assert num is not None and den is not None
        ratio = num / den
        est = " (estimated)" if any(c is not None and c.estimate is not None for c in cells) else ""
        verdict = "met" if t.met(ratio) else "not met"
        measured = f"{ratio:.2f}x ({num:.3f} s / {den:.3f} s){est}"
        lines.append(f"| {t.label} | {measured} | {t.need} | {verdict} |")
    for key, stats in rss.items():
        fd, bare = stats.get("fastdiff"), stats.get("python -c pass")
        label = f"peak RSS, {titles[key].split(',')[0]}: fastdiff over a bare interpreter"
        need = f"<= +{RSS_ALLOWANCE >> 20} MiB"
        if not isinstance(fd, harness.RunStats) or not isinstance(bare, harness.RunStats):
            lines.append(f"| {label} | {fd if isinstance(fd, str) else bare} | {need} | n/a |")
            continue
        extra = fd.max_rss - bare.max_rss
        verdict = "met" if extra <= RSS_ALLOWANCE else "not met"
        measured = (
            f"{extra / (1 << 20):+.1f} MiB ({fd.max_rss / (1 << 20):.1f} MiB / "
            f"{bare.max_rss / (1 << 20):.1f} MiB)"
        )
        lines.append(f"| {label} | {measured} | {need} | {verdict} |")
    return lines


def describe(python: str) -> str:
    """The interpreter's version and those of the packages fastdiff uses."""
    code = (
        "import sys, importlib.metadata as m\n"
        "def v(p):\n"
        "    try: return m.version(p)\n"
        "    except m.PackageNotFoundError: return 'absent'\n"
        "print(f'Python {sys.version.split()[0]}, ' + ', '.join(p + ' ' + v(p) "
        "for p in ('numpy', 'numba', 'xxhash')))\n"
    )
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
    return proc.stdout.strip() or "version unknown"


def choose_interpreter(args: argparse.Namespace) -> Interpreter:
    """The venv with this checkout installed (default), or ``--python``."""
    if args.python:
        python = shutil.which(args.python) or args.python
        venvs.prepare_cli(REPO, python)
        return Interpreter(
            python,
            (python, "-m", "fastdiff"),
            f"`{python}` (given with --python; fastdiff from this checkout on PYTHONPATH, "
            f"bytecode compiled first): {describe(python)}",
        )
    say = lambda msg: print(msg, file=sys.stderr)  # noqa: E731
    python = venvs.prepare_venv(REPO, args.venv_dir, say)
    label = (
        f"a venv with this checkout installed by `pip install .` (not editable), "
        f"`{python.parent.parent}`: {describe(str(python))}"
    )
    return Interpreter(str(python), (str(python.parent / "fastdiff"),), label)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = harness.command_benchmark_parser(
        __doc__.splitlines()[0], "small sizes, for a smoke run", "dumps"
    )
    p.add_argument(
        "--python",
        metavar="PATH",
        help="run every Python tool with this interpreter, fastdiff from this checkout "
        "(PYTHONPATH), instead of a venv with a non-editable install",
    )
    p.add_argument(
        "--venv-dir",
        type=Path,
        metavar="DIR",
        help=f"where the benchmark venvs are kept (default {venvs.bench_cache_dir()})",
    )
    p.add_argument(
        "--max-run",
        type=float,
        default=10.0,
        help="the reference or pure-python, when its run on a 512 MiB workload would take "
        "more than this many seconds (its 16 MiB time scaled by bytes), is estimated, not run "
        "(default 10)",
    )
    p.add_argument(
        "--workloads", help="comma-separated keys to run (default all): " + ", ".join(KEYS)
    )
    return harness.parse_benchmark_args(p, argv)


def run_workloads(
    workloads: list[Workload],
    root: Path,
    py: Interpreter,
    args: argparse.Namespace,
    fastdiff_args: list[str],
) -> tuple[dict[str, dict[str, Cell]], dict[str, dict[str, harness.RunStats | str]], list[str]]:
    """Write, time and (unless ``--keep``) remove each workload in turn; return
    the timings, the peak memory figures and the workloads skipped for want of disk."""
    results: dict[str, dict[str, Cell]] = {}
    rss: dict[str, dict[str, harness.RunStats | str]] = {}
    skipped: list[str] = []
    for w in workloads:
        free = shutil.disk_usage(root).free
        if w.disk + SPARE_DISK > free:
            skipped.append(
                f"{w.key}: needs {w.disk / 1e9:.1f} GB of disk and {SPARE_DISK / 1e9:.1f} GB "
                f"spare, {free / 1e9:.1f} GB free in {root}"
            )
            print(f"skipping {skipped[-1]}", file=sys.stderr)
            continue
        folder = root / w.key
        w.a, w.b = folder / "a", folder / "b"
        print(f"{w.key}: writing {w.title} ...", file=sys.stderr)
        w.write(w.a, w.b)
        if w.kind == "pair":
            os.sync()  # write the big files back now, not during the timing
        w.nbytes = harness.folder_bytes(w.a) + harness.folder_bytes(w.b)
        w.files = len(list(w.a.glob("step_*_*.bin")))
        commands = commands_for(w, py, fastdiff_args)
        if w.timed:
            print(f"{w.key}: timing ...", file=sys.stderr)
            pilot = next((p for p in workloads if p.key == PILOTS.get(w.key)), None)
            known = (pilot, results[pilot.key]) if pilot and pilot.key in results else None
            results[w.key] = run_workload(w, commands, args, known)
        if w.rss:
            print(f"{w.key}: peak memory ...", file=sys.stderr)
            rss[w.key] = measure_rss(w, commands, py, args, check=not w.timed)
        if not args.keep and w.files < MANY_FILES:
            shutil.rmtree(folder)  # many files wait for the end (see MANY_FILES)
    return results, rss, skipped


def format_report(
    workloads: list[Workload],
    results: dict[str, dict[str, Cell]],
    rss: dict[str, dict[str, harness.RunStats | str]],
    skipped: list[str],
    py: Interpreter,
    header: dict[str, float],
    args: argparse.Namespace,
) -> list[str]:
    """The whole report, markdown: how it was measured, the tables, the targets."""
    fastdiff_args = shlex.split(args.fastdiff_args)
    extra = f" {shlex.join(fastdiff_args)}" if fastdiff_args else ""
    lines = [
        f"# fastdiff compare benchmark{' (--quick)' if args.quick else ''}",
        "",
        f"Interpreter of every Python tool: {py.label}.",
        f"A bare interpreter start (`python -c pass`) takes {header['startup'] * 1000:.0f} ms "
        "with it: the floor of every Python tool.",
        "",
        f"{platform.system()}, {os.cpu_count()} CPUs, load average {header['load']:.2f} at "
        f"start and {header['load_end']:.2f} at the end; median of {args.repeat} interleaved "
        f"runs after {max(args.warmup, 1)} warm-up, inputs read into the page cache before "
        "each workload.",
        "GB/s: 10^9 bytes per second over the bytes of both runs (A + B). "
        "x vs fastdiff: the tool's median time / fastdiff's (>1: fastdiff is faster). "
        "~: estimated, the tool's 16 MiB time scaled by bytes (a lower bound), not run.",
        f"fastdiff: `{shlex.join(py.fastdiff)} compare A B --format json{extra}` as a cold "
        "process; on the long runs also without `--format json` (text).",
        "",
    ]
    lines += [
        f"- {w.key}: {w.title}; {_decimal(w.nbytes)} in both runs" for w in workloads if w.nbytes
    ]
    lines += [f"- skipped {note}" for note in skipped]
    lines += ["", *format_table(workloads, results)]
    if rss:
        lines += ["", "Peak memory (ru_maxrss of the child process, one run each):", ""]
        lines += format_rss(rss)
    quick = " (--quick: smaller sizes than the targets assume)" if args.quick else ""
    lines += ["", f"Targets{quick}:", ""]
    lines += format_targets(results, rss, {w.key: w.title for w in workloads})
    return lines


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    wanted = set(args.workloads.split(",")) if args.workloads else set(KEYS)
    if unknown := wanted - set(KEYS):
        print(
            f"error: unknown --workloads {sorted(unknown)}; use {', '.join(KEYS)}", file=sys.stderr
        )
        return 2
    try:
        py = choose_interpreter(args)
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    header = {"startup": venvs.bare_start(py.python), "load": harness.warn_if_busy()}
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="fastdiff-bench-", dir=args.workdir))
    workloads = plan_workloads(QUICK if args.quick else Sizes(), wanted)
    start = time.perf_counter()
    try:
        results, rss, skipped = run_workloads(
            workloads, root, py, args, shlex.split(args.fastdiff_args)
        )
        header["load_end"] = os.getloadavg()[0]
        print(f"  done in {time.perf_counter() - start:.0f} s", file=sys.stderr)
        report = format_report(workloads, results, rss, skipped, py, header, args)
        print("\n".join(report), flush=True)
    finally:
        if args.keep:
            print(f"dumps kept in {root}", file=sys.stderr)
        else:
            print(f"removing {root} ...", file=sys.stderr)
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
