"""The schema: presets, the TOML loader and its errors, buffer classification."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastdiff import CompareOptions, compare_runs
from fastdiff.errors import SchemaError
from fastdiff.model.findings import NoteKind
from fastdiff.presets import PRESETS, RL_STATE, resolve_schema
from fastdiff.schema import OTHER, Schema
from fastdiff.schemafile import load_schema, schema_to_toml

REFERENCE_MEMBERS = {
    # A and B: the names compare-rl-state.py's docstring gives them; their
    # dtypes are the preset's own start (the script names none).
    "A": {"attn_context_d": "f32", "h_t_d": "f32"},
    "B": {"priority_tree": "f32", "sample_prng": "u32", "sample_indices": "i32"},
    "C": {"action_prng_state": "u32", "iqn_prng_state": "u32"},
    "D": {
        "pyramid_units_count": "i32",
        "unit_entry_step": "i32",
        "unit_entry_price": "f32",
        "unit_lots": "i32",
        "unit_active": "u8",
        "unit_initial_r": "f32",
        "unit_trail_distance": "f32",
        "unit_prev_pos_lots": "i32",
        "close_unit_index": "i32",
        "prev_realized_pnl": "f32",
        "prev_position_lots": "i32",
        "steps_since_done": "i32",
        "trade_duration_emit": "f32",
    },
    "E": {"isv_full": "f32"},
    "F": {
        **{n: "f32" for n in ("rewards", "raw_rewards", "outcome_ema", "reward_abs", "dones")},
        "actions": "i32",
        "next_actions": "i32",
        **{n: "f32" for n in ("log_pi_old", "advantages", "returns", "session_pnl")},
        **{n: "f32" for n in ("consec_loss", "cooldown_remaining", "ph_mu", "ph_count")},
        **{n: "f32" for n in ("ph_m", "ph_mmin", "ph_stat")},
    },
}


def test_rl_state_preset_matches_the_reference_table() -> None:
    """Groups A (CfC carry) and B (PER state), as the reference script's
    docstring names them, upstream of its table's C to F."""
    assert [g.key for g in RL_STATE.groups] == ["A", "B", "C", "D", "E", "F"]
    for g in RL_STATE.groups:
        assert {m.pattern: m.dtype for m in g.members} == REFERENCE_MEMBERS[g.key]
        assert g.title and g.hint
        assert all(m.inputs is not None for m in g.members)  # every member has a role
    assert sum(len(g.members) for g in RL_STATE.groups) == 39
    assert RL_STATE.classify("h_t_d") == ("A", "f32")
    assert RL_STATE.classify("sample_prng") == ("B", "u32")
    assert RL_STATE.classify("sample_indices") == ("B", "i32")


def test_groups_a_and_b_are_upstream_in_a_comparison(tmp_path: Path) -> None:
    """A run that dumps the CfC carry and the PER state is read with their
    dtypes and groups: B diverging first is the verdict's group, before F,
    with its hint; a sampled index that differs while the PRNG and the tree
    match is where the divergence was born."""
    import struct

    from helpers import fastdiff, write_runs

    files: dict[str, tuple[bytes | None, bytes | None]] = {}
    for step in range(3):
        same = {
            "h_t_d": struct.pack("<4f", 0.5, 1, 2, step),
            "attn_context_d": struct.pack("<4f", 1, 2, 3, step),
            "priority_tree": struct.pack("<4f", 1, 1, 2, 4),
            "sample_prng": struct.pack("<2I", 7, 1000 + step),
        }
        for name, data in same.items():
            files[f"step_{step}_{name}.bin"] = (data, data)
        indices = struct.pack("<3i", 0, 2, step)
        files[f"step_{step}_sample_indices.bin"] = (
            indices, struct.pack("<3i", 0, 3, step) if step >= 1 else indices
        )  # fmt: skip
        rewards = struct.pack("<2f", 1, step)
        files[f"step_{step}_rewards.bin"] = (rewards, struct.pack("<2f", 2, step) if step == 2
                                             else rewards)  # fmt: skip
    a, b = write_runs(tmp_path, files)
    p = fastdiff("compare", a, b, "--format", "json")
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    assert doc["schema"] == "rl-state" and doc["first_divergent_step"] == 1
    assert doc["first_divergent_groups"] == ["B"]
    assert [(g["key"], g["status"]) for g in doc["groups"]] == [
        ("A", "equal"), ("B", "diverged"), ("C", "absent"), ("D", "absent"), ("E", "absent"),
        ("F", "equal"),
    ]  # fmt: skip
    rows = {(x["step"], x["name"]): x for x in doc["buffers"]}
    assert {rows[(0, n)]["dtype"] for n in ("h_t_d", "attn_context_d", "priority_tree")} == {"f32"}
    assert (rows[(0, "sample_prng")]["dtype"], rows[(0, "sample_indices")]["dtype"]) == (
        "u32", "i32",
    )  # fmt: skip
    index = rows[(1, "sample_indices")]
    assert (index["status"], index["first_index"], index["role"]) == ("diverged", 1, "origin")
    assert doc["origins"][0] == {"step": 1, "name": "sample_indices", "group": "B"}
    assert "PER" in doc["groups"][1]["title"] and "tree" in doc["groups"][1]["hint"]


