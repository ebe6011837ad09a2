"""Element types: their names, the lookups of file formats' type fields, their
values against independent oracles, and the new types through the CLI.

- Names: ``dtype_name`` follows numpy (``np.dtype(name)`` is the oracle for
  every numpy name and code), fastdiff's own names count bits (``i8`` is 8
  bits, numpy's ``<i8`` 8 bytes), ambiguous and unknown names are refused
  with the name and what to write.
- Lookups: ``from_descr`` on the descr strings ``np.save`` writes,
  ``from_safetensors`` on the headers safetensors writes, ``from_torch`` on
  the names ``torch.save`` pickles; each refuses what it does not compare.
- Values: the 8-bit floats and bf16, all bit patterns, against ml_dtypes (and
  the 8-bit floats against the naive twin's reading of their specifications,
  which needs no library); the kernels' deltas, NaN, infinity and ULP facts
  on arrays ml_dtypes rounded.
- The CLI: a schema naming the new types by numpy's names, a comparison's
  JSON (values, bits, magnitude), ``--default-dtype float32``, ``fastdiff
  schema`` printing canonical names.

Tests that need ml_dtypes, safetensors or torch skip when it is absent.
"""

from __future__ import annotations

import ast
import io
import json
import math
import pickletools
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest
from helpers import fastdiff, write_runs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from naive import FP8_SPEC, fp8_value, naive_scan

from fastdiff.dtypes import (
    DTYPES,
    FP8,
    SAFETENSORS,
    TORCH,
    TORCH_STORAGES,
    bits_hex,
    decode,
    dtype_name,
    fp8_values,
    from_descr,
    from_safetensors,
    from_torch,
    get_dtype,
)
from fastdiff.kernels import ENGINES, EXACT, scan_bytes
from fastdiff.kernels.values import float64_values, fp8_table

#: numpy's kind character of each fastdiff kind (bool is numpy's "b").
NUMPY_KIND = {"uint": "u", "int": "i", "float": "f"}

#: ml_dtypes' name of each 8-bit float and bf16.
ML_NAMES = {
    "f8_e4m3fn": "float8_e4m3fn",
    "f8_e5m2": "float8_e5m2",
    "f8_e4m3fnuz": "float8_e4m3fnuz",
    "f8_e5m2fnuz": "float8_e5m2fnuz",
    "bf16": "bfloat16",
}


def same_float(x: float, y: float) -> bool:
    """Equal values, NaN equal to NaN, and zeros of the same sign."""
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return x == y and math.copysign(1.0, x) == math.copysign(1.0, y)


# --------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------


def test_canonical_names() -> None:
    little = ["u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f16", "bf16", "f32", "f64"]
    new = ["bool", "f8_e4m3fn", "f8_e5m2", "f8_e4m3fnuz", "f8_e5m2fnuz"]
    big = [n + "be" for n in little if DTYPES[n].itemsize > 1]
    assert list(DTYPES) == little + new + big
    for name in big:
        be, le = DTYPES[name], DTYPES[name[:-2]]
        assert (be.itemsize, be.kind, be.base, be.order, be.swapped) == (
            le.itemsize, le.kind, le.name, ">", True,
        )  # fmt: skip
        assert not le.swapped and le.base == le.name
    for name in DTYPES:
        assert dtype_name(name) == name and get_dtype(name) is DTYPES[name]


NUMPY_NAMES = [
    "bool", "bool_", "?", "b1", "|b1", "<b1",
    "uint8", "ubyte", "u1", "|u1", "int8", "byte", "i1", "|i1",
    "uint16", "ushort", "u2", "<u2", ">u2", "=u2", "int16", "short", "i2", "<i2", ">i2",
    "uint32", "u4", "<u4", ">u4", "int32", "i4", "<i4", ">i4",
    "uint64", "<u8", ">u8", "=u8", "int64", "<i8", ">i8", "=i8",
    "float16", "half", "f2", "<f2", ">f2", "float32", "single", "f4", "<f4", ">f4", "=f4",
    "float64", "double", "<f8", ">f8", "=f8",
]  # fmt: skip


