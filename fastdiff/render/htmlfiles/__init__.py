"""The HTML report's style and script (``report.css``, ``report.js``), read
once, as the page inlines them (coverage.py keeps its ``htmlfiles/`` so).

Plain CSS and a small vanilla script, written for fastdiff: no library, no
build step, nothing loaded from elsewhere. ``render.html`` puts them in the
page and allows exactly them to run (a Content-Security-Policy of their
hashes).
"""

from __future__ import annotations

import os

__all__ = ["SCRIPT", "STYLE"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def _read(name: str) -> str:
    with open(os.path.join(_HERE, name), encoding="utf-8") as fh:
        return fh.read()


#: The page's style sheet and script, as inlined.
STYLE = _read("report.css")
SCRIPT = _read("report.js")
