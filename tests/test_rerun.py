"""``fastdiff rerun``: real jobs run as arms, through the command line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import REPO, fastdiff

from fastdiff.errors import FastdiffError
from fastdiff.rerun import arm_environments

#: A job: records 4 steps of two buffers with the Recorder; what it does
#: besides depends on its first argument.
JOB = """
import os, signal, sys, time
import numpy as np
from fastdiff import Recorder

mode = sys.argv[1]
if mode == "fail":
    print("loading the data...", file=sys.stderr)
    print("error: no such dataset", file=sys.stderr)
    sys.exit(3)
if mode == "nothing":
    sys.exit(0)
if mode in ("sleep", "stubborn"):
    if mode == "stubborn":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    open(sys.argv[2], "w").write(str(os.getpid()))
    time.sleep(600)
offset = float(os.environ.get("OFFSET", "0"))
with Recorder() as rec:
    for step in range(4):
        x = np.linspace(0, 1, 64, dtype=np.float32) + step
        if mode == "random" and step >= 2:  # equal in two runs about once in 4 million
            x[5] += int.from_bytes(os.urandom(4), "little") / 2**32
        if step >= 1:
            x[5] += offset
        rec.dump(step, "x", x)
        rec.dump(step, "y", x * 2)
"""


@pytest.fixture
def job(tmp_path: Path) -> Path:
    path = tmp_path / "job.py"
    path.write_text(JOB)
    return path


ENV = {"PYTHONPATH": str(REPO)}


def rerun(*args: object, **kw: object) -> subprocess.CompletedProcess[str]:
    return fastdiff("rerun", *args, env=ENV, **kw)  # type: ignore[arg-type]


def test_a_deterministic_job(tmp_path: Path, job: Path) -> None:
    out = tmp_path / "out"
    r = rerun("-n", "3", "--out", out, "--", sys.executable, job, "same")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"command: {sys.executable} {job} same"
    assert lines[1].startswith("arm 1: exit 0 in ")
    assert lines[2].endswith("; identical to arm 1") and lines[3].endswith("; identical to arm 1")
    assert "DETERMINISTIC: the 3 arms are bit-identical (8 buffers over 4 steps)" in lines
    assert f"runs: removed from {out} (--keep keeps them)" in lines
    assert not out.exists()  # made by rerun, removed by it
    assert "fastdiff rerun: arm 3 of 3 running, into" in r.stderr


def test_keep_keeps_the_runs_and_each_arm_knows_its_folder(tmp_path: Path, job: Path) -> None:
    out = tmp_path / "out"
    r = rerun("-n", "2", "--out", out, "--keep", "--", sys.executable, job, "same")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "arm-1", "arm-1.err", "arm-1.out", "arm-2", "arm-2.err", "arm-2.out",
    ]  # fmt: skip
    assert (out / "arm-2" / "step_3_y.npy").is_file()
    assert f"runs: kept in {out}" in r.stdout.splitlines()
    again = rerun("-n", "2", "--out", out, "--", sys.executable, job, "same")
    assert again.returncode == 2
    assert again.stderr.splitlines()[-1] == (
        f"fastdiff: error: --out {out} already holds arm-1: rerun never writes over earlier "
        "arms; give an empty folder, or remove them"
    )


def test_a_nondeterministic_job_says_where_and_whether_it_reproduces(
    tmp_path: Path, job: Path
) -> None:
    r = rerun("-n", "3", "--", sys.executable, job, "random")
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[2].endswith("; DIVERGES from arm 1 at step 2: x, y")
    assert lines[3].endswith("; DIVERGES from arm 1 at step 2: x, y")
    assert "NOT DETERMINISTIC: 2 of 2 arms diverge from arm 1; first at step 2 (arm 2: x, y)" in (
        lines
    )
    assert "reproduces: in every arm, first at step 2 in the same buffers" in lines
    at = lines.index("arm 1 (A) against arm 2 (B):")
    assert lines[at + 1].startswith("A: ") and lines[at + 1].endswith("arm-1")
    assert "VERDICT: diverged: first divergent step 2; groups: x, y" in lines


def test_env_varies_one_thing_between_arms(tmp_path: Path, job: Path) -> None:
    r = rerun("-n", "3", "--env", "2:OFFSET=0.5", "--", sys.executable, job, "offset")
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[2].endswith("; DIVERGES from arm 1 at step 1: x, y")
    assert lines[3].endswith("; identical to arm 1")
    assert (
        "reproduces: intermittently: 1 of 2 arms diverge from arm 1, 1 arm matched it bit for bit"
    ) in lines
    same = rerun("-n", "2", "--env", "OFFSET=0.5", "--", sys.executable, job, "offset")
    assert same.returncode == 0, same.stdout


def test_with_two_arms_it_says_reproduction_is_unknown(job: Path) -> None:
    r = rerun("--", sys.executable, job, "random")
    assert r.returncode == 1
    assert "reproduces: unknown with one arm against arm 1; run more arms (-n 3 or more)" in (
        r.stdout
    )


def test_a_failing_arm_is_trouble_with_its_exit_status_and_stderr(
    tmp_path: Path, job: Path
) -> None:
    out = tmp_path / "out"
    r = rerun("-n", "3", "--out", out, "--", sys.executable, job, "fail")
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[1] == "arm 1: FAILED: the command failed (exit status 3)"
    at = lines.index("TROUBLE: arm 1 of 3 failed: the command failed (exit status 3)")
    assert lines[at + 1 : at + 4] == [
        f"the end of its stderr ({out / 'arm-1.err'}):",
        "  loading the data...",
        "  error: no such dataset",
    ]
    assert f"runs: kept in {out}" in lines
    assert not (out / "arm-2").exists()  # the rerun stopped at the failure


def test_an_arm_that_records_nothing_or_cannot_start(tmp_path: Path, job: Path) -> None:
    r = rerun("--", sys.executable, job, "nothing")
    assert r.returncode == 2
    assert "arm 1: FAILED: the command wrote nothing into $FASTDIFF_RUN (" in r.stdout
    assert "record with fastdiff.Recorder(), whose folder is $FASTDIFF_RUN by default" in r.stdout
    r = rerun("--", str(tmp_path / "no-such-program"))
    assert r.returncode == 2
    assert "cannot start" in r.stdout and "No such file or directory" in r.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-n", "3"), "no command to run: give it after --, as in 'rerun -n 3 -- CMD ...'"),
        (("-n", "1", "--", "true"), "argument -n/--arms: must be >= 2"),
        (("--env", "OFFSET", "--", "true"), "--env OFFSET: expected NAME=VALUE"),
        (("--env", "4:A=1", "--", "true"), "--env 4:A=1: arm 4 does not exist (arms are 1 to 2)"),
        (("--env", "FASTDIFF_RUN=x", "--", "true"), "FASTDIFF_RUN is set by rerun for each arm"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    r = rerun(*args)
    assert r.returncode == 2
    assert message in r.stderr and "Traceback" not in r.stderr


def test_arm_environments() -> None:
    assert arm_environments(["A=1", "2:B=x=y", "1:A=3"], 3) == [
        {"A": "3"}, {"A": "1", "B": "x=y"}, {"A": "1"},
    ]  # fmt: skip
    with pytest.raises(FastdiffError, match="arm 0 does not exist"):
        arm_environments(["0:A=1"], 2)


def _interrupt(tmp_path: Path, job: Path, mode: str) -> tuple[int, str, int]:
    pid_file = tmp_path / "pid"
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "fastdiff", "rerun", "-n", "3", "--out", str(out), "--",
         sys.executable, str(job), mode, str(pid_file)],
        cwd=REPO, env={**os.environ, **ENV}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    arm_pid = int(pid_file.read_text())
    proc.send_signal(signal.SIGINT)  # Ctrl-C, to rerun alone: it stops the arm
    stdout, stderr = proc.communicate(timeout=60)
    assert f"the runs written so far are kept in {out}" in stdout, stdout + stderr
    assert (out / "arm-1").is_dir() and not (out / "arm-2").exists()
    return proc.returncode, stdout + stderr, arm_pid


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_ctrl_c_stops_the_arm_and_says_what_was_kept(tmp_path: Path, job: Path) -> None:
    code, text, arm_pid = _interrupt(tmp_path, job, "sleep")
    assert code == 130
    assert "INTERRUPTED: arm 1 was stopped; the runs written so far are kept in" in text
    assert "fastdiff: interrupted; the runs are kept in" in text
    assert _gone(arm_pid)


def test_ctrl_c_stops_an_arm_that_ignores_sigint(tmp_path: Path, job: Path) -> None:
    code, _, arm_pid = _interrupt(tmp_path, job, "stubborn")  # SIGTERM after the grace
    assert code == 130
    assert _gone(arm_pid)


PIPELINE = """
import os, sys
import numpy as np
from fastdiff import Recorder