def test_classify_exact_glob_and_other() -> None:
    assert RL_STATE.classify("rewards") == ("F", "f32")
    assert RL_STATE.classify("unit_active") == ("D", "u8")
    assert RL_STATE.classify("mystery") == (OTHER, "u8")
    assert RL_STATE.with_default_dtype("f64").classify("mystery") == (OTHER, "f64")


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(text)
    return p


def test_user_schema_globs_after_exact_names(tmp_path: Path) -> None:
    s = load_schema(
        _write(
            tmp_path,
            """
name = "mine"
default_dtype = "i16"

[[group]]
key = "A"
title = "first"
[group.members]
"unit_*" = "f32"

[[group]]
key = "B"
title = "second"
hint = "look here"
[group.members]
unit_lots = "i32"
"h_?" = "bf16"
""",
        )
    )
    assert s.name == "mine"
    assert s.classify("unit_lots") == ("B", "i32")  # exact beats an earlier glob
    assert s.classify("unit_price") == ("A", "f32")
    assert s.classify("h_1") == ("B", "bf16")
    assert s.classify("zzz") == (OTHER, "i16")
    assert s.order == {"A": 0, "B": 1, OTHER: 2}


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ('[[group]]\nkey = "A"\n[group.members]\nx = "f33"\n', 4, "members.x"),
        ('[[group]]\nkey = "A"\ncolour = "red"\n', 3, "colour"),
        ('default_dtype = "float"\n', 1, "default_dtype"),
        ('[[group]]\ntitle = "no key"\n', 1, "'key'"),
        ('[[group]]\nkey = "A"\n\n[[group]]\nkey = "A"\n', 5, "used twice"),
        ('[[group]]\nkey = "other"\n', 2, "reserved"),
        ("schema_version = 7\n", 1, "unsupported version"),
        ('[[group]\nkey = "A"\n', 1, "not valid TOML"),
    ],
)
def test_bad_schema_names_file_line_and_key(
    tmp_path: Path, text: str, line: int, fragment: str
) -> None:
    p = _write(tmp_path, text)
    with pytest.raises(SchemaError) as err:
        load_schema(p)
    msg = str(err.value)
    assert "\n" not in msg
    assert str(p) in msg
    assert fragment in msg
    assert f"line {line}" in msg or f"{p}:{line}:" in msg


def test_presets_round_trip_through_toml(tmp_path: Path) -> None:
    for preset in PRESETS.values():
        p = _write(tmp_path, schema_to_toml(preset))
        assert load_schema(p) == preset


def test_resolve_schema_errors() -> None:
    with pytest.raises(SchemaError, match="no such preset or file"):
        resolve_schema("nope")
    with pytest.raises(SchemaError, match="--default-dtype"):
        resolve_schema("rl-state", "f128")


DUPLICATE = """name = "dup"

[[group]]
key = "C"
title = "member of two groups"
[group.members]
rewards = "f32"
"unit_*" = "f32"

[[group]]
key = "D"
[group.members]
actions = "i32"
{second}
"""


