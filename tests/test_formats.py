"""Tensor files as runs: .npy dumps, safetensors files and checkpoint folders,
.npz archives (stored and compressed), container files per step, mixed
folders, the dtype and shape their headers give, and groups from names.

Files are written by numpy itself, and by the safetensors library where it
is installed (tests that need it skip cleanly without it); the committed
files under tests/data/ (tests/make_format_fixtures.py) are read without it.
Every answer is checked against numpy: which element differs first, in the
array's own shape.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import fastdiff
from hypothesis import given, settings
from hypothesis import strategies as st

from fastdiff import CompareOptions, compare_runs
from fastdiff.model.findings import Note, NoteKind

DATA = Path(__file__).parent / "data" / "formats"


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return fastdiff(*args)


def raw_bytes_notes(a: Path, b: Path) -> list[Note]:
    """The notes of buffers compared as raw bytes, in the library's report."""
    return [n for n in compare_runs(a, b).notes if n.kind is NoteKind.RAW_BYTES]


def report(*args: str | Path) -> tuple[int, dict[str, Any]]:
    r = cli("compare", *args, "--format", "json")
    assert "Traceback" not in r.stderr, r.stderr
    assert r.stdout, r.stderr
    return r.returncode, json.loads(r.stdout)


def first_diff(a: np.ndarray, b: np.ndarray) -> tuple[int, ...]:
    """The oracle: the first element (C order) whose bits differ."""
    ua = np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")
    ub = np.ascontiguousarray(b).view(f"u{b.dtype.itemsize}")
    flat = np.flatnonzero(ua.reshape(-1) != ub.reshape(-1))
    return tuple(int(i) for i in np.unravel_index(flat[0], a.shape))


ARRAYS = {
    "f32": lambda r: r.standard_normal((5, 7)).astype(np.float32),
    "f64": lambda r: r.standard_normal(33),
    "f16": lambda r: r.standard_normal((3, 4, 2)).astype(np.float16),
    "i8": lambda r: r.integers(-128, 127, 17).astype(np.int8),
    "u16": lambda r: r.integers(0, 60000, 9).astype(np.uint16),
    "i64": lambda r: r.integers(-(2**62), 2**62, 6),
    "u64": lambda r: r.integers(0, 2**63, 5).astype(np.uint64),
    "bool": lambda r: r.integers(0, 2, 11).astype(bool),
    "f32be": lambda r: r.standard_normal(8).astype(">f4"),
    "i32be": lambda r: r.integers(-(2**30), 2**30, 8).astype(">i4"),
    "fortran": lambda r: np.asfortranarray(r.standard_normal((4, 6)).astype(np.float32)),
}


def _perturb(x: np.ndarray, flat: int) -> np.ndarray:
    y = x.copy(order="K")
    view = y.reshape(-1, order="C") if y.flags.c_contiguous else None
    idx = np.unravel_index(flat, y.shape)
    if y.dtype.kind == "b":
        y[idx] = not y[idx]
    elif y.dtype.kind == "f":
        y[idx] = np.nextafter(y[idx], np.inf)
    else:
        y[idx] = y[idx] ^ 1
    del view
    return y


@pytest.mark.parametrize("kind", list(ARRAYS))
def test_npy_dumps_compare_with_the_headers_dtype_and_shape(tmp_path: Path, kind: str) -> None:
    r = np.random.default_rng(7)
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    x = ARRAYS[kind](r)
    flat = x.size - 2
    y = _perturb(x, flat)
    for step in range(3):
        np.save(a / f"step_{step}_w.npy", x)
        np.save(b / f"step_{step}_w.npy", x if step < 2 else y)
    code, doc = report(a, b)
    assert code == 1 and doc["first_divergent_step"] == 2
    (buf,) = [d for d in doc["buffers"] if d["status"] != "equal"]
    want = first_diff(x, y)
    assert buf["dtype"] == {"fortran": "f32"}.get(kind, kind)
    assert buf["shape"] == list(x.shape)
    assert buf["n_diff"] == 1
    assert tuple(buf["first_index_nd"] or [buf["first_index"]]) == want
    assert doc["schema"] == "by-name"
    assert not raw_bytes_notes(a, b)  # the headers give every dtype
    same = cli("compare", a, a)
    assert same.returncode == 0, same.stdout + same.stderr


