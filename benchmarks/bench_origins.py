"""Developer benchmark: what declaring inputs (the roles) costs a long compare.

Writes two runs in the reference layout, 2000 steps x 34 buffers (batch 4:
small files, 68,000 per run, where per-buffer work shows; fastdiff.bench.synth),
twice: identical, and diverging from step 1000 on (rewards at every step,
the advantages and returns that read them, the ISV array from the step
after: 4,000 buffers that diverge, most of them receivers). Then times, as
cold processes from a venv with this checkout installed as users install it
(``pip install .``, not editable; ``--python PATH`` for an interpreter of
your own, fastdiff from this checkout), interleaved (harness.py):

- ``fastdiff compare A B --schema with-inputs.toml``: the ``rl-state``
  preset written as a schema file, its dataflow (``inputs``) included;
- ``fastdiff compare A B --schema without-inputs.toml``: the same schema
  without any ``inputs`` (the same groups and dtypes: the same comparison,
  no roles);

in text and in JSON, each run once first with its output checked (exit code;
the JSON's roles and origins where inputs are declared, none without). Both
schemas are files, so both pay for reading TOML. Prints a markdown table
(median and spread of the whole process's wall time, and of its CPU time,
user + system, which a machine shared with other work disturbs less; the
ratio with inputs over without) and the target: at most 1.1x, on every
workload and format.

    python benchmarks/bench_origins.py [--quick] [--repeat N] [--python PATH] [--venv-dir DIR]
"""

from __future__ import annotations

import json
import os
import platform
import resource
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import harness
import venvs

from fastdiff.bench import synth
from fastdiff.presets import RL_STATE
from fastdiff.schemafile import schema_to_toml

REPO = Path(__file__).resolve().parent.parent
TARGET = 1.1
BATCH = 4
STEPS, QUICK_STEPS = 2000, 200
#: From this share of the steps on, run B diverges.
DIVERGE_AT = 0.5
FORMATS = ("text", "json")


def without_inputs() -> str:
    """The rl-state preset as a schema file, its members' inputs left out."""
    groups = tuple(g.replace(members=tuple(m.replace(inputs=None) for m in g.members))
                   for g in RL_STATE.groups)  # fmt: skip
    return schema_to_toml(RL_STATE.replace(groups=groups))


def write_runs(root: Path, steps: int) -> dict[str, tuple[Path, Path, int]]:
    """The workloads: name -> (run A, run B, expected exit code)."""
    start = int(steps * DIVERGE_AT)
    diverge = [
        (step, name, 0)
        for step in range(start, steps)
        for name in ("rewards", "advantages", "returns")
    ] + [(step, "isv_full", 3) for step in range(start + 1, steps)]
    a = root / "a"
    synth.write_rl_run(a, batch=BATCH, steps=steps, seed=1)
    same = root / "same"
    synth.write_rl_run(same, batch=BATCH, steps=steps, seed=1)
    late = root / "late"
    synth.write_rl_run(late, batch=BATCH, steps=steps, seed=1, diverge=diverge)
    return {
        "identical": (a, same, 0),
        f"diverged from step {start}": (a, late, 1),
    }


def check(name: str, out: bytes, inputs: bool, code: int) -> None:
    """The JSON of the first run: roles and origins where inputs are declared, else none."""
    doc = json.loads(out)
    has = "origins" in doc and any("role" in b for b in doc["buffers"])
    if code == 1 and inputs != has:
        raise SystemExit(f"{name}: roles {'missing' if inputs else 'present'} in the JSON")
    if not inputs and "origins" in doc:
        raise SystemExit(f"{name}: 'origins' in a report without declared inputs")
    if code == 1 and inputs and not doc["origins"]:
        raise SystemExit(f"{name}: no origin found")


