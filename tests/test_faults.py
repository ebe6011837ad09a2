"""What fastdiff promises under faults: never a wrong verdict, never a lost result.

Each test is one promise of the README's "Under faults" section.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import fastdiff as run_fastdiff

import fastdiff.sources.reader
from fastdiff import CompareOptions, compare_runs, render_json
from fastdiff.bench.synth import write_rl_run
from fastdiff.presets import resolve_schema
from fastdiff.stages.verdict import exit_code

REPO = Path(__file__).resolve().parents[1]
F32 = CompareOptions(schema=resolve_schema("raw", "f32"))


def fastdiff_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "fastdiff", *args]


def run_cli(*args: str, timeout: float = 120, env: dict[str, str] | None = None) -> Any:
    return run_fastdiff(*args, timeout=timeout, env=env)


def pair_of_runs(tmp_path: Path, files: dict[str, bytes]) -> tuple[Path, Path]:
    a, b = tmp_path / "a", tmp_path / "b"
    for run in (a, b):
        run.mkdir()
        for name, data in files.items():
            (run / name).write_bytes(data)
    return a, b


def sparse(path: Path, size: int, tail: bytes = b"") -> None:
    """A file of ``size`` bytes that takes no disk: a hole, then ``tail``."""
    with open(path, "wb") as fh:
        fh.truncate(size)
        if tail:
            fh.seek(size - len(tail))
            fh.write(tail)


# --- 1. files that change while they are read -------------------------------------


@pytest.fixture
def writer_during_read(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, object]]:
    """Fault injection: the first read of a chosen file lets a 'job' change it."""
    plan: dict[str, object] = {}
    real = fastdiff.sources.reader.read_exact

    def read_exact(fd: int, into: memoryview, offset: int, path: str) -> memoryview:
        change = plan.pop(path, None)
        if callable(change):
            change(path)
        return real(fd, into, offset, path)

    monkeypatch.setattr(fastdiff.sources.reader, "read_exact", read_exact)
    monkeypatch.setattr("fastdiff.stages.hash.read_exact", read_exact)
    monkeypatch.setattr("fastdiff.sources.access.read_exact", read_exact)
    yield plan


def _append(path: str) -> None:
    with open(path, "ab") as fh:
        fh.write(b"\0" * 64)


def _overwrite_same_size(path: str) -> None:
    time.sleep(0.01)  # a later mtime, as a job writing a moment later would leave
    with open(path, "r+b") as fh:
        fh.write(b"\x01\x02\x03\x04")


@pytest.mark.parametrize("change", [_append, _overwrite_same_size])
@pytest.mark.parametrize("executor", ["serial", "thread"])
def test_a_file_changed_while_read_is_an_error_not_a_verdict(
    tmp_path: Path, writer_during_read: dict[str, object], change: object, executor: str
) -> None:
    a, b = pair_of_runs(tmp_path, {"step_0_x.bin": bytes(4096), "step_0_y.bin": bytes(4096)})
    writer_during_read[str(b / "step_0_x.bin")] = change
    report = compare_runs(a, b, F32.replace(executor=executor, jobs=2))
    assert report.verdict == "error" and exit_code(report) == 2
    by_name = {x.name: x for x in report.buffers}
    assert by_name["x"].status == "error"
    assert "changed while fastdiff was comparing it" in (by_name["x"].message or "")
    assert by_name["y"].status == "equal"  # the rest of the report is kept
    assert [e.path for e in report.errors] == [str(b / "step_0_x.bin")]


def test_a_file_changed_between_hash_and_scan_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The digests differed; by the time the scan reads, the bytes agree again."""
    import fastdiff.stages.scan

    a, b = pair_of_runs(tmp_path, {"step_0_x.bin": bytes(8192)})
    target = b / "step_0_x.bin"
    target.write_bytes(bytes(8188) + b"\x01\x00\x00\x00")
    real_scan = fastdiff.stages.scan.scan_job

    def scan_job(job, tol, requested="auto"):  # type: ignore[no-untyped-def]
        with open(target, "r+b") as fh:  # a job rewrites B between the two stages
            fh.seek(8188)
            fh.write(b"\0\0\0\0")
        return real_scan(job, tol, requested)

    monkeypatch.setattr(fastdiff.stages.scan, "scan_job", scan_job)
    report = compare_runs(a, b, F32)
    assert report.verdict == "error"
    assert "changed while fastdiff was comparing it" in (report.buffers[0].message or "")