@pytest.mark.parametrize("name", NUMPY_NAMES)
def test_user_names_mean_what_numpy_means(name: str) -> None:
    want = np.dtype(name)
    dt = get_dtype(name)
    kind = "b" if dt.name == "bool" else NUMPY_KIND[dt.kind]
    assert (dt.itemsize, kind) == (want.itemsize, want.kind)
    big = want.byteorder == ">" and want.itemsize > 1
    assert dt.swapped == big
    # the values numpy writes in that type, read back by fastdiff's
    values = np.array([1, 0, 1], want)
    raw = values.tobytes()
    w = dt.itemsize
    assert [decode(dt, raw[k : k + w]) for k in range(0, len(raw), w)] == values.tolist()
    assert np.frombuffer(raw, dt.numpy).tolist() == [1, 0, 1]


def test_fastdiff_names_count_bits_numpy_codes_bytes() -> None:
    assert get_dtype("i8").itemsize == 1 and get_dtype("u8").itemsize == 1
    assert dtype_name("<i8") == "i64" and dtype_name(">u8") == "u64be"
    assert dtype_name("i1") == "i8" and dtype_name("|u1") == "u8"


@pytest.mark.parametrize(
    "name, canonical",
    [
        ("bfloat16", "bf16"),
        ("float8_e4m3fn", "f8_e4m3fn"),
        ("float8_e5m2", "f8_e5m2"),
        ("float8_e4m3fnuz", "f8_e4m3fnuz"),
        ("float8_e5m2fnuz", "f8_e5m2fnuz"),
        ("F8_E4M3", "f8_e4m3fn"),
        ("F8_E5M2FNUZ", "f8_e5m2fnuz"),
        ("BF16", "bf16"),
        ("BOOL", "bool"),
        ("I8", "i8"),
        ("U64", "u64"),
        ("torch.float16", "f16"),
        ("torch.float", "f32"),
        ("torch.long", "i64"),
        ("torch.bfloat16", "bf16"),
        ("torch.float8_e4m3fnuz", "f8_e4m3fnuz"),
        ("torch.BFloat16Storage", "bf16"),
        ("<f1", "f8_e5m2"),  # what np.save writes for ml_dtypes' float8_e5m2
    ],
)
def test_other_libraries_names(name: str, canonical: str) -> None:
    assert dtype_name(name) == canonical


@pytest.mark.parametrize(
    "name, words",
    [
        ("f8", ["ambiguous dtype 'f8'", "f64", "f8_e4m3fn"]),
        ("float", ["ambiguous dtype 'float'", "f64 or f32"]),
        ("int", ["ambiguous dtype 'int'", "i64 or i32"]),
        ("long", ["ambiguous dtype 'long'"]),
        ("float8_e4m3", ["ambiguous dtype 'float8_e4m3'", "infinities", "f8_e4m3fn"]),
        ("f33", ["unknown dtype 'f33'", "valid: u8 i8", "f8_e4m3fn", "f32be", "float32"]),
        ("", ["unknown dtype ''"]),
        ("F8_E8M0", ["unknown dtype 'F8_E8M0'"]),
        ("<c8", ["numpy dtype '<c8'", "complex", "not a type fastdiff compares"]),
        ("O", ["numpy dtype 'O'", "Python objects"]),
        ("<U3", ["numpy dtype '<U3'", "unicode"]),
        ("<V2", ["numpy dtype '<V2'", "ml_dtypes", "name the dtype in the schema"]),
        ("|f4", ["numpy dtype '|f4'", "needs a byte order"]),
        ("<f16", ["numpy dtype '<f16'", "not a type fastdiff compares"]),
    ],
)
def test_bad_names_are_refused_with_the_name(name: str, words: list[str]) -> None:
    with pytest.raises(ValueError) as info:
        dtype_name(name)
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize("value", [None, 3, ["f32"]])
def test_a_name_that_is_no_string(value: object) -> None:
    with pytest.raises(ValueError, match="unknown dtype"):
        dtype_name(value)