@pytest.mark.parametrize(
    ("second", "member"),
    [("'rewards' = \"f32\"", "rewards"), ('rewards = "i32"', "rewards"),
     ('"unit_*" = "f32"', "unit_*")],
)  # fmt: skip
def test_a_member_in_two_groups_is_refused(tmp_path: Path, second: str, member: str) -> None:
    p = _write(tmp_path, DUPLICATE.format(second=second))
    with pytest.raises(SchemaError) as err:
        load_schema(p)
    first_line = 7 if member == "rewards" else 8
    assert str(err.value) == (
        f"{p}:14: group 2 key 'members.{member}': member {member!r} of group 'D' is already "
        f"in group 'C' (line {first_line}); a buffer belongs to one group: remove one of them"
    )


def test_a_member_in_two_inline_member_tables_names_their_lines(tmp_path: Path) -> None:
    text = (
        '[[group]]\nkey = "C"\nmembers = { x = "u8" }\n\n'
        '[[group]]\nkey = "D"\ntitle = "x"\nmembers = { y = "u8", x = "u8" }\n'
    )
    p = _write(tmp_path, text)
    with pytest.raises(SchemaError, match=r"s\.toml:8: .*'x' of group 'D' is already in group "
                       r"'C' \(line 3\)"):  # fmt: skip
        load_schema(p)


def test_a_schema_built_in_code_refuses_a_member_in_two_groups() -> None:
    from fastdiff.schema import Group, Member, Schema

    def group(key: str) -> Group:
        return Group(key, key, "", (Member("x", "u8"),))

    with pytest.raises(SchemaError, match="member 'x' is in groups 'C' and 'D'"):
        Schema("mine", (group("C"), group("D")))


# --- shapes and fields ------------------------------------------------------------

SHAPED = """name = "shaped"

[[group]]
key = "E"
[group.members]
isv_full = { dtype = "f32", shape = [757], fields = { kelly = [700, 712], sigma = 725 } }
obs = { dtype = "f32", shape = [-1, 64] }
"unit_*" = { dtype = "i32", shape = [-1, 4] }
plain = "u8"
table = { dtype = "f64" }
[group.members.isv_extra]
dtype = "f32"
shape = [2, 3]
[group.members.isv_extra.fields]
first_row = [0, 3]
"""


def test_members_as_tables_with_shape_and_fields(tmp_path: Path) -> None:
    from fastdiff.schema import Field, Layout, Member

    s = load_schema(_write(tmp_path, SHAPED))
    members = {m.pattern: m for m in s.groups[0].members}
    isv = Layout((757,), (Field("kelly", 700, 712), Field("sigma", 725, 726)))
    assert members["isv_full"] == Member("isv_full", "f32", isv, table=True)
    assert members["obs"].layout == Layout((-1, 64))
    assert members["plain"] == Member("plain", "u8")  # a dtype string, as before
    assert members["table"] == Member("table", "f64", None, table=True)
    assert s.layout_of("isv_full") == isv
    assert s.layout_of("unit_lots") == Layout((-1, 4))  # through the glob
    assert s.layout_of("plain") is None and s.layout_of("nowhere") is None
    assert RL_STATE.layout_of("isv_full") is None  # the preset stays as it is
    assert s.classify("isv_full") == ("E", "f32")


def test_shaped_members_print_in_the_form_given_and_load_back(tmp_path: Path) -> None:
    s = load_schema(_write(tmp_path, SHAPED))
    text = schema_to_toml(s)
    assert '"plain" = "u8"' in text
    assert '"table" = { dtype = "f64" }' in text
    assert (
        '"isv_full" = { dtype = "f32", shape = [757], fields = { kelly = [700, 712], '
        "sigma = [725, 726] } }" in text
    )
    again = tmp_path / "again.toml"
    again.write_text(text)
    assert load_schema(again) == s


def test_layout_fits_resolves_and_says_why_not() -> None:
    from fastdiff.schema import Field, Layout

    assert Layout((757,)).misfit(757) is None
    assert Layout((757,)).misfit(758) == "the schema's shape [757] holds 757"
    assert Layout((-1, 64)).misfit(128) is None and Layout((-1, 64)).resolve(128) == (2, 64)
    assert Layout((-1, 64)).misfit(100) == (
        "not a whole number of 64 (the schema's shape [-1, 64])"
    )
    assert Layout((-1, 64)).resolve(0) == (0, 64)
    short = Layout(None, (Field("f", 8, 12),))
    assert (
        short.misfit(12) is None and short.misfit(11) == "the schema's field 'f' ends at element 12"
    )
    assert Layout((757,)).misfit_message(3032, 4, "f32") == (
        "size 3032 bytes is 758 f32 elements, but the schema's shape [757] holds 757; nothing "
        "was compared for this buffer (truncated dump, or wrong shape in the schema?)"
    )


