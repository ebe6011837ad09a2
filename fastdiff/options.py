"""What a comparison is asked to do: ``CompareOptions``, shared by the library
API, the scheduler and the command line; and ``Selection``, the steps and
buffers it looks at (``--steps``, ``--names``), which only the callers that
take it apply (``compare_runs``, ``compare_pairs``, ``sweep``).

A leaf module: it imports no stage, so the CLI can read the choices
(executors, engines) without loading the pipeline.
"""

from __future__ import annotations

import os

from .dtypes import MAX_ITEMSIZE
from .kernels import EXACT, Tolerance
from .value import Value

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
    None for the cores this process may use. A value of the wrong type is a
    ``TypeError`` here, not an error deep inside a comparison.
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


_OPTION_FIELDS = ("schema", "tolerance", "chunk_size", "engine", "executor", "jobs")


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
        from .schemafile import resolve_schema

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


# --- which steps and buffers are compared --------------------------------------------

#: The most digits a step number given to ``--steps`` may have (as a dump's
#: name may: ``sources.names.MAX_STEP_DIGITS``).
MAX_STEP_DIGITS = 600


def parse_steps(text: str) -> tuple[int, int | None]:
    """``--steps``' value as a half-open range ``(start, stop)``, as a Python
    slice reads it: ``3`` is step 3 alone, ``3:8`` steps 3 to 7, ``3:`` step 3
    and every later one (``stop`` None), ``:8`` steps 0 to 7. Steps are
    decimal integers >= 0 (ASCII digits); a range that holds no step is a
    ValueError, as is anything else."""
    body = text.strip()
    lo, colon, hi = body.partition(":")
    for part in (lo, hi):
        if part and not (part.isascii() and part.isdigit()):
            raise ValueError(
                f"not a step or step range: {text!r} (examples: 3, 3:8 for steps 3 to 7, 3: "
                "for step 3 on, :8 for steps before 8)"
            )
        if len(part) > MAX_STEP_DIGITS:
            raise ValueError(f"a step number of {len(part):,} digits: {text[:20]!r}...")
    if not colon:
        if not lo:
            raise ValueError("an empty step range: give a step (3) or a range (3:8)")
        return int(lo), int(lo) + 1
    if not lo and not hi:
        raise ValueError(f"{text!r} selects every step: leave --steps out to compare them all")
    start, stop = int(lo or 0), (int(hi) if hi else None)
    if stop is not None and stop <= start:
        raise ValueError(
            f"{text!r} holds no step: START:STOP is half-open, as a Python slice (3:8 is "
            f"steps 3 to 7), so STOP must be greater than START"
        )
    return start, stop


def _spans(steps: object) -> tuple[tuple[int, int | None], ...]:
    """Selection's ``steps`` as sorted, merged half-open spans."""
    items = [steps] if isinstance(steps, str | int | range) else steps
    if not isinstance(items, list | tuple | set | frozenset):
        raise TypeError(
            "Selection: steps must be a step (int), a range, a string such as '3:8', or a "
            f"list of them, got {type(steps).__name__}"
        )
    spans: list[tuple[int, int | None]] = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, str | int | range):
            raise TypeError(
                "Selection: each step must be an int, a range or a string such as '3:8', got "
                f"{item!r}"
            )
        if isinstance(item, str):
            spans.append(parse_steps(item))
        elif isinstance(item, int):
            if item < 0:
                raise ValueError(f"Selection: steps are >= 0, got {item}")
            spans.append((item, item + 1))
        else:
            if item.step != 1 or item.start < 0 or not len(item):
                raise ValueError(
                    f"Selection: a range of steps >= 0, one apart and not empty, got {item!r}"
                )
            spans.append((item.start, item.stop))
    if not spans:
        raise ValueError("Selection: no step given (None compares every step)")
    spans.sort(key=lambda s: s[0])
    merged = [spans[0]]
    for start, stop in spans[1:]:
        last_start, last_stop = merged[-1]
        if last_stop is None or start <= last_stop:  # overlapping or adjacent: one span
            end = None if last_stop is None or stop is None else max(last_stop, stop)
            merged[-1] = (last_start, end)
        else:
            merged.append((start, stop))
    return tuple(merged)


class Selection(Value):
    """Which steps and buffers a comparison looks at (an immutable value):
    what is not selected is neither listed nor read, and the report, its
    verdict included, is about what is.

    ``steps``: a step (``3``), a ``range`` (``range(3, 8)``: steps 3 to 7), a
    string as ``--steps`` takes it (``"3"``, ``"3:8"``, ``"3:"``, ``":8"``;
    half-open, as a Python slice), or a list of them (their union); kept as
    sorted, merged half-open spans ``(start, stop)``, ``stop`` None for no
    end. None: every step. ``names``: glob patterns (``*``, ``?``, ``[...]``,
    matched as a schema's members are, case-sensitive), one of which a
    buffer's name must match; None: every buffer.
    """

    __slots__ = ("names", "steps")

    steps: tuple[tuple[int, int | None], ...] | None
    names: tuple[str, ...] | None

    def __init__(self, steps: object = None, names: object = None) -> None:
        self.steps = None if steps is None else _spans(steps)
        if names is not None:
            if isinstance(names, str):
                names = (names,)
            if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
                raise TypeError(f"Selection: names must be glob strings, got {names!r}")
            if not names:
                raise ValueError("Selection: no name given (None compares every buffer)")
            names = tuple(dict.fromkeys(names))
        self.names = names

    def __repr__(self) -> str:
        return f"Selection(steps={self.steps!r}, names={self.names!r})"

    def wants_step(self, step: int) -> bool:
        """Whether ``step`` is selected."""
        if self.steps is None:
            return True
        return any(start <= step and (stop is None or step < stop) for start, stop in self.steps)

    def wants_name(self, name: str) -> bool:
        """Whether a buffer of this name is selected."""
        if self.names is None:
            return True
        from fnmatch import fnmatchcase

        return any(fnmatchcase(name, pattern) for pattern in self.names)

    def options(self) -> str:
        """The selection as the options that ask for it: ``--steps 3:8 --names 'w*'``."""
        parts = []
        for start, stop in self.steps or ():
            if stop == start + 1:
                parts.append(f"--steps {start}")
            else:
                parts.append(f"--steps {start or ''}:{'' if stop is None else stop}")
        parts += [f"--names {_quoted(n)}" for n in self.names or ()]
        return " ".join(parts)


#: Characters a shell word may hold unquoted (``shlex.quote``'s, without importing ``re``).
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_")


def _quoted(word: str) -> str:
    """``word`` as a shell reads it back (``shlex.quote``)."""
    if word and set(word) <= _SAFE:
        return word
    return "'" + word.replace("'", "'\\''") + "'"
