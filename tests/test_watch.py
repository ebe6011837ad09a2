"""``fastdiff watch``: two runs compared while real processes write them.

Writers are ``tests/writer.py`` processes (the rl-state layout, at a pace,
files written whole, in pieces with sleeps between the writes, or under a
temporary name and renamed); fastdiff runs as a CLI subprocess, with short
``--settle`` and ``--idle-timeout`` so the file stays fast. Every JSON
Lines record is read by a strict parser (no NaN or infinity, no duplicate
keys).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import fastdiff

from fastdiff.bench.synth import RL_STATE_MEMBERS

REPO = Path(__file__).resolve().parents[1]
WRITER = REPO / "tests" / "writer.py"
POLL, SETTLE, IDLE = 0.05, 0.3, 1.5
FAST = ("--poll", str(POLL), "--settle", str(SETTLE), "--idle-timeout", str(IDLE))
SUMMARY_EXTRAS = ("steps_compared", "stopped", "first_divergence_latency_s")


def _reject(token: str) -> None:
    raise ValueError(f"not strict JSON: {token}")


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    keys = [k for k, _ in pairs]
    assert len(keys) == len(set(keys)), keys
    return dict(pairs)


def strict(line: str) -> dict:
    """One JSON Lines record, parsed as RFC 8259 JSON and nothing more."""
    return json.loads(line, parse_constant=_reject, object_pairs_hook=_no_duplicates)


def records(out: str) -> list[dict]:
    return [strict(line) for line in out.splitlines()]


def writer(out: Path, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, str(WRITER), str(out), *args], cwd=REPO)


def watch(*args: str, text: bool = True) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "fastdiff", "watch", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=text,
        cwd=REPO,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[int, str, str]:
    """Wait for the end; the rest of stdout and stderr. Read through the
    pipes' own file objects: ``communicate`` reads the descriptors and would
    lose what a test's ``readline`` already buffered."""
    got: dict[int, str] = {}
    readers = [
        threading.Thread(target=lambda i=i, f=f: got.__setitem__(i, f.read()), daemon=True)
        for i, f in enumerate((proc.stdout, proc.stderr))
    ]
    for t in readers:
        t.start()
    deadline = time.monotonic() + timeout
    for t in readers:
        t.join(max(0.0, deadline - time.monotonic()))
    if any(t.is_alive() for t in readers):
        proc.kill()
        raise subprocess.TimeoutExpired(proc.args, timeout)
    for f in (proc.stdout, proc.stderr):
        assert f is not None
        f.close()
    return proc.wait(timeout=10), got[0], got[1]


def static_run(out: Path, steps: int = 3, *args: str) -> None:
    """A run written in full before fastdiff looks at it."""
    subprocess.run(
        [sys.executable, str(WRITER), str(out), "--steps", str(steps), "--pace", "0", *args],
        cwd=REPO, check=True, timeout=60,
    )  # fmt: skip


def stop(*procs: subprocess.Popen[bytes]) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=10)


def steps_and_summary(out: str) -> tuple[list[dict], dict]:
    recs = records(out)
    assert recs and recs[-1]["record"] == "summary"
    steps = recs[:-1]
    assert all(r["record"] == "step" for r in steps)
    keys = ["record", "step", "status", "diverged_groups", "buffers"]
    assert [list(r) for r in steps] == [keys] * len(steps)
    return steps, recs[-1]


# --- the runs as they are written ------------------------------------------------------


def test_identical_runs_are_compared_step_by_step_and_end_after_the_idle_timeout(
    tmp_path: Path,
) -> None:
    """Neither folder exists when watch starts; one writer is slower; files
    are written whole, in pieces and via a temporary name. The summary holds
    exactly compare's JSON for the same runs, and three fields more."""
    a, b = tmp_path / "a", tmp_path / "b"
    w = watch(str(a), str(b), *FAST, "--format", "jsonl")
    wa = writer(a, "--steps", "6", "--pace", "0.05", "--delay", "0.3")
    wb = writer(b, "--steps", "6", "--pace", "0.12", "--delay", "0.5")
    try:
        code, out, err = finish(w)
    finally:
        stop(wa, wb)
    assert code == 0, err
    assert err == ""
    steps, summary = steps_and_summary(out)
    assert [(r["step"], r["status"], r["buffers"]) for r in steps] == [
        (k, "equal", []) for k in range(6)
    ]
    assert summary["verdict"] == "identical" and summary["stopped"] == "idle"
    assert summary["steps_compared"] == 6 and summary["first_divergence_latency_s"] is None
    assert len(summary["buffers"]) == 6 * len(RL_STATE_MEMBERS)
    compared = fastdiff("compare", a, b, "--format", "json")
    assert compared.returncode == 0, compared.stderr
    expected = strict(compared.stdout)
    assert list(summary) == ["record", *expected, *SUMMARY_EXTRAS]
    for key in ("work", "record", *SUMMARY_EXTRAS):
        expected.pop(key, None)
        summary.pop(key)
    assert summary == expected


def test_a_divergence_is_reported_once_the_step_is_complete_and_watch_stops(
    tmp_path: Path,
) -> None:
    """Run B diverges at step 3 (groups D and F) and then pauses for a long
    time: step 3 is complete in B only by settling. watch reports it and
    exits 1 while B still pauses, long before B writes step 4; A, ahead,
    completed step 3 by starting step 4."""
    a, b = tmp_path / "a", tmp_path / "b"
    log = tmp_path / "b.log"
    wa = writer(a, "--steps", "8", "--pace", "0.1")
    wb = writer(
        b, "--steps", "8", "--pace", "0.1", "--diverge", "3:unit_entry_price:5",
        "--diverge", "3:advantages:0", "--pause-after", "3:60", "--log", str(log),
    )  # fmt: skip
    w = watch(str(a), str(b), *FAST)  # stdout is a pipe: jsonl by default
    try:
        assert w.stdout is not None
        lines = []
        for line in w.stdout:
            lines.append(line)
            if strict(line).get("status") == "diverged":
                seen = time.time()
                break
        code, rest, err = finish(w)
        assert not (b / "step_4_actions.bin").exists()  # B is still pausing
    finally:
        stop(wa, wb)
    assert code == 1, err
    steps, summary = steps_and_summary("".join(lines) + rest)
    assert [(r["step"], r["status"]) for r in steps] == [
        (0, "equal"), (1, "equal"), (2, "equal"), (3, "diverged"),
    ]  # fmt: skip
    assert steps[3]["diverged_groups"] == ["D", "F"]
    assert {x["name"]: x["status"] for x in steps[3]["buffers"]} == {
        "unit_entry_price": "diverged",
        "advantages": "diverged",
    }
    assert summary["verdict"] == "diverged" and summary["stopped"] == "diverged"
    assert summary["first_divergent_step"] == 3
    assert summary["first_divergent_groups"] == ["D", "F"]
    assert summary["steps_compared"] == 4
    # No timing assertion (the suite never has one; benchmarks/bench_watch.py
    # measures the latency against its target): the report came while B was
    # still in its 60 s pause, after B had finished step 3, and the summary
    # says how long after the step was complete.
    done = next(
        e["t"] for e in map(json.loads, log.read_text().splitlines())
        if e == {**e, "event": "done", "step": 3}
    )  # fmt: skip
    assert done <= seen
    assert summary["first_divergence_latency_s"] >= 0


