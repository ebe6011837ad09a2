"""Baseline for the benchmark: compare two run folders the way users do today.

The approach of the reference script, written afresh and made to work on any
dump: each ``step_<N>_<name>.bin`` file is read whole, unpacked into a Python
list with ``struct``, and compared element by element in a Python loop that
counts differences and tracks the first index and the largest |A-B|. Names
from the RL-state table get their dtype; any other name is read as f32.

Like the reference, values are compared with ``!=`` (so NaN never equals
itself and -0.0 equals 0.0): this is a timing baseline, not a correct tool.

Usage: python benchmarks/pure_python_compare.py RUN_A RUN_B
Exit: 0 identical, 1 a difference (or a file on one side only), 2 trouble.
"""

from __future__ import annotations

import re
import struct
import sys
from pathlib import Path

try:  # the installed fastdiff (as in the benchmark's venv), else this checkout's
    from fastdiff.bench.synth import RL_STATE_MEMBERS
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from fastdiff.bench.synth import RL_STATE_MEMBERS

FORMATS = {
    "u8": "B",
    "i8": "b",
    "u16": "H",
    "i16": "h",
    "u32": "I",
    "i32": "i",
    "u64": "Q",
    "i64": "q",
    "f16": "e",
    "bf16": "H",  # struct has no bfloat16: compared as raw bits
    "f32": "f",
    "f64": "d",
}
DTYPE_OF = dict(RL_STATE_MEMBERS)
DUMP = re.compile(r"step_(\d+)_(.+)\.bin")


def unpack(path: Path, fmt: str) -> list[float]:
    data = path.read_bytes()
    size = struct.calcsize(fmt)
    if len(data) % size:
        raise ValueError(f"{path}: {len(data)} bytes is not a multiple of {size}")
    return list(struct.unpack(f"<{len(data) // size}{fmt}", data))


def compare(a: list[float], b: list[float]) -> tuple[int, int, float]:
    """(number of differing elements, first differing index, max |A-B|)."""
    count = 0
    first = -1
    max_delta = 0.0
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x != y:
            if count == 0:
                first = i
            count += 1
            delta = abs(x - y)
            if delta > max_delta:
                max_delta = delta
    return count, first, max_delta


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    run_a, run_b = map(Path, argv)
    if not (run_a.is_dir() and run_b.is_dir()):
        print(f"error: run folders missing: {run_a} or {run_b}", file=sys.stderr)
        return 2
    names = sorted(
        {p.name for p in run_a.glob("step_*_*.bin")} | {p.name for p in run_b.glob("step_*_*.bin")}
    )
    if not names:
        print("error: no step_<N>_<name>.bin files in either folder", file=sys.stderr)
        return 2
    differing = 0
    for name in names:
        match = DUMP.fullmatch(name)
        if match is None:
            continue
        pa, pb = run_a / name, run_b / name
        if not (pa.is_file() and pb.is_file()):
            print(f"{name}: only in {'A' if pa.is_file() else 'B'}")
            differing += 1
            continue
        fmt = FORMATS[DTYPE_OF.get(match.group(2), "f32")]
        try:
            a, b = unpack(pa, fmt), unpack(pb, fmt)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if len(a) != len(b):
            print(f"{name}: length A={len(a)} B={len(b)}")
            differing += 1
            continue
        count, first, max_delta = compare(a, b)
        if count:
            print(f"{name}: {count} differ, first at {first}, max |A-B| {max_delta:.6g}")
            differing += 1
    print(f"{len(names)} files compared, {differing} differ")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
