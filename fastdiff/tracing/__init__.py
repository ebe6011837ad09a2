"""``fastdiff.trace``: record a PyTorch program's modules or ops, and their
dataflow, as a run that ``fastdiff compare`` reads with no schema::

    import fastdiff
    with fastdiff.trace("runs/a", model=model, level="op") as t:
        for step in range(steps):
            t.step(step)
            loss = model(x); loss.backward(); opt.step()

``level="module"`` records every submodule's output (and, where hooks
allow, the gradient with respect to it, and every parameter's gradient);
``level="op"`` every aten op dispatched in the block, under the module path
it ran in. Both record the parameters, buffers and optimizer state as each
step begins. Each record is a buffer of the run, named stably between runs
(``tracenames``), its digests recorded (and, at the steps ``data`` asks for, the
tensor in full), and its inputs, the records that made the tensors it read,
written beside the run as a schema file (``dataflow``) that ``compare``
reads to tell where a divergence was born (``sources.schemas``), and the
order of the records, which tells where two traces part
(``stages.structure``).

torch is an optional dependency: this package imports it only when
``trace`` is called (``torchtrace``).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import os
    from collections.abc import Iterable
    from typing import Any

    from ..recorder import DataSteps
    from .torchtrace import Trace

__all__ = ["TORCH_MISSING", "trace"]

#: What ``trace`` says when torch cannot be imported.
TORCH_MISSING = (
    "fastdiff.trace needs PyTorch, which is not installed here: pip install torch "
    "(see https://pytorch.org/get-started/locally/ for a build for your GPU); the rest of "
    "fastdiff works without it"
)


def trace(
    path: str | os.PathLike[str] | None = None,
    *,
    model: Any,
    level: str = "module",
    optimizer: Any | Iterable[Any] | None = None,
    data: DataSteps = False,
    rank: int | None = None,
    views: bool = False,
    chunk_size: int | None = None,
) -> Trace:
    """A tracer of ``model`` writing run folder ``path`` (default
    ``$FASTDIFF_RUN``, as ``Recorder``'s; under ``rank_<R>/`` for a rank a
    launcher gives, or ``rank``); use it as a context manager, calling
    ``t.step(N)`` as each step begins. ``level``: ``"module"`` or ``"op"``;
    ``optimizer``: one or several whose state is recorded (any optimizer
    that steps in the block is found too); ``data``: the steps recorded in
    full, as ``Recorder`` takes it (default: digests only);
    ``views``: record view ops too (at op level; they compute nothing, and
    cannot be where a divergence is born); ``chunk_size``: that of the
    digests. ImportError says how to install torch when it is missing."""
    try:
        import torch  # noqa: F401
    except ImportError as exc:
        raise ImportError(TORCH_MISSING) from exc
    from .torchtrace import Trace

    return Trace(
        path, model=model, level=level, optimizer=optimizer, data=data, rank=rank,
        views=views, chunk_size=chunk_size,
    )  # fmt: skip
