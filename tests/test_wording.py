"""The text report's small consistencies (issue 19, item 9): a shape on every
line of a shaped buffer, thousands separators on counts, one wording of the
statuses for compare and watch, buffer lines never at the margin."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers import fastdiff, write_runs

REPO = Path(__file__).resolve().parents[1]
WRITER = REPO / "tests" / "writer.py"


def test_verbose_shows_the_shape_on_equal_lines_as_on_differing_ones(tmp_path: Path) -> None:
    schema = tmp_path / "s.toml"
    member = 'w = { dtype = "u8", shape = [-1, 4] }'
    schema.write_text(f'[[group]]\nkey = "E"\n[group.members]\n{member}\n')
    differs = bytes(7) + b"\1"
    files = {"step_0_w.bin": (bytes(8), bytes(8)), "step_1_w.bin": (bytes(8), differs)}
    ra, rb = write_runs(tmp_path, files)
    lines = fastdiff("compare", "--schema", schema, ra, rb, "-v").stdout.splitlines()
    assert "    E  w [u8, (2, 4)]  equal (8 elements)" in lines
    assert any(ln.startswith("    E  w [u8, (2, 4)]  DIVERGED; 1 of 8") for ln in lines)


def test_counts_have_thousands_separators_indices_do_not(tmp_path: Path) -> None:
    n = 12_345
    ra, rb = write_runs(tmp_path, {"step_0_w.bin": (bytes(n), b"\1" * n),
                                   "step_0_v.bin": (bytes(n), bytes(n))})  # fmt: skip
    text = fastdiff("compare", ra, rb, "--schema", "raw", "-v").stdout
    assert "12,345 of 12,345 elements differ (100%) in 1 range [0, 12345)" in text
    assert "max |A-B| 1 at [0]" in text and "equal (12,345 elements)" in text


def test_buffer_lines_of_a_long_group_key_never_start_at_the_margin(tmp_path: Path) -> None:
    ra, rb = write_runs(tmp_path, {"step_0_w.bin": (bytes(4), b"\1" * 4)})
    lines = fastdiff("compare", ra, rb).stdout.splitlines()
    (line,) = [ln for ln in lines if " w [u8]" in ln]
    assert line.startswith("  other  w [u8]  DIVERGED")
    step = next(ln for ln in lines if ln.startswith("step 0"))
    assert step == "step 0: 1 diverged  diverged: other"


def test_watch_says_the_statuses_as_compare_does(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for run, extra in ((a, []), (b, ["--skip", "1:ph_mu"])):
        subprocess.run(
            [sys.executable, str(WRITER), str(run), "--steps", "3", "--pace", "0", *extra],
            cwd=REPO, check=True, timeout=60,
        )  # fmt: skip
    opts = ("--poll", "0.05", "--settle", "0", "--idle-timeout", "0.5", "--lag", "0")
    watched = fastdiff("watch", a, b, *opts, "--format", "text")
    assert watched.returncode == 1, watched.stderr
    assert "step 1: DIVERGED [F]: 33 equal, 1 only in run A" in watched.stdout
    compared = fastdiff("compare", a, b)
    assert "step 1: 33 equal, 1 only in run A  diverged: F" in compared.stdout


def test_counts_of_one_are_singular(tmp_path: Path) -> None:
    files = {
        "step_0_a.bin": (b"\1", b"\1\2"),  # 1 element against 2
        "step_0_b.bin": (b"\1", b"\2"),  # 1 of 1 differs
        "step_0_c.bin": (b"\1", b"\1"),  # equal, 1 element
    }
    ra, rb = write_runs(tmp_path, files)
    text = fastdiff("compare", ra, rb, "--schema", "raw", "-v").stdout
    assert "LENGTH MISMATCH: A has 1 element, B 2" in text
    assert "1 of 1 element differs (100%)" in text
    assert "equal (1 element)" in text
    assert " 1 elements" not in text


def test_sweep_names_both_diverging_pairs(tmp_path: Path) -> None:
    schema = tmp_path / "s.toml"
    schema.write_text('[[group]]\nkey = "D"\n[group.members]\nw = { dtype = "u8", inputs = [] }\n')
    runs = []
    for name, data in (("base", bytes(4)), ("same", bytes(4)), ("div", b"\0\1\0\0")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "step_0_w.bin").write_bytes(data)
        runs.append(str(tmp_path / name))
    r = fastdiff("sweep", "--all", *runs, "--schema", schema, "--format", "text")
    assert r.returncode == 1, r.stderr
    assert "3 pairs: 1 identical, 2 diverged, 0 with errors" in r.stdout
    assert "first origin reproducible: D w at step 0 in both diverging pairs" in r.stdout


def test_a_buffer_compared_by_digests_keeps_its_shape_and_says_so_once(tmp_path: Path) -> None:
    schema = tmp_path / "s.toml"
    schema.write_text(
        '[[group]]\nkey = "E"\n[group.members]\nw = { dtype = "f32", shape = [2, 2] }\n'
    )
    ra, rb = write_runs(tmp_path, {"step_0_w.bin": (bytes(16), bytes(12) + b"\0\0\x80\x3f")})
    manifest = tmp_path / "a.json"
    h = fastdiff("hash", ra, "-o", manifest, "--schema", schema, "--no-cache")
    assert h.returncode == 0, h.stderr
    lines = fastdiff("compare", manifest, rb, "--schema", schema).stdout.splitlines()
    (line,) = [ln for ln in lines if " w [" in ln]
    assert line.startswith("    E  w [f32, (2, 2)]  DIVERGED; compared by digests only"), line
    assert line.count("digests only") == 1, line
    assert "first differing chunk: bytes 0..16" in line


def test_the_group_table_stays_aligned_with_long_group_keys() -> None:
    data = REPO / "tests" / "data" / "torch"
    out = fastdiff("compare", data / "checkpoint_a.pt", data / "checkpoint_b.pt").stdout
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("VERDICT:")) + 1
    table = []
    for ln in lines[start:]:
        if not ln:
            break
        table.append(ln)
    assert len(table) == 6, table  # model, optimizer, rng, and the values' groups
    # the key column right-aligned, the title and the state each in one column
    keys = [ln.split()[0] for ln in table]
    assert {ln.index(k) + len(k) for ln, k in zip(table, keys, strict=True)} == {11}
    assert (
        len({ln.index(w) for ln, w in zip(table[:3], ("equal", "DIVERGED", "equal"), strict=True)})
        == 1
    )
