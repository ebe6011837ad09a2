"""What users pass as input: step numbers of any length, run folders with no
dumps, files given where a run folder belongs (issue 8, items 2, 5 and 8)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import fastdiff as cli

from fastdiff.compare import compare_pairs
from fastdiff.errors import FastdiffError
from fastdiff.sources import folder as discover_module
from fastdiff.sources.folder import discover
from fastdiff.sources.manifest import ManifestError, load_manifest
from fastdiff.sources.names import parse_dump_name

REPO = Path(__file__).resolve().parents[1]
LONG = 1234567890123456789  # 19 digits: more than an int64 holds
ERROR = "fastdiff: error: "


def run_folder(path: Path, files: dict[str, bytes]) -> Path:
    path.mkdir(parents=True)
    for name, data in files.items():
        (path / name).write_bytes(data)
    return path


# --- item 2: step numbers of any length -------------------------------------------


@pytest.mark.parametrize("digits", [19, 20, 64, 240])
def test_long_step_numbers_parse(digits: int) -> None:
    step = "9" * digits
    assert parse_dump_name(f"step_{step}_x.bin") == (int(step), "x")


def test_a_19_digit_step_in_one_run_only_diverges(tmp_path: Path) -> None:
    a = run_folder(tmp_path / "a", {"step_0_x.bin": bytes(8)})
    b = run_folder(tmp_path / "b", {"step_0_x.bin": bytes(8), f"step_{LONG}_x.bin": bytes(8)})
    r = cli("compare", str(a), str(b), "--schema", "raw", "--format", "json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["skipped"] == []
    assert doc["first_divergent_step"] == LONG  # exact, not rounded through a float
    assert [(x["step"], x["status"]) for x in doc["buffers"]] == [(0, "equal"),
                                                                  (LONG, "only_in_b")]  # fmt: skip


def test_long_steps_sort_numerically(tmp_path: Path) -> None:
    """99...9 (20 digits) comes before 10...0 (21 digits), though not as text."""
    small, big = 10**20 - 1, 10**20
    names = [f"step_{s}_x.bin" for s in (2, small, big)]
    a = run_folder(tmp_path / "a", dict.fromkeys(names, bytes(8)))
    changed = dict.fromkeys(names[1:], b"\1" + bytes(7))
    b = run_folder(tmp_path / "b", {**dict.fromkeys(names, bytes(8)), **changed})
    r = cli("compare", str(a), str(b), "--schema", "raw", "--format", "json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert [s["step"] for s in doc["steps"]] == [2, small, big]
    assert doc["first_divergent_step"] == small
    assert [r["step"] for r in doc["timeline"]] == [small, big]


def test_leading_zeros_still_make_a_duplicate(tmp_path: Path) -> None:
    run = run_folder(tmp_path / "r", {f"step_{LONG}_x.bin": bytes(8),
                                      f"step_000{LONG}_x.bin": bytes(8)})  # fmt: skip
    listing = discover(run)
    assert listing.files == ()  # neither dump: which one is the run's is unknown
    (problem,) = listing.errors
    assert "same step and buffer" in problem.message and "neither was compared" in problem.message
    assert listing.broken == (((LONG, "x"), problem),)


def test_a_buffer_dumped_twice_is_an_error_never_equal(tmp_path: Path) -> None:
    """Run A holds step_007_x.bin and step_7_x.bin with different contents;
    run B's step_7_x.bin equals the first: the buffer is an error in the
    report (text and JSON), not "equal" on the strength of one of the two."""
    a = run_folder(tmp_path / "a", {"step_007_x.bin": bytes(8), "step_7_x.bin": b"\1" + bytes(7)})
    b = run_folder(tmp_path / "b", {"step_7_x.bin": bytes(8)})
    r = cli("compare", str(a), str(b), "--schema", "raw", "--format", "json")
    assert r.returncode == 2, r.stderr
    doc = json.loads(r.stdout)
    (x,) = doc["buffers"]
    assert (x["step"], x["name"], x["status"]) == (7, "x", "error")
    assert doc["verdict"] == "error" and doc["first_divergent_step"] is None
    assert doc["steps"] == [{"step": 7, "counts": {"error": 1}, "diverged_groups": []}]


def test_only_ascii_digits_and_no_trailing_newline_make_a_dump(tmp_path: Path) -> None:
    run = run_folder(tmp_path / "r", {"step_\u0663_x.bin": bytes(8), "step_1_x.bin\n": bytes(8)})
    listing = discover(run)
    assert listing.files == () and listing.errors == ()
    assert len(listing.skipped) == 2
    assert all("not a dump" in s.reason for s in listing.skipped)


def test_a_step_beyond_the_digit_cap_is_an_error_never_a_skip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No file system allows a name long enough to pass the real cap (600
    digits), so a smaller one stands in for it."""
    monkeypatch.setattr(discover_module, "MAX_STEP_DIGITS", 3)
    a = run_folder(tmp_path / "a", {"step_1_x.bin": bytes(8)})
    b = run_folder(tmp_path / "b", {"step_1_x.bin": bytes(8), "step_1234_x.bin": bytes(8)})
    listing = discover(b)
    assert listing.skipped == ()
    (problem,) = listing.errors
    assert problem.path == str(b / "step_1234_x.bin")
    assert "step number has 4 digits, more than fastdiff reads (3)" in problem.message
    (report,) = compare_pairs([(str(a), str(b))])
    assert report.verdict == "error"


