"""Where a divergence was born (issue 16): inputs declared in the schema,
the roles origin / receiver / undetermined per buffer and step, ``@prev``
at step 0, at a first step that is not 0 and across gaps; inputs that are
not dumped, missing from a run, malformed or within tolerance; cycles and
the near-miss warning; the JSON and text report; the ``rl-state`` preset's
dataflow; and the JSON of schemas without inputs, byte for byte as before.

Every test runs the command line (``helpers.fastdiff``) on runs written here.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from helpers import f32, fastdiff

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = ROOT / "tests" / "expected"

SCHEMA = """\
name = "pipe"

[[group]]
key = "P"
title = "pipeline"
hint = "Look at the pipeline kernels."
[group.members]
src = { dtype = "f32", inputs = [] }
mid = { dtype = "f32", inputs = ["src"] }
acc = { dtype = "f32", inputs = ["mid", "acc@prev"] }
plain = "f32"

[[group]]
key = "Q"
title = "consumers"
hint = "Look at the consumers."
[group.members]
out = { dtype = "f32", inputs = ["acc", "logits"] }
q2 = { dtype = "f32", inputs = ["src"] }
"""

NAMES = ("src", "mid", "acc", "plain", "out", "q2")
Run = dict[tuple[int, str], bytes]


def base(steps: range | list[int] = range(3)) -> Run:
    """Every buffer at every step, a distinct value each."""
    return {(s, n): f32(*(100 * s + 10 * i + k for k in range(4)))
            for s in steps for i, n in enumerate(NAMES)}  # fmt: skip


def bump(run: Run, step: int, name: str, by: float = 1.0) -> None:
    """Change the first element of a buffer by ``by``."""
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


def compare_json(tmp: Path, a: Run, b: Run, *opts: str, code: int = 1) -> dict[str, Any]:
    ra, rb, schema = write(tmp, a, b)
    p = fastdiff("compare", "--schema", schema, ra, rb, "--format", "json", *opts)
    assert p.returncode == code, p.stderr
    return json.loads(p.stdout)


def roles(doc: dict[str, Any]) -> dict[tuple[int, str], tuple[Any, ...]]:
    """(role, differing_inputs, undumped_inputs, prev_step) of every buffer that has a role."""
    return {
        (b["step"], b["name"]): (
            b["role"],
            b["differing_inputs"],
            b["undumped_inputs"],
            b["prev_step"],
        )
        for b in doc["buffers"]
        if "role" in b
    }


# --- the roles --------------------------------------------------------------------


def test_origin_receivers_and_a_buffer_without_inputs(tmp_path: Path) -> None:
    a = base()
    b = base()
    bump(b, 1, "mid")  # born here: its input src matched
    bump(b, 1, "acc")  # received from mid
    bump(b, 1, "out")  # received from acc (logits is never dumped: differing wins)
    bump(b, 1, "plain")  # declares no inputs: no role
    bump(b, 2, "acc")  # acc@prev differs (step 1), mid matches at 2
    doc = compare_json(tmp_path, a, b)
    assert roles(doc) == {
        (1, "mid"): ("origin", [], [], None),
        (1, "acc"): ("receiver", ["mid"], [], 0),
        (1, "out"): ("receiver", ["acc"], ["logits"], None),
        (2, "acc"): ("receiver", ["acc@prev"], [], 1),
    }
    assert doc["origins"] == [{"step": 1, "name": "mid", "group": "P"}]
    plain = next(x for x in doc["buffers"] if (x["step"], x["name"]) == (1, "plain"))
    assert plain["status"] == "diverged" and "role" not in plain
    equal = [x for x in doc["buffers"] if x["status"] == "equal"]
    assert equal and not any("role" in x for x in equal)


def test_an_input_not_dumped_leaves_the_role_undetermined(tmp_path: Path) -> None:
    a, b = base(), base()
    bump(b, 1, "out")  # acc matched, logits is never dumped
    doc = compare_json(tmp_path, a, b)
    assert roles(doc) == {(1, "out"): ("undetermined", [], ["logits"], None)}
    assert doc["origins"] == []


def test_prev_at_step_0_is_no_input_and_at_a_first_step_after_0_is_not_dumped(
    tmp_path: Path,
) -> None:
    a, b = base(), base()
    bump(b, 0, "acc")  # step 0: no earlier state, mid matched: born here
    (tmp_path / "zero").mkdir()
    doc = compare_json(tmp_path / "zero", a, b)
    assert roles(doc)[(0, "acc")] == ("origin", [], [], None)

    a, b = base([5, 6]), base([5, 6])
    bump(b, 5, "acc")  # the runs hold no step before 5: acc@prev is not dumped
    (tmp_path / "later").mkdir()
    doc = compare_json(tmp_path / "later", a, b)
    assert roles(doc) == {(5, "acc"): ("undetermined", [], ["acc@prev"], None)}


def test_prev_across_a_gap_is_the_latest_step_held_and_says_which(tmp_path: Path) -> None:
    steps = [0, 10, 20]
    a, b = base(steps), base(steps)
    bump(b, 20, "acc")  # acc at 10 matched: born at 20 (or in steps 11-19, not dumped)
    doc = compare_json(tmp_path, a, b)
    assert roles(doc) == {(20, "acc"): ("origin", [], [], 10)}
    p = fastdiff("compare", "--schema", tmp_path / "s.toml", tmp_path / "a", tmp_path / "b")
    assert p.returncode == 1, p.stderr
    assert (
        "  born in: P acc at step 20 (inputs mid, acc@prev matched; @prev is step 10, the "
        "latest both runs hold before 20)" in p.stdout.splitlines()
    )


def test_an_input_in_one_run_only_or_malformed_leaves_the_role_undetermined(
    tmp_path: Path,
) -> None:
    a, b = base(), base()
    del b[(1, "mid")]  # mid only in run A: it has a role itself, acc cannot tell
    bump(b, 1, "acc")
    (tmp_path / "missing").mkdir()
    doc = compare_json(tmp_path / "missing", a, b)
    assert roles(doc) == {
        (1, "mid"): ("origin", [], [], None),  # a structural divergence, born here
        (1, "acc"): ("undetermined", [], ["mid"], 0),
    }

    a, b = base(), base()
    b[(1, "mid")] = b[(1, "mid")] + b"\x00"  # 17 bytes: not a whole number of f32
    bump(b, 1, "acc")
    (tmp_path / "malformed").mkdir()
    doc = compare_json(tmp_path / "malformed", a, b, code=2)
    assert doc["verdict"] == "error"
    assert roles(doc) == {(1, "acc"): ("undetermined", [], ["mid"], 0)}


def test_an_input_within_tolerance_matches(tmp_path: Path) -> None:
    a, b = base(), base()
    bump(b, 1, "mid", 0.001)  # within --atol 0.01
    bump(b, 1, "acc", 1.0)
    doc = compare_json(tmp_path, a, b, "--atol", "0.01")
    statuses = {(x["step"], x["name"]): x["status"] for x in doc["buffers"]}
    assert statuses[(1, "mid")] == "within_tolerance"
    assert roles(doc) == {(1, "acc"): ("origin", [], [], 0)}  # mid is within tolerance: no role
    assert doc["origins"] == [{"step": 1, "name": "acc", "group": "P"}]


def test_a_source_is_an_origin(tmp_path: Path) -> None:
    a, b = base(), base()
    bump(b, 2, "src")
    bump(b, 2, "mid")
    bump(b, 2, "q2")
    doc = compare_json(tmp_path, a, b)
    assert (doc["first_divergent_step"], doc["first_divergent_groups"]) == (2, ["P", "Q"])
    assert doc["born"] == {
        "step": 2, "origins": [{"step": 2, "group": "P", "name": "src", "rank": None}],
        "received": ["mid", "q2"], "undetermined": [], "later": [], "declared": True,
    }  # fmt: skip
    src = next(x for x in doc["buffers"] if (x["step"], x["name"]) == (2, "src"))
    assert (src["role"], src["inputs"]) == ("origin", [])  # a source: no inputs
    assert roles(doc)[(2, "mid")] == ("receiver", ["src"], [], None)


def test_golden_the_text_words_of_origins(tmp_path: Path) -> None:
    """The text renderer's words for where a divergence was born, once: a
    source's role on its line and in the born-in line (the other tests read
    the roles and the born finding from the JSON)."""
    a, b = base(), base()
    bump(b, 2, "src")
    bump(b, 2, "mid")
    ra, rb, schema = write(tmp_path, a, b)
    lines = fastdiff("compare", "--schema", schema, ra, rb).stdout.splitlines()
    assert "  born in: P src at step 2 (a source: no inputs); received: mid" in lines
    src = next(ln for ln in lines if ln.startswith("    P  src [f32]  DIVERGED;"))
    assert src.endswith("; origin (a source: no inputs)")
    mid = next(ln for ln in lines if ln.startswith("    P  mid [f32]  DIVERGED;"))
    assert mid.endswith("; receiver (differing inputs: src)")


def test_golden_the_text_verdict_names_origin_receivers_undetermined_and_the_hint_order(
    tmp_path: Path,
) -> None:
    """The text renderer's golden report of origins. At step 1 P's ``plain``
    (no inputs) and Q's ``q2`` (born there) diverge: only Q, where it was
    born, gets a hint (issue 23). ``out`` is left open by ``logits``; ``mid``
    is born again at step 2; the timeline marks both origins."""
    a, b = base(), base()
    bump(b, 1, "plain")
    bump(b, 1, "q2")
    bump(b, 1, "out")
    bump(b, 2, "mid")
    ra, rb, schema = write(tmp_path, a, b)
    p = fastdiff("compare", "--schema", schema, ra, rb)
    assert p.returncode == 1, p.stderr
    lines = p.stdout.splitlines()
    at = lines.index(
        "VERDICT: diverged: first divergent step 1; groups: P (pipeline), Q (consumers)"
    )
    assert lines[at + 1 : at + 4] == [
        "  born in: Q q2 at step 1 (inputs src matched)",
        "  undetermined: Q out at step 1 (not compared: logits)",
        "  1 later origin: P mid at step 2",
    ]
    hints = [ln.split(". ")[0] for ln in lines if ln.startswith("next, ")]
    assert hints == ["next, Q: Look at the consumers"]
    out = next(ln for ln in lines if ln.startswith("    Q  out [f32]  DIVERGED;"))
    assert out.endswith("; undetermined (inputs not compared: logits)")
    table = lines[lines.index("  step   P   Q") :]
    assert table[1:3] == ["     1   1  1*", "     2  1*   ."]
    assert any(ln.endswith("; *: an origin, where a divergence was born)") for ln in lines)


# --- declaring inputs ------------------------------------------------------------


def test_schema_prints_inputs_back_and_from_leaves_them_out(tmp_path: Path) -> None:
    ra, _, schema = write(tmp_path, base(range(1)), base(range(1)))
    p = fastdiff("schema", schema)
    assert p.returncode == 0, p.stderr
    assert '"acc" = { dtype = "f32", inputs = ["mid", "acc@prev"] }' in p.stdout.splitlines()
    assert '"src" = { dtype = "f32", inputs = [] }' in p.stdout.splitlines()
    assert '"plain" = "f32"' in p.stdout.splitlines()
    (tmp_path / "back.toml").write_text(p.stdout, encoding="utf-8")
    again = fastdiff("schema", tmp_path / "back.toml")
    assert again.stdout == p.stdout  # read back as written
    start = fastdiff("schema", schema, "--from", ra)
    assert start.returncode == 0, start.stderr
    assert "inputs" not in start.stdout
    assert '"acc" = "f32"' in start.stdout.splitlines()


def test_a_cycle_within_a_step_is_an_error_naming_members_file_and_line(tmp_path: Path) -> None:
    cyclic = SCHEMA.replace('mid = { dtype = "f32", inputs = ["src"] }',
                            'mid = { dtype = "f32", inputs = ["src", "out"] }')  # fmt: skip
    ra, rb, schema = write(tmp_path, base(range(1)), base(range(1)), cyclic)
    p = fastdiff("compare", "--schema", schema, ra, rb)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == (
        f"fastdiff: error: {schema}:9: group 1 key 'members.mid.inputs': the inputs at one "
        "step form a cycle: mid -> out -> acc -> mid; a buffer cannot be computed from "
        "itself within a step (write NAME@prev for an input's value at the previous step)\n"
    )
    # Its own value at the previous step is no cycle (acc@prev above); at the same step it is.
    own = SCHEMA.replace('["mid", "acc@prev"]', '["mid", "acc"]')
    (tmp_path / "own.toml").write_text(own, encoding="utf-8")
    p = fastdiff("schema", tmp_path / "own.toml")
    assert p.returncode == 2
    assert "own.toml:10: group 1 key 'members.acc.inputs'" in p.stderr
    assert "form a cycle: acc -> acc;" in p.stderr


@pytest.mark.parametrize(
    ("inputs", "problem"),
    [
        ('"src"', "must be a list of buffer names"),
        ("[1]", "must be a list of buffer names"),
        ('["@prev"]', "'@prev' names no buffer"),
        ('[""]', "'' names no buffer"),
        ('["src", "src"]', "'src' is listed twice"),
    ],
)
def test_bad_inputs_name_file_line_and_key(tmp_path: Path, inputs: str, problem: str) -> None:
    bad = SCHEMA.replace('mid = { dtype = "f32", inputs = ["src"] }',
                         f'mid = {{ dtype = "f32", inputs = {inputs} }}')  # fmt: skip
    (tmp_path / "s.toml").write_text(bad, encoding="utf-8")
    p = fastdiff("schema", tmp_path / "s.toml")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith(f"fastdiff: error: {tmp_path / 's.toml'}:9: group 1 key ")
    assert "'members.mid.inputs': " + problem in p.stderr
    assert p.stderr.count("\n") == 1


def test_an_input_named_close_to_a_member_gets_a_warning(tmp_path: Path) -> None:
    typo = SCHEMA.replace('["mid", "acc@prev"]', '["mids", "acc@prev"]')
    a, b = base(), base()
    bump(b, 1, "acc")
    ra, rb, schema = write(tmp_path, a, b, typo)
    p = fastdiff("compare", "--schema", schema, ra, rb, "--format", "json")
    assert p.returncode == 1
    assert p.stderr == (
        f"fastdiff: warning: {schema}:10: input 'mids' of 'acc' is in no group; did you mean "
        "'mid'? (an input that is not dumped is allowed: then ignore this)\n"
    )
    # Allowed: the input counts as not dumped.
    assert roles(json.loads(p.stdout)) == {(1, "acc"): ("undetermined", [], ["mids"], 0)}
    # ``fastdiff schema`` warns alike; an input far from every member name
    # ('logits') is an input that is not dumped: no warning.
    assert "did you mean 'mid'?" in fastdiff("schema", schema).stderr
    (tmp_path / "far.toml").write_text(SCHEMA, encoding="utf-8")
    assert fastdiff("schema", tmp_path / "far.toml").stderr == ""


# --- the example and the README ------------------------------------------------------


def docs_block(page: str, command: str) -> list[str]:
    """The lines of the code block of the docs page ``page`` that starts with ``$ command``."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    block = text[text.index(f"$ {command}") :]
    return block[: block.index("```")].splitlines()[1:]