# --------------------------------------------------------------------------
# npy descr
# --------------------------------------------------------------------------


def npy_descr(arr: np.ndarray) -> str:
    """The descr field of the header ``np.save`` writes for ``arr``."""
    buf = io.BytesIO()
    np.save(buf, arr)
    raw = buf.getvalue()
    (length,) = struct.unpack("<H", raw[8:10])
    return ast.literal_eval(raw[10 : 10 + length].decode("latin1"))["descr"]


NUMPY_TYPES = [
    f"{order}{kind}{size}"
    for order in "<>"
    for kind, sizes in (("u", (1, 2, 4, 8)), ("i", (1, 2, 4, 8)), ("f", (2, 4, 8)), ("b", (1,)))
    for size in sizes
]


@pytest.mark.parametrize("numpy_type", NUMPY_TYPES)
def test_from_descr_reads_what_np_save_writes(numpy_type: str) -> None:
    want = np.dtype(numpy_type)
    descr = npy_descr(np.zeros(3, want))
    dt = from_descr(descr)
    kind = "b" if dt.name == "bool" else NUMPY_KIND[dt.kind]
    assert (dt.itemsize, kind, dt.swapped) == (want.itemsize, want.kind, want.byteorder == ">")
    assert dt.descr == descr  # and the type names the same descr back
    values = np.array([1, 0, 1], want)
    raw = values.tobytes()
    w = dt.itemsize
    assert [decode(dt, raw[k : k + w]) for k in range(0, len(raw), w)] == values.tolist()


def test_every_descr_names_its_type_back() -> None:
    for dt in DTYPES.values():
        if dt.descr:
            assert from_descr(dt.descr) is dt
            assert np.dtype(dt.descr).itemsize == dt.itemsize
        else:  # bf16 and the 8-bit floats: numpy has no type of its own for them
            assert dt.base == "bf16" or dt.base in FP8


@pytest.mark.parametrize(
    "descr, words",
    [
        ("<c8", ["'<c8'", "complex"]),
        ("|O", ["'|O'", "Python objects"]),
        ("<U5", ["'<U5'", "unicode"]),
        ("|S3", ["'|S3'", "byte strings"]),
        ("<M8[ns]", ["'<M8[ns]'", "datetime"]),
        ("<V2", ["'<V2'", "ml_dtypes"]),
        ("|f4", ["'|f4'", "byte order"]),
        ("<f16", ["'<f16'", "not a type fastdiff compares"]),
        ("<u3", ["'<u3'", "not a type fastdiff compares"]),
        ("<x4", ["'<x4'"]),
        ("", ["''"]),
        ([("a", "<f4")], ["structured"]),
        (None, ["None"]),
    ],
)
def test_from_descr_refuses_what_it_does_not_compare(descr: object, words: list[str]) -> None:
    with pytest.raises(ValueError) as info:
        from_descr(descr)
    for word in words:
        assert word in str(info.value)


def test_from_descr_of_ml_dtypes_files() -> None:
    """np.save writes ml_dtypes' float8_e5m2 as '<f1' and the others as '<V1'
    or '<V2': the first is read, the others need the schema's dtype."""
    ml = pytest.importorskip("ml_dtypes")
    for name, ml_name in ML_NAMES.items():
        descr = npy_descr(np.zeros(2, getattr(ml, ml_name)))
        if descr == "<f1":
            assert from_descr(descr).name == name == "f8_e5m2"
        else:
            with pytest.raises(ValueError, match="name the dtype in the schema"):
                from_descr(descr)


# --------------------------------------------------------------------------
# safetensors and torch
# --------------------------------------------------------------------------


