"""The recorder: what it writes, what compare makes of it, and how it fails.

Through the public API (``fastdiff.Recorder``, ``compare_runs``) and the CLI.
The digests it logs are held to the listing's own hashing
(``stages.hash.hash_buffer``) at many sizes and chunk sizes, so compare can
trust them; the log's every rule (identity, seal, check) is tried with
files changed behind its back and with damaged and forged lines.
"""

from __future__ import annotations

import errno
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from helpers import REPO, fastdiff
from hypothesis import given, settings
from hypothesis import strategies as st

from fastdiff import Recorder, compare_runs
from fastdiff import recorder as recorder_module
from fastdiff.model.findings import NoteKind
from fastdiff.options import CompareOptions
from fastdiff.render.notes import note_text
from fastdiff.sources import open_run
from fastdiff.sources.digestlog import LogLineError, log_line, parse_line
from fastdiff.sources.names import DIGEST_LOG, TEMP_PREFIX
from fastdiff.stages.hash import hash_buffer

try:
    import ml_dtypes
except ImportError:  # the 8-bit and bf16 numpy types are optional
    ml_dtypes = None

#: numpy dtypes (descr) and the fastdiff dtype each is read as.
NUMPY_DTYPES = {
    "|b1": "bool", "|u1": "u8", "|i1": "i8", "<u2": "u16", "<i2": "i16", "<u4": "u32",
    "<i4": "i32", "<u8": "u64", "<i8": "i64", "<f2": "f16", "<f4": "f32", "<f8": "f64",
    ">f4": "f32be", ">i8": "i64be", ">u2": "u16be",
}  # fmt: skip


def record(folder: Path, arrays: dict[tuple[int, str], object], **kw: object) -> Path:
    with Recorder(folder, **kw) as rec:  # type: ignore[arg-type]
        for (step, name), array in arrays.items():
            rec.dump(step, name, array)
    return folder


def log_lines(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / DIGEST_LOG).read_text().splitlines()]


def refs(folder: Path) -> dict[tuple[int, str], object]:
    return {(f.step, f.name): f for f in open_run(str(folder)).listing.buffers}


def random_array(rng: np.random.Generator, descr: str, shape: tuple[int, ...]) -> np.ndarray:
    dt = np.dtype(descr)
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * dt.itemsize, dtype=np.uint8)
    if dt.kind == "b":
        raw = raw % 2
    return raw.view(dt).reshape(shape)


# --- what a dump is ------------------------------------------------------------------


@pytest.mark.parametrize(("descr", "name"), list(NUMPY_DTYPES.items()))
def test_a_numpy_dump_is_what_np_save_writes_and_lists_with_its_dtype_and_shape(
    tmp_path: Path, descr: str, name: str
) -> None:
    rng = np.random.default_rng(7)
    arrays = {(0, "a"): random_array(rng, descr, (3, 5)), (1, "s"): random_array(rng, descr, ())}
    run = record(tmp_path / "run", arrays)
    for (step, buf), arr in arrays.items():
        path = run / f"step_{step}_{buf}.npy"
        expected = io.BytesIO()
        np.save(expected, arr)
        assert path.read_bytes() == expected.getvalue()
        back = np.load(path)
        assert (back.dtype, back.shape, back.tobytes()) == (arr.dtype, arr.shape, arr.tobytes())
    listed = refs(run)
    assert listed[(0, "a")].dtype == name and listed[(0, "a")].shape == (3, 5)
    assert listed[(1, "s")].dtype == name and listed[(1, "s")].shape == ()
    assert sorted(p.name for p in run.iterdir()) == [DIGEST_LOG, "step_0_a.npy", "step_1_s.npy"]


@pytest.mark.skipif(ml_dtypes is None, reason="needs ml_dtypes")
@pytest.mark.parametrize(
    ("dtype", "name"),
    [("bfloat16", "bf16"), ("float8_e4m3fn", "f8_e4m3fn"), ("float8_e5m2", "f8_e5m2"),
     ("float8_e4m3fnuz", "f8_e4m3fnuz"), ("float8_e5m2fnuz", "f8_e5m2fnuz")],
)  # fmt: skip
def test_bf16_and_fp8_are_raw_bytes_that_the_log_names(
    tmp_path: Path, dtype: str, name: str
) -> None:
    arr = np.arange(12, dtype=np.float32).reshape(3, 4).astype(getattr(ml_dtypes, dtype))
    run = record(tmp_path / "run", {(0, "w"): arr})
    loaded = np.load(run / "step_0_w.npy")  # numpy reads it without ml_dtypes: raw bytes
    assert loaded.dtype.kind == "V" and loaded.shape == (3, 4)
    assert loaded.tobytes() == arr.tobytes()
    ref = refs(run)[(0, "w")]
    assert (ref.dtype, ref.shape) == (name, (3, 4))
    # Copied elsewhere the digests are not used (new inodes), the type still is.
    shutil.copytree(run, tmp_path / "copy")
    copy = open_run(str(tmp_path / "copy"))
    (cref,) = copy.listing.buffers
    assert (cref.dtype, cref.shape, cref.digest) == (name, (3, 4), None)
    other = record(tmp_path / "other", {(0, "w"): (arr.view(np.uint8) ^ 1).view(arr.dtype)})
    report = compare_runs(run, other)
    (b,) = report.buffers
    assert b.status == "diverged" and b.dtype == name and b.n_diff == 12


