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

A member table may also declare the buffer's ``inputs``: the buffers it is
computed from, by exact name, at the same step (``"rewards"``) or at the
previous step a run holds (``"advantages@prev"``, recurrent state; the
member itself is allowed). A name in no group is allowed too (an input that
is not dumped); ``inputs = []`` declares a source. Within one step the
inputs must form no cycle. From them the roles stage (``stages.roles``)
tells where a divergence was born. ``Schema.has_inputs`` says whether a
schema declares any: a schema without them costs nothing more.
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
#: The suffix of an input that names the previous step a run holds.
PREV = "@prev"


def split_input(name: str) -> tuple[str, bool]:
    """(buffer name, at the previous step?) of an input as written."""
    if name.endswith(PREV) and len(name) > len(PREV):
        return name[: -len(PREV)], True
    return name, False


class Member(Record):
    """A buffer name, or a glob pattern (``*``, ``?``, ``[...]``), its dtype and
    its layout. ``table``: it was given as a table (``{ dtype = ... }``), and
    is written back as one (as is a member with inputs). ``unset``: the
    dtype is a placeholder nobody set (written ``"u8?"``): reports say so.
    ``inputs``: the buffers it is computed from, as written (``name`` or
    ``name@prev``); None: not declared (no role), ``()``: a source."""

    __slots__ = ("dtype", "inputs", "layout", "pattern", "table", "unset")

    def __init__(
        self,
        pattern: str,
        dtype: str,
        layout: Layout | None = None,
        table: bool = False,
        unset: bool = False,
        inputs: tuple[str, ...] | None = None,
    ) -> None:
        self.pattern = pattern
        self.dtype = dtype
        self.layout = layout
        self.inputs = inputs
        self.table = table or layout is not None
        self.unset = unset

    @property
    def is_glob(self) -> bool:
        return any(c in self.pattern for c in "*?[")

    def as_data(self) -> str | dict[str, Any]:
        """The member as a schema file gives it: a dtype, or a table."""
        dtype = self.dtype + UNSET if self.unset else self.dtype
        if not self.table and self.inputs is None:
            return dtype
        d: dict[str, Any] = {"dtype": dtype}
        if self.layout:
            d.update(self.layout.as_data())
        if self.inputs is not None:
            d["inputs"] = list(self.inputs)
        return d


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

    __slots__ = (
        "_exact", "_globs", "_inputs", "_layouts", "_unset", "default_dtype", "groups", "name",
    )  # fmt: skip

    def __init__(self, name: str, groups: tuple[Group, ...], default_dtype: str = "u8") -> None:
        self.name = name
        self.groups = groups
        self.default_dtype = default_dtype
        exact: dict[str, tuple[str, str]] = {}
        globs: list[tuple[str, str, str]] = []
        layouts: dict[str, Layout] = {}  # by pattern: only members that have one
        unset: set[str] = set()  # patterns whose dtype nobody set
        inputs: dict[str, tuple[str, ...]] = {}  # by pattern: only members that declare them
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
                if m.inputs is not None:
                    inputs.setdefault(m.pattern, m.inputs)
        self._exact = exact
        self._globs = tuple(globs)
        self._layouts = layouts
        self._unset = frozenset(unset)
        self._inputs = inputs

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

    def _pattern_of(self, name: str) -> str | None:
        """The pattern of the member that classifies ``name`` (None: no member does)."""
        if name in self._exact:
            return name
        if self._globs:
            from fnmatch import fnmatchcase

            for pattern, _, _ in self._globs:
                if fnmatchcase(name, pattern):
                    return pattern
        return None

    @property
    def has_inputs(self) -> bool:
        """Whether any member declares its inputs (else no buffer has a role)."""
        return bool(self._inputs)

    def inputs_of(self, name: str) -> tuple[str, ...] | None:
        """The inputs the member that classifies ``name`` declares, as written
        (None: it declares none, or no member classifies it)."""
        if not self._inputs:
            return None
        pattern = self._pattern_of(name)
        return None if pattern is None else self._inputs.get(pattern)

    def is_member(self, name: str) -> bool:
        """Whether a group of the schema holds the buffer ``name``."""
        return self._pattern_of(name) is not None

    def input_cycle(self) -> tuple[str, ...] | None:
        """Members whose inputs at the same step form a cycle, as a path that
        ends where it starts (``("a", "b", "a")``), or None. Checked on the
        members' patterns: every buffer a member classifies has its inputs,
        so a cycle among members is one among buffers."""
        edges: dict[str, list[str]] = {}
        for pattern, declared in self._inputs.items():
            out = []
            for written in declared:
                name, prev = split_input(written)
                target = None if prev else self._pattern_of(name)
                if target is not None and target in self._inputs:
                    out.append(target)
            edges[pattern] = out
        state: dict[str, int] = {}  # 1: on the path, 2: done
        for start in edges:
            if state.get(start):
                continue
            path = [start]
            stack = [iter(edges[start])]
            state[start] = 1
            while stack:
                nxt = next(stack[-1], None)
                if nxt is None:
                    state[path.pop()] = 2
                    stack.pop()
                elif state.get(nxt) == 1:
                    return (*path[path.index(nxt) :], nxt)
                elif not state.get(nxt):
                    state[nxt] = 1
                    path.append(nxt)
                    stack.append(iter(edges[nxt]))
        return None

    def with_default_dtype(self, dtype: str) -> Schema:
        return Schema(self.name, self.groups, dtype)

    @property
    def order(self) -> dict[str, int]:
        """Pipeline position of each group key; ``other`` comes last."""
        pos = {g.key: i for i, g in enumerate(self.groups)}
        pos[OTHER] = len(self.groups)
        return pos