def test_two_npy_files_given_as_runs_are_compared(tmp_path: Path) -> None:
    """An ``.npy`` file given as RUN is a run of one buffer at step 0, named by
    the file's stem, as a ``torch.save`` file is a run of its tensors."""
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    y = x.copy()
    y[2, 3] = np.nextafter(y[2, 3], np.inf)
    for run, array in (("a", x), ("b", y), ("c", x)):
        (tmp_path / run).mkdir()
        np.save(tmp_path / run / "weights.npy", array)
    code, doc = report(tmp_path / "a" / "weights.npy", tmp_path / "b" / "weights.npy")
    assert code == 1 and doc["errors"] == [] and doc["first_divergent_step"] == 0
    (buf,) = doc["buffers"]
    assert (buf["step"], buf["name"], buf["status"]) == (0, "weights", "diverged")
    assert (buf["dtype"], buf["shape"], buf["first_index_nd"]) == ("f32", [4, 6], [2, 3])
    code, doc = report(tmp_path / "a" / "weights.npy", tmp_path / "c" / "weights.npy")
    assert code == 0 and doc["verdict"] == "identical" and len(doc["buffers"]) == 1
    # A damaged one is an error naming it, never a traceback.
    bad = tmp_path / "bad.npy"
    bad.write_bytes((tmp_path / "a" / "weights.npy").read_bytes()[:-4])
    r = cli("compare", bad, tmp_path / "a" / "weights.npy")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"fastdiff: error: {bad}: not a usable .npy file: truncated")


