"""The next-step hint of a suspect group never calls its differences
rounding-size (or large, or sizeless raw bytes) when one of its diverging
buffers changed structure: a dtype or shape in the files' headers, a length,
a size in bytes, or a buffer in one run only. It says what changed instead.

Runs ``python -m fastdiff`` in a subprocess on small runs written here, and
reads the findings: each group's ``cause`` in the JSON (what the size of its
differences points at, with the structural changes as data); the words of
the hint are checked once (``render.hints``' golden lines).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
from helpers import fastdiff, write_runs
from hypothesis import given
from hypothesis import strategies as st

from fastdiff.model.findings import ChangeKind, HeaderChange, StructuralChange
from fastdiff.render.hints import change_text, header_text


def _schema(tmp_path: Path, members: dict[str, str]) -> Path:
    path = tmp_path / "h.toml"
    body = "\n".join(f'{k} = "{v}"' for k, v in members.items())
    path.write_text(f'name = "h"\n[[group]]\nkey = "H"\ntitle = "h"\nhint = "H."\n'
                    f"[group.members]\n{body}\n")  # fmt: skip
    return path


def _compare(a: Path, b: Path, *opts: str | Path) -> tuple[str, dict[str, Any]]:
    text = fastdiff("compare", a, b, *opts)
    assert text.returncode == 1, text.stderr
    doc = fastdiff("compare", a, b, *opts, "--format", "json")
    assert doc.returncode == 1, doc.stderr
    return " ".join(text.stdout.split()), json.loads(doc.stdout)


def _group(doc: dict[str, Any], key: str = "H") -> dict[str, Any]:
    (g,) = [g for g in doc["groups"] if g["key"] == key]
    assert g["status"] == "diverged"
    return g


def _hint(doc: dict[str, Any], key: str = "H") -> str:
    return _group(doc, key)["hint"]


def _cause(doc: dict[str, Any], key: str = "H") -> dict[str, Any]:
    return _group(doc, key)["cause"]


def _changes(doc: dict[str, Any], key: str = "H") -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in _cause(doc, key)["changes"]}


def _npy_runs(tmp_path: Path) -> tuple[Path, Path]:
    """The newcomer's runs: w f32 in A and f64 in B, v reshaped (3, 4) -> (4, 3),
    bf one ULP apart at one element."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    np.save(a / "step_0_w.npy", np.arange(12, dtype=np.float32).reshape(3, 4))
    np.save(b / "step_0_w.npy", np.arange(12, dtype=np.float64).reshape(3, 4))
    v = np.arange(12, dtype=np.float32)
    np.save(a / "step_0_v.npy", v.reshape(3, 4))
    np.save(b / "step_0_v.npy", v.reshape(4, 3))
    bf = np.ones(8, dtype=np.float32)
    np.save(a / "step_0_bf.npy", bf)
    bf[3] = np.nextafter(np.float32(1), np.float32(2))
    np.save(b / "step_0_bf.npy", bf)
    return a, b


def test_a_changed_dtype_or_shape_is_named_and_not_called_rounding(tmp_path: Path) -> None:
    a, b = _npy_runs(tmp_path)
    schema = _schema(tmp_path, {"w": "f32", "v": "f32", "bf": "f32"})
    text, doc = _compare(a, b, "--schema", schema)
    cause = _cause(doc)
    assert cause["kind"] == "structural"
    changes = _changes(doc)
    assert changes["w"]["kind"] == "header"
    w_header = {"dtype_a": "f32", "shape_a": [3, 4], "dtype_b": "f64", "shape_b": [3, 4],
                "header_a": True, "header_b": True}  # fmt: skip
    assert changes["w"]["header"] == w_header
    v_header = changes["v"]["header"]
    assert (v_header["shape_a"], v_header["shape_b"]) == ([3, 4], [4, 3])
    # What the size of the other buffer's differences is, said as such.
    assert (cause["others"], cause["others_magnitude"]) == (["bf"], "rounding")
    # The words, once:
    hint = _hint(doc)
    assert hint == (
        "H. Its differences are structural, not rounding: v changed shape ((3, 4) in A, (4, 3) "
        "in B), w changed element type (f32 in A, f64 in B): look at the code that produces "
        "them (a logic, configuration or version change), not at the order of floating-point "
        "operations. Its other differences (bf) are rounding-size (at most 16 ULP)."
    )
    assert f"next, H: {hint}" in text


def test_each_group_of_the_by_name_schema_gets_its_own_words(tmp_path: Path) -> None:
    a, b = _npy_runs(tmp_path)
    _, doc = _compare(a, b)  # npy runs: one group per buffer name
    assert list(_changes(doc, "w")) == ["w"] and _cause(doc, "w")["others"] == []
    assert list(_changes(doc, "v")) == ["v"]
    # A group with only a rounding-size difference keeps the rounding advice.
    assert _cause(doc, "bf")["kind"] == "rounding"
    assert _cause(doc, "bf")["changes"] == []


def _f32(*xs: float) -> bytes:
    return struct.pack(f"<{len(xs)}f", *xs)


