"""Developer benchmark: how soon ``fastdiff watch`` reports a divergence, and
what watching costs the jobs that write the runs.

Two writer processes (``tests/writer.py``) write runs in the rl-state layout
(34 buffers per step, batch 4096 by default: about 0.55 MB a step) at 10
steps/s on a fixed schedule, files written whole, in pieces and via a
temporary name; run B diverges at a chosen step K. ``fastdiff watch`` runs
beside them (started first, before the folders exist), with its default
``--poll 0.2`` and ``--settle 2``. Measured, each over several runs:

- latency when step K was completed by a later step appearing: both writers
  go on; K is complete once both have created the first file of step K+1
  (from the writers' logs), and reported when watch's JSON record for K
  reaches this script. Target: <= poll + 0.3 s.
- latency when step K was completed by settling: B pauses after K (A goes
  on); from the moment B finished writing K (and A started K+1) to the
  report. Target: <= settle + poll + 0.3 s.
- watch's own ``first_divergence_latency_s`` for both (from the moment it
  deemed the step complete in both runs).
- the writers' slowdown: N steps of identical runs at 10 steps/s, with and
  without watch, in interleaved rounds; per step, the seconds a writer spends
  in ``open``/``write``/``rename`` calls (the writers' wall time is the
  schedule's). Target: <= 5% more. Also, as information, writers going as
  fast as they can (no schedule): their wall time for N steps.

Medians are printed in a markdown table with PASS/FAIL against the targets.

    python benchmarks/bench_watch.py [--quick] [--repeat N] [--steps N] [--at K]
                                     [--batch B] [--workdir DIR] [--keep] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
WRITER = REPO / "tests" / "writer.py"
RATE = 10.0  # steps per second
POLL, SETTLE = 0.2, 2.0  # watch's defaults
DIVERGE = "rewards:3"  # the buffer and element B flips at step K


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FASTDIFF")}
    env["PYTHONPATH"] = str(REPO)  # this checkout, for watch and the writers
    return env


def _writer(out: Path, log: Path, *args: str) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, str(WRITER), str(out), "--log", str(log), "--mode", "mixed",
           "--piece-sleep", "0", *args]  # fmt: skip
    return subprocess.Popen(cmd, cwd=REPO, env=_env())


def _watch(a: Path, b: Path, idle: float) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "fastdiff", "watch", str(a), str(b), "--format", "jsonl",
           "--no-progress", "--idle-timeout", str(idle)]  # fmt: skip
    return subprocess.Popen(
        cmd, cwd=REPO, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _events(log: Path) -> dict[tuple[str, int], dict[str, Any]]:
    out = {}
    for line in log.read_text().splitlines():
        e = json.loads(line)
        out[(e["event"], e["step"])] = e
    return out


def _stop(*procs: subprocess.Popen[Any]) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def latency_run(kind: str, root: Path, steps: int, at: int, batch: int) -> dict[str, float]:
    """One run: B diverges at step ``at``; ``kind`` "later" or "settle"."""
    root.mkdir(parents=True)
    a, b = root / "a", root / "b"
    la, lb = root / "a.log", root / "b.log"
    w = _watch(a, b, idle=60)
    common = ("--steps", str(steps), "--rate", str(RATE), "--batch", str(batch))
    pause = ("--pause-after", f"{at}:{SETTLE + 10}") if kind == "settle" else ()
    wa = _writer(a, la, *common)
    wb = _writer(b, lb, *common, "--diverge", f"{at}:{DIVERGE}", *pause)
    reported = None
    try:
        assert w.stdout is not None
        for line in w.stdout:
            record = json.loads(line)
            if record["record"] == "step" and record["status"] != "equal":
                reported = time.time()
                assert record["step"] == at, record
            if record["record"] == "summary":
                summary = record
        w.wait(timeout=60)
    finally:
        _stop(wa, wb, w)
    assert reported is not None and w.returncode == 1, w.stderr.read() if w.stderr else ""
    ea, eb = _events(la), _events(lb)
    if kind == "later":
        complete = max(ea[("start", at + 1)]["t"], eb[("start", at + 1)]["t"])
    else:
        complete = max(ea[("start", at + 1)]["t"], eb[("done", at)]["t"])
    return {
        "latency_s": reported - complete,
        "watch_latency_s": summary["first_divergence_latency_s"],
    }


def writers_run(root: Path, steps: int, batch: int, watched: bool, paced: bool) -> dict[str, float]:
    """Two writers of identical runs for ``steps`` steps, watched or not."""
    root.mkdir(parents=True)
    a, b = root / "a", root / "b"
    la, lb = root / "a.log", root / "b.log"
    w = _watch(a, b, idle=2) if watched else None
    pace = ("--rate", str(RATE)) if paced else ("--pace", "0")
    wa = _writer(a, la, "--steps", str(steps), "--batch", str(batch), *pace)
    wb = _writer(b, lb, "--steps", str(steps), "--batch", str(batch), *pace)
    try:
        assert wa.wait() == 0 and wb.wait() == 0
        if w is not None:
            out, err = w.communicate(timeout=120)
            assert w.returncode == 0, err
            summary = json.loads(out.splitlines()[-1])
            assert summary["steps_compared"] == steps, summary["steps_compared"]
    finally:
        _stop(wa, wb, *([w] if w else []))
    write_s, walls = [], []
    for log in (la, lb):
        ev = _events(log)
        write_s += [ev[("done", k)]["write_s"] for k in range(steps)]
        walls.append(ev[("done", steps - 1)]["t"] - ev[("start", 0)]["t"])
    return {"write_ms_per_step": 1e3 * statistics.mean(write_s), "wall_s": max(walls)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="3 runs each, 40 steps (about 1 min)")
    p.add_argument("--repeat", type=int, default=5, help="runs per measurement (default 5)")
    p.add_argument("--steps", type=int, default=100, help="steps of the slowdown runs")
    p.add_argument("--at", type=int, default=20, help="the divergent step K (default 20)")
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--workdir", help="where to write the runs (default: a temporary folder)")
    p.add_argument("--keep", action="store_true", help="keep the runs")
    p.add_argument("--json", help="also write the results to this file")
    args = p.parse_args()
    if args.quick:
        args.repeat, args.steps, args.at = 3, 40, 10
    work = Path(args.workdir or tempfile.mkdtemp(prefix="fastdiff-bench-watch-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, list[dict[str, float]]] = {}
    try:
        for kind in ("later", "settle"):
            for i in range(args.repeat):
                root = work / f"latency-{kind}-{i}"
                r = latency_run(kind, root, args.at + 10, args.at, args.batch)
                results.setdefault(f"latency-{kind}", []).append(r)
                print(f"latency ({kind}) run {i}: {r['latency_s']:.3f} s "
                      f"(watch says {r['watch_latency_s']:.3f} s)", file=sys.stderr)  # fmt: skip
                shutil.rmtree(root, ignore_errors=not args.keep)
        for paced in (True, False):
            for i in range(args.repeat):
                for watched in (False, True):  # interleaved rounds
                    label = f"writers-{'paced' if paced else 'unpaced'}-{'watched' if watched else 'alone'}"  # noqa: E501
                    root = work / f"{label}-{i}"
                    r = writers_run(root, args.steps, args.batch, watched, paced)
                    results.setdefault(label, []).append(r)
                    print(f"{label} run {i}: {r['write_ms_per_step']:.3f} ms writing a step, "
                          f"{r['wall_s']:.2f} s in all", file=sys.stderr)  # fmt: skip
                    if not args.keep:
                        shutil.rmtree(root, ignore_errors=True)
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)

    def med(label: str, key: str) -> float:
        return statistics.median(r[key] for r in results[label])

    later, settle = med("latency-later", "latency_s"), med("latency-settle", "latency_s")
    alone = med("writers-paced-alone", "write_ms_per_step")
    watched = med("writers-paced-watched", "write_ms_per_step")
    slowdown = watched / alone - 1
    fast_alone = med("writers-unpaced-alone", "wall_s")
    fast_watched = med("writers-unpaced-watched", "wall_s")
    rows = [
        ("latency, completed by a later step", f"{later:.3f} s", f"<= {POLL + 0.3:.1f} s",
         later <= POLL + 0.3),
        ("  (watch's own first_divergence_latency_s)",
         f"{med('latency-later', 'watch_latency_s'):.3f} s", "", None),
        ("latency, completed by settling", f"{settle:.3f} s", f"<= {SETTLE + POLL + 0.3:.1f} s",
         settle <= SETTLE + POLL + 0.3),
        ("  (watch's own first_divergence_latency_s)",
         f"{med('latency-settle', 'watch_latency_s'):.3f} s", "", None),
        (f"writers at {RATE:g} steps/s, writing a step, alone", f"{alone:.3f} ms", "", None),
        (f"writers at {RATE:g} steps/s, writing a step, watched", f"{watched:.3f} ms",
         "<= 5% more", slowdown <= 0.05),
        ("  slowdown", f"{100 * slowdown:+.1f}%", "", None),
        (f"writers unpaced, {args.steps} steps, alone (wall)", f"{fast_alone:.2f} s", "", None),
        (f"writers unpaced, {args.steps} steps, watched (wall)", f"{fast_watched:.2f} s",
         "(information)", None),
        ("  slowdown", f"{100 * (fast_watched / fast_alone - 1):+.1f}%", "", None),
    ]  # fmt: skip
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\n`fastdiff watch`: {platform.python_implementation()} {platform.python_version()}, "
          f"{os.cpu_count()} CPUs, load average {load:.2f}; rl-state layout, batch {args.batch}; "
          f"--poll {POLL:g} --settle {SETTLE:g}; medians of {args.repeat} runs\n")  # fmt: skip
    print("| measure | median | target | |")
    print("| --- | --- | --- | --- |")
    for name, value, target, ok in rows:
        verdict = "" if ok is None else "PASS" if ok else "FAIL"
        print(f"| {name} | {value} | {target} | {verdict} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "load": load}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
