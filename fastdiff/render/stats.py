"""Renderers of ``stats``: pure functions from a ``RunStats`` to text or JSON."""

from __future__ import annotations

from ..textkit.escape import display_path, path_record, put_text
from ..textkit.fmt import format_bytes, format_steps, plural

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..model.stats import RunStats, StepStats, Tally

STATS_SCHEMA_VERSION = 1


# --- JSON --------------------------------------------------------------------


def tally_dict(t: Tally) -> dict[str, Any]:
    return {
        "files": t.files,
        "elements": t.elements,
        "bytes": t.bytes,
        "dtypes": list(t.dtypes),
        "malformed": t.malformed,
    }


def stats_dict(s: RunStats) -> dict[str, Any]:
    lo, hi = s.bytes_per_step
    head: dict[str, Any] = {"schema_version": STATS_SCHEMA_VERSION}
    put_text(head, "run", s.run)  # valid UTF-8, with the raw bytes beside it where not
    return {
        **head,
        "source": s.source,
        "schema": s.schema,
        "totals": {
            "steps": s.n_steps,
            "buffers": s.n_buffers,
            **tally_dict(s.total),
            "bytes_per_step": {"min": lo, "max": hi},
        },
        "disk": None
        if s.disk is None
        else {
            "files": s.disk.files,
            "bytes": s.disk.bytes,
            "digests_only": s.disk.digests_only,
            "digests_only_bytes": s.disk.digests_only_bytes,
        },
        "steps": [
            {
                "step": st.step,
                **tally_dict(st.total),
                "groups": [{"group": k, **tally_dict(t)} for k, t in st.groups],
            }
            for st in s.steps
        ],
        "groups": [
            {
                "group": g.key,
                "title": g.title,
                "buffers": g.buffers,
                "steps": g.steps,
                **tally_dict(g.total),
            }
            for g in s.groups
        ],
        "largest": [
            {
                "name": b.name,
                "group": b.group,
                "dtype": b.dtype,
                "bytes": b.bytes,
                "elements": b.elements,
                "steps": b.steps,
                "total_bytes": b.total_bytes,
            }
            for b in s.largest
        ],
        "missing": [
            {
                "name": m.name,
                "group": m.group,
                "missing_steps": list(m.missing_steps),
                "present_steps": m.present_steps,
            }
            for m in s.missing
        ],
        "malformed": [
            {
                "step": m.step,
                "name": m.name,
                "group": m.group,
                "dtype": m.dtype,
                "bytes": m.bytes,
                "message": m.message,
            }
            for m in s.malformed
        ],
        "skipped": [path_record(k.path, "reason", k.reason) for k in s.skipped],
        "errors": [path_record(e.path, "message", e.message) for e in s.errors],
    }


def render_stats_json(s: RunStats, indent: int | None = 2) -> str:
    import json

    return json.dumps(stats_dict(s), indent=indent, allow_nan=False) + "\n"


# --- text --------------------------------------------------------------------