ONE_ULP_UP = struct.unpack("<f", struct.pack("<I", 0x3F800001))[0]


def test_a_length_mismatch_is_named_beside_a_rounding_size_difference(tmp_path: Path) -> None:
    a, b = write_runs(tmp_path, {
        "step_0_x.bin": (_f32(1.0, 2.0), _f32(1.0, 2.0, 3.0)),
        "step_0_y.bin": (_f32(1.0), _f32(ONE_ULP_UP)),
    })  # fmt: skip
    _, doc = _compare(a, b, "--schema", _schema(tmp_path, {"x": "f32", "y": "f32"}))
    assert _changes(doc)["x"] == {"name": "x", "kind": "length", "a": 2, "b": 3, "header": None}
    assert (_cause(doc)["others"], _cause(doc)["others_magnitude"]) == (["y"], "rounding")


def test_a_buffer_in_one_run_only_is_named(tmp_path: Path) -> None:
    a, b = write_runs(tmp_path, {
        "step_0_x.bin": (None, _f32(1.0)),
        "step_0_y.bin": (_f32(1.0), _f32(ONE_ULP_UP)),
        "step_0_z.bin": (_f32(5.0), None),
    })  # fmt: skip
    _, doc = _compare(a, b, "--schema", _schema(tmp_path, {"x": "f32", "y": "f32", "z": "f32"}))
    assert {n: c["kind"] for n, c in _changes(doc).items()} == {"x": "only_in_b", "z": "only_in_a"}


def test_a_malformed_buffer_of_another_size_is_named(tmp_path: Path) -> None:
    a, b = write_runs(tmp_path, {
        "step_0_x.bin": (_f32(1.0) * 8, _f32(1.0) * 7 + b"\0\0\0"),
        "step_0_y.bin": (_f32(1.0), _f32(ONE_ULP_UP)),
    })  # fmt: skip
    p = fastdiff("compare", a, b, "--schema", _schema(tmp_path, {"x": "f32", "y": "f32"}),
                 "--format", "json")  # fmt: skip
    assert p.returncode == 2, p.stderr  # a malformed buffer is an error
    doc = json.loads(p.stdout)
    assert _changes(doc)["x"] == {"name": "x", "kind": "size", "a": 32, "b": 31, "header": None}


def test_a_structural_change_among_raw_bytes_is_named_not_called_sizeless(
    tmp_path: Path,
) -> None:
    a, b = write_runs(tmp_path, {
        "step_0_x.bin": (b"\1\2\3\4", b"\1\2\3\5"),
        "step_0_y.bin": (b"\1\2", None),
    })  # fmt: skip
    _, doc = _compare(a, b, "--schema", "raw")
    assert _cause(doc, "other")["kind"] == "structural"
    assert list(_changes(doc, "other")) == ["y"]
    assert _cause(doc, "other")["others"] == []  # x's raw bytes say nothing of size


def test_without_a_structural_change_raw_bytes_keep_their_hint(tmp_path: Path) -> None:
    a, b = write_runs(tmp_path, {"step_0_x.bin": (b"\1\2\3\4", b"\1\2\3\5")})
    _, doc = _compare(a, b, "--schema", "raw")
    assert _cause(doc, "other")["kind"] == "bytes"
    assert _cause(doc, "other")["changes"] == []


SHAPES = st.none() | st.lists(st.integers(0, 10**6), max_size=4).map(tuple)


@given(st.sampled_from(["f32", "f64", "bf16", "u8", "i64"]), SHAPES,
       st.sampled_from(["f32", "f16", "c64"]), SHAPES)  # fmt: skip
def test_a_header_change_is_data_and_its_message_names_both_sides(
    dtype_a: str, shape_a: tuple[int, ...] | None, dtype_b: str, shape_b: tuple[int, ...] | None
) -> None:
    change = HeaderChange(dtype_a, shape_a, dtype_b, shape_b)
    d = change.as_dict()
    assert (d["dtype_a"], d["shape_a"], d["dtype_b"], d["shape_b"]) == (
        dtype_a, shape_a, dtype_b, shape_b
    )  # fmt: skip
    written = ["" if s is None else f" {tuple(s)}" for s in (shape_a, shape_b)]
    assert header_text(change) == (
        f"the files' headers differ: {dtype_a}{written[0]} in A, {dtype_b}{written[1]} in B; "
        "nothing more was compared"
    )


def test_golden_each_structural_change_in_words() -> None:
    """``render.hints``' golden lines: the words of each kind of change a
    hint names (the tests above read the changes as data)."""
    words = {
        ChangeKind.LENGTH: "x changed length (2 elements in A, 3 in B)",
        ChangeKind.SIZE: "x changed size (32 bytes in A, 31 bytes in B)",
        ChangeKind.ONLY_IN_A: "x is in run A only",
        ChangeKind.ONLY_IN_B: "x is in run B only",
    }
    sides = {ChangeKind.LENGTH: (2, 3), ChangeKind.SIZE: (32, 31)}
    for kind, text in words.items():
        a, b = sides.get(kind, (None, None))
        assert change_text(StructuralChange("x", kind, a, b)) == text
