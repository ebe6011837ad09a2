"""A run folder: list it and account for every entry in it.

A regular file named like a dump (``names``: ``step_<N>_<name>.bin``, N >= 0,
any number of ASCII digits up to ``MAX_STEP_DIGITS``) is buffer ``name`` at
step N; a symbolic link is followed. Hidden entries (a name starting with
``.``: a recorder's temporaries and digest log) are passed over in silence;
every other entry is reported as skipped, with the reason; entries named
like dumps that cannot be compared (a folder, FIFO, socket or device, a
broken link or link loop, a name that is not UTF-8, a step number too long
to read) are errors. A raw dump is not opened here (so a FIFO cannot
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

from ..model.results import Problem, Skipped
from ..textkit.escape import is_utf8
from .buffers import BufferRef, RunListing, Unread, step_filter
from .formats import BUFFER, FORMATS
from .names import DIGEST_LOG, DUMP_PATTERN, MAX_STEP_DIGITS, split_name
from .reader import read_regular
from .run import RunSource

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from .buffers import StepFilter


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
    files: list[BufferRef] = []
    skipped: list[Skipped] = []
    errors: list[Problem] = []
    broken: dict[tuple[int, str], Problem] = {}
    lost: dict[int, Problem] = {}  # steps whose container could not be read
    seen: dict[tuple[int, str], str] = {}
    twice: dict[tuple[int, str], Problem] = {}  # buffers a run holds two dumps of
    S_ISLNK, S_ISREG, lstat = stat.S_ISLNK, stat.S_ISREG, os.lstat
    prefix = root if root.endswith(os.sep) else root + os.sep  # os.path.join(root, name)

    def fail(
        shown_path: str, parsed: tuple[int, str | None] | None, message: str, kind: str
    ) -> None:
        problem = Problem(shown_path, message, kind=kind)
        errors.append(problem)
        if parsed is not None:
            if parsed[1] is None:  # a container: every buffer of its step is unknown
                lost.setdefault(parsed[0], problem)
            else:
                broken.setdefault(parsed, problem)  # type: ignore[arg-type]

    for entry_name in names:
        if entry_name[:1] == ".":
            continue  # hidden (a recorder's temporaries and digest log): not even skipped
        path = prefix + entry_name
        parts = split_name(entry_name)
        parsed: tuple[int, str | None] | None = None
        if parts is not None:
            digits, name, fmt = parts
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
            skipped.append(Skipped(path, f"not a dump: name is not {DUMP_PATTERN}"))
            continue
        if not entry_name.isascii() and not is_utf8(entry_name):
            fail(path, parsed, "file name is not valid UTF-8; rename it to compare it", "name")
            continue
        if parsed in seen:
            message = (
                f"same step and buffer as {seen[parsed]} (step numbers with leading zeros?); "
                "neither was compared: keep one of them"
            )
            twice.setdefault(parsed, Problem(path, message, kind="name"))  # type: ignore[arg-type]
            errors.append(twice[parsed])  # type: ignore[index]
            continue
        step, name = parsed
        if fmt == "raw":  # the usual case: nothing is opened
            seen[parsed] = path  # type: ignore[index]
            ref = BufferRef(
                path, step, name, st.st_size, st.st_dev, st.st_ino, st.st_mtime_ns,  # type: ignore[arg-type]
                st.st_ctime_ns,
            )  # fmt: skip
            files.append(ref)
            continue
        try:
            refs = headed_buffers(path, step, name, fmt)
        except OSError as exc:
            kind = "changed" if isinstance(exc, FileNotFoundError) else "unreadable"
            fail(path, parsed, f"cannot read: {exc.strerror or exc}", kind)
            continue
        except ValueError as exc:  # the format's own error: its header is refused
            fail(path, parsed, f"{exc}; nothing of it was compared", "malformed")
            continue
        for ref in refs:
            if isinstance(ref, Unread):  # refused alone: the rest of the container is read
                fail(path, (ref.step, ref.name), ref.reason, "malformed")
                continue
            key = (ref.step, ref.name)
            if key in seen:
                message = (
                    f"buffer {ref.name!r} of step {step} is also in {seen[key]}; neither was "
                    "compared: keep one"
                )
                twice.setdefault(key, Problem(path, message, kind="name"))
                errors.append(twice[key])
                continue
            seen[key] = path
            files.append(ref)
    if twice:  # a buffer dumped twice is neither dump: it is an error, never "equal"
        files = [f for f in files if (f.step, f.name) not in twice]
    broken = {k: m for k, m in broken.items() if k not in seen} | {
        k: m for k, m in twice.items() if k not in broken
    }
    return RunListing(
        root, tuple(files), tuple(skipped), tuple(errors), True, tuple(sorted(broken.items())),
        tuple(sorted(lost.items(), key=lambda item: item[0])),
    )  # fmt: skip


def headed_buffers(path: str, step: int, name: str | None, fmt: str) -> list[BufferRef | Unread]:
    """The buffers of a dump of format ``fmt`` whose file says what it holds
    (an ``.npy``: the one buffer ``name``; a container: its tensors), read
    from its header by the format's reader (``formats.FORMATS``); raises
    OSError, or the format's ValueError."""
    entry = FORMATS[fmt]
    read = entry.function("read")
    head = (path, step, name) if entry.dump == BUFFER else (path, step)
    return read_regular(  # type: ignore[no-any-return]
        path,
        lambda fd, st: read(*head, fd, st),
        what="no longer a regular file (it changed while it was listed)",
    )