def _members(dtype: str, *names: str) -> tuple[Member, ...]:
    return tuple(Member(n, dtype, inputs=_RL_INPUTS.get(n)) for n in names)


#: The dataflow of the RL loop as ``compare-rl-state.py``'s docstring and
#: hints imply it, for the roles (``stages.roles``): a START, to correct for
#: your trainer (``fastdiff schema > my.toml``, edit the ``inputs``, then
#: ``--schema my.toml``). Each step: the PRNGs advance from their previous
#: state ("advance unconditionally"); actions are sampled from the action
#: PRNG and the policy logits (not dumped: actions are undetermined at best,
#: dump the logits to settle them); the LOB simulator moves its unit state
#: from the previous step's and the actions (its market data is taken as
#: fixed); rewards come from the actions and the simulator's prices and PnL
#: ("rewards diverge with EQUAL action_prng + LOB state: the reward kernel");
#: the ISV controllers update from their previous state and the last
#: rewards; advantages and returns reduce the rewards and dones ("advantages
#: diverge with EQUAL rewards: the advantage reduction"); the CMDP and
#: Page-Hinkley trackers follow the PnL and rewards.
_RL_INPUTS: dict[str, tuple[str, ...]] = {
    # C: action sampling RNG
    "action_prng_state": ("action_prng_state@prev",),
    "iqn_prng_state": ("iqn_prng_state@prev",),
    # D: LOB simulator and unit state
    "pyramid_units_count": ("pyramid_units_count@prev", "actions"),
    "unit_entry_step": ("unit_entry_step@prev", "actions"),
    "unit_entry_price": ("unit_entry_price@prev", "actions"),
    "unit_lots": ("unit_lots@prev", "actions"),
    "unit_active": ("unit_active@prev", "actions"),
    "unit_initial_r": ("unit_initial_r@prev", "actions"),
    "unit_trail_distance": ("unit_trail_distance@prev", "actions"),
    "unit_prev_pos_lots": ("unit_lots@prev",),
    "close_unit_index": ("unit_active@prev", "actions"),
    "prev_realized_pnl": ("prev_realized_pnl@prev", "unit_entry_price@prev", "actions"),
    "prev_position_lots": ("prev_position_lots@prev", "actions"),
    "steps_since_done": ("steps_since_done@prev", "dones@prev"),
    "trade_duration_emit": ("steps_since_done", "actions"),
    # E: ISV controllers
    "isv_full": ("isv_full@prev", "rewards@prev"),
    # F: reward shaping and RL outputs
    "actions": ("action_prng_state", "policy_logits"),
    "next_actions": ("action_prng_state", "policy_logits"),
    "log_pi_old": ("actions", "policy_logits"),
    "raw_rewards": ("actions", "unit_entry_price", "prev_realized_pnl"),
    "rewards": ("actions", "unit_entry_price", "prev_realized_pnl"),
    "reward_abs": ("rewards",),
    "outcome_ema": ("outcome_ema@prev", "rewards"),
    "dones": ("actions", "steps_since_done@prev"),
    "advantages": ("rewards", "dones", "advantages@prev"),
    "returns": ("rewards", "dones", "returns@prev"),
    "session_pnl": ("session_pnl@prev", "prev_realized_pnl"),
    "consec_loss": ("consec_loss@prev", "rewards"),
    "cooldown_remaining": ("cooldown_remaining@prev", "consec_loss"),
    "ph_count": ("ph_count@prev", "dones"),
    "ph_mu": ("ph_mu@prev", "ph_count", "rewards"),
    "ph_m": ("ph_m@prev", "ph_mu", "rewards"),
    "ph_mmin": ("ph_mmin@prev", "ph_m"),
    "ph_stat": ("ph_m", "ph_mmin"),
}


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
_MEMBER_KEYS = {"dtype", "shape", "fields", "inputs"}
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


