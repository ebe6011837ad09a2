"""The format table (``sources.formats.FORMATS``) is the one home of a format.

Its suffixes, its magic and its functions are the table's: a format
registered in a test is sniffed, opened as a run, recognised as a folder
and listed in a run folder by every path that lists the built-in ones, and
gone again once unregistered; no module of the package spells a suffix or
a magic the table holds; every entry's functions exist with their role's
signature; and a comparison of two folders of raw dumps imports no format
module but the folder's.
"""

from __future__ import annotations

import ast
import inspect
import os
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from fastdiff import CompareOptions, compare_runs
from fastdiff.sources import _SNIFF, FORMATS, folder_format, open_run, sniff
from fastdiff.sources.buffers import BufferRef
from fastdiff.sources.folder import discover, list_entries
from fastdiff.sources.formats import (
    BUFFER,
    BUFFER_SUFFIXES,
    CONTAINER,
    CONTAINER_SUFFIXES,
    DEFAULT_FILE,
    DEFAULT_FOLDER,
    ROLES,
    Format,
    register,
    unregister,
)
from fastdiff.sources.names import split_name
from fastdiff.sources.run import RunSource

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "fastdiff"

# --- a format of the test's own ------------------------------------------------------

#: A fake file: the magic, a byte that says "fake" (``!``) or not, then one
#: buffer's bytes.
MAGIC = b"FAKE"
HEAD = len(MAGIC) + 1


def _read(path: str, step: int, fd: int, st: os.stat_result) -> list[BufferRef]:
    """The one buffer of a fake container: its bytes after the head."""
    return [
        BufferRef(
            path, step, "x", st.st_size - HEAD, st.st_dev, st.st_ino, st.st_mtime_ns,
            st.st_ctime_ns, offset=HEAD, file_size=st.st_size, dtype="uint8",
        )
    ]  # fmt: skip


def _sniff(head: bytes, fd: int, size: int) -> bool:
    return head[len(MAGIC) : HEAD] == b"!"


def _is_folder(names: list[str]) -> bool:
    return "fake.marker" in names


def _open(spec: str, steps: object = None) -> RunSource:
    from fastdiff.sources.reader import read_regular
    from fastdiff.sources.run import container_listing

    path = os.path.join(spec, "data.fake") if os.path.isdir(spec) else spec  # a folder: its file
    refs = read_regular(path, lambda fd, st: _read(path, 0, fd, st))
    return RunSource(spec, container_listing(spec, refs), kind="fake")


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[Format]:
    """A format ``fake`` in the table, its module ``fastdiff_fake_format``."""
    module = types.ModuleType("fastdiff_fake_format")
    module.read = _read  # type: ignore[attr-defined]
    module.sniff = _sniff  # type: ignore[attr-defined]
    module.is_folder = _is_folder  # type: ignore[attr-defined]
    module.open_source = _open  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    fmt = Format(
        "fake", module.__name__, "a test's format", suffixes=(".fake",), dump=CONTAINER,
        magic=((0, MAGIC),), open="open_source", read="read", sniff="sniff", folder="is_folder",
    )  # fmt: skip
    register(fmt)
    try:
        yield fmt
    finally:
        unregister("fake")


def write_fake(path: Path, data: bytes, mark: bytes = b"!") -> Path:
    path.write_bytes(MAGIC + mark + data)
    return path


def test_a_registered_format_is_sniffed_by_its_magic_and_test(fake: Format, tmp_path: Path) -> None:
    assert sniff(str(write_fake(tmp_path / "a.bin", b"abc"))) == "fake"
    # The magic matches, its test refuses: a manifest's loader says what it is.
    assert sniff(str(write_fake(tmp_path / "b.bin", b"abc", b"?"))) == DEFAULT_FILE


def test_a_registered_format_is_opened_as_a_run(fake: Format, tmp_path: Path) -> None:
    src = open_run(write_fake(tmp_path / "run.any", b"abcdef"))
    assert src.kind == "fake"
    (ref,) = src.listing.buffers
    assert (ref.step, ref.name, ref.offset, ref.size) == (0, "x", HEAD, 6)


def test_a_registered_format_claims_its_folders(fake: Format, tmp_path: Path) -> None:
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "fake.marker").write_bytes(b"")
    write_fake(folder / "data.fake", b"abc")
    assert folder_format(str(folder)) == "fake"
    assert open_run(folder).kind == "fake"
    (folder / "step_0_y.bin").write_bytes(b"1234")  # a dump: a run folder
    assert folder_format(str(folder)) == DEFAULT_FOLDER


