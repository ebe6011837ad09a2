"""The roles against a plain reference (``naive.naive_roles``): random
pipelines that declare their inputs (same step, ``@prev``, inputs never
dumped, sources, buffers without inputs), computed step by step the way a
trainer computes them, with kernels made nondeterministic at random points
of run B (the change flows downstream, as in a real run), dumped at random
steps (gaps, a first step that is not 0), and with buffers deleted from one
run or both, truncated or made malformed. Every role, its inputs and
``prev_step``, and the origins in order, must be the reference's, through
the library API (``compare_runs``) on real files.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from naive import naive_roles

from fastdiff import CompareOptions, compare_runs
from fastdiff.render.json import report_dict
from fastdiff.schemafile import load_schema

HIDDEN = "hidden"  # an input no run dumps
SIZE = 4  # u32 elements


@st.composite
def pipelines(draw: st.DrawFn) -> dict:
    n = draw(st.integers(2, 6))
    names = [f"b{i}" for i in range(n)]
    inputs: dict[str, list[str] | None] = {}
    for i, name in enumerate(names):
        choices = names[:i] + [f"{m}@prev" for m in names] + [HIDDEN]
        inputs[name] = draw(st.none() | st.lists(st.sampled_from(choices), unique=True, max_size=4))
    last = draw(st.integers(0, 7))
    held = draw(st.lists(st.integers(0, last), min_size=1, max_size=6, unique=True))
    points = st.tuples(st.integers(0, last), st.sampled_from([*names, HIDDEN]))
    nondeterministic = draw(st.sets(points, max_size=4))
    edits = draw(
        st.lists(
            st.tuples(st.sampled_from(sorted(held)), st.sampled_from(names),
                      st.sampled_from(["only_a", "only_b", "gone", "short", "odd"])),
            max_size=3,
        )
    )  # fmt: skip
    split = draw(st.integers(0, n))  # the first `split` buffers form group G1, the rest G2
    return {
        "names": names, "inputs": inputs, "last": last, "held": sorted(held),
        "nondeterministic": nondeterministic, "edits": edits, "split": split,
    }  # fmt: skip


def _value(*parts: object) -> bytes:
    return hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()


def compute(p: dict, run: str) -> dict[tuple[int, str], bytes]:
    """Every buffer at every step, each from its declared inputs (one without
    declares none: it reads every buffer before it); run B's kernels add
    noise at the nondeterministic points. Only the held steps are kept."""
    values: dict[tuple[int, str], bytes] = {}
    for step in range(p["last"] + 1):
        noise = (run == "b") and (step, HIDDEN) in p["nondeterministic"]
        values[(step, HIDDEN)] = _value(HIDDEN, step, noise)
        for i, name in enumerate(p["names"]):
            declared = p["inputs"][name]
            reads = declared if declared is not None else p["names"][:i]
            seen = []
            for written in reads:
                at_prev = written.endswith("@prev")
                base = written.removesuffix("@prev")
                seen.append(values.get((step - 1, base), b"") if at_prev else values[(step, base)])
            noise = (run == "b") and (step, name) in p["nondeterministic"]
            values[(step, name)] = _value(name, step, seen, noise)
    return {k: v for k, v in values.items() if k[0] in p["held"] and k[1] != HIDDEN}


def schema_text(p: dict) -> str:
    lines = ['name = "random"', 'default_dtype = "u32"']
    for key, members in (("G1", p["names"][: p["split"]]), ("G2", p["names"][p["split"] :])):
        lines += ["[[group]]", f'key = "{key}"', "[group.members]"]
        for name in members:
            declared = p["inputs"][name]
            if declared is None:
                lines.append(f'{name} = "u32"')
            else:
                listed = ", ".join(f'"{w}"' for w in declared)
                lines.append(f'{name} = {{ dtype = "u32", inputs = [{listed}] }}')
    return "\n".join(lines) + "\n"


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pipelines())
def test_every_role_is_the_plain_references(p: dict) -> None:
    a, b = compute(p, "a"), compute(p, "b")
    for step, name, edit in p["edits"]:
        key = (step, name)
        if edit in ("only_a", "gone"):
            b.pop(key, None)
        if edit in ("only_b", "gone"):
            a.pop(key, None)
        if edit == "short" and key in b:
            b[key] = b[key][:SIZE]  # one element fewer: a length mismatch
        if edit == "odd" and key in b:
            b[key] = b[key][:-1]  # 7 bytes: not a whole number of u32
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for folder, files in (("a", a), ("b", b)):
            (root / folder).mkdir()
            for (step, name), data in files.items():
                (root / folder / f"step_{step}_{name}.bin").write_bytes(data)
        (root / "s.toml").write_text(schema_text(p), encoding="utf-8")
        schema = load_schema(root / "s.toml")
        report = compare_runs(
            root / "a", root / "b", CompareOptions(schema=schema, executor="serial")
        )
    if not a or not b:  # a run with no dumps: an error, nothing compared
        assert report.verdict == "error" and not report.buffers
        return
    expected = naive_roles(a, b, p["inputs"], SIZE)
    got = {
        (x.step, x.name): (
            x.role.kind, list(x.role.differing_inputs), list(x.role.undumped_inputs),
            x.role.prev_step,
        )
        for x in report.buffers
        if x.role is not None
    }  # fmt: skip
    assert got == expected
    order = {n: (0 if i < p["split"] else 1, n) for i, n in enumerate(p["names"])}
    origins = sorted(((s, n) for (s, n), r in expected.items() if r[0] == "origin"),
                     key=lambda k: (k[0], order[k[1]]))  # fmt: skip
    doc = report_dict(report)
    if all(declared is None for declared in p["inputs"].values()):
        assert report.origins is None and "origins" not in doc  # as before inputs existed
        return
    assert [(o.step, o.name) for o in report.origins or ()] == origins
    assert doc["origins"] == [
        {"step": s, "name": n, "group": "G1" if order[n][0] == 0 else "G2"} for s, n in origins
    ]