def test_a_job_still_writing_never_gets_identical(tmp_path: Path) -> None:
    """A real concurrent writer appending to B while fastdiff reads it."""
    data = os.urandom(8 << 20)
    a, b = pair_of_runs(tmp_path, {"step_0_x.bin": data})
    import threading

    stop = threading.Event()

    def job() -> None:
        with open(b / "step_0_x.bin", "ab") as fh:
            while not stop.is_set():
                fh.write(b"\0" * 8)
                fh.flush()

    t = threading.Thread(target=job)
    t.start()
    try:
        time.sleep(0.01)
        report = compare_runs(a, b, F32)
    finally:
        stop.set()
        t.join()
    assert report.verdict in ("error", "diverged")
    assert report.buffers[0].status in ("error", "length_mismatch")


# --- 2. odd entries named like dumps -------------------------------------------------


def test_odd_entries_have_defined_behaviour(tmp_path: Path) -> None:
    a, b = pair_of_runs(tmp_path, {"step_0_ok.bin": bytes(16), "step_0_empty.bin": b""})
    os.mkfifo(b / "step_1_fifo.bin")
    (a / "step_1_fifo.bin").write_bytes(bytes(16))
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(b / "step_1_sock.bin"))
    os.symlink("/dev/null", b / "step_1_dev.bin")
    (b / "step_1_dir.bin").mkdir()
    os.symlink(tmp_path, b / "step_1_linkdir.bin")
    os.symlink(b / "nowhere", b / "step_1_dangling.bin")
    os.symlink(b / "step_1_loop2.bin", b / "step_1_loop.bin")
    os.symlink(b / "step_1_loop.bin", b / "step_1_loop2.bin")
    (tmp_path / "target.bin").write_bytes(bytes(16))
    for run in (a, b):
        os.symlink(tmp_path / "target.bin", run / "step_2_link.bin")
        sparse(run / "step_2_sparse.bin", 1 << 20)
    (a / os.fsdecode(b"step_3_\xff.bin")).write_bytes(bytes(4))
    (b / os.fsdecode(b"step_3_\xff.bin")).write_bytes(bytes(4))
    (a / os.fsdecode(b"notes-\xfe.txt")).write_bytes(b"")
    try:
        # A FIFO never hangs the run: were it opened, this would time out.
        r = run_cli("compare", str(a), str(b), "--schema", "raw", "--format", "json", timeout=120)
    finally:
        sock.close()
    assert r.returncode == 2
    rep = json.loads(r.stdout)
    errors = {Path(e["path"]).name: e["message"] for e in rep["errors"]}
    assert "FIFO" in errors["step_1_fifo.bin"]
    assert "socket" in errors["step_1_sock.bin"]
    assert "character device" in errors["step_1_dev.bin"]
    assert "folder" in errors["step_1_dir.bin"] and "folder" in errors["step_1_linkdir.bin"]
    assert "broken symbolic link" in errors["step_1_dangling.bin"]
    assert "symbolic link loop" in errors["step_1_loop.bin"]
    assert "not valid UTF-8" in errors["step_3_\\xff.bin"]
    assert len(r.stderr.splitlines()) == len(rep["errors"])  # one line per error
    skipped = {Path(s["path"]).name: s["reason"] for s in rep["skipped"]}
    assert "not a dump" in skipped["notes-\\xfe.txt"]
    status = {(x["step"], x["name"]): x["status"] for x in rep["buffers"]}
    assert status[(0, "ok")] == status[(0, "empty")] == "equal"
    assert status[(2, "link")] == status[(2, "sparse")] == "equal"
    assert status[(1, "fifo")] == "error"  # present but unreadable: not "only in A"


