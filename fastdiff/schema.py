"""Schemas: which buffers form which group, their element types, and hints.

A schema lists groups in pipeline order (upstream first). Each group has a
key, a title, a hint on what to inspect when it is the first to diverge, and
members given by exact name or glob pattern with a dtype. A buffer whose
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
"""

from __future__ import annotations

import os

from .dtypes import DTYPES
from .errors import SchemaError
from .record import Record

OTHER = "other"


class Member(Record):
    """A buffer name, or a glob pattern (``*``, ``?``, ``[...]``), and its dtype."""

    __slots__ = ("dtype", "pattern")

    def __init__(self, pattern: str, dtype: str) -> None:
        self.pattern = pattern
        self.dtype = dtype

    @property
    def is_glob(self) -> bool:
        return any(c in self.pattern for c in "*?[")


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

    __slots__ = ("_exact", "_globs", "default_dtype", "groups", "name")

    def __init__(self, name: str, groups: tuple[Group, ...], default_dtype: str = "u8") -> None:
        self.name = name
        self.groups = groups
        self.default_dtype = default_dtype
        exact: dict[str, tuple[str, str]] = {}
        globs: list[tuple[str, str, str]] = []
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
        self._exact = exact
        self._globs = tuple(globs)

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


def _line_of(text: str, group_index: int | None, key: str) -> int:
    """1-based line where ``key`` is assigned (inside the n-th [[group]] if given)."""
    import re

    lines = text.splitlines()
    pattern = re.compile(r'^\s*(?:"?)' + re.escape(key) + r'(?:"?)\s*=')
    block = -1
    for lineno, line in enumerate(lines, 1):
        if re.match(r"^\s*\[\[\s*group\s*\]\]", line):
            block += 1
            if group_index is not None and block == group_index and key == "":
                return lineno
            continue
        if group_index is not None and block != group_index:
            continue
        if group_index is None and block >= 0:
            break
        if key and pattern.match(line):
            return lineno
    # Fall back on the group's header line, else the first line.
    if group_index is not None and key:
        return _line_of(text, group_index, "")
    return 1


def _member_line(text: str, group_index: int, name: str) -> int:
    """1-based line of member ``name`` in the n-th [[group]]'s ``[group.members]``
    table; else the line of its ``members`` key (an inline table), or its header."""
    import re

    member = re.compile(r"""^\s*(?:{0}|"{0}"|'{0}')\s*=""".format(re.escape(name)))
    block = -1
    in_members = False
    for lineno, line in enumerate(text.splitlines(), 1):
        if re.match(r"^\s*\[\[\s*group\s*\]\]", line):
            block += 1
            in_members = False
        elif re.match(r"^\s*\[", line):
            in_members = block == group_index and bool(
                re.match(r"^\s*\[\s*group\s*\.\s*members\s*\]", line)
            )
        elif in_members and member.match(line):
            return lineno
    return _line_of(text, group_index, "members")


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
        # tomllib names the line of most errors, but not of one at the very end.
        at_end = f"{max(1, len(text.splitlines()))}:" if "end of document" in str(exc) else ""
        raise SchemaError(f"{p}:{at_end} not valid TOML: {exc}") from exc
    return parse_schema(doc, text, str(p))


