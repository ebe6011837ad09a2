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

from ..render.fmt import plural
from ..schema import RL_STATE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..schema import Schema
    from . import RunSource


def _differing(src: RunSource, schema: Schema, skip: set[str]) -> list[str]:
    """``name (recorded X, read as Y)`` for each buffer whose recorded dtype ``schema`` changes."""
    out = []
    for name in sorted(src.dtypes.keys() - skip):
        recorded, used = src.dtypes[name], schema.classify(name)[1]
        if recorded != used:
            out.append(f"{name} (recorded {recorded}, read as {used})")
    return out


def choose_schema(
    sources: Sequence[RunSource], given: Schema | None
) -> tuple[Schema, tuple[str, ...]]:
    """The schema to read ``sources`` (a run pair, or one run) with, and what
    to tell the user about the choice (``note: ...`` / ``warning: ...``)."""
    manifests = list({s.spec: s for s in sources if s.is_manifest}.values())
    recorded = [m.schema for m in manifests if m.schema is not None]
    chosen = given or next(iter(recorded), None) or RL_STATE
    said: list[str] = []
    reported: set[str] = set()
    if given is None:
        for m in manifests:
            if m.schema is None:
                said.append(
                    f"note: {m.spec} records no schema (written by an older fastdiff); read "
                    f"with schema {chosen.name!r}; pass --schema to choose, or hash the "
                    "run again"
                )
        if len(manifests) == 2:
            a, b = manifests
            if a.schema is not None and b.schema is not None and a.schema != b.schema:
                names = (
                    f"two versions of {a.schema.name!r}"
                    if a.schema.name == b.schema.name
                    else f"{a.schema.name!r} and {b.schema.name!r}"
                )
                said.append(
                    f"warning: {a.spec} and {b.spec} were hashed under different schemas "
                    f"({names}); groups and dtypes are {a.spec}'s; pass --schema to choose"
                )
            for name in sorted(a.dtypes.keys() & b.dtypes.keys()):
                da, db = a.dtypes[name], b.dtypes[name]
                if da != db:
                    reported.add(name)
                    said.append(
                        f"warning: buffer {name!r} was hashed as {da} in {a.spec} but as {db} "
                        f"in {b.spec}; read as {chosen.classify(name)[1]} (pass --schema to choose)"
                    )
    for m in manifests:
        differ = _differing(m, chosen, reported)
        if not differ:
            continue
        if given is not None:
            what = (
                f"the schema given ({given.name!r}) is used, not the one recorded in it "
                f"({m.schema.name!r})"
                if m.schema is not None
                else f"the schema given ({given.name!r}) is used"
            )
        else:
            what = f"read with schema {chosen.name!r}"
        said.append(
            f"warning: {m.spec}: {what}; the dtype differs for "
            f"{plural(len(differ), 'buffer')}: {', '.join(differ)}"
        )
    return chosen, tuple(said)
