"""examples/train: a real PyTorch loop, nondeterministic as real jobs are, and
``fastdiff rerun`` finding where (skipped without torch, which CI installs)."""

from __future__ import annotations

import sys

import pytest
from helpers import REPO, fastdiff

pytest.importorskip("torch")

TRAIN = REPO / "examples" / "train" / "train.py"
ENV = {"PYTHONPATH": str(REPO)}


def test_rerun_finds_the_unseeded_shuffle_in_the_gradients() -> None:
    r = fastdiff("rerun", "-n", "2", "--", sys.executable, TRAIN, "--steps", "4", env=ENV)
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    (verdict,) = [line for line in lines if line.startswith("NOT DETERMINISTIC: 1 of 1 arms")]
    first = verdict.split("(arm 2: ", 1)[1]
    assert first.startswith("grad."), verdict  # born in the gradients ...
    report = lines[lines.index("arm 1 (A) against arm 2 (B):") :]
    step = next(line for line in report if line.startswith("step ") and "diverged" in line)
    assert "batch" not in step.split("diverged:")[1]  # ... while the batch is equal
    assert any("grad.fc1.weight" in line and "DIVERGED" in line for line in report)


def test_with_a_seeded_shuffle_rerun_finds_it_deterministic() -> None:
    r = fastdiff("rerun", "-n", "2", "--", sys.executable, TRAIN, "--steps", "4",
                 "--seed-shuffle", env=ENV)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "DETERMINISTIC: the 2 arms are bit-identical (48 buffers over 4 steps)" in r.stdout
