"""Fuzzing the parsers: the only outcomes are a correct result or a clear error.

The schema loader, the dump-name parser and the manifest loader get random
and mutated inputs from hypothesis. A clear error is a FastdiffError (the
CLI prints it as one line and exits 2) whose message names the file; any
other exception is a bug.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastdiff.dtypes import DTYPES
from fastdiff.errors import FastdiffError
from fastdiff.presets import RL_STATE
from fastdiff.schema import OTHER
from fastdiff.schemafile import load_schema, parse_schema, schema_to_toml
from fastdiff.sources.manifest import load_manifest, parse_manifest
from fastdiff.sources.names import parse_dump_name, split_name

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TMP = Path(tempfile.mkdtemp(prefix="fastdiff-fuzz-"))
atexit.register(shutil.rmtree, TMP, ignore_errors=True)


# --- file names -----------------------------------------------------------------------

names = st.one_of(
    st.text(max_size=40),
    st.builds(lambda n, b, s: f"step_{n}_{b}{s}", st.text("0123456789-+ x", max_size=5),
              st.text(max_size=12), st.sampled_from([".bin", ".bin ", ".BIN", "", ".bin.tmp"])),
)  # fmt: skip


@FUZZ
@given(names)
def test_dump_name_parser_is_total_and_exact(name: str) -> None:
    parsed = parse_dump_name(name)
    if parsed is None:
        return
    step, buffer = parsed
    assert step >= 0 and buffer
    assert name == f"step_{name[5:].split('_', 1)[0]}_{buffer}.bin"
    assert int(name[5:].split("_", 1)[0]) == step


@FUZZ
@given(st.integers(0, 10**12), st.text(min_size=1, max_size=30))
def test_dump_name_round_trips(step: int, buffer: str) -> None:
    assert parse_dump_name(f"step_{step}_{buffer}.bin") == (step, buffer)


SUFFIXES = [".bin", ".npy", ".safetensors", ".npz", ".pt", ".pth", ".bin.tmp", ".NPY", "", "."]
every_name = st.one_of(
    st.text(max_size=40),
    st.builds(lambda n, sep, b, s: f"step_{n}{sep}{b}{s}", st.text("0123456789_x.", max_size=5),
              st.sampled_from(["_", ""]), st.text(max_size=12), st.sampled_from(SUFFIXES)),
)  # fmt: skip


def _reference_split(name: str) -> tuple[str, str | None, str] | None:
    """The rule, as the README states it, by regular expressions."""
    import re

    m = re.fullmatch(r"step_([0-9]+)_(.+)\.(bin|npy)", name, re.DOTALL)
    if m:
        return m.group(1), m.group(2), {"bin": "raw", "npy": "npy"}[m.group(3)]
    m = re.fullmatch(r"step_([0-9]+)\.(safetensors|npz|pt|pth)", name)
    if m:
        return m.group(1), None, {"pt": "torch", "pth": "torch"}.get(m.group(2), m.group(2))
    return None


@FUZZ
@given(every_name)
def test_every_dump_name_follows_the_rule(name: str) -> None:
    """Every format's names against the rule written as regular expressions:
    the digits run to the first '_' (so a name may hold '_' and '.')."""
    assert split_name(name) == _reference_split(name)


# --- schemas ----------------------------------------------------------------------------

toml_scalars = st.one_of(
    st.sampled_from(sorted(DTYPES)), st.text(max_size=8), st.integers(), st.booleans(),
    st.floats(allow_nan=False), st.just([]), st.just({}),
)  # fmt: skip
member_tables = st.dictionaries(st.text(max_size=10), toml_scalars, max_size=5)
group_tables = st.fixed_dictionaries(
    {},
    optional={
        "key": st.one_of(st.text(max_size=4), st.integers(), st.just(OTHER)),
        "title": toml_scalars,
        "hint": toml_scalars,
        "members": st.one_of(member_tables, toml_scalars),
        "colour": toml_scalars,
    },
)
documents = st.fixed_dictionaries(
    {},
    optional={
        "name": toml_scalars,
        "default_dtype": toml_scalars,
        "schema_version": st.one_of(st.just(1), st.integers()),
        "group": st.one_of(st.lists(group_tables, max_size=4), toml_scalars),
        "extra": toml_scalars,
    },
)


@FUZZ
@given(documents)
def test_schema_documents_load_or_fail_clearly(doc: dict[str, object]) -> None:
    try:
        schema = parse_schema(doc, "", "fuzz.toml")
    except FastdiffError as exc:
        assert str(exc).startswith("fuzz.toml:") and "\n" not in str(exc)
        return
    # A schema that loads classifies any name into one of its groups or 'other'.
    keys = {g.key for g in schema.groups} | {OTHER}
    for name in ("rewards", "x", "unit_1", ""):
        key, dtype = schema.classify(name)
        assert key in keys and dtype in DTYPES


def mutate(text: str, data: st.DataObject) -> str:
    """A few random deletions, insertions and replacements of characters."""
    out = list(text)
    for _ in range(data.draw(st.integers(1, 6))):
        op = data.draw(st.sampled_from(["del", "ins", "rep"]))
        pos = data.draw(st.integers(0, max(0, len(out) - 1)))
        if op == "del" and out:
            del out[pos]
        elif op == "ins":
            out.insert(pos, data.draw(st.sampled_from([*'[]="\\#\n ,.{}', "f33"])))
        elif out:
            out[pos] = data.draw(st.characters())
    return "".join(out)


SCHEMA_TEXT = schema_to_toml(RL_STATE)


@FUZZ
@given(st.data())
def test_mutated_schema_files_load_or_fail_clearly(data: st.DataObject) -> None:
    text = mutate(SCHEMA_TEXT, data)
    p = TMP / "mutated.toml"
    p.write_bytes(text.encode("utf-8", "surrogatepass"))
    try:
        load_schema(p)
    except FastdiffError as exc:
        msg = str(exc)
        assert msg.startswith(f"{p}:") and "\n" not in msg


# --- manifests ----------------------------------------------------------------------------


def _real_manifest() -> dict[str, object]:
    from fastdiff.bench.synth import write_rl_run
    from fastdiff.hashrun import write_manifest
    from fastdiff.options import CompareOptions

    run = TMP / "run"
    if not run.exists():
        write_rl_run(run, batch=8, steps=1, seed=2)
    text, problems = write_manifest(run, CompareOptions(chunk_size=16))
    assert not problems
    return json.loads(text)  # type: ignore[no-any-return]


MANIFEST = _real_manifest()
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
              st.text(max_size=12)),
    lambda kids: st.one_of(st.lists(kids, max_size=3),
                           st.dictionaries(st.text(max_size=8), kids, max_size=3)),
    max_leaves=10,
)  # fmt: skip


@FUZZ
@given(st.data())
def test_mutated_manifests_load_or_fail_clearly(data: st.DataObject) -> None:
    doc = json.loads(json.dumps(MANIFEST))
    for _ in range(data.draw(st.integers(1, 4))):
        target = doc
        path = []
        while isinstance(target, (dict, list)) and target and data.draw(st.booleans()):
            key = data.draw(st.sampled_from(sorted(target) if isinstance(target, dict)
                                            else range(len(target))))  # fmt: skip
            path.append(key)
            if isinstance(target[key], (dict, list)):
                target = target[key]
            else:
                break
        if isinstance(target, dict) and target:
            key = data.draw(st.sampled_from(sorted(target)))
            if data.draw(st.booleans()):
                del target[key]
            else:
                target[key] = data.draw(json_values)
        elif isinstance(target, list) and target:
            target[data.draw(st.integers(0, len(target) - 1))] = data.draw(json_values)
    try:
        m = parse_manifest(doc, "fuzz.json")
    except FastdiffError as exc:
        assert str(exc).startswith("fuzz.json:") and "\n" not in str(exc)
        return
    for f in m.listing.files:
        d = f.digest
        assert d is not None and not f.has_data
        assert d.size == f.size and len(d.chunks) == -(-f.size // m.chunk_size)


@FUZZ
@given(st.binary(max_size=200) | json_values.map(lambda v: json.dumps(v).encode()))
def test_random_manifest_files_fail_clearly(raw: bytes) -> None:
    p = TMP / "random.json"
    p.write_bytes(raw)
    try:
        load_manifest(p)
    except FastdiffError as exc:
        assert str(exc).startswith(f"{p}:") and "\n" not in str(exc)
