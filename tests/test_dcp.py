"""torch.distributed.checkpoint (DCP) folders as runs, through the command line.

The checkpoints are written by torch itself: ``tests/dcp/write_dcp.py``
under ``torch.distributed.run`` with gloo on CPU, DTensors on a mesh of 2,
3 and 4 ranks (``Shard(0)``, ``Shard(1)``, ``Replicate()``, bf16), once
per test session (torchrun is slow to start), with one element changed at
known global coordinates. Every index the JSON report gives must be the
global one, whatever the two layouts.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch.distributed.checkpoint")

sys.path.insert(0, str(Path(__file__).parent))
from helpers import fastdiff  # noqa: E402

WRITER = Path(__file__).parent / "dcp" / "write_dcp.py"
NAMES = ("model.cols", "model.half", "model.rep", "model.rows", "model.vec")
VALUES = ("lr", "step")  # BYTE_IO items: values of the run


def _torchrun(ranks: int, specs: list[str], cwd: Path) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone",
         f"--nproc_per_node={ranks}", str(WRITER), *specs],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if done.returncode:
        pytest.fail(f"torchrun of {ranks} ranks failed:\n{done.stderr[-3000:]}")


@pytest.fixture(scope="session")
def ckpt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkpoints, written once: ``r<N>/base`` (N ranks), ``r<N>/<what>``
    with one element changed, ``r2/flip`` (rows and columns sharded the
    other way round), roots ``root_a``, ``root_b`` of ``step-<N>``
    folders, ``hf<N>/...``: the same saved through DCP's
    ``HuggingFaceStorageWriter`` (a safetensors file per rank; tensors
    only), and ``st<N>/...``: saved as ``.distcp`` files whose chunks are
    safetensors blobs (``SerializationFormat.SAFETENSORS``)."""
    root = tmp_path_factory.mktemp("dcp")
    _torchrun(2, [
        f"{root}/r2/base", f"{root}/r2/rows|model.rows:11,2", f"{root}/r2/flip",
        f"{root}/root_a/step-100", f"{root}/root_a/step-200",
        f"{root}/hf2/base|hf", f"{root}/hf2/rows|hf|model.rows:11,2",
        f"{root}/st2/base|st", f"{root}/st2/rows|st|model.rows:11,2",
    ], root)  # fmt: skip
    _torchrun(3, [
        f"{root}/r3/base", f"{root}/r3/half|model.half:7,5", f"{root}/hf3/half|hf|model.half:7,5",
    ], root)  # fmt: skip
    _torchrun(4, [
        f"{root}/r4/base", f"{root}/r4/cols|model.cols:3,9",
        f"{root}/r4/flipcols|flip|model.cols:3,9",
        f"{root}/root_b/step-100", f"{root}/root_b/step-200|model.rows:11,2",
        f"{root}/hf4/base|hf", f"{root}/hf4/cols|hf|model.cols:3,9",
        f"{root}/hf4/flip|hf|flip",
        f"{root}/st4/flip|st|flip", f"{root}/st4/cols|st|model.cols:3,9",
    ], root)  # fmt: skip
    return root


def compare(a: Path, b: Path, *more: str) -> tuple[int, dict[str, Any]]:
    done = fastdiff("compare", a, b, "--format", "json", *more)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def by_name(report: dict[str, Any]) -> dict[tuple[int, str], dict[str, Any]]:
    return {(b["step"], b["name"]): b for b in report["buffers"]}


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("root_a/step-100", "root_a/step-200"),  # the same layout
        ("r2/base", "r3/base"),
        ("r2/base", "r4/base"),
        ("r3/base", "r4/base"),
        ("r2/base", "r2/flip"),  # rows against columns
        ("r2/flip", "r4/base"),
    ],
)
def test_the_same_tensors_in_any_layout_are_identical(ckpt: Path, a: str, b: str) -> None:
    code, report = compare(ckpt / a, ckpt / b)
    assert code == 0
    assert report["verdict"] == "identical"
    assert sorted(n for _, n in by_name(report)) == sorted(NAMES + VALUES)
    assert all(b["status"] == "equal" for b in report["buffers"])


