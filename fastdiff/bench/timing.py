"""Wall-clock timing of whole commands, run side by side.

Each command runs as a fresh subprocess with its output discarded. After the
warm-up runs, repetitions are interleaved: round ``r`` runs every command
once, so slow patches of machine noise hit all commands alike (the starting
command rotates from round to round, so none is always first).

Every run's exit code is checked against the codes the caller accepts (a
comparison tool exits 1 on a difference, which may be the expected answer).
A run that exits otherwise raises :class:`CommandFailed`, whose message
names the command, the code and the end of its stderr. An exit code can
mislead (Python exits 1 on an uncaught exception, the code a comparison
tool uses for "different"): :func:`run_captured` runs a command once with
its output kept, for the caller to check before timing.

:func:`time_calls` does the same for in-process calls (a library function
timed without a process start): median-ready samples after warm-up calls,
interleaved across the calls compared. A call too quick for the clock is
timed in loops of back-to-back calls (:func:`autorange`), each sample being
the loop's time over its length.

Page cache: this kind of VM evicts files left idle for about a minute, so
call :func:`read_once` on a workload's inputs right before timing it.
:func:`read_once` (readinto) and :func:`hash_once` (xxh3 over mmap) are
also the floors a comparison is measured against. :func:`peak_rss` runs a
command once for its peak memory.

Which interpreter: users run fastdiff from ``pip install .``, so
:func:`prepare_venv` installs the working tree into a venv kept outside the
checkout and returns its interpreter; :func:`prepare_cli` is the quicker
alternative that puts the tree on PYTHONPATH (not the user's start-up).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import mmap
import os
import shlex
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

#: A command: an argument list (no shell), or a string run by ``/bin/sh``
#: (for redirections and globs, such as ``cat A/* B/* > /dev/null``).
Command = list[str] | str

#: Exit codes accepted for one command, or per command name.
OkCodes = Collection[int] | Mapping[str, Collection[int]]

_READ_CHUNK = 1 << 20

#: ru_maxrss is in KiB on Linux, in bytes on macOS.
_MAXRSS_UNIT = 1 if sys.platform == "darwin" else 1024


class CommandFailed(RuntimeError):
    """A command exited with a code the caller did not accept, timed out, or did not start."""

    def __init__(
        self,
        name: str,
        command: Command,
        returncode: int | None,
        detail: str,
        status: str = "",
    ) -> None:
        self.name = name
        self.command = command
        self.returncode = returncode  # None: it timed out or did not start
        self.detail = detail
        self.status = status or f"exited {returncode}"
        shown = command if isinstance(command, str) else shlex.join(command)
        message = f"{name}: {self.status}: {shown}"
        if detail:
            message += f"\n{detail}"
        super().__init__(message)


def median(values: Iterable[float]) -> float:
    """Median of the timings (ValueError when there are none)."""
    return statistics.median(values)


def _accepted(ok_codes: OkCodes, name: str) -> Collection[int]:
    if isinstance(ok_codes, Mapping):
        return ok_codes.get(name, (0,))
    return ok_codes


def tail(output: bytes, lines: int = 5) -> str:
    """The last lines of a command's output, indented, for an error message."""
    text = output.decode(errors="replace").strip().splitlines()
    return "\n".join("  " + line for line in text[-lines:])