def test_unreadable_file_is_a_clear_error(tmp_path: Path) -> None:
    """As root without the capability to override permissions, a mode-000 file."""
    setpriv = shutil.which("setpriv")
    if setpriv is None or os.geteuid() != 0:
        pytest.skip("needs root and setpriv to drop CAP_DAC_OVERRIDE")
    a, b = pair_of_runs(tmp_path, {"step_0_x.bin": bytes(16), "step_0_y.bin": bytes(16)})
    os.chmod(b / "step_0_x.bin", 0)
    for p in (tmp_path, a, b):
        os.chmod(p, 0o755)
    cmd = [setpriv, "--bounding-set", "-dac_override,-dac_read_search"]
    cmd += fastdiff_cmd("compare", str(a), str(b), "--schema", "raw", "--format", "json")
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=60, check=False)
    assert r.returncode == 2, r.stderr
    assert r.stderr == (
        f"fastdiff: error: {b / 'step_0_x.bin'}: permission denied; "
        "fastdiff needs read access to the file\n"
    )
    rep = json.loads(r.stdout)
    status = {x["name"]: x["status"] for x in rep["buffers"]}
    assert status == {"x": "error", "y": "equal"}


# --- 3. larger than memory -----------------------------------------------------------


def _peak_rss_kib(cmd: list[str], limit_bytes: int | None = None) -> tuple[int, str, int]:
    """Run ``cmd`` in a child; return (exit code, stdout, peak RSS in KiB)."""
    import resource

    code = (
        "import os, resource, subprocess, sys\n"
        "limit = int(sys.argv[1])\n"
        "def pre():\n"
        "    if limit:\n"
        "        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
        "p = subprocess.run(sys.argv[2:], preexec_fn=pre, capture_output=True, text=True)\n"
        "sys.stderr.write(p.stderr)\n"
        "print(p.returncode)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.stdout.write(p.stdout)\n"
    )
    r = subprocess.run([sys.executable, "-c", code, str(limit_bytes or 0), *cmd],
                       capture_output=True, text=True, cwd=REPO, timeout=600, check=False,
                       env={**os.environ, "MALLOC_ARENA_MAX": "2"})  # fmt: skip
    rc, peak, out = r.stdout.split("\n", 2)
    del resource
    return int(rc), out, int(peak)


