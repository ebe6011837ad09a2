"""The recorder's batched digests-only path: ``Recorder.digests`` hashes on the
calling thread, ``Recorder.record_digests`` writes a step's lines in one
write (what a tracer records per op), and ``digestlog.digests_line`` formats
a digests-only line byte for byte as ``log_line`` does."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastdiff import Recorder, compare_runs
from fastdiff.options import CompareOptions
from fastdiff.recorder import Digested
from fastdiff.sources import open_run
from fastdiff.sources.digestlog import digests_line, log_line, parse_line, read_log
from fastdiff.sources.names import DIGEST_LOG


def _arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {
        "w": rng.standard_normal((5, 7)).astype(np.float32),
        "t": rng.standard_normal((6, 3)).T,  # not contiguous, f64
        "i": np.arange(1000, dtype=np.int64),  # several chunks at chunk size 256
        "e": np.zeros((0, 4), dtype=np.float32),
        "s": np.float64(2.5),
        "b": np.array([True, False]),
    }


def test_batched_digests_are_those_of_a_digests_only_dump_and_of_the_file(tmp_path: Path) -> None:
    arrays = _arrays()
    cs = 256
    with Recorder(tmp_path / "batch", data=False, chunk_size=cs) as rec:
        for step in (0, 1):
            rec.record_digests(step, [(n, rec.digests(a)) for n, a in arrays.items()])
    with Recorder(tmp_path / "dump", data=False, chunk_size=cs) as rec:
        for step in (0, 1):
            for n, a in arrays.items():
                rec.dump(step, n, a)
    with Recorder(tmp_path / "full", chunk_size=cs) as rec:
        for step in (0, 1):
            for n, a in arrays.items():
                rec.dump(step, n, a)
    batch = read_log(str(tmp_path / "batch" / DIGEST_LOG))
    dump = read_log(str(tmp_path / "dump" / DIGEST_LOG))
    assert not batch.bad and not batch.conflicts
    assert {k: e.record for k, e in batch.entries.items()} == {
        k: e.record for k, e in dump.entries.items()
    }
    assert len(batch.entries[(0, "i")].chunks) == 1000 * 8 // cs + 1
    opts = CompareOptions(chunk_size=cs)
    for other in ("dump", "full"):
        report = compare_runs(tmp_path / "batch", tmp_path / other, opts)
        assert report.verdict == "identical"
        assert {b.status for b in report.buffers} == {"equal"}
        assert len(report.buffers) == 2 * len(arrays)


def test_a_batch_recorded_again_replaces_and_a_changed_one_diverges(tmp_path: Path) -> None:
    w = np.arange(6, dtype=np.float32)
    with Recorder(tmp_path / "a", data=False) as rec:
        rec.record_digests(0, [("w", rec.digests(w))])
    with Recorder(tmp_path / "b", data=False) as rec:
        rec.record_digests(0, [("w", rec.digests(w + 1))])
        rec.record_digests(0, [("w", rec.digests(w))])  # recorded again: replaces the first
    lines = [json.loads(x) for x in (tmp_path / "b" / DIGEST_LOG).read_text().splitlines()]
    assert lines[0]["replaces"] is None and lines[1]["replaces"] == lines[0]["check"]
    assert compare_runs(tmp_path / "a", tmp_path / "b").verdict == "identical"
    # again, in full, by another recorder: replaces it
    with Recorder(tmp_path / "b", exist_ok=True) as rec:
        rec.dump(0, "w", w * 2)
    report = compare_runs(tmp_path / "a", tmp_path / "b")
    assert [b.status for b in report.buffers] == ["diverged"]
    # and back to digests: the file goes
    with Recorder(tmp_path / "b", data=False, exist_ok=True) as rec:
        rec.record_digests(0, [("w", rec.digests(w))])
    assert not (tmp_path / "b" / "step_0_w.npy").exists()
    assert compare_runs(tmp_path / "a", tmp_path / "b").verdict == "identical"


@pytest.mark.parametrize("name", ["", "a/b", "a\0b", 5])
def test_a_batch_with_a_name_that_cannot_be_a_dump_name_records_nothing(
    tmp_path: Path, name: object
) -> None:
    with Recorder(tmp_path / "r", data=False) as rec:
        d = rec.digests(np.zeros(3))
        with pytest.raises(ValueError, match="cannot be a buffer name"):
            rec.record_digests(0, [("ok", d), (name, d)])  # type: ignore[list-item]
    assert not (tmp_path / "r" / DIGEST_LOG).exists()


def test_digests_of_another_chunk_size_or_after_close_are_refused(tmp_path: Path) -> None:
    other = Recorder(tmp_path / "o", chunk_size=512).digests(np.zeros(3))
    rec = Recorder(tmp_path / "r", data=False)
    with pytest.raises(ValueError, match="chunk size"):
        rec.record_digests(0, [("x", other)])
    with pytest.raises(ValueError, match="chunk size"):
        rec.record_digests(0, [("x", (np.zeros(3), "f64"))])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="step must be >= 0"):
        rec.record_digests(-1, [("x", rec.digests(np.zeros(3)))])
    rec.record_digests(0, [])  # nothing: no log is made
    rec.close()
    assert not (tmp_path / "r").exists()
    with pytest.raises(ValueError, match="after close"):
        rec.record_digests(0, [("x", rec.digests(np.zeros(3)))])
    with pytest.raises(TypeError):
        rec.digests(object())


def test_digested_is_a_value() -> None:
    a = Digested("f32", (2,), 8, 256, (b"x" * 16,))
    assert a == Digested("f32", (2,), 8, 256, (b"x" * 16,)) and hash(a) == hash(a.replace())
    assert a != a.replace(shape=(1, 2))


_NAMES = st.text(min_size=1, max_size=30).filter(lambda n: "/" not in n and "\0" not in n)


@settings(max_examples=200, deadline=None)
@given(
    step=st.integers(0, 1 << 70),
    name=_NAMES,
    shape=st.lists(st.integers(0, 1 << 40), max_size=5),
    n_chunks=st.integers(0, 4),
    time_ns=st.integers(0, (1 << 64) - 1),
    replaces=st.none() | st.text("0123456789abcdef", min_size=16, max_size=16),
    dtype=st.sampled_from(["f32", "bf16", "u8", "bool"]),
)
def test_the_fast_line_is_log_lines_own_byte_for_byte(
    step: int,
    name: str,
    shape: list[int],
    n_chunks: int,
    time_ns: int,
    replaces: str | None,
    dtype: str,
) -> None:
    chunks = tuple(bytes([i]) * 16 for i in range(n_chunks))
    args = (step, name, dtype, shape, 123, 1 << 20, chunks)
    fast = digests_line(*args, time_ns, replaces)
    assert fast == log_line(*args, time_ns=time_ns, replaces=replaces)
    if n_chunks == 1 and not shape:  # a valid line: read back as written
        line = digests_line(step, name, "u8", [123], 123, 1 << 20, chunks, time_ns, replaces)
        entry = parse_line(line.rstrip(b"\n"))
        assert (entry.step, entry.name, entry.chunks, entry.replaces) == (
            step,
            name,
            chunks,
            replaces,
        )


def test_torch_tensors_batch_as_their_dumps(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    t = torch.arange(24, dtype=torch.float32).reshape(4, 6).requires_grad_()
    tensors = {
        "w": t,
        "t": t.detach().T,
        "h": t.detach().to(torch.bfloat16),
        "e": t.detach().to(torch.float8_e5m2),
        "b": torch.tensor([True, False]),
        "s": torch.tensor(3, dtype=torch.int64),
        "n": torch.arange(4.0)._neg_view(),
    }
    with Recorder(tmp_path / "a", data=False) as rec:
        rec.record_digests(2, [(n, rec.digests(x)) for n, x in tensors.items()])
    with Recorder(tmp_path / "b") as rec:
        for n, x in tensors.items():
            rec.dump(2, n, x)
    got = {f.name: (f.dtype, f.shape) for f in open_run(str(tmp_path / "a")).listing.buffers}
    assert got == {
        "w": ("f32", (4, 6)), "t": ("f32", (6, 4)), "h": ("bf16", (4, 6)),
        "e": ("f8_e5m2", (4, 6)), "b": ("bool", (2,)), "s": ("i64", ()), "n": ("f32", (4,)),
    }  # fmt: skip
    report = compare_runs(tmp_path / "a", tmp_path / "b")
    assert report.verdict == "identical" and len(report.buffers) == len(tensors)
    assert np.load(tmp_path / "b" / "step_2_n.npy").tolist() == [-0.0, -1.0, -2.0, -3.0]
