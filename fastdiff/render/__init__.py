"""Stage 7: renderers, pure functions from results to text.

- ``render.text``: the compare report for people (``render_text``);
- ``render.json``: the compare report as JSON, the contract scripts rely on
  (``render_json``, ``report_dict``);
- ``render.sweep``: sweep rows, JSON Lines records and summaries;
- ``render.stats``: ``fastdiff stats`` as text or JSON;
- ``render.plot``: the timeline of a compare report as a PNG (needs
  matplotlib, imported there only);
- ``render.words``: the words of statuses, verdicts and roles;
- ``render.notes``: the words of notes (``note_text``).

The neutral helpers every layer uses, escaping (``display_path``) and
counts, sizes and step ranges, are ``fastdiff.textkit``'s.

Import the module you need; the names below are also here, loaded lazily
(this package imports nothing itself, so text output never loads ``json``).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_EXPORTS = {
    "render_text": "text",
    "format_buffer": "text",
    "format_value": "text",
    "render_json": "json",
    "iter_json": "json",
    "report_dict": "json",
    "buffer_dict": "json",
    "json_number": "json",
    "JSON_SCHEMA_VERSION": "json",
    "render_sweep_record": "sweep",
    "sweep_summary_dict": "sweep",
    "render_sweep_summary_record": "sweep",
    "render_sweep_summary_text": "sweep",
    "format_sweep_row": "sweep",
    "render_stats_text": "stats",
    "render_stats_json": "stats",
    "display_path": "..textkit.escape",
    "is_utf8": "..textkit.escape",
    "json_text": "..textkit.escape",
    "os_bytes_hex": "..textkit.escape",
    "path_record": "..textkit.escape",
    "plural": "..textkit.fmt",
    "format_bytes": "..textkit.fmt",
    "format_steps": "..textkit.fmt",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(
        import_module(module if module.startswith(".") else f".{module}", __name__), name
    )