def load_schema(path: str | os.PathLike[str], warnings: list[str] | None = None) -> Schema:
    """Load a TOML schema; SchemaError names the file, line and key on any
    problem; ``warnings``: as for ``parse_schema``."""
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
    return parse_schema(doc, text, str(p), warnings)


def parse_schema(
    doc: dict[str, object],
    text: str = "",
    origin: str = "<schema>",
    warnings: list[str] | None = None,
) -> Schema:
    """A schema from the data of a schema file (``text``, the file, names lines).
    ``warnings``: where to add what is allowed but likely a mistake (an input
    whose name is close to a member's), a ``warning: ...`` line each."""
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
    schema = Schema(name=name, groups=tuple(groups), default_dtype=default_dtype)
    if schema.has_inputs:
        _check_inputs(schema, owner, lines, origin, warnings)
    return schema


def _check_inputs(
    schema: Schema,
    owner: dict[str, tuple[str, int]],
    lines: Any,
    origin: str,
    warnings: list[str] | None,
) -> None:
    """Refuse inputs that form a cycle within a step; warn of an input in no
    group whose name is close to a member's (a typo, or an input not dumped)."""

    def at(member: str) -> tuple[int, str]:
        gi = owner[member][1]
        return lines().line_of(("group", gi, "members", member, "inputs")), f"group {gi + 1} "

    cycle = schema.input_cycle()
    if cycle is not None:
        line, where = at(cycle[0])
        raise SchemaError(
            f"{origin}:{line}: {where}key {'members.' + cycle[0] + '.inputs'!r}: the inputs at "
            f"one step form a cycle: {' -> '.join(cycle)}; a buffer cannot be computed from "
            f"itself within a step (write NAME{PREV} for an input's value at the previous step)"
        )
    if warnings is None:
        return
    names = [m.pattern for g in schema.groups for m in g.members if not m.is_glob]
    for g in schema.groups:
        for m in g.members:
            for written in m.inputs or ():
                name, _ = split_input(written)
                if schema.is_member(name):
                    continue
                import difflib

                close = difflib.get_close_matches(name, names, n=1, cutoff=0.75)
                if close:
                    line, _ = at(m.pattern)
                    warnings.append(
                        f"warning: {origin}:{line}: input {written!r} of {m.pattern!r} is in no "
                        f"group; did you mean {close[0]!r}? (an input that is not dumped is "
                        "allowed: then ignore this)"
                    )


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
    inputs = _inputs(value.get("inputs"), lambda what: fail(gi, (*at, "inputs"), what))
    # ``table``: a table that holds only the dtype is written back as one.
    return Member(name, dtype, layout, table=inputs is None, unset=unset, inputs=inputs)


def _unset_dtype(text: str) -> tuple[str, bool]:
    """A member's dtype as written: ``("u8", True)`` for ``"u8?"``."""
    # "?" alone is numpy's code for bool: a dtype, not an unset one.
    unset = text.endswith(UNSET) and len(text) > len(UNSET)
    return (text[: -len(UNSET)], True) if unset else (text, False)


def _inputs(raw: object, fail: Any) -> tuple[str, ...] | None:
    """A member's ``inputs``: a list of buffer names, each ``name`` or ``name@prev``."""
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(n, str) for n in raw):
        raise fail(
            'must be a list of buffer names, such as ["actions", "advantages@prev"] '
            "([] for a source: nothing upstream)"
        )
    seen: set[str] = set()
    for written in raw:
        name, _ = split_input(written)
        if not name or name == PREV or "\0" in name:
            raise fail(f"{written!r} names no buffer: give a buffer name, or NAME{PREV}")
        if written in seen:
            raise fail(f"{written!r} is listed twice")
        seen.add(written)
    return tuple(raw)


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
    spec: str | None,
    default_dtype: str | None = None,
    what: str = "--schema",
    warnings: list[str] | None = None,
) -> Schema:
    """A preset name or a path to a TOML file; ``None`` means the default preset.
    ``what``: the argument ``spec`` came from, as errors name it; ``warnings``:
    as for ``parse_schema``."""
    spec = spec or DEFAULT_PRESET
    if spec in PRESETS:
        schema = PRESETS[spec]
    elif spec.endswith(".toml") or os.path.exists(spec):
        schema = load_schema(spec, warnings)
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
    dtypes and groups are for the user to set. Members keep no ``inputs``."""
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
            # The inputs are left out: which of them the run dumps is for the user to say.
            members = tuple(m.replace(inputs=None) if m.inputs is not None else m for m in members)
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
