"""What several commands share: value converters, option declarations (the
builders return ``spec.Arg`` tuples), and the steps from parsed options to
the library's inputs (schema, ``CompareOptions``, digest cache).

Cheap to import: the library modules load inside the functions that use them.
"""

from __future__ import annotations

from ..errors import FastdiffError
from .spec import APPEND, STORE_FALSE, STORE_TRUE, Arg, BadValue

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Sequence

    from ..engine.cache import DigestCache
    from ..model.selection import Selection
    from ..options import CompareOptions
    from ..schema import Schema

#: The longest --cache-min-age: digests of no file are kept beyond it anyway.
MAX_SECONDS = 1e9
#: The largest bench --scale: a 1-byte file becomes 1 GB (sizes are lowered to
#: what memory and disk allow anyway); beyond it sizes overflow a float.
MAX_SCALE = 1e9

_UNIT_SHIFTS = {"": 0, "k": 10, "m": 20, "g": 30}
_BYTE_SUFFIXES = ("", "b", "B", "ib", "iB")


# --- values ------------------------------------------------------------------------


def parse_size(text: str) -> int:
    """'4194304', '64K', '4M', '1GiB' -> bytes (binary multiples). Spaces may
    surround the number and separate it from the unit."""
    body = text.strip()
    end = 0
    while end < len(body) and body[end].isdecimal():
        end += 1
    rest = body[end:].lstrip()
    unit = rest[:1] if rest[:1] in ("k", "K", "m", "M", "g", "G") else ""
    if not end or rest[len(unit) :] not in _BYTE_SUFFIXES:
        raise BadValue(f"not a size: {text!r} (examples: 65536, 64K, 4M)")
    return int(body[:end]) << _UNIT_SHIFTS[unit.lower()]


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise BadValue(f"not a number: {text!r}") from None
    if not (value >= 0 and value != float("inf")):
        raise BadValue(f"must be a finite number >= 0, got {text!r}")
    return value


def seconds(text: str) -> float:
    """A duration for --cache-min-age: finite, >= 0, at most MAX_SECONDS."""
    value = non_negative_float(text)
    if value > MAX_SECONDS:
        raise BadValue(
            f"{text!r} is more than {MAX_SECONDS:.0e} seconds (about 31 years); give a "
            "smaller number, or --no-cache for no cache at all"
        )
    return value


def fraction(text: str) -> float:
    value = non_negative_float(text)
    if value > 1:
        raise BadValue(f"must be a fraction from 0 to 1, got {text!r}")
    return value


def scale(text: str) -> float:
    """bench --scale: a number > 0, at most MAX_SCALE."""
    try:
        value = float(text)
    except ValueError:
        raise BadValue(f"not a number: {text!r}") from None
    if not (value > 0 and value != float("inf")):
        raise BadValue(f"must be a finite number > 0, got {text!r}")
    if value > MAX_SCALE:
        raise BadValue(
            f"{text!r} is more than {MAX_SCALE:.0e}; give a smaller factor (sizes are lowered "
            "to what memory and disk allow anyway)"
        )
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise BadValue(f"not an integer: {text!r}") from None
    if value < 0:
        raise BadValue(f"must be >= 0, got {text!r}")
    return value


def positive_int(text: str) -> int:
    value = non_negative_int(text)
    if value < 1:
        raise BadValue(f"must be >= 1, got {text!r}")
    return value


def step_range(text: str) -> str:
    """--steps: a step or a half-open range (``options.parse_steps``), kept as written."""
    from ..model.selection import parse_steps

    try:
        parse_steps(text)
    except ValueError as exc:
        raise BadValue(str(exc)) from None
    return text.strip()


def name_glob(text: str) -> str:
    """--names: a glob pattern of buffer names, not empty."""
    if not text:
        raise BadValue(
            "an empty pattern matches no buffer; give a name or a glob, such as 'grad.*'"
        )
    return text


# --- options -----------------------------------------------------------------------

SCHEMA = "schema"
PERFORMANCE = "performance"
TOLERANCE = (
    "tolerance (default: exact, every bit counts; given together, an element is within when "
    "either the --atol/--rtol test or the --ulp test holds)"
)
CACHE = "digest cache ($XDG_CACHE_HOME/fastdiff, else ~/.cache/fastdiff)"


#: What --schema's help says of its default, by who reads runs how.
READS_MANIFESTS = "default: rl-state; a manifest is read with the schema it records"
RECORDS_IN_MANIFEST = "default: rl-state; recorded in the manifest"


