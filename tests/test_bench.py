"""``fastdiff bench``: the structure of what it measures, never how fast.

The CLI runs for real in a subprocess on a tiny ladder (``--max-size 64K``,
one sample per case), and the tests check the JSON's structure and internal
consistency (GB/s is bytes over seconds, the ratio is the quotient of the
times), that the PNG plot is one that matplotlib reads back, that the
temporary dumps are removed (or kept with --keep), and that bad input is one
line and exit 2. The planning (ladder, memory and disk caps, scaling a run's
shape, its notes as data) and the helpers it uses in ``synth`` and
``timing`` are tested as library calls (the harness of the scripts in
benchmarks/ in ``test_bench_harness.py``). No test asserts a timing.
"""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import fastdiff

from fastdiff.bench import run as bench
from fastdiff.bench import synth, timing
from fastdiff.engine.progress import StatusLine
from fastdiff.errors import FastdiffError
from fastdiff.model.bench import (
    BenchCase,
    BenchNoteKind,
    BenchPlan,
    BenchResult,
    BenchShape,
    FloorKind,
    Machine,
    Measurement,
    Timing,
    noisy_load,
)
from fastdiff.presets import RL_STATE
from fastdiff.render.bench import note_text

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = "tests/fixtures"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30

RESULT_KEYS = {
    "shape", "case", "size", "files", "bytes", "jobs", "jobs_values", "executor", "seconds",
    "gbs", "times",
    "loops", "floor_seconds", "floor_gbs", "floor_times", "floor_loops", "floor_kind",
    "floor_candidates", "ratio_to_floor",
}  # fmt: skip


