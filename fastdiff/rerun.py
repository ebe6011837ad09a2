"""``rerun``: run a job N times and say whether it is deterministic.

Each run (an arm) gets its own run folder through ``FASTDIFF_RUN`` (where
``fastdiff.Recorder()`` writes by default) and its number through
``FASTDIFF_ARM`` (1 to N); ``env`` adds variables to every arm or to one
(``ARM:K=V``: a discriminator, one thing varied between arms). Arms run one
after another, each in a process group of its own, stdin closed, stdout
and stderr to files beside its run folder (``arm-<k>.out``,
``arm-<k>.err``). Once every arm has exited 0, every arm is compared
against the first, as one sweep (``sweep.sweep``). An arm that fails
(exit status not 0, or a run folder left empty) stops the rerun: trouble.
Ctrl-C stops the arm running (SIGINT to its process group, then SIGTERM,
then SIGKILL) and keeps everything written.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time

from .errors import FastdiffError
from .model.findings import OriginAgreement, Reproduction, ReproductionKind
from .model.rerun import ArmComparison, ArmResult, RerunFindings, RerunResult
from .model.statuses import DIVERGENT, RerunVerdict, Verdict
from .recorder import RUN_ENV

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from .model.results import Report
    from .options import CompareOptions

__all__ = [
    "ARM_ENV",
    "ArmComparison",
    "ArmResult",
    "RerunFindings",
    "RerunResult",
    "arm_environments",
    "rerun",
    "rerun_findings",
]

#: The variable that gives each arm its number (1 to N).
ARM_ENV = "FASTDIFF_ARM"
#: Lines of a failing arm's stderr that are shown.
TAIL_LINES = 12
#: Bytes read from the end of a failing arm's stderr.
_TAIL_BYTES = 8192
#: Seconds an interrupted arm is given after SIGINT, then after SIGTERM.
STOP_GRACE_S = (5.0, 3.0)


def arm_environments(items: Sequence[str], arms: int) -> list[dict[str, str]]:
    """The variables each arm gets from ``--env`` items: ``K=V`` for every
    arm, ``ARM:K=V`` for arm ARM (1-based) only. FastdiffError names a bad
    item."""
    out: list[dict[str, str]] = [{} for _ in range(arms)]
    for item in items:
        which, colon, rest = item.partition(":")
        target: range | None = None
        if colon and which.isascii() and which.isdigit() and "=" not in which:
            k = int(which)
            if not 1 <= k <= arms:
                raise FastdiffError(f"--env {item}: arm {k} does not exist (arms are 1 to {arms})")
            target, item_kv = range(k - 1, k), rest
        else:
            target, item_kv = range(arms), item
        key, eq, value = item_kv.partition("=")
        if not eq or not key or "\0" in item_kv:
            raise FastdiffError(
                f"--env {item}: expected NAME=VALUE (every arm) or ARM:NAME=VALUE (arm ARM only)"
            )
        if key in (RUN_ENV, ARM_ENV):
            raise FastdiffError(f"--env {item}: {key} is set by rerun for each arm")
        for i in target:
            out[i][key] = value
    return out


def _tail(path: str) -> tuple[str, ...]:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - _TAIL_BYTES))
            raw = fh.read()
    except OSError:
        return ()
    lines = raw.decode("utf-8", "replace").splitlines()
    if size > _TAIL_BYTES and lines:
        lines = lines[1:]  # the first is cut
    return tuple(lines[-TAIL_LINES:])


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop an arm and whatever it started: SIGINT to its process group, then
    SIGTERM, then SIGKILL, each after a grace period (a second Ctrl-C: SIGKILL
    at once)."""
    try:
        for sig, grace in ((signal.SIGINT, STOP_GRACE_S[0]), (signal.SIGTERM, STOP_GRACE_S[1])):
            if not _signal_group(proc, sig):
                return
            try:
                proc.wait(grace)
                return
            except subprocess.TimeoutExpired:
                continue
    except KeyboardInterrupt:
        _signal_group(proc, signal.SIGKILL)
        proc.wait()
        raise
    _signal_group(proc, signal.SIGKILL)
    proc.wait()


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> bool:
    """Send ``sig`` to the arm's process group; False when it is gone."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        return False
    return True


def _holds_anything(folder: str) -> bool:
    try:
        with os.scandir(folder) as it:
            return any(True for _ in it)
    except OSError:
        return False


def _run_arm(
    index: int, command: Sequence[str], folder: str, out: str, extra: dict[str, str]
) -> ArmResult:
    """Run arm ``index``; KeyboardInterrupt stops it and propagates."""
    out_path = os.path.join(out, f"arm-{index}.out")
    err_path = os.path.join(out, f"arm-{index}.err")
    env = {**os.environ, **extra, RUN_ENV: folder, ARM_ENV: str(index)}
    os.makedirs(folder)
    t0 = time.perf_counter()
    with open(out_path, "wb") as stdout, open(err_path, "wb") as stderr:
        try:
            proc = subprocess.Popen(
                list(command), env=env, stdin=subprocess.DEVNULL, stdout=stdout,
                stderr=stderr, process_group=0,
            )  # fmt: skip
        except OSError as exc:
            why = f"cannot start {command[0]!r}: {exc.strerror or exc}"
            return ArmResult(index, folder, None, 0.0, (), out_path, err_path, why)
        try:
            code = proc.wait()
        except BaseException:
            _stop(proc)
            raise
    elapsed = time.perf_counter() - t0
    problem = None
    if code != 0:
        status = f"killed by {_signal_name(code)}" if code < 0 else f"exit status {code}"
        problem = f"the command failed ({status})"
    elif not _holds_anything(folder):
        problem = (
            f"the command wrote nothing into ${RUN_ENV} ({folder}): record with "
            "fastdiff.Recorder(), whose folder is $FASTDIFF_RUN by default"
        )
    tail = _tail(err_path) if problem is not None else ()
    return ArmResult(index, folder, code, elapsed, tail, out_path, err_path, problem)


def _compared(arm: int, report: Report) -> ArmComparison:
    step = report.first_divergent_step
    names = tuple(b.name for b in report.buffers if b.step == step and b.status in DIVERGENT)
    origin = report.origins[0] if report.origins else None
    return ArmComparison(arm, report.verdict, step, names if step is not None else (), origin)


def rerun_findings(reports: Sequence[Report]) -> RerunFindings:
    """What the reports of arm 1 against arms 2, 3, ... (in that order) show:
    each arm's comparison, the first arm to diverge, whether the divergence
    reproduces (in every arm? at the same step and buffers?) and whether
    the diverging arms share their first origin."""
    arms = tuple(_compared(i, r) for i, r in enumerate(reports, 2))
    errors = tuple(a.arm for a in arms if a.verdict == Verdict.ERROR)
    diverging = [a for a in arms if a.diverges]
    if not diverging:
        return RerunFindings(arms, errors)
    first = min(diverging, key=lambda a: (a.first_step, a.arm)).arm
    steps = tuple(sorted({a.first_step for a in diverging}))  # type: ignore[type-var]
    if len(arms) == 1:
        kind = ReproductionKind.UNKNOWN
    elif len(diverging) < len(arms):
        kind = ReproductionKind.INTERMITTENT
    elif len({(a.first_step, a.first_buffers) for a in diverging}) == 1:
        kind = ReproductionKind.SAME_PLACE
    elif len(steps) == 1:
        kind = ReproductionKind.SAME_STEP
    else:
        kind = ReproductionKind.OTHER_STEPS
    reproduces = Reproduction(kind, len(diverging), len(arms), steps)
    origins = None
    by_arm = {a.arm: r for a, r in zip(arms, reports, strict=True)}
    if len(diverging) >= 2 and all(by_arm[a.arm].origins is not None for a in diverging):
        firsts = {(a.origin.group, a.origin.name, a.origin.step)
                  for a in diverging if a.origin is not None}  # fmt: skip
        if any(a.origin is None for a in diverging):
            origins = OriginAgreement.NOT_EVERYWHERE
        elif len(firsts) == 1:
            origins = OriginAgreement.SAME
        else:
            origins = OriginAgreement.DIFFERS
    return RerunFindings(arms, errors, first, reproduces, origins)


def _prepare_out(out: str | None) -> tuple[str, bool]:
    """The folder the arms go under, and whether rerun made it."""
    if out is None:
        import tempfile

        return tempfile.mkdtemp(prefix="fastdiff-rerun-"), True
    from .sources import refuse_run_folder

    refuse_run_folder(out, f"--out {out}", fix="give a folder outside any run folder")
    made = not os.path.exists(out)
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        raise FastdiffError(f"--out {out}: cannot make the folder ({exc.strerror})") from exc
    taken = sorted(n for n in os.listdir(out) if n.startswith("arm-"))
    if taken:
        raise FastdiffError(
            f"--out {out} already holds {taken[0]}: rerun never writes over earlier arms; give "
            "an empty folder, or remove them"
        )
    return out, made


def _remove(out: str, made: bool, arms: Sequence[ArmResult]) -> None:
    """Remove what the arms wrote (and ``out`` itself if rerun made it)."""
    if made:
        shutil.rmtree(out, ignore_errors=True)
        return
    for arm in arms:
        shutil.rmtree(arm.folder, ignore_errors=True)
        for path in (arm.out_path, arm.err_path):
            with contextlib.suppress(OSError):
                os.unlink(path)


def rerun(
    command: Sequence[str],
    arms: int = 2,
    out: str | None = None,
    env: Sequence[str] = (),
    keep: bool = False,
    options: CompareOptions | None = None,
    on_arm: Callable[[ArmResult], None] | None = None,
    on_start: Callable[[int, str], None] | None = None,
    on_note: Callable[[str], None] | None = None,
) -> RerunResult:
    """Run ``command`` ``arms`` times, then compare every arm against the first.

    ``out``: the folder the arms are made under (``arm-<k>``; default a new
    temporary folder); ``env``: ``--env`` items (``arm_environments``);
    ``keep``: leave the runs on disk (they are kept anyway when the rerun
    ends in trouble or is interrupted); ``on_start(k, folder)`` and
    ``on_arm(result)``: called as each arm starts and ends; ``on_note``: as
    for ``sweep``. Never raises for what the arms do; FastdiffError for bad
    arguments.
    """
    from .sweep import baseline_pairs, sweep

    command = tuple(command)
    if not command:
        raise FastdiffError("no command to run: give it after --, as in 'rerun -n 3 -- CMD ...'")
    if arms < 2:
        raise FastdiffError(f"-n must be at least 2 (arms to compare), got {arms}")
    extra = arm_environments(env, arms)
    base, made = _prepare_out(out)
    done: list[ArmResult] = []
    k = 0
    try:
        for k in range(1, arms + 1):
            folder = os.path.join(base, f"arm-{k}")
            if on_start is not None:
                on_start(k, folder)
            arm = _run_arm(k, command, folder, base, extra[k - 1])
            done.append(arm)
            if on_arm is not None:
                on_arm(arm)
            if arm.problem is not None:
                return RerunResult(command, base, tuple(done), n_arms=arms)
        runs = [a.folder for a in done]
        reports, summary = sweep(baseline_pairs(runs[0], runs[1:]), options, on_note=on_note)
    except KeyboardInterrupt:
        stopped = k if len(done) < k else None
        return RerunResult(
            command, base, tuple(done), interrupted=True, stopped=stopped, n_arms=arms
        )
    findings = rerun_findings(reports)
    result = RerunResult(
        command, base, tuple(done), tuple(reports), summary, kept=True, findings=findings
    )
    if not keep and result.verdict in (RerunVerdict.DETERMINISTIC, RerunVerdict.NONDETERMINISTIC):
        _remove(base, made, done)
        result = result.replace(kept=False)
    return result
