"""Stage 1: list a run folder and account for every entry in it.

A regular file named ``step_<N>_<name>.bin`` (N >= 0, any number of ASCII
digits up to ``MAX_STEP_DIGITS``) is buffer ``name`` at step N; a symbolic
link is followed. Every other entry is reported as skipped, with the reason;
entries named like dumps that cannot be compared (a folder, FIFO, socket or
device, a broken link or link loop, a name that is not UTF-8, a step number
too long to read) are errors. Nothing is opened here (so a FIFO cannot
block): one ``stat`` per entry (two for a symbolic link: the link, then
what it points to), and folders are never written to.

``discover(run, steps=...)`` lists only the dumps of the steps chosen (a
set, a range, or a predicate on the step number): entries of other steps,
and entries not named like dumps, are then neither listed, skipped nor
stat'ed, so listing one step of a long run costs one pass over the names.
"""

from __future__ import annotations

import os
import stat

from ..render.escape import is_utf8
from ..results import Problem, Skipped

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Container, Iterable

    #: Which steps to list: a set or range of step numbers, or a predicate.
    StepFilter = Container[int] | Callable[[int], bool]

#: A dump is named ``step_<N>_<name>.bin``: ``N`` ASCII digits only (not other
#: scripts' digits), ``name`` at least one character (any, a newline too).
DUMP_PREFIX = "step_"
DUMP_SUFFIX = ".bin"
#: Step numbers of more digits are refused (an error, never a skip): below
#: the smallest limit Python may put on int/str conversions (640 digits), and
#: far above the 255 bytes most file systems allow a file name.
MAX_STEP_DIGITS = 600


class DumpFile:
    """One dump file as ``stat`` saw it during discovery (an immutable value).

    Equality is identity: the scheduler keys digests by the very DumpFile a
    listing holds, so a file listed afresh is read afresh.
    """

    __slots__ = ("ctime_ns", "dev", "ino", "mtime_ns", "name", "path", "size", "step")

    path: str
    step: int
    name: str
    size: int
    dev: int
    ino: int
    mtime_ns: int
    ctime_ns: int

    def __init__(
        self, path: str, step: int, name: str, size: int, dev: int, ino: int,
        mtime_ns: int, ctime_ns: int,
    ) -> None:  # fmt: skip
        self.path = path
        self.step = step
        self.name = name
        self.size = size
        self.dev = dev
        self.ino = ino
        self.mtime_ns = mtime_ns
        self.ctime_ns = ctime_ns

    def __repr__(self) -> str:
        return f"DumpFile({self.path!r}, step={self.step}, name={self.name!r}, size={self.size})"

    def __reduce__(self) -> tuple[type[DumpFile], tuple[object, ...]]:
        # Sent to worker processes: slots classes pickle by their fields.
        return DumpFile, (
            self.path, self.step, self.name, self.size, self.dev, self.ino,
            self.mtime_ns, self.ctime_ns,
        )  # fmt: skip


def step_filter(steps: StepFilter | None) -> Callable[[int], bool] | None:
    """A predicate for ``steps`` (a set, a range or a predicate); None for all steps."""
    if steps is None or callable(steps):
        return steps
    return steps.__contains__


class RunListing:
    """What discovery found in a run folder (or what a manifest lists).

    ``readable`` is False when the run itself could not be read (missing, not
    a folder): its buffers are unknown, not absent, so nothing is paired
    against it. ``broken``: dumps named in the folder that could not be
    compared (a FIFO, a broken link, ...), by (step, name), with the entry's
    problem: present, not absent.
    """

    __slots__ = ("broken", "errors", "files", "readable", "root", "skipped")

    root: str
    files: tuple[DumpFile, ...]
    skipped: tuple[Skipped, ...]
    errors: tuple[Problem, ...]
    readable: bool
    broken: tuple[tuple[tuple[int, str], Problem], ...]

    def __init__(
        self,
        root: str,
        files: tuple[DumpFile, ...],
        skipped: tuple[Skipped, ...],
        errors: tuple[Problem, ...],
        readable: bool = True,
        broken: tuple[tuple[tuple[int, str], Problem], ...] = (),
    ) -> None:
        self.root = root
        self.files = files
        self.skipped = skipped
        self.errors = errors
        self.readable = readable
        self.broken = broken

    def __repr__(self) -> str:
        return (
            f"RunListing({self.root!r}, {len(self.files)} files, {len(self.skipped)} skipped, "
            f"{len(self.errors)} errors)"
        )

    def by_key(self) -> dict[tuple[int, str], DumpFile]:
        return {(f.step, f.name): f for f in self.files}

    def select(self, steps: StepFilter) -> RunListing:
        """This listing restricted to ``steps``, as ``discover(root, steps=...)``
        would list them: the dumps and broken entries of those steps, the
        errors about them and about the run itself; nothing skipped."""
        want = step_filter(steps)
        assert want is not None

        def kept(problem: Problem) -> bool:
            parts = split_dump_name(os.path.basename(problem.path))
            if parts is None:
                return problem.path == self.root or not self.readable  # about the run itself
            return len(parts[0]) <= MAX_STEP_DIGITS and want(int(parts[0]))

        return RunListing(
            self.root,
            tuple(f for f in self.files if want(f.step)),
            (),
            tuple(e for e in self.errors if kept(e)),
            self.readable,
            tuple(item for item in self.broken if want(item[0][0])),
        )


