"""What every report promises about its own shape, whatever the input.

- Names are escaped one way everywhere (``discover.display_path``): a file
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
import struct
import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastdiff.discover import display_path

REPO = Path(__file__).resolve().parent.parent


def cli(*args: str | Path) -> subprocess.CompletedProcess[bytes]:
    """The CLI with a strict UTF-8 stdout: a lone surrogate written to it is a crash."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    return subprocess.run(
        [sys.executable, "-m", "fastdiff", *map(str, args)],
        capture_output=True,
        cwd=REPO,
        timeout=120,
        check=False,
        env=env,
    )


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
