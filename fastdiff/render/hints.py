"""The words of a group's hint: the schema's hint, then what the size of its
differences points at (``model.findings.Cause``).

``group_hint(g)`` is the hint the text report prints after ``next, <key>:``
and the JSON's ``groups[].hint``: rounding-size differences point at the
order of floating-point operations, large ones at logic, structural
changes (a dtype, a shape, a length, a buffer in one run only) at the code
that produces them; raw bytes say nothing of size.
"""

from __future__ import annotations

from ..model.findings import CauseKind, ChangeKind

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..model.findings import Cause, HeaderChange, LargeCauses, StructuralChange
    from ..model.results import BufferResult, GroupVerdict

__all__ = ["buffer_message", "change_text", "group_hint", "header_text", "large_text"]

#: What a group's magnitude at the first divergent step points at, added to its hint.
MAGNITUDE_HINTS = {
    CauseKind.ROUNDING: (
        "Its differences are rounding-size (at most {ulp} ULP, no NaN or infinity): look at "
        "the order of floating-point operations, such as atomics, parallel or split "
        "reductions, or a fused multiply-add in one build and not the other, rather than at "
        "the logic."
    ),
    CauseKind.LARGE: (
        "Its differences are large ({why}): look for a logic change, such as a branch taken "
        "differently, a wrong index, or memory read before it is written (uninitialised or "
        "stale), rather than rounding."
    ),
    # rounding-size only against the scale of their buffers (facts._cancellation)
    CauseKind.CANCELLATION: (
        "Its differences are rounding-size against the scale of their buffers (at most {ulp} "
        "ULP of the largest |B| of each buffer, or of each row for 2-D and up), though up to "
        "{max_ulp} ULP apart in their own ULPs, where values are small against that scale, as "
        "where the terms of a sum cancel: look at the order of floating-point operations, such "
        "as atomics, parallel or split reductions, or a fused multiply-add in one build and "
        "not the other, rather than at the logic."
    ),
}

#: The hint of a group whose diverged buffers were all compared as raw bytes.
BYTES_HINT = (
    "These buffers were compared as raw bytes (see the note on raw bytes), so how large "
    "their differences are says nothing: give their element type to learn whether they "
    "are rounding-size or large."
)

#: What a group's structural changes at the first divergent step point at.
STRUCTURAL_HINT = (
    "Its differences are structural, not rounding: {changes}: look at the code that "
    "produces {them} (a logic, configuration or version change), not at the order of "
    "floating-point operations."
)


def large_text(large: LargeCauses, rounding_ulp: int) -> str:
    """What makes differences large, as a hint says it: ``beyond 16 ULP, of
    their scale too``, ``1 NaN mismatch``, ``integers that differ``."""
    causes = []
    if large.beyond:
        causes.append(
            f"beyond {rounding_ulp} ULP" + (", of their scale too" if large.of_scale else "")
        )
    if large.n_nan:
        causes.append(f"{large.n_nan:,} NaN {'mismatch' if large.n_nan == 1 else 'mismatches'}")
    if large.n_inf:
        causes.append(f"{large.n_inf:,} inf {'mismatch' if large.n_inf == 1 else 'mismatches'}")
    if large.integers:
        causes.append("integers that differ")
    if not causes:
        return f"beyond {rounding_ulp} ULP, a NaN or infinity, or integers that differ"
    return ", ".join(causes)


def _shape(shape: tuple[int, ...] | None) -> str:
    return "none" if shape is None else str(tuple(shape))


def change_text(c: StructuralChange) -> str:
    """What a buffer changed, as a hint says it: ``w changed element type (f32
    in A, f64 in B)``, ``x is in run A only``."""
    if c.kind == ChangeKind.ONLY_IN_A:
        return f"{c.name} is in run A only"
    if c.kind == ChangeKind.ONLY_IN_B:
        return f"{c.name} is in run B only"
    if c.kind == ChangeKind.LENGTH:
        return f"{c.name} changed length ({c.a:,} elements in A, {c.b:,} in B)"
    if c.kind == ChangeKind.SIZE:
        sizes = [("none" if n is None else f"{n:,} bytes") for n in (c.a, c.b)]
        return f"{c.name} changed size ({sizes[0]} in A, {sizes[1]} in B)"
    h = c.header
    assert h is not None
    parts = []
    if h.dtype_a != h.dtype_b:
        parts.append(f"element type ({h.dtype_a} in A, {h.dtype_b} in B)")
    if h.shape_a != h.shape_b:
        parts.append(f"shape ({_shape(h.shape_a)} in A, {_shape(h.shape_b)} in B)")
    return f"{c.name} changed {' and '.join(parts) or 'header'}"


def _shape_text(shape: tuple[int, ...] | None) -> str:
    return "" if shape is None else f" {tuple(shape)}"


def header_text(h: HeaderChange) -> str:
    """The message of a buffer whose files' headers disagree: ``the files'
    headers differ: f32 (3, 4) in A, f64 (3, 4) in B; nothing more was compared``."""
    return (
        f"the files' headers differ: {h.dtype_a}{_shape_text(h.shape_a)} in A, "
        f"{h.dtype_b}{_shape_text(h.shape_b)} in B; nothing more was compared"
    )


def buffer_message(b: BufferResult) -> str | None:
    """A buffer's message: its own (an error's, a digests-only pair's), or
    what its headers' change says."""
    if b.message is None and b.change is not None:
        return header_text(b.change)
    return b.message


def _listed(items: list[str], most: int = 3) -> str:
    shown = ", ".join(items[:most])
    return shown + (f" and {len(items) - most} more" if len(items) > most else "")


def _join_hint(hint: str, extra: str) -> str:
    if not hint:
        return extra
    hint = hint.rstrip()
    # A schema's hint may end without a full stop: the added sentence starts anew.
    return f"{hint} {extra}" if hint.endswith((".", "!", "?")) else f"{hint}. {extra}"


def cause_text(cause: Cause) -> str:
    """What the size of a group's differences points at, in a sentence or two."""
    ulp = cause.rounding_ulp
    if cause.kind == CauseKind.STRUCTURAL:
        changes = [change_text(c) for c in cause.changes]
        extra = STRUCTURAL_HINT.format(
            changes=_listed(changes), them="it" if len(changes) == 1 else "them"
        )
        if cause.others_magnitude is not None:
            names = _listed(list(cause.others))
            if cause.others_magnitude == "large":
                assert cause.others_large is not None
                size = f"large ({large_text(cause.others_large, ulp)})"
            else:
                scale = ", of their scale" if cause.others_cancellation else ""
                size = f"rounding-size (at most {ulp} ULP{scale})"
            extra += f" Its other differences ({names}) are {size}."
        return extra
    why = large_text(cause.large, ulp) if cause.large is not None else ""
    return MAGNITUDE_HINTS[cause.kind].format(ulp=ulp, why=why, max_ulp=f"{cause.max_ulp or 0:,}")


def group_hint(g: GroupVerdict) -> str:
    """A group's whole hint: the schema's, then what its cause points at (a
    group of raw bytes: what that means, instead)."""
    cause = g.cause
    if cause is None:
        return g.hint
    if cause.kind == CauseKind.BYTES:
        return BYTES_HINT  # the size of a difference in raw bytes says nothing
    return _join_hint(g.hint, cause_text(cause))