def test_a_void_header_whose_width_disagrees_with_the_log_keeps_no_dtype(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    raw = np.zeros(6, dtype="V1")
    np.save(run / "step_0_w.npy", raw)
    st = os.stat(run / "step_0_w.npy")
    # A log line calling it bf16 of shape (3,): same byte count, another width.
    line = log_line(0, "w", "bf16", (3,), 6, 1 << 22, [b"\0" * 16], "step_0_w.npy", 128, st,
                    st.st_ctime_ns + 1)  # fmt: skip
    (run / DIGEST_LOG).write_bytes(line)
    src = open_run(str(run))
    (ref,) = src.listing.buffers
    assert ref.dtype is None and ref.digest is None
    (note,) = src.notes
    assert note.kind is NoteKind.LOG_HEADER_DISAGREES and note["files"] == ("step_0_w.npy",)


# --- the digests are compare's ----------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 700),
    chunk_size=st.sampled_from([8, 16, 64, 128, 4096]),
    descr=st.sampled_from(["|u1", "<f4", "<f8", "<i2", "|b1"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_logged_digests_are_the_listings_own_at_every_size_and_chunk_size(
    tmp_path_factory: pytest.TempPathFactory, n: int, chunk_size: int, descr: str, seed: int
) -> None:
    run = tmp_path_factory.mktemp("run")
    arr = random_array(np.random.default_rng(seed), descr, (n,))
    record(run, {(0, "x"): arr}, chunk_size=chunk_size)
    src = open_run(str(run))
    assert src.chunk_size == chunk_size
    (ref,) = src.listing.buffers
    assert ref.digest is not None
    assert ref.digest == hash_buffer(ref, chunk_size)  # the very digests compare computes


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(0, 3000),
    chunk_size=st.sampled_from([8, 24, 64, 4096]),
    threads=st.integers(1, 5),
    digests_only=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_digests_hashed_on_many_threads_are_the_listings_own(
    tmp_path_factory: pytest.TempPathFactory,
    n: int,
    chunk_size: int,
    threads: int,
    digests_only: bool,
    seed: int,
) -> None:
    """Segments of whole chunks on several threads (thresholds lowered to
    reach that path with small arrays) give the digests of the whole."""
    run = tmp_path_factory.mktemp("run")
    arr = random_array(np.random.default_rng(seed), "|u1", (n,))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(recorder_module, "OVERLAP_MIN", 0)
        mp.setattr(recorder_module, "PARALLEL_MIN", 1)
        mp.setattr(recorder_module, "HASH_THREADS", threads)
        record(run, {(0, "x"): arr}, chunk_size=chunk_size, data=not digests_only)
    (ref,) = open_run(str(run)).listing.buffers
    plain = tmp_path_factory.mktemp("plain")
    np.save(plain / "step_0_x.npy", arr)
    (whole,) = open_run(str(plain)).listing.buffers
    assert ref.digest is not None
    assert ref.digest.chunks == hash_buffer(whole, chunk_size).chunks


def test_two_recorded_identical_runs_are_compared_without_reading_a_data_byte(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(0)
    arrays = {(s, n): rng.random(5000 + s, dtype=np.float32) for s in range(4) for n in "abc"}
    a = record(tmp_path / "a", arrays)
    b = record(tmp_path / "b", arrays)
    report = compare_runs(a, b)
    assert report.verdict == "identical" and len(report.buffers) == 12
    assert report.work.files_hashed == 0 and report.work.bytes_hashed == 0
    assert report.work.bytes_scanned == 0
    r = fastdiff("compare", a, b, "--format", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["work"]["bytes_hashed"] == 0
    # Without the log every byte is hashed again.
    (b / DIGEST_LOG).unlink()
    again = compare_runs(a, b)
    assert again.verdict == "identical" and again.work.files_hashed == 12


def test_a_difference_reads_only_its_chunks(tmp_path: Path) -> None:
    base = np.arange(1 << 16, dtype=np.float32)
    other = base.copy()
    other[40_000] += 1
    a = record(tmp_path / "a", {(0, "w"): base}, chunk_size=4096)
    b = record(tmp_path / "b", {(0, "w"): other}, chunk_size=4096)
    report = compare_runs(a, b)
    (w,) = report.buffers
    assert w.status == "diverged" and w.n_diff == 1 and w.first_index == 40_000
    assert report.work.files_hashed == 0 and report.work.bytes_scanned == 4096


def test_an_unrecorded_run_is_hashed_at_the_logs_chunk_size(tmp_path: Path) -> None:
    arr = np.arange(3000, dtype=np.float64)
    a = record(tmp_path / "a", {(0, "w"): arr}, chunk_size=1024)
    b = tmp_path / "b"
    b.mkdir()
    np.save(b / "step_0_w.npy", arr)
    report = compare_runs(b, a, CompareOptions(chunk_size=1 << 20))
    assert report.verdict == "identical"
    assert report.work.files_hashed == 1  # b's; a's digests are the log's, at 1 KiB


# --- arrays of every kind -----------------------------------------------------------


class DlpackOnly:
    """An array that offers nothing but DLPack."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __dlpack__(self, **kw: object) -> object:
        return self._array.__dlpack__(**kw)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._array.__dlpack_device__()


class ArrayLike:
    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
        return self._array


def test_dlpack_array_like_lists_and_views_record_as_numpy_does(tmp_path: Path) -> None:
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    numpy_run = record(tmp_path / "n", {(0, "w"): base, (0, "t"): base.T.copy(), (0, "l"): base})
    other = record(
        tmp_path / "o",
        {(0, "w"): DlpackOnly(base), (0, "t"): base.T, (0, "l"): ArrayLike(base)},
    )
    assert not hasattr(DlpackOnly(base), "__array__")
    report = compare_runs(numpy_run, other)
    assert report.verdict == "identical", [b.status for b in report.buffers]
    assert refs(other)[(0, "t")].shape == (6, 4)
    listed = record(tmp_path / "p", {(0, "f"): [1.5, 2.5], (0, "i"): 3, (0, "b"): True})
    got = {k[1]: (r.dtype, r.shape) for k, r in refs(listed).items()}
    assert got == {"f": ("f64", (2,)), "i": ("i64", ()), "b": ("bool", ())}


def test_torch_tensors_record_as_their_numpy_twins(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    t = torch.arange(24, dtype=torch.float32).reshape(4, 6).requires_grad_()
    tensors = {
        (0, "w"): t,  # requires grad: detached
        (0, "t"): t.detach().T,  # not contiguous
        (0, "b"): torch.tensor([True, False, True]),
        (0, "s"): torch.tensor(2.5, dtype=torch.float64),
        (0, "h"): t.detach().to(torch.bfloat16),
        (0, "e"): t.detach().to(torch.float8_e4m3fn),
        (0, "u"): torch.arange(5, dtype=torch.int32).to(torch.uint16),
    }
    run = record(tmp_path / "torch", tensors)
    got = {k[1]: (r.dtype, r.shape) for k, r in refs(run).items()}
    assert got == {
        "w": ("f32", (4, 6)), "t": ("f32", (6, 4)), "b": ("bool", (3,)), "s": ("f64", ()),
        "h": ("bf16", (4, 6)), "e": ("f8_e4m3fn", (4, 6)), "u": ("u16", (5,)),
    }  # fmt: skip
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    twins = {
        (0, "w"): base, (0, "t"): base.T, (0, "b"): np.array([True, False, True]),
        (0, "s"): np.float64(2.5), (0, "u"): np.arange(5, dtype=np.uint16),
    }  # fmt: skip
    twin = record(tmp_path / "numpy", twins)
    report = compare_runs(twin, run)
    statuses = {b.name: b.status for b in report.buffers}
    assert {k: v for k, v in statuses.items() if k in "wtbsu"} == dict.fromkeys("wtbsu", "equal")
    raw = np.load(run / "step_0_h.npy")
    assert raw.tobytes() == tensors[(0, "h")].view(torch.int16).numpy().tobytes()


@pytest.mark.parametrize(
    ("array", "what"),
    [
        (np.zeros(3, dtype=np.complex64), "complex"),
        (np.array(["a"]), "unicode"),
        (np.array([object()]), "objects"),
        (object(), "cannot record a builtins.object"),
    ],
)
def test_what_cannot_be_recorded_is_one_clear_error(
    tmp_path: Path, array: object, what: str
) -> None:
    with Recorder(tmp_path / "r") as rec, pytest.raises((TypeError, ValueError)) as info:
        rec.dump(3, "x", array)
    assert "step 3, 'x'" in str(info.value) and what in str(info.value)
    assert not (tmp_path / "r" / "step_3_x.npy").exists()


@pytest.mark.parametrize("name", ["", "a/b", "a\0b", 5])
def test_a_name_that_cannot_be_a_dump_name_is_refused(tmp_path: Path, name: object) -> None:
    """The error says which names are allowed, and nothing is written."""
    with Recorder(tmp_path / "r") as rec, pytest.raises(ValueError, match="buffer name") as info:
        rec.dump(0, name, np.zeros(1))  # type: ignore[arg-type]
    message = str(info.value)
    assert repr(name) in message
    assert "one or more characters" in message and "'/' and NUL" in message, message
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").glob("step_*"))


def test_a_folder_that_holds_dumps_is_refused_unless_exist_ok(tmp_path: Path) -> None:
    """A recorder opened on a run already recorded would mix the runs (its old
    steps then read as in one run only): FileExistsError, naming the folder
    and how many dumps it holds; ``exist_ok=True`` writes into it."""
    run = record(tmp_path / "r", {(0, "x"): np.zeros(4), (1, "x"): np.zeros(4)})
    with pytest.raises(FileExistsError) as info:
        Recorder(run)
    assert info.value.errno == errno.EEXIST and info.value.filename == str(run)
    assert "holds 2 dumps" in str(info.value) and "exist_ok=True" in str(info.value)
    assert sorted(p.name for p in run.iterdir()) == [DIGEST_LOG, "step_0_x.npy", "step_1_x.npy"]
    with Recorder(run, exist_ok=True) as rec:
        rec.dump(1, "x", np.ones(4))
    assert np.array_equal(np.load(run / "step_1_x.npy"), np.ones(4))

    # Digests only: the dumps are the log's lines.
    digests = record(tmp_path / "d", {(s, "x"): np.zeros(4) for s in range(3)}, data=False)
    with pytest.raises(FileExistsError, match="the digests of 3 dumps") as info:
        Recorder(digests)
    assert info.value.filename == str(digests)
    # A rank's folder is its own: rank 1 beside a recorded rank 0 is new.
    record(tmp_path / "k", {(0, "x"): np.zeros(4)}, rank=0)
    with pytest.raises(FileExistsError, match="holds 1 dump;") as info:
        Recorder(tmp_path / "k", rank=0)
    assert info.value.filename == str(tmp_path / "k" / "rank_0")
    Recorder(tmp_path / "k", rank=1).close()
    # An empty folder, or one of other files, holds no dumps.
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "notes.txt").write_text("x")
    record(tmp_path / "e", {(0, "x"): np.zeros(4)})


def test_steps_path_and_close(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rec = Recorder(tmp_path / "r")
    with pytest.raises(ValueError, match="step must be >= 0"):
        rec.dump(-1, "x", np.zeros(1))
    rec.dump(np.int64(2), "x", np.zeros(1))
    rec.close()
    rec.close()
    with pytest.raises(ValueError, match="dump after close"):
        rec.dump(3, "x", np.zeros(1))
    monkeypatch.delenv("FASTDIFF_RUN", raising=False)
    with pytest.raises(ValueError, match="FASTDIFF_RUN is not set"):
        Recorder()
    monkeypatch.setenv("FASTDIFF_RUN", str(tmp_path / "env"))
    with Recorder() as rec:
        rec.dump(0, "x", np.zeros(1))
    assert (tmp_path / "env" / "step_0_x.npy").is_file()


def test_a_dump_of_a_buffer_again_replaces_it(tmp_path: Path) -> None:
    with Recorder(tmp_path / "r", data=lambda step: step != 1) as rec:
        rec.dump(0, "x", np.zeros(4))
        rec.dump(0, "x", np.ones(4))
        rec.dump(1, "y", np.ones(2))
        rec.dump(1, "y", np.zeros(2))
    assert np.array_equal(np.load(tmp_path / "r" / "step_0_x.npy"), np.ones(4))
    other = record(tmp_path / "o", {(0, "x"): np.ones(4), (1, "y"): np.zeros(2)}, data={0})
    assert compare_runs(tmp_path / "r", other).verdict == "identical"


# --- atomicity ---------------------------------------------------------------------

_WRITER = """
import sys, numpy as np
from fastdiff import Recorder
rng = np.random.default_rng(int(sys.argv[2]))
with Recorder(sys.argv[1]) as rec:
    for step in range(10_000):
        for name, size in (("small", 1000), ("big", 3 << 20)):
            rec.dump(step, name, np.full(size, step, dtype=np.float32))
"""


def test_a_job_killed_at_any_instant_leaves_only_whole_dumps(tmp_path: Path) -> None:
    rng = random.Random(20260512)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for trial in range(6):
        run = tmp_path / f"run{trial}"
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(run), str(trial)], env=env, cwd=REPO
        )
        deadline = time.monotonic() + 60
        while not (run / DIGEST_LOG).exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.6))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        dumps = sorted(p for p in run.iterdir() if p.name.startswith("step_"))
        for p in dumps:  # every dump is whole, with its own content
            step = int(p.name.split("_")[1])
            arr = np.load(p)
            assert arr.dtype == np.float32 and (arr == step).all(), p
            assert arr.size == (1000 if "small" in p.name else 3 << 20)
        hidden = [p.name for p in run.iterdir() if p.name.startswith(".")]
        assert all(n == DIGEST_LOG or n.startswith(TEMP_PREFIX) for n in hidden)
        r = fastdiff("compare", run, run, "--format", "json")
        assert r.returncode == 0, (trial, r.stderr)
        doc = json.loads(r.stdout)
        assert doc["skipped"] == [] and doc["errors"] == []
        assert len(doc["buffers"]) == len(dumps)


# --- failing writes -----------------------------------------------------------------


def test_a_write_that_fails_raises_with_the_path_and_leaves_no_dump(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "r"
    rec = Recorder(run)
    rec.dump(0, "x", np.arange(10.0))
    real_write = os.write
    budget = [300]

    def full_disk(fd: int, buffers: list[memoryview]) -> int:
        data = b"".join(bytes(b) for b in buffers)
        n = min(len(data), budget[0])
        if n == 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        budget[0] -= n
        return real_write(fd, data[:n])

    monkeypatch.setattr(recorder_module.os, "writev", full_disk)
    with pytest.raises(OSError) as info:
        rec.dump(1, "y", np.arange(1000.0))
    assert info.value.errno == errno.ENOSPC
    assert str(run / "step_1_y.npy") in str(info.value)
    assert "was not written" in str(info.value)
    monkeypatch.undo()
    rec.close()
    names = sorted(p.name for p in run.iterdir())
    assert names == [DIGEST_LOG, "step_0_x.npy"]  # no torn dump, no temporary
    assert [line["name"] for line in log_lines(run)] == ["x"]
    assert fastdiff("compare", run, run).returncode == 0


def test_a_log_write_cut_short_leaves_only_whole_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "r"
    rec = Recorder(run, data=False)
    rec.dump(0, "x", np.arange(10.0))
    real_write = os.write

    def half(fd: int, data: bytes) -> int:
        return real_write(fd, data[: len(data) // 2])

    monkeypatch.setattr(recorder_module.os, "write", half)
    with pytest.raises(OSError) as info:
        rec.dump(1, "x", np.arange(10.0))
    assert info.value.errno == errno.ENOSPC
    assert str(run / DIGEST_LOG) in str(info.value)
    assert "the digests of step_1_x.npy were not recorded" in str(info.value)
    monkeypatch.undo()
    rec.close()
    assert [(line["step"], line["file"]) for line in log_lines(run)] == [(0, None)]
    src = open_run(str(run))
    assert src.notes == () and [f.step for f in src.listing.buffers] == [0]


def test_a_full_disk_for_real(tmp_path: Path) -> None:
    """A 1 MiB tmpfs (needs the right to mount: skipped without it)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        rec = Recorder(disk / "run")
        written = 0
        with pytest.raises(OSError) as info:
            for step in range(100):
                rec.dump(step, "x", np.full(64 << 10, step, dtype=np.float32))  # 256 KiB
                written += 1
        assert info.value.errno == errno.ENOSPC
        assert f"step_{written}_x.npy" in str(info.value)
        rec.close()
        run = disk / "run"
        dumps = sorted(p.name for p in run.iterdir() if not p.name.startswith("."))
        assert len(dumps) == written
        assert not [p for p in run.iterdir() if p.name.startswith(TEMP_PREFIX)]
        for step in range(written):
            assert (np.load(run / f"step_{step}_x.npy") == step).all()
        assert fastdiff("compare", run, run).returncode == 0
    finally:
        subprocess.run(["umount", str(disk)], check=False)


# --- the digest log's rules --------------------------------------------------------


def _twins(tmp_path: Path) -> tuple[Path, Path]:
    arrays = {(s, "w"): np.arange(256, dtype=np.float32) + s for s in range(3)}
    return record(tmp_path / "a", arrays), record(tmp_path / "b", arrays)


@pytest.mark.parametrize("restore_mtime", [False, True])
def test_a_dump_rewritten_in_place_is_hashed_again_never_taken_from_the_log(
    tmp_path: Path, restore_mtime: bool
) -> None:
    a, b = _twins(tmp_path)
    path = b / "step_1_w.npy"
    before = os.stat(path)
    with open(path, "r+b") as fh:  # same size, one byte changed, in place
        fh.seek(200)
        byte = fh.read(1)
        fh.seek(200)
        fh.write(bytes([byte[0] ^ 1]))
    if restore_mtime:  # a writer that puts the mtime back: only ctime tells
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert os.stat(path).st_mtime_ns == before.st_mtime_ns
    report = compare_runs(a, b)
    assert report.verdict == "diverged" and report.first_divergent_step == 1
    assert report.work.files_hashed == 1
    changed = [n for n in report.notes if n.kind is NoteKind.LOG_DUMPS_CHANGED]
    assert [n["files"] for n in changed] == [("step_1_w.npy",)]


def test_a_dump_replaced_by_another_file_is_hashed_again(tmp_path: Path) -> None:
    a, b = _twins(tmp_path)
    other = np.arange(256, dtype=np.float32)
    other[7] = -1
    np.save(tmp_path / "new.npy", other)
    os.replace(tmp_path / "new.npy", b / "step_0_w.npy")
    report = compare_runs(a, b)
    (diverged,) = [x for x in report.buffers if x.status != "equal"]
    assert (diverged.step, diverged.first_index) == (0, 7)


def test_a_log_copied_from_another_run_is_never_used(tmp_path: Path) -> None:
    a = record(tmp_path / "a", {(0, "w"): np.zeros(64, np.float32)})
    b = tmp_path / "b"
    b.mkdir()
    np.save(b / "step_0_w.npy", np.ones(64, np.float32))
    shutil.copy(a / DIGEST_LOG, b / DIGEST_LOG)  # a's digests, claimed for b's file
    src = open_run(str(b))
    assert src.listing.buffers[0].digest is None
    report = compare_runs(a, b)
    assert report.verdict == "diverged" and report.work.files_hashed == 1


def _bad_lines(good: bytes) -> list[tuple[bytes, str]]:
    flipped = bytearray(good)
    flipped[30] ^= 0x20
    fields = json.loads(good)
    del fields["check"]

    def forged(**changes: object) -> bytes:
        from xxhash import xxh3_64_hexdigest

        body = json.dumps({**fields, **changes}, separators=(",", ":")).encode()
        return body[:-1] + b',"check":"' + xxh3_64_hexdigest(body).encode() + b'"}'

    return [
        (good[:-40], "no check at its end"),
        (bytes(flipped), "its check does not match"),
        (b"{}", "no check"),
        (forged(v=3), "format version 3"),
        (forged(v=1), "other keys"),  # format 1 had no replaces
        (forged(replaces="abc"), "replaces must be"),
        (forged(sealed_ns=fields["ctime_ns"]), "not sealed"),
        (forged(size=fields["size"] + 4), "is not shape"),
        (forged(chunks=fields["chunks"][:0]), "do not fit"),
        (forged(file="step_9_w.npy"), "not the dump name"),
        (forged(dtype="complex64"), "unknown dtype"),
        (forged(step=-1), "step must be"),
        (forged(ino=True), "ino must be"),
    ]


def test_damaged_and_forged_lines_are_ignored_with_a_note(tmp_path: Path) -> None:
    a, b = _twins(tmp_path)
    good = (b / DIGEST_LOG).read_bytes().splitlines()
    for bad, why in _bad_lines(good[0]):
        with pytest.raises(LogLineError, match=why):
            parse_line(bad)
    cases = [bad for bad, _ in _bad_lines(good[0])]
    (b / DIGEST_LOG).write_bytes(b"\n".join([*cases, *good[1:]]) + b"\n" + good[0][:50])
    src = open_run(str(b))
    by_step = {f.step: f for f in src.listing.buffers}
    assert by_step[0].digest is None and by_step[1].digest is not None
    (note,) = [n for n in src.notes if n.kind is NoteKind.LOG_LINES_IGNORED]
    assert len(note["lines"]) == len(cases) + 1 and note["lines"][0].startswith("line 1: ")
    assert f"; and {len(cases) + 1 - 3} more)" in note_text(note)  # three are named
    report = compare_runs(a, b)
    assert report.verdict == "identical" and report.work.files_hashed == 1
    assert [n["lines"] for n in report.notes if n.kind is NoteKind.LOG_LINES_IGNORED] == [
        note["lines"]
    ]  # the report carries the note


def test_a_torn_last_line_is_a_note_and_the_rest_is_used(tmp_path: Path) -> None:
    _, b = _twins(tmp_path)
    log = (b / DIGEST_LOG).read_bytes()
    (b / DIGEST_LOG).write_bytes(log[:-60])
    src = open_run(str(b))
    assert sum(f.digest is not None for f in src.listing.buffers) == 2
    (note,) = src.notes
    assert note["lines"] == ("line 3: cut short (the job stopped while writing it)",)


def test_a_log_larger_than_the_cap_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastdiff.sources import digestlog

    _, b = _twins(tmp_path)
    monkeypatch.setattr(digestlog, "MAX_LOG_BYTES", 100)
    src = open_run(str(b))
    assert all(f.digest is None for f in src.listing.buffers)
    (note,) = src.notes
    assert note.kind is NoteKind.LOG_UNUSABLE and "more than 100" in note["why"]


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_a_mutated_line_is_refused_or_read_back_unchanged(data: st.DataObject) -> None:
    st_ = SimpleNamespace(st_size=152, st_dev=5, st_ino=77, st_mtime_ns=10**18, st_ctime_ns=10**18)
    good = log_line(3, "w.x", "f32", (2, 3), 24, 8, [bytes(range(16))] * 3, "step_3_w.x.npy",
                    128, st_, 10**18 + 5, 1)[:-1]  # type: ignore[arg-type]  # fmt: skip
    original = parse_line(good)
    raw = bytearray(good)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    try:
        entry = parse_line(bytes(raw))
    except LogLineError:
        return
    assert bytes(raw) == good or all(
        getattr(entry, k) == getattr(original, k) for k in original.__slots__ if k != "lineno"
    )


def test_every_line_the_recorder_writes_is_sealed(tmp_path: Path) -> None:
    arrays = {(s, n): np.full(100, s, np.int32) for s in range(20) for n in "xy"}
    run = record(tmp_path / "r", arrays)
    lines = log_lines(run)
    assert len(lines) == 40
    assert all(line["ctime_ns"] < line["sealed_ns"] for line in lines)
    for line in lines:
        st_ = os.stat(run / line["file"])
        assert (line["ino"], line["ctime_ns"], line["file_size"]) == (
            st_.st_ino, st_.st_ctime_ns, st_.st_size,
        )  # fmt: skip


def test_a_log_line_held_back_is_lost_safely_when_the_job_dies(tmp_path: Path) -> None:
    """The newest dump's line waits for the file system's clock; a job that
    dies first leaves that dump without a line: it is hashed, not trusted."""
    run = tmp_path / "r"
    code = (
        "import os, numpy as np\nfrom fastdiff import Recorder\n"
        f"rec = Recorder({str(run)!r})\nrec.dump(0, 'x', np.zeros(8))\n"
        "rec.dump(1, 'x', np.ones(8))\nos._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO,
                   env={**os.environ, "PYTHONPATH": str(REPO)})  # fmt: skip
    lines = log_lines(run)
    assert [line["step"] for line in lines] in ([0], [])
    src = open_run(str(run))
    assert {f.step for f in src.listing.buffers} == {0, 1}
    assert next(f for f in src.listing.buffers if f.step == 1).digest is None


# --- digests only, and recording a step in full ----------------------------------------


def _job(folder: Path, data: object, diverge: bool, steps: int = 6) -> Path:
    arrays = {}
    for s in range(steps):
        w = np.linspace(0, 1, 300, dtype=np.float32) * (s + 1)
        if diverge and s >= 3:
            w[17 + s] += 1e-3
        arrays[(s, "w")] = w
        arrays[(s, "v")] = np.arange(50, dtype=np.int64) * s
    return record(folder, arrays, data=data)


def test_digests_only_runs_name_the_first_divergent_step_and_how_to_see_the_values(
    tmp_path: Path,
) -> None:
    a = _job(tmp_path / "a", False, False)
    b = _job(tmp_path / "b", False, True)
    assert sorted(p.name for p in a.iterdir()) == [DIGEST_LOG]
    digests = compare_runs(a, b)
    assert (digests.verdict, digests.first_divergent_step) == ("diverged", 3)
    w = next(x for x in digests.buffers if (x.step, x.name) == (3, "w"))
    assert w.status == "diverged" and w.n_diff is None  # by digests: no element was read
    assert w.first_divergent_chunk is not None
    (rerecord,) = [n for n in digests.notes if n.kind is NoteKind.RERECORD]
    assert (rerecord["step"], rerecord["names"]) == (3, ("w",))
    assert rerecord["sides"] == (("A", str(a)), ("B", str(b)))
    # The note's words, once:
    r = fastdiff("compare", a, b)
    assert r.returncode == 1, r.stderr
    assert (
        f"note: runs A ({a}) and B ({b}) recorded digests only at step 3, where the runs first "
        "diverge (w): the digests show where, not the values; to see them, record step 3 in "
        "full, Recorder(..., data={3})"
    ) in r.stdout
    # Recorded again with step 3 in full: the values are there.
    a3 = _job(tmp_path / "a3", {3}, False)
    b3 = _job(tmp_path / "b3", {3}, True)
    report = compare_runs(a3, b3)
    w3 = next(x for x in report.buffers if (x.step, x.name) == (3, "w"))
    assert w3.status == "diverged" and w3.n_diff == 1 and w3.first_index == 20
    assert w3.message is None
    w4 = next(x for x in report.buffers if (x.step, x.name) == (4, "w"))
    assert w4.status == "diverged" and w4.n_diff is None  # step 4: digests only
    assert not any(n.kind is NoteKind.RERECORD for n in report.notes)
    # Full data in one run, digests only in the other: compared by digests.
    mixed = compare_runs(_job(tmp_path / "full", True, False), b)
    assert mixed.first_divergent_step == 3 and mixed.work.files_hashed == 0
    (rerecord,) = [n for n in mixed.notes if n.kind is NoteKind.RERECORD]
    assert [side for side, _ in rerecord["sides"]] == ["B"] and rerecord["step"] == 3


def test_a_tolerance_against_digests_only_is_undecided_and_says_how_to_judge_it(
    tmp_path: Path,
) -> None:
    a = _job(tmp_path / "a", False, False)
    b = _job(tmp_path / "b", {4}, True)
    report = compare_runs(a, b, CompareOptions(atol=1.0))
    w3 = next(x for x in report.buffers if (x.step, x.name) == (3, "w"))
    assert w3.status == "error" and report.verdict == "error"
    assert w3.message is not None and w3.message.endswith(
        "is not known: both runs recorded digests only at step 3; record step 3 in full "
        "(Recorder(..., data={3})) to apply it"
    )
    assert any(e.kind == "undecided" for e in report.errors)
    a4 = _job(tmp_path / "a4", {3}, False)
    b4 = _job(tmp_path / "b4", {3}, True)
    judged = compare_runs(a4, b4, CompareOptions(atol=1.0))
    w3 = next(x for x in judged.buffers if (x.step, x.name) == (3, "w"))
    assert w3.status == "within_tolerance"


def test_a_data_predicate_chooses_the_steps_written_in_full(tmp_path: Path) -> None:
    run = _job(tmp_path / "r", lambda step: step % 2 == 0, False)
    files = sorted(p.name for p in run.iterdir() if not p.name.startswith("."))
    assert files == [f"step_{s}_{n}.npy" for s in (0, 2, 4) for n in "vw"]
    src = open_run(str(run))
    assert sum(not f.has_data for f in src.listing.buffers) == 6
    assert fastdiff("compare", run, _job(tmp_path / "all", True, False)).returncode == 0


def test_hash_and_stats_read_a_recorded_run(tmp_path: Path) -> None:
    run = _job(tmp_path / "r", {0, 1}, False)
    out = tmp_path / "r.manifest.json"
    r = fastdiff("hash", run, "-o", out)
    assert r.returncode == 0, r.stderr
    manifest = json.loads(out.read_text())
    assert len(manifest["buffers"]) == 12
    assert fastdiff("compare", out, _job(tmp_path / "all", True, False)).returncode == 0
    s = fastdiff("stats", run)
    assert s.returncode == 0, s.stderr


def test_a_leftover_temporary_is_passed_over_by_every_command(tmp_path: Path) -> None:
    a, b = _twins(tmp_path)
    (b / f"{TEMP_PREFIX}123-4").write_bytes(b"\x93NUMPY partial")
    for args in (("compare", a, b, "--format", "json"), ("stats", b, "--format", "json")):
        r = fastdiff(*args)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["skipped"] == []
    assert fastdiff("hash", b).returncode == 0


# --- ranks ---------------------------------------------------------------------------


def test_ranks_write_under_rank_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"):
        monkeypatch.delenv(var, raising=False)
    for rank in (0, 1):
        record(tmp_path / "a", {(0, "w"): np.full(8, rank)}, rank=rank)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    rec = Recorder(tmp_path / "b")
    assert rec.rank == 1 and rec.path == str(tmp_path / "b" / "rank_1")
    rec.dump(0, "w", np.full(8, 1))
    rec.close()
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["rank_0", "rank_1"]
    # The runs compared whole: ranks pair by number; rank 0 is in run A only.
    whole = compare_runs(tmp_path / "a", tmp_path / "b")
    assert whole.verdict == "error" and whole.ranks is not None
    assert [(r.rank, r.report.verdict) for r in whole.ranks] == [(0, "error"), (1, "identical")]
    record(tmp_path / "b", {(0, "w"): np.full(8, 1)}, rank=0)  # rank 0 of B wrote 1s, A 0s
    again = compare_runs(tmp_path / "a", tmp_path / "b")
    assert again.verdict == "diverged" and again.first_divergent_step == 0
    assert [(r.rank, r.report.verdict) for r in again.ranks] == [(0, "diverged"), (1, "identical")]
    monkeypatch.setenv("WORLD_SIZE", "1")  # a job of one process: the run folder itself
    assert Recorder(tmp_path / "c").path == str(tmp_path / "c")
    monkeypatch.setenv("RANK", "x")
    with pytest.raises(ValueError, match=r"\$RANK is 'x'"):
        Recorder(tmp_path / "d")
    with pytest.raises(ValueError, match="rank must be"):
        Recorder(tmp_path / "d", rank=-1)


@pytest.mark.parametrize(
    ("env", "rank"),
    [
        ({}, None),
        ({"RANK": "3", "WORLD_SIZE": "4"}, 3),
        ({"RANK": "0"}, 0),
        ({"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "8"}, 2),
        ({"PMI_RANK": "5", "PMI_SIZE": "6"}, 5),
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "1"}, None),
        ({"SLURM_PROCID": "7", "SLURM_NTASKS": "8", "RANK": "1", "WORLD_SIZE": "2"}, 1),
    ],
)
def test_the_default_rank_comes_from_the_launcher(env: dict[str, str], rank: int | None) -> None:
    assert recorder_module.launcher_rank(env) == rank


# --- watch sees a recorder's run as it is written ------------------------------------


def test_watch_follows_runs_a_recorder_writes(tmp_path: Path) -> None:
    writer = (
        "import sys, time, numpy as np\nfrom fastdiff import Recorder\n"
        "with Recorder(sys.argv[1]) as rec:\n"
        "    for step in range(6):\n"
        "        for name in ('a', 'b'):\n"
        "            rec.dump(step, name, np.full(200_000, step, dtype=np.float32))\n"
        "        time.sleep(0.05)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    a, b = tmp_path / "a", tmp_path / "b"
    procs = [
        subprocess.Popen([sys.executable, "-c", writer, str(r)], env=env, cwd=REPO) for r in (a, b)
    ]
    try:
        w = fastdiff("watch", a, b, "--format", "jsonl", "--settle", "0.5", "--idle-timeout",
                     "3", timeout=120)  # fmt: skip
    finally:
        for p in procs:
            p.wait(60)
    assert w.returncode == 0, w.stderr
    summary = json.loads(w.stdout.splitlines()[-1])
    assert summary["verdict"] == "identical" and summary["steps_compared"] == 6
    assert summary["skipped"] == [] and summary["errors"] == []


def test_the_readme_recording_example_runs(tmp_path: Path) -> None:
    section = (REPO / "docs" / "tutorials" / "recorder.md").read_text(encoding="utf-8")
    code = section[section.index("```python\n") + 10 : section.index("```\n", 1)]
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, env={**os.environ, "PYTHONPATH": str(REPO)})  # fmt: skip
    assert r.returncode == 0, r.stderr
    run = tmp_path / "runs" / "a"
    got = {(k[0], k[1]): (f.dtype, f.shape) for k, f in refs(run).items()}
    assert got == {
        **{(s, "weights"): ("f32", (1000,)) for s in range(3)},
        **{(s, "loss"): ("f64", ()) for s in range(3)},
    }
    assert fastdiff("compare", run, run).returncode == 0
