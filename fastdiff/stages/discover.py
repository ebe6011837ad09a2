"""Stage 1: list a run folder and account for every entry in it.

A regular file named ``step_<N>_<name>.bin`` (N >= 0, any number of ASCII
digits up to ``MAX_STEP_DIGITS``) is buffer ``name`` at step N; a symbolic
link is followed. Every other entry is reported as skipped, with the reason;
entries named like dumps that cannot be compared (a folder, FIFO, socket or
device, a broken link or link loop, a name that is not UTF-8, a step number
too long to read) are errors. Nothing is opened here (so a FIFO cannot
block): one ``lstat``/``stat`` per entry, and folders are never written to.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..render.escape import is_utf8
from ..results import Problem, Skipped

if TYPE_CHECKING:
    from ..schema import Schema
    from .hash import FileDigest

#: Only ASCII digits make a step number (``\d`` would take other scripts'
#: digits too); ``\Z``, as ``$`` would also match before a final newline.
DUMP_NAME = re.compile(r"^step_([0-9]+)_(.+)\.bin\Z", re.DOTALL)
#: Step numbers of more digits are refused (an error, never a skip): below
#: the smallest limit Python may put on int/str conversions (640 digits), and
#: far above the 255 bytes most file systems allow a file name.
MAX_STEP_DIGITS = 600


@dataclass(frozen=True)
class DumpFile:
    """One dump file as ``stat`` saw it during discovery."""

    path: str
    step: int
    name: str
    size: int
    dev: int
    ino: int
    mtime_ns: int
    ctime_ns: int


@dataclass(frozen=True)
class RunListing:
    root: str
    files: tuple[DumpFile, ...]
    skipped: tuple[Skipped, ...]
    errors: tuple[Problem, ...]
    #: False when the run itself could not be read (missing, not a folder):
    #: its buffers are unknown, not absent, so nothing is paired against it.
    readable: bool = True
    #: Dumps named in the folder that could not be compared (a FIFO, a broken
    #: link, ...), by (step, name), with the entry's path and the reason:
    #: present, not absent.
    broken: tuple[tuple[tuple[int, str], Problem], ...] = ()

    def by_key(self) -> dict[tuple[int, str], DumpFile]:
        return {(f.step, f.name): f for f in self.files}


def split_dump_name(filename: str) -> tuple[str, str] | None:
    """(step digits, buffer name) for a name shaped ``step_<N>_<name>.bin``, else None."""
    m = DUMP_NAME.match(filename)
    return None if m is None else (m.group(1), m.group(2))


def parse_dump_name(filename: str) -> tuple[int, str] | None:
    """(step, buffer name) for ``step_<N>_<name>.bin``, else None.

    None also for a step of more than ``MAX_STEP_DIGITS`` digits: callers
    that list folders tell that case apart with ``split_dump_name``.
    """
    parts = split_dump_name(filename)
    if parts is None or len(parts[0]) > MAX_STEP_DIGITS:
        return None
    return int(parts[0]), parts[1]


def _kind(mode: int) -> str:
    for test, word in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return word
    return "not a regular file"


def dump_file_from_stat(path: str, step: int, name: str, st: os.stat_result) -> DumpFile:
    return DumpFile(
        path, step, name, st.st_size, st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns
    )


def is_inside(path: str | os.PathLike[str], folder: str | os.PathLike[str]) -> bool:
    """True when ``path`` is ``folder`` or lies below it (links resolved)."""
    real, top = os.path.realpath(path), os.path.realpath(folder)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def _unreadable(root: str, problem: Problem) -> RunListing:
    return RunListing(root, (), (), (problem,), readable=False)


def discover(run: str | os.PathLike[str]) -> RunListing:
    root = os.fspath(run)
    shown = root  # paths stay as the OS gave them; renderers escape them
    if "\0" in root:
        return _unreadable(root, Problem(shown, "a path cannot contain a NUL character"))
    try:
        st = os.stat(root)
    except FileNotFoundError:
        return _unreadable(root, Problem(shown, "run folder not found; check the path"))
    except OSError as exc:
        return _unreadable(root, Problem(shown, f"cannot access run folder: {exc.strerror}"))
    if not stat.S_ISDIR(st.st_mode):
        return _unreadable(
            root, Problem(shown, "not a folder; give the run folder that holds the dumps")
        )
    try:
        with os.scandir(root) as it:
            names = sorted(entry.name for entry in it)
    except OSError as exc:
        return _unreadable(
            root, Problem(shown, f"cannot list run folder: {exc.strerror}; check permissions")
        )

    files: list[DumpFile] = []
    skipped: list[Skipped] = []
    errors: list[Problem] = []
    broken: dict[tuple[int, str], Problem] = {}
    seen: dict[tuple[int, str], str] = {}

    def fail(shown_path: str, parsed: tuple[int, str] | None, message: str) -> None:
        problem = Problem(shown_path, message)
        errors.append(problem)
        if parsed is not None:
            broken.setdefault(parsed, problem)

    for entry_name in names:
        path = os.path.join(root, entry_name)
        shown_path = path
        parts = split_dump_name(entry_name)
        if parts is not None and len(parts[0]) > MAX_STEP_DIGITS:  # an error, not a skip
            message = (
                f"step number has {len(parts[0]):,} digits, more than fastdiff reads "
                f"({MAX_STEP_DIGITS}); rename the file"
            )
            fail(shown_path, None, message)
            continue
        parsed = None if parts is None else (int(parts[0]), parts[1])
        try:
            lst = os.lstat(path)
        except OSError as exc:
            fail(shown_path, parsed, f"vanished or unreadable while listing: {exc.strerror}")
            continue
        is_link = stat.S_ISLNK(lst.st_mode)
        try:
            st = os.stat(path) if is_link else lst
        except OSError as exc:
            what = "symbolic link loop" if exc.errno == 40 else "broken symbolic link"
            if parsed is None:
                skipped.append(Skipped(shown_path, f"{what}, not a dump"))
            else:
                fail(shown_path, parsed, f"{what}; fix or remove the link")
            continue
        if not stat.S_ISREG(st.st_mode):
            kind = _kind(st.st_mode)
            if parsed is None:
                skipped.append(Skipped(shown_path, f"{kind}; fastdiff compares regular files only"))
            else:
                fail(
                    shown_path,
                    parsed,
                    f"named like a dump but is {kind}; only regular files are read",
                )
            continue
        if parsed is None:
            skipped.append(Skipped(shown_path, "not a dump: name is not step_<N>_<name>.bin"))
            continue
        if not is_utf8(entry_name):
            fail(shown_path, parsed, "file name is not valid UTF-8; rename it to compare it")
            continue
        step, name = parsed
        if (step, name) in seen:
            errors.append(
                Problem(
                    shown_path,
                    f"same step and buffer as {seen[(step, name)]} (step numbers with leading "
                    "zeros?); keep one of them",
                )
            )
            continue
        seen[(step, name)] = shown_path
        files.append(dump_file_from_stat(path, step, name, st))
    broken = {k: m for k, m in broken.items() if k not in seen}
    return RunListing(
        root, tuple(files), tuple(skipped), tuple(errors), True, tuple(sorted(broken.items()))
    )


@dataclass(frozen=True)
class RunSource:
    """A run as the pipeline sees it: a listing, and digests known in advance."""

    spec: str
    listing: RunListing
    digests: dict[str, FileDigest]  # by DumpFile.path
    chunk_size: int | None  # set for manifests: local files must be hashed alike
    schema: Schema | None = None  # the schema a manifest records (None: a folder, or none)
    dtypes: dict[str, str] = field(default_factory=dict)  # a manifest's dtype per buffer name

    @property
    def is_manifest(self) -> bool:
        return self.chunk_size is not None


def open_run(spec: str | os.PathLike[str]) -> RunSource:
    """A run folder, or a manifest file; errors become listing errors, never exceptions.

    A regular file is read as a manifest (``load_manifest`` sniffs its first
    bytes and caps what it reads); a dump file given as a run is refused by
    its name, without opening it.
    """
    s = os.fspath(spec)
    if os.path.isfile(s):  # a regular file given as a run is read as a manifest
        from ..sources.manifest import ManifestError, NotAManifest, load_manifest

        shown = s  # renderers escape paths when they print them
        base = os.path.basename(s)
        if split_dump_name(base) is not None:
            folder = os.path.dirname(s) or os.curdir
            problem = Problem(shown, f"this is a dump file; pass its folder {folder} instead")
            return RunSource(s, RunListing(s, (), (), (problem,), readable=False), {}, None)
        try:
            m = load_manifest(s)
        except ManifestError as exc:
            msg = str(exc).removeprefix(f"{s}: ")
            if isinstance(exc, NotAManifest) and base.lower().endswith(".bin"):
                msg = (
                    f"not a run folder, nor a fastdiff manifest ({msg}); a .bin file is data: "
                    "pass the run folder that holds the step_<N>_<name>.bin dumps"
                )
            elif isinstance(exc, NotAManifest):
                msg = (
                    f"not a run folder, nor a fastdiff manifest ({msg}); give the folder that "
                    "holds the step_<N>_<name>.bin dumps, or a file written by 'fastdiff hash'"
                )
            problem = Problem(shown, msg)
            return RunSource(s, RunListing(s, (), (), (problem,), readable=False), {}, None)
        return RunSource(s, m.listing, m.digests, m.chunk_size, m.schema, m.dtypes)
    return RunSource(s, discover(s), {}, None)


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
                    if split_dump_name(entry.name) is not None:
                        return path
        except OSError:
            continue
    return None


def no_dumps_problem(src: RunSource, side: str, subfolder: str | None = None) -> Problem:
    """The error for run ``side`` ("A" or "B") holding no dumps; ``subfolder``:
    one that does hold some (``dump_subfolder``), to suggest."""
    shown = src.spec  # escaped by whoever prints it
    if src.is_manifest:
        return Problem(
            shown,
            f"run {side} is a manifest that lists no dumps; nothing can be compared against "
            "it: hash the run folder that holds them with 'fastdiff hash RUN -o FILE'",
        )
    n = len(src.listing.skipped)
    others = f" (only {n} other {'entry' if n == 1 else 'entries'}, skipped)" if n else ""
    if subfolder is not None:
        what = f"did you mean {subfolder}?"
    else:
        what = "give the folder that holds them"
    return Problem(shown, f"run {side} holds no step_<N>_<name>.bin dumps{others}; {what}")
