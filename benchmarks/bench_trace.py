"""Developer benchmark: what ``fastdiff.trace`` costs a training step, and what it writes.

Trains the model of ``examples/trace`` (a block of an attention layer, an
MLP and a mixture of experts, twice, and a head; AdamW) on the CPU, one
thread (``torch.set_num_threads(1)``: the tracer's work is on the training
thread, and one thread keeps a shared machine's noise down), as a job of
its own per run, in three modes:

- ``untraced``: the training loop alone;
- ``module``: under ``fastdiff.trace(level="module")``, digests only;
- ``op``: under ``fastdiff.trace(level="op")``, digests only.

A job times each of its steps (``time.perf_counter`` around ``t.step(N)``
and the step's forward, backward and optimizer step), after ``--warmup-steps``
untimed ones, and reports their median; runs are interleaved in rounds (one
job of every mode per round, the order rotated), and a mode's figure is the
median over rounds. Each traced job's run folder is measured (its digest
log, sequence log and dataflow: the bytes of a trace per step) and removed.

A ladder of model sizes: ``tiny`` (width 32, 8 x 16 tokens: the example's,
where every op is a few microseconds and the tracer's fixed cost per record
dominates), ``small`` (width 128, 16 x 64 tokens) and ``medium`` (width 256,
16 x 128 tokens). The targets (issue 26: module level within 1.5x of
untraced, op level within 4x) are judged on ``small``; every size's ratios
are printed.

    python benchmarks/bench_trace.py [--quick] [--repeat N] [--steps N] [--python PATH]
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

REPO = Path(__file__).resolve().parent.parent

#: The job: MODE OUT WIDTH BATCH TOKENS STEPS WARMUP. Prints {"step_s", "records"}.
JOB = """\
import json, os, statistics, sys, time
sys.path.insert(0, os.path.join(sys.argv[8], "examples", "trace"))
import torch
from model import Model
mode, out = sys.argv[1], sys.argv[2]
width, batch, tokens, steps, warmup = map(int, sys.argv[3:8])
torch.manual_seed(0)
torch.set_num_threads(1)
model = Model(dim=width, heads=4, layers=2)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(batch, tokens, width)
y = torch.randn(batch, tokens, 1)
times = []
def train(begin):
    for step in range(warmup + steps):
        t0 = time.perf_counter()
        begin(step)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        if step >= warmup:
            times.append(time.perf_counter() - t0)
records = 0
if mode == "untraced":
    train(lambda step: None)
else:
    import fastdiff
    with fastdiff.trace(out, model=model, level=mode) as t:
        train(t.step)
    log = os.path.join(out, ".fastdiff-digests.jsonl")
    with open(log, "rb") as fh:
        records = sum(1 for _ in fh) / (warmup + steps)
print(json.dumps({"step_s": statistics.median(times), "records": records}))
"""

MODES = ("untraced", "module", "op")
#: (label, width, batch, tokens)
SIZES = (("tiny", 32, 8, 16), ("small", 128, 16, 64), ("medium", 256, 16, 128))
QUICK = (("tiny", 32, 8, 16), ("small", 128, 16, 64))
TARGETS = {"module": 1.5, "op": 4.0}
JUDGED = "small"


def _folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.iterdir()) if folder.exists() else 0


def time_size(
    python: str, root: Path, width: int, batch: int, tokens: int, steps: int, warmup: int,
    repeat: int,
) -> dict[str, dict[str, float]]:  # fmt: skip
    """Per mode: the median step seconds over rounds, records and bytes a step."""
    per: dict[str, list[float]] = {m: [] for m in MODES}
    size: dict[str, float] = {}
    records: dict[str, float] = {}
    for r in range(repeat):
        shift = r % len(MODES)
        for mode in MODES[shift:] + MODES[:shift]:
            out = root / f"{mode}-{r}"
            command = [python, "-c", JOB, mode, str(out), str(width), str(batch), str(tokens),
                       str(steps), str(warmup), str(REPO)]  # fmt: skip
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode:
                raise SystemExit(f"{mode} job failed:\n{done.stderr[-2000:]}")
            result = json.loads(done.stdout.strip().splitlines()[-1])
            per[mode].append(result["step_s"])
            if mode != "untraced" and mode not in size:
                size[mode] = _folder_bytes(out) / (steps + warmup)
                records[mode] = result["records"]
            shutil.rmtree(out, ignore_errors=True)
    return {
        m: {"step_s": harness.median(per[m]), "min": min(per[m]), "max": max(per[m]),
            "bytes": size.get(m, 0.0), "records": records.get(m, 0.0)}
        for m in MODES
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny and small only, fewer steps")
    p.add_argument("--repeat", type=int, default=5, help="rounds per size (default 5)")
    p.add_argument("--steps", type=int, default=20, help="timed steps per job (default 20)")
    p.add_argument("--warmup-steps", type=int, default=3, help="untimed steps first (default 3)")
    p.add_argument("--python", default=sys.executable, help="the interpreter (it needs torch)")
    p.add_argument("--workdir", type=Path, help="where the temporary folder is made")
    args = p.parse_args(argv)
    sizes = QUICK if args.quick else SIZES
    steps = 8 if args.quick else args.steps
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env_path]))
    load = harness.warn_if_busy()
    lines = [
        f"bench_trace: median over {args.repeat} rounds of each job's median step "
        f"({steps} timed steps after {args.warmup_steps}); load average {load:.2f} at the "
        f"start; {os.cpu_count()} CPUs; torch on 1 thread; digests only",
        f"interpreter: {args.python}, this checkout on PYTHONPATH",
        "",
        "| size | mode | step ms | min-max ms | x untraced | records / step | trace KiB / step |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    judged: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="fastdiff-bench-trace-", dir=args.workdir) as tmp:
        for label, width, batch, tokens in sizes:
            print(f"{label}: width {width}, {batch} x {tokens} tokens", file=sys.stderr)
            got = time_size(args.python, Path(tmp), width, batch, tokens, steps,
                            args.warmup_steps, args.repeat)  # fmt: skip
            base = got["untraced"]["step_s"]
            for mode in MODES:
                g = got[mode]
                ratio = g["step_s"] / base
                traced = mode != "untraced"
                lines.append(
                    f"| {label} (width {width}, {batch} x {tokens}) | {mode} | "
                    f"{g['step_s'] * 1e3:.2f} | {g['min'] * 1e3:.2f}-{g['max'] * 1e3:.2f} | "
                    f"{ratio:.2f}x | {g['records']:.0f} | "
                    f"{g['bytes'] / 1024:.1f} |" if traced else
                    f"| {label} (width {width}, {batch} x {tokens}) | {mode} | "
                    f"{g['step_s'] * 1e3:.2f} | {g['min'] * 1e3:.2f}-{g['max'] * 1e3:.2f} | "
                    "1.00x | | |"
                )  # fmt: skip
                if label == JUDGED and traced:
                    judged[mode] = ratio
    end = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines += ["", f"load average at the end: {end:.2f}", "", "| target | measured | need | |",
              "| --- | ---: | --- | --- |"]  # fmt: skip
    for mode, need in TARGETS.items():
        if mode in judged:
            ok = judged[mode] <= need
            lines.append(
                f"| {JUDGED}: {mode}-traced step / untraced | {judged[mode]:.2f}x | <= {need}x | "
                f"{'met' if ok else 'MISSED'} |"
            )
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
