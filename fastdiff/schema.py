"""Schemas: which buffers form which group, their element types, and hints.

A schema lists groups in pipeline order (upstream first). Each group has a
key, a title, a hint on what to inspect when it is the first to diverge, and
members given by exact name or glob pattern with a dtype (any name
``dtypes.dtype_name`` takes, numpy's ``float32`` or ``<f4`` too, kept as the
canonical one: ``f32``). A buffer whose
name is in no group is still compared, in the group ``other``, as the
schema's default dtype (``u8``, raw bytes, unless told otherwise).

The built-in preset ``rl-state`` describes the RL-loop dumps that
``compare-rl-state.py`` knows; ``raw`` has no groups at all. A user schema
is a TOML file::

    name = "my-job"            # optional
    default_dtype = "u8"       # optional

    [[group]]
    key = "C"
    title = "action sampling RNG"
    hint = "what to look at when this group diverges first"
    [group.members]
    action_prng_state = "u32"
    "unit_*" = "f32"           # globs match after every exact name
    isv_full = { dtype = "f32", shape = [757], fields = { kelly = [700, 712] } }
    obs = { dtype = "f32", shape = [-1, 64] }   # -1: from the file's size

A member given as a table may declare the buffer's ``shape`` (one dimension
may be -1, inferred from the file size) and named ``fields``: half-open
element ranges ``[start, stop)`` (one int: one element) that must not
overlap and must lie inside the shape. A file whose size does not fit its
shape (or is too short for its fields) is malformed. The report then gives
indices in the shape and what differs in each field (``Layout``).
"""

from __future__ import annotations

import os

from .dtypes import dtype_name
from .errors import SchemaError
from .record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from .tomllines import TomlLines

OTHER = "other"


class Field(Record):
    """A named element range ``[start, stop)`` of a buffer."""

    __slots__ = ("name", "start", "stop")

    def __init__(self, name: str, start: int, stop: int) -> None:
        self.name = name
        self.start = start
        self.stop = stop


