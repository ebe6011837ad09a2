"""Schemas: which buffers form which group, their element types, and hints.

A schema lists groups in pipeline order (upstream first). Each group has a
key, a title, a hint on what to inspect when it is the first to diverge, and
members given by exact name or glob pattern with a dtype (any name
``dtypes.dtype_name`` takes, numpy's ``float32`` or ``<f4`` too, kept as the
canonical one: ``f32``). A buffer whose
name is in no group is still compared, in the group ``other``, as the
schema's default dtype (``u8``, raw bytes, unless told otherwise).

The built-in preset ``rl-state`` describes the RL-loop dumps that
``compare-rl-state.py`` knows (its groups C to F), after the groups A (CfC
carry) and B (PER state) its docstring names; ``raw`` has no groups at all. A user schema
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
schema declares any: a schema without them costs nothing more. A schema
whose inputs are known complete (``inputs_complete = true``: the dataflow a
tracer recorded, ``fastdiff.trace``, which records every tensor a record
reads) lists, for a buffer, what it read at any step; an input that neither
run holds at a step was not read there, and does not count.
"""

from __future__ import annotations

from .errors import SchemaError
from .model.inputs import PREV as PREV
from .model.inputs import split_input as split_input
from .model.value import Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


OTHER = "other"


class Field(Value):
    """A named element range ``[start, stop)`` of a buffer."""

    __slots__ = ("name", "start", "stop")

    def __init__(self, name: str, start: int, stop: int) -> None:
        self.name = name
        self.start = start
        self.stop = stop


