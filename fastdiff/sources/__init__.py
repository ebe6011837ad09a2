"""Where the bytes come from: run formats, and read-only access to them.

A ``RunSource`` is one side of a comparison as the scheduler sees it: a
listing of buffers (``buffers.BufferRef``: a whole raw dump, a tensor of a
container file, a manifest's entry) and the chunk size of the digests it
knows in advance (a manifest's). ``open_run`` makes one from what a user
names, by the table ``FORMATS`` (``formats``: each format's suffixes, how
it is recognised, its module): a folder is a run folder (``folder``), or
one a format's folder test takes (a checkpoint folder); a regular file is
sniffed by its first bytes. It never raises for bad input:
a run that cannot be used is a source whose listing holds the error.
Nothing below ``sources/`` knows which format a buffer came from.
"""

from __future__ import annotations

import os

from ..model.results import Problem
from .buffers import RunListing
from .formats import DEFAULT_FILE, DEFAULT_FOLDER, FORMATS
from .names import CONTAINER_SUFFIXES, DIGEST_LOG, DUMPS, is_dump_name, split_name
from .run import RunSource, refused

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .buffers import StepFilter

__all__ = ["FORMATS", "RunSource", "folder_format", "open_run", "refused", "reopen", "sniff"]

#: Bytes read to tell a file's format: every magic of the table lies in them.
_SNIFF = 64


def sniff(path: str) -> str:
    """The format of a regular file, from its first bytes: the first format of
    ``FORMATS`` whose magic they match and whose content test (if it has
    one) takes the file: a safetensors header, a zip archive (an ``.npz``
    when its members are ``.npy`` arrays, else a ``torch.save`` archive), a
    ``torch.save`` file of the legacy format (which that reader refuses),
    an ``.npy`` array (numpy's magic); else a manifest (``DEFAULT_FILE``),
    whose loader says why a file is not one. A file that cannot be read is
    left to the manifest loader too, which names the trouble."""
    from .reader import open_fd

    try:
        fd = open_fd(path)
    except OSError:
        return DEFAULT_FILE
    try:
        head = os.pread(fd, _SNIFF, 0)
        size = os.fstat(fd).st_size
        for fmt in FORMATS.values():
            if fmt.matches(head) and (fmt.sniff is None or fmt.function("sniff")(head, fd, size)):
                return fmt.name
    except OSError:
        pass
    finally:
        os.close(fd)
    return DEFAULT_FILE


def folder_format(path: str) -> str:
    """The format of a folder: ``folder`` (``DEFAULT_FOLDER``) when it holds a
    dump, else the first format of ``FORMATS`` whose folder test takes its
    entries (``safetensors``: a checkpoint folder of ``*.safetensors``
    files or their index), else ``folder``."""
    try:
        with os.scandir(path) as it:
            names = []
            for entry in it:
                if is_dump_name(entry.name):
                    return DEFAULT_FOLDER
                names.append(entry.name)
    except OSError:
        return DEFAULT_FOLDER  # its listing says what is wrong
    for fmt in FORMATS.values():
        if fmt.folder is not None and fmt.function("folder")(names):
            return fmt.name
    return DEFAULT_FOLDER


def open_run(spec: str | os.PathLike[str], steps: StepFilter | None = None) -> RunSource:
    """A run, in any format of ``FORMATS``; errors become listing errors, never
    exceptions.

    A path that is not a regular file is a run folder; a regular file is
    sniffed (``sniff``), reading at most a few bytes; a dump file given as
    a run is refused by its name, without opening it. ``steps``: list only
    those steps (a set, a range or a predicate).
    """
    s = os.fspath(spec)
    if not os.path.isfile(s):
        fmt = folder_format(s) if os.path.isdir(s) else DEFAULT_FOLDER
    else:
        parts = split_name(os.path.basename(s))
        if parts is not None and parts[1] is not None:
            folder = os.path.dirname(s) or os.curdir
            return refused(s, f"this is a dump file; pass its folder {folder} instead", "error")
        fmt = sniff(s)
    return FORMATS[fmt].function("open")(s, steps)  # type: ignore[no-any-return]


def reopen(src: RunSource) -> RunSource:
    """``src``'s run listed afresh, with the same step filter: a file
    rewritten since is then read again, never taken from what was read
    before."""
    return open_run(src.spec, src.steps)


# --- a run with no dumps ------------------------------------------------------------

#: How far ``dump_subfolder`` looks: this many subfolders, this many entries in each.
_PEEK_FOLDERS = 64
_PEEK_ENTRIES = 10_000


