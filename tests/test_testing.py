"""``fastdiff.testing.assert_runs_equal``: the determinism gate for test suites."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import REPO

from fastdiff import CompareOptions, Recorder, compare_runs
from fastdiff.testing import assert_runs_equal


def run(folder: Path, values: dict[tuple[int, str], np.ndarray]) -> Path:
    with Recorder(folder) as rec:
        for (step, name), array in values.items():
            rec.dump(step, name, array)
    return folder


def base() -> dict[tuple[int, str], np.ndarray]:
    return {
        (s, n): np.arange(24, dtype=np.float32).reshape(4, 6) * (s + 1)
        for s in range(5)
        for n in ("loss", "weights")
    }


def test_equal_runs_pass(tmp_path: Path) -> None:
    assert_runs_equal(run(tmp_path / "a", base()), run(tmp_path / "b", base()))


def test_the_message_names_the_first_divergence_as_assert_close_would(tmp_path: Path) -> None:
    changed = base()
    for s in (2, 3, 4):
        w = changed[(s, "weights")].copy()
        w[1, 2] += 0.5
        w[3, 5] = -7.0
        changed[(s, "weights")] = w
    changed[(2, "loss")] = changed[(2, "loss")] + 1
    a, b = run(tmp_path / "a", base()), run(tmp_path / "b", changed)
    with pytest.raises(AssertionError) as info:
        assert_runs_equal(a, b)
    lines = str(info.value).splitlines()
    assert lines[0] == f"Runs are not equal: {a} (A) and {b} (B) first diverge at step 2."
    assert lines[2:9] == [
        "Buffer 'loss' at step 2 (group loss, f32, shape (4, 6)):",
        "  Mismatched elements: 24 / 24 (100.0%)",
        "  Greatest absolute difference: 1 at index (0, 0) (up to 0 allowed)",
        "  Greatest relative difference: 1 at index (0, 0) (up to 0 allowed)",
        "  Greatest ULP distance: 1,065,353,216 (up to 0 allowed)",
        "  First difference at index (0, 0): A=0 (0x00000000), B=1 (0x3f800000)",
        "Also diverged at step 2: weights.",
    ]
    assert lines[9:] == ["Diverged later: 2 buffers at 2 steps, 3 to 4.", "Equal: 6 of 10 buffers."]


def test_a_single_buffer_message_gives_indices_in_its_shape(tmp_path: Path) -> None:
    changed = base()
    w = changed[(1, "weights")].copy()
    w[1, 2] += 0.5
    w[3, 5] = -7.0
    changed[(1, "weights")] = w
    a, b = run(tmp_path / "a", base()), run(tmp_path / "b", changed)
    with pytest.raises(AssertionError):
        assert_runs_equal(a, b, atol=1e-9)
    # what the message is made of (its words: the golden tests above and below)
    report = compare_runs(a, b, CompareOptions(atol=1e-9))
    (w,) = [x for x in report.buffers if x.status != "equal"]
    assert (w.step, w.name, w.group, w.dtype, w.shape) == (1, "weights", "weights", "f32", (4, 6))
    assert (w.n_diff, w.n_elements_a) == (2, 24)
    assert (w.max_abs_delta, w.max_abs_delta_index_nd) == (53, (3, 5))
    assert w.max_rel_delta == pytest.approx(53 / 7) and w.max_rel_delta_index == 3 * 6 + 5
    assert (w.first_index_nd, w.a, w.b) == ((1, 2), 16, 16.5)
    assert (w.a_bits, w.b_bits) == ("0x41800000", "0x41840000")
    assert report.first_divergent_step == 1
    assert [x.step for x in report.buffers if x.status != "equal"] == [1]  # nothing later


def test_tolerances_and_nan_equal(tmp_path: Path) -> None:
    near = base()
    loss = near[(0, "loss")].copy()
    loss[2, 4] = np.nextafter(loss[2, 4], np.float32(np.inf))
    near[(0, "loss")] = loss
    a, b = run(tmp_path / "a", base()), run(tmp_path / "b", near)
    with pytest.raises(AssertionError):
        assert_runs_equal(a, b)
    (x,) = [x for x in compare_runs(a, b).buffers if x.status != "equal"]
    assert (x.name, x.n_diff, x.max_ulp) == ("loss", 1, 1)
    assert_runs_equal(a, b, ulp=1)
    assert_runs_equal(a, b, atol=1e-3)
    assert_runs_equal(a, b, rtol=1e-6)
    nan_a = {(0, "x"): np.array([np.nan, 1], np.float32)}
    payload = np.array([np.nan, 1], np.float32)
    payload.view(np.uint32)[0] |= 1
    na, nb = run(tmp_path / "na", nan_a), run(tmp_path / "nb", {(0, "x"): payload})
    with pytest.raises(AssertionError):
        assert_runs_equal(na, nb)
    (x,) = compare_runs(na, nb).buffers
    assert (x.status, x.n_diff, x.n_nan_mismatch) == ("diverged", 1, 1)
    assert_runs_equal(na, nb, nan_equal=True)


def test_a_signed_zero_differs_without_a_tolerance(tmp_path: Path) -> None:
    a = run(tmp_path / "a", {(0, "x"): np.array([0.0], np.float64)})
    b = run(tmp_path / "b", {(0, "x"): np.array([-0.0], np.float64)})
    with pytest.raises(AssertionError):
        assert_runs_equal(a, b)
    (x,) = compare_runs(a, b).buffers
    assert (x.status, x.n_diff, x.n_elements_a, x.n_signed_zero) == ("diverged", 1, 1, 1)
    assert_runs_equal(a, b, atol=0)  # a tolerance compares values: -0.0 == +0.0


def test_runs_that_cannot_be_compared_fail_naming_the_problem(tmp_path: Path) -> None:
    a = run(tmp_path / "a", base())
    with pytest.raises(AssertionError) as info:
        assert_runs_equal(a, tmp_path / "missing")
    assert str(info.value).splitlines() == [
        f"Runs are not equal: {a} (A) and {tmp_path / 'missing'} (B) could not be compared:",
        f"  {tmp_path / 'missing'}: run folder not found; check the path",
    ]


def test_a_schema_by_name_or_path(tmp_path: Path) -> None:
    a, b = run(tmp_path / "a", base()), run(tmp_path / "b", base())
    assert_runs_equal(a, b, schema="raw")
    schema = tmp_path / "s.toml"
    schema.write_text('name = "mine"\n[[group]]\nkey = "L"\ntitle = "loss"\n'
                      '[group.members]\nloss = "f32"\n')  # fmt: skip
    assert_runs_equal(a, b, schema=schema)
    with pytest.raises(Exception, match="no such preset or file"):
        assert_runs_equal(a, b, schema="nope")


def test_importing_it_imports_no_numpy() -> None:
    code = "import sys, fastdiff.testing, fastdiff.recorder; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


def test_the_readme_pytest_gate_runs(tmp_path: Path) -> None:
    """The docs' determinism gate, run by pytest as a user would."""
    section = (REPO / "docs" / "tutorials" / "ci-gate.md").read_text(encoding="utf-8")
    code = section[section.index("```python\n") + 10 : section.index("```\n", 1)]
    (tmp_path / "test_gate.py").write_text(code)
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 passed" in r.stdout