MEMBER_ERRORS = [
    ("x = { shape = [3] }", "key 'members.x': a member given as a table needs its dtype"),
    ('x = { dtype = "f33" }', "key 'members.x.dtype': unknown dtype 'f33'"),
    ('x = { dtype = "f32", colour = 1 }', "key 'members.x.colour': unknown key (expected one "
     "of: dtype, fields, inputs, int_tolerance, shape)"),
    ('x = { dtype = "f32", shape = [] }', "key 'members.x.shape': must be a list of dimensions"),
    ('x = { dtype = "f32", shape = [0] }', "key 'members.x.shape': dimension 0 is 0: each is a "
     "positive integer, or -1"),
    ('x = { dtype = "f32", shape = [-1, -1] }', "only one dimension may be -1"),
    ('x = { dtype = "f32", shape = [2, true] }', "dimension 1 is True"),
    ('x = { dtype = "f32", shape = [4], fields = { a = [2, 5] } }',
     "key 'members.x.fields.a': [2, 5) lies outside the shape [4] (4 elements)"),
    ('x = { dtype = "f32", fields = { a = [2, 2] } }',
     "key 'members.x.fields.a': [2, 2) is empty or negative"),
    ('x = { dtype = "f32", fields = { a = "2" } }', "'2' is not an element range"),
    ('x = { dtype = "f32", fields = { a = [0, 4], b = [3, 5] } }',
     "key 'members.x.fields.b': [3, 5) overlaps field 'a' [0, 4); fields must not overlap"),
    ("x = 3", "key 'members.x': must be a dtype"),
]  # fmt: skip


@pytest.mark.parametrize(("member", "fragment"), MEMBER_ERRORS)
def test_bad_member_tables_name_file_line_and_key(
    tmp_path: Path, member: str, fragment: str
) -> None:
    p = _write(tmp_path, f'[[group]]\nkey = "A"\n\n[group.members]\nok = "u8"\n{member}\n')
    with pytest.raises(SchemaError) as err:
        load_schema(p)
    msg = str(err.value)
    assert msg.startswith(f"{p}:6: group 1 "), msg
    assert fragment in msg


def test_a_member_table_error_names_the_line_of_its_key(tmp_path: Path) -> None:
    text = (
        '[[group]]\nkey = "A"\n[group.members.x]\ndtype = "f32"\nshape = [4]\n\n'
        "[group.members.x.fields]\na = [0, 2]\nb = [9, 10]\n"
    )
    with pytest.raises(SchemaError, match=r"s\.toml:9: group 1 key 'members\.x\.fields\.b': "
                       r"\[9, 10\) lies outside the shape \[4\]"):  # fmt: skip
        load_schema(_write(tmp_path, text))


KNOWN = (
    "known tables: [[group]], [group.members], [group.members.NAME] (a member given as a "
    "table) and [group.members.NAME.fields]"
)


def test_a_mistyped_table_header_is_reported_at_its_line_with_the_known_ones(
    tmp_path: Path,
) -> None:
    """The issue's two cases: [group.member] was reported at the group's line,
    [[groups]] as a duplicate ('group', 'members') further down."""
    member = (
        'name = "x"\n\n[[group]]\nkey = "E"\ntitle = "ISV"\nhint = "h"\n\n'
        '[group.member]\nisv_full = "f32"\n'
    )
    p = _write(tmp_path, member)
    with pytest.raises(SchemaError) as err:
        load_schema(p)
    assert str(err.value) == f"{p}:8: group 1: unknown table [group.member] ({KNOWN})"
    groups = (
        'name = "x"\n\n[[group]]\nkey = "E"\n[group.members]\nisv_full = "f32"\n\n'
        '[[groups]]\nkey = "F"\ntitle = "F"\n\n\n\n\n[group.members]\nrewards = "f32"\n'
    )
    p = _write(tmp_path, groups)
    with pytest.raises(SchemaError) as err:
        load_schema(p)
    msg = str(err.value)
    assert msg.startswith(f"{p}:8: unknown table [[groups]] ({KNOWN}); it also makes the file "
                          "invalid TOML: Cannot declare ('group', 'members') twice")  # fmt: skip
    p = _write(tmp_path, '[[groups]]\nkey = "F"\n')  # valid TOML: an unknown top-level key
    with pytest.raises(SchemaError) as err:
        load_schema(p)
    assert str(err.value) == f"{p}:1: unknown table [[groups]] ({KNOWN})"


