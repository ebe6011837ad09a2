"""Write the example runs ``examples/origins/run-a`` and ``examples/origins/run-b``.

Run after changing this file, and commit the result::

    python examples/origins/make_runs.py

They go with ``examples/origins/schema.toml``, which declares each buffer's
inputs. Both runs compute the same small RL step, buffer by buffer, from
those inputs (the market feed ``obs``, the policy logits from it and the
ISV slots, actions sampled from the logits and a PRNG, a simulator that
moves entry prices and PnL, rewards, dones, advantages and returns, an
entropy bonus). Run B's reward kernel is nondeterministic from step 3 on:
it sums with atomics, so two envs' rewards come out a few units in the
last place apart, while everything it reads is bitwise equal. The
divergence is born there, in the middle of step 3's pipeline; the
advantages and returns receive it at once, the ISV controllers (which read
the last rewards) at step 4, the policy logits after them. At step 3 the
entropy coefficient, which no run dumps, is also read differently by run
B, so the entropy bonus differs with every input that is dumped equal.

Output is deterministic: values come from blake2b in counter mode and
every float is rounded to f32 with ``struct`` (no numpy), so the bytes do
not depend on the Python or library version.
"""

from __future__ import annotations

import hashlib
import math
import shutil
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
STEPS = 8
ENVS = 16
ACTIONS = 4
ISV = 32
NONDETERMINISTIC_FROM = 3  # run B's reward kernel, from this step on


def f32(x: float) -> float:
    """``x`` rounded to float32."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def ulps(x: float, k: int) -> float:
    """The float32 ``k`` units in the last place from ``x``."""
    bits = struct.unpack("<i", struct.pack("<f", x))[0]
    return struct.unpack("<f", struct.pack("<i", bits + (k if bits >= 0 else -k)))[0]


def _words(*key: object, n: int) -> list[int]:
    out = bytearray()
    counter = 0
    while len(out) < 4 * n:
        seed = "/".join(map(str, (*key, counter))).encode()
        out += hashlib.blake2b(seed, digest_size=64).digest()
        counter += 1
    return list(struct.unpack(f"<{n}I", out[: 4 * n]))


def step_of(run: str, step: int, prev: dict[str, list]) -> dict[str, list]:
    """One step of the pipeline: each buffer from its declared inputs."""
    first = not prev
    obs = [f32((w % 4096) / 64 - 32) for w in _words("obs", step, n=ENVS)]
    isv = (
        [f32(0.25 * ((w % 64) / 64)) for w in _words("isv", n=ISV)]
        if first
        else [f32(0.9 * v + 0.1 * sum(prev["rewards"]) / ENVS) if k < ENVS else v
              for k, v in enumerate(prev["isv_full"])]
    )  # fmt: skip
    weights = [f32(((w % 256) - 128) / 128) for w in _words("weights", n=ACTIONS)]
    logits = [f32(obs[e] * weights[k] + isv[e]) for e in range(ENVS) for k in range(ACTIONS)]
    prng = _words("prng", n=ENVS) if first else [_xorshift(s) for s in prev["action_prng_state"]]
    actions = []
    for e in range(ENVS):
        noise = [((prng[e] >> (8 * k)) & 0xFF) / 64 for k in range(ACTIONS)]
        scores = [logits[e * ACTIONS + k] + noise[k] for k in range(ACTIONS)]
        actions.append(max(range(ACTIONS), key=scores.__getitem__))
    old_price = prev["unit_entry_price"] if not first else [0.0] * ENVS
    price = [obs[e] if actions[e] == 1 else old_price[e] for e in range(ENVS)]
    old_pnl = prev["prev_realized_pnl"] if not first else [0.0] * ENVS
    pnl = [f32(old_pnl[e] + (obs[e] - old_price[e] if actions[e] == 2 else 0.0))
           for e in range(ENVS)]  # fmt: skip
    rewards = [f32(0.5 * pnl[e] - 0.01 * price[e] + 0.125 * actions[e]) for e in range(ENVS)]
    if run == "b" and step >= NONDETERMINISTIC_FROM:
        # Run B's reward kernel sums with atomics: two envs a few ULP off.
        for e, k in zip(_words("atomics", step, n=2), (2, -3), strict=True):
            rewards[e % ENVS] = ulps(rewards[e % ENVS], k + step - NONDETERMINISTIC_FROM)
    dones = [1.0 if actions[e] == 3 else 0.0 for e in range(ENVS)]
    old_adv = prev["advantages"] if not first else [0.0] * ENVS
    old_ret = prev["returns"] if not first else [0.0] * ENVS
    advantages = [f32(rewards[e] + 0.99 * old_adv[e] * (1 - dones[e])) for e in range(ENVS)]
    returns = [f32(rewards[e] + 0.95 * old_ret[e] * (1 - dones[e])) for e in range(ENVS)]
    coef = f32(0.01)  # the entropy coefficient: not dumped; run B reads it 1 ULP off at step 3
    if run == "b" and step == NONDETERMINISTIC_FROM:
        coef = ulps(coef, 1)
    entropy = []
    for e in range(ENVS):
        row = logits[e * ACTIONS : (e + 1) * ACTIONS]
        top = max(row)
        p = [math.exp(x - top) for x in row]
        total = sum(p)
        entropy.append(f32(-coef * sum(q / total * math.log(q / total) for q in p)))
    return {
        "obs": obs, "isv_full": isv, "policy_logits": logits, "action_prng_state": prng,
        "actions": actions, "unit_entry_price": price, "prev_realized_pnl": pnl,
        "rewards": rewards, "dones": dones, "advantages": advantages, "returns": returns,
        "entropy_bonus": entropy,
    }  # fmt: skip


def _xorshift(x: int) -> int:
    x ^= (x << 13) & 0xFFFFFFFF
    x ^= x >> 17
    x ^= (x << 5) & 0xFFFFFFFF
    return x


#: How each buffer is written: struct code.
CODES = {"action_prng_state": "I", "actions": "i"}


def runs() -> tuple[dict[str, bytes], dict[str, bytes]]:
    out: dict[str, dict[str, bytes]] = {"a": {}, "b": {}}
    for run, files in out.items():
        prev: dict[str, list] = {}
        for step in range(STEPS):
            prev = step_of(run, step, prev)
            for name, values in prev.items():
                code = CODES.get(name, "f")
                files[f"step_{step}_{name}.bin"] = struct.pack(f"<{len(values)}{code}", *values)
    return out["a"], out["b"]


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
