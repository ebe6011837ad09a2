"""fastdiff: compare the binary state dumps of two training runs, bitwise and fast.

The library API (the CLI is a thin layer over it)::

    from fastdiff import CompareOptions, compare_runs, render_text
    report = compare_runs("runs/a", "runs/b")
    print(render_text(report))

A training loop writes runs with ``Recorder`` (``fastdiff.recorder``), or
traces a PyTorch program's modules or ops with their dataflow with
``trace`` (``fastdiff.tracing``); a test asserts two runs equal with
``fastdiff.testing.assert_runs_equal``.

Names are imported lazily so that ``import fastdiff`` stays cheap.
"""

from __future__ import annotations

__version__ = "0.1.0"

#: Public name -> the module (under ``fastdiff``) that defines it.
_EXPORTS = {
    "compare_runs": "compare",
    "CompareOptions": "options",
    "Selection": "model.selection",
    "Tolerance": "model.tolerance",
    "scan_bytes": "kernels",
    "Report": "model.results",
    "BufferResult": "model.results",
    "render_text": "render",
    "render_json": "render",
    "report_dict": "render",
    "load_schema": "schemafile",
    "resolve_schema": "presets",
    "Schema": "schema",
    "exit_code": "stages.verdict",
    "Recorder": "recorder",
    "trace": "tracing",
}

TYPE_CHECKING = False  # not typing's: importing typing costs start-up time
if TYPE_CHECKING:
    from .compare import compare_runs
    from .kernels import scan_bytes
    from .model.results import BufferResult, Report
    from .model.selection import Selection
    from .model.tolerance import Tolerance
    from .options import CompareOptions
    from .presets import resolve_schema
    from .recorder import Recorder
    from .render import render_json, render_text, report_dict
    from .schema import Schema
    from .schemafile import load_schema
    from .stages.verdict import exit_code
    from .tracing import trace


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fastdiff' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f".{module}", __name__), name)


__all__ = [
    "BufferResult",
    "CompareOptions",
    "Recorder",
    "Report",
    "Schema",
    "Selection",
    "Tolerance",
    "compare_runs",
    "exit_code",
    "load_schema",
    "render_json",
    "render_text",
    "report_dict",
    "resolve_schema",
    "scan_bytes",
    "trace",
]