with Recorder() as rec:
    for step in range(4):
        x = np.linspace(0, 1, 64, dtype=np.float32) + step  # the same in every arm
        y = x * 3
        if step >= 2:  # a kernel whose result depends on something unseeded
            y[9] += 1 + int.from_bytes(os.urandom(4), "little") / 2**32
        rec.dump(step, "x", x)
        rec.dump(step, "y", y)
        rec.dump(step, "z", y + 1)
"""

PIPELINE_SCHEMA = """\
[[group]]
key = "M"
title = "the model"
[group.members]
x = { dtype = "f32", inputs = [] }
y = { dtype = "f32", inputs = ["x"] }
z = { dtype = "f32", inputs = ["y"] }
"""


def test_rerun_says_where_it_was_born_and_whether_that_reproduces(tmp_path: Path) -> None:
    """With a schema that declares inputs: the origin of the first divergence,
    and whether every diverging arm has the same first origin."""
    job = tmp_path / "pipeline.py"
    job.write_text(PIPELINE)
    schema = tmp_path / "schema.toml"
    schema.write_text(PIPELINE_SCHEMA)
    r = rerun("-n", "3", "--schema", schema, "--out", tmp_path / "out", "--",
              sys.executable, job)  # fmt: skip
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert any(line.startswith("NOT DETERMINISTIC: 2 of 2 arms diverge from arm 1; first at step 2")
               for line in lines), r.stdout  # fmt: skip
    assert "born in: M y at step 2 (inputs x matched); received: z (arm 2)" in lines
    assert "origin: the same in every diverging arm: M y at step 2" in lines


def test_the_findings_of_a_rerun(
    tmp_path: Path, job: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the text says is data first (``RerunResult.findings``): each arm
    against arm 1, the first arm to diverge, whether it reproduces."""
    from fastdiff.model.findings import ReproductionKind
    from fastdiff.model.statuses import RerunVerdict
    from fastdiff.rerun import ArmComparison
    from fastdiff.rerun import rerun as run_arms

    monkeypatch.setenv("PYTHONPATH", str(REPO))
    command = [sys.executable, str(job), "offset"]
    result = run_arms(command, arms=3, out=str(tmp_path / "out"), env=["2:OFFSET=0.5"])
    assert result.verdict is RerunVerdict.NONDETERMINISTIC and result.exit_code == 1
    found = result.findings
    assert found is not None
    assert found.arms == (
        ArmComparison(2, "diverged", 1, ("x", "y")),
        ArmComparison(3, "identical"),
    )
    assert (found.first, found.errors, found.origins) == (2, (), None)
    rep = found.reproduces
    assert rep is not None and rep.kind is ReproductionKind.INTERMITTENT
    assert (rep.diverging, rep.others, rep.steps) == (1, 2, (1,))
    same = run_arms(command, arms=2, out=str(tmp_path / "same"))
    assert same.verdict is RerunVerdict.DETERMINISTIC and same.exit_code == 0
    assert same.findings is not None and same.findings.first is None
    assert same.findings.reproduces is None and not same.kept