def _shape_text(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


class Layout(Value):
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
# How an input is written (``name@prev``: the previous step a run holds) is
# the result model's, as roles hold inputs so.


class Member(Value):
    """A buffer name, or a glob pattern (``*``, ``?``, ``[...]``), its dtype and
    its layout. ``table``: it was given as a table (``{ dtype = ... }``), and
    is written back as one (as is a member with inputs). ``unset``: the
    dtype is a placeholder nobody set (written ``"u8?"``): reports say so.
    ``inputs``: the buffers it is computed from, as written (``name`` or
    ``name@prev``); None: not declared (no role), ``()``: a source.
    ``int_tolerance``: a tolerance applies to it though its dtype is an
    integer or bool (else those stay exact; ``kernels.Tolerance``)."""

    __slots__ = ("dtype", "inputs", "int_tolerance", "layout", "pattern", "table", "unset")

    def __init__(
        self,
        pattern: str,
        dtype: str,
        layout: Layout | None = None,
        table: bool = False,
        unset: bool = False,
        inputs: tuple[str, ...] | None = None,
        int_tolerance: bool = False,
    ) -> None:
        self.pattern = pattern
        self.dtype = dtype
        self.layout = layout
        self.inputs = inputs
        self.int_tolerance = int_tolerance
        self.table = table or layout is not None or int_tolerance
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
        if self.int_tolerance:
            d["int_tolerance"] = True
        return d


class Group(Value):
    __slots__ = ("hint", "key", "members", "title")

    def __init__(self, key: str, title: str, hint: str, members: tuple[Member, ...]) -> None:
        self.key = key
        self.title = title
        self.hint = hint
        self.members = members


OTHER_GROUP = Group(OTHER, "not in the schema", "", ())


class Schema(Value):
    """Groups in pipeline order, and the dtype of buffers in none of them;
    ``inputs_complete``: the members' inputs list everything each buffer
    reads at any step (see the module's doc).

    Raises SchemaError when a member is in two groups.
    """

    __slots__ = (
        "_exact", "_glob_index", "_globs", "_inputs", "_int_tolerant", "_layouts",
        "_prefix_lengths", "_unset", "default_dtype", "groups", "ignore", "inputs_complete",
        "name",
    )  # fmt: skip

    def __init__(
        self,
        name: str,
        groups: tuple[Group, ...],
        default_dtype: str = "u8",
        inputs_complete: bool = False,
        ignore: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.groups = groups
        self.default_dtype = default_dtype
        self.inputs_complete = inputs_complete
        #: Glob patterns of buffer names left out of every comparison
        #: (``ignore = [...]`` in a schema file; ``--ignore`` adds to them).
        self.ignore = ignore
        exact: dict[str, tuple[str, str]] = {}
        globs: list[tuple[str, str, str]] = []
        layouts: dict[str, Layout] = {}  # by pattern: only members that have one
        unset: set[str] = set()  # patterns whose dtype nobody set
        inputs: dict[str, tuple[str, ...]] = {}  # by pattern: only members that declare them
        int_tolerant: set[str] = set()  # patterns whose integers a tolerance applies to
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
                if m.int_tolerance:
                    int_tolerant.add(m.pattern)
        self._exact = exact
        self._globs = tuple(globs)
        # The globs by their literal prefix (what comes before the first of
        # "*?["): only a glob whose prefix starts a name can match it, so a
        # name is tried against those alone, in the schema's order (a schema
        # of one glob per name, such as by-name's, is not tried n times n).
        # A glob that is its prefix and one "*" (by-name's "layer0.*") needs
        # no matching beyond its prefix: it is marked so (a negative index).
        index: dict[str, list[int]] = {}
        for i, (pattern, _, _) in enumerate(globs):
            cut = min((j for j in map(pattern.find, "*?[") if j >= 0), default=len(pattern))
            index.setdefault(pattern[:cut], []).append(~i if pattern[cut:] == "*" else i)
        self._glob_index = {k: tuple(v) for k, v in index.items()}
        self._prefix_lengths = tuple(sorted({len(k) for k in index}))
        self._layouts = layouts
        self._unset = frozenset(unset)
        self._inputs = inputs
        self._int_tolerant = frozenset(int_tolerant)

    def classify(self, name: str) -> tuple[str, str]:
        """(group key, dtype) of a buffer: exact names first, then globs in order."""
        hit = self._exact.get(name)
        if hit is not None:
            return hit
        glob = self._glob_of(name)
        return (glob[1], glob[2]) if glob is not None else (OTHER, self.default_dtype)

    def _glob_of(self, name: str) -> tuple[str, str, str] | None:
        """The first glob (pattern, group key, dtype), in the schema's order,
        that matches ``name``; None if none does."""
        if not self._globs:
            return None
        from fnmatch import fnmatchcase

        index = self._glob_index
        found: list[int] = []
        for n in self._prefix_lengths:
            if n > len(name):
                break
            found += index.get(name[:n], ())
        if len(self._prefix_lengths) > 1:
            found.sort(key=lambda i: ~i if i < 0 else i)
        for i in found:
            if i < 0:
                return self._globs[~i]  # "prefix*", and the prefix starts the name
            glob = self._globs[i]
            if fnmatchcase(name, glob[0]):
                return glob
        return None

    def layout_of(self, name: str) -> Layout | None:
        """The layout of a buffer (the member that classifies it), if it has one."""
        if not self._layouts:
            return None  # the usual case: no member declares a shape or fields
        pattern = self._pattern_of(name)
        return None if pattern is None else self._layouts.get(pattern)

    @property
    def has_unset(self) -> bool:
        """Some member's dtype is a placeholder nobody set (``"u8?"``)."""
        return bool(self._unset)

    def dtype_unset(self, name: str) -> bool:
        """Whether the member that classifies buffer ``name`` leaves its dtype unset."""
        if not self._unset:
            return False  # the usual case
        return self._pattern_of(name) in self._unset

    def _pattern_of(self, name: str) -> str | None:
        """The pattern of the member that classifies ``name`` (None: no member does)."""
        if name in self._exact:
            return name
        glob = self._glob_of(name)
        return None if glob is None else glob[0]

    def int_tolerant(self, name: str) -> bool:
        """Whether the member that classifies ``name`` asks for the tolerance
        on its integers (``int_tolerance = true``)."""
        if not self._int_tolerant:
            return False  # the usual case
        return self._pattern_of(name) in self._int_tolerant

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
        return Schema(self.name, self.groups, dtype, self.inputs_complete, self.ignore)

    @property
    def order(self) -> dict[str, int]:
        """Pipeline position of each group key; ``other`` comes last."""
        pos = {g.key: i for i, g in enumerate(self.groups)}
        pos[OTHER] = len(self.groups)
        return pos


RAW = Schema(name="raw", groups=())


def literal_pattern(name: str) -> str:
    """A member pattern that matches exactly ``name``: its glob characters
    (``*``, ``?``, ``[``) each made a one-character class (``w[1]`` ->
    ``w[[]1]``)."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)