def schema_options(default: str = READS_MANIFESTS) -> tuple[Arg, ...]:
    return (
        Arg(
            "--schema",
            metavar="NAME|FILE.toml",
            help=f"a preset (rl-state, raw) or a TOML schema file ({default}); "
            "'fastdiff schema' prints one to start from",
            group=SCHEMA,
        ),
        Arg(
            "--default-dtype",
            metavar="DTYPE",
            help="element type of buffers in no group (default: the schema's, u8): f32, bf16, "
            "f8_e4m3fn, f32be, ... or numpy's names (float32, <f4)",
            group=SCHEMA,
        ),
    )


def performance_options(
    executors: Sequence[str],
    jobs_help: str = "workers (default: the cores this process may use)",
) -> tuple[Arg, ...]:
    dask = "dask" in executors
    scheduler = Arg(
        "--scheduler",
        metavar="tcp://HOST:PORT",
        help="Dask scheduler for --executor dask",
        group=PERFORMANCE,
    )
    return (
        Arg(
            "--executor",
            choices=executors,
            default="auto",
            help="auto (default): in-process for small totals, else threads"
            + ("; dask: a Dask cluster, see --scheduler" if dask else ""),
            group=PERFORMANCE,
        ),
        *((scheduler,) if dask else ()),
        Arg("--jobs", type=positive_int, metavar="N", help=jobs_help, group=PERFORMANCE),
        Arg(
            "--chunk-size",
            type=parse_size,
            metavar="BYTES",
            help="hash chunk size, a multiple of 8 (default: 4M)",
            group=PERFORMANCE,
        ),
    )


def common_options(executors: Sequence[str], schema: str = READS_MANIFESTS) -> tuple[Arg, ...]:
    """Options shared by compare, sweep and hash."""
    return (*schema_options(schema), *performance_options(executors))


#: ``-v``: compare's and watch's text lists every buffer.
VERBOSE = Arg("-v", "--verbose", action=STORE_TRUE, help="list every buffer, equal ones too")
#: ``--plot``: compare and watch draw the report's timeline.
PLOT = Arg(
    "--plot",
    metavar="FILE.png",
    help="also draw the timeline: the largest |A-B| and the differing elements per group "
    "at each step (needs matplotlib)",
)


SELECTION = (
    "selection (--steps and --names: what is compared, and so what the verdict is about; "
    "--first: what is listed)"
)


#: --ignore (compare, sweep, watch): names left out, with a schema file's ``ignore``.
IGNORE = Arg(
    "--ignore",
    action=APPEND,
    type=name_glob,
    metavar="GLOB",
    help="leave out the buffers and values whose name matches GLOB (as --names; "
    "with a schema file's ignore = [...]); repeatable; the report says how many",
    group=SELECTION,
)


def selection_options(first: bool = True) -> tuple[Arg, ...]:
    """--steps and --names (compare, sweep), and ``first``: --first (compare)."""
    out = (
        Arg(
            "--steps",
            action=APPEND,
            type=step_range,
            metavar="RANGE",
            help="compare only these steps: 3, or 3:8 for steps 3 to 7 (half-open, as a "
            "Python slice; 3: from 3 on, :8 before 8); repeatable, the union",
            group=SELECTION,
        ),
        Arg(
            "--names",
            action=APPEND,
            type=name_glob,
            metavar="GLOB",
            help="compare only the buffers whose name matches GLOB (*, ?, [...], as in a "
            "schema; quote it); repeatable, any of them",
            group=SELECTION,
        ),
        IGNORE,
    )
    if not first:
        return out
    return (
        *out,
        Arg(
            "--first",
            action=STORE_TRUE,
            help="list only the first divergent step's buffers (the verdict, origins and "
            "timeline stay the whole comparison's)",
            group=SELECTION,
        ),
    )


def selection_of(args: Namespace) -> Selection | None:
    """The ``Selection`` of --steps and --names, None when neither is given."""
    steps, names = getattr(args, "steps", None), getattr(args, "names", None)
    if not steps and not names:
        return None
    from ..model.selection import Selection

    return Selection(steps=steps or None, names=names or None)


