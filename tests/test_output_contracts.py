"""What every report promises about its own shape, whatever the input.

- Names are escaped one way everywhere (``textkit.escape.display_path``): a file
  name holding bytes that are not UTF-8, a newline, an escape sequence or a
  Unicode line separator can never pass for a line of a text report, and
  stdout stays valid UTF-8. The JSON holds valid UTF-8 only, with the exact
  bytes in ``*_bytes_hex`` where a name or path is not UTF-8.
- The JSON report is a function of the inputs alone: the same runs give
  byte-identical JSON (``work`` aside) for any chunk size, jobs, executor
  and engine, and element counts are 0 (never null) wherever elements were
  compared.
"""

from __future__ import annotations

import json
import os
import random
import re
import struct
import subprocess
import tempfile
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import fastdiff, write_runs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastdiff import CompareOptions, compare_runs, render_json
from fastdiff.dtypes import DTYPES
from fastdiff.kernels import Tolerance
from fastdiff.model.results import COUNT_FIELDS
from fastdiff.render.text import render_text
from fastdiff.schema import Group, Member, Schema
from fastdiff.textkit.escape import display_path

REPO = Path(__file__).resolve().parent.parent


def cli(*args: str | Path) -> subprocess.CompletedProcess[bytes]:
    """The CLI with a strict UTF-8 stdout: a lone surrogate written to it is a crash."""
    return fastdiff(*args, env={"PYTHONIOENCODING": "utf-8:strict"}, text=False)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"not strict JSON: {name}")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def strict_json(raw: bytes) -> Any:
    """RFC 8259 JSON in strict UTF-8, with no lone surrogate in any string
    (``json.loads`` alone accepts ``"\\udcff"``, which strict parsers reject)."""
    doc = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    for s in _strings(doc):
        s.encode("utf-8")  # raises on a lone surrogate
    return doc


def one_line_each(text: str) -> list[str]:
    """The lines of a report; no character in it but '\\n' may break or hide a line."""
    for c in text:
        assert c == "\n" or c.isprintable() or unicodedata.category(c) == "Zs", repr(c)
    assert text.endswith("\n")
    lines = text[:-1].split("\n")
    assert lines == text.splitlines()  # no \x1c-\x1e, \x85, \u2028, \u2029 either
    return lines


# --- one escaping, everywhere ------------------------------------------------------------


def unescape(shown: str) -> str:
    """The inverse of display_path (so its escaping is unambiguous)."""
    out: list[str] = []
    i = 0
    while i < len(shown):
        c = shown[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        kind = shown[i + 1]
        if kind in "\\nrt":
            out.append({"\\": "\\", "n": "\n", "r": "\r", "t": "\t"}[kind])
            i += 2
            continue
        width = {"x": 2, "u": 4, "U": 8}[kind]
        cp = int(shown[i + 2 : i + 2 + width], 16)
        if kind == "x" and cp >= 0x80:
            cp += 0xDC00  # an undecodable byte, as os.fsdecode holds it
        out.append(chr(cp))
        i += 2 + width
    return "".join(out)


names = st.one_of(
    st.text(),
    st.binary().map(os.fsdecode),  # as the OS hands out names that are not UTF-8
    st.text(st.sampled_from("a\\x\n\r\t\x1b\x7f\x85\u2028\u2029\u202e\u200bé😀ff")),
)


@settings(max_examples=500, deadline=None)
@given(names)
def test_display_path_is_one_printable_line_and_reversible(name: str) -> None:
    shown = display_path(name)
    assert all(c.isprintable() or unicodedata.category(c) == "Zs" for c in shown)
    assert len(shown.splitlines()) <= 1
    assert unescape(shown) == name
    if name.isprintable() and "\\" not in name:
        assert shown == name  # plain names are shown as they are


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("rewards", "rewards"),
        ("état", "état"),
        (os.fsdecode(b"x\xff\xfe"), "x\\xff\\xfe"),
        ("x\nVERDICT: identical", "x\\nVERDICT: identical"),
        ("a\\xff", "a\\\\xff"),  # a real backslash is doubled: never read as a byte
        ("tab\there\r", "tab\\there\\r"),
        ("\x1b[2K\x7f", "\\x1b[2K\\x7f"),
        ("nel\x85ls\u2028ps\u2029", "nel\\u0085ls\\u2028ps\\u2029"),
        ("bidi\u202eoff", "bidi\\u202eoff"),
    ],
)
def test_display_path_escapes(name: str, shown: str) -> None:
    assert display_path(name) == shown


