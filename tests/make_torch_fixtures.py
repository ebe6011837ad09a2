"""Write the small ``torch.save`` files that tests/test_torch_format.py reads.

Run from the repository root, with torch installed, after changing this
file, and commit the result::

    pip install 'torch==2.13.0'      # a CPU build
    python tests/make_torch_fixtures.py

It rewrites ``tests/data/torch/``. Every file is written by ``torch.save``
itself (so the tests read what torch writes, with no torch needed to run
them); the values come from fixed seeds. torch puts a random serialization
id in each archive, so the bytes differ from one run to the next, but what
fastdiff reads from them does not (tests/test_torch_format.py checks that
against this script when torch is installed). Each ``*_b`` file is its
``*_a`` twin with the elements named in ``CHANGES`` changed.
"""

from __future__ import annotations

import shutil
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


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.ReLU(), torch.nn.Linear(3, 2)
    )


def state_dict() -> dict[str, torch.Tensor]:
    m = model()
    m.train()
    m(torch.randn(5, 4))  # BatchNorm's running statistics and counter move
    return m.state_dict()


def checkpoint() -> dict[str, Any]:
    """A training checkpoint: model, Adam state after two steps, counters,
    a config, an RNG state."""
    m = model()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    for _ in range(2):
        opt.zero_grad()
        m(torch.randn(5, 4)).square().sum().backward()
        opt.step()
    return {
        "model": m.state_dict(),
        "optimizer": opt.state_dict(),
        "epoch": 3,
        "step": 17,
        "config": {"lr": 1e-3, "name": "run", "betas": (0.9, 0.999), "tags": ["a", "b"]},
        "rng": torch.get_rng_state(),
    }


def dtypes() -> dict[str, torch.Tensor]:
    """One (2, 5) tensor per dtype, named by fastdiff's name of it."""
    out = {}
    values = torch.tensor([0.0, 1.0, -2.0, 0.5, 3.0, -0.0, 4.0, -1.5, 2.0, 0.25])
    for dt, name in DTYPE_NAMES.items():
        if dt is torch.bool:
            t = torch.tensor([i % 3 == 0 for i in range(10)])
        elif dt.is_floating_point:
            t = values.to(dt)
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
            torch.manual_seed(step)
            sd = {"w": torch.randn(3, 4), "opt": {"state": {0: {"m": torch.zeros(4)}}}}
            if run == "run_b" and step == 2:
                sd["opt"]["state"][0]["m"][3] = 1.0
            torch.save(sd, folder / run / f"step_{step}.pt")


if __name__ == "__main__":
    write_all()
    print(f"wrote {DATA.relative_to(ROOT)}")
