"""Developer benchmark: safetensors checkpoints, fastdiff against loading them.

Installs this checkout into a venv as users do (``pip install .``, not
editable; the venv of bench_compare.py, kept under ~/.cache/fastdiff-bench,
with the safetensors library added), writes a synthetic checkpoint pair
(``fastdiff.bench.synth.write_checkpoint_pair``: an embedding and
transformer blocks of float32 weights, one ``model.safetensors`` per run)
and times, as cold processes interleaved in rounds:

- ``fastdiff compare A B`` (the JSON report);
- ``load_file + compare``: what users run today, ``safetensors.numpy.load_file``
  of both files, then tensor by tensor ``np.array_equal`` of their bits,
  stopping at nothing;
- the floor: xxh3 over memory maps of both files on 2 threads
  (``floor_compare.py --mmap``), the least a process can do to answer.

on an identical pair, and a pair with one element differing near the end of
the last tensor. Then the peak resident memory of fastdiff on that pair and
on a sparse pair of ``--sparse`` bytes (default 20 GiB, no disk used), next
to a bare interpreter's. The page cache is filled before each workload.

    python benchmarks/bench_checkpoint.py [--size BYTES] [--sparse BYTES] [--repeat N] [--quick]

Targets (issue 17): identical at least 5x faster than load_file + compare;
peak memory within 64 MiB of the interpreter's, whatever the size; a
differing pair costs the identical pair plus its differing chunks.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import harness
import venvs

from fastdiff.bench import synth

REPO = Path(__file__).resolve().parent.parent
FLOOR = REPO / "benchmarks" / "floor_compare.py"

LOAD_AND_COMPARE = """\
import sys
import numpy as np
from safetensors.numpy import load_file
a, b = load_file(sys.argv[1]), load_file(sys.argv[2])
differ = sorted(a.keys() ^ b.keys())
for k in sorted(a.keys() & b.keys()):
    x, y = a[k], b[k]
    if x.dtype != y.dtype or x.shape != y.shape:
        differ.append(k)
    elif not np.array_equal(x.view(f"u{x.itemsize}"), y.view(f"u{y.itemsize}")):
        differ.append(k)
print(len(differ), "tensors differ")
sys.exit(1 if differ else 0)
"""


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.2f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.0f} MiB"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=1 << 30, help="bytes per checkpoint (1 GiB)")
    p.add_argument("--sparse", type=int, default=20 << 30, help="bytes of the sparse pair")
    p.add_argument("--repeat", type=int, default=5, help="timed rounds (default 5)")
    p.add_argument("--quick", action="store_true", help="16 MiB and a 1 GiB sparse pair")
    p.add_argument("--venv-dir", help="where the benchmark venvs live")
    args = p.parse_args(argv)
    if args.quick:
        args.size, args.sparse, args.repeat = 16 << 20, 1 << 30, 3
    say = lambda msg: print(msg, file=sys.stderr)  # noqa: E731
    python = venvs.prepare_venv(REPO, args.venv_dir, say)
    check = subprocess.run([str(python), "-c", "import safetensors"], capture_output=True)
    if check.returncode:
        say("installing safetensors into the benchmark venv")
        subprocess.run([str(python), "-m", "pip", "install", "-q", "safetensors"], check=True)
    fastdiff = str(python.parent / "fastdiff")
    load1 = os.getloadavg()[0]
    lines = [
        f"bench_checkpoint: {_gib(args.size)} checkpoints, median of {args.repeat} rounds; "
        f"load average {load1:.2f} at the start",
        f"interpreter: a venv with this checkout installed by `pip install .`: {python}",
        "",
        "| workload | tool | median s | x fastdiff |",
        "| --- | --- | --- | --- |",
    ]
    ratios: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="fastdiff-bench-ckpt-") as tmp:
        root = Path(tmp)
        for case, diff_at in (("identical", None), ("late-diff", -4096)):
            a, b = synth.write_checkpoint_pair(root / case / "a", root / case / "b", args.size,
                                               diff_at=diff_at)  # fmt: skip
            os.sync()
            expect = 0 if diff_at is None else 1
            tools = {
                "fastdiff": [fastdiff, "compare", str(a), str(b), "--format", "json"],
                "load_file + compare": [str(python), "-c", LOAD_AND_COMPARE, str(a), str(b)],
                "floor mmap+xxh3": [str(python), str(FLOOR), "--mmap", str(a), str(b)],
            }
            harness.read_once([a, b], harness.aligned_buffer())
            times = harness.time_commands(tools, args.repeat, 1, (expect,))
            base = harness.median(times["fastdiff"])
            for tool, t in times.items():
                m = harness.median(t)
                lines.append(f"| {case} | {tool} | {m:.3f} | {m / base:.2f}x |")
                ratios[f"{case} {tool}"] = m
            if diff_at is not None:
                ratios["late-diff over identical"] = base / ratios["identical fastdiff"]
            rss_dir = root / case
            if diff_at is None:
                ratios["rss"] = harness.peak_rss("fastdiff", tools["fastdiff"]).max_rss
            del rss_dir
            for path in (a, b):
                path.unlink()
        sa, sb = synth.write_checkpoint_pair(root / "sparse" / "a", root / "sparse" / "b",
                                             args.sparse, sparse=True)  # fmt: skip
        ratios["rss sparse"] = harness.peak_rss(
            "fastdiff", [fastdiff, "compare", str(sa), str(sb), "--format", "json"]
        ).max_rss
        ratios["rss python"] = harness.peak_rss("python", [str(python), "-c", "pass"]).max_rss
    mib = 1 << 20
    ident = ratios["identical load_file + compare"] / ratios["identical fastdiff"]
    floor = ratios["identical fastdiff"] / ratios["identical floor mmap+xxh3"]
    over = (ratios["rss"] - ratios["rss python"]) / mib
    over_sparse = (ratios["rss sparse"] - ratios["rss python"]) / mib
    lines += [
        "",
        f"peak RSS: fastdiff {ratios['rss'] / mib:.1f} MiB ({_gib(args.size)} pair), "
        f"{ratios['rss sparse'] / mib:.1f} MiB ({_gib(args.sparse)} sparse pair); "
        f"python -c pass {ratios['rss python'] / mib:.1f} MiB",
        "",
        "| target | measured | need | |",
        "| --- | --- | --- | --- |",
        f"| identical: load_file + compare over fastdiff | {ident:.2f}x | >= 5x | "
        f"{'met' if ident >= 5 else 'MISSED'} |",
        f"| identical: fastdiff over the floor | {floor:.2f}x | (information) | |",
        f"| peak RSS over the interpreter, {_gib(args.size)} pair | +{over:.1f} MiB | <= +64 MiB "
        f"| {'met' if over <= 64 else 'MISSED'} |",
        f"| peak RSS over the interpreter, {_gib(args.sparse)} sparse pair | "
        f"+{over_sparse:.1f} MiB | <= +64 MiB | {'met' if over_sparse <= 64 else 'MISSED'} |",
        f"| late difference over identical (fastdiff) | "
        f"{ratios['late-diff over identical']:.2f}x | about 1x plus one chunk | |",
        "",
        f"load average {os.getloadavg()[0]:.2f} at the end",
    ]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