@pytest.mark.parametrize(
    ("a", "b", "name", "at", "shape", "dtype"),
    [
        ("r2/base", "r2/rows", "model.rows", [11, 2], [13, 7], "f32"),  # same layout
        ("r3/base", "r2/rows", "model.rows", [11, 2], [13, 7], "f32"),  # 3 ranks against 2
        ("r4/base", "r3/half", "model.half", [7, 5], [9, 6], "bf16"),
        ("r2/base", "r4/cols", "model.cols", [3, 9], [5, 11], "f32"),  # columns, 2 against 4
        ("r2/flip", "r4/cols", "model.cols", [3, 9], [5, 11], "f32"),  # rows against columns
        ("r4/cols", "r4/flipcols", "model.cols", None, [5, 11], "f32"),  # changed alike
    ],
)
def test_one_element_changed_is_found_at_its_global_index(
    ckpt: Path, a: str, b: str, name: str, at: list[int] | None, shape: list[int], dtype: str
) -> None:
    code, report = compare(ckpt / a, ckpt / b)
    buffers = by_name(report)
    if at is None:
        assert code == 0 and buffers[(0, name)]["status"] == "equal"
        return
    assert code == 1
    assert report["first_divergent_step"] == 0
    diverged = {n for (_, n), buf in buffers.items() if buf["status"] != "equal"}
    assert diverged == {name}
    buf = buffers[(0, name)]
    assert buf["dtype"] == dtype
    assert buf["shape"] == shape
    assert buf["n_diff"] == 1
    assert buf["first_index_nd"] == at
    assert buf["first_index"] == at[0] * shape[1] + at[1]
    assert buf["max_abs_delta_index_nd"] == at
    assert buf["rows"] == [at[0]]
    assert abs(buf["b"] - buf["a"] - 1) < 0.02  # bf16: one more, rounded


def test_a_root_of_step_folders_is_a_run_of_those_steps(ckpt: Path) -> None:
    code, report = compare(ckpt / "root_a", ckpt / "root_b")
    assert code == 1
    assert report["first_divergent_step"] == 200
    buffers = by_name(report)
    assert {s for s, _ in buffers} == {100, 200}
    assert all(b["status"] == "equal" for (s, _), b in buffers.items() if s == 100)
    assert buffers[(200, "model.rows")]["first_index_nd"] == [11, 2]


def test_a_root_lists_only_the_steps_asked_for(ckpt: Path) -> None:
    code, report = compare(ckpt / "root_a", ckpt / "root_b", "--steps", "100")
    assert code == 0
    assert {b["step"] for b in report["buffers"]} == {100}


def test_the_values_beside_the_tensors_are_compared(ckpt: Path) -> None:
    """``BYTE_IO`` items (``step``, ``lr``) are values of the run, whatever
    the layouts: equal here, and nothing said to be left out."""
    _, report = compare(ckpt / "r2/base", ckpt / "r3/base")
    got = by_name(report)
    assert (got[(0, "step")]["dtype"], got[(0, "step")]["a"], got[(0, "step")]["b"]) == (
        "value", 100, 100
    )  # fmt: skip
    assert got[(0, "lr")]["status"] == "equal"
    assert not [s for s in report["skipped"] if "not tensors" in json.dumps(s)]


def _save_values(out: Path, lr: float, host: str) -> None:
    import torch.distributed.checkpoint as dcp

    state = {"w": torch.arange(6.0).reshape(2, 3), "lr": lr, "step": 5, "host": host,
             "extra": {"seed": 7, "tag": host}}  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "assuming the intent is to save in a single process"
        dcp.save(state, checkpoint_id=str(out))


