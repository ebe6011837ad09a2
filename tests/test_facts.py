"""The one description of per-buffer facts (``fastdiff.model.facts``) and
the value classes built on ``fastdiff.model.value.Value``.

- The table drives everything downstream of the kernels: merging and
  shifting pieces, the result's fields, the JSON keys and their order, the
  counts that are 0 or null; a fact added to the table shows up in all of
  them, and the JSON of a buffer keeps its contracted key order.
- The numba kernels write facts at the table's slots, and refuse a kernel
  compiled for another layout (numba's disk cache does not notice edits to
  ``facts.py``).
- ``BufferResult(..., n_diff=0, ...)`` keeps working: fact keywords map into
  the facts.
- Records compare, hash, print and ``replace`` by the parameters of their
  ``__init__``, whatever order ``__slots__`` lists.
- Importing the modules that describe and render results pulls in none of
  the costly standard modules the comparison path avoids.
"""

from __future__ import annotations

import json
import pickle
import struct
import subprocess
import sys
import types
from pathlib import Path

import pytest

from fastdiff.kernels import ScanStats, Tolerance, scan_bytes
from fastdiff.model import facts as F
from fastdiff.model.results import COUNT_FIELDS, BufferResult, Report, Work
from fastdiff.model.value import Value
from fastdiff.render.json import buffer_dict, render_json

#: The keys of a buffer's JSON object, in order: the contract (README "JSON output").
BUFFER_KEYS = [
    "step", "name", "group", "dtype", "status", "n_elements_a", "n_elements_b",
    "n_diff", "n_within_tolerance", "first_index", "a", "b", "a_bits", "b_bits",
    "max_abs_delta", "max_abs_delta_index", "n_nan_mismatch", "n_inf_mismatch",
    "first_divergent_chunk", "shape", "first_index_nd", "max_abs_delta_index_nd",
    "diff_fraction", "ranges", "n_ranges", "rows", "n_rows", "fields",
    "n_diff_outside_fields", "max_rel_delta", "max_rel_delta_index", "max_ulp",
    "ulp_log2_histogram", "n_signed_zero", "max_ulp_of_scale", "magnitude", "cancellation",
    "path_a", "path_b", "message",
]  # fmt: skip


def test_buffer_json_keys_follow_the_table() -> None:
    b = BufferResult(3, "x", "g", "f32", "diverged", 4, 4, "a/x", "b/x", n_diff=1, first_index=0)
    assert list(buffer_dict(b)) == BUFFER_KEYS
    assert [f.name for f in F.RESULT_FACTS] == BUFFER_KEYS[7:-3]
    # where nothing differs, no anatomy: the report of equal buffers stays small
    equal = BufferResult(3, "x", "g", "f32", "equal", 4, 4, "a/x", "b/x", facts=F.NOTHING_DIFFERS)
    anatomy = BUFFER_KEYS.index("shape")
    assert list(buffer_dict(equal)) == BUFFER_KEYS[:anatomy] + BUFFER_KEYS[-3:]
    assert tuple(BUFFER_KEYS[anatomy:-3]) == F.ANATOMY_NAMES
    assert COUNT_FIELDS == ("n_diff", "n_within_tolerance", "n_nan_mismatch", "n_inf_mismatch")


def test_nothing_differs_is_counts_zero_and_the_rest_null() -> None:
    d = dict(zip(F.RESULT_NAMES, F.NOTHING_DIFFERS, strict=True))
    assert {k for k, v in d.items() if v is not None} == set(COUNT_FIELDS)
    assert all(d[k] == 0 for k in COUNT_FIELDS)
    assert F.result_facts(ScanStats()) == F.NOTHING_DIFFERS


def test_merge_and_shift_follow_the_table() -> None:
    x = ScanStats(n_diff=2, first_diff=3, first_any=1, max_abs_delta=5.0,
                  max_abs_delta_index=3, n_nan_mismatch=1)  # fmt: skip
    y = ScanStats(n_diff=1, n_within_tolerance=2, first_diff=0, first_any=0,
                  max_abs_delta=5.0, max_abs_delta_index=0, n_inf_mismatch=4)  # fmt: skip
    z = x.merged(y.shifted(10))
    assert z == ScanStats(
        n_diff=3,
        n_within_tolerance=2,
        first_diff=3,
        first_any=1,
        max_abs_delta=5.0,
        max_abs_delta_index=3,
        n_nan_mismatch=1,
        n_inf_mismatch=4,
    )  # fmt: skip  (a tie keeps the earlier piece's maximum)
    bigger = ScanStats(first_any=2, max_abs_delta=7.0, max_abs_delta_index=2)
    assert x.merged(bigger.shifted(10)).max_abs_delta_index == 12
    assert ScanStats().merged(x) == x and x.merged(ScanStats()) == x
    assert ScanStats().shifted(5) == ScanStats()  # -1 stays "none"


