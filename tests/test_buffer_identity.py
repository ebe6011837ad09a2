"""A buffer reference's fields, its copies, and its one identity key.

``BufferRef.replace`` keeps every field but those it is given (hypothesis
over every field); pickling keeps every field but the span; and the digest
cache keys an entry by ``BufferRef.key``, in the very bytes it always
stored (so its format version stays, and a cache written before is read
as it was written).
"""

from __future__ import annotations

import inspect
import os
import pickle
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastdiff.engine.cache import CACHE_FILE, CACHE_VERSION, DigestCache, _key
from fastdiff.sources.buffers import REF_FIELDS, BufferDigest, BufferRef, Deflate, Inline, Strided
from fastdiff.sources.folder import discover

ints = st.integers(0, 1 << 62)
codecs = st.one_of(
    st.none(),
    st.builds(Deflate, ints, st.one_of(st.none(), st.integers(0, 2**32 - 1)), ints),
    st.builds(Strided, st.sampled_from([1, 2, 4, 8]), st.just((2, 3)), st.just((1, 2)), ints),
    st.builds(Inline, st.binary(max_size=16)),
)
digests = st.one_of(
    st.none(),
    st.builds(BufferDigest, st.text(max_size=8), ints, st.just(4), st.just((bytes(16),))),
)
#: A value for each field.
FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "path": st.text(max_size=12),
    "step": ints,
    "name": st.text(max_size=12),
    "size": ints,
    "dev": ints,
    "ino": ints,
    "mtime_ns": ints,
    "ctime_ns": ints,
    "offset": ints,
    "file_size": ints,
    "dtype": st.one_of(st.none(), st.sampled_from(["float32", "bfloat16", "uint8"])),
    "shape": st.one_of(st.none(), st.lists(st.integers(0, 9), max_size=3).map(tuple)),
    "codec": codecs,
    "digest": digests,
    "has_data": st.booleans(),
    "span": st.one_of(st.none(), st.builds(object)),
}
#: The fields a buffer's identity (``BufferRef.key``) is made of.
KEY_FIELDS = {"dev", "ino", "file_size", "mtime_ns", "ctime_ns", "offset", "size", "codec"}
refs = st.fixed_dictionaries(FIELDS).map(lambda fields: BufferRef(**fields))


def fields_of(ref: BufferRef) -> dict[str, object]:
    return {k: getattr(ref, k) for k in REF_FIELDS}


def test_the_field_list_is_the_constructors() -> None:
    assert list(inspect.signature(BufferRef).parameters) == list(REF_FIELDS)
    assert set(REF_FIELDS) == set(BufferRef.__slots__) == set(FIELDS)


@settings(max_examples=300, deadline=None)
@given(refs, st.data())
def test_replace_keeps_every_field_but_those_it_is_given(
    ref: BufferRef, data: st.DataObject
) -> None:
    names = data.draw(st.lists(st.sampled_from(REF_FIELDS), unique=True))
    changes = {k: data.draw(FIELDS[k], label=k) for k in names}
    before = fields_of(ref)
    new = ref.replace(**changes)
    assert new is not ref and new != ref  # equality is identity: a copy is another buffer
    assert fields_of(ref) == before  # the original is untouched
    for k in REF_FIELDS:
        want = changes.get(k, before[k])
        assert getattr(new, k) is want or getattr(new, k) == want, k
    if not changes.keys() & KEY_FIELDS:
        assert new.key == ref.key  # the same bytes: one entry of a digest cache


@settings(max_examples=100, deadline=None)
@given(refs)
def test_pickling_keeps_every_field_but_the_span(ref: BufferRef) -> None:
    copy = pickle.loads(pickle.dumps(ref))
    assert fields_of(copy) == {**fields_of(ref), "span": None}


def test_replace_refuses_a_field_it_does_not_have() -> None:
    ref = BufferRef("p", 0, "x", 4, 1, 2, 3, 4)
    with pytest.raises(TypeError, match="colour"):
        ref.replace(colour="red")


def test_replace_keeps_a_span_with_digest_too() -> None:
    first = BufferRef("p", 0, "x", 4, 1, 2, 3, 4)
    tied = BufferRef("p", 0, "y", 4, 1, 2, 3, 4, span=first)
    assert tied.replace(name="z").span is first
    assert tied.with_digest(None).span is first


# --- the digest cache keys by BufferRef.key ---------------------------------------


def _old_key(f: BufferRef, chunk_size: int) -> tuple[object, ...]:
    """The cache's key as format 2 has always stored it (before it was made of
    ``BufferRef.key``): the bytes on disk must not change meaning."""
    codec = "" if f.codec is None else repr(f.codec.key)
    return (*f.file_key, f.offset, f.size, codec, chunk_size)


@settings(max_examples=300, deadline=None)
@given(refs, st.sampled_from([1, 4096, 4 << 20]))
def test_the_cache_key_is_the_buffers_key_in_the_bytes_format_2_stores(
    ref: BufferRef, chunk_size: int
) -> None:
    key = _key(ref, chunk_size)
    codec = ref.key[-1]
    assert key == (*ref.key[:-1], "" if codec is None else repr(codec), chunk_size)
    assert key == _old_key(ref, chunk_size)
    assert CACHE_VERSION == 2 and CACHE_FILE == "digests-v2.sqlite3"


@settings(max_examples=100, deadline=None)
@given(refs, refs)
def test_two_buffers_share_a_cache_entry_exactly_when_their_keys_are_equal(
    a: BufferRef, b: BufferRef
) -> None:
    assert (_key(a, 4) == _key(b, 4)) == (a.key == b.key)
    assert _key(a, 4) == _key(a.replace(path="elsewhere", name="other", step=9, span=None), 4)


def test_an_entry_written_before_is_found_by_the_buffers_key(tmp_path: Path) -> None:
    """A row stored as format 2 always stored it (by the old key) is a hit for
    the buffer of that key, listed afresh, and for no buffer of another."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "step_0_x.bin").write_bytes(bytes(range(64)))
    (f,) = discover(run).buffers
    cache_dir = tmp_path / "cache"
    DigestCache(cache_dir, min_age_s=0).close()  # the table, laid out by this version
    chunks = bytes(range(16))
    db = sqlite3.connect(cache_dir / CACHE_FILE)
    with db:
        db.execute("INSERT INTO digests VALUES (?,?,?,?,?,?,?,?,?,?)", (*_old_key(f, 64), chunks))
    db.close()
    cache = DigestCache(cache_dir, min_age_s=0)
    try:
        got = cache.get_many([f], 64)
        assert got[f].chunks == (chunks,)
        moved = f.replace(offset=1, size=63)
        assert cache.get_many([moved], 64) == {}
        touched = f.replace(mtime_ns=f.mtime_ns + 1)
        assert cache.get_many([touched], 64) == {}
    finally:
        cache.close()
    assert not [p for p in os.listdir(cache_dir) if ".bad-" in p]  # read, not set aside