def test_a_value_that_differs_diverges_and_a_label_is_listed(tmp_path: Path) -> None:
    _save_values(tmp_path / "a", 0.001, "host-a")
    _save_values(tmp_path / "b", 0.002, "host-b")
    _save_values(tmp_path / "c", 0.001, "host-c")
    code, report = compare(tmp_path / "a", tmp_path / "b")
    got = by_name(report)
    assert code == 1 and report["first_divergent_step"] == 0
    lr = got[(0, "lr")]
    assert (lr["dtype"], lr["status"], lr["a"], lr["b"]) == ("value", "diverged", 0.001, 0.002)
    assert got[(0, "extra.seed")]["status"] == "equal"
    code, report = compare(tmp_path / "a", tmp_path / "c")  # labels alone differ
    got = by_name(report)
    assert code == 0 and report["verdict"] == "identical"
    for name in ("host", "extra.tag"):
        assert (got[(0, name)]["dtype"], got[(0, name)]["status"]) == ("label", "label_differs")
        assert (got[(0, name)]["a"], got[(0, name)]["b"]) == ("host-a", "host-c")


def _copy(ckpt: Path, tmp_path: Path, which: str = "r2/base") -> Path:
    run = tmp_path / "run"
    shutil.copytree(ckpt / which, run)
    return run


class _System:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.system, (f"echo ran > {self.marker}",)


def _nested() -> bytes:
    deep: list[object] = []
    for _ in range(50_000):
        deep = [deep]
    return b"\x80\x02" + b"]" * 50_000 + b"a" * 49_999 + b"."