def test_the_example_matches_its_generator(tmp_path: Path) -> None:
    import importlib.util

    folder = ROOT / "examples" / "origins"
    # By its path: examples/anatomy has a make_runs module too.
    spec = importlib.util.spec_from_file_location("origins_make_runs", folder / "make_runs.py")
    assert spec is not None and spec.loader is not None
    make_runs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_runs)
    make_runs.main(tmp_path)
    for run in ("run-a", "run-b"):
        made = {p.name: p.read_bytes() for p in (tmp_path / run).iterdir()}
        committed = {p.name: p.read_bytes() for p in (folder / run).iterdir()}
        assert made == committed, "run: python examples/origins/make_runs.py"


def test_the_readme_walk_through_is_the_examples_output() -> None:
    """Every line the docs' "Where it was born" shows is the example's, in order."""
    command = (
        "fastdiff compare --schema examples/origins/schema.toml examples/origins/run-a "
        "examples/origins/run-b"
    )
    shown = docs_block("explanation/origins.md", command)
    p = fastdiff(*command.split()[1:])
    assert p.returncode == 1, p.stderr
    out = p.stdout.splitlines()
    at = 0
    for line in shown:
        if line == "...":
            continue
        assert line in out[at:], line
        at = out.index(line, at) + 1
    assert len([ln for ln in shown if ln != "..."]) > 15


