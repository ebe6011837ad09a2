"""A command's arguments, declared once as data, and the fast parser.

Each command module lists its arguments as ``Arg`` values. Two parsers are
built from that one list: ``fast_parse`` here, which takes the plain cases of
a command line (long options with a value, ``--opt=value``, flags, exact short
options, one block of positional arguments) and imports nothing; and the
argparse parser (``cli.full``), which gets everything else: ``-h``,
abbreviations, ``--``, any value starting with ``-``, and every error, so
help, messages and exit codes are argparse's. ``fast_parse`` answers None
rather than guess: for every command line it accepts, argparse builds the
same namespace (``tests/test_cli_parse.py`` checks this with hypothesis).
"""

from __future__ import annotations

from .commands import DEBUG_HELP, HELP_HELP, VERSION_HELP

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

#: argparse's SUPPRESS: an attribute left unset unless given.
SUPPRESS = "==SUPPRESS=="

#: How an option stores what it is given (``APPEND``: each value, in a list).
STORE, STORE_TRUE, STORE_FALSE, APPEND = "store", "store_true", "store_false", "append"


class BadValue(ValueError):
    """An option value a converter rejects; the message says why (argparse shows
    it after ``argument --opt:``; for other ValueErrors it says "invalid
    <converter> value")."""


class Exclusive:
    """A set of options of which at most one may be given (``required``:
    exactly one)."""

    __slots__ = ("required",)

    def __init__(self, required: bool = False) -> None:
        self.required = required


class Arg:
    """One argument: what argparse's ``add_argument`` would be told.

    ``names`` are the option strings (none for a positional); ``group`` the
    title of the help section it is listed under; ``exclusive`` the set of
    options it excludes. Positionals take one word, or ``nargs`` "?" or "*".
    """

    __slots__ = (
        "action",
        "choices",
        "default",
        "dest",
        "exclusive",
        "group",
        "help",
        "metavar",
        "names",
        "nargs",
        "type",
    )

    def __init__(
        self,
        *names: str,
        dest: str | None = None,
        action: str = STORE,
        type: Callable[[str], object] | None = None,
        default: object = None,
        choices: Sequence[str] | None = None,
        metavar: str | None = None,
        help: str | None = None,
        nargs: str | None = None,
        group: str | None = None,
        exclusive: Exclusive | None = None,
    ) -> None:
        positional = not names[0].startswith("-")
        self.names = () if positional else names
        self.dest = dest or (names[0] if positional else _dest_of(names))
        self.action = action
        self.type = type
        if default is None and action in (STORE_TRUE, STORE_FALSE):
            default = action == STORE_FALSE  # argparse's defaults: False, True
        if isinstance(default, str) and type is not None:
            # argparse would convert such a default; fast_parse does not.
            raise ValueError(f"{self.dest}: a str default with a type is not supported")
        self.default = default
        self.choices = tuple(choices) if choices is not None else None
        self.metavar = metavar
        self.help = help
        self.nargs = nargs
        self.group = group
        self.exclusive = exclusive


def _dest_of(names: tuple[str, ...]) -> str:
    """argparse's dest: the first long name, else the first name; '-' -> '_'."""
    long = next((n for n in names if n.startswith("--")), names[0])
    return long.lstrip("-").replace("-", "_")


#: ``--debug``, which every command takes (it also works before the command).
DEBUG = Arg("--debug", action=STORE_TRUE, default=SUPPRESS, help=DEBUG_HELP)


#: ``-h``, which argparse adds to every parser, and ``--version``, which only the
#: top level takes (``fastdiff --help`` lists them from ``commands.TOP_OPTIONS``).
HELP = Arg("-h", "--help", action=STORE_TRUE, help=HELP_HELP)
VERSION = Arg("--version", action=STORE_TRUE, help=VERSION_HELP)


class Args:
    """The parsed arguments: attributes, as argparse's ``Namespace``."""

    def __init__(self, **values: object) -> None:
        self.__dict__.update(values)

    def __eq__(self, other: object) -> bool:
        return vars(self) == vars(other)

    def __repr__(self) -> str:
        return "Args(" + ", ".join(f"{k}={v!r}" for k, v in vars(self).items()) + ")"


def fast_parse(arguments: Sequence[Arg], words: Sequence[str]) -> Args | None:
    """``words`` parsed by the declarations ``arguments`` (``DEBUG`` included),
    or None when argparse should decide: anything but the plain cases, and
    anything that would be an error."""
    options: dict[str, Arg] = {}
    values: dict[str, object] = {}
    for arg in arguments:
        for name in arg.names:
            options[name] = arg
        if arg.dest not in values and arg.default is not SUPPRESS:
            values[arg.dest] = arg.default  # the first default wins, as in argparse
    chosen: dict[Exclusive, Arg] = {}
    positionals: list[str] = []
    block = 0  # positional words: 0 none yet, 1 in their block, 2 after it
    i, n = 0, len(words)
    while i < n:
        word = words[i]
        if not word.startswith("-"):
            if block == 2:
                return None  # a second block: argparse's nargs rules decide
            block = 1
            positionals.append(word)
            i += 1
            continue
        block = 2 if block else 0
        name, eq, value = word.partition("=") if word.startswith("--") else (word, "", "")
        arg = options.get(name)
        if arg is None:
            return None  # unknown, abbreviated, "--", "-", a negative number, -abc
        if arg.action in (STORE_TRUE, STORE_FALSE):
            if eq:
                return None  # a flag given a value: argparse's error
            values[arg.dest] = arg.action == STORE_TRUE
        else:
            if not eq:
                i += 1
                if i == n or words[i].startswith("-"):
                    return None  # missing, or a value argparse might read as an option
                value = words[i]
            elif value == "--":
                return None  # argparse 3.11 reads --opt=-- as an empty list
            converted: object = value
            if arg.type is not None:
                try:
                    converted = arg.type(value)
                except (TypeError, ValueError):  # what argparse catches
                    return None
            if arg.choices is not None and converted not in arg.choices:
                return None
            if arg.action == APPEND:
                earlier = values.get(arg.dest)
                converted = [*(earlier if isinstance(earlier, list) else ()), converted]
            values[arg.dest] = converted
        if arg.exclusive is not None and chosen.setdefault(arg.exclusive, arg) is not arg:
            return None  # two of a mutually exclusive set
        i += 1
    for arg in arguments:
        if arg.exclusive is not None and arg.exclusive.required and arg.exclusive not in chosen:
            return None  # "one of the arguments ... is required"
    if not _assign_positionals(arguments, positionals, values):
        return None
    return Args(**values)


def _assign_positionals(
    arguments: Sequence[Arg], words: list[str], values: dict[str, object]
) -> bool:
    """Hand the block of positional words to the positional arguments in order;
    False if too few or too many."""
    slots = [arg for arg in arguments if not arg.names]
    needed = sum(arg.nargs is None for arg in slots)
    left = list(words)
    for arg in slots:
        if arg.type is not None or arg.choices is not None:
            return False  # not needed so far: argparse converts and checks them
        if arg.nargs is None:
            if not left:
                return False
            values[arg.dest] = left.pop(0)
            needed -= 1
        elif arg.nargs == "?":
            values[arg.dest] = left.pop(0) if len(left) > needed else arg.default
        else:  # "*"
            take = len(left) - needed
            values[arg.dest] = left[:take] if take or arg.default is None else arg.default
            left = left[take:]
    return not left
