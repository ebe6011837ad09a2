"""Write the small ``torch.save`` files that tests/test_torch_format.py reads.

Run from the repository root, with torch installed, after changing this
file, and commit the result::

    pip install 'torch==2.13.0'      # a CPU build
    python tests/make_torch_fixtures.py

It rewrites ``tests/data/torch/``. Every file is written by ``torch.save``
itself (so the tests read what torch writes, with no torch needed to run
them). torch 2.13 writes the same bytes for the same objects (the
``serialization_id`` record is derived from the other records, not drawn at
random), so the script rewrites the committed files exactly, on any host:
tests/test_torch_format.py checks that when torch is installed. Each ``*_b``
file is its ``*_a`` twin with the elements named in ``CHANGES`` changed.

Nothing in the files depends on the host either. torch's CPU kernels
(matmul, BatchNorm, Adam, random normals, init functions, ...) round
differently on different instruction sets, BLAS builds and thread counts,
and a few Adam steps on near-zero gradients make a rounding difference as
large as the learning rate; so no floating-point value here is one a
kernel computed. The model and the optimizer are real (their state_dicts
have torch's own keys, nesting, dtypes and shapes), but every
floating-point tensor they hold is then overwritten in place with numbers
from ``random.Random``, each a multiple of a power of two that float32
holds exactly (``exact_values``). The other tensors hold values that no
rounding can touch: small integers and quarters (``torch.arange``,
``ones``, ``zeros``, ``full``, ``tensor``), integers, an RNG state seeded
and never drawn from, and the dtype samples, whose bit patterns this file
encodes itself (``float_bits``).
"""

from __future__ import annotations

import math
import random
import shutil
import struct
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "torch"

#: Every dtype of torch that fastdiff compares, and how ``DTYPES`` names it.
DTYPE_NAMES = {
    torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.float8_e4m3fn: "f8_e4m3fn", torch.float8_e5m2: "f8_e5m2",
    torch.float8_e4m3fnuz: "f8_e4m3fnuz", torch.float8_e5m2fnuz: "f8_e5m2fnuz",
    torch.int8: "i8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64",
    torch.uint8: "u8", torch.uint16: "u16", torch.uint32: "u32", torch.uint64: "u64",
    torch.bool: "bool",
}  # fmt: skip


#: (exponent bits, mantissa bits, whether it is an ``fnuz`` kind: no -0, bias one more)
FLOAT_FORMATS = {
    torch.float64: (11, 52, False), torch.float32: (8, 23, False),
    torch.float16: (5, 10, False), torch.bfloat16: (8, 7, False),
    torch.float8_e4m3fn: (4, 3, False), torch.float8_e5m2: (5, 2, False),
    torch.float8_e4m3fnuz: (4, 3, True), torch.float8_e5m2fnuz: (5, 2, True),
}  # fmt: skip

#: The integer dtype whose tensor holds a float dtype's bit patterns, by element size.
BITS_DTYPES = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}

#: The range ``exact`` draws a tensor's values from, by the last part of its name.
SPANS = {"running_var": (0.5, 1.5), "exp_avg_sq": (0.0, 2.0**-6)}
SPAN = (-0.5, 0.5)

#: How many Adam steps the checkpoint has taken (its ``step`` tensors hold this).
STEPS = 2


def exact_values(key: str, n: int, low: float, high: float) -> list[float]:
    """``n`` numbers in [low, high) drawn by ``random.Random(key)``, each
    ``low`` plus a multiple of (high - low) / 4096: with high - low a power
    of two and ``low`` a multiple of that step, every one is exact in float32,
    so no conversion anywhere rounds it. Only ``random()`` is used, whose
    sequence Python keeps the same across versions and platforms."""
    span = high - low
    assert math.frexp(span)[0] == 0.5, (low, high)  # a power of two
    step = span / 4096
    assert low / step == int(low / step), (low, high)
    rng = random.Random(key)
    out = [low + math.floor(rng.random() * 4096) * step for _ in range(n)]
    assert all(struct.unpack("<f", struct.pack("<f", x))[0] == x for x in out)
    return out


