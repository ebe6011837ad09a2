"""Developer benchmark: comparing two torch.save checkpoints, fastdiff against torch.

Writes (with torch) a checkpoint of ``--size`` bytes of float32 tensors
(``--tensors`` of them, random), an identical twin (saved again: the same
tensors, another archive), a twin whose last tensor differs in one element,
and a pair whose tensors are all saved transposed (views that fastdiff reads
through their strides). Then times, side by side as cold processes, with
the inputs read once first (this VM evicts idle files):

- ``fastdiff compare A B`` (no torch loaded, no pickle run);
- ``torch.load`` of both (``weights_only=True``) and ``torch.equal`` on each
  pair of tensors, as a user would compare them today;
- the same with ``torch.load(mmap=True)`` (no copy into memory: the fastest
  torch can do);
- a floor: xxh3 over memory maps of both files, one thread each
  (``benchmarks/floor_compare.py --mmap`` on folders holding the two files:
  what reading and hashing every byte costs, with nothing parsed);
- ``python -c pass``.

Prints a markdown table per pair (median wall time, its ratio to fastdiff's,
and each tool's peak resident memory, ru_maxrss, against the interpreter's).

    pip install 'torch==2.13.0'    # a CPU build; needed to write the files
    python benchmarks/bench_torch.py [--size 1G] [--tensors 64] [--repeat 5] [--quick]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import harness

REPO = Path(__file__).resolve().parent.parent
FLOOR = REPO / "benchmarks" / "floor_compare.py"

TORCH_COMPARE = """\
import sys, torch
mmap = sys.argv[3] == "mmap"
a = torch.load(sys.argv[1], weights_only=True, mmap=mmap)
b = torch.load(sys.argv[2], weights_only=True, mmap=mmap)
same = a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
sys.exit(0 if same else 1)
"""


def size_arg(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def write_pairs(folder: Path, size: int, n: int) -> dict[str, tuple[Path, Path, int]]:
    """pair name -> (A, B, expected exit code)."""
    import torch

    per = max(1, size // n // 4)
    g = torch.Generator().manual_seed(0)
    tensors = {f"layer{i}.weight": torch.randn(per, generator=g) for i in range(n)}
    a = folder / "a.pt"
    torch.save(tensors, a)
    torch.save(tensors, folder / "b.pt")
    last = f"layer{n - 1}.weight"
    tensors[last][per // 2] += 1
    torch.save(tensors, folder / "c.pt")
    tensors[last][per // 2] -= 1
    rows = max(1, int(per**0.5))
    views = {k: t[: rows * (per // rows)].reshape(rows, -1).t() for k, t in tensors.items()}
    torch.save(views, folder / "ta.pt")
    torch.save(views, folder / "tb.pt")
    return {
        "identical": (a, folder / "b.pt", 0),
        "one element differs": (a, folder / "c.pt", 1),
        "identical, transposed views": (folder / "ta.pt", folder / "tb.pt", 0),
    }


def floor_folders(folder: Path, a: Path, b: Path) -> tuple[Path, Path]:
    """Folders holding ``a`` and ``b`` under one dump name each (links), for
    the floor script."""
    fa, fb = folder / "floor_a", folder / "floor_b"
    for f, src in ((fa, a), (fb, b)):
        shutil.rmtree(f, ignore_errors=True)
        f.mkdir()
        os.link(src, f / "step_0_x.bin")
    return fa, fb


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--size", type=size_arg, default=1 << 30, help="bytes of tensors per file")
    p.add_argument("--tensors", type=int, default=64)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="64 MiB, 3 repeats")
    args = p.parse_args(argv)
    if args.quick:
        args.size, args.repeat = 64 << 20, 3
    python = sys.executable
    harness.warn_if_busy()
    folder = Path(tempfile.mkdtemp(prefix="fastdiff-bench-torch-"))
    try:
        pairs = write_pairs(folder, args.size, args.tensors)
        bare = harness.peak_rss("python -c pass", [python, "-c", "pass"]).max_rss
        print(f"files: {args.tensors} float32 tensors, {args.size / 2**20:,.0f} MiB per file")
        print(f"python -c pass: peak RSS {bare / 2**20:.1f} MiB\n")
        for title, (a, b, code) in pairs.items():
            fa, fb = floor_folders(folder, a, b)
            tools = {
                "fastdiff": [python, "-m", "fastdiff", "compare", str(a), str(b)],
                "torch.load + torch.equal": [python, "-c", TORCH_COMPARE, str(a), str(b), "-"],
                "torch.load(mmap=True) + equal": [
                    python, "-c", TORCH_COMPARE, str(a), str(b), "mmap",
                ],
                "floor (xxh3, mmap, 2 threads)": [python, str(FLOOR), "--mmap", str(fa), str(fb)],
                "python -c pass": [python, "-c", "pass"],
            }  # fmt: skip
            ok = {name: (0, 1) for name in tools}
            for name, cmd in tools.items():
                # (the floor hashes whole files, which differ: torch writes a
                # random id in each archive; its exit code means nothing)
                if name != "python -c pass" and not name.startswith("floor"):
                    got = harness.run_captured(name, cmd, ok[name])
                    if got.returncode != code:
                        raise SystemExit(f"{name} exited {got.returncode} on {title}, not {code}")
            harness.read_once([a, b])
            times = harness.time_commands(tools, repeat=args.repeat, ok_codes=ok)
            rss = {n: harness.peak_rss(n, cmd, ok[n]).max_rss for n, cmd in tools.items()}
            ours = harness.median(times["fastdiff"])
            print(f"### {title}\n")
            print("| tool | median s | x fastdiff | peak RSS MiB | over python |")
            print("| --- | ---: | ---: | ---: | ---: |")
            for name in tools:
                m = harness.median(times[name])
                print(
                    f"| {name} | {m:.3f} | {m / ours:.2f} | {rss[name] / 2**20:.1f} | "
                    f"{(rss[name] - bare) / 2**20:+.1f} |"
                )
            print()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