HOSTILE = {
    "os.system": lambda marker, good: pickle.dumps(_System(marker), protocol=2),
    "deep nesting": lambda marker, good: _nested(),
    "a pickle bomb": lambda marker, good: b"\x80\x02" + b"]" * 5_000_000,
    "truncated": lambda marker, good: good[: len(good) // 2],
    "empty": lambda marker, good: b"",
    "not a pickle": lambda marker, good: b"PK\x03\x04 not a pickle",
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_metadata_is_refused_in_one_line(ckpt: Path, tmp_path: Path, case: str) -> None:
    run = _copy(ckpt, tmp_path)
    marker = tmp_path / "marker"
    meta = run / ".metadata"
    meta.write_bytes(HOSTILE[case](marker, meta.read_bytes()))
    done = fastdiff("compare", ckpt / "r2/base", run)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert str(meta) in lines[0]
    assert "Traceback" not in done.stderr
    assert not marker.exists()  # nothing of the pickle ran


def test_a_missing_chunk_file_is_an_error_for_its_tensors(ckpt: Path, tmp_path: Path) -> None:
    run = _copy(ckpt, tmp_path)
    (run / "__1_0.distcp").unlink()
    done = fastdiff("compare", ckpt / "r2/base", run, "--format", "json")
    assert done.returncode == 2
    report = json.loads(done.stdout)
    assert report["errors"]
    assert any("__1_0.distcp" in e["message"] for e in report["errors"])


def test_a_chunk_path_outside_the_folder_is_refused(ckpt: Path, tmp_path: Path) -> None:
    run = _copy(ckpt, tmp_path)
    meta = run / ".metadata"
    data = meta.read_bytes().replace(b"__1_0.distcp", b"../1_0.distc")  # the same length
    meta.write_bytes(data)
    done = fastdiff("compare", ckpt / "r2/base", run, "--format", "json")
    assert done.returncode == 2
    assert "not one of the folder's" in done.stdout


def test_a_chunk_rewritten_since_it_was_cached_is_read_again(ckpt: Path, tmp_path: Path) -> None:
    run = _copy(ckpt, tmp_path)
    cache = ["--cache", "--cache-dir", str(tmp_path / "cache"), "--cache-min-age", "0"]
    code, _ = compare(ckpt / "r2/base", run, *cache)
    assert code == 0
    # The same size, one byte of model.rows[9, 3] (its second chunk) changed: a new mtime.
    import torch.distributed.checkpoint as dcp

    state = {"model.rows": torch.zeros(13, 7)}
    with warnings.catch_warnings():  # no process group: a single process, as meant
        warnings.simplefilter("ignore")
        dcp.load(state, checkpoint_id=str(run))
    target = run / "__1_0.distcp"
    blob = bytearray(target.read_bytes())
    old = state["model.rows"][9, 3].numpy().tobytes()
    at = blob.find(old)
    assert at > 0
    blob[at + 3] ^= 0x40
    target.write_bytes(bytes(blob))
    code, report = compare(ckpt / "r2/base", run, *cache)
    assert code == 1
    assert by_name(report)[(0, "model.rows")]["first_index_nd"] == [9, 3]


def test_megatron_torch_dist_reads_common_pt_too(ckpt: Path, tmp_path: Path) -> None:
    a = tmp_path / "a"
    b = tmp_path / "b"
    for run, value in ((a, 1.0), (b, 2.0)):
        shutil.copytree(ckpt / "r2/base", run)
        common = {"iteration": 100, "rng_state": torch.tensor([1.0, value, 3.0])}
        torch.save(common, run / "common.pt")
        (run / "metadata.json").write_text('{"sharded_backend": "torch_dist"}')
    code, report = compare(a, b)
    assert code == 1
    buffers = by_name(report)
    assert buffers[(0, "rng_state")]["first_index"] == 1
    assert all(buf["status"] == "equal" for (_, n), buf in buffers.items() if n != "rng_state")


def test_only_the_differing_chunk_reaches_a_kernel(ckpt: Path) -> None:
    # model.cols is 5 x 11 f32 (220 bytes), sharded by columns over 2 and 4 ranks.
    code, report = compare(ckpt / "r2/base", ckpt / "r4/cols", "--chunk-size", "64")
    assert code == 1
    assert 0 < report["work"]["bytes_scanned"] <= 2 * 64


def test_worker_processes_read_the_pieces_too(ckpt: Path) -> None:
    code, report = compare(ckpt / "r3/base", ckpt / "r4/cols", "--executor", "process")
    assert code == 1
    assert by_name(report)[(0, "model.cols")]["first_index_nd"] == [3, 9]


def test_a_manifest_of_one_layout_compares_with_a_run_of_another(
    ckpt: Path, tmp_path: Path
) -> None:
    manifest = tmp_path / "r2.manifest.json"
    done = fastdiff("hash", ckpt / "r2/base", "-o", manifest)
    assert done.returncode == 0, done.stderr
    code, report = compare(manifest, ckpt / "r4/base")
    assert code == 0
    code, report = compare(manifest, ckpt / "r4/cols")
    assert code == 1
    diverged = [b["name"] for b in report["buffers"] if b["status"] != "equal"]
    assert diverged == ["model.cols"]


# --- DCP in safetensors files (HuggingFaceStorageWriter, save_distributed) ---------


def _one_changed(
    code: int, report: dict[str, Any], name: str, at: list[int], shape: list[int]
) -> None:
    """Only tensor ``name`` diverged, at global index ``at`` of ``shape``."""
    assert code == 1
    buffers = by_name(report)
    assert {n for (_, n), buf in buffers.items() if buf["status"] != "equal"} == {name}
    buf = buffers[(0, name)]
    assert (buf["shape"], buf["n_diff"], buf["first_index_nd"]) == (shape, 1, at)
    assert buf["first_index"] == at[0] * shape[1] + at[1]


@pytest.mark.parametrize(
    ("a", "b", "more"),
    [
        ("hf2/base", "hf4/base", ()),  # 2 ranks against 4
        ("hf2/base", "hf4/flip", ()),  # rows against columns
        ("hf4/base", "r2/base", ("--ignore", "lr", "--ignore", "step")),  # against .distcp
    ],
)
def test_dcp_safetensors_in_any_layout_are_identical(
    ckpt: Path, a: str, b: str, more: tuple[str, ...]
) -> None:
    code, report = compare(ckpt / a, ckpt / b, *more)
    assert code == 0, report["errors"]
    assert report["verdict"] == "identical"
    assert sorted(n for _, n in by_name(report)) == sorted(NAMES)
    assert all(b["status"] == "equal" for b in report["buffers"])


@pytest.mark.parametrize(
    ("a", "b", "name", "at", "shape"),
    [
        ("hf4/base", "hf2/rows", "model.rows", [11, 2], [13, 7]),
        ("hf2/base", "hf4/cols", "model.cols", [3, 9], [5, 11]),
        ("hf4/flip", "hf4/cols", "model.cols", [3, 9], [5, 11]),
        ("r2/base", "hf3/half", "model.half", [7, 5], [9, 6]),  # .distcp against safetensors
    ],
)
def test_dcp_safetensors_one_element_changed_is_found_at_its_global_index(
    ckpt: Path, a: str, b: str, name: str, at: list[int], shape: list[int]
) -> None:
    code, report = compare(ckpt / a, ckpt / b, "--ignore", "lr", "--ignore", "step")
    _one_changed(code, report, name, at, shape)


def _rewrite(path: Path, sharding: object) -> None:
    """A rank's file again, its DCP_SHARDING_INFO replaced by ``sharding``."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(str(path), "pt") as f:
        meta = dict(f.metadata())
        tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118
    meta["DCP_SHARDING_INFO"] = sharding if isinstance(sharding, str) else json.dumps(sharding)
    save_file(tensors, str(path), meta)


RANK2 = "shard-00002-model-00001-of-00001.safetensors"


def _rank2_refused(ckpt: Path, run: Path, says: str) -> None:
    """Comparing ``run`` (a copy of hf2/base) gives one error, rank 2's
    file's, saying ``says``, exit 2, and no tensor compared equal."""
    done = fastdiff("compare", ckpt / "hf2/base", run, "--format", "json")
    assert done.returncode == 2
    report = json.loads(done.stdout)
    assert [e["path"] for e in report["errors"]] == [str(run / RANK2)]
    assert says in report["errors"][0]["message"]
    assert not [b for b in report["buffers"] if b["status"] == "equal"]


@pytest.mark.parametrize(
    "sharding",
    [
        "{not json",
        ["a list"],
        {"model.nothere": {"saved_offsets": [0, 0]}},
        {"model.rows": {"saved_offsets": [7]}},
        {"model.rows": {"saved_offsets": [7, -1]}},
        {"model.rows": {"saved_offsets": [7, 0], "more": 1}},
    ],
)
def test_a_hostile_sharding_info_refuses_the_checkpoint(
    ckpt: Path, tmp_path: Path, sharding: object
) -> None:
    """A rank's file whose DCP_SHARDING_INFO is not what torch writes: one
    line naming the file, exit 2, and no tensor of the checkpoint is
    compared (each has a chunk in every rank's file, unknown)."""
    run = _copy(ckpt, tmp_path, "hf2/base")
    _rewrite(run / RANK2, sharding)
    _rank2_refused(ckpt, run, "DCP_SHARDING_INFO")
    text = fastdiff("compare", ckpt / "hf2/base", run)
    assert text.returncode == 2 and "Traceback" not in text.stderr
    assert len(text.stderr.strip().splitlines()) == 1


def test_a_rank_file_that_links_to_nothing_is_said_so(ckpt: Path, tmp_path: Path) -> None:
    """A rank's file a dangling link: missing (not "named in an index": the
    folder has none), and no tensor of the checkpoint is compared."""
    run = _copy(ckpt, tmp_path, "hf2/base")
    (run / RANK2).unlink()
    (run / RANK2).symlink_to(tmp_path / "nothing")
    _rank2_refused(ckpt, run, "listed in the folder but missing")


def test_chunks_that_do_not_tile_are_an_error_for_that_tensor(ckpt: Path, tmp_path: Path) -> None:
    """Rank 2's chunk of model.rows moved to overlap rank 1's: that tensor is
    an error, the others are compared."""
    run = _copy(ckpt, tmp_path, "hf2/base")
    sharding = {
        "model.rows": {"saved_offsets": [6, 0]}, "model.cols": {"saved_offsets": [0, 6]},
        "model.rep": {"saved_offsets": [0, 0]}, "model.half": {"saved_offsets": [5, 0]},
        "model.vec": {"saved_offsets": [12]},
    }  # fmt: skip
    _rewrite(run / RANK2, sharding)
    done = fastdiff("compare", ckpt / "hf2/base", run, "--format", "json")
    assert done.returncode == 2
    report = json.loads(done.stdout)
    got = by_name(report)
    assert got[(0, "model.rows")]["status"] == "error"
    # the overlapping chunks count 7 elements twice: more than the shape holds
    assert "chunks hold 91 elements, not its 84" in got[(0, "model.rows")]["message"]
    assert {n for (_, n), b in got.items() if b["status"] == "equal"} == set(NAMES) - {"model.rows"}


def test_a_missing_rank_file_is_no_identical_checkpoint(ckpt: Path, tmp_path: Path) -> None:
    """Without rank 2's file its chunks are gone: rank 2 held the far end of
    every sharded tensor, so rank 1's chunks make smaller tensors (diverged,
    their shapes differ), and the tensor only rank 2 held is in one run
    only."""
    run = _copy(ckpt, tmp_path, "hf2/base")
    (run / RANK2).unlink()
    code, report = compare(ckpt / "hf2/base", run)
    assert code == 1
    got = by_name(report)
    assert got[(0, "model.rep")]["status"] == "only_in_a"
    for name in set(NAMES) - {"model.rep"}:
        assert got[(0, name)]["status"] == "diverged", name


# --- .distcp files of safetensors blobs (SerializationFormat.SAFETENSORS) ----------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("st2/base", "r2/base"),  # blobs against torch.save archives
        ("st2/base", "st4/flip"),  # 2 ranks against 4, rows against columns
        ("r4/base", "st4/flip"),
    ],
)
def test_distcp_of_safetensors_blobs_in_any_layout_are_identical(
    ckpt: Path, a: str, b: str
) -> None:
    code, report = compare(ckpt / a, ckpt / b)
    assert code == 0, report["errors"]
    assert report["verdict"] == "identical"
    assert sorted(n for _, n in by_name(report)) == sorted([*NAMES, "lr", "step"])
    assert all(b["status"] == "equal" for b in report["buffers"])