def test_a_pair_larger_than_the_memory_limit(tmp_path: Path) -> None:
    """Two 4.5 GiB sparse files compared under a 1 GiB address-space limit
    (beyond 4 GiB: byte offsets past 32 bits, element indices past 2**30)."""
    size = 9 << 29
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    sparse(a / "step_0_huge.bin", size, b"\0\0\0\0" + b"\x00\x00\x80\x3f")
    sparse(b / "step_0_huge.bin", size, b"\0\0\0\0" + b"\x00\x00\x00\x40")
    cmd = fastdiff_cmd("compare", str(a), str(b), "--default-dtype", "f32", "--format", "json")
    rc, out, peak_kib = _peak_rss_kib(cmd, limit_bytes=1 << 30)
    assert rc == 1, out
    buf = json.loads(out)["buffers"][0]
    assert (buf["status"], buf["n_diff"], buf["first_index"], buf["a"], buf["b"]) == (
        "diverged", 1, size // 4 - 1, 1.0, 2.0)  # fmt: skip
    assert peak_kib < 256 << 10


def test_peak_memory_does_not_grow_with_file_size(tmp_path: Path) -> None:
    """Dense differences through the numba engine: 64 MiB and 512 MiB pairs."""
    peaks = []
    for mib in (64, 512):
        a, b = tmp_path / f"a{mib}", tmp_path / f"b{mib}"
        a.mkdir()
        b.mkdir()
        sparse(a / "step_0_x.bin", mib << 20)
        with open(b / "step_0_x.bin", "wb") as fh:  # every element of the last 32 MiB differs
            fh.truncate(mib << 20)
            fh.seek((mib - 32) << 20)
            fh.write(b"\x01" * (32 << 20))
        cmd = fastdiff_cmd("compare", str(a), str(b), "--default-dtype", "u32",
                           "--engine", "numba", "--format", "json")  # fmt: skip
        rc, out, peak = _peak_rss_kib(cmd)
        assert rc == 1
        assert json.loads(out)["buffers"][0]["n_diff"] == (32 << 20) // 4
        peaks.append(peak)
    assert peaks[1] - peaks[0] < 32 << 10  # KiB: within 32 MiB of each other


# --- 4. crashed workers and Ctrl-C ---------------------------------------------------


def _children(pid: int) -> list[int]:
    """Every descendant (workers of a forkserver are its children, not ours)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            kids = [int(x) for x in fh.read().split()]
    except OSError:
        return []
    return kids + [d for k in kids for d in _children(k)]


def _has_open(pid: int, path: Path) -> bool:
    try:
        return any(
            os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd")
        )
    except OSError:
        return False


def _wait_for_worker_reading(parent: int, path: Path, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for child in _children(parent):
            if _has_open(child, path):
                return child
        time.sleep(0.002)
    raise AssertionError(f"no worker of {parent} opened {path}")


@pytest.fixture(scope="module")
def slow_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """base and big share a large sparse buffer (slow enough to catch a worker
    reading it); same lacks it."""
    root = tmp_path_factory.mktemp("slow")
    runs = {k: root / k for k in ("base", "same", "big")}
    for run in runs.values():
        write_rl_run(run, batch=64, steps=2, seed=3)
    for k in ("base", "big"):
        sparse(runs[k] / "step_9_zz_huge.bin", 12 << 30)
    return runs


def test_a_killed_worker_turns_its_pairs_into_errors(slow_runs: dict[str, Path]) -> None:
    base, same, big = slow_runs["base"], slow_runs["same"], slow_runs["big"]
    cmd = fastdiff_cmd("sweep", "--baseline", str(base), str(same), str(big), "--no-cache",
                       "--executor", "process", "--jobs", "1", "--format", "jsonl")  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=REPO)  # fmt: skip
    target = big / "step_9_zz_huge.bin"
    killed = []
    try:
        for _ in range(2):  # the worker, then the one that retries its task
            # A generous wait: on a loaded machine the workers start late and
            # hash base's copy of the huge file first.
            pid = _wait_for_worker_reading(proc.pid, target, timeout=300)
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
            while _has_open(pid, target):
                time.sleep(0.001)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:  # a failed wait leaves no sweep running into the next test
            proc.kill()
            proc.communicate()
    assert proc.returncode == 2, err
    records = [json.loads(line) for line in out.splitlines()]
    assert [r.get("verdict") for r in records] == ["diverged", "error", None]
    huge = next(x for x in records[1]["buffers"] if x["name"] == "zz_huge")
    assert huge["status"] == "error" and "worker process died" in huge["message"]
    others = [x for x in records[1]["buffers"] if x["name"] != "zz_huge"]
    assert others and {x["status"] for x in others} == {"equal"}
    assert f"{target}: " in err and "worker process died" in err
    assert records[2]["pairs"] == 2 and records[2]["error"] == 1


def test_ctrl_c_stops_promptly_keeps_finished_pairs_and_leaves_no_process(
    slow_runs: dict[str, Path],
) -> None:
    base, same, big = slow_runs["base"], slow_runs["same"], slow_runs["big"]
    cmd = fastdiff_cmd("sweep", "--baseline", str(base), str(same), str(big), "--no-cache",
                       "--executor", "process", "--jobs", "2", "--format", "jsonl")  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=REPO, start_new_session=True)  # fmt: skip
    assert proc.stdout is not None
    first = proc.stdout.readline()  # the first pair is finished and out
    _wait_for_worker_reading(proc.pid, big / "step_9_zz_huge.bin")  # and work is under way
    workers = _children(proc.pid)
    assert workers
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C does
    # No timing assertion (the suite has none): promptly means long before the
    # 12 GiB reads could end; the timeout only catches a hang.
    rest, err = proc.communicate(timeout=120)
    out = first + rest
    assert proc.returncode == 130
    assert "Traceback" not in err and err.strip().endswith("fastdiff: interrupted")
    records = [json.loads(line) for line in out.splitlines()]
    assert records[0]["record"] == "pair" and records[0]["verdict"] == "diverged"
    assert records[-1]["record"] == "summary" and records[-1]["interrupted"] is True
    assert records[-1]["pairs"] == len(records) - 1
    time.sleep(0.2)
    assert [w for w in workers if Path(f"/proc/{w}").exists()] == []


# --- 6. read only, proven --------------------------------------------------------------


def _snapshot(folder: Path) -> dict[str, tuple[int, int, int, int, str]]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            digest = ""
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as fh:
                    digest = hashlib.sha256(fh.read()).hexdigest()
            out[p] = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, digest)
    return out


def test_run_folders_stay_untouched(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    write_rl_run(a, batch=64, steps=3, seed=9)
    write_rl_run(b, batch=64, steps=3, seed=9, diverge=[(1, "isv_full", 5)])
    (a / "notes.txt").write_text("hello")
    for run in (a, b):
        for p in run.iterdir():
            p.chmod(0o444)
        run.chmod(0o555)
    before = {**_snapshot(a), **_snapshot(b)}
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    manifest = tmp_path / "a.manifest.json"
    try:
        for args in (
            ["compare", str(a), str(b), "--format", "json"],
            ["compare", str(a), str(b), "--cache", "--executor", "thread"],
            ["sweep", "--all", str(a), str(b), "--executor", "process"],
            ["hash", str(a), "-o", str(manifest)],
            ["compare", str(manifest), str(b)],
        ):
            r = run_cli(*args, env=env)
            assert r.returncode in (0, 1), r.stderr
        after = {**_snapshot(a), **_snapshot(b)}
    finally:
        for run in (a, b):
            run.chmod(0o755)
    assert after == before
    cache_files = list((tmp_path / "cache" / "fastdiff").iterdir())
    assert cache_files and all(not str(p).startswith((str(a), str(b))) for p in cache_files)


# --- 7. deterministic output ---------------------------------------------------------------


def _without_work(text: str) -> str:
    doc = json.loads(text)
    doc.pop("work")
    return json.dumps(doc)


def test_same_inputs_give_byte_identical_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    write_rl_run(a, batch=500, steps=3, seed=4)
    write_rl_run(b, batch=500, steps=3, seed=4, diverge=[(1, "rewards", 7), (2, "actions", 0)])
    (b / "step_0_rewards.bin").unlink()
    texts = set()
    for executor in ("serial", "thread", "process"):
        for jobs in ("1", "2", "3"):
            r = run_cli("compare", str(a), str(b), "--format", "json", "--chunk-size", "512",
                        "--executor", executor, "--jobs", jobs)  # fmt: skip
            assert r.returncode == 1
            texts.add(_without_work(r.stdout))
    # The order in which the folder lists its entries does not matter either.
    real_scandir = os.scandir

    class Reversed:
        def __init__(self, path: str) -> None:
            self.entries = list(real_scandir(path))[::-1]

        def __enter__(self) -> list[os.DirEntry[str]]:
            return self.entries

        def __exit__(self, *exc: object) -> None:
            return None

    monkeypatch.setattr(os, "scandir", Reversed)
    report = compare_runs(a, b, CompareOptions(chunk_size=512))
    monkeypatch.undo()
    texts.add(_without_work(render_json(report)))
    assert len(texts) == 1


# --- 8. cache integrity ----------------------------------------------------------------------


def test_a_stale_or_damaged_cache_entry_is_never_used(tmp_path: Path) -> None:
    import sqlite3

    from fastdiff.engine.cache import DigestCache
    from fastdiff.sweep import sweep

    a, b = pair_of_runs(tmp_path, {"step_0_x.bin": bytes(4096), "step_0_y.bin": bytes(4096)})
    cache_dir = tmp_path / "cache"
    c = DigestCache(cache_dir, min_age_s=0)
    sweep([(str(a), str(b))], F32, cache=c)
    c.close()
    # Same size and even the same mtime, other content: ctime (and inode) moved.
    target = b / "step_0_x.bin"
    st = target.stat()
    fresh = tmp_path / "fresh.bin"
    fresh.write_bytes(bytes(4092) + b"\x01\x00\x00\x00")
    os.utime(fresh, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(fresh, target)
    c = DigestCache(cache_dir, min_age_s=0)
    reports, summary = sweep([(str(a), str(b))], F32, cache=c)
    c.close()
    assert reports[0].verdict == "diverged" and summary.cache_hits == 3
    # A damaged entry (a digest blob of the wrong length) is ignored, not trusted.
    db = sqlite3.connect(cache_dir / "digests-v2.sqlite3")
    db.execute("UPDATE digests SET chunks = x'00'")
    db.commit()
    db.close()
    c = DigestCache(cache_dir, min_age_s=0)
    reports, summary = sweep([(str(a), str(b))], F32, cache=c)
    c.close()
    assert reports[0].verdict == "diverged" and summary.cache_hits == 0
