"""What a comparison is asked to do: ``CompareOptions``, shared by the library
API, the scheduler and the command line. (The steps and buffers it looks at,
``--steps`` and ``--names``, are a ``model.selection.Selection``, which only
the callers that take it apply: ``compare_runs``, ``compare_pairs``, ``sweep``.)

A leaf module: it imports no stage, so the CLI can read the choices
(executors, engines) without loading the pipeline.
"""

from __future__ import annotations

import os

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


#: The tolerance's keyword arguments of ``CompareOptions`` (``Tolerance``'s fields).
TOLERANCE_KEYWORDS = ("atol", "rtol", "ulp", "nan_equal", "rounding_ulp", "int_tolerance")


class CompareOptions:
    """What a comparison is asked to do (an immutable value; ``replace`` makes
    a changed copy).

    ``schema``: a ``Schema``, a preset name (``"rl-state"``, ``"raw"``) or
    the path of a TOML schema file (read at once: a bad one raises
    ``SchemaError``); None for the schema a manifest records (run A's, else
    run B's), else rl-state (``sources.schemas.choose_schema``); a schema
    given here wins over a manifest's. The tolerance: ``tolerance=Tolerance(...)``,
    or its fields as keywords (``atol=``, ``rtol=``, ``ulp=``,
    ``nan_equal=``, ``rounding_ulp=``, ``int_tolerance=``), not both. ``engine``: auto | numba |
    numpy | python; ``executor``: auto | serial | thread | process; ``jobs``:
    None for the cores this process may use; ``ignore``: glob patterns of
    buffer names left out of the comparison (with the schema's ``ignore``),
    their count said in a note. A value of the wrong type is a
    ``TypeError`` here, not an error deep inside a comparison.
    """

    __slots__ = ("chunk_size", "engine", "executor", "ignore", "jobs", "schema", "tolerance")

    schema: Schema | None
    tolerance: Tolerance
    chunk_size: int
    engine: str
    executor: str
    jobs: int | None
    ignore: tuple[str, ...]

    def __init__(
        self,
        schema: Schema | str | os.PathLike[str] | None = None,
        tolerance: Tolerance | None = None,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        engine: str = "auto",
        executor: str = "auto",
        jobs: int | None = None,
        *,
        atol: float | None = None,
        rtol: float | None = None,
        ulp: int | None = None,
        nan_equal: bool | None = None,
        rounding_ulp: int | None = None,
        int_tolerance: bool | None = None,
        ignore: tuple[str, ...] | list[str] = (),
    ) -> None:
        given = {k: v for k, v in zip(TOLERANCE_KEYWORDS, (atol, rtol, ulp, nan_equal,
                                                          rounding_ulp, int_tolerance), strict=True)
                 if v is not None}  # fmt: skip
        if tolerance is None:
            tolerance = _tolerance(given) if given else EXACT
        elif given:
            raise TypeError(
                "CompareOptions: give the tolerance as tolerance=Tolerance(...) or as "
                f"keywords ({', '.join(given)}=...), not both"
            )
        elif not isinstance(tolerance, Tolerance):
            raise TypeError(
                f"CompareOptions: tolerance must be a fastdiff.Tolerance, got "
                f"{type(tolerance).__name__} (or give atol=, rtol=, ulp=, nan_equal=)"
            )
        schema = _schema(schema)
        for name, value in (("chunk_size", chunk_size), ("jobs", jobs)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise TypeError(f"CompareOptions: {name} must be an int, got {value!r}")
        for name, value in (("engine", engine), ("executor", executor)):
            if not isinstance(value, str):
                raise TypeError(f"CompareOptions: {name} must be a str, got {value!r}")
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
        if isinstance(ignore, str) or not all(isinstance(g, str) and g for g in ignore):
            raise TypeError(f"CompareOptions: ignore must be glob strings, got {ignore!r}")
        self.ignore = tuple(dict.fromkeys(ignore))

    def _fields(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in _OPTION_FIELDS}

    def replace(self, **changes: object) -> CompareOptions:
        """A copy with ``changes`` (keyword per field, or a tolerance's field:
        ``replace(ulp=2)`` keeps the rest of the tolerance), checked as a new
        one is."""
        fields = self._fields()
        tol = {k: changes.pop(k) for k in TOLERANCE_KEYWORDS if k in changes}
        if tol and "tolerance" not in changes:
            changes["tolerance"] = self.tolerance.replace(**tol)
        elif tol:
            changes.update(tol)  # both: refused, as by the constructor
        return CompareOptions(**{**fields, **changes})  # type: ignore[arg-type]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CompareOptions):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(tuple(self._fields().values()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._fields().items())
        return f"CompareOptions({inner})"


_OPTION_FIELDS = ("schema", "tolerance", "chunk_size", "engine", "executor", "jobs", "ignore")


def _tolerance(given: dict[str, object]) -> Tolerance:
    for k in ("atol", "rtol"):
        v = given.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
            raise TypeError(f"CompareOptions: {k} must be a number, got {v!r}")
    for k in ("ulp", "rounding_ulp"):
        v = given.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise TypeError(f"CompareOptions: {k} must be an int, got {v!r}")
    for k in ("nan_equal", "int_tolerance"):
        v = given.get(k, False)
        if not isinstance(v, bool):
            raise TypeError(f"CompareOptions: {k} must be a bool, got {v!r}")
    return Tolerance(**given)  # type: ignore[arg-type]


def _schema(schema: object) -> Schema | None:
    """A Schema from what ``CompareOptions(schema=...)`` accepts."""
    if schema is None:
        return None
    from .schema import Schema

    if isinstance(schema, Schema):
        return schema
    if isinstance(schema, str | os.PathLike):
        from .presets import resolve_schema

        return resolve_schema(os.fspath(schema), what="CompareOptions(schema=...)")
    raise TypeError(
        "CompareOptions: schema must be a fastdiff.Schema, a preset name (rl-state, raw) or "
        f"the path of a TOML schema file, got {type(schema).__name__}"
    )


def tolerance_options(tol: Tolerance) -> str:
    """The tolerance as the options that ask for it (``--ulp 1 --nan-equal``)."""
    parts = [f"--{k} {v:g}" for k, v in (("atol", tol.atol), ("rtol", tol.rtol)) if v is not None]
    if tol.ulp is not None:
        parts.append(f"--ulp {tol.ulp}")
    if tol.nan_equal:
        parts.append("--nan-equal")
    if tol.int_tolerance:
        parts.append("--int-tolerance")
    return " ".join(parts)


def tolerance_dict(tol: Tolerance) -> dict[str, object]:
    return {
        "atol": tol.atol,
        "rtol": tol.rtol,
        "ulp": tol.ulp,
        "nan_equal": tol.nan_equal,
        "rounding_ulp": tol.rounding_ulp,  # where magnitude draws its line, not a tolerance
        "int_tolerance": tol.int_tolerance,  # integer and bool buffers too (else exact)
    }
