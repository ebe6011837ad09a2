"""Determinism gates for test suites: ``assert_runs_equal``.

::

    from fastdiff.testing import assert_runs_equal

    def test_training_is_deterministic(tmp_path):
        train(seed=0, run=tmp_path / "a")
        train(seed=0, run=tmp_path / "b")
        assert_runs_equal(tmp_path / "a", tmp_path / "b")

The message on failure is in the style of ``torch.testing.assert_close``:
the first divergent step and buffer, how many elements differ and what
share, the greatest absolute and relative differences with their indices,
the ULP distance, and what else diverged. Importing this module imports
nothing of the comparison (numpy included): that happens at the first call.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import os

    from .model.results import BufferResult, Report
    from .schema import Schema

__all__ = ["assert_runs_equal", "format_mismatch"]

#: Other diverged buffers of the first divergent step named in the message.
_SHOWN = 5


def assert_runs_equal(
    run_a: str | os.PathLike[str],
    run_b: str | os.PathLike[str],
    *,
    schema: str | os.PathLike[str] | Schema | None = None,
    atol: float | None = None,
    rtol: float | None = None,
    ulp: int | None = None,
    nan_equal: bool = False,
    int_tolerance: bool = False,
) -> None:
    """Pass when runs ``run_a`` and ``run_b`` (folders or manifests) are equal,
    else raise AssertionError saying where and how they first differ.

    Equal means bit for bit, unless a tolerance is given: ``atol`` and
    ``rtol`` (``|a-b| <= atol + rtol*|b|``), ``ulp`` (units in the last
    place), ``nan_equal`` (any NaN equals any NaN), as ``fastdiff compare``'s
    options: a tolerance given as 0 compares values, so -0.0 equals +0.0 (as
    ``torch.testing.assert_close(atol=0, rtol=0)`` has it); none given
    (None) compares bits, so they differ, as two NaN payloads do. A
    tolerance applies to floating-point buffers; integer and bool buffers
    stay exact unless ``int_tolerance`` (or their schema member) asks.
    ``schema``: a preset name, a TOML file or a ``Schema`` (default: as
    ``fastdiff compare`` picks). Runs that cannot be compared (a folder
    missing, a damaged file) raise AssertionError too, naming each problem.
    pytest shows the failure at the caller's line: this function's frame is
    hidden from its traceback.
    """
    __tracebackhide__ = True  # pytest: the failure is the caller's line, not this one
    from .compare import compare_runs
    from .options import CompareOptions

    options = CompareOptions(
        schema=schema,
        atol=None if atol is None else float(atol),
        rtol=None if rtol is None else float(rtol),
        ulp=None if ulp is None else int(ulp),
        nan_equal=nan_equal,
        int_tolerance=int_tolerance,
    )
    report = compare_runs(run_a, run_b, options)
    if report.verdict != "identical":
        raise AssertionError(format_mismatch(report))


def _number(x: object) -> str:
    if isinstance(x, float):
        return f"{x:.6g}"
    return f"{x:,}" if isinstance(x, int) else str(x)


def _index(flat: int | None, shape: tuple[int, ...] | None) -> str:
    """A flat element index in the buffer's shape: ``(3, 7)``."""
    if flat is None:
        return "?"
    if not shape:
        return f"({flat},)"
    out = []
    for d in reversed(shape):
        if d <= 0:
            return f"({flat},)"
        out.append(flat % d)
        flat //= d
    return "(" + ", ".join(map(str, reversed(out))) + ("," if len(out) == 1 else "") + ")"


def _allowed(report: Report) -> dict[str, str]:
    tol = report.tolerance
    return {
        "abs": _number(tol.get("atol") or 0),
        "rel": _number(tol.get("rtol") or 0),
        "ulp": _number(tol.get("ulp") or 0),
    }