def test_resolve_schema_names_the_argument_given() -> None:
    with pytest.raises(SchemaError, match=r"^--schema 'nope': no such preset or file"):
        resolve_schema("nope")
    with pytest.raises(SchemaError, match=r"^fastdiff schema 'nope': no such preset or file"):
        resolve_schema("nope", what="fastdiff schema")


def test_schema_from_a_run_keeps_its_members_and_lists_the_rest(tmp_path: Path) -> None:
    """``fastdiff schema --from RUN``: the preset's members the run has (a group
    left empty is left out), the run's other buffers in a group 'new' with the
    default dtype; the TOML loads back and compares the run."""
    from helpers import fastdiff

    run = tmp_path / "my-run"
    run.mkdir()
    for name in ("rewards", "action_prng_state", "my_buf", "weird name"):
        for step in (0, 1):
            (run / f"step_{step}_{name}.bin").write_bytes(bytes(8))

    p = fastdiff("schema", "--from", run, "--default-dtype", "f32")
    assert p.returncode == 0, p.stderr
    path = tmp_path / "mine.toml"
    path.write_text(p.stdout)
    schema = load_schema(path)
    assert schema.name == "my-run-schema" and schema.default_dtype == "f32"
    members = [(g.key, [(m.pattern, m.dtype, m.unset) for m in g.members]) for g in schema.groups]
    assert members == [
        ("C", [("action_prng_state", "u32", False)]),
        ("F", [("rewards", "f32", False)]),
        ("new", [("my_buf", "f32", True), ("weird name", "f32", True)]),
    ]
    compared = fastdiff("compare", "--schema", path, run, run)
    assert compared.returncode == 0, compared.stderr
    (note,) = compare_runs(run, run, CompareOptions(schema=str(path))).notes  # no raw bytes
    assert note.kind is NoteKind.DTYPE_UNSET
    assert note["unset"] == (("my_buf", "f32"), ("weird name", "f32"))

    # Names with glob characters are written as patterns matching just them.
    odd = tmp_path / "odd"
    odd.mkdir()
    for name in ("w[1]", "b*", "bx", "c?"):
        (odd / f"step_0_{name}.bin").write_bytes(bytes(8))
    p = fastdiff("schema", "--from", odd, "--default-dtype", "f32")
    assert p.returncode == 0, p.stderr
    path.write_text(p.stdout)
    schema = load_schema(path)
    assert [m.pattern for m in schema.groups[-1].members] == ["b[*]", "bx", "c[?]", "w[[]1]"]
    for name in ("w[1]", "b*", "bx", "c?"):
        assert schema.classify(name) == ("new", "f32"), name
    assert schema.classify("w1")[0] == "other" and schema.classify("by")[0] == "other"
    p = fastdiff("schema", "--from", f"{odd}/.")
    assert '\nname = "odd-schema"\n' in p.stdout, p.stdout[:300]

    for bad, why in ((tmp_path / "nowhere", "run folder not found"), (tmp_path, "no step_")):
        p = fastdiff("schema", "--from", bad)
        assert p.returncode == 2 and p.stdout == ""
        assert p.stderr.startswith(f"fastdiff: error: --from {bad}") and why in p.stderr


