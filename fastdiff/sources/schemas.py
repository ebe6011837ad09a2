"""Which schema a comparison (or ``stats``) uses when none is given.

A manifest records the schema it was hashed under and each file's dtype; a
run a tracer wrote (``fastdiff.trace``) records its dataflow, a schema of
every record's inputs (``sources.traced``). The schema the caller gives
(``--schema`` or ``--default-dtype``; in Python ``CompareOptions.schema``)
wins; without one, the schema run A records is used (its manifest's, or its
trace's dataflow), else run B's, else groups from the buffer names
(``by_name``), else the preset ``rl-state``. A note says when a trace's
dataflow is used, and when run B's dataflow differs from run A's (the
records whose inputs differ, and those one run only holds: roles follow
run A's; where the two traces part is the report's structural difference,
``stages.structure``).

Whatever disagrees with the choice is said, one line each, as a ``note:``
or ``warning:`` for the caller to print: a manifest that records no schema
(from an older fastdiff); two manifests hashed under different schemas;
each buffer the two manifests give different dtypes; and, per manifest, the
buffers whose recorded dtype is not the one they are now read as. These
are warnings, not errors: the bytes compared are the same whichever dtype
reads them (the dtype decides groups, element counts, and whether a size is
a whole number of elements).
"""

from __future__ import annotations

from ..model.findings import Note, NoteKind
from ..presets import DEFAULT_PRESET, preset
from ..schema import OTHER, Group, Member, Schema, literal_pattern, split_input

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from . import RunSource
    from .buffers import BufferRef


def _differing(src: RunSource, schema: Schema, skip: set[str]) -> list[tuple[str, str, str]]:
    """(name, recorded, read as) of each buffer whose recorded dtype ``schema`` changes."""
    out = []
    for name in sorted(src.dtypes.keys() - skip):
        recorded, used = src.dtypes[name], schema.classify(name)[1]
        if recorded != used:
            out.append((name, recorded, used))
    return out


def choose_schema(
    sources: Sequence[RunSource],
    given: Schema | None,
    named: Sequence[RunSource] | None = None,
) -> tuple[Schema, tuple[Note, ...]]:
    """The schema to read ``sources`` (a run pair, or one run) with, and what
    to tell the user about the choice (notes; warnings where runs disagree).
    ``named``: the sources that hold their buffers, whose names and dtypes
    ``by_name`` reads (default: ``sources``): for a run of several ranks,
    its ranks' (``sources.ranks``), so that it is read as a run of one rank
    of the same files would be."""
    manifests = list({s.spec: s for s in sources if s.is_manifest}.values())
    # A manifest's schema, else a trace's dataflow (a folder a tracer wrote).
    recorded = [
        s.schema if s.is_manifest else s.dataflow
        for s in {s.spec: s for s in sources}.values()
        if (s.schema if s.is_manifest else s.dataflow) is not None
    ]
    chosen = (
        given
        or next(iter(recorded), None)
        or by_name(sources if named is None else named)
        or preset(DEFAULT_PRESET)
    )
    said: list[Note] = []
    reported: set[str] = set()
    if given is None:
        said += _dataflow_notes(sources, chosen)
        chosen = _with_others(sources, chosen)
        for m in manifests:
            if m.schema is None:
                said.append(
                    Note.of(
                        NoteKind.NO_RECORDED_SCHEMA, spec=m.spec, schema=chosen.name, sweep=False
                    )
                )
        if len(manifests) == 2:
            a, b = manifests
            if a.schema is not None and b.schema is not None and a.schema != b.schema:
                said.append(
                    Note.of(
                        NoteKind.MANIFEST_SCHEMAS_DIFFER,
                        spec_a=a.spec,
                        spec_b=b.spec,
                        name_a=a.schema.name,
                        name_b=b.schema.name,
                        warning=True,
                    )
                )
            for name in sorted(a.dtypes.keys() & b.dtypes.keys()):
                da, db = a.dtypes[name], b.dtypes[name]
                if da != db:
                    reported.add(name)
                    said.append(
                        Note.of(
                            NoteKind.MANIFEST_DTYPES_DIFFER,
                            name=name,
                            dtype_a=da,
                            spec_a=a.spec,
                            dtype_b=db,
                            spec_b=b.spec,
                            read_as=chosen.classify(name)[1],
                            warning=True,
                        )
                    )
    for m in manifests:
        differ = _differing(m, chosen, reported)
        if not differ:
            continue
        said.append(
            Note.of(
                NoteKind.MANIFEST_READ_AS,
                spec=m.spec,
                given=None if given is None else given.name,
                recorded=None if m.schema is None else m.schema.name,
                chosen=chosen.name,
                buffers=differ,
                warning=True,
            )
        )
    return chosen, tuple(said)


def _step_of(f: BufferRef) -> int:
    return f.step


def _exact_inputs(schema: Schema) -> dict[str, tuple[str, ...] | None]:
    """Each exact member of ``schema`` and the inputs it declares."""
    return {m.pattern: m.inputs for g in schema.groups for m in g.members if not m.is_glob}