def test_a_new_fact_needs_only_its_entry() -> None:
    """What the module docstring promises: one more table entry, and stats,
    merging, shifting, results, counts and slots all carry it."""
    import fastdiff.model.facts as module

    source = Path(module.__file__).read_text()
    anchor = "    # the byte range [lo, hi) of the first chunk"
    assert anchor in source
    source = source.replace(anchor, '    Fact("n_subnormal", merge=SUM, zero=0),\n' + anchor)
    new = types.ModuleType("fastdiff.model._facts_plus", "a copy with one more fact")
    new.__package__ = "fastdiff.model"
    exec(compile(source, "facts_plus.py", "exec"), new.__dict__)

    stats = new.ScanStats(n_diff=1, first_any=0, first_diff=0, n_subnormal=2)
    merged = stats.merged(new.ScanStats(n_subnormal=3).shifted(7))
    assert merged.n_subnormal == 5 and merged.n_diff == 1
    assert new.COUNT_FIELDS[-1] == "n_subnormal"
    names = new.RESULT_NAMES
    assert names[names.index("n_subnormal") + 1] == "first_divergent_chunk"
    facts = dict(zip(new.RESULT_NAMES, new.result_facts(merged), strict=True))
    assert facts["n_subnormal"] == 5 and facts["first_index"] == 0
    assert dict(zip(new.RESULT_NAMES, new.NOTHING_DIFFERS, strict=True))["n_subnormal"] == 0
    assert new.SLOT["n_subnormal"] == new.SLOT["n_inf_mismatch"] + 1
    assert new.layout_fingerprint() != F.layout_fingerprint()


def test_result_facts_rejects_unknown_read_values() -> None:
    with pytest.raises(TypeError, match="not_a_fact"):
        F.result_facts(ScanStats(), not_a_fact=1)
    with pytest.raises(TypeError, match="no such kernel fact"):
        ScanStats(first_index=3)  # derived, not a kernel fact


def test_buffer_result_fact_keywords() -> None:
    zeros = dict.fromkeys(COUNT_FIELDS, 0)
    b = BufferResult(0, "x", "g", "u8", "equal", 4, 4, **zeros)
    assert b.facts is F.NOTHING_DIFFERS  # shared, not one tuple per buffer
    assert (b.n_diff, b.first_index, b.max_abs_delta) == (0, None, None)
    c = BufferResult(0, "x", "g", "u8", "diverged", first_divergent_chunk=(0, 8), message="m")
    assert c.first_divergent_chunk == (0, 8) and c.n_diff is None and c.message == "m"
    assert BufferResult(0, "x", "g", "u8", "error").facts is F.UNKNOWN
    with pytest.raises(TypeError, match="n_dif"):
        BufferResult(0, "x", "g", "u8", "equal", n_dif=0)
    assert b.replace(n_diff=2).n_diff == 2 and b.replace(status="diverged").n_diff == 0
    assert pickle.loads(pickle.dumps(c)) == c
    assert "n_diff=None" in repr(c) and "first_divergent_chunk=(0, 8)" in repr(c)


def test_kernel_results_reach_the_json_by_name() -> None:
    a = struct.pack("<4f", 1.0, 2.0, 3.0, 4.0)
    b = struct.pack("<4f", 1.0, 2.5, float("inf"), float("nan"))
    for engine in ("python", "numpy", "numba"):
        stats = scan_bytes(a, b, "f32", Tolerance(), engine, row_size=2)  # type: ignore[arg-type]
        ctx = F.Context(4, "float", shape=(2, 2))
        facts = F.result_facts(stats, ctx, a=2.0, b=2.5, a_bits="0x40000000", b_bits="0x40200000")
        d = buffer_dict(BufferResult(0, "x", "g", "f32", "diverged", 4, 4, facts=facts))
        assert {k: d[k] for k in BUFFER_KEYS[7:-3]} == {
            "n_diff": 3, "n_within_tolerance": 0, "first_index": 1, "a": 2.0, "b": 2.5,
            "a_bits": "0x40000000", "b_bits": "0x40200000", "max_abs_delta": 0.5,
            "max_abs_delta_index": 1, "n_nan_mismatch": 1, "n_inf_mismatch": 1,
            "first_divergent_chunk": None, "shape": [2, 2], "first_index_nd": [0, 1],
            "max_abs_delta_index_nd": [0, 1], "diff_fraction": 0.75, "ranges": [[1, 4]],
            "n_ranges": 1, "rows": [0, 1], "n_rows": 2,
            "fields": None, "n_diff_outside_fields": None, "max_rel_delta": 0.2,
            "max_rel_delta_index": 1, "max_ulp": 2**21, "ulp_log2_histogram": [0] * 21 + [1],
            "n_signed_zero": 0, "max_ulp_of_scale": 2.0**21, "magnitude": "large",
            "cancellation": False,
        }, engine  # fmt: skip