GATE = """\
import numpy as np
from fastdiff import CompareOptions, Recorder, compare_runs
from fastdiff.testing import assert_runs_equal


def test_gate(tmp_path):
    for run, value in (("a", 0.0), ("b", 1.0)):
        with Recorder(tmp_path / run) as rec:
            rec.dump(0, "loss", np.full(4, value, dtype=np.float32))
    assert_runs_equal(tmp_path / "a", tmp_path / "b")
"""


@pytest.mark.parametrize("tb", ["long", "short", "auto"])
def test_a_failing_gate_shows_the_test_not_fastdiff_frames(tmp_path: Path, tb: str) -> None:
    """pytest's traceback of a failed gate ends at the test's own line: the
    frame of assert_runs_equal is hidden (``__tracebackhide__``), its message kept."""
    (tmp_path / "test_gate.py").write_text(GATE)
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--tb={tb}",
         str(tmp_path / "test_gate.py")],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Runs are not equal" in r.stdout and "1 failed" in r.stdout, r.stdout
    assert "assert_runs_equal(tmp_path" in r.stdout, r.stdout  # the test's line
    assert "testing.py" not in r.stdout, r.stdout  # fastdiff's frame is not shown
    assert "format_mismatch" not in r.stdout, r.stdout


def test_the_readme_message_is_what_it_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (REPO / "docs" / "tutorials" / "ci-gate.md").read_text(encoding="utf-8")
    start = text.index("```\nRuns are not equal: runs/a (A)") + 4
    shown = text[start : text.index("```", start)].rstrip("\n")
    monkeypatch.chdir(tmp_path)
    for side in "ab":
        with Recorder(f"runs/{side}") as rec:
            for step in range(5):
                w = np.arange(24, dtype=np.float32).reshape(4, 6) * (step + 1)
                if side == "b" and step >= 1:
                    w[1, 2] += 0.5
                    w[3, 5] = -7
                rec.dump(step, "weights", w)
                rec.dump(step, "weights_ema", w * 0.5)
    with pytest.raises(AssertionError) as info:
        assert_runs_equal("runs/a", "runs/b")
    assert str(info.value) == shown