def bench_json(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    p = fastdiff("bench", "--workdir", str(tmp_path), "--format", "json", *args)
    assert p.returncode == 0, p.stderr
    return p, json.loads(p.stdout)


def check_result(r: dict[str, Any], repeat: int) -> None:
    assert set(r) == RESULT_KEYS
    assert r["case"] in ("identical", "late-diff")
    assert r["bytes"] == 2 * r["size"]
    assert r["executor"] in ("serial", "thread", "process")
    assert r["jobs"] == r["jobs_values"][0] and r["jobs_values"] == sorted(r["jobs_values"])
    assert len(r["times"]) == len(r["floor_times"]) == repeat
    assert r["loops"] >= 1 and r["floor_loops"] >= 1
    for key in ("seconds", "floor_seconds"):
        assert r[key] > 0
    assert r["seconds"] == sorted(r["times"])[repeat // 2]  # the median (odd repeat)
    assert math.isclose(r["gbs"], r["bytes"] / r["seconds"] / 1e9)
    assert math.isclose(r["floor_gbs"], r["bytes"] / r["floor_seconds"] / 1e9)
    assert math.isclose(r["ratio_to_floor"], r["seconds"] / r["floor_seconds"])
    # the floor is the faster of the two ways of reading the runs, and says which
    candidates = r["floor_candidates"]
    assert set(candidates) == {"readinto", "mmap+xxh3"}
    assert r["floor_kind"] == min(candidates, key=candidates.__getitem__)
    assert r["floor_seconds"] == candidates[r["floor_kind"]]
    assert r["floor_seconds"] == sorted(r["floor_times"])[repeat // 2]


# --- the command ---------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Any, str]:
    """One tiny run with a plot: (workdir, plot, JSON, stderr)."""
    work = tmp_path_factory.mktemp("bench")
    plot = work / "out.png"
    p, doc = bench_json(
        work, "--max-size", "64K", "--repeat", "1", "--warmup", "0", "--jobs", "2",
        "--plot", str(plot),
    )  # fmt: skip
    return work, plot, doc, p.stderr


def test_json_structure(tiny: tuple[Path, Path, Any, str]) -> None:
    work, _, doc, _ = tiny
    assert doc["schema_version"] == 3
    assert set(doc) == {
        "schema_version", "machine", "method", "plan", "folder", "kept", "elapsed_s", "results",
    }  # fmt: skip
    assert set(doc["machine"]) == {"cpus", "jobs_available", "python", "platform", "load_average"}
    assert set(doc["method"]) == {"fastdiff", "floor", "statistic", "gbs", "jobs", "late_diff"}
    assert "in-process" in doc["method"]["fastdiff"]
    assert "compare_runs" in doc["method"]["fastdiff"]
    plan = doc["plan"]
    assert plan["sizes"] == [4 * KIB, 16 * KIB, 64 * KIB]
    assert plan["max_size"] == plan["max_size_requested"] == 64 * KIB
    assert plan["jobs"] == [1, 2]
    assert (plan["executor"], plan["repeat"], plan["warmup"], plan["dtype"]) == (
        "auto", 1, 0, "f32"
    )  # fmt: skip
    assert plan["like"] is None
    # auto runs in-process below 128 MiB whatever --jobs: jobs 1 and 2 ran alike,
    # one row each (were two rows, the second labelled serial too)
    cases = [
        (r["shape"], r["size"], r["case"], r["jobs_values"], r["executor"]) for r in doc["results"]
    ]
    assert cases == [
        ("ladder", size, case, [1, 2], "serial")
        for size in plan["sizes"]
        for case in ("identical", "late-diff")
    ]
    for r in doc["results"]:
        check_result(r, repeat=1)
        assert r["files"] == 1
    # the temporary folder is gone, and nothing else was left in the workdir
    assert doc["kept"] is False
    assert not Path(doc["folder"]).exists()
    assert Path(doc["folder"]).parent == work
    assert sorted(p.name for p in work.iterdir()) == ["out.png"]


def test_plot_is_a_png_matplotlib_reads_back(tiny: tuple[Path, Path, Any, str]) -> None:
    _, plot, _, stderr = tiny
    assert plot.read_bytes()[:8] == PNG_SIGNATURE
    image = pytest.importorskip("matplotlib.image")
    pixels = image.imread(plot)
    assert pixels.ndim == 3 and pixels.shape[0] > 100 and pixels.shape[1] > 100
    assert stderr.endswith(f"fastdiff: plot written to {plot}\n")
    assert "\r" not in stderr  # no progress line: stderr is not a terminal


def test_text_table(tmp_path: Path) -> None:
    p = fastdiff(
        "bench", "--workdir", str(tmp_path), "--max-size", "16K", "--repeat", "1",
        "--warmup", "0", "--jobs", "2",
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("fastdiff bench: ")
    assert any("in-process library call" in line for line in lines)
    assert "one row per way fastdiff ran: jobs values that ran alike, in this thread " in p.stdout
    head = next(i for i, line in enumerate(lines) if line.startswith("|"))
    table = lines[head:]
    assert [c.strip() for c in table[0].strip("|").split("|")] == [
        "size", "case", "jobs", "executor", "fastdiff", "GB/s", "floor", "floor GB/s",
        "floor kind", "x floor",
    ]  # fmt: skip
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in table[2:]]
    assert {r[8] for r in rows} <= {"readinto", "mmap+xxh3"}
    assert [r[:4] for r in rows] == [  # jobs 1 and 2 ran alike: one row, not two
        ["4 KiB", "identical", "1-2", "serial"],
        ["4 KiB", "late-diff", "1-2", "serial"],
        ["16 KiB", "identical", "1-2", "serial"],
        ["16 KiB", "late-diff", "1-2", "serial"],
    ]


def test_jobs_that_run_differently_stay_apart(tmp_path: Path) -> None:
    """--executor thread: one job runs in this thread, two on a pool: two rows."""
    _, doc = bench_json(
        tmp_path, "--max-size", "4K", "--repeat", "1", "--warmup", "0", "--jobs", "2",
        "--executor", "thread",
    )  # fmt: skip
    assert [(r["case"], r["jobs"], r["jobs_values"], r["executor"]) for r in doc["results"]] == [
        ("identical", 1, [1], "serial"),
        ("identical", 2, [2], "thread"),
        ("late-diff", 1, [1], "serial"),
        ("late-diff", 2, [2], "thread"),
    ]
    for r in doc["results"]:
        check_result(r, repeat=1)


def test_like_a_real_run_scaled(tmp_path: Path) -> None:
    _, doc = bench_json(
        tmp_path, "--like", f"{FIXTURES}/identical/a", "--scale", "2", "--no-ladder",
        "--repeat", "1", "--warmup", "0", "--jobs", "1",
    )  # fmt: skip
    like = doc["plan"]["like"]
    assert like == {
        "run": f"{FIXTURES}/identical/a",
        "files": 136,
        "bytes": 2 * 20368,
        "source_bytes": 20368,
        "scale_requested": 2.0,
        "scale": 2.0,
        "schema": "rl-state",
    }
    assert doc["plan"]["sizes"] == []
    assert [(r["shape"], r["case"], r["files"], r["size"]) for r in doc["results"]] == [
        ("like", "identical", 136, 2 * 20368),
        ("like", "late-diff", 136, 2 * 20368),
    ]
    for r in doc["results"]:
        check_result(r, repeat=1)


def test_a_synthetic_safetensors_checkpoint(tmp_path: Path) -> None:
    _, doc = bench_json(
        tmp_path, "--checkpoint", "2M", "--no-ladder", "--repeat", "1", "--warmup", "0",
        "--jobs", "1", "--keep",
    )  # fmt: skip
    assert doc["plan"]["checkpoint"] == 2 << 20 and doc["plan"]["sizes"] == []
    assert [(r["shape"], r["case"], r["files"]) for r in doc["results"]] == [
        ("checkpoint", "identical", 1),
        ("checkpoint", "late-diff", 1),
    ]
    for r in doc["results"]:
        check_result(r, repeat=1)
    folder = Path(doc["folder"]) / "checkpoint"
    a, b = folder / "a" / "model.safetensors", folder / "b" / "model.safetensors"
    assert abs(a.stat().st_size - (2 << 20)) < (2 << 20) // 4
    r = fastdiff("compare", a, b, "--format", "json")
    assert r.returncode == 1, r.stderr
    report = json.loads(r.stdout)
    (differs,) = [x for x in report["buffers"] if x["status"] != "equal"]
    assert differs["n_diff"] == 1 and differs["group"] == "model"
    assert len(report["buffers"]) > 5 and {x["dtype"] for x in report["buffers"]} == {"f32"}


def test_like_with_the_ladder_and_keep(tmp_path: Path) -> None:
    p, doc = bench_json(
        tmp_path, "--max-size", "4K", "--like", f"{FIXTURES}/only_in_one/b", "--scale", "0.5",
        "--repeat", "1", "--warmup", "0", "--jobs", "1", "--keep",
    )  # fmt: skip
    assert [(r["shape"], r["case"]) for r in doc["results"]] == [
        ("ladder", "identical"),
        ("ladder", "late-diff"),
        ("like", "identical"),
        ("like", "late-diff"),
    ]
    folder = Path(doc["folder"])
    assert doc["kept"] is True
    assert p.stderr.endswith(f"fastdiff: dumps kept in {folder}\n")
    a, b = folder / "like" / "a", folder / "like" / "b"
    names = sorted(f.name for f in a.iterdir())
    assert names == sorted(f.name for f in Path(FIXTURES, "only_in_one", "b").iterdir())
    # half the size, in whole elements: isv_full 757 f32 -> 378; 16 u8 -> 8
    assert (a / "step_0_isv_full.bin").stat().st_size == 378 * 4
    assert (a / "step_0_unit_active.bin").stat().st_size == 8
    # the late difference: one bit, in the last step's largest file
    differing = [n for n in names if (a / n).read_bytes() != (b / n).read_bytes()]
    assert differing == ["step_1_isv_full.bin"]
    ladder = folder / f"size-{4 * KIB}"
    assert (ladder / "a" / "step_0_buffer.bin").stat().st_size == 4 * KIB


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--max-size", "1K"), "--max-size 1024: must be at least 4K, the smallest rung"),
        (("--max-size", "lots"), "argument --max-size: not a size: 'lots'"),
        (("--repeat", "0"), "argument --repeat: must be >= 1, got '0'"),
        (("--scale", "0"), "argument --scale: must be a finite number > 0, got '0'"),
        (("--like", "tests/fixtures/nope"), "--like tests/fixtures/nope: run folder not found"),
        (("--no-ladder",), "--no-ladder leaves nothing to measure; add --like RUN"),
        (("--plot", "/nonexistent/x.png"), "--plot /nonexistent/x.png: folder /nonexistent does"),
        (("--workdir", "/nonexistent"), "--workdir /nonexistent: not a folder"),
        (("--plot", ""), "--plot: empty file name; give the PNG file to write"),
        (
            ("--chunk-size", "12"),
            "--chunk-size must be a positive multiple of 8 bytes, at most 1 GiB, got 12",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    p = fastdiff("bench", *args)
    assert p.returncode == 2
    assert p.stdout == ""
    assert len(p.stderr.splitlines()) == 1, p.stderr
    assert p.stderr.startswith("fastdiff: error: " + message)


def test_like_folder_without_dumps(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    p = fastdiff("bench", "--like", str(empty))
    assert p.returncode == 2
    assert p.stderr == (
        f"fastdiff: error: --like {empty}: no step_<N>_<name>.bin dumps in it; give a run "
        "folder that holds dumps, or a manifest written by 'fastdiff hash'\n"
    )


def test_plot_without_matplotlib_is_a_clear_error(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "sys.modules['matplotlib'] = None  # as if not installed\n"
        "from fastdiff.cli import main\n"
        f"sys.exit(main(['bench', '--max-size', '4K', '--plot', {str(tmp_path / 'x.png')!r}]))\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 2
    assert p.stderr == (
        "fastdiff: error: --plot needs matplotlib, the optional extra 'plot': pip install "
        "'fastdiff-dumps[plot]' (in a checkout of fastdiff: pip install '.[plot]')\n"
    )
    assert p.stdout == ""
    assert list(tmp_path.iterdir()) == []  # failed before writing anything


# --- planning ------------------------------------------------------------------


def test_ladders() -> None:
    assert bench.ladder(4 * KIB) == (4 * KIB,)
    assert bench.ladder(64 * KIB) == (4 * KIB, 16 * KIB, 64 * KIB)
    assert bench.ladder(100 * KIB) == (4 * KIB, 16 * KIB, 64 * KIB, 100 * KIB)
    assert bench.ladder(GIB)[-3:] == (64 * MIB, 256 * MIB, GIB)
    assert len(bench.ladder(GIB)) == 10
    assert bench.ladder(KIB) == ()
    assert bench.jobs_ladder(1) == (1,)
    assert bench.jobs_ladder(2) == (1, 2)
    assert bench.jobs_ladder(6) == (1, 2, 4, 6)
    assert bench.jobs_ladder(8) == (1, 2, 4, 8)


def plan(**kw: Any) -> BenchPlan:
    kw.setdefault("mem_available", 64 * GIB)
    kw.setdefault("disk_free", 64 * GIB)
    kw.setdefault("jobs", 2)
    planned, schema = bench.plan_bench(**kw)
    assert planned.schema == schema.name
    return planned


MAX_SIZE_NOTES = (BenchNoteKind.MAX_SIZE_ROUNDED, BenchNoteKind.MAX_SIZE_LOWERED)


def test_plan_keeps_what_fits() -> None:
    p = plan()
    assert p.max_size == p.max_size_requested == GIB
    assert p.sizes == bench.ladder(GIB)
    assert [n for n in p.notes if n.kind in MAX_SIZE_NOTES] == []


@pytest.mark.parametrize(
    ("mem", "disk", "keep", "at_least", "at_most"),
    [
        (2 * GIB, 64 * GIB, False, 512 * MIB, 512 * MIB),  # a pair in half the memory
        (64 * GIB, 2 * GIB, False, 512 * MIB, 512 * MIB),  # a pair in half the disk
        (None, 1 * GIB, False, 256 * MIB, 256 * MIB),  # no /proc/meminfo: the disk decides
        # --keep: every rung stays on disk; 1 GiB - 341 MiB of smaller rungs would just fit
        (64 * GIB, 4 * GIB, True, 600 * MIB, 683 * MIB),
    ],
)
def test_plan_lowers_max_size_to_fit(
    mem: int | None, disk: int, keep: bool, at_least: int, at_most: int
) -> None:
    p = plan(mem_available=mem, disk_free=disk, keep=keep)
    assert at_least <= p.max_size <= at_most
    assert p.max_size % MIB == 0
    assert p.sizes[-1] == p.max_size
    on_disk = 2 * (sum(p.sizes) if keep else p.max_size)
    assert on_disk <= disk / 2
    if mem is not None:
        assert 2 * p.max_size <= mem / 2
    (note,) = [n for n in p.notes if n.kind in MAX_SIZE_NOTES]
    assert note.kind is BenchNoteKind.MAX_SIZE_LOWERED
    assert (note["requested"], note["size"], note["keep"]) == (GIB, p.max_size, keep)
    assert (note["memory"], note["disk"]) == (mem, disk)


def test_plan_refuses_when_nothing_fits() -> None:
    with pytest.raises(FastdiffError, match="not enough room for even a 4 KiB pair"):
        plan(mem_available=8 * KIB)


def test_plan_lowers_the_scale_of_a_like_run() -> None:
    run = f"{ROOT}/{FIXTURES}/identical/a"  # 20368 bytes
    p = plan(like=run, scale=100.0, schema=RL_STATE, mem_available=4 * MIB, ladder_on=False)
    assert p.like is not None
    assert p.like.scale < 100
    assert 2 * p.like.bytes <= 2 * MIB
    (note,) = [n for n in p.notes if n.kind is BenchNoteKind.SCALE_LOWERED]
    assert (note["requested"], note["scale"], note["like"]) == (100.0, p.like.scale, run)
    assert note["memory"] == 4 * MIB


def test_serial_executor_measures_one_job() -> None:
    p = plan(executor="serial", jobs=4)
    assert p.jobs == (1,)
    assert [n.kind for n in p.notes if n.kind is not BenchNoteKind.NOISY_LOAD] == [
        BenchNoteKind.SERIAL_ONE_JOB
    ]


def test_the_words_of_the_notes() -> None:
    """The one place the notes' sentences are checked (``render.bench``)."""
    p = plan(max_size=GIB + 5, mem_available=2 * GIB, disk_free=64 * GIB, keep=True)
    texts = [note_text(n) for n in p.notes if n.kind in MAX_SIZE_NOTES]
    assert texts[0] == f"--max-size {GIB + 5} rounded down to {GIB} bytes"
    assert texts[1].startswith("--max-size lowered from 1.0 GiB to ")
    assert texts[1].endswith(
        ": a pair of files must fit in half of 2.0 GiB of memory available and 64.0 GiB free "
        f"in {p.workdir} (with --keep, every rung's pair stays on disk)"
    )
    run = f"{ROOT}/{FIXTURES}/identical/a"
    p = plan(like=run, scale=100.0, schema=RL_STATE, mem_available=4 * MIB, ladder_on=False)
    (scaled,) = [note_text(n) for n in p.notes if n.kind is BenchNoteKind.SCALE_LOWERED]
    assert scaled.startswith(f"--scale lowered from 100 to {p.like.scale:g}: a pair of runs like ")
    assert "must fit in half of 4.0 MiB of memory available" in scaled
    p = plan(executor="serial", jobs=4)
    assert "--executor serial runs one job: measuring jobs 1 only" in map(note_text, p.notes)


def test_like_shape_and_scale() -> None:
    shape, schema = bench.like_shape(f"{ROOT}/{FIXTURES}/malformed/a", RL_STATE)
    assert schema is RL_STATE
    assert len(shape.files) == 68
    assert shape.source_bytes == shape.bytes == 2 * 5092 - (64 - 10)  # one file is 10 bytes
    bad = next(f for f in shape.files if (f.step, f.name) == (0, "unit_entry_price"))
    assert (bad.dtype, bad.size) == ("f32", 10)
    scaled = bench.scale_shape(shape, 1.0)
    # whole elements: the 10-byte f32 file is rounded down to 8 bytes
    bad = next(f for f in scaled.files if (f.step, f.name) == (0, "unit_entry_price"))
    assert bad.size == 8
    tiny = bench.scale_shape(shape, 0.001)
    assert min(f.size for f in tiny.files) == 1  # a non-empty file keeps one element
    assert all(f.size % (1 if f.dtype == "u8" else 4) == 0 for f in tiny.files)


def test_like_a_manifest_reads_it_with_the_schema_it_records(tmp_path: Path) -> None:
    """As compare and stats do: a --like manifest hashed under a schema is
    shaped with that schema's dtypes unless --schema says otherwise."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "step_0_logits.bin").write_bytes(bytes(64))
    schema_file = tmp_path / "my.toml"
    schema_file.write_text('name = "my"\n[[group]]\nkey = "P"\n[group.members]\nlogits = "f64"\n')
    manifest = tmp_path / "run.json"
    h = subprocess.run(
        [sys.executable, "-m", "fastdiff", "hash", str(run), "--schema", str(schema_file),
         "--no-cache", "-o", str(manifest)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert h.returncode == 0, h.stderr
    shape, schema = bench.like_shape(str(manifest), None)
    assert schema.name == "my"
    assert [(f.name, f.dtype) for f in shape.files] == [("logits", "f64")]
    shape, schema = bench.like_shape(str(manifest), RL_STATE)
    assert [(f.name, f.dtype) for f in shape.files] == [("logits", "u8")]
    assert plan(like=str(manifest), ladder_on=False).schema == "my"


def test_memory_available(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 100 kB\nMemFree: 10 kB\nMemAvailable:   2048 kB\n")
    assert bench.memory_available(str(meminfo)) == 2 * MIB
    assert bench.memory_available(str(tmp_path / "nope")) is None


# --- the shared helpers ---------------------------------------------------------


def test_time_calls_interleaves_rounds_and_loops() -> None:
    order: list[str] = []
    calls = {name: (lambda name=name: order.append(name)) for name in ("a", "b", "c")}
    times = timing.time_calls(calls, repeat=3, warmup=1, loops={"b": 2})
    assert order == [
        *"abbc",  # warm-up: a round like the others, untimed
        *"abbc",  # round 1: b twice per sample
        *"bbca",  # round 2 starts one later
        *"cabb",
    ]
    assert {k: len(v) for k, v in times.items()} == {"a": 3, "b": 3, "c": 3}
    with pytest.raises(ValueError, match="repeat must be >= 1"):
        timing.time_calls(calls, repeat=0)


def test_autorange_grows_the_loop_for_quick_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    n = 0

    def quick() -> None:
        nonlocal n
        n += 1

    # A clock that says 1 µs per call: on a busy machine one real call may take
    # longer than the whole sample (was a flaky "1 > 1").
    def time_loop(fn: Callable[[], object], loops: int = 1) -> float:
        for _ in range(loops):
            fn()
        return 1e-6

    monkeypatch.setattr(timing, "time_loop", time_loop)
    loops = timing.autorange(quick, min_time=0.001)
    assert loops == 1200  # 1 call, then 1.2 x 0.001 s / 1 µs
    assert n == 1 + loops
    assert timing.autorange(lambda: None, min_time=10.0, max_loops=8) == 8


def test_read_once_into_a_reused_aligned_buffer(tmp_path: Path) -> None:
    a, b = synth.write_pair(tmp_path / "a", tmp_path / "b", "x", "f32", 3 * MIB + 4)
    buf = timing.aligned_buffer()
    assert len(buf) == MIB
    import ctypes

    address = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    assert address % 4096 == 0
    assert timing.read_once([a, b], buf) == 2 * (3 * MIB + 4)
    assert timing.read_once([tmp_path / "a"]) == 3 * MIB + 4


def test_late_offset() -> None:
    assert synth.late_offset(4096, 4) == 4092
    assert synth.late_offset(8192, 4) == 4096
    assert synth.late_offset(GIB, 4) == GIB - 4096
    assert synth.late_offset(10, 4) == 4  # the last whole element
    with pytest.raises(ValueError, match="holds no 4-byte element"):
        synth.late_offset(2, 4)


def test_flip_element_changes_one_bit_in_place(tmp_path: Path) -> None:
    a, b = synth.write_pair(tmp_path / "a", tmp_path / "b", "x", "f32", 64 * KIB)
    synth.flip_element(b, -4094, "f32")  # inside the element at 64 KiB - 4096
    da, db = a.read_bytes(), b.read_bytes()
    diff = [i for i in range(len(da)) if da[i] != db[i]]
    assert diff == [64 * KIB - 4096]
    assert da[diff[0]] ^ db[diff[0]] == 1
    with pytest.raises(ValueError, match="outside a file"):
        synth.flip_element(b, 64 * KIB, "f32")


def test_write_files_is_deterministic_and_files_differ(tmp_path: Path) -> None:
    spec = [(0, "x", "f32", 64), (0, "y", "f32", 64), (3, "x", "u8", 5)]
    first = synth.write_files(tmp_path / "one", spec, seed=1)
    again = synth.write_files(tmp_path / "two", spec, seed=1)
    assert [p.name for p in first] == ["step_0_x.bin", "step_0_y.bin", "step_3_x.bin"]
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in again]
    assert first[0].read_bytes() != first[1].read_bytes()
    assert [p.stat().st_size for p in first] == [64, 64, 5]


def test_status_line() -> None:
    out = io.StringIO()
    status = StatusLine(out)
    status.close()
    assert out.getvalue() == ""
    status.show("one")
    status.show("two")
    status.close()
    assert out.getvalue() == "\r\x1b[Kone\r\x1b[Ktwo\r\x1b[K"


def test_bench_and_plot_modules_do_not_import_matplotlib_at_import() -> None:
    code = (
        "import sys\n"
        "import fastdiff.bench.run, fastdiff.bench.plot, fastdiff.cli\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('matplotlib', 'numpy', 'numba')))\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert p.stdout == "[]\n", p.stderr
    assert os.path.exists(ROOT / "fastdiff" / "bench" / "plot.py")


def test_plan_refuses_a_like_run_that_cannot_fit() -> None:
    run = f"{ROOT}/{FIXTURES}/identical/a"  # 136 files
    with pytest.raises(FastdiffError, match="even one element per file does not fit"):
        plan(like=run, schema=RL_STATE, mem_available=1000, ladder_on=False)


def _folder_state(folder: Path) -> list[tuple[str, int, int]]:
    """Every entry below ``folder`` (and the folder) with its mtime and ctime."""
    paths = [folder, *sorted(folder.rglob("*"))]
    return [(str(p), p.lstat().st_mtime_ns, p.lstat().st_ctime_ns) for p in paths]


@pytest.mark.parametrize("where", ["run", "below", "link", "tmpdir"])
def test_workdir_inside_the_like_run_is_refused_untouched(tmp_path: Path, where: str) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "step_0_buffer.bin").write_bytes(b"\0" * 64)
    (run / "sub").mkdir()
    link = tmp_path / "link"
    link.symlink_to(run, target_is_directory=True)
    workdir = {"run": run, "below": run / "sub", "link": link / "sub", "tmpdir": None}[where]
    before = _folder_state(run)
    args = ["bench", "--like", str(run), "--no-ladder", "--repeat", "1", "--warmup", "0"]
    args += ["--keep"]  # would keep the dumps there, were it allowed
    env = dict(os.environ)
    if workdir is None:
        env["TMPDIR"] = str(run / "sub")
    else:
        args += ["--workdir", str(workdir)]
    p = fastdiff(*args, env=env)
    assert p.returncode == 2, p.stderr
    assert p.stdout == ""
    shown = f"--workdir {workdir}" if workdir else f"TMPDIR={run / 'sub'}"
    assert p.stderr == (
        f"fastdiff: error: {shown} is inside the run folder {run}, and fastdiff never writes "
        "into a run folder; give a --workdir outside it\n"
    )
    assert _folder_state(run) == before


def test_workdir_next_to_the_like_run_is_fine(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "step_0_buffer.bin").write_bytes(b"\0" * 64)
    before = _folder_state(run)
    bench_json(
        tmp_path, "--like", str(run), "--no-ladder", "--repeat", "1", "--warmup", "0",
        "--jobs", "1",
    )  # fmt: skip
    assert _folder_state(run) == before


def test_plot_inside_the_like_run_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "step_0_buffer.bin").write_bytes(b"\0" * 64)
    before = _folder_state(run)
    p = fastdiff("bench", "--like", str(run), "--no-ladder", "--plot", str(run / "x.png"))
    assert p.returncode == 2
    assert p.stderr == (
        f"fastdiff: error: --plot {run / 'x.png'} is inside the run folder {run}, and fastdiff "
        "never writes into a run folder; write the plot elsewhere\n"
    )
    assert _folder_state(run) == before


def test_hash_once_reads_every_byte_on_any_number_of_threads(tmp_path: Path) -> None:
    a, b = synth.write_pair(tmp_path / "a", tmp_path / "b", "x", "f32", MIB + 4)
    empty = tmp_path / "a" / "step_1_empty.bin"
    empty.touch()  # an empty file cannot be mapped: it counts 0 bytes
    for threads in (1, 2, 3, 8):
        assert timing.hash_once([a, b, empty], threads) == 2 * (MIB + 4)
    assert timing.hash_once([tmp_path / "a"], threads=2) == MIB + 4  # a folder: its files
    assert timing.hash_once([], threads=2) == 0
    with pytest.raises(FileNotFoundError):  # raised in a worker thread, re-raised here
        timing.hash_once([a, tmp_path / "nope"], threads=2)


# --- the plot, drawn from made-up results ----------------------------------------------


def made_up(load: float | None, executors: dict[int, str]) -> BenchResult:
    """A result of two rungs, both cases, with the jobs values of ``executors``
    (jobs -> what ran) grouped as ``_measure`` groups them; each case its own floor."""
    p = plan(jobs=max(executors), max_size=16 * KIB)
    rows = []
    for size in p.sizes:
        for case, floor_s in ((BenchCase.IDENTICAL, 1e-4), (BenchCase.LATE_DIFF, 2e-4)):
            alike: dict[tuple[str, int], list[int]] = {}
            for jobs, ran in executors.items():
                alike.setdefault((ran, 0 if ran == "serial" else jobs), []).append(jobs)
            for (ran, _), values in alike.items():
                seconds = 1e-3 * values[0]
                rows.append(
                    Measurement(
                        shape=BenchShape.LADDER,
                        case=case,
                        size=size,
                        files=1,
                        jobs=values[0],
                        jobs_values=tuple(values),
                        executor=ran,
                        fastdiff=Timing(seconds, (seconds,), 1),
                        floor=Timing(floor_s, (floor_s,), 1),
                        floor_kind=FloorKind.READINTO,
                        floor_candidates=(
                            (FloorKind.READINTO, floor_s),
                            (FloorKind.MMAP_XXH3, 2 * floor_s),
                        ),
                    )
                )
    machine = Machine(2, 2, "CPython 3", "Linux", load)
    return BenchResult(p, machine, tuple(rows), "/nowhere", False, 1.0)


def plot_lines(result: BenchResult) -> dict[str, list[float]]:
    pytest.importorskip("matplotlib")
    from fastdiff.bench.plot import draw

    (ax,) = draw(result).axes
    lines = {line.get_label(): list(line.get_ydata()) for line in ax.get_lines()}
    assert len(lines) == len(ax.get_lines())  # no two lines alike
    return lines


def test_plot_draws_a_line_per_way_it_ran_and_a_floor_per_case() -> None:
    lines = plot_lines(made_up(None, {1: "serial", 2: "serial"}))
    identical_floor = [2 * 4 * KIB / 1e-4 / 1e9, 2 * 16 * KIB / 1e-4 / 1e9]
    late_floor = [2 * 4 * KIB / 2e-4 / 1e9, 2 * 16 * KIB / 2e-4 / 1e9]
    assert lines == {
        "identical, jobs 1-2, serial": pytest.approx([2 * 4 * KIB / 1e6, 2 * 16 * KIB / 1e6]),
        "late-diff, jobs 1-2, serial": pytest.approx([2 * 4 * KIB / 1e6, 2 * 16 * KIB / 1e6]),
        "floor, identical: read both files": pytest.approx(identical_floor),
        "floor, late-diff: read both files": pytest.approx(late_floor),
    }
    lines = plot_lines(made_up(None, {1: "serial", 2: "thread", 4: "thread"}))
    assert sorted(lines) == [
        "floor, identical: read both files",
        "floor, late-diff: read both files",
        "identical, jobs 1, serial",
        "identical, jobs 2, thread",
        "identical, jobs 4, thread",
        "late-diff, jobs 1, serial",
        "late-diff, jobs 2, thread",
        "late-diff, jobs 4, thread",
    ]


@pytest.mark.parametrize(("load", "shown"), [(None, False), (0.9, False), (1.5, True)])
def test_plot_shows_a_noisy_load_average(load: float | None, shown: bool) -> None:
    pytest.importorskip("matplotlib")
    from fastdiff.bench.plot import draw

    (ax,) = draw(made_up(load, {1: "serial"})).axes
    note = f"load average {load or 0:.2f} on 2 CPUs at start: other work was running, timings "
    assert ax.get_title().startswith("fastdiff compare_runs, in-process, median of 5: 2 CPUs")
    assert ax.get_title().endswith("\n" + note + "are noisy") == shown
    assert ("load average" in ax.get_title()) == shown


def test_plot_png_of_made_up_results_reads_back(tmp_path: Path) -> None:
    image = pytest.importorskip("matplotlib.image")
    from fastdiff.bench.plot import write_plot

    write_plot(made_up(3.0, {1: "serial", 2: "thread"}), tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:8] == PNG_SIGNATURE
    assert image.imread(tmp_path / "p.png").shape[2] in (3, 4)


def test_noisy_load_is_per_cpu() -> None:
    assert not noisy_load(None, 2)
    assert not noisy_load(1.0, 2)
    assert noisy_load(1.01, 2)
    assert noisy_load(0.6, None)  # CPUs unknown: counted as one


def test_a_note_is_shown_once_on_a_terminal(tmp_path: Path) -> None:
    """The notes go to stderr at the start; when stdout is the same terminal,
    the text report does not repeat them (in a file, it keeps them)."""
    import pty
    import select

    args = [sys.executable, "-m", "fastdiff", "bench", "--max-size", "5000", "--repeat", "1",
            "--warmup", "0", "--jobs", "1", "--workdir", str(tmp_path)]  # fmt: skip
    note = "--max-size 5000 rounded down to 4096 bytes"
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, stdout=slave, stderr=slave, cwd=ROOT)
    os.close(slave)
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.wait(timeout=60) == 0
    assert out.decode().count(note) == 1, out.decode()
    piped = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert piped.returncode == 0
    assert (piped.stderr.count(note), piped.stdout.count(note)) == (1, 1)


def test_the_results_are_model_values() -> None:
    """The plan and the results are ``model.bench`` values: equal by their
    fields, copied with ``replace``, plain data with ``as_dict``; their kinds
    are members, each the string the JSON writes."""
    result = made_up(None, {1: "serial"})
    again = made_up(None, {1: "serial"})
    assert result == again and hash(result) == hash(again)
    m = result.measurements[0]
    assert m.replace(size=8) != m and m.replace(size=8).size == 8
    doc = m.as_dict()
    assert doc["fastdiff"] == {"seconds": m.fastdiff.seconds, "times": m.fastdiff.times, "loops": 1}
    assert (doc["shape"], doc["case"], doc["floor_kind"]) == ("ladder", "identical", "readinto")
    assert BenchCase.of("late-diff") is BenchCase.LATE_DIFF
    assert BenchShape.ALL == ("ladder", "like", "checkpoint")
    assert FloorKind.ALL == ("readinto", "mmap+xxh3")
    with pytest.raises(ValueError, match="is no BenchCase"):
        BenchCase.of("early-diff")
    assert all(isinstance(n.kind, BenchNoteKind) for n in plan(max_size=GIB + 5).notes)