def test_a_manifest_keeps_long_steps(tmp_path: Path) -> None:
    a = run_folder(tmp_path / "a", {"step_0_x.bin": bytes(8), f"step_{LONG}_x.bin": bytes(8)})
    b = run_folder(tmp_path / "b", {"step_0_x.bin": bytes(8), f"step_{LONG}_x.bin": b"\1" * 8})
    m = tmp_path / "a.manifest.json"
    assert cli("hash", str(a), "-o", str(m), "--no-cache").returncode == 0
    assert [f["step"] for f in json.loads(m.read_text())["buffers"]] == [0, LONG]
    r = cli("compare", str(m), str(b), "--schema", "raw", "--format", "json")
    assert r.returncode == 1, r.stderr
    assert json.loads(r.stdout)["first_divergent_step"] == LONG


def test_stats_counts_long_steps(tmp_path: Path) -> None:
    run = run_folder(tmp_path / "r", {"step_0_x.bin": bytes(8), f"step_{LONG}_x.bin": bytes(8)})
    r = cli("stats", str(run), "--format", "json")
    assert r.returncode == 0, r.stderr
    assert [s["step"] for s in json.loads(r.stdout)["steps"]] == [0, LONG]


# --- item 5: a run side with no dumps ----------------------------------------------


def test_the_parent_folder_by_mistake_is_an_error_that_names_the_run(tmp_path: Path) -> None:
    r = cli("compare", "examples", "examples/run-b")
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        f"{ERROR}examples: run A holds no step_<N>_<name>.bin dumps (only 7 other entries, "
        "skipped); did you mean examples/run-a?"
    ]
    doc = json.loads(cli("compare", "examples", "examples/run-b", "--format", "json").stdout)
    assert doc["verdict"] == "error" and doc["first_divergent_step"] is None
    assert doc["buffers"] == [] and doc["groups"] == []
    # The rest of the report stays: what was skipped in the folder.
    assert {s["path"] for s in doc["skipped"]} == {
        "examples/anatomy", "examples/origins", "examples/run-a", "examples/run-b",
        "examples/schema.toml", "examples/trace", "examples/train",
    }  # fmt: skip


@pytest.mark.parametrize("side", ["A", "B"])
def test_an_empty_folder_against_a_run_is_an_error(tmp_path: Path, side: str) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    run = str(REPO / "examples/run-a")
    args = (str(empty), run) if side == "A" else (run, str(empty))
    r = cli("compare", *args)
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        f"{ERROR}{empty}: run {side} holds no step_<N>_<name>.bin dumps; "
        "give the folder that holds them"
    ]


def test_a_folder_of_skipped_entries_only_counts_as_empty(tmp_path: Path) -> None:
    a = run_folder(tmp_path / "a", {"notes.txt": b"hi", "step_1_x.bin.tmp": bytes(8)})
    (a / "empty-sub").mkdir()
    (a / "zz-run").mkdir()
    (a / "zz-run" / "step_0_x.bin").write_bytes(bytes(8))
    b = run_folder(tmp_path / "b", {"step_0_x.bin": bytes(8)})
    (report,) = compare_pairs([(str(a), str(b))])
    assert report.verdict == "error" and report.buffers == ()
    (problem,) = report.errors
    assert problem.message == (
        "run A holds no step_<N>_<name>.bin dumps (only 4 other entries, skipped); "
        f"did you mean {a / 'zz-run'}?"
    )
    assert len(report.skipped) == 4


def test_both_empty_stays_nothing_to_compare(tmp_path: Path) -> None:
    r = cli("compare", "examples", "examples")
    assert r.returncode == 2
    (line,) = r.stderr.splitlines()
    assert "nothing to compare" in line and line.endswith("did you mean examples/run-a?")


def test_an_empty_run_in_a_sweep_is_an_error_for_its_pair(tmp_path: Path) -> None:
    r = cli("sweep", "--no-cache", "--format", "jsonl", "--baseline", "examples/run-a",
            "examples/run-b", "examples")  # fmt: skip
    assert r.returncode == 2
    *pairs, summary = (json.loads(line) for line in r.stdout.splitlines())
    assert [p["verdict"] for p in pairs] == ["diverged", "error"]
    assert pairs[1]["errors"] == [{
        "path": "examples",
        "message": "run B holds no step_<N>_<name>.bin dumps (only 7 other entries, skipped); "
        "did you mean examples/run-a?",
    }]  # fmt: skip
    assert pairs[1]["buffers"] == []
    assert (summary["diverged"], summary["error"]) == (1, 1)