def open_source(spec: str, steps: StepFilter | None = None) -> RunSource:
    """A run folder as a run source (``sources.FORMATS``): ``discover``, then
    ``folder_source``."""
    return folder_source(spec, discover(spec, steps), steps)


def folder_source(spec: str, listing: RunListing, steps: StepFilter | None = None) -> RunSource:
    """Run folder ``spec``, listed as ``listing`` (of ``steps``), as a run
    source: how ``compare`` reads a folder, and ``watch`` the steps of one
    it polls. A folder a recorder wrote holds a digest log (``digestlog``):
    its digests are attached to the dumps they still describe (and its
    dtypes and shapes to ``.npy`` dumps of raw bytes), its digests-only
    buffers of ``steps`` are added, and the source takes the log's chunk size.
    One a tracer wrote holds its dataflow and sequence log too (``traced``),
    which the source carries."""
    if listing.readable:
        try:
            os.stat(os.path.join(spec, DIGEST_LOG))
        except OSError:
            pass  # no log (or none readable): the usual case, one stat
        else:
            from .digestlog import attach_log
            from .traced import trace_files

            src = attach_log(spec, listing, steps)
            dataflow, sequence, notes = trace_files(spec)
            if dataflow is None and sequence is None and not notes:
                return src
            return src.traced(dataflow, sequence, notes)
    return RunSource(spec, listing, steps=steps)


def _is_npy(path: str) -> bool:
    parts = split_name(os.path.basename(path))
    return parts is not None and parts[2] == "npy"


def awaiting_log(src: RunSource) -> list[str]:
    """The dumps of run folder ``src`` (paths) whose element type only a
    recorder's digest log gives (an ``.npy`` of raw bytes, ``<V2`` or ``|V1``:
    bfloat16, an 8-bit float) and which no line of the folder's log
    describes, when the folder has a log: a recorder writes a dump's line
    shortly after the dump (``recorder``), so a reader of a run being
    written may list the dump first. Empty when the folder has no log."""
    raw = [
        f.path for f in src.listing.buffers
        if f.dtype is None and f.has_data and _is_npy(f.path)
    ]  # fmt: skip
    if not raw or not os.path.exists(os.path.join(src.listing.root, DIGEST_LOG)):
        return []
    return raw