def _table(rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for r in rows:
        cells = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


def _cells(t: Tally) -> list[str]:
    """files, elements, bytes, dtypes: table cells."""
    return [f"{t.files:,}", f"{t.elements:,}", format_bytes(t.bytes), " ".join(t.dtypes)]


def render_stats_text(s: RunStats) -> str:
    t = s.total
    lines = [f"run: {display_path(s.run)} ({s.source}), schema {display_path(s.schema)}"]
    disk = s.disk
    # A dump is a file of its own unless a container holds several, or a
    # recorder's digest log holds it as a digest only.
    apart = disk is not None and (disk.digests_only or disk.files != t.files)
    lines.append(
        f"total: {plural(s.n_steps, 'step')}, {plural(s.n_buffers, 'buffer')}, "
        f"{plural(t.files, 'dump' if apart else 'file')}, {plural(t.elements, 'element')}, "
        f"{t.bytes:,} bytes ({format_bytes(t.bytes)}); dtypes {' '.join(t.dtypes) or '-'}"
    )
    if disk is not None and (apart or disk.bytes != t.bytes):
        size = f"{disk.bytes:,} bytes ({format_bytes(disk.bytes)})"
        line = f"on disk: {plural(disk.files, 'file')}, {size}"
        if disk.digests_only:
            n, b = disk.digests_only, disk.digests_only_bytes
            are = "is a digest" if n == 1 else "are digests"
            line += (
                f"; {plural(n, 'dump')} of {b:,} bytes ({format_bytes(b)}) {are} only, "
                "in the digest log (no data file)"
            )
        lines.append(line)
    if s.steps:
        lo, hi = s.bytes_per_step
        if lo == hi:
            each = format_bytes(lo)
        elif format_bytes(lo) == format_bytes(hi):
            each = f"about {format_bytes(lo)} each ({lo:,} to {hi:,} bytes)"
        else:
            each = f"{format_bytes(lo)} to {format_bytes(hi)}"
        lines.append(f"per step: {each}")

    # Steps with the same content per group share one row.
    lines += ["", "per step and group:"]
    rows = [["steps", "group", "files", "elements", "bytes", "dtypes"]]
    runs: list[tuple[list[int], StepStats]] = []
    for st in s.steps:
        if runs and runs[-1][1].groups == st.groups:
            runs[-1][0].append(st.step)
        else:
            runs.append(([st.step], st))
    for steps, st in runs:
        label = format_steps(steps) + (f" ({len(steps)} steps)" if len(steps) > 1 else "")
        for i, (key, g) in enumerate(st.groups):
            rows.append([label if i == 0 else "", key, *_cells(g)])
        if len(st.groups) > 1:
            rows.append(["", "all", *_cells(st.total)])
    lines += _table(rows, {2, 3, 4})

    lines += ["", "per group, all steps:"]
    rows = [["group", "title", "buffers", "steps", "files", "elements", "bytes", "share", "dtypes"]]
    for g in s.groups:
        share = f"{100 * g.total.bytes / t.bytes:.1f}%" if t.bytes else "-"
        files, elements, size, dtypes = _cells(g.total)
        rows.append([g.key, g.title, str(g.buffers), str(g.steps), files, elements, size, share,
                     dtypes])  # fmt: skip
    lines += _table(rows, {2, 3, 4, 5, 6, 7})

    if s.largest:
        lines += ["", f"largest buffers (by their largest file; top {len(s.largest)}):"]
        rows = [["buffer", "group", "dtype", "elements", "bytes", "steps", "all steps"]]
        for b in s.largest:
            rows.append(
                [
                    display_path(b.name),
                    b.group,
                    b.dtype,
                    "-" if b.elements is None else f"{b.elements:,}",
                    format_bytes(b.bytes),
                    str(b.steps),
                    format_bytes(b.total_bytes),
                ]
            )
        lines += _table(rows, {3, 4, 5, 6})

    lines.append("")
    if s.missing:
        lines.append(f"missing at some steps ({plural(len(s.missing), 'buffer')}):")
        for m in s.missing:
            lines.append(
                f"  {display_path(m.name)} ({m.group}): missing at step"
                f"{'s' if len(m.missing_steps) > 1 else ''} {format_steps(m.missing_steps)} "
                f"(present at {m.present_steps} of {s.n_steps})"
            )
    else:
        lines.append("missing at some steps: none (every buffer is at every step)")
    if s.malformed:
        lines.append(f"malformed ({plural(len(s.malformed), 'file')}, no elements counted):")
        lines += [
            f"  step {m.step} {display_path(m.name)} [{m.dtype}]: {display_path(m.message)}"
            for m in s.malformed
        ]
    if s.skipped:
        lines.append(f"skipped ({plural(len(s.skipped), 'entry', 'entries')}):")
        lines += [f"  {display_path(k.path)}: {display_path(k.reason)}" for k in s.skipped]
    if s.errors:
        lines.append(f"{plural(len(s.errors), 'error')}:")
        lines += [f"  {display_path(e.path)}: {display_path(e.message)}" for e in s.errors]
    return "\n".join(lines) + "\n"
