"""Write DCP checkpoints with DTensors under ``torch.distributed.run``
(gloo, CPU): ``python -m torch.distributed.run --nproc_per_node N
write_dcp.py SPEC...``, each SPEC ``OUT[|flip][|hf|st][|NAME:I,J]``.

The global tensors are fixed (seeded); ``NAME:I,J`` adds one to one element
at those global coordinates before saving. Tensors: ``model.rows``
Shard(0), ``model.cols`` Shard(1) (``flip``: the other way round),
``model.rep`` Replicate(), ``model.half`` bf16 Shard(0), ``model.vec`` a
1-d Shard(0), and plain values ``step`` and ``lr``. One launch writes
every SPEC (torchrun is slow to start). ``hf`` saves through
``HuggingFaceStorageWriter(save_distributed=True)``: one safetensors file
per rank, no ``.metadata``, each tensor's offsets in its header (tensors
only). ``st`` saves through ``FileSystemWriter(serialization_format=
SAFETENSORS)``: ``.distcp`` files and ``.metadata`` as by default, but
each rank's chunks one safetensors blob after its values.
"""

from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint import FileSystemWriter, HuggingFaceStorageWriter
from torch.distributed.checkpoint.filesystem import SerializationFormat
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard, distribute_tensor


def global_tensors() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(25)
    return {
        "model.rows": torch.randn(13, 7, generator=g),
        "model.cols": torch.randn(5, 11, generator=g),
        "model.rep": torch.randn(4, 3, generator=g),
        "model.half": torch.randn(9, 6, generator=g).to(torch.bfloat16),
        "model.vec": torch.randn(23, generator=g),
    }


PLACEMENT = {
    "model.rows": Shard(0), "model.cols": Shard(1), "model.rep": Replicate(),
    "model.half": Shard(0), "model.vec": Shard(0),
}  # fmt: skip


def save(spec: str, mesh: object) -> None:
    out, *options = spec.split("|")
    tensors = global_tensors()
    placement = dict(PLACEMENT)
    hf = "hf" in options
    st = "st" in options
    for option in options:
        if option in ("hf", "st"):
            continue
        if option == "flip":
            placement["model.rows"], placement["model.cols"] = Shard(1), Shard(0)
        elif option:
            name, at = option.split(":")
            index = tuple(int(i) for i in at.split(","))
            tensors[name][index] += 1
    state: dict[str, object] = {
        name: distribute_tensor(t, mesh, [placement[name]]) for name, t in tensors.items()
    }
    if hf:  # one safetensors file per rank, its chunks' offsets in its header
        writer = HuggingFaceStorageWriter(out, save_distributed=True)
        dcp.save(state, storage_writer=writer)
        return
    state["step"] = 100
    state["lr"] = 0.001
    if st:  # .distcp files whose tensors are one safetensors blob after the values
        writer = FileSystemWriter(out, serialization_format=SerializationFormat.SAFETENSORS)
        dcp.save(state, storage_writer=writer)
        return
    dcp.save(state, checkpoint_id=out)


def main() -> None:
    dist.init_process_group("gloo")
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    for spec in sys.argv[1:]:
        save(spec, mesh)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
