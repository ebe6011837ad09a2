"""The Python API as a user calls it: ``CompareOptions`` built from a schema
name, path or Schema and tolerance keywords (or a TypeError at once),
``report.as_dict()`` as plain data, ``render_json``, and the README's
"From Python" example, run as it is written."""

from __future__ import annotations

import json
import math
import re
import struct
from pathlib import Path

import pytest
from helpers import write_runs

from fastdiff import CompareOptions, Tolerance, compare_runs, render_json, report_dict
from fastdiff.errors import SchemaError
from fastdiff.presets import RL_STATE
from fastdiff.schema import RAW
from fastdiff.schemafile import load_schema

ROOT = Path(__file__).resolve().parents[1]
ANATOMY = (ROOT / "examples/anatomy/run-a", ROOT / "examples/anatomy/run-b")
ANATOMY_SCHEMA = str(ROOT / "examples/anatomy/schema.toml")


def test_the_schema_may_be_a_preset_name_a_path_or_a_schema() -> None:
    by_path = CompareOptions(schema=ANATOMY_SCHEMA).schema
    assert by_path == load_schema(ANATOMY_SCHEMA)
    assert CompareOptions(schema=Path(ANATOMY_SCHEMA)).schema == by_path
    assert CompareOptions(schema="raw").schema is RAW
    assert CompareOptions(schema=RL_STATE).schema is RL_STATE
    assert CompareOptions().schema is None
    report = compare_runs(*ANATOMY, CompareOptions(schema=ANATOMY_SCHEMA))
    assert (report.schema, report.first_divergent_step) == ("anatomy-example", 4)


def test_a_bad_schema_or_option_fails_when_the_options_are_built(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="no such preset or file"):
        CompareOptions(schema="nope")
    bad = tmp_path / "bad.toml"
    bad.write_text('[[group]]\nkey = "E"\n[group.members]\nx = "f33"\n')
    with pytest.raises(SchemaError, match=r"bad\.toml:4: group 1 key 'members.x'"):
        CompareOptions(schema=bad)
    for kwargs, message in [
        ({"schema": 3}, "schema must be a fastdiff.Schema, a preset name"),
        ({"tolerance": 1e-3}, "tolerance must be a fastdiff.Tolerance"),
        ({"tolerance": Tolerance(ulp=1), "ulp": 2}, "not both"),
        ({"atol": "1e-3"}, "atol must be a number"),
        ({"ulp": 1.5}, "ulp must be an int"),
        ({"nan_equal": 1}, "nan_equal must be a bool"),
        ({"jobs": "2"}, "jobs must be an int"),
        ({"chunk_size": 4.0}, "chunk_size must be an int"),
        ({"engine": None}, "engine must be a str"),
    ]:
        with pytest.raises(TypeError, match=re.escape(message)):
            CompareOptions(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="--ulp must be an integer >= 0"):
        CompareOptions(ulp=-1)


def test_tolerance_keywords_are_the_tolerance(tmp_path: Path) -> None:
    opts = CompareOptions(atol=1e-3, rtol=1e-5, ulp=2, nan_equal=True, rounding_ulp=8)
    assert opts.tolerance == Tolerance(1e-3, 1e-5, 2, True, 8)
    assert opts == CompareOptions(tolerance=Tolerance(1e-3, 1e-5, 2, True, 8))
    changed = opts.replace(ulp=4)
    assert changed.tolerance == Tolerance(1e-3, 1e-5, 4, True, 8) and opts.tolerance.ulp == 2
    assert opts.replace(jobs=2).tolerance == opts.tolerance
    with pytest.raises(TypeError, match="not both"):
        opts.replace(tolerance=Tolerance(), ulp=1)
    # The keywords compare as the command line's options do.
    a = struct.pack("<2f", 1.0, 2.0)
    b = struct.pack("<2I", 0x3F800001, 0x40000000)  # 1 ULP apart at element 0
    ra, rb = write_runs(tmp_path, {"step_0_w.bin": (a, b)})
    raw = load_schema_text(tmp_path, 'name = "f"\ndefault_dtype = "f32"\n')
    assert compare_runs(ra, rb, CompareOptions(schema=raw)).verdict == "diverged"
    close = compare_runs(ra, rb, CompareOptions(schema=raw, ulp=1))
    assert close.verdict == "identical" and close.tolerance["ulp"] == 1


def load_schema_text(folder: Path, text: str) -> Path:
    path = folder / "s.toml"
    path.write_text(text)
    return path


def test_as_dict_is_plain_data_and_render_json_is_the_contract() -> None:
    report = compare_runs(*ANATOMY, CompareOptions(schema=ANATOMY_SCHEMA))
    data = report.as_dict()
    text = json.dumps(data)  # nested groups, buffers, fields, work: all plain
    assert json.loads(text)["first_divergent_step"] == 4
    isv = next(b for b in data["buffers"] if b["step"] == 4 and b["name"] == "isv_full")
    assert isv["status"] == "diverged" and isv["max_ulp"] == 2  # facts by name
    assert isv["fields"][0]["name"] == "popart_sigma_welford"
    assert data["groups"][0]["key"] == "C" and isinstance(data["work"], dict)
    doc = json.loads(render_json(report), parse_constant=pytest.fail)  # strict JSON
    assert doc == json.loads(json.dumps(report_dict(report)))
    assert doc["schema_version"] == 1 and doc["first_divergent_step"] == 4