def test_a_registered_format_is_listed_in_a_run_folder(fake: Format, tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    write_fake(run / "step_3.fake", b"abcd")
    (run / "step_3_y.bin").write_bytes(b"1234")
    assert split_name("step_3.fake") == ("3", None, "fake")
    assert CONTAINER_SUFFIXES[".fake"] == "fake"
    for listing in (discover(run), list_entries(str(run), ["step_3.fake", "step_3_y.bin"])):
        assert sorted((f.step, f.name, f.size) for f in listing.buffers) == [
            (3, "x", 4),
            (3, "y", 4),
        ]
        assert not listing.errors and not listing.skipped


def test_runs_of_a_registered_format_are_compared(fake: Format, tmp_path: Path) -> None:
    runs = []
    for side, data in (("a", b"\x00\x01\x02\x03"), ("b", b"\x00\x01\x02\x07")):
        run = tmp_path / side
        run.mkdir()
        write_fake(run / "step_0.fake", data)
        runs.append(run)
    report = compare_runs(*runs, CompareOptions(schema="raw", executor="serial"))
    assert report.verdict == "diverged"
    (buffer,) = report.buffers
    assert (buffer.step, buffer.name, buffer.status) == (0, "x", "diverged")


def test_an_unregistered_format_is_gone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_fake(tmp_path / "step_0.fake", b"abc")
    fmt = Format("fake", "fastdiff_fake_format", "", suffixes=(".fake",), dump=CONTAINER,
                 magic=((0, MAGIC),), read="read")  # fmt: skip
    register(fmt)
    assert split_name(path.name) == ("0", None, "fake")
    unregister("fake")
    assert "fake" not in FORMATS and ".fake" not in CONTAINER_SUFFIXES
    assert split_name(path.name) is None
    assert sniff(str(path)) == DEFAULT_FILE


def test_register_refuses_what_would_make_two_homes() -> None:
    with pytest.raises(ValueError, match="'npy' is in the table"):
        register(Format("npy", "x", "", suffixes=(".npy2",)))
    with pytest.raises(ValueError, match=r"suffix \.pt is the torch format's"):
        register(Format("other", "x", "", suffixes=(".pt",), dump=CONTAINER, read="read"))
    with pytest.raises(ValueError, match="needs a reader"):
        register(Format("other", "x", "", suffixes=(".other",), dump=BUFFER))
    assert "other" not in FORMATS


# --- the table itself ---------------------------------------------------------------


def test_the_suffix_tables_are_the_formats_suffixes() -> None:
    want_buffers = {s: f.name for f in FORMATS.values() if f.dump == BUFFER for s in f.suffixes}
    want_containers = {
        s: f.name for f in FORMATS.values() if f.dump == CONTAINER for s in f.suffixes
    }
    assert BUFFER_SUFFIXES == want_buffers == {".bin": "raw", ".npy": "npy"}
    assert want_containers == CONTAINER_SUFFIXES
    assert set(CONTAINER_SUFFIXES) == {".safetensors", ".npz", ".pt", ".pth"}
    for suffix, fmt in BUFFER_SUFFIXES.items():
        assert split_name(f"step_7_w{suffix}") == ("7", "w", fmt)
    for suffix, fmt in CONTAINER_SUFFIXES.items():
        assert split_name(f"step_7{suffix}") == ("7", None, fmt)


def test_suffixes_are_one_dot_and_letters_each_of_one_format() -> None:
    seen: dict[str, str] = {}
    for fmt in FORMATS.values():
        for suffix in fmt.suffixes:
            assert suffix[0] == "." and suffix[1:].isascii() and suffix[1:].isalnum(), suffix
            assert seen.setdefault(suffix, fmt.name) == fmt.name, suffix


def test_every_magic_lies_in_the_bytes_sniff_reads() -> None:
    for fmt in FORMATS.values():
        for offset, magic in fmt.magic:
            assert magic and offset + len(magic) <= _SNIFF, fmt.name


#: The parameters of each role's function (``formats`` docstring).
SIGNATURES = {
    "open": ["spec", "steps"],
    "sniff": ["head", "fd", "size"],
    "folder": ["names"],
    ("read", BUFFER): ["path", "step", "name", "fd", "st"],
    ("read", CONTAINER): ["path", "step", "fd", "st"],
}


def test_every_entry_names_functions_of_its_roles_signatures() -> None:
    for fmt in FORMATS.values():
        assert fmt.name in FORMATS and FORMATS[fmt.name] is fmt
        assert fmt.dump in (None, BUFFER, CONTAINER)
        assert (fmt.dump is not None) <= bool(fmt.suffixes), fmt.name
        assert (fmt.sniff is not None) <= bool(fmt.magic), fmt.name
        for role in ROLES:
            if getattr(fmt, role) is None:
                with pytest.raises(LookupError, match=role):
                    fmt.function(role)
                continue
            params = list(inspect.signature(fmt.function(role)).parameters)
            want = SIGNATURES[(role, fmt.dump) if role == "read" else role]
            assert params == want, (fmt.name, role)
    assert FORMATS["raw"].read is None  # listed from its stat: nothing is opened
    assert FORMATS[DEFAULT_FILE].open and FORMATS[DEFAULT_FOLDER].open


def test_sniff_tells_every_format_by_content_in_the_tables_order(tmp_path: Path) -> None:
    """One file of each kind, named so that no suffix could tell: each is
    the first format whose magic and test take it; a run of it that can be
    read is of that kind."""
    import zipfile

    import numpy as np
    from safetensors.numpy import save_file

    from fastdiff.sources.formats import LEGACY_TORCH

    x = np.arange(6, dtype=np.float32)
    files: dict[str, str] = {}

    def at(name: str) -> str:
        return str(tmp_path / name)

    save_file({"w": x}, at("st"))
    files["st"] = "safetensors"
    np.save(at("npy"), x)
    os.rename(at("npy.npy"), at("npy"))
    files["npy"] = "npy"
    for name, save in (("npz", np.savez), ("npzc", np.savez_compressed)):
        with open(at(name), "wb") as fh:
            save(fh, w=x)
        files[name] = "npz"
    with open(at("npz0"), "wb") as fh:
        np.savez(fh)  # no members: np.savez() of nothing
    files["npz0"] = "npz"
    with zipfile.ZipFile(at("zip"), "w") as z:
        z.writestr("notes.txt", "not an array")
    files["zip"] = "torch"  # its reader says what is wrong
    Path(at("badzip")).write_bytes(b"PK\x03\x04" + bytes(60))
    files["badzip"] = "torch"
    Path(at("legacy")).write_bytes(LEGACY_TORCH + bytes(40))
    files["legacy"] = "torch"
    for name in ("state_a.pt", "pytorch_model.bin"):
        Path(at(name)).write_bytes((ROOT / "tests" / "data" / "torch" / name).read_bytes())
        files[name] = "torch"
    Path(at("json")).write_text('{"fastdiff_manifest": 2}')
    Path(at("empty")).write_bytes(b"")
    Path(at("brace")).write_bytes(bytes(8) + b"{" + bytes(20))  # a header length of 0: too short
    files |= {"json": DEFAULT_FILE, "empty": DEFAULT_FILE, "brace": DEFAULT_FILE}
    files[at("missing")] = DEFAULT_FILE
    got = {name: sniff(at(name)) for name in files}
    assert got == files
    opened = {name: open_run(at(name)) for name in files if os.path.exists(at(name))}
    # A run its format's reader refuses is a listing of the error, of no kind.
    assert {name: src.kind for name, src in opened.items() if src.listing.readable} == {
        name: files[name] for name in ("st", "npy", "npz", "npzc", "npz0", "state_a.pt",
                                       "pytorch_model.bin")
    }  # fmt: skip


# --- no other home --------------------------------------------------------------------

#: Modules that spell a suffix or a magic of the table: the recorder (not
#: of ``sources/``, left by issue 24) writes ``.npy`` dumps; ``ziparchive``
#: reads zip records by their signatures, two of which are the zip magic
#: (``ZIP_MAGIC``, checked against them below).
LEFT = {
    "fastdiff/recorder.py": {".npy"},
    "fastdiff/sources/ziparchive.py": {b"PK\x03\x04", b"PK\x05\x06"},
}


def _constants(path: Path) -> Iterator[object]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Constant):
            yield node.value


