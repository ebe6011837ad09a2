"""The scheduler's interface (submit / drain / stop, per-plan callbacks), the
step filter of discovery, and the kinds of problems (issue 9, part 2)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import fastdiff.engine.scheduler as scheduler
from fastdiff.bench.synth import write_rl_run
from fastdiff.compare import compare_pairs
from fastdiff.engine.pool import SerialRunner, open_runner
from fastdiff.engine.scheduler import Plan, Scheduler
from fastdiff.hashrun import write_manifest
from fastdiff.model.results import PROBLEM_KINDS, Report
from fastdiff.options import CompareOptions
from fastdiff.presets import RL_STATE, resolve_schema
from fastdiff.sources import names as discover_module
from fastdiff.sources import open_run, reopen
from fastdiff.sources.folder import discover
from fastdiff.sources.names import split_dump_name

RAW = resolve_schema("raw", "f32")


def run_folder(path: Path, files: dict[str | bytes, bytes]) -> Path:
    path.mkdir(parents=True)
    for name, data in files.items():
        target = os.path.join(os.fsencode(path), os.fsencode(name))
        with open(target, "wb") as fh:
            fh.write(data)
    return path


def rl_pair(root: Path, name: str, diverge: bool = False) -> tuple[Path, Path]:
    """Two runs of 2 steps of the RL layout (68 files each), equal unless ``diverge``."""
    a, b = root / f"{name}-a", root / f"{name}-b"
    write_rl_run(a, batch=4, steps=2, seed=1)
    write_rl_run(b, batch=4, steps=2, seed=1, diverge=[(1, "rewards", 0)] if diverge else None)
    return a, b


def plan_of(a: Path, b: Path, calls: list[tuple[object, Report]], tag: object) -> Plan:
    def done(plan: Plan, report: Report) -> None:
        calls.append((plan.tag, report))

    return Plan(open_run(a), open_run(b), RL_STATE, done, tag)


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path the scheduler hands to ``hash_batch``, in order."""
    paths: list[str] = []
    real = scheduler.hash_batch

    def counting(files: list[object], chunk_size: int) -> list[object]:
        paths.extend(f.path for f in files)  # type: ignore[attr-defined]
        return real(files, chunk_size)  # type: ignore[arg-type]

    monkeypatch.setattr(scheduler, "hash_batch", counting)
    return paths


# --- the scheduler -------------------------------------------------------------------------


def test_callbacks_come_from_drain_in_the_order_plans_complete(tmp_path: Path) -> None:
    a, b = rl_pair(tmp_path, "hashed")
    # Empty files: sizes alone decide this plan, so it completes first.
    x = run_folder(tmp_path / "x", {"step_0_e.bin": b""})
    y = run_folder(tmp_path / "y", {"step_0_e.bin": b""})
    calls: list[tuple[object, Report]] = []
    sched = Scheduler()
    sched.submit(plan_of(a, b, calls, "hashed"))
    sched.submit(plan_of(x, y, calls, "sizes"))
    assert calls == [] and sched.pending == 2  # never from submit
    assert sched.drain(SerialRunner()) is True
    assert [tag for tag, _ in calls] == ["sizes", "hashed"]
    assert [r.verdict for _, r in calls] == ["identical", "identical"]
    assert len(calls[1][1].buffers) == 68 and sched.pending == 0


@pytest.mark.parametrize("kind", ["serial", "thread"])
def test_a_plan_submitted_while_draining_is_run_by_that_drain(tmp_path: Path, kind: str) -> None:
    (a0, b0), (a1, b1) = rl_pair(tmp_path, "first"), rl_pair(tmp_path, "second", diverge=True)
    calls: list[tuple[object, Report]] = []
    sched = Scheduler(CompareOptions(jobs=2))
    later = plan_of(a1, b1, calls, "later")

    def first_done(plan: Plan, report: Report) -> None:
        calls.append((plan.tag, report))
        sched.submit(later)  # from a callback, while drain runs

    sched.submit(Plan(open_run(a0), open_run(b0), RL_STATE, first_done, "first"))
    with open_runner(kind, 2) as runner:
        assert sched.drain(runner) is True
    assert [(tag, r.verdict) for tag, r in calls] == [("first", "identical"), ("later", "diverged")]
    assert calls[1][1].first_divergent_step == 1
    assert calls[1][1].work.executor == kind