def test_from_safetensors_table() -> None:
    want = {
        "BOOL": "bool", "U8": "u8", "I8": "i8", "F8_E5M2": "f8_e5m2", "F8_E4M3": "f8_e4m3fn",
        "F8_E5M2FNUZ": "f8_e5m2fnuz", "F8_E4M3FNUZ": "f8_e4m3fnuz", "I16": "i16", "U16": "u16",
        "F16": "f16", "BF16": "bf16", "I32": "i32", "U32": "u32", "F32": "f32", "F64": "f64",
        "I64": "i64", "U64": "u64",
    }  # fmt: skip
    assert {k: from_safetensors(k).name for k in SAFETENSORS} == want
    for name in want:  # safetensors is little-endian on disk
        assert not from_safetensors(name).swapped


@pytest.mark.parametrize(
    "value, words",
    [
        ("F8_E8M0", ["'F8_E8M0'", "not one fastdiff compares", "BF16"]),
        ("C64", ["'C64'", "not one fastdiff compares"]),
        ("F4", ["'F4'", "not one fastdiff compares"]),
        ("f32", ["unknown safetensors dtype 'f32'", "known: BOOL U8"]),
        ("XYZ", ["unknown safetensors dtype 'XYZ'"]),
        (None, ["unknown safetensors dtype None"]),
        (7, ["unknown safetensors dtype 7"]),
    ],
)
def test_from_safetensors_refuses_with_the_value(value: object, words: list[str]) -> None:
    with pytest.raises(ValueError) as info:
        from_safetensors(value)
    for word in words:
        assert word in str(info.value)


def safetensors_header(data: bytes) -> dict:
    (length,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + length])


@pytest.mark.parametrize("numpy_type", [t for t in NUMPY_TYPES if t[0] == "<"])
def test_from_safetensors_reads_what_safetensors_numpy_writes(numpy_type: str) -> None:
    st_numpy = pytest.importorskip("safetensors.numpy")
    header = safetensors_header(st_numpy.save({"x": np.zeros(3, numpy_type)}))
    assert from_safetensors(header["x"]["dtype"]) is from_descr(numpy_type)


TORCH_DTYPES = sorted(TORCH)


@pytest.mark.parametrize("torch_name", TORCH_DTYPES)
def test_from_safetensors_and_from_torch_agree_on_what_torch_writes(torch_name: str) -> None:
    torch = pytest.importorskip("torch")
    st_torch = pytest.importorskip("safetensors.torch")
    dtype = getattr(torch, torch_name)
    tensor = torch.zeros(3, dtype=dtype)
    dt = from_torch(f"torch.{torch_name}")
    assert dt is from_torch(torch_name) and dt.itemsize == tensor.element_size()
    assert (dt.kind == "float") == dtype.is_floating_point
    assert (dt.kind == "int") == (dtype.is_signed and not dtype.is_floating_point)
    header = safetensors_header(st_torch.save({"x": tensor}))
    assert from_safetensors(header["x"]["dtype"]) is dt