NOT_UTF8 = os.fsdecode(b"x\xff\xfe")
INJECTED = "x\nVERDICT: identical"
HIDDEN = "esc\x1b[2K\u2028\u0085z"
BACKSLASH = "back\\xff"  # valid UTF-8: a literal backslash, x, f, f


@pytest.fixture
def odd_runs(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "A", tmp_path / "B"
    for run, last in ((a, 1), (b, 2)):
        run.mkdir()
        for name in ("ok", NOT_UTF8, INJECTED, HIDDEN, BACKSLASH):
            payload = bytes(7) + bytes([last if name in (INJECTED, HIDDEN) else 0])
            (run / f"step_0_{name}.bin").write_bytes(payload)
    (a / "notes\nVERDICT: identical").write_bytes(b"")
    return a, b


def test_text_report_escapes_every_name(odd_runs: tuple[Path, Path]) -> None:
    a, b = odd_runs
    r = cli("compare", a, b, "--schema", "raw")
    assert r.returncode == 2, r.stderr
    lines = one_line_each(r.stdout.decode("utf-8"))  # strict: no raw \xff\xfe
    (verdict,) = [line for line in lines if line.startswith("VERDICT")]
    assert verdict.startswith("VERDICT: error, and diverged: first divergent step 0")
    text = "\n".join(lines)
    assert "other  x\\nVERDICT: identical [u8]  DIVERGED" in text
    assert "other  esc\\x1b[2K\\u2028\\u0085z [u8]  DIVERGED" in text
    assert "other  x\\xff\\xfe [u8]  ERROR: file name is not valid UTF-8" in text
    assert (
        "other  back\\\\xff [u8]  equal"
        in cli("compare", a, b, "--schema", "raw", "-v").stdout.decode()
    )
    assert f"  {display_path(str(a))}/notes\\nVERDICT: identical: not a dump" in text
    # the error lines (stdout and stderr) escape the same way
    for run in (a, b):
        assert f"  {run}/step_0_x\\xff\\xfe.bin: file name is not valid UTF-8" in text
    errors = one_line_each(r.stderr.decode("utf-8"))
    assert errors == [
        f"fastdiff: error: {run}/step_0_x\\xff\\xfe.bin: file name is not valid UTF-8; "
        "rename it to compare it"
        for run in (a, b)
    ]


def test_json_report_is_valid_utf8_with_the_raw_bytes(odd_runs: tuple[Path, Path]) -> None:
    a, b = odd_runs
    r = cli("compare", a, b, "--schema", "raw", "--format", "json")
    assert r.returncode == 2, r.stderr
    doc = strict_json(r.stdout)
    buffers = {x["name"]: x for x in doc["buffers"]}
    assert set(buffers) == {"ok", "x\\xff\\xfe", INJECTED, HIDDEN, BACKSLASH}

    odd = buffers["x\\xff\\xfe"]
    assert odd["status"] == "error"
    assert bytes.fromhex(odd["name_bytes_hex"]) == b"x\xff\xfe"
    for side, run in (("a", a), ("b", b)):
        raw = os.fsencode(run / NOT_UTF8.join(("step_0_", ".bin")))
        assert odd[f"path_{side}"] == display_path(os.fsdecode(raw))  # never null
        assert bytes.fromhex(odd[f"path_{side}_bytes_hex"]) == raw

    # Valid UTF-8 is written exactly (JSON escapes the controls), with no bytes field.
    for name in (INJECTED, HIDDEN, BACKSLASH, "ok"):
        x = buffers[name]
        assert x["path_a"] == str(a / f"step_0_{name}.bin")
        assert not [k for k in x if k.endswith("_bytes_hex")]
    assert [g["diverged"] for g in doc["groups"]] == [sorted([HIDDEN, INJECTED])]

    errors = doc["errors"]
    assert [bytes.fromhex(e["path_bytes_hex"]) for e in errors] == [
        os.fsencode(run / NOT_UTF8.join(("step_0_", ".bin"))) for run in (a, b)
    ]
    assert [e["path"] for e in errors] == [f"{run}/step_0_x\\xff\\xfe.bin" for run in (a, b)]
    assert doc["skipped"] == [
        {"path": str(a / "notes\nVERDICT: identical"), "reason": doc["skipped"][0]["reason"]}
    ]


def test_run_folders_with_odd_names(tmp_path: Path) -> None:
    """Run paths, in the text header, JSON and sweep rows, follow the same rule."""
    a = tmp_path / os.fsdecode(b"run\xff\nVERDICT: identical")
    b = tmp_path / "run-b"
    for run, value in ((a, 1.0), (b, 2.0)):
        run.mkdir()
        (run / "step_0_x.bin").write_bytes(struct.pack("<f", value))
    shown = display_path(str(a))
    assert shown.endswith("run\\xff\\nVERDICT: identical")

    text = cli("compare", a, b, "--schema", "raw")
    assert text.returncode == 1, text.stderr
    lines = one_line_each(text.stdout.decode("utf-8"))
    assert lines[0] == f"A: {shown}"

    doc = strict_json(cli("compare", a, b, "--schema", "raw", "--format", "json").stdout)
    assert doc["run_a"] == shown
    assert bytes.fromhex(doc["run_a_bytes_hex"]) == os.fsencode(a)
    assert "run_b_bytes_hex" not in doc
    (buf,) = doc["buffers"]
    assert bytes.fromhex(buf["path_a_bytes_hex"]) == os.fsencode(a / "step_0_x.bin")

    rows = cli("sweep", "--baseline", a, b, "--schema", "raw", "--no-cache", "--format", "text")
    assert rows.returncode == 1, rows.stderr
    lines = one_line_each(rows.stdout.decode("utf-8"))
    assert lines[0] == f"{shown}  {b}  diverged at step 0 [other]"

    jsonl = cli("sweep", "--baseline", a, b, "--schema", "raw", "--no-cache")
    record = strict_json(jsonl.stdout.splitlines()[0])
    assert bytes.fromhex(record["run_a_bytes_hex"]) == os.fsencode(a)


def test_stats_and_hash_escape_names(odd_runs: tuple[Path, Path], tmp_path: Path) -> None:
    a, _ = odd_runs
    text = cli("stats", a, "--schema", "raw")
    assert text.returncode == 2
    lines = one_line_each(text.stdout.decode("utf-8"))
    assert f"  {a}/notes\\nVERDICT: identical: not a dump: name is not step_<N>_<name>.bin" in lines
    assert (
        f"  {a}/step_0_x\\xff\\xfe.bin: file name is not valid UTF-8; rename it to compare it"
        in lines
    )
    doc = strict_json(cli("stats", a, "--schema", "raw", "--format", "json").stdout)
    assert bytes.fromhex(doc["errors"][0]["path_bytes_hex"]) == os.fsencode(
        a / NOT_UTF8.join(("step_0_", ".bin"))
    )
    h = cli("hash", a, "--schema", "raw", "-o", tmp_path / "m.json")
    assert h.returncode == 2
    assert one_line_each(h.stderr.decode("utf-8"))[0] == (
        f"fastdiff: error: {a}/step_0_x\\xff\\xfe.bin: file name is not valid UTF-8; "
        "rename it to compare it"
    )


def test_a_run_folder_with_odd_bytes_gives_strict_json_in_stats_and_manifests(
    tmp_path: Path,
) -> None:
    """stats JSON and a manifest are JSON we write too: valid UTF-8 only, the
    raw bytes beside a name that is not; an error naming such a folder is one
    printable line."""
    run = tmp_path / os.fsdecode(b"run\xff\nVERDICT: identical")
    run.mkdir()
    (run / "step_0_x.bin").write_bytes(bytes(8))
    (run / os.fsdecode(b"notes\xfe.txt")).write_text("hello")
    shown = display_path(str(run))

    doc = strict_json(cli("stats", run, "--format", "json").stdout)
    assert doc["run"] == shown
    assert bytes.fromhex(doc["run_bytes_hex"]) == os.fsencode(run)

    out = tmp_path / "m.json"
    h = cli("hash", run, "--no-cache", "-o", out)
    assert h.returncode == 0, h.stderr
    manifest = strict_json(out.read_bytes())
    assert bytes.fromhex(manifest["run_bytes_hex"]) == os.fsencode(run)
    (skipped,) = manifest["skipped"]
    assert bytes.fromhex(skipped["path_bytes_hex"]) == os.fsencode(run / "notes\udcfe.txt")
    # ... and it still compares as the run it was hashed from
    assert cli("compare", out, run).returncode == 0

    empty = tmp_path / os.fsdecode(b"empty\xff\nVERDICT: identical")
    empty.mkdir()
    st = cli("stats", empty)
    assert st.returncode == 2
    (line,) = one_line_each(st.stderr.decode("utf-8"))
    assert line.startswith(f"fastdiff: error: {display_path(str(empty))}: the run holds no ")


# --- the same JSON whatever the settings ----------------------------------------------------


def f64_runs(root: Path, n_a: int, n_b: int) -> tuple[Path, Path]:
    a, b = root / "a", root / "b"
    values = struct.pack(f"<{max(n_a, n_b)}d", *range(max(n_a, n_b)))
    for run, n in ((a, n_a), (b, n_b)):
        run.mkdir(parents=True)
        (run / "step_0_x.bin").write_bytes(values[: 8 * n])
    return a, b


@pytest.mark.parametrize("chunk_size", ["8", "64", "3584", "24"])
def test_length_mismatch_counts_do_not_depend_on_chunk_size(
    tmp_path: Path, chunk_size: str
) -> None:
    """448 against 1024 f64 elements, equal prefix: 3584 bytes, a whole number of 8-,
    64- and 3584-byte chunks, where the scan of the last chunk once decided the counts."""
    a, b = f64_runs(tmp_path, 448, 1024)
    opts = ("--schema", "raw", "--default-dtype", "f64", "--format", "json")
    base = cli("compare", a, b, *opts)
    other = cli("compare", a, b, *opts, "--chunk-size", chunk_size)
    assert base.returncode == other.returncode == 1
    docs = [strict_json(r.stdout) for r in (base, other)]
    for doc in docs:
        (buf,) = doc["buffers"]
        assert buf["status"] == "length_mismatch"
        assert {k: buf[k] for k in COUNT_FIELDS} == dict.fromkeys(COUNT_FIELDS, 0)
        del doc["work"]
    assert docs[0] == docs[1]
    assert (
        "common prefix equal"
        in cli("compare", a, b, *opts[:4], "--chunk-size", chunk_size).stdout.decode()
    )


FLOAT_SPECIALS = {
    # the 8-bit floats: NaN of each kind (0x7F, 0xFF; 0x80 in FNUZ), e5m2's inf, zeros
    1: [0x7F, 0xFF, 0x80, 0x00, 0x7C, 0xFC, 0x7E, 0x01],
    2: [0x7E00, 0x7E01, 0xFE00, 0x8000, 0x0000, 0x7C00, 0xFC00, 0x0001],
    4: [0x7FC00000, 0x7FC00001, 0xFFC00000, 0x80000000, 0, 0x7F800000, 0xFF800000, 1],
    8: [
        0x7FF8000000000000,
        0x7FF8000000000001,
        0xFFF8000000000000,
        0x8000000000000000,
        0,
        0x7FF0000000000000,
        0xFFF0000000000000,
        1,
    ],
}
#: element counts around the chunk sizes drawn below (multiples of 8 bytes)
SIZES = st.one_of(st.integers(0, 70), st.sampled_from([8, 16, 24, 32, 48, 64, 96, 128, 256]))


@st.composite
def run_pairs(
    draw: st.DrawFn,
) -> tuple[dict[str, str], dict[Path, tuple[bytes | None, bytes | None]]]:
    """Small run pairs: buffers of random dtypes and sizes, B a mutation of A."""
    rnd = random.Random(draw(st.integers(0, 2**32)))
    dtypes = {
        f"b{i}": draw(st.sampled_from(sorted(DTYPES))) for i in range(draw(st.integers(1, 3)))
    }
    files: dict[Path, tuple[bytes | None, bytes | None]] = {}
    for step in range(draw(st.integers(1, 2))):
        for name, dtype in dtypes.items():
            dt = DTYPES[dtype]
            n = draw(SIZES)
            a = bytearray(rnd.randbytes(n * dt.itemsize))
            if dt.kind == "float" and n and draw(st.booleans()):  # plenty of NaNs, zeros, infs
                for i in range(n):
                    if rnd.random() < 0.5:
                        special = rnd.choice(FLOAT_SPECIALS[dt.itemsize])
                        a[i * dt.itemsize : (i + 1) * dt.itemsize] = special.to_bytes(
                            dt.itemsize, "big" if dt.swapped else "little"
                        )
            b = bytearray(a)
            for _ in range(draw(st.integers(0, 4)) if n else 0):
                i = rnd.randrange(n)
                if dt.kind == "float" and rnd.random() < 0.6:
                    new = rnd.choice(FLOAT_SPECIALS[dt.itemsize]).to_bytes(
                        dt.itemsize, "big" if dt.swapped else "little"
                    )
                else:
                    new = rnd.randbytes(dt.itemsize)
                b[i * dt.itemsize : (i + 1) * dt.itemsize] = new
                if rnd.random() < 0.3:  # a small change: within a tolerance, sometimes
                    b[i * dt.itemsize] = a[i * dt.itemsize] ^ 1
            shape = draw(st.sampled_from(["same"] * 5 + ["shorter", "longer", "only_a", "odd"]))
            if shape == "shorter":
                b = b[: draw(st.integers(0, n)) * dt.itemsize]
            elif shape == "longer":
                b += rnd.randbytes(draw(SIZES) * dt.itemsize)
            elif shape == "odd" and dt.itemsize > 1:
                b += b"\0"  # malformed: not a whole number of elements
            files[Path(f"step_{step}_{name}.bin")] = (
                bytes(a),
                None if shape == "only_a" else bytes(b),
            )
    return dtypes, files


TOLERANCES = st.sampled_from(
    [Tolerance(), Tolerance(atol=1e-3), Tolerance(ulp=2), Tolerance(nan_equal=True),
     Tolerance(rtol=0.5, nan_equal=True)]
)  # fmt: skip
SETTINGS = st.tuples(
    st.one_of(st.integers(1, 32).map(lambda k: 8 * k), st.just(4 << 20)),  # chunk size
    st.sampled_from([1, 2]),  # jobs
    st.sampled_from(["serial", "thread"]),  # executor
    st.sampled_from(["auto", "python", "numpy", "numba"]),  # engine
)


def json_without_work(report: Any) -> str:
    doc = json.loads(render_json(report))
    del doc["work"]
    return json.dumps(doc, indent=1)


def check_count_shape(report: Any) -> None:
    """Counts are all ints where elements were compared, else all null."""
    for b in report.buffers:
        counts = [getattr(b, k) for k in COUNT_FIELDS]
        compared = b.status in ("equal", "diverged", "within_tolerance", "length_mismatch")
        assert counts == ([c for c in counts if isinstance(c, int)] if compared else [None] * 4), b


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(run_pairs(), TOLERANCES, st.lists(SETTINGS, min_size=2, max_size=3))
def test_same_json_whatever_the_settings(
    pair: tuple[dict[str, str], dict[Path, tuple[bytes | None, bytes | None]]],
    tol: Tolerance,
    settings_list: list[tuple[int, int, str, str]],
) -> None:
    dtypes, files = pair
    schema = Schema(
        "random", (Group("G", "g", "", tuple(Member(n, d) for n, d in dtypes.items())),)
    )
    with tempfile.TemporaryDirectory() as tmp:
        a, b = write_runs(Path(tmp), files)
        base = compare_runs(a, b, CompareOptions(schema=schema, tolerance=tol))
        check_count_shape(base)
        expected = json_without_work(base)
        for chunk_size, jobs, executor, engine in settings_list:
            opts = CompareOptions(
                schema=schema, tolerance=tol, chunk_size=chunk_size, engine=engine,
                executor=executor, jobs=jobs,
            )  # fmt: skip
            report = compare_runs(a, b, opts)
            assert json_without_work(report) == expected, (chunk_size, jobs, executor, engine)
            assert render_text(report) == render_text(base)


def test_same_json_with_worker_processes(tmp_path: Path) -> None:
    """The process executor too (slow to start: one fixed case, every shape in it)."""
    rnd = random.Random(8)
    f32 = list(struct.unpack("<64f", rnd.randbytes(256)))
    files = {
        Path("step_0_equal.bin"): (rnd.randbytes(64),) * 2,
        Path("step_0_prefix.bin"): (bytes(3584), bytes(8192)),  # 448 against 1024 f64
        Path("step_1_f.bin"): (
            struct.pack("<64f", *f32),
            struct.pack("<64f", *f32[:5], float("nan"), -0.0, *f32[7:]),
        ),
        Path("step_1_only.bin"): (bytes(8), None),
    }
    a, b = write_runs(tmp_path, files)
    schema = Schema(
        "s", (Group("G", "g", "", (Member("prefix", "f64"), Member("f", "f32"))),), "u8"
    )
    reports = [
        compare_runs(a, b, CompareOptions(schema=schema, chunk_size=cs, executor=ex, jobs=2))
        for cs, ex in ((4 << 20, "serial"), (8, "process"), (64, "process"))
    ]
    assert reports[1].work.executor == "process"
    texts = [json_without_work(r) for r in reports]
    assert texts[1] == texts[0] and texts[2] == texts[0]
    prefix = next(x for x in reports[0].buffers if x.name == "prefix")
    assert prefix.status == "length_mismatch"
    assert [getattr(prefix, k) for k in COUNT_FIELDS] == [0, 0, 0, 0]


def test_a_prefix_digests_cannot_decide_has_null_counts(tmp_path: Path) -> None:
    """A manifest holds no data: past the last whole chunk nothing can be scanned, so the
    counts are unknown (null), and the text says why instead of 'common prefix equal'."""
    a, b = f64_runs(tmp_path, 10, 20)  # 80 bytes: a 64-byte chunk and 16 bytes more
    manifest = tmp_path / "a.json"
    h = cli("hash", a, "--schema", "raw", "--default-dtype", "f64", "--chunk-size", "64",
            "-o", manifest)  # fmt: skip
    assert h.returncode == 0, h.stderr
    opts = ("--schema", "raw", "--default-dtype", "f64")
    doc = strict_json(cli("compare", manifest, b, *opts, "--format", "json").stdout)
    (buf,) = doc["buffers"]
    assert buf["status"] == "length_mismatch"
    assert [buf[k] for k in COUNT_FIELDS] == [None] * 4
    line = next(
        x for x in cli("compare", manifest, b, *opts).stdout.decode().splitlines() if "x [f64]" in x
    )
    assert "common prefix equal" not in line
    assert "compared by digests only" in line
    # a prefix of whole chunks is decided by the digests: 0, as with the data
    a8, b8 = f64_runs(tmp_path / "whole", 8, 20)
    h = cli("hash", a8, *opts, "--chunk-size", "64", "-o", tmp_path / "a8.json")
    assert h.returncode == 0, h.stderr
    doc = strict_json(cli("compare", tmp_path / "a8.json", b8, *opts, "--format", "json").stdout)
    (buf,) = doc["buffers"]
    assert [buf[k] for k in COUNT_FIELDS] == [0] * 4
    assert re.search(r"LENGTH MISMATCH.*common prefix equal",
                     cli("compare", tmp_path / "a8.json", b8, *opts).stdout.decode())  # fmt: skip


# --- the JSON encoder: json.dumps's own C encoder, without importing json ---------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),  # any code point, lone surrogates included
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=30,
)


