"""Hostile tensor files: every check of every parser, each with a crafted file.

A file from a download is refused, not trusted: exit 2 with one line that
names the file and what is wrong, never a traceback, never a partial verdict
presented as whole (the other buffers of the run are still compared and
reported). Then hypothesis throws mutated headers at each parser: it reads,
or refuses with its own error; nothing else.
"""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from helpers import fastdiff
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastdiff.sources.buffers import Unread
from fastdiff.sources.npy import NpyError, parse_header
from fastdiff.sources.npz import NpzError
from fastdiff.sources.npz import read_file as read_npz
from fastdiff.sources.safetensors import SafetensorsError
from fastdiff.sources.safetensors import read_file as read_safetensors


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return fastdiff(*args)


def npy_bytes(arr: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, arr)
    return out.getvalue()


def npy_with_header(header: str, data: bytes = b"", version: tuple[int, int] = (1, 0)) -> bytes:
    text = header.encode("latin-1")
    if version == (1, 0):
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text + data
    return b"\x93NUMPY" + bytes(version) + struct.pack("<I", len(text)) + text + data


def _hdr(descr: str = "<f4", shape: str = "(4,)", extra: str = "") -> str:
    return f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, {extra}}}\n"


GOOD = np.arange(4, dtype=np.float32)

NPY_CASES = {
    "truncated data": (npy_bytes(GOOD)[:-3], "truncated"),
    "trailing bytes": (npy_bytes(GOOD) + b"\0" * 8, "bytes after"),
    "object dtype": (npy_with_header(_hdr("|O")), "Python objects"),
    "structured dtype": (
        npy_with_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }\n"),
        "structured",
    ),
    "header too long": (
        npy_with_header(_hdr() + " " * 20_000, GOOD.tobytes(), (2, 0)),
        "longer than numpy reads",
    ),
    "code in the header": (
        npy_with_header("{'descr': __import__('os').system('touch PWNED'), 'shape': (1,)}\n"),
        "not a plain dict literal",
    ),
    "unknown key": (npy_with_header(_hdr(extra="'x': 1, "), GOOD.tobytes()), "unknown key"),
    "missing key": (npy_with_header("{'descr': '<f4', 'shape': (4,)}\n", GOOD.tobytes()), "lacks"),
    "unknown version": (npy_with_header(_hdr(), GOOD.tobytes(), (9, 9)), "version 9.9"),
    "not npy at all": (b"hello, world" * 10, "magic bytes"),
    "complex dtype": (npy_with_header(_hdr("<c8")), "complex"),
    "header past the end": (b"\x93NUMPY\x01\x00\xff\x0f{", "truncated .npy header"),
    "a one-dimension shape without its comma": (
        npy_with_header(_hdr(shape="(4)"), GOOD.tobytes()),
        "without its comma",
    ),
    # numpy's literal_eval refuses a leading zero ('04' is no Python literal).
    "a dimension with a leading zero": (
        npy_with_header(_hdr(shape="(04,)"), GOOD.tobytes()),
        "expected a dimension, got '04'",
    ),
}


def _pair(tmp_path: Path, name: str, bad: bytes, good: bytes) -> tuple[Path, Path]:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    for run in (a, b):
        np.arange(8, dtype=np.float32).tofile(run / "step_0_rewards.bin")
    (a / name).write_bytes(good)
    (b / name).write_bytes(bad)
    return a, b


def _refused(r: subprocess.CompletedProcess[str], path: Path, why: str) -> None:
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    lines = [x for x in r.stderr.splitlines() if x.startswith("fastdiff: error: ")]
    mine = [x for x in lines if str(path) in x]
    assert len(mine) == 1, r.stderr
    assert why in mine[0], mine[0]


@pytest.mark.parametrize("case", list(NPY_CASES))
def test_a_hostile_npy_is_refused_and_the_rest_compared(tmp_path: Path, case: str) -> None:
    bad, why = NPY_CASES[case]
    a, b = _pair(tmp_path, "step_0_x.npy", bad, npy_bytes(GOOD))
    r = cli("compare", a, b, "--format", "json")
    _refused(r, b / "step_0_x.npy", why)
    doc = json.loads(r.stdout)
    rows = {d["name"]: d["status"] for d in doc["buffers"]}
    assert rows == {"rewards": "equal", "x": "error"}  # the rest is compared and reported
    assert doc["verdict"] == "error"
    assert not Path("PWNED").exists() and not (tmp_path / "PWNED").exists()


