"""Shorter reports and group order (issue 23, section 3).

- After the first divergent step, a step lists only the buffers that diverge
  there for the first time (their name did not diverge at an earlier step);
  ``-v`` lists every one.
- ``--steps RANGE`` and ``--names GLOB`` limit what is compared (the verdict
  is about them, the report says what was asked); ``--first`` only cuts the
  listing to the first divergent step, in text and JSON.
- The ``born in:`` line names each origin once, its inputs summed up; the
  later origins name each buffer once.
- ``next,`` hints go to the groups where the divergence was born, not to
  those that received it.

Every test runs the command line (``helpers.fastdiff``) or the library API on
runs written here, and asserts findings: which buffers are listed, JSON keys
and values, exit codes.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from helpers import f32, fastdiff

from fastdiff import CompareOptions, compare_runs

SCHEMA = """\
name = "pipe"

[[group]]
key = "P"
title = "producers"
hint = "Look at the producers."
[group.members]
src = { dtype = "f32", inputs = [] }
mid = { dtype = "f32", inputs = ["src"] }
"w*" = { dtype = "f32", inputs = ["src", "mid", "side"] }

[[group]]
key = "Q"
title = "consumers"
hint = "Look at the consumers."
[group.members]
out = { dtype = "f32", inputs = ["mid"] }
plain = "f32"
"""

Run = dict[tuple[int, str], bytes]


def base(names: tuple[str, ...], steps: range | list[int] = range(4)) -> Run:
    return {(s, n): f32(*(100 * s + 10 * i + k for k in range(4)))
            for s in steps for i, n in enumerate(names)}  # fmt: skip


def bump(run: Run, step: int, name: str, by: float = 1.0) -> None:
    values = list(struct.unpack(f"<{len(run[(step, name)]) // 4}f", run[(step, name)]))
    values[0] += by
    run[(step, name)] = f32(*values)


def write(tmp: Path, a: Run, b: Run, schema: str = SCHEMA) -> tuple[Path, Path, Path]:
    for folder, run in (("a", a), ("b", b)):
        (tmp / folder).mkdir()
        for (step, name), data in run.items():
            (tmp / folder / f"step_{step}_{name}.bin").write_bytes(data)
    (tmp / "s.toml").write_text(schema, encoding="utf-8")
    return tmp / "a", tmp / "b", tmp / "s.toml"


def listed(text: str) -> dict[int, list[str]]:
    """The buffers a text report lists, by the step whose line they follow."""
    out: dict[int, list[str]] = {}
    step = None
    for line in text.splitlines():
        if line.startswith("step "):
            step = int(line.split(":", 1)[0].split()[1])
            out[step] = []
        elif line.startswith("    ") and step is not None:
            out[step].append(line.split()[1])
        elif not line.startswith(" "):
            step = None
    return out


def step_line(text: str, step: int) -> str:
    return next(ln for ln in text.splitlines() if ln.startswith(f"step {step}:"))


@pytest.fixture
def spreading(tmp_path: Path) -> tuple[Path, Path, Path]:
    """mid is born at step 1; out receives it at 1 and 2; plain (no inputs)
    diverges at 2 for the first time; mid and out again at 3."""
    names = ("src", "mid", "out", "plain")
    a, b = base(names), base(names)
    for step, name in [(1, "mid"), (1, "out"), (2, "mid"), (2, "out"), (2, "plain"),
                       (3, "mid"), (3, "out")]:  # fmt: skip
        bump(b, step, name)
    return write(tmp_path, a, b)


# --- shorter reports: what a step lists -------------------------------------------------


def test_after_the_first_divergent_step_a_step_lists_only_new_divergences(
    spreading: tuple[Path, Path, Path],
) -> None:
    ra, rb, schema = spreading
    p = fastdiff("compare", "--schema", schema, ra, rb)
    assert p.returncode == 1, p.stderr
    shown = listed(p.stdout)
    assert shown[1] == ["mid", "out"]  # the first divergent step: all of them
    assert shown[2] == ["plain"]  # mid and out diverged at step 1 already
    assert shown[3] == []
    assert step_line(p.stdout, 3).endswith("(not listed: 2 that diverged at an earlier step)")
    assert step_line(p.stdout, 2).startswith("step 2: 1 equal, 3 diverged")  # counts: all
    verbose = fastdiff("compare", "--schema", schema, ra, rb, "-v")
    assert verbose.returncode == 1
    assert sorted(listed(verbose.stdout)[3]) == ["mid", "out", "plain", "src"]  # -v: all
    assert "not listed" not in verbose.stdout
    j = fastdiff("compare", "--schema", schema, ra, rb, "--format", "json")
    doc = json.loads(j.stdout)
    assert len(doc["buffers"]) == 16  # the JSON still holds every buffer
    assert "selection" not in doc  # no option that selects: the object is as it was


def test_trouble_at_a_later_step_is_still_listed(tmp_path: Path) -> None:
    names = ("src", "mid", "out", "plain")
    a, b = base(names), base(names)
    bump(b, 1, "mid")
    bump(b, 2, "mid")
    b[(2, "plain")] = b[(2, "plain")][:-1]  # 15 bytes: not a whole number of f32
    ra, rb, schema = write(tmp_path, a, b)
    p = fastdiff("compare", "--schema", schema, ra, rb)
    assert p.returncode == 2, p.stderr
    assert listed(p.stdout)[2] == ["plain"]  # malformed: listed; mid: diverged at 1


# --- --steps and --names: what is compared ---------------------------------------------------


def test_steps_limits_what_is_compared_and_the_report_says_so(
    spreading: tuple[Path, Path, Path],
) -> None:
    ra, rb, schema = spreading
    p = fastdiff("compare", "--schema", schema, ra, rb, "--steps", "2:4", "--format", "json")
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    assert doc["selection"] == {"steps": [[2, 4]], "names": None, "buffers": "all"}
    assert sorted({b["step"] for b in doc["buffers"]}) == [2, 3]  # half-open: 4 is left out
    assert [s["step"] for s in doc["steps"]] == [2, 3]
    assert doc["first_divergent_step"] == 2  # of the steps asked
    text = fastdiff("compare", "--schema", schema, ra, rb, "--steps", "2:4")
    assert "compared: steps 2 to 3 only (--steps 2:4)" in text.stdout.splitlines()
    assert listed(text.stdout)[2] == ["mid", "out", "plain"]


def test_steps_outside_the_divergence_are_identical_and_the_union_of_ranges_counts(
    spreading: tuple[Path, Path, Path],
) -> None:
    ra, rb, schema = spreading
    p = fastdiff("compare", "--schema", schema, ra, rb, "--steps", "0", "--format", "json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["verdict"] == "identical"
    p = fastdiff("compare", "--schema", schema, ra, rb, "--steps", "0", "--steps", "3:",
                 "--format", "json")  # fmt: skip
    doc = json.loads(p.stdout)
    assert doc["selection"]["steps"] == [[0, 1], [3, None]]
    assert [s["step"] for s in doc["steps"]] == [0, 3]
    assert doc["first_divergent_step"] == 3


def test_a_step_left_out_leaves_prev_inputs_not_compared(tmp_path: Path) -> None:
    schema = SCHEMA.replace('mid = { dtype = "f32", inputs = ["src"] }',
                            'mid = { dtype = "f32", inputs = ["src", "mid@prev"] }')  # fmt: skip
    names = ("src", "mid")
    a, b = base(names), base(names)
    bump(b, 2, "mid")
    ra, rb, s = write(tmp_path, a, b, schema)
    whole = json.loads(fastdiff("compare", "--schema", s, ra, rb, "--format", "json").stdout)
    assert whole["origins"] == [{"step": 2, "name": "mid", "group": "P"}]
    p = fastdiff("compare", "--schema", s, ra, rb, "--steps", "2:", "--format", "json")
    doc = json.loads(p.stdout)
    (mid,) = [x for x in doc["buffers"] if x["name"] == "mid" and x["step"] == 2]
    assert (mid["role"], mid["undumped_inputs"]) == ("undetermined", ["mid@prev"])


def test_names_limits_the_buffers_compared(spreading: tuple[Path, Path, Path]) -> None:
    ra, rb, schema = spreading
    p = fastdiff("compare", "--schema", schema, ra, rb, "--names", "m*", "--names", "src",
                 "--format", "json")  # fmt: skip
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    assert doc["selection"] == {"steps": None, "names": ["m*", "src"], "buffers": "all"}
    assert {b["name"] for b in doc["buffers"]} == {"mid", "src"}
    assert doc["first_divergent_groups"] == ["P"]
    p = fastdiff("compare", "--schema", schema, ra, rb, "--names", "plain", "--format", "json")
    assert p.returncode == 1
    doc = json.loads(p.stdout)
    assert (doc["verdict"], doc["first_divergent_step"]) == ("diverged", 2)
    assert doc["first_divergent_groups"] == ["Q"]


def test_a_selection_that_takes_nothing_is_an_error(spreading: tuple[Path, Path, Path]) -> None:
    ra, rb, schema = spreading
    for opts in (("--steps", "10:20"), ("--names", "nothing*")):
        p = fastdiff("compare", "--schema", schema, ra, rb, *opts)
        assert p.returncode == 2, (opts, p.stdout)
        assert "nothing to compare" in p.stderr and "Traceback" not in p.stderr


def test_one_run_without_the_steps_asked_diverges_as_without_a_selection(
    tmp_path: Path,
) -> None:
    names = ("src", "mid")
    ra, rb, schema = write(tmp_path, base(names, range(4)), base(names, range(2)))
    p = fastdiff("compare", "--schema", schema, ra, rb, "--steps", "2:", "--format", "json")
    assert p.returncode == 1, p.stderr
    assert {b["status"] for b in json.loads(p.stdout)["buffers"]} == {"only_in_a"}


@pytest.mark.parametrize("value", ["8:3", "3:3", "x", "-1", ":", "1.5", "3:8:2", ""])
def test_a_bad_steps_value_is_one_line_and_exit_2(
    spreading: tuple[Path, Path, Path], value: str
) -> None:
    ra, rb, schema = spreading
    p = fastdiff("compare", "--schema", schema, ra, rb, f"--steps={value}")
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "argument --steps: " in p.stderr, p.stderr  # what is wrong with the value
    assert "Traceback" not in p.stderr and p.stdout == ""


def test_sweep_takes_steps_and_names_and_watch_refuses_them(
    spreading: tuple[Path, Path, Path],
) -> None:
    ra, rb, schema = spreading
    p = fastdiff("sweep", "--baseline", ra, rb, "--schema", schema, "--no-cache",
                 "--format", "jsonl", "--steps", "0", "--names", "mid")  # fmt: skip
    assert p.returncode == 0, p.stderr
    record = json.loads(p.stdout.splitlines()[0])
    assert record["verdict"] == "identical"
    assert record["selection"]["steps"] == [[0, 1]]
    assert [b["name"] for b in record["buffers"]] == ["mid"]
    for opts in (("--steps", "0"), ("--first",)):
        w = fastdiff("watch", ra, rb, "--idle-timeout", "0.5", *opts)
        assert w.returncode == 2 and f"unknown option '{opts[0]}'" in w.stderr, w.stderr


def test_the_api_takes_a_selection(spreading: tuple[Path, Path, Path]) -> None:
    ra, rb, schema = spreading
    from fastdiff import Selection

    opts = CompareOptions(schema=str(schema))
    report = compare_runs(ra, rb, opts, select=Selection(steps=range(2, 3), names=["out"]))
    assert [(b.step, b.name) for b in report.buffers] == [(2, "out")]
    assert report.selection == Selection(steps="2", names="out")
    with pytest.raises(ValueError, match="holds no step"):
        Selection(steps="5:2")
    with pytest.raises(TypeError):
        Selection(steps=[2.5])


# --- --first: only the first divergent step is listed ----------------------------------------


def test_first_lists_only_the_first_divergent_step_and_keeps_the_verdict(
    spreading: tuple[Path, Path, Path],
) -> None:
    ra, rb, schema = spreading
    p = fastdiff("compare", "--schema", schema, ra, rb, "--first")
    assert p.returncode == 1, p.stderr
    assert listed(p.stdout) == {1: ["mid", "out"]}
    assert "3 other steps not listed (--first)" in p.stdout.splitlines()
    assert "     3" in p.stdout  # the timeline is the whole comparison's
    j = fastdiff("compare", "--schema", schema, ra, rb, "--first", "--format", "json")
    assert j.returncode == 1
    doc = json.loads(j.stdout)
    assert doc["selection"] == {"steps": None, "names": None, "buffers": "first_divergent_step"}
    assert {b["step"] for b in doc["buffers"]} == {1} and len(doc["buffers"]) == 4
    assert [s["step"] for s in doc["steps"]] == [0, 1, 2, 3]
    assert {r["step"] for r in doc["timeline"]} == {1, 2, 3}
    assert doc["verdict"] == "diverged" and doc["first_divergent_step"] == 1


# --- the born-in line, and where the hints go ---------------------------------------------------


def test_born_in_names_each_origin_once_with_its_inputs_summed_up(tmp_path: Path) -> None:
    """Twelve buffers born at step 1 (their inputs src, mid, side: side never
    dumped would leave them undetermined, so side is dumped too), then
    born again at steps 2 and 3."""
    ws = tuple(f"w{i:02}" for i in range(12))
    schema = SCHEMA.replace('out = { dtype = "f32", inputs = ["mid"] }',
                            'out = { dtype = "f32", inputs = ["mid"] }\nside = "f32"')  # fmt: skip
    names = ("src", "mid", "side", *ws)
    a, b = base(names), base(names)
    for step in (1, 2, 3):
        for w in ws:
            bump(b, step, w)
    ra, rb, s = write(tmp_path, a, b, schema)
    p = fastdiff("compare", "--schema", s, ra, rb)
    assert p.returncode == 1, p.stderr
    lines = p.stdout.splitlines()
    (born,) = [ln for ln in lines if ln.startswith("  born in: ")]
    assert len(born) < 200, born
    assert born.count("w00") == 1 and "and 6 more at step 1" in born
    assert "(inputs src, mid, side matched)" in born
    (later,) = [ln for ln in lines if "later origin" in ln]
    assert later.startswith("  24 later origins: ")
    assert later.count("w00") == 1 and "w00 at steps 2-3" in later
    v = fastdiff("compare", "--schema", s, ra, rb, "-v").stdout.splitlines()
    (full,) = [ln for ln in v if ln.startswith("  born in: ")]
    assert all(f"P {w} at step 1 (inputs src, mid, side matched)" in full for w in ws)
    doc = json.loads(fastdiff("compare", "--schema", s, ra, rb, "--format", "json").stdout)
    assert len(doc["origins"]) == 36
    born = doc["born"]
    assert born["step"] == 1 and [o["name"] for o in born["origins"]] == list(ws)
    assert [(o["name"], o["step"]) for o in born["later"]] == [
        (w, step) for step in (2, 3) for w in ws
    ]
    w0 = next(x for x in doc["buffers"] if (x["step"], x["name"]) == (1, "w00"))
    assert w0["inputs"] == ["src", "mid", "side"]


def test_hints_go_to_the_groups_holding_an_origin_not_to_receivers(
    spreading: tuple[Path, Path, Path],
) -> None:
    ra, rb, schema = spreading  # step 1: P's mid is born, Q's out receives it
    report = compare_runs(ra, rb, CompareOptions(schema=str(schema)))
    assert (report.first_divergent_step, report.first_divergent_groups) == (1, ("P", "Q"))
    assert report.next_groups == ("P",)
    # the text gives the hint of the next groups alone
    lines = fastdiff("compare", "--schema", schema, ra, rb).stdout.splitlines()
    assert [ln.split(":")[0] for ln in lines if ln.startswith("next, ")] == ["next, P"]


def test_without_an_origin_the_hints_go_to_buffers_that_are_not_receivers(
    tmp_path: Path,
) -> None:
    """Step 1: P's w0 is undetermined (its input side is never dumped) and
    Q's out received it: no origin there, so P's hint alone."""
    schema = SCHEMA.replace('out = { dtype = "f32", inputs = ["mid"] }',
                            'out = { dtype = "f32", inputs = ["w0"] }')  # fmt: skip
    names = ("src", "mid", "w0", "out")
    a, b = base(names), base(names)
    bump(b, 1, "w0")
    bump(b, 1, "out")
    ra, rb, s = write(tmp_path, a, b, schema)
    report = compare_runs(ra, rb, CompareOptions(schema=str(s)))
    assert (report.first_divergent_step, report.first_divergent_groups) == (1, ("P", "Q"))
    assert report.origins == ()
    roles = {b.name: b.role.kind for b in report.buffers if b.step == 1 and b.role is not None}
    assert roles == {"w0": "undetermined", "out": "receiver"}
    assert report.next_groups == ("P",)
