"""Floor for the benchmark: the least a whole-process comparison CLI can do.

Lists both runs with one ``scandir`` each, pairs the ``step_<N>_<name>.bin``
files by name, compares their sizes (``stat``), hashes each pair with xxh3
and prints the names that differ, with a one-line summary. No schema, no
element types, no report: what a process costs that only answers "same or
not". Default: read each file whole and hash it, one file after another.
``--mmap``: hash each file over a memory map, run A on one thread and run B
on another (xxhash releases the GIL), the fastest way to read two big files.

Two files given in place of the runs (a checkpoint each) are hashed whole,
as one pair.

Usage: python benchmarks/floor_compare.py [--mmap] RUN_A RUN_B
Exit: 0 identical, 1 a difference (or a file on one side only), 2 trouble.
"""

import argparse
import os
import sys

import xxhash


def dumps(run: str) -> dict[str, int]:
    """File name -> size of the dumps directly in a run folder."""
    with os.scandir(run) as entries:
        return {
            e.name: e.stat().st_size
            for e in entries
            if e.name.startswith("step_") and e.name.endswith(".bin") and e.is_file()
        }


def read_digest(path: str) -> int:
    with open(path, "rb", buffering=0) as f:
        return xxhash.xxh3_64_intdigest(f.read())


def mmap_digest(path: str) -> int:
    import mmap

    with open(path, "rb", buffering=0) as f:
        if not os.fstat(f.fileno()).st_size:
            return xxhash.xxh3_64_intdigest(b"")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            return xxhash.xxh3_64_intdigest(m)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mmap", action="store_true", help="mmap + xxh3, the two runs on 2 threads")
    p.add_argument("run_a")
    p.add_argument("run_b")
    args = p.parse_args()
    if os.path.isfile(args.run_a) and os.path.isfile(args.run_b):  # one file per run
        name = os.path.basename(args.run_a)
        a, b = {name: os.path.getsize(args.run_a)}, {name: os.path.getsize(args.run_b)}
        run_a, run_b = os.path.dirname(args.run_a), os.path.dirname(args.run_b)
        differ = [name] if a[name] != b[name] else []
        same_size = [] if differ else [name]
        paths_a = [args.run_a] if same_size else []
        paths_b = [args.run_b] if same_size else []
    else:
        a, b = dumps(args.run_a), dumps(args.run_b)
        run_a, run_b = args.run_a, args.run_b
        differ = sorted(a.keys() ^ b.keys())
        differ += sorted(n for n in a.keys() & b.keys() if a[n] != b[n])
        same_size = sorted(n for n in a.keys() & b.keys() if a[n] == b[n])
        paths_a = [os.path.join(run_a, n) for n in same_size]
        paths_b = [os.path.join(run_b, n) for n in same_size]
    if args.mmap:
        import threading

        digests_a: list[int] = []
        side = threading.Thread(target=lambda: digests_a.extend(map(mmap_digest, paths_a)))
        side.start()
        digests_b = list(map(mmap_digest, paths_b))
        side.join()
        if len(digests_a) != len(paths_a):  # the thread failed (its traceback is on stderr)
            return 2
    else:
        digests_a = list(map(read_digest, paths_a))
        digests_b = list(map(read_digest, paths_b))
    differ += [n for n, x, y in zip(same_size, digests_a, digests_b, strict=True) if x != y]
    for name in differ:
        print(f"differs: {name}")
    print(f"{len(a.keys() | b.keys())} files, {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