def exact_tensor(key: str, shape: tuple[int, ...], low: float, high: float) -> torch.Tensor:
    n = math.prod(shape)
    return torch.tensor(exact_values(key, n, low, high), dtype=torch.float32).reshape(shape)


def exact(obj: Any, key: str, fixed: dict[str, float] | None = None) -> None:
    """Overwrite, in place, every floating-point tensor in ``obj`` (nested
    dicts, lists and tuples of tensors and other values) with
    ``exact_values`` keyed by ``key`` and the tensor's dotted place, in the
    range ``SPANS`` gives for the last part of its name; a name in ``fixed``
    is filled with its value instead (Adam's step count). Other values are
    left as they are."""
    if isinstance(obj, torch.Tensor):
        if obj.is_floating_point():
            assert obj.dtype is torch.float32 and obj.is_contiguous(), key
            leaf = key.rsplit(".", 1)[-1]
            if fixed and leaf in fixed:
                obj.fill_(fixed[leaf])  # a Python float, exact in float32
            else:
                obj.copy_(exact_tensor(key, tuple(obj.shape), *SPANS.get(leaf, SPAN)))
    elif isinstance(obj, dict):
        for k, v in obj.items():
            exact(v, f"{key}.{k}", fixed)
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            exact(v, f"{key}.{i}", fixed)


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.ReLU(), torch.nn.Linear(3, 2)
    )


def state_dict() -> dict[str, torch.Tensor]:
    m = model()
    m.train()
    m(torch.randn(5, 4))  # BatchNorm's running statistics and counter move
    sd = m.state_dict()
    exact(sd, "state")  # none of the values the kernels computed is kept
    return sd


def checkpoint() -> dict[str, Any]:
    """A training checkpoint: model, Adam state after two steps, counters,
    a config, an RNG state."""
    m = model()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    for _ in range(STEPS):
        opt.zero_grad()
        m(torch.randn(5, 4)).square().sum().backward()
        opt.step()
    out = {
        "model": m.state_dict(),
        "optimizer": opt.state_dict(),
        "epoch": 3,
        "step": 17,
        "config": {"lr": 1e-3, "name": "run", "betas": (0.9, 0.999), "tags": ["a", "b"]},
        # A seeded generator's state (mt19937 seeding is integer arithmetic),
        # in the layout torch.get_rng_state() has: no normal sample cached.
        "rng": torch.Generator().manual_seed(3).get_state(),
    }
    exact(out, "checkpoint", fixed={"step": float(STEPS)})
    return out


def float_bits(x: float, dtype: torch.dtype) -> int:
    """The bit pattern of ``x`` (zero, or a normal number ``dtype`` holds
    exactly) in ``dtype``, worked out here rather than by a conversion
    kernel: an ``fnuz`` kind has no -0, so -0.0 is 0 there."""
    exp_bits, man_bits, fnuz = FLOAT_FORMATS[dtype]
    negative = math.copysign(1.0, x) < 0 and not (fnuz and x == 0)
    sign = int(negative) << (exp_bits + man_bits)
    if x == 0:
        return sign
    frac, e = math.frexp(abs(x))  # abs(x) = (2 * frac) * 2 ** (e - 1), 1 <= 2 * frac < 2
    biased = e - 1 + (1 << (exp_bits - 1)) - 1 + fnuz
    mantissa = (2 * frac - 1) * 2**man_bits
    assert 0 < biased < (1 << exp_bits) - 1 and mantissa == int(mantissa), (x, dtype)
    return sign | biased << man_bits | int(mantissa)