@given(JSON_VALUES)
@settings(max_examples=300, deadline=None)
def test_the_report_encoder_writes_what_json_dumps_writes(value: Any) -> None:
    from fastdiff.render import json as render_json_module

    assert render_json_module._dumps is render_json_module._c_dumps  # CPython: the C encoder
    assert render_json_module._dumps(value) == json.dumps(value, allow_nan=False)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), [float("-inf")], {"x": object()}])
def test_the_report_encoder_refuses_what_json_dumps_refuses(bad: Any) -> None:
    from fastdiff.render import json as render_json_module

    with pytest.raises((ValueError, TypeError)) as ours:
        render_json_module._dumps(bad)
    with pytest.raises((ValueError, TypeError)) as theirs:
        json.dumps(bad, allow_nan=False)
    assert type(ours.value) is type(theirs.value)


def test_the_report_encoder_falls_back_to_the_json_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the C encoder is missing or takes other arguments, the json package writes."""
    from fastdiff.render import json as render_json_module

    def other_signature(*args: object) -> object:
        raise TypeError("make_encoder() takes other arguments")

    monkeypatch.setattr(render_json_module, "_make_encoder", other_signature)
    assert render_json_module._choose_dumps() is render_json_module._json_dumps
    monkeypatch.setattr(render_json_module, "_make_encoder", None)
    assert render_json_module._choose_dumps() is render_json_module._json_dumps
    assert render_json_module._json_dumps({"a": [1.5, None]}) == '{"a": [1.5, null]}'
