"""Synthetic dumps: deterministic run folders to benchmark and test against.

A run folder holds one raw little-endian file per buffer and step,
``step_<N>_<name>.bin``. This module writes such folders with pseudo-random
but reproducible content: the same seed gives the same bytes, so two runs
written with one seed are bit-identical except where a difference is injected
on purpose. Injected differences flip the lowest bit of one element: a float
stays finite (its last mantissa bit changes), an integer changes by one, a
0/1 flag swaps.

Four shapes are offered:

- :func:`write_rl_run`: the RL-loop state layout that users compare today
  (:data:`RL_STATE_MEMBERS`, 34 buffers per step);
- :func:`write_pair`: one large buffer per run, written in blocks from a
  repeated random block, so memory stays bounded whatever the size;
- :func:`write_files`: any list of (step, name, dtype, size), such as the
  shape of a real run (``fastdiff bench --like RUN``);
- :func:`write_checkpoint_pair`: a safetensors checkpoint pair, shaped like
  a small transformer's.

:func:`flip_element` injects a difference into a file already written.
What only the scripts of ``benchmarks/`` write (a sparse pair, differences
spread over a range) is in ``benchmarks/harness.py``.

numpy is imported only inside the functions that generate content.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..dtypes import DTYPES, get_dtype
from ..sources import names

if TYPE_CHECKING:
    import numpy as np

#: The RL-loop state dump: (buffer name, element dtype), grouped as the
#: reference verdict groups them: C action RNG, D LOB simulator, E ISV
#: controllers, F reward shaping. Each file holds ``batch`` elements, except
#: ``isv_full`` which holds :data:`RL_ISV_ELEMENTS`.
RL_STATE_MEMBERS: list[tuple[str, str]] = [
    # C: action sampling RNG
    ("action_prng_state", "u32"),
    ("iqn_prng_state", "u32"),
    # D: LOB simulator and unit state
    ("pyramid_units_count", "i32"),
    ("unit_entry_step", "i32"),
    ("unit_entry_price", "f32"),
    ("unit_lots", "i32"),
    ("unit_active", "u8"),
    ("unit_initial_r", "f32"),
    ("unit_trail_distance", "f32"),
    ("unit_prev_pos_lots", "i32"),
    ("close_unit_index", "i32"),
    ("prev_realized_pnl", "f32"),
    ("prev_position_lots", "i32"),
    ("steps_since_done", "i32"),
    ("trade_duration_emit", "f32"),
    # E: the full ISV array
    ("isv_full", "f32"),
    # F: reward shaping, RL outputs, CMDP and edge-decay state
    ("rewards", "f32"),
    ("raw_rewards", "f32"),
    ("outcome_ema", "f32"),
    ("reward_abs", "f32"),
    ("dones", "f32"),
    ("actions", "i32"),
    ("next_actions", "i32"),
    ("log_pi_old", "f32"),
    ("advantages", "f32"),
    ("returns", "f32"),
    ("session_pnl", "f32"),
    ("consec_loss", "f32"),
    ("cooldown_remaining", "f32"),
    ("ph_mu", "f32"),
    ("ph_count", "f32"),
    ("ph_m", "f32"),
    ("ph_mmin", "f32"),
    ("ph_stat", "f32"),
]

#: Elements in ``isv_full``, whatever the batch size.
RL_ISV_ELEMENTS = 757

#: Width in bytes of each dtype name this module writes.
ITEMSIZE: dict[str, int] = {name: d.itemsize for name, d in DTYPES.items()}

#: Size of the random block that :func:`write_pair` repeats (a multiple of
#: every element width and of the page size).
DEFAULT_BLOCK_BYTES = 8 << 20


class Divergence(NamedTuple):
    """One element to perturb in a run written by :func:`write_rl_run`."""

    step: int
    name: str
    index: int


def dump_name(step: int, name: str) -> str:
    """File name of buffer ``name`` at ``step``: ``step_<N>_<name>.bin``."""
    return names.dump_name(step, name)


def rl_elements(name: str, batch: int) -> int:
    """Elements in one file of RL buffer ``name`` for a given batch size."""
    return RL_ISV_ELEMENTS if name == "isv_full" else batch


def _itemsize(dtype: str) -> int:
    return get_dtype(dtype).itemsize


def _rng(seed: int, *keys: int | str) -> np.random.Generator:
    """A generator seeded from ``seed`` and stable keys (names hash by crc32)."""
    import numpy as np

    entropy = [seed] + [k if isinstance(k, int) else zlib.crc32(k.encode()) for k in keys]
    return np.random.default_rng(np.random.SeedSequence(entropy))


def random_values(dtype: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` ordinary values of ``dtype`` as a little-endian numpy array.

    Floats are finite and of moderate magnitude (normal, scale 100); integers
    use the whole range of their width; bf16 is returned as its raw uint16
    bits (the upper half of a float32).
    """
    import numpy as np

    itemsize = _itemsize(dtype)
    if dtype in ("f16", "f32", "f64"):
        values = rng.standard_normal(n, dtype=np.float64 if dtype == "f64" else np.float32)
        values *= 100
        return values.astype(f"<f{itemsize}", copy=False)
    if dtype == "bf16":
        f32 = rng.standard_normal(n, dtype=np.float32) * np.float32(100)
        return (f32.view("<u4") >> 16).astype("<u2")
    # Integers: random bits reinterpreted at the right signedness.
    bits = rng.integers(0, 256, size=n * itemsize, dtype=np.uint8)
    kind = "u" if dtype.startswith("u") else "i"
    return bits.view(f"<{kind}{itemsize}")


