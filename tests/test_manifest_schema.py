"""Manifests record their schema (issue 8, item 12), through the CLI.

A run hashed with ``--schema my.toml`` gives, from its manifest, the same
stats and comparisons as the folder read with ``--schema my.toml``; a schema
given on the command line wins, with one warning line naming the buffers
whose dtype it changes; two manifests of different dtypes for a buffer warn
once per buffer; a manifest of an older fastdiff (no schema) is still read,
with a note.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import fastdiff

from fastdiff.bench.synth import RL_STATE_MEMBERS, write_rl_run
from fastdiff.compare import compare_runs
from fastdiff.dtypes import unknown_dtype
from fastdiff.model.findings import NoteKind
from fastdiff.presets import RL_STATE, resolve_schema
from fastdiff.render.notes import note_text
from fastdiff.schema import Schema
from fastdiff.schemafile import load_schema
from fastdiff.sources import RunSource
from fastdiff.sources.buffers import RunListing
from fastdiff.sources.schemas import choose_schema

REPO = Path(__file__).resolve().parents[1]

MY_TOML = """\
name = "my"
default_dtype = "u16"

[[group]]
key = "R"
title = "rewards"
hint = "look at the reward kernel"
[group.members]
rewards = "f32"
"unit_*" = "i16"
"""


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return fastdiff(*args, env={"XDG_CACHE_HOME": os.devnull})


def as_json(p: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    doc = json.loads(p.stdout)
    assert isinstance(doc, dict)
    return doc


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Runs a and b (b differs at step 1 in rewards and unit_lots), my.toml, and
    manifests: a and b hashed with my.toml, a hashed with rl-state."""
    root = tmp_path_factory.mktemp("schema-manifests")
    out = {"a": root / "a", "b": root / "b", "my": root / "my.toml"}
    write_rl_run(out["a"], batch=16, steps=2, seed=3)
    write_rl_run(out["b"], batch=16, steps=2, seed=3,
                 diverge=[(1, "rewards", 2), (1, "unit_lots", 5)])  # fmt: skip
    out["my"].write_text(MY_TOML)
    for name, run, schema in (("a_my", "a", "my"), ("b_my", "b", "my"), ("a_rl", "a", None)):
        out[name] = root / f"{name}.manifest.json"
        opts = ["--schema", out["my"]] if schema else []
        r = cli("hash", out[run], "-o", out[name], "--no-cache", *opts)
        assert r.returncode == 0 and r.stderr == "", r.stderr
    return out


def my_vs_rl(my_path: Path) -> dict[str, tuple[str, str]]:
    """name -> (dtype in my.toml, dtype in rl-state) where they differ, over
    the buffers the runs hold (``write_rl_run``'s)."""
    my = load_schema(my_path)
    names = [name for name, _ in RL_STATE_MEMBERS]
    out = {}
    for n in sorted(names):
        d_my, d_rl = my.classify(n)[1], RL_STATE.classify(n)[1]
        if d_my != d_rl:
            out[n] = (d_my, d_rl)
    return out


def test_the_manifest_records_the_schema_and_each_files_dtype(setup: dict[str, Path]) -> None:
    doc = json.loads(setup["a_my"].read_text())
    assert doc["fastdiff_manifest"] == 2
    assert doc["schema"] == {
        "name": "my",
        "default_dtype": "u16",
        "group": [
            {
                "key": "R",
                "title": "rewards",
                "hint": "look at the reward kernel",
                "members": {"rewards": "f32", "unit_*": "i16"},
            }
        ],
    }
    dtypes = {f["buffer"]: f["dtype"] for f in doc["buffers"]}
    assert (dtypes["rewards"], dtypes["unit_lots"], dtypes["isv_full"]) == ("f32", "i16", "u16")


def test_stats_of_a_manifest_reads_it_with_its_schema(setup: dict[str, Path]) -> None:
    m = cli("stats", setup["a_my"], "--format", "json")
    assert m.returncode == 0 and m.stderr == "", m.stderr
    folder = cli("stats", setup["a"], "--format", "json", "--schema", setup["my"])
    assert folder.returncode == 0, folder.stderr
    got, want = as_json(m), as_json(folder)
    assert got["schema"] == "my"
    assert [g["group"] for g in got["groups"]] == ["R", "other"]
    assert got["totals"]["dtypes"] == ["u16", "i16", "f32"]
    drop = ("run", "source", "disk")  # disk: what a folder holds; a manifest holds digests
    assert {k: v for k, v in got.items() if k not in drop} == {
        k: v for k, v in want.items() if k not in drop
    }
    assert got["disk"] is None and want["disk"]["digests_only"] == 0
    text = cli("stats", setup["a_my"])
    assert text.returncode == 0 and text.stderr == ""
    assert text.stdout.startswith(f"run: {setup['a_my']} (manifest), schema my\n")


