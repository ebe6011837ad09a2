"""The JSON report's contract where a reader would otherwise have to guess
(README, "What the numbers mean"): each statement there is a test here,
through the command line on small runs written here.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from helpers import f32, fastdiff, write_runs

QNAN, QNAN_1 = 0x7FC00000, 0x7FC00001
INF, NEG_INF, ONE, TWO = 0x7F800000, 0xFF800000, 0x3F800000, 0x40000000
NEG_ZERO = 0x80000000


def bits32(*words: int) -> bytes:
    return struct.pack(f"<{len(words)}I", *words)


def next_up(value: float, k: int = 1) -> float:
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    return struct.unpack("<f", struct.pack("<I", bits + k))[0]


def compare(
    tmp_path: Path, a: bytes, b: bytes, *opts: str, schema: str | None = None
) -> dict[str, Any]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    ra, rb = write_runs(tmp_path, {"step_0_w.bin": (a, b)})
    extra: tuple[str, ...] = ("--default-dtype", "f32")
    if schema is not None:
        (tmp_path / "s.toml").write_text(schema)
        extra = ("--schema", str(tmp_path / "s.toml"))
    p = fastdiff("compare", ra, rb, *extra, *opts, "--format", "json")
    assert p.returncode in (0, 1), p.stderr
    return json.loads(p.stdout)


def the_buffer(doc: dict[str, Any]) -> dict[str, Any]:
    (b,) = doc["buffers"]
    return b


def test_first_index_under_a_tolerance_is_the_first_element_beyond_it(tmp_path: Path) -> None:
    """Element 1 is 1 ULP off (within --ulp 1), element 3 is 10 ULP off: the
    first index is 3, while the ranges cover every element whose bits differ,
    from 1. Where every difference is within, it is the first that differs."""
    a = f32(1, 2, 3, 4, 5)
    b = f32(1, next_up(2), 3, next_up(4, 10), 5)
    w = the_buffer(compare(tmp_path / "beyond", a, b, "--ulp", "1"))
    assert (w["status"], w["n_diff"], w["n_within_tolerance"]) == ("diverged", 1, 1)
    assert w["first_index"] == 3 and w["ranges"] == [[1, 2], [3, 4]]
    w = the_buffer(compare(tmp_path / "within", a, b, "--ulp", "10"))
    assert (w["status"], w["first_index"]) == ("within_tolerance", 1)


def test_nan_and_inf_mismatches_are_counted_apart(tmp_path: Path) -> None:
    """n_nan_mismatch: every differing pair with a NaN on either side (NaN
    against NaN of another payload, against infinity, against a number);
    n_inf_mismatch: an infinity against anything else, without a NaN."""
    a = bits32(QNAN, QNAN, QNAN, INF, INF, ONE)
    b = bits32(QNAN_1, INF, TWO, TWO, NEG_INF, ONE)
    w = the_buffer(compare(tmp_path, a, b))
    assert (w["n_nan_mismatch"], w["n_inf_mismatch"], w["n_diff"]) == (3, 2, 5)


@pytest.mark.parametrize(
    ("a", "b", "fields"),
    [
        # only NaN payloads differ: no finite pair, large
        (bits32(QNAN, ONE), bits32(QNAN_1, ONE),
         {"magnitude": "large", "max_ulp": None, "max_abs_delta": None,
          "ulp_log2_histogram": [], "n_nan_mismatch": 1}),
        # only an infinity against a number: large
        (bits32(INF, ONE), bits32(TWO, ONE),
         {"magnitude": "large", "max_ulp": None, "n_inf_mismatch": 1}),
        # only -0.0 against +0.0: finite, 0 ULP apart, rounding
        (bits32(0, ONE), bits32(NEG_ZERO, ONE),
         {"magnitude": "rounding", "max_ulp": 0, "max_abs_delta": 0.0,
          "ulp_log2_histogram": [], "n_signed_zero": 1}),
        # 1 ULP and a NaN mismatch: the NaN makes it large
        (bits32(QNAN, ONE), bits32(QNAN_1, ONE + 1),
         {"magnitude": "large", "max_ulp": 1, "n_nan_mismatch": 1}),
    ],
)  # fmt: skip
def test_magnitude_where_no_differing_pair_is_finite(
    tmp_path: Path, a: bytes, b: bytes, fields: dict[str, Any]
) -> None:
    w = the_buffer(compare(tmp_path, a, b))
    assert {k: w[k] for k in fields} == fields


def test_elements_within_tolerance_count_in_the_maxima_and_the_histogram(
    tmp_path: Path,
) -> None:
    """Element 0 is 8 ULP off (within --ulp 8), element 2 is 1000 ULP off
    (beyond it): the maxima and the histogram take every differing finite
    pair, within tolerance or not."""
    a = f32(1, 2, 3)
    b = f32(next_up(1, 8), 2, next_up(3, 1000))
    w = the_buffer(compare(tmp_path, a, b, "--ulp", "8"))
    assert (w["n_diff"], w["n_within_tolerance"]) == (1, 1)
    assert w["max_ulp"] == 1000 and w["max_abs_delta_index"] == 2
    assert w["ulp_log2_histogram"] == [0, 0, 0, 1, 0, 0, 0, 0, 0, 1]  # 8 and 1000
    # Within tolerance alone: the maxima are still there.
    w = the_buffer(compare(tmp_path / "all", a, f32(next_up(1, 8), 2, 3), "--ulp", "8"))
    assert (w["status"], w["max_ulp"], w["max_abs_delta_index"]) == ("within_tolerance", 8, 0)


def test_ties_go_to_the_lowest_index(tmp_path: Path) -> None:
    a = f32(1, 5, 1, 5)
    b = f32(2, 5, 2, 5)  # |A-B| 1 at 0 and 2, |A-B|/|B| 0.5 at both
    w = the_buffer(compare(tmp_path, a, b))
    assert (w["max_abs_delta_index"], w["max_rel_delta_index"]) == (0, 0)


def test_a_group_within_tolerance_agrees_in_groups_and_the_timeline(tmp_path: Path) -> None:
    """At the first divergent step, group E is within tolerance (1 ULP under
    --ulp 1) while F diverges: E is within_tolerance in groups[], with the
    magnitude its timeline row has."""
    schema = (
        '[[group]]\nkey = "E"\ntitle = "e"\nhint = "h."\n[group.members]\ne = "f32"\n'
        '[[group]]\nkey = "F"\ntitle = "f"\nhint = "h."\n[group.members]\nf = "f32"\n'
    )
    ra, rb = write_runs(
        tmp_path,
        {
            "step_0_e.bin": (f32(1, 2), f32(next_up(1), 2)),
            "step_0_f.bin": (f32(1, 2), f32(1, 3)),
        },
    )
    (tmp_path / "s.toml").write_text(schema)
    args = ("compare", ra, rb, "--schema", tmp_path / "s.toml", "--ulp", "1")
    doc = json.loads(fastdiff(*args, "--format", "json").stdout)
    groups = {g["key"]: g for g in doc["groups"]}
    timeline = {r["group"]: r for r in doc["timeline"] if r["step"] == 0}
    assert (groups["E"]["status"], groups["E"]["magnitude"]) == ("within_tolerance", "rounding")
    assert (groups["F"]["status"], groups["F"]["magnitude"]) == ("diverged", "large")
    for key in ("E", "F"):
        assert groups[key]["magnitude"] == timeline[key]["magnitude"]
    assert doc["first_divergent_groups"] == ["F"]


def test_a_minus_one_dimension_is_worked_out_from_the_common_length(tmp_path: Path) -> None:
    """Under a length mismatch, shape [-1, 2] is worked out from the shorter
    file (the common prefix): A 6 elements, B 8: (3, 2)."""
    schema = '[[group]]\nkey = "E"\n[group.members]\nw = { dtype = "f32", shape = [-1, 2] }\n'
    w = the_buffer(
        compare(tmp_path, f32(1, 2, 3, 4, 5, 6), f32(1, 2, 3, 9, 5, 6, 7, 8), schema=schema)
    )
    assert (w["status"], w["shape"], w["first_index_nd"]) == ("length_mismatch", [3, 2], [1, 1])


def _doc(tmp_path: Path, a: bytes, b: bytes, dtype: str = "f32") -> dict[str, Any]:
    """The JSON report of runs whose buffer w holds ``a`` and ``b`` at steps 0 and 1."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    ra, rb = write_runs(tmp_path, {"step_0_w.bin": (a, b), "step_1_w.bin": (a, b)})
    p = fastdiff("compare", ra, rb, "--default-dtype", dtype, "--format", "json")
    assert p.returncode == 1, p.stderr
    return json.loads(p.stdout)  # type: ignore[no-any-return]


