"""Training checkpoints as runs (issue 25, section 4): Megatron-LM legacy,
DeepSpeed, Hugging Face Trainer step folders and roots of them, written with
``torch.save`` of the dicts those frameworks save (stand-in modules for the
classes fastdiff's reader lacks, on sys.path at save time only)."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

import fastdiff  # noqa: E402
from fastdiff.sources import FORMATS, folder_format  # noqa: E402
from fastdiff.sources.stepfolders import STEP_FOLDERS, step_of  # noqa: E402


def cli(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fastdiff", *map(str, args)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def report(a: Path, b: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    r = cli("compare", a, b, "--format", "json", *extra)
    assert r.returncode in (0, 1), r.stderr
    assert "Traceback" not in r.stderr
    return r.returncode, json.loads(r.stdout)


def by_key(rep: dict[str, Any]) -> dict[tuple[int, str], dict[str, Any]]:
    return {(b["step"], b["name"]): b for b in rep["buffers"]}


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    """``deepspeed.runtime.fp16.loss_scaler.LossScaler`` and
    ``transformers.training_args.TrainingArguments``, importable while the
    test saves, gone before fastdiff reads."""
    root = tmp_path / "standin"
    files = {
        "deepspeed/__init__.py": "",
        "deepspeed/runtime/__init__.py": "",
        "deepspeed/runtime/fp16/__init__.py": "",
        "deepspeed/runtime/fp16/loss_scaler.py": (
            "class LossScaler:\n"
            "    def __init__(self, scale):\n"
            "        self.cur_scale = scale\n"
            "        self.cur_iter = 3\n"
        ),
        "transformers/__init__.py": "",
        "transformers/training_args.py": (
            "class TrainingArguments:\n"
            "    def __init__(self, lr, out):\n"
            "        self.learning_rate = lr\n"
            "        self.output_dir = out\n"
        ),
    }
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    monkeypatch.syspath_prepend(str(root))
    yield lambda name: importlib.import_module(name)
    for m in [m for m in sys.modules if m.split(".")[0] in ("deepspeed", "transformers")]:
        del sys.modules[m]


# --- Megatron-LM legacy -----------------------------------------------------------------


def megatron(root: Path, steps: dict[int, dict[str, Any]]) -> Path:
    for step, kw in steps.items():
        for tp in (0, 1):
            for pp in (0, 1):
                d = root / f"iter_{step:07d}" / f"mp_rank_{tp:02d}_{pp:03d}"
                d.mkdir(parents=True)
                w = torch.arange(8, dtype=torch.float32) + tp + 10 * pp
                if kw.get("flip") == (tp, pp):
                    w[5] += 1
                torch.save({
                    "args": argparse.Namespace(lr=kw.get("lr", 1e-4), tensor_model_parallel_size=2,
                                               save=kw.get("save", "/ckpt")),
                    "checkpoint_version": 3.0,
                    "iteration": step,
                    "model": {"language_model": {"encoder": {"w": w}}},
                    "rng_state": [{
                        "random_rng_state": (3, tuple(range(5)), None),
                        "np_rng_state": np.random.RandomState(tp).get_state(),
                        "torch_rng_state": torch.zeros(16, dtype=torch.uint8),
                    }],
                }, d / "model_optim_rng.pt")  # fmt: skip
    (root / "latest_checkpointed_iteration.txt").write_text(str(max(steps)))
    return root


def test_megatron_root_every_saved_step(tmp_path):
    a = megatron(tmp_path / "a", {100: {}, 200: {}, 300: {}})
    b = megatron(tmp_path / "b", {100: {}, 200: {"flip": (1, 0)}, 300: {"lr": 2e-4}})
    assert folder_format(str(a)) == "checkpoint"
    code, rep = report(a, b)
    assert code == 1 and rep["first_divergent_step"] == 200
    got = by_key(rep)
    w = got[(200, "mp_rank_01_000.model_optim_rng.model.language_model.encoder.w")]
    assert w["status"] == "diverged" and w["first_index"] == 5 and w["dtype"] == "f32"
    lr = got[(300, "mp_rank_00_001.model_optim_rng.args.lr")]
    assert (lr["status"], lr["a"], lr["b"]) == ("diverged", 1e-4, 2e-4)
    rng = got[(100, "mp_rank_00_000.model_optim_rng.rng_state.0.np_rng_state.1")]
    assert rng["dtype"] == "u32" and rng["status"] == "equal"
    assert {s for s, _ in got} == {100, 200, 300}
    # one step folder given as RUN is that step
    code, rep = report(a / "iter_0000200", b / "iter_0000200")
    assert code == 1 and rep["first_divergent_step"] == 200
    # --steps selects saved steps
    code, rep = report(a, b, "--steps", "100")
    assert code == 0 and {x["step"] for x in rep["buffers"]} == {100}
    text = cli("compare", a, b).stdout
    assert "mp_rank_00_001.model_optim_rng.args.lr [value]  DIVERGED: A=0.0001 B=0.0002" in text
    # the verdict's group table says which parallel ranks each group is
    assert "(tensor-parallel rank 1, pipeline-parallel rank 0)" in text


# --- DeepSpeed ---------------------------------------------------------------------------


def deepspeed(root: Path, stand_in, steps: dict[int, dict[str, Any]]) -> Path:
    scaler = stand_in("deepspeed.runtime.fp16.loss_scaler").LossScaler
    for step, kw in steps.items():
        d = root / f"global_step{step}"
        d.mkdir(parents=True)
        torch.save({
            "module": {"fc.weight": torch.ones(2, 3, dtype=torch.bfloat16),
                       "fc.bias": torch.zeros(2, dtype=torch.bfloat16)},
            "buffer_names": [], "global_steps": step, "global_samples": step * 8,
            "dp_world_size": 2, "mp_world_size": 1, "ds_version": "0.14.0",
            "param_shapes": [{"fc.weight": torch.Size([2, 3]), "fc.bias": torch.Size([2])}],
            "lr_scheduler": {"last_epoch": step, "base_lrs": [kw.get("lr", 0.01)]},
        }, d / "mp_rank_00_model_states.pt")  # fmt: skip
        for rank in (0, 1):
            flat = torch.arange(4, dtype=torch.float32) + 4 * rank
            if kw.get("flip") == rank:
                flat[2] = -1.0
            torch.save({
                "optimizer_state_dict": {
                    "loss_scaler": scaler(kw.get("scale", 1024.0)),
                    "dynamic_loss_scale": True, "overflow": False,
                    "single_partition_of_fp32_groups": [flat],
                    "base_optimizer_state": {"state": {0: {"exp_avg": flat * 0.1}}},
                    "zero_stage": 2, "partition_count": [2],
                },
                "ds_config": {"train_batch_size": 16}, "ds_version": "0.14.0",
            }, d / f"zero_pp_rank_{rank}_mp_rank_00_optim_states.pt")  # fmt: skip
        (root / "latest").write_text(f"global_step{step}")
    return root


def test_deepspeed_root_flat_partitions_and_loss_scaler(tmp_path, stand_in):
    a = deepspeed(tmp_path / "a", stand_in, {5: {}, 10: {}})
    b = deepspeed(tmp_path / "b", stand_in, {5: {}, 10: {"flip": 1, "scale": 512.0}})
    for m in [m for m in sys.modules if m.startswith("deepspeed")]:
        del sys.modules[m]  # fastdiff reads without it
    code, rep = report(a, b)
    assert code == 1 and rep["first_divergent_step"] == 10
    got = by_key(rep)
    part = "zero_pp_rank_1_mp_rank_00_optim_states.optimizer_state_dict."
    flat = got[(10, part + "single_partition_of_fp32_groups.0")]
    assert (flat["status"], flat["first_index"], flat["n_diff"]) == ("diverged", 2, 1)
    assert (flat["a"], flat["b"]) == (6.0, -1.0)
    scale = got[(10, part + "loss_scaler.cur_scale")]
    assert (scale["dtype"], scale["a"], scale["b"]) == ("value", 1024.0, 512.0)
    assert got[(5, "mp_rank_00_model_states.module.fc.weight")]["dtype"] == "bf16"
    assert got[(5, "mp_rank_00_model_states.ds_version")]["dtype"] == "label"
    reasons = " ".join(s["reason"] for s in rep["skipped"])
    assert "deepspeed.runtime.fp16.loss_scaler.LossScaler" in reasons


# --- Hugging Face Trainer ------------------------------------------------------------------


def trainer(root: Path, stand_in, steps: dict[int, dict[str, Any]]) -> Path:
    st = pytest.importorskip("safetensors.torch")
    args = stand_in("transformers.training_args").TrainingArguments
    for step, kw in steps.items():
        d = root / f"checkpoint-{step}"
        d.mkdir(parents=True)
        w = torch.full((3, 2), float(step))
        if kw.get("flip"):
            w[1, 1] += 0.5
        st.save_file({"lm_head.weight": w}, str(d / "model.safetensors"))
        torch.save({"state": {0: {"step": torch.tensor(float(step)), "exp_avg": w * 0.1}},
                    "param_groups": [{"lr": 5e-5, "params": [0]}]}, d / "optimizer.pt")  # fmt: skip
        torch.save({"last_epoch": step, "_last_lr": [5e-5]}, d / "scheduler.pt")
        rng = np.random.RandomState(1).get_state()
        torch.save({"python": (3, tuple(range(4)), None), "numpy": rng,
                    "cpu": torch.zeros(8, dtype=torch.uint8)}, d / "rng_state.pth")  # fmt: skip
        torch.save(args(5e-5, kw.get("out", "/out")), d / "training_args.bin")
        state = {"global_step": step, "epoch": step / 10, "best_metric": None,
                 "log_history": [{"loss": kw.get("loss", 2.5), "step": step}],
                 "is_world_process_zero": True}  # fmt: skip
        (d / "trainer_state.json").write_text(json.dumps(state))
    return root


def test_trainer_root_values_of_trainer_state(tmp_path, stand_in):
    a = trainer(tmp_path / "a", stand_in, {500: {}, 1000: {}, 1500: {}})
    b = trainer(tmp_path / "b", stand_in, {500: {"out": "/other"}, 1000: {"loss": 2.25},
                                          1500: {"flip": True}})  # fmt: skip
    for m in [m for m in sys.modules if m.startswith("transformers")]:
        del sys.modules[m]
    code, rep = report(a, b)
    assert code == 1 and rep["first_divergent_step"] == 1000
    got = by_key(rep)
    out = got[(500, "training_args.output_dir")]
    assert (out["status"], out["a"], out["b"]) == ("label_differs", "/out", "/other")
    loss = got[(1000, "trainer_state.log_history.0.loss")]
    assert (loss["status"], loss["a"], loss["b"]) == ("diverged", 2.5, 2.25)
    assert got[(500, "trainer_state.best_metric")]["a"] is None
    w = got[(1500, "model.lm_head.weight")]
    assert w["status"] == "diverged" and w["first_index_nd"] == [1, 1]
    assert got[(1500, "optimizer.state.0.exp_avg")]["status"] == "diverged"
    assert got[(500, "rng_state.numpy.1")]["status"] == "equal"
    # one step folder, through the API: a label alone differs, identical
    rep = fastdiff.compare_runs(a / "checkpoint-500", b / "checkpoint-500")
    assert rep.verdict == "identical" and rep.first_divergent_step is None
    assert {x.step for x in rep.buffers} == {500}


def test_step_folder_names_and_the_registry():
    assert [p for p, _ in STEP_FOLDERS] == ["iter_", "global_step", "checkpoint-", "step-"]
    assert step_of("iter_0000100") == 100 and step_of("global_step7") == 7
    assert step_of("checkpoint-500") == 500 and step_of("step-30") == 30
    assert step_of("iter_") is None and step_of("checkpoint-1a") is None
    assert step_of("step_3") is None  # a dump's name, not a step folder
    assert "checkpoint" in FORMATS


def test_a_refused_file_in_a_step_folder_is_an_error_for_it_alone(tmp_path):
    for side in ("a", "b"):
        d = tmp_path / side / "global_step1"
        d.mkdir(parents=True)
        torch.save({"w": torch.ones(2)}, d / "mp_rank_00_model_states.pt")
    bad = tmp_path / "b" / "global_step1" / "zero_pp_rank_0_mp_rank_00_optim_states.pt"
    bad.write_bytes(b"PK\x03\x04 not a zip")
    r = cli("compare", tmp_path / "a", tmp_path / "b", "--format", "json")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    rep = json.loads(r.stdout)
    assert any(str(bad) == e["path"] for e in rep["errors"])
    assert by_key(rep)[(1, "mp_rank_00_model_states.w")]["status"] == "equal"


def test_a_step_folder_another_format_claims_is_read_as_that_format(tmp_path):
    """A root's step folder is opened as any run (``open_step_folder``): a
    safetensors checkpoint folder here, a DCP folder once its format is in
    the table."""
    st = pytest.importorskip("safetensors.torch")
    for side, bump in (("a", 0.0), ("b", 1.0)):
        for step in (10, 20):
            d = tmp_path / side / f"step-{step}"
            d.mkdir(parents=True)
            w = torch.zeros(4)
            if step == 20:
                w[3] += bump
            st.save_file({"w": w}, str(d / "model.safetensors"))
    assert folder_format(str(tmp_path / "a" / "step-10")) == "safetensors"
    code, rep = report(tmp_path / "a", tmp_path / "b")
    assert code == 1 and rep["first_divergent_step"] == 20
    assert by_key(rep)[(20, "w")]["first_index"] == 3
    assert by_key(rep)[(10, "w")]["status"] == "equal"


def test_hostile_json_and_pickles_in_a_step_folder(tmp_path):
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            import os

            return (os.system, (f"touch {marker}",))

    for side in ("a", "b"):
        d = tmp_path / side / "checkpoint-1"
        d.mkdir(parents=True)
        torch.save({"x": Evil(), "w": torch.ones(2)}, d / "optimizer.pt")
        (d / "trainer_state.json").write_text("[" * 5000 + "]" * 5000)
    r = cli("compare", tmp_path / "a", tmp_path / "b", "--format", "json")
    assert r.returncode == 2 and "Traceback" not in r.stderr and not marker.exists()
    rep = json.loads(r.stdout)
    assert any("trainer_state.json" in e["path"] for e in rep["errors"])
    assert by_key(rep)[(1, "optimizer.w")]["status"] == "equal"


def test_parallel_ranks_of_checkpoint_names():
    from fastdiff.model.findings import parallel_ranks

    assert parallel_ranks("mp_rank_01_002_003.model_optim_rng.w") == (
        ("tensor", 1), ("pipeline", 2), ("expert", 3)
    )  # fmt: skip
    assert parallel_ranks("mp_rank_00.model_optim_rng.w") == (("tensor", 0),)
    assert parallel_ranks("mp_rank_03_model_states.module.w") == (("model", 3),)
    assert parallel_ranks("zero_pp_rank_5_mp_rank_01_optim_states.x") == (("data", 5), ("model", 1))
    for other in ("model.w", "mp_rank_x.w", "mp_rank_1_2_3_4.w", "zero_pp_rank_x"):
        assert parallel_ranks(other) == ()
