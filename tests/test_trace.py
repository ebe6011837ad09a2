"""``fastdiff.trace`` through the library: small programs traced twice, run B
made to differ at one place (an op's kernel in the forward or the backward,
the optimizer, a tensor made outside the block, the control flow), and
``compare_runs`` with no schema must name the record where the divergence
was born, and the structural difference where the traces part. An oracle
computes every record's role from the recorded files (the dataflows, the
digest logs) with plain code and compares it with the report's.

Skipped without torch (CI installs it).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from helpers import REPO

torch = pytest.importorskip("torch")

import fastdiff  # noqa: E402
from fastdiff import CompareOptions, compare_runs  # noqa: E402
from fastdiff.model.findings import NoteKind  # noqa: E402
from fastdiff.render.json import report_dict  # noqa: E402
from fastdiff.schemafile import load_schema  # noqa: E402
from fastdiff.sources import open_run  # noqa: E402
from fastdiff.sources.names import DATAFLOW, DIGEST_LOG, SEQUENCE_LOG  # noqa: E402
from fastdiff.testing import assert_runs_equal  # noqa: E402

# --- kernels that run B can make nondeterministic: one op each, as a GPU kernel is


@torch.library.custom_op("fdtest::jitter", mutates_args=())
def jitter(x: torch.Tensor, on: bool) -> torch.Tensor:
    """``x``, its first element one ULP up when ``on``."""
    out = x.clone()
    if on:
        out.view(torch.int32).view(-1)[0] += 1
    return out


jitter.register_autograd(lambda ctx, grad: (grad, None))


@torch.library.custom_op("fdtest::bjitter", mutates_args=())
def bjitter(x: torch.Tensor, on: bool) -> torch.Tensor:
    """``x``; its backward nudges the gradient's first element when ``on``: 2**16
    ULP, not one, so the step's update carries it into the parameters on every
    host (one ULP of a gradient can round away in ``p - lr * g``)."""
    return x.clone()


def _bjitter_setup(ctx: object, inputs: tuple[object, ...], output: object) -> None:
    ctx.on = inputs[1]  # type: ignore[attr-defined]


def _bjitter_backward(ctx: object, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
    out = grad.clone()
    if ctx.on:  # type: ignore[attr-defined]
        out.view(torch.int32).view(-1)[0] += 1 << 16  # in place, through views
    return out, None


bjitter.register_autograd(_bjitter_backward, setup_context=_bjitter_setup)


class Act(torch.nn.Module):
    """tanh, then the two kernels run B may turn on."""

    def __init__(self) -> None:
        super().__init__()
        self.fwd_on = False
        self.bwd_on = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return bjitter(jitter(torch.tanh(x), self.fwd_on), self.bwd_on)


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.act = Act()
        self.fc2 = torch.nn.Linear(8, 2)
        self.extra = False  # run B's control flow: one more op

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.act(self.fc1(x))
        if self.extra:
            h = h * 1.0  # the same values, by another op
        return self.fc2(h)


def train(
    run: Path,
    level: str,
    *,
    rank: int | None = None,
    steps: int = 4,
    at: int | None = None,
    where: str = "",
    data: object = False,
    outside: torch.Tensor | None = None,
    views: bool = False,
) -> None:
    """Train ``Net`` for ``steps`` under a trace; from step ``at`` on, ``where``
    differs: ``fwd`` (a forward kernel), ``bwd`` (a backward kernel), ``opt``
    (the learning rate), ``flow`` (one more op), ``input`` (the batch, made
    outside the block)."""
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    gen = torch.Generator().manual_seed(1)
    xs = torch.randn(steps, 3, 4, generator=gen) if outside is None else outside
    ys = torch.randn(steps, 3, 2, generator=gen)
    if at is not None and where == "input":
        xs = xs.clone()
        xs[at:] += 1e-3  # the batches, made before the block, differ from step `at` on
    with fastdiff.trace(run, model=model, level=level, data=data, views=views, rank=rank) as t:
        for step in range(steps):
            t.step(step)
            late = at is not None and step >= at
            model.act.fwd_on = late and where == "fwd"
            model.act.bwd_on = late and where == "bwd"
            model.extra = late and where == "flow"
            for g in opt.param_groups:
                g["lr"] = 0.1 + (1e-7 if late and where == "opt" else 0.0)
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(xs[step]), ys[step])
            loss.backward()
            opt.step()


def pair(tmp: Path, level: str, **b: object) -> tuple[Path, Path]:
    a_run, b_run = tmp / f"{level}-a", tmp / f"{level}-b"
    train(a_run, level, **{k: v for k, v in b.items() if k in ("steps", "data", "views")})  # type: ignore[arg-type]
    train(b_run, level, **b)  # type: ignore[arg-type]
    return a_run, b_run


def roles(report: fastdiff.Report) -> dict[tuple[int, str], str]:
    return {(b.step, b.name): b.role.kind for b in report.buffers if b.role is not None}


def origins(report: fastdiff.Report) -> list[tuple[int, str]]:
    return [(o.step, o.name) for o in report.origins or ()]


# --- born where, at op level and module level


@pytest.mark.parametrize(
    ("level", "where", "born"),
    [
        ("op", "fwd", "fwd.act.fdtest.jitter#0"),
        ("op", "bwd", "bwd.act.aten.add_#0"),  # the in-place nudge, through two views
        ("op", "opt", "opt.fc2.bias.aten.add_#1"),  # the last update: its lr differs
        ("op", "input", "in.fwd.fc1.aten.addmm#0.1"),  # the batch, made outside the block
        ("module", "fwd", "fwd.act"),
        ("module", "bwd", "bwd.fc1"),  # the gradient act's backward hands on to fc1
        ("module", "input", "in.fwd.0"),
    ],
)
def test_the_divergence_is_born_where_run_b_differs(
    tmp_path: Path, level: str, where: str, born: str
) -> None:
    a, b = pair(tmp_path, level, at=2, where=where)
    report = compare_runs(a, b)
    assert report.first_divergent_step == 2
    assert report.schema == f"traced dataflow ({level} level)"
    s = report.structure
    assert s is not None
    if (level, where) == ("op", "bwd"):  # the nudge is one more op: the traces part there
        assert (s.step, s.after, s.a, s.b) == (2, "bwd.act.aten.clone#0", "aten.tanh_backward",
                                               "aten.add_")  # fmt: skip
    else:
        assert not s.parted
    first = [name for step, name in origins(report) if step == 2]
    assert born in first, origins(report)
    if where != "opt":  # two parameters' updates read the same differing lr: two origins
        assert first == [born]
    at2 = {name: kind for (step, name), kind in roles(report).items() if step == 2}
    assert at2[born] == "origin"
    # undetermined only where what it read is in run B only (the nudge's own ops)
    b_only = {x.name for x in report.buffers if x.step == 2 and x.status == "only_in_b"}
    for x in report.buffers:
        if x.step == 2 and x.role is not None and x.role.kind == "undetermined":
            assert set(x.role.undumped_inputs) <= b_only, x.name
    # what it flows into at the next step: the state the optimizer carries over
    later = roles(report)
    assert any(name.startswith(("param.", "optim.")) and kind == "receiver"
               for (step, name), kind in later.items() if step == 3)  # fmt: skip


def test_identical_traces_compare_identical_at_both_levels(tmp_path: Path) -> None:
    for level in ("op", "module"):
        a, b = pair(tmp_path, level)
        report = compare_runs(a, b)
        assert report.verdict == "identical", level
        assert report.structure is not None and not report.structure.parted
        assert report.origins == ()  # the dataflow declares inputs: roles are on
        doc = report_dict(report)
        assert doc["structure"] == {
            "parted": False, "step": None, "after": None, "a": None, "b": None,
            "a_record": None, "b_record": None,
        }  # fmt: skip
        assert_runs_equal(a, b)


def test_op_records_forward_backward_and_optimizer_under_their_module_paths(
    tmp_path: Path,
) -> None:
    run = tmp_path / "r"
    train(run, "op", steps=3)
    names = {f.name for f in open_run(str(run)).listing.buffers if f.step == 2}
    assert {"fwd.fc1.aten.addmm#0", "fwd.act.aten.tanh#0", "fwd.act.fdtest.jitter#0",
            "fwd.fc2.aten.addmm#0", "fwd.aten.mse_loss#0"} <= names  # fmt: skip
    assert {"bwd.aten.mse_loss_backward#0", "bwd.fc2.aten.mm#0", "bwd.act.aten.tanh_backward#0",
            "bwd.fc1.aten.mm#0"} <= names  # fmt: skip
    assert {"opt.fc1.weight.aten.add_#0", "opt.fc2.bias.aten.add_#1"} <= names
    assert {"param.fc1.weight", "param.fc2.bias", "optim.fc1.weight.momentum_buffer"} <= names
    assert not any(".aten.t#" in n or ".aten.detach#" in n for n in names)  # views: no record
    dataflow = load_schema(run / DATAFLOW)
    assert dataflow.inputs_complete
    # an op reads its module's parameters as the step began, and the batch
    assert set(dataflow.inputs_of("fwd.fc1.aten.addmm#0") or ()) == {
        "param.fc1.bias",
        "param.fc1.weight",
        "in.fwd.fc1.aten.addmm#0.1",
    }
    # state carried between steps: the parameter comes from the optimizer's last write
    # (the first step's momentum is a copy of the gradient, one update fewer: another count)
    assert dataflow.inputs_of("param.fc1.weight") == (
        "opt.fc1.weight.aten.add_#0@prev",
        "opt.fc1.weight.aten.add_#1@prev",
    )
    momentum = dataflow.inputs_of("optim.fc1.weight.momentum_buffer")
    assert momentum == ("opt.aten.clone#0@prev", "opt.fc1.weight.aten.add_#0@prev")


def test_views_are_records_when_asked(tmp_path: Path) -> None:
    run = tmp_path / "r"
    train(run, "op", steps=1, views=True)
    names = {f.name for f in open_run(str(run)).listing.buffers}
    assert "fwd.fc1.aten.t#0" in names
    dataflow = load_schema(run / DATAFLOW)
    assert "fwd.fc1.aten.t#0" in (dataflow.inputs_of("fwd.fc1.aten.addmm#0") or ())


def test_module_records_read_their_children_parameters_and_inputs(tmp_path: Path) -> None:
    run = tmp_path / "r"
    train(run, "module", steps=2)
    dataflow = load_schema(run / DATAFLOW)
    assert dataflow.inputs_of("fwd.fc1") == ("in.fwd.0", "param.fc1.weight", "param.fc1.bias")
    assert dataflow.inputs_of("fwd.act") == ("fwd.fc1",)
    assert dataflow.inputs_of("fwd") == ("in.fwd.0", "fwd.fc1", "fwd.act", "fwd.fc2")
    # the gradient with respect to fc1's output: computed by act's backward
    assert dataflow.inputs_of("bwd.fc1") == ("bwd.act", "fwd.act", "fwd.fc1")
    assert "bwd.fc2" in (dataflow.inputs_of("grad.fc2.weight") or ())
    assert "grad.fc1.weight@prev" in (dataflow.inputs_of("param.fc1.weight") or ())


# --- identity, versions, views


class Twice(torch.nn.Module):
    """One tensor read twice by one op, one module called twice, an op with
    two outputs, and an in-place write through a view of a tensor read later."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(self.fc(x))
        sq = h * h  # the same tensor, twice
        top, where = sq.max(dim=1)
        base = sq.clone()
        base[:, 0].mul_(2.0)  # in place through a view: base's version moves on
        return base.sum() + top.sum() + where.sum()


