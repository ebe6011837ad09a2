"""Polling one side of a watch: which steps a run holds, and when each is complete.

A ``RunPoller`` lists a run folder (``os.listdir``: works on NFS and Lustre,
where inotify does not) and ``stat``s what it must, incrementally:

- every name is parsed once, when it first appears; the names seen are kept
  in a set, so a poll finds the new and the vanished names by set
  difference, without looking at known names one by one;
- only the files of steps that are not complete yet are ``stat``ed on each
  poll (in practice the newest step, and a step due to be read again); a
  complete step's files are not, and once a step is compared its state is
  dropped (its names stay in the set);
- entries that are not dumps (a temporary name a writer renames later, a
  log) are ``stat``ed for ``idle_timeout`` after they last changed: their
  growth is activity (a run writing a large buffer under a temporary name
  is neither settled nor idle).

The folder itself is ``stat``ed on each poll, and listed again only when its
timestamps moved within the last ``GRACE_S`` seconds (a file system may keep
one timestamp for all changes within a tick), or ``RESCAN_S`` seconds have
passed (a network file system may serve stale attributes of a folder), and
never more often than ``SCAN_SHARE`` of the time allows: a folder of 70,000
entries, listed in about 50 ms, is then listed at most once a second.

When a step is complete (``complete_at``): step N of a run is complete once
a later step has appeared in that run (at the poll that first saw it; with
``lag`` K, a step later than N + K, for writers that begin a step before
they finish the one before), or, for the newest steps, once nothing in the
run folder changed for ``settle`` seconds (at the last change seen plus
``settle``). A step whose files
appear or grow after a later step appeared is complete only once its own
files have not changed for ``settle`` seconds. ``ManifestSide`` is a
manifest on one side: every step it lists is complete from the start, and a
step it lacks is absent for good.
"""

from __future__ import annotations

import os
import time
from bisect import bisect_right
from stat import S_ISDIR

from ..model.results import Problem
from ..sources import RunSource
from ..sources.buffers import RunListing
from ..sources.folder import folder_source, list_entries
from ..sources.names import MAX_STEP_DIGITS, dump_name, split_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..sources.buffers import BufferRef

    #: What identifies a file's content as ``stat`` sees it: size, mtime,
    #: ctime, inode, device.
    FileStat = tuple[int, int, int, int, int]

#: After the folder's own timestamps moved, it is listed on every poll for
#: this long, whatever its timestamps say.
GRACE_S = 2.5
#: Even when its timestamps stay, the folder is listed at least this often.
RESCAN_S = 2.0
#: Listing the folder may take at most this share of the time.
SCAN_SHARE = 0.05