def time_with_cpu(
    commands: dict[bool, list[str]], repeat: int, warmup: int, code: int, timeout: float
) -> tuple[dict[bool, list[float]], dict[bool, list[float]]]:
    """Wall and CPU seconds (user + system, of the process and its children)
    of each command, in interleaved rounds after ``warmup`` untimed ones. On
    a machine shared with other work the CPU time moves less than the wall
    time: it does not count waiting for a core."""
    wall: dict[bool, list[float]] = {k: [] for k in commands}
    cpu: dict[bool, list[float]] = {k: [] for k in commands}
    for round_ in range(warmup + repeat):
        for key, command in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            seconds = harness.run_once(str(key), command, (code,), timeout)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if round_ >= warmup:
                wall[key].append(seconds)
                cpu[key].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    p = harness.command_benchmark_parser(
        __doc__.splitlines()[0], f"{QUICK_STEPS} steps instead of {STEPS}", "dumps"
    )
    p.add_argument("--python", help="time with this interpreter, fastdiff from this checkout")
    p.add_argument("--venv-dir", type=Path, help="where the benchmark venvs are kept")
    args = harness.parse_benchmark_args(p, argv)
    if args.python:
        python = shutil.which(args.python) or args.python
        venvs.prepare_cli(REPO, python)
        fastdiff = [python, "-m", "fastdiff"]
        where = f"`{python}` -m fastdiff, this checkout on PYTHONPATH (compiled first)"
    else:
        venv_python = venvs.prepare_venv(REPO, args.venv_dir, lambda m: print(m, file=sys.stderr))
        python = str(venv_python)
        fastdiff = [str(venv_python.parent / "fastdiff")]
        where = f"a venv with this checkout installed by `pip install .`: `{fastdiff[0]}`"
    load = harness.warn_if_busy()
    steps = QUICK_STEPS if args.quick else STEPS
    root = Path(tempfile.mkdtemp(prefix="fastdiff-bench-origins-", dir=args.workdir))
    extra = shlex.split(args.fastdiff_args)
    rows = []
    try:
        print(f"writing 2 x {steps} steps x 34 buffers ...", file=sys.stderr)
        workloads = write_runs(root, steps)
        schemas = {True: root / "with-inputs.toml", False: root / "without-inputs.toml"}
        schemas[True].write_text(schema_to_toml(RL_STATE), encoding="utf-8")
        schemas[False].write_text(without_inputs(), encoding="utf-8")
        for workload, (a, b, code) in workloads.items():
            harness.read_once([a, b])
            for fmt in FORMATS:
                commands = {
                    inputs: [*fastdiff, "compare", str(a), str(b), "--schema", str(schema),
                             "--format", fmt, "--no-cache", *extra]
                    for inputs, schema in schemas.items()
                }  # fmt: skip
                if fmt == "json":
                    for inputs, command in commands.items():
                        proc = harness.run_captured(workload, command, (code,), args.timeout)
                        check(workload, proc.stdout, inputs, code)
                print(f"timing {workload}, {fmt} ...", file=sys.stderr)
                wall, cpu = time_with_cpu(commands, args.repeat, args.warmup, code, args.timeout)
                rows.append((workload, fmt, wall, cpu))
    finally:
        if args.keep:
            print(f"dumps kept in {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    load_end = os.getloadavg()[0]
    print(f"# bench_origins: {steps} steps x 34 buffers, batch {BATCH}, with and without inputs")
    print()
    print(f"- fastdiff: {where}")
    print(f"- {platform.python_version()}, {os.cpu_count()} CPUs; load average {load:.2f} at "
          f"start, {load_end:.2f} at the end; median of {args.repeat} (interleaved)")  # fmt: skip
    print()
    print(
        "| workload | format | wall with inputs s | wall without s | wall ratio "
        "| CPU with s | CPU without s | CPU ratio |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    worst = {"wall": 0.0, "CPU": 0.0}
    for workload, fmt, wall, cpu in rows:
        cells = []
        for what, times in (("wall", wall), ("CPU", cpu)):
            with_, without = harness.median(times[True]), harness.median(times[False])
            worst[what] = max(worst[what], with_ / without)
            cells += [
                f"{with_:.3f} ({min(times[True]):.3f}-{max(times[True]):.3f})",
                f"{without:.3f} ({min(times[False]):.3f}-{max(times[False]):.3f})",
                f"{with_ / without:.3f}x",
            ]
        print(f"| {workload} | {fmt} | " + " | ".join(cells) + " |")
    print()
    print("medians of the whole process (min-max in parentheses)")
    for what, ratio in worst.items():
        verdict = "PASS" if ratio <= TARGET else "FAIL"
        print(f"{verdict} {what}: declared inputs cost at most {TARGET}x the same compare "
              f"without them (worst {ratio:.3f}x)")  # fmt: skip
    return 0


if __name__ == "__main__":
    start = time.perf_counter()
    code = main()
    print(f"done in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    sys.exit(code)