def test_a_dtype_schema_from_wrote_keeps_saying_it_is_not_set(tmp_path: Path) -> None:
    """``schema --from`` writes each buffer in no group with a dtype followed
    by '?' ("u8?"): read as that dtype, and every report that uses it says
    the dtype is not set (compare's text and JSON notes, stats), and gives no
    magnitude hint for raw bytes, until the user writes the dtype."""
    import json
    import struct

    from helpers import fastdiff, write_runs

    two_ulp = struct.pack("<2I", 0x3F800000, 0x3F800002)
    a, b = write_runs(tmp_path, {"step_0_w.bin": (struct.pack("<2f", 1, 1), two_ulp)})
    p = fastdiff("schema", "--from", a)
    assert p.returncode == 0, p.stderr
    assert '"w" = "u8?"' in p.stdout and p.stdout.startswith('# A dtype with a "?" after it')
    mine = tmp_path / "mine.toml"
    mine.write_text(p.stdout)
    assert '"w" = "u8?"' in fastdiff("schema", mine).stdout  # checked and printed as read
    report = compare_runs(a, b, CompareOptions(schema=str(mine)))
    (unset,) = report.notes
    assert (unset.kind, unset["schema"], unset["unset"]) == (
        NoteKind.DTYPE_UNSET, "a-schema", (("w", "u8"),)
    )  # fmt: skip
    (group,) = [g for g in report.groups if g.status == "diverged"]
    assert group.cause is not None and group.cause.kind == "bytes"  # no magnitude for bytes
    # The words, once (the text's and stats' line):
    note = (
        "note: 1 buffer (w) has a dtype the schema 'a-schema' does not set yet (written with "
        "a '?', as \"u8?\"), so it was read as raw bytes (u8)"
    )
    assert note in fastdiff("compare", "--schema", mine, a, b).stdout
    assert note in fastdiff("stats", a, "--schema", mine).stderr
    doc = json.loads(fastdiff("compare", "--schema", mine, a, b, "--format", "json").stdout)
    assert len(doc["notes"]) == 1
    # A manifest records the member as it is written: still not set.
    manifest = tmp_path / "a.json"
    assert fastdiff("hash", a, "--schema", mine, "-o", manifest).returncode == 0
    (again,) = compare_runs(manifest, b).notes
    assert (again.kind, again["unset"]) == (NoteKind.DTYPE_UNSET, (("w", "u8"),))

    # Set: the note goes, and the 2-ULP difference is rounding-size.
    mine.write_text(p.stdout.replace('"u8?"', '"f32"'))
    report = compare_runs(a, b, CompareOptions(schema=str(mine)))
    assert report.notes == ()
    (w,) = report.buffers
    assert (w.dtype, w.max_ulp, w.magnitude) == ("f32", 2, "rounding")
    # With --default-dtype, the unset dtype is that one, and said so.
    p = fastdiff("schema", "--from", a, "--default-dtype", "f32")
    mine.write_text(p.stdout)
    assert '"w" = "f32?"' in p.stdout
    report = compare_runs(a, b, CompareOptions(schema=str(mine)))
    (unset,) = report.notes
    assert (unset.kind, unset["unset"]) == (NoteKind.DTYPE_UNSET, (("w", "f32"),))
    assert report.buffers[0].magnitude == "rounding"


def test_schema_from_a_run_writes_the_dtype_its_headers_give(tmp_path: Path) -> None:
    """``schema --from`` a recorder's run (``.npy`` dumps): each buffer gets the
    dtype its files' headers give, set (compare reads it so), in group 'new'
    and for a preset member alike; a raw ``.bin`` beside them keeps the
    unset default. The comment and the group's title say only what holds."""
    import numpy as np
    from helpers import fastdiff

    from fastdiff import Recorder

    run = tmp_path / "rec"
    with Recorder(run) as rec:
        for step in (0, 1):
            rec.dump(step, "rewards", np.ones(4, np.float64))  # f32 in the preset
            rec.dump(step, "my_buf", np.ones(3, np.int16))
    mine = tmp_path / "mine.toml"

    def members(stdout: str) -> list[tuple[str, list[tuple[str, str, bool]]]]:
        mine.write_text(stdout)
        schema = load_schema(mine)
        return [(g.key, [(m.pattern, m.dtype, m.unset) for m in g.members]) for g in schema.groups]

    p = fastdiff("schema", "--from", run, "--default-dtype", "f32")
    assert p.returncode == 0, p.stderr
    assert members(p.stdout) == [
        ("F", [("rewards", "f64", False)]),
        ("new", [("my_buf", "i16", False)]),
    ]
    assert "?" not in p.stdout and "set each" not in p.stdout and "dtype of each" not in p.stdout
    compared = fastdiff("compare", "--schema", mine, run, run, "--format", "json")
    assert compared.returncode == 0, compared.stderr
    assert json.loads(compared.stdout)["notes"] == []  # no unset dtype, no header disagreeing

    (run / "step_0_raw.bin").write_bytes(bytes(8))
    p = fastdiff("schema", "--from", run)
    assert members(p.stdout) == [
        ("F", [("rewards", "f64", False)]),
        ("new", [("my_buf", "i16", False), ("raw", "u8", True)]),
    ]
    assert p.stdout.startswith('# A dtype with a "?" after it ("u8?") is not set yet')
    assert "set each one's dtype" not in p.stdout  # only one of them is unset


