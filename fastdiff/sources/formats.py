"""The formats fastdiff reads: one table, ``FORMATS``, one entry per format.

An entry (``Format``) says what a format is and everything the rest of
``sources/`` needs of it without importing its module: its name (a
``RunSource.kind``), the module that reads it, a description, the suffixes
its files are named with and how a run folder holds such a file (a file
per buffer, ``step_<N>_<name><suffix>``, or a container of a step's
buffers, ``step_<N><suffix>``), how a regular file is recognised by its
first bytes, and the names of the module's functions for each role:

- ``open``: ``(spec, steps) -> RunSource``, a file or folder of it given as
  a run (``sources.open_run``); it never raises for bad input.
- ``read``: the buffers of a dump file of it in a run folder
  (``folder.headed_buffers``), from an open descriptor and its ``fstat``:
  ``(path, step, name, fd, st) -> [BufferRef]`` for a file per buffer,
  ``(path, step, fd, st) -> [BufferRef | Unread]`` for a container; raises
  the format's ValueError when the header is refused. None for a raw dump:
  the file is the buffer, and nothing is opened to list it.
- ``sniff``: ``(head, fd, size) -> bool``, whether a regular file whose
  first bytes ``head`` match one of the entry's ``magic`` is one of it
  (None: the magic says so alone).
- ``folder``: ``(names) -> bool``, whether a folder holding no dump but the
  entries ``names`` is one of it (a checkpoint folder of safetensors files).

fsspec's ``known_implementations`` is the model: the table holds names,
not functions, and a format's module is imported only when one of its
functions is called. Every listing needs the suffixes (``names.split_name``)
and every file given as a run the content tests, so they are plain data
here: importing each format's module to learn them would load them all
(the pickle reader of ``torch.save``, ``json`` for the manifest) to compare
two folders of raw dumps, which imports ``folder`` alone.

``sniff`` (``sources``) tries the entries in the table's order; a regular
file none claims is a ``DEFAULT_FILE`` (whose loader says why a file is no
manifest), a folder none claims a ``DEFAULT_FOLDER``; a format
``register``-ed is tried after the built-in ones. ``names`` and ``folder``
read the suffixes and readers from here, and no other module spells a
format's suffix or magic: each takes it from here (``suffix``,
``names.RAW_SUFFIX``, ``NPY_MAGIC``, ...). Adding a format is its module,
its entry here and its tests.

This module imports nothing of fastdiff: every listing imports it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "BUFFER", "BUFFER_SUFFIXES", "CONTAINER", "CONTAINER_SUFFIXES", "DEFAULT_FILE",
    "DEFAULT_FOLDER", "FORMATS", "LEGACY_TORCH", "NPY_MAGIC", "ROLES", "ZIP_MAGIC", "Format",
    "register", "suffix", "unregister",
]  # fmt: skip

#: How a run folder holds a file of a format: one buffer per file, or one
#: container per step.
BUFFER, CONTAINER = "buffer", "container"
#: The roles a format's functions play (the fields that name them).
ROLES = ("open", "read", "sniff", "folder")


class Format:
    """One format of the table (a value, never changed once made; module docstring).

    ``name``: the table's key, and ``RunSource.kind`` of a run of it;
    ``module``: the module (a dotted path) of its functions; ``what``: what
    it is, in a few words; ``suffixes``: the suffixes its files are named
    with (each one dot and letters); ``dump``: how a run folder holds such
    a file (``BUFFER``, ``CONTAINER``; None: a run folder holds none);
    ``magic``: (offset, bytes) pairs, any of which a file's first bytes
    match when it may be one of it; ``open``, ``read``, ``sniff``,
    ``folder``: the names of its module's functions in each role (None:
    none).
    """

    __slots__ = ("dump", "folder", "magic", "module", "name", "open", "read", "sniff",
                 "suffixes", "what")  # fmt: skip

    name: str
    module: str
    what: str
    suffixes: tuple[str, ...]
    dump: str | None
    magic: tuple[tuple[int, bytes], ...]
    open: str | None
    read: str | None
    sniff: str | None
    folder: str | None

    def __init__(
        self, name: str, module: str, what: str, *, suffixes: tuple[str, ...] = (),
        dump: str | None = None, magic: tuple[tuple[int, bytes], ...] = (),
        open: str | None = None, read: str | None = None, sniff: str | None = None,
        folder: str | None = None,
    ) -> None:  # fmt: skip
        self.name = name
        self.module = module
        self.what = what
        self.suffixes = suffixes
        self.dump = dump
        self.magic = magic
        self.open = open
        self.read = read
        self.sniff = sniff
        self.folder = folder

    def __repr__(self) -> str:
        return f"Format({self.name!r}, {self.module!r})"

    def function(self, role: str) -> Callable[..., Any]:
        """Its module's function for ``role`` (one of ``ROLES``), the module
        imported now if it was not. LookupError when it has none."""
        attr = getattr(self, role) if role in ROLES else None
        if attr is None:
            raise LookupError(f"format {self.name!r} has no {role!r} function")
        # __import__, not importlib's import_module: importlib costs a start-up import.
        module = __import__(self.module, fromlist=(attr,))
        return getattr(module, attr)  # type: ignore[no-any-return]

    def matches(self, head: bytes) -> bool:
        """Whether a file's first bytes ``head`` match one of its ``magic``."""
        return any(head.startswith(magic, offset) for offset, magic in self.magic)