def test_a_run_folder_may_mix_raw_and_npy_dumps(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for run in (a, b):
        run.mkdir()
        rewards = np.arange(64, dtype=np.float32)
        if run is b:
            rewards[40] += 1
        rewards.tofile(run / "step_0_rewards.bin")
        np.save(run / "step_0_logits.npy", np.ones((8, 8), np.float32))
    code, doc = report(a, b)
    assert code == 1
    rows = {d["name"]: d for d in doc["buffers"]}
    assert rows["rewards"]["status"] == "diverged" and rows["rewards"]["first_index"] == 40
    assert rows["rewards"]["dtype"] == "f32"  # the rl-state preset's
    assert rows["logits"]["status"] == "equal" and rows["logits"]["dtype"] == "f32"
    assert doc["schema"] == "rl-state"


def test_headers_that_disagree_make_the_buffer_differ(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    np.save(a / "step_0_w.npy", np.zeros((2, 3), np.float32))
    np.save(b / "step_0_w.npy", np.zeros((2, 3), np.float64))
    np.save(a / "step_0_v.npy", np.zeros((2, 3), np.float32))
    np.save(b / "step_0_v.npy", np.zeros((3, 2), np.float32))  # the same bytes, reshaped
    code, doc = report(a, b)
    assert code == 1
    rows = {d["name"]: d for d in doc["buffers"]}
    assert rows["w"]["status"] == rows["v"]["status"] == "diverged"
    sides = {"header_a": True, "header_b": True}
    assert rows["w"]["change"] == {"dtype_a": "f32", "shape_a": [2, 3], "dtype_b": "f64",
                                   "shape_b": [2, 3], **sides}  # fmt: skip
    assert rows["v"]["change"] == {"dtype_a": "f32", "shape_a": [2, 3], "dtype_b": "f32",
                                   "shape_b": [3, 2], **sides}  # fmt: skip
    assert rows["w"]["n_diff"] is None  # nothing more was compared


def test_a_schema_whose_dtype_disagrees_with_the_header_is_told_once(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    for step in range(3):
        for run in (a, b):
            np.save(run / f"step_{step}_w.npy", np.arange(4, dtype=np.float64))
    schema = tmp_path / "s.toml"
    schema.write_text('[[group]]\nkey = "M"\n[group.members]\nw = "f32"\n')
    r = cli("compare", a, b, "--schema", schema, "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert len(doc["notes"]) == 1  # once, though three steps have it
    (told,) = compare_runs(a, b, CompareOptions(schema=str(schema))).notes
    assert (told.kind, told.warning) == (NoteKind.HEADER_DTYPE, True)
    assert told["buffers"] == (("w", "f32", "f64"),)
    assert {d["dtype"] for d in doc["buffers"]} == {"f64"}
    assert {d["group"] for d in doc["buffers"]} == {"M"}


def test_void_npy_takes_its_dtype_from_the_schema(tmp_path: Path) -> None:
    """ml_dtypes' bfloat16 saved by np.save is '<V2': raw bytes until the
    schema names the type."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    bits = np.array([0x3F80, 0x4000, 0x4040, 0x7FC0], dtype=np.uint16)
    other = bits.copy()
    other[2] += 1
    np.save(a / "step_0_h.npy", bits.view("V2"))
    np.save(b / "step_0_h.npy", other.view("V2"))
    schema = tmp_path / "s.toml"
    schema.write_text('[[group]]\nkey = "H"\n[group.members]\nh = "bf16"\n')
    r = cli("compare", a, b, "--schema", schema, "--format", "json")
    assert r.returncode == 1, r.stderr
    (buf,) = json.loads(r.stdout)["buffers"]
    assert buf["dtype"] == "bf16" and buf["first_index"] == 2 and buf["max_ulp"] == 1
    raw = json.loads(cli("compare", a, b, "--format", "json").stdout)
    assert raw["buffers"][0]["dtype"] == "u8"  # no schema: bytes, and the note says so
    assert [n["names"] for n in raw_bytes_notes(a, b)] == [("h",)]


# --- npz ---------------------------------------------------------------------------


@pytest.mark.parametrize("compressed", [False, True])
def test_npz_archives_as_runs_and_as_steps(tmp_path: Path, compressed: bool) -> None:
    save = np.savez_compressed if compressed else np.savez
    r = np.random.default_rng(3)
    big = r.standard_normal(700_000).astype(np.float32)  # 2.8 MB: many pieces of 1 MiB
    small = r.integers(0, 9, 100)
    late = big.copy()
    late[-3] = np.nextafter(late[-3], np.inf)
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    for step in range(2):
        save(a / f"step_{step}.npz", big=big, small=small)
        save(b / f"step_{step}.npz", big=big if step == 0 else late, small=small)
    code, doc = report(a, b, "--chunk-size", str(1 << 20))
    assert code == 1 and doc["first_divergent_step"] == 1
    rows = {(d["step"], d["name"]): d for d in doc["buffers"]}
    assert rows[(1, "big")]["first_index"] == big.size - 3 and rows[(1, "big")]["n_diff"] == 1
    assert rows[(0, "big")]["status"] == rows[(1, "small")]["status"] == "equal"
    # One archive given as the run: one step, 0.
    code, doc = report(a / "step_1.npz", b / "step_1.npz")
    assert code == 1 and [d["step"] for d in doc["buffers"]] == [0, 0]
    assert cli("compare", a / "step_0.npz", b / "step_0.npz").returncode == 0


def test_a_refused_npz_member_is_an_error_and_the_archive_is_still_compared(
    tmp_path: Path,
) -> None:
    # savez_compressed runs whose step 1 archive holds a Fortran-order member
    # (not gathered out of a stream): an error for that member only; the
    # member g that differs is compared and reported, and step 1 is kept.
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    r = np.random.default_rng(5)
    f = np.asfortranarray(r.standard_normal((3, 5)))
    for step in range(3):
        x, g = r.standard_normal(8).astype(np.float32), r.standard_normal(6)
        extra = {"f": f} if step == 1 else {}
        np.savez_compressed(a / f"step_{step}.npz", x=x, g=g, **extra)
        g = g.copy()
        if step == 1:
            g[2] += 1
        np.savez_compressed(b / f"step_{step}.npz", x=x, g=g, **extra)
    out = cli("compare", a, b, "--format", "json")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    lines = out.stderr.splitlines()
    assert len(lines) == 2
    for side, line in zip((a, b), lines, strict=True):
        assert line.startswith(f"fastdiff: error: {side / 'step_1.npz'}: member 'f.npy': ")
        assert "np.ascontiguousarray" in line
        assert line.endswith("; this member was not compared")
    doc = json.loads(out.stdout)
    rows = {(d["step"], d["name"]): d["status"] for d in doc["buffers"]}
    assert rows == {
        (0, "x"): "equal", (0, "g"): "equal",
        (1, "x"): "equal", (1, "g"): "diverged", (1, "f"): "error",
        (2, "x"): "equal", (2, "g"): "equal",
    }  # fmt: skip
    assert doc["first_divergent_step"] == 1
    assert doc["steps"][1]["counts"] == {"equal": 1, "diverged": 1, "error": 1}
    assert not raw_bytes_notes(a, b)  # f was not compared at all
    # The archive given as the run: the same, at step 0.
    out = cli("compare", a / "step_1.npz", b / "step_1.npz", "--format", "json")
    assert out.returncode == 2 and out.stderr.count("member 'f.npy'") == 2
    rows = {d["name"]: d["status"] for d in json.loads(out.stdout)["buffers"]}
    assert rows == {"x": "equal", "g": "diverged", "f": "error"}
    # Stored (np.savez), the same Fortran-order member is gathered and compared.
    np.savez(a / "step_1.npz", x=x, g=g, f=f)
    np.savez(b / "step_1.npz", x=x, g=g, f=f)
    rows = {
        d["name"]: d["status"] for d in report(a / "step_1.npz", b / "step_1.npz")[1]["buffers"]
    }
    assert rows == {"x": "equal", "g": "equal", "f": "equal"}


def test_a_compressed_member_whose_crc_fails_is_malformed(tmp_path: Path) -> None:
    import zipfile

    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    x = np.arange(1000, dtype=np.float32)
    np.savez_compressed(a / "step_0.npz", x=x)
    np.savez_compressed(b / "step_0.npz", x=x)
    raw = bytearray((b / "step_0.npz").read_bytes())
    with zipfile.ZipFile(b / "step_0.npz") as z:
        info = z.getinfo("x.npy")
    # The CRC in the central directory (offset 16 of its record).
    cd = raw.rfind(b"PK\x01\x02")
    raw[cd + 16 : cd + 20] = (info.CRC ^ 0xFFFFFFFF).to_bytes(4, "little")
    (b / "step_0.npz").write_bytes(bytes(raw))
    r = cli("compare", a, b, "--format", "json")
    assert r.returncode == 2, r.stdout
    doc = json.loads(r.stdout)
    (buf,) = doc["buffers"]
    assert buf["status"] == "malformed" and "CRC-32" in buf["message"]


# --- safetensors ---------------------------------------------------------------------


def _safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """A safetensors file, written by hand (the format is simple; the library
    writes the same, as the committed fixtures show)."""
    header: dict[str, Any] = {}
    pos = 0
    names = {
        "f4": "F32",
        "f8": "F64",
        "f2": "F16",
        "i8": "I64",
        "i4": "I32",
        "u1": "U8",
        "b1": "BOOL",
        "i1": "I8",
        "u2": "U16",
        "i2": "I16",
        "u4": "U32",
        "u8": "U64",
    }
    for k, v in tensors.items():
        n = v.nbytes
        header[k] = {
            "dtype": names[v.dtype.str[1:]],
            "shape": list(v.shape),
            "data_offsets": [pos, pos + n],
        }
        pos += n
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as fh:
        fh.write(len(text).to_bytes(8, "little") + text)
        for v in tensors.values():
            fh.write(np.ascontiguousarray(v).tobytes())


def test_safetensors_files_folders_and_shards(tmp_path: Path) -> None:
    r = np.random.default_rng(5)
    w = {
        "model.embed.weight": r.standard_normal((16, 8)).astype(np.float32),
        "model.layers.0.w": r.standard_normal((8, 8)).astype(np.float32),
        "model.layers.0.b": r.standard_normal(8),
        "lm_head.weight": r.standard_normal((8, 16)).astype(np.float16),
        "steps": np.array([12345], np.int64),
    }
    v = dict(w)
    v["model.layers.0.w"] = _perturb(w["model.layers.0.w"], 19)
    # One file per run.
    _safetensors(tmp_path / "a.safetensors", w)
    _safetensors(tmp_path / "b.safetensors", v)
    code, doc = report(tmp_path / "a.safetensors", tmp_path / "b.safetensors")
    assert code == 1 and doc["schema"] == "by-name"
    (buf,) = [d for d in doc["buffers"] if d["status"] != "equal"]
    assert buf["name"] == "model.layers.0.w" and buf["group"] == "model"
    assert tuple(buf["first_index_nd"]) == first_diff(w["model.layers.0.w"], v["model.layers.0.w"])
    assert [g["key"] for g in doc["groups"]] == ["model", "lm_head", "steps"]
    # A checkpoint folder (model.safetensors) against shards with an index.
    single, shards = tmp_path / "single", tmp_path / "shards"
    single.mkdir()
    shards.mkdir()
    _safetensors(single / "model.safetensors", w)
    keys = list(w)
    _safetensors(shards / "model-00001-of-00002.safetensors", {k: v[k] for k in keys[:2]})
    _safetensors(shards / "model-00002-of-00002.safetensors", {k: v[k] for k in keys[2:]})
    index = {
        "metadata": {"total_size": 1},
        "weight_map": {
            k: f"model-0000{1 if i < 2 else 2}-of-00002.safetensors" for i, k in enumerate(keys)
        },
    }
    (shards / "model.safetensors.index.json").write_text(json.dumps(index))
    code, doc = report(single, shards)
    assert code == 1
    assert {d["name"]: d["status"] for d in doc["buffers"]} == {
        k: "diverged" if k == "model.layers.0.w" else "equal" for k in keys
    }
    assert cli("compare", shards, shards).returncode == 0
    # step_<N>.safetensors files in run folders.
    a, b = tmp_path / "ra", tmp_path / "rb"
    a.mkdir()
    b.mkdir()
    for step in range(3):
        _safetensors(a / f"step_{step}.safetensors", w)
        _safetensors(b / f"step_{step}.safetensors", w if step != 1 else v)
    code, doc = report(a, b)
    assert code == 1 and doc["first_divergent_step"] == 1
    assert len(doc["buffers"]) == 15


def test_which_folders_of_safetensors_files_are_one_checkpoint(tmp_path: Path) -> None:
    """A checkpoint folder is one by its index, its one file (any name:
    ``adapter_model.safetensors``), or shards of one model without an index;
    two unrelated files side by side are no checkpoint but a folder without
    dumps, an error that names them and says to give one as RUN."""
    w = {"model.x": np.arange(4, dtype=np.float32)}
    one, shards, loose = tmp_path / "one", tmp_path / "shards", tmp_path / "loose"
    for folder in (one, shards, loose):
        folder.mkdir()
    _safetensors(one / "adapter_model.safetensors", w)
    _safetensors(shards / "model-00001-of-00002.safetensors", w)
    _safetensors(shards / "model-00002-of-00002.safetensors", {"model.y": w["model.x"]})
    _safetensors(loose / "ma.safetensors", w)
    _safetensors(loose / "mb.safetensors", w)
    (loose / "run-b").mkdir()
    (loose / "run-b" / "step_0_x.bin").write_bytes(bytes(16))
    assert cli("compare", one, one).returncode == 0
    code, doc = report(shards, shards)
    assert code == 0 and sorted(b["name"] for b in doc["buffers"]) == ["model.x", "model.y"]
    r = cli("compare", loose, loose / "run-b")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "holds no step_<N>_<name>.bin dumps" in r.stderr
    assert "did you mean" in r.stderr and "run-b?" in r.stderr
    assert (
        "(ma.safetensors, mb.safetensors: tensor files, but not one checkpoint; give one as "
        "RUN)" in r.stderr
    )
    assert "is also in" not in r.stdout + r.stderr
    assert cli("compare", loose / "ma.safetensors", loose / "mb.safetensors").returncode == 0


def test_files_written_by_the_safetensors_library(tmp_path: Path) -> None:
    st = pytest.importorskip("safetensors.numpy")
    ml = pytest.importorskip("ml_dtypes")
    r = np.random.default_rng(11)
    x = r.standard_normal((6, 5)).astype(np.float32)
    tensors = {
        "a.f32": x,
        "a.bf16": x.astype(ml.bfloat16),
        "b.e4m3": x.astype(ml.float8_e4m3fn),
        "b.e5m2": x.astype(ml.float8_e5m2),
        "c.bool": x > 0,
        "c.i16": (x * 100).astype(np.int16),
    }
    changed = dict(tensors)
    changed["a.bf16"] = tensors["a.bf16"].copy()
    changed["a.bf16"].view(np.uint16)[2, 1] += 1
    st.save_file(tensors, str(tmp_path / "a.safetensors"))
    st.save_file(changed, str(tmp_path / "b.safetensors"))
    code, doc = report(tmp_path / "a.safetensors", tmp_path / "b.safetensors")
    assert code == 1
    rows = {d["name"]: d for d in doc["buffers"]}
    assert {k: d["dtype"] for k, d in rows.items()} == {
        "a.f32": "f32",
        "a.bf16": "bf16",
        "b.e4m3": "f8_e4m3fn",
        "b.e5m2": "f8_e5m2",
        "c.bool": "bool",
        "c.i16": "i16",
    }
    assert rows["a.bf16"]["first_index_nd"] == [2, 1] and rows["a.bf16"]["max_ulp"] == 1
    assert rows["a.bf16"]["magnitude"] == "rounding"


def test_committed_library_fixtures_read_without_the_libraries() -> None:
    """Files the libraries wrote (tests/make_format_fixtures.py), read by
    fastdiff alone: what the fixtures' manifest of expectations says."""
    expected = json.loads((DATA / "expected.json").read_text())
    for case, want in expected.items():
        code, doc = report(DATA / case / "a", DATA / case / "b")
        assert code == want["exit"], case
        got = {d["name"]: [d["dtype"], d["status"], d["first_index"]] for d in doc["buffers"]}
        assert got == want["buffers"], case


# --- what stays the same -------------------------------------------------------------


def test_hash_and_stats_read_the_same_runs(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    for step in range(2):
        np.savez(a / f"step_{step}.npz", x=x, y=x.T.copy())
        np.savez(b / f"step_{step}.npz", x=x if step == 0 else x + 1, y=x.T.copy())
    m = tmp_path / "a.manifest.json"
    h = cli("hash", a, "-o", m, "--no-cache")
    assert h.returncode == 0, h.stderr
    doc = json.loads(m.read_text())
    assert doc["schema"]["name"] == "by-name"
    entry = next(e for e in doc["buffers"] if e["buffer"] == "y" and e["step"] == 1)
    assert entry["file"] == "step_1.npz" and entry["header"] and entry["shape"] == [6, 4]
    assert entry["dtype"] == "f32" and entry["offset"] > 0 and entry["size"] == 96
    code, got = report(m, b)
    assert code == 1 and got["first_divergent_step"] == 1
    assert {(d["step"], d["name"]): d["status"] for d in got["buffers"]} == {
        (0, "x"): "equal",
        (0, "y"): "equal",
        (1, "x"): "diverged",
        (1, "y"): "equal",
    }
    s = cli("stats", a, "--format", "json")
    assert s.returncode == 0, s.stderr
    stats = json.loads(s.stdout)
    assert stats["totals"]["elements"] == 4 * 24 and stats["totals"]["bytes"] == 4 * 96


def test_the_cache_keys_each_tensor_of_a_container(tmp_path: Path) -> None:
    """Two tensors of one file are two cache entries: a second compare from
    the cache gives what the first gave."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    x = np.arange(100, dtype=np.float32)
    np.savez(a / "step_0.npz", x=x, y=x * 2)
    np.savez(b / "step_0.npz", x=x, y=x * 3)
    cache = ("--cache", "--cache-dir", tmp_path / "cache", "--cache-min-age", "0")
    first = cli("compare", a, b, *cache, "--format", "json")
    second = cli("compare", a, b, *cache, "--format", "json")
    assert first.returncode == second.returncode == 1
    one, two = json.loads(first.stdout), json.loads(second.stdout)
    assert one["buffers"] == two["buffers"]
    assert two["work"]["files_hashed"] == 0 and one["work"]["files_hashed"] == 4


TENSOR_WRITER = """\
import sys, time, numpy as np
from pathlib import Path
out, steps = Path(sys.argv[1]), int(sys.argv[2])
pace, diverge = float(sys.argv[3]), int(sys.argv[4])
out.mkdir(parents=True, exist_ok=True)
r = np.random.default_rng(0)
for step in range(steps):
    x = r.standard_normal((32, 16)).astype(np.float32)
    if step == diverge:
        x[5, 7] = np.nextafter(x[5, 7], np.float32(np.inf))
    tmp = out / f".tmp-{step}.npz"
    with open(tmp, "wb") as fh:
        np.savez(fh, w=x, ids=np.arange(8))
    tmp.rename(out / f"step_{step}.npz")
    np.save(out / f"step_{step}_act.npy", x[:4])
    time.sleep(pace)
"""


@pytest.mark.parametrize("diverge", [-1, 2])
def test_watch_compares_tensor_files_as_they_are_written(tmp_path: Path, diverge: int) -> None:
    import sys

    a, b = tmp_path / "a", tmp_path / "b"
    fast = ("--poll", "0.05", "--settle", "0.3", "--idle-timeout", "4")
    w = subprocess.Popen(
        [sys.executable, "-m", "fastdiff", "watch", str(a), str(b), *fast, "--format", "jsonl"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=Path(__file__).parents[1],
    )  # fmt: skip
    writers = [
        subprocess.Popen([sys.executable, "-c", TENSOR_WRITER, str(run), "5", pace, str(d)])
        for run, pace, d in ((a, "0.05", -1), (b, "0.1", diverge))
    ]
    try:
        out, err = w.communicate(timeout=120)
    finally:
        for p in writers:
            p.wait(timeout=60)
    lines = [json.loads(x) for x in out.splitlines()]
    summary = lines[-1]
    if diverge < 0:
        assert w.returncode == 0, err
        assert summary["verdict"] == "identical" and len(summary["buffers"]) == 15
    else:
        assert w.returncode == 1, err
        assert summary["first_divergent_step"] == 2
        (buf,) = [x for x in summary["buffers"] if x["status"] != "equal"]
        assert buf["name"] == "w" and buf["first_index_nd"] == [5, 7]


def test_a_sweep_of_checkpoints(tmp_path: Path) -> None:
    """Three checkpoints of one model against the first: each pair gets what
    compare gives it alone, and the JSON Lines say which differ."""
    r = np.random.default_rng(9)
    w = {"model.w": r.standard_normal((8, 8)).astype(np.float32), "head.b": np.arange(4.0)}
    runs = []
    for i in range(3):
        t = dict(w)
        if i == 2:
            t["head.b"] = t["head.b"] + 1
        runs.append(tmp_path / f"ckpt{i}.safetensors")
        _safetensors(runs[-1], t)
    s = cli("sweep", "--baseline", runs[0], runs[1], runs[2], "--format", "jsonl")
    assert s.returncode == 1, s.stderr
    pairs = [p for p in map(json.loads, s.stdout.splitlines()) if p["record"] == "pair"]
    assert [p["verdict"] for p in pairs] == ["identical", "diverged"]
    alone = json.loads(cli("compare", runs[0], runs[2], "--format", "json").stdout)
    assert pairs[1]["first_divergent_groups"] == alone["first_divergent_groups"] == ["head"]


def test_a_compressed_member_is_streamed_in_bounded_memory(tmp_path: Path) -> None:
    """A 192 MiB array in np.savez_compressed archives (small on disk): its
    digests and the scan of its late difference read the stream in pieces;
    peak memory stays far below the array's size."""
    import sys
    import zipfile

    n = (192 << 20) // 4
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    x = np.zeros(n, np.float32)
    np.savez_compressed(a / "step_0.npz", big=x)
    x[-10] = 1.0
    np.savez_compressed(b / "step_0.npz", big=x)
    del x
    with zipfile.ZipFile(b / "step_0.npz") as z:
        assert z.getinfo("big.npy").compress_type == zipfile.ZIP_DEFLATED
    code = (
        "import resource, subprocess, sys\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "print(p.returncode); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.stdout.write(p.stdout)\n"
    )
    cmd = [sys.executable, "-m", "fastdiff", "compare", str(a), str(b), "--format", "json"]
    r = subprocess.run([sys.executable, "-c", code, *cmd], capture_output=True, text=True,
                       cwd=Path(__file__).parents[1], timeout=300)  # fmt: skip
    rc, peak_kib, out = r.stdout.split("\n", 2)
    assert int(rc) == 1, r.stderr
    (buf,) = json.loads(out)["buffers"]
    assert buf["first_index"] == n - 10 and buf["n_diff"] == 1
    assert int(peak_kib) < 96 << 10  # KiB: under 96 MiB, half the array's size


# --- the strided decoder against numpy ------------------------------------------------


@st.composite
def strided_views(draw: st.DrawFn) -> tuple[np.ndarray, tuple[int, ...], tuple[int, ...], int]:
    """A storage and a view of it: a shape, element strides (permuted,
    stepped, size-1 dimensions, a scalar) and an element offset."""
    dims = draw(st.lists(st.integers(1, 6), min_size=0, max_size=4))
    perm = draw(st.permutations(range(len(dims))))
    steps = [draw(st.integers(1, 3)) for _ in dims]
    # Strides of a C-contiguous array of the stepped shape, then permuted.
    full = [d * s for d, s in zip(dims, steps, strict=True)]
    strides, acc = [], 1
    for d in reversed(full):
        strides.insert(0, acc)
        acc *= d
    strides = [strides[i] * steps[i] for i in range(len(dims))]
    shape = tuple(dims[i] for i in perm)
    strides_p = tuple(strides[i] for i in perm)
    offset = draw(st.integers(0, 5))
    itemsize = draw(st.sampled_from([1, 2, 4, 8]))
    reach = sum((d - 1) * s for d, s in zip(shape, strides_p, strict=True))
    n = offset + reach + 1 + draw(st.integers(0, 3))
    storage = np.frombuffer(np.random.default_rng(0).bytes(n * itemsize), f"u{itemsize}")
    return storage, shape, strides_p, offset


@settings(max_examples=200, deadline=None)
@given(view=strided_views(), piece=st.integers(1, 40))
def test_the_strided_decoder_reads_what_numpy_views(
    tmp_path_factory: pytest.TempPathFactory,
    view: tuple[np.ndarray, tuple[int, ...], tuple[int, ...], int],
    piece: int,
) -> None:
    from numpy.lib.stride_tricks import as_strided

    from fastdiff.sources.access import open_buffer
    from fastdiff.sources.buffers import BufferRef, Strided

    storage, shape, strides, offset = view
    w = storage.itemsize
    path = tmp_path_factory.mktemp("strided") / "storage.bin"
    head = b"h" * 13  # the storage starts at an odd file offset
    path.write_bytes(head + storage.tobytes())
    st_ = os.stat(path)
    want = as_strided(storage[offset:], shape=shape, strides=tuple(s * w for s in strides)).copy()
    count = want.size
    codec = Strided(w, shape, strides, (len(storage) - offset) * w)
    ref = BufferRef(
        str(path), 0, "x", count * w, st_.st_dev, st_.st_ino, st_.st_mtime_ns, st_.st_ctime_ns,
        len(head) + offset * w, st_.st_size, None, shape, codec,
    )  # fmt: skip
    got = bytearray()
    with open_buffer(ref) as reader:
        for start in range(0, count, piece):
            n = min(piece, count - start)
            got += reader.read_into(memoryview(bytearray(n * w)), start * w)
    assert bytes(got) == want.tobytes()