def test_identity_versions_and_views(tmp_path: Path) -> None:
    run = tmp_path / "r"
    model = Twice()
    x = torch.randn(2, 3)
    with fastdiff.trace(run, model=model, level="op") as t:
        t.step(0)
        model(x).backward()
    df = load_schema(run / DATAFLOW)
    assert df.inputs_of("fwd.aten.mul#0") == ("fwd.fc.aten.addmm#1",)  # read twice: listed once
    assert df.inputs_of("fwd.aten.max#0") == ("fwd.aten.mul#0",)
    assert df.inputs_of("fwd.aten.max#0.1") == ("fwd.aten.mul#0",)  # its second output
    assert df.inputs_of("fwd.aten.mul_#0") == ("fwd.aten.clone#0",)
    # base is read after the write through its view: the write, and what it wrote over
    assert df.inputs_of("fwd.aten.sum#0") == ("fwd.aten.mul_#0", "fwd.aten.clone#0")
    assert df.inputs_of("fwd.aten.sum#2") == ("fwd.aten.max#0.1",)
    mod = tmp_path / "m"
    with fastdiff.trace(mod, model=model, level="module") as t:
        t.step(0)
        model(x).backward()
    df = load_schema(mod / DATAFLOW)
    assert df.inputs_of("fwd.fc#1") == ("fwd.fc", "param.fc.weight", "param.fc.bias")


