"""A stand-in for a training job: writes a run's dumps step by step, at a pace.

    python tests/writer.py OUT --steps 6 --pace 0.1 [--rate STEPS_PER_S] [--batch 16] [--seed 0]
        [--mode mixed|whole|pieces|rename] [--diverge STEP:NAME:INDEX ...]
        [--skip STEP:NAME ...] [--die-at STEP:NAME] [--pause-after STEP:SECONDS]
        [--pause-before STEP:NAME:SECONDS]
        [--delay SECONDS] [--log FILE]

Each step holds the 34 buffers of the rl-state layout (``fastdiff.bench.synth``
``RL_STATE_MEMBERS``; ``batch`` elements each, ``isv_full`` 757), whose bytes
depend only on (seed, step, name): two writers with one seed write identical
runs, except where ``--diverge`` flips the lowest bit of an element (a float
stays finite). How files are written (``--mode mixed``, the default, cycles
through the three by buffer): whole (one ``write``), in three pieces with a
short sleep between the ``write`` calls, or under a temporary name
(``.tmp-step_<N>_<name>``) renamed into place once written.

``--pace`` sleeps that long between steps; ``--rate`` starts step k at
k / rate seconds instead (a fixed schedule, whatever writing takes). ``--skip``
leaves a buffer out; ``--die-at`` writes half of that file and
exits at once with status 3, as a job killed mid-write; ``--pause-after``
sleeps after a step (so that step is complete only by settling),
``--pause-before`` before writing one buffer (a job pausing mid-step); ``--delay``
waits before creating the folder at all; ``--log`` appends a JSON line per
event (``{"event": "start"|"done", "step": N, "t": time.time()}``): a step
starts when its first file is created and is done when its last write ends;
``done`` also gives ``write_s``, the seconds spent in ``open``, ``write``
and ``rename`` calls for the step (not in making its bytes, nor in sleeps).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: make fastdiff importable
    sys.path.insert(0, str(ROOT))

from fastdiff.bench.synth import RL_ISV_ELEMENTS, RL_STATE_MEMBERS  # noqa: E402

ITEMSIZE = {"u8": 1, "i32": 4, "u32": 4, "f32": 4}
#: An f32's top byte (sign and high exponent bits) mapped so that every value
#: is finite and of moderate size, 0.5 <= |x| < 4 (no NaN, whose payloads
#: would muddle a flip).
FINITE = bytes((b & 0x80) | (0x3F if b & 1 else 0x40) for b in range(256))


def content(seed: int, step: int, name: str, dtype: str, batch: int) -> bytearray:
    n = RL_ISV_ELEMENTS if name == "isv_full" else batch
    data = bytearray(random.Random(f"{seed}/{step}/{name}").randbytes(n * ITEMSIZE[dtype]))
    if dtype == "f32":
        data[3::4] = data[3::4].translate(FINITE)
    return data


def parse_key(text: str, parts: int) -> tuple[str, ...]:
    fields = text.split(":")
    if len(fields) != parts:
        raise SystemExit(f"writer: expected {parts} ':'-separated fields, got {text!r}")
    return tuple(fields)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--start", type=int, default=0, help="first step number")
    p.add_argument("--pace", type=float, default=0.1, help="seconds between steps")
    p.add_argument("--rate", type=float, help="steps per second, on a fixed schedule")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--mode", choices=("mixed", "whole", "pieces", "rename"), default="mixed")
    p.add_argument("--piece-sleep", type=float, default=0.002)
    p.add_argument("--diverge", action="append", default=[])
    p.add_argument("--skip", action="append", default=[])
    p.add_argument("--die-at")
    p.add_argument("--pause-after", action="append", default=[])
    p.add_argument("--pause-before", action="append", default=[])
    p.add_argument("--delay", type=float, default=0.0)
    p.add_argument("--log")
    args = p.parse_args(argv)

    flips: dict[tuple[int, str], list[int]] = {}
    for item in args.diverge:
        step, name, index = parse_key(item, 3)
        flips.setdefault((int(step), name), []).append(int(index))
    skip = {(int(s), n) for s, n in (parse_key(item, 2) for item in args.skip)}
    die = None
    if args.die_at:
        s, n = parse_key(args.die_at, 2)
        die = (int(s), n)
    pauses = {int(s): float(t) for s, t in (parse_key(item, 2) for item in args.pause_after)}
    waits = {(int(s), n): float(t) for s, n, t in (parse_key(i, 3) for i in args.pause_before)}
    log = open(args.log, "a", encoding="utf-8") if args.log else None  # noqa: SIM115

    def event(kind: str, step: int, **more: float) -> None:
        if log is not None:
            record = {"event": kind, "step": step, "t": time.time(), **more}
            log.write(json.dumps(record) + "\n")
            log.flush()

    time.sleep(args.delay)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    modes = ("whole", "pieces", "rename")
    t0 = time.monotonic()
    for k, step in enumerate(range(args.start, args.start + args.steps)):
        if args.rate:
            time.sleep(max(0.0, t0 + k / args.rate - time.monotonic()))
        event("start", step)
        write_s = 0.0
        for i, (name, dtype) in enumerate(RL_STATE_MEMBERS):
            if (step, name) in skip:
                continue
            time.sleep(waits.get((step, name), 0.0))
            data = content(args.seed, step, name, dtype, args.batch)
            for index in flips.get((step, name), ()):
                data[index * ITEMSIZE[dtype]] ^= 0x01
            final = out / f"step_{step}_{name}.bin"
            started = time.perf_counter()
            if die == (step, name):
                with open(final, "wb") as fh:  # half its elements
                    fh.write(data[: len(data) // 2 // ITEMSIZE[dtype] * ITEMSIZE[dtype]])
                os._exit(3)  # as a job killed mid-write: nothing more, no cleanup
            mode = modes[i % 3] if args.mode == "mixed" else args.mode
            if mode == "whole":
                final.write_bytes(data)
            elif mode == "pieces":
                cut = [0, len(data) // 3, 2 * len(data) // 3, len(data)]
                with open(final, "wb") as fh:
                    for lo, hi in itertools.pairwise(cut):
                        fh.write(data[lo:hi])
                        fh.flush()
                        time.sleep(args.piece_sleep)
            else:
                temp = out / f".tmp-step_{step}_{name}"
                temp.write_bytes(data)
                os.replace(temp, final)
            write_s += time.perf_counter() - started
        event("done", step, write_s=write_s)
        time.sleep(pauses.get(step, 0.0))
        if step != args.start + args.steps - 1 and not args.rate:
            time.sleep(args.pace)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