@pytest.mark.parametrize(
    ("a", "b", "name", "at", "shape"),
    [
        ("st4/flip", "st2/rows", "model.rows", [11, 2], [13, 7]),
        ("r2/base", "st4/cols", "model.cols", [3, 9], [5, 11]),
    ],
)
def test_distcp_of_safetensors_blobs_one_element_changed_is_found_at_its_global_index(
    ckpt: Path, a: str, b: str, name: str, at: list[int], shape: list[int]
) -> None:
    code, report = compare(ckpt / a, ckpt / b)
    _one_changed(code, report, name, at, shape)


RANK0 = "__0_0.distcp"


def _rewrite_blob(path: Path, change: str) -> None:
    """Rank 0's .distcp file again (its chunks are one safetensors blob at
    offset 0: it holds no value), the blob changed as ``change`` says."""
    from safetensors.torch import load, save

    data = path.read_bytes()
    tensors = load(data)  # the whole file is the blob
    n = int.from_bytes(data[:8], "little")
    meta = json.loads(data[8 : 8 + n])["__metadata__"]
    sharding = json.loads(meta["DCP_SHARDING_INFO"])
    if change == "offsets":  # rank 0's rows said to be at row 7
        sharding["model.rows"]["saved_offsets"] = [7, 0]
    elif change == "renamed":
        tensors["model.other"] = tensors.pop("model.rows")
        sharding["model.other"] = sharding.pop("model.rows")
    elif change == "dtype":
        tensors["model.rows"] = tensors["model.rows"].double()[:, :3].contiguous()
    meta["DCP_SHARDING_INFO"] = json.dumps(sharding)
    out = save(tensors, meta)
    if change == "trailing":
        out += b"\0" * 8
    elif change == "header":
        out = len(out).to_bytes(8, "little") + out[8:]
    elif change == "sharding":
        meta["DCP_SHARDING_INFO"] = '{"model.rows": {"saved_offsets": [0, "0"]}}'
        out = save(tensors, meta)
    path.write_bytes(out)