def test_the_message_says_where_the_divergence_was_born() -> None:
    """With a schema that declares inputs, the message names the origin
    first (the kernel to fix) and what merely received the divergence."""
    from fastdiff.testing import assert_runs_equal

    ex = Path(__file__).resolve().parents[1] / "examples" / "origins"
    with pytest.raises(AssertionError) as info:
        assert_runs_equal(ex / "run-a", ex / "run-b", schema=str(ex / "schema.toml"))
    lines = str(info.value).splitlines()
    # the words, once: the born-in line (the rest of it is the report's finding)
    assert lines[1] == (
        "Born in: F rewards at step 3 (inputs actions, unit_entry_price, prev_realized_pnl "
        "matched); received: advantages, returns"
    )
    report = compare_runs(
        ex / "run-a", ex / "run-b", CompareOptions(schema=str(ex / "schema.toml"))
    )
    born = report.born
    assert born is not None and born.step == 3
    assert [(o.group, o.name, o.step) for o in born.origins] == [("F", "rewards", 3)]
    assert born.received == ("advantages", "returns")
    assert [(u.group, u.name, u.step) for u in born.undetermined] == [("F", "entropy_bonus", 3)]
    roles = {b.name: b.role for b in report.buffers if b.step == 3 and b.role is not None}
    assert roles["rewards"].kind == "origin"
    assert roles["rewards"].inputs == ("actions", "unit_entry_price", "prev_realized_pnl")
    assert (roles["entropy_bonus"].kind, roles["entropy_bonus"].undumped_inputs) == (
        "undetermined", ("entropy_coef",)
    )  # fmt: skip
    # Without declared inputs (the same runs as plain dumps): no origins, no roles.
    with pytest.raises(AssertionError):
        assert_runs_equal(ex / "run-a", ex / "run-b", schema="raw")
    raw = compare_runs(ex / "run-a", ex / "run-b", CompareOptions(schema="raw"))
    assert raw.born is None and raw.origins is None
    assert all(b.role is None for b in raw.buffers)


def test_values_one_ulp_apart_print_apart(tmp_path: Path) -> None:
    # 0.12335 in f32 and its neighbour: 6 digits would print both as 0.12335.
    x = np.full(4, 0.12335, dtype=np.float32)
    y = x.copy()
    y[2] = np.nextafter(y[2], np.float32(1))
    a, b = run(tmp_path / "a", {(0, "w"): x}), run(tmp_path / "b", {(0, "w"): y})
    with pytest.raises(AssertionError) as info:
        assert_runs_equal(a, b)
    line = next(x for x in str(info.value).splitlines() if "First difference" in x)
    bits = [f"0x{int(v.view(np.uint32)):08x}" for v in (x[2], y[2])]
    prefix = "  First difference at index (2,): A="
    assert line.startswith(prefix), line
    shown_a, rest = line[len(prefix) :].split(f" ({bits[0]}), B=")
    shown_b = rest.removesuffix(f" ({bits[1]})")
    assert shown_a != shown_b  # told apart, and each reads back as its value
    assert np.float32(shown_a) == x[2] and np.float32(shown_b) == y[2]
