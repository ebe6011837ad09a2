"""Developer benchmark: torch.distributed.checkpoint (DCP) pairs, fastdiff against dcp.load.

Writes DCP checkpoints of ``--size`` bytes (four float32 tensors of 4096
columns) the way DCP's ``FileSystemWriter`` lays them out (each chunk a
``torch.save`` archive in a ``__<rank>_0.distcp`` file, ``.metadata`` a
pickle of DCP's classes): run A sharded by rows over 4 ranks, and four B
runs: the same layout, identical and with one element differing near the
end of the last tensor, and another layout (columns over 3 ranks),
identical and with that difference. Then times, as cold processes
interleaved in rounds, with the page cache filled first:

- ``fastdiff compare A B --format json`` (this checkout, run by this
  interpreter: the anchor needs torch, which fastdiff never does);
- the anchor: ``dcp.load`` of both runs into preallocated tensors, then
  ``torch.equal`` tensor by tensor, what a user writes today.

and the peak resident memory of fastdiff on each pair, next to a bare
``fastdiff --version``.

    python benchmarks/bench_distributed.py [--size BYTES] [--repeat N] [--quick]

Targets (issue 25): at least 5x faster than the anchor; peak RSS within
+64 MiB of ``fastdiff --version``; another layout within 1.5x of the
same layout.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import harness as timing  # the command-timing harness beside this script (and the package's timing)

REPO = Path(__file__).resolve().parent.parent
COLUMNS = 4096
TENSORS = 4

ANCHOR = """\
import sys, warnings
import torch
import torch.distributed.checkpoint as dcp

warnings.simplefilter("ignore")  # no process group: one process, as meant
def load(path):
    meta = dcp.FileSystemReader(path).read_metadata().state_dict_metadata
    state = {k: torch.empty(m.size, dtype=m.properties.dtype) for k, m in meta.items()}
    dcp.load(state, checkpoint_id=path)
    return state
a, b = load(sys.argv[1]), load(sys.argv[2])
differ = sorted(a.keys() ^ b.keys()) + [k for k in sorted(a.keys() & b.keys())
                                         if not torch.equal(a[k], b[k])]