def _stderr_tail(command: Command, timeout: float | None) -> str:
    """Run the command again to show why it failed (the timed runs discard stderr)."""
    try:
        proc = subprocess.run(
            command,
            shell=isinstance(command, str),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"  {exc}"
    return tail(proc.stderr)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the command and whatever it started (its process group)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def run_once(
    name: str,
    command: Command,
    ok_codes: Collection[int] = (0,),
    timeout: float | None = None,
) -> float:
    """Run a command once; return its wall time in seconds.

    Raises :class:`CommandFailed` when it exits with a code outside
    ``ok_codes``, cannot start, or outlives ``timeout``.

    The wait is a blocking one, with the timeout enforced by a timer thread:
    ``subprocess.run(timeout=...)`` polls with sleeps of up to 50 ms, which
    would round every measurement up to that grain.
    """
    timed_out = threading.Event()
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(
            command,
            shell=isinstance(command, str),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own process group, so a kill reaches a shell's children
        )
    except OSError as exc:
        raise CommandFailed(
            name, command, None, f"  could not start: {exc}", "did not start"
        ) from None

    def kill() -> None:
        timed_out.set()
        _kill_group(proc)

    timer = threading.Timer(timeout, kill) if timeout is not None else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        returncode = proc.wait()
    except BaseException:  # Ctrl-C: do not leave the command running
        _kill_group(proc)
        proc.wait()
        raise
    finally:
        if timer is not None:
            timer.cancel()
    elapsed = time.perf_counter() - start
    if timed_out.is_set():
        raise CommandFailed(name, command, None, f"  no result after {timeout} s", "timed out")
    if returncode not in ok_codes:
        detail = _stderr_tail(command, timeout)
        raise CommandFailed(name, command, returncode, detail)
    return elapsed


def run_captured(
    name: str,
    command: Command,
    ok_codes: Collection[int] = (0,),
    timeout: float | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run a command once with its stdout and stderr captured (not timed).

    For a check run before timing: the caller can verify what the command
    printed, since an exit code alone can mislead (Python exits 1 on an
    uncaught exception, which a comparison tool also uses for "different").
    Raises :class:`CommandFailed` like :func:`run_once`.
    """
    try:
        proc = subprocess.run(
            command,
            shell=isinstance(command, str),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CommandFailed(
            name, command, None, f"  no result after {timeout} s", "timed out"
        ) from None
    except OSError as exc:
        raise CommandFailed(
            name, command, None, f"  could not start: {exc}", "did not start"
        ) from None
    if proc.returncode not in ok_codes:
        raise CommandFailed(name, command, proc.returncode, tail(proc.stderr))
    return proc


class RunStats(NamedTuple):
    """One run of a command: its wall time, and its peak resident memory in
    bytes (``ru_maxrss``; for a shell string, the largest of the shell and
    the commands it waited for)."""

    seconds: float
    max_rss: int


#: Runs a command from a small process and writes the command's ru_maxrss (in
#: the unit of the platform) to the file named first. A child's ru_maxrss
#: starts at its parent's resident size when it was forked (the copy of the
#: parent's memory counts until exec), so forking from the benchmark itself,
#: with numpy loaded, would hide everything below ~50 MiB.
_SMALL_PARENT = """\
import os, sys
report, kind, *cmd = sys.argv[1:]
if kind == "sh":
    cmd = ["/bin/sh", "-c", *cmd]
pid = os.fork()
if pid == 0:
    try:
        os.execvp(cmd[0], cmd)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(report, "w") as f:
    f.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
os._exit(code if code >= 0 else 128 - code)
"""


def peak_rss(
    name: str,
    command: Command,
    ok_codes: Collection[int] = (0,),
    timeout: float | None = None,
) -> RunStats:
    """Run a command once; return its wall time and its peak resident memory.

    The command is started by a small Python process (``python -S -E``,
    about 8 MiB resident, no site hooks) that forks it, waits for it with
    ``wait4`` and reports its ``ru_maxrss``: the figure cannot be lower than
    that starter's size at the fork, but a Python tool's own is higher. The
    wall time includes the starter's start (about 10 ms). Raises
    :class:`CommandFailed` like :func:`run_once`.
    """
    import tempfile

    kind, argv = ("sh", [command]) if isinstance(command, str) else ("argv", command)
    with tempfile.NamedTemporaryFile("r", prefix="fastdiff-rss-", suffix=".txt") as report:
        starter = [sys.executable, "-S", "-E", "-c", _SMALL_PARENT, report.name, kind, *argv]
        try:
            seconds = run_once(name, starter, ok_codes, timeout)
        except CommandFailed as exc:  # name the command, not the starter
            raise CommandFailed(name, command, exc.returncode, exc.detail, exc.status) from None
        max_rss = int(report.read() or 0)
    return RunStats(seconds, max_rss * _MAXRSS_UNIT)


def time_commands(
    commands: Mapping[str, Command],
    repeat: int = 5,
    warmup: int = 1,
    ok_codes: OkCodes = (0,),
    timeout: float | None = None,
) -> dict[str, list[float]]:
    """Time each command ``repeat`` times, interleaved; return wall times in seconds.

    ``warmup`` untimed runs of every command come first. ``ok_codes`` is a
    collection of accepted exit codes for all commands, or a mapping from
    command name to its accepted codes (names missing from it accept 0).
    Raises :class:`CommandFailed` on the first run that exits otherwise.
    """
    return _interleaved(
        list(commands),
        lambda name: run_once(name, commands[name], _accepted(ok_codes, name), timeout),
        repeat,
        warmup,
    )


def _interleaved(
    names: list[str], run: Callable[[str], float], repeat: int, warmup: int
) -> dict[str, list[float]]:
    """``warmup`` untimed rounds, then ``repeat`` timed rounds; each round runs
    every name once, starting one name later than the round before."""
    if repeat < 1 or warmup < 0:
        raise ValueError(f"repeat must be >= 1 and warmup >= 0, got {repeat}, {warmup}")
    for _ in range(warmup):
        for name in names:
            run(name)
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(repeat):
        shift = round_index % len(names) if names else 0
        for name in names[shift:] + names[:shift]:
            times[name].append(run(name))
    return times


def time_loop(fn: Callable[[], object], loops: int = 1) -> float:
    """Seconds per call of ``fn``, over ``loops`` back-to-back calls."""
    start = time.perf_counter()
    for _ in range(loops):
        fn()
    return (time.perf_counter() - start) / loops


def autorange(fn: Callable[[], object], min_time: float = 0.01, max_loops: int = 10_000) -> int:
    """How many back-to-back calls of ``fn`` make a sample of ``min_time`` seconds.

    Grows the loop from 1 call by what the last try took; every try is a
    warm-up call too. A call that alone takes ``min_time`` gives 1.
    """
    loops = 1
    while True:
        per_call = time_loop(fn, loops)
        if per_call * loops >= min_time or loops >= max_loops:
            return loops
        want = math.ceil(1.2 * min_time / per_call) if per_call > 0 else 2 * loops
        loops = min(max_loops, max(2 * loops, want))


def time_calls(
    calls: Mapping[str, Callable[[], object]],
    repeat: int = 5,
    warmup: int = 1,
    loops: int | Mapping[str, int] = 1,
) -> dict[str, list[float]]:
    """Time in-process calls ``repeat`` times each, interleaved; return seconds per call.

    Like :func:`time_commands`: ``warmup`` untimed rounds first, then rounds
    that call every function once, rotating which goes first. A sample is
    ``loops`` back-to-back calls (an int for all, or per name, missing
    names 1; see :func:`autorange`) divided by ``loops``. Exceptions
    propagate: check a call's result before timing it.
    """

    def run(name: str) -> float:
        n = loops if isinstance(loops, int) else loops.get(name, 1)
        return time_loop(calls[name], n)

    if isinstance(loops, int) and loops < 1:
        raise ValueError(f"loops must be >= 1, got {loops}")
    return _interleaved(list(calls), run, repeat, warmup)


def _files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files.extend(sorted(c for c in p.iterdir() if c.is_file()))
        else:
            files.append(p)
    return files


def read_once(paths: Iterable[str | os.PathLike[str]], buffer: memoryview | None = None) -> int:
    """Read files in full once so they sit in the page cache; return bytes read.

    A directory stands for the regular files directly in it. Reads go into
    one page-aligned buffer (an unaligned one reads several times slower on
    this machine): ``buffer`` if given (see :func:`aligned_buffer`; reuse one
    when timing this as the floor of reading the files), else a fresh one.
    """
    if buffer is not None:
        return _read_into(_files(paths), buffer)
    with mmap.mmap(-1, _READ_CHUNK) as buf, memoryview(buf) as view:
        return _read_into(_files(paths), view)


def aligned_buffer(size: int = _READ_CHUNK) -> memoryview:
    """A page-aligned buffer of ``size`` bytes (private anonymous memory), pages touched."""
    buf = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    view = memoryview(buf)
    view[:] = bytes(size)  # fault the pages in now, not in the first timed read
    return view


def _read_into(files: list[Path], view: memoryview) -> int:
    total = 0
    for path in files:
        with open(path, "rb", buffering=0) as f:
            while n := f.readinto(view):
                total += n
    return total


def hash_once(paths: Iterable[str | os.PathLike[str]], threads: int = 1) -> int:
    """Hash files in full with xxh3_64 over a read-only memory map; return bytes hashed.

    The other floor of comparing runs, next to :func:`read_once`: no copy
    into a buffer, the hash reads the mapped page cache directly. With
    ``threads`` > 1 the files are dealt out in turn to that many threads
    (xxhash releases the GIL), so a pair of files is hashed side by side.
    A directory stands for the regular files directly in it.
    """
    import xxhash

    files = _files(paths)
    totals = [0] * max(1, min(threads, len(files)))

    def work(share: int) -> None:
        for path in files[share :: len(totals)]:
            with open(path, "rb", buffering=0) as f:
                size = os.fstat(f.fileno()).st_size
                if size:  # an empty file cannot be mapped
                    with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                        xxhash.xxh3_64_intdigest(m)
                totals[share] += size

    if len(totals) == 1:
        work(0)
        return totals[0]
    errors: list[BaseException] = []

    def guarded(share: int) -> None:
        try:
            work(share)
        except BaseException as exc:  # re-raised in the calling thread
            errors.append(exc)

    workers = [threading.Thread(target=guarded, args=(i,)) for i in range(len(totals))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise errors[0]
    return sum(totals)


def prepare_cli(repo: str | os.PathLike[str], python: str = sys.executable) -> float:
    """Make ``python -m fastdiff`` in child processes run this working tree as
    an installed package would, and return a bare interpreter start (median s).

    PYTHONPATH gets the tree; its bytecode is compiled once by ``python``, as
    pip does at install time (with PYTHONDONTWRITEBYTECODE=1 every start
    would otherwise recompile every module). The start-up figure, of
    ``python -c pass``, is the floor of every Python tool timed as a command
    on this machine. For what users run, see :func:`prepare_venv`.
    """
    root = os.fspath(repo)
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = root + (os.pathsep + path if path else "")
    subprocess.run(
        [python, "-m", "compileall", "-q", os.path.join(root, "fastdiff")],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        check=False,
    )
    return bare_start(python)


def bare_start(python: str, repeat: int = 11) -> float:
    """Median wall time of ``python -c pass``: what every Python tool pays to start."""
    return median(time_commands({"python": [python, "-c", "pass"]}, repeat=repeat)["python"])


#: What the copy of a checkout that pip installs leaves out: at its top, the
#: VCS, build leftovers and what is not packaged; at any depth, caches.
_NOT_SOURCE = (".git", "build", "dist", "tests", "benchmarks", "examples")
_NOT_SOURCE_ANYWHERE = ("__pycache__", "*.egg-info", ".*_cache", ".hypothesis", ".venv")
_VENV_READY = ".fastdiff-bench-ready"


def bench_cache_dir() -> Path:
    """Where benchmark venvs live: ``$XDG_CACHE_HOME/fastdiff-bench``, else
    ``~/.cache/fastdiff-bench`` (outside any checkout)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fastdiff-bench"


def venv_folder(
    repo: str | os.PathLike[str], cache_dir: str | os.PathLike[str] | None = None
) -> tuple[Path, list[str]]:
    """The venv for this interpreter and the requirements of ``pyproject.toml``,
    and those requirements: ``venv-py311-<hash>`` under ``cache_dir`` (default
    :func:`bench_cache_dir`), the hash of the interpreter's version and path
    and of the requirements, so a change of either makes a new venv."""
    import hashlib
    import json
    import tomllib

    with open(Path(repo) / "pyproject.toml", "rb") as fh:
        requirements = sorted(tomllib.load(fh)["project"].get("dependencies", []))
    key_doc = [sys.version, os.path.realpath(sys.executable), requirements]
    key = hashlib.sha256(json.dumps(key_doc).encode()).hexdigest()[:12]
    name = f"venv-py{sys.version_info.major}{sys.version_info.minor}-{key}"
    return Path(cache_dir or bench_cache_dir()) / name, requirements


def copy_source(repo: str | os.PathLike[str], dest: str | os.PathLike[str]) -> None:
    """Copy a checkout to ``dest`` (which must not exist) for pip to build from,
    without the VCS, build leftovers, tests, benchmarks and caches."""
    import shutil

    root = Path(repo)

    def skip(folder: str, names: list[str]) -> set[str]:
        top = _NOT_SOURCE if Path(folder) == root else ()
        ignored = shutil.ignore_patterns(*_NOT_SOURCE_ANYWHERE)(folder, names)
        return ignored | {n for n in names if n in top}

    shutil.copytree(root, dest, ignore=skip)


def _pip(python: Path, *args: str) -> None:
    """Run pip in a venv; a failure raises RuntimeError with the end of its output."""
    proc = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )
    if proc.returncode:
        raise RuntimeError(
            f"pip install {shlex.join(args)} failed (exit {proc.returncode}):\n"
            + (tail(proc.stderr, 8) or tail(proc.stdout, 8))
        )


def prepare_venv(
    repo: str | os.PathLike[str],
    cache_dir: str | os.PathLike[str] | None = None,
    say: Callable[[str], None] | None = None,
) -> Path:
    """Install this working tree into a venv as users do; return its interpreter.

    The venv (:func:`venv_folder`) is made from the running interpreter with
    the dependencies of ``pyproject.toml``, once: it is reused until the
    interpreter or the requirements change. The working tree is installed
    into it on every call, NOT editable: ``pip install --no-deps
    --force-reinstall`` of a copy (:func:`copy_source`; building in the tree
    itself would leave a ``build/`` folder whose stale files later builds
    pick up). pip compiles the bytecode at install time, as in a user's
    install.

    Child processes must not find the checkout first: PYTHONPATH is removed
    from this process's environment (the reverse of :func:`prepare_cli`).
    Raises RuntimeError when the venv cannot be made or pip fails.
    """
    import shutil
    import tempfile

    note = say or (lambda _msg: None)
    folder, requirements = venv_folder(repo, cache_dir)
    python = folder / "bin" / "python"
    ready = folder / _VENV_READY
    if not ready.is_file():  # absent, or left half-built by an interrupted run
        note(f"building a venv in {folder} (once per interpreter and requirements) ...")
        shutil.rmtree(folder, ignore_errors=True)
        made = subprocess.run(
            [sys.executable, "-m", "venv", str(folder)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
        if made.returncode:
            raise RuntimeError(f"python -m venv {folder} failed:\n{tail(made.stderr)}")
        if requirements:
            _pip(python, *requirements)
        ready.write_text("\n".join(requirements) + "\n")
    note(f"installing {repo} into {folder} (pip install ., not editable) ...")
    with tempfile.TemporaryDirectory(prefix="fastdiff-src-") as tmp:
        source = Path(tmp) / "src"
        copy_source(repo, source)
        _pip(python, "--no-deps", "--force-reinstall", str(source))
    os.environ.pop("PYTHONPATH", None)
    return python


def warn_if_busy(limit: float = 0.5) -> float:
    """The load average; a note on stderr when it is above ``limit`` (other work running)."""
    load = os.getloadavg()[0]
    if load > limit:
        print(
            f"warning: load average {load:.2f}: other work is running, timings will be noisy",
            file=sys.stderr,
        )
    return load


def command_benchmark_parser(description: str, quick: str, what: str) -> argparse.ArgumentParser:
    """The options every command benchmark in benchmarks/ takes: ``--quick``
    (``quick`` says what it does), ``--repeat``, ``--warmup``, ``--workdir``,
    ``--keep`` (of the generated ``what``), ``--fastdiff-args``, ``--timeout``."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help=quick)
    p.add_argument("--repeat", type=int, default=5, help="timed runs per tool (default 5)")
    p.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="untimed runs per tool (default 1; the first, which checks the output, always runs)",
    )
    p.add_argument("--workdir", type=Path, help=f"where to create the temporary {what} folder")
    p.add_argument("--keep", action="store_true", help=f"keep the generated {what}")
    p.add_argument(
        "--fastdiff-args",
        default=os.environ.get("FASTDIFF_BENCH_ARGS", ""),
        help="extra arguments for fastdiff (default: $FASTDIFF_BENCH_ARGS)",
    )
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per run (default 600)")
    return p


def parse_benchmark_args(p: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    args = p.parse_args(argv)
    if args.repeat < 1 or args.warmup < 0:
        p.error("--repeat must be >= 1 and --warmup >= 0")
    return args