def file_stat(path: str) -> FileStat | None:
    """The file's (size, mtime, ctime, inode, device), links followed; None if it is gone."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def dump_stat(f: BufferRef) -> FileStat:
    """The same tuple for a file as discovery listed it."""
    return (f.file_size, f.mtime_ns, f.ctime_ns, f.ino, f.dev)


def read_key(st: FileStat) -> int:
    """What says a file is still the one that was read, kept small (one int
    per file of a long run): its whole stat tuple, ctime included (which a
    rewrite moves even when it restores the mtime, as ``cp -p`` or
    ``rsync -t`` do; a mere chmod moves it too: the safe side)."""
    return hash(st)


class StepFiles:
    """One step of a watched run: its files (name -> last stat) and their history."""

    __slots__ = ("behind", "files", "last_change", "listed", "passed_at", "watched")

    def __init__(self, now: float, behind: bool) -> None:
        self.files: dict[str, FileStat | None] = {}
        #: When a file of the step last appeared, vanished or changed.
        self.last_change = now
        #: When a later step first appeared in the run.
        self.passed_at: float | None = None
        #: Files appeared or changed after a later step had appeared: the
        #: step is complete only once its own files settle.
        self.behind = behind
        #: A re-read is due: its files are stat'ed on each poll (their
        #: changes are activity).
        self.watched = False
        #: Its files' names when it was last listed to be read.
        self.listed: frozenset[str] = frozenset()


class RunPoller:
    """One run folder being written, polled (see the module's docstring).

    ``trouble``: the folder vanished, cannot be listed, or is not a folder
    (the watch ends); ``problems``: dump names that cannot be used, and
    files that appeared in a step already compared (reported once each).
    ``new_steps``: steps first seen since the caller last emptied the list.
    ``compared``: what each file of a compared step was when it was read
    (name -> ``read_key``), to find the files that changed since (``changed_since_read``).
    """

    final = False
    is_manifest = False

    def __init__(
        self, spec: str, settle: float, idle_timeout: float, now: float, lag: int = 0
    ) -> None:
        self.spec = spec
        #: Step N is passed once the run holds a step later than N + lag.
        self.lag = lag
        self.root = spec
        self._prefix = spec if spec.endswith(os.sep) else spec + os.sep
        self.settle = settle
        self.idle_timeout = idle_timeout
        self.started = now
        #: Whether the folder has been seen, and whether it ever held a dump.
        self.exists = False
        self.had_dumps = False
        #: Every entry name seen (and not seen to vanish).
        self.names: set[str] = set()
        #: Steps not yet released (compared), by number.
        self.steps: dict[int, StepFiles] = {}
        self.released: set[int] = set()
        self.compared: dict[str, int] = {}
        #: The highest step seen, and each new highest with when it was first seen.
        self.newest: int | None = None
        self._maxima: list[int] = []
        self._maxima_at: list[float] = []
        #: Steps not yet passed by a later one (usually just the newest).
        self._unpassed: set[int] = set()
        #: Steps whose files are stat'ed on each poll besides the newest.
        self._active: set[int] = set()
        #: Entries that are not dumps: their stat and when it last changed.
        self.others: dict[str, tuple[FileStat | None, float]] = {}
        self.last_activity = now
        self.new_steps: list[int] = []
        self.problems: list[Problem] = []
        self.trouble: Problem | None = None
        self.scans = 0
        self._dir_key: tuple[int, int, int, int] | None = None
        self._dir_changed_at = now
        self._last_scan = float("-inf")
        self._next_scan = now

    def __repr__(self) -> str:
        return f"RunPoller({self.spec!r}, newest={self.newest}, pending={len(self.steps)})"

    # --- what the coordinator asks

    def has(self, step: int) -> bool:
        return step in self.steps

    def idle(self, now: float) -> bool:
        """Nothing written for ``idle_timeout`` seconds since the first dump
        appeared. A run that holds no dump yet is not idle: it is starting
        (the watch's ``start_timeout`` bounds that wait)."""
        return self.had_dumps and now - self.last_activity >= self.idle_timeout

    def complete_at(self, step: int, now: float) -> float | None:
        """When step ``step`` (which the run holds) became complete; None if not yet."""
        s = self.steps[step]
        if s.behind:
            t = s.last_change + self.settle
        elif s.passed_at is not None:
            return s.passed_at
        else:
            t = self.last_activity + self.settle
        return t if now >= t else None

    def passed(self, step: int) -> float | None:
        """When the run first held a step later than ``step`` + ``lag``; None if
        it does not yet."""
        i = bisect_right(self._maxima, step + self.lag)
        return self._maxima_at[i] if i < len(self._maxima) else None

    def provisional(self, step: int) -> bool:
        """The run may still be writing ``step``: no step later than ``step`` +
        ``lag`` yet (with no lag: ``step`` is the newest)."""
        return self.newest is not None and step + self.lag >= self.newest

    def source(self, step: int) -> RunSource:
        """Step ``step`` of the run as a run source (``sources``)."""
        return self.sources((step,))[step]

    def sources(self, steps: Sequence[int]) -> dict[int, RunSource]:
        """Steps ``steps`` of the run, each as a run source, their files
        stat'ed now (none for a step the run lacks), read as ``compare`` reads
        a run folder (``sources.folder.folder_source``: a recorder's digest
        log gives dtypes, shapes, digests and digests-only buffers); the log
        is read once for them all."""
        names: list[str] = []
        for n in steps:
            s = self.steps.get(n)
            if s is not None:
                s.listed = frozenset(s.files)
                names += s.listed
        wanted = frozenset(steps)
        src = folder_source(self.spec, list_entries(self.root, sorted(names)), wanted)
        if len(wanted) == 1:
            return {n: src for n in wanted}
        return src.split(wanted)

    def root_path(self, name: str) -> str:
        """The path of entry ``name`` of the run folder."""
        return self._prefix + name

    def counterpart_exists(self, step: int, name: str, like: str) -> bool:
        """Whether the run now has buffer ``name`` of step ``step`` (named as
        ``like``, the other run's file, or plainly)."""
        for candidate in (os.path.basename(like), dump_name(step, name)):
            if os.path.lexists(self._prefix + candidate):
                return True
        return False

    def release(self, step: int, read: tuple[BufferRef, ...] = ()) -> None:
        """Step ``step`` is compared and reported: forget its files (not their
        names); ``read``: its files as they were read, remembered by a key."""
        self.steps.pop(step, None)
        self.released.add(step)
        self._unpassed.discard(step)
        self._active.discard(step)
        compared = self.compared
        for f in read:
            compared[os.path.basename(f.path)] = read_key(dump_stat(f))

    def changed_since_read(self) -> list[Problem]:
        """The files of compared steps that are not what was read any more
        (rewritten, replaced, grown or truncated: another size, mtime,
        ctime, inode or device) or cannot be looked at, as problems. A file
        deleted since is not among them (a job may keep only its last
        dumps): what was compared was what it held."""
        out = []
        prefix = self._prefix
        for name, key in self.compared.items():
            path = prefix + name
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                message = (
                    f"cannot be looked at again after it was compared ({exc.strerror}), so "
                    "whether it is still what was compared is unknown; check the file system"
                )
                out.append(Problem(path, message, kind="unreadable"))
                continue
            if read_key((st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)) != key:
                parts = split_name(name)
                step = parts[0] if parts else "?"
                message = (
                    f"changed after step {step} was compared: what was compared is what it "
                    "held before; compare the runs again once they are written "
                    "('fastdiff compare')"
                )
                out.append(Problem(path, message, kind="changed"))
        return sorted(out, key=lambda p: p.path)

    def rescan(self, now: float) -> None:
        """Poll now, listing the folder whatever its timestamps say."""
        self._last_scan = float("-inf")
        self._next_scan = float("-inf")
        self.poll(now)

    def grew(self, step: int) -> list[str]:
        """The files of step ``step`` (paths) that appeared since it was last
        listed to be read (``source``)."""
        s = self.steps.get(step)
        if s is None or s.listed.issuperset(s.files):
            return []
        return [self._prefix + name for name in sorted(s.files.keys() - s.listed)]

    def watch_again(self, step: int) -> None:
        """A re-read of ``step`` is due: stat its files on each poll until
        released, and list the folder at the next poll."""
        s = self.steps.get(step)
        if s is not None:
            s.watched = True
            self._active.add(step)
        self._last_scan = float("-inf")
        self._next_scan = float("-inf")

    def forget_before(self, step: int) -> None:
        """No step below ``step`` will be asked about any more (``passed``)."""
        k = bisect_right(self._maxima, step)
        if k > 256:
            del self._maxima[:k]
            del self._maxima_at[:k]

    # --- polling

    def _fail(self, message: str, kind: str) -> None:
        self.trouble = Problem(self.spec, message, kind=kind)

    def poll(self, now: float) -> None:
        """Look at the folder once: new and vanished names, changed files."""
        if self.trouble is not None:
            return
        try:
            st = os.stat(self.root)
        except FileNotFoundError:
            if self.exists:
                self._fail("run folder vanished while it was watched", "missing")
            return
        except OSError as exc:
            self._fail(f"cannot access run folder: {exc.strerror}", "unreadable")
            return
        except ValueError:  # a NUL in the path
            self._fail("a path cannot contain a NUL character", "name")
            return
        if not S_ISDIR(st.st_mode):
            self._fail("not a folder; give the run folder that holds the dumps", "unreadable")
            return
        if not self.exists:
            self.exists = True
            self.last_activity = now
        key = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
        if key != self._dir_key:
            self._dir_key = key
            self._dir_changed_at = now
        due = now - self._dir_changed_at < GRACE_S or now - self._last_scan >= RESCAN_S
        if due and now >= self._next_scan:
            self._scan(now)
            if self.trouble is not None:
                return
        self._stat_watched(now)

    def _scan(self, now: float) -> None:
        t0 = time.perf_counter()
        try:
            listed = os.listdir(self.root)
        except FileNotFoundError:
            self._fail("run folder vanished while it was watched", "missing")
            return
        except OSError as exc:
            self._fail(f"cannot list run folder: {exc.strerror}; check permissions", "unreadable")
            return
        present = set(listed)
        known = self.names
        new = present - known
        if new or len(present) != len(known):
            self.last_activity = now
            if len(present) - len(new) != len(known):
                self._gone(known - present, now)
            if new:
                self._new(new, now)
        self.scans += 1
        self._last_scan = now
        self._next_scan = now + (time.perf_counter() - t0) / SCAN_SHARE

    def _gone(self, gone: set[str], now: float) -> None:
        known, compared = self.names, self.compared
        for name in gone:
            known.discard(name)
            if self.others.pop(name, None) is not None:
                continue
            if name in compared and not os.path.lexists(self._prefix + name):
                # Deleted after it was compared (a job keeping only its last
                # dumps): forget it. (One a listing merely missed is kept.)
                del compared[name]
                continue
            parts = split_name(name)
            if parts is None or len(parts[0]) > MAX_STEP_DIGITS:
                continue
            step = int(parts[0])
            s = self.steps.get(step)
            if s is not None and name in s.files:
                del s.files[name]
                s.last_change = now
                if not s.files:  # every file of the step vanished: absent again
                    del self.steps[step]
                    self._unpassed.discard(step)
                    self._active.discard(step)

    def _new(self, new: set[str], now: float) -> None:
        known, steps, prefix = self.names, self.steps, self._prefix
        first = self.scans == 0
        newest = self.newest
        top = newest
        for name in new:
            known.add(name)
            parts = split_name(name)
            if parts is None:
                self.others[name] = (file_stat(prefix + name), now)
                continue
            digits = parts[0]
            if len(digits) > MAX_STEP_DIGITS:
                self.problems.append(
                    Problem(
                        prefix + name,
                        f"step number has {len(digits):,} digits, more than fastdiff reads "
                        f"({MAX_STEP_DIGITS}); rename the file",
                        kind="name",
                    )
                )
                continue
            step = int(digits)
            if step in self.released:
                later = "a later step" if not self.lag else f"a step more than {self.lag} later"
                if name in self.compared:
                    continue  # compared: back in a listing that missed it (the end checks it)
                self.problems.append(
                    Problem(
                        prefix + name,
                        f"appeared after step {step} was compared, so it was not compared "
                        f"(a step is compared once {later} appears, or once the run is "
                        "quiet for --settle seconds: raise --lag if the job writes a step "
                        "after beginning the next, --settle if it pauses within a step); "
                        "compare the runs again once they are written ('fastdiff compare')",
                        kind="changed",
                    )
                )
                continue
            s = steps.get(step)
            if s is None:
                behind = not first and newest is not None and step + self.lag < newest
                s = steps[step] = StepFiles(now, behind)
                self.new_steps.append(step)
                if behind:
                    self._active.add(step)
                else:
                    self._unpassed.add(step)
            elif s.passed_at is not None and not s.behind:
                s.behind = True  # a file added after a later step appeared
                self._active.add(step)
            s.files[name] = None
            s.last_change = now
            self.had_dumps = True
            if top is None or step > top:
                top = step
        if top is not None and top != newest:
            # Every step more than lag below the new newest one is passed now.
            for step in [k for k in self._unpassed if k + self.lag < top]:
                self._unpassed.discard(step)
                s = steps.get(step)
                if s is not None and s.passed_at is None:
                    s.passed_at = now
            self.newest = top
            self._maxima.append(top)
            self._maxima_at.append(now)

    def _stat_watched(self, now: float) -> None:
        """Stat the files of the steps not complete yet, and young other entries."""
        prefix = self._prefix
        changed = False
        targets = self._active | self._unpassed  # the newest step(s), and those re-read
        for step in targets:
            s = self.steps.get(step)
            if s is None:
                continue
            files = s.files
            for name, old in files.items():
                st = file_stat(prefix + name)
                if st != old:
                    files[name] = st
                    if old is not None:
                        s.last_change = now
                        changed = True
            if s.behind and not s.watched and now - s.last_change >= self.settle:
                self._active.discard(step)  # settled: complete, no need to look again
        horizon = self.idle_timeout
        for name, (old, since) in self.others.items():
            if now - since >= horizon:
                continue
            st = file_stat(prefix + name)
            if st != old:
                self.others[name] = (st, now)
                changed = True
        if changed:
            self.last_activity = now


class ManifestSide:
    """A run that is final from the start, on one side of a watch: a manifest
    (its files are never opened: they are compared by its digests), or a
    checkpoint file or folder (read as compare reads it).

    Every step it lists is complete when the watch starts; a step it lacks
    is absent for good (as if the run had moved past it).
    """

    final = True
    is_manifest = True

    def __init__(self, src: RunSource, now: float) -> None:
        self.src = src
        self.spec = src.spec
        self.root = src.listing.root
        self.started = now
        self.trouble: Problem | None = None
        by_step: dict[int, list[BufferRef]] = {}
        for f in src.listing.files:
            by_step.setdefault(f.step, []).append(f)
        self._by_step = by_step
        self._broken: dict[int, list[tuple[tuple[int, str], Problem]]] = {}
        for item in src.listing.broken:
            self._broken.setdefault(item[0][0], []).append(item)
        #: Steps whose buffers are unknown (a checkpoint's shard refused).
        self._lost = dict(src.listing.lost)
        #: Steps it holds: of buffers, and of buffers named but unreadable or unknown.
        held = by_step.keys() | self._broken.keys() | self._lost.keys()
        self.newest = max(held, default=None)
        self.had_dumps = bool(held)
        self.exists = True
        self.new_steps: list[int] = sorted(held)
        #: The listing's errors, reported once (a manifest's are about the run).
        self.problems: list[Problem] = list(src.listing.errors)
        self.last_activity = now

    def __repr__(self) -> str:
        return f"ManifestSide({self.spec!r}, steps={len(self._by_step)})"

    def has(self, step: int) -> bool:
        return step in self._by_step or step in self._broken or step in self._lost

    def idle(self, now: float) -> bool:
        return True

    def complete_at(self, step: int, now: float) -> float | None:
        return self.started

    def passed(self, step: int) -> float | None:
        return self.started

    def provisional(self, step: int) -> bool:
        return False  # final: nothing of it is provisional

    def sources(self, steps: Sequence[int]) -> dict[int, RunSource]:
        return {n: self.source(n) for n in steps}

    def source(self, step: int) -> RunSource:
        src = self.src
        listing = RunListing(
            self.root,
            tuple(self._by_step.get(step, ())),
            (),
            (),
            True,
            tuple(self._broken.get(step, ())),
            ((step, self._lost[step]),) if step in self._lost else (),
        )
        return RunSource(
            src.spec, listing, src.chunk_size, src.schema, src.dtypes, kind=src.kind
        )  # fmt: skip

    def counterpart_exists(self, step: int, name: str, like: str) -> bool:
        return False  # a manifest does not change

    def release(self, step: int, read: tuple[BufferRef, ...] = ()) -> None:
        self._by_step.pop(step, None)
        self._broken.pop(step, None)
        self._lost.pop(step, None)

    def grew(self, step: int) -> list[str]:
        return []

    def watch_again(self, step: int) -> None:
        pass

    def forget_before(self, step: int) -> None:
        pass

    def poll(self, now: float) -> None:
        pass

    def rescan(self, now: float) -> None:
        pass

    def changed_since_read(self) -> list[Problem]:
        return []  # its files are never read: their digests are what was compared