def test_keep_going_reports_every_step(tmp_path: Path) -> None:
    """The divergence spreads: C at step 2, C and E at step 3; every later step is reported."""
    a, b = tmp_path / "a", tmp_path / "b"
    wa = writer(a, "--steps", "5", "--pace", "0.05")
    wb = writer(
        b, "--steps", "5", "--pace", "0.08", "--diverge", "2:iqn_prng_state:1",
        "--diverge", "3:iqn_prng_state:1", "--diverge", "3:isv_full:700",
    )  # fmt: skip
    w = watch(str(a), str(b), *FAST, "--keep-going", "--format", "jsonl")
    try:
        code, out, err = finish(w)
    finally:
        stop(wa, wb)
    assert code == 1, err
    steps, summary = steps_and_summary(out)
    assert [(r["step"], r["status"], r["diverged_groups"]) for r in steps] == [
        (0, "equal", []), (1, "equal", []), (2, "diverged", ["C"]),
        (3, "diverged", ["C", "E"]), (4, "equal", []),
    ]  # fmt: skip
    assert summary["stopped"] == "idle" and summary["steps_compared"] == 5
    assert summary["first_divergent_step"] == 2 and summary["first_divergent_groups"] == ["C"]
    assert isinstance(summary["first_divergence_latency_s"], float)


@pytest.mark.parametrize("lag", [None, "0"])
def test_a_buffer_missing_in_a_run_still_writing_needs_a_lag_to_be_a_divergence(
    tmp_path: Path, lag: str | None
) -> None:
    """B never writes step 1's ph_mu. With --lag 0 (a writer that finishes
    each step before the next) that is a divergence once B is past step 1;
    without --lag, B might yet write it while it is writing: an error that
    names --lag (exit 2), never a divergence."""
    a, b = tmp_path / "a", tmp_path / "b"
    wa = writer(a, "--steps", "4", "--pace", "0.05")
    wb = writer(b, "--steps", "4", "--pace", "0.05", "--skip", "1:ph_mu")
    w = watch(str(a), str(b), *FAST, *(["--lag", lag] if lag else []), "--format", "jsonl")
    try:
        code, out, err = finish(w)
    finally:
        stop(wa, wb)
    steps, summary = steps_and_summary(out)
    if lag == "0":
        assert code == 1, err
        assert [(r["step"], r["status"]) for r in steps] == [(0, "equal"), (1, "diverged")]
        (missing,) = steps[1]["buffers"]
        assert (missing["name"], missing["status"]) == ("ph_mu", "only_in_a")
        assert summary["first_divergent_groups"] == ["F"]
        return
    assert code == 2, err
    assert [(r["step"], r["status"]) for r in steps] == [(k, ["equal", "error"][k == 1])
                                                         for k in range(4)]  # fmt: skip
    (late,) = steps[1]["buffers"]
    assert (late["name"], late["status"]) == ("ph_mu", "error")
    assert late["message"].startswith(
        "run A holds buffer ph_mu of step 1, run B does not hold it and is still writing"
    )
    assert "give --lag 1" in late["message"]
    assert "--lag 0 makes this a divergence" in late["message"]
    assert summary["verdict"] == "error" and summary["first_divergent_step"] is None
    assert f"{a / 'step_1_ph_mu.bin'}: run A holds buffer ph_mu of step 1" in err


def test_a_buffer_missing_from_a_run_that_writes_nothing_more_is_a_divergence(
    tmp_path: Path,
) -> None:
    """Runs written in full before watch starts: without --lag, step 1 waits
    for B (which might still write its ph_mu), and once B has written
    nothing for --idle-timeout, what it lacks, it lacks: a divergence, as
    compare says."""
    a, b = tmp_path / "a", tmp_path / "b"
    static_run(a, 3)
    static_run(b, 3, "--skip", "1:ph_mu")
    code, out, err = finish(watch(str(a), str(b), *FAST, "--format", "jsonl"))
    assert code == 1, err
    steps, summary = steps_and_summary(out)
    assert [(r["step"], r["status"]) for r in steps] == [(0, "equal"), (1, "diverged")]
    assert [(x["name"], x["status"]) for x in steps[1]["buffers"]] == [("ph_mu", "only_in_a")]
    assert summary["errors"] == []


def test_a_step_line_names_a_missing_buffer_as_compare_does(tmp_path: Path) -> None:
    """Words come from ``fastdiff.render.words``: watch's step line says "only in
    run A" as compare's does (it said "only in a")."""
    a, b = tmp_path / "a", tmp_path / "b"
    static_run(a, 2)
    static_run(b, 2, "--skip", "1:ph_mu")
    code, out, err = finish(watch(str(a), str(b), *FAST, "--format", "text"))
    assert code == 1, err
    assert "step 1: DIVERGED [F]: 33 equal, 1 only in run A" in out.splitlines()
    compared = fastdiff("compare", a, b)
    assert "step 1: 33 equal, 1 only in run A  diverged: F" in compared.stdout.splitlines()


@pytest.mark.parametrize("other", ["writes on", "written in full"])
def test_a_run_that_stops_writing_is_an_error_never_a_divergence_of_the_steps_it_lacks(
    tmp_path: Path, other: str
) -> None:
    """Run B stops after step 2 (its job killed, or done) while run A goes on
    (still writing, or written in full before watch started): steps 0-2 are
    compared, A's later steps are not, and the watch ends with "run B stopped
    writing after step 2" (exit 2), never "DIVERGED: 34 only in run A" with a
    hint to look for a logic change. While A writes on, watch ends without
    waiting for A."""
    a, b = tmp_path / "a", tmp_path / "b"
    wa = None
    if other == "writes on":
        wa = writer(a, "--steps", "200", "--pace", "0.05")  # 10 s or more: ends after watch
    else:
        static_run(a, 6)
    wb = writer(b, "--steps", "3", "--pace", "0.05")
    w = watch(str(a), str(b), *FAST, "--format", "jsonl")
    try:
        code, out, err = finish(w)
    finally:
        stop(wb, *([wa] if wa else []))
    assert code == 2, err
    steps, summary = steps_and_summary(out)
    assert [(r["step"], r["status"]) for r in steps] == [(k, "equal") for k in range(3)]
    assert summary["verdict"] == "error" and summary["first_divergent_step"] is None
    assert summary["first_divergence_latency_s"] is None
    assert summary["stopped"] == ("error" if other == "writes on" else "idle")
    assert {x["status"] for x in summary["buffers"]} == {"equal"}
    [problem] = summary["errors"]
    assert problem["path"] == str(b)
    assert problem["message"].startswith("run B stopped writing after step 2: ")
    assert f"{b}: run B stopped writing after step 2" in err
    text = fastdiff("watch", a, b, *FAST, "--format", "text")
    assert text.returncode == 2, text.stderr
    assert "DIVERGED" not in text.stdout and "only in run A" not in text.stdout


