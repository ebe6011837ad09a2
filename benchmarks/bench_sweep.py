"""Developer benchmark: one ``fastdiff sweep`` against many ``compare`` calls.

Generates one baseline and 32 candidate runs in the reference layout (batch
4096, 4 steps, 136 files per run; fastdiff.bench.synth, one seed) in a temporary
folder; four candidates diverge, at different steps and groups (C, D, E, F).
Then times, side by side as cold subprocesses (harness.py, interleaved
rounds, inputs read into the page cache first):

- ``fastdiff sweep --baseline BASE C1..C32 --format jsonl`` with an empty
  digest cache (the cache folder is removed before every run), with a cache
  filled by an earlier run, and with ``--no-cache``;
- 32 ``fastdiff compare BASE Ci --format json`` calls in one shell loop;
- 32 calls of the reference script in one shell loop (if it is present).

Every command is first run once, untimed, with its output checked: the
sweep's per-pair records and summary, and each looped call's exit code and
(fastdiff) JSON verdict. Prints a markdown table (median wall time, pairs/s,
the tool's time over the cold sweep's) and PASS/FAIL for the targets: the
cold sweep at least 5x faster than 32 compare calls, and the warm-cache sweep
at least 2x faster than the cold one.

    python benchmarks/bench_sweep.py [--quick] [--repeat N] [--workdir DIR] [--keep]
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import harness
import venvs

from fastdiff.bench import synth

REPO = Path(__file__).resolve().parent.parent
REFERENCE = REPO.parent / "shared" / "reference" / "compare-rl-state.py"

TOOLS = ("sweep-cold", "sweep-warm", "sweep-no-cache", "compare-loop", "reference-loop")
TOOL_TITLES = {
    "sweep-cold": "`fastdiff sweep`, empty cache",
    "sweep-warm": "`fastdiff sweep`, warm cache",
    "sweep-no-cache": "`fastdiff sweep --no-cache`",
    "compare-loop": "N x `fastdiff compare`",
    "reference-loop": "N x reference script",
}
STEPS = 4

#: The injected divergences, one candidate each: (step, buffer, element index,
#: expected first divergent group). Indices beyond the batch are clamped.
DIVERGENCES: tuple[tuple[int, str, int, str], ...] = (
    (0, "action_prng_state", 7, "C"),
    (1, "unit_entry_price", 1000, "D"),
    (2, "isv_full", 300, "E"),
    (3, "advantages", 4095, "F"),
)

#: Marker line printed after each looped call, with the call's exit code.
RC_MARK = "@@fastdiff-bench rc="


@dataclass(frozen=True)
class Candidate:
    path: Path
    step: int | None = None  # first divergent step, None: identical to the baseline
    group: str = ""


@dataclass
class Setup:
    base: Path
    candidates: list[Candidate]
    batch: int
    run_bytes: int

    @property
    def n_diverged(self) -> int:
        return sum(c.step is not None for c in self.candidates)


@dataclass
class Cell:
    times: list[float] = field(default_factory=list)
    note: str = ""

    @property
    def seconds(self) -> float | None:
        return harness.median(self.times) if self.times else None


def make_runs(root: Path, n_candidates: int, batch: int) -> Setup:
    """Write the baseline and the candidates under ``root``; a few candidates diverge."""
    runs = root / "runs"
    base = runs / "base"
    synth.write_rl_run(base, batch=batch, steps=STEPS, seed=0)
    # Spread the diverging candidates over the list: positions n*k/(d+1), k = 1..d.
    n_div = min(len(DIVERGENCES), n_candidates)
    at = {round(n_candidates * (k + 1) / (n_div + 1)) for k in range(n_div)}
    positions = dict(zip(sorted(at), DIVERGENCES, strict=False))
    candidates = []
    for i in range(1, n_candidates + 1):
        folder = runs / f"cand-{i:02d}"
        if i in positions:
            step, name, index, group = positions[i]
            index = min(index, synth.rl_elements(name, batch) - 1)
            synth.write_rl_run(folder, batch, STEPS, seed=0, diverge=[(step, name, index)])
            candidates.append(Candidate(folder, step, group))
        else:
            synth.write_rl_run(folder, batch, STEPS, seed=0)
            candidates.append(Candidate(folder))
    return Setup(base, candidates, batch, harness.rl_run_bytes(batch, STEPS))


def commands_for(
    s: Setup, cache_root: Path, fastdiff_args: list[str]
) -> dict[str, harness.Command]:
    """Every tool's command. Sweeps exit 1 (some pair diverges); loops exit 0 unless a
    call exits 2 or more (0 and 1 are answers; each call's code is printed for the check)."""
    py = shlex.quote(sys.executable)
    base = shlex.quote(str(s.base))
    cands = " ".join(shlex.quote(str(c.path)) for c in s.candidates)
    extra = " ".join(shlex.quote(a) for a in fastdiff_args)
    sweep = f"{py} -m fastdiff sweep --baseline {base} {cands} --format jsonl {extra}".rstrip()
    cold = shlex.quote(str(cache_root / "cold"))
    warm = shlex.quote(str(cache_root / "warm"))

    def loop(call: str) -> str:
        return (
            f'for c in {cands}; do {call} "$c"; r=$?; echo "{RC_MARK}$r"; '
            f'[ "$r" -le 1 ] || exit "$r"; done'
        )

    # The runs were written a moment ago: without --cache-min-age 0 the cache
    # would (rightly) keep no digest of files that may still be changing.
    commands: dict[str, harness.Command] = {
        "sweep-cold": f"rm -rf {cold} && {sweep} --cache-dir {cold} --cache-min-age 0",
        "sweep-warm": f"{sweep} --cache-dir {warm} --cache-min-age 0",
        "sweep-no-cache": f"{sweep} --no-cache",
        "compare-loop": loop(f"{py} -m fastdiff compare --format json {extra} {base}"),
    }
    if REFERENCE.is_file():
        commands["reference-loop"] = loop(f"{py} {shlex.quote(str(REFERENCE))} {base}")
    return commands


def _expect(c: Candidate) -> tuple[str, int | None, list[str]]:
    if c.step is None:
        return "identical", None, []
    return "diverged", c.step, [c.group]


def check_sweep(stdout: bytes, s: Setup, cache_hits: int | None) -> str:
    """'' if the sweep's JSON Lines are right, else the problem.

    ``cache_hits``: the exact number expected in the summary, or None for any.
    """
    try:
        records = [json.loads(line) for line in stdout.decode().splitlines() if line.strip()]
    except ValueError as exc:
        return f"stdout is not JSON Lines ({exc})"
    pairs = [r for r in records if r.get("record") == "pair"]
    summaries = [r for r in records if r.get("record") == "summary"]
    if len(summaries) != 1 or records[-1] is not summaries[0]:
        return "expected one summary record, last"
    summary = summaries[0]
    want = {
        "pairs": len(s.candidates),
        "identical": len(s.candidates) - s.n_diverged,
        "diverged": s.n_diverged,
        "error": 0,
    }
    got = {k: summary.get(k) for k in want}
    if got != want:
        return f"summary counts {got}, expected {want}"
    if cache_hits is not None and summary.get("cache_hits") != cache_hits:
        return f"summary cache_hits {summary.get('cache_hits')}, expected {cache_hits}"
    if sorted(r.get("index") for r in pairs) != list(range(len(s.candidates))):
        return f"pair records have indices {sorted(r.get('index') for r in pairs)}"
    for r in pairs:
        c = s.candidates[r["index"]]
        got_pair = (
            r.get("verdict"),
            r.get("first_divergent_step"),
            r.get("first_divergent_groups"),
        )
        if got_pair != _expect(c):
            return f"pair {r['index']} ({c.path.name}): {got_pair}, expected {_expect(c)}"
    return ""


def check_loop(name: str, stdout: bytes, s: Setup) -> str:
    """'' if every looped call exited as expected (and fastdiff's JSON is right)."""
    outputs: list[str] = []
    codes: list[int] = []
    current: list[str] = []
    for line in stdout.decode(errors="replace").splitlines():
        if line.startswith(RC_MARK):
            codes.append(int(line[len(RC_MARK) :]))
            outputs.append("\n".join(current))
            current = []
        else:
            current.append(line)
    if len(codes) != len(s.candidates):
        return f"{len(codes)} calls finished, expected {len(s.candidates)}"
    for c, rc, out in zip(s.candidates, codes, outputs, strict=True):
        verdict, step, groups = _expect(c)
        want_rc = 0 if verdict == "identical" else 1
        if rc != want_rc:
            return f"{c.path.name}: exit {rc}, expected {want_rc}"
        if name == "compare-loop":
            try:
                report: dict[str, Any] = json.loads(out)
            except ValueError:
                return f"{c.path.name}: stdout is not JSON"
            got = (report.get("verdict"), report.get("first_divergent_step"),
                   report.get("first_divergent_groups"))  # fmt: skip
            if got != (verdict, step, groups):
                return f"{c.path.name}: {got}, expected {(verdict, step, groups)}"
    return ""


def verify(
    name: str, command: harness.Command, s: Setup, timeout: float, cache_hits: int | None = None
) -> str:
    """Run a tool once with its output kept; return a problem or ''."""
    ok = (1,) if name.startswith("sweep") else (0,)
    try:
        proc = harness.run_captured(name, command, ok, timeout)
    except harness.CommandFailed as exc:
        print(f"  {exc}", file=sys.stderr)
        return f"{exc.status}"
    if b"Traceback (most recent call last)" in proc.stderr:
        problem = "Python traceback"
    elif name.startswith("sweep"):
        problem = check_sweep(proc.stdout, s, cache_hits)
    else:
        problem = check_loop(name, proc.stdout, s)
    if problem:
        detail = harness.tail(proc.stderr) or harness.tail(proc.stdout)
        print(f"  {name}: {problem} (exit {proc.returncode})\n{detail}", file=sys.stderr)
    return problem


def run_tools(
    s: Setup, commands: dict[str, harness.Command], args: argparse.Namespace
) -> dict[str, Cell]:
    """Check every tool once, then time those that passed, interleaved."""
    cells: dict[str, Cell] = {}
    runs = [s.base, *(c.path for c in s.candidates)]
    files = len(synth.RL_STATE_MEMBERS) * STEPS
    harness.read_once(runs)
    chosen: dict[str, harness.Command] = {}
    for name, command in commands.items():
        hits: int | None = None
        if name == "sweep-cold":
            hits = 0
        elif name == "sweep-warm":
            # Fill the warm cache (a cold run), then check that every file is a hit.
            fill = verify(name, command, s, args.timeout, cache_hits=0)
            if fill:
                cells[name] = Cell(note=f"failed: {fill}")
                continue
            hits = len(runs) * files
        problem = verify(name, command, s, args.timeout, cache_hits=hits)
        if problem:
            cells[name] = Cell(note=f"failed: {problem}")
        else:
            chosen[name] = command
    ok = {name: (1,) if name.startswith("sweep") else (0,) for name in chosen}
    harness.read_once(runs)
    while chosen:
        try:
            times = harness.time_commands(
                chosen, args.repeat, max(args.warmup - 1, 0), ok, args.timeout
            )
        except harness.CommandFailed as exc:
            print(f"  {exc}", file=sys.stderr)
            cells[exc.name] = Cell(note=f"failed: {exc.status}")
            chosen.pop(exc.name)
            harness.read_once(runs)
            continue
        for name, values in times.items():
            cells[name] = Cell(times=values)
        break
    return cells


def format_table(cells: dict[str, Cell], n_pairs: int) -> list[str]:
    lines = [
        "| tool | median s | min-max s | pairs/s | x vs cold sweep | note |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    base = cells.get("sweep-cold", Cell()).seconds
    for tool in TOOLS:
        cell = cells.get(tool)
        if cell is None:
            continue
        s = cell.seconds
        title = TOOL_TITLES[tool].replace("N x", f"{n_pairs} x")
        sec = f"{s:.3f}" if s is not None else "-"
        spread = f"{min(cell.times):.3f}-{max(cell.times):.3f}" if cell.times else "-"
        rate = f"{n_pairs / s:.1f}" if s else "-"
        ratio = f"{s / base:.2f}x" if s is not None and base else "-"
        lines.append(f"| {title} | {sec} | {spread} | {rate} | {ratio} | {cell.note} |")
    return lines


def format_targets(cells: dict[str, Cell], n_pairs: int, quick: bool) -> list[str]:
    targets = (
        (f"sweep >= 5x faster than {n_pairs} compare calls", "sweep-cold", "compare-loop", 5.0),
        ("warm-cache sweep >= 2x faster than the cold sweep", "sweep-warm", "sweep-cold", 2.0),
    )
    lines = []
    for label, fast, slow, factor in targets:
        tf, ts = cells.get(fast, Cell()).seconds, cells.get(slow, Cell()).seconds
        if tf is None or ts is None:
            lines.append(f"- FAIL {label}: no timing for {fast if tf is None else slow}")
            continue
        ratio = ts / tf
        verdict = "PASS" if ratio >= factor else "FAIL"
        lines.append(
            f"- {verdict} {label}: {slow} {ts:.3f} s / {fast} {tf:.3f} s = {ratio:.2f}x "
            f"(need >= {factor:g}x)"
        )
    if quick:
        lines.append("- (--quick: sizes are smaller than the targets assume; indicative only)")
    return lines


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = harness.command_benchmark_parser(
        __doc__.splitlines()[0], "8 candidates of batch 512, for a smoke run", "runs"
    )
    return harness.parse_benchmark_args(p, argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    n_candidates, batch = (8, 512) if args.quick else (32, 4096)
    fastdiff_args = shlex.split(args.fastdiff_args)
    startup = venvs.prepare_cli(REPO)
    load = harness.warn_if_busy()
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="fastdiff-bench-sweep-", dir=args.workdir))
    # Every cache this script's fastdiff runs touch lives under root, not in ~/.cache.
    os.environ["XDG_CACHE_HOME"] = str(root / "xdg-cache")
    try:
        start = time.perf_counter()
        print(f"generating {n_candidates + 1} runs in {root} ...", file=sys.stderr)
        setup = make_runs(root, n_candidates, batch)
        print(f"  done in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        if not REFERENCE.is_file():
            print(f"note: {REFERENCE} is absent: no reference row", file=sys.stderr)
        commands = commands_for(setup, root / "caches", fastdiff_args)
        print(f"checking and timing {', '.join(commands)} ...", file=sys.stderr)
        cells = run_tools(setup, commands, args)
    finally:
        if args.keep:
            print(f"runs kept in {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)

    n = len(setup.candidates)
    files = len(synth.RL_STATE_MEMBERS) * STEPS
    diverging = ", ".join(
        f"{c.path.name} (step {c.step}, group {c.group})"
        for c in setup.candidates
        if c.step is not None
    )
    print(f"# fastdiff sweep benchmark{' (--quick)' if args.quick else ''}")
    print()
    print(
        f"One baseline against {n} candidates in the reference layout: batch {batch}, "
        f"{STEPS} steps, {files} files and {setup.run_bytes / 1e6:.2f} MB per run, "
        f"{(n + 1) * setup.run_bytes / 1e6:.0f} MB in all. {setup.n_diverged} candidates "
        f"diverge: {diverging}; the others are bit-identical to the baseline."
    )
    print()
    print(
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average {load:.2f} at start, "
        f"median of {args.repeat} interleaved runs after {max(args.warmup, 1)} warm-up, "
        "runs read into the page cache before timing. A bare interpreter start "
        f"(`python -c pass`) takes {startup * 1000:.0f} ms here."
    )
    extra = f" {shlex.join(fastdiff_args)}" if fastdiff_args else ""
    print(
        f"Sweeps: `python -m fastdiff sweep --baseline BASE C1..C{n} --format jsonl{extra}`, "
        "one process; empty cache: `rm -rf DIR && ... --cache-dir DIR` (the rm is timed too); "
        "warm: a cache filled by an earlier run. Loops: one shell loop of "
        f"{n} cold processes, `python -m fastdiff compare --format json{extra} BASE Ci` or "
        "`python compare-rl-state.py BASE Ci`. pairs/s: pairs over the median; "
        "x vs cold sweep: the tool's median over the cold sweep's (>1: slower than the sweep)."
    )
    print()
    print("\n".join(format_table(cells, n)))
    print()
    print("Targets:")
    print("\n".join(format_targets(cells, n, args.quick)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
