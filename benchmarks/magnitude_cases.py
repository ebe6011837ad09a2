"""Rounding or logic: fastdiff's magnitude on real reorderings and real logic changes.

Each case computes one buffer twice with numpy, the way a training step
does: once as run A, once as run B, either with the floating-point
operations in another order (a reordering: the magnitude should be
``rounding``) or with a real change of the computation (a logic change:
``large``). Both are saved as ``.npy`` dumps and compared with
``fastdiff.compare_runs``; the table shows, per case, the largest distance
in the elements' own ULPs (the old rule judged by it alone, at 16 ULP), the
largest in ULPs of the buffer's (or row's) scale, and the magnitude
fastdiff gives now.

    python benchmarks/magnitude_cases.py [--markdown]

The same cases are ``tests/test_magnitude.py``'s (it imports them).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

#: A case: (name, what it is, "rounding" or "large" as it should be, the two
#: arrays). A case whose expectation starts with "limit:" is a known limit:
#: a logic change too small to tell from rounding by its size alone.
Case = tuple[str, str, str, Callable[[], tuple[np.ndarray, np.ndarray]]]


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _bf16(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat16 (nearest even), as uint16 patterns
    viewed as ml_dtypes' bfloat16 where it is installed, else raw."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    try:
        import ml_dtypes

        return rounded.view(ml_dtypes.bfloat16)
    except ImportError:  # pragma: no cover - the tests have ml_dtypes
        return rounded


def _sequential(terms: np.ndarray, axis: int = 0) -> np.ndarray:
    """A sum in float32, one term after another along ``axis`` (a loop)."""
    terms = np.moveaxis(terms, axis, 0)
    acc = np.zeros(terms.shape[1:], dtype=np.float32)
    for t in terms:
        acc = acc + t
    return acc


def _shuffled(terms: np.ndarray, seed: int, axis: int = 0) -> np.ndarray:
    """The same sum with the terms in another order (atomics, split-K)."""
    order = _rng(seed).permutation(terms.shape[axis])
    return _sequential(np.take(terms, order, axis=axis), 0 if axis == 0 else axis)


def weight_grad() -> tuple[np.ndarray, np.ndarray]:
    # dW = sum over the batch of x_i^T g_i, f32, 256 samples, (32, 16)
    rng = _rng(1)
    x = rng.standard_normal((256, 32)).astype(np.float32)
    g = rng.standard_normal((256, 16)).astype(np.float32)
    terms = x[:, :, None] * g[:, None, :]
    return _sequential(terms), _shuffled(terms, 2)


def bias_grad() -> tuple[np.ndarray, np.ndarray]:
    # db = sum over the batch of g_i, f32, 4096 samples: a 1-D buffer, cancellation
    g = _rng(3).standard_normal((4096, 64)).astype(np.float32)
    return _sequential(g), _shuffled(g, 4)


def split_k_matmul() -> tuple[np.ndarray, np.ndarray]:
    # A @ B, f32, whole against split-K with 4 partial products summed
    rng = _rng(5)
    a = rng.standard_normal((48, 512)).astype(np.float32)
    b = rng.standard_normal((512, 40)).astype(np.float32)
    whole = np.matmul(a, b)
    parts = [np.matmul(a[:, k : k + 128], b[k : k + 128]) for k in range(0, 512, 128)]
    split = ((parts[0] + parts[1]) + parts[2]) + parts[3]
    return whole, split


def pairwise_vs_sequential() -> tuple[np.ndarray, np.ndarray]:
    # a loss reduced over rows: numpy's pairwise sum against a loop, f32, (64, 1000)
    x = _rng(6).standard_normal((64, 1000)).astype(np.float32)
    return x.sum(axis=1, dtype=np.float32), _sequential(x, axis=1)


def softmax_orders() -> tuple[np.ndarray, np.ndarray]:
    # softmax over rows, the normaliser summed in two orders, f32, (32, 256)
    z = np.exp(_rng(7).standard_normal((32, 256)).astype(np.float32))
    s1 = _sequential(z, axis=1)
    s2 = _shuffled(z, 8, axis=1)
    return z / s1[:, None], z / s2[:, None]


def _bf16_sum(terms: np.ndarray) -> np.ndarray:
    """A sum accumulated in bfloat16 (each partial sum rounded), along axis 0."""
    acc = _bf16(np.zeros(terms.shape[1:], dtype=np.float32))
    for t in terms:
        acc = _bf16(acc.astype(np.float32) + t)
    return acc


def bf16_grad() -> tuple[np.ndarray, np.ndarray]:
    # a bf16 gradient accumulated in bf16, the batch in two orders
    rng = _rng(9)
    x = rng.standard_normal((128, 24)).astype(np.float32)
    g = rng.standard_normal((128, 8)).astype(np.float32)
    terms = _bf16(x[:, :, None] * g[:, None, :]).astype(np.float32)
    order = _rng(10).permutation(terms.shape[0])
    return _bf16_sum(terms), _bf16_sum(terms[order])


def bf16_reduction() -> tuple[np.ndarray, np.ndarray]:
    # a 1-D bf16 reduction accumulated in bf16 over 512 terms: many cancel
    g = _bf16(_rng(11).standard_normal((512, 32)).astype(np.float32)).astype(np.float32)
    order = _rng(12).permutation(g.shape[0])
    return _bf16_sum(g), _bf16_sum(g[order])


def adam_update_order() -> tuple[np.ndarray, np.ndarray]:
    # w - lr * m / (sqrt(v) + eps), the gradient summed in two orders, f32
    rng = _rng(13)
    w = rng.standard_normal(2048).astype(np.float32)
    terms = rng.standard_normal((128, 2048)).astype(np.float32) * 1e-3
    g1, g2 = _sequential(terms), _shuffled(terms, 14)
    lr, eps = np.float32(1e-3), np.float32(1e-8)

    def step(g: np.ndarray) -> np.ndarray:
        m = np.float32(0.1) * g
        v = np.float32(0.001) * g * g
        return w - lr * m / (np.sqrt(v) + eps)

    return step(g1), step(g2)


def wrong_constant() -> tuple[np.ndarray, np.ndarray]:
    # a learning rate of 1e-3 against 1.1e-3 in w - lr * g
    rng = _rng(15)
    w = rng.standard_normal(4096).astype(np.float32)
    g = rng.standard_normal(4096).astype(np.float32)
    return w - np.float32(1e-3) * g, w - np.float32(1.1e-3) * g


def skipped_term() -> tuple[np.ndarray, np.ndarray]:
    # a weight gradient with one sample of the batch left out
    rng = _rng(16)
    x = rng.standard_normal((256, 32)).astype(np.float32)
    g = rng.standard_normal((256, 16)).astype(np.float32)
    terms = x[:, :, None] * g[:, None, :]
    return _sequential(terms), _sequential(terms[1:])


def small_skipped_term() -> tuple[np.ndarray, np.ndarray]:
    # a regulariser term of 1e-3 of the data's size left out of a loss per row
    rng = _rng(17)
    x = rng.standard_normal((64, 512)).astype(np.float32)
    reg = np.float32(1e-3) * np.abs(x).mean(axis=1, dtype=np.float32)
    loss = _sequential(x, axis=1)
    return loss + reg, loss


def wrong_index() -> tuple[np.ndarray, np.ndarray]:
    # a gather one row off: row 7 of the output reads row 8 of the table
    table = _rng(18).standard_normal((64, 32)).astype(np.float32)
    index = np.arange(16)
    wrong = index.copy()
    wrong[7] = 8
    return table[index], table[wrong]


def bf16_wrong_scale() -> tuple[np.ndarray, np.ndarray]:
    # a bf16 activation scaled by 1.0 against 1.1
    x = _rng(19).standard_normal((32, 64)).astype(np.float32)
    return _bf16(x), _bf16(x * np.float32(1.1))


def bf16_small_scale() -> tuple[np.ndarray, np.ndarray]:
    # a bf16 activation scaled by 1.0 against 1.01: 1% is 2.6 ULP of bf16's 8 bits
    x = _rng(19).standard_normal((32, 64)).astype(np.float32)
    return _bf16(x), _bf16(x * np.float32(1.01))


CASES: tuple[Case, ...] = (
    ("weight_grad", "f32 dW = sum_i x_i^T g_i, batch order shuffled", "rounding", weight_grad),
    ("bias_grad", "f32 db = sum_i g_i (1-D), batch order shuffled", "rounding", bias_grad),
    ("split_k", "f32 A @ B, whole against split-K (4 parts)", "rounding", split_k_matmul),
    ("row_sums", "f32 row sums, pairwise against a loop", "rounding", pairwise_vs_sequential),
    ("softmax", "f32 softmax, normaliser summed in two orders", "rounding", softmax_orders),
    ("bf16_grad", "bf16 dW accumulated in bf16, batch in two orders", "rounding", bf16_grad),
    ("bf16_reduce", "bf16 1-D sum of 512 terms in bf16, two orders", "rounding", bf16_reduction),
    ("adam", "f32 Adam update, gradient summed in two orders", "rounding", adam_update_order),
    ("wrong_lr", "f32 w - lr*g, lr 1e-3 against 1.1e-3", "large", wrong_constant),
    ("skipped_sample", "f32 dW with one sample of 256 left out", "large", skipped_term),
    ("skipped_reg", "f32 loss per row, a 1e-3 regulariser left out", "large", small_skipped_term),
    ("wrong_index", "f32 gather, one row read one off", "large", wrong_index),
    ("bf16_scale", "bf16 activation scaled by 1.0 against 1.1", "large", bf16_wrong_scale),
    ("bf16_1pct", "bf16 activation scaled by 1.0 against 1.01", "limit:large", bf16_small_scale),
)


def classify(cases: tuple[Case, ...] = CASES) -> list[dict[str, object]]:
    """Compare each case's two arrays with fastdiff; a row of figures each."""
    from fastdiff import Recorder, compare_runs

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp, "a"), Path(tmp, "b")
        # The recorder writes .npy dumps and names bf16 in its digest log.
        with Recorder(a) as rec_a, Recorder(b) as rec_b:
            for name, _, _, make in cases:
                x, y = make()
                if x.dtype == np.uint16:  # bf16 as raw patterns: ml_dtypes is missing
                    raise SystemExit("these cases need ml_dtypes for bf16")
                rec_a.dump(0, name, x)
                rec_b.dump(0, name, y)
        report = compare_runs(a, b)
        by_name = {r.name: r for r in report.buffers}
        for name, what, want, _ in cases:
            r = by_name[name]
            out.append(
                {
                    "case": name,
                    "what": what,
                    "should": want,
                    "dtype": r.dtype,
                    "shape": r.shape,
                    "n_diff": r.n_diff,
                    "max_ulp": r.max_ulp,
                    "max_ulp_of_scale": r.max_ulp_of_scale,
                    "old": "rounding" if r.max_ulp is not None and r.max_ulp <= 16 else "large",
                    "magnitude": r.magnitude,
                    "cancellation": r.cancellation,
                }
            )
    return out


def _verdict(r: dict[str, object]) -> str:
    should = str(r["should"])
    if should.startswith("limit:"):
        return "limit" if r["magnitude"] != should[6:] else "yes"
    return "yes" if r["magnitude"] == should else "NO"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    args = parser.parse_args(argv)
    rows = classify()
    head = ["case", "what", "dtype", "n_diff", "max ULP", "ULP of scale", "old rule", "now", "ok"]
    table = []
    for r in rows:
        scaled = r["max_ulp_of_scale"]
        table.append(
            [
                str(r["case"]),
                str(r["what"]),
                str(r["dtype"]),
                f"{r['n_diff']:,}" if r["n_diff"] is not None else "-",
                f"{r['max_ulp']:,}" if r["max_ulp"] is not None else "-",
                "-" if scaled is None else f"{scaled:.3g}",
                str(r["old"]),
                str(r["magnitude"]) + (" (cancellation)" if r["cancellation"] else ""),
                _verdict(r),
            ]
        )
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for row in table:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(x) for x in col) for col in zip(head, *table, strict=True)]
        for row in [head, *table]:
            print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    wrong = [r["case"] for r in rows if _verdict(r) == "NO"]
    if wrong:
        print(f"misjudged: {', '.join(map(str, wrong))}", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
