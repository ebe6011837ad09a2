"""DCP checkpoints of random layouts against an oracle that loads them with torch.

Each case is a few tensors of random global shapes and dtypes, saved twice
with two random chunkings (each dimension cut at random points: the grid a
sharding makes, of one chunk for a replicated tensor), the second copy with
a few elements changed. The folders are written the way DCP's
``FileSystemWriter`` writes them (each chunk a ``torch.save`` archive in a
``__<k>_0.distcp`` file, ``.metadata`` a pickle of DCP's own classes), or
its ``HuggingFaceStorageWriter`` (a safetensors file per rank, each
chunk's offsets in its header), and loaded back with ``dcp.load`` (the
oracle's reading: it proves they are DCP checkpoints); or as
``FileSystemWriter(serialization_format=SAFETENSORS)`` writes them (each
rank's chunks one safetensors blob in its ``.distcp`` file, which torch's
reader does not load: the oracle reads the ``.metadata`` with torch and
each blob with the safetensors library). The oracle then
works out every fact of the JSON report with numpy from the global tensors
(``test_formats_oracle.expect_runs``) and the global ranges and rows.
"""

from __future__ import annotations

import io
import itertools
import json
import pickle
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("ml_dtypes")
pytest.importorskip("safetensors")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from torch.distributed.checkpoint.filesystem import _StorageInfo  # noqa: E402
from torch.distributed.checkpoint.metadata import (  # noqa: E402
    ChunkStorageMetadata,
    Metadata,
    MetadataIndex,
    TensorProperties,
    TensorStorageMetadata,
)

sys.path.insert(0, str(Path(__file__).parent))
from helpers import fastdiff  # noqa: E402
from test_formats_oracle import Entry, check_report, expect_runs  # noqa: E402

DTYPES = {
    "f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16, "f64": torch.float64,
    "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8,
}  # fmt: skip


def write_dcp(folder: Path, tensors: dict[str, tuple[Any, list[list[int]]]], files: int) -> None:
    """A DCP folder of ``tensors`` (name -> (global tensor, cut points per
    dimension)), their chunks spread over ``files`` files, as DCP's
    ``FileSystemWriter`` lays them out."""

    folder.mkdir(parents=True)
    streams = [io.BytesIO() for _ in range(files)]
    items: dict[str, Any] = {}
    storage: dict[Any, Any] = {}
    k = 0
    for name, (t, cuts) in tensors.items():
        chunks = []
        for index, (at_, data) in enumerate(_chunks(t, cuts)):
            offsets, sizes = torch.Size(at_), data.shape
            stream = streams[k % files]
            k += 1
            at = stream.tell()
            torch.save(data, stream)
            storage[MetadataIndex(name, offsets, index)] = _StorageInfo(
                f"__{streams.index(stream)}_0.distcp", at, stream.tell() - at
            )
            chunks.append(ChunkStorageMetadata(offsets=offsets, sizes=sizes))
        items[name] = TensorStorageMetadata(TensorProperties.create_from_tensor(t), t.shape, chunks)
    for i, stream in enumerate(streams):
        (folder / f"__{i}_0.distcp").write_bytes(stream.getvalue())
    with open(folder / ".metadata", "wb") as f:
        pickle.dump(Metadata(state_dict_metadata=items, storage_data=storage), f)