def _dataflow_notes(sources: Sequence[RunSource], chosen: Schema) -> list[Note]:
    """What to say when a trace's dataflow is the schema chosen: whose it is,
    and where another run's dataflow differs from it."""
    from .names import DATAFLOW

    traced = list({s.spec: s for s in sources if s.dataflow is not None}.values())
    owner = next((s for s in traced if s.dataflow is chosen), None)
    if owner is None:
        return []
    said = [Note.of(NoteKind.TRACE_DATAFLOW, spec=owner.spec, file=DATAFLOW)]
    mine = _exact_inputs(chosen)
    for other in traced:
        if other is owner or other.dataflow == chosen:
            continue
        theirs = _exact_inputs(other.dataflow)  # type: ignore[arg-type]
        differ = [n for n in mine if n in theirs and mine[n] != theirs[n]]
        only_mine = [n for n in mine if n not in theirs]
        only_theirs = [n for n in theirs if n not in mine]
        if not (differ or only_mine or only_theirs):
            continue
        note = Note.of(
            NoteKind.DATAFLOW_DIFFERS, owner=owner.spec, other=other.spec, differ=differ,
            only_owner=only_mine, only_other=only_theirs,
        )  # fmt: skip
        said.append(note)
    return said


def _with_others(sources: Sequence[RunSource], chosen: Schema) -> Schema:
    """``chosen``, a trace's dataflow, with what the other traces' dataflows
    add: the inputs a record reads there besides, and the records only they
    hold (``merge_dataflows``)."""
    traced = list({s.spec: s for s in sources if s.dataflow is not None}.values())
    if not any(s.dataflow is chosen for s in traced):
        return chosen
    merged = chosen
    for other in traced:
        if other.dataflow is not chosen and other.dataflow != chosen:
            merged = merge_dataflows(merged, other.dataflow)  # type: ignore[arg-type]
    return merged


def merge_dataflows(first: Schema, other: Schema) -> Schema:
    """Two traces' dataflows as one: ``first``'s groups and records, each
    record's inputs followed by those it reads in ``other`` only (unknown in
    either: unknown), and the records only ``other`` holds, appended to their
    group (a group ``first`` lacks: after ``first``'s). An input that would
    close a cycle within a step (the traces ran ops in other orders) is left
    out."""

    def exact(schema: Schema) -> dict[str, Member]:
        return {m.pattern: m for g in schema.groups for m in g.members if not m.is_glob}

    mine, theirs = exact(first), exact(other)
    inputs: dict[str, list[str] | None] = {
        p: None if m.inputs is None else list(m.inputs) for p, m in mine.items()
    }
    extra = [p for p in theirs if p not in mine]
    for p in extra:
        inputs[p] = []  # edges added below, each checked

    def reaches(start: str, goal: str) -> bool:
        stack, seen = [start], {start}
        while stack:
            node = stack.pop()
            if node == goal:
                return True
            for written in inputs.get(node) or ():
                name, prev = split_input(written)
                if not prev and name not in seen:
                    seen.add(name)
                    stack.append(name)
        return False

    for p, m in theirs.items():
        have = inputs[p]
        if have is None:
            continue
        if m.inputs is None:
            inputs[p] = None
            continue
        for written in m.inputs:
            if written in have:
                continue
            name, prev = split_input(written)
            if prev or not reaches(name, p):
                have.append(written)
    theirs_by_group = {g.key: [m for m in g.members if m.pattern in extra] for g in other.groups}
    groups = [(g, [*g.members, *theirs_by_group.pop(g.key, ())]) for g in first.groups]
    groups += [(g, theirs_by_group[g.key]) for g in other.groups if theirs_by_group.get(g.key)]
    merged = []
    for g, members in groups:
        out = []
        for m in members:
            found = m.inputs if m.is_glob else inputs[m.pattern]
            declared = None if found is None else tuple(found)
            out.append(m if declared == m.inputs else m.replace(inputs=declared))
        merged.append(Group(g.key, g.title, g.hint, tuple(out)))
    return Schema(
        first.name, tuple(merged), first.default_dtype, first.inputs_complete, first.ignore
    )


#: The name of the schema whose groups come from buffer names.
BY_NAME = "by-name"


def by_name(sources: Sequence[RunSource]) -> Schema | None:
    """For runs whose every buffer's file gives its dtype (``.npy``,
    safetensors, ``.npz``, ``torch.save``) and none of whose buffers the
    preset ``rl-state`` knows: a schema whose groups are the first dotted
    part of the names (``model.layers.0.w`` is in group ``model``), in the
    order their buffers first appear: step by step (in step order), and
    within a step in the order the run holds them (a recorder's, as its
    digest log says; a container file's own order; else the file names'),
    run A's first. None otherwise, and for runs with no buffers."""
    names: dict[str, None] = {}
    for src in sources:
        buffers = src.listing.buffers
        if any(f.dtype is None for f in buffers):
            return None
        # Listed by file name, step 10 comes before step 2: the steps in order,
        # each step's buffers in the run's own order (a stable sort).
        for f in sorted(buffers, key=_step_of):
            names[f.name] = None
    default = preset(DEFAULT_PRESET)
    if not names or any(default.classify(n)[0] != OTHER for n in names):
        return None
    groups: dict[str, list[Member]] = {}
    for name in names:
        key, dot, _ = name.partition(".")
        if not key:
            continue  # no first part to group by ("", ".x"): in no group
        if key == OTHER:
            key = f"{OTHER}_"  # the reserved key stays for buffers in no group
        members = groups.get(key)
        if members is None:
            members = groups[key] = []
        pattern = f"{literal_pattern(name.partition('.')[0])}.*" if dot else literal_pattern(name)
        if all(m.pattern != pattern for m in members):
            members.append(Member(pattern, "u8"))
    return Schema(BY_NAME, tuple(Group(k, k, "", tuple(m)) for k, m in groups.items()))