def pickled_globals(tensor: object) -> list[tuple[str, str]]:
    """The (module, name) globals of the pickle ``torch.save`` writes for ``tensor``."""
    import torch

    buf = io.BytesIO()
    torch.save({"x": tensor}, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        pkl = z.read(next(n for n in z.namelist() if n.endswith("data.pkl")))
    found = []
    strings: list[str] = []
    for op, arg, _ in pickletools.genops(pkl):
        if op.name == "GLOBAL":
            module, name = arg.split(" ")
            found.append((module, name))
        elif op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE"):
            strings.append(arg)
        elif op.name == "STACK_GLOBAL":
            found.append((strings[-2], strings[-1]))
    return found


@pytest.mark.parametrize("torch_name", TORCH_DTYPES)
def test_from_torch_reads_the_type_torch_save_pickles(torch_name: str) -> None:
    torch = pytest.importorskip("torch")
    dtype = getattr(torch, torch_name)
    names = [
        n
        for m, n in pickled_globals(torch.zeros(3, dtype=dtype))
        if m == "torch" and (n.endswith("Storage") or isinstance(getattr(torch, n), torch.dtype))
    ]
    assert len(names) == 1, names  # a storage class (FloatStorage) or a dtype (float8_e4m3fn)
    assert from_torch(names[0]) is from_torch(torch_name)


@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")
def test_torch_storage_classes_name_their_dtypes() -> None:
    torch = pytest.importorskip("torch")
    for name, canonical in TORCH_STORAGES.items():
        cls = getattr(torch, name, None)
        if cls is None:  # the 8-bit float and wide unsigned names torch itself lacks
            assert canonical in ("u16", "u32", "u64") or canonical in FP8
            continue
        torch_name = str(cls.dtype).removeprefix("torch.")
        assert TORCH[torch_name] == canonical == from_torch(f"torch.{name}").name


@pytest.mark.parametrize(
    "value",
    ["ComplexFloatStorage", "QInt8Storage", "torch.complex64", "float8_e8m0fnu", "Storage", 3],
)
def test_from_torch_refuses_with_the_value(value: object) -> None:
    with pytest.raises(ValueError, match=f"torch type {value!r} is not one fastdiff compares"):
        from_torch(value)


# --------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------

#: How many NaN and infinite patterns each 8-bit float has, and its largest value.
FP8_FACTS = {
    "f8_e4m3fn": (2, 0, 448.0),
    "f8_e5m2": (6, 2, 57344.0),
    "f8_e4m3fnuz": (1, 0, 240.0),
    "f8_e5m2fnuz": (1, 0, 57344.0),
}


@pytest.mark.parametrize("name", FP8)
def test_fp8_values_follow_their_specifications(name: str) -> None:
    values = fp8_values(name)
    assert len(values) == 256
    for u in range(256):
        assert same_float(values[u], fp8_value(name, u)), hex(u)
        assert same_float(decode(DTYPES[name], bytes([u])), values[u])
    table = fp8_table(name)
    assert not table.flags.writeable
    assert all(same_float(float(table[u]), values[u]) for u in range(256))
    n_nan = sum(math.isnan(v) for v in values)
    n_inf = sum(math.isinf(v) for v in values)
    largest = max(v for v in values if math.isfinite(v))
    assert (n_nan, n_inf, largest) == FP8_FACTS[name]
    assert math.isnan(values[0x80]) == (name in ("f8_e4m3fnuz", "f8_e5m2fnuz"))


@pytest.mark.parametrize("name", FP8)
def test_fp8_values_follow_ml_dtypes(name: str) -> None:
    ml = pytest.importorskip("ml_dtypes")
    want = np.arange(256, dtype=np.uint8).view(getattr(ml, ML_NAMES[name])).astype(np.float64)
    got = float64_values(np.arange(256, dtype=np.uint8), DTYPES[name])
    for u in range(256):
        assert same_float(float(got[u]), float(want[u])), hex(u)
        assert same_float(fp8_values(name)[u], float(want[u])), hex(u)
        assert same_float(fp8_value(name, u), float(want[u])), hex(u)


@pytest.mark.parametrize("name", ["bf16", "bf16be"])
def test_bf16_values_follow_ml_dtypes(name: str) -> None:
    ml = pytest.importorskip("ml_dtypes")
    dt = DTYPES[name]
    bits = np.arange(1 << 16, dtype=np.uint16)
    with np.errstate(invalid="ignore"):  # signalling NaNs become quiet
        want = bits.view(ml.bfloat16).astype(np.float64)
    got = float64_values(bits.astype(dt.bits), dt)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert np.array_equal(got[ok], want[ok])
    assert np.array_equal(np.signbit(got[ok]), np.signbit(want[ok]))
    raw = bits.astype(dt.bits).tobytes()
    for u in (0, 1, 0x7F, 0x3F80, 0x7F80, 0x7FC1, 0x8000, 0xFF80, 0xC2F7):
        assert same_float(decode(dt, raw[2 * u : 2 * u + 2]), float(want[u])), hex(u)


def test_bits_hex_is_most_significant_first_in_either_order() -> None:
    assert bits_hex(DTYPES["f32"], struct.pack("<f", 2.0)) == "0x40000000"
    assert bits_hex(DTYPES["f32be"], struct.pack(">f", 2.0)) == "0x40000000"
    assert bits_hex(DTYPES["f8_e4m3fn"], b"\x7f") == "0x7f"


ML_KINDS = [*FP8, "bf16"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ML_KINDS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_kernel_facts_on_values_ml_dtypes_rounds(engine: str, name: str, data) -> None:
    """A and B rounded to the format by ml_dtypes (B: A scaled a little, with
    NaN and infinity sprinkled in): |A-B|, NaN and infinity counts and the
    ULP distance as ml_dtypes' own values give them."""
    ml = pytest.importorskip("ml_dtypes")
    kind = getattr(ml, ML_NAMES[name])
    finite = st.floats(-1e5, 1e5, allow_nan=False)
    special = st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-9, -1e-9])
    values = data.draw(st.lists(st.one_of(finite, special), min_size=1, max_size=60), label="a")
    scale = data.draw(st.lists(st.sampled_from([1.0, 1.01, 0.9, -1.0, 2.0]), min_size=len(values),
                               max_size=len(values)), label="scale")  # fmt: skip
    with np.errstate(all="ignore"):  # ml_dtypes warns where it overflows to NaN or inf
        a = np.array(values).astype(kind)
        b = (np.array(values) * np.array(scale)).astype(kind)
    va, vb = a.astype(np.float64), b.astype(np.float64)
    bits_a, bits_b = a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}")
    got = scan_bytes(a.tobytes(), b.tobytes(), name, EXACT, engine)
    differ = bits_a != bits_b
    nan = differ & (np.isnan(va) | np.isnan(vb))
    inf = differ & ~nan & (np.isinf(va) | np.isinf(vb))
    finite_pairs = differ & ~nan & ~inf
    assert (got.n_nan_mismatch, got.n_inf_mismatch) == (int(nan.sum()), int(inf.sum()))
    assert got.n_diff == int(differ.sum())
    if finite_pairs.any():
        delta = np.abs(va[finite_pairs] - vb[finite_pairs])
        assert got.max_abs_delta == float(delta.max())
        if name in FP8:
            # ULP: how many of the format's distinct finite values apart, by ml_dtypes' values
            every = np.arange(256, dtype=np.uint8).view(kind).astype(np.float64)
            ranks = np.unique(every[np.isfinite(every)])  # sorted; -0.0 and +0.0 are one
            dist = np.abs(np.searchsorted(ranks, va) - np.searchsorted(ranks, vb))
            assert got.max_ulp == int(dist[finite_pairs].max())
    else:
        assert got.max_abs_delta is None and got.max_ulp is None
    want = naive_scan(a.tobytes(), b.tobytes(), name)
    assert got.as_dict() == want