def float_tensor(values: list[float], dtype: torch.dtype) -> torch.Tensor:
    width = dtype.itemsize * 8
    bits = [float_bits(x, dtype) for x in values]
    if width > 8:  # held by a signed integer dtype: two's complement
        bits = [b - (1 << width) if b >> (width - 1) else b for b in bits]
    return torch.tensor(bits, dtype=BITS_DTYPES[width // 8]).view(dtype)


def dtypes() -> dict[str, torch.Tensor]:
    """One (2, 5) tensor per dtype, named by fastdiff's name of it."""
    out = {}
    values = [0.0, 1.0, -2.0, 0.5, 3.0, -0.0, 4.0, -1.5, 2.0, 0.25]
    for dt, name in DTYPE_NAMES.items():
        if dt is torch.bool:
            t = torch.tensor([i % 3 == 0 for i in range(10)])
        elif dt.is_floating_point:
            t = float_tensor(values, dt)
        else:
            t = torch.tensor(list(range(10, 20)), dtype=torch.int64).to(dt)
        out[name] = t.reshape(2, 5)
    return out


def views() -> dict[str, torch.Tensor]:
    """Views of one storage, and others: each the way torch saves it."""
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    cube = torch.arange(24, dtype=torch.int64).reshape(2, 3, 4)
    half = torch.arange(12, dtype=torch.bfloat16).reshape(3, 4)
    attr = torch.ones(2)
    attr.note = "kept by torch, dropped by fastdiff"
    param = torch.nn.Parameter(torch.full((2,), 3.0))
    param.tag = 1
    return {
        "base": base,
        "t": base.t(),  # transposed: strides (1, 6)
        "step": base[::2, 1::2],  # sliced with steps: offset 1, strides (12, 2)
        "row": base[1],  # a plain range inside the storage
        "tail": base.view(-1)[5:],
        "tied": base,  # the very same tensor twice (weight tying)
        "same": base[:],  # another tensor, the same view
        "expand": base[0, :2].expand(3, 2),  # stride 0
        "perm": cube.permute(2, 0, 1),
        "half_t": half.t(),
        "scalar": torch.tensor(5.0),
        "empty": torch.zeros(0, 3),
        "attr": attr,  # a tensor with a Python attribute
        "param": param,  # a Parameter with one
    }


#: What each ``*_b`` file changes of its ``*_a`` twin: (tensor path, index, value).
CHANGES: dict[str, list[tuple[tuple[str | int, ...], tuple[int, ...], Any]]] = {
    "state": [(("0.weight",), (1, 2), 9.0)],
    "checkpoint": [(("optimizer", "state", 3, "exp_avg_sq"), (1,), 7.0)],
    "dtypes": [((name,), divmod(i % 10, 5), 7.0) for i, name in enumerate(DTYPE_NAMES.values())],
    "views": [(("base",), (2, 3), -1.0)],
}


def changed(obj: Any, case: str) -> Any:
    for path, index, value in CHANGES[case]:
        t = obj
        for part in path:
            t = t[part]
        if t.dtype is torch.bool:
            value = not bool(t[index])
        elif not t.dtype.is_floating_point:
            value = int(t[index].to(torch.int64)) + 1
        t[index] = value
    return obj


def write_all(folder: Path = DATA) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    cases = {"state": state_dict, "checkpoint": checkpoint, "dtypes": dtypes, "views": views}
    for case, make in cases.items():
        torch.save(make(), folder / f"{case}_a.pt")
        torch.save(changed(make(), case), folder / f"{case}_b.pt")
    # A Hugging Face file name, holding state_a's tensors.
    torch.save(state_dict(), folder / "pytorch_model.bin")
    # The same small dict in every pickle protocol torch.save can write.
    for protocol in (1, 2, 3, 4, 5):
        small = {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3), "n": [1, 2.5, True]}
        small["p"] = torch.nn.Parameter(small["w"].t().clone())
        torch.save(small, folder / f"protocol_{protocol}.pt", pickle_protocol=protocol)
    # Run folders: a container file per step; run B's step 2 differs in one element.
    for run in ("run_a", "run_b"):
        (folder / run).mkdir()
        for step in range(3):
            w = exact_tensor(f"run.{step}.w", (3, 4), *SPAN)  # the same in both runs
            sd = {"w": w, "opt": {"state": {0: {"m": torch.zeros(4)}}}}
            if run == "run_b" and step == 2:
                sd["opt"]["state"][0]["m"][3] = 1.0
            torch.save(sd, folder / run / f"step_{step}.pt")


if __name__ == "__main__":
    write_all()
    print(f"wrote {DATA.relative_to(ROOT)}")