# --- safetensors -------------------------------------------------------------------


def st_bytes(header: object, data: bytes, raw_header: bytes | None = None) -> bytes:
    text = raw_header if raw_header is not None else json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


F = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
G = {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}

ST_CASES = {
    "header length past the file": (struct.pack("<Q", 1000) + b"{}", "runs past the end"),
    "header length over 100 MB": (struct.pack("<Q", 200_000_000) + b"{}", "over the 100,000,000"),
    "overlapping tensors": (
        st_bytes({"a": F, "b": {**G, "data_offsets": [4, 12]}}, bytes(16)),
        "overlaps",
    ),
    "a hole between tensors": (
        st_bytes({"a": F, "b": {**G, "data_offsets": [12, 20]}}, bytes(20)),
        "hole",
    ),
    "data past the end": (st_bytes({"a": F, "b": G}, bytes(12)), "past the end"),
    "offsets that disagree with dtype x shape": (
        st_bytes({"a": {**F, "shape": [3]}}, bytes(8)),
        "needs 12",
    ),
    "a key twice": (
        st_bytes(
            None, bytes(8), b'{"a": %s, "a": %s}' % (json.dumps(F).encode(), json.dumps(F).encode())
        ),
        "twice",
    ),
    # JSON's \ud800 escape alone is no character (safetensors refuses it); read
    # as text it made a name that a manifest could not keep.
    "a lone surrogate in a key": (
        st_bytes(None, bytes(8), b'{"a\\ud800": %s}' % json.dumps(F).encode()),
        "not valid text",
    ),
    "an unknown dtype": (st_bytes({"a": {**F, "dtype": "F128"}}, bytes(8)), "F128"),
    "trailing bytes": (st_bytes({"a": F}, bytes(12)), "after the last tensor"),
    "not JSON": (st_bytes(None, b"", b"{not json at all"), "not valid JSON"),
    "not an object": (st_bytes(None, bytes(8), b"[1, 2, 3]"), "not a JSON object"),
    "a negative dimension": (st_bytes({"a": {**F, "shape": [-2]}}, bytes(8)), "integers >= 0"),
    "metadata that is not strings": (
        st_bytes({"__metadata__": {"a": 1}, "a": F}, bytes(8)),
        "__metadata__",
    ),
    "offsets out of order": (
        st_bytes({"a": {**F, "data_offsets": [8, 0]}}, bytes(8)),
        "not in order",
    ),
    "a header nested too deeply": (st_bytes(None, b"", b"{" + b'"a":[' * 100_000), "JSON"),
}


@pytest.mark.parametrize("case", list(ST_CASES))
def test_a_hostile_safetensors_file_is_refused(tmp_path: Path, case: str) -> None:
    bad, why = ST_CASES[case]
    good = st_bytes({"a": F, "b": G}, bytes(16))
    # As a container of a step in a run folder: the rest is still compared.
    a, b = _pair(tmp_path, "step_0.safetensors", bad, good)
    r = cli("compare", a, b, "--format", "json")
    _refused(r, b / "step_0.safetensors", why)
    rows = {d["name"]: d["status"] for d in json.loads(r.stdout)["buffers"]}
    assert rows["rewards"] == "equal"
    assert {k: v for k, v in rows.items() if k != "rewards"} == {"a": "error", "b": "error"}
    # As a run of its own (sniffed by its first bytes when they look like
    # safetensors; refused as no manifest otherwise).
    r = cli("compare", a / "step_0.safetensors", b / "step_0.safetensors")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert str(b / "step_0.safetensors") in r.stderr


