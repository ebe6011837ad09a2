"""Where the bytes come from: run folders, manifests, and read-only file access.

A ``RunSource`` is one side of a comparison as the scheduler sees it: a
listing of dumps (a folder's, or a manifest's), and the digests known in
advance (a manifest's). ``open_run`` makes one from what a user names; it
never raises for bad input: a run that cannot be used is a source whose
listing holds the error.
"""

from __future__ import annotations

import os

from ..results import Problem
from ..stages.discover import RunListing, discover, split_dump_name, step_filter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..schema import Schema
    from ..stages.discover import StepFilter
    from ..stages.hash import FileDigest


class RunSource:
    """A run as the scheduler sees it: a listing, and digests known in advance.

    ``chunk_size`` is set for manifests (local files are hashed alike to be
    compared with them); ``schema`` is the schema a manifest records (None:
    a folder, or an older manifest); ``dtypes`` a manifest's dtype per
    buffer name; ``steps`` the step filter the listing was made with.
    """

    __slots__ = ("chunk_size", "digests", "dtypes", "listing", "schema", "spec", "steps")

    spec: str
    listing: RunListing
    digests: dict[str, FileDigest]  # by DumpFile.path
    chunk_size: int | None
    schema: Schema | None
    dtypes: dict[str, str]
    steps: StepFilter | None

    def __init__(
        self,
        spec: str,
        listing: RunListing,
        digests: dict[str, FileDigest],
        chunk_size: int | None,
        schema: Schema | None = None,
        dtypes: dict[str, str] | None = None,
        steps: StepFilter | None = None,
    ) -> None:
        self.spec = spec
        self.listing = listing
        self.digests = digests
        self.chunk_size = chunk_size
        self.schema = schema
        self.dtypes = {} if dtypes is None else dtypes
        self.steps = steps

    def __repr__(self) -> str:
        kind = "manifest" if self.is_manifest else "folder"
        return f"RunSource({self.spec!r}, {kind}, {self.listing!r})"

    @property
    def is_manifest(self) -> bool:
        return self.chunk_size is not None

    def select(self, steps: StepFilter) -> RunSource:
        """This source restricted to ``steps``, without reading anything again
        (a manifest's digests are shared, not copied)."""
        return RunSource(
            self.spec, self.listing.select(steps), self.digests, self.chunk_size,
            self.schema, self.dtypes, steps,
        )  # fmt: skip

    def reopen(self) -> RunSource:
        """This run listed afresh, with the same step filter: a file rewritten
        since is then read again, never taken from what was read before."""
        return open_run(self.spec, self.steps)


def _refused(spec: str, message: str, kind: str) -> RunSource:
    problem = Problem(spec, message, kind=kind)
    return RunSource(spec, RunListing(spec, (), (), (problem,), readable=False), {}, None)


def open_run(spec: str | os.PathLike[str], steps: StepFilter | None = None) -> RunSource:
    """A run folder, or a manifest file; errors become listing errors, never exceptions.

    A regular file is read as a manifest (``load_manifest`` sniffs its first
    bytes and caps what it reads); a dump file given as a run is refused by
    its name, without opening it. ``steps``: list only those steps (a set, a
    range or a predicate; ``discover``).
    """
    s = os.fspath(spec)
    if not os.path.isfile(s):
        return RunSource(s, discover(s, steps), {}, None, steps=steps)
    # A regular file given as a run is read as a manifest.
    from .manifest import ManifestError, NotAManifest, load_manifest

    base = os.path.basename(s)
    if split_dump_name(base) is not None:
        folder = os.path.dirname(s) or os.curdir
        return _refused(s, f"this is a dump file; pass its folder {folder} instead", "error")
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
        return _refused(s, msg, exc.kind)
    src = RunSource(s, m.listing, m.digests, m.chunk_size, m.schema, m.dtypes)
    return src if step_filter(steps) is None else src.select(steps)  # type: ignore[arg-type]


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
    n = len(src.listing.skipped)
    others = f" (only {n} other {'entry' if n == 1 else 'entries'}, skipped)" if n else ""
    if subfolder is not None:
        what = f"did you mean {subfolder}?"
    else:
        what = "give the folder that holds them"
    return Problem(
        shown, f"{run} holds no step_<N>_<name>.bin dumps{others}; {what}", kind="no_dumps"
    )


# --- fastdiff never writes into a run folder -----------------------------------


def _holds_dump_names(folder: str) -> bool:
    try:
        with os.scandir(folder) as it:
            return any(split_dump_name(entry.name) is not None for entry in it)
    except OSError:
        return False


def run_folder_around(path: str | os.PathLike[str]) -> str | None:
    """The folder that ``path`` is or lies below (links resolved) which holds
    step_<N>_<name>.bin dumps, if any: a run folder, whether or not it is a
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
    from ..stages.discover import is_inside

    folders = []
    for run in runs:
        if os.path.isdir(run):
            folders.append(run)
        elif os.path.isfile(run) and split_dump_name(os.path.basename(run)) is None:
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
