"""The harness of the scripts in benchmarks/: whole commands timed side by side.

Each command runs as a fresh subprocess with its output discarded. After the
warm-up runs, repetitions are interleaved: round ``r`` runs every command
once, so slow patches of machine noise hit all commands alike (the starting
command rotates from round to round, so none is always first;
``fastdiff.bench.timing.interleaved``).

Every run's exit code is checked against the codes the caller accepts (a
comparison tool exits 1 on a difference, which may be the expected answer).
A run that exits otherwise raises :class:`CommandFailed`, whose message
names the command, the code and the end of its stderr. An exit code can
mislead (Python exits 1 on an uncaught exception, the code a comparison
tool uses for "different"): :func:`run_captured` runs a command once with
its output kept, for the caller to check before timing. :func:`peak_rss`
runs a command once for its peak memory.

In-process timing (``time_calls``, ``autorange``), ``median`` and the floors
of reading runs (``read_once``, ``aligned_buffer``, ``hash_once``) are
``fastdiff.bench.timing``'s, which ``fastdiff bench`` uses too; this module
hands them on, so a script imports one harness. Page cache: this kind of VM
evicts files left idle for about a minute, so call :func:`read_once` on a
workload's inputs right before timing it.

Which interpreter runs the commands timed (a venv with a ``pip install .``,
or the checkout on PYTHONPATH) is ``venvs.py``'s.

Synthetic dumps only benchmarks need, beside ``fastdiff.bench.synth``'s:
:func:`write_sparse_pair` (a pair of any size that costs no disk),
:func:`flip_spread` (differences spread over a range), :func:`folder_bytes`
and :func:`rl_run_bytes`.

A script imports it as ``import harness`` (run as ``python
benchmarks/X.py``, the script's folder is first on ``sys.path``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import NamedTuple

from fastdiff.bench.synth import (
    DEFAULT_BLOCK_BYTES,
    ITEMSIZE,
    RL_STATE_MEMBERS,
    dump_name,
    rl_elements,
)
from fastdiff.bench.timing import (
    aligned_buffer,
    autorange,
    hash_once,
    interleaved,
    median,
    read_once,
    time_calls,
)

__all__ = [
    "Command",
    "CommandFailed",
    "OkCodes",
    "RunStats",
    "aligned_buffer",
    "autorange",
    "command_benchmark_parser",
    "flip_spread",
    "folder_bytes",
    "hash_once",
    "median",
    "parse_benchmark_args",
    "peak_rss",
    "read_once",
    "rl_run_bytes",
    "run_captured",
    "run_once",
    "tail",
    "time_calls",
    "time_commands",
    "warn_if_busy",
    "write_sparse_pair",
]

#: A command: an argument list (no shell), or a string run by ``/bin/sh``
#: (for redirections and globs, such as ``cat A/* B/* > /dev/null``).
Command = list[str] | str

#: Exit codes accepted for one command, or per command name.
OkCodes = Collection[int] | Mapping[str, Collection[int]]

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
    return interleaved(
        list(commands),
        lambda name: run_once(name, commands[name], _accepted(ok_codes, name), timeout),
        repeat,
        warmup,
    )


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


# --- synthetic dumps only benchmarks write -------------------------------------


def rl_run_bytes(batch: int = 4096, steps: int = 4) -> int:
    """Bytes in one run folder written by ``fastdiff.bench.synth.write_rl_run``."""
    per_step = sum(rl_elements(n, batch) * ITEMSIZE[d] for n, d in RL_STATE_MEMBERS)
    return per_step * steps


def folder_bytes(folder: str | os.PathLike[str]) -> int:
    """Total size of the ``step_*_*.bin`` files directly in ``folder``."""
    return sum(p.stat().st_size for p in Path(folder).glob("step_*_*.bin") if p.is_file())


def write_sparse_pair(
    folder_a: str | os.PathLike[str],
    folder_b: str | os.PathLike[str],
    name: str,
    n_bytes: int,
    step: int = 0,
) -> tuple[Path, Path]:
    """Write ``step_<step>_<name>.bin`` of ``n_bytes`` zero bytes into both
    folders as sparse files (one hole, no data blocks): an identical pair of
    any size that costs no disk space, though reading it still fills the page
    cache. Returns the paths of the A and B files.
    """
    if n_bytes < 0:
        raise ValueError(f"n_bytes={n_bytes} must be >= 0")
    paths = []
    for folder in (folder_a, folder_b):
        path = Path(folder) / dump_name(step, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            f.truncate(n_bytes)
        paths.append(path)
    return paths[0], paths[1]


def flip_spread(
    path: str | os.PathLike[str],
    dtype: str,
    start: int,
    end: int,
    density: float,
    block_bytes: int = DEFAULT_BLOCK_BYTES,
) -> int:
    """Flip the lowest bit of a share ``density`` of the elements in bytes
    [start, end) of an existing file, evenly spaced; return how many.

    At least one element is flipped; ``density=1`` flips every element in
    the range. The file is changed in place, a block at a time, so memory
    stays bounded whatever the range.
    """
    import numpy as np

    itemsize = ITEMSIZE[dtype]
    if not 0 < density <= 1:
        raise ValueError(f"density must be in (0, 1], got {density}")
    size = os.path.getsize(path)
    first, last = -(-start // itemsize), end // itemsize  # whole elements in the range
    if not 0 <= start < end <= size or first >= last:
        raise ValueError(f"bytes {start}..{end} hold no whole element of a {size}-byte file")
    n = last - first
    k = max(1, int(n * density))
    per_block = max(1, block_bytes // itemsize)
    with open(path, "r+b") as f:
        fd = f.fileno()
        for e0 in range(first, last, per_block):
            e1 = min(e0 + per_block, last)
            # flipped elements are first + (j * n) // k for j in 0..k-1; those in [e0, e1):
            j0, j1 = -(-(e0 - first) * k // n), -(-(e1 - first) * k // n)
            if j0 == j1:
                continue
            index = first + np.arange(j0, j1, dtype=np.int64) * n // k
            data = bytearray(os.pread(fd, (e1 - e0) * itemsize, e0 * itemsize))
            np.frombuffer(data, dtype=np.uint8)[(index - e0) * itemsize] ^= 1
            os.pwrite(fd, data, e0 * itemsize)
    return k