def test_a_tensor_made_outside_the_block_is_a_step_input_recorded_each_step(
    tmp_path: Path,
) -> None:
    outside = torch.randn(3, 3, 4)  # made before the block, read at every step
    a, b = tmp_path / "a", tmp_path / "b"
    train(a, "op", steps=3, outside=outside)
    changed = outside.clone()
    changed[2, 0, 0] += 1.0  # the data of step 2 differs
    train(b, "op", steps=3, outside=changed)
    listing = {(f.step, f.name) for f in open_run(str(a)).listing.buffers}
    # the batch is a view of `outside`: the first op that reads it records it
    assert {(s, "in.fwd.fc1.aten.addmm#0.1") for s in range(3)} <= listing
    report = compare_runs(a, b)
    assert report.first_divergent_step == 2
    assert origins(report)[0] == (2, "in.fwd.fc1.aten.addmm#0.1")
    assert roles(report)[(2, "fwd.fc1.aten.addmm#0")] == "receiver"


# --- control flow that differs: the structural difference


@pytest.mark.parametrize("level", ["op", "module"])
def test_control_flow_that_differs_is_a_structural_difference(tmp_path: Path, level: str) -> None:
    a, b = pair(tmp_path, level, at=2, where="flow")
    report = compare_runs(a, b)
    s = report.structure
    assert s is not None
    if level == "module":  # the extra op runs between modules: the modules' sequence is one
        assert not s.parted and report.verdict == "identical"
        return
    assert s.parted and s.step == 2
    assert (s.after, s.a, s.b) == ("fwd.act.fdtest.bjitter#0", "aten.addmm", "aten.mul")
    assert (s.a_record, s.b_record) == ("fwd.fc2.aten.addmm#0", "fwd.aten.mul#0")
    statuses = {b.name: b.status for b in report.buffers if b.step == 2}
    assert statuses["fwd.aten.mul#0"] == "only_in_b"
    # records after the parting are compared by name, and are equal (h * 1.0 is h)
    assert statuses["fwd.fc2.aten.addmm#0"] == "equal"
    assert statuses["bwd.fc1.aten.mm#0"] == "equal"
    first = [o for o in origins(report) if o[0] == 2]
    assert first == [(2, "fwd.aten.mul#0"), (2, "bwd.aten.mul#0")]
    doc = report_dict(report)
    assert doc["structure"] == {
        "parted": True, "step": 2, "after": "fwd.act.fdtest.bjitter#0", "a": "aten.addmm",
        "b": "aten.mul", "a_record": "fwd.fc2.aten.addmm#0", "b_record": "fwd.aten.mul#0",
    }  # fmt: skip
    assert list(doc).index("structure") == list(doc).index("origins") + 1
    assert any(n.kind is NoteKind.DATAFLOW_DIFFERS for n in report.notes)


