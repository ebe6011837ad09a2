"""Which engine for how much differing data? auto, python, numpy and numba side by side.

fastdiff's ``--engine auto`` narrows a differing region to its differing
4 KiB blocks, then scans up to 64 KiB of them in pure Python (nothing to
import), up to 64 MiB with numpy (about 0.2 s to import), and more with numba
(about 1 s more here to import and load its cached kernels, then the fastest
loop). This script measures the crossovers: for float32 pairs whose differing
region (at the end) grows from 4 KiB to 256 MiB, at two densities (1% of the
elements differ, and all of them), it times ``fastdiff compare --engine E`` as
cold CLI runs, for ``auto`` and for each engine forced (a forced engine scans
whole differing 4 MiB chunks, without narrowing), and prints the medians.
Dumps come from ``fastdiff.bench.synth`` (a differing element has its lowest bit
flipped), timing from ``harness.py``.

    python benchmarks/bench_engines.py [--repeat 5] [--max-kib 262144]

The results set ``scan.PYTHON_MAX_BYTES`` and ``scan.NUMPY_MAX_BYTES``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import harness  # noqa: E402
from harness import median, read_once, time_commands  # noqa: E402
from venvs import prepare_cli  # noqa: E402

from fastdiff.bench import synth  # noqa: E402

KIB = 1 << 10
MIB = 1 << 20


def write_pair(folder: Path, n_bytes: int, diff_bytes: int, density: float) -> tuple[Path, Path]:
    """Two float32 runs, equal but for ``density`` of the elements in the last ``diff_bytes``."""
    a, b = folder / "a", folder / "b"
    _, file_b = synth.write_pair(a, b, "x", "f32", n_bytes, seed=7)
    harness.flip_spread(file_b, "f32", n_bytes - diff_bytes, n_bytes, density)
    return a, b


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--repeat", type=int, default=5, help="timed runs of each command (default 5): medians"
    )
    ap.add_argument(
        "--max-kib",
        type=int,
        default=256 * 1024,
        help="the largest differing region, in KiB (default 262144: 256 MiB); smaller is faster",
    )
    ap.add_argument(
        "--workdir",
        default=None,
        help="where the dumps are written (default: the system's temporary folder); "
        "about twice the largest region is needed, removed at the end",
    )
    args = ap.parse_args()
    sizes = [s for s in (4, 64, 1024, 4096, 16384, 65536, 262144) if s <= args.max_kib]
    root = Path(tempfile.mkdtemp(prefix="fastdiff-engines-", dir=args.workdir))
    prepare_cli(REPO)
    print("| differing KiB | density | auto s | python s | numpy s | numba s |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    try:
        for density in (0.01, 1.0):
            for kib in sizes:
                case = root / f"{kib}-{density}"
                a, b = write_pair(case, max(kib * KIB, 16 * MIB), kib * KIB, density)
                cmd = [sys.executable, "-m", "fastdiff", "compare", str(a), str(b)]
                cmd += ["--default-dtype", "f32", "--format", "json"]
                # pure Python runs at about a microsecond per element: up to 4 MiB
                engines = ("auto", "python", "numpy", "numba")
                if kib > 4096:
                    engines = ("auto", "numpy", "numba")
                read_once([a, b])
                times = time_commands(
                    {e: [*cmd, "--engine", e] for e in engines},
                    repeat=args.repeat,
                    ok_codes=(1,),
                )
                cells = [f"{median(times[e]):.3f}" if e in times else "-"
                         for e in ("auto", "python", "numpy", "numba")]  # fmt: skip
                print(f"| {kib} | {density:.0%} | {' | '.join(cells)} |", flush=True)
                shutil.rmtree(case)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