def test_no_module_but_the_table_spells_a_suffix_or_a_magic() -> None:
    """Every string constant (an f-string's literal parts too) that is a
    format's suffix, and every bytes constant that is a magic, is the
    table's: other modules take them from it."""
    suffixes = {s for fmt in FORMATS.values() for s in fmt.suffixes}
    # A magic of a byte or two (safetensors' "{") is no spelling of a format.
    magics = {m for fmt in FORMATS.values() for _, m in fmt.magic if len(m) >= 4}
    found: dict[str, set[object]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "fastdiff/sources/formats.py":
            continue
        hits = {
            c for c in _constants(path) if c in suffixes or (isinstance(c, bytes) and c in magics)
        }
        if hits:
            found[rel] = hits
    assert found == LEFT


def test_the_zip_magic_is_the_zip_readers_signatures() -> None:
    from fastdiff.sources import ziparchive
    from fastdiff.sources.formats import ZIP_MAGIC

    assert ZIP_MAGIC == ((0, ziparchive._LOCAL), (0, ziparchive._EOCD))


def test_comparing_folders_of_raw_dumps_imports_no_format_module_but_the_folders() -> None:
    a, b = (ROOT / "tests" / "fixtures" / "identical" / side for side in "ab")
    code = (
        "import sys; from fastdiff import compare_runs; "
        f"compare_runs({str(a)!r}, {str(b)!r}); "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('fastdiff.sources'))))"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120, check=True,
    )  # fmt: skip
    loaded = set(p.stdout.split())
    modules = {fmt.module for fmt in FORMATS.values()}
    assert loaded & modules == {"fastdiff.sources.folder"}, sorted(loaded)
    assert "fastdiff.sources.formats" in loaded
