"""What a comparison is asked to do: ``CompareOptions``, shared by the library
API, the scheduler and the command line.

A leaf module: it imports no stage, so the CLI can read the choices
(executors, engines) without loading the pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass

from .dtypes import MAX_ITEMSIZE
from .kernels import EXACT, Tolerance
from .schema import Schema

#: Digests cover chunks of this many bytes (``--chunk-size``): only chunks whose
#: digests differ are scanned.
DEFAULT_CHUNK_SIZE = 4 << 20


#: The largest chunk size accepted (chunks are read in 1 MiB pieces anyway).
MAX_CHUNK_SIZE = 1 << 30


def check_chunk_size(chunk_size: int) -> int:
    if not 0 < chunk_size <= MAX_CHUNK_SIZE or chunk_size % MAX_ITEMSIZE:
        raise ValueError(
            f"--chunk-size must be a positive multiple of {MAX_ITEMSIZE} bytes, at most 1 GiB, "
            f"got {chunk_size}"
        )
    return chunk_size


#: How work fans out (``--executor``); ``dask`` is sweep's extra choice.
EXECUTORS = ("auto", "serial", "thread", "process")
#: The kernel for differing chunks (``--engine``).
ENGINE_CHOICES = ("auto", "numba", "numpy", "python")


@dataclass(frozen=True)
class CompareOptions:
    #: None: the schema a manifest records (run A's, else run B's), else rl-state
    #: (``runschema.choose_schema``); a schema given here wins over a manifest's.
    schema: Schema | None = None
    tolerance: Tolerance = EXACT
    chunk_size: int = DEFAULT_CHUNK_SIZE
    engine: str = "auto"  # auto | numba | numpy | python
    executor: str = "auto"  # auto | serial | thread | process
    jobs: int | None = None

    def __post_init__(self) -> None:
        check_chunk_size(self.chunk_size)
        if self.engine not in ("auto", "numba", "numpy", "python"):
            raise ValueError(f"unknown engine {self.engine!r} (valid: auto numba numpy python)")
        if self.jobs is not None and self.jobs < 1:
            raise ValueError(f"--jobs must be at least 1, got {self.jobs}")


def tolerance_dict(tol: Tolerance) -> dict[str, object]:
    return {
        "atol": tol.atol,
        "rtol": tol.rtol,
        "ulp": tol.ulp,
        "nan_equal": tol.nan_equal,
        "rounding_ulp": tol.rounding_ulp,  # where magnitude draws its line, not a tolerance
    }