def compare_options(default_cache: bool) -> tuple[Arg, ...]:
    """Tolerances, the magnitude line, the engine and the cache: compare,
    sweep and watch."""
    from ..options import ENGINE_CHOICES

    return (
        Arg(
            "--atol",
            type=non_negative_float,
            metavar="X",
            help="absolute tolerance: |a-b| <= atol + rtol*|b| is within (an unset --rtol or "
            "--atol counts as 0; with --ulp too, either test suffices)",
            group=TOLERANCE,
        ),
        Arg(
            "--rtol",
            type=non_negative_float,
            metavar="X",
            help="relative tolerance, to |b| (run B's value), in the --atol test",
            group=TOLERANCE,
        ),
        Arg(
            "--ulp",
            type=non_negative_int,
            metavar="N",
            help="within N units in the last place (integers: |a-b| <= N); with --atol or "
            "--rtol too, either test suffices",
            group=TOLERANCE,
        ),
        Arg(
            "--nan-equal",
            action=STORE_TRUE,
            help="any NaN equals any NaN, whatever the payload",
            group=TOLERANCE,
        ),
        Arg(
            "--int-tolerance",
            action=STORE_TRUE,
            help="apply the tolerance to integer and bool buffers too (default: they stay "
            "exact; a schema member may ask with int_tolerance = true)",
            group=TOLERANCE,
        ),
        Arg(
            "--rounding-ulp",
            type=non_negative_int,
            metavar="N",
            help="float differences of at most N ULP (no NaN or inf) are reported as "
            "rounding-size, larger ones as large (default 16); forgives nothing",
            group=TOLERANCE,
        ),
        Arg(
            "--engine",
            choices=ENGINE_CHOICES,
            default="auto",
            help="kernel for differing chunks (auto: python for a few differing 4 KiB blocks, "
            "numpy up to 64 MiB, else numba)",
        ),
        *cache_options(default_cache),
    )


def cache_options(default_cache: bool) -> tuple[Arg, ...]:
    return (
        Arg(
            "--cache",
            dest="cache",
            action=STORE_TRUE,
            default=default_cache,
            help="look digests up in the cache and store new ones"
            + (" (default)" if default_cache else ""),
            group=CACHE,
        ),
        Arg(
            "--no-cache",
            dest="cache",
            action=STORE_FALSE,
            help="neither read nor write the cache" + ("" if default_cache else " (default)"),
            group=CACHE,
        ),
        Arg("--cache-dir", metavar="DIR", help="use this folder for the cache", group=CACHE),
        Arg(
            "--cache-min-age",
            type=seconds,
            default=60.0,
            metavar="SECONDS",
            help="cache only digests of files unchanged for this long (default 60): a file "
            "still being written through a memory map can change without its times moving",
            group=CACHE,
        ),
        Arg(
            "--cache-verify",
            type=fraction,
            default=0.0,
            metavar="FRACTION",
            help="re-hash this share (0..1) of the files found in the cache, at least one, "
            "before using any; a digest that does not match sets the whole cache aside "
            "(default 0)",
            group=CACHE,
        ),
    )


# --- from options to the library's inputs -------------------------------------------


def given_schema(args: Namespace) -> Schema | None:
    """The schema the options choose; None when neither --schema nor
    --default-dtype is given (a manifest's own schema, else rl-state)."""
    if args.schema is None and args.default_dtype is None:
        return None
    from ..presets import resolve_schema

    warnings: list[str] = []
    schema = resolve_schema(args.schema, args.default_dtype, warnings=warnings)
    if warnings:
        from .output import print_note

        for warning in warnings:  # an input named like a member: said once, on stderr
            print_note(warning)
    return schema


def options_of(args: Namespace) -> CompareOptions:
    """``CompareOptions`` from the parsed options (those a command has)."""
    from ..kernels import Tolerance
    from ..options import DEFAULT_CHUNK_SIZE, CompareOptions

    executor = "auto" if args.executor == "dask" else args.executor
    chunk_size = args.chunk_size
    try:
        return CompareOptions(
            schema=given_schema(args),
            tolerance=Tolerance(
                getattr(args, "atol", None),
                getattr(args, "rtol", None),
                getattr(args, "ulp", None),
                getattr(args, "nan_equal", False),
                getattr(args, "rounding_ulp", None),
                getattr(args, "int_tolerance", False),
            ),
            chunk_size=DEFAULT_CHUNK_SIZE if chunk_size is None else chunk_size,
            engine=getattr(args, "engine", "auto"),
            executor=executor,
            jobs=args.jobs,
            ignore=tuple(getattr(args, "ignore", None) or ()),
        )
    except ValueError as exc:
        raise FastdiffError(str(exc)) from exc


def digest_cache(args: Namespace, runs: Sequence[str]) -> DigestCache | None:
    """The digest cache, unless off; never inside one of the ``runs`` folders."""
    if not args.cache:
        return None
    from ..engine.cache import DigestCache, default_cache_dir
    from ..sources import refuse_run_folder

    folder = args.cache_dir or str(default_cache_dir())
    refuse_run_folder(
        folder, f"digest cache folder {folder}", tuple(runs),
        "choose another --cache-dir, or --no-cache",
    )  # fmt: skip
    return DigestCache(
        folder,
        min_age_s=args.cache_min_age,
        verify=args.cache_verify,
    )