def _cause(doc: dict[str, Any]) -> dict[str, Any]:
    (g,) = [g for g in doc["groups"] if g["status"] == "diverged"]
    return g["cause"]  # type: ignore[no-any-return]


def _large(beyond: bool = False, of_scale: bool = False, n_nan: int = 0, n_inf: int = 0,
           integers: bool = False) -> dict[str, Any]:  # fmt: skip
    return {"beyond": beyond, "of_scale": of_scale, "n_nan": n_nan, "n_inf": n_inf,
            "integers": integers}  # fmt: skip


@pytest.mark.parametrize(
    ("a", "b", "max_ulp", "n_nan", "n_inf", "large", "cell"),
    [
        # NaN payloads and a signed zero: 0 ULP, large because of the NaN
        (bits32(QNAN, 0, ONE), bits32(QNAN_1, NEG_ZERO, ONE), 0, 1, 0, _large(n_nan=1),
         "nan_inf"),
        (bits32(INF, ONE), bits32(TWO, ONE + 1), 1, 0, 1, _large(n_inf=1), "nan_inf"),
        (bits32(ONE, ONE), bits32(ONE + 20, ONE), 20, 0, 0, _large(beyond=True, of_scale=True),
         "delta"),
        (bits32(0, ONE), bits32(NEG_ZERO, ONE), 0, 0, 0, None, "rounding"),
        # Only NaN payloads differ: no finite pair, so no ULP distance; the count says it
        (bits32(QNAN, ONE), bits32(QNAN_1, ONE), None, 1, 0, _large(n_nan=1), "nan_inf"),
        (bits32(INF, QNAN), bits32(NEG_INF, QNAN_1), None, 1, 1, _large(n_nan=1, n_inf=1),
         "nan_inf"),
    ],
)  # fmt: skip
def test_every_magnitude_gives_its_cause(
    tmp_path: Path,
    a: bytes,
    b: bytes,
    max_ulp: int | None,
    n_nan: int,
    n_inf: int,
    large: dict[str, Any] | None,
    cell: str,
) -> None:
    """A buffer that is large by a NaN or inf mismatch carries the counts
    beside its ULP distance; the group's cause names what made it large; the
    timeline cell of such a group is nan/inf, not a tiny |A-B|."""
    doc = _doc(tmp_path, a, b)
    w = doc["buffers"][0]
    assert (w["max_ulp"], w["n_nan_mismatch"], w["n_inf_mismatch"]) == (max_ulp, n_nan, n_inf)
    assert w["magnitude"] == ("rounding" if large is None else "large")
    cause = _cause(doc)
    assert cause["kind"] == ("rounding" if large is None else "large")
    assert cause["large"] == large
    assert [r["cell"] for r in doc["timeline"]] == [cell, cell]