# --- digests only, then the first divergent step in full


def test_digests_only_then_the_first_divergent_step_in_full(tmp_path: Path) -> None:
    a, b = pair(tmp_path, "op", at=2, where="fwd")
    assert not [p for p in a.iterdir() if p.name.startswith("step_")]  # digests only
    report = compare_runs(a, b)
    born = next(x for x in report.buffers if x.role is not None and x.role.kind == "origin")
    assert born.n_diff is None  # digests say where, not the values
    assert any(n.kind is NoteKind.RERECORD and n["step"] == 2 for n in report.notes)
    full_a, full_b = tmp_path / "full-a", tmp_path / "full-b"
    train(full_a, "op", data={2})
    train(full_b, "op", at=2, where="fwd", data={2})
    files = {p.name for p in full_a.iterdir() if p.name.startswith("step_")}
    assert files and all(f.startswith("step_2_") for f in files)
    assert "step_2_fwd.act.fdtest.jitter#0.npy" in files
    report = compare_runs(full_a, full_b)
    assert origins(report)[0] == (2, "fwd.act.fdtest.jitter#0")
    born = next(x for x in report.buffers if (x.step, x.name) == origins(report)[0])
    assert born.n_diff == 1 and born.first_index == 0 and born.max_ulp == 1
    # the full and the digests-only runs are the same records: they compare equal
    same = compare_runs(a, full_a)
    assert same.verdict == "identical" and len(same.buffers) == len(report.buffers)


