"""``examples/trace`` through the command line: the model traced twice, its
mixture of experts adding in an unseeded order from step 2 on; ``fastdiff
compare``, ``hash``, ``sweep`` and ``rerun`` name the op and the module it is
born in, at that step, with no schema; with the order seeded, the traces are
identical. Skipped without torch (CI installs it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import REPO, fastdiff

from fastdiff import compare_runs
from fastdiff.model.findings import NoteKind

pytest.importorskip("torch")

TRAIN = REPO / "examples" / "trace" / "train.py"
ENV = {"PYTHONPATH": str(REPO)}
STEPS = ("--steps", "4")
BORN_OP = "fwd.layers.1.moe.example.scatter_add#0"
BORN_MODULE = "fwd.layers.1.moe"


def _train(run: Path, *args: str) -> None:
    import os
    import subprocess

    done = subprocess.run([sys.executable, TRAIN, str(run), *STEPS, *args],
                          env={**os.environ, **ENV},
                          capture_output=True, text=True, check=False, cwd=REPO)  # fmt: skip
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("traces")
    out = {}
    for name, args in (
        ("op-a", ("--unordered-from", "2")),
        ("op-b", ("--unordered-from", "2")),
        ("op-seeded", ()),
        ("module-a", ("--level", "module", "--unordered-from", "2")),
        ("module-b", ("--level", "module", "--unordered-from", "2")),
    ):
        out[name] = root / name
        _train(out[name], *args)
    return out


def _json(*args: str | Path) -> tuple[int, dict]:
    r = fastdiff("compare", *args, "--format", "json")
    assert r.returncode in (0, 1), r.stderr
    return r.returncode, json.loads(r.stdout)


def test_compare_names_the_op_and_module_it_is_born_in_with_no_schema(
    runs: dict[str, Path],
) -> None:
    code, doc = _json(runs["op-a"], runs["op-b"])
    assert code == 1 and doc["verdict"] == "diverged"
    assert doc["first_divergent_step"] == 2
    assert doc["schema"] == "traced dataflow (op level)"
    assert doc["origins"] == [{"step": 2, "name": BORN_OP, "group": "fwd"}]
    born = next(b for b in doc["buffers"] if (b["step"], b["name"]) == (2, BORN_OP))
    assert born["role"] == "origin" and born["differing_inputs"] == []
    assert doc["structure"]["parted"] is False
    # a note says the runs are traces, read with the dataflow they recorded
    notes = compare_runs(runs["op-a"], runs["op-b"]).notes
    (trace,) = [n for n in notes if n.kind is NoteKind.TRACE_DATAFLOW]
    assert trace["spec"] == str(runs["op-a"]) and not trace.warning
    assert len(doc["notes"]) == len(notes)
    # every other record that diverges at step 2 received it
    kinds = {b["role"] for b in doc["buffers"] if b["step"] == 2 and "role" in b}
    assert kinds == {"origin", "receiver"}
    text = fastdiff("compare", runs["op-a"], runs["op-b"])
    assert text.returncode == 1 and BORN_OP in text.stdout


def test_module_level_names_the_module(runs: dict[str, Path]) -> None:
    code, doc = _json(runs["module-a"], runs["module-b"])
    assert code == 1 and doc["first_divergent_step"] == 2
    assert doc["origins"] == [{"step": 2, "name": BORN_MODULE, "group": "fwd"}]


def test_with_the_order_seeded_the_traces_are_identical(runs: dict[str, Path]) -> None:
    code, doc = _json(runs["op-a"], runs["op-seeded"])
    assert code == 1 and doc["first_divergent_step"] == 2  # run A is unseeded from step 2
    seeded = runs["op-seeded"].parent / "op-seeded-again"
    _train(seeded)
    code, doc = _json(runs["op-seeded"], seeded)
    assert code == 0 and doc["verdict"] == "identical"
    assert doc["origins"] == [] and doc["structure"]["parted"] is False


def test_a_manifest_of_a_trace_records_its_dataflow(runs: dict[str, Path], tmp_path: Path) -> None:
    manifests = []
    for side in ("op-a", "op-b"):
        out = tmp_path / f"{side}.json"
        r = fastdiff("hash", runs[side], "-o", out)
        assert r.returncode == 0, r.stderr
        manifests.append(out)
    schema = json.loads(manifests[0].read_text())["schema"]
    assert schema["name"] == "traced dataflow (op level)" and schema["inputs_complete"] is True
    code, doc = _json(*manifests)
    assert code == 1 and doc["origins"] == [{"step": 2, "name": BORN_OP, "group": "fwd"}]
    assert "structure" not in doc  # a manifest holds no sequence of records


def test_the_dataflow_is_a_schema_file(runs: dict[str, Path]) -> None:
    r = fastdiff("schema", runs["op-a"] / ".fastdiff-dataflow.toml")
    assert r.returncode == 0, r.stderr
    assert "inputs_complete = true" in r.stdout.splitlines()


def test_sweep_and_rerun_read_the_dataflow_with_no_schema(runs: dict[str, Path]) -> None:
    r = fastdiff("sweep", "--baseline", runs["module-a"], runs["module-b"], runs["module-a"])
    assert r.returncode == 1, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    summary = rows[-1]
    assert summary["record"] == "summary"
    assert summary["first_origins"] == [
        {"origin": {"step": 2, "name": BORN_MODULE, "group": "fwd"}, "pairs": [0]}
    ]
    r = fastdiff("rerun", "-n", "2", "--", sys.executable, TRAIN, "--steps", "3", "--level",
                 "module", "--unordered-from", "1", env=ENV)  # fmt: skip
    assert r.returncode == 1, r.stdout + r.stderr
    verdict = next(line for line in r.stdout.splitlines() if line.startswith("born in: "))
    assert verdict.startswith(f"born in: fwd {BORN_MODULE} at step 1 ")


def test_the_readme_tutorial_shows_what_the_cli_prints(runs: dict[str, Path]) -> None:
    text = (REPO / "docs" / "tutorials" / "trace.md").read_text(encoding="utf-8")
    start = text.index("## 2. Run it twice and compare")
    section = text[start : text.index("\n## ", start + 1)]
    for side in ("a", "b"):
        assert f"python examples/trace/train.py runs/{side} --steps 4 --unordered-from 2" in section
    at = section.index("```\n$ fastdiff compare runs/a runs/b") + 4
    block = section[at : section.index("\n```\n", at)]
    _, *lines = block.splitlines()
    r = fastdiff("compare", runs["op-a"], runs["op-b"])
    assert r.returncode == 1
    out = r.stdout.splitlines()
    for line in lines:
        if line == "...":
            continue
        shown = line.removesuffix(" ...")
        assert any(o.startswith(shown) for o in out), line
