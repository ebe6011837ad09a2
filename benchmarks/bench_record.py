"""Developer benchmark: what the recorder costs a training loop, and what it saves compare.

Installs this checkout into a venv as users do (``pip install .``, not
editable; the venv of bench_compare.py under ~/.cache/fastdiff-bench; with
``--python PATH``, that interpreter and this checkout on PYTHONPATH), then
times, as whole processes in interleaved rounds (median of ``--repeat``):

**Recording.** A job that makes its arrays (float32, a few distinct ones
reused, so making them costs little) and writes each as a dump:

- ``make only``: the arrays made, nothing written (the floor of every job);
- ``np.save``: ``np.save(step_<i>_w.npy, a)`` per dump;
- ``Recorder``: ``Recorder(out).dump(i, "w", a)`` per dump: the same
  ``.npy`` files, their digests and the digest log;
- ``Recorder(data=False)``: digests only.

Each job writes into a folder of its own, removed after it (untimed), on
three workloads: 64 dumps of 16 MiB (1 GiB), 256 of 1 MiB, 4000 of 4 KiB.
The targets are judged on the first, whole process against whole process;
the table also gives each ratio net of ``make only`` (interpreter start,
numpy's import, making the arrays), the recording's own cost.

**Comparing.** Two identical recorded runs of ``--compare-gib`` (default 1)
GiB each, 16 MiB dumps: ``fastdiff compare A B --format json`` with their
digest logs (digests and stat only), then the same with the logs moved
away (every byte hashed, from the page cache). Both JSON reports are
checked: the first must have hashed no byte.

Targets (issue 18): recording with digests at most 1.25x ``np.save``;
digests only at least 3x faster than ``np.save``; compare of two recorded
identical 1 GiB runs at least 5x faster than without the logs.

    python benchmarks/bench_record.py [--quick] [--repeat N] [--python PATH] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import harness
import venvs

REPO = Path(__file__).resolve().parent.parent

#: The job: MODE OUT COUNT BYTES. Writes COUNT dumps of BYTES each into OUT.
JOB = """\
import os, sys
import numpy as np
mode, out, count, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
arrays = [np.full(size // 4, i, dtype=np.float32) for i in range(min(count, 4))]
os.makedirs(out)
if mode == "np.save":
    for i in range(count):
        np.save(os.path.join(out, f"step_{i}_w.npy"), arrays[i % len(arrays)])
elif mode != "make":
    from fastdiff import Recorder
    with Recorder(out, data=mode == "record") as rec:
        for i in range(count):
            rec.dump(i, "w", arrays[i % len(arrays)])
"""

TOOLS = ("make only", "np.save", "Recorder", "Recorder(data=False)")
MODES = {"make only": "make", "np.save": "np.save", "Recorder": "record",
         "Recorder(data=False)": "digests"}  # fmt: skip
WORKLOADS = (("1 GiB: 64 x 16 MiB", 64, 16 << 20), ("256 MiB: 256 x 1 MiB", 256, 1 << 20),
             ("16 MiB: 4000 x 4 KiB", 4000, 4 << 10))  # fmt: skip
QUICK = (("32 MiB: 8 x 4 MiB", 8, 4 << 20), ("4 MiB: 1000 x 4 KiB", 1000, 4 << 10))


def time_jobs(
    python: str, root: Path, count: int, size: int, repeat: int, warmup: int
) -> dict[str, list[float]]:
    """Each tool's wall times, in interleaved rounds; each run's folder removed after it."""
    times: dict[str, list[float]] = {t: [] for t in TOOLS}
    for round_index in range(warmup + repeat):
        shift = round_index % len(TOOLS)
        for tool in TOOLS[shift:] + TOOLS[:shift]:
            out = root / f"job-{round_index}"
            command = [python, "-c", JOB, MODES[tool], str(out), str(count), str(size)]
            os.sync()  # earlier rounds' dirty pages are not this run's to write back
            t = harness.run_once(tool, command, timeout=600)
            if round_index == 0 and tool != "make only":
                _check(out, tool, count)
            shutil.rmtree(out)
            if round_index >= warmup:
                times[tool].append(t)
    return times


def _check(out: Path, tool: str, count: int) -> None:
    names = os.listdir(out)
    dumps = [n for n in names if n.startswith("step_")]
    want = 0 if tool == "Recorder(data=False)" else count
    logged = ".fastdiff-digests.jsonl" in names
    if len(dumps) != want or (tool.startswith("Recorder") and not logged):
        raise SystemExit(f"{tool}: wrote {len(dumps)} dumps, not {want}, or no digest log")


def compare_times(
    python: str, fastdiff: list[str], root: Path, gib: float, repeat: int
) -> tuple[float, float, dict[str, object], dict[str, object]]:
    """Median seconds of compare with the logs and without, and one report of each."""
    count = max(1, int(gib * 64))  # 16 MiB dumps
    runs = [root / "cmp-a", root / "cmp-b"]
    for run in runs:
        subprocess.run([python, "-c", JOB, "record", str(run), str(count), str(16 << 20)],
                       check=True)  # fmt: skip
    os.sync()
    command = [*fastdiff, "compare", str(runs[0]), str(runs[1]), "--format", "json"]
    with_log = json.loads(subprocess.run(command, capture_output=True, check=True).stdout)
    harness.read_once(runs, harness.aligned_buffer())
    fast = harness.median(harness.time_commands({"with": command}, repeat, 1)["with"])
    for run in runs:
        os.rename(run / ".fastdiff-digests.jsonl", root / f"{run.name}.log")
    without = json.loads(subprocess.run(command, capture_output=True, check=True).stdout)
    harness.read_once(runs, harness.aligned_buffer())
    slow = harness.median(harness.time_commands({"without": command}, repeat, 1)["without"])
    for run in runs:
        shutil.rmtree(run)
    return fast, slow, with_log, without


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small workloads, a smoke run")
    p.add_argument("--repeat", type=int, default=5, help="timed rounds (default 5)")
    p.add_argument("--warmup", type=int, default=1, help="untimed rounds first (default 1)")
    p.add_argument("--compare-gib", type=float, default=1.0, help="GiB per compared run (1)")
    p.add_argument("--python", help="time with this interpreter and the checkout, no venv")
    p.add_argument("--venv-dir", help="where the benchmark venvs are kept")
    p.add_argument("--workdir", type=Path, help="where the temporary folder is made")
    args = p.parse_args(argv)
    say = lambda msg: print(msg, file=sys.stderr)  # noqa: E731
    if args.python:
        venvs.prepare_cli(REPO, args.python)
        python = args.python
        fastdiff = [python, "-m", "fastdiff"]
        where = f"{python}, this checkout on PYTHONPATH"
    else:
        venv_python = venvs.prepare_venv(REPO, args.venv_dir, say)
        python = str(venv_python)
        fastdiff = [str(venv_python.parent / "fastdiff")]
        where = f"a venv with this checkout installed by `pip install .`: {python}"
    workloads = QUICK if args.quick else WORKLOADS
    gib = 1 / 16 if args.quick else args.compare_gib
    load = harness.warn_if_busy()
    lines = [
        f"bench_record: median of {args.repeat} rounds, whole processes; load average "
        f"{load:.2f} at the start; {os.cpu_count()} CPUs",
        f"interpreter: {where}",
        "",
        "| workload | tool | median s | min-max s | x np.save | net of making, x np.save |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    targets: list[tuple[str, float, str, bool]] = []
    with tempfile.TemporaryDirectory(prefix="fastdiff-bench-record-", dir=args.workdir) as tmp:
        root = Path(tmp)
        for label, count, size in workloads:
            say(f"recording: {label}")
            times = time_jobs(python, root, count, size, args.repeat, args.warmup)
            med = {t: harness.median(v) for t, v in times.items()}
            floor = med["make only"]
            for tool in TOOLS:
                ratio = med[tool] / med["np.save"]
                net_save = med["np.save"] - floor
                net = (med[tool] - floor) / net_save if net_save > 0 else float("nan")
                lines.append(
                    f"| {label} | {tool} | {med[tool]:.3f} | {min(times[tool]):.3f}-"
                    f"{max(times[tool]):.3f} | {ratio:.2f}x | "
                    f"{'' if tool == 'make only' else f'{net:.2f}x'} |"
                )
            if label == workloads[0][0]:
                rec = med["Recorder"] / med["np.save"]
                dig = med["np.save"] / med["Recorder(data=False)"]
                targets.append((f"{label}: Recorder / np.save", rec, "<= 1.25x", rec <= 1.25))
                targets.append((f"{label}: np.save / digests only", dig, ">= 3x", dig >= 3))
        say(f"comparing two recorded runs of {gib:g} GiB")
        fast, slow, with_log, without = compare_times(python, fastdiff, root, gib, args.repeat)
    hashed = with_log["work"]["bytes_hashed"]  # type: ignore[index]
    lines += [
        "",
        f"compare of two recorded identical {gib:g} GiB runs (16 MiB dumps): with the digest "
        f"logs {fast:.3f} s (bytes hashed: {hashed}), without them {slow:.3f} s (bytes hashed: "
        f"{without['work']['bytes_hashed']:,})",  # type: ignore[index]
        "",
        "| target | measured | need | |",
        "| --- | ---: | --- | --- |",
    ]
    ratio = slow / fast
    targets.append((f"compare {gib:g} GiB: without logs / with", ratio, ">= 5x", ratio >= 5))
    targets.append(("compare with logs: data bytes read", float(hashed), "0", hashed == 0))
    for what, value, need, ok in targets:
        shown = f"{value:.0f}" if need == "0" else f"{value:.2f}x"
        lines.append(f"| {what} | {shown} | {need} | {'met' if ok else 'MISSED'} |")
    lines += ["", f"load average {os.getloadavg()[0]:.2f} at the end"]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
