"""The kernels' engine names (``--engine``).

The facts a scan reports are the result model's (``fastdiff.model.facts``),
the tolerance too (``fastdiff.model.tolerance``).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    Engine = Literal["numba", "numpy", "python"]
else:
    Engine = str

ENGINES: tuple[Engine, ...] = ("numba", "numpy", "python")