# --- the preset ------------------------------------------------------------------


def test_the_rl_state_preset_declares_the_reference_scripts_dataflow() -> None:
    p = fastdiff("schema")
    assert p.returncode == 0, p.stderr
    lines = set(p.stdout.splitlines())
    # "if rewards diverge with EQUAL action_prng + LOB state, the reward kernel itself"
    assert (
        '"rewards" = { dtype = "f32", inputs = ["actions", "unit_entry_price", '
        '"prev_realized_pnl"] }' in lines
    )
    # "if advantages diverge with EQUAL rewards: the advantage reduction"
    assert (
        '"advantages" = { dtype = "f32", inputs = ["rewards", "dones", "advantages@prev"] }'
        in lines
    )
    # the action kernel's PRNG "must advance unconditionally"
    assert '"action_prng_state" = { dtype = "u32", inputs = ["action_prng_state@prev"] }' in lines
    assert '"actions" = { dtype = "i32", inputs = ["action_prng_state", "policy_logits"] }' in lines


def test_the_preset_tells_the_reward_kernel_from_what_received_its_divergence(
    tmp_path: Path,
) -> None:
    """The fixture ``diverge_F`` changes rewards at steps 2 and 3 with the
    RNG and simulator state equal: born in the reward kernel ("if rewards
    diverge with EQUAL action_prng + LOB state, the reward kernel itself").
    With the advantages changed too, they received it from the rewards."""
    a, b = ROOT / "tests/fixtures/diverge_F/a", ROOT / "tests/fixtures/diverge_F/b"
    p = fastdiff("compare", a, b, "--format", "json")
    assert p.returncode == 1
    doc = json.loads(p.stdout)
    assert doc["origins"] == [
        {"step": 2, "name": "rewards", "group": "F"},
        {"step": 3, "name": "rewards", "group": "F"},
    ]
    assert roles(doc)[(2, "rewards")] == ("origin", [], [], None)
    copy = tmp_path / "b"
    copy.mkdir()
    for f in b.iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    adv = bytearray((copy / "step_2_advantages.bin").read_bytes())
    adv[0] ^= 1
    (copy / "step_2_advantages.bin").write_bytes(bytes(adv))
    p = fastdiff("compare", a, copy)
    assert p.returncode == 1
    assert (
        "  born in: F rewards at step 2 (inputs actions, unit_entry_price, prev_realized_pnl "
        "matched); received: advantages"
    ) in p.stdout.splitlines()


# --- runs without inputs -------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--schema", "examples/anatomy/schema.toml", "examples/anatomy/run-a",
          "examples/anatomy/run-b"), "anatomy.json"),
        (("--schema", "raw", "tests/fixtures/only_in_one/a", "tests/fixtures/only_in_one/b"),
         "only_in_one.raw.json"),
    ],
)  # fmt: skip
def test_json_of_a_schema_without_inputs_is_byte_for_byte_as_before(
    args: tuple[str, ...], expected: str
) -> None:
    """``tests/expected/*.json``: written by fastdiff before inputs existed
    (``work`` left out: it holds timings), with the fields added since
    (``tolerance.int_tolerance``, ``max_ulp_of_scale``, ``cancellation``,
    each group's ``cause``, each timeline row's ``cell``)."""
    p = fastdiff("compare", *args, "--format", "json", text=False)
    assert p.returncode == 1
    got = b"".join(
        ln for ln in p.stdout.splitlines(keepends=True) if not ln.startswith(b'  "work": ')
    )
    assert got == (EXPECTED / expected).read_bytes()