def test_stop_from_a_callback_starts_and_reports_nothing_more(
    tmp_path: Path, hashed: list[str]
) -> None:
    pairs = [rl_pair(tmp_path, f"p{i}", diverge=i == 0) for i in range(4)]
    calls: list[tuple[object, Report]] = []
    sched = Scheduler(CompareOptions(jobs=1))

    def done(plan: Plan, report: Report) -> None:
        calls.append((plan.tag, report))
        if report.verdict == "diverged":
            sched.stop()  # as watch does at the first divergent step

    # Plan 0 diverges: its scan goes before the hashing the others wait for.
    for i, (a, b) in enumerate(pairs):
        sched.submit(Plan(open_run(a), open_run(b), RL_STATE, done, i))
    assert sched.drain(SerialRunner()) is False
    assert [tag for tag, _ in calls] == [0]
    assert sched.stopped and sched.pending == 3
    # Serially, the later plans' files were never even read.
    assert {os.path.dirname(p) for p in hashed} == {str(pairs[0][0]), str(pairs[0][1])}
    assert sched.drain(SerialRunner()) is False and len(calls) == 1
    with pytest.raises(RuntimeError, match="stopped"):
        sched.submit(plan_of(*pairs[1], calls, "too late"))


def test_stop_on_a_thread_pool_reports_nothing_more(tmp_path: Path) -> None:
    pairs = [rl_pair(tmp_path, f"p{i}") for i in range(3)]
    calls: list[object] = []
    sched = Scheduler(CompareOptions(jobs=2))

    def done(plan: Plan, report: Report) -> None:
        calls.append(plan.tag)
        sched.stop()

    for i, (a, b) in enumerate(pairs):
        sched.submit(Plan(open_run(a), open_run(b), RL_STATE, done, i))
    with open_runner("thread", 2) as runner:
        assert sched.drain(runner) is False
    assert len(calls) == 1


def test_a_reopened_plan_reads_a_changed_file_afresh(tmp_path: Path, hashed: list[str]) -> None:
    a, b = rl_pair(tmp_path, "live")
    target = b / "step_1_rewards.bin"
    reports: list[Report] = []
    sched = Scheduler()

    def done(plan: Plan, report: Report) -> None:
        reports.append(report)
        if len(reports) == 1:
            sched.submit(plan)  # the same listing again: checked, never trusted
        elif len(reports) == 2:
            sched.submit(plan.reopened())  # the runs listed afresh

    sched.submit(Plan(open_run(a), open_run(b), RL_STATE, done))
    # A writer rewrites a file after it was listed, before it is read.
    data = bytearray(target.read_bytes())
    data[0] ^= 1
    target.write_bytes(bytes(data))
    assert sched.drain(SerialRunner()) is True
    first, same, fresh = reports
    for r in (first, same):
        assert r.verdict == "error"
        assert [(e.path, e.kind) for e in r.errors] == [(str(target), "changed")]
    assert fresh.verdict == "diverged" and fresh.errors == ()
    assert fresh.first_divergent_step == 1 and fresh.first_divergent_groups == ("F",)
    # Read once per submission: a digest is never taken from an earlier one.
    assert hashed.count(str(a / "step_0_rewards.bin")) == 3


def test_plans_pending_together_share_digests_then_drop_them(
    tmp_path: Path, hashed: list[str]
) -> None:
    a, b = rl_pair(tmp_path, "x")
    c = tmp_path / "c"
    write_rl_run(c, batch=4, steps=2, seed=1)
    sa, sb, sc = open_run(a), open_run(b), open_run(c)
    calls: list[tuple[object, Report]] = []
    sched = Scheduler()
    done = plan_of(a, b, calls, 0).on_done
    sched.submit(Plan(sa, sb, RL_STATE, done, "ab"))
    sched.submit(Plan(sa, sc, RL_STATE, done, "ac"))
    assert sched.run() is True
    one = str(a / "step_0_rewards.bin")
    assert hashed.count(one) == 1 and len(hashed) == 3 * 68
    sched.submit(Plan(sa, sb, RL_STATE, done, "ab again"))
    assert sched.run() is True
    assert hashed.count(one) == 2  # kept only while a pending plan needed it
    assert [r.verdict for _, r in calls] == ["identical"] * 3


def test_drain_with_a_timeout_returns_with_the_work_left(tmp_path: Path) -> None:
    a, b = rl_pair(tmp_path, "slow")
    calls: list[tuple[object, Report]] = []
    sched = Scheduler()
    sched.submit(plan_of(a, b, calls, 0))
    runner = SerialRunner()
    assert sched.drain(runner, timeout=0) is False
    assert sched.pending == 1 and calls == []
    with pytest.raises(ValueError, match="runner"):
        sched.drain(SerialRunner())
    assert sched.drain(runner) is True and len(calls) == 1