def _rl_values(name: str, dtype: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Plausible content for one RL buffer (flags 0/1, small counters)."""
    import numpy as np

    if dtype == "u8":  # unit_active: 0/1 flags
        return rng.integers(0, 2, size=n, dtype=np.uint8)
    if dtype == "i32":  # counters, lots, indices, actions: small integers
        return rng.integers(-8, 1024, size=n, dtype=np.int32).astype("<i4", copy=False)
    if name == "dones":
        return (rng.random(n) < 0.05).astype("<f4")
    return random_values(dtype, n, rng)


def _flip_low_bit(buf: bytearray | memoryview, byte_offset: int) -> None:
    """Flip the lowest bit of the little-endian element starting at offset."""
    buf[byte_offset] ^= 0x01


def write_rl_run(
    folder: str | os.PathLike[str],
    batch: int = 4096,
    steps: int = 4,
    seed: int = 0,
    diverge: Iterable[tuple[int, str, int]] | None = None,
) -> list[Path]:
    """Write a run in the RL-state layout: ``len(RL_STATE_MEMBERS) * steps`` files.

    Content depends only on (seed, step, name, batch). ``diverge`` lists
    (step, name, element index) triples whose element gets its lowest bit
    flipped, so two runs written with the same seed differ exactly there.
    Returns the paths written, in step order then member order.
    """
    if batch < 1 or steps < 1:
        raise ValueError(f"batch and steps must be >= 1, got batch={batch}, steps={steps}")
    dtypes = dict(RL_STATE_MEMBERS)
    flips: dict[tuple[int, str], list[int]] = {}
    for item in diverge or ():
        step, name, index = Divergence(*item)
        if name not in dtypes:
            raise ValueError(f"diverge: unknown buffer {name!r}; use a name of RL_STATE_MEMBERS")
        if not 0 <= step < steps:
            raise ValueError(f"diverge: step {step} outside 0..{steps - 1} for {name!r}")
        n = rl_elements(name, batch)
        if not 0 <= index < n:
            raise ValueError(f"diverge: index {index} outside 0..{n - 1} for {name!r}")
        flips.setdefault((step, name), []).append(index)

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for step in range(steps):
        for name, dtype in RL_STATE_MEMBERS:
            n = rl_elements(name, batch)
            data = bytearray(_rl_values(name, dtype, n, _rng(seed, step, name)).tobytes())
            for index in flips.get((step, name), ()):
                _flip_low_bit(data, index * ITEMSIZE[dtype])
            path = out / dump_name(step, name)
            path.write_bytes(data)
            written.append(path)
    return written


def write_buffer(
    path: str | os.PathLike[str],
    dtype: str,
    n_bytes: int,
    seed: int = 0,
    flip_at: Sequence[int] = (),
    block_bytes: int = DEFAULT_BLOCK_BYTES,
) -> Path:
    """Write one buffer file of ``n_bytes`` by repeating a random block.

    The block depends only on (seed, dtype, block_bytes), so equal arguments
    give equal files. ``flip_at`` lists byte offsets; the element holding
    each one gets its lowest bit flipped (a negative offset counts from the
    end). Memory use is about two blocks, whatever ``n_bytes`` is.
    """
    itemsize = _itemsize(dtype)
    if n_bytes < 0 or n_bytes % itemsize:
        raise ValueError(f"n_bytes={n_bytes} must be >= 0 and a multiple of {itemsize} ({dtype})")
    if block_bytes < itemsize or block_bytes % itemsize:
        raise ValueError(f"block_bytes={block_bytes} must be a multiple of {itemsize}")
    # Element start offset of each flip, grouped by block.
    by_block: dict[int, list[int]] = {}
    for offset in flip_at:
        pos = offset + n_bytes if offset < 0 else offset
        if not 0 <= pos < n_bytes:
            raise ValueError(f"flip offset {offset} outside a file of {n_bytes} bytes")
        start = pos - pos % itemsize
        by_block.setdefault(start // block_bytes, []).append(start % block_bytes)

    n_block = min(block_bytes, n_bytes)
    block = random_values(dtype, n_block // itemsize, _rng(seed, dtype, block_bytes)).tobytes()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as f:
        done = 0
        index = 0
        while done < n_bytes:
            size = min(n_block, n_bytes - done)
            chunk: bytes | bytearray = block[:size] if size < n_block else block
            if index in by_block:
                chunk = bytearray(chunk)
                for start in by_block[index]:
                    _flip_low_bit(chunk, start)
            f.write(chunk)
            done += size
            index += 1
    return out


def write_pair(
    folder_a: str | os.PathLike[str],
    folder_b: str | os.PathLike[str],
    name: str,
    dtype: str,
    n_bytes: int,
    diff_at: int | None = None,
    seed: int = 0,
    step: int = 0,
) -> tuple[Path, Path]:
    """Write ``step_<step>_<name>.bin`` into both folders, identical or not.

    With ``diff_at`` (a byte offset; negative counts from the end) the
    element holding that byte differs in the B file by its lowest bit.
    Returns the paths of the A and B files.
    """
    file_name = dump_name(step, name)
    path_a = write_buffer(Path(folder_a) / file_name, dtype, n_bytes, seed=seed)
    flips = () if diff_at is None else (diff_at,)
    path_b = write_buffer(Path(folder_b) / file_name, dtype, n_bytes, seed=seed, flip_at=flips)
    return path_a, path_b


def late_offset(n_bytes: int, itemsize: int = 4) -> int:
    """Byte offset of a difference "near the end" of an ``n_bytes`` buffer:
    4 KiB before the end, or the last element when the buffer is under 8 KiB."""
    if n_bytes < itemsize:
        raise ValueError(f"a buffer of {n_bytes} bytes holds no {itemsize}-byte element")
    return n_bytes - 4096 if n_bytes >= 8192 else n_bytes - n_bytes % itemsize - itemsize


def flip_element(path: str | os.PathLike[str], byte_offset: int, dtype: str) -> None:
    """Flip the lowest bit of the element holding ``byte_offset`` in an existing file.

    A negative offset counts from the end. The file is changed in place:
    one byte is read and written back, whatever its size.
    """
    itemsize = _itemsize(dtype)
    with open(path, "r+b") as f:
        size = os.fstat(f.fileno()).st_size
        pos = byte_offset + size if byte_offset < 0 else byte_offset
        if not 0 <= pos < size:
            raise ValueError(f"flip offset {byte_offset} outside a file of {size} bytes")
        start = pos - pos % itemsize
        (byte,) = os.pread(f.fileno(), 1, start)
        os.pwrite(f.fileno(), bytes([byte ^ 0x01]), start)


def write_files(
    folder: str | os.PathLike[str],
    files: Iterable[tuple[int, str, str, int]],
    seed: int = 0,
) -> list[Path]:
    """Write ``step_<step>_<name>.bin`` for each (step, name, dtype, n_bytes).

    Each file is written by :func:`write_buffer` with a seed drawn from
    (seed, step, name), so files differ from one another and the same
    arguments give the same bytes. Returns the paths, in the order given.
    """
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for step, name, dtype, n_bytes in files:
        file_seed = zlib.crc32(f"{seed}/{step}/{name}".encode())
        written.append(write_buffer(out / dump_name(step, name), dtype, n_bytes, seed=file_seed))
    return written


# --- safetensors checkpoints ---------------------------------------------------------

#: A transformer block's tensors: (name below ``model.layers.<i>``, dtype,
#: shape as multiples of the hidden size: (rows, columns)).
_BLOCK = (
    ("self_attn.q_proj.weight", 1, 1),
    ("self_attn.k_proj.weight", 1, 1),
    ("self_attn.v_proj.weight", 1, 1),
    ("self_attn.o_proj.weight", 1, 1),
    ("mlp.gate_proj.weight", 4, 1),
    ("mlp.up_proj.weight", 4, 1),
    ("mlp.down_proj.weight", 1, 4),
)


def checkpoint_layout(n_bytes: int, dtype: str = "f32") -> list[tuple[str, str, tuple[int, ...]]]:
    """Tensors shaped like a small transformer's (an embedding, blocks of
    attention and MLP weights, a norm per block) adding up to about
    ``n_bytes`` (at least one block): (name, dtype, shape) in file order."""
    itemsize = _itemsize(dtype)
    per_block = 16  # hidden^2 multiples: 4 attention + 3 x 4 MLP
    layers = 4 if n_bytes >= 1 << 24 else 1
    hidden = max(8, int((n_bytes / itemsize / (per_block * layers + 2)) ** 0.5) // 8 * 8)
    out: list[tuple[str, str, tuple[int, ...]]] = [
        ("model.embed_tokens.weight", dtype, (2 * hidden, hidden))
    ]
    for i in range(layers):
        for name, rows, cols in _BLOCK:
            out.append((f"model.layers.{i}.{name}", dtype, (rows * hidden, cols * hidden)))
        out.append((f"model.layers.{i}.input_layernorm.weight", dtype, (hidden,)))
    out.append(("model.norm.weight", dtype, (hidden,)))
    return out


_ST_DTYPES = {"f32": "F32", "f16": "F16", "bf16": "BF16", "f64": "F64", "i32": "I32", "u8": "U8"}


def _safetensors_header(layout: Sequence[tuple[str, str, tuple[int, ...]]]) -> bytes:
    import json

    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    pos = 0
    for name, dtype, shape in layout:
        n = _itemsize(dtype)
        for d in shape:
            n *= d
        header[name] = {
            "dtype": _ST_DTYPES[dtype],
            "shape": list(shape),
            "data_offsets": [pos, pos + n],
        }
        pos += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text


def write_safetensors(
    path: str | os.PathLike[str],
    layout: Sequence[tuple[str, str, tuple[int, ...]]],
    seed: int = 0,
    flip_at: Sequence[int] = (),
    sparse: bool = False,
) -> Path:
    """A safetensors file of ``layout`` (``checkpoint_layout``), its data
    repeated random blocks (or, ``sparse``, a hole of zeros that costs no
    disk), with the element holding each data byte offset of ``flip_at``
    flipped in its lowest bit. Memory stays bounded whatever the size."""
    head = _safetensors_header(layout)
    total = 0
    for _, dtype, shape in layout:
        n = _itemsize(dtype)
        for d in shape:
            n *= d
        total += n
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    if sparse:
        with open(out, "wb") as f:
            f.write(head)
            f.truncate(len(head) + total)
        return out
    dtype = layout[0][1]
    data = out.with_name(out.name + ".data")
    write_buffer(data, dtype, total, seed=seed, flip_at=flip_at)
    with open(out, "wb") as f, open(data, "rb") as src:
        f.write(head)
        while piece := src.read(8 << 20):
            f.write(piece)
    data.unlink()
    return out


def write_checkpoint_pair(
    folder_a: str | os.PathLike[str],
    folder_b: str | os.PathLike[str],
    n_bytes: int,
    diff_at: int | None = None,
    seed: int = 0,
    sparse: bool = False,
) -> tuple[Path, Path]:
    """``model.safetensors`` of about ``n_bytes`` into both folders, identical,
    or (``diff_at``: a data byte offset, negative from the end) differing in
    one element of B."""
    layout = checkpoint_layout(n_bytes)
    a = write_safetensors(Path(folder_a) / "model.safetensors", layout, seed, sparse=sparse)
    flips = () if diff_at is None else (diff_at,)
    b = write_safetensors(Path(folder_b) / "model.safetensors", layout, seed, flips, sparse)
    return a, b