@pytest.mark.parametrize(
    ("change", "hurt", "says"),
    [
        ("offsets", {"model.rows"}, "at (7, 0)"),
        ("renamed", {"model.rows"}, "holds no 'model.rows'"),
        ("dtype", {"model.rows"}, "is a tensor of f64"),
        ("trailing", set(NAMES) - {"model.rep"}, "bytes after the last tensor"),
        ("header", set(NAMES) - {"model.rep"}, "runs past the end of the file"),
        ("sharding", set(NAMES) - {"model.rep"}, "DCP_SHARDING_INFO"),
    ],
)
def test_a_hostile_safetensors_blob_is_an_error_for_its_tensors(
    ckpt: Path, tmp_path: Path, change: str, hurt: set[str], says: str
) -> None:
    """A blob that is not the chunks .metadata says: each tensor with a
    chunk in it is an error that says why and names the file; the values
    and the tensors elsewhere are compared; one line each, exit 2."""
    run = _copy(ckpt, tmp_path, "st2/base")
    _rewrite_blob(run / RANK0, change)
    done = fastdiff("compare", ckpt / "st2/base", run, "--format", "json")
    assert done.returncode == 2
    got = by_name(json.loads(done.stdout))
    errors = {n for (_, n), b in got.items() if b["status"] == "error"}
    assert errors == hurt
    for name in hurt:
        assert says in got[(0, name)]["message"] and RANK0 in got[(0, name)]["message"]
    assert {n for (_, n), b in got.items() if b["status"] == "equal"} == (
        set(NAMES) | {"lr", "step"}
    ) - hurt
    text = fastdiff("compare", ckpt / "st2/base", run)
    assert text.returncode == 2 and "Traceback" not in text.stderr
    assert len(text.stderr.strip().splitlines()) == len(hurt)