def write_hf(folder: Path, tensors: dict[str, tuple[Any, list[list[int]]]]) -> None:
    """The same as DCP's ``HuggingFaceStorageWriter(save_distributed=True)``
    lays it out: one safetensors file per rank (``shard-<R>-model-00001-of-
    00001.safetensors``), rank R holding the R-th chunk of each tensor, each
    chunk's offsets in the header's ``DCP_SHARDING_INFO``."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True)
    ranks: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for name, (t, cuts) in tensors.items():
        for rank, (offsets, data) in enumerate(_chunks(t, cuts)):
            while len(ranks) <= rank:
                ranks.append(({}, {}))
            ranks[rank][0][name] = data
            ranks[rank][1][name] = {"saved_offsets": offsets}
    for rank, (data, info) in enumerate(ranks):
        meta = {"DCP_SHARDING_INFO": json.dumps(info), "DCP_VERSION": "1.0", "format": "pt"}
        save_file(
            data, str(folder / f"shard-{rank + 1:05d}-model-00001-of-00001.safetensors"), meta
        )


def write_blobs(folder: Path, tensors: dict[str, tuple[Any, list[list[int]]]]) -> None:
    """The same as DCP's ``FileSystemWriter(serialization_format=SAFETENSORS)``
    lays it out: rank R (``__<R>_0.distcp``) holds the R-th chunk of each
    tensor, all of them one safetensors blob (each chunk's offsets in its
    ``DCP_SHARDING_INFO``); each chunk's ``_StorageInfo`` is the blob's
    offset and the chunk's length in bytes."""
    from safetensors.torch import save

    folder.mkdir(parents=True)
    ranks: list[tuple[dict[str, Any], dict[str, Any]]] = []
    items: dict[str, Any] = {}
    storage: dict[Any, Any] = {}
    for name, (t, cuts) in tensors.items():
        chunks = []
        for rank, (offsets, data) in enumerate(_chunks(t, cuts)):
            while len(ranks) <= rank:
                ranks.append(({}, {}))
            ranks[rank][0][name] = data
            ranks[rank][1][name] = {"saved_offsets": offsets}
            at = torch.Size(offsets)
            storage[MetadataIndex(name, at, rank)] = _StorageInfo(
                f"__{rank}_0.distcp", 0, data.numel() * data.element_size()
            )
            chunks.append(ChunkStorageMetadata(offsets=at, sizes=data.shape))
        items[name] = TensorStorageMetadata(TensorProperties.create_from_tensor(t), t.shape, chunks)
    for rank, (data, info) in enumerate(ranks):
        meta = {"DCP_SHARDING_INFO": json.dumps(info), "DCP_VERSION": "1.0", "format": "pt"}
        (folder / f"__{rank}_0.distcp").write_bytes(save(data, meta))
    with open(folder / ".metadata", "wb") as f:
        pickle.dump(Metadata(state_dict_metadata=items, storage_data=storage), f)


def load_blobs(folder: Path, like: dict[str, Any]) -> dict[str, Any]:
    """The global tensors of ``write_blobs``' folder: its ``.metadata`` read
    by torch's ``FileSystemReader``, each chunk from its blob by the
    safetensors library, put into place."""
    from safetensors.torch import load
    from torch.distributed.checkpoint import FileSystemReader

    meta = FileSystemReader(str(folder)).read_metadata()
    state = {name: torch.empty_like(t) for name, t in like.items()}
    for index, info in meta.storage_data.items():
        data = (folder / info.relative_path).read_bytes()[info.offset :]
        chunk = load(data)[index.fqn]
        box = tuple(slice(o, o + n) for o, n in zip(index.offset, chunk.shape, strict=True))
        state[index.fqn][box] = chunk
    return state


def _chunks(t: Any, cuts: list[list[int]]) -> list[tuple[list[int], Any]]:
    """(offsets, chunk) of the grid the cut points make of ``t``."""
    bounds = [[0, *c, d] for c, d in zip(cuts, t.shape, strict=True)]
    grid = [[]]  # type: list[list[tuple[int, int]]]
    for b in bounds:
        grid = [[*g, (lo, hi)] for g in grid for lo, hi in itertools.pairwise(b)]
    return [
        ([lo for lo, _ in box], t[tuple(slice(lo, hi) for lo, hi in box)].clone()) for box in grid
    ]


def load_dcp(folder: Path, like: dict[str, Any]) -> dict[str, Any]:
    """The global tensors, as ``dcp.load`` reads them into preallocated ones
    (through ``HuggingFaceStorageReader`` for a folder of safetensors files)."""
    import torch.distributed.checkpoint as dcp

    state = {name: torch.empty_like(t) for name, t in like.items()}
    with warnings.catch_warnings():  # no process group: one process, as meant
        warnings.simplefilter("ignore")
        if (folder / ".metadata").exists():
            dcp.load(state, checkpoint_id=str(folder))
        else:
            reader = dcp.HuggingFaceStorageReader(str(folder))
            dcp.load(state, storage_reader=reader)
    return state


def raw(t: Any) -> bytes:
    return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