# --- the oracle: every role from the recorded files, by plain code


def _digests(run: Path) -> dict[tuple[int, str], tuple[object, ...]]:
    """Each record's (dtype, shape, chunks), read from the digest log by hand
    (the newest line of a record wins)."""
    out: dict[tuple[int, str], tuple[object, ...]] = {}
    for line in (run / DIGEST_LOG).read_text().splitlines():
        d = json.loads(line)
        out[(d["step"], d["name"])] = (d["dtype"], tuple(d["shape"]), tuple(d["chunks"]))
    return out


def _inputs(run: Path) -> dict[str, list[str] | None]:
    doc = tomllib.loads((run / DATAFLOW).read_text())
    assert doc["inputs_complete"] is True
    return {name: (m.get("inputs") if isinstance(m, dict) else None)
            for g in doc["group"] for name, m in g["members"].items()}  # fmt: skip


def reference_roles(a: Path, b: Path) -> dict[tuple[int, str], str]:
    """The role of every record that diverges: its inputs are run A's
    dataflow's, then what run B's adds; an input neither run holds at the
    step it names was not read; @prev reads the step before (traces hold
    every step from 0)."""
    da, db = _digests(a), _digests(b)
    ia, ib = _inputs(a), _inputs(b)
    inputs: dict[str, list[str] | None] = {}
    for name in [*ia, *(n for n in ib if n not in ia)]:
        x, y = ia.get(name, []), ib.get(name, [])
        inputs[name] = None if x is None or y is None else [*x, *(w for w in y if w not in x)]

    def status(key: tuple[int, str]) -> str | None:
        if key in da and key in db:
            return "equal" if da[key] == db[key] else "diverged"
        return "only_in_a" if key in da else "only_in_b" if key in db else None

    out = {}
    for key in sorted(da.keys() | db.keys()):
        step, name = key
        if status(key) == "equal" or inputs.get(name) is None:
            continue
        kinds = []
        for written in inputs[name]:  # type: ignore[union-attr]
            prev = written.endswith("@prev")
            if prev and step == 0:
                continue
            s = status((step - 1, written[:-5]) if prev else (step, written))
            if s is None:
                continue  # read at other steps only
            kinds.append(s)
        out[key] = ("receiver" if "diverged" in kinds else
                    "undetermined" if any(k != "equal" for k in kinds) else "origin")  # fmt: skip
    return out


@pytest.mark.parametrize("level", ["op", "module"])
@pytest.mark.parametrize("where", ["fwd", "bwd", "opt", "flow", "input"])
def test_every_role_is_the_references_from_the_recorded_graph(
    tmp_path: Path, level: str, where: str
) -> None:
    a, b = pair(tmp_path, level, at=1, where=where, steps=4)
    report = compare_runs(a, b, CompareOptions(executor="serial"))
    expected = reference_roles(a, b)
    kinds = set(expected.values())
    if (level, where) == ("module", "flow"):  # between modules: the modules' records are equal
        assert kinds == set()
    else:
        assert "origin" in kinds and ("receiver" in kinds or where == "flow"), kinds
    assert roles(report) == expected
    assert origins(report) == sorted(
        [k for k, v in expected.items() if v == "origin"],
        key=lambda k: (k[0], [g for g, _, _ in fastdiff.tracenames.GROUPS].index(
            k[1].partition(".")[0]), k[1]),
    )  # fmt: skip