def holds_no_dumps(listing: RunListing) -> bool:
    """A run that could be read but holds nothing named like a dump: every
    entry was skipped, or there is none. Nothing can be compared against it."""
    return listing.readable and not listing.files and not listing.errors


def dump_subfolder(root: str) -> str | None:
    """The first subfolder of ``root`` (one level down, in name order) with an
    entry named like a dump, or None. Names only: no file is opened."""
    try:
        with os.scandir(root) as it:
            subfolders = sorted(e.name for e in it if e.is_dir())
    except OSError:
        return None
    for name in subfolders[:_PEEK_FOLDERS]:
        path = os.path.join(root, name)
        try:
            with os.scandir(path) as it:
                for i, entry in enumerate(it):
                    if i == _PEEK_ENTRIES:
                        break
                    if is_dump_name(entry.name):
                        return path
        except OSError:
            continue
    return None


def no_dumps_problem(src: RunSource, side: str | None, subfolder: str | None = None) -> Problem:
    """The error for run ``side`` ("A" or "B"; None for the one run of
    ``stats`` or ``hash``) holding no dumps; ``subfolder``: one that does hold
    some (``dump_subfolder``), to suggest."""
    shown = src.spec  # escaped by whoever prints it
    run = f"run {side}" if side else "the run"
    if src.is_manifest:
        return Problem(
            shown,
            f"{run} is a manifest that lists no dumps; nothing can be compared against "
            "it: hash the run folder that holds them with 'fastdiff hash RUN -o FILE'",
            kind="no_dumps",
        )
    if src.kind != "folder":  # a container file, a checkpoint folder
        return Problem(
            shown, f"{run} holds no tensors; nothing can be compared against it", kind="no_dumps"
        )
    n = len(src.listing.skipped)
    others = f" (only {n} other {'entry' if n == 1 else 'entries'}, skipped)" if n else ""
    if subfolder is not None:
        what = f"did you mean {subfolder}?"
    else:
        what = "give the folder that holds them"
    files = [
        os.path.basename(s.path) for s in src.listing.skipped
        if s.path.endswith(tuple(CONTAINER_SUFFIXES))
    ]  # fmt: skip
    if files:  # tensor files that are not one checkpoint: each may be a run
        shown_files = ", ".join(files[:3]) + (f" and {len(files) - 3:,} more" if files[3:] else "")
        what += f" ({shown_files}: tensor files, but not one checkpoint; give one as RUN)"
    return Problem(shown, f"{run} holds no {DUMPS}{others}; {what}", kind="no_dumps")


# --- fastdiff never writes into a run folder -----------------------------------


def _holds_dump_names(folder: str) -> bool:
    """Whether ``folder`` holds an entry named like a dump, or a recorder's
    digest log (a run recorded as digests only holds nothing else)."""
    try:
        with os.scandir(folder) as it:
            return any(is_dump_name(e.name) or e.name == DIGEST_LOG for e in it)
    except OSError:
        return False


def run_folder_around(path: str | os.PathLike[str]) -> str | None:
    """The folder that ``path`` is or lies below (links resolved) which holds
    dumps, if any: a run folder, whether or not it is a
    run of this command. Only names are read, never a file."""
    real = os.path.realpath(path)
    folder = real if os.path.isdir(real) else os.path.dirname(real)
    while True:
        if _holds_dump_names(folder):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def refuse_run_folder(path: str, what: str, runs: tuple[str, ...] = (), fix: str = "") -> None:
    """Raise FastdiffError when writing ``path`` (``what``: how the user named
    it, e.g. "--plot out.png") would write into a run folder: one of ``runs``
    (folders), the folder a manifest among them was hashed from, or any
    folder that holds dumps. ``fix``: what to do instead."""
    from ..errors import FastdiffError
    from .folder import is_inside

    folders = []
    for run in runs:
        if os.path.isdir(run):
            folders.append(run)
        elif os.path.isfile(run) and not is_dump_name(os.path.basename(run)):
            try:
                from .manifest import load_manifest

                folders.append(load_manifest(run).run)
            except (OSError, ValueError):  # not a manifest: nothing it could point at
                pass
    inside = next((f for f in folders if is_inside(path, f)), None) or run_folder_around(path)
    if inside is not None:
        raise FastdiffError(
            f"{what} is inside the run folder {inside}, and fastdiff never writes into a "
            f"run folder; {fix or 'write it elsewhere'}"
        )
