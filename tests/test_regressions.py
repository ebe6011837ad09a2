"""Each bug found in review leaves a test behind."""

from __future__ import annotations

import json
import mmap
import os
import struct
from pathlib import Path

import pytest
from helpers import fastdiff as cli

from fastdiff.schema import Group, Member, Schema
from fastdiff.schemafile import load_schema, schema_to_toml
from fastdiff.sources.names import parse_dump_name

REPO = Path(__file__).resolve().parents[1]


def runs(root: Path, a: bytes, b: bytes, name: str = "step_0_x.bin") -> tuple[Path, Path]:
    ra, rb = root / "A", root / "B"
    ra.mkdir(parents=True)
    rb.mkdir(parents=True)
    (ra / name).write_bytes(a)
    (rb / name).write_bytes(b)
    return ra, rb


def test_a_file_written_through_a_memory_map_is_never_trusted_from_the_cache(
    tmp_path: Path,
) -> None:
    """Stores into an already dirty mapped page move neither mtime nor ctime:
    a fresh file's digest must not be cached, or the next run says identical."""
    a, b = runs(tmp_path, bytes(4096), bytes(4096))
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    with open(a / "step_0_x.bin", "r+b") as fh:
        mm = mmap.mmap(fh.fileno(), 0)
        mm[1] = 0  # dirty the page (this store may move the times)
        first = cli("compare", "--cache", str(a), str(b), "--schema", "raw", env=env)
        assert first.returncode == 0
        st = os.stat(a / "step_0_x.bin")
        mm[0] = 0xFF  # a store into the dirty page: the times need not move
        assert os.stat(a / "step_0_x.bin").st_size == st.st_size
        second = cli("compare", "--cache", str(a), str(b), "--schema", "raw", env=env)
        mm.close()
    assert second.returncode == 1, second.stdout


def test_the_cache_keeps_only_settled_files(tmp_path: Path) -> None:
    from fastdiff.engine.cache import DigestCache
    from fastdiff.options import CompareOptions
    from fastdiff.sweep import sweep

    a, b = runs(tmp_path, bytes(64), bytes(64))
    pairs = [(str(a), str(b))]
    for min_age, hits in ((60.0, 0), (0.0, 2)):
        folder = tmp_path / f"cache{min_age}"
        for _ in range(2):
            c = DigestCache(folder, min_age_s=min_age)
            _, summary = sweep(pairs, CompareOptions(), cache=c)
            c.close()
        assert summary.cache_hits == hits


def test_runs_under_a_folder_whose_name_is_not_utf8(tmp_path: Path) -> None:
    parent = tmp_path / os.fsdecode(b"nonutf\xff")
    a, b = runs(parent, struct.pack("<f", 1.0), struct.pack("<f", 2.0))
    r = cli("compare", str(a), str(b), "--schema", "raw", "--default-dtype", "f32",
            "--format", "json")  # fmt: skip
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)  # strict: no lone surrogates in the output
    assert doc["buffers"][0]["status"] == "diverged"
    assert "\\xff" in doc["run_a"]
    r.stdout.encode("utf-8")


@pytest.mark.parametrize("name", ["step_" + "9" * 601 + "_x.bin", "step_\u0663_x.bin"])
def test_step_numbers_are_ascii_digits_up_to_the_cap(name: str) -> None:
    # Any number of digits up to discover.MAX_STEP_DIGITS (tests/test_inputs.py);
    # beyond it a folder entry is an error, a manifest entry too.
    assert parse_dump_name(name) is None


def test_a_huge_step_number_in_a_manifest_is_a_clear_error(tmp_path: Path) -> None:
    a, _ = runs(tmp_path, bytes(8), bytes(8))
    m = tmp_path / "m.json"
    assert cli("hash", str(a), "-o", str(m), "--no-cache").returncode == 0
    doc = json.loads(m.read_text())
    doc["buffers"][0]["step"] = int("1" * 700)
    m.write_text(json.dumps(doc))
    r = cli("compare", str(m), str(a))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "step number too long" in r.stderr
    doc["buffers"][0]["step"] = 0
    doc["buffers"][0]["size"] = 1 << 70
    m.write_text(json.dumps(doc))
    r = cli("compare", str(m), str(a))
    assert r.returncode == 2 and "out of range" in r.stderr and "Traceback" not in r.stderr
    doc["fastdiff_manifest"] = True
    m.write_text(json.dumps(doc))
    r = cli("compare", str(m), str(a))
    assert r.returncode == 2 and "version True is not supported" in r.stderr