def test_an_unset_dtype_is_named_as_written_with_a_default_dtype(tmp_path: Path) -> None:
    """With ``--default-dtype f32``, ``schema --from`` writes "f32?", and the
    file's comment and every note name that, not "u8?"."""
    import struct

    from helpers import fastdiff, write_runs

    two_ulp = struct.pack("<2I", 0x3F800000, 0x3F800002)
    a, b = write_runs(tmp_path, {"step_0_w.bin": (struct.pack("<2f", 1, 1), two_ulp)})
    p = fastdiff("schema", "--from", a, "--default-dtype", "f32")
    assert p.returncode == 0, p.stderr
    assert '"w" = "f32?"' in p.stdout and '("f32?") is not set yet' in p.stdout
    assert "u8" not in p.stdout
    mine = tmp_path / "mine.toml"
    mine.write_text(p.stdout)
    text = fastdiff("compare", "--schema", mine, a, b).stdout
    assert "(written with a '?', as \"f32?\"), so it was read as f32" in text  # the words
    assert "u8" not in text
    (unset,) = compare_runs(a, b, CompareOptions(schema=str(mine))).notes
    assert unset["unset"] == (("w", "f32"),)


def test_preset_files_parsed_form_is_current() -> None:
    """``fastdiff/presets/parsed.py`` is what ``python -m fastdiff.presets``
    writes from the packaged ``.toml`` files now: edit a preset's file
    without running it and this fails."""
    from fastdiff import presets

    with open(Path(presets.__file__).with_name("parsed.py"), encoding="utf-8") as fh:
        assert fh.read() == presets.parsed_source()


def test_preset_file_read_as_a_schema_file_is_the_preset() -> None:
    """The packaged file, read by tomllib like a user's ``--schema`` file, is
    the preset compare uses; ``fastdiff schema rl-state`` prints that file."""
    import subprocess
    import sys

    from fastdiff import presets

    path = presets.path_of("rl-state")
    assert load_schema(path) == RL_STATE == resolve_schema(None)
    p = subprocess.run(
        [sys.executable, "-m", "fastdiff", "schema", "rl-state"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert p.stdout == Path(path).read_text(encoding="utf-8")


def _naive_classify(schema: Schema, name: str) -> tuple[str, str]:
    """The plain twin of ``Schema.classify``: exact names, then every glob in
    order."""
    from fnmatch import fnmatchcase

    members = [(m, g.key) for g in schema.groups for m in g.members]
    for m, key in members:
        if not m.is_glob and m.pattern == name:
            return key, m.dtype
    for m, key in members:
        if m.is_glob and fnmatchcase(name, m.pattern):
            return key, m.dtype
    return OTHER, schema.default_dtype


_PATTERN_CHARS = "ab.*?[]!-"


@settings(max_examples=400, deadline=None)
@given(
    patterns=st.lists(st.text(_PATTERN_CHARS, max_size=6), min_size=1, max_size=12, unique=True),
    names=st.lists(st.text("ab.*?[]!-c", max_size=7), max_size=20),
    cuts=st.lists(st.integers(0, 12), max_size=4),
)
def test_classify_matches_its_naive_twin(
    patterns: list[str], names: list[str], cuts: list[int]
) -> None:
    """Globs are tried by their literal prefix, not one by one: the first
    match in the schema's order still wins, for any patterns and names
    (brackets, escapes, empty prefixes, names shorter than a prefix)."""
    from fastdiff.schema import Group, Member

    bounds = sorted({0, len(patterns), *(c % (len(patterns) + 1) for c in cuts)})
    dtypes = ("u8", "f32", "i64")
    groups = tuple(
        Group(
            f"G{i}",
            f"G{i}",
            "",
            tuple(Member(p, dtypes[(i + j) % 3]) for j, p in enumerate(patterns[lo:hi])),
        )
        for i, (lo, hi) in enumerate(itertools.pairwise(bounds))
        if hi > lo
    )
    schema = Schema("t", groups, "u16")
    for name in [*names, *patterns]:
        assert schema.classify(name) == _naive_classify(schema, name)