def test_naive_fp8_spec_is_the_formats_own() -> None:
    """The naive twin's specifications: no infinity in the E4M3 kinds and the
    FNUZ ones, the FNUZ NaN in the place of -0.0."""
    assert FP8_SPEC["f8_e4m3fn"]["inf"] == FP8_SPEC["f8_e4m3fnuz"]["inf"] == set()
    assert FP8_SPEC["f8_e5m2fnuz"]["nan"] == FP8_SPEC["f8_e4m3fnuz"]["nan"] == {0x80}
    assert fp8_value("f8_e4m3fn", 0x7E) == 448.0 and fp8_value("f8_e4m3fn", 0x78) == 256.0


# --------------------------------------------------------------------------
# Through the CLI
# --------------------------------------------------------------------------

SCHEMA = """\
name = "mixed"
default_dtype = "float32"

[[group]]
key = "g"
[group.members]
w_be = ">f4"
flags = "bool"
q = "float8_e4m3fn"
q2 = "F8_E5M2"
z = { dtype = "float8_e4m3fnuz", shape = [2, 2] }
h = "bfloat16"
n = "<i8"
"""


def test_cli_compares_the_new_types_by_numpy_names(tmp_path: Path) -> None:
    schema = tmp_path / "mixed.toml"
    schema.write_text(SCHEMA)
    two = np.float32(2.0)
    files = {
        "step_0_w_be.bin": (
            np.array([1.0, two, 3.0], ">f4").tobytes(),
            np.array([1.0, np.nextafter(two, np.float32(3)), 3.0], ">f4").tobytes(),
        ),
        "step_0_flags.bin": (bytes([0, 1, 1]), bytes([0, 0, 1])),
        # 1.0, NaN (S.1111.111), 256 (S.1111.000: a number) against 1.125, 448, 256
        "step_0_q.bin": (bytes([0x38, 0x7F, 0x78]), bytes([0x39, 0x7E, 0x78])),
        "step_0_q2.bin": (bytes([0x7C, 0x3C]), bytes([0x7B, 0x3C])),  # inf against 57344
        # 0x80, the one NaN, against +0.0: no signed zero in FNUZ
        "step_0_z.bin": (bytes([0, 0x80, 1, 2]), bytes([0, 0, 1, 2])),
        "step_0_h.bin": (struct.pack("<2H", 0x3F80, 0x4000), struct.pack("<2H", 0x3F81, 0x4000)),
        "step_0_n.bin": (struct.pack("<q", -5), struct.pack("<q", 2**40)),
        "step_0_other.bin": (struct.pack("<f", 1.5), struct.pack("<f", 1.5)),
    }
    a, b = write_runs(tmp_path, files)
    r = fastdiff("compare", a, b, "--schema", schema, "--format", "json")
    assert r.returncode == 1, r.stderr
    bufs = {x["name"]: x for x in json.loads(r.stdout)["buffers"]}
    assert {n: x["dtype"] for n, x in bufs.items()} == {
        "w_be": "f32be", "flags": "bool", "q": "f8_e4m3fn", "q2": "f8_e5m2", "z": "f8_e4m3fnuz",
        "h": "bf16", "n": "i64", "other": "f32",
    }  # fmt: skip
    w = bufs["w_be"]
    assert (w["a"], w["b"], w["a_bits"], w["b_bits"]) == (2.0, 2.000000238418579, "0x40000000",
                                                          "0x40000001")  # fmt: skip
    assert (w["max_ulp"], w["magnitude"], w["n_elements_a"]) == (1, "rounding", 3)
    f = bufs["flags"]
    assert (f["a"], f["b"], f["max_abs_delta"], f["max_ulp"], f["magnitude"]) == (
        1, 0, 1, None, "large",
    )  # fmt: skip
    q = bufs["q"]
    assert (q["n_diff"], q["n_nan_mismatch"], q["n_inf_mismatch"]) == (2, 1, 0)
    assert (q["a"], q["b"], q["max_abs_delta"], q["magnitude"]) == (1.0, 1.125, 0.125, "large")
    q2 = bufs["q2"]
    assert (q2["n_inf_mismatch"], q2["a"], q2["b"], q2["a_bits"]) == (1, "inf", 57344.0, "0x7c")
    z = bufs["z"]
    assert (z["n_nan_mismatch"], z["n_signed_zero"], z["a"], z["first_index_nd"]) == (
        1, 0, "nan", [0, 1],
    )  # fmt: skip
    h = bufs["h"]
    assert (h["a"], h["b"], h["max_ulp"], h["magnitude"]) == (1.0, 1.0078125, 1, "rounding")
    assert (bufs["n"]["max_abs_delta"], bufs["n"]["a"]) == (2**40 + 5, -5)
    assert bufs["other"]["status"] == "equal"


