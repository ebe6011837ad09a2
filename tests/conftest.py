"""Shared test setup.

When a Hypothesis test fails, its pytest plugin imports
``hypothesis.extra._patching`` (and through it libcst, which uses the
deprecated ``mypy_extensions.TypedDict``) while building the report. With
``filterwarnings = error`` that DeprecationWarning turns a plain test failure
into an INTERNALERROR that aborts the whole session. Importing the module once
here, with that warning silenced, keeps failures reported normally.

A suite started in the background by a shell without job control (``cmd &``
in a script) inherits SIGINT ignored, and so would every fastdiff it starts
(an ignored signal stays ignored across ``exec``): the tests of Ctrl-C would
then see it ignored, as such a user asked. The suite gives SIGINT its usual
handler, so the processes it starts get the default a terminal gives.
"""

from __future__ import annotations

import contextlib
import signal
import warnings

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# without libcst the plugin skips writing patches by itself
with warnings.catch_warnings(), contextlib.suppress(ImportError):
    warnings.simplefilter("ignore", DeprecationWarning)
    import hypothesis.extra._patching  # noqa: F401
