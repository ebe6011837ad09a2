"""Reports of many steps: folded text, complete JSON, linear cost.

- The text report folds runs of steps whose buffers are all equal into one
  line (``steps 0-999: 2 buffers equal each``) unless ``-v``; the JSON keeps
  every step and every buffer.
- The JSON report is indented at the top level with one compact record per
  line, and parses to exactly ``report_dict``.
- Building the report and rendering it cost a bounded number of looks at
  each buffer, whatever the number of steps (no step x buffer loops): a
  structural count, not a timing.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers import fastdiff

from fastdiff.model.results import BufferResult, Report, StepSummary
from fastdiff.render.json import render_json, report_dict
from fastdiff.render.text import render_text
from fastdiff.schema import RAW
from fastdiff.stages.verdict import build_report

STEPS = 2000


def write_runs(root: Path, steps: int, diverge_at: int) -> tuple[Path, Path]:
    """Two runs of ``steps`` steps x 2 one-byte-per-element buffers; buffer y
    differs at step ``diverge_at``."""
    a, b = root / "a", root / "b"
    for run in (a, b):
        run.mkdir()
        for step in range(steps):
            for name in ("x", "y"):
                payload = b"\1\2\3\4"
                if run is b and name == "y" and step == diverge_at:
                    payload = b"\1\2\7\4"
                fd = os.open(run / f"step_{step}_{name}.bin", os.O_WRONLY | os.O_CREAT, 0o644)
                os.write(fd, payload)
                os.close(fd)
    return a, b


@pytest.fixture(scope="module")
def long_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_runs(tmp_path_factory.mktemp("long"), STEPS, 1000)


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return fastdiff("compare", *args, "--schema", "raw", timeout=600)


def test_text_folds_equal_steps(long_runs: tuple[Path, Path]) -> None:
    r = cli(*long_runs)
    assert r.returncode == 1, r.stderr
    lines = r.stdout.splitlines()
    assert lines[3].startswith("note: 2 buffers in no schema group (x, y) were compared as raw")
    expected = [
        "steps 0-999: 2 buffers equal each",
        "step 1000: 1 equal, 1 diverged  diverged: other",
        "  other  y [u8]  DIVERGED; 1 of 4 elements differs (25%) in 1 range [2, 3); "
        "first at [2]: A=3 B=7; max |A-B| 4 at [2]",
        "steps 1001-1999: 2 buffers equal each",
        "",
        "VERDICT: diverged: first divergent step 1000; groups: other (not in the schema)",
        "  other  not in the schema    DIVERGED: y",
        "",
    ]
    assert lines[4 : 4 + len(expected)] == expected
    assert lines[4 + len(expected)].startswith("next, other: These buffers were compared as raw")


def test_verbose_lists_every_step(long_runs: tuple[Path, Path]) -> None:
    r = cli(*long_runs, "-v")
    assert r.returncode == 1, r.stderr
    steps = [ln for ln in r.stdout.splitlines() if ln.startswith("step")]
    assert steps == [
        f"step {s}: 2 equal" if s != 1000 else "step 1000: 1 equal, 1 diverged  diverged: other"
        for s in range(STEPS)
    ]
    assert sum(" equal (4 elements)" in ln for ln in r.stdout.splitlines()) == 2 * STEPS - 1


def test_json_is_complete_one_record_a_line(long_runs: tuple[Path, Path]) -> None:
    r = cli(*long_runs, "--format", "json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert [s["step"] for s in doc["steps"]] == list(range(STEPS))
    assert len(doc["buffers"]) == 2 * STEPS
    assert [b["name"] for b in doc["buffers"] if b["status"] != "equal"] == ["y"]
    lines = r.stdout.splitlines()
    records = [json.loads(ln.strip().rstrip(",")) for ln in lines if ln.startswith('    {"step"')]
    assert records == doc["steps"] + doc["timeline"] + doc["buffers"]


# --- the renderers themselves --------------------------------------------------------


def _buffer(step: int, name: str, status: str = "equal") -> BufferResult:
    zeros = {"n_diff": 0, "n_within_tolerance": 0, "n_nan_mismatch": 0, "n_inf_mismatch": 0}
    return BufferResult(step, name, "other", "u8", status, 4, 4, f"a/{name}", f"b/{name}", **zeros)  # type: ignore[arg-type]


def _report(buffers: list[BufferResult]) -> Report:
    return build_report("a", "b", RAW, buffers, [], [])


def test_fold_says_when_counts_change_and_steps_skip() -> None:
    buffers = [_buffer(0, "x"), _buffer(1, "x"), _buffer(1, "y"), _buffer(2, "x")]
    buffers += [_buffer(s, "x") for s in (10, 20, 30)]
    text = render_text(_report(buffers))
    assert "steps 0-30 (6 steps): all equal, 1 to 2 buffers a step (7 in all)\n" in text
    steps = (StepSummary(0, (("equal", 3),), ()), StepSummary(5, (("equal", 3),), ()))
    report = Report("a", "b", "raw", "identical", None, (), (), steps, (), (), ())
    assert "steps 0-5 (2 steps): 3 buffers equal each\n" in render_text(report)
    one = Report("a", "b", "raw", "identical", None, (), (), steps[:1], (), (), ())
    assert "\nstep 0: 3 equal\n" in render_text(one)  # a lone step keeps its own line


def test_json_layout_is_valid_whatever_the_names() -> None:
    """Records are cut apart at '}, {': a name holding it must not move a cut."""
    names = ["x", "a}, {b", 'q"}, {"step": 1', "\u2028}, {"]
    report = _report([_buffer(s, n) for s in range(3) for n in names])
    text = render_json(report)
    assert json.loads(text) == json.loads(json.dumps(report_dict(report)))
    assert json.loads(render_json(report, indent=None)) == json.loads(text)
    buffer_lines = [ln for ln in text.splitlines() if ln.startswith('    {"step"')]
    assert len(buffer_lines) == 3 + 12  # steps and buffers, one a line
    empty = json.loads(
        render_json(Report("a", "b", "raw", "identical", None, (), (), (), (), (), ()))
    )
    assert empty["buffers"] == [] and empty["steps"] == []


class _Counting(BufferResult):
    """A BufferResult that counts how often its step is read."""

    __slots__ = ()
    reads = 0

    @property  # type: ignore[override]
    def step(self) -> int:
        _Counting.reads += 1
        return BufferResult.step.__get__(self)  # type: ignore[attr-defined,no-any-return]

    @step.setter
    def step(self, value: int) -> None:
        BufferResult.step.__set__(self, value)  # type: ignore[attr-defined]


@pytest.mark.parametrize("verbose", [False, True])
def test_report_cost_is_linear_in_buffers(verbose: bool) -> None:
    """build_report, render_text and render_json look at each buffer's step a
    few times, not once per step (2000 steps x 2 buffers: 8 million reads
    for a step x buffer loop)."""
    buffers = [_Counting(s, n, "other", "u8", "equal", 4, 4) for s in range(STEPS) for n in "xy"]
    buffers[2001] = _Counting(1000, "y", "other", "u8", "diverged", 4, 4, n_diff=1)
    _Counting.reads = 0
    report = _report(buffers)
    text = render_text(report, verbose)
    render_json(report)
    assert ("steps 1001-1999: 2 buffers equal each" in text) is not verbose
    assert _Counting.reads <= 8 * len(buffers), _Counting.reads