@pytest.mark.parametrize("size", ["2G", "18446744073709551616"])
def test_huge_chunk_sizes_are_refused(tmp_path: Path, size: str) -> None:
    a, _ = runs(tmp_path, bytes(8), bytes(8))
    r = cli("hash", str(a), "--chunk-size", size, env={"XDG_CACHE_HOME": str(tmp_path / "x")})
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "at most 1 GiB" in r.stderr


def test_a_nul_in_a_pairs_file_is_a_clear_error(tmp_path: Path) -> None:
    p = tmp_path / "pairs"
    p.write_text("/tmp/a /tmp/b\0x\n")
    r = cli("sweep", "--pairs", str(p))
    assert r.returncode == 2
    assert r.stderr == f"fastdiff: error: {p}:1: a path cannot contain a NUL character\n"


@pytest.mark.parametrize("engine", ["python", "numpy", "numba"])
def test_an_ulp_beyond_64_bits_means_any_distance(tmp_path: Path, engine: str) -> None:
    a, b = runs(tmp_path, struct.pack("<d", 1.0), struct.pack("<d", -2.0))
    r = cli("compare", str(a), str(b), "--schema", "raw", "--default-dtype", "f64",
            "--ulp", str(1 << 64), "--engine", engine, "--format", "json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["buffers"][0]["status"] == "within_tolerance"


def test_the_cache_is_never_put_in_a_run_folder(tmp_path: Path) -> None:
    a, b = runs(tmp_path, bytes(8), bytes(8))
    before = sorted(os.listdir(a))
    for args in (
        ["sweep", "--baseline", str(a), str(b), "--cache-dir", str(a / "c")],
        ["compare", str(a), str(b), "--cache", "--cache-dir", str(a)],
        ["hash", str(a), "--cache-dir", str(a)],
    ):
        r = cli(*args)
        assert r.returncode == 2
        assert "never writes into a run folder" in r.stderr
    r = cli("sweep", "--all", str(a), str(b), env={"XDG_CACHE_HOME": str(a)})
    assert r.returncode == 2
    assert sorted(os.listdir(a)) == before


def test_a_broken_entry_is_an_error_not_a_buffer_missing_from_one_run(tmp_path: Path) -> None:
    a, b = runs(tmp_path, bytes(8), bytes(8), name="step_1_x.bin")
    (a / "step_0_y.bin").write_bytes(bytes(8))
    os.mkfifo(b / "step_0_y.bin")
    r = cli("compare", str(a), str(b), "--schema", "raw", "--format", "json")
    assert r.returncode == 2
    doc = json.loads(r.stdout)
    status = {(x["step"], x["name"]): x["status"] for x in doc["buffers"]}
    assert status == {(0, "y"): "error", (1, "x"): "equal"}
    assert doc["first_divergent_step"] is None


def test_schema_text_with_newlines_round_trips(tmp_path: Path) -> None:
    schema = Schema(
        'say "hi"',
        (Group("C", "two\nlines\x7f and \\", "tab\there, é, 😀", (Member("a*", "f32"),)),),
    )
    p = tmp_path / "s.toml"
    p.write_text(schema_to_toml(schema), encoding="utf-8")
    assert load_schema(p) == schema


def test_hash_output_through_a_symlink_writes_the_target(tmp_path: Path) -> None:
    a, _ = runs(tmp_path, bytes(8), bytes(8))
    target = tmp_path / "target.json"
    target.write_text("")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert cli("hash", str(a), "-o", str(link), "--no-cache").returncode == 0
    assert link.is_symlink()
    assert json.loads(target.read_text())["fastdiff_manifest"] == 2


def test_a_pairs_file_may_name_folders_that_are_not_utf8(tmp_path: Path) -> None:
    parent = tmp_path / os.fsdecode(b"runs\xfe")
    a, b = runs(parent, bytes(8), bytes(8))
    p = tmp_path / "pairs"
    p.write_bytes(os.fsencode(str(a)) + b" " + os.fsencode(str(b)) + b"\n")
    r = cli("sweep", "--pairs", str(p), "--no-cache", "--schema", "raw")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.splitlines()[0])["verdict"] == "identical"