def test_a_manifest_that_lists_no_dumps_is_an_error(tmp_path: Path) -> None:
    m = tmp_path / "m.json"
    assert cli("hash", "examples/run-a", "-o", str(m), "--no-cache").returncode == 0
    doc = json.loads(m.read_text())
    doc["buffers"] = []
    m.write_text(json.dumps(doc))
    r = cli("compare", str(m), "examples/run-a")
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        f"{ERROR}{m}: run A is a manifest that lists no dumps; nothing can be compared "
        "against it: hash the run folder that holds them with 'fastdiff hash RUN -o FILE'"
    ]


# --- item 8: a file given as RUN ------------------------------------------------------


def _peak_rss_kib(*args: str, cwd: Path) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run the CLI in a child of a fresh interpreter; return it and its peak RSS."""
    code = (
        "import resource, subprocess, sys\n"
        "p = subprocess.run([sys.executable, '-m', 'fastdiff', *sys.argv[1:]],"
        " capture_output=True, text=True)\n"
        "sys.stderr.write(p.stderr)\n"
        "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                       cwd=cwd, timeout=300, check=False, env={**os.environ})  # fmt: skip
    rc, rss = p.stdout.split()
    return subprocess.CompletedProcess(p.args, int(rc), "", p.stderr), int(rss)


@pytest.mark.parametrize(
    ("name", "first", "message"),
    [
        ("big.bin", b"", "not a run folder, nor a fastdiff manifest (not JSON: it starts with "
         "byte 0x00, a manifest with '{'); a .bin file is data: pass the run folder that holds "
         "the step_<N>_<name>.bin dumps"),
        ("big.json", b"{", "3,221,225,472 bytes, more than a manifest may have (at most "
         "1,073,741,824 bytes, 1 GiB); compare the run folder itself, or hash it with a larger "
         "--chunk-size"),
    ],
)  # fmt: skip
def test_a_huge_file_given_as_run_is_sniffed_not_read(
    tmp_path: Path, name: str, first: bytes, message: str
) -> None:
    big = tmp_path / name
    with open(big, "wb") as fh:  # sparse: 3 GiB that take no disk space
        fh.write(first)
        fh.truncate(3 << 30)
    r, rss_kib = _peak_rss_kib("compare", name, str(REPO / "examples/run-a"), cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.splitlines() == [f"{ERROR}{name}: {message}"]
    assert rss_kib < 256 * 1024  # reading the file whole would take 3 GiB


@pytest.mark.parametrize("path", ["examples/run-a/step_0_rewards.bin", "step_0_rewards.bin"])
def test_a_dump_file_given_as_run_names_its_folder(path: str) -> None:
    cwd = REPO / "examples/run-a" if "/" not in path else REPO
    folder = os.path.dirname(path) or "."
    r = cli("compare", path, str(REPO / "examples/run-b"), cwd=cwd)
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        f"{ERROR}{path}: this is a dump file; pass its folder {folder} instead"
    ]
    s = cli("stats", path, cwd=cwd)
    assert s.returncode == 2 and "this is a dump file" in s.stderr


def test_a_manifest_may_start_with_blanks_and_a_bom(tmp_path: Path) -> None:
    m = tmp_path / "m.json"
    assert cli("hash", "examples/run-a", "-o", str(m), "--no-cache").returncode == 0
    m.write_bytes(b"\xef\xbb\xbf \n\t" + m.read_bytes())
    r = cli("compare", str(m), "examples/run-a")
    assert r.returncode == 0, r.stderr


def test_the_manifest_size_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fastdiff.sources.manifest as manifest_module

    m = tmp_path / "m.json"
    assert cli("hash", "examples/run-a", "-o", str(m), "--no-cache").returncode == 0
    size = m.stat().st_size
    monkeypatch.setattr(manifest_module, "MAX_MANIFEST_BYTES", size)
    assert load_manifest(m).listing.files
    monkeypatch.setattr(manifest_module, "MAX_MANIFEST_BYTES", size - 1)
    with pytest.raises(ManifestError, match=f"{size:,} bytes, more than a manifest may have"):
        load_manifest(m)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"", "not JSON: the file is empty"),
        (b" \n", "not JSON: the file is blank"),
        (b"[1]", "not a JSON object: it starts with '[', a manifest with '{'"),
        (b"\x89PNG", "not JSON: it starts with byte 0x89, a manifest with '{'"),
    ],
)
def test_not_a_manifest_says_why(tmp_path: Path, content: bytes, why: str) -> None:
    p = tmp_path / "x"
    p.write_bytes(content)
    with pytest.raises(FastdiffError) as err:
        load_manifest(p)
    assert str(err.value) == f"{p}: {why}"