def test_digest_requests_answer_in_file_order(tmp_path: Path) -> None:
    run = run_folder(tmp_path / "run", {f"step_{i}_x.bin": bytes([i]) * 8 for i in range(3)})
    files = list(discover(run).files)
    (run / "step_1_x.bin").unlink()  # vanishes after listing
    got: list[list[object]] = []
    sched = Scheduler(CompareOptions(chunk_size=8))
    sched.request_digests(files, 8, got.append)
    assert sched.run() is True
    (items,) = got
    assert [x.path for x in items] == [f.path for f in files]  # type: ignore[attr-defined]
    assert [getattr(x, "kind", None) for x in items] == [None, "changed", None]


def test_write_manifest_hashes_through_the_scheduler(tmp_path: Path, hashed: list[str]) -> None:
    run = tmp_path / "run"
    write_rl_run(run, batch=4, steps=2, seed=3)
    text, problems = write_manifest(run, CompareOptions(chunk_size=64))
    assert problems == [] and text.startswith("{")
    assert sorted(hashed) == sorted(f.path for f in discover(run).files)


# --- the step filter -------------------------------------------------------------------------


def test_discovery_lists_only_the_steps_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = run_folder(tmp_path / "run", {f"step_{s}_x.bin": bytes(4) for s in range(5)})
    (run / "notes.txt").write_text("hi")
    os.mkfifo(run / "step_3_fifo.bin")
    os.symlink(run / "missing", run / "step_1_dangling.bin")
    stats: list[str] = []
    real_lstat = os.lstat

    def counting(path: str) -> os.stat_result:
        stats.append(os.path.basename(path))
        return real_lstat(path)

    monkeypatch.setattr(os, "lstat", counting)
    one = discover(run, steps={1})
    assert [(f.step, f.name) for f in one.files] == [(1, "x")]
    assert one.skipped == ()
    assert [(os.path.basename(e.path), e.kind) for e in one.errors] == [
        ("step_1_dangling.bin", "unreadable")
    ]
    # Entries of other steps (the FIFO) and other names are not even stat'ed.
    assert sorted(stats) == ["step_1_dangling.bin", "step_1_x.bin"]
    stats.clear()
    full = discover(run)
    assert len(stats) == 8  # one lstat per entry, the link included
    monkeypatch.undo()
    assert [f.step for f in discover(run, steps=range(2, 4)).files] == [2, 3]
    assert [f.step for f in discover(run, steps=lambda s: s % 2 == 0).files] == [0, 2, 4]
    for steps in ({1}, range(2, 4), lambda s: s % 2 == 0, set()):
        picked = full.select(steps)
        listed = discover(run, steps=steps)
        assert [f.path for f in picked.files] == [f.path for f in listed.files]
        assert [(e.path, e.message) for e in picked.errors] == [
            (e.path, e.message) for e in listed.errors
        ]
        assert picked.broken == listed.broken and picked.skipped == listed.skipped == ()
    assert "step_3_fifo.bin" in {os.path.basename(e.path) for e in full.select({3}).errors}


def test_one_step_of_two_runs_is_a_small_plan(tmp_path: Path) -> None:
    a, b = rl_pair(tmp_path, "steps", diverge=True)
    manifest = tmp_path / "a.manifest.json"
    _, problems = write_manifest(a, CompareOptions(), output=manifest)
    assert problems == []
    for side_a in (a, manifest):
        reports: list[Report] = []
        sched = Scheduler()
        for step in (0, 1):
            src_a, src_b = open_run(side_a, steps={step}), open_run(b, steps={step})
            assert {f.step for f in src_a.listing.files} == {step}
            sched.submit(Plan(src_a, src_b, RL_STATE, lambda _, r, out=reports: out.append(r)))
        assert sched.run() is True
        assert [len(r.buffers) for r in reports] == [34, 34]
        assert [(r.verdict, r.first_divergent_step) for r in reports] == [
            ("identical", None),
            ("diverged", 1),
        ]
    again = reopen(open_run(b, steps={1}))
    assert again.steps == {1} and {f.step for f in again.listing.files} == {1}


#: The dump name pattern fastdiff documents, as a regular expression.
DUMP_NAME = re.compile(r"^step_([0-9]+)_(.+)\.bin\Z", re.DOTALL)


@given(
    st.lists(
        st.sampled_from(["step_", "_", "0", "7", "12", ".bin", "x", "\n", "٣", "²", ".", "b"]),
        max_size=8,
    ).map("".join)
)
def test_dump_names_split_as_the_pattern_says(name: str) -> None:
    m = DUMP_NAME.match(name)
    assert split_dump_name(name) == (None if m is None else (m.group(1), m.group(2)))


# --- the kinds of problems -----------------------------------------------------------------


def kinds(report: Report) -> dict[str, str]:
    return {os.path.basename(e.path.rstrip("/")): e.kind for e in report.errors}