def test_an_index_that_points_outside_its_folder_is_refused(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (tmp_path / "outside.safetensors").write_bytes(st_bytes({"a": F}, bytes(8)))
    index = {"weight_map": {"a": "../outside.safetensors"}}
    (ckpt / "model.safetensors.index.json").write_text(json.dumps(index))
    r = cli("compare", ckpt, ckpt)
    assert r.returncode == 2 and "not a .safetensors file in the checkpoint folder" in r.stderr
    index = {"weight_map": {"a": "model-1.safetensors", "b": "model-2.safetensors"}}
    (ckpt / "model.safetensors.index.json").write_text(json.dumps(index))
    (ckpt / "model-1.safetensors").write_bytes(st_bytes({"a": F, "b": G}, bytes(16)))
    r = cli("compare", ckpt, ckpt)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "named in model.safetensors.index.json but missing" in r.stderr
    assert "tensor 'b': model.safetensors.index.json puts it in model-2.safetensors" in r.stderr


@pytest.mark.parametrize(
    ("damage", "index"),
    [("missing", True), ("trailing bytes", True), ("trailing bytes", False),
     ("tensor in another shard", True)],
)  # fmt: skip
def test_a_shard_that_cannot_be_read_leaves_its_tensors_unknown(
    tmp_path: Path, damage: str, index: bool
) -> None:
    # A checkpoint whose shard is missing or refused: the tensors it holds
    # are errors in the other run, never divergences ('only in run A').
    runs = []
    for name in ("a", "b"):
        ckpt = tmp_path / name
        ckpt.mkdir()
        (ckpt / "model-00001-of-00002.safetensors").write_bytes(st_bytes({"x": F}, bytes(8)))
        (ckpt / "model-00002-of-00002.safetensors").write_bytes(
            st_bytes({"y": F, "z": G}, bytes(16))
        )
        if index:
            one, two = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
            weight_map = {"x": one, "y": two, "z": two}
            index_text = json.dumps({"weight_map": weight_map})
            (ckpt / "model.safetensors.index.json").write_text(index_text)
        runs.append(ckpt)
    shard = runs[1] / "model-00002-of-00002.safetensors"
    if damage == "missing":
        shard.unlink()
    elif damage == "trailing bytes":
        shard.write_bytes(shard.read_bytes() + b"\0")
    else:
        weight_map["y"] = "model-00001-of-00002.safetensors"
        index_text = json.dumps({"weight_map": weight_map})
        (runs[1] / "model.safetensors.index.json").write_text(index_text)
    want = {
        # without an index, a shard refused leaves every tensor of the step unknown
        "x": "equal" if index else "error",
        "y": "error",
        "z": "equal" if damage == "tensor in another shard" else "error",
    }
    # watch reads a checkpoint folder once, as compare does.
    for command in ("compare", "watch"):
        more = ["--idle-timeout", "0.2"] if command == "watch" else []
        r = cli(command, *runs, "--format", "jsonl" if more else "json", *more)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        doc = json.loads(r.stdout.splitlines()[-1] if command == "watch" else r.stdout)
        assert {d["name"]: d["status"] for d in doc["buffers"]} == want, (command, doc["buffers"])
        assert doc["verdict"] == "error" and doc["first_divergent_step"] is None


# --- zip archives (npz) -----------------------------------------------------------------


def zip_bytes(members: list[dict[str, object]], *, eocd: bool = True) -> bytes:
    """A zip archive, written field by field, so a test can lie in any field."""
    out = bytearray()
    central = bytearray()
    for m in members:
        name = str(m["name"]).encode()
        data = bytes(m["data"])  # type: ignore[arg-type]
        method = int(m.get("method", 0))  # type: ignore[arg-type]
        usize = int(m.get("usize", len(data) if method == 0 else 0))  # type: ignore[arg-type]
        crc = int(m.get("crc", zlib.crc32(data)))  # type: ignore[arg-type]
        flags = int(m.get("flags", 0))  # type: ignore[arg-type]
        offset = int(m.get("offset", len(out)))  # type: ignore[arg-type]
        if "offset" not in m:
            out += (
                struct.pack(
                    "<4sHHHHHIIIHH",
                    b"PK\x03\x04",
                    20,
                    flags,
                    method,
                    0,
                    0,
                    crc,
                    len(data),
                    usize,
                    len(name),
                    0,
                )
                + name
                + data
            )
        central += (
            struct.pack(
                "<4sHHHHHHIIIHHHHHII",
                b"PK\x01\x02",
                20,
                20,
                flags,
                method,
                0,
                0,
                crc,
                len(data),
                usize,
                len(name),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
            + name
        )
    cd_offset = len(out)
    out += central
    if eocd:
        out += struct.pack(
            "<4sHHHHIIH",
            b"PK\x05\x06",
            0,
            0,
            len(members),
            len(members),
            len(central),
            cd_offset,
            0,
        )
    return bytes(out)


def _deflate(data: bytes) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


X = npy_bytes(np.arange(16, dtype=np.float32))
Y = npy_bytes(np.arange(16, dtype=np.float32) * 2)

ZIP_CASES = {
    "no end record": (
        zip_bytes([{"name": "x.npy", "data": X}], eocd=False),
        "no end-of-central-directory",
    ),
    "data outside the file": (
        zip_bytes([{"name": "x.npy", "data": X, "offset": 10_000}]),
        "outside",
    ),
    "a member twice": (
        zip_bytes([{"name": "x.npy", "data": X}, {"name": "x.npy", "data": X}]),
        "twice",
    ),
    "members that overlap": (
        zip_bytes([{"name": "x.npy", "data": X}, {"name": "x.npy", "data": X, "offset": 0}]),
        "twice",
    ),
    "a zip bomb": (
        zip_bytes(
            [
                {
                    "name": "x.npy",
                    "data": _deflate(b"\0" * 100_000),
                    "method": 8,
                    "usize": 4_000_000_000,
                }
            ]
        ),
        "zip bomb",
    ),
    "an encrypted member": (zip_bytes([{"name": "x.npy", "data": X, "flags": 1}]), "encrypted"),
    "bzip2": (zip_bytes([{"name": "x.npy", "data": X, "method": 12}]), "compression method 12"),
    "a member that is not .npy": (zip_bytes([{"name": "x.txt", "data": b"hi"}]), "not an .npy"),
    "an object array": (
        zip_bytes([{"name": "x.npy", "data": npy_with_header(_hdr("|O", "(1,)"))}]),
        "Python objects",
    ),
    "a stored member whose sizes differ": (
        zip_bytes([{"name": "x.npy", "data": X, "usize": len(X) + 5}]),
        "sizes differ",
    ),
}


def _overlapping() -> bytes:
    """Member y's local header and data lie inside member x's data: the same
    bytes would be read as two members."""
    inner_name = b"y.npy"
    inner = (
        struct.pack(
            "<4sHHHHHIIIHH",
            b"PK\x03\x04",
            20,
            0,
            0,
            0,
            0,
            zlib.crc32(Y),
            len(Y),
            len(Y),
            len(inner_name),
            0,
        )
        + inner_name
        + Y
    )
    outer = X + inner
    archive = bytearray(zip_bytes([{"name": "x.npy", "data": outer}]))
    # A second central record for y, pointing inside x's data.
    start = 30 + len("x.npy") + len(X)
    cd = archive.rfind(b"PK\x01\x02")
    record = (
        struct.pack(
            "<4sHHHHHHIIIHHHHHII",
            b"PK\x01\x02",
            20,
            20,
            0,
            0,
            0,
            0,
            zlib.crc32(Y),
            len(Y),
            len(Y),
            len(inner_name),
            0,
            0,
            0,
            0,
            0,
            start,
        )
        + inner_name
    )
    eocd = archive.rfind(b"PK\x05\x06")
    cd_size = eocd - cd + len(record)
    archive = archive[:eocd] + record
    archive += struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 2, 2, cd_size, cd, 0)
    return bytes(archive)


ZIP_CASES["records that overlap"] = (_overlapping(), "overlap")


@pytest.mark.parametrize("case", list(ZIP_CASES))
def test_a_hostile_npz_is_refused(tmp_path: Path, case: str) -> None:
    bad, why = ZIP_CASES[case]
    good = zip_bytes([{"name": "x.npy", "data": X}])
    a, b = _pair(tmp_path, "step_0.npz", bad, good)
    r = cli("compare", a, b, "--format", "json")
    _refused(r, b / "step_0.npz", why)
    rows = {d["name"]: d["status"] for d in json.loads(r.stdout)["buffers"]}
    assert rows == {"rewards": "equal", "x": "error"}


@pytest.mark.parametrize("ends", ["in the .npy header", "in the data"])
def test_a_deflate_stream_that_ends_early_before_more_bytes_is_malformed(
    tmp_path: Path, ends: str
) -> None:
    # A complete deflate stream shorter than the member declares, followed by
    # more stored bytes: once its stream has ended, zlib hands those back as
    # unconsumed input, and the reader fed them to it again, for ever (a
    # hang when the member was hashed).
    data = npy_bytes(np.arange(4000, dtype=np.float32))
    short = data[:60] if ends == "in the .npy header" else data[: len(data) // 2]
    packed = _deflate(short) + b"trailing bytes after the stream" * 4
    member = {"name": "x.npy", "data": packed, "method": 8, "usize": len(data),
              "crc": zlib.crc32(data)}  # fmt: skip
    ok = zip_bytes([{**member, "data": _deflate(data)}])
    a, b = _pair(tmp_path, "step_0.npz", zip_bytes([member]), ok)
    r = fastdiff("compare", a, b, "--format", "json", timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    rows = {d["name"]: d["status"] for d in json.loads(r.stdout)["buffers"]}
    assert rows["rewards"] == "equal" and rows["x"] in ("error", "malformed"), rows
    why = "truncated .npy header" if ends == "in the .npy header" else "ends after 7,936 of 16,000"
    _refused(r, b / "step_0.npz", why)


def test_a_truncated_deflate_stream_is_malformed_never_a_verdict(tmp_path: Path) -> None:
    data = npy_bytes(np.arange(4000, dtype=np.float32))
    packed = _deflate(data)
    ok = zip_bytes(
        [
            {
                "name": "x.npy",
                "data": packed,
                "method": 8,
                "usize": len(data),
                "crc": zlib.crc32(data),
            }
        ]
    )
    cut = zip_bytes(
        [
            {
                "name": "x.npy",
                "data": packed[: len(packed) // 2],
                "method": 8,
                "usize": len(data),
                "crc": zlib.crc32(data),
            }
        ]
    )
    a, b = _pair(tmp_path, "step_0.npz", cut, ok)
    r = cli("compare", a, b, "--format", "json")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    rows = {d["name"]: d for d in json.loads(r.stdout)["buffers"]}
    assert rows["x"]["status"] == "malformed" and "compressed member" in rows["x"]["message"]
    assert rows["rewards"]["status"] == "equal"


# --- count caps ------------------------------------------------------------------------
# A header of a few bytes per tensor can list millions of them (a 100 MB
# safetensors header, 1.4 million; an .npz of tiny members): each costs
# about a kilobyte to list and compare, so each format caps the count, and
# a file over it is refused at once, in one line naming the cap, before the
# tensors are listed.


def _many_tensors(n: int, key: str = "data_offsets", metadata: bool = False) -> bytes:
    """A safetensors file of ``n`` one-element f32 tensors; ``key``: how
    the header spells ``data_offsets`` (JSON may escape any character)."""
    entries = [
        f'"t{i}":{{"dtype":"F32","shape":[1],"{key}":[{4 * i},{4 * i + 4}]}}' for i in range(n)
    ]
    if metadata:
        entries.append('"__metadata__":{"format":"pt"}')
    header = ("{" + ",".join(entries) + "}").encode()
    return struct.pack("<Q", len(header)) + header + bytes(4 * n)


def _many_arrays(path: Path, n: int) -> Path:
    """An .npz of ``n`` one-element arrays (zip64 past 65,535 members)."""
    import zipfile

    raw = npy_bytes(np.zeros(1, np.float32))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for i in range(n):
            z.writestr(f"a{i}.npy", raw)
    return path


@pytest.mark.parametrize(
    ("key", "metadata"),
    [
        ("data_offsets", False),  # counted before the JSON is parsed
        ("data\\u005foffsets", False),  # escaped: counted as it is parsed
        ("data\\u005foffsets", True),
    ],
)
def test_a_safetensors_header_over_the_count_cap_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str, metadata: bool
) -> None:
    from fastdiff.sources import safetensors

    monkeypatch.setattr(safetensors, "MAX_TENSORS", 10)
    ok = tmp_path / "ok.safetensors"
    ok.write_bytes(_many_tensors(10, key, metadata))
    assert len(read_safetensors(str(ok), 0)) == 10
    for n in (11, 1000):
        bad = tmp_path / f"{n}.safetensors"
        bad.write_bytes(_many_tensors(n, key, metadata))
        with pytest.raises(SafetensorsError, match=r"^the header lists over 10 tensors, "):
            read_safetensors(str(bad), 0)


def test_an_npz_over_the_count_cap_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastdiff.sources import npz

    monkeypatch.setattr(npz, "MAX_ARRAYS", 10)
    assert len(read_npz(str(_many_arrays(tmp_path / "ok.npz", 10)), 0)) == 10
    with pytest.raises(NpzError, match=r"^11 members, more than fastdiff reads \(10\)$"):
        read_npz(str(_many_arrays(tmp_path / "bad.npz", 11)), 0)


def test_files_over_the_count_caps_are_refused_in_one_line(tmp_path: Path) -> None:
    """At the real caps (262,144 tensors, 262,144 arrays), through the
    command line: one line naming the file and the cap, exit 2."""
    from fastdiff.sources.npz import MAX_ARRAYS
    from fastdiff.sources.safetensors import MAX_TENSORS

    assert MAX_TENSORS == MAX_ARRAYS == 262_144
    st_file = tmp_path / "many.safetensors"
    st_file.write_bytes(_many_tensors(MAX_TENSORS + 1))
    npz_file = _many_arrays(tmp_path / "many.npz", MAX_ARRAYS + 1)
    for path, why in (
        (st_file, "not a usable safetensors file: the header lists over 262,144 tensors"),
        (npz_file, "not a usable .npz archive: 262,145 members, more than fastdiff reads "),
    ):
        r = fastdiff("compare", path, path, timeout=120)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        (line,) = r.stderr.splitlines()
        assert line.startswith(f"fastdiff: error: {path}: {why}"), line


# --- fuzzing the parsers ------------------------------------------------------------

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SAMPLES = {
    "npy": npy_bytes(np.arange(12, dtype=np.float32).reshape(3, 4)),
    "safetensors": st_bytes({"a": F, "b": G, "__metadata__": {"k": "v"}}, bytes(16)),
    "npz": zip_bytes([{"name": "x.npy", "data": X}, {"name": "y.npy", "data": Y}]),
    "npz_deflate": zip_bytes(
        [{"name": "x.npy", "data": _deflate(X), "method": 8, "usize": len(X), "crc": zlib.crc32(X)}]
    ),
    # Bytes after the end of the stream, within the member (zipfile reads it).
    "npz_deflate_padded": zip_bytes(
        [
            {
                "name": "x.npy",
                "data": _deflate(X) + bytes(16),
                "method": 8,
                "usize": len(X),
                "crc": zlib.crc32(X),
            }
        ]
    ),
}


def _mutate(raw: bytes, edits: list[tuple[int, int]], cut: int | None) -> bytes:
    out = bytearray(raw)
    for pos, value in edits:
        out[pos % len(out)] = value
    return bytes(out[:cut] if cut is not None else out)


EDITS = st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=6)
CUTS = st.none() | st.integers(0, 400)


@FUZZ
@given(edits=EDITS, cut=CUTS)
def test_the_npy_parser_reads_or_refuses(edits: list[tuple[int, int]], cut: int | None) -> None:
    raw = _mutate(SAMPLES["npy"], [(p % 80, v) for p, v in edits], cut)
    try:
        h = parse_header(raw, len(raw))
    except NpyError as exc:
        assert "\n" not in str(exc)
        return
    assert h.data_offset + h.nbytes == len(raw)


def _fuzz_file(raw: bytes, suffix: str) -> Path:
    fd, name = tempfile.mkstemp(suffix=suffix)
    os.write(fd, raw)
    os.close(fd)
    return Path(name)


@FUZZ
@given(edits=EDITS, cut=CUTS)
def test_the_safetensors_parser_reads_or_refuses(
    edits: list[tuple[int, int]], cut: int | None
) -> None:
    raw = _mutate(SAMPLES["safetensors"], edits, cut)
    path = _fuzz_file(raw, ".safetensors")
    try:
        refs = read_safetensors(str(path), 0)
    except SafetensorsError as exc:
        assert "\n" not in str(exc)
        return
    finally:
        path.unlink()
    pos = 8 + int.from_bytes(raw[:8], "little")
    for ref in sorted(refs, key=lambda r: r.offset):
        assert ref.offset == pos  # contiguous, in the file, nothing left over
        pos += ref.size
    assert pos == len(raw)


@FUZZ
@given(edits=EDITS, cut=CUTS, prefix=st.binary(max_size=40))
def test_a_safetensors_blob_after_other_bytes_reads_as_the_file_alone(
    edits: list[tuple[int, int]], cut: int | None, prefix: bytes
) -> None:
    """A blob at an offset (DCP's .distcp of safetensors) is the same
    header as the blob alone, each tensor shifted by the offset, or the
    same refusal: nothing before the blob is read as part of it."""
    from fastdiff.sources.safetensors import parse_header_meta

    raw = _mutate(SAMPLES["safetensors"], edits, cut)

    def parsed(data: bytes, start: int) -> object:
        path = _fuzz_file(data, ".distcp")
        fd = os.open(path, os.O_RDONLY)
        try:
            tensors, meta = parse_header_meta(fd, len(data), start)
            got = [(t.name, t.dtype, t.shape, t.begin - start, t.end - start) for t in tensors]
            return got, meta
        except SafetensorsError as exc:
            return str(exc).replace(f"({len(data):,} bytes)", "")
        finally:
            os.close(fd)
            path.unlink()

    assert parsed(prefix + raw, len(prefix)) == parsed(raw, 0)


@FUZZ
@given(
    sample=st.sampled_from(["npz", "npz_deflate", "npz_deflate_padded"]),
    edits=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), min_size=1, max_size=4),
)
def test_the_members_of_a_zip_read_whole_or_are_malformed(
    sample: str, edits: list[tuple[int, int]]
) -> None:
    # Every member listed is read to its end: the bytes np.load reads, or
    # an OSError saying what is wrong (BadData, FileChanged), in bounded
    # time (a stream that ended early once made the reader spin for ever).
    import signal

    from fastdiff.sources.access import open_buffer

    raw = _mutate(SAMPLES[sample], edits, None)
    path = _fuzz_file(raw, ".npz")

    def hung(*_: object) -> None:
        raise AssertionError("reading a member did not end")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)
    try:
        try:
            refs = read_npz(str(path), 0)
        except NpzError:
            return
        for ref in refs:
            if isinstance(ref, Unread):  # a member refused alone, in one line
                assert "\n" not in ref.reason and ref.reason.startswith("member ")
                continue
            try:
                with open_buffer(ref) as reader:
                    got = bytes(reader.read_into(memoryview(bytearray(ref.size)), 0))
            except OSError as exc:
                assert "\n" not in str(exc)
                continue
            try:
                with np.load(io.BytesIO(raw), allow_pickle=False) as z:
                    want = z[ref.name].tobytes()
            except Exception:  # numpy may refuse what was read (a stored member's CRC)
                continue
            assert got == want
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        path.unlink()


@FUZZ
@given(sample=st.sampled_from(["npz", "npz_deflate"]), edits=EDITS, cut=CUTS)
def test_the_zip_reader_reads_or_refuses(
    sample: str, edits: list[tuple[int, int]], cut: int | None
) -> None:
    raw = _mutate(SAMPLES[sample], edits, cut)
    path = _fuzz_file(raw, ".npz")
    try:
        refs = read_npz(str(path), 0)
    except NpzError as exc:
        assert "\n" not in str(exc)
        return
    finally:
        path.unlink()
    for ref in refs:
        if isinstance(ref, Unread):
            assert "\n" not in ref.reason
            continue
        stored = ref.codec.stored if ref.codec is not None else ref.size  # type: ignore[attr-defined]
        assert ref.offset >= 0 and ref.offset + stored <= len(raw)