@st.composite
def cases(draw: st.DrawFn) -> dict[str, Any]:
    tensors = {}
    for i in range(draw(st.integers(1, 3))):
        dtype = draw(st.sampled_from(sorted(DTYPES)))
        shape = tuple(draw(st.lists(st.integers(1, 9), min_size=1, max_size=3)))
        seed = draw(st.integers(0, 2**31))
        g = torch.Generator().manual_seed(seed)
        if DTYPES[dtype].is_floating_point:
            t = (torch.randn(shape, generator=g, dtype=torch.float64) * 4).to(DTYPES[dtype])
        else:
            t = torch.randint(0, 100, shape, generator=g).to(DTYPES[dtype])

        def cuts(shape: tuple[int, ...] = shape) -> list[list[int]]:
            return [
                sorted(draw(st.sets(st.integers(1, d - 1), max_size=3))) if d > 1 else []
                for d in shape
            ]

        n = t.numel()
        changed = draw(st.lists(st.integers(0, n - 1), max_size=3, unique=True))
        tensors[f"t{i}.{dtype}"] = (t, cuts(), cuts(), changed)
    return {
        "tensors": tensors,
        "files_a": draw(st.integers(1, 4)),
        "files_b": draw(st.integers(1, 4)),
        "layout_a": draw(st.sampled_from(["distcp", "hf", "blobs"])),
        "layout_b": draw(st.sampled_from(["distcp", "hf", "blobs"])),
    }


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=cases())
def test_random_layouts_against_the_oracle(
    tmp_path_factory: pytest.TempPathFactory, case: dict[str, Any]
) -> None:
    root = tmp_path_factory.mktemp("dcp_oracle")
    a_tensors, b_tensors = {}, {}
    for name, (t, cuts_a, cuts_b, changed) in case["tensors"].items():
        b = t.clone()
        flat = b.reshape(-1)
        for i in changed:
            flat[i] = flat[i] + (1 if not t.is_floating_point() else 0.5 + abs(float(flat[i])))
        a_tensors[name] = (t, cuts_a)
        b_tensors[name] = (b, cuts_b)
    got = {}
    for side, tensors in (("a", a_tensors), ("b", b_tensors)):
        layout = case[f"layout_{side}"]
        like = {n: t for n, (t, _) in tensors.items()}
        if layout == "hf":
            write_hf(root / side, tensors)
        elif layout == "blobs":
            write_blobs(root / side, tensors)
        else:
            write_dcp(root / side, tensors, case[f"files_{side}"])
        # The oracle reads them with torch (and safetensors), and compares with numpy.
        got[side] = (load_blobs if layout == "blobs" else load_dcp)(root / side, like)
    got_a, got_b = got["a"], got["b"]
    for name, (t, _) in a_tensors.items():
        assert torch.equal(got_a[name], t) and torch.equal(got_b[name], b_tensors[name][0])
    ea = {(0, n): Entry(n.split(".")[1], tuple(t.shape), raw(t)) for n, t in got_a.items()}
    eb = {(0, n): Entry(n.split(".")[1], tuple(t.shape), raw(t)) for n, t in got_b.items()}
    want = expect_runs(ea, eb, {})
    for key, w in want["buffers"].items():
        t = got_a[key[1]]
        ua = np.frombuffer(ea[key].data, np.uint8).reshape(t.numel(), -1)
        ub = np.frombuffer(eb[key].data, np.uint8).reshape(t.numel(), -1)
        diff = np.flatnonzero((ua != ub).any(axis=1))
        if len(diff):
            w["shape"] = list(t.shape)
            runs: list[list[int]] = []
            for i in diff.tolist():
                if runs and runs[-1][1] == i:
                    runs[-1][1] = i + 1
                else:
                    runs.append([i, i + 1])
            w["n_ranges"] = len(runs)
            if t.dim() > 1:
                row = t.numel() // t.shape[0]  # a row: one index of the first dimension
                w["n_rows"] = len({i // row for i in diff.tolist()})
                index = int(w["max_abs_delta_index"])
                w["max_abs_delta_index_nd"] = [int(i) for i in np.unravel_index(index, t.shape)]
            w["_ranges"] = runs
    done = fastdiff("compare", root / "a", root / "b", "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    doc = json.loads(done.stdout)
    ranges = {k: w.pop("_ranges", None) for k, w in want["buffers"].items()}
    check_report(doc, want)
    for d in doc["buffers"]:
        runs = ranges[(d["step"], d["name"])]
        if runs is not None:
            assert d["ranges"] and d["ranges"] == runs[: len(d["ranges"])]
