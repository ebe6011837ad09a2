"""Write the small tensor files that tests/test_formats.py reads without the
libraries that wrote them: safetensors files written by the safetensors
library (with ml_dtypes for bfloat16 and the 8-bit floats) and .npz archives
written by numpy. Run from the repository root, and commit the result::

    pip install safetensors ml_dtypes
    python tests/make_format_fixtures.py

It rewrites ``tests/data/formats/<case>/{a,b}`` and ``expected.json``: for
each case the exit code and, per buffer, its dtype, status and the first
differing element, worked out here with numpy (an oracle independent of
fastdiff), never by running fastdiff.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import ml_dtypes
import numpy as np
from safetensors.numpy import save_file

OUT = Path(__file__).parent / "data" / "formats"
NAMES = {
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.int16): "i16",
    np.dtype(np.uint8): "u8",
    np.dtype(bool): "bool",
    np.dtype(ml_dtypes.bfloat16): "bf16",
    np.dtype(ml_dtypes.float8_e4m3fn): "f8_e4m3fn",
    np.dtype(ml_dtypes.float8_e5m2): "f8_e5m2",
}


def _first(a: np.ndarray, b: np.ndarray) -> int | None:
    ua = a.reshape(-1).view(f"u{a.dtype.itemsize}")
    ub = b.reshape(-1).view(f"u{b.dtype.itemsize}")
    idx = np.flatnonzero(ua != ub)
    return int(idx[0]) if idx.size else None


def _tensors(seed: int) -> dict[str, np.ndarray]:
    r = np.random.default_rng(seed)
    x = r.standard_normal((4, 6)).astype(np.float32)
    return {
        "model.w": x,
        "model.w_bf16": x.astype(ml_dtypes.bfloat16),
        "model.w_e4m3": x.astype(ml_dtypes.float8_e4m3fn),
        "model.w_e5m2": x.astype(ml_dtypes.float8_e5m2),
        "opt.step": np.array([7], np.float64),
        "mask": x > 0,
        "ids": (x * 50).astype(np.int16),
    }


def main() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    expected: dict[str, object] = {}

    # safetensors, two steps; B's bf16 tensor differs by one ULP at step 1.
    case = OUT / "safetensors_steps"
    rows: dict[str, list[object]] = {}
    for run in ("a", "b"):
        (case / run).mkdir(parents=True)
    for step in range(2):
        ta = _tensors(1)
        tb = _tensors(1)
        if step == 1:
            tb["model.w_bf16"] = tb["model.w_bf16"].copy()
            tb["model.w_bf16"].view(np.uint16)[1, 4] += 1
        save_file(ta, str(case / "a" / f"step_{step}.safetensors"))
        save_file(tb, str(case / "b" / f"step_{step}.safetensors"))
        for k in ta:
            first = _first(ta[k], tb[k])
            if step == 1 or k not in rows:
                rows[k] = [NAMES[ta[k].dtype], "equal" if first is None else "diverged", first]
    expected["safetensors_steps"] = {"exit": 1, "buffers": rows}

    # np.savez_compressed archive per run; the last element of a differs.
    case = OUT / "npz_compressed"
    r = np.random.default_rng(2)
    x = r.standard_normal(3000).astype(np.float32)
    y = x.copy()
    y[-1] = np.nextafter(y[-1], np.float32(np.inf))
    for run, arr in (("a", x), ("b", y)):
        (case / run).mkdir(parents=True)
        np.savez_compressed(case / run / "step_0.npz", act=arr, ids=np.arange(10, dtype=np.int16))
    expected["npz_compressed"] = {
        "exit": 1,
        "buffers": {"act": ["f32", "diverged", _first(x, y)], "ids": ["i16", "equal", None]},
    }
    (OUT / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
