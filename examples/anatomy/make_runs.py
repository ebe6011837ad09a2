"""Write the example runs ``examples/anatomy/run-a`` and ``examples/anatomy/run-b``.

Run after changing this file, and commit the result::

    python examples/anatomy/make_runs.py

They go with the schema ``examples/anatomy/schema.toml`` (shapes and named ISV
fields) and show how a divergence spreads: the ISV controllers (E) go first
at step 4, by two units in the last place in the PopArt sigma slots (a
reduction whose order changed); the Kelly EMAs follow at step 5 along with
the rewards (F, still rounding-size); at step 6 the advantages and the
policy logits of two envs are far apart; at step 7 the sampled actions
differ; from step 8 the action RNG (C) is off too, and everything grows.

Output is deterministic: every value comes from blake2b in counter mode
and is packed with ``struct`` (no numpy), so the bytes never depend on the
Python or library version. Floats are multiples of 1/64 in [-64, 64), exact
in f32; a change of k ULP adds k to an element's bit pattern.
"""

from __future__ import annotations

import hashlib
import shutil
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
STEPS = 12
ENVS = 64
ISV = 757
ACTIONS = 8  # policy_logits: ENVS/ACTIONS rows of ACTIONS logits ([-1, 8] in the schema)

#: Buffer name -> (struct code, number of elements).
BUFFERS = {
    "action_prng_state": ("I", ENVS),
    "isv_full": ("f", ISV),
    "rewards": ("f", ENVS),
    "advantages": ("f", ENVS),
    "actions": ("i", ENVS),
    "policy_logits": ("f", ENVS),
}


def _words(step: int, name: str, n: int) -> list[int]:
    out = bytearray()
    counter = 0
    while len(out) < 4 * n:
        out += hashlib.blake2b(f"anatomy/{step}/{name}/{counter}".encode(), digest_size=64).digest()
        counter += 1
    return list(struct.unpack(f"<{n}I", out[: 4 * n]))


def _values(step: int, name: str) -> list[int | float]:
    code, n = BUFFERS[name]
    words = _words(step, name, n)
    if code == "I":
        return words
    if code == "i":
        return [w % ACTIONS for w in words]
    return [(w % 8192 - 4096) / 64 for w in words]


def _bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def _float(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


def _ulps(values: list[int | float], index: int, k: int) -> None:
    """Move one float element by k units in the last place."""
    values[index] = _float(_bits(float(values[index])) + k)


def runs() -> tuple[dict[str, bytes], dict[str, bytes]]:
    a: dict[str, bytes] = {}
    b: dict[str, bytes] = {}
    for step in range(STEPS):
        for name, (code, n) in BUFFERS.items():
            va = _values(step, name)
            vb = list(va)
            late = step - 4  # steps since the divergence began
            if name == "isv_full" and late >= 0:
                _ulps(vb, 725, 2 + late)  # popart_sigma_welford
                _ulps(vb, 726, -(1 + late))
                if late >= 1:
                    for i in range(701, 704):  # kelly_avg_win_ema
                        _ulps(vb, i, late + i - 700)
                if late >= 2:
                    _ulps(vb, 712, 40 * late)  # win_rate_ema
                if late >= 4:
                    for i in range(740, 757):  # ph_edge_decay
                        vb[i] = float(va[i]) * 1.5 + 1
            if name == "rewards" and late >= 1:
                for i in range(17, 17 + late):
                    _ulps(vb, i, 1 + late // 2)
                if late >= 3:
                    vb[40] = float(va[40]) + 2.0**late
            if name == "advantages" and late >= 2:
                for i in range(3, 3 + 4 * late, 2):
                    vb[i] = float(va[i]) + 64.0 * late
            if name == "policy_logits" and late >= 2:
                for row in (2, 5, 6)[: late - 1]:
                    for i in range(row * ACTIONS, (row + 1) * ACTIONS):
                        vb[i] = float(va[i]) - 8.0 * late
            if name == "actions" and late >= 3:
                for i in (18, 44, 45)[: late - 2]:
                    vb[i] = (int(va[i]) + 3) % ACTIONS
            if name == "action_prng_state" and late >= 4:
                for i in range(0, 8 * (late - 3)):
                    vb[i] = int(va[i]) ^ 0x9E3779B9
            file = f"step_{step}_{name}.bin"
            a[file] = struct.pack(f"<{n}{code}", *va)
            b[file] = struct.pack(f"<{n}{code}", *vb)
    return a, b


def write(folder: Path, files: dict[str, bytes]) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name, content in sorted(files.items()):
        (folder / name).write_bytes(content)


def main(out: Path = HERE) -> int:
    a, b = runs()
    write(out / "run-a", a)
    write(out / "run-b", b)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE))