def test_a_writer_pausing_mid_step_longer_than_settle_gives_no_false_divergence(
    tmp_path: Path,
) -> None:
    """A stops for a while before writing step 2's rewards (and what follows),
    so its newest step looks settled, lacking buffers B has: the result is
    held until A moves past step 2, and step 2 is then read again, equal."""
    a, b = tmp_path / "a", tmp_path / "b"
    wa = writer(a, "--steps", "4", "--pace", "0.05", "--pause-before", f"2:rewards:{4 * SETTLE}")
    wb = writer(b, "--steps", "4", "--pace", "0.05")
    w = watch(str(a), str(b), *FAST, "--format", "jsonl")
    try:
        code, out, err = finish(w)
    finally:
        stop(wa, wb)
    assert code == 0, err
    steps, summary = steps_and_summary(out)
    assert [(r["step"], r["status"]) for r in steps] == [(k, "equal") for k in range(4)]
    assert summary["verdict"] == "identical"


def test_a_writer_that_dies_mid_file_is_an_error_after_the_idle_timeout(tmp_path: Path) -> None:
    """A's job is killed while writing step 2's isv_full: fastdiff cannot
    tell a partial write from a real length mismatch, so that buffer is an
    error (exit 2), reported once both runs are idle; the buffers A never
    wrote are missing from it, as compare would say."""
    a, b = tmp_path / "a", tmp_path / "b"
    wa = writer(a, "--steps", "4", "--pace", "0.05", "--die-at", "2:isv_full")
    wb = writer(b, "--steps", "4", "--pace", "0.05")
    w = watch(str(a), str(b), *FAST, "--format", "jsonl")
    try:
        code, out, err = finish(w)
        assert wa.wait(timeout=10) == 3
    finally:
        stop(wa, wb)
    assert code == 2, err
    steps, summary = steps_and_summary(out)
    assert [r["status"] for r in steps] == ["equal", "equal", "diverged"]
    by_name = {x["name"]: x for x in steps[2]["buffers"]}
    assert by_name["isv_full"]["status"] == "error"
    assert by_name["isv_full"]["message"].startswith(
        "step 2 of run A may be incomplete: the run stopped writing while this file was "
        "shorter than run B's (378 elements against 757)"
    )
    assert {x["status"] for n, x in by_name.items() if n != "isv_full"} == {"only_in_b"}
    assert summary["verdict"] == "error"
    assert f"{a / 'step_2_isv_full.bin'}: step 2 of run A may be incomplete" in err


def test_a_manifest_on_one_side(tmp_path: Path) -> None:
    """The reference run hashed earlier: each step of the live run is compared
    with the manifest's digests, hashed at the manifest's chunk size."""
    ref, b, c = tmp_path / "ref", tmp_path / "b", tmp_path / "c"
    static_run(ref, 4)
    manifest = tmp_path / "ref.manifest.json"
    assert fastdiff("hash", ref, "-o", manifest, "--chunk-size", "64").returncode == 0
    wb = writer(b, "--steps", "4", "--pace", "0.05")
    wc = writer(c, "--steps", "4", "--pace", "0.05", "--diverge", "2:unit_lots:9")
    same = watch(str(manifest), str(b), *FAST, "--format", "jsonl")
    differs = watch(str(manifest), str(c), *FAST, "--format", "jsonl")
    try:
        code, out, err = finish(same)
        code_c, out_c, err_c = finish(differs)
    finally:
        stop(wb, wc)
    assert code == 0, err
    steps, summary = steps_and_summary(out)
    assert [r["status"] for r in steps] == ["equal"] * 4
    assert summary["verdict"] == "identical"
    assert code_c == 1, err_c
    steps, summary = steps_and_summary(out_c)
    assert [r["status"] for r in steps] == ["equal", "equal", "diverged"]
    (lots,) = steps[2]["buffers"]
    assert lots["name"] == "unit_lots" and lots["first_divergent_chunk"] == [0, 64]
    assert lots["message"] == "compared by digests only (a manifest holds no data)"