#: A zip archive's first bytes: a local file header, or the end record of
#: an empty archive.
ZIP_MAGIC = ((0, b"PK\x03\x04"), (0, b"PK\x05\x06"))
#: numpy's magic, first in every ``.npy`` file.
NPY_MAGIC = b"\x93NUMPY"
#: How a ``torch.save`` file of the format before the zip one begins (torch
#: before 1.6, or ``_use_new_zipfile_serialization=False``): pickle protocol
#: 2, then torch's magic number. Its reader refuses it, saying what it is.
LEGACY_TORCH = b"\x80\x02\x8a\x0a" + (0x1950A86A20F9469CFC6C).to_bytes(10, "little")

#: The formats, in the order ``sources.sniff`` tries their content tests
#: (an ``.npz`` before a ``torch.save`` archive: both are zip archives, and
#: only the ``.npz`` test looks inside).
FORMATS: dict[str, Format] = {
    "folder": Format(
        "folder", "fastdiff.sources.folder",
        "a run folder: each step's dumps, a file per buffer or a container per step",
        open="open_source",
    ),
    "raw": Format(
        "raw", "fastdiff.sources.folder",
        "a raw dump: one buffer's elements, their type from the schema",
        suffixes=(".bin",), dump=BUFFER,
    ),
    "checkpoint": Format(
        "checkpoint", "fastdiff.sources.stepfolders",
        "a training checkpoint folder (Megatron-LM's iter_<N>, DeepSpeed's global_step<N>, "
        "the Hugging Face Trainer's checkpoint-<N>), or a root of such step folders (torchtitan's "
        "step-<N> among them)",
        open="open_checkpoint", folder="is_checkpoint_folder",
    ),
    "safetensors": Format(
        "safetensors", "fastdiff.sources.safetensors",
        "a safetensors file, or a checkpoint folder of them (model.safetensors, shards "
        "with model.safetensors.index.json, or DCP's shard-<R>-model-<K>-of-<N> files, "
        "one per rank)",
        suffixes=(".safetensors",), dump=CONTAINER, magic=((8, b"{"),),
        open="open_source", read="file_buffers", sniff="sniff", folder="is_checkpoint_folder",
    ),
    "npz": Format(
        "npz", "fastdiff.sources.npz", "a numpy .npz archive (np.savez, np.savez_compressed)",
        suffixes=(".npz",), dump=CONTAINER, magic=ZIP_MAGIC,
        open="open_source", read="archive_buffers", sniff="sniff",
    ),
    "torch": Format(
        "torch", "fastdiff.sources.torchzip", "a torch.save archive (.pt, .pth, pytorch_model.bin)",
        suffixes=(".pt", ".pth"), dump=CONTAINER, magic=(*ZIP_MAGIC, (0, LEGACY_TORCH)),
        open="open_source", read="archive_buffers",
    ),
    "npy": Format(
        "npy", "fastdiff.sources.npy",
        "a numpy .npy file (np.save): one buffer, named by the file's stem",
        suffixes=(".npy",), dump=BUFFER, magic=((0, NPY_MAGIC),),
        open="open_source", read="file_buffers",
    ),
    "dcp": Format(
        "dcp", "fastdiff.sources.dcp",
        "a torch.distributed.checkpoint folder (.metadata and __<rank>_<n>.distcp files; "
        "Megatron-LM torch_dist with common.pt)",
        open="open_source", folder="is_dcp_folder",
    ),
    "manifest": Format(
        "manifest", "fastdiff.sources.manifest", "a digest manifest written by 'fastdiff hash'",
        open="open_source",
    ),
}  # fmt: skip

#: A regular file no content test claims: its loader says why it is not one.
DEFAULT_FILE = "manifest"
#: A folder no folder test claims (and one that holds a dump).
DEFAULT_FOLDER = "folder"

#: The suffix of a file per buffer in a run folder -> its format, and of a
#: container per step -> its format (``names.split_name``): made from
#: ``FORMATS``, kept up to date by ``register`` and ``unregister``.
BUFFER_SUFFIXES: dict[str, str] = {}
CONTAINER_SUFFIXES: dict[str, str] = {}


def _index() -> None:
    """``BUFFER_SUFFIXES`` and ``CONTAINER_SUFFIXES`` from the table, in place."""
    maps = {BUFFER: BUFFER_SUFFIXES, CONTAINER: CONTAINER_SUFFIXES}
    for found in maps.values():
        found.clear()
    for fmt in FORMATS.values():
        if fmt.dump is not None:
            for s in fmt.suffixes:
                maps[fmt.dump][s] = fmt.name


_index()


def suffix(name: str) -> str:
    """The first suffix of format ``name`` (``.bin`` for ``raw``): how files
    of it are named."""
    return FORMATS[name].suffixes[0]


def register(fmt: Format) -> None:
    """Add ``fmt`` to the table, after the formats there (a format of another
    package, a test's); ValueError when its name or one of its suffixes is
    another format's already."""
    if fmt.name in FORMATS:
        raise ValueError(f"a format named {fmt.name!r} is in the table already")
    if fmt.dump is not None and fmt.read is None:
        raise ValueError(f"format {fmt.name!r}: a dump of it needs a reader (only raw has none)")
    for other in FORMATS.values():
        shared = sorted(set(fmt.suffixes) & set(other.suffixes))
        if shared:
            raise ValueError(f"suffix {shared[0]} is the {other.name} format's already")
    FORMATS[fmt.name] = fmt
    _index()


def unregister(name: str) -> None:
    """Take format ``name`` out of the table (KeyError when it is not there)."""
    del FORMATS[name]
    _index()