def test_compare_and_sweep_read_a_manifest_with_its_schema(setup: dict[str, Path]) -> None:
    folders = cli("compare", setup["a"], setup["b"], "--format", "json", "--schema", setup["my"])
    assert folders.returncode == 1, folders.stderr
    want = as_json(folders)
    assert want["schema"] == "my" and want["first_divergent_groups"] == ["R"]
    for a, b in ((setup["a_my"], setup["b"]), (setup["a"], setup["b_my"])):
        r = cli("compare", a, b, "--format", "json")
        assert r.returncode == 1 and r.stderr == "", r.stderr
        got = as_json(r)
        assert got["schema"] == "my"
        assert got["first_divergent_groups"] == ["R"]
        assert [(g["key"], g["status"]) for g in got["groups"]] == [
            ("R", "diverged"),
            ("other", "equal"),
        ]
        assert [(x["name"], x["group"], x["dtype"]) for x in got["buffers"]] == [
            (x["name"], x["group"], x["dtype"]) for x in want["buffers"]
        ]
        lots = next(x for x in got["buffers"] if (x["step"], x["name"]) == (1, "unit_lots"))
        assert (lots["dtype"], lots["n_elements_a"]) == ("i16", 32)
    # In a sweep, every pair is read with the one schema the manifest records
    # (tests/test_sweep_schema.py): the pair of two folders too, with a note.
    r = cli("sweep", "--baseline", setup["a"], setup["b_my"], setup["b"], "--no-cache")
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith("fastdiff: note: one schema for the whole sweep: every pair is "
                               "read with 'my' (recorded in ")  # fmt: skip
    records = [json.loads(x) for x in r.stdout.splitlines()[:2]]
    assert [(x["schema"], x["first_divergent_groups"]) for x in records] == [
        ("my", ["R"]),
        ("my", ["R"]),
    ]
    # From Python too: CompareOptions() leaves the schema to the manifest.
    assert compare_runs(setup["a_my"], setup["b"]).schema == "my"


def test_an_explicit_schema_wins_with_one_warning_line(setup: dict[str, Path]) -> None:
    differ = my_vs_rl(setup["my"])
    assert len(differ) == 33  # every buffer but rewards
    names = ", ".join(
        f"{n} (recorded {d_my}, read as {d_rl})" for n, (d_my, d_rl) in differ.items()
    )
    line = (
        f"fastdiff: warning: {setup['a_my']}: the schema given ('rl-state') is used, not the one "
        f"recorded in it ('my'); the dtype differs for 33 buffers: {names}\n"
    )
    assert "unit_lots (recorded i16, read as i32)" in line
    st = cli("stats", setup["a_my"], "--schema", "rl-state", "--format", "json")
    assert st.returncode == 0
    assert st.stderr == line
    assert as_json(st)["schema"] == "rl-state"
    same = {"run": "", "source": "", "disk": None}  # disk: a folder's files (a manifest: null)
    assert as_json(st) | same == as_json(cli("stats", setup["a"], "--format", "json")) | same
    cmp = cli("compare", setup["a_my"], setup["b"], "--schema", "rl-state", "--format", "json")
    assert cmp.returncode == 1
    assert cmp.stderr == line
    assert as_json(cmp)["first_divergent_groups"] == ["D", "F"]
    # The same schema as recorded: nothing to say.
    same = cli("stats", setup["a_my"], "--schema", setup["my"])
    assert same.returncode == 0 and same.stderr == ""


