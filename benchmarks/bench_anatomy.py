"""What the anatomy of a divergence costs: the numba engine before and after, in one run.

Issue 11 asks the kernels to compute the new facts (runs, rows, relative
delta, ULP distance and histogram, signed zeros) in the same pass, at no more
than 1.3x today's time on a 256 MiB float32 pair with every element
different and with 1% different. This script measures both versions side by
side on the same machine, interleaved, so load affects both alike:

- "before" is the ``fastdiff`` package of a git revision (``--before``,
  default: where this branch left ``main``), extracted with ``git archive``
  into a temporary folder. For the kernel rows it is imported in this process
  under the name ``fastdiff_before`` (its imports are relative); for the CLI
  rows it runs as ``python -m fastdiff`` with ``PYTHONPATH`` pointing at it.
  Its numba kernels are compiled (and cached there) by a warm-up run first.
- "after" is this checkout.

Rows:

- ``scan stage``: what the scan stage does for a differing region, in this
  process: 1 MiB pieces copied into two buffers, ``scan_bytes(...,
  engine="numba")`` on each and the pieces' stats merged. Before and after
  take turns piece by piece (the order alternating), so both see the same
  load. Timed as CPU time of this thread (``time.thread_time``: time spent
  waiting for a core is not counted) and as wall time; the minimum over
  ``--repeat`` runs.
- ``compare CLI``: ``fastdiff compare A B --schema raw --default-dtype f32
  --engine numba --format json`` on two files in ``--workdir`` (page cache
  warm), from process start to exit: import, hashing, scanning, the report.
  Median wall time over ``--repeat`` interleaved runs.
- ``identical``: the same command on two equal files (only hashing): the
  identical path must not change.

Differing elements have their lowest bit flipped (one unit in the last
place): "all" flips every element, "1%" every 100th.

    python benchmarks/bench_anatomy.py [--repeat 5] [--mib 256] [--before REV]
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PIECE = 1 << 20


def before_revision(repo: Path) -> str:
    """Where this branch left ``main`` (or HEAD itself, on main)."""
    out = subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=repo, capture_output=True,
                         text=True, check=False)  # fmt: skip
    return out.stdout.strip() or "HEAD"


def extract(repo: Path, rev: str, dest: Path) -> Path:
    """``fastdiff/`` of ``rev`` under ``dest``; returns the folder holding it."""
    archive = dest / "before.tar"
    with open(archive, "wb") as fh:
        subprocess.run(["git", "archive", rev, "fastdiff"], cwd=repo, stdout=fh, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(dest / "tree", filter="data")
    archive.unlink()
    # the same package once more under another name, to import beside this one
    shutil.copytree(dest / "tree" / "fastdiff", dest / "pkg" / "fastdiff_before")
    return dest / "tree"


def cases(mib: int):  # type: ignore[no-untyped-def]
    import numpy as np

    n = mib * (1 << 18)  # float32 elements
    a = np.random.default_rng(7).standard_normal(n, dtype=np.float32)
    every = a.copy()
    every.view(np.uint32)[:] ^= 1
    one_percent = a.copy()
    one_percent.view(np.uint32)[::100] ^= 1
    return a, {"all differ": every, "1% differ": one_percent}


def scan_stage(versions, a, b) -> list[tuple[float, float]]:  # type: ignore[no-untyped-def]
    """(CPU s, wall s) of each version scanning the pair in pieces as the scan
    stage does: each piece copied into two buffers, scanned, its stats merged.
    The versions take turns piece by piece (the order alternating), so a
    change of load on a busy machine hits them alike."""
    import numpy as np

    ua, ub = a.view(np.uint8), b.view(np.uint8)
    buf_a, buf_b = np.empty(PIECE, np.uint8), np.empty(PIECE, np.uint8)
    va, vb = memoryview(buf_a), memoryview(buf_b)
    stats = [k.ScanStats() for k in versions]
    cpu = [0.0] * len(versions)
    wall = [0.0] * len(versions)
    for n, off in enumerate(range(0, len(ua), PIECE)):
        np.copyto(buf_a, ua[off : off + PIECE])
        np.copyto(buf_b, ub[off : off + PIECE])
        order = range(len(versions)) if n % 2 else reversed(range(len(versions)))
        for v in order:
            kernels = versions[v]
            t0, c0 = time.perf_counter(), time.thread_time()
            piece = kernels.scan_bytes(va, vb, "f32", kernels.EXACT, "numba")
            stats[v] = stats[v].merged(piece.shifted(off // 4))
            cpu[v] += time.thread_time() - c0
            wall[v] += time.perf_counter() - t0
    assert all(s.n_diff == stats[0].n_diff > 0 for s in stats)
    return list(zip(cpu, wall, strict=True))


def time_cli(pythonpath: Path, a: Path, b: Path, want: int) -> float:
    cmd = [sys.executable, "-m", "fastdiff", "compare", str(a), str(b), "--schema", "raw",
           "--default-dtype", "f32", "--engine", "numba", "--format", "json"]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("FASTDIFF")}
    env["PYTHONPATH"] = str(pythonpath)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # byte-compiled, as an installed package is
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, cwd=tempfile.gettempdir(), capture_output=True, check=False)
    elapsed = time.perf_counter() - t0
    if p.returncode != want:
        raise SystemExit(f"{cmd} exited {p.returncode}: {p.stderr.decode()[-2000:]}")
    return elapsed


def row(case: str, what: str, before: float, after: float) -> str:
    return f"| {case} | {what} | {before:.3f} | {after:.3f} | {after / before:.2f}x |"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs of each measurement")
    ap.add_argument("--mib", type=int, default=256, help="size of each file (default 256)")
    ap.add_argument("--before", default=None, help="git revision of 'before'")
    ap.add_argument("--workdir", default=None, help="folder for the temporary files")
    ap.add_argument("--no-cli", action="store_true", help="only the in-process scan rows")
    args = ap.parse_args()
    rev = args.before or before_revision(REPO)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True)
    same = subprocess.run(["git", "rev-parse", rev], cwd=REPO, capture_output=True, text=True)
    if same.stdout.strip() == head.stdout.strip():
        # On main the branch point is HEAD: 'before' would be this checkout itself.
        sys.exit(
            "bench_anatomy: 'before' is this checkout itself (on main, HEAD is where a "
            "branch would leave it): pass --before REV, e.g. --before 70e2eed^1, the "
            "commit before the anatomy facts were merged"
        )
    root = Path(tempfile.mkdtemp(prefix="fastdiff-anatomy-", dir=args.workdir))
    try:
        tree = extract(REPO, rev, root)
        sys.path.insert(0, str(root / "pkg"))
        sys.path.insert(0, str(REPO))
        old = importlib.import_module("fastdiff_before.kernels")
        new = importlib.import_module("fastdiff.kernels")
        a, bs = cases(args.mib)
        short = ["git", "rev-parse", "--short", rev]
        rev_name = subprocess.run(short, cwd=REPO, capture_output=True, text=True, check=True)
        print(
            f"before: {rev_name.stdout.strip()}; after: this checkout; {args.mib} MiB float32 "
            f"per file; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}",
            flush=True,
        )
        print("| case | measured | before s | after s | after/before |")
        print("| --- | --- | ---: | ---: | ---: |")
        for mod in (old, new):  # compile or load the kernels first
            mod.scan_bytes(a[:8].tobytes(), bs["all differ"][:8].tobytes(), "f32", mod.EXACT,
                           "numba")  # fmt: skip
        for case, b in bs.items():
            runs = [scan_stage((old, new), a, b) for _ in range(args.repeat)]
            cpu = {k: min(r[v][0] for r in runs) for v, k in enumerate(("before", "after"))}
            wall = {k: min(r[v][1] for r in runs) for v, k in enumerate(("before", "after"))}
            print(row(case, "scan stage, CPU", cpu["before"], cpu["after"]), flush=True)
            print(row(case, "scan stage, wall", wall["before"], wall["after"]), flush=True)
        if not args.no_cli:
            import numpy as np

            files = root / "runs"
            pairs = {"identical": (a, a), **{case: (a, b) for case, b in bs.items()}}
            for case, (xa, xb) in pairs.items():
                fa, fb = files / case / "a", files / case / "b"
                fa.mkdir(parents=True)
                fb.mkdir(parents=True)
                np.asarray(xa).tofile(fa / "step_0_x.bin")
                np.asarray(xb).tofile(fb / "step_0_x.bin")
                want = 0 if case == "identical" else 1
                for path in (tree, REPO):  # warm: page cache, numba cache
                    time_cli(path, fa, fb, want)
                times: dict[str, list[float]] = {"before": [], "after": []}
                for _ in range(args.repeat):
                    times["before"].append(time_cli(tree, fa, fb, want))
                    times["after"].append(time_cli(REPO, fa, fb, want))
                med = {k: statistics.median(v) for k, v in times.items()}
                print(row(case, "compare CLI, wall (median)", med["before"], med["after"]),
                      flush=True)  # fmt: skip
                shutil.rmtree(files / case)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