PLAIN = (dict, list, tuple, str, int, float, bool, type(None))


def assert_plain(value: object, where: str = "report") -> None:
    """Every value in ``value`` is plain data that ``json.dumps`` takes."""
    assert isinstance(value, PLAIN), f"{where} is a {type(value).__name__}"
    if isinstance(value, dict):
        for k, v in value.items():
            assert isinstance(k, str), f"{where} has a key {k!r}"
            assert_plain(v, f"{where}.{k}")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            assert_plain(v, f"{where}[{i}]")


def _ranked(folder: Path) -> tuple[Path, Path]:
    """Two runs of two ranks; rank 1's reward is born differing at step 1."""
    for run in ("a", "b"):
        for rank in (0, 1):
            for step in (0, 1):
                d = folder / run / f"rank_{rank}"
                d.mkdir(parents=True, exist_ok=True)
                x = struct.pack("<4f", 1, 2, 3, 4 + (run == "b" and rank == 1 and step == 1))
                (d / f"step_{step}_rewards.bin").write_bytes(x)
    return folder / "a", folder / "b"


@pytest.mark.parametrize(
    "pair",
    ["examples", "origins", "anatomy", "ranks", "checkpoint", "manifest"],
)
def test_as_dict_is_plain_data_for_every_kind_of_report(pair: str, tmp_path: Path) -> None:
    """Roles (the default schema declares inputs), origins, ranks, fields,
    header dtypes and digest-only buffers all come out as plain data."""
    options = CompareOptions()
    if pair == "examples":
        a, b = ROOT / "examples/run-a", ROOT / "examples/run-b"
    elif pair == "origins":
        a, b = ROOT / "examples/origins/run-a", ROOT / "examples/origins/run-b"
        options = CompareOptions(schema=str(ROOT / "examples/origins/schema.toml"))
    elif pair == "anatomy":
        a, b = ANATOMY
        options = CompareOptions(schema=ANATOMY_SCHEMA)
    elif pair == "ranks":
        a, b = _ranked(tmp_path)
        options = CompareOptions(schema=RL_STATE.with_default_dtype("f32"))
    elif pair == "checkpoint":
        a = b = ROOT / "tests/data/formats/safetensors_steps"
    else:
        from fastdiff.hashrun import write_manifest

        text, _ = write_manifest(ROOT / "examples/run-a", options)
        a = tmp_path / "a.manifest.json"
        a.write_text(text)
        b = ROOT / "examples/run-b"
    report = compare_runs(a, b, options)
    data = report.as_dict()
    assert_plain(data)
    assert json.loads(json.dumps(data))["verdict"] == report.verdict
    if pair in ("examples", "origins", "ranks"):
        assert any(isinstance(x.get("role"), dict) for x in data["buffers"])


def test_a_nan_is_a_float_in_as_dict_and_a_string_in_the_json(tmp_path: Path) -> None:
    a, b = struct.pack("<2f", math.nan, 1.0), struct.pack("<2f", 1.0, 1.0)
    ra, rb = write_runs(tmp_path, {"step_0_w.bin": (a, b)})
    report = compare_runs(ra, rb, CompareOptions(schema=RAW.with_default_dtype("f32")))
    (w,) = report.as_dict()["buffers"]
    assert math.isnan(w["a"]) and w["b"] == 1.0 and w["n_nan_mismatch"] == 1
    (j,) = json.loads(render_json(report))["buffers"]
    assert (j["a"], j["b"]) == ("nan", 1.0)


def test_the_readme_from_python_example_runs_as_written(
    capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    section = (ROOT / "docs" / "reference" / "python.md").read_text(encoding="utf-8")
    code = section[section.index("```python\n") + 10 : section.index("```\n", 10)]
    exec(compile(code, "python.md", "exec"), {})  # the docs' own code, from the repo root
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "diverged 5 ('E',)"
    assert "# diverged 5 ('E',)" in code


def test_a_sweep_summary_is_plain_data_too() -> None:
    from fastdiff.sweep import sweep

    pairs = [(ROOT / "examples/run-a", ROOT / "examples/run-b")] * 2
    reports, summary = sweep(pairs, CompareOptions(), classes_of=[])
    data = summary.as_dict()
    assert_plain(data)
    assert data["diverged"] == 2 and data["first_origins"]["groups"][0][1] == (0, 1)
    assert data["first_origins"]["groups"][0][0]["name"] == "rewards"
    for r in reports:
        assert_plain(r.as_dict())


def test_a_reports_verdict_is_the_models_member() -> None:
    """``report.verdict is Verdict.DIVERGED``: members compare by identity,
    as the model's docstring promises, whoever built the report."""
    from fastdiff.model.statuses import Verdict

    report = compare_runs(ROOT / "examples/run-a", ROOT / "examples/run-b")
    assert report.verdict is Verdict.DIVERGED
    same = compare_runs(ROOT / "examples/run-a", ROOT / "examples/run-a")
    assert same.verdict is Verdict.IDENTICAL
    assert report.replace(verdict="error").verdict is Verdict.ERROR
