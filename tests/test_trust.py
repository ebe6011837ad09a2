"""Wrong answers at the edges (issue 23, section 1), each through the CLI or the API.

A wrong "identical" is the worst bug fastdiff can have: each test here is a
case where an earlier version said identical (or lost a divergence), held
to the answer a user needs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import fastdiff

from fastdiff import Recorder, compare_runs
from fastdiff.model.findings import NoteKind
from fastdiff.options import CompareOptions
from fastdiff.sources.names import DIGEST_LOG


def record(folder: Path, arrays: dict[tuple[int, str], object], **kw: object) -> Path:
    with Recorder(folder, **kw) as rec:  # type: ignore[arg-type]
        for (step, name), array in arrays.items():
            rec.dump(step, name, array)
    return folder


def job(folder: Path, diverge_at: int | None, steps: int = 3, **kw: object) -> Path:
    arrays: dict[tuple[int, str], object] = {}
    for s in range(steps):
        w = np.linspace(0, 1, 64, dtype=np.float32) * (s + 1)
        if diverge_at is not None and s >= diverge_at:
            w[5] += 1.0
        arrays[(s, "w")] = w
    return record(folder, arrays, **kw)


def by_key(report: object) -> dict[tuple[int, str], object]:
    return {(b.step, b.name): b for b in report.buffers}  # type: ignore[attr-defined]


# --- 1a: digest logs joined into one ---------------------------------------------------


def test_concatenated_digest_logs_of_digests_only_runs_are_an_error_never_identical(
    tmp_path: Path,
) -> None:
    a = job(tmp_path / "a", None, data=False)
    b = job(tmp_path / "b", 1, data=False)
    assert compare_runs(a, b).first_divergent_step == 1  # before the logs are joined
    with (b / DIGEST_LOG).open("ab") as out:
        out.write((a / DIGEST_LOG).read_bytes())
    r = fastdiff("compare", a, b, "--format", "json")
    assert r.returncode == 2, r.stdout
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "error"
    status = {(x["step"], x["name"]): x["status"] for x in doc["buffers"]}
    # Step 0 was recorded alike in both logs: its records agree.
    assert status[(0, "w")] == "equal"
    assert status[(1, "w")] == "error" and status[(2, "w")] == "error"
    errors = compare_runs(a, b).errors
    assert any(e.kind == "malformed" and "step_1_w" in e.path for e in errors)
    # Either order: never identical.
    assert fastdiff("compare", b, a).returncode == 2


def test_concatenated_digest_logs_of_recorded_files_are_hashed_with_a_note(
    tmp_path: Path,
) -> None:
    a = job(tmp_path / "a", None)
    b = job(tmp_path / "b", 1)
    with (b / DIGEST_LOG).open("ab") as out:
        out.write((a / DIGEST_LOG).read_bytes())
    report = compare_runs(a, b)
    assert report.verdict == "diverged" and report.first_divergent_step == 1
    assert by_key(report)[(1, "w")].n_diff == 1  # type: ignore[attr-defined]
    assert report.work.files_hashed >= 3  # B's dumps: read, not taken from the log
    assert any(n.kind is NoteKind.LOG_CONFLICT and str(b) in n["path"] for n in report.notes)


def test_a_dump_recorded_again_replaces_its_line_without_a_conflict(tmp_path: Path) -> None:
    # Recorded as digests only, twice, the second time differently: the
    # second line names the first (replaces), so it is a new recording.
    with Recorder(tmp_path / "r", data=False) as rec:
        rec.dump(0, "x", np.zeros(4))
        rec.dump(0, "x", np.ones(4))
    lines = [json.loads(x) for x in (tmp_path / "r" / DIGEST_LOG).read_text().splitlines()]
    assert len(lines) == 2 and lines[0]["replaces"] is None
    assert lines[1]["replaces"] == lines[0]["check"]
    other = record(tmp_path / "o", {(0, "x"): np.ones(4)}, data=False)
    assert compare_runs(tmp_path / "r", other).verdict == "identical"
    third = record(tmp_path / "z", {(0, "x"): np.zeros(4)}, data=False)
    assert compare_runs(tmp_path / "r", third).verdict == "diverged"


def test_a_file_beside_a_digests_only_record_is_compared_with_a_note(tmp_path: Path) -> None:
    a = job(tmp_path / "a", None, data=False)
    b = job(tmp_path / "b", None, data=False)
    np.save(b / "step_1_w.npy", np.full(64, 7, dtype=np.float32))  # not the recorder's
    report = compare_runs(a, b)
    assert by_key(report)[(1, "w")].status in ("diverged", "error")  # type: ignore[attr-defined]
    assert report.verdict != "identical"
    assert any(
        n.kind is NoteKind.LOG_BESIDE_FILE and n["files"] == ("step_1_w.npy",) for n in report.notes
    )


def test_a_copied_run_says_its_dumps_were_copied_or_touched_not_changed(
    tmp_path: Path,
) -> None:
    a = job(tmp_path / "a", None)
    b = job(tmp_path / "b", None)
    c = tmp_path / "c"
    shutil.copytree(b, c)
    report = compare_runs(a, c)
    assert report.verdict == "identical"
    kinds = {n.kind for n in report.notes if n["spec"] == str(c)}
    assert kinds == {NoteKind.LOG_DUMPS_COPIED}  # not "changed"
    (copied,) = [n for n in report.notes if n["spec"] == str(c)]
    assert copied["files"] and not copied.warning


# --- 1b: a shard folder with a shard missing, no index ------------------------------------

safetensors_numpy = pytest.importorskip("safetensors.numpy")


def shards(folder: Path, present: tuple[int, ...], total: int = 3, bump: int | None = None) -> Path:
    folder.mkdir()
    for k in present:
        x = np.arange(8, dtype=np.float32) + k
        if bump == k:
            x[3] += 1
        safetensors_numpy.save_file(
            {f"layer{k}.w": x}, str(folder / f"model-{k:05d}-of-{total:05d}.safetensors")
        )
    return folder


def test_a_shard_missing_from_both_runs_without_an_index_is_an_error(tmp_path: Path) -> None:
    a = shards(tmp_path / "a", (1, 3))
    b = shards(tmp_path / "b", (1, 3))
    r = fastdiff("compare", a, b, "--format", "json")
    assert r.returncode == 2, r.stdout
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "error"
    assert any("00002" in e.path and e.kind == "missing" for e in compare_runs(a, b).errors)
    assert all(x["status"] == "error" for x in doc["buffers"])


def test_a_shard_missing_from_one_run_without_an_index_is_an_error_not_a_divergence(
    tmp_path: Path,
) -> None:
    a = shards(tmp_path / "a", (1, 2), total=2)
    b = shards(tmp_path / "b", (1,), total=2)
    for order in ((a, b), (b, a)):
        r = fastdiff("compare", *order, "--format", "json")
        assert r.returncode == 2, r.stdout
        doc = json.loads(r.stdout)
        assert doc["verdict"] == "error"
        assert {x["status"] for x in doc["buffers"]} == {"error"}


def test_a_damaged_shard_without_an_index_makes_every_tensor_an_error(tmp_path: Path) -> None:
    a = shards(tmp_path / "a", (1, 2), total=2)
    b = shards(tmp_path / "b", (1, 2), total=2)
    (b / "model-00002-of-00002.safetensors").write_bytes(b"\x10" + b"\x00" * 7 + b"{broken")
    r = fastdiff("compare", a, b, "--format", "json")
    assert r.returncode == 2, r.stdout
    doc = json.loads(r.stdout)
    assert {x["status"] for x in doc["buffers"]} == {"error"}


def test_complete_shards_without_an_index_still_compare(tmp_path: Path) -> None:
    a = shards(tmp_path / "a", (1, 2, 3))
    b = shards(tmp_path / "b", (1, 2, 3), bump=2)
    report = compare_runs(a, b)
    assert report.verdict == "diverged"
    assert by_key(report)[(0, "layer2.w")].first_index == 3  # type: ignore[attr-defined]


# --- 1c: digests of different chunk sizes -------------------------------------------------


def test_digests_of_different_chunk_sizes_give_one_verdict_in_either_order(
    tmp_path: Path,
) -> None:
    full = job(tmp_path / "full", None, chunk_size=8)  # files, digests at 8 bytes
    only = job(tmp_path / "only", 1, data=False)  # digests only, at 4 MiB
    for a, b in ((full, only), (only, full)):
        r = fastdiff("compare", a, b, "--format", "json")
        assert r.returncode == 1, (a, b, r.stdout, r.stderr)
        doc = json.loads(r.stdout)
        assert doc["verdict"] == "diverged" and doc["first_divergent_step"] == 1
        status = {(x["step"], x["name"]): x["status"] for x in doc["buffers"]}
        assert status == {(0, "w"): "equal", (1, "w"): "diverged", (2, "w"): "diverged"}
    same = job(tmp_path / "same", None, data=False)
    for a, b in ((full, same), (same, full)):
        assert fastdiff("compare", a, b).returncode == 0


def test_digests_only_runs_of_different_chunk_sizes_are_errors_not_identical(
    tmp_path: Path,
) -> None:
    a = job(tmp_path / "a", None, data=False, chunk_size=8)
    b = job(tmp_path / "b", None, data=False)
    r = fastdiff("compare", a, b, "--format", "json")
    assert r.returncode == 2
    doc = json.loads(r.stdout)
    assert {x["status"] for x in doc["buffers"]} == {"error"}
    assert any(e.kind == "mismatch" for e in compare_runs(a, b).errors)


# --- 1d: bf16 and fp8 saved by np.save ----------------------------------------------------

ml_dtypes = pytest.importorskip("ml_dtypes")


@pytest.mark.parametrize(("dtype", "name"), [("bfloat16", "bf16"), ("float8_e4m3fn", "f8_e4m3fn")])
def test_a_raw_width_npy_keeps_its_header_shape_under_a_schema_dtype(
    tmp_path: Path, dtype: str, name: str
) -> None:
    kind = getattr(ml_dtypes, dtype)
    x = np.arange(6, dtype=np.float32).reshape(2, 3).astype(kind)
    y = x.copy()
    y[1, 2] = kind(1.0)
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    np.save(a / "step_0_x.npy", x)
    np.save(b / "step_0_x.npy", y)
    schema = tmp_path / "s.toml"
    # The schema declares another shape: the header's wins, as for every .npy.
    schema.write_text(
        f'name = "s"\n[[group]]\nkey = "X"\ntitle = "x"\n'
        f'[group.members.x]\ndtype = "{name}"\nshape = [3, 2]\n'
    )
    r = fastdiff("compare", a, b, "--schema", schema, "--format", "json")
    assert r.returncode == 1, r.stdout + r.stderr
    (buf,) = json.loads(r.stdout)["buffers"]
    assert buf["dtype"] == name
    assert buf["shape"] == [2, 3]
    assert buf["first_index_nd"] == [1, 2]
    r = fastdiff("compare", a, b, "--default-dtype", name, "--format", "json")
    (buf,) = json.loads(r.stdout)["buffers"]
    assert buf["shape"] == [2, 3] and buf["first_index_nd"] == [1, 2]


# --- 1e: 0-d tensors ---------------------------------------------------------------------


def test_a_zero_dimensional_tensor_has_the_empty_index(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    np.save(a / "step_0_loss.npy", np.float32(1.5))
    np.save(b / "step_0_loss.npy", np.float32(2.5))
    r = fastdiff("compare", a, b, "--format", "json")
    (buf,) = json.loads(r.stdout)["buffers"]
    assert buf["shape"] == []
    assert buf["first_index_nd"] == [] and buf["max_abs_delta_index_nd"] == []
    text = fastdiff("compare", a, b).stdout
    assert "first at (): A=1.5 B=2.5" in text
    assert "[0]" not in text and "(0,)" not in text


# --- section 2: one rule each -------------------------------------------------------------


def f32_runs(tmp_path: Path, a: list[float], b: list[float], name: str = "x") -> tuple[Path, Path]:
    ra, rb = tmp_path / "a", tmp_path / "b"
    ra.mkdir()
    rb.mkdir()
    np.save(ra / f"step_0_{name}.npy", np.array(a, dtype=np.float32))
    np.save(rb / f"step_0_{name}.npy", np.array(b, dtype=np.float32))
    return ra, rb


def test_a_tolerance_of_zero_compares_values_everywhere(tmp_path: Path) -> None:
    from fastdiff.testing import assert_runs_equal

    a, b = f32_runs(tmp_path, [0.0, 1.0], [-0.0, 1.0])
    # No tolerance: bits, so -0.0 and +0.0 differ, on the CLI and in both APIs.
    assert fastdiff("compare", a, b).returncode == 1
    assert compare_runs(a, b).verdict == "diverged"
    with pytest.raises(AssertionError):
        assert_runs_equal(a, b)
    # A tolerance of 0 compares values: -0.0 == +0.0, as torch's assert_close has it.
    for option in (("--atol", "0"), ("--ulp", "0"), ("--rtol", "0")):
        r = fastdiff("compare", a, b, *option, "--format", "json")
        assert r.returncode == 0, (option, r.stdout)
        assert json.loads(r.stdout)["buffers"][0]["status"] == "within_tolerance"
    for kw in ({"atol": 0}, {"ulp": 0}, {"rtol": 0}):
        assert compare_runs(a, b, CompareOptions(**kw)).verdict == "identical"
        assert_runs_equal(a, b, **kw)  # passes
    # A NaN payload is no value: a tolerance of 0 does not forgive it.
    (tmp_path / "n").mkdir()
    c, d = f32_runs(tmp_path / "n", [float("nan")], [float("nan")])
    np.save(d / "step_0_x.npy", np.array([0x7FC00001], dtype=np.uint32).view(np.float32))
    with pytest.raises(AssertionError):
        assert_runs_equal(c, d, atol=0)


def int_runs(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    np.save(a / "step_0_prng.npy", np.array([7, 8, 9], dtype=np.uint32))
    np.save(b / "step_0_prng.npy", np.array([7, 9, 9], dtype=np.uint32))  # off by one
    np.save(a / "step_0_done.npy", np.array([True, False]))
    np.save(b / "step_0_done.npy", np.array([True, True]))  # a flipped bool
    np.save(a / "step_0_w.npy", np.array([1.0], dtype=np.float32))
    np.save(b / "step_0_w.npy", np.nextafter(np.float32(1.0), np.float32(2.0)).reshape(1))
    return a, b


def test_tolerances_apply_to_floats_integers_and_bools_stay_exact(tmp_path: Path) -> None:
    from fastdiff.testing import assert_runs_equal

    a, b = int_runs(tmp_path)
    r = fastdiff("compare", a, b, "--ulp", "1", "--format", "json")
    assert r.returncode == 1, r.stdout
    doc = json.loads(r.stdout)
    status = {x["name"]: x["status"] for x in doc["buffers"]}
    assert status == {"prng": "diverged", "done": "diverged", "w": "within_tolerance"}
    assert doc["tolerance"]["int_tolerance"] is False
    with pytest.raises(AssertionError):
        assert_runs_equal(a, b, ulp=1)
    # Asked for: --int-tolerance, int_tolerance=True.
    r = fastdiff("compare", a, b, "--ulp", "1", "--int-tolerance", "--format", "json")
    assert r.returncode == 0, r.stdout
    assert {x["status"] for x in json.loads(r.stdout)["buffers"]} == {"within_tolerance"}
    assert_runs_equal(a, b, ulp=1, int_tolerance=True)
    report = compare_runs(a, b, CompareOptions(atol=1, int_tolerance=True))
    assert report.verdict == "identical"


def test_a_schema_member_asks_for_the_tolerance_on_its_integers(tmp_path: Path) -> None:
    a, b = int_runs(tmp_path)
    schema = tmp_path / "s.toml"
    schema.write_text(
        'name = "s"\n[[group]]\nkey = "G"\ntitle = "g"\n[group.members]\n'
        'prng = { dtype = "u32", int_tolerance = true }\ndone = "bool"\nw = "f32"\n'
    )
    report = compare_runs(a, b, CompareOptions(schema=schema, ulp=1))
    status = {x.name: x.status for x in report.buffers}
    assert status == {"prng": "within_tolerance", "done": "diverged", "w": "within_tolerance"}
    printed = fastdiff("schema", schema).stdout
    assert "int_tolerance = true" in printed
    bad = tmp_path / "bad.toml"
    bad.write_text(schema.read_text().replace("int_tolerance = true", 'int_tolerance = "yes"'))
    r = fastdiff("compare", a, b, "--schema", bad)
    assert r.returncode == 2 and "int_tolerance" in r.stderr and "Traceback" not in r.stderr


def test_integers_known_only_by_digests_are_diverged_not_undecided_under_a_tolerance(
    tmp_path: Path,
) -> None:
    a = record(tmp_path / "a", {(0, "n"): np.arange(4, dtype=np.int64)}, data=False)
    b = record(tmp_path / "b", {(0, "n"): np.arange(1, 5, dtype=np.int64)}, data=False)
    report = compare_runs(a, b, CompareOptions(ulp=1))
    (n,) = report.buffers
    assert n.status == "diverged" and report.verdict == "diverged"
    assert not any(e.kind == "undecided" for e in report.errors)


def test_prev_reads_the_latest_step_both_runs_hold(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    for step in (0, 1, 2, 3):
        for run in (a, b):
            if run is b and step == 2:
                continue  # run B lacks step 2
            state = np.full(4, step, dtype=np.float32)
            if run is b and step == 3:
                state[0] += 1  # born at step 3: step 1's state matched
            np.save(run / f"step_{step}_state.npy", state)
    np.save(a / "step_2_extra.npy", np.zeros(1, dtype=np.float32))  # A alone at step 2
    schema = tmp_path / "s.toml"
    schema.write_text(
        'name = "s"\n[[group]]\nkey = "S"\ntitle = "state"\n[group.members]\n'
        'state = { dtype = "f32", inputs = ["state@prev"] }\n'
    )
    report = compare_runs(a, b, CompareOptions(schema=schema))
    state3 = by_key(report)[(3, "state")]
    assert state3.role.kind == "origin"  # type: ignore[attr-defined]
    assert state3.role.prev_step == 1  # type: ignore[attr-defined]
    doc = json.loads(fastdiff("compare", a, b, "--schema", schema, "--format", "json").stdout)
    (row,) = [x for x in doc["buffers"] if (x["step"], x["name"]) == (3, "state")]
    assert (row["role"], row["prev_step"]) == ("origin", 1)


def test_a_raw_dump_beside_a_typed_npy_is_a_header_difference_never_reinterpreted(
    tmp_path: Path,
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    values = np.arange(6, dtype=np.float32)
    (a / "step_0_x.bin").write_bytes(values.tobytes())  # 6 f32, by the schema
    np.save(b / "step_0_x.npy", values.view(np.float64))  # the same 24 bytes as 3 f64
    schema = tmp_path / "s.toml"
    schema.write_text('name = "s"\n[[group]]\nkey = "X"\ntitle = "x"\n[group.members]\nx = "f32"\n')
    for order in ((a, b), (b, a)):
        report = compare_runs(*order, CompareOptions(schema=schema))
        (x,) = report.buffers
        assert x.status == "diverged" and x.n_diff is None  # nothing was read as the other
        assert report.first_divergent_step == 0
    # The same dtype as the schema's: the bytes are compared, with the header's shape.
    np.save(b / "step_0_x.npy", values.reshape(2, 3))
    report = compare_runs(a, b, CompareOptions(schema=schema))
    (x,) = report.buffers
    assert x.status == "equal" and report.verdict == "identical"


def test_a_dump_recorded_again_after_a_restart_replaces_its_line(tmp_path: Path) -> None:
    # A job restarted into its own folder (exist_ok=True) records step 1
    # again: the new line names the old one, so it is a new recording, not
    # a conflict, and the run compares as what it holds now.
    run = job(tmp_path / "r", None, data=False)
    with Recorder(run, exist_ok=True, data=False) as rec:
        rec.dump(1, "w", np.full(64, 9, dtype=np.float32))
    lines = [json.loads(x) for x in (run / DIGEST_LOG).read_text().splitlines()]
    again = [x for x in lines if (x["step"], x["name"]) == (1, "w")]
    assert len(again) == 2 and again[1]["replaces"] == again[0]["check"]
    arrays = {(s, "w"): np.linspace(0, 1, 64, dtype=np.float32) * (s + 1) for s in range(3)}
    arrays[(1, "w")] = np.full(64, 9, dtype=np.float32)
    now = record(tmp_path / "now", arrays, data=False)
    report = compare_runs(run, now)
    assert report.verdict == "identical", report.errors
