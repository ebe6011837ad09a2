"""Group order (issue 23, section 3): groups found by name (the schema
``by-name``) come in the order their buffers first appear, step by step in
step order and, within a step, in the order the run wrote them (a
recorder's, as its digest log says), not in alphabetical order; the
verdict's suspects, the groups table and the timeline follow it.

Through the command line (``helpers.fastdiff``), on runs written here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from helpers import fastdiff

from fastdiff import Recorder


def record(folder: Path, order: list[str], bumped: set[str], steps: range = range(3)) -> None:
    with Recorder(folder) as rec:
        for step in steps:
            for i, name in enumerate(order):
                value = np.full(8, 10.0 * i + step, dtype=np.float32)
                if name in bumped and step >= 1:
                    value[0] += 1
                rec.dump(step, name, value)


def groups_of(doc: dict[str, Any]) -> list[str]:
    return [g["key"] for g in doc["groups"]]


def test_by_name_groups_come_in_the_order_the_recorder_wrote_them(tmp_path: Path) -> None:
    order = ["batch.x", "loss", "grad.w", "param.w", "adam.m", "adam.v"]
    record(tmp_path / "a", order, set())
    record(tmp_path / "b", order, {"batch.x", "adam.m"})
    p = fastdiff("compare", tmp_path / "a", tmp_path / "b", "--format", "json")
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    assert doc["schema"] == "by-name"
    assert groups_of(doc) == ["batch", "loss", "grad", "param", "adam"]
    assert doc["first_divergent_groups"] == ["batch", "adam"]  # batch, upstream, first
    assert [r["group"] for r in doc["timeline"] if r["step"] == 1] == ["batch", "adam"]


def test_by_name_groups_follow_step_numbers_not_file_names(tmp_path: Path) -> None:
    for side in ("a", "b"):
        folder = tmp_path / side
        folder.mkdir()
        for step, name in [(2, "zeta.w"), (10, "alpha.w"), (10, "zeta.w")]:
            value = np.full(4, step, dtype=np.float32)
            if side == "b" and step == 10:
                value[0] += 1
            np.save(folder / f"step_{step}_{name}.npy", value)
    p = fastdiff("compare", tmp_path / "a", tmp_path / "b", "--format", "json")
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    assert groups_of(doc) == ["zeta", "alpha"]  # zeta is in step 2, before step 10
    assert doc["first_divergent_groups"] == ["zeta", "alpha"]


def _checkpoints(tmp_path: Path, n: int, bumped: set[int]) -> tuple[Path, Path]:
    """Two safetensors checkpoints of ``n`` tensors, each its own by-name
    group (``t<i>.weight``); those in ``bumped`` differ in B."""
    from safetensors.numpy import save_file

    sides = []
    for side in ("a", "b"):
        tensors = {
            f"t{i}.weight": np.full(4, i + (side == "b" and i in bumped), np.float32)
            for i in range(n)
        }
        (tmp_path / side).mkdir()
        save_file(tensors, str(tmp_path / side / "model.safetensors"))
        sides.append(tmp_path / side)
    return sides[0], sides[1]


def test_many_by_name_groups_list_the_ones_that_differ(tmp_path: Path) -> None:
    """A checkpoint of 3,000 tensors with distinct first names: 3,000 groups.
    The verdict lists the diverged one and folds the equal ones into a count
    (-v lists them all; the JSON always has every group). The groups are
    found by a prefix index, not by trying each buffer against each glob."""
    a, b = _checkpoints(tmp_path, 3000, {1234})
    p = fastdiff("compare", a, b, "--format", "json")
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    assert len(doc["groups"]) == 3000
    assert doc["first_divergent_groups"] == ["t1234"]
    assert [g["key"] for g in doc["groups"] if g["status"] != "equal"] == ["t1234"]
    text = fastdiff("compare", a, b).stdout
    group_rows = [ln for ln in text.splitlines() if ln.startswith("  t")]
    assert [ln.split()[0] for ln in group_rows if "DIVERGED" in ln] == ["t1234", "t1234"]
    assert "... and 2,999 more groups, all equal (-v lists every group)" in text
    verbose = fastdiff("compare", "-v", a, b).stdout
    assert "more groups" not in verbose
    assert sum(ln.strip().endswith("equal") for ln in verbose.splitlines()) >= 2999


def test_a_few_groups_are_all_listed(tmp_path: Path) -> None:
    a, b = _checkpoints(tmp_path, 20, {3})
    text = fastdiff("compare", a, b).stdout
    assert "more group" not in text
    assert sum(ln.strip().endswith("equal") for ln in text.splitlines()) == 19