def test_problems_say_their_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert set(PROBLEM_KINDS) >= {"missing", "unreadable", "changed", "malformed", "no_dumps",
                                  "name", "mismatch", "worker"}  # fmt: skip
    good = run_folder(tmp_path / "good", {"step_0_x.bin": bytes(8)})
    odd = run_folder(
        tmp_path / "odd",
        {
            "step_0_x.bin": bytes(8),
            "step_1_x.bin": bytes(8),
            "step_01_x.bin": bytes(8),  # the same step and buffer
            "step_2_short.bin": bytes(3),  # not a whole f32
            b"step_3_\xff.bin": bytes(4),  # not UTF-8
        },
    )
    os.mkfifo(odd / "step_4_fifo.bin")
    os.symlink(odd / "nowhere", odd / "step_5_dangling.bin")
    empty = tmp_path / "empty"
    empty.mkdir()
    options = CompareOptions(schema=RAW)
    r_missing, r_odd, r_empty = compare_pairs(
        [(good, tmp_path / "nope"), (good, odd), (good, empty)], options
    )
    assert kinds(r_missing) == {"nope": "missing"}
    assert kinds(r_odd) == {
        "step_1_x.bin": "name",
        "step_2_short.bin": "malformed",
        os.fsdecode(b"step_3_\xff.bin"): "name",
        "step_4_fifo.bin": "unreadable",
        "step_5_dangling.bin": "unreadable",
    }
    assert kinds(r_empty) == {"empty": "no_dumps"}
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    (r_not,) = compare_pairs([(notes, good)], options)
    assert kinds(r_not) == {"notes.txt": "malformed"}
    # Manifests hashed at different chunk sizes cannot be compared by digest.
    big = run_folder(tmp_path / "big", {"step_0_x.bin": bytes(1024)})
    m512, m256 = tmp_path / "m512.json", tmp_path / "m256.json"
    assert write_manifest(big, CompareOptions(RAW, chunk_size=512), output=m512)[1] == []
    assert write_manifest(big, CompareOptions(RAW, chunk_size=256), output=m256)[1] == []
    (r_mismatch,) = compare_pairs([(m512, m256)], options)
    assert set(kinds(r_mismatch).values()) == {"mismatch"}

    def dying(files: object, chunk_size: int) -> object:
        raise MemoryError("a worker ran out of memory")

    monkeypatch.setattr(scheduler, "hash_batch", dying)
    (r_worker,) = compare_pairs([(good, big)], options)
    assert set(kinds(r_worker).values()) == {"worker"}
    assert all(e.kind in PROBLEM_KINDS for r in (r_missing, r_odd, r_empty) for e in r.errors)


@pytest.mark.skipif(sys.platform != "linux" or os.geteuid() == 0, reason="root reads anything")
def test_an_unreadable_dump_is_unreadable(tmp_path: Path) -> None:
    a = run_folder(tmp_path / "a", {"step_0_x.bin": bytes(8)})
    b = run_folder(tmp_path / "b", {"step_0_x.bin": bytes(8)})
    (b / "step_0_x.bin").chmod(0)
    (report,) = compare_pairs([(a, b)], CompareOptions(schema=RAW))
    assert kinds(report) == {"step_0_x.bin": "unreadable"}


def test_discovery_module_keeps_its_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The digit cap is read at call time (tests and callers may lower it)."""
    monkeypatch.setattr(discover_module, "MAX_STEP_DIGITS", 2)
    assert discover_module.parse_dump_name("step_123_x.bin") is None
    assert discover_module.parse_dump_name("step_12_x.bin") == (12, "x")


def test_the_readme_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = Path(__file__).resolve().parents[1] / "docs" / "reference" / "python.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.DOTALL)
    assert len(blocks) == 2
    write_rl_run(tmp_path / "run-a", batch=4, steps=3, seed=1)
    write_rl_run(tmp_path / "run-b", batch=4, steps=3, seed=1, diverge=[(1, "rewards", 0)])
    monkeypatch.chdir(Path(__file__).resolve().parents[1])  # the first names the examples
    first: dict[str, object] = {}
    exec(blocks[0], first)
    assert first["report"].verdict == "diverged"  # type: ignore[attr-defined]
    monkeypatch.chdir(tmp_path)
    reports: list[tuple[object, Report]] = []
    recording = "def done(plan, report):\n    reports.append((plan.tag, report))"
    exec(blocks[1].replace("def done(plan, report):", recording), {"reports": reports})
    # The plans finish in order, and step 1's divergence stops step 2.
    assert [(tag, r.verdict) for tag, r in reports] == [(0, "identical"), (1, "diverged")]
