"""Which schema a comparison (or ``stats``) uses when a run is a manifest.

A manifest records the schema it was hashed under and each file's dtype.
The schema the caller gives (``--schema`` or ``--default-dtype``; in Python
``CompareOptions.schema``) wins; without one, the schema recorded in run A's
manifest is used, else run B's, else the preset ``rl-state``.

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
from ..schema import OTHER, RL_STATE, Group, Member, Schema, literal_pattern

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
    recorded = [m.schema for m in manifests if m.schema is not None]
    chosen = (
        given
        or next(iter(recorded), None)
        or by_name(sources if named is None else named)
        or RL_STATE
    )
    said: list[Note] = []
    reported: set[str] = set()
    if given is None:
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
    if not names or any(RL_STATE.classify(n)[0] != OTHER for n in names):
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