def parse_schema(doc: dict[str, object], text: str = "", origin: str = "<schema>") -> Schema:
    def fail(group_index: int | None, key: str, what: str) -> SchemaError:
        line = _line_of(text, group_index, key.split(".")[-1] if key else "")
        where = f"group {group_index + 1} " if group_index is not None else ""
        return SchemaError(f"{origin}:{line}: {where}key {key!r}: {what}")

    for k in doc:
        if k not in _TOP_KEYS:
            raise fail(None, k, f"unknown key (expected one of: {', '.join(sorted(_TOP_KEYS))})")
    version = doc.get("schema_version", 1)
    if type(version) is not int or version != 1:
        raise fail(None, "schema_version", f"unsupported version {version!r} (this fastdiff: 1)")
    name = doc.get("name", os.path.splitext(os.path.basename(origin))[0])
    if not isinstance(name, str):
        raise fail(None, "name", "must be a string")
    default_dtype = doc.get("default_dtype", "u8")
    if not isinstance(default_dtype, str) or default_dtype not in DTYPES:
        raise fail(None, "default_dtype", _dtype_problem(default_dtype))
    raw_groups = doc.get("group", [])
    if not isinstance(raw_groups, list):
        raise fail(None, "group", "must be an array of tables, written [[group]]")
    groups: list[Group] = []
    seen: set[str] = set()
    owner: dict[str, tuple[str, int]] = {}  # member -> (group key, group index)
    for gi, g in enumerate(raw_groups):
        if not isinstance(g, dict):
            raise fail(gi, "group", "must be a table")
        for k in g:
            if k not in _GROUP_KEYS:
                raise fail(
                    gi, k, f"unknown key (expected one of: {', '.join(sorted(_GROUP_KEYS))})"
                )
        key = g.get("key")
        if not isinstance(key, str) or not key.strip():
            raise fail(gi, "key", "every group needs a non-empty string key")
        if key == OTHER:
            raise fail(gi, "key", f"{OTHER!r} is reserved for buffers in no group")
        if key in seen:
            raise fail(gi, "key", f"group key {key!r} is used twice")
        seen.add(key)
        title = g.get("title", key)
        hint = g.get("hint", "")
        if not isinstance(title, str):
            raise fail(gi, "title", "must be a string")
        if not isinstance(hint, str):
            raise fail(gi, "hint", "must be a string")
        members = g.get("members", {})
        if not isinstance(members, dict):
            raise fail(gi, "members", 'must be a table of name = "dtype"')
        parsed: list[Member] = []
        for mname, mtype in members.items():
            if not mname:
                raise fail(gi, "members", "a member name is empty")
            if not isinstance(mtype, str) or mtype not in DTYPES:
                raise fail(gi, f"members.{mname}", _dtype_problem(mtype))
            if mname in owner:
                first, first_index = owner[mname]
                raise SchemaError(
                    f"{origin}:{_member_line(text, gi, mname)}: group {gi + 1} key "
                    f"{'members.' + mname!r}: member {mname!r} of group {key!r} is already in "
                    f"group {first!r} (line {_member_line(text, first_index, mname)}); a "
                    "buffer belongs to one group: remove one of them"
                )
            owner[mname] = (key, gi)
            parsed.append(Member(mname, mtype))
        groups.append(Group(key, title, hint, tuple(parsed)))
    return Schema(name=name, groups=tuple(groups), default_dtype=default_dtype)


def _dtype_problem(value: object) -> str:
    return f"unknown dtype {value!r} (valid: {' '.join(DTYPES)})"


def resolve_schema(spec: str | None, default_dtype: str | None = None) -> Schema:
    """A preset name or a path to a TOML file; ``None`` means the default preset."""
    spec = spec or DEFAULT_PRESET
    if spec in PRESETS:
        schema = PRESETS[spec]
    elif spec.endswith(".toml") or os.path.exists(spec):
        schema = load_schema(spec)
    else:
        raise SchemaError(
            f"--schema {spec!r}: no such preset or file "
            f"(presets: {', '.join(PRESETS)}; or a path to a .toml file)"
        )
    if default_dtype is not None:
        if default_dtype not in DTYPES:
            raise SchemaError(f"--default-dtype: {_dtype_problem(default_dtype)}")
        schema = schema.with_default_dtype(default_dtype)
    return schema


def schema_to_toml(schema: Schema) -> str:
    """The schema written as a TOML file that ``load_schema`` reads back."""

    import json

    def q(s: str) -> str:
        # A TOML basic string: JSON's escapes are TOML's, but for DEL.
        return json.dumps(s, ensure_ascii=False).replace("\x7f", "\\u007f")

    out = [f"name = {q(schema.name)}", f"default_dtype = {q(schema.default_dtype)}"]
    for g in schema.groups:
        out += [
            "",
            "[[group]]",
            f"key = {q(g.key)}",
            f"title = {q(g.title)}",
            f"hint = {q(g.hint)}",
        ]
        out.append("[group.members]")
        out += [f"{q(m.pattern)} = {q(m.dtype)}" for m in g.members]
    return "\n".join(out) + "\n"