def split_dump_name(filename: str) -> tuple[str, str] | None:
    """(step digits, buffer name) for a name shaped ``step_<N>_<name>.bin``, else None."""
    if not (filename.startswith(DUMP_PREFIX) and filename.endswith(DUMP_SUFFIX)):
        return None
    sep = filename.find("_", 5)
    # The digits run up to the first "_" after "step_", and a name of at
    # least one character sits between that "_" and ".bin".
    if sep <= 5 or sep + 1 >= len(filename) - 4:
        return None
    digits = filename[5:sep]
    if not (digits.isascii() and digits.isdigit()):
        return None
    return digits, filename[sep + 1 : -4]


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


def is_inside(path: str | os.PathLike[str], folder: str | os.PathLike[str]) -> bool:
    """True when ``path`` is ``folder`` or lies below it (links resolved)."""
    real, top = os.path.realpath(path), os.path.realpath(folder)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def _unreadable(root: str, problem: Problem) -> RunListing:
    return RunListing(root, (), (), (problem,), readable=False)


def discover(run: str | os.PathLike[str], steps: StepFilter | None = None) -> RunListing:
    """List a run folder; with ``steps``, only the dumps of those steps."""
    root = os.fspath(run)
    shown = root  # paths stay as the OS gave them; renderers escape them
    if "\0" in root:
        problem = Problem(shown, "a path cannot contain a NUL character", kind="name")
        return _unreadable(root, problem)
    try:
        st = os.stat(root)
    except FileNotFoundError:
        return _unreadable(
            root, Problem(shown, "run folder not found; check the path", kind="missing")
        )
    except OSError as exc:
        return _unreadable(
            root, Problem(shown, f"cannot access run folder: {exc.strerror}", kind="unreadable")
        )
    if not stat.S_ISDIR(st.st_mode):
        return _unreadable(
            root,
            Problem(
                shown, "not a folder; give the run folder that holds the dumps", kind="unreadable"
            ),
        )
    try:
        with os.scandir(root) as it:
            names = sorted([entry.name for entry in it])
    except OSError as exc:
        return _unreadable(
            root,
            Problem(
                shown,
                f"cannot list run folder: {exc.strerror}; check permissions",
                kind="unreadable",
            ),
        )
    return list_entries(root, names, steps)


def list_entries(root: str, names: Iterable[str], steps: StepFilter | None = None) -> RunListing:
    """The listing of the entries ``names`` of run folder ``root``, as
    ``discover`` lists a whole folder (it calls this with every name,
    sorted): for a caller that knows the names already (``watch``, listing
    one step of a folder it polls). A name that no longer exists is an
    error of kind ``changed``."""
    want = step_filter(steps)
    files: list[DumpFile] = []
    skipped: list[Skipped] = []
    errors: list[Problem] = []
    broken: dict[tuple[int, str], Problem] = {}
    seen: dict[tuple[int, str], str] = {}
    S_ISLNK, S_ISREG, lstat = stat.S_ISLNK, stat.S_ISREG, os.lstat
    prefix = root if root.endswith(os.sep) else root + os.sep  # os.path.join(root, name)

    def fail(shown_path: str, parsed: tuple[int, str] | None, message: str, kind: str) -> None:
        problem = Problem(shown_path, message, kind=kind)
        errors.append(problem)
        if parsed is not None:
            broken.setdefault(parsed, problem)

    for entry_name in names:
        path = prefix + entry_name
        parts = split_dump_name(entry_name)
        parsed: tuple[int, str] | None = None
        if parts is not None:
            digits, name = parts
            if len(digits) > MAX_STEP_DIGITS:  # an error, not a skip
                if want is None:
                    message = (
                        f"step number has {len(digits):,} digits, more than fastdiff reads "
                        f"({MAX_STEP_DIGITS}); rename the file"
                    )
                    fail(path, None, message, "name")
                continue
            parsed = (int(digits), name)
            if want is not None and not want(parsed[0]):
                continue
        elif want is not None:
            continue  # not a dump: only a listing of every step accounts for it
        try:
            st = lstat(path)  # one stat per entry: a link's target is stat'ed too
            if S_ISLNK(st.st_mode):
                try:
                    st = os.stat(path)
                except OSError as exc:
                    what = "symbolic link loop" if exc.errno == 40 else "broken symbolic link"
                    if parsed is None:
                        skipped.append(Skipped(path, f"{what}, not a dump"))
                    else:
                        fail(path, parsed, f"{what}; fix or remove the link", "unreadable")
                    continue
        except OSError as exc:
            message = f"vanished or unreadable while listing: {exc.strerror}"
            kind = "changed" if isinstance(exc, FileNotFoundError) else "unreadable"
            fail(path, parsed, message, kind)
            continue
        if not S_ISREG(st.st_mode):
            kind = _kind(st.st_mode)
            if parsed is None:
                skipped.append(Skipped(path, f"{kind}; fastdiff compares regular files only"))
            else:
                message = f"named like a dump but is {kind}; only regular files are read"
                fail(path, parsed, message, "unreadable")
            continue
        if parsed is None:
            skipped.append(Skipped(path, "not a dump: name is not step_<N>_<name>.bin"))
            continue
        if not entry_name.isascii() and not is_utf8(entry_name):
            fail(path, parsed, "file name is not valid UTF-8; rename it to compare it", "name")
            continue
        if parsed in seen:
            errors.append(
                Problem(
                    path,
                    f"same step and buffer as {seen[parsed]} (step numbers with leading "
                    "zeros?); keep one of them",
                    kind="name",
                )
            )
            continue
        seen[parsed] = path
        step, name = parsed
        files.append(
            DumpFile(
                path, step, name, st.st_size, st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns
            )
        )
    broken = {k: m for k, m in broken.items() if k not in seen}
    return RunListing(
        root, tuple(files), tuple(skipped), tuple(errors), True, tuple(sorted(broken.items()))
    )
