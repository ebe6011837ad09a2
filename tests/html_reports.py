"""Reports built in memory for the HTML report's tests: a long run pair
(2,000 steps x 40 buffers whose divergence is born in one buffer and spreads
through a declared dataflow, growing from rounding-size to large), and one
whose every name, title, path and message is hostile markup.

Imported as ``html_reports`` (pytest puts this folder on ``sys.path``).
"""

from __future__ import annotations

from fastdiff.model.results import BufferResult, Problem, Report, Skipped
from fastdiff.schema import Group, Member, Schema
from fastdiff.stages.verdict import build_report

GROUPS = "ABCDEFGH"
PER_GROUP = 5
N = 4096  # elements of every buffer

#: Where the long report's divergence is born, and when.
BORN_GROUP, BORN_NAME, BORN_STEP = "C", "c2", 1000


def long_schema(groups: str = GROUPS, per_group: int = PER_GROUP) -> Schema:
    """Groups of ``per_group`` f32 buffers; each buffer reads the one before
    it (the first of a group, the last of the group before) and its own
    previous state; the very first is a source."""
    out = []
    prev: str | None = None
    for g in groups:
        members = []
        for j in range(per_group):
            name = f"{g.lower()}{j}"
            inputs = () if prev is None else (prev, f"{name}@prev")
            members.append(Member(name, "f32", inputs=inputs))
            prev = name
        out.append(Group(g, f"stage {g}", f"Look at the kernels of stage {g}.", tuple(members)))
    return Schema("long", tuple(out))


def _diverged(step: int, name: str, group: str, age: int) -> BufferResult:
    """A buffer ``age`` steps after the divergence reached it: rounding-size
    at first, then growing."""
    ulp = min(1 << min(age, 40), 1 << 40)
    delta = 1.1920929e-07 * ulp
    magnitude = "rounding" if ulp <= 16 else "large"
    n_diff = min(N, 3 + 7 * age)
    return BufferResult(
        step, name, group, "f32", "diverged", N, N,
        f"/runs/a/step_{step}_{name}.bin", f"/runs/b/step_{step}_{name}.bin",
        n_diff=n_diff, n_within_tolerance=0, first_index=17, a=1.0, b=1.0 + delta,
        a_bits="0x3f800000", b_bits="0x3f800001", max_abs_delta=delta,
        max_abs_delta_index=17 + age % 50, n_nan_mismatch=0, n_inf_mismatch=0,
        diff_fraction=n_diff / N, ranges=((17, 17 + min(n_diff, 20)),), n_ranges=1,
        max_rel_delta=delta, max_rel_delta_index=17, max_ulp=ulp,
        ulp_log2_histogram=(1,) * min(age + 1, 40), n_signed_zero=0,
        max_ulp_of_scale=float(ulp), magnitude=magnitude, cancellation=False,
    )  # fmt: skip


def _equal(step: int, name: str, group: str) -> BufferResult:
    return BufferResult(
        step, name, group, "f32", "equal", N, N,
        f"/runs/a/step_{step}_{name}.bin", f"/runs/b/step_{step}_{name}.bin",
        n_diff=0, n_within_tolerance=0, n_nan_mismatch=0, n_inf_mismatch=0,
    )  # fmt: skip


def long_buffers(
    steps: int, schema: Schema, born: tuple[str, str, int] = (BORN_GROUP, BORN_NAME, BORN_STEP)
) -> list[BufferResult]:
    """Every buffer at every step: equal until the divergence is born at
    ``born`` (group, name, step); then it reaches one more buffer downstream
    each step, and each grows from rounding-size to large as it ages. A
    buffer is missing from run B once (step 1500), one is unreadable once
    (step 1700)."""
    names = [(g.key, m.pattern) for g in schema.groups for m in g.members]
    start = names.index((born[0], born[1]))
    out = []
    for step in range(steps):
        for k, (group, name) in enumerate(names):
            reached = born[2] + (k - start) if k >= start else None
            if step == 1500 and k == len(names) - 1:
                out.append(BufferResult(step, name, group, "f32", "only_in_b", None, N,
                                        None, f"/runs/b/step_{step}_{name}.bin"))  # fmt: skip
            elif step == 1700 and k == 1:
                out.append(BufferResult(step, name, group, "f32", "error", None, None,
                                        f"/runs/a/step_{step}_{name}.bin",
                                        f"/runs/b/step_{step}_{name}.bin",
                                        message="cannot read (Permission denied)"))  # fmt: skip
            elif reached is not None and step >= reached:
                out.append(_diverged(step, name, group, step - reached))
            else:
                out.append(_equal(step, name, group))
    return out


def long_report(steps: int = 2000, groups: str = GROUPS, per_group: int = PER_GROUP) -> Report:
    """The report of 2,000 steps x 40 buffers (8 groups of 5)."""
    schema = long_schema(groups, per_group)
    return build_report("/runs/a", "/runs/b", schema, long_buffers(steps, schema), [], [])


#: Markup in every name: none of it may become an element, an attribute or script.
HOSTILE = '<img src=x onerror="window.pwned=1">"\'&amp;</script><script>window.pwned=2</script>'


def hostile_report() -> Report:
    """A run pair whose run paths, schema, group key and title, hint,
    buffer names, input names, paths, messages, skipped entries and errors
    all hold ``HOSTILE``, and a name with a newline, a bidi override and a
    byte that is not UTF-8."""
    evil = HOSTILE
    weird = "w\nx\u202ey\udcff"
    src, mid = f"src{evil}", f"mid{evil}"
    schema = Schema(
        f"schema{evil}",
        (
            Group(
                f"K{evil}", f"title{evil}", f"hint{evil}",
                (Member(src, "f32", inputs=()), Member(mid, "f32", inputs=(src, f"gone{evil}")),
                 Member(weird, "f32", inputs=(mid,))),
            ),
        ),
    )  # fmt: skip
    buffers = []
    for step in range(3):
        for name in (src, mid, weird):
            if step >= 1 and name != mid:
                buffers.append(_diverged(step, name, f"K{evil}", step - 1).replace(
                    path_a=f"/a/{evil}", path_b=f"/b/{evil}"))  # fmt: skip
            else:
                buffers.append(_equal(step, name, f"K{evil}"))
    buffers.append(BufferResult(2, f"bad{evil}", "other", "u8", "error", message=f"message{evil}"))
    return build_report(
        f"/runs/a{evil}", f"/runs/b{evil}", schema, buffers,
        [Skipped(f"skipped{evil}", f"reason{evil}")], [Problem(f"/p{evil}", f"error{evil}")],
    )  # fmt: skip