def test_traces_of_several_ranks_read_each_ranks_dataflow(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for rank in (0, 1):
        train(a, "op", rank=rank)
        train(b, "op", rank=rank, at=1 if rank else None, where="fwd")
    assert (a / "rank_1" / DATAFLOW).exists() and not (a / DATAFLOW).exists()
    report = compare_runs(a, b)
    assert report.ranks is not None and [r.rank for r in report.ranks] == [0, 1]
    assert report.ranks[0].report.verdict == "identical"
    first = (report.origins or ())[0]
    assert (first.rank, first.step, first.name) == (1, 1, "fwd.act.fdtest.jitter#0")
    assert report.schema == "traced dataflow (op level)"
    assert report.structure is not None and not report.structure.parted
    assert report_dict(report)["structure"]["rank"] == 0


# --- the files beside the records


def test_the_trace_files_are_hidden_and_a_copy_carries_them(tmp_path: Path) -> None:
    import shutil

    a, b = pair(tmp_path, "op", at=2, where="fwd")
    for run in (a, b):
        names = {p.name for p in run.iterdir()}
        assert {DIGEST_LOG, DATAFLOW, SEQUENCE_LOG} <= names
        listing = open_run(str(run)).listing
        assert not listing.skipped and not listing.errors
    copy = tmp_path / "copy"
    shutil.copytree(a, copy)
    report = compare_runs(copy, b)
    assert origins(report)[0] == (2, "fwd.act.fdtest.jitter#0")
    assert report.structure is not None


def test_a_damaged_dataflow_or_sequence_log_is_a_warning_not_a_role(tmp_path: Path) -> None:
    a, b = pair(tmp_path, "op", at=2, where="fwd")
    (a / DATAFLOW).write_text("[[group]\n")
    with (b / SEQUENCE_LOG).open("ab") as fh:
        fh.write(b'{"v":1,"level":"op","step":9,"records":[]}\n')  # no check: refused
    report = compare_runs(a, b)
    assert report.first_divergent_step == 2
    warned = {n.kind: n["path"] for n in report.notes if n.warning}
    assert warned[NoteKind.DATAFLOW_UNUSABLE].endswith(DATAFLOW)
    assert warned[NoteKind.SEQUENCE_LINES_IGNORED].endswith(SEQUENCE_LOG) or warned.get(
        NoteKind.SEQUENCE_UNUSABLE, ""
    ).endswith(SEQUENCE_LOG)
    # run B's dataflow is used instead, and the damaged line left out
    assert report.schema == "traced dataflow (op level)"
    assert report.structure is not None and not report.structure.parted


def test_a_schema_given_wins_over_the_dataflow(tmp_path: Path) -> None:
    a, b = pair(tmp_path, "op", at=2, where="fwd")
    report = compare_runs(a, b, CompareOptions(schema="raw"))
    assert report.schema == "raw" and report.origins is None


# --- the API's edges


def test_the_tracer_refuses_what_it_cannot_trace(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="level"):
        fastdiff.trace(tmp_path / "r", model=Net(), level="kernel")
    with pytest.raises(TypeError, match=r"torch\.nn\.Module"):
        fastdiff.trace(tmp_path / "r", model=object())
    with pytest.raises(TypeError, match="optimizer"):
        fastdiff.trace(tmp_path / "r", model=Net(), optimizer=[object()])
    t = fastdiff.trace(tmp_path / "r", model=Net())
    with t:
        t.step(0)
        with pytest.raises(ValueError, match="begun twice"):
            t.step(0)
        with pytest.raises(ValueError, match=">= 0"):
            t.step(-1)
    with pytest.raises(ValueError, match="after close"):
        t.step(1)
    with pytest.raises(ValueError, match="after close"):
        t.__enter__()


def test_nothing_is_recorded_before_the_first_step_and_hooks_are_removed(tmp_path: Path) -> None:
    model = Net()
    x = torch.randn(3, 4)
    with fastdiff.trace(tmp_path / "r", model=model, level="op") as t:
        model(x)  # before the first step: not recorded
        t.step(5)
        model(x)
    steps = {f.step for f in open_run(str(tmp_path / "r")).listing.buffers}
    assert steps == {5}
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())


def test_the_optimizer_given_is_recorded_from_the_first_step(tmp_path: Path) -> None:
    model = Net()
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(3, 4)).sum().backward()
    opt.step()  # some state before the block
    with fastdiff.trace(tmp_path / "r", model=model, optimizer=opt) as t:
        t.step(0)
    names = {f.name for f in open_run(str(tmp_path / "r")).listing.buffers}
    assert {"optim.fc1.weight.exp_avg", "optim.fc1.weight.step"} <= names


def test_importing_fastdiff_does_not_import_torch_and_trace_says_how_to_install_it() -> None:
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torch' or name.startswith('torch.'):\n"
        "            raise ImportError('no torch here')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import fastdiff, fastdiff.tracing\n"
        "assert 'torch' not in sys.modules\n"
        "try:\n"
        "    fastdiff.trace('x', model=None)\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, check=True)  # fmt: skip
    assert "pip install torch" in done.stdout