def _buffer_lines(b: BufferResult, report: Report) -> list[str]:
    """What differs in buffer ``b``, a line per fact, torch.testing's words."""
    shape = b.shape
    where = f", shape {tuple(shape)}" if shape else ""
    lines = [f"Buffer {b.name!r} at step {b.step} (group {b.group}, {b.dtype}{where}):"]
    if b.status in ("only_in_a", "only_in_b"):
        lines.append(f"  in run {'A' if b.status == 'only_in_a' else 'B'} only")
        return lines
    if b.status == "length_mismatch":
        n = b.n_elements_a or 0
        lines.append(f"  {n:,} {'element' if n == 1 else 'elements'} in A, {b.n_elements_b:,} in B")
    if b.n_diff is None:
        from .render.hints import buffer_message

        lines.append(f"  {buffer_message(b) or 'its bytes differ'}")
        chunk = b.first_divergent_chunk
        if chunk is not None:
            lines.append(f"  first differing chunk: bytes {chunk[0]:,}..{chunk[1]:,}")
        return lines
    allowed = _allowed(report)
    common = min(b.n_elements_a or 0, b.n_elements_b or 0)
    share = f" ({b.n_diff / common:.1%})" if common else ""
    lines.append(f"  Mismatched elements: {b.n_diff:,} / {common:,}{share}")
    if b.max_abs_delta is not None:
        lines.append(
            f"  Greatest absolute difference: {_number(b.max_abs_delta)} at index "
            f"{_index(b.max_abs_delta_index, shape)} (up to {allowed['abs']} allowed)"
        )
    if b.max_rel_delta is not None:
        lines.append(
            f"  Greatest relative difference: {_number(b.max_rel_delta)} at index "
            f"{_index(b.max_rel_delta_index, shape)} (up to {allowed['rel']} allowed)"
        )
    if b.max_ulp is not None:
        lines.append(f"  Greatest ULP distance: {b.max_ulp:,} (up to {allowed['ulp']} allowed)")
    if b.first_index is not None:
        from .render.text import format_value  # the digits that tell the dtype's values apart

        lines.append(
            f"  First difference at index {_index(b.first_index, shape)}: "
            f"A={format_value(b.a, b.dtype)} ({b.a_bits}), "
            f"B={format_value(b.b, b.dtype)} ({b.b_bits})"
        )
    nan = b.n_nan_mismatch or 0
    inf = b.n_inf_mismatch or 0
    if nan or inf:
        lines.append(f"  with a NaN: {nan:,} of them; with an infinity: {inf:,}")
    role = _role_line(b)
    if role:
        lines.append(role)
    return lines


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _role_line(b: BufferResult) -> str | None:
    """Where the buffer stands in the dataflow its schema declares, if it does."""
    r = b.role
    if r is None:
        return None
    if r.kind == "origin":
        inputs = ", ".join(r.inputs) if r.inputs else None
        why = f"its inputs {inputs} matched" if inputs else "it declares no inputs (a source)"
        return f"  Origin: the divergence is born here ({why})"
    if r.kind == "receiver":
        return f"  Receiver: its inputs {', '.join(r.differing_inputs)} differ already"
    return f"  Undetermined: inputs {', '.join(r.undumped_inputs)} could not be compared"


def format_mismatch(report: Report) -> str:
    """The message of ``assert_runs_equal`` for a report that is not identical."""
    from .model.results import DIVERGENT
    from .textkit.fmt import first_few

    head = f"Runs are not equal: {report.run_a} (A) and {report.run_b} (B)"
    lines: list[str] = []
    step = report.first_divergent_step
    divergent = [b for b in report.buffers if b.status in DIVERGENT]
    if step is not None:
        at = [b for b in divergent if b.step == step]
        lines.append(f"{head} first diverge at step {step}.")
        if report.origins is not None:
            from .render.text import born_lines

            lines += [_sentence(line.strip()) for line in born_lines(report)]
        if report.structure is not None and report.structure.parted:
            from .render.text import structure_lines

            lines += [_sentence(line.strip()) for line in structure_lines(report)]
        lines.append("")
        # The origin first, where one is known at that step: the kernel to fix.
        first = next((b for b in at if b.role is not None and b.role.kind == "origin"), at[0])
        at = [first, *(b for b in at if b is not first)]
        lines += _buffer_lines(at[0], report)
        others = [b.name for b in at[1:]]
        if others:
            shown = first_few(others, _SHOWN)
            lines.append(f"Also diverged at step {step}: {shown}.")
        later = sorted({b.step for b in divergent if b.step != step})
        if later:
            n = sum(b.step != step for b in divergent)
            what = f"{n:,} {'buffer' if n == 1 else 'buffers'}"
            steps = (f"step {later[0]}" if len(later) == 1
                     else f"{len(later):,} steps, {later[0]} to {later[-1]}")  # fmt: skip
            lines.append(f"Diverged later: {what} at {steps}.")
        n_equal = sum(b.status in ("equal", "within_tolerance") for b in report.buffers)
        lines.append(f"Equal: {n_equal:,} of {len(report.buffers):,} buffers.")
    if report.errors:
        if not lines:
            lines.append(f"{head} could not be compared:")
        else:
            lines.append("And these could not be compared:")
        lines += [f"  {e.path}: {e.message}" for e in report.errors]
    from .render.notes import note_text

    lines += [note_text(n) for n in report.notes]
    return "\n".join(lines)