print(len(differ), "tensors differ")
sys.exit(1 if differ else 0)
"""


def write_dcp(folder: Path, tensors: dict[str, object], ranks: int, dim: int) -> None:
    """A DCP folder of ``tensors``, each cut along ``dim`` into ``ranks``
    chunks, chunk ``r`` of every tensor in ``__<r>_0.distcp``."""
    import torch
    from torch.distributed.checkpoint.filesystem import _StorageInfo
    from torch.distributed.checkpoint.metadata import (
        ChunkStorageMetadata,
        Metadata,
        MetadataIndex,
        TensorProperties,
        TensorStorageMetadata,
    )

    folder.mkdir(parents=True)
    items, storage = {}, {}
    files = [open(folder / f"__{r}_0.distcp", "wb") for r in range(ranks)]  # noqa: SIM115
    try:
        for name, t in tensors.items():
            assert isinstance(t, torch.Tensor)
            chunks = []
            size = t.shape[dim]
            cuts = [size * r // ranks for r in range(ranks + 1)]
            for r in range(ranks):
                part = t.narrow(dim, cuts[r], cuts[r + 1] - cuts[r]).clone()
                offsets = [0] * t.dim()
                offsets[dim] = cuts[r]
                f = files[r]
                at = f.tell()
                torch.save(part, f)
                storage[MetadataIndex(name, torch.Size(offsets), r)] = _StorageInfo(
                    f"__{r}_0.distcp", at, f.tell() - at
                )
                chunks.append(ChunkStorageMetadata(torch.Size(offsets), part.shape))
            items[name] = TensorStorageMetadata(
                TensorProperties.create_from_tensor(t), t.shape, chunks
            )
    finally:
        for f in files:
            f.close()
    with open(folder / ".metadata", "wb") as f:
        pickle.dump(Metadata(state_dict_metadata=items, storage_data=storage), f)


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.2f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.0f} MiB"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=1 << 30, help="bytes per checkpoint (1 GiB)")
    p.add_argument("--repeat", type=int, default=3, help="timed rounds (default 3)")
    p.add_argument("--quick", action="store_true", help="64 MiB, 2 rounds")
    args = p.parse_args(argv)
    if args.quick:
        args.size, args.repeat = 64 << 20, 2
    import numpy as np
    import torch

    say = lambda msg: print(msg, file=sys.stderr)  # noqa: E731
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    python = sys.executable
    rows = max(1, args.size // TENSORS // (4 * COLUMNS))
    load1 = os.getloadavg()[0]
    lines = [
        f"bench_distributed: DCP checkpoints of {_gib(rows * COLUMNS * 4 * TENSORS)} "
        f"({TENSORS} float32 tensors of {rows} x {COLUMNS}), median of {args.repeat} rounds; "
        f"load average {load1:.2f} at the start",
        f"interpreter: {python} with this checkout on PYTHONPATH (torch {torch.__version__})",
        "",
        "| workload | tool | median s | x fastdiff |",
        "| --- | --- | --- | --- |",
    ]
    got: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="fastdiff-bench-dcp-") as tmp:
        root = Path(tmp)
        rng = np.random.default_rng(25)
        say("writing the checkpoints")
        tensors = {
            f"model.layers.{i}.weight": torch.from_numpy(
                rng.standard_normal((rows, COLUMNS), dtype=np.float32)
            )
            for i in range(TENSORS)
        }
        late = dict(tensors)
        last = f"model.layers.{TENSORS - 1}.weight"
        late[last] = tensors[last].clone()
        late[last][rows - 1, COLUMNS - 7] += 1
        a = root / "a"
        write_dcp(a, tensors, 4, 0)
        runs = {
            "same layout, identical": (root / "same", tensors, 4, 0, 0),
            "same layout, late diff": (root / "same-late", late, 4, 0, 1),
            "other layout, identical": (root / "other", tensors, 3, 1, 0),
            "other layout, late diff": (root / "other-late", late, 3, 1, 1),
        }
        for folder, ts, ranks, dim, _ in runs.values():
            write_dcp(folder, ts, ranks, dim)
        del tensors, late
        os.sync()
        rss: dict[str, int] = {}
        for case, (b, _, _, _, expect) in runs.items():
            say(f"timing: {case}")
            tools = {
                "fastdiff": [
                    python,
                    "-m",
                    "fastdiff",
                    "compare",
                    str(a),
                    str(b),
                    "--format",
                    "json",
                ],
                "dcp.load + torch.equal": [python, "-c", ANCHOR, str(a), str(b)],
            }
            timing.read_once([a, b], timing.aligned_buffer())
            times = timing.time_commands(tools, args.repeat, 1, (expect,))
            base = timing.median(times["fastdiff"])
            for tool, t in times.items():
                m = timing.median(t)
                lines.append(f"| {case} | {tool} | {m:.3f} | {m / base:.2f}x |")
                got[f"{case} {tool}"] = m
            rss[case] = timing.peak_rss("fastdiff", tools["fastdiff"], (expect,)).max_rss
        bare = timing.peak_rss("fastdiff --version", [python, "-m", "fastdiff", "--version"])
    mib = 1 << 20
    lines += ["", "| target | measured | need | |", "| --- | --- | --- | --- |"]
    for case in runs:
        x = got[f"{case} dcp.load + torch.equal"] / got[f"{case} fastdiff"]
        lines.append(
            f"| {case}: anchor over fastdiff | {x:.2f}x | >= 5x | {'met' if x >= 5 else 'MISSED'} |"
        )
    for case in runs:
        over = (rss[case] - bare.max_rss) / mib
        lines.append(
            f"| {case}: peak RSS over `fastdiff --version` ({bare.max_rss / mib:.1f} MiB) | "
            f"+{over:.1f} MiB | <= +64 MiB | {'met' if over <= 64 else 'MISSED'} |"
        )
    for what in ("identical", "late diff"):
        x = got[f"other layout, {what} fastdiff"] / got[f"same layout, {what} fastdiff"]
        lines.append(
            f"| {what}: other layout over same layout | {x:.2f}x | <= 1.5x | "
            f"{'met' if x <= 1.5 else 'MISSED'} |"
        )
    lines += ["", f"load average {os.getloadavg()[0]:.2f} at the end"]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
