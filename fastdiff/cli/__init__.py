"""The command line: parse arguments, call the library, print, exit.

Start-up is part of the interface, so a command pays only for itself:
``COMMANDS`` names each command's module and one-line summary, ``fastdiff
--help`` lists them from the table without importing any, and only the
chosen command's module is imported. Its arguments are declared once as data
(``spec``); the plain cases are parsed without argparse, the rest (help,
abbreviations, usage errors) by argparse from the same declarations
(``full``). numpy and numba load only when a pair differs (``kernels``).

Library errors become one ``fastdiff: error: ...`` line on stderr and exit
code 2; so does any unexpected exception (a bug: the line says so, the
traceback only with --debug or FASTDIFF_DEBUG=1), as exit 1 means "diverged"
to every script. A closed pipe (``| head``) ends quietly; Ctrl-C exits 130.
"""

from __future__ import annotations

import gc
import os
import sys

from .. import __version__
from ..errors import EXIT_INTERRUPTED, EXIT_TROUBLE, FastdiffError
from .commands import COMMANDS, DESCRIPTION, TOP_OPTIONS, command_module
from .output import print_problems, silence_stdout, write_stdout

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace
    from collections.abc import Sequence
    from typing import NoReturn

__all__ = [
    "COMMANDS",
    "build_parser",
    "command_module",
    "launch",
    "main",
    "parse",
    "print_problems",
    "write_stdout",
]

#: Where unexpected errors (bugs) are to be reported.
BUG_REPORTS = "the fastdiff maintainers"


# --- the top level -----------------------------------------------------------------


def _usage_error(message: str) -> SystemExit:
    """What argparse's error would print, for the top level's own checks."""
    print(f"fastdiff: error: {message} (see 'fastdiff --help')", file=sys.stderr)
    return SystemExit(EXIT_TROUBLE)


