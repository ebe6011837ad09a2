"""What many test files need: the command line in a subprocess, and two runs from bytes.

Imported as ``helpers`` (pytest puts this folder on ``sys.path``, as for ``naive``).
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def f32(*values: float) -> bytes:
    """Little-endian float32 bytes of ``values`` (a dump's contents)."""
    return struct.pack(f"<{len(values)}f", *values)


def fastdiff(
    *args: str | os.PathLike[str],
    env: dict[str, str] | None = None,
    cwd: str | os.PathLike[str] = REPO,
    timeout: float = 300,
    text: bool = True,
    **run: Any,
) -> subprocess.CompletedProcess[Any]:
    """``python -m fastdiff ARGS`` run to its end, its output captured; ``env``
    is added to this process's environment; ``timeout`` only catches a hang;
    ``run``: more arguments of ``subprocess.run`` (``umask``, ``input``)."""
    return subprocess.run(
        [sys.executable, "-m", "fastdiff", *map(os.fspath, args)],
        capture_output=True,
        text=text,
        cwd=cwd,
        env=None if env is None else {**os.environ, **env},
        timeout=timeout,
        check=False,
        **run,
    )


def write_runs(
    root: Path, files: dict[str, tuple[bytes | None, bytes | None]]
) -> tuple[Path, Path]:
    """Runs ``root/a`` and ``root/b``: each file name with its bytes in A and
    in B (None: not in that run)."""
    a, b = root / "a", root / "b"
    a.mkdir()
    b.mkdir()
    for name, (da, db) in files.items():
        if da is not None:
            (a / name).write_bytes(da)
        if db is not None:
            (b / name).write_bytes(db)
    return a, b