# --- names --------------------------------------------------------------------------


@pytest.mark.parametrize("blobs", [False, True])
def test_a_tensor_named_like_a_part_of_a_value_is_an_error_not_lost(
    tmp_path: Path, blobs: bool
) -> None:
    """A DCP item ``o.0`` beside a list value ``o`` (whose element is ``o.0``
    too, as values are named): neither is compared, whichever run holds
    them, and the pair is no identical one (one of them once hid the
    other: a tensor only one run holds was reported identical)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint import FileSystemWriter
    from torch.distributed.checkpoint.filesystem import SerializationFormat

    fmt = SerializationFormat.SAFETENSORS if blobs else SerializationFormat.TORCH_SAVE
    states = {"plain": {"o": [1.5]}, "both": {"o.0": torch.arange(10.0), "o": [1.5]}}
    for name, state in states.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            writer = FileSystemWriter(str(tmp_path / name), serialization_format=fmt)
            dcp.save(state, storage_writer=writer, no_dist=True)
    for a, b in (("plain", "both"), ("both", "plain")):
        done = fastdiff("compare", tmp_path / a, tmp_path / b, "--format", "json")
        assert done.returncode == 2
        report = json.loads(done.stdout)
        assert report["verdict"] != "identical"
        got = by_name(report)
        assert got[(0, "o.0")]["status"] == "error"
        assert "'o.0' names 2 buffers" in got[(0, "o.0")]["message"]
        assert [e["path"] for e in report["errors"]] == [str(tmp_path / "both")]