def test_a_run_compared_with_itself_lists_its_skipped_entries_once(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "step_0_x.bin").write_bytes(bytes(8))
    (run / "notes.txt").write_text("hello")
    p = cli("compare", str(run), str(run), "--format", "json")
    assert p.returncode == 0, p.stderr
    skipped = json.loads(p.stdout)["skipped"]
    assert [s["path"] for s in skipped] == [str(run / "notes.txt")]
    text = cli("compare", str(run), str(run)).stdout
    assert text.count("notes.txt") == 1


def _state(folder: Path) -> list[tuple[str, int, int]]:
    paths = [folder, *sorted(folder.rglob("*"))]
    return [(str(p), p.lstat().st_mtime_ns, p.lstat().st_ctime_ns) for p in paths]


def test_no_output_goes_into_any_folder_that_holds_dumps(tmp_path: Path) -> None:
    """Not only the runs of the command: the folder a manifest was hashed from,
    and any folder holding dumps, are run folders fastdiff never writes into."""
    a, b = runs(tmp_path, bytes(8), bytes(8))
    other = tmp_path / "other"  # a run folder that is not part of the command
    other.mkdir()
    (other / "step_0_y.bin").write_bytes(bytes(8))
    manifest = tmp_path / "a.json"
    assert cli("hash", str(a), "--no-cache", "-o", str(manifest)).returncode == 0
    before = {f: _state(f) for f in (a, b, other)}
    attempts = [
        ("compare", str(manifest), str(b), "--plot", str(a / "t.png")),  # the manifest's run
        ("compare", str(a), str(b), "--plot", str(other / "t.png")),
        ("hash", str(a), "--no-cache", "-o", str(other / "m.json")),
        ("sweep", "--all", str(a), str(b), "--cache-dir", str(other / "cache")),
        ("bench", "--max-size", "4K", "--repeat", "1", "--workdir", str(other)),
    ]
    for args in attempts:
        r = cli(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert "never writes into a run folder" in r.stderr, (args, r.stderr)
        assert len(r.stderr.splitlines()) == 1, r.stderr
    assert {f: _state(f) for f in (a, b, other)} == before


def test_a_plot_that_cannot_be_written_keeps_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The report is written first; a plot that then fails is one error line and
    exit 2 (trouble), never a lost report. A FIFO is refused before comparing."""
    pytest.importorskip("matplotlib")
    from fastdiff import cli as cli_module
    from fastdiff.render import plot

    a, b = runs(tmp_path, bytes(8), b"\x01" + bytes(7))
    fifo = tmp_path / "f.png"
    os.mkfifo(fifo)
    r = cli("compare", str(a), str(b), "--plot", str(fifo))
    assert r.returncode == 2 and r.stdout == ""
    assert "not a regular file" in r.stderr

    def broken(report: object, path: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(plot, "write_timeline_plot", broken)
    code = cli_module.main(["compare", str(a), str(b), "--plot", str(tmp_path / "t.png")])
    out, err = capsys.readouterr()
    assert code == 2
    assert "VERDICT: diverged" in out
    assert err.splitlines()[-1] == (
        f"fastdiff: error: --plot {tmp_path / 't.png'}: cannot write the timeline plot "
        "(No space left on device); the report above is complete"
    )


def _one_ulp_runs(root: Path) -> tuple[Path, Path]:
    """Two f32 runs: step 0 equal, step 1 one element 1 ULP apart, step 2 B longer."""
    base = struct.pack("<16f", *range(1, 17))
    close = bytearray(base)
    close[12:16] = struct.pack("<I", struct.unpack("<I", base[12:16])[0] + 1)
    ra, rb = runs(root, base, base, "step_0_w.bin")
    (ra / "step_1_w.bin").write_bytes(base)
    (rb / "step_1_w.bin").write_bytes(bytes(close))
    return ra, rb


@pytest.mark.parametrize("manifest_side", ["A", "B"])
def test_a_tolerance_is_never_silently_dropped_against_a_manifest(
    tmp_path: Path, manifest_side: str
) -> None:
    """Folders give identical within --ulp 1; with one side a manifest, the
    digests say only that the bits differ: that buffer is an error of kind
    'undecided' that says why (exit 2), never 'diverged', and a note says
    the tolerance could not be judged. Without a tolerance it stays diverged."""
    from fastdiff import CompareOptions, compare_runs
    from fastdiff.kernels import Tolerance
    from fastdiff.model.findings import NoteKind
    from fastdiff.schema import RAW

    ra, rb = _one_ulp_runs(tmp_path)
    tol = ("--ulp", "1", "--default-dtype", "f32")
    folders = cli("compare", ra, rb, *tol, "--format", "json")
    assert folders.returncode == 0 and json.loads(folders.stdout)["verdict"] == "identical"
    manifest = tmp_path / "m.json"
    hashed = ra if manifest_side == "A" else rb
    assert cli("hash", hashed, "-o", manifest, "--default-dtype", "f32").returncode == 0
    pair = (manifest, rb) if manifest_side == "A" else (ra, manifest)
    got = cli("compare", *pair, *tol, "--format", "json")
    assert got.returncode == 2, got.stderr
    report = json.loads(got.stdout)
    assert report["verdict"] == "error" and report["first_divergent_step"] is None
    (w1,) = [b for b in report["buffers"] if b["step"] == 1]
    assert w1["status"] == "error" and w1["first_divergent_chunk"] == [0, 64]
    assert w1["message"].startswith(
        "its bits differ (first in bytes 0..64), but whether within the tolerance (--ulp 1) "
        f"is not known: run {manifest_side} is a manifest, which holds digests, not values"
    )
    local = (rb if manifest_side == "A" else ra) / "step_1_w.bin"
    assert f"fastdiff: error: {local}: its bits differ" in got.stderr
    # The library says which kind of problem it is.
    opts = CompareOptions(schema=RAW.replace(default_dtype="f32"), tolerance=Tolerance(ulp=1))
    judged = compare_runs(*pair, opts)
    (problem,) = judged.errors
    assert (problem.kind, problem.path) == ("undecided", str(local))
    (note,) = judged.notes  # the tolerance could not be judged, for 1 buffer
    assert (note.kind, note["n"]) == (NoteKind.UNDECIDED, 1)
    # Without a tolerance the bits that differ are a divergence, as before.
    exact = cli("compare", *pair, "--default-dtype", "f32", "--format", "json")
    assert exact.returncode == 1 and json.loads(exact.stdout)["first_divergent_step"] == 1
    # Equal digests are equal under any tolerance; a length is not a tolerance's to forgive.
    (rb / "step_2_w.bin").write_bytes(bytes(8))
    (ra / "step_2_w.bin").write_bytes(bytes(4))
    assert cli("hash", hashed, "-o", manifest, "--default-dtype", "f32").returncode == 0
    got = json.loads(cli("compare", *pair, *tol, "--format", "json").stdout)
    statuses = {b["step"]: b["status"] for b in got["buffers"]}
    assert statuses == {0: "equal", 1: "error", 2: "length_mismatch"}
    assert got["verdict"] == "error" and got["first_divergent_step"] == 2


@pytest.mark.parametrize(
    ("a0", "b0", "first"),
    [(32, 31, 0), (31, 32, 0), (31, None, 0), (31, 31, 1), (33, 35, 0)],
)
def test_a_malformed_buffer_whose_files_differ_in_size_counts_for_the_first_divergent_step(
    tmp_path: Path, a0: int, b0: int | None, first: int
) -> None:
    """Step 0's f32 buffer is malformed (a size that is not whole elements);
    when its files differ in size (or one run lacks it), the runs differ at
    step 0 though nothing was compared: the first divergent step is 0 (the
    verdict stays error, exit 2). Two malformed files of one size may be
    equal: then step 1, where the values differ, is the first."""
    ra, rb = runs(tmp_path, bytes(a0), bytes(32), "step_0_w.bin")
    if b0 is None:
        (rb / "step_0_w.bin").unlink()
    else:
        (rb / "step_0_w.bin").write_bytes(bytes(b0))
    (ra / "step_1_w.bin").write_bytes(bytes(32))
    (rb / "step_1_w.bin").write_bytes(bytes([1]) + bytes(31))
    got = cli("compare", ra, rb, "--default-dtype", "f32", "--format", "json")
    assert got.returncode == 2, got.stderr
    report = json.loads(got.stdout)
    assert report["verdict"] == "error"
    assert report["first_divergent_step"] == first
    assert report["first_divergent_groups"] == ["other"]
    (w0,) = [b for b in report["buffers"] if b["step"] == 0]
    assert (w0["status"], w0["size_a"], w0["size_b"]) == ("malformed", a0, b0)
    assert report["steps"][0]["diverged_groups"] == (["other"] if first == 0 else [])
    if first == 0:
        assert [(r["step"], r["cell"]) for r in report["timeline"]] == [
            (0, "malformed"), (1, "rounding"),
        ]  # fmt: skip
    if (a0, b0) == (32, 31):  # the text's words for it, once
        text = cli("compare", ra, rb, "--default-dtype", "f32").stdout
        assert "VERDICT: error, and diverged: first divergent step 0;" in text
        assert "its files differ in size (A 32 bytes, B 31 bytes): a divergence" in text


def test_hash_says_a_malformed_dump_records_it_and_exits_2(tmp_path: Path) -> None:
    """``hash`` of a run with a malformed dump says so on stderr (as compare
    and stats do), writes the manifest with the file recorded under
    'malformed', and exits 2, as compare and stats do for that run."""
    ra, rb = runs(tmp_path, bytes(31), bytes(32), "step_0_w.bin")
    (ra / "step_1_w.bin").write_bytes(bytes(32))
    manifest = tmp_path / "a.json"
    got = cli("hash", ra, "-o", manifest, "--default-dtype", "f32")
    assert got.returncode == 2
    bad = ra / "step_0_w.bin"
    lines = got.stderr.splitlines()
    assert lines == [
        f"fastdiff: error: {bad}: size 31 bytes is not a whole number of 4-byte f32 elements "
        "(truncated dump, or wrong dtype in the schema?)",
        f"fastdiff: error: the manifest was written to {manifest} with 1 malformed file "
        "recorded in it (key 'malformed'); compare and stats report them as malformed too",
    ]
    doc = json.loads(manifest.read_text())
    assert [(m["file"], m["step"], m["buffer"]) for m in doc["malformed"]] == [
        ("step_0_w.bin", 0, "w")
    ]
    assert len(doc["buffers"]) == 2
    # The manifest is read as the folder is: the same malformed buffer, exit 2.
    for run in (ra, manifest):
        assert cli("stats", run, "--default-dtype", "f32").returncode == 2
        compared = cli("compare", run, rb, "--default-dtype", "f32", "--format", "json")
        assert compared.returncode == 2
        (w0,) = [b for b in json.loads(compared.stdout)["buffers"] if b["step"] == 0]
        assert w0["status"] == "malformed"
    # To stdout too: the manifest, and exit 2.
    out = cli("hash", ra, "--default-dtype", "f32")
    assert out.returncode == 2 and json.loads(out.stdout)["malformed"][0]["file"] == "step_0_w.bin"
    # A run without one: exit 0, no 'malformed' key.
    clean = cli("hash", rb, "--default-dtype", "f32")
    assert clean.returncode == 0 and clean.stderr == ""
    assert "malformed" not in json.loads(clean.stdout)