def test_golden_the_text_words_a_nan_mismatch_as_the_cause_of_large(tmp_path: Path) -> None:
    """The text renderer's words for a magnitude and its cause, once: beside
    the ULP distance, in the hint, and as the timeline's cell."""
    pair = (bits32(QNAN, 0, ONE), bits32(QNAN_1, NEG_ZERO, ONE))
    ra, rb = write_runs(tmp_path, {"step_0_w.bin": pair, "step_1_w.bin": pair})
    text = fastdiff("compare", ra, rb, "--default-dtype", "f32").stdout
    assert "max 0 ULP (large: 1 NaN mismatch)" in text
    assert "NaN mismatch;" not in text  # the cause is named in the max part, not after it
    assert "Its differences are large (1 NaN mismatch)" in " ".join(text.split())
    assert [line.split()[-1] for line in text.splitlines()[-2:]] == ["nan/inf", "nan/inf"]


def test_integers_are_large_because_they_differ(tmp_path: Path) -> None:
    doc = _doc(tmp_path, bits32(1, 2), bits32(1, 5), dtype="i32")
    w = doc["buffers"][0]
    assert (w["max_abs_delta"], w["max_abs_delta_index"], w["max_ulp"]) == (3, 1, None)
    assert (w["magnitude"], _cause(doc)["kind"]) == ("large", "large")
    assert _cause(doc)["large"] == _large(integers=True)


def test_atol_rtol_and_ulp_combine_by_or(tmp_path: Path) -> None:
    """Element 0 is 8 ULP above 1.0 (9.5e-7: within --atol 1e-6, not --ulp 4);
    element 1 is 2 ULP above 100 (1.5e-5: within --ulp 4, not --atol 1e-6).
    Either test alone forgives one of them; both together forgive both, and
    --help says so."""
    a = f32(1.0, 100.0)
    b = f32(next_up(1.0, 8), next_up(100.0, 2))

    def counts(*opts: str, folder: str) -> tuple[int, int]:
        w = the_buffer(compare(tmp_path / folder, a, b, *opts))
        return w["n_diff"], w["n_within_tolerance"]

    assert counts("--atol", "1e-6", folder="atol") == (1, 1)
    assert counts("--ulp", "4", folder="ulp") == (1, 1)
    assert counts("--atol", "1e-6", "--ulp", "4", folder="both") == (0, 2)
    assert counts(folder="exact") == (2, 0)
    text = " ".join(fastdiff("compare", "--help").stdout.split())
    assert "either the --atol/--rtol test or the --ulp test holds" in text
    assert "with --ulp too, either test suffices" in text