def test_what_is_said_about_the_schema_is_in_the_report_too(
    setup: dict[str, Path], capfd: pytest.CaptureFixture[str]
) -> None:
    """The library prints nothing: the remarks are the report's ``notes`` (JSON
    ``notes``, text ``warning:`` lines) and go to ``on_note``; the command
    line also prints them on stderr."""
    from fastdiff import compare_runs, render_json, render_text

    a_my, a_rl = setup["a_my"], setup["a_rl"]
    from fastdiff.model.findings import NoteKind
    from fastdiff.render.notes import note_text

    said: list[object] = []
    report = compare_runs(a_my, a_rl, on_note=said.append)
    assert capfd.readouterr().err == ""
    assert said and list(report.notes) == said
    first = said[0]
    assert first.kind is NoteKind.MANIFEST_SCHEMAS_DIFFER and first.warning  # type: ignore[attr-defined]
    assert (first["spec_a"], first["spec_b"]) == (str(a_my), str(a_rl))  # type: ignore[index]
    texts = [note_text(n) for n in said]  # type: ignore[arg-type]
    assert json.loads(render_json(report))["notes"] == texts
    assert texts[0] in render_text(report).splitlines()
    quiet = compare_runs(a_my, a_rl)  # no on_note: still in the report, still not printed
    assert list(quiet.notes) == said and capfd.readouterr().err == ""
    r = cli("compare", a_my, a_rl)
    assert r.stderr.splitlines()[0] == f"fastdiff: {texts[0]}"
    assert texts[0] in r.stdout.splitlines()


def test_two_manifests_of_different_dtypes_warn_once_per_buffer(setup: dict[str, Path]) -> None:
    differ = my_vs_rl(setup["my"])
    a_my, a_rl = setup["a_my"], setup["a_rl"]
    r = cli("compare", a_my, a_rl, "--format", "json")
    assert r.returncode == 0, r.stderr  # the bytes are equal whatever they are read as
    assert r.stderr.splitlines() == [
        f"fastdiff: warning: {a_my} and {a_rl} were hashed under different schemas "
        f"('my' and 'rl-state'); groups and dtypes are {a_my}'s; pass --schema to choose",
        *(
            f"fastdiff: warning: buffer {n!r} was hashed as {d_my} in {a_my} but as {d_rl} "
            f"in {a_rl}; read as {d_my} (pass --schema to choose)"
            for n, (d_my, d_rl) in differ.items()
        ),
    ]
    assert as_json(r)["schema"] == "my"
    # Run B's manifest first: its schema is used.
    back = cli("compare", a_rl, a_my, "--format", "json")
    assert back.returncode == 0 and as_json(back)["schema"] == "rl-state"
    assert "read as i32 (pass --schema to choose)" in back.stderr
    # A sweep says each line once, however many pairs repeat it.
    sw = subprocess.run(
        [sys.executable, "-m", "fastdiff", "sweep", "--pairs", "/dev/stdin", "--no-cache"],
        input=f"{a_my} {a_rl}\n{a_my} {a_rl}\n",
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
        check=False,
    )
    assert sw.returncode == 0, sw.stderr
    assert sw.stderr.splitlines() == r.stderr.splitlines()


def test_a_manifest_without_a_schema_is_read_with_a_note(
    setup: dict[str, Path], tmp_path: Path
) -> None:
    """A manifest of an older fastdiff: no 'schema' key."""
    doc = json.loads(setup["a_my"].read_text())
    del doc["schema"]
    old = tmp_path / "old.manifest.json"
    old.write_text(json.dumps(doc))
    note = (
        f"fastdiff: note: {old} records no schema (written by an older fastdiff); read with "
        "schema 'rl-state'; pass --schema to choose, or hash the run again"
    )
    st = cli("stats", old, "--format", "json")
    assert st.returncode == 0
    lines = st.stderr.splitlines()
    assert lines[0] == note
    # Its files' dtypes are still known: those that rl-state reads otherwise are named.
    assert len(lines) == 2
    assert lines[1].startswith(
        f"fastdiff: warning: {old}: read with schema 'rl-state'; the dtype differs for 33 buffers: "
    )
    assert as_json(st)["schema"] == "rl-state"
    cmp = cli("compare", old, setup["a"])
    assert cmp.returncode == 0 and cmp.stderr.splitlines() == lines
    # Given the schema it was hashed with: no note, nothing differs.
    given = cli("stats", old, "--schema", setup["my"], "--format", "json")
    assert given.returncode == 0 and given.stderr == ""
    assert as_json(given)["schema"] == "my"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d["schema"]["group"][0]["members"].update(rewards="f33"),
            "key 'schema': group 1 key 'members.rewards': " + unknown_dtype("f33"),
        ),
        (lambda d: d.update(schema=["my"]), "key 'schema' must be dict, got list"),
        (
            lambda d: d["buffers"][0].update(dtype="u8"),
            "buffers[0]: dtype 'u8' is not the 'u16' its schema 'my' gives buffer "
            "'action_prng_state' (damaged?)",
        ),
    ],
)
def test_a_damaged_schema_is_one_line_and_exit_2(
    setup: dict[str, Path], tmp_path: Path, change: Any, message: str
) -> None:
    doc = json.loads(setup["a_my"].read_text())
    change(doc)
    bad = tmp_path / "bad.manifest.json"
    bad.write_text(json.dumps(doc))
    for args in (("stats", bad), ("compare", bad, setup["a"])):
        r = cli(*args)
        assert r.returncode == 2 and "Traceback" not in r.stderr
        assert f"fastdiff: error: {bad}: {message}; re-create it with" in r.stderr.splitlines()[0]


