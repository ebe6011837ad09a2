"""The command line, run for real in a subprocess on the committed fixtures.

Each case under tests/fixtures/ (written by tests/make_fixtures.py) is a pair
of runs in the rl-state layout whose differences are known exactly; the
tests check the exit code, stderr, the text output and every field of every
buffer in the JSON report, then options (schemas, tolerances, executors,
engines, chunk sizes) and the promises around a comparison: run folders are
left untouched, the identical path imports neither numpy nor numba, and a
closed pipe ends quietly.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import make_fixtures
import pytest
from helpers import fastdiff as run_fastdiff

from fastdiff import compare_runs
from fastdiff.presets import RL_STATE

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = "tests/fixtures"  # relative to ROOT, where the CLI runs
ERROR_PREFIX = "fastdiff: error: "

BATCH = 16
ISV = 757
#: (name, group, dtype) of every rl-state buffer the fixtures dump (groups C to F:
#: ``make_fixtures.DUMPED_GROUPS``), in pipeline order
MEMBERS = [
    (m.pattern, g.key, m.dtype)
    for g in RL_STATE.groups
    if g.key in make_fixtures.DUMPED_GROUPS
    for m in g.members
]
GROUP_ORDER = {"A": 0, "B": 1, "C": 2, "D": 3, "E": 4, "F": 5, "other": 6}
TITLES = {g.key: g.title for g in RL_STATE.groups}


# --- running the CLI ---------------------------------------------------------


@dataclass(frozen=True)
class Run:
    rc: int
    stdout: str
    stderr: str

    @property
    def error_lines(self) -> list[str]:
        return self.stderr.splitlines()


@functools.cache
def fastdiff(*args: str) -> Run:
    """``python -m fastdiff ARGS`` from the repo root (cached: inputs never change)."""
    p = run_fastdiff(*args)
    return Run(p.returncode, p.stdout, p.stderr)


def runs(case: str) -> tuple[str, str]:
    return f"{FIXTURES}/{case}/a", f"{FIXTURES}/{case}/b"


def compare(case: str, *opts: str) -> Run:
    return fastdiff("compare", *runs(case), *opts)


def _no_constants(name: str) -> Any:
    raise ValueError(f"not strict JSON: {name}")


def strict_json(text: str) -> dict[str, Any]:
    """Parse RFC 8259 JSON: NaN, Infinity and -Infinity are rejected."""
    doc = json.loads(text, parse_constant=_no_constants)
    assert isinstance(doc, dict)
    return doc


def compare_json(case: str, *opts: str) -> tuple[Run, dict[str, Any]]:
    run = compare(case, "--format", "json", *opts)
    return run, strict_json(run.stdout)


def without_work(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != "work"}


# --- what each fixture must give ---------------------------------------------


def n_elements(name: str) -> int:
    return ISV if name == "isv_full" else BATCH


#: The counts of a buffer whose compared elements all agree: 0, never null.
NO_DIFFERENCES = {
    "n_diff": 0,
    "n_within_tolerance": 0,
    "n_nan_mismatch": 0,
    "n_inf_mismatch": 0,
}


def equal(n: int) -> dict[str, Any]:
    return {
        "status": "equal",
        "n_elements_a": n,
        "n_elements_b": n,
        **NO_DIFFERENCES,
        "first_index": None,
        "a": None,
        "b": None,
        "max_abs_delta": None,
        "max_abs_delta_index": None,
    }


def diverged(
    n_diff: int, first: int, a: Any, b: Any, delta: Any, delta_index: int | None, **more: Any
) -> dict[str, Any]:
    return {
        "status": "diverged",
        **NO_DIFFERENCES,
        "n_diff": n_diff,
        "first_index": first,
        "a": a,
        "b": b,
        "max_abs_delta": delta,
        "max_abs_delta_index": delta_index,
        **more,
    }


ABSENT = {
    "n_diff": None,
    "n_within_tolerance": None,
    "n_nan_mismatch": None,
    "n_inf_mismatch": None,
    "first_index": None,
    "a": None,
    "b": None,
    "max_abs_delta": None,
    "max_abs_delta_index": None,
}


@dataclass(frozen=True)
class Expect:
    rc: int
    steps: tuple[int, ...]
    first_step: int | None = None
    first_groups: tuple[str, ...] = ()
    #: (step, name) -> fields that differ from an equal rl-state buffer
    changes: dict[tuple[int, str], dict[str, Any]] = field(default_factory=dict)
    #: buffers outside the schema: (step, name) -> all fields but the identity
    extra: dict[tuple[int, str], dict[str, Any]] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        return {0: "identical", 1: "diverged", 2: "error"}[self.rc]

    def buffers(self) -> list[dict[str, Any]]:
        out = []
        for step in self.steps:
            for name, group, dtype in MEMBERS:
                record = {"step": step, "name": name, "group": group, "dtype": dtype}
                record |= equal(n_elements(name)) | self.changes.get((step, name), {})
                out.append(record)
        for (step, name), fields in self.extra.items():
            out.append({"step": step, "name": name, "group": "other", "dtype": "u8"} | fields)
        return sorted(out, key=lambda r: (r["step"], GROUP_ORDER[r["group"]], r["name"]))


def each(
    steps: range | list[int], name: str, fields: dict[str, Any]
) -> dict[tuple[int, str], dict[str, Any]]:
    return {(s, name): fields for s in steps}


NAN_VS_NAN = diverged(1, 6, "nan", "nan", None, None, n_nan_mismatch=1, n_inf_mismatch=0)

EXPECT: dict[str, Expect] = {
    "identical": Expect(0, (0, 1, 2, 3)),
    "diverge_C": Expect(
        1,
        (0, 1, 2, 3),
        2,
        ("C",),
        each(range(2, 4), "iqn_prng_state", diverged(1, 3, 2_000_000_000, 2_000_000_123, 123, 3)),
    ),
    "diverge_D": Expect(
        1,
        (0, 1, 2, 3),
        2,
        ("D",),
        each(range(2, 4), "unit_entry_price", diverged(2, 7, 101.25, 101.5, 8.0, 12)),
    ),
    "diverge_E": Expect(
        1,
        (0, 1, 2, 3),
        2,
        ("E",),
        each(range(2, 4), "isv_full", diverged(1, 725, 1.0, 1 + 2**-23, 2**-23, 725)),
    ),
    "diverge_F": Expect(
        1,
        (0, 1, 2, 3),
        2,
        ("F",),
        each(range(2, 4), "rewards", diverged(1, 0, 0.5, -0.5, 1.0, 0)),
    ),
    "multi_group": Expect(
        1,
        (0, 1, 2, 3),
        1,
        ("D", "F"),
        each(range(1, 4), "unit_lots", diverged(1, 2, 5, 6, 1, 2))
        | each(range(1, 4), "actions", diverged(1, 9, 2, 0, 2, 9))
        | each([3], "action_prng_state", diverged(1, 0, 1, 4294967295, 4294967294, 0)),
    ),
    "identical_nans": Expect(0, (0, 1)),
    "signed_zero": Expect(
        1,
        (0, 1),
        1,
        ("F",),
        each([1], "outcome_ema", diverged(1, 4, -0.0, 0.0, 0.0, 4, n_nan_mismatch=0)),
    ),
    "nan_payload": Expect(
        1,
        (0, 1),
        0,
        ("F",),
        {
            (0, "log_pi_old"): NAN_VS_NAN | {"a_bits": "0x7fc00000", "b_bits": "0x7fc00001"},
            (1, "log_pi_old"): NAN_VS_NAN | {"a_bits": "0xffc00000", "b_bits": "0x7fc00000"},
        },
    ),
    "nonfinite": Expect(
        1,
        (0,),
        0,
        ("F",),
        {
            (0, "returns"): diverged(
                4, 1, "inf", "-inf", 2.5, 3, n_nan_mismatch=1, n_inf_mismatch=2
            ),
        },
    ),
    "length_mismatch": Expect(
        1,
        (0, 1),
        1,
        ("D", "F"),
        {
            (1, "session_pnl"): {
                "status": "length_mismatch",
                "n_elements_a": 16,
                "n_elements_b": 20,
                **ABSENT,
                **NO_DIFFERENCES,  # the common prefix was compared, whatever the chunk size
            },
            (1, "unit_lots"): diverged(1, 2, 40, 41, 1, 2)
            | {"status": "length_mismatch", "n_elements_a": 16, "n_elements_b": 12},
        },
    ),
    "malformed": Expect(
        2,
        (0, 1),
        0,  # its files differ in size (10 and 64 bytes): the runs differ at step 0
        ("D",),
        changes={
            (0, "unit_entry_price"): {
                "status": "malformed",
                "n_elements_a": None,
                "n_elements_b": None,
                "size_a": 10,
                "size_b": 64,
                **ABSENT,
            }
        },
    ),
    "only_in_one": Expect(
        1,
        (0, 1),
        0,
        ("D",),
        {
            (0, "unit_active"): {
                "status": "only_in_b",
                "n_elements_a": None,
                "n_elements_b": 16,
                **ABSENT,
            },
            (1, "ph_mu"): {
                "status": "only_in_a",
                "n_elements_a": 16,
                "n_elements_b": None,
                **ABSENT,
            },
        },
    ),
    "late_steps": Expect(
        1,
        (0, 1, 2, 3, 4, 5, 6, 7, 12),
        12,
        ("F",),
        each([12], "ph_count", diverged(1, 15, 3.0, 4.0, 1.0, 15)),
    ),
    "unknown_names": Expect(
        1,
        (0, 1),
        0,
        ("other",),
        extra={
            (0, "my_debug_buf"): diverged(1, 4, 14, 250, 236, 4)
            | {"n_elements_a": 10, "n_elements_b": 10},
            (1, "my_debug_buf"): equal(10),
        },
    ),
    "int_extremes": Expect(
        1,
        (0, 1),
        0,
        ("C", "D"),
        each([0], "action_prng_state", diverged(2, 0, 0, 4294967295, 4294967295, 0))
        | each([0], "steps_since_done", diverged(2, 0, -2147483648, 2147483647, 4294967295, 0)),
    ),
}

#: errors (path, message start) each trouble case must report
EXPECTED_ERRORS = {
    "malformed": [
        (
            f"{FIXTURES}/malformed/a/step_0_unit_entry_price.bin",
            "size 10 bytes is not a whole number of 4-byte f32 elements",
        )
    ],
}


def check_report(case: str, run: Run, doc: dict[str, Any]) -> None:
    """Everything the CLI must say about ``case``: exit code, stderr and JSON."""
    exp = EXPECT[case]
    assert run.rc == exp.rc, run.stderr
    errors = EXPECTED_ERRORS.get(case, [])
    if exp.rc == 2:
        lines = run.error_lines
        assert len(lines) == len(errors), run.stderr
        for line, (path, message) in zip(lines, errors, strict=True):
            assert line.startswith(f"{ERROR_PREFIX}{path}: {message}")
    else:
        assert run.stderr == ""
    assert len(doc["errors"]) == len(errors)
    for e, (path, message) in zip(doc["errors"], errors, strict=True):
        assert e["path"] == path
        assert e["message"].startswith(message)

    assert doc["schema_version"] == 1
    assert (doc["run_a"], doc["run_b"]) == runs(case)
    assert doc["schema"] == "rl-state"
    assert doc["verdict"] == exp.verdict
    assert doc["first_divergent_step"] == exp.first_step
    assert doc["first_divergent_groups"] == list(exp.first_groups)
    assert [s["step"] for s in doc["steps"]] == list(exp.steps)

    expected = exp.buffers()
    actual = doc["buffers"]
    assert [(b["step"], b["name"]) for b in actual] == [(b["step"], b["name"]) for b in expected]
    for got, want in zip(actual, expected, strict=True):
        where = (got["step"], got["name"])
        assert {k: got[k] for k in want} == want, where
        # 1 == 1.0 and -0.0 == 0.0: check types (exact ints stay ints) and signs too
        assert {k: type(got[k]) for k in want} == {k: type(v) for k, v in want.items()}, where
        for k, v in want.items():
            if isinstance(v, float):
                assert math.copysign(1, got[k]) == math.copysign(1, v), where


# --- the fixtures themselves -------------------------------------------------


def tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_committed_fixtures_match_the_generator(tmp_path: Path) -> None:
    make_fixtures.write_all(tmp_path / "fixtures", tmp_path / "examples")
    fixtures = ROOT / FIXTURES
    assert sorted(p.name for p in fixtures.iterdir()) == sorted(make_fixtures.CASES)
    assert set(EXPECT) == set(make_fixtures.CASES)
    assert tree(fixtures) == tree(tmp_path / "fixtures"), "run: python tests/make_fixtures.py"
    for run in ("run-a", "run-b"):
        assert tree(ROOT / "examples" / run) == tree(tmp_path / "examples" / run)


def test_fixtures_stay_small() -> None:
    total = sum(len(v) for v in tree(ROOT / FIXTURES).values())
    assert total < 1 << 20


# --- reports -----------------------------------------------------------------


@pytest.mark.parametrize("case", list(EXPECT))
def test_json_report(case: str) -> None:
    run, doc = compare_json(case)
    check_report(case, run, doc)


@pytest.mark.parametrize(
    ("case", "chunk_size"),
    [
        ("diverge_E", "64"),  # isv_full: 48 chunks, one differs
        ("multi_group", "64"),
        ("length_mismatch", "64"),  # the common prefix ends on a chunk boundary
        ("length_mismatch", "24"),  # ... or inside a chunk
        ("unknown_names", "64"),
        ("nonfinite", "8"),
    ],
)
def test_small_chunks_give_the_same_report(case: str, chunk_size: str) -> None:
    run, doc = compare_json(case, "--chunk-size", chunk_size)
    check_report(case, run, doc)


def test_signed_zero_has_zero_delta() -> None:
    _, doc = compare_json("signed_zero")
    (b,) = [b for b in doc["buffers"] if b["status"] != "equal"]
    assert b["max_abs_delta"] == 0.0
    assert (b["a_bits"], b["b_bits"]) == ("0x80000000", "0x00000000")


def test_int_extremes_are_exact_integers() -> None:
    run, doc = compare_json("int_extremes")
    assert '"max_abs_delta": 4294967295,' in run.stdout
    for b in doc["buffers"]:
        if b["status"] == "diverged":
            assert isinstance(b["max_abs_delta"], int)
            assert isinstance(b["a"], int) and isinstance(b["b"], int)


def test_multi_group_verdict_table() -> None:
    _, doc = compare_json("multi_group")
    assert [(g["key"], g["status"], g["diverged"]) for g in doc["groups"]] == [
        ("A", "absent", []),  # dumped apart from the reference's groups: not here
        ("B", "absent", []),
        ("C", "equal", []),
        ("D", "diverged", ["unit_lots"]),
        ("E", "equal", []),
        ("F", "diverged", ["actions"]),
    ]
    assert [s["diverged_groups"] for s in doc["steps"]] == [
        [],
        ["D", "F"],
        ["D", "F"],
        ["C", "D", "F"],
    ]


def test_unknown_names_other_group_and_skipped() -> None:
    _, doc = compare_json("unknown_names")
    assert doc["skipped"] == [
        {
            "path": f"{FIXTURES}/unknown_names/a/notes.txt",
            "reason": "not a dump: name is not step_<N>_<name>.bin",
        }
    ]
    assert [(g["key"], g["status"]) for g in doc["groups"]] == [
        ("A", "absent"),
        ("B", "absent"),
        ("C", "equal"),
        ("D", "equal"),
        ("E", "equal"),
        ("F", "equal"),
        ("other", "diverged"),
    ]


def test_malformed_keeps_the_rest_of_the_report() -> None:
    run, doc = compare_json("malformed")
    assert run.rc == 2
    (bad,) = [b for b in doc["buffers"] if b["status"] != "equal"]
    assert (bad["step"], bad["group"], bad["name"], bad["dtype"]) == (
        0, "D", "unit_entry_price", "f32"
    )  # fmt: skip
    assert bad["status"] == "malformed" and bad["size_a"] != bad["size_b"]
    assert 10 in (bad["size_a"], bad["size_b"])
    assert [s["counts"] for s in doc["steps"][:2]] == [{"equal": 33, "malformed": 1}, {"equal": 34}]
    assert (doc["verdict"], doc["first_divergent_step"]) == ("error", 0)
    assert doc["first_divergent_groups"] == ["D"]


def test_empty_folders_are_nothing_to_compare(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    run = fastdiff("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--format", "json")
    assert run.rc == 2
    (line,) = run.error_lines
    assert line.startswith(ERROR_PREFIX)
    assert str(tmp_path / "a") in line and "nothing to compare" in line
    doc = strict_json(run.stdout)
    assert doc["verdict"] == "error"
    assert doc["buffers"] == []


@pytest.mark.parametrize(("size", "n_bytes"), [("0", 0), ("12", 12), ("0K", 0)])
def test_chunk_size_must_be_a_positive_multiple_of_8(size: str, n_bytes: int) -> None:
    run = compare("identical", "--chunk-size", size)
    assert run.rc == 2
    assert run.stdout == ""
    assert run.error_lines == [
        f"{ERROR_PREFIX}--chunk-size must be a positive multiple of 8 bytes, at most 1 GiB, "
        f"got {n_bytes}"
    ]


def test_missing_run_folder(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-run")
    run = fastdiff("compare", missing, runs("identical")[1])
    assert run.rc == 2
    assert run.error_lines == [f"{ERROR_PREFIX}{missing}: run folder not found; check the path"]


# --- text output -------------------------------------------------------------


def table_row(key: str, rest: str) -> re.Pattern[str]:
    return re.compile(rf"^ +{re.escape(key)} +{re.escape(TITLES[key])} +{re.escape(rest)}$", re.M)


def test_text_diverged() -> None:
    run = compare("diverge_D")
    assert run.rc == 1 and run.stderr == ""
    out = run.stdout
    assert (
        "VERDICT: diverged: first divergent step 2; groups: D (LOB simulator and unit state)\n"
        in out
    )
    assert table_row("C", "equal").search(out)
    assert table_row("D", "DIVERGED: unit_entry_price").search(out)
    assert table_row("E", "equal").search(out)
    assert table_row("F", "equal").search(out)
    assert "next, D: " in out
    assert "step 2: 33 equal, 1 diverged  diverged: D" in out
    assert "first at [7]: A=101.25 B=101.5; max |A-B| 8 at [12]" in out
    assert "equal (16 elements)" not in out  # equal buffers only with -v


def test_text_multi_group_lists_upstream_first() -> None:
    out = compare("multi_group").stdout
    assert "first divergent step 1; groups: D (LOB simulator and unit state), F (" in out
    assert table_row("C", "equal").search(out)  # C diverges only later
    assert table_row("D", "DIVERGED: unit_lots").search(out)
    assert table_row("F", "DIVERGED: actions").search(out)
    # D's unit_lots received the divergence from F's actions (its input), and
    # actions are left open (policy_logits is not dumped): F's hint only.
    report = compare_runs(*(ROOT / r for r in runs("multi_group")))
    assert report.first_divergent_groups == ("D", "F")
    assert report.next_groups == ("F",)
    roles = {b.name: b.role for b in report.buffers if b.step == 1 and b.diverges}
    assert {n: r.kind for n, r in roles.items() if r is not None} == {
        "unit_lots": "receiver", "actions": "undetermined"
    }  # fmt: skip
    assert "next, F: " in out and "next, D: " not in out


def test_text_identical() -> None:
    run = compare("identical")
    assert run.rc == 0 and run.stderr == ""
    lines = run.stdout.splitlines()
    assert lines[-1] == "VERDICT: identical: 136 buffers over 4 steps are bit-for-bit equal"
    assert [ln for ln in lines if ln.startswith("step")] == ["steps 0-3: 34 buffers equal each"]


@pytest.mark.parametrize("flag", ["-v", "--verbose"])
def test_verbose_lists_every_buffer(flag: str) -> None:
    run = compare("identical", flag)
    assert run.rc == 0
    listed = re.findall(r"^ *(\w+)  (\w+) \[(\w+)\]  equal \((\d+) elements\)$", run.stdout, re.M)
    expected = [
        (group, name, dtype, str(n_elements(name)))
        for _ in range(4)
        for name, group, dtype in sorted(MEMBERS, key=lambda m: (GROUP_ORDER[m[1]], m[0]))
    ]
    assert listed == expected


@pytest.mark.parametrize(
    ("case", "line"),
    [
        ("signed_zero", "F  outcome_ema [f32]  DIVERGED; 1 of 16 elements differs (6.25%) "
         "in 1 range [4, 5); first at [4]: A=-0 B=0; max |A-B| 0 at [4], max 0 ULP "
         "(rounding); 1 pair -0.0 against +0.0; origin (inputs matched: outcome_ema@prev, "
         "rewards)"),
        ("nan_payload", "F  log_pi_old [f32]  DIVERGED; 1 of 16 elements differs (6.25%) "
         "in 1 range [6, 7); first at [6]: A=nan B=nan (bits 0x7fc00000 vs 0x7fc00001); "
         "1 NaN mismatch (large); undetermined (inputs not compared: policy_logits)"),
        ("nonfinite", "F  returns [f32]  DIVERGED; 4 of 16 elements differ (25%) in 1 range "
         "[1, 5); first at [1]: A=inf B=-inf; max |A-B| 2.5 at [3], max 14,680,064 ULP "
         "(large: 1 NaN mismatch, 2 inf mismatches); origin (inputs matched: "
         "rewards, dones)"),
        ("int_extremes", "C  action_prng_state [u32]  DIVERGED; 2 of 16 elements differ "
         "(12.5%) in 1 range [0, 2); first at [0]: A=0 B=4294967295; max |A-B| 4294967295 "
         "at [0]; origin (nothing upstream at step 0)"),
        ("only_in_one", "D  unit_active [u8]  only in run B; origin (inputs matched: actions)"),
        ("only_in_one", "F  ph_mu [f32]  only in run A; origin (inputs matched: ph_mu@prev, "
         "ph_count, rewards)"),
        ("only_in_one", "step 0: 33 equal, 1 only in run B  diverged: D"),
        ("unknown_names", "other  my_debug_buf [u8]  DIVERGED; 1 of 10 elements differs (10%) "
         "in 1 range [4, 5); first at [4]: A=14 B=250; max |A-B| 236 at [4]"),
        ("late_steps", "step 12: 33 equal, 1 diverged  diverged: F"),
        ("length_mismatch", "F  session_pnl [f32]  LENGTH MISMATCH: A has 16 elements, B 20; "
         "common prefix equal; origin (inputs matched: session_pnl@prev, prev_realized_pnl)"),
    ],
)  # fmt: skip
def test_text_buffer_lines(case: str, line: str) -> None:
    run = compare(case)
    assert run.rc == EXPECT[case].rc
    assert [ln.strip() for ln in run.stdout.splitlines() if ln.strip() == line] == [line]


# --- schemas -----------------------------------------------------------------


def test_example_runs() -> None:
    run = fastdiff("compare", "examples/run-a", "examples/run-b", "--format", "json")
    assert run.rc == 1 and run.stderr == ""
    doc = strict_json(run.stdout)
    assert doc["first_divergent_step"] == 2
    assert doc["first_divergent_groups"] == ["F"]
    diverged_at = {
        (b["step"], b["name"]): b["n_diff"] for b in doc["buffers"] if b["status"] != "equal"
    }
    assert diverged_at == {
        (2, "advantages"): 2,
        (2, "rewards"): 1,
        (3, "advantages"): 2,
        (3, "rewards"): 1,
    }


def test_example_schema() -> None:
    run = fastdiff(
        "compare",
        "--schema",
        "examples/schema.toml",
        "examples/run-a",
        "examples/run-b",
        "--format",
        "json",
    )
    assert run.rc == 1 and run.stderr == ""
    doc = strict_json(run.stdout)
    assert doc["schema"] == "example"
    assert doc["first_divergent_groups"] == ["rl"]
    assert [(g["key"], g["status"], g["diverged"]) for g in doc["groups"]] == [
        ("rng", "equal", []),
        ("rl", "diverged", ["advantages", "rewards"]),
        ("other", "equal", []),
    ]
    kinds = {b["name"]: (b["group"], b["dtype"]) for b in doc["buffers"] if b["step"] == 0}
    assert kinds["action_prng_state"] == ("rng", "u32")
    assert kinds["rewards"] == ("rl", "f32")
    assert kinds["actions"] == ("rl", "i32")
    assert kinds["ph_mu"] == ("rl", "f32")  # the glob member
    assert kinds["ph_stat"] == ("rl", "f32")
    assert kinds["unit_lots"] == ("other", "u8")  # in no group: raw bytes
    assert kinds["isv_full"] == ("other", "u8")


def test_example_schema_text_shows_titles_and_hint() -> None:
    run = fastdiff(
        "compare", "--schema", "examples/schema.toml", "examples/run-a", "examples/run-b"
    )
    assert run.rc == 1
    assert "first divergent step 2; groups: rl (rewards and RL outputs)" in run.stdout
    assert re.search(
        r"^ +rl +rewards and RL outputs +DIVERGED: advantages, rewards$", run.stdout, re.M
    )
    assert "next, rl: If rewards differ while the RNG matches" in run.stdout


def test_printed_schema_loads_back(tmp_path: Path) -> None:
    printed = fastdiff("schema", "rl-state")
    assert printed.rc == 0 and printed.stderr == ""
    path = tmp_path / "rl-state.toml"
    path.write_text(printed.stdout)
    run, doc = compare_json("multi_group", "--schema", str(path))
    check_report("multi_group", run, doc)
    assert without_work(doc) == without_work(compare_json("multi_group")[1])


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ('name = "bad"\n\n[[group]]\nkey = "x"\n[group.members]\nfoo = "f33"\n', 6, "f33"),
        ('name = "bad"\n\n[[group]]\nkey = "x"\ntitle = "unterminated\n', 5, "not valid TOML"),
    ],
    ids=["unknown-dtype", "toml-syntax"],
)
def test_bad_schema_file(tmp_path: Path, text: str, line: int, needle: str) -> None:
    path = tmp_path / "schema.toml"
    path.write_text(text)
    run = compare("identical", "--schema", str(path))
    assert run.rc == 2
    assert run.stdout == ""
    (msg,) = run.error_lines
    assert msg.startswith(f"{ERROR_PREFIX}{path}")
    assert needle in msg
    assert f"{path}:{line}:" in msg or f"line {line}," in msg


# --- tolerances --------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "opts", "name", "tolerance"),
    [
        ("diverge_E", ("--atol", "1e-6"), "isv_full", {"atol": 1e-6}),
        ("diverge_E", ("--rtol", "1e-6"), "isv_full", {"rtol": 1e-6}),
        ("diverge_E", ("--ulp", "1"), "isv_full", {"ulp": 1}),
        ("nan_payload", ("--nan-equal",), "log_pi_old", {"nan_equal": True}),
        # an integer buffer: only where the tolerance is asked for integers too
        (
            "multi_group",
            ("--ulp", "4294967294", "--int-tolerance"),
            "action_prng_state",
            {"ulp": 4294967294, "int_tolerance": True},
        ),
    ],
)
def test_tolerance_makes_small_differences_within(
    case: str, opts: tuple[str, ...], name: str, tolerance: dict[str, Any]
) -> None:
    run, doc = compare_json(case, *opts)
    assert run.rc == 0 and run.stderr == ""
    assert doc["verdict"] == "identical"
    assert doc["first_divergent_step"] is None
    exact = {"atol": None, "rtol": None, "ulp": None, "nan_equal": False, "rounding_ulp": 16,
             "int_tolerance": False}  # fmt: skip
    assert doc["tolerance"] == exact | tolerance
    close = [b for b in doc["buffers"] if b["status"] != "equal"]
    assert close and all(b["status"] == "within_tolerance" for b in close)
    assert all(b["n_diff"] == 0 and b["n_within_tolerance"] >= 1 for b in close)
    assert name in {b["name"] for b in close}


def test_tolerance_details_are_kept() -> None:
    _, doc = compare_json("diverge_E", "--ulp", "1")
    b = next(b for b in doc["buffers"] if b["step"] == 2 and b["name"] == "isv_full")
    assert b == b | {
        "status": "within_tolerance",
        "n_diff": 0,
        "n_within_tolerance": 1,
        "first_index": 725,
        "a": 1.0,
        "b": 1 + 2**-23,
        "max_abs_delta": 2**-23,
        "max_abs_delta_index": 725,
    }


@pytest.mark.parametrize(
    ("case", "opts"),
    [
        ("diverge_E", ("--ulp", "0")),
        ("diverge_E", ("--atol", "1e-8")),
        ("nonfinite", ("--nan-equal", "--atol", "10")),  # NaN vs number, inf: never within
        ("int_extremes", ("--ulp", "1")),
    ],
)
def test_tolerance_too_tight_still_diverges(case: str, opts: tuple[str, ...]) -> None:
    run, doc = compare_json(case, *opts)
    assert run.rc == 1
    assert doc["verdict"] == "diverged"


def test_int_extremes_with_ulp_splits_counts() -> None:
    _, doc = compare_json("int_extremes", "--ulp", "1", "--int-tolerance")
    got = {b["name"]: b for b in doc["buffers"] if b["status"] != "equal"}
    for name in ("action_prng_state", "steps_since_done"):
        assert got[name]["status"] == "diverged"
        assert (got[name]["n_diff"], got[name]["n_within_tolerance"]) == (1, 1)
        assert got[name]["max_abs_delta"] == 4294967295


# --- executors, engines ------------------------------------------------------


@pytest.mark.parametrize("executor", ["serial", "thread", "process"])
@pytest.mark.parametrize("engine", ["numpy", "numba"])
def test_executors_and_engines_agree(executor: str, engine: str) -> None:
    case = "multi_group"
    _, base = compare_json(case)
    run, doc = compare_json(case, "--executor", executor, "--engine", engine)
    check_report(case, run, doc)
    assert without_work(doc) == without_work(base)
    assert doc["work"]["executor"] == executor
    assert doc["work"]["engine"] == engine
    assert doc["work"]["pairs_scanned"] == 7


@pytest.mark.parametrize(
    "case", ["nonfinite", "int_extremes", "signed_zero", "nan_payload", "unknown_names"]
)
def test_numba_engine_agrees(case: str) -> None:
    _, base = compare_json(case, "--engine", "numpy")
    run, doc = compare_json(case, "--engine", "numba")
    check_report(case, run, doc)
    assert without_work(doc) == without_work(base)


# --- promises around a comparison --------------------------------------------


def snapshot(folder: Path) -> dict[str, tuple[int, int, str]]:
    out = {}
    for p in sorted(folder.rglob("*")):
        st = p.lstat()
        digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
        out[p.relative_to(folder).as_posix()] = (st.st_size, st.st_mtime_ns, digest)
    return out


@pytest.mark.parametrize(
    ("case", "opts"),
    [
        ("diverge_D", ("--format", "json", "--engine", "numba", "--executor", "process")),
        ("unknown_names", ("-v", "--executor", "thread")),
        ("malformed", ()),
    ],
)
def test_run_folders_are_left_unchanged(case: str, opts: tuple[str, ...]) -> None:
    folder = ROOT / FIXTURES / case
    before = snapshot(folder)
    run = subprocess.run(
        [sys.executable, "-m", "fastdiff", "compare", *runs(case), *opts],
        cwd=ROOT,
        capture_output=True,
    )
    assert run.returncode == EXPECT[case].rc
    assert snapshot(folder) == before


MODULES_AFTER = """
import sys
from fastdiff.cli import main
rc = main(["compare", {a!r}, {b!r}])
print(rc, sorted(m for m in sys.modules if m.split(".")[0] in ("numpy", "numba")))
"""


def modules_after_compare(case: str) -> tuple[str, str]:
    a, b = runs(case)
    p = subprocess.run(
        [sys.executable, "-c", MODULES_AFTER.format(a=a, b=b)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert p.stderr == ""
    rc, _, modules = p.stdout.splitlines()[-1].partition(" ")
    return rc, modules


@pytest.mark.parametrize("case", ["identical", "identical_nans"])
def test_identical_imports_neither_numpy_nor_numba(case: str) -> None:
    assert modules_after_compare(case) == ("0", "[]")


def test_small_difference_does_not_import_numba() -> None:
    rc, modules = modules_after_compare("diverge_C")
    assert rc == "1"
    assert "'numba" not in modules


@pytest.mark.parametrize(
    ("case", "opts"),
    [("identical", ("-v",)), ("late_steps", ("-v",)), ("diverge_C", ("--format", "json"))],
)
def test_closed_pipe_ends_quietly(case: str, opts: tuple[str, ...]) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        p = subprocess.run(
            [sys.executable, "-m", "fastdiff", "compare", *runs(case), *opts],
            cwd=ROOT,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    finally:
        os.close(write_end)
    assert p.stderr == ""
    assert p.returncode == EXPECT[case].rc


def test_head_reads_one_line() -> None:
    cmd = f"{sys.executable} -m fastdiff compare {' '.join(runs('late_steps'))} -v | head -n 1"
    p = subprocess.run(cmd, shell=True, cwd=ROOT, capture_output=True, text=True)
    assert p.stdout == f"A: {FIXTURES}/late_steps/a\n"
    assert p.stderr == ""
