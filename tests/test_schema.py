"""The schema: presets, the TOML loader and its errors, buffer classification."""

from __future__ import annotations

from pathlib import Path

import pytest

from fastdiff.errors import SchemaError
from fastdiff.schema import (
    OTHER,
    PRESETS,
    RL_STATE,
    load_schema,
    resolve_schema,
    schema_to_toml,
)

REFERENCE_MEMBERS = {
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
    assert [g.key for g in RL_STATE.groups] == ["C", "D", "E", "F"]
    for g in RL_STATE.groups:
        assert {m.pattern: m.dtype for m in g.members} == REFERENCE_MEMBERS[g.key]
        assert g.title and g.hint
    assert sum(len(g.members) for g in RL_STATE.groups) == 34


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
