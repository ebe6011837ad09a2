"""Small formatting helpers every text renderer shares: counts with their
noun, byte sizes, lists of step numbers."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 error', '2 errors', '1,234 entries'."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def first_few(items: Sequence[str], n: int = 3, sep: str = ", ") -> str:
    """The first ``n`` items joined, and how many more: ``a, b, c and 2 more``
    (with ``sep="; "``: ``a; b; c; and 2 more``)."""
    more = len(items) - n
    if more <= 0:
        return sep.join(items)
    return sep.join(items[:n]) + ("" if sep == ", " else sep.rstrip()) + f" and {more} more"


def format_bytes(n: float) -> str:
    """Binary units: ``64 B``, ``2.9 KiB``, ``1.0 GiB``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def step_ranges(steps: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted step numbers as runs of consecutive numbers: [(first, last), ...]."""
    runs: list[tuple[int, int]] = []
    for s in sorted(steps):
        if runs and s == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], s)
        else:
            runs.append((s, s))
    return runs


def format_steps(steps: Iterable[int]) -> str:
    """``0-7, 12``: step numbers as ranges."""
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in step_ranges(steps))