def test_cli_text_shows_the_new_types(tmp_path: Path) -> None:
    schema = tmp_path / "mixed.toml"
    schema.write_text(SCHEMA)
    a, b = write_runs(tmp_path, {"step_0_q.bin": (bytes([0x38, 0x7E]), bytes([0x38, 0x7D]))})
    r = fastdiff("compare", a, b, "--schema", schema, "-v")
    assert r.returncode == 1, r.stderr
    line = next(x for x in r.stdout.splitlines() if " q [" in x)
    assert "q [f8_e4m3fn]" in line and "A=448 B=416" in line and "1 ULP" in line


@pytest.mark.parametrize(
    "given, canonical", [("float32", "f32"), ("<f4", "f32"), ("int64", "i64"), ("bool", "bool"),
                         (">f8", "f64be"), ("bfloat16", "bf16")],
)  # fmt: skip
def test_cli_default_dtype_takes_numpy_names(tmp_path: Path, given: str, canonical: str) -> None:
    a, b = write_runs(tmp_path, {"step_0_x.bin": (bytes(8), bytes(7) + b"\x01")})
    r = fastdiff("compare", a, b, "--schema", "raw", "--default-dtype", given, "--format", "json")
    assert r.returncode == 1, r.stderr
    (buf,) = json.loads(r.stdout)["buffers"]
    assert buf["dtype"] == canonical


