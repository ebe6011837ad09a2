"""Schema files: reading a TOML schema (``load_schema``, ``parse_schema``, with
a one-line error naming the file, line and key for anything wrong) and
writing one (``schema_to_toml``, and ``schema_for_run``: a start for a run's
own). The model they read into is ``fastdiff.schema``'s; this module is
imported only where a schema file is read or written, so a comparison with
a preset pays nothing for it.
"""

from __future__ import annotations

import os

from .dtypes import dtype_name
from .errors import SchemaError
from .schema import (
    OTHER,
    PREV,
    UNSET,
    Field,
    Group,
    Layout,
    Member,
    Schema,
    _shape_text,
    literal_pattern,
    split_input,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

    from .tomllines import TomlLines


_TOP_KEYS = {"name", "default_dtype", "group", "schema_version", "inputs_complete", "ignore"}
_GROUP_KEYS = {"key", "title", "hint", "members"}
_MEMBER_KEYS = {"dtype", "shape", "fields", "inputs", "int_tolerance"}
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
    complete = doc.get("inputs_complete", False)
    if not isinstance(complete, bool):
        raise fail(None, ("inputs_complete",), "must be true or false")
    ignore = doc.get("ignore", [])
    if not isinstance(ignore, list) or not all(isinstance(g, str) and g for g in ignore):
        raise fail(None, ("ignore",), 'must be a list of buffer names or globs, such as ["args.*"]')
    schema = Schema(
        name=name, groups=tuple(groups), default_dtype=default_dtype, inputs_complete=complete,
        ignore=tuple(dict.fromkeys(ignore)),
    )  # fmt: skip
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
    int_tolerance = value.get("int_tolerance", False)
    if not isinstance(int_tolerance, bool):
        raise fail(
            gi, (*at, "int_tolerance"), "must be true or false (true: the tolerance applies to "
            "this integer or bool buffer too)",
        )  # fmt: skip
    # ``table``: a table that holds only the dtype is written back as one.
    return Member(
        name, dtype, layout, table=inputs is None, unset=unset, inputs=inputs,
        int_tolerance=int_tolerance,
    )  # fmt: skip


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


# --- writing a schema file ----------------------------------------------------


def schema_for_run(
    schema: Schema,
    names: Iterable[str],
    name: str,
    dtypes: Mapping[str, str] | None = None,
) -> Schema:
    """A start for a run's own schema: ``schema``'s groups with only the
    members that match one of ``names`` (a group left empty is left out),
    then a group ``new`` holding every name in no group (as a pattern that
    matches just that name), for the user to group. ``dtypes``: the dtype
    the files' headers give a buffer (``.npy``, a recorder's run), which
    compare reads it as whatever the schema says: it is written, and set,
    for that buffer, in ``new`` or as an exact member of ``schema``'s; a
    buffer in ``new`` without one gets ``schema``'s default dtype, not set
    (``"u8?"``). Members keep no ``inputs``."""
    from fnmatch import fnmatchcase

    known = dtypes or {}
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
            members = tuple(
                m.replace(
                    inputs=None,
                    dtype=m.dtype if m.is_glob else known.get(m.pattern, m.dtype),
                    unset=m.unset and (m.is_glob or m.pattern not in known),
                )
                for m in members
            )
            groups.append(Group(g.key, g.title, g.hint, members))
    rest = [n for n in found if schema.classify(n)[0] == OTHER]
    if rest:
        taken = {g.key for g in schema.groups}
        key = next(k for k in ("new", *(f"new{i}" for i in range(2, len(taken) + 3)))
                   if k not in taken)  # fmt: skip
        members = tuple(
            Member(literal_pattern(n), known.get(n, schema.default_dtype), unset=n not in known)
            for n in rest
        )
        unset = sum(m.unset for m in members)
        if unset == len(members):
            todo = "set each one's dtype, and group them"
        elif unset:
            todo = f"set the dtype of each one marked {UNSET!r}, and group them"
        else:
            todo = "group them (each one's dtype is its file's header's)"
        groups.append(Group(key, f"buffers in no group yet: {todo}", "", members))
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
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, list):
            return "[" + ", ".join(map(value, v)) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{key(k)} = {value(x)}" for k, x in v.items()) + " }"
        return str(v)

    out = []
    if schema.has_unset:
        d = schema.default_dtype
        how = "u8: raw bytes" if d == "u8" else f"the default, {d}"
        out += [
            f'# A dtype with a "{UNSET}" after it ("{d}{UNSET}") is not set yet: the buffer is',
            f"# read as that dtype ({how}), and every report says its dtype is not",
            f'# set. Write its dtype without the "{UNSET}" ("f32", "i32", ...) once you know it.',
        ]
    out += [f"name = {q(schema.name)}", f"default_dtype = {q(schema.default_dtype)}"]
    if schema.inputs_complete:
        out.append("inputs_complete = true")
    if schema.ignore:
        out.append(f"ignore = {value(list(schema.ignore))}")
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
