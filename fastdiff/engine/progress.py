"""Progress on stderr: files hashed, bytes, pairs done, ETA. Only for a terminal."""

from __future__ import annotations

import sys
import time

from ..textkit.fmt import format_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO


class StatusLine:
    """One free-form status line (``fastdiff bench``), redrawn in place, erased at the end."""

    __slots__ = ("_shown", "stream")

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self._shown = False

    def show(self, text: str) -> None:
        self.stream.write("\r\x1b[K" + text)
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False


class Progress:
    """Sweep progress on one status line, redrawn at most ten times a second."""

    __slots__ = (
        "_last",
        "_t0",
        "bytes",
        "files",
        "interval",
        "pairs",
        "status",
        "total_bytes",
        "total_files",
        "total_pairs",
    )

    def __init__(self, stream: TextIO | None = None, interval: float = 0.1) -> None:
        self.status = StatusLine(stream)
        self.interval = interval
        self.files = self.total_files = 0
        self.bytes = self.total_bytes = 0
        self.pairs = self.total_pairs = 0
        self._t0 = time.perf_counter()
        self._last = 0.0

    def start(self, files: int, total_bytes: int, pairs: int) -> None:
        self.total_files, self.total_bytes, self.total_pairs = files, total_bytes, pairs
        self._t0 = time.perf_counter()
        self._draw(force=True)

    def files_done(self, n: int, n_bytes: int) -> None:
        self.files += n
        self.bytes += n_bytes
        self._draw()

    def pair_done(self) -> None:
        self.pairs += 1
        self._draw()

    def line(self) -> str:
        elapsed = time.perf_counter() - self._t0
        eta = ""
        if self.bytes and self.total_bytes > self.bytes and elapsed > 0:
            eta = f", ETA {(self.total_bytes - self.bytes) * elapsed / self.bytes:.0f} s"
        return (
            f"hashed {self.files}/{self.total_files} files, {format_bytes(self.bytes)} of "
            f"{format_bytes(self.total_bytes)}; pairs {self.pairs}/{self.total_pairs}{eta}"
        )

    def _draw(self, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        self.status.show(self.line())

    def close(self) -> None:
        self.status.close()