@pytest.mark.parametrize("given", ["f8", "float", "f33"])
def test_cli_default_dtype_refuses_in_one_line(tmp_path: Path, given: str) -> None:
    a, b = write_runs(tmp_path, {"step_0_x.bin": (bytes(8), bytes(8))})
    r = fastdiff("compare", a, b, "--default-dtype", given)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert "--default-dtype: " in r.stderr and repr(given) in r.stderr


def test_schema_command_prints_canonical_names(tmp_path: Path) -> None:
    schema = tmp_path / "mixed.toml"
    schema.write_text(SCHEMA)
    r = fastdiff("schema", schema)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert 'default_dtype = "f32"' in out
    for line in (
        '"w_be" = "f32be"',
        '"flags" = "bool"',
        '"q" = "f8_e4m3fn"',
        '"q2" = "f8_e5m2"',
        '"z" = { dtype = "f8_e4m3fnuz", shape = [2, 2] }',
        '"h" = "bf16"',
        '"n" = "i64"',
    ):
        assert line in out.splitlines()  # fmt: skip
    r = fastdiff("schema", "raw", "--default-dtype", "float8_e5m2fnuz")
    assert r.returncode == 0 and 'default_dtype = "f8_e5m2fnuz"' in r.stdout


def test_schema_file_with_a_bad_dtype_is_one_line(tmp_path: Path) -> None:
    schema = tmp_path / "bad.toml"
    schema.write_text(SCHEMA.replace('"float8_e4m3fn"', '"f8"'))
    r = fastdiff("schema", schema)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert "bad.toml:9:" in line and "ambiguous dtype 'f8'" in line and "f64" in line


def test_readme_element_types() -> None:
    """The docs' table names every dtype once, and its examples do what it says."""
    page = Path(__file__).resolve().parents[1] / "docs" / "reference" / "dtypes.md"
    text = page.read_text(encoding="utf-8")
    section = text[: text.index("\n## Every element type")]  # the generated table follows
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    names = [n for row in rows for n in row.split("`")[1].split()]
    assert sorted(names) == sorted(DTYPES) and len(names) == len(set(names))
    assert "fastdiff schema raw --default-dtype '>f8'    # default_dtype = \"f64be\"" in section
    r = fastdiff("schema", "raw", "--default-dtype", ">f8")
    assert r.returncode == 0 and 'default_dtype = "f64be"' in r.stdout.splitlines()
    assert "--default-dtype float32   # reported as f32" in section  # test_cli_default_dtype_...
