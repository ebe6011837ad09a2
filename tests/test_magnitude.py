"""Rounding or logic, judged against the buffer's scale (issue 23, section 3).

The cases are ``benchmarks/magnitude_cases.py``'s: real reorderings (sums,
matmuls, reductions in float32 and bf16, in several orders) must come out
``rounding``, real logic changes (a wrong constant, a skipped term, a wrong
index) ``large``. Several reorderings are far beyond 16 ULP in their
elements' own ULPs (elements near zero, where terms cancel): the rule that
judged by those alone called them logic changes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import REPO, fastdiff

pytest.importorskip("ml_dtypes")
sys.path.insert(0, str(REPO / "benchmarks"))
import magnitude_cases

from fastdiff import Recorder


@pytest.fixture(scope="module")
def rows() -> dict[str, dict[str, object]]:
    return {str(r["case"]): r for r in magnitude_cases.classify()}


@pytest.mark.parametrize("case", [c[0] for c in magnitude_cases.CASES])
def test_reorderings_are_rounding_and_logic_changes_large(
    case: str, rows: dict[str, dict[str, object]]
) -> None:
    r = rows[case]
    should = str(r["should"])
    if should.startswith("limit:"):
        # A 1% change of a bf16 value is 2.6 ULP: no size can tell it from rounding.
        assert r["magnitude"] == "rounding"
        return
    assert r["magnitude"] == should, r
    if should == "rounding":
        assert r["max_ulp_of_scale"] <= 16
        assert r["cancellation"] == (r["max_ulp"] > 16)
    else:
        assert r["max_ulp_of_scale"] > 16 and r["cancellation"] is False


def test_the_old_rule_called_reorderings_logic_changes(rows: dict[str, dict[str, object]]) -> None:
    # What the issue reported: large per element, rounding against the scale.
    cancelled = [c for c, r in rows.items() if r["cancellation"]]
    assert {"weight_grad", "bias_grad", "split_k", "bf16_grad"} <= set(cancelled)
    assert all(rows[c]["max_ulp"] > 16 for c in cancelled)  # type: ignore[operator]


def _cancelled_runs(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a", tmp_path / "b"
    x, y = magnitude_cases.weight_grad()
    with Recorder(a) as ra, Recorder(b) as rb:
        ra.dump(0, "dW", x)
        rb.dump(0, "dW", y)
    return a, b


def test_cancellation_in_the_buffer_the_group_and_its_cause(tmp_path: Path) -> None:
    a, b = _cancelled_runs(tmp_path)
    r = fastdiff("compare", a, b, "--format", "json")
    doc = json.loads(r.stdout)
    (buf,) = doc["buffers"]
    assert buf["magnitude"] == "rounding" and buf["cancellation"] is True
    assert buf["max_ulp"] > 16 >= buf["max_ulp_of_scale"]
    assert buf["ulp_log2_histogram"]  # what the text's short histogram is made of
    (group,) = doc["groups"]
    assert group["magnitude"] == "rounding"
    cause = group["cause"]
    assert cause["kind"] == "cancellation"  # not "large": no logic change to look for
    assert (cause["max_ulp"], cause["rounding_ulp"]) == (buf["max_ulp"], 16)
    # A lower line judges it large again, by both measures.
    r = fastdiff("compare", a, b, "--rounding-ulp", "2", "--format", "json")
    doc = json.loads(r.stdout)
    (buf,) = doc["buffers"]
    assert buf["magnitude"] == "large" and buf["cancellation"] is False
    assert doc["groups"][0]["cause"]["kind"] == "large"


def test_golden_the_text_words_cancellation(tmp_path: Path) -> None:
    """The text renderer's words for a cancellation, once: the buffer's line
    (and its short histogram) and the hint."""
    a, b = _cancelled_runs(tmp_path)
    text = fastdiff("compare", a, b).stdout
    line = next(ln for ln in text.splitlines() if " dW [" in ln)
    assert "ULP of its row's scale (rounding, with cancellation)" in line
    assert "ULPs: 50% <= " in line and ", all <= 511" in line  # the histogram, short
    assert "against the scale of their buffers" in text


def test_the_scale_of_a_row_is_its_own() -> None:
    # Row 0 holds values near 1e6, row 1 near 1: a 1e-3 change in row 1 is
    # large against row 1's scale, though tiny against the buffer's largest |B|.
    from fastdiff.kernels import scan_bytes
    from fastdiff.model.facts import max_scale_ulp

    a = np.array([[1e6, 1e6], [1.0, 1.0]], dtype=np.float32)
    b = a.copy()
    b[0, 0] = np.nextafter(np.float32(1e6), np.float32(2e6))
    b[1, 1] = np.float32(1.001)
    for engine in ("python", "numpy", "numba"):
        rows = scan_bytes(a.tobytes(), b.tobytes(), "f32", engine=engine, row_size=2)
        flat = scan_bytes(a.tobytes(), b.tobytes(), "f32", engine=engine)
        assert max_scale_ulp(rows.scale_rows) > 1000  # row 1: 1e-3 of 1.0
        assert max_scale_ulp(flat.scale_rows) <= 1  # against 1e6: 1 ULP
