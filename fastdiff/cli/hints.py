"""An unknown option, named first, with the closest known one.

argparse reads an option it does not know as a word it cannot place, and
may first complain of what that caused: ``compare --tol 1e-3 A B`` takes
``1e-3`` as RUN_A and calls ``B`` unrecognized; ``compare --json`` says the
runs are missing. ``unknown_options`` finds the words argparse takes for
options it does not have, classified as argparse classifies them (exact
names, ``--name=value``, abbreviations, a short option with its value
attached; negative numbers and words with a space are values), and
``describe`` names the first with what was probably meant: an alias known
from other tools (``--json`` -> ``--format json``), else the closest names
by ``difflib``.

Imported only on a usage error (by ``cli.full``).
"""

from __future__ import annotations

import difflib
import re

from .spec import APPEND, STORE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from .spec import Arg

#: argparse adds these to every parser.
HELP = ("-h", "--help")

#: argparse's test for a negative number (a value, not an option).
_NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+$")

#: What users type from other tools -> what fastdiff has; of these, only the
#: ones the command takes are suggested (``--json``: ``--format json`` for
#: compare, ``--format jsonl`` for sweep).
ALIASES: dict[str, tuple[str, ...]] = {
    "--json": ("--format json", "--format jsonl"),
    "--jsonl": ("--format jsonl", "--format json"),
    "--text": ("--format text",),
    "--html": ("--format html",),
    "--tol": ("--atol", "--rtol"),
    "--tolerance": ("--atol", "--rtol"),
    "--abs-tol": ("--atol",),
    "--rel-tol": ("--rtol",),
    "-j": ("--jobs",),
    "--threads": ("--jobs",),
    "--workers": ("--jobs",),
    "--dtype": ("--default-dtype",),
}

#: No quiet option: for commands that give a verdict, the exit code is it.
QUIET = ("-q", "--quiet", "--silent")
QUIET_HINT = (
    "there is none: the exit code is the verdict (0 identical, 1 diverged, 2 trouble); "
    "send the report to /dev/null"
)
VERDICT_COMMANDS = ("compare", "sweep")

#: difflib's least similarity for a suggestion (its default).
CUTOFF = 0.6


def _option_names(arguments: Sequence[Arg]) -> list[str]:
    return [*(name for arg in arguments for name in arg.names), *HELP]


def _matches(word: str, names: Sequence[str]) -> list[str]:
    """The names argparse reads ``word`` (which starts with ``-``) as: itself,
    its part before ``=``, the long names it abbreviates; for a single dash,
    also a short option with its value attached (``-ofile``)."""
    if word in names:
        return [word]
    before = word.split("=", 1)[0]
    if "=" in word and before in names:
        return [before]
    if word.startswith("--"):
        return [name for name in names if name.startswith(before)]
    return [name for name in names if name == word[:2] or name.startswith(word)]


def unknown_options(arguments: Sequence[Arg], words: Sequence[str]) -> list[str]:
    """The options in ``words`` that none of ``arguments`` (nor ``-h``) is, in
    order, each once, without any ``=value``. A word right after an option
    that takes a value is left to argparse ("expected one argument")."""
    names = _option_names(arguments)
    takes_value = {n for arg in arguments if arg.action in (STORE, APPEND) for n in arg.names}
    found: list[str] = []
    value_next = False
    for word in words:
        if word == "--":
            break
        if value_next:
            value_next = False
            continue
        if len(word) < 2 or word[0] != "-" or _NEGATIVE.match(word) or " " in word:
            continue  # a value, or a positional
        matched = _matches(word, names)
        if not matched:
            name = word.split("=", 1)[0]
            if name not in found:
                found.append(name)
        elif len(matched) == 1 and matched[0] in takes_value:
            # Its value follows, unless attached ("--opt=v", "-ov").
            value_next = "=" not in word and (word.startswith("--") or word == matched[0])
    return found


def _valid(suggestion: str, arguments: Sequence[Arg]) -> bool:
    """Whether the command takes ``suggestion`` ("--format json": the option,
    with that value among its choices)."""
    name, _, value = suggestion.partition(" ")
    for arg in arguments:
        if name in arg.names:
            return not value or arg.choices is None or value in arg.choices
    return False


def closest(word: str, arguments: Sequence[Arg]) -> list[str]:
    """What ``word`` probably meant: the aliases the command takes; else its
    most similar option names (ties all given)."""
    if word in ALIASES:
        return [s for s in ALIASES[word] if _valid(s, arguments)]
    scored = [
        (difflib.SequenceMatcher(None, word, name).ratio(), name)
        for name in dict.fromkeys(_option_names(arguments))
    ]
    best = max((score for score, _ in scored), default=0.0)
    if best < CUTOFF:
        return []
    return [name for score, name in scored if score == best]


def describe(unknown: Sequence[str], arguments: Sequence[Arg], command: str) -> str:
    """The error for the unknown options ``unknown`` of ``command`` (its name):
    the first, what it probably meant, then any others."""
    first = unknown[0]
    text = f"unknown option {first!r}"
    if first in QUIET and command in VERDICT_COMMANDS:
        text += f"; {QUIET_HINT}"
    else:
        close = closest(first, arguments)
        if close:
            text += "; did you mean " + " or ".join(map(repr, close)) + "?"
    if len(unknown) > 1:
        text += "; also unknown: " + ", ".join(map(repr, unknown[1:]))
    return text
