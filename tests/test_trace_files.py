"""The pure parts of tracing, without torch: record names, the dataflow a
trace gathers and writes, two dataflows joined, the sequence log, where two
sequences part, and schemas whose inputs are complete."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastdiff.errors import SchemaError
from fastdiff.schema import Group, Member, Schema
from fastdiff.schemafile import load_schema, parse_schema, schema_to_toml
from fastdiff.sources.names import DATAFLOW
from fastdiff.sources.schemas import merge_dataflows
from fastdiff.sources.traced import read_dataflow, read_sequences, sequence_line
from fastdiff.stages.structure import first_parting, parting_at
from fastdiff.tracenames import input_name, module_record, op_of, op_record, output_name
from fastdiff.tracing.dataflow import Dataflow

# --- names


def test_record_names() -> None:
    assert op_record("fwd", "layers.2.mlp", "aten.mm", 1) == "fwd.layers.2.mlp.aten.mm#1"
    assert op_record("bwd", "", "aten.mm", 0) == "bwd.aten.mm#0"
    assert module_record("fwd", "layers.2", 0) == "fwd.layers.2"
    assert module_record("fwd", "layers.2", 2) == "fwd.layers.2#2"
    assert module_record("fwd", "", 0) == "fwd"
    assert output_name("fwd.x.aten.max#0", 0) == "fwd.x.aten.max#0"
    assert output_name("fwd.x.aten.max#0", 1) == "fwd.x.aten.max#0.1"
    assert output_name("fwd.x", 1) == "fwd.x#0.1"  # a module path may end in a digit
    assert output_name("fwd.x#3", 2) == "fwd.x#3.2"
    assert input_name("fwd.fc.aten.addmm#0", 1) == "in.fwd.fc.aten.addmm#0.1"


@pytest.mark.parametrize(
    ("name", "level", "op"),
    [
        ("fwd.layers.2.aten.add#0", "op", "aten.add"),
        ("fwd.layers.2.aten.add#0.1", "op", "aten.add"),
        ("bwd.aten.mm#3", "op", "aten.mm"),
        ("opt.fc.weight.example.scatter_add#0", "op", "example.scatter_add"),
        ("param.fc.weight", "op", "param.fc.weight"),
        ("in.fwd.aten.mm#0.1", "op", "in.fwd.aten.mm#0.1"),
        ("fwd.layers.2", "module", "fwd.layers.2"),
        ("fwd.layers.2#1", "module", "fwd.layers.2#1"),
        ("fwd.layers.2#0.1", "module", "fwd.layers.2#0"),
    ],
)
def test_what_a_record_runs(name: str, level: str, op: str) -> None:
    assert op_of(name, level) == op


# --- the dataflow a trace gathers


def test_the_dataflow_is_the_union_over_steps_and_unknown_wins() -> None:
    d = Dataflow("op")
    d.add_step([("a", "f32", ()), ("b", "f32", ("a",)), ("c", "f32", None)])
    assert d.changed and len(d) == 3
    d.changed = False
    d.add_step([("a", "f32", ()), ("b", "f32", ("a",)), ("c", "f32", None)])
    assert not d.changed  # a step like the one before adds nothing
    d.add_step([("b", "f32", ("a", "b@prev")), ("c", "f32", ("a",)), ("x", "i64", ("b",))])
    assert d.inputs_of("b") == ("a", "b@prev") and d.inputs_of("c") is None
    d.add_step([("a", "f32", None)])
    assert d.inputs_of("a") is None


def test_an_input_that_would_close_a_cycle_within_a_step_is_left_out() -> None:
    d = Dataflow("op")
    d.add_step([("a", "f32", ()), ("b", "f32", ("a",)), ("c", "f32", ("b",))])
    d.add_step([("a", "f32", ("c", "a@prev"))])  # another order: c before a
    assert d.inputs_of("a") == ("a@prev",) and d.dropped == 1
    schema = d.to_schema()
    assert schema.input_cycle() is None and schema.inputs_complete


def test_the_dataflow_file_is_a_schema_in_groups_in_pipeline_order(tmp_path: Path) -> None:
    d = Dataflow("module")
    d.add_step([
        ("param.w", "f32", ("param.w@prev",)),
        ("in.fwd.0", "f32", ()),
        ("fwd.fc", "f32", ("in.fwd.0", "param.w")),
        ("bwd.fc", "f32", ("fwd.fc",)),
        ("grad.w", "f32", ("bwd.fc",)),
        ("fwd.odd\"name\n", "bf16", ("fwd.fc",)),
    ])  # fmt: skip
    d.write(str(tmp_path))
    assert not d.changed
    schema = load_schema(tmp_path / DATAFLOW)
    assert [g.key for g in schema.groups] == ["in", "param", "fwd", "bwd", "grad"]
    assert schema.inputs_of('fwd.odd"name\n') == ("fwd.fc",)
    assert schema.classify('fwd.odd"name\n') == ("fwd", "bf16")
    assert schema.inputs_of("in.fwd.0") == ()
    assert schema == d.to_schema()
    assert read_dataflow(str(tmp_path)) == (schema, None)
    assert not [p for p in tmp_path.iterdir() if p.name != DATAFLOW]  # no temporary left


def test_a_dataflow_that_cannot_be_written_raises_naming_it(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    d = Dataflow("op")
    d.add_step([("a", "f32", ())])
    with pytest.raises(OSError, match="the dataflow was not written"):
        d.write(str(tmp_path / "file"))


def test_a_damaged_dataflow_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / DATAFLOW).write_text("name = 3\n")
    schema, note = read_dataflow(str(tmp_path))
    assert schema is None and note is not None and note.warning
    assert note.kind == "dataflow_unusable" and note["path"] == str(tmp_path / DATAFLOW)
    assert read_dataflow(str(tmp_path / "none")) == (None, None)


# --- two dataflows joined


def _schema(groups: dict[str, dict[str, tuple[str, ...] | None]]) -> Schema:
    made = [
        Group(k, k, "", tuple(Member(n, "f32", inputs=i) for n, i in m.items()))
        for k, m in groups.items()
    ]
    return Schema("t", tuple(made), inputs_complete=True)


def test_run_bs_dataflow_adds_its_inputs_and_records() -> None:
    a = _schema({"fwd": {"fwd.x": (), "fwd.y": ("fwd.x",), "fwd.z": None}})
    b = _schema({
        "fwd": {"fwd.x": (), "fwd.m": ("fwd.x",), "fwd.y": ("fwd.m",), "fwd.z": ("fwd.x",)},
        "bwd": {"bwd.y": ("fwd.y",)},
    })  # fmt: skip
    m = merge_dataflows(a, b)
    assert m.inputs_complete and m.name == "t"
    assert [g.key for g in m.groups] == ["fwd", "bwd"]
    assert [x.pattern for x in m.groups[0].members] == ["fwd.x", "fwd.y", "fwd.z", "fwd.m"]
    assert m.inputs_of("fwd.y") == ("fwd.x", "fwd.m")
    assert m.inputs_of("fwd.z") is None  # unknown in A: unknown
    assert m.inputs_of("fwd.m") == ("fwd.x",) and m.inputs_of("bwd.y") == ("fwd.y",)


def test_joined_dataflows_close_no_cycle() -> None:
    a = _schema({"fwd": {"fwd.x": (), "fwd.y": ("fwd.x",)}})
    b = _schema({"fwd": {"fwd.y": (), "fwd.x": ("fwd.y", "fwd.x@prev")}})
    m = merge_dataflows(a, b)
    assert m.input_cycle() is None
    assert m.inputs_of("fwd.x") == ("fwd.x@prev",)


# --- sequences, and where two part


def test_sequence_lines_read_back_and_bad_ones_are_said(tmp_path: Path) -> None:
    log = tmp_path / "seq"
    good = [sequence_line("op", 0, ["a", "b"]), sequence_line("op", 1, ["a", "c\n\u00e9"])]
    damaged = bytearray(sequence_line("op", 2, ["a"]))
    damaged[20] ^= 1
    other = sequence_line("module", 3, ["x"])
    again = sequence_line("op", 1, ["a"])  # step 1 recorded again: the newest line's
    log.write_bytes(b"".join([*good, bytes(damaged), other, again]) + b'{"v":1')
    seq = read_sequences(str(log))
    assert seq.level == "op" and seq.unusable is None
    assert seq.steps == {0: ("a", "b"), 1: ("a",)}
    assert [b.split(":")[0] for b in seq.bad] == ["line 3", "line 4", "line 6"]
    assert read_sequences(str(log), lambda s: s == 0).steps == {0: ("a", "b")}
    missing = read_sequences(str(tmp_path / "none"))
    assert missing.unusable is not None and not missing.steps
    assert json.loads(good[0][: good[0].index(b',"check"')] + b"}")["records"] == ["a", "b"]


def test_where_two_sequences_part() -> None:
    a = ("p", "fwd.x.aten.mm#0", "fwd.x.aten.mm#1", "fwd.x.aten.add#0", "fwd.y.aten.mm#0")
    b = ("p", "fwd.x.aten.mm#0", "fwd.x.aten.mm#1", "fwd.x.aten.mul#0", "fwd.y.aten.mm#0")
    s = parting_at(3, a, b, "op")
    assert s is not None and s.parted
    assert (s.step, s.after, s.a, s.b) == (3, "fwd.x.aten.mm#1", "aten.add", "aten.mul")
    assert (s.a_record, s.b_record) == ("fwd.x.aten.add#0", "fwd.x.aten.mul#0")
    assert parting_at(0, a, a, "op") is None
    first = parting_at(0, ("x",), ("y",), "module")
    assert first is not None and first.after is None and (first.a, first.b) == ("x", "y")
    ends = parting_at(0, ("x", "y"), ("x",), "module")
    assert ends is not None and (ends.after, ends.a, ends.b) == ("x", "y", None)


def test_the_first_step_where_two_traces_part(tmp_path: Path) -> None:
    later = ["p", "fwd.aten.add#0"]
    a_lines = [sequence_line("op", s, ["p", "fwd.aten.mm#0"]) for s in range(4)]
    b_lines = [sequence_line("op", s, ["p", "fwd.aten.mm#0"] if s < 2 else later) for s in range(5)]
    (tmp_path / "a").write_bytes(b"".join(a_lines))
    (tmp_path / "b").write_bytes(b"".join(b_lines))
    a, b = read_sequences(str(tmp_path / "a")), read_sequences(str(tmp_path / "b"))
    s = first_parting(a, b, rank=3)
    assert (s.step, s.after, s.a, s.b, s.rank) == (2, "p", "aten.mm", "aten.add", 3)
    same = first_parting(a, a)
    assert not same.parted and same.step is None


@settings(max_examples=200, deadline=None)
@given(
    common=st.lists(st.sampled_from("abcdef"), max_size=5),
    a=st.lists(st.sampled_from("uvwxyz"), max_size=4),
    b=st.lists(st.sampled_from("uvwxyz"), max_size=4),
)
def test_the_parting_is_the_end_of_the_common_start(
    common: list[str], a: list[str], b: list[str]
) -> None:
    sa, sb = (*common, *a), (*common, *b)
    s = parting_at(7, sa, sb, "module")
    if sa == sb:
        assert s is None
        return
    assert s is not None
    i = next(k for k in range(max(len(sa), len(sb))) if sa[k : k + 1] != sb[k : k + 1])
    assert sa[:i] == sb[:i]
    assert s.after == (sa[i - 1] if i else None)
    assert (s.a_record, s.b_record) == (sa[i] if i < len(sa) else None,
                                        sb[i] if i < len(sb) else None)  # fmt: skip


# --- schemas whose inputs are complete


def test_inputs_complete_is_read_written_and_checked() -> None:
    schema = _schema({"g": {"x": (), "y": ("x",)}})
    text = schema_to_toml(schema)
    assert "inputs_complete = true" in text.splitlines()
    import tomllib

    assert parse_schema(tomllib.loads(text)) == schema
    assert "inputs_complete" not in schema_to_toml(schema.replace(inputs_complete=False))
    with pytest.raises(SchemaError, match="inputs_complete"):
        parse_schema({"inputs_complete": "yes"})
    assert schema.with_default_dtype("f32").inputs_complete
