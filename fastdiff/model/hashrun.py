"""What ``hash`` produces: a run's manifest, or the problems that kept it
from being written (``fastdiff.hashrun`` makes it)."""

from __future__ import annotations

from .exits import EXIT_IDENTICAL, EXIT_TROUBLE
from .value import Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .results import Problem

__all__ = ["ManifestResult"]


class ManifestResult(Value):
    """``text``: the manifest (``""``: none was written, a file could not be
    hashed); ``problems``: the files that could not be hashed (then no
    manifest), or, with a manifest, the malformed files it records (its key
    ``malformed``); ``output``: the file it was written to (None: not
    written to a file)."""

    __slots__ = ("output", "problems", "text")

    def __init__(
        self, text: str, problems: tuple[Problem, ...] = (), output: str | None = None
    ) -> None:
        self.text = text
        self.problems = problems
        self.output = output

    @property
    def written(self) -> bool:
        """Whether a manifest was made (every file was hashed)."""
        return bool(self.text)

    @property
    def exit_code(self) -> int:
        """0 for a manifest without malformed files, else 2 (as compare and
        stats give a malformed file)."""
        return EXIT_TROUBLE if self.problems or not self.text else EXIT_IDENTICAL
