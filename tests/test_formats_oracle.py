"""fastdiff against an oracle that reads tensor files its own way.

Random run pairs (seeded) of every dtype fastdiff reads, in every layout it
reads: raw ``.bin`` dumps, ``.npy`` files (C and Fortran order, big-endian,
ml_dtypes' raw ``<V2``), ``step_<N>.npz`` archives (stored and compressed),
``step_<N>.safetensors`` files (written by the safetensors library, or by
hand with tensors in any order and headers of any length, so offsets are
odd), single container files given as RUN, and sharded checkpoint folders.
Run B is run A with mutations: bit flips near chunk boundaries and near
the 1 MiB pieces a compressed member is streamed in, NaN payloads, signed
zeros, a tensor removed or added, another dtype or shape, a raw dump
longer or shorter, and the same tensor at another offset (another file
layout in B).

The oracle never uses fastdiff: it reads the files back with ``np.load``,
``safetensors.deserialize`` (the library's own parser, which validates the
file) and ``np.fromfile``, and works out each buffer's status, element
counts, first differing index (flat and in the tensor's shape), count of
differing elements, NaN and infinity mismatches, largest |A-B| with its
index, largest ULP distance and signed zeros, and the run's verdict and
first divergent step. Each pair is compared with random options (chunk
sizes smaller than a tensor and not dividing it, every engine and
executor, the digest cache twice, memory-map windows shrunk so that
windows start inside tensors), through the library and, for some pairs,
the command line (``compare``, ``sweep``, ``hash`` and a compare of the
manifests).

``python tests/test_formats_oracle.py --pairs 2000`` runs a larger sweep by
hand and prints how many checks passed.
"""

from __future__ import annotations

import json
import math
import os
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ml_dtypes = pytest.importorskip("ml_dtypes")
safetensors = pytest.importorskip("safetensors")

sys.path.insert(0, str(Path(__file__).parent))
if __name__ == "__main__":  # run by hand: this checkout's fastdiff, not an installed one
    sys.path.insert(0, str(Path(__file__).parents[1]))
from helpers import fastdiff  # noqa: E402
from test_hashing import small_windows  # noqa: E402

# --- the dtypes ---------------------------------------------------------------------

_LITTLE: dict[str, Any] = {
    "u8": np.uint8,
    "i8": np.int8,
    "u16": np.uint16,
    "i16": np.int16,
    "u32": np.uint32,
    "i32": np.int32,
    "u64": np.uint64,
    "i64": np.int64,
    "f16": np.float16,
    "f32": np.float32,
    "f64": np.float64,
    "bool": np.bool_,
    "bf16": ml_dtypes.bfloat16,
    "f8_e5m2": ml_dtypes.float8_e5m2,
    "f8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "f8_e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "f8_e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
}
#: fastdiff's name -> numpy dtype, little- and big-endian.
NP: dict[str, np.dtype] = {k: np.dtype(v) for k, v in _LITTLE.items()}
NP.update({k + "be": np.dtype(v).newbyteorder(">") for k, v in _LITTLE.items()
           if np.dtype(v).itemsize > 1})  # fmt: skip
ALL = list(NP)
#: safetensors' names of the little-endian dtypes (the oracle's own table,
#: not fastdiff's).
ST = {
    "bool": "BOOL", "u8": "U8", "i8": "I8", "f8_e5m2": "F8_E5M2", "f8_e4m3fn": "F8_E4M3",
    "f8_e5m2fnuz": "F8_E5M2FNUZ", "f8_e4m3fnuz": "F8_E4M3FNUZ", "i16": "I16", "u16": "U16",
    "f16": "F16", "bf16": "BF16", "i32": "I32", "u32": "U32", "f32": "F32", "f64": "F64",
    "i64": "I64", "u64": "U64",
}  # fmt: skip
ST_NAME = {v: k for k, v in ST.items()}
#: The library's own spelling (TensorSpec).
ST_LIB = {
    "bool": "bool", "u8": "uint8", "i8": "int8", "f8_e5m2": "float8_e5m2",
    "f8_e4m3fn": "float8_e4m3fn", "f8_e5m2fnuz": "float8_e5m2fnuz",
    "f8_e4m3fnuz": "float8_e4m3fnuz", "i16": "int16", "u16": "uint16", "f16": "float16",
    "bf16": "bfloat16", "i32": "int32", "u32": "uint32", "f32": "float32", "f64": "float64",
    "i64": "int64", "u64": "uint64",
}  # fmt: skip


def base(name: str) -> str:
    return name[:-2] if name.endswith("be") else name


def is_float(name: str) -> bool:
    return base(name) in ("f16", "f32", "f64", "bf16") or base(name).startswith("f8_")


def header_name(dt: np.dtype) -> str | None:
    """The oracle's reading of an ``.npy`` header's dtype: fastdiff's name, or
    None for a void type (the schema names it)."""
    if dt.kind == "V":
        return None
    for name, want in NP.items():
        if want == dt and (dt.itemsize == 1 or want.byteorder == dt.byteorder
                           or (want.byteorder in "=<" and dt.byteorder in "=<")):  # fmt: skip
            return name
    raise AssertionError(f"no name for {dt!r}")


# --- what a run holds ---------------------------------------------------------------


class Buf:
    """One buffer as generated: dtype, shape, its bytes in C order."""

    def __init__(self, dtype: str, shape: tuple[int, ...], data: bytes) -> None:
        self.dtype = dtype
        self.shape = shape
        self.data = data

    def copy(self) -> Buf:
        return Buf(self.dtype, self.shape, self.data)

    @property
    def count(self) -> int:
        return len(self.data) // NP[self.dtype].itemsize


