"""``fastdiff stats``: the sizes of a run's dumps, checked exactly on the fixtures.

The committed fixtures are rl-state runs whose layout is known (tests/
make_fixtures.py): the 34 buffers of each step hold 16 elements, except
``isv_full`` (757 f32). The expected JSON is built here from that layout,
independently of fastdiff.stats, and compared whole; a few totals are also
written out as literals. The CLI runs in a subprocess from the repo root.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import make_fixtures
import pytest
from helpers import fastdiff

from fastdiff.presets import RL_STATE

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = "tests/fixtures"
BATCH = 16
ISV = 757
ITEMSIZE = {"u8": 1, "u32": 4, "i32": 4, "f32": 4, "f64": 8}
DTYPE_ORDER = ["u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f16", "bf16", "f32", "f64"]
#: (name, group, dtype) of every rl-state buffer the fixtures dump (groups C to F:
#: ``make_fixtures.DUMPED_GROUPS``), in pipeline order
MEMBERS = [
    (m.pattern, g.key, m.dtype)
    for g in RL_STATE.groups
    if g.key in make_fixtures.DUMPED_GROUPS
    for m in g.members
]
TITLES = {g.key: g.title for g in RL_STATE.groups} | {"other": "not in the schema"}
GROUP_ORDER = {"A": 0, "B": 1, "C": 2, "D": 3, "E": 4, "F": 5, "other": 6}


def stats_json(*args: str, malformed: int = 0) -> dict[str, Any]:
    """The JSON stats; ``malformed``: how many malformed files the run holds
    (each one line on stderr, and exit 2)."""
    p = fastdiff("stats", *args, "--format", "json")
    assert p.returncode == (2 if malformed else 0), p.stderr
    assert len(p.stderr.splitlines()) == malformed, p.stderr
    doc = json.loads(p.stdout)
    assert isinstance(doc, dict)
    return doc


# --- the expected report, from the fixture layout ---------------------------

File = tuple[int, str, str, str, int]  # step, name, group, dtype, bytes


def rl_files(steps: list[int], drop: frozenset[tuple[int, str]] = frozenset()) -> list[File]:
    return [
        (step, name, group, dtype, (ISV if name == "isv_full" else BATCH) * ITEMSIZE[dtype])
        for step in steps
        for name, group, dtype in MEMBERS
        if (step, name) not in drop
    ]


def tally(files: list[File]) -> dict[str, Any]:
    dtypes = {f[3] for f in files}
    return {
        "files": len(files),
        "elements": sum(f[4] // ITEMSIZE[f[3]] for f in files if f[4] % ITEMSIZE[f[3]] == 0),
        "bytes": sum(f[4] for f in files),
        "dtypes": sorted(dtypes, key=DTYPE_ORDER.index),
        "malformed": sum(f[4] % ITEMSIZE[f[3]] != 0 for f in files),
    }


def expected(run: str, files: list[File], top: int = 10, source: str = "folder") -> dict[str, Any]:
    steps = sorted({f[0] for f in files})
    names = sorted({f[1] for f in files})
    groups = sorted({f[2] for f in files}, key=GROUP_ORDER.__getitem__)
    per_step = [sum(f[4] for f in files if f[0] == s) for s in steps]
    largest = []
    missing = []
    for name in names:
        mine = [f for f in files if f[1] == name]
        _, _, group, dtype, _ = mine[0]
        biggest = max(f[4] for f in mine)
        largest.append(
            {
                "name": name,
                "group": group,
                "dtype": dtype,
                "bytes": biggest,
                "elements": biggest // ITEMSIZE[dtype] if biggest % ITEMSIZE[dtype] == 0 else None,
                "steps": len(mine),
                "total_bytes": sum(f[4] for f in mine),
            }
        )
        absent = sorted(set(steps) - {f[0] for f in mine})
        if absent:
            missing.append(
                {
                    "name": name,
                    "group": group,
                    "missing_steps": absent,
                    "present_steps": len(mine),
                }
            )
    largest.sort(key=lambda b: (-b["bytes"], -b["total_bytes"], GROUP_ORDER[b["group"]], b["name"]))
    missing.sort(key=lambda m: (GROUP_ORDER[m["group"]], m["name"]))
    return {
        "schema_version": 1,
        "run": run,
        "source": source,
        "schema": "rl-state",
        "totals": {
            "steps": len(steps),
            "buffers": len(names),
            **tally(files),
            "bytes_per_step": {"min": min(per_step), "max": max(per_step)},
        },
        # raw dumps: each its own file, of the dump's bytes; a manifest: no data
        "disk": None
        if source == "manifest"
        else {
            "files": len(files),
            "bytes": sum(f[4] for f in files),
            "digests_only": 0,
            "digests_only_bytes": 0,
        },
        "steps": [
            {
                "step": s,
                **tally([f for f in files if f[0] == s]),
                "groups": [
                    {"group": g, **tally([f for f in files if f[0] == s and f[2] == g])}
                    for g in groups
                    if any(f[0] == s and f[2] == g for f in files)
                ],
            }
            for s in steps
        ],
        "groups": [
            {
                "group": g,
                "title": TITLES[g],
                "buffers": len({f[1] for f in files if f[2] == g}),
                "steps": len({f[0] for f in files if f[2] == g}),
                **tally([f for f in files if f[2] == g]),
            }
            for g in groups
        ],
        "largest": largest[:top],
        "missing": missing,
        "malformed": [],
        "skipped": [],
        "errors": [],
    }


# --- the committed fixtures ---------------------------------------------------


def test_identical_run() -> None:
    run = f"{FIXTURES}/identical/a"
    doc = stats_json(run)
    assert doc == expected(run, rl_files([0, 1, 2, 3]))
    # the same figures, written out
    assert doc["totals"] == {
        "steps": 4,
        "buffers": 34,
        "files": 136,
        "elements": 5140,
        "bytes": 20368,
        "dtypes": ["u8", "u32", "i32", "f32"],
        "malformed": 0,
        "bytes_per_step": {"min": 5092, "max": 5092},
    }
    assert [(g["group"], g["files"], g["elements"], g["bytes"]) for g in doc["groups"]] == [
        ("C", 8, 128, 512),
        ("D", 52, 832, 3136),
        ("E", 4, 3028, 12112),
        ("F", 72, 1152, 4608),
    ]
    assert doc["largest"][0] == {
        "name": "isv_full",
        "group": "E",
        "dtype": "f32",
        "bytes": 3028,
        "elements": 757,
        "steps": 4,
        "total_bytes": 12112,
    }
    assert [b["name"] for b in doc["largest"][1:4]] == [
        "action_prng_state",
        "iqn_prng_state",
        "close_unit_index",
    ]
    assert doc["missing"] == []


def test_late_steps_run() -> None:
    run = f"{FIXTURES}/late_steps/a"
    doc = stats_json(run)
    steps = [*range(8), 12]
    assert doc == expected(run, rl_files(steps))
    assert [s["step"] for s in doc["steps"]] == steps
    assert doc["totals"]["files"] == 306
    assert doc["totals"]["bytes"] == 9 * 5092
    # steps 8-11 hold no buffer at all: no buffer is missing from a step that exists
    assert doc["missing"] == []


def test_only_in_one_run_lists_the_missing_buffer() -> None:
    run = f"{FIXTURES}/only_in_one/b"
    doc = stats_json(run)
    assert doc == expected(run, rl_files([0, 1], drop=frozenset({(1, "ph_mu")})))
    assert doc["missing"] == [
        {"name": "ph_mu", "group": "F", "missing_steps": [1], "present_steps": 1}
    ]
    assert doc["totals"]["bytes_per_step"] == {"min": 5092 - 64, "max": 5092}
    assert [(s["step"], s["files"]) for s in doc["steps"]] == [(0, 34), (1, 33)]
    other_a = stats_json(f"{FIXTURES}/only_in_one/a")["missing"]
    assert other_a == [
        {"name": "unit_active", "group": "D", "missing_steps": [0], "present_steps": 1}
    ]


def test_manifest_gives_the_same_stats(tmp_path: Path) -> None:
    run = f"{FIXTURES}/only_in_one/b"
    manifest = tmp_path / "b.manifest.json"
    p = fastdiff("hash", run, "-o", str(manifest), "--no-cache")
    assert p.returncode == 0, p.stderr
    doc = stats_json(str(manifest))
    want = expected(
        str(manifest), rl_files([0, 1], drop=frozenset({(1, "ph_mu")})), source="manifest"
    )
    assert doc == want
    # The same, but for what lies on disk: a manifest holds digests only.
    assert {k: v for k, v in doc.items() if k not in ("run", "source", "disk")} == {
        k: v for k, v in stats_json(run).items() if k not in ("run", "source", "disk")
    }


@pytest.mark.parametrize("top", ["0", "1", "3", "100"])
def test_top(top: str) -> None:
    run = f"{FIXTURES}/identical/a"
    doc = stats_json(run, "--top", top)
    assert doc == expected(run, rl_files([0, 1, 2, 3]), top=int(top))
    assert len(doc["largest"]) == min(int(top), 34)


def test_malformed_size_is_reported_and_is_trouble() -> None:
    run = f"{FIXTURES}/malformed/a"  # step 0 unit_entry_price has 10 bytes
    doc = stats_json(run, malformed=1)
    assert doc["malformed"] == [
        {
            "step": 0,
            "name": "unit_entry_price",
            "group": "D",
            "dtype": "f32",
            "bytes": 10,
            # stats compares nothing, so it does not say that nothing was compared
            "message": "size 10 bytes is not a whole number of 4-byte f32 elements "
            "(truncated dump, or wrong dtype in the schema?)",
        }
    ]
    # group D at step 0: 11 files of 16 four-byte elements, unit_active (16 u8), and the
    # malformed file, which adds its bytes and no elements
    assert doc["steps"][0]["groups"][1] == {
        "group": "D",
        "files": 13,
        "elements": 11 * 16 + 16,
        "bytes": 11 * 64 + 16 + 10,
        "dtypes": ["u8", "i32", "f32"],
        "malformed": 1,
    }
    assert doc["totals"]["malformed"] == 1
    text = fastdiff("stats", run)
    assert text.returncode == 2  # trouble, as compare and hash say of it
    assert text.stderr == (
        f"fastdiff: error: {run}/step_0_unit_entry_price.bin: size 10 bytes is not a whole "
        "number of 4-byte f32 elements (truncated dump, or wrong dtype in the schema?)\n"
    )
    assert "malformed (1 file, no elements counted):" in text.stdout
    assert "  step 0 unit_entry_price [f32]: size 10 bytes" in text.stdout


def test_schema_options_classify_and_can_make_files_malformed() -> None:
    run = f"{FIXTURES}/identical/a"
    raw = stats_json(run, "--schema", "raw")
    assert raw["schema"] == "raw"
    assert [g["group"] for g in raw["groups"]] == ["other"]
    assert raw["totals"]["dtypes"] == ["u8"]
    assert raw["totals"]["elements"] == raw["totals"]["bytes"] == 20368
    f64 = stats_json(run, "--schema", "raw", "--default-dtype", "f64", malformed=4)
    # 3028 bytes of isv_full are not whole f64 elements; the others (64 and 16) are
    assert [(m["step"], m["name"]) for m in f64["malformed"]] == [(s, "isv_full") for s in range(4)]
    assert f64["totals"]["malformed"] == 4
    assert f64["totals"]["elements"] == 4 * (32 * 8 + 2)
    assert f64["largest"][0]["elements"] is None


def test_unknown_names_and_skipped_entries() -> None:
    run = f"{FIXTURES}/unknown_names/a"
    doc = stats_json(run)
    assert doc["skipped"] == [
        {
            "path": f"{run}/notes.txt",
            "reason": "not a dump: name is not step_<N>_<name>.bin",
        }
    ]
    other = doc["groups"][-1]
    assert other == {
        "group": "other",
        "title": "not in the schema",
        "buffers": 1,
        "steps": 2,
        "files": 2,
        "elements": 20,
        "bytes": 20,
        "dtypes": ["u8"],
        "malformed": 0,
    }


def test_text_report() -> None:
    p = fastdiff("stats", f"{FIXTURES}/late_steps/a", "--top", "2")
    assert p.returncode == 0
    assert p.stderr == ""
    assert p.stdout.splitlines()[:12] == [
        "run: tests/fixtures/late_steps/a (folder), schema rl-state",
        "total: 9 steps, 34 buffers, 306 files, 11,565 elements, 45,828 bytes (44.8 KiB); "
        "dtypes u8 u32 i32 f32",
        "per step: 5.0 KiB",
        "",
        "per step and group:",
        "  steps              group  files  elements    bytes  dtypes",
        "  0-7, 12 (9 steps)  C          2        32    128 B  u32",
        "                     D         13       208    784 B  u8 i32 f32",
        "                     E          1       757  3.0 KiB  f32",
        "                     F         18       288  1.1 KiB  i32 f32",
        "                     all       34     1,285  5.0 KiB  u8 u32 i32 f32",
        "",
    ]
    assert "largest buffers (by their largest file; top 2):" in p.stdout
    assert p.stdout.endswith("missing at some steps: none (every buffer is at every step)\n")
    gaps = fastdiff("stats", f"{FIXTURES}/only_in_one/b").stdout
    assert "  ph_mu (F): missing at step 1 (present at 1 of 2)\n" in gaps


# --- errors -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("tests/fixtures/nope",), "tests/fixtures/nope: run folder not found; check the path"),
        (
            ("README.md",),
            "README.md: not a run folder, nor a fastdiff manifest (not JSON",
        ),
        (
            (f"{FIXTURES}/identical/a", "--top", "-1"),
            "argument --top: must be >= 0, got '-1'",
        ),
        ((f"{FIXTURES}/identical/a", "--schema", "nope"), "--schema 'nope': no such preset"),
        ((f"{FIXTURES}/identical/a", "--default-dtype", "f128"), "--default-dtype: unknown dtype"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    p = fastdiff("stats", *args)
    assert p.returncode == 2
    assert p.stdout == ""
    assert len(p.stderr.splitlines()) == 1
    assert p.stderr.startswith("fastdiff: error: " + message)


def test_folder_without_dumps(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    p = fastdiff("stats", str(tmp_path))
    assert p.returncode == 2
    assert p.stderr == (
        f"fastdiff: error: {tmp_path}: the run holds no step_<N>_<name>.bin dumps (only 1 "
        "other entry, skipped); give the folder that holds them\n"
    )


@pytest.mark.parametrize("command", ["stats", "hash"])
def test_the_parent_folder_by_mistake_names_the_run_below(tmp_path: Path, command: str) -> None:
    """As compare does: a folder without dumps whose subfolder holds some."""
    (tmp_path / "run-a").mkdir()
    (tmp_path / "run-a" / "step_0_rewards.bin").write_bytes(bytes(64))
    p = fastdiff(command, str(tmp_path))
    assert p.returncode == 2
    assert p.stdout == ""
    assert p.stderr.startswith(
        f"fastdiff: error: {tmp_path}: the run holds no step_<N>_<name>.bin dumps (only 1 "
        f"other entry, skipped); did you mean {tmp_path / 'run-a'}?\n"
    )


def test_unreadable_entry_is_an_error_but_the_rest_is_counted(tmp_path: Path) -> None:
    (tmp_path / "step_0_rewards.bin").write_bytes(bytes(64))
    os.symlink(tmp_path / "gone", tmp_path / "step_0_actions.bin")
    p = fastdiff("stats", str(tmp_path), "--format", "json")
    assert p.returncode == 2
    assert p.stderr == (
        f"fastdiff: error: {tmp_path}/step_0_actions.bin: broken symbolic link; "
        "fix or remove the link\n"
    )
    doc = json.loads(p.stdout)
    assert doc["totals"]["files"] == 1
    assert doc["errors"] == [
        {
            "path": f"{tmp_path}/step_0_actions.bin",
            "message": "broken symbolic link; fix or remove the link",
        }
    ]


def test_stats_imports_neither_numpy_nor_numba() -> None:
    code = (
        "import sys\n"
        "from fastdiff.cli import main\n"
        "rc = main(['stats', 'tests/fixtures/identical/a', '--format', 'json'])\n"
        "mods = sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'numba'))\n"
        "print(rc, mods, file=sys.stderr)\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert p.stderr == "0 []\n"


def test_digest_only_dumps_are_told_apart_from_files_on_disk(tmp_path: Path) -> None:
    import numpy as np

    from fastdiff import Recorder

    run = tmp_path / "rec"
    with Recorder(run, data=lambda s: s % 2 == 0) as rec:
        for step in range(5):
            rec.dump(step, "w", np.linspace(0, 1, 300, dtype=np.float32) * (step + 1))
            rec.dump(step, "ids", np.arange(6, dtype=np.int64) + step)
    on_disk = [p for p in run.iterdir() if not p.name.startswith(".")]
    assert len(on_disk) == 6  # steps 0, 2, 4: two files each
    dumps = 5 * (300 * 4 + 6 * 8)
    doc = stats_json(str(run))
    assert doc["totals"]["files"] == 10 and doc["totals"]["bytes"] == dumps
    assert doc["disk"] == {
        "files": 6,
        "bytes": sum(p.stat().st_size for p in on_disk),  # .npy headers included
        "digests_only": 4,
        "digests_only_bytes": 2 * (300 * 4 + 6 * 8),
    }
    p = fastdiff("stats", run)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[1].startswith(
        f"total: 5 steps, 2 buffers, 10 dumps, 1,530 elements, {dumps:,} bytes"
    )
    disk = doc["disk"]["bytes"]
    assert lines[2] == (
        f"on disk: 6 files, {disk:,} bytes ({disk / 1024:.1f} KiB); 4 dumps of 2,496 bytes "
        "(2.4 KiB) are digests only, in the digest log (no data file)"
    )


def test_steps_of_nearly_one_size_say_so(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for step, n in enumerate((8952, 8959, 8955)):
        (run / f"step_{step}_x.bin").write_bytes(bytes(n))
    p = fastdiff("stats", run)
    assert p.returncode == 0
    lines = p.stdout.splitlines()
    assert lines[1].startswith("total: 3 steps, 1 buffer, 3 files, ")  # raw files: no disk line
    assert lines[2] == "per step: about 8.7 KiB each (8,952 to 8,959 bytes)"
