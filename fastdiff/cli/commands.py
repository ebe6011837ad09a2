"""The command table, in the style of pip's: name -> (module, one-line summary).

``fastdiff --help`` lists the commands from here without importing any;
``command_module`` imports the one chosen. A leaf: it imports no command.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

#: name -> (module, one-line summary). Each module has ``DESCRIPTION``,
#: ``ARGUMENTS`` (``spec.Arg`` declarations) and ``run(args) -> exit code``.
COMMANDS = {
    "compare": (
        "fastdiff.cli.compare",
        "compare two runs (exit 0 identical, 1 diverged, 2 trouble)",
    ),
    "watch": (
        "fastdiff.cli.watch",
        "compare two runs while they are written; stop at the first divergent step",
    ),
    "sweep": (
        "fastdiff.cli.sweep",
        "compare many run pairs, hashing each file once (JSON Lines)",
    ),
    "rerun": (
        "fastdiff.cli.rerun",
        "run a job N times and say whether it is deterministic, and where it diverges",
    ),
    "hash": ("fastdiff.cli.hash", "write a run's manifest (file list and chunk digests)"),
    "stats": (
        "fastdiff.cli.stats",
        "sizes of a run's dumps: per step and group, largest buffers, gaps",
    ),
    "bench": (
        "fastdiff.cli.bench",
        "measure how fast this machine compares dumps (sizes, jobs, a real run's shape)",
    ),
    "schema": ("fastdiff.cli.schema", "print a schema as TOML (a start for your own)"),
}

DESCRIPTION = "Compare the binary state dumps of two training runs, bitwise and fast."

#: The one-line helps of the options before the command (``spec`` declares them).
HELP_HELP = "show this help message and exit"  # argparse's own words
VERSION_HELP = "show fastdiff's version and exit"
DEBUG_HELP = "on an unexpected error (a bug), print the traceback (also: FASTDIFF_DEBUG=1)"
#: How ``fastdiff --help`` lists them.
TOP_OPTIONS = (("-h, --help", HELP_HELP), ("--version", VERSION_HELP), ("--debug", DEBUG_HELP))


def command_module(name: str) -> ModuleType:
    """The module of command ``name`` (imported now if not yet)."""
    # __import__, not importlib: one import fewer at start-up.
    return __import__(COMMANDS[name][0], fromlist=("run",))
