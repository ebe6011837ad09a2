"""Shared test setup.

When a Hypothesis test fails, its pytest plugin imports
``hypothesis.extra._patching`` (and through it libcst, which uses the
deprecated ``mypy_extensions.TypedDict``) while building the report. With
``filterwarnings = error`` that DeprecationWarning turns a plain test failure
into an INTERNALERROR that aborts the whole session. Importing the module once
here, with that warning silenced, keeps failures reported normally.
"""

from __future__ import annotations

import contextlib
import warnings

# without libcst the plugin skips writing patches by itself
with warnings.catch_warnings(), contextlib.suppress(ImportError):
    warnings.simplefilter("ignore", DeprecationWarning)
    import hypothesis.extra._patching  # noqa: F401