def _source(spec: str, schema: Schema | None, dtypes: dict[str, str]) -> RunSource:
    listing = RunListing(spec, (), (), ())
    return RunSource(spec, listing, 64, schema, dtypes, kind="manifest")


def test_choose_schema_branches() -> None:
    """The cases the CLI tests above do not reach."""
    folder = RunSource("run", RunListing("run", (), (), ()))
    assert choose_schema((folder, folder), None) == (RL_STATE, ())
    raw_u16 = resolve_schema("raw", "u16")
    assert choose_schema((folder,), raw_u16) == (raw_u16, ())
    # Two old manifests that agree with each other, not with rl-state: each is named.
    old = {"rewards": "u16"}
    schema, said = choose_schema((_source("x", None, old), _source("y", None, old)), None)
    assert schema is RL_STATE
    assert [(n.kind, n.warning) for n in said] == [
        (NoteKind.NO_RECORDED_SCHEMA, False), (NoteKind.NO_RECORDED_SCHEMA, False),
        (NoteKind.MANIFEST_READ_AS, True), (NoteKind.MANIFEST_READ_AS, True),
    ]  # fmt: skip
    assert said[2]["spec"] == "x" and said[2]["chosen"] == "rl-state"
    assert said[2]["buffers"] == (("rewards", "u16", "f32"),)
    # The words, once (the renderer's golden line):
    assert note_text(said[2]) == (
        "warning: x: read with schema 'rl-state'; the dtype differs for 1 buffer: "
        "rewards (recorded u16, read as f32)"
    )
    # Two versions of one schema name; B's schema is used when A records none.
    raw_f32 = resolve_schema("raw", "f32")
    a, b = _source("a", raw_u16, {"x": "u16"}), _source("b", raw_f32, {"x": "f32"})
    schema, said = choose_schema((a, b), None)
    assert schema == raw_u16
    assert [n.kind for n in said] == [
        NoteKind.MANIFEST_SCHEMAS_DIFFER, NoteKind.MANIFEST_DTYPES_DIFFER
    ]  # fmt: skip
    assert (said[0]["name_a"], said[0]["name_b"]) == ("raw", "raw")  # two versions of one
    assert (said[1]["dtype_a"], said[1]["dtype_b"], said[1]["read_as"]) == ("u16", "f32", "u16")
    schema, said = choose_schema((_source("a", None, {}), b), None)
    assert schema == raw_f32 and said[0].kind is NoteKind.NO_RECORDED_SCHEMA
    # A schema given wins: one line per manifest, whatever the two manifests say.
    schema, said = choose_schema((a, b), RL_STATE)
    assert schema is RL_STATE and len(said) == 2
    assert said[1]["given"] == "rl-state" and said[1]["recorded"] == "raw"
    assert said[1]["buffers"] == (("x", "f32", "u8"),)


def test_a_manifest_of_format_1_still_loads_and_compares() -> None:
    """tests/compat/diverge_F_a.manifest.json was written by the fastdiff that wrote format 1
    (whole raw files, key "files"): it is read as before, against the folder
    it was hashed from and against its diverging twin."""
    m = Path(__file__).parent / "compat" / "diverge_F_a.manifest.json"
    assert json.loads(m.read_text())["fastdiff_manifest"] == 1
    fixtures = Path(__file__).parent / "fixtures" / "diverge_F"
    same = cli("compare", m, fixtures / "a", "--format", "json")
    assert same.returncode == 0, same.stderr
    assert json.loads(same.stdout)["verdict"] == "identical"
    differs = cli("compare", m, fixtures / "b", "--format", "json")
    folders = cli("compare", fixtures / "a", fixtures / "b", "--format", "json")
    assert differs.returncode == folders.returncode == 1, differs.stderr
    got, want = json.loads(differs.stdout), json.loads(folders.stdout)
    assert got["first_divergent_step"] == want["first_divergent_step"]
    assert got["first_divergent_groups"] == want["first_divergent_groups"]
    statuses = {(b["step"], b["name"]): b["status"] for b in got["buffers"]}
    assert statuses == {(b["step"], b["name"]): b["status"] for b in want["buffers"]}
