"""One schema for the whole sweep: pairs of two folders and pairs with a
manifest are read with the same schema, so a divergence has the same groups
in every row and the first origins of the pairs can be compared. Without
``--schema``, the schema a manifest records is used for every pair, and a
note (on stderr, in the text summary and in the summary record's ``notes``)
says so and names the pairs it changes; manifests that record different
schemas are a warning.

Runs ``python -m fastdiff`` in a subprocess (``helpers.fastdiff``).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

from helpers import fastdiff

from fastdiff.sweep import one_schema

SCHEMA = """\
name = "mine"

[[group]]
key = "D"
title = "data"
hint = "Tokens come from the loader."
[group.members]
tokens = { dtype = "i32", inputs = [] }

[[group]]
key = "M"
title = "model"
hint = "The model."
[group.members]
acts = { dtype = "f32", inputs = ["tokens"] }
"""


def write_run(path: Path, token: int) -> Path:
    """Two steps of ``tokens`` (i32) and ``acts`` (f32, from the tokens);
    ``token``: the first token at step 1 (runs that differ there diverge)."""
    path.mkdir()
    for step in range(2):
        tokens = [step, token if step == 1 else 7, 3]
        (path / f"step_{step}_tokens.bin").write_bytes(struct.pack("<3i", *tokens))
        (path / f"step_{step}_acts.bin").write_bytes(struct.pack("<3f", *(t / 2 for t in tokens)))
    return path


def runs(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """Run folders a and b (b's tokens differ at step 1), a's manifest hashed
    under schema 'mine', and that schema's file."""
    schema = tmp_path / "mine.toml"
    schema.write_text(SCHEMA, encoding="utf-8")
    a, b = write_run(tmp_path / "a", 7), write_run(tmp_path / "b", 9)
    manifest = tmp_path / "a.manifest.json"
    p = fastdiff("hash", a, "--schema", schema, "-o", manifest)
    assert p.returncode == 0, p.stderr
    return a, b, manifest, schema


def records(*args: str | Path) -> tuple[list[dict[str, Any]], str, int]:
    p = fastdiff("sweep", *args, "--no-cache", "--format", "jsonl")
    return [json.loads(line) for line in p.stdout.splitlines()], p.stderr, p.returncode


def test_every_pair_of_a_sweep_is_read_with_the_manifests_schema(tmp_path: Path) -> None:
    a, b, manifest, _ = runs(tmp_path)
    got, err, code = records("--all", a, b, manifest)
    assert code == 1, err
    pairs, summary = got[:-1], got[-1]
    assert [(r["run_a"], r["run_b"]) for r in pairs] == [
        (str(a), str(b)), (str(a), str(manifest)), (str(b), str(manifest)),
    ]  # fmt: skip
    assert [r["schema"] for r in pairs] == ["mine"] * 3
    assert [r["verdict"] for r in pairs] == ["diverged", "identical", "diverged"]
    # the same divergence, the same groups, in both rows (before: [other] and [D M])
    assert [r["first_divergent_groups"] for r in pairs if r["verdict"] == "diverged"] == [
        ["D", "M"], ["D", "M"],
    ]  # fmt: skip
    assert summary["reproducible_origin"] is True
    assert summary["first_origins"] == [
        {"origin": {"step": 1, "name": "tokens", "group": "D"}, "pairs": [0, 2]}
    ]
    note = (
        f"note: one schema for the whole sweep: every pair is read with 'mine' (recorded in "
        f"{manifest}) as if given with --schema; pair {a} {b} alone would be read with "
        "'rl-state'; pass --schema to choose"
    )
    assert summary["notes"] == [note]
    assert err.splitlines() == [f"fastdiff: {note}"]  # once, however many pairs
    text = fastdiff("sweep", "--all", a, b, manifest, "--no-cache", "--format", "text")
    assert text.returncode == 1
    assert note in text.stdout.splitlines()
    assert f"{a}  {b}  diverged at step 1 [D M]" in text.stdout.splitlines()
    assert "first origin reproducible: D tokens at step 1 in both diverging pairs" in text.stdout


def test_a_schema_given_is_used_for_every_pair_and_says_nothing(tmp_path: Path) -> None:
    a, b, manifest, schema = runs(tmp_path)
    got, err, code = records("--all", a, b, manifest, "--schema", schema)
    assert code == 1 and err == ""
    assert [r["schema"] for r in got[:-1]] == ["mine"] * 3
    assert "notes" not in got[-1]


def test_a_sweep_of_folders_keeps_its_summary_record(tmp_path: Path) -> None:
    a, b, _, _ = runs(tmp_path)
    c = write_run(tmp_path / "c", 7)
    got, err, code = records("--all", a, b, c)
    assert code == 1 and err == ""
    assert [r["schema"] for r in got[:-1]] == ["rl-state"] * 3
    assert "notes" not in got[-1]


def test_manifests_of_different_schemas_are_a_warning(tmp_path: Path) -> None:
    a, b, manifest, _ = runs(tmp_path)
    other = tmp_path / "theirs.toml"
    other.write_text(SCHEMA.replace('name = "mine"', 'name = "theirs"'), encoding="utf-8")
    manifest_b = tmp_path / "b.manifest.json"
    assert fastdiff("hash", b, "--schema", other, "-o", manifest_b).returncode == 0
    got, err, code = records("--all", manifest_b, a, manifest)
    assert code == 1, err
    # the first manifest's schema, for the pair of a and its manifest too
    assert [r["schema"] for r in got[:-1]] == ["theirs"] * 3
    (warning,) = got[-1]["notes"]
    assert warning == (
        f"warning: the manifests of this sweep record different schemas ('theirs' in "
        f"{manifest_b}, 'mine' in {manifest}): every pair is read with 'theirs' (recorded in "
        f"{manifest_b}) as if given with --schema; pair {a} {manifest} alone would be read "
        "with 'mine'; pass --schema to choose"
    )
    assert f"fastdiff: {warning}" in err.splitlines()


def test_a_sweep_whose_pairs_agree_says_what_compare_says(tmp_path: Path) -> None:
    # Every pair holds the manifest as run A: each alone is read with its
    # schema, so the sweep changes nothing and adds no note.
    a, b, manifest, _ = runs(tmp_path)
    got, err, code = records("--baseline", manifest, a, b)
    assert code == 1 and err == ""
    assert [r["schema"] for r in got[:-1]] == ["mine", "mine"]
    assert "notes" not in got[-1]


def test_the_python_sweep_reads_every_pair_with_one_schema(tmp_path: Path) -> None:
    a, b, manifest, _ = runs(tmp_path)
    opts, notes = one_schema([(str(a), str(b)), (str(a), str(manifest))])
    assert opts.schema is not None and opts.schema.name == "mine"
    assert len(notes) == 1 and notes[0].kind == "sweep_schema" and not notes[0].warning