def test_ctrl_c_prints_the_summary_of_what_was_compared_and_exits_130(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    static_run(a, 3)
    static_run(b, 3)
    w = watch(str(a), str(b), "--poll", "0.05", "--settle", "60", "--idle-timeout", "600")
    assert w.stdout is not None
    first = w.stdout.readline()  # steps 0 and 1 are complete (a later one exists); 2 is not
    second = w.stdout.readline()
    w.send_signal(signal.SIGINT)
    code, rest, err = finish(w, timeout=20)
    assert code == 130
    assert "Traceback" not in err and err.endswith("fastdiff: interrupted\n")
    steps, summary = steps_and_summary(first + second + rest)
    assert [r["step"] for r in steps] == [0, 1]
    assert summary["stopped"] == "interrupted" and summary["steps_compared"] == 2
    assert summary["verdict"] == "identical" and len(summary["buffers"]) == 68


# --- a recorder's runs: read as compare reads them -----------------------------------------

RECORDER_WRITER = """
import sys, time
import ml_dtypes, numpy as np
from fastdiff import Recorder
run, steps, pace, diverge = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
with Recorder(run) as rec:
    for step in range(steps):
        w = np.arange(32, dtype=np.float32).reshape(4, 8) / 7 + step
        if step == diverge:
            w[1, 2] += 0.5
        rec.dump(step, "model.w", w.astype(ml_dtypes.bfloat16))  # saved as raw bytes, <V2
        rec.dump(step, "model.b", np.full(8, step, dtype=np.float32))
        rec.dump(step, "optim.m", (w / 10).astype(ml_dtypes.float8_e4m3fn))  # |V1
        if step >= 2:  # a name, and a group by name, that later steps hold
            rec.dump(step, "sched.lr", np.float64(step / 10))
        time.sleep(pace)
"""


def recorder(run: Path, steps: int, pace: float, diverge: int = -1) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-c", RECORDER_WRITER, str(run), str(steps), str(pace), str(diverge)]
    return subprocess.Popen(cmd, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.mark.parametrize("when", ["finished", "while written"])
def test_a_recorders_runs_give_the_buffer_lines_compare_gives(tmp_path: Path, when: str) -> None:
    """A recorder saves bfloat16 and 8-bit floats as .npy dumps of raw bytes
    (<V2, |V1) and says their dtype and shape in its digest log: watch reads
    the log as compare does (bf16, not u8 with "max |A-B| 253" and a hint to
    give --default-dtype f32), groups the buffers by name as compare does
    (a group that appears at step 2 included), and reports the same buffer
    lines, in JSON and in the text, for runs written in full or written
    while watched (a recorder writes a dump's log line after the dump)."""
    pytest.importorskip("ml_dtypes")
    a, b = tmp_path / "a", tmp_path / "b"
    opts = ("--poll", str(POLL), "--settle", str(SETTLE), "--idle-timeout", "4", "--keep-going")
    if when == "finished":
        for run, diverge in ((a, -1), (b, 1)):
            assert recorder(run, 4, 0, diverge).wait(timeout=60) == 0
        w = watch(str(a), str(b), *opts, "--format", "jsonl")
        code, out, err = finish(w)
    else:
        w = watch(str(a), str(b), *opts, "--format", "jsonl")
        writers = [recorder(a, 4, 0.1), recorder(b, 4, 0.1, 1)]
        try:
            code, out, err = finish(w)
        finally:
            for p in writers:
                assert p.wait(timeout=60) == 0
    assert code == 1, err
    steps, summary = steps_and_summary(out)
    assert [(r["step"], r["status"]) for r in steps] == [
        (0, "equal"), (1, "diverged"), (2, "equal"), (3, "equal"),
    ]  # fmt: skip
    compared = fastdiff("compare", a, b, "--format", "json")
    assert compared.returncode == 1, compared.stderr
    expected = strict(compared.stdout)
    by_name = {x["name"]: x for x in summary["buffers"] if x["step"] == 1}
    assert (by_name["model.w"]["dtype"], by_name["model.w"]["shape"]) == ("bf16", [4, 8])
    assert by_name["optim.m"]["dtype"] == "f8_e4m3fn"
    assert summary["buffers"] == expected["buffers"]
    for key in ("schema", "groups", "first_divergent_step", "first_divergent_groups"):
        assert summary[key] == expected[key], key
    assert [g["key"] for g in summary["groups"]] == ["model", "optim", "sched"]
    text = fastdiff("watch", a, b, *opts, "--format", "text")
    lines = fastdiff("compare", a, b, "-v").stdout.splitlines()
    buffer_lines = [line for line in text.stdout.splitlines() if line.startswith("  ")]
    assert buffer_lines and all(line in lines for line in buffer_lines), text.stdout
    assert "u8" not in text.stdout and "--default-dtype" not in text.stdout


# --- files that change under the reader ---------------------------------------------------

BIG = 512 << 20  # a sparse file that takes a while to read (0.1 s or more), and no disk


def _sparse(path: Path, size: int) -> None:
    with open(path, "wb") as fh:
        fh.truncate(size)


def _open_by(pid: int, path: Path) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except FileNotFoundError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                return True
        except OSError:
            continue
    return False


def _wait_until_open(proc: subprocess.Popen[str], path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not _open_by(proc.pid, path):
        assert proc.poll() is None, "watch ended before reading the file"
        assert time.monotonic() < deadline, "watch never read the file"
        time.sleep(0.0005)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
@pytest.mark.parametrize("reference", ["folder", "manifest"])
def test_a_file_rewritten_after_it_was_read_gives_no_false_divergence(
    tmp_path: Path, reference: str
) -> None:
    """A's rewards at step 0 first hold a flipped bit; the job rewrites the
    file with the right bytes after fastdiff hashed it, while fastdiff still
    reads the rest of the step (a large buffer). The stat taken before the
    divergence is reported sees the rewrite: the step is read again, and is
    equal. (Without that stat: against a manifest, whose digests alone
    decide, a false divergence; against a folder, whose differing chunks are
    scanned, an error.)"""
    a, b = tmp_path / "a", tmp_path / "b"
    static_run(a, 2, "--diverge", "0:rewards:4")
    static_run(b, 2)
    for run in (a, b):
        _sparse(run / "step_0_zz_big.bin", BIG)
    if reference == "manifest":
        manifest = tmp_path / "b.manifest.json"
        assert fastdiff("hash", b, "-o", manifest).returncode == 0
        b = manifest
    w = watch(str(a), str(b), *FAST, "--jobs", "1", "--format", "jsonl")
    _wait_until_open(w, a / "step_0_zz_big.bin")  # rewards is hashed by then
    (a / "step_0_rewards.bin").write_bytes((tmp_path / "b" / "step_0_rewards.bin").read_bytes())
    code, out, err = finish(w)
    assert code == 0, err
    steps, summary = steps_and_summary(out)
    assert [(r["step"], r["status"]) for r in steps] == [(0, "equal"), (1, "equal")]
    assert summary["verdict"] == "identical"


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_a_file_that_keeps_changing_is_an_error_never_a_divergence(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    static_run(a, 2)
    static_run(b, 2)
    for run in (a, b):
        _sparse(run / "step_0_zz_big.bin", BIG // 2)
    target = a / "step_0_rewards.bin"
    good = target.read_bytes()
    # A job rewriting it again and again, never with B's bytes: any read that
    # happens to see the file whole finds a difference, which must not be
    # reported as a divergence since the file changed before the report.
    bad = [bytes([good[0] ^ 1]) + good[1:], bytes([good[0] ^ 2]) + good[1:]]
    rewriter = subprocess.Popen(
        [sys.executable, "-c", (
            "import sys, time\n"
            "path, *versions = sys.argv[1], *map(bytes.fromhex, sys.argv[2:])\n"
            "while True:\n"
            "    for data in versions:\n"
            "        with open(path, 'wb') as fh:\n"
            "            fh.write(data)\n"
            "        time.sleep(0.002)\n"
        ), str(target), *(v.hex() for v in bad)],
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while target.read_bytes() == good:  # the rewriter has begun (its start is slow under load)
            assert time.monotonic() < deadline and rewriter.poll() is None
            time.sleep(0.001)
        w = watch(str(a), str(b), *FAST, "--jobs", "1", "--format", "jsonl")
        code, out, err = finish(w)
    finally:
        stop(rewriter)
    assert code == 2, err
    steps, summary = steps_and_summary(out)
    assert [(r["step"], r["status"]) for r in steps] == [(0, "error"), (1, "equal")]
    (rewards,) = steps[0]["buffers"]
    assert rewards["name"] == "rewards" and rewards["status"] == "error"
    assert rewards["message"].startswith(
        "kept changing while fastdiff read it (it changed during each of 3 reads of step 0)"
    )
    assert summary["first_divergent_step"] is None and summary["verdict"] == "error"


def test_files_are_never_memory_mapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer may truncate a file while it is read, and a mapped page past
    the new end would kill the process: watch reads (preads) only."""
    import mmap

    import fastdiff.sources.reader as reader
    from fastdiff.watch import watch_runs

    a, b = tmp_path / "a", tmp_path / "b"
    static_run(a, 2, "--batch", str(reader.MAP_MIN // 2))  # 512 KiB f32 buffers
    static_run(b, 2, "--batch", str(reader.MAP_MIN // 2), "--diverge", "1:rewards:70000")
    real_mmap = mmap.mmap

    def no_file_maps(fileno: int, *args: object, **kw: object) -> mmap.mmap:
        assert fileno == -1, "a dump was memory-mapped"  # anonymous buffers are fine
        return real_mmap(fileno, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(reader.mmap, "mmap", no_file_maps)
    summary = watch_runs(a, b, poll=POLL, settle=SETTLE, idle_timeout=IDLE)
    assert summary.stopped == "diverged" and summary.report.first_divergent_step == 1
    assert summary.report.work.bytes_hashed >= 4 * reader.MAP_MIN
    (diverged,) = [x for x in summary.report.buffers if x.status != "equal"]
    assert (diverged.name, diverged.first_index) == ("rewards", 70000)


# --- folders -------------------------------------------------------------------------------


def test_a_folder_that_stays_empty_or_missing_is_exit_2_naming_it(tmp_path: Path) -> None:
    """--start-timeout bounds the wait for a folder to appear and hold a dump."""
    a, b = tmp_path / "a", tmp_path / "nowhere"
    (a / "run" / "dumps").mkdir(parents=True)
    (a / "run" / "dumps" / "step_0_x.bin").write_bytes(b"\0")
    (a / "notes.txt").write_text("hello")
    w = watch(str(a / "run"), str(b), "--start-timeout", "1", "--format", "text")
    code, out, err = finish(w)
    assert code == 2
    assert err.splitlines() == [
        f"fastdiff: error: {a / 'run'}: run A stayed empty: no step_<N>_<name>.bin dump "
        f"appeared within 1 s (--start-timeout); did you mean {a / 'run' / 'dumps'}?",
        f"fastdiff: error: {b}: run B folder does not exist, and did not appear within 1 s "
        "(--start-timeout); check the path",
    ]
    assert "stopped by trouble (see the errors); 0 steps compared" in out
    verdict = "VERDICT: error: 2 problems (above); no divergence among the buffers that could be"
    assert out.rstrip().endswith(verdict + " compared")


def test_a_slow_start_is_waited_for_longer_than_the_idle_timeout(tmp_path: Path) -> None:
    """Run A is written in full, and idle; run B's folder appears only after
    more than --idle-timeout (a job importing torch): watch waits for it (the
    wait is --start-timeout's, default 600 s), compares every step, exit 0."""
    a, b = tmp_path / "a", tmp_path / "b"
    static_run(a, 3)
    w = watch(str(a), str(b), *FAST, "--format", "jsonl")
    wb = writer(b, "--steps", "3", "--pace", "0.05", "--delay", str(2 * IDLE))
    try:
        code, out, err = finish(w)
    finally:
        stop(wb)
    assert code == 0, err
    steps, summary = steps_and_summary(out)
    assert [(r["step"], r["status"]) for r in steps] == [(k, "equal") for k in range(3)]
    assert summary["verdict"] == "identical" and summary["stopped"] == "idle"


def test_a_run_folder_that_vanishes_is_exit_2(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    static_run(a, 6)
    wb = writer(b, "--steps", "6", "--pace", "0.2")
    w = watch(str(a), str(b), *FAST)
    try:
        assert w.stdout is not None
        w.stdout.readline()  # step 0 compared
        stop(wb)
        b.rename(tmp_path / "elsewhere")
        code, rest, err = finish(w)
    finally:
        stop(wb)
    assert code == 2
    assert f"fastdiff: error: {b}: run folder vanished while it was watched\n" in err
    summary = records(rest)[-1]
    assert summary["stopped"] == "error" and summary["verdict"] == "error"


def _snapshot(folder: Path) -> dict[str, tuple[int, int, int, int, str]]:
    out = {}
    for p in sorted(folder.iterdir()):
        st = p.lstat()
        digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
        out[p.name] = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, digest)
    return out


def test_watch_only_reads(tmp_path: Path) -> None:
    """Read-only folders stay as they were; live folders hold only what the
    writers wrote."""
    a, b = tmp_path / "a", tmp_path / "b"
    static_run(a, 3)
    static_run(b, 3, "--diverge", "2:isv_full:3")
    (a / "notes.txt").write_text("hello")
    for run in (a, b):
        for p in run.iterdir():
            p.chmod(0o444)
        run.chmod(0o555)
    before = {**_snapshot(a), **_snapshot(b)}
    try:
        code, _, err = finish(watch(str(a), str(b), *FAST, "--keep-going"))
        assert code == 1, err
        after = {**_snapshot(a), **_snapshot(b)}
    finally:
        for run in (a, b):
            run.chmod(0o755)
    assert after == before
    c, d = tmp_path / "c", tmp_path / "d"
    wc, wd = writer(c, "--steps", "3", "--pace", "0.05"), writer(d, "--steps", "3")
    try:
        code, _, err = finish(watch(str(c), str(d), *FAST))
    finally:
        stop(wc, wd)
    assert code == 0, err
    names = {f"step_{s}_{n}.bin" for s in range(3) for n, _ in RL_STATE_MEMBERS}
    assert {p.name for p in c.iterdir()} == {p.name for p in d.iterdir()} == names


# --- output ---------------------------------------------------------------------------------


def test_text_output_a_line_per_step_then_the_verdict(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    static_run(a, 4)
    static_run(b, 4, "--diverge", "1:action_prng_state:2")
    code, out, err = finish(watch(str(a), str(b), *FAST, "--format", "text", "--progress"))
    assert code == 1, err
    # the status line, on stderr (its \r read as a newline here), erased before a step's line
    assert err.startswith("\n\x1b[Kwatching; A: step 3, B: step 3; 0 steps compared\n\x1b[K")
    lines = out.splitlines()
    assert lines[:3] == [
        "step 0: 34 buffers equal",
        "step 1: DIVERGED [C]: 33 equal, 1 diverged",
        "    C  action_prng_state [u32]  DIVERGED; 1 of 16 elements differs (6.25%) in 1 range "
        "[2, 3); first at [2]: " + lines[2].split("first at [2]: ", 1)[1],
    ]
    assert lines[3] == ""
    assert lines[4].startswith("stopped: the first divergent step, 1, was reported ")
    assert lines[4].endswith(" s after both runs had completed it; 2 steps compared")
    assert "VERDICT: diverged: first divergent step 1; groups: C (action sampling RNG)" in lines
    # rl-state declares the PRNG's input, itself at the step before: watch reads
    # step 1's role against step 0, as compare does (its plan held step 1 alone)
    assert lines[2].endswith("; origin (inputs matched: action_prng_state@prev)")
    assert (
        "  born in: C action_prng_state at step 1 (inputs action_prng_state@prev matched)" in lines
    )
    assert lines[2] in fastdiff("compare", a, b).stdout.splitlines()


def test_strict_json_with_nan_and_infinity_in_the_values(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    static_run(a, 2)
    static_run(b, 2)
    for run, value in ((a, b"\x00\x00\xc0\x7f"), (b, b"\x00\x00\x80\x7f")):  # NaN, +inf
        path = run / "step_0_rewards.bin"
        data = bytearray(path.read_bytes())
        data[8:12] = value
        path.write_bytes(bytes(data))
    code, out, err = finish(watch(str(a), str(b), *FAST, "--format", "jsonl"))
    assert code == 1, err
    steps, summary = steps_and_summary(out)  # parsed strictly
    (rewards,) = steps[0]["buffers"]
    assert (rewards["a"], rewards["b"]) == ("nan", "inf")
    assert summary["buffers"][summary["buffers"].index(rewards)] == rewards


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        (
            "--poll",
            "0",
            "argument --poll: must be a number of seconds > 0 and at most 1e+09, got '0'",
        ),
        (
            "--idle-timeout",
            "nan",
            "argument --idle-timeout: must be a number of seconds > 0 and at most 1e+09, got 'nan'",
        ),
        (
            "--start-timeout",
            "0",
            "argument --start-timeout: must be a number of seconds > 0 and at most 1e+09, got '0'",
        ),
        ("--settle", "-1", "argument --settle: must be a finite number >= 0, got '-1'"),
        ("--settle", "x", "argument --settle: not a number: 'x'"),
    ],
)
def test_bad_option_values_are_one_line_errors(option: str, value: str, message: str) -> None:
    code, out, err = finish(watch("a", "b", f"{option}={value}"))
    assert (code, out) == (2, "")
    assert err == f"fastdiff: error: {message} (see 'fastdiff watch --help')\n"


# --- polling stays cheap ---------------------------------------------------------------------


def test_polling_parses_each_name_once_and_stats_only_steps_not_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A poll lists the folder only when it changed (or now and then), parses
    only new names, and stats only the files of steps that are not complete
    (the newest); a file added to a step a later one had passed makes that
    step complete only once its files settle."""
    import fastdiff.watch.poll as poll

    run = tmp_path / "run"
    static_run(run, 50, "--mode", "whole")
    poller = poll.RunPoller(str(run), settle=0.5, idle_timeout=60, now=0.0)
    poller.poll(0.0)
    assert (poller.scans, poller.newest, len(poller.steps)) == (1, 49, 50)
    assert poller.complete_at(48, 0.0) == 0.0  # a later step exists
    assert poller.complete_at(49, 0.0) is None  # the newest: not settled yet
    assert poller.complete_at(49, 0.5) == 0.5

    parsed, stated = [], []
    real_split, real_stat = poll.split_name, poll.file_stat
    monkeypatch.setattr(poll, "split_name", lambda n: parsed.append(n) or real_split(n))
    monkeypatch.setattr(poll, "file_stat", lambda p: stated.append(p) or real_stat(p))
    time.sleep(0.01)  # a later mtime for the folder, on any file system clock
    (run / "step_50_rewards.bin").write_bytes(b"\0" * 64)
    poller.poll(1.0)
    assert poller.scans == 2 and parsed == ["step_50_rewards.bin"]
    assert stated == [str(run / "step_50_rewards.bin")]  # the newest step's only file
    assert poller.newest == 50 and poller.complete_at(49, 1.0) == 1.0  # passed at 1.0

    parsed.clear()
    stated.clear()
    poller.poll(2.0)  # within the grace period after the folder changed: listed again
    poller.poll(3.6)  # folder unchanged for 2.5 s, listed 1.6 s ago: not listed
    assert poller.scans == 3 and parsed == []
    assert len(stated) == 2  # the newest step's file, once a poll

    (run / "step_10_late.bin").write_bytes(b"\0" * 8)  # behind: step 10 was passed
    poller.poll(4.0)
    assert poller.complete_at(10, 4.0) is None
    assert poller.complete_at(10, 4.5) == 4.5
    poller.release(10)
    assert not poller.has(10) and poller.has(11)
    for name in ("later", "later_too"):  # files of a step already compared: an error each
        (run / f"step_10_{name}.bin").write_bytes(b"\0" * 8)
    poller.poll(5.0)
    assert not poller.has(10)
    assert sorted((p.path, p.kind) for p in poller.problems) == [
        (str(run / "step_10_later.bin"), "changed"),
        (str(run / "step_10_later_too.bin"), "changed"),
    ]
    assert "appeared after step 10 was compared, so it was not compared (a step is" in (
        poller.problems[0].message
    )


def test_files_that_change_or_appear_in_a_compared_step_are_errors_never_identical(
    tmp_path: Path,
) -> None:
    """Once a step is compared, a file of it rewritten in place, replaced by
    a rename, or a new file in it, would make watch's "identical" a verdict
    on files that are not what it read: each is an error (exit 2), in the
    JSON summary too. A file deleted after it was compared is not."""
    a, b = tmp_path / "a", tmp_path / "b"
    static_run(a, 3)
    static_run(b, 3)
    # Its own idle timeout: the changes below must land before watch ends.
    w = watch(str(a), str(b), "--poll", str(POLL), "--settle", str(SETTLE), "--idle-timeout", "6",
              "--format", "jsonl")  # fmt: skip
    try:
        assert w.stdout is not None
        for _ in range(3):  # every step compared (and so, released)
            assert strict(w.stdout.readline())["status"] == "equal"
        rewritten = b / "step_0_rewards.bin"
        data = bytearray(rewritten.read_bytes())
        data[0] ^= 1
        before = rewritten.stat()
        with open(rewritten, "r+b") as fh:  # same size, new bytes, the mtime put back
            fh.write(data)
        os.utime(rewritten, ns=(before.st_atime_ns, before.st_mtime_ns))
        replaced = a / "step_1_rewards.bin"
        (a / "tmp").write_bytes(replaced.read_bytes()[::-1])
        os.replace(a / "tmp", replaced)
        (a / "step_2_extra.bin").write_bytes(b"\0" * 8)
        (b / "step_1_rewards.bin").unlink()  # deleted after it was compared: fine
        code, out, err = finish(w)
    finally:
        stop(w)  # type: ignore[arg-type]
    assert code == 2, err
    summary = strict(out.splitlines()[-1])
    assert summary["record"] == "summary" and summary["stopped"] == "idle"
    assert {e["path"] for e in summary["errors"]} == {
        str(rewritten),
        str(replaced),
        str(a / "step_2_extra.bin"),
    }
    messages = {e["path"]: e["message"] for e in summary["errors"]}
    assert "changed after step 0 was compared" in messages[str(rewritten)]
    assert "changed after step 1 was compared" in messages[str(replaced)]
    assert "appeared after step 2 was compared" in messages[str(a / "step_2_extra.bin")]
    assert summary["verdict"] != "identical"
    for path in messages:
        assert path in err  # said on stderr too, one line each


def test_the_text_summary_has_the_notes_compare_has(tmp_path: Path) -> None:
    """Buffers read as raw bytes: compare says so at the top of its text, and
    watch in its summary (the group hint points at that note)."""
    a, b = tmp_path / "a", tmp_path / "b"
    static_run(a, 2)
    static_run(b, 2, "--diverge", "1:rewards:3")
    schema = tmp_path / "few.toml"
    schema.write_text('[[group]]\nkey = "F"\nhint = "Rewards."\n[group.members]\nrewards = "f32"\n')
    code, out, err = finish(
        watch(str(a), str(b), *FAST, "--schema", str(schema), "--format", "text")
    )
    assert code == 1, err
    compared = fastdiff("compare", a, b, "--schema", schema)
    notes = [line for line in compared.stdout.splitlines() if line.startswith("note: ")]
    assert notes and "compared as raw bytes" in notes[0]
    assert [line for line in out.splitlines() if line.startswith("note: ")] == notes


def test_a_compared_file_a_listing_missed_once_is_not_late(tmp_path: Path) -> None:
    """A network file system may leave a name out of one listing of a busy
    folder: when it is back, unchanged, it is not a file that appeared late."""
    import fastdiff.watch.poll as poll
    from fastdiff.sources.folder import list_entries

    run = tmp_path / "run"
    static_run(run, 2)
    poller = poll.RunPoller(str(run), settle=0.1, idle_timeout=60, now=0.0)
    poller.poll(0.0)
    names = sorted(n for n in os.listdir(run) if n.startswith("step_0_"))
    poller.release(0, list_entries(str(run), names).files)
    poller._gone({names[0]}, 1.0)  # one listing without it
    poller._new({names[0]}, 2.0)  # the next with it again
    assert poller.problems == [] and poller.changed_since_read() == []
    # Deleted for real: forgotten (memory stays bounded for a job that keeps
    # only its last dumps); the same name written again is a file that appeared late.
    (run / names[1]).unlink()
    poller._gone({names[1]}, 3.0)
    assert names[1] not in poller.compared and names[0] in poller.compared
    (run / names[1]).write_bytes(b"\0" * 8)
    poller._new({names[1]}, 4.0)
    assert [p.path for p in poller.problems] == [str(run / names[1])]


def test_a_step_written_as_watch_ends_is_an_error_not_a_silent_skip(tmp_path: Path) -> None:
    """Both runs were idle, so watch compares what is left and ends; a step
    a run writes meanwhile (it resumed) is not compared: an error, named."""
    from fastdiff import CompareOptions
    from fastdiff.watch import Watch

    a, b = tmp_path / "a", tmp_path / "b"
    static_run(a, 2)
    static_run(b, 2)
    wrote: list[str] = []

    def on_status(text: str) -> None:
        if text.startswith("both idle") and not wrote:
            (b / "step_7_rewards.bin").write_bytes(b"\0" * 16)
            wrote.append(text)

    summary = Watch(
        a, b, CompareOptions(), poll=POLL, settle=SETTLE, idle_timeout=0.5, on_status=on_status
    ).run()
    assert wrote and summary.stopped == "idle" and summary.steps_compared == 2
    [problem] = summary.report.errors
    assert (problem.path, problem.kind) == (str(b), "changed")
    assert problem.message.startswith("run B wrote 1 new step (from step 7) as watch ended")
    assert summary.report.verdict != "identical"


OVERLAPPING_WRITER = """
import sys, time
from pathlib import Path
args = sys.argv[1:]
runs = [Path(p) for p in args if not p.startswith("step_")]
order = [p for p in args if p.startswith("step_")]
for run in runs:
    run.mkdir()
# Each step's y is written after the next step's x: the writer begins a step
# before it finishes the one before (or the order given).
for name in order or ["step_0_x", "step_1_x", "step_0_y", "step_2_x", "step_1_y", "step_2_y"]:
    for run in runs:
        (run / f"{name}.bin").write_bytes(bytes(range(64)))
    time.sleep(0.6)
"""


LAG_2_ORDER = "step_0_x step_1_x step_2_x step_0_y step_1_y step_2_y"


@pytest.mark.parametrize(
    ("order", "lag", "code"),
    [("lag1", None, 0), ("lag1", "0", 1), ("lag1", "1", 0), ("lag2", None, 2)],
)
def test_a_late_buffer_of_a_run_still_writing_is_no_divergence_without_a_lag(
    tmp_path: Path, order: str, lag: str | None, code: int
) -> None:
    """A was written in full; B's writer writes each step's y after the next
    step's x (lag1), or after the x two steps on (lag2). When B's step N+1
    appears, step N is complete in B and lacks the y that A holds. Without
    --lag that is no divergence while B writes: the step waits, and is read
    again once B writes the y (lag1: identical); if B writes other files
    first (lag2), the y is an error naming --lag. --lag 0 says the writer
    finishes each step first, so it is a divergence; --lag 1 waits for it."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    for name in ["step_0_x", "step_1_x", "step_0_y", "step_2_x", "step_1_y", "step_2_y"]:
        (a / f"{name}.bin").write_bytes(bytes(range(64)))
    w = watch(
        str(a), str(b), "--poll", "0.05", "--settle", "2", "--idle-timeout", "1.5",
        *(["--lag", lag] if lag else []), "--format", "jsonl",
    )  # fmt: skip
    names = [] if order == "lag1" else LAG_2_ORDER.split()
    writer_proc = subprocess.Popen([sys.executable, "-c", OVERLAPPING_WRITER, str(b), *names])
    try:
        got, out, err = finish(w)
    finally:
        stop(writer_proc)  # type: ignore[arg-type]
    summary = records(out)[-1]
    by_key = {(x["step"], x["name"]): x for x in summary["buffers"]}
    assert got == code, err
    if code == 0:
        assert summary["verdict"] == "identical" and len(summary["buffers"]) == 6
        assert summary["errors"] == []
    elif code == 1:
        assert summary["verdict"] == "diverged" and summary["first_divergent_step"] == 0
        assert by_key[0, "y"]["status"] == "only_in_a"
    else:
        assert summary["verdict"] == "error" and summary["first_divergent_step"] is None
        assert by_key[0, "y"]["status"] == "error"
        assert by_key[0, "y"]["message"].startswith(
            "run A holds buffer y of step 0, run B does not hold it and is still writing (it is "
            "at step 2), so it may yet write it: not called a divergence"
        )
        assert "give --lag 1" in err
        assert all(x["status"] in ("equal", "error") for x in summary["buffers"])


@pytest.mark.parametrize("lag", [None, "1"])
def test_lag_lets_a_writer_finish_a_step_after_beginning_the_next(
    tmp_path: Path, lag: str | None
) -> None:
    """Without --lag, step 0 is compared once step 1 appears, and its y,
    written after, is an error (never silently left out); with --lag 1, a
    step is complete once a step two later appears, and every buffer is
    compared: identical, exit 0."""
    a, b = tmp_path / "a", tmp_path / "b"
    w = watch(
        str(a), str(b), "--poll", "0.05", "--settle", "2", "--idle-timeout", "1.5",
        *(["--lag", lag] if lag else []), "--format", "jsonl",
    )  # fmt: skip
    writer_proc = subprocess.Popen([sys.executable, "-c", OVERLAPPING_WRITER, str(a), str(b)])
    try:
        code, out, err = finish(w)
    finally:
        stop(writer_proc)  # type: ignore[arg-type]
    summary = records(out)[-1]
    if lag is None:
        assert code == 2, err
        late = {e["path"] for e in summary["errors"]}
        assert {str(a / "step_0_y.bin"), str(b / "step_0_y.bin")} <= late
        assert "appeared after step 0 was compared" in err
    else:
        assert code == 0, err
        assert summary["verdict"] == "identical" and summary["errors"] == []
        assert len(summary["buffers"]) == 6


# --- the work done, counted as compare counts it ------------------------------------------------


def test_cache_verify_counts_the_files_verified_as_compare_does(tmp_path: Path) -> None:
    """With --cache-verify, the cache hits hashed again to verify the cache
    are counted in work.files_verified and bytes_verified, in watch's summary
    as in compare's report (they stayed 0 in watch's)."""
    a, b = tmp_path / "a", tmp_path / "b"
    static_run(a, 2)
    static_run(b, 2)
    cache = ("--cache", "--cache-dir", str(tmp_path / "cache"), "--cache-min-age", "0")
    assert fastdiff("compare", a, b, *cache).returncode == 0  # fills the cache
    verify = (*cache, "--cache-verify", "1")
    compared = fastdiff("compare", a, b, *verify, "--format", "json")
    assert compared.returncode == 0, compared.stderr
    expected = strict(compared.stdout)["work"]
    assert expected["files_verified"] == 2 * 2 * len(RL_STATE_MEMBERS)
    code, out, err = finish(watch(str(a), str(b), *FAST, *verify, "--format", "jsonl"))
    assert code == 0, err
    _, summary = steps_and_summary(out)
    work = summary["work"]
    assert (work["files_verified"], work["bytes_verified"]) == (
        expected["files_verified"],
        expected["bytes_verified"],
    )
    assert (work["files_hashed"], work["bytes_hashed"]) == (0, 0)


def test_the_work_of_several_comparisons_sums_every_count() -> None:
    """One sum for the steps of a watch and the ranks of a run pair: a count
    added to ``Work`` is summed by both, or this fails."""
    from fastdiff.model.results import WORK_COUNTS, Work, total_work

    assert set(WORK_COUNTS) == set(Work.__slots__) - {"engine", "executor", "jobs", "elapsed_s"}
    one = Work(1, 2, 3, 4, 5, 6, "numba", "thread", 2, 0.5)
    two = Work(10, 20, 30, 40, 50, 60, "numpy", "serial", 1, 1.5)
    total = total_work((one, two))
    assert [getattr(total, k) for k in WORK_COUNTS] == [11, 22, 33, 44, 55, 66]
    assert (total.engine, total.executor, total.jobs, total.elapsed_s) == (
        "numba,numpy", "thread", 2, 1.5,
    )  # fmt: skip


def test_steps_listed_together_are_split_as_select_splits_them(tmp_path: Path) -> None:
    """watch lists the steps complete at the same time together (a
    recorder's digest log read once for them) and splits the listing in one
    pass: each step's part is what ``select`` gives for that step alone."""
    from fastdiff.sources.folder import discover

    run = tmp_path / "run"
    static_run(run, 4)
    os.mkfifo(run / "step_3_fifo.bin")
    os.symlink(run / "missing", run / "step_1_dangling.bin")
    (run / "step_2.npz").write_bytes(b"PK\x03\x04 not a zip")  # a container refused: step 2 lost
    (run / f"step_{'9' * 30}_long.bin").write_bytes(b"\0")  # a step number too long: no step's
    full = discover(run)
    assert full.errors and full.broken and full.lost
    parts = full.split([0, 1, 2, 3, 7])
    assert list(parts) == [0, 1, 2, 3, 7]
    for n, part in parts.items():
        alone = full.select({n})
        for field in ("root", "buffers", "skipped", "errors", "readable", "broken", "lost"):
            assert getattr(part, field) == getattr(alone, field), (n, field)
    assert parts[7].buffers == () and parts[1].errors and parts[2].lost


def test_a_watch_of_finished_runs_reports_what_compare_reports(tmp_path: Path) -> None:
    """One report assembly: a watch of two finished runs (every step read,
    ``keep_going``) ends with the report a compare of them gives: its notes
    (a header that overrules the schema's dtype, which the steps' reports
    held and the summary dropped) and its work, summed over the steps as
    over one run pair (only the time differs)."""
    import numpy as np

    from fastdiff import CompareOptions, compare_runs
    from fastdiff.model.findings import NoteKind
    from fastdiff.model.results import WORK_COUNTS
    from fastdiff.recorder import Recorder
    from fastdiff.watch import watch_runs

    schema = tmp_path / "few.toml"
    schema.write_text('[[group]]\nkey = "F"\n[group.members]\nx = "f32"\ny = "f32"\n')
    a, b = tmp_path / "a", tmp_path / "b"
    for run in (a, b):
        with Recorder(run) as rec:
            for step in range(3):
                y = np.arange(6, dtype=np.float32)
                if run == b and step >= 1:
                    y[step] = -1.0  # diverges at steps 1 and 2
                rec.dump(step, "x", np.arange(4, dtype=np.float64) + step)  # f64: a header note
                rec.dump(step, "y", y)
        for step in range(3):  # raw bytes beside, no digest logged: hashed, and a note
            np.arange(8, dtype=np.uint8).tofile(run / f"step_{step}_z.bin")
    opts = CompareOptions(schema=str(schema))
    compared = compare_runs(a, b, opts)
    summary = watch_runs(
        a, b, opts, poll=POLL, settle=SETTLE, idle_timeout=IDLE, keep_going=True
    ).report
    kinds = [n.kind for n in compared.notes]
    assert NoteKind.HEADER_DTYPE in kinds and NoteKind.RAW_BYTES in kinds
    assert summary.notes == compared.notes
    assert (summary.verdict, summary.first_divergent_step) == ("diverged", 1)
    assert [(x.step, x.name, x.status) for x in summary.buffers] == [
        (x.step, x.name, x.status) for x in compared.buffers
    ]
    work, expected = summary.work, compared.work
    assert expected.files_hashed > 0 and expected.pairs_scanned > 0
    assert [getattr(work, k) for k in WORK_COUNTS] == [getattr(expected, k) for k in WORK_COUNTS]
    assert (work.engine, work.executor, work.jobs) == (expected.engine, expected.executor,
                                                       expected.jobs)  # fmt: skip


def test_a_watchs_results_hold_members_and_their_exit_code() -> None:
    """A step's status and why a watch stopped are the model's members (equal
    to the JSON's strings); the exit code is the summary's, not the text's."""
    from fastdiff import compare_runs
    from fastdiff.model.statuses import StepStatus, StopReason
    from fastdiff.watch import STOP_REASONS, StepReport, WatchSummary

    report = compare_runs(REPO / "examples/run-a", REPO / "examples/run-b")
    assert STOP_REASONS == ("diverged", "idle", "interrupted", "error")
    step = StepReport(3, "diverged", ("F",), report.buffers)
    assert step.status is StepStatus.DIVERGED and step.status == "diverged"
    for stopped, code in (("diverged", 1), ("idle", 1), ("interrupted", 130), ("error", 1)):
        summary = WatchSummary(report, 4, stopped, 0.5)
        assert summary.stopped is StopReason.of(stopped) and summary.exit_code == code
    with pytest.raises(ValueError):
        WatchSummary(report, 4, "bored", None)