def random_values(rng: np.random.Generator, dtype: str, n: int) -> bytes:
    dt = NP[dtype]
    w = dt.itemsize
    if base(dtype) == "bool":
        return rng.integers(0, 2, n, dtype=np.uint8).tobytes()
    kind = rng.integers(0, 3)
    if kind == 0 or not is_float(dtype):  # random bits: NaNs, infinities, subnormals
        return rng.integers(0, 256, n * w, dtype=np.uint8).tobytes()
    vals = rng.standard_normal(n) * float(rng.choice([1e-3, 1.0, 100.0]))
    if kind == 2 and n:
        vals[rng.integers(0, n, max(1, n // 10))] = rng.choice([0.0, -0.0, np.inf, -np.inf])
    with np.errstate(all="ignore"):
        return vals.astype(NP[base(dtype)]).astype(dt).tobytes()


def random_shape(rng: np.random.Generator, big: int) -> tuple[int, ...]:
    r = rng.random()
    if r < 0.08:
        return ()
    if r < 0.14:
        return (0,) if rng.random() < 0.5 else (3, 0)
    if big and rng.random() < 0.15:
        n = int(rng.integers(big // 2, big))
        return (n,) if rng.random() < 0.5 else (n // 7, 7)
    if r < 0.5:
        return (int(rng.integers(1, 300)),)
    if r < 0.8:
        return (int(rng.integers(1, 40)), int(rng.integers(1, 40)))
    return tuple(int(d) for d in rng.integers(1, 9, int(rng.integers(3, 5))))


def set_element(buf: Buf, i: int, raw: bytes) -> None:
    w = NP[buf.dtype].itemsize
    buf.data = buf.data[: i * w] + raw + buf.data[(i + 1) * w :]


def element(buf: Buf, i: int) -> bytes:
    w = NP[buf.dtype].itemsize
    return buf.data[i * w : (i + 1) * w]


def _bits_int(dtype: str, raw: bytes) -> int:
    return int.from_bytes(raw, "big" if dtype.endswith("be") else "little")


def _int_bits(dtype: str, v: int) -> bytes:
    return v.to_bytes(NP[dtype].itemsize, "big" if dtype.endswith("be") else "little")


def _nan_patterns(dtype: str) -> list[int]:
    b = base(dtype)
    w = NP[dtype].itemsize
    if b in ("f8_e4m3fnuz", "f8_e5m2fnuz"):
        return [0x80]
    if b == "f8_e4m3fn":
        return [0x7F, 0xFF]
    if b == "f8_e5m2":
        return [0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF]
    exp_bits = {"f16": 5, "bf16": 8, "f32": 8, "f64": 11}[b]
    man_bits = w * 8 - 1 - exp_bits
    exp = ((1 << exp_bits) - 1) << man_bits
    return [exp | 1, exp | (1 << (man_bits - 1)), exp | ((1 << man_bits) - 1),
            (1 << (w * 8 - 1)) | exp | 3]  # fmt: skip


def mutate(rng: np.random.Generator, buf: Buf, cs: int, other: Buf) -> str:
    """Change ``buf`` (run B's) in place, ``other`` (run A's, same content)
    too for signed zeros; returns what was done."""
    n = buf.count
    w = NP[buf.dtype].itemsize
    if n == 0:
        return "nothing (empty)"
    per_chunk = max(1, cs // w)
    piece = (1 << 20) // w
    # The first and last elements, and those at the edges of chunks and of
    # the 1 MiB pieces a compressed member is streamed in.
    edges = [0, n - 1, per_chunk - 1, per_chunk, per_chunk * int(rng.integers(1, 4)),
             piece - 1, piece, piece + 1, 2 * piece]  # fmt: skip
    i = min(n - 1, max(0, int(rng.choice([*edges, int(rng.integers(0, n))]))))
    what = int(rng.integers(0, 4)) if is_float(buf.dtype) else 0
    if what == 1:  # a NaN of another payload, or a NaN where a number was
        old = _bits_int(buf.dtype, element(buf, i))
        pats = [p for p in _nan_patterns(buf.dtype) if p != old]
        if pats:
            set_element(buf, i, _int_bits(buf.dtype, int(rng.choice(pats))))
            return f"nan at {i}"
    if what == 2 and i < other.count and other.dtype == buf.dtype:  # -0.0 against +0.0
        sign = 1 << (w * 8 - 1)
        if base(buf.dtype) in ("f8_e4m3fnuz", "f8_e5m2fnuz"):
            sign = 0x80  # that is their NaN: a NaN against 0
        set_element(other, i, _int_bits(buf.dtype, 0))
        set_element(buf, i, _int_bits(buf.dtype, sign))
        return f"signed zero at {i}"
    if what == 3 and n > 1:  # many flips
        for j in rng.integers(0, n, int(rng.integers(2, min(n, 50) + 1))):
            flip_bit(rng, buf, int(j))
        return "many flips"
    flip_bit(rng, buf, i)
    return f"flip at {i}"


def flip_bit(rng: np.random.Generator, buf: Buf, i: int) -> None:
    w = NP[buf.dtype].itemsize
    if base(buf.dtype) == "bool":
        old = element(buf, i)[0]
        set_element(buf, i, bytes([1 - old if old in (0, 1) else 0]))
        return
    v = _bits_int(buf.dtype, element(buf, i)) ^ (1 << int(rng.integers(0, w * 8)))
    set_element(buf, i, _int_bits(buf.dtype, v))


# --- writing runs -------------------------------------------------------------------


def array(buf: Buf) -> np.ndarray:
    return np.frombuffer(buf.data, NP[buf.dtype]).reshape(buf.shape)


def write_npy(path: Path, buf: Buf, fortran: bool) -> None:
    a = array(buf)
    np.save(path, np.asfortranarray(a) if fortran else a, allow_pickle=False)


def write_npz(path: Path, bufs: dict[str, Buf], compressed: bool, fortran: set[str]) -> None:
    arrays = {n: (np.asfortranarray(array(b)) if n in fortran else array(b))
              for n, b in bufs.items()}  # fmt: skip
    (np.savez_compressed if compressed else np.savez)(path, **arrays)


def write_safetensors(rng: np.random.Generator, path: Path, bufs: dict[str, Buf]) -> None:
    """By the library, or by hand: tensors in a random order, a header of any
    length (odd data offsets), sometimes metadata."""
    if rng.random() < 0.4:
        keep = {n: np.frombuffer(b.data, np.uint8).copy() for n, b in bufs.items()}
        specs = {}
        for n, b in bufs.items():
            specs[n] = safetensors.TensorSpec(
                dtype=ST_LIB[b.dtype], shape=list(b.shape), data_ptr=keep[n].ctypes.data,
                data_len=len(b.data),
            )  # fmt: skip
        path.write_bytes(bytes(safetensors.serialize(specs)))
        return
    names = list(bufs)
    rng.shuffle(names)
    header: dict[str, Any] = {}
    if rng.random() < 0.3:
        header["__metadata__"] = {"format": "np", "x": "y" * int(rng.integers(0, 20))}
    pos = 0
    for n in names:
        b = bufs[n]
        header[n] = {"dtype": ST[b.dtype], "shape": list(b.shape),
                     "data_offsets": [pos, pos + len(b.data)]}  # fmt: skip
        pos += len(b.data)
    text = json.dumps(header) + " " * int(rng.integers(0, 9))
    raw = text.encode()
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + b"".join(bufs[n].data for n in names))


class Layout:
    """How one run writes one step: which buffers go in the step's container
    (and which container), which are ``.npy`` (Fortran order or not), which
    ``.bin``."""

    def __init__(self, rng: np.random.Generator, bufs: dict[str, Buf]) -> None:
        self.container = str(rng.choice(["none", "npz", "npzc", "safetensors"]))
        self.where: dict[str, str] = {}
        self.fortran: set[str] = set()
        for n, b in bufs.items():
            self.where[n] = self.place(rng, b)

    def place(self, rng: np.random.Generator, b: Buf) -> str:
        options = ["bin", "npy"]
        if self.container in ("npz", "npzc") or (self.container == "safetensors" and b.dtype in ST):
            options += ["container", "container"]
        return str(rng.choice(options))


def write_step(
    rng: np.random.Generator, run: Path, step: int, bufs: dict[str, Buf], lay: Layout
) -> None:
    inside: dict[str, Buf] = {}
    for n, b in bufs.items():
        where = lay.where.get(n) or lay.place(rng, b)
        if where == "container" and lay.container == "safetensors" and b.dtype not in ST:
            where = "npy"
        if where == "container":
            inside[n] = b
        elif where == "npy":
            fortran = len(b.shape) > 1 and rng.random() < 0.4
            write_npy(run / f"step_{step}_{n}.npy", b, fortran)
        else:
            (run / f"step_{step}_{n}.bin").write_bytes(b.data)
    if not inside:
        return
    if lay.container == "safetensors":
        write_safetensors(rng, run / f"step_{step}.safetensors", inside)
    else:
        compressed = lay.container == "npzc"
        fortran = set() if compressed else {n for n, b in inside.items()
                                            if len(b.shape) > 1 and rng.random() < 0.4}  # fmt: skip
        write_npz(run / f"step_{step}.npz", inside, compressed, fortran)


# --- the oracle: reading runs back --------------------------------------------------


class Entry:
    """A buffer as the oracle reads it back: the dtype and shape its file's
    header gives (None: none; a void ``.npy``, ml_dtypes' ``<V2``, gives its
    shape but no dtype: the schema decides), its bytes in C order."""

    def __init__(self, dtype: str | None, shape: tuple[int, ...] | None, data: bytes) -> None:
        self.dtype = dtype
        self.shape = shape
        self.data = data


def _from_array(a: np.ndarray) -> Entry:
    return Entry(header_name(a.dtype), tuple(a.shape), a.tobytes(order="C"))


def _safetensors_entries(raw: bytes) -> dict[str, Entry]:
    out = {}
    for name, info in safetensors.deserialize(raw):
        out[name] = Entry(ST_NAME[info["dtype"]], tuple(info["shape"]), bytes(info["data"]))
    return out


def _load_npy(raw: bytes) -> np.ndarray:
    """``np.load``, or for ml_dtypes' float8_e5m2 (saved as ``'<f1'``, which
    numpy cannot read back) the header read by ``ast.literal_eval``."""
    import ast
    import io

    try:
        return np.load(io.BytesIO(raw), allow_pickle=False)  # type: ignore[no-any-return]
    except ValueError:
        n = int.from_bytes(raw[8:10], "little")
        head = ast.literal_eval(raw[10 : 10 + n].decode("latin-1"))
        assert head["descr"] == "<f1", head
        order = "F" if head["fortran_order"] else "C"
        data = np.frombuffer(raw[10 + n :], ml_dtypes.float8_e5m2)
        return data.reshape(head["shape"], order=order)


def _npz_entries(path: Path) -> dict[str, Entry]:
    out = {}
    with zipfile.ZipFile(path) as z:
        assert z.testzip() is None
        for info in z.infolist():
            assert info.filename.endswith(".npy")
            out[info.filename[:-4]] = _from_array(_load_npy(z.read(info)))
    return out


def read_run(run: Path) -> dict[tuple[int, str], Entry]:
    """Every buffer of a run folder, a container file (step 0), or a checkpoint folder."""
    out: dict[tuple[int, str], Entry] = {}
    if run.is_file():
        raw = run.read_bytes()
        if raw[:2] == b"PK":
            return {(0, n): e for n, e in _npz_entries(run).items()}
        return {(0, n): e for n, e in _safetensors_entries(raw).items()}
    names = sorted(os.listdir(run))
    if any(n.endswith((".safetensors", ".index.json")) for n in names) and not any(
        n.startswith("step_") for n in names
    ):
        for n in names:
            if n.endswith(".safetensors"):
                for k, e in _safetensors_entries((run / n).read_bytes()).items():
                    assert (0, k) not in out
                    out[(0, k)] = e
        return out
    for n in names:
        stem, ext = os.path.splitext(n)
        rest = stem[len("step_") :]
        if "_" in rest:
            digits, name = rest.split("_", 1)
            step = int(digits)
            if ext == ".bin":
                out[(step, name)] = Entry(None, None, (run / n).read_bytes())
            else:
                out[(step, name)] = _from_array(_load_npy((run / n).read_bytes()))
            continue
        step = int(rest)
        if ext == ".npz":
            inside = _npz_entries(run / n)
        else:
            inside = _safetensors_entries((run / n).read_bytes())
        for k, e in inside.items():
            assert (step, k) not in out
            out[(step, k)] = e
    return out


def _ordered(dtype: str, bits: np.ndarray) -> list[int]:
    """Each float's place on the line of the type's values (-0.0 and +0.0 one)."""
    w = NP[dtype].itemsize
    sign = 1 << (w * 8 - 1)
    out = []
    for v in bits.tolist():
        mag = v & (sign - 1)
        out.append(-mag if v & sign else mag)
    return out


def expect_buffer(ea: Entry | None, eb: Entry | None, schema_dtype: str) -> dict[str, Any]:
    """What fastdiff must say of one buffer (the keys it must have, with values)."""
    if ea is None or eb is None:
        e = ea or eb
        assert e is not None
        dtype = e.dtype or schema_dtype
        n = len(e.data) // NP[dtype].itemsize
        if ea is None:
            return {"status": "only_in_b", "n_elements_b": n, "n_diff": None}
        return {"status": "only_in_a", "n_elements_a": n, "n_diff": None}
    headers = ea.dtype is not None and eb.dtype is not None
    differ = {"status": "diverged", "n_diff": None, "message~": "headers differ"}
    if headers and (ea.dtype != eb.dtype or ea.shape != eb.shape):
        return differ
    typed = ea if ea.dtype is not None else eb if eb.dtype is not None else None
    if typed is not None and not headers and typed.dtype != schema_dtype:
        return differ  # a file without a dtype is read as the schema's: never as the other's
    if typed is None and ea.shape is not None and eb.shape is not None and ea.shape != eb.shape:
        return differ  # two void .npy of other shapes
    dtype = ea.dtype or eb.dtype or schema_dtype
    # the typed side's shape, else a void .npy's: the header's, as for every .npy
    shape = (typed or (ea if ea.shape is not None else eb)).shape
    dt = NP[dtype]
    w = dt.itemsize
    for e in (ea, eb):
        if len(e.data) % w:
            return {"status": "malformed", "n_diff": None}
        if shape is not None and len(e.data) // w != math.prod(shape):
            return {"status": "malformed", "n_diff": None}
    na, nb = len(ea.data) // w, len(eb.data) // w
    n = min(na, nb)
    ua = np.frombuffer(ea.data, f"{dt.byteorder if dt.byteorder == '>' else '<'}u{w}", n)
    ub = np.frombuffer(eb.data, f"{dt.byteorder if dt.byteorder == '>' else '<'}u{w}", n)
    diff = ua != ub
    idx = np.flatnonzero(diff)
    out: dict[str, Any] = {"n_elements_a": na, "n_elements_b": nb, "n_diff": len(idx)}
    out["status"] = "length_mismatch" if na != nb else "diverged" if len(idx) else "equal"
    if not len(idx):
        return out
    first = int(idx[0])
    out["first_index"] = first
    if shape is not None and len(shape) > 1:
        out["first_index_nd"] = [int(i) for i in np.unravel_index(first, shape)]
    out["a_bits"] = f"0x{int(ua[first]):0{2 * w}x}"
    out["b_bits"] = f"0x{int(ub[first]):0{2 * w}x}"
    if is_float(dtype):
        with np.errstate(invalid="ignore"):
            fa = np.frombuffer(ea.data, dt, n).astype(np.float64)
            fb = np.frombuffer(eb.data, dt, n).astype(np.float64)
        fa, fb = fa[idx], fb[idx]
        nan = np.isnan(fa) | np.isnan(fb)
        inf = (np.isinf(fa) | np.isinf(fb)) & ~nan
        fin = ~nan & ~inf
        out["n_nan_mismatch"] = int(nan.sum())
        out["n_inf_mismatch"] = int(inf.sum())
        if fin.any():
            with np.errstate(over="ignore"):
                delta = np.abs(fa[fin] - fb[fin])
            k = int(np.argmax(delta))
            out["max_abs_delta"] = float(delta[k])
            out["max_abs_delta_index"] = int(idx[fin][k])
            oa = _ordered(dtype, ua[idx][fin])
            ob = _ordered(dtype, ub[idx][fin])
            dist = [abs(x - y) for x, y in zip(oa, ob, strict=True)]
            out["max_ulp"] = max(dist)
            out["n_signed_zero"] = sum(1 for d in dist if d == 0)
        else:
            out["max_abs_delta"] = None
            out["max_ulp"] = None
    else:
        ia = np.frombuffer(ea.data, dt, n)[idx].astype(object)
        ib = np.frombuffer(eb.data, dt, n)[idx].astype(object)
        if base(dtype) == "bool":
            ia = np.frombuffer(ea.data, np.uint8, n)[idx].astype(object)
            ib = np.frombuffer(eb.data, np.uint8, n)[idx].astype(object)
        delta = [abs(int(x) - int(y)) for x, y in zip(ia, ib, strict=True)]
        k = delta.index(max(delta))
        out["max_abs_delta"] = delta[k]
        out["max_abs_delta_index"] = int(idx[k])
        out["n_nan_mismatch"] = 0
        out["n_inf_mismatch"] = 0
    return out


def expect_runs(
    a: dict[tuple[int, str], Entry], b: dict[tuple[int, str], Entry], dtypes: dict[str, str]
) -> dict[str, Any]:
    buffers = {}
    for key in sorted(a.keys() | b.keys()):
        buffers[key] = expect_buffer(a.get(key), b.get(key), dtypes.get(key[1], "u8"))
    bad = [k[0] for k, e in buffers.items() if e["status"] != "equal"]
    if not a or not b:  # a run that holds no buffers is an error, not a divergence
        return {"verdict": "error", "first_divergent_step": None, "buffers": {}, "empty": True}
    malformed = any(e["status"] == "malformed" for e in buffers.values())
    return {
        "verdict": "error" if malformed else "diverged" if bad else "identical",
        "first_divergent_step": min(bad) if bad else None,
        "buffers": buffers,
    }


class Mismatch(AssertionError):
    pass


def _same(got: object, want: object) -> bool:
    if isinstance(want, float):
        if isinstance(got, str):
            return (got == "inf" and want == math.inf) or (got == "nan" and math.isnan(want))
        if not isinstance(got, float | int):
            return False
        return got == want or (math.isnan(want) and math.isnan(got))
    return (got == want and type(got) is type(want)) or (got is None and want is None)


def check_report(doc: dict[str, Any], want: dict[str, Any], manifests: bool = False) -> int:
    """Compare a JSON report with the oracle; returns how many facts were checked."""
    checks = 0
    problems = []
    for key in ("verdict", "first_divergent_step"):
        checks += 1
        if doc[key] != want[key]:
            problems.append(f"{key}: {doc[key]!r}, oracle {want[key]!r}")
    if want.get("empty"):  # an error names the run that holds nothing
        if not doc["errors"]:
            problems.append("no error for a run that holds no buffers")
        if problems:
            raise Mismatch("; ".join(problems))
        return checks
    got = {(d["step"], d["name"]): d for d in doc["buffers"]}
    checks += 1
    if got.keys() != want["buffers"].keys():
        problems.append(f"buffers: {sorted(got)} != {sorted(want['buffers'])}")
    for key, w in want["buffers"].items():
        d = got.get(key)
        if d is None:
            continue
        for field, value in w.items():
            if manifests and field not in ("status", "message~"):
                continue  # digests hold no values
            checks += 1
            if field.endswith("~"):
                if value not in (d.get(field[:-1]) or ""):
                    problems.append(f"{key} {field[:-1]}: {d.get(field[:-1])!r}")
            elif not _same(d.get(field), value):
                problems.append(f"{key} {field}: {d.get(field)!r}, oracle {value!r}")
    if doc["errors"] and not any(w["status"] == "malformed" for w in want["buffers"].values()):
        problems.append(f"errors: {doc['errors']}")
    if problems:
        raise Mismatch("; ".join(problems[:8]))
    return checks


# --- a random pair ------------------------------------------------------------------

NAMES = ["w", "b", "layer.0.weight", "layer.1.bias", "opt.m", "opt.v", "emb", "x_y", "s", "t"]


class Case:
    """A generated pair: the runs, the schema (or None), what was done."""

    def __init__(self, a: Path, b: Path, schema: Path | None, dtypes: dict[str, str],
                 cs: int, story: list[str]) -> None:  # fmt: skip
        self.a = a
        self.b = b
        self.schema = schema
        self.dtypes = dtypes
        self.cs = cs
        self.story = story


CHUNK_SIZES = [8, 16, 24, 40, 264, 1000, 4104, 65536, 1 << 20, 4 << 20]


def make_case(rng: np.random.Generator, root: Path, big: int = 0) -> Case:
    """A random run pair under ``root``; ``big``: the most elements a large tensor has."""
    cs = int(rng.choice(CHUNK_SIZES))
    mode = str(rng.choice(["folder"] * 6 + ["file_st", "file_npz", "checkpoint"]))
    story = [f"mode={mode} cs={cs}"]
    n_steps = int(rng.integers(1, 4)) if mode == "folder" else 1
    names = list(rng.choice(NAMES, int(rng.integers(1, 6)), replace=False))
    allowed = ALL
    if mode in ("file_st", "checkpoint"):
        allowed = list(ST)
    dtypes = {str(n): str(rng.choice(allowed)) for n in names}
    if mode == "file_npz":
        dtypes = {n: d for n, d in dtypes.items()}
    steps_a: dict[int, dict[str, Buf]] = {}
    for s in range(n_steps):
        steps_a[s] = {}
        for n in names:
            shape = random_shape(rng, big)
            count = math.prod(shape)
            steps_a[s][n] = Buf(dtypes[n], shape, random_values(rng, dtypes[n], count))
    steps_b = {s: {n: b.copy() for n, b in bufs.items()} for s, bufs in steps_a.items()}
    # Mutations of run B.
    if rng.random() < 0.75:
        for _ in range(int(rng.integers(1, 4))):
            s = int(rng.integers(0, n_steps))
            if not steps_b[s]:
                continue
            n = str(rng.choice(sorted(steps_b[s])))
            r = rng.random()
            if r < 0.6:
                other = steps_a[s].get(n) or steps_b[s][n].copy()
                what = mutate(rng, steps_b[s][n], cs, other)
            elif r < 0.68:
                del steps_b[s][n]
                what = "removed"
            elif r < 0.74:
                extra = str(rng.choice([x for x in ["new1", "new2"] if x not in steps_b[s]]))
                dtypes.setdefault(extra, str(rng.choice(allowed)))
                shape = random_shape(rng, 0)
                data = random_values(rng, dtypes[extra], math.prod(shape))
                steps_b[s][extra] = Buf(dtypes[extra], shape, data)
                n, what = extra, "added"
            elif r < 0.8:
                b = steps_b[s][n]
                w = NP[b.dtype].itemsize
                same = [d for d in allowed if NP[d].itemsize == w and d != b.dtype]
                if same:
                    b.dtype = str(rng.choice(same))
                    what = f"dtype {b.dtype}"
                else:
                    what = "nothing"
            elif r < 0.88:
                b = steps_b[s][n]
                b.shape = (b.count,) if len(b.shape) != 1 else (1, b.count)
                what = f"shape {b.shape}"
            else:
                b = steps_b[s][n]
                k = int(rng.integers(1, 5))
                w = NP[b.dtype].itemsize
                if rng.random() < 0.5:
                    b.data = b.data + random_values(rng, b.dtype, k)
                else:
                    b.data = b.data[: max(0, len(b.data) - k * w)]
                b.shape = (b.count,)
                what = "length"
            story.append(f"B step {s} {n}: {what}")
    a, b = root / "a", root / "b"
    if mode == "folder":
        a.mkdir()
        b.mkdir()
        layouts: dict[int, Layout] = {}
        for s, bufs in steps_a.items():
            layouts[s] = Layout(rng, bufs)
            write_step(rng, a, s, bufs, layouts[s])
        for s, bufs in steps_b.items():  # often as in A, else as B likes
            lay = layouts[s] if rng.random() < 0.6 else Layout(rng, bufs)
            write_step(rng, b, s, bufs, lay)
    elif mode == "file_st":
        a, b = root / "a.safetensors", root / "b.safetensors"
        write_safetensors(rng, a, steps_a[0])
        write_safetensors(rng, b, steps_b[0])
    elif mode == "file_npz":
        a, b = root / "a.npz", root / "b.npz"
        for path, bufs in ((a, steps_a[0]), (b, steps_b[0])):
            compressed = rng.random() < 0.5
            fortran = set() if compressed else {n for n, x in bufs.items() if len(x.shape) > 1}
            write_npz(path, bufs, compressed, fortran)
    else:
        for run, bufs in ((a, steps_a[0]), (b, steps_b[0])):
            run.mkdir()
            write_checkpoint(rng, run, bufs)
    schema = None
    raw_names = set()
    for run in (a, b):
        for (_, name), e in read_run(run).items():
            if e.dtype is None:
                raw_names.add(name)
    if raw_names or rng.random() < 0.3:
        schema = root / "schema.toml"
        lines = ['name = "oracle"', 'default_dtype = "u8"', "[[group]]", 'key = "g"',
                 'title = "g"', 'hint = "h."', "[group.members]"]  # fmt: skip
        lines += [f'"{n}" = "{dtypes[n]}"' for n in sorted(dtypes)]
        schema.write_text("\n".join(lines) + "\n")
    return Case(a, b, schema, dtypes, cs, story)


def write_checkpoint(rng: np.random.Generator, run: Path, bufs: dict[str, Buf]) -> None:
    names = list(bufs)
    n_shards = int(rng.integers(1, 4)) if len(names) > 1 else 1
    if n_shards == 1 and rng.random() < 0.5:
        write_safetensors(rng, run / "model.safetensors", bufs)
        return
    shards: dict[str, dict[str, Buf]] = {}
    for i, n in enumerate(names):
        k = i % n_shards
        shard = f"model-{k + 1:05d}-of-{n_shards:05d}.safetensors"
        shards.setdefault(shard, {})[n] = bufs[n]
    weight_map = {}
    for shard, inside in shards.items():
        write_safetensors(rng, run / shard, inside)
        weight_map.update(dict.fromkeys(inside, shard))
    index = {"metadata": {"total_size": sum(len(b.data) for b in bufs.values())},
             "weight_map": weight_map}  # fmt: skip
    (run / "model.safetensors.index.json").write_text(json.dumps(index))


# --- running fastdiff ---------------------------------------------------------------


def library_report(
    case: Case, rng: np.random.Generator, cache_dir: Path | None
) -> list[dict[str, Any]]:
    """Reports through the library, with random options (twice with the cache)."""
    from fastdiff import CompareOptions, compare_runs, report_dict
    from fastdiff.engine.cache import DigestCache

    engine = str(rng.choice(["auto", "numpy", "numba", "python"]))
    executor = str(rng.choice(["serial", "thread", "thread", "process", "auto"]))
    opts = CompareOptions(schema=case.schema, chunk_size=case.cs, engine=engine,
                          executor=executor, jobs=int(rng.integers(1, 4)))  # fmt: skip
    case.story.append(f"engine={engine} executor={executor}")
    docs = []
    window = int(rng.choice([4096, 8192, 65536, 16 << 20]))
    with small_windows(window, int(rng.choice([0, 4096, 256 << 10]))):
        if cache_dir is not None and rng.random() < 0.3:
            for _ in range(2):
                cache = DigestCache(cache_dir, min_age_s=0)
                try:
                    docs.append(report_dict(compare_runs(case.a, case.b, opts, cache=cache)))
                finally:
                    cache.close()
        else:
            docs.append(report_dict(compare_runs(case.a, case.b, opts)))
    return docs


def cli_reports(
    case: Case, rng: np.random.Generator, root: Path, want: dict[str, Any]
) -> list[tuple[dict[str, Any], bool]]:
    """Reports through the command line: compare, a sweep row, manifests."""
    schema = ["--schema", str(case.schema)] if case.schema else []
    cs = ["--chunk-size", str(case.cs)]
    out = []
    r = fastdiff("compare", case.a, case.b, "--format", "json", *schema, *cs,
                 "--engine", str(rng.choice(["auto", "numpy", "numba", "python"])),
                 "--executor", str(rng.choice(["serial", "thread", "process"])))  # fmt: skip
    assert "Traceback" not in r.stderr, r.stderr
    doc = json.loads(r.stdout)
    assert r.returncode == {"identical": 0, "diverged": 1}.get(doc["verdict"], 2), r.stderr
    out.append((doc, False))
    cache = ["--cache", "--cache-dir", str(root / "cli-cache"), "--cache-min-age", "0"]
    for _ in range(2):  # the second from the cache
        r = fastdiff("compare", case.a, case.b, "--format", "json", *schema, *cs, *cache)
        assert "Traceback" not in r.stderr, r.stderr
        out.append((json.loads(r.stdout), False))
    ma, mb = root / "a.manifest.json", root / "b.manifest.json"
    for run, m in ((case.a, ma), (case.b, mb)):
        h = fastdiff("hash", run, "-o", m, *schema, *cs)
        if want.get("empty") and h.returncode == 2 and "Traceback" not in h.stderr:
            return out  # a run of no buffers has no manifest
        assert h.returncode == 0, h.stderr
    for x, y in ((ma, mb), (case.a, mb), (ma, case.b)):
        r = fastdiff("compare", x, y, "--format", "json", *schema)
        assert "Traceback" not in r.stderr, r.stderr
        out.append((json.loads(r.stdout), True))
    s = fastdiff("sweep", "--baseline", case.a, case.b, "--format", "jsonl", *schema, *cs)
    assert "Traceback" not in s.stderr, s.stderr
    rows = [json.loads(line) for line in s.stdout.splitlines()]
    out.append(({"sweep": rows}, False))
    return out


def check_sweep(rows: list[dict[str, Any]], want: dict[str, Any]) -> int:
    (row,) = [r for r in rows if "verdict" in r and "run_b" in r]
    assert row["verdict"] == want["verdict"], (row, want["verdict"])
    assert row["first_divergent_step"] == want["first_divergent_step"], row
    return 2


def run_case(seed: int, root: Path, cli: bool, big: int = 0) -> int:
    """Generate, compare and check one pair; returns the checks passed."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    case = make_case(rng, root, big)
    want = expect_runs(read_run(case.a), read_run(case.b), case.dtypes)
    checks = 0
    try:
        for doc in library_report(case, rng, root / "cache"):
            checks += check_report(doc, want)
        if cli:
            for doc, manifests in cli_reports(case, rng, root, want):
                if "sweep" in doc:
                    checks += check_sweep(doc["sweep"], want)
                else:
                    checks += check_report(doc, want, manifests)
    except AssertionError as exc:
        raise AssertionError(f"seed {seed}: {' | '.join(case.story)}: {exc}") from None
    return checks


# --- the tests ----------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(40))
def test_random_pairs_agree_with_the_oracle(tmp_path: Path, seed: int) -> None:
    run_case(seed, tmp_path, cli=False)


@pytest.mark.parametrize("seed", range(1000, 1004))
def test_random_pairs_through_the_command_line(tmp_path: Path, seed: int) -> None:
    run_case(seed, tmp_path, cli=True)


@pytest.mark.parametrize("seed", range(6))
def test_decoders_read_any_range_in_any_order(tmp_path: Path, seed: int) -> None:
    # The deflate reader restarts its stream to go back and skips forward;
    # the strided reader gathers a Fortran-order array in C order: any
    # range, read in any order, is the bytes np.load gives.
    from fastdiff.sources import open_run
    from fastdiff.sources.access import open_buffer

    rng = np.random.default_rng(seed)
    w = int(rng.choice([1, 2, 4, 8]))
    shape = (int(rng.integers(200, 700)), int(rng.integers(300, 900)))
    x = np.frombuffer(rng.integers(0, 4, math.prod(shape) * w, dtype=np.uint8).tobytes(),
                      f"<u{w}").reshape(shape)  # fmt: skip
    run = tmp_path / "run"
    run.mkdir()
    np.savez_compressed(run / "step_0.npz", c=x)
    np.savez(run / "step_1.npz", f=np.asfortranarray(x))
    np.save(run / "step_2_f.npy", np.asfortranarray(x))
    want = x.tobytes()
    refs = open_run(run).listing.buffers
    assert {(f.step, f.name) for f in refs} == {(0, "c"), (1, "f"), (2, "f")}
    for f in refs:
        assert f.codec is not None and f.size == len(want)
        with open_buffer(f) as reader:
            for _ in range(12):
                start = int(rng.integers(0, x.size)) * w
                n = int(rng.integers(0, min(x.size * w - start, 3 << 20) // w + 1)) * w
                got = reader.read_into(memoryview(bytearray(n)), start)
                assert bytes(got) == want[start : start + n], (f, start, n)
                k = int(rng.integers(0, x.size))
                assert reader.read_at(k * w, w) == want[k * w : (k + 1) * w]


def test_a_late_difference_in_a_compressed_member_is_decompressed_once_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Scanning goes over the differing ranges twice (narrowing, then the
    # kernel) and reads the first differing element back: each went back
    # to the start of the stream, so a late difference cost three more
    # passes over the whole member. A pair that differs should cost what
    # the identical pair costs plus the differing chunks.
    from fastdiff import CompareOptions, compare_runs
    from fastdiff.sources import access

    x = np.arange(4 << 20, dtype=np.float32) % 1000  # 16 MiB, compressible
    y = x.copy()
    y[-10] += 1
    np.savez_compressed(tmp_path / "a.npz", w=x)
    np.savez_compressed(tmp_path / "b.npz", w=y)
    fed: list[int] = []
    read = access._Inflater._read_stored

    def counted(self: Any) -> bytes:
        data = read(self)
        fed.append(len(data))
        return data

    monkeypatch.setattr(access._Inflater, "_read_stored", counted)
    opts = CompareOptions(executor="serial")  # narrowed, then scanned
    report = compare_runs(tmp_path / "a.npz", tmp_path / "b.npz", opts)
    (buf,) = report.buffers
    assert buf.status == "diverged" and buf.first_index == x.size - 10
    stored = sum(os.path.getsize(tmp_path / n) for n in ("a.npz", "b.npz"))
    # Hashing reads both streams whole, the scan reaches the differing chunk
    # once more: about twice the stored bytes, not four times.
    assert sum(fed) < 2.5 * stored, (sum(fed), stored)


# --- bugs found by the oracle, each pinned by a test ------------------------------------


@pytest.mark.parametrize("side", ["a", "b"])
def test_an_npz_of_no_arrays_is_an_empty_run(tmp_path: Path, side: str) -> None:
    # np.savez() of nothing is a zip of no members: it was sniffed as a
    # torch.save archive (a traceback while that reader was missing), and
    # its error spoke of .bin dumps and folders.
    full, empty = tmp_path / "full.npz", tmp_path / "empty.npz"
    np.savez(full, w=np.arange(3.0))
    np.savez(empty)
    runs = (empty, full) if side == "a" else (full, empty)
    r = fastdiff("compare", *runs, "--format", "json")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "error" and doc["buffers"] == []
    (error,) = doc["errors"]
    assert error["path"] == str(empty)
    assert (
        error["message"]
        == f"run {side.upper()} holds no tensors; nothing can be compared against it"
    )
    h = fastdiff("hash", empty, "-o", tmp_path / "m.json")
    assert h.returncode == 2 and "Traceback" not in h.stderr
    assert f"{empty}: the run holds no tensors" in h.stderr


def test_tensor_keys_of_any_text_group_hash_and_compare(tmp_path: Path) -> None:
    # safetensors allows any key, the empty one too. A key with no first
    # dotted part ("", ".x") made the by-name schema a group of an empty key,
    # and hash wrote a manifest it then refused (as it refused an empty name).
    from safetensors.numpy import save_file

    runs = []
    for name, v in (("a", 1.0), ("b", 2.0)):
        tensors = {"": np.ones(3, np.float32) * v, ".x": np.zeros(2, np.float32),
                   "a/b": np.zeros(2, np.float32), "x\ny": np.zeros(1, np.int8)}  # fmt: skip
        save_file(tensors, tmp_path / f"{name}.safetensors")
        runs.append(tmp_path / f"{name}.safetensors")
    manifests = [tmp_path / "a.json", tmp_path / "b.json"]
    for run, m in zip(runs, manifests, strict=True):
        h = fastdiff("hash", run, "-o", m)
        assert h.returncode == 0, h.stderr
    want = {"": "diverged", ".x": "equal", "a/b": "equal", "x\ny": "equal"}
    for pair in (runs, manifests, (manifests[0], runs[1])):
        r = fastdiff("compare", *pair, "--format", "json")
        assert r.returncode == 1, r.stdout + r.stderr
        doc = json.loads(r.stdout)
        assert {d["name"]: d["status"] for d in doc["buffers"]} == want
        assert doc["errors"] == [] and doc["first_divergent_step"] == 0


def main() -> None:
    import argparse
    import shutil
    import tempfile

    p = argparse.ArgumentParser()
    p.add_argument("--pairs", type=int, default=500)
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--cli-every", type=int, default=25)
    p.add_argument("--big", type=int, default=300_000)
    args = p.parse_args()
    checks = failures = 0
    for seed in range(args.start, args.start + args.pairs):
        root = Path(tempfile.mkdtemp(prefix="oracle-"))
        try:
            checks += run_case(seed, root, cli=seed % args.cli_every == 0,
                               big=args.big if seed % 5 == 0 else 0)  # fmt: skip
        except AssertionError as exc:
            failures += 1
            print("FAIL", exc, flush=True)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    print(f"{args.pairs} pairs, {checks} checks passed, {failures} pairs failed")


if __name__ == "__main__":
    main()