def _shape_text(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


class Layout(Record):
    """How a buffer's elements are laid out: its ``shape`` (None: not
    declared; one dimension may be -1, taken from the file size) and its
    named ``fields`` (declared order)."""

    __slots__ = ("fields", "shape")

    def __init__(
        self, shape: tuple[int, ...] | None = None, fields: tuple[Field, ...] = ()
    ) -> None:
        self.shape = shape
        self.fields = fields

    def resolve(self, n: int) -> tuple[int, ...] | None:
        """The shape of ``n`` elements, -1 worked out (call ``misfit`` first)."""
        if self.shape is None or -1 not in self.shape:
            return self.shape
        known = 1
        for d in self.shape:
            known *= d if d != -1 else 1
        return tuple(n // known if d == -1 else d for d in self.shape)

    def misfit(self, n: int) -> str | None:
        """Why ``n`` elements do not fit this layout (None: they do)."""
        if self.shape is not None:
            known = 1
            for d in self.shape:
                known *= d if d != -1 else 1
            if -1 not in self.shape and n != known:
                return f"the schema's shape {_shape_text(self.shape)} holds {known}"
            if -1 in self.shape and n % known:
                return (
                    f"not a whole number of {known} (the schema's shape {_shape_text(self.shape)})"
                )
        for f in self.fields:
            if f.stop > n:
                return f"the schema's field {f.name!r} ends at element {f.stop}"
        return None

    def misfit_message(
        self, size: int, itemsize: int, dtype: str, compared: bool = True
    ) -> str | None:
        """The malformed message for a file of ``size`` bytes, or None if it
        fits; ``compared``: it says that nothing was compared for the buffer."""
        why = self.misfit(size // itemsize)
        if why is None:
            return None
        what = "; nothing was compared for this buffer" if compared else ""
        return (
            f"size {size} bytes is {size // itemsize} {dtype} elements, but {why}{what} "
            "(truncated dump, or wrong shape in the schema?)"
        )

    def as_data(self) -> dict[str, Any]:
        """The keys of a member table (without its dtype)."""
        d: dict[str, Any] = {}
        if self.shape is not None:
            d["shape"] = list(self.shape)
        if self.fields:
            d["fields"] = {f.name: [f.start, f.stop] for f in self.fields}
        return d


#: Written after a member's dtype (``"u8?"``): a dtype nobody has set yet
#: (``fastdiff schema --from`` writes it), read as that dtype, and said so in
#: every report, until the schema's author writes the dtype without it.
UNSET = "?"


class Member(Record):
    """A buffer name, or a glob pattern (``*``, ``?``, ``[...]``), its dtype and
    its layout. ``table``: it was given as a table (``{ dtype = ... }``), and
    is written back as one. ``unset``: the dtype is a placeholder nobody set
    (written ``"u8?"``): reports say so."""

    __slots__ = ("dtype", "layout", "pattern", "table", "unset")

    def __init__(
        self,
        pattern: str,
        dtype: str,
        layout: Layout | None = None,
        table: bool = False,
        unset: bool = False,
    ) -> None:
        self.pattern = pattern
        self.dtype = dtype
        self.layout = layout
        self.table = table or layout is not None
        self.unset = unset

    @property
    def is_glob(self) -> bool:
        return any(c in self.pattern for c in "*?[")

    def as_data(self) -> str | dict[str, Any]:
        """The member as a schema file gives it: a dtype, or a table."""
        dtype = self.dtype + UNSET if self.unset else self.dtype
        if not self.table:
            return dtype
        return {"dtype": dtype, **(self.layout.as_data() if self.layout else {})}


class Group(Record):
    __slots__ = ("hint", "key", "members", "title")

    def __init__(self, key: str, title: str, hint: str, members: tuple[Member, ...]) -> None:
        self.key = key
        self.title = title
        self.hint = hint
        self.members = members


OTHER_GROUP = Group(OTHER, "not in the schema", "", ())


class Schema(Record):
    """Groups in pipeline order, and the dtype of buffers in none of them.

    Raises SchemaError when a member is in two groups.
    """

    __slots__ = ("_exact", "_globs", "_layouts", "_unset", "default_dtype", "groups", "name")

    def __init__(self, name: str, groups: tuple[Group, ...], default_dtype: str = "u8") -> None:
        self.name = name
        self.groups = groups
        self.default_dtype = default_dtype
        exact: dict[str, tuple[str, str]] = {}
        globs: list[tuple[str, str, str]] = []
        layouts: dict[str, Layout] = {}  # by pattern: only members that have one
        unset: set[str] = set()  # patterns whose dtype nobody set
        owner: dict[str, str] = {}
        for g in groups:
            for m in g.members:
                if owner.setdefault(m.pattern, g.key) != g.key:
                    raise SchemaError(
                        f"schema {name!r}: member {m.pattern!r} is in groups "
                        f"{owner[m.pattern]!r} and {g.key!r}; a buffer belongs to one group"
                    )
                if m.is_glob:
                    globs.append((m.pattern, g.key, m.dtype))
                else:
                    exact.setdefault(m.pattern, (g.key, m.dtype))
                if m.layout is not None:
                    layouts.setdefault(m.pattern, m.layout)
                if m.unset:
                    unset.add(m.pattern)
        self._exact = exact
        self._globs = tuple(globs)
        self._layouts = layouts
        self._unset = frozenset(unset)

    def classify(self, name: str) -> tuple[str, str]:
        """(group key, dtype) of a buffer: exact names first, then globs in order."""
        hit = self._exact.get(name)
        if hit is not None:
            return hit
        if self._globs:
            from fnmatch import fnmatchcase

            for pattern, key, dtype in self._globs:
                if fnmatchcase(name, pattern):
                    return key, dtype
        return OTHER, self.default_dtype

    def layout_of(self, name: str) -> Layout | None:
        """The layout of a buffer (the member that classifies it), if it has one."""
        if not self._layouts:
            return None  # the usual case: no member declares a shape or fields
        if name in self._exact:
            return self._layouts.get(name)
        from fnmatch import fnmatchcase

        for pattern, _, _ in self._globs:
            if fnmatchcase(name, pattern):
                return self._layouts.get(pattern)
        return None

    @property
    def has_unset(self) -> bool:
        """Some member's dtype is a placeholder nobody set (``"u8?"``)."""
        return bool(self._unset)

    def dtype_unset(self, name: str) -> bool:
        """Whether the member that classifies buffer ``name`` leaves its dtype unset."""
        if not self._unset:
            return False  # the usual case
        if name in self._exact:
            return name in self._unset
        from fnmatch import fnmatchcase

        for pattern, _, _ in self._globs:
            if fnmatchcase(name, pattern):
                return pattern in self._unset
        return False

    def with_default_dtype(self, dtype: str) -> Schema:
        return Schema(self.name, self.groups, dtype)

    @property
    def order(self) -> dict[str, int]:
        """Pipeline position of each group key; ``other`` comes last."""
        pos = {g.key: i for i, g in enumerate(self.groups)}
        pos[OTHER] = len(self.groups)
        return pos


def _members(dtype: str, *names: str) -> tuple[Member, ...]:
    return tuple(Member(n, dtype) for n in names)


RL_STATE = Schema(
    name="rl-state",
    groups=(
        Group(
            "C",
            "action sampling RNG",
            "The per-env PRNG states that pick actions. If they are the first to differ, "
            "look at the action kernel's xorshift update: it must consume the same upstream "
            "logits in both runs and advance unconditionally; a step taken only on some "
            "branches (depending on the chosen action) perturbs the stream.",
            _members("u32", "action_prng_state", "iqn_prng_state"),
        ),
        Group(
            "D",
            "LOB simulator and unit state",
            "The order-book simulator produced different state. Inspect the simulator "
            "kernels for atomics, parallel reductions and writes whose order depends on "
            "thread scheduling.",
            _members("i32", "pyramid_units_count", "unit_entry_step")
            + _members("f32", "unit_entry_price")
            + _members("i32", "unit_lots")
            + _members("u8", "unit_active")
            + _members("f32", "unit_initial_r", "unit_trail_distance")
            + _members("i32", "unit_prev_pos_lots", "close_unit_index")
            + _members("f32", "prev_realized_pnl")
            + _members("i32", "prev_position_lots", "steps_since_done")
            + _members("f32", "trade_duration_emit"),
        ),
        Group(
            "E",
            "ISV controllers",
            "One of the controllers writing the ISV array is nondeterministic. Find the "
            "slot range that differs (popart sigma Welford state, Kelly win/loss EMAs, "
            "win-rate EMA, Page-Hinkley edge-decay) and check its update kernels for "
            "parallel reductions; a single block with a fixed reduction order fixes them.",
            _members("f32", "isv_full"),
        ),
        Group(
            "F",
            "reward shaping and RL outputs",
            "Rewards, advantages or log-probs differ. If rewards differ while the RNG and "
            "simulator state match, the reward pipeline kernel itself is nondeterministic; "
            "if actions differ, the bug is upstream in action sampling; if advantages "
            "differ with equal rewards, suspect the advantage/return reduction.",
            _members("f32", "rewards", "raw_rewards", "outcome_ema", "reward_abs", "dones")
            + _members("i32", "actions", "next_actions")
            + _members("f32", "log_pi_old", "advantages", "returns")
            + _members(
                "f32",
                "session_pnl",
                "consec_loss",
                "cooldown_remaining",
                "ph_mu",
                "ph_count",
                "ph_m",
                "ph_mmin",
                "ph_stat",
            ),
        ),
    ),
)

RAW = Schema(name="raw", groups=())

PRESETS: dict[str, Schema] = {s.name: s for s in (RL_STATE, RAW)}
DEFAULT_PRESET = "rl-state"


# --- loading a user schema -------------------------------------------------

_TOP_KEYS = {"name", "default_dtype", "group", "schema_version"}
_GROUP_KEYS = {"key", "title", "hint", "members"}
_MEMBER_KEYS = {"dtype", "shape", "fields"}
_TABLES = (
    "known tables: [[group]], [group.members], [group.members.NAME] (a member given "
    "as a table) and [group.members.NAME.fields]"
)


def _lines(text: str) -> TomlLines:
    from .tomllines import TomlLines

    return TomlLines(text)


def _unknown_header(lines: TomlLines) -> tuple[int, str] | None:
    """The first table header a schema does not have: (line, header as written)."""
    for lineno, raw, keys, array in lines.headers:
        if array:
            known = keys == ("group",)
        else:
            known = keys[:2] == ("group", "members") and (
                len(keys) <= 3 or (len(keys) == 4 and keys[3] == "fields")
            )
        if not known:
            return lineno, raw
    return None


def load_schema(path: str | os.PathLike[str]) -> Schema:
    """Load a TOML schema; SchemaError names the file, line and key on any problem."""
    import tomllib

    p = os.fspath(path)
    try:
        with open(p, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise SchemaError(f"{p}: cannot read schema file ({exc})") from exc
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # A mistyped table header ([[groups]]) often makes the TOML invalid
        # further down (a table declared twice): name the header, the cause.
        unknown = _unknown_header(_lines(text))
        at = str(exc).rpartition("(at line ")[2].split(",")[0]
        if unknown is not None and (not at.isdigit() or unknown[0] <= int(at)):
            raise SchemaError(
                f"{p}:{unknown[0]}: unknown table {unknown[1]} ({_TABLES}); "
                f"it also makes the file invalid TOML: {exc}"
            ) from exc
        # tomllib names the line of most errors, but not of one at the very end.
        at_end = f"{max(1, len(text.splitlines()))}:" if "end of document" in str(exc) else ""
        raise SchemaError(f"{p}:{at_end} not valid TOML: {exc}") from exc
    return parse_schema(doc, text, str(p))


def parse_schema(doc: dict[str, object], text: str = "", origin: str = "<schema>") -> Schema:
    """A schema from the data of a schema file (``text``, the file, names lines)."""
    found: list[TomlLines] = []

    def lines() -> TomlLines:
        if not found:
            found.append(_lines(text))
        return found[0]

    def path_of(group_index: int | None, key: tuple[str, ...]) -> tuple[Any, ...]:
        return key if group_index is None else ("group", group_index, *key)

    def fail(group_index: int | None, key: tuple[str, ...], what: str) -> SchemaError:
        line = lines().line_of(path_of(group_index, key))
        where = f"group {group_index + 1} " if group_index is not None else ""
        return SchemaError(f"{origin}:{line}: {where}key {'.'.join(key)!r}: {what}")

    def unknown(group_index: int | None, key: tuple[str, ...], expected: set[str]) -> SchemaError:
        """An unknown key; when a table header defines it, the header and the known tables."""
        path = path_of(group_index, key)
        header = lines().header_of(path)
        if header is None:
            return fail(
                group_index, key, f"unknown key (expected one of: {', '.join(sorted(expected))})"
            )
        where = f"group {group_index + 1}: " if group_index is not None else ""
        return SchemaError(
            f"{origin}:{lines().line_of(path)}: {where}unknown table {header} ({_TABLES})"
        )

    for k in doc:
        if k not in _TOP_KEYS:
            raise unknown(None, (k,), _TOP_KEYS)
    version = doc.get("schema_version", 1)
    if type(version) is not int or version != 1:
        raise fail(None, ("schema_version",), f"unsupported version {version!r} (this fastdiff: 1)")
    name = doc.get("name", os.path.splitext(os.path.basename(origin))[0])
    if not isinstance(name, str):
        raise fail(None, ("name",), "must be a string")
    try:
        default_dtype = dtype_name(doc.get("default_dtype", "u8"))
    except ValueError as exc:
        raise fail(None, ("default_dtype",), str(exc)) from None
    raw_groups = doc.get("group", [])
    if not isinstance(raw_groups, list):
        raise fail(None, ("group",), "must be an array of tables, written [[group]]")
    groups: list[Group] = []
    seen: set[str] = set()
    owner: dict[str, tuple[str, int]] = {}  # member -> (group key, group index)
    for gi, g in enumerate(raw_groups):
        if not isinstance(g, dict):
            raise fail(gi, ("group",), "must be a table")
        for k in g:
            if k not in _GROUP_KEYS:
                raise unknown(gi, (k,), _GROUP_KEYS)
        key = g.get("key")
        if not isinstance(key, str) or not key.strip():
            raise fail(gi, ("key",), "every group needs a non-empty string key")
        if key == OTHER:
            raise fail(gi, ("key",), f"{OTHER!r} is reserved for buffers in no group")
        if key in seen:
            raise fail(gi, ("key",), f"group key {key!r} is used twice")
        seen.add(key)
        title = g.get("title", key)
        hint = g.get("hint", "")
        if not isinstance(title, str):
            raise fail(gi, ("title",), "must be a string")
        if not isinstance(hint, str):
            raise fail(gi, ("hint",), "must be a string")
        members = g.get("members", {})
        if not isinstance(members, dict):
            raise fail(gi, ("members",), 'must be a table of name = "dtype"')
        parsed: list[Member] = []
        for mname, value in members.items():
            if not mname:
                raise fail(gi, ("members",), "a member name is empty")
            member = _member(gi, mname, value, fail, unknown)
            if mname in owner:
                first, first_index = owner[mname]
                here = lines().line_of(("group", gi, "members", mname))
                there = lines().line_of(("group", first_index, "members", mname))
                raise SchemaError(
                    f"{origin}:{here}: group {gi + 1} key {'members.' + mname!r}: member "
                    f"{mname!r} of group {key!r} is already in group {first!r} (line {there}); "
                    "a buffer belongs to one group: remove one of them"
                )
            owner[mname] = (key, gi)
            parsed.append(member)
        groups.append(Group(key, title, hint, tuple(parsed)))
    return Schema(name=name, groups=tuple(groups), default_dtype=default_dtype)


def _member(gi: int, name: str, value: object, fail: Any, unknown: Any) -> Member:
    """One member: ``name = "dtype"`` or ``name = { dtype = ..., shape = ..., fields = ... }``."""
    at = ("members", name)
    if isinstance(value, str):
        dtype, unset = _unset_dtype(value)
        try:
            return Member(name, dtype_name(dtype), unset=unset)
        except ValueError as exc:
            raise fail(gi, at, str(exc)) from None
    if not isinstance(value, dict):
        raise fail(
            gi,
            at,
            'must be a dtype ("f32") or a table ({ dtype = "f32", shape = [...], fields = {...} })',
        )
    for k in value:
        if k not in _MEMBER_KEYS:
            raise unknown(gi, (*at, k), _MEMBER_KEYS)
    raw_dtype = value.get("dtype")
    if raw_dtype is None:
        raise fail(gi, at, 'a member given as a table needs its dtype: { dtype = "f32", ... }')
    dtype, unset = _unset_dtype(raw_dtype) if isinstance(raw_dtype, str) else (raw_dtype, False)
    try:
        dtype = dtype_name(dtype)
    except ValueError as exc:
        raise fail(gi, (*at, "dtype"), str(exc)) from None

    def shape_fail(what: str) -> SchemaError:
        return fail(gi, (*at, "shape"), what)

    def field_fail(key: tuple[str, ...], what: str) -> SchemaError:
        return fail(gi, (*at, "fields", *key), what)

    shape = _shape(value.get("shape"), shape_fail)
    fields = _fields(value.get("fields"), shape, field_fail)
    layout = Layout(shape, fields) if shape is not None or fields else None
    return Member(name, dtype, layout, table=True, unset=unset)


def _unset_dtype(text: str) -> tuple[str, bool]:
    """A member's dtype as written: ``("u8", True)`` for ``"u8?"``."""
    # "?" alone is numpy's code for bool: a dtype, not an unset one.
    unset = text.endswith(UNSET) and len(text) > len(UNSET)
    return (text[: -len(UNSET)], True) if unset else (text, False)


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _shape(raw: object, fail: Any) -> tuple[int, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or not raw:
        raise fail("must be a list of dimensions, such as [757] or [-1, 64]")
    for k, d in enumerate(raw):
        if not _is_int(d) or (d < 1 and d != -1):
            raise fail(
                f"dimension {k} is {d!r}: each is a positive integer, or -1 for the one "
                "taken from the file size"
            )
    if raw.count(-1) > 1:
        raise fail("only one dimension may be -1 (taken from the file size)")
    return tuple(raw)


def _fields(raw: object, shape: tuple[int, ...] | None, fail: Any) -> tuple[Field, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise fail((), "must be a table of name = [start, stop] (or one element index)")
    total = None
    if shape is not None and -1 not in shape:
        total = 1
        for d in shape:
            total *= d
    out: list[Field] = []
    for name, span in raw.items():
        if _is_int(span):
            start, stop = span, span + 1
        elif isinstance(span, list) and len(span) == 2 and all(map(_is_int, span)):
            start, stop = span
        else:
            raise fail((name,), f"{span!r} is not an element range [start, stop] or one index")
        if not 0 <= start < stop:
            raise fail((name,), f"[{start}, {stop}) is empty or negative: need 0 <= start < stop")
        if total is not None and stop > total:
            assert shape is not None
            raise fail(
                (name,),
                f"[{start}, {stop}) lies outside the shape {_shape_text(shape)} ({total} elements)",
            )
        out.append(Field(name, start, stop))
    from itertools import pairwise

    for before, after in pairwise(sorted(out, key=lambda f: f.start)):
        if after.start < before.stop:
            raise fail(
                (after.name,),
                f"[{after.start}, {after.stop}) overlaps field {before.name!r} "
                f"[{before.start}, {before.stop}); fields must not overlap",
            )
    return tuple(out)


def resolve_schema(
    spec: str | None, default_dtype: str | None = None, what: str = "--schema"
) -> Schema:
    """A preset name or a path to a TOML file; ``None`` means the default preset.
    ``what``: the argument ``spec`` came from, as errors name it."""
    spec = spec or DEFAULT_PRESET
    if spec in PRESETS:
        schema = PRESETS[spec]
    elif spec.endswith(".toml") or os.path.exists(spec):
        schema = load_schema(spec)
    else:
        raise SchemaError(
            f"{what} {spec!r}: no such preset or file "
            f"(presets: {', '.join(PRESETS)}; or a path to a .toml file)"
        )
    if default_dtype is not None:
        try:
            schema = schema.with_default_dtype(dtype_name(default_dtype))
        except ValueError as exc:
            raise SchemaError(f"--default-dtype: {exc}") from None
    return schema


def literal_pattern(name: str) -> str:
    """A member pattern that matches exactly ``name``: its glob characters
    (``*``, ``?``, ``[``) each made a one-character class (``w[1]`` ->
    ``w[[]1]``)."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def schema_for_run(schema: Schema, names: Iterable[str], name: str) -> Schema:
    """A start for a run's own schema: ``schema``'s groups with only the
    members that match one of ``names`` (a group left empty is left out),
    then a group ``new`` holding, with ``schema``'s default dtype, every
    name in no group (as a pattern that matches just that name): their
    dtypes and groups are for the user to set."""
    from fnmatch import fnmatchcase

    found = sorted(set(names))
    groups = []
    for g in schema.groups:
        members = tuple(
            m
            for m in g.members
            if (any(fnmatchcase(n, m.pattern) for n in found) if m.is_glob else m.pattern in found)
        )
        if members:
            groups.append(Group(g.key, g.title, g.hint, members))
    rest = [n for n in found if schema.classify(n)[0] == OTHER]
    if rest:
        taken = {g.key for g in schema.groups}
        key = next(k for k in ("new", *(f"new{i}" for i in range(2, len(taken) + 3)))
                   if k not in taken)  # fmt: skip
        title = "buffers in no group yet: set each one's dtype, and group them"
        members = tuple(Member(literal_pattern(n), schema.default_dtype, unset=True) for n in rest)
        groups.append(Group(key, title, "", members))
    return Schema(name, tuple(groups), schema.default_dtype)


def schema_to_toml(schema: Schema) -> str:
    """The schema written as a TOML file that ``load_schema`` reads back;
    each member in the form it was given (a dtype, or an inline table)."""

    import json

    def q(s: str) -> str:
        # A TOML basic string: JSON's escapes are TOML's, but for DEL.
        return json.dumps(s, ensure_ascii=False).replace("\x7f", "\\u007f")

    def key(k: str) -> str:
        bare = k and all(c.isascii() and (c.isalnum() or c in "_-") for c in k)
        return k if bare else q(k)

    def value(v: Any) -> str:
        if isinstance(v, str):
            return q(v)
        if isinstance(v, list):
            return "[" + ", ".join(map(value, v)) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{key(k)} = {value(x)}" for k, x in v.items()) + " }"
        return str(v)

    out = []
    if schema.has_unset:
        out += [
            f'# A dtype with a "{UNSET}" after it ("u8{UNSET}") is not set yet: the buffer is',
            "# read as that dtype (u8: raw bytes), and every report says its dtype is not",
            f'# set. Write its dtype without the "{UNSET}" ("f32", "i32", ...) once you know it.',
        ]
    out += [f"name = {q(schema.name)}", f"default_dtype = {q(schema.default_dtype)}"]
    for g in schema.groups:
        out += [
            "",
            "[[group]]",
            f"key = {q(g.key)}",
            f"title = {q(g.title)}",
            f"hint = {q(g.hint)}",
        ]
        out.append("[group.members]")
        out += [f"{q(m.pattern)} = {value(m.as_data())}" for m in g.members]
    return "\n".join(out) + "\n"