def test_numba_refuses_kernels_of_another_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel loaded from numba's disk cache keeps the slots it was compiled
    with: when the table has moved them since, the scan fails loudly."""
    from fastdiff.kernels import numba_engine

    a, b = struct.pack("<2i", 1, 2), struct.pack("<2i", 1, 3)
    assert scan_bytes(a, b, "i32", engine="numba").n_diff == 1
    monkeypatch.setattr(numba_engine, "_LAYOUT", numba_engine._LAYOUT + 1)
    with pytest.raises(RuntimeError, match="another layout"):
        scan_bytes(a, b, "i32", engine="numba")


def test_layout_fingerprint_follows_the_slots(monkeypatch: pytest.MonkeyPatch) -> None:
    before = F.layout_fingerprint()
    swapped = dict(F.SLOT, n_diff=F.SLOT["n_within_tolerance"],
                   n_within_tolerance=F.SLOT["n_diff"])  # fmt: skip
    monkeypatch.setattr(F, "SLOT", swapped)
    assert F.layout_fingerprint() != before


# --- records ----------------------------------------------------------------------


class _Point(Value):
    __slots__ = ("label", "x", "y")  # sorted, as ruff keeps them

    def __init__(self, x: int, y: int = 0, label: str = "") -> None:
        self.x = x
        self.y = y
        self.label = label


def test_records_follow_their_init() -> None:
    p = _Point(1, 2, "p")
    assert _Point._fields == ("x", "y", "label")
    assert repr(p) == "_Point(x=1, y=2, label='p')"
    assert p == _Point(1, 2, "p") and p != _Point(1, 3, "p")
    assert hash(p) == hash(_Point(1, 2, "p"))
    assert p.replace(y=5) == _Point(1, 5, "p") and p.y == 2
    assert p.as_dict() == {"x": 1, "y": 2, "label": "p"}
    with pytest.raises(AttributeError):
        p.z = 3  # type: ignore[attr-defined]


def test_report_replace_and_work_order() -> None:
    r = Report("a", "b", "raw", "identical", None, (), (), (), (), (), ())
    w = Work(files_hashed=2, elapsed_s=1.5)
    r2 = r.replace(work=w)
    assert r2.work is w and r.work == Work() and r2.run_a == "a"
    doc = json.loads(render_json(r2))
    assert list(doc["work"]) == list(Work._fields)
    assert list(Work._fields)[:2] == ["files_hashed", "bytes_hashed"]


def test_describing_and_rendering_results_imports_little() -> None:
    """results, kernels, schema, scan, verdict, text rendering and progress add
    none of the costly modules to what ``import fastdiff`` loads."""
    code = (
        "import sys, fastdiff\n"
        "before = set(sys.modules)\n"
        "import fastdiff.model.results, fastdiff.kernels, fastdiff.schema, fastdiff.dtypes\n"
        "import fastdiff.stages.verdict, fastdiff.render.text, fastdiff.engine.progress\n"
        "from fastdiff.presets import RL_STATE\n"
        "RL_STATE.classify('rewards'); RL_STATE.classify('not_in_it')\n"
        "print(' '.join(sorted(set(sys.modules) - before)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    costly = {"dataclasses", "typing", "inspect", "re", "json", "unicodedata", "textwrap",
              "struct", "fnmatch", "threading", "numpy", "numba"}  # fmt: skip
    assert not costly & set(out), sorted(costly & set(out))


# --- the anatomy facts ------------------------------------------------------------


def _runs(*pairs: tuple[int, int]) -> dict[str, object]:
    return {"ranges": pairs[: F.LISTED], "n_ranges": len(pairs), "last_range": pairs[-1]}


def test_runs_join_across_pieces_even_when_the_first_list_is_full() -> None:
    many = tuple((2 * i, 2 * i + 1) for i in range(20))  # 20 runs, the last [38, 39)
    x = ScanStats(first_any=0, **_runs(*many))
    y = ScanStats(first_any=0, **_runs((0, 3), (5, 6))).shifted(39)  # continues [38, 39)
    z = x.merged(y)
    assert (z.n_ranges, z.last_range) == (21, (44, 45))
    assert z.ranges == many[:16]
    short = ScanStats(first_any=0, **_runs((0, 2), (4, 6)))
    z = short.merged(ScanStats(first_any=0, **_runs((0, 1))).shifted(6))
    assert (z.ranges, z.n_ranges, z.last_range) == (((0, 2), (4, 7)), 2, (4, 7))
    z = short.merged(ScanStats(first_any=0, **_runs((1, 2))).shifted(6))  # a gap: no join
    assert (z.ranges, z.n_ranges, z.last_range) == (((0, 2), (4, 6), (7, 8)), 3, (7, 8))


def test_rows_count_a_row_seen_by_two_pieces_once_and_are_not_shifted() -> None:
    x = ScanStats(first_any=0, rows=(0, 3), n_rows=2, last_row=3)
    y = ScanStats(first_any=0, rows=(3, 4), n_rows=2, last_row=4)
    z = x.merged(y.shifted(100))  # rows are absolute: no shift
    assert (z.rows, z.n_rows, z.last_row) == ((0, 3, 4), 3, 4)


def test_histograms_add_bin_by_bin() -> None:
    x = ScanStats(first_any=0, ulp_log2_histogram=(1, 0, 2))
    y = ScanStats(first_any=0, ulp_log2_histogram=(0, 5))
    assert x.merged(y).ulp_log2_histogram == (1, 5, 2)
    assert y.merged(x).ulp_log2_histogram == (1, 5, 2)
    assert ScanStats().merged(y).ulp_log2_histogram == (0, 5)


def test_anatomy_facts_follow_the_context() -> None:
    s = ScanStats(
        n_diff=3, first_diff=5, first_any=5, max_abs_delta=2.0, max_abs_delta_index=7,
        max_ulp=3, ulp_log2_histogram=(1, 2), max_rel_delta=0.5, max_rel_delta_index=7,
        rows=(1, 2), n_rows=2, last_row=2, **_runs((5, 6), (7, 9)),
    )  # fmt: skip
    fs = ScanStats(n_diff=1, first_diff=7, first_any=7, max_abs_delta=2.0, max_ulp=3,
                   max_abs_delta_index=7)  # fmt: skip
    ctx = F.Context(12, "float", shape=(3, 4), fields=(("a", 0, 4), ("b", 6, 8), ("c", 8, 12)),
                    field_stats=(ScanStats(), fs, ScanStats()), rounding_ulp=3)  # fmt: skip
    d = dict(zip(F.RESULT_NAMES, F.result_facts(s, ctx), strict=True))
    assert d["shape"] == (3, 4)
    assert (d["first_index_nd"], d["max_abs_delta_index_nd"]) == ((1, 1), (1, 3))
    assert d["diff_fraction"] == 0.25
    assert d["fields"] == (F.FieldDiff("b", 6, 8, 1, 7, 2.0, 3),)  # only those that differ
    assert d["n_diff_outside_fields"] == 2
    assert (d["rows"], d["n_rows"]) == ((1, 2), 2)
    assert d["magnitude"] == "rounding"  # 3 ULP is at most rounding_ulp
    one_d = F.Context(12, "float", shape=(12,), rounding_ulp=2)
    d = dict(zip(F.RESULT_NAMES, F.result_facts(s, one_d), strict=True))
    assert (d["rows"], d["n_rows"], d["fields"], d["magnitude"]) == (None, None, None, "large")
    ints = dict(zip(F.RESULT_NAMES, F.result_facts(s, F.Context(12, "int")), strict=True))
    assert (ints["max_ulp"], ints["ulp_log2_histogram"], ints["magnitude"]) == (None, None, "large")
    nan = s.replace(n_nan_mismatch=1)
    d = dict(zip(F.RESULT_NAMES, F.result_facts(nan, F.Context(12, "float")), strict=True))
    assert d["magnitude"] == "large"  # a NaN mismatch is never rounding


def test_nothing_differs_has_no_anatomy() -> None:
    ctx = F.Context(12, "float", shape=(3, 4), fields=(("a", 0, 4),))
    d = dict(zip(F.RESULT_NAMES, F.result_facts(ScanStats(), ctx), strict=True))
    assert {k for k, v in d.items() if v is not None} == set(COUNT_FIELDS)
    assert F.result_facts(ScanStats(), ctx) == F.NOTHING_DIFFERS


def test_unravel_is_torch_style() -> None:
    assert F.unravel(17, (757,)) == (17,)
    assert F.unravel(17 * 64 + 3, (20, 64)) == (17, 3)
    assert F.unravel(23, (2, 3, 4)) == (1, 2, 3)
    assert F.unravel(None, (4,)) is None and F.unravel(3, None) is None
