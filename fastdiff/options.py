"""What a comparison is asked to do: ``CompareOptions``, shared by the library
API, the scheduler and the command line.

A leaf module: it imports no stage, so the CLI can read the choices
(executors, engines) without loading the pipeline.
"""

from __future__ import annotations

from .dtypes import MAX_ITEMSIZE
from .kernels import EXACT, Tolerance

TYPE_CHECKING = False
if TYPE_CHECKING:
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


class CompareOptions:
    """What a comparison is asked to do (an immutable value; ``replace`` makes
    a changed copy).

    ``schema``: None for the schema a manifest records (run A's, else run
    B's), else rl-state (``sources.schemas.choose_schema``); a schema given
    here wins over a manifest's. ``engine``: auto | numba | numpy | python;
    ``executor``: auto | serial | thread | process; ``jobs``: None for the
    cores this process may use.
    """

    __slots__ = ("chunk_size", "engine", "executor", "jobs", "schema", "tolerance")

    schema: Schema | None
    tolerance: Tolerance
    chunk_size: int
    engine: str
    executor: str
    jobs: int | None

    def __init__(
        self,
        schema: Schema | None = None,
        tolerance: Tolerance = EXACT,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        engine: str = "auto",
        executor: str = "auto",
        jobs: int | None = None,
    ) -> None:
        check_chunk_size(chunk_size)
        if engine not in ENGINE_CHOICES:
            raise ValueError(f"unknown engine {engine!r} (valid: auto numba numpy python)")
        if jobs is not None and jobs < 1:
            raise ValueError(f"--jobs must be at least 1, got {jobs}")
        self.schema = schema
        self.tolerance = tolerance
        self.chunk_size = chunk_size
        self.engine = engine
        self.executor = executor
        self.jobs = jobs

    def _fields(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in _OPTION_FIELDS}

    def replace(self, **changes: object) -> CompareOptions:
        """A copy with ``changes`` (keyword per field), checked as a new one is."""
        return CompareOptions(**{**self._fields(), **changes})  # type: ignore[arg-type]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CompareOptions):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(tuple(self._fields().values()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._fields().items())
        return f"CompareOptions({inner})"


_OPTION_FIELDS = ("schema", "tolerance", "chunk_size", "engine", "executor", "jobs")


def tolerance_options(tol: Tolerance) -> str:
    """The tolerance as the options that ask for it (``--ulp 1 --nan-equal``)."""
    parts = [f"--{k} {v:g}" for k, v in (("atol", tol.atol), ("rtol", tol.rtol)) if v is not None]
    if tol.ulp is not None:
        parts.append(f"--ulp {tol.ulp}")
    if tol.nan_equal:
        parts.append("--nan-equal")
    return " ".join(parts)


def tolerance_dict(tol: Tolerance) -> dict[str, object]:
    return {
        "atol": tol.atol,
        "rtol": tol.rtol,
        "ulp": tol.ulp,
        "nan_equal": tol.nan_equal,
        "rounding_ulp": tol.rounding_ulp,  # where magnitude draws its line, not a tolerance
    }