def _wrap(text: str, indent: int, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` columns, all but the first
    indented by ``indent`` (a word longer than a line gets one of its own)."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        if line and indent + len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, line]


def _help_width() -> int:
    """argparse's width: $COLUMNS, else the terminal's, else 80; less 2."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 80
    return max(columns - 2, 40)


def top_help() -> str:
    """``fastdiff --help``: the commands from the table, none imported."""
    width = _help_width()
    rows = TOP_OPTIONS
    out = ["usage: fastdiff [-h] [--version] [--debug] COMMAND ...", "", DESCRIPTION, ""]
    out.append("commands:")
    column = 4 + max(map(len, COMMANDS)) + 2
    for name, (_, summary) in COMMANDS.items():
        first, *more = _wrap(summary, column, width)
        out.append(f"    {name:<{column - 6}}  {first}")
        out += [" " * column + line for line in more]
    out += ["", "options:"]
    column = 2 + max(len(name) for name, _ in rows) + 2
    for name, text in rows:
        first, *more = _wrap(text, column, width)
        out.append(f"  {name:<{column - 4}}  {first}")
        out += [" " * column + line for line in more]
    out += ["", "Run 'fastdiff COMMAND --help' for the options of a command."]
    return "\n".join(out) + "\n"


def _unknown_command(word: str) -> SystemExit:
    """The error for a word that names no command, with the closest name."""
    import difflib

    close = difflib.get_close_matches(word, COMMANDS, n=1)
    hint = f"did you mean '{close[0]}'?" if close else "the commands are " + ", ".join(COMMANDS)
    return _usage_error(f"unknown command {word!r}; {hint}")


def parse(words: Sequence[str]) -> Namespace:
    """The parsed command line, with ``command`` (the command's name) and
    ``debug`` set; help, version and usage errors raise SystemExit (0 or 2)."""
    debug = False
    for at, word in enumerate(words):
        if word == "--debug":
            debug = True
        elif word in ("-h", "--help"):
            write_stdout(top_help())
            raise SystemExit(0)
        elif word == "--version":
            write_stdout(f"fastdiff {__version__}\n")
            raise SystemExit(0)
        elif word.startswith("-"):  # an abbreviation, "--", a typo: argparse decides
            from .full import parse_all

            return parse_all(words)
        elif word not in COMMANDS:
            raise _unknown_command(word)
        else:
            name, rest = word, words[at + 1 :]
            break
    else:
        raise _usage_error("the following arguments are required: COMMAND")
    module = command_module(name)
    from .spec import DEBUG, fast_parse

    args = fast_parse((*module.ARGUMENTS, DEBUG), rest)
    if args is None:
        from .full import parse_command

        args = parse_command(name, rest)
    args.command = name
    args.debug = debug or getattr(args, "debug", False)
    return args  # type: ignore[return-value]


def build_parser() -> ArgumentParser:
    """The whole argparse tree (every command's module imported): for tests
    and tools that inspect the options; ``main`` does not use it."""
    from .full import build_parser as build

    return build()


# --- running -----------------------------------------------------------------------


def _debug_requested(argv: Sequence[str]) -> bool:
    """--debug on the command line (before any ``--``), or FASTDIFF_DEBUG set and not 0."""
    if os.environ.get("FASTDIFF_DEBUG", "") not in ("", "0"):
        return True
    words = list(argv)
    return "--debug" in (words[: words.index("--")] if "--" in words else words)


#: The packages fastdiff depends on (pyproject.toml's dependencies).
_REQUIRED = frozenset({"numpy", "numba", "xxhash"})


def _unexpected(exc: Exception, command: str, debug: bool) -> int:
    """An exception fastdiff did not foresee: a bug. Say so briefly; exit 2, never 1."""
    if debug:
        import traceback

        traceback.print_exception(exc)
    missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    if missing in _REQUIRED:  # an environment without fastdiff's own dependencies: no bug
        print(
            f"fastdiff: error: {command} needs the package {missing!r}, which this Python "
            f"({sys.executable}) cannot import; install fastdiff with its dependencies "
            "(pip install . from a checkout), or run it from the environment it was installed in",
            file=sys.stderr,
        )
        return EXIT_TROUBLE
    detail = str(exc).splitlines()[0] if str(exc).strip() else ""
    what = type(exc).__name__ + (f": {detail}" if detail else "")
    print(
        f"fastdiff: error: {command} failed unexpectedly ({what}). This is a bug in fastdiff: "
        f"please report it, with the command line, to {BUG_REPORTS}"
        + (" and the traceback above" if debug else
           "; run with --debug or FASTDIFF_DEBUG=1 for the traceback"),
        file=sys.stderr,
    )  # fmt: skip
    return EXIT_TROUBLE


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit code (0 identical, 1 diverged, 2 trouble,
    130 interrupted). Whatever goes wrong, the code is never 1 unless runs differ:
    an unexpected exception is reported in one line as a bug, with exit 2."""
    words = sys.argv[1:] if argv is None else list(argv)
    debug = _debug_requested(words)
    command = "fastdiff"
    try:
        args = parse(words)
        command = f"fastdiff {args.command}"
        debug = debug or args.debug
        return command_module(args.command).run(args)
    except FastdiffError as exc:
        from ..textkit.escape import display_path  # a path in the message is printed safely

        print(f"fastdiff: error: {display_path(str(exc))}", file=sys.stderr)
        return EXIT_TROUBLE
    except KeyboardInterrupt:
        print("fastdiff: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # A reader that went away: nothing more can be said there, and nothing
        # needs saying here (write_stdout already handles the usual case).
        silence_stdout()
        return EXIT_TROUBLE
    except Exception as exc:
        return _unexpected(exc, command, debug)


def launch() -> NoReturn:
    """The process (the ``fastdiff`` command, ``python -m fastdiff``): run
    ``main`` and exit with its code.

    Before the interpreter shuts down, every object left is frozen
    (``gc.freeze``), so the interpreter's last collections do not walk all
    that start-up made only to free it with the process: 7.4 of the 79.5
    million instructions of a small comparison (``python -c pass``: 37.9
    million). Nothing is lost by that: fastdiff closes every file it
    writes in a ``with`` block before ``main`` returns, and exit handlers
    (``atexit``) and the flushing of stdout and stderr still run.
    """
    code = main()
    gc.freeze()
    sys.exit(code)
